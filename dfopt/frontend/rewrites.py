"""Pattern rewrites on the working ONNX graph, before translation: the node chains exporters
write for ops the operator graph has one kind for. Each rewrite is a function of the graph that
returns how many patterns it replaced; a pattern's inner tensors must each have one use (a
tensor something else also reads is left alone, and then its nodes go through translation, which
refuses what it cannot express). Constants are matched within a relative 1e-3.

- :func:`drop_identities`: Identity, Dropout (inference), a Cast to the same type, and every
  float-to-float Cast when a ``dtype`` is given.
- :func:`fuse_gelu_erf`: ``0.5 * x * (1 + erf(x / sqrt 2))`` (or ``x * 0.7071``), the two
  multiplications in any grouping, as torch.onnx writes ``F.gelu`` and Hugging Face writes
  ``gelu``; and the ``Gelu`` op of opset 20 (``approximate`` none or tanh) — as the operator
  graph's ``gelu`` with the same ``approximate`` (``none``: the exact erf form).
- :func:`fuse_gelu_tanh`: ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``, the cube as
  ``Pow(x, 3)`` or ``x * x * x`` (exact).
- :func:`fuse_silu`: ``x * sigmoid(x)``.
- :func:`fuse_layernorm`: ReduceMean / Sub / Pow 2 / ReduceMean / Add eps / Sqrt / Div (or
  Reciprocal and Mul), then an optional Mul by gamma and Add of beta (constant vectors).
- :func:`fuse_rmsnorm`: Pow 2 (or x * x) / ReduceMean / Add eps / Sqrt / Div, or Reciprocal or
  ``1 / sqrt`` then Mul, then an optional Mul by a constant weight vector. Runs after the
  layernorm rewrite (a layernorm's variance is an rmsnorm of ``x - mean``).
- :func:`fold_matmuls`, the attention core: every MatMul becomes an operator-graph ``matmul``;
  a Transpose that swaps an operand's last two axes folds into ``transpose_a`` /
  ``transpose_b`` (a head split's ``[0, 2, 3, 1]`` becomes ``[0, 2, 1, 3]`` and
  ``transpose_b``), and a Mul or Div by a scalar constant of an operand or of the result folds
  into ``scale``. So ``MatMul(Q, K^T) / sqrt(d) -> Softmax -> MatMul V`` (and the
  ``sqrt(scale)`` on both Q and K that ``scaled_dot_product_attention`` exports) becomes
  ``matmul(transpose_b, scale) -> softmax -> matmul``; a mask Add between them stays an Add.
- :func:`~dfopt.frontend.lrn.expand_lrn` (first): ``LRN`` as the exact chain square, a 1x1
  ``Conv`` with a band matrix over the channels, scale, bias, ``Pow(-beta)``, times ``x``.
- :func:`~dfopt.frontend.rope.fuse_rope`: the rotate-half rotary embedding ``x * cos +
  cat(-x2, x1) * sin`` (two Slices or a Split of the halves) with constant tables -> ``rope``.
- :func:`~dfopt.frontend.cnn.fold_batchnorm` (first): an inference BatchNormalization after a
  Conv whose result has no other use, folded into the Conv's weight and bias.

>>> from dfopt.frontend.graph import Graph, Node
>>> g = Graph([Node("s", "Sigmoid", ["x"], ["t"], {}, 0), Node("m", "Mul", ["x", "t"], ["y"], {}, 1)],
...           {}, {"x": (4,), "t": (4,), "y": (4,)}, {"x": 1, "t": 1, "y": 1}, ["x"], ["y"], set(), 17)
>>> fuse_silu(g), [(n.name, n.op, n.inputs, n.outputs) for n in g.nodes]
(1, [('m', 'dfopt.silu', ['x'], ['y'])])
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dfopt.frontend.cnn import fold_batchnorm
from dfopt.frontend.graph import Graph, Node
from dfopt.frontend.lrn import expand_lrn
from dfopt.frontend.rope import fuse_rope

_FLOATS = (1, 10, 11, 16)     # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16
_RTOL = 1e-3


def rewrite(g: Graph, dtype: str | None = None) -> None:
    """Every rewrite, in order, then the dead nodes dropped."""
    drop_identities(g, dtype)
    g.prune()
    for step in REWRITES:
        step(g)
    g.prune()


# -- helpers --------------------------------------------------------------------------------------

def _near(value: float | None, target: float) -> bool:
    return value is not None and math.isclose(value, target, rel_tol=_RTOL)


def _by_scalar(g: Graph, node: Node | None, ops: tuple = ("Mul", "Div", "Add", "Sub")) -> tuple[str, float] | None:
    """``(x, c)`` when ``node`` combines tensor ``x`` with a scalar constant ``c`` (the divisor of a
    Div, the subtrahend of a Sub) without growing ``x``'s shape."""
    if node is None or node.op not in ops or len(node.inputs) != 2:
        return None
    order = (0, 1) if node.op in ("Div", "Sub") else (0, 1, 1, 0)
    for a, b in zip(order[::2], order[1::2]):
        x, c = node.inputs[a], node.inputs[b]
        value = g.scalar(c)
        if value is not None and x not in g.consts and g.shapes.get(x) == g.shapes.get(node.outputs[0]):
            return x, value
    return None


