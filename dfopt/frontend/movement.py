"""ONNX data movement and the token embedding onto the operator graph's ``concat``, ``slice``,
``expand`` and ``embedding`` (:mod:`dfopt.ir.opgraph`).

* **Concat** (any ``axis``, negative counted from the end): ``concat``; a constant operand
  becomes a weight, a single input is dropped.
* **Slice** with constant ``starts``, ``ends``, ``axes`` and ``steps`` (inputs, opset 13 on):
  ``slice`` with every axis resolved as ONNX does (negative indices count from the end, then
  clamped to ``[0, dim]``; ``INT64_MAX`` ends, as ``x[:, 1:]`` exports, are the dimension); a
  computed index, a negative step (a reversal) or an empty result is refused naming the node.
* **Split** (``split`` as an input from opset 13, ``num_outputs`` from opset 18, else equal parts):
  one ``slice`` per output that something reads.
* **Expand** with a constant shape: ``expand`` to the inferred result shape (ONNX broadcasts both
  ways); an expand that changes nothing is dropped.
* **Gather** of a weight table ``[V, D]`` (an initializer) on axis 0 by integer ``indices`` that
  are a graph input: ``embedding``, the token embedding. The ids input imports as ``i32``
  whatever its ONNX type (``int64``, as exporters write token ids, or ``int32``): ids beyond
  2^31 are no vocabulary. Ids must lie in ``[0, V)``: ONNX Gather would also take negative ids
  (from the end), which the reference refuses as out of range. Every other Gather is folded
  when its inputs are constants (before translation), else refused naming the node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dfopt.frontend.graph import Node
    from dfopt.frontend.translate import _Translator

#: ONNX integer types that token ids may have in the model (all import as i32)
ID_TYPES = (6, 7)      # TensorProto.INT32, TensorProto.INT64


def _axis(t: _Translator, node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise t._fault(f"axis={axis} is outside the rank-{rank} input (axes {-rank}..{rank - 1})")
    return axis % rank


def concat(t: _Translator, node: Node) -> None:
    """Concat: ``concat`` along the resolved axis (one input: dropped)."""
    ins = [x for x in node.inputs if x]
    if len(ins) == 1:
        t.same(node, ins[0])
        return
    axis = _axis(t, node, int(node.attrs["axis"]), len(t.shape(ins[0])))
    t.emit("concat", [t.operand(x) for x in ins], t.result(node.outputs[0]), attrs={"axis": axis})


def _constant_ints(t: _Translator, node: Node, j: int, role: str) -> list[int] | None:
    """The constant integers of optional input ``j`` (None when absent), refused when computed."""
    name = node.input(j)
    if not name:
        return None
    if name not in t.g.consts:
        raise t._fault(f"the {role} {name!r} are computed from data: only constant starts, ends, axes and steps "
                       "import (as slice)")
    return [int(v) for v in np.reshape(t.g.consts[name], -1)]


def _resolve(index: int, dim: int) -> int:
    """An ONNX slice index for a positive step: from the end when negative, clamped to [0, dim].

    >>> _resolve(-4, 10), _resolve(2**63 - 1, 10), _resolve(-100, 10)
    (6, 10, 0)
    """
    return min(max(index + dim if index < 0 else index, 0), dim)


def slice_(t: _Translator, node: Node) -> None:
    """Slice: ``slice`` with every axis's start, end and step resolved (absent axes whole)."""
    x, out = node.inputs[0], node.outputs[0]
    shape = t.shape(x)
    starts_, ends_ = _constant_ints(t, node, 1, "starts"), _constant_ints(t, node, 2, "ends")
    axes_ = _constant_ints(t, node, 3, "axes") or list(range(len(shape)))
    steps_ = _constant_ints(t, node, 4, "steps") or [1] * len(axes_)
    assert starts_ is not None and ends_ is not None       # required inputs (onnx.checker)
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    for a, start, end, step in zip(axes_, starts_, ends_, steps_):
        d = _axis(t, node, a, len(shape))
        if step < 1:
            raise t._fault(f"steps[{axes_.index(a)}] = {step} on axis {d}: only positive steps import (a negative "
                           "step reverses the axis, which the op set's slice does not)")
        starts[d], ends[d], steps[d] = _resolve(start, shape[d]), _resolve(end, shape[d]), step
        if starts[d] >= ends[d]:
            raise t._fault(f"axis {d} of {x!r} {list(shape)}: start {start} and end {end} resolve to [{starts[d]}, "
                           f"{ends[d]}): an empty slice (the operator graph has no zero-size tensors)")
    _emit_slice(t, x, out, starts, ends, steps)


