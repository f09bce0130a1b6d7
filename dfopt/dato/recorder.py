"""The recorder of one Dato task instance: every DSL call in a task body lands in :class:`_Recorder`.

Each call appends an :class:`~dfopt.dato.record.Op` with the user's source line to the
instance (its ``work`` adds to the instance's), keeps one buffer per source line that creates
a value (at that line's largest value), and notes in the
:class:`~dfopt.dato.record.Recording` what the static checks need: stream ends and token views,
collective groups, partial sums used before their allreduce, type and layout mismatches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from dfopt.dato.dsl_types import (
    _CURRENT,
    _DSL_FILES,
    ElemType,
    S,
    Stream,
    Tensor,
    _caller,
    _fail,
    _layout,
    elem_type,
    layout_text,
)
from dfopt.dato.record import (
    CollectiveGroup,
    Mismatch,
    Op,
    PendingUse,
    Recording,
    TaskInstance,
    TokenView,
    Value,
    _refine,
    view_text,
)

if TYPE_CHECKING:
    from dfopt.dato.frontend import Task

_DSL_FILES.add(__file__)

REDUCE_OPS = ("sum", "max", "min", "prod")


def _vid(v: object) -> int | None:
    """The id of a traced value; None for a constant (a Python number or None)."""
    return v.vid if isinstance(v, Value) else None


def _matrix(v: object) -> ElemType:
    """The element type of a traced 2-D value (matmul's operands)."""
    if not isinstance(v, Value) or v.elem is None or len(v.elem.shape) != 2:
        _fail("shape", f"matmul expects two traced 2-D values, got {v!r}")
    return v.elem


def _drop(t: tuple | None, axis: int) -> tuple | None:
    return None if t is None else t[:axis] + t[axis + 1:]


def _check_chunk(chunk, rank: int) -> None:
    ok = (isinstance(chunk, tuple) and len(chunk) == 3 and all(isinstance(c, int) for c in chunk)
          and 0 <= chunk[0] < rank and chunk[2] >= 1 and 0 <= chunk[1] < chunk[2])
    if not ok:
        _fail("layout", f"expected chunk=(axis, i, parts) with 0 <= axis < {rank} and 0 <= i < parts, got {chunk!r}")


class _Recorder:
    """Records one task instance: every DSL call lands in one of these methods."""

    def __init__(self, rec: Recording, task: Task, index: tuple):
        self.rec, self.task, self.index, self.grid = rec, task, index, task.mapping
        self.inst = TaskInstance(task.instance_name(index), task.name, index, task.mapping,
                                 file=task.file, line=task.line)
        self.buffers: dict = {}
        self.overwritten: dict[int, int] = {}   # vid of a value an in-place compute overwrote -> its line

    # -- helpers --------------------------------------------------------------------------
    def _op(self, kind: str, **fields) -> Op:
        file, line = _caller()
        op = Op(kind, line, file=file, **fields)
        self.inst.ops.append(op)
        self.inst.work += op.work
        return op

    def _value(self, op: Op, elem, layout=None, view=None, pending=None, chained=None, vid: int | None = None) -> Value:
        vid = op.out if vid is None else vid
        if elem is not None:
            if not op.outs:
                self._hold(op, elem.bytes)
            if vid >= 0:
                self.rec.out_types[vid] = elem.dtype
        return Value(self.inst.name, elem, layout, view, pending, op.line, chained, vid)

    def _hold(self, op: Op, nbytes: int) -> None:
        """The local buffer of the values made at ``op``'s line (the most any one call makes)."""
        key = (op.file, op.line)
        self.buffers[key] = max(self.buffers.get(key, 0), nbytes)

    def _new(self) -> int:
        return self.rec.new_vid()

    def _own(self, value) -> None:
        if isinstance(value, Value) and value.vid in self.overwritten:
            _fail("inplace", f"a value made at line {value.line} is used after line {self.overwritten[value.vid]} "
                             "overwrote it in place; use the in-place result instead")
        if isinstance(value, Value) and value.owner != self.inst.name:
            _fail("value", f"a value recorded in instance {value.owner} is used in {self.inst.name}; "
                           "pass data between instances through a stream")

    def _use(self, value, op: Op, use: str, target: str) -> None:
        self._own(value)
        if isinstance(value, Value):
            for axis, reduce_line in sorted(value.pending.items()):
                self.rec.pending_uses.append(PendingUse(self.task.name, self.inst.name, op.line, use, target,
                                                        axis, reduce_line, op.file))
            for axis, reduce_line in sorted(value.chained.items()):
                self.rec.chain_uses.append(PendingUse(self.task.name, self.inst.name, op.line, use, target,
                                                      axis, reduce_line, op.file))

    def _view(self, layout: tuple, chunk) -> tuple:
        view = []
        for axis, p in enumerate(layout):
            if isinstance(p, S) and p.axis >= len(self.grid):
                _fail("layout", f"layout {layout_text(layout)} shards axis {axis} over grid axis {p.axis}, "
                                f"but task '{self.task.name}' has the {len(self.grid)}-axis grid {list(self.grid)}")
            view.append((self.grid[p.axis], self.index[p.axis]) if isinstance(p, S) else (1, 0))
        if chunk is not None:
            _check_chunk(chunk, len(layout))
            view = list(_refine(tuple(view), chunk))
        return tuple(view)

    def _tile(self, tensor: Tensor, layout, chunk) -> tuple:
        known = self.rec.tensors.setdefault(tensor.name, tensor)
        if known is not tensor:
            _fail("name", f"two different tensors are named {tensor.name!r}; give each tensor its own name")
        layout = tensor.layout if layout is None else _layout(layout, len(tensor.type.shape), f"tensor {tensor.name!r}")
        view = self._view(layout, chunk)
        shape = []
        for axis, (n, (count, _)) in enumerate(zip(tensor.type.shape, view)):
            if n % count:
                _fail("layout", f"tensor {tensor.name!r}: axis {axis} of extent {n} does not split into {count} "
                                f"equal blocks (layout {layout_text(layout)})")
            shape.append(n // count)
        return layout, view, ElemType(tensor.type.dtype, tuple(shape))

    # -- streams --------------------------------------------------------------------------
    def put(self, s: Stream, value: object) -> None:
        sr = self.rec.stream(s)
        op = self._op("put", stream=s.name, work=1, reads=(_vid(value),))
        sr.producers.setdefault(self.inst.name, []).append(op.line)
        self._use(value, op, "put", s.name)
        elem = value.elem if isinstance(value, Value) else None
        if elem is not None and elem != s.type.elem:
            self.rec.mismatches.append(Mismatch(
                "type", self.task.name, self.inst.name, op.line,
                f"stream '{s.name}': {self.inst.name} puts a value of type {elem} at line {op.line}, "
                f"but the stream carries {s.type.elem}", s.name, op.file))
        sr.put_views.append(TokenView(value.layout, value.view, self.inst.name, op.line)
                            if isinstance(value, Value) and value.view is not None else None)

    def get(self, s: Stream, layout: Iterable[object] | None, chunk: tuple | None) -> Value:
        sr = self.rec.stream(s)
        op = self._op("get", stream=s.name, work=1, out=self._new())
        sr.consumers.setdefault(self.inst.name, []).append(op.line)
        view = None
        if layout is not None:
            layout = _layout(layout, len(s.type.elem.shape), f"get from stream '{s.name}'")
            view = self._view(layout, chunk)
        sr.get_views.append(None if view is None else TokenView(layout, view, self.inst.name, op.line))
        return self._value(op, s.type.elem, layout, view)

    # -- tensors --------------------------------------------------------------------------
    def load(self, tensor: Tensor, layout: Iterable[object] | None, chunk: tuple | None) -> Value:
        layout, view, elem = self._tile(tensor, layout, chunk)
        op = self._op("load", name=tensor.name, block=view, bytes=elem.bytes, out=self._new())
        return self._value(op, elem, layout, view)

    def store(self, tensor: Tensor, value: object, layout: Iterable[object] | None, chunk: tuple | None) -> None:
        layout, view, elem = self._tile(tensor, layout, chunk)
        op = self._op("store", name=tensor.name, block=view, bytes=elem.bytes, reads=(_vid(value),))
        self._use(value, op, "store", tensor.name)
        if not isinstance(value, Value):
            return
        if value.elem is not None and value.elem != elem:
            self.rec.mismatches.append(Mismatch(
                "type", self.task.name, self.inst.name, op.line,
                f"task '{self.task.name}' line {op.line}: stores a value of type {value.elem} into tensor "
                f"'{tensor.name}', whose tile here is {elem}", None, op.file))
        elif value.view is not None and value.view != view:
            self.rec.mismatches.append(Mismatch(
                "layout", self.task.name, self.inst.name, op.line,
                f"task '{self.task.name}' line {op.line}: {self.inst.name} stores a tile with layout "
                f"{layout_text(value.layout)} ({view_text(value.view)}) into tensor '{tensor.name}', whose layout "
                f"{layout_text(layout)} gives this instance {view_text(view)}", None, op.file))

    # -- compute --------------------------------------------------------------------------
    def compute(self, name: str, work: int | None, reads: object, writes: Iterable[object],
                out: ElemType | str | tuple | list | None, inplace: int | None = None) -> Value | tuple:
        reads = list(reads) if isinstance(reads, (list, tuple)) else [reads]
        first = next((r for r in reads if isinstance(r, Value)), None)
        if isinstance(out, list):
            if not out:
                _fail("type", f"compute {name!r}: a list of output types needs at least one")
            if inplace is not None:
                _fail("inplace", f"compute {name!r}: an op with several results cannot be in place")
            types = [elem_type(o) for o in out]
            op = self._compute_op(name, work, reads, writes, types, several=True)
            self._hold(op, sum(e.bytes for e in types))
            return tuple(self._value(op, e, vid=v) for e, v in zip(types, op.outs))
        if inplace is not None:
            target = self._inplace(name, reads, out, inplace)
            tt = target.elem
            assert tt is not None                   # _inplace refuses a read without a type
            op = self._compute_op(name, work, reads, writes, [tt])
            self.overwritten[target.vid] = op.line   # the result lives in the read's buffer: none of its own
            self.rec.out_types[op.out] = tt.dtype
            return Value(self.inst.name, tt, target.layout, target.view, None, op.line, None, op.out)
        elem = elem_type(out) if out is not None else (first.elem if first is not None else None)
        op = self._compute_op(name, work, reads, writes, [elem])
        if out is None and first is not None:
            return self._value(op, elem, first.layout, first.view)
        return self._value(op, elem)

    def _compute_op(self, name: str, work: int | None, reads: list, writes: Iterable[object], types: list,
                    several: bool = False) -> Op:
        if work is None:
            work = sum(math.prod(e.shape) for e in types if e is not None) or 1
        if not isinstance(work, int) or work < 0:
            _fail("work", f"compute {name!r}: expected work as a non-negative integer of cycles, got {work!r}")
        names = tuple(w.name if isinstance(w, Tensor) else str(w) for w in writes)
        outs = tuple(self._new() for _ in types)
        op = self._op("compute", name=name, work=work, writes=names, reads=tuple(_vid(r) for r in reads),
                      out=outs[0], outs=outs if several else (), fn=name)
        for r in reads:
            self._use(r, op, "compute", name)
        return op

    def _inplace(self, name: str, reads: list, out, inplace: int) -> Value:
        """The read that an in-place compute overwrites (its result then takes no buffer of its own)."""
        if not isinstance(inplace, int) or isinstance(inplace, bool) or not 0 <= inplace < len(reads) \
                or not isinstance(reads[inplace], Value) or reads[inplace].elem is None:
            _fail("inplace", f"compute {name!r}: inplace={inplace!r} must be the index of a traced read "
                             f"(0..{len(reads) - 1})")
        target = reads[inplace]
        if isinstance(out, list) or (out is not None and elem_type(out) != target.elem):
            _fail("inplace", f"compute {name!r}: an in-place result has the type of read {inplace} "
                             f"({target.elem}), got out={out!r}")
        return target

    def matmul(self, a: Value, b: Value, work: int | None, out_dtype: str | None) -> Value:
        ea, eb = _matrix(a), _matrix(b)
        (m, k), (k2, n) = ea.shape, eb.shape
        if k != k2:
            _fail("shape", f"matmul of {a.elem} and {b.elem}: inner extents {k} and {k2} differ")
        op = self._op("compute", name="gemm", work=m * k * n if work is None else work, reads=(a.vid, b.vid),
                      out=self._new(), fn="matmul")
        self._use(a, op, "compute", "gemm")
        self._use(b, op, "compute", "gemm")
        layout = None if a.layout is None or b.layout is None else (a.layout[0], b.layout[1])
        view = None if a.view is None or b.view is None else (a.view[0], b.view[1])
        contracted = [lay[i] for lay, i in ((a.layout, 1), (b.layout, 0)) if lay is not None]
        pending = {p.axis: op.line for p in contracted if isinstance(p, S)}
        return self._value(op, ElemType(out_dtype or ea.dtype, (m, n)), layout, view, pending)

    def reduce(self, x: Value, axis: int) -> Value:
        if not isinstance(x, Value) or x.elem is None or not 0 <= axis < len(x.elem.shape):
            _fail("shape", f"reduce_sum over axis {axis} needs a traced value with that axis, got {x!r}")
        op = self._op("reduce", name="sum", work=math.prod(x.elem.shape), reads=(x.vid,), out=self._new(),
                      fn="reduce_sum", axis=axis)
        self._use(x, op, "compute", "reduce_sum")
        pending: dict[int, int] = {}
        if x.layout is not None and isinstance(x.layout[axis], S):
            pending[x.layout[axis].axis] = op.line
        elem = ElemType(x.elem.dtype, x.elem.shape[:axis] + x.elem.shape[axis + 1:])
        return self._value(op, elem, _drop(x.layout, axis), _drop(x.view, axis), pending)

    def allreduce(self, x: Value, op_name: str, axis: int) -> Value:
        self._own(x)
        if op_name not in REDUCE_OPS:
            _fail("collective", f"allreduce op {op_name!r} is unknown; expected one of: {', '.join(REDUCE_OPS)}")
        if not isinstance(axis, int) or not 0 <= axis < len(self.grid):
            _fail("collective", f"allreduce over grid axis {axis}, but task '{self.task.name}' has the "
                                f"{len(self.grid)}-axis grid {list(self.grid)}")
        group = self._group(axis, x)
        work = math.prod(x.elem.shape) if isinstance(x, Value) and x.elem is not None else 1
        op = self._op("allreduce", name=op_name, group=group.name, work=work, reads=(_vid(x),), out=self._new(),
                      fn="allreduce", axis=axis)
        group.calls.setdefault(self.inst.name, []).append((op.line, op_name))
        if not isinstance(x, Value):
            return self._value(op, None)
        pending = {a: ln for a, ln in x.pending.items() if a != axis}
        chained = dict(x.chained)
        if self.index[axis] != self.grid[axis] - 1:     # lowered as a chain: the sum reaches the last member
            chained[axis] = op.line
        return self._value(op, x.elem, x.layout, x.view, pending, chained)

    def _group(self, axis: int, x) -> CollectiveGroup:
        coords = [str(c) if a != axis else "*" for a, c in enumerate(self.index)]
        name = "_".join([self.task.name] + coords)
        if name not in self.rec.groups:
            members = tuple(self.task.instance_name(self.index[:axis] + (c,) + self.index[axis + 1:])
                            for c in range(self.grid[axis]))
            self.rec.groups[name] = CollectiveGroup(name, self.task.name, axis, members)
        group = self.rec.groups[name]
        if isinstance(x, Value) and x.elem is not None:
            group.bits = max(group.bits, x.elem.bits)
        return group

    def finish(self) -> TaskInstance:
        self.inst.local_bytes = sum(self.buffers.values())
        return self.inst


def _record_instance(rec: Recording, task: Task, index: tuple) -> TaskInstance:
    recorder = _Recorder(rec, task, index)
    token = _CURRENT.set(recorder)
    try:
        task.fn(*index) if task.takes_index else task.fn()
    finally:
        _CURRENT.reset(token)
    return recorder.finish()