def _other(node: Node, name: str) -> str | None:
    """The other operand of a binary ``node`` that reads ``name``."""
    if len(node.inputs) != 2 or name not in node.inputs:
        return None
    return node.inputs[1] if node.inputs[0] == name else node.inputs[0]


def _sole(g: Graph, name: str, ops: tuple) -> Node | None:
    """The one node that reads ``name``, when ``name`` has one use and that node is one of ``ops``."""
    if not g.single_use(name):
        return None
    node = g.consumers(name)[0]
    return node if node.op in ops else None


def _made_by(g: Graph, name: str, ops: tuple) -> Node | None:
    """The producer of a single-use tensor ``name`` when it is one of ``ops``."""
    node = g.producer(name)
    return node if node is not None and node.op in ops and g.single_use(name) else None


def _plus_one(g: Graph, name: str) -> Node | None:
    node = _sole(g, name, ("Add",))
    found = _by_scalar(g, node, ("Add",))
    return node if found is not None and found[0] == name and _near(found[1], 1.0) else None


def _halves(g: Graph, node: Node | None, x: str) -> bool:
    """``node`` is ``x * 0.5`` or ``x / 2``."""
    found = _by_scalar(g, node, ("Mul", "Div"))
    return (node is not None and found is not None and found[0] == x
            and _near(found[1], 0.5 if node.op == "Mul" else 2.0))


def _half_x_times(g: Graph, t: str, x: str) -> tuple[Node, list[Node]] | None:
    """``0.5 * x * t`` from ``t`` on, the two products in any grouping: the last node and the nodes."""
    m = _sole(g, t, ("Mul",))
    if m is None:
        return None
    other = _other(m, t)
    assert other is not None
    if other == x:
        last = _sole(g, m.outputs[0], ("Mul", "Div"))
        return (last, [m, last]) if last is not None and _halves(g, last, m.outputs[0]) else None
    if _near(g.scalar(other), 0.5):
        last = _sole(g, m.outputs[0], ("Mul",))
        return (last, [m, last]) if last is not None and _other(last, m.outputs[0]) == x else None
    half = _made_by(g, other, ("Mul", "Div"))
    return (m, [half, m]) if half is not None and _halves(g, half, x) else None


def _reduces_last(g: Graph, node: Node | None) -> str | None:
    """The input of a ReduceMean over the last axis only, keeping dims; else None."""
    if node is None or node.op != "ReduceMean" or node.attrs.get("keepdims", 1) != 1:
        return None
    x = node.inputs[0]
    rank = len(g.shapes.get(x, ()))
    if g.opset >= 18:
        axes = g.consts.get(node.input(1)) if node.input(1) else None
        axes_list = None if axes is None else [int(a) for a in np.reshape(axes, -1)]
    else:
        axes_list = node.attrs.get("axes")
    if axes_list is None or not axes_list:      # every axis (the last only for a vector), or none at all
        return x if rank == 1 and not node.attrs.get("noop_with_empty_axes", 0) else None
    return x if rank >= 1 and [a % rank for a in axes_list] == [rank - 1] else None


def _squares(g: Graph, node: Node | None) -> str | None:
    """``x`` when ``node`` is ``Pow(x, 2)`` or ``x * x``."""
    if node is None:
        return None
    if node.op == "Pow" and _near(g.scalar(node.inputs[1]), 2.0):
        return node.inputs[0]
    if node.op == "Mul" and node.inputs[0] == node.inputs[1]:
        return node.inputs[0]
    return None


