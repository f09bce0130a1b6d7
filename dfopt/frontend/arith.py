"""ONNX arithmetic outside the fused patterns: subtraction and division of computed tensors, the
unary functions, Pow, and the Reduce ops, onto the operator graph's ``sub``, ``div``, ``unary``
and ``reduce``.

* **Sub, Div** of two computed tensors: ``sub`` / ``div`` (the second operand of the result's
  shape or a vector of its last axis); with the broadcast operand first, ``v - x`` is
  ``neg(x - v)`` and ``v / x`` is ``reciprocal(x) * v``; a constant first, ``c - x`` is
  ``neg(x) + c`` and ``c / x`` is ``reciprocal(x) * c``. (``x - c`` and ``x / c`` stay ``add``
  of ``-c`` and ``mul`` of ``1 / c``, :mod:`dfopt.frontend.translate`.)
* **Exp, Tanh, Erf, Sigmoid, Sqrt, Reciprocal, Neg, Abs**: ``unary`` with that ``fn``.
* **Sum** of n tensors: a chain of ``add``.
* **Pow** by a constant scalar exponent: ``unary`` ``square`` (2), ``sqrt`` (0.5), ``reciprocal``
  (-1), ``rsqrt`` (-0.5), dropped (1), else ``pow`` with the exponent; a computed or non-scalar
  exponent is refused.
* **ReduceSum, ReduceMean, ReduceMax, ReduceMin** over any axes (an attribute before opset 18,
  ReduceSum's input from 13, every one's input from 18; none: every axis, unless
  ``noop_with_empty_axes``): the reduced axes are moved last (a ``transpose``, when they are not
  already last) and merged into one (a ``reshape``, when there are several), reduced by
  ``reduce``, and the result given the model's shape (``keepdims`` as ``reduce``'s own when one
  trailing axis is reduced, else a ``reshape``). A reduction to a scalar is refused (the
  operator graph has no scalars).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dfopt.frontend.graph import Node

if TYPE_CHECKING:
    from dfopt.frontend.translate import _Translator

#: ONNX unary ops and the ``unary`` function each becomes.
UNARY = {"Exp": "exp", "Tanh": "tanh", "Erf": "erf", "Sigmoid": "sigmoid", "Sqrt": "sqrt", "Reciprocal": "reciprocal",
         "Neg": "neg", "Abs": "abs"}
#: Pow exponents that are a function of their own.
POWERS = {2.0: "square", 0.5: "sqrt", -1.0: "reciprocal", -0.5: "rsqrt"}
REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min"}


def sum_(t: _Translator, node: Node) -> None:
    """``Sum(x1, ..., xn)``: a chain of ``add`` (one input: the input itself); every input of
    the result's shape or a vector or column of it, as ``add`` takes them."""
    from dfopt.frontend.translate import _binary

    inputs = [i for i in node.inputs if i]
    if len(inputs) == 1:
        t.same(node, inputs[0])
        return
    out = node.outputs[0]
    acc = inputs[0]
    for k, x in enumerate(inputs[1:], start=1):
        last = k == len(inputs) - 1
        step = out if last else f"{out}#sum{k}"
        if not last:
            t.g.shapes[step], t.g.dtypes[step] = t.g.shapes[out], t.g.dtypes[out]
            t.names[step] = t._fresh(out, f"sum{k}")
        _binary(t, Node(node.name, "Add", [acc, x], [step], {}, node.index))
        acc = step


def unary(t: _Translator, node: Node) -> None:
    t.emit("unary", [t.operand(node.inputs[0])], t.result(node.outputs[0]), attrs={"fn": UNARY[node.op]})


def power(t: _Translator, node: Node) -> None:
    x, e = node.inputs
    if e not in t.g.consts:
        raise t._fault(f"the exponent {e!r} is computed from data: only Pow by a constant imports (as unary pow)")
    exponent = t.g.scalar(e)
    if exponent is None:
        raise t._fault(f"the exponent {e!r} {list(t.g.consts[e].shape)} takes several values: only a scalar exponent "
                       "(one value) imports")
    if t.g.shapes[node.outputs[0]] != t.shape(x):
        raise t._fault(f"unsupported broadcast: the exponent {list(t.g.consts[e].shape)} grows {x!r} "
                       f"{list(t.shape(x))} to {list(t.g.shapes[node.outputs[0]])}")
    if exponent == 1.0:
        t.same(node, x)
        return
    fn = POWERS.get(float(exponent))
    attrs = {"fn": fn} if fn else {"fn": "pow", "exponent": float(exponent)}
    t.emit("unary", [t.operand(x)], t.result(node.outputs[0]), attrs=attrs)