def _emit_slice(t: _Translator, x: str, out: str, starts: list, ends: list, steps: list, suffix: str = "") -> None:
    """``out = x[starts:ends:steps]``: a ``slice``, or ``x`` itself when that is all of it (an
    alias, or for a graph output a reshape to the same shape, as :meth:`_Translator.same`)."""
    if any(starts) or ends != list(t.shape(x)) or any(s != 1 for s in steps):
        t.emit("slice", [t.operand(x)], t.result(out), suffix=suffix,
               attrs={"starts": starts, "ends": ends, "steps": steps})
    elif out in t.g.outputs:
        t.emit("reshape", [t.operand(x)], t.result(out), suffix=suffix, attrs={"shape": list(t.shape(x))})
    else:
        t.alias[out] = t.alias.get(x, x)


def split(t: _Translator, node: Node) -> None:
    """Split: one ``slice`` per output that is read (the sizes from ``split``, ``num_outputs`` or
    the number of outputs, ONNX's rules)."""
    x = node.inputs[0]
    shape = t.shape(x)
    axis = _axis(t, node, int(node.attrs.get("axis", 0)), len(shape))
    sizes = _constant_ints(t, node, 1, "split sizes") if node.op == "Split" else None
    n = len(node.outputs)
    if sizes is None:
        parts = int(node.attrs.get("num_outputs", n))
        each = -(-shape[axis] // parts)
        sizes = [min(each, shape[axis] - k * each) for k in range(parts)]
    if len(sizes) != n or sum(sizes) != shape[axis] or min(sizes) < 1:
        raise t._fault(f"split sizes {sizes} for {n} outputs along axis {axis} of {list(shape)}: expected {n} "
                       f"positive sizes summing to {shape[axis]}")
    start = 0
    for j, (out, size) in enumerate(zip(node.outputs, sizes)):
        if out and (t.g.consumers(out) or out in t.g.outputs):
            starts, ends = [0] * len(shape), list(shape)
            starts[axis], ends[axis] = start, start + size
            _emit_slice(t, x, out, starts, ends, [1] * len(shape), suffix=str(j))
        start += size


def expand(t: _Translator, node: Node) -> None:
    """Expand: ``expand`` to the inferred result shape (the constant target broadcast with x's)."""
    x, shape, out = node.inputs[0], node.inputs[1], node.outputs[0]
    if shape not in t.g.consts:
        raise t._fault(f"the target shape {shape!r} is computed from data: only Expand to a constant shape imports "
                       "(as expand)")
    target = list(t.g.shapes[out])
    if tuple(target) == t.shape(x):
        t.same(node, x)
        return
    t.emit("expand", [t.operand(x)], t.result(out), attrs={"shape": target})


def gather(t: _Translator, node: Node) -> None:
    """Gather: ``embedding`` when it is a token-embedding lookup, else refused naming the node."""
    table, ids = node.inputs
    axis = int(node.attrs.get("axis", 0))
    why = _not_an_embedding(t, table, ids, axis)
    if why:
        raise t._fault(f"{why}: only an embedding lookup imports (a Gather of a weight table [V, D] on axis 0 by "
                       "integer ids that are a graph input); a Gather of constants is folded")
    name = t.alias.get(ids, ids)
    if name not in t.names:                  # token ids: i32 whatever the model's integer type
        t._declare(name, t._fresh(name), t.g.shapes[name], "i32", "input")
    t.emit("embedding", [t.names[name], t.operand(table)], t.result(node.outputs[0]))


def _not_an_embedding(t: _Translator, table: str, ids: str, axis: int) -> str | None:
    """Why ``Gather(table, ids, axis)`` is not a token embedding (None when it is one)."""
    if table not in t.g.consts:
        return f"the data {table!r} is computed"
    shape = t.g.consts[table].shape
    if len(shape) != 2 or axis not in (0, -2):
        return f"the table {table!r} is {list(shape)}, gathered on axis {axis}: expected a [V, D] table on axis 0"
    name = t.alias.get(ids, ids)
    if name not in t.g.inputs:
        return f"the indices {ids!r} are computed, not a graph input"
    if t.g.dtypes[name] not in ID_TYPES:
        return f"the indices {ids!r} are not integers (int64 or int32)"
    if not t.g.shapes[name]:
        return f"the indices {ids!r} are a scalar: the operator graph's tensors have rank >= 1"
    return None


#: ONNX op -> handler, for :data:`dfopt.frontend.translate._HANDLERS`
HANDLERS = {"Concat": concat, "Slice": slice_, "Split": split, "Expand": expand, "Gather": gather}