def _vector_const(g: Graph, name: str | None, x: str) -> bool:
    """A constant whose broadcast against ``x`` varies along the last axis at most."""
    if name is None or name not in g.consts:
        return False
    shape, target = g.consts[name].shape, g.shapes.get(x, ())
    return len(shape) <= len(target) and all(d == 1 for d in shape[:-1]) and \
        (not shape or shape[-1] in (1, target[-1]))


def _fused(kind: str, last: Node, inputs: list[str], **attrs) -> Node:
    return Node(last.name, f"dfopt.{kind}", inputs, [last.outputs[0]], attrs, last.index)


def _each(g: Graph, op: str, match: Callable[[Graph, Node], bool]) -> int:
    count = 0
    for node in [n for n in g.nodes if n.op == op]:
        if node in g.nodes and match(g, node):
            count += 1
    return count


# -- identities -----------------------------------------------------------------------------------

def drop_identities(g: Graph, dtype: str | None = None) -> int:
    """Identity, Dropout without training, a Cast to the type it already has (any float-to-float
    Cast with ``dtype``): their readers read the input instead."""
    count = 0
    for node in list(g.nodes):
        if not _is_identity(g, node, dtype):
            continue
        src, out = node.inputs[0], node.outputs[0]
        if out in g.outputs:
            if src in g.outputs or src in g.inputs or src in g.consts or g.producer(src) is None:
                continue        # the output needs an op of its own: translation makes one
            _rename(g, src, out)
        else:
            for n in g.nodes:
                n.inputs = [src if i == out else i for i in n.inputs]
        g.nodes.remove(node)
        count += 1
    return count


def _is_identity(g: Graph, node: Node, dtype: str | None) -> bool:
    if node.op == "Identity":
        return True
    if node.op == "Dropout":
        return not dropout_trains(g, node) and not any(o and (g.consumers(o) or o in g.outputs)
                                                       for o in node.outputs[1:])     # the mask unused
    if node.op == "Cast":
        src, to = g.dtypes.get(node.inputs[0]), node.attrs.get("to")
        return src == to or (dtype is not None and src in _FLOATS and to in _FLOATS)
    return False


def dropout_trains(g: Graph, node: Node) -> bool:
    """A Dropout in training mode (its ``training_mode`` input computed, or a constant true)."""
    mode = node.input(2)
    return bool(np.reshape(g.consts[mode], -1)[0]) if mode in g.consts else bool(mode)


def _rename(g: Graph, old: str, new: str) -> None:
    for n in g.nodes:
        n.inputs = [new if i == old else i for i in n.inputs]
        n.outputs = [new if o == old else o for o in n.outputs]
    g.shapes[new], g.dtypes[new] = g.shapes[old], g.dtypes[old]


# -- activations ----------------------------------------------------------------------------------

def fuse_gelu_erf(g: Graph) -> int:
    """``0.5 * x * (1 + erf(x / sqrt 2))`` and ``Gelu(approximate="none")`` -> ``gelu``."""
    count = _each(g, "Erf", _gelu_erf_at)
    for node in [n for n in g.nodes if n.op == "Gelu"]:
        form = node.attrs.get("approximate", "none")
        if form in ("none", "tanh"):
            count += 1
            g.replace([node], _fused("gelu", node, [node.inputs[0]], approximate=form))
    return count


def _gelu_erf_at(g: Graph, erf: Node) -> bool:
    arg = _made_by(g, erf.inputs[0], ("Div", "Mul"))
    found = _by_scalar(g, arg, ("Div", "Mul"))
    if arg is None or found is None:
        return False
    x, c = found
    if not _near(c, math.sqrt(2) if arg.op == "Div" else 1 / math.sqrt(2)):
        return False
    plus = _plus_one(g, erf.outputs[0])
    tail = _half_x_times(g, plus.outputs[0], x) if plus is not None else None
    if plus is None or tail is None:
        return False
    last, muls = tail
    g.replace([arg, erf, plus, *muls], _fused("gelu", last, [x], approximate="none"))
    return True


def fuse_gelu_tanh(g: Graph) -> int:
    """``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`` -> ``gelu``."""
    return _each(g, "Tanh", _gelu_tanh_at)