def computed_pair(t: _Translator, node: Node) -> None:
    """Sub or Div where the tensor of the result's shape does not come first, or a constant does
    (the other forms are :func:`dfopt.frontend.translate._binary`'s)."""
    a, b = node.inputs
    out, kind = node.outputs[0], {"Sub": "sub", "Div": "div"}[node.op]
    inverse = {"sub": "neg", "div": "reciprocal"}[kind]
    if a in t.g.consts:                                    # c - x = neg(x) + c; c / x = reciprocal(x) * c
        x, c = b, a
        if t.shape(x) != t.g.shapes[out]:
            raise t._fault(f"unsupported broadcast: the constant {c!r} {list(t.g.consts[c].shape)} grows {x!r} "
                           f"{list(t.shape(x))} to {list(t.g.shapes[out])}")
        inv = t.emit("unary", [t.operand(x)], t._fresh(out, inverse), suffix=inverse, attrs={"fn": inverse})
        w = t.const_operand(c, t.g.consts[c], t.g.shapes[out], "add" if kind == "sub" else "mul")
        t.emit("add" if kind == "sub" else "mul", [inv, w], t.result(out))
        return
    target = t.g.shapes[out]
    if t.shape(a) == target:
        t.two_tensors(kind, a, b, out)
        return
    if t.shape(b) != target:
        raise t._fault(f"unsupported broadcast: {list(t.shape(a))} {kind} {list(t.shape(b))} -> {list(target)}: the "
                       f"op set's {kind} needs one operand of the result's shape")
    if kind == "sub":                                      # v - x = neg(x - v)
        diff = f"{out}#diff"
        t.names[diff] = t._fresh(out, "diff")
        t.g.shapes[diff], t.g.dtypes[diff] = target, t.g.dtypes[out]
        t.two_tensors("sub", b, a, diff, suffix="diff")
        t.emit("unary", [t.names[diff]], t.result(out), attrs={"fn": "neg"})
        return
    inv = f"{out}#recip"                                   # v / x = reciprocal(x) * v
    t.names[inv] = t.emit("unary", [t.operand(b)], t._fresh(out, "recip"), suffix="recip", attrs={"fn": "reciprocal"})
    t.g.shapes[inv], t.g.dtypes[inv] = t.shape(b), t.g.dtypes[out]
    t.two_tensors("mul", inv, a, out)


def _axes(t: _Translator, node: Node, rank: int) -> list[int]:
    """The reduced axes, normalised and sorted: the attribute (before opset 18; ReduceSum's
    input from 13) or the constant second input; none: every axis."""
    takes_input = node.op == "ReduceSum" and t.g.opset >= 13 or t.g.opset >= 18
    if takes_input:
        name = node.input(1)
        if name and name not in t.g.consts:
            raise t._fault(f"the axes {name!r} are computed from data: only constant axes import")
        axes = [int(a) for a in np.reshape(t.g.consts[name], -1)] if name else []
    else:
        axes = [int(a) for a in node.attrs.get("axes", [])]
    if not axes:
        return [] if node.attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise t._fault(f"axes {axes} out of range for the rank-{rank} input")
    return sorted({a % rank for a in axes})


def reduce(t: _Translator, node: Node) -> None:
    x, out = node.inputs[0], node.outputs[0]
    shape = t.shape(x)
    rank = len(shape)
    axes = _axes(t, node, rank)
    if not axes:                                           # noop_with_empty_axes: the input
        t.same(node, x)
        return
    keep = [a for a in range(rank) if a not in axes]
    if not keep and not node.attrs.get("keepdims", 1):
        raise t._fault(f"a reduction over every axis of {list(shape)} with keepdims=0 is a scalar, which the "
                       "operator graph has not")
    src = t.operand(x)
    if axes != list(range(rank - len(axes), rank)):        # the reduced axes last
        perm = keep + axes
        src = t.emit("transpose", [src], t._fresh(out, "perm"), suffix="perm", attrs={"perm": perm})
    lead = [shape[a] for a in keep]
    merged = int(np.prod([shape[a] for a in axes]))
    if len(axes) > 1 or not lead:                          # one reduced axis, and a leading one
        src = t.emit("reshape", [src], t._fresh(out, "rows"), suffix="rows", attrs={"shape": (lead or [1]) + [merged]})
    target = list(t.g.shapes[out])
    natural = (lead or [1]) + ([1] if node.attrs.get("keepdims", 1) and len(axes) == 1 and lead else [])
    keepdims = natural != (lead or [1])
    attrs = {"reduction": REDUCE[node.op], **({"keepdims": True} if keepdims else {})}
    if natural == target:
        t.emit("reduce", [src], t.result(out), attrs=attrs)
        return
    red = t.emit("reduce", [src], t._fresh(out, "red"), suffix="red", attrs=attrs)
    t.emit("reshape", [red], t.result(out), attrs={"shape": target})