def _gelu_tanh_at(g: Graph, tanh: Node) -> bool:
    outer = _made_by(g, tanh.inputs[0], ("Mul",))
    found = _by_scalar(g, outer, ("Mul",))
    if outer is None or found is None or not _near(found[1], math.sqrt(2 / math.pi)):
        return False
    inner = _made_by(g, found[0], ("Add",))
    if inner is None:
        return False
    for x, term in (inner.inputs, inner.inputs[::-1]):
        kappa = _made_by(g, term, ("Mul",))
        scaled = _by_scalar(g, kappa, ("Mul",))
        if kappa is None or scaled is None or not _near(scaled[1], 0.044715):
            continue
        cube = _cube_of(g, scaled[0], x)
        plus = _plus_one(g, tanh.outputs[0])
        tail = _half_x_times(g, plus.outputs[0], x) if plus is not None else None
        if cube is None or plus is None or tail is None:
            continue
        last, muls = tail
        g.replace([*cube, kappa, inner, outer, tanh, plus, *muls], _fused("gelu", last, [x]))
        return True
    return False


def _cube_of(g: Graph, name: str, x: str) -> list[Node] | None:
    """The nodes of ``x ** 3`` (``Pow(x, 3)``, ``x * (x * x)``, ``(x * x) * x``) making ``name``."""
    node = _made_by(g, name, ("Pow", "Mul"))
    if node is None:
        return None
    if node.op == "Pow":
        return [node] if node.inputs[0] == x and _near(g.scalar(node.inputs[1]), 3.0) else None
    square = _other(node, x)
    sq = _made_by(g, square, ("Mul",)) if square is not None else None
    return [sq, node] if sq is not None and sq.inputs == [x, x] else None


def fuse_silu(g: Graph) -> int:
    """``x * sigmoid(x)`` -> ``silu``."""
    def at(g: Graph, sig: Node) -> bool:
        mul = _sole(g, sig.outputs[0], ("Mul",))
        if mul is None or _other(mul, sig.outputs[0]) != sig.inputs[0]:
            return False
        g.replace([sig, mul], _fused("silu", mul, [sig.inputs[0]]))
        return True
    return _each(g, "Sigmoid", at)


# -- norms ----------------------------------------------------------------------------------------

def _normalised(g: Graph, num: str, var: Node) -> tuple[float, list[Node], Node] | None:
    """From ``var`` (the mean of squares) on: ``num / sqrt(var + eps)`` as Add / Sqrt / Div, or
    with Reciprocal or ``1 / sqrt`` and a Mul: ``(eps, nodes, last)``."""
    add = _sole(g, var.outputs[0], ("Add",))
    eps = _by_scalar(g, add, ("Add",))
    sqrt = _sole(g, add.outputs[0], ("Sqrt",)) if add is not None else None
    if add is None or eps is None or eps[1] <= 0 or sqrt is None:
        return None
    s = sqrt.outputs[0]
    first = _sole(g, s, ("Div", "Reciprocal"))
    if first is None:
        return None
    if first.op == "Div" and first.inputs == [num, s]:
        return eps[1], [add, sqrt, first], first
    if first.op == "Div" and not (first.inputs[1] == s and _near(g.scalar(first.inputs[0]), 1.0)):
        return None
    mul = _sole(g, first.outputs[0], ("Mul",))
    if mul is None or _other(mul, first.outputs[0]) != num:
        return None
    return eps[1], [add, sqrt, first, mul], mul


def _affine(g: Graph, out: str, x: str, op: str) -> tuple[str, Node] | None:
    """``out * gamma`` (``op`` Mul) or ``out + beta`` (Add) with a constant vector: ``(it, node)``."""
    node = _sole(g, out, (op,))
    other = _other(node, out) if node is not None else None
    if node is None or other is None or not _vector_const(g, other, x):
        return None
    return other, node


def fuse_layernorm(g: Graph) -> int:
    """The decomposed layernorm -> ``layernorm``."""
    return _each(g, "Sub", _layernorm_at)


def _layernorm_at(g: Graph, sub: Node) -> bool:
    x, mean = sub.inputs
    avg = _made_by(g, mean, ("ReduceMean",))
    d = sub.outputs[0]
    if avg is None or _reduces_last(g, avg) != x:
        return False
    sq = next((n for n in g.consumers(d) if _squares(g, n) == d), None)
    if sq is None:
        return False
    var = _sole(g, sq.outputs[0], ("ReduceMean",))
    if var is None or _reduces_last(g, var) != sq.outputs[0]:
        return False
    norm = _normalised(g, d, var)
    if norm is None:
        return False
    eps, nodes, last = norm
    if d in g.outputs or sum(i == d for n in g.nodes for i in n.inputs) != sum(i == d for n in [sq, *nodes]
                                                                             for i in n.inputs):
        return False
    matched, inputs = [avg, sub, sq, var, *nodes], [x, "", ""]
    gamma = _affine(g, last.outputs[0], x, "Mul")
    if gamma is not None:
        inputs[1], last = gamma[0], gamma[1]
        matched.append(last)
        beta = _affine(g, last.outputs[0], x, "Add")
        if beta is not None:
            inputs[2], last = beta[0], beta[1]
            matched.append(last)
    g.replace(matched, _fused("layernorm", last, inputs, eps=eps))
    return True


def fuse_rmsnorm(g: Graph) -> int:
    """The RMSNorm chain -> ``rmsnorm``."""
    def at(g: Graph, mean: Node) -> bool:
        sq = _made_by(g, mean.inputs[0], ("Pow", "Mul"))
        x = _squares(g, sq)
        if sq is None or x is None or _reduces_last(g, mean) != sq.outputs[0]:
            return False
        norm = _normalised(g, x, mean)
        if norm is None:
            return False
        eps, nodes, last = norm
        matched, inputs = [sq, mean, *nodes], [x, ""]
        gamma = _affine(g, last.outputs[0], x, "Mul")
        if gamma is not None:
            inputs[1], last = gamma[0], gamma[1]
            matched.append(last)
        g.replace(matched, _fused("rmsnorm", last, inputs, eps=eps))
        return True
    return _each(g, "ReduceMean", at)


# -- matmuls and the attention core ---------------------------------------------------------------

def fold_matmuls(g: Graph) -> int:
    """MatMul -> ``matmul``; operand transposes and scalar scales folded in (see the module
    docstring). Returns the number of folds."""
    for node in g.nodes:
        if node.op == "MatMul":
            node.op, node.attrs = "dfopt.matmul", {"transpose_a": False, "transpose_b": False, "scale": 1.0}
    count, changed = 0, True
    while changed:
        changed = False
        for node in [n for n in g.nodes if n.op == "dfopt.matmul"]:
            if node not in g.nodes or g.dtypes.get(node.outputs[0]) not in _FLOATS:
                continue
            for step in (_fold_operand_scale, _fold_operand_transpose, _fold_result_scale):
                while step(g, node):
                    count, changed = count + 1, True
    return count


def _fold_operand_scale(g: Graph, mm: Node) -> bool:
    for j in (0, 1):
        p = _made_by(g, mm.inputs[j], ("Mul", "Div"))
        found = _by_scalar(g, p, ("Mul", "Div"))
        if p is not None and found is not None and found[1] != 0:
            mm.inputs[j] = found[0]
            mm.attrs["scale"] *= found[1] if p.op == "Mul" else 1 / found[1]
            g.nodes.remove(p)
            return True
    return False


def _fold_operand_transpose(g: Graph, mm: Node) -> bool:
    for j, key in ((0, "transpose_a"), (1, "transpose_b")):
        t = _made_by(g, mm.inputs[j], ("Transpose",))
        if t is None or t.inputs[0] in g.consts:
            continue
        rank = len(g.shapes[t.inputs[0]])
        perm = list(t.attrs.get("perm", range(rank)[::-1]))
        if rank < 2:
            continue
        swapped = perm[:-2] + perm[-2:][::-1]
        if swapped == list(range(rank)):
            mm.inputs[j] = t.inputs[0]
            g.nodes.remove(t)
        elif swapped[-1] == rank - 1 and perm[-1] != rank - 1:
            out = f"{t.outputs[0]}_swapped"
            src = g.shapes[t.inputs[0]]
            g.shapes[out], g.dtypes[out] = tuple(src[p] for p in swapped), g.dtypes[t.outputs[0]]
            t.attrs = {**t.attrs, "perm": swapped}
            t.outputs = [out]
            mm.inputs[j] = out
        else:
            continue
        mm.attrs[key] = not mm.attrs[key]
        return True
    return False


def _fold_result_scale(g: Graph, mm: Node) -> bool:
    c = _sole(g, mm.outputs[0], ("Mul", "Div"))
    found = _by_scalar(g, c, ("Mul", "Div"))
    if c is None or found is None or found[0] != mm.outputs[0] or found[1] == 0:
        return False
    mm.attrs["scale"] *= found[1] if c.op == "Mul" else 1 / found[1]
    mm.outputs = [c.outputs[0]]
    g.nodes.remove(c)
    return True


REWRITES: tuple[Callable[[Graph], int], ...] = (expand_lrn, fold_batchnorm, fuse_gelu_erf, fuse_gelu_tanh, fuse_silu,
                                                 fuse_layernorm, fuse_rmsnorm, fuse_rope, fold_matmuls)
