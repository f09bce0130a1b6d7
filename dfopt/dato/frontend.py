"""Dato front end: an embedded Python DSL that *records* a task-based dataflow program.

The model (Dato, "A Task-Based Programming Model for Dataflow Accelerators", DESIGN 5.5): a
program is a set of *tasks*, each mapped onto a virtual grid (``mapping=[4, 4]`` gives 16 task
instances ``t_0_0`` .. ``t_3_3``), connected by typed *streams* ``Stream[T, N, P]`` (element type
T, capacity N elements, P elements packed per transfer) and reading or writing *tensors* whose
*layout* says, per tensor axis, whether it is sharded over a grid axis (``S(k)``) or replicated
(``R``).

Nothing runs. Recording calls every task body once per grid instance with tracer values; every
``put``/``get``, ``compute`` placeholder, reduction, collective, tensor load and store is appended
to that instance's op list with the source line of the user's call. Static loops
(``for k in range(K)``) simply unroll; branching on a traced value is an error (it would not be
static). One put or get moves one element of T (the token of the Free/Used accounting); P only
sets how many elements a hardware transfer carries.

Traced values carry what the static checks (:mod:`dfopt.dato.checks`) need:

- the concrete *view* of every axis, ``(count, index)``: the instance holds block ``index`` of
  ``count`` equal blocks (``R`` is ``(1, 0)``, ``S(k)`` is ``(grid[k], coordinate k)``, and a
  ``chunk=(axis, i, parts)`` of a static loop refines it), so the producer's and the consumer's
  view of every stream token can be compared even when their grids differ;
- *pending* partial sums: a reduction (``reduce_sum``, or the contraction of ``matmul``) over an
  axis sharded on grid axis k leaves a partial result that ``allreduce(x, axis=k)`` must discharge
  before the value is put on a stream, stored, or computed with.

Estimates per instance: ``work`` = the compute ops' ``work`` (cycles; default one cycle per output
element, ``m*k*n`` for a matmul) plus one cycle per stream token; ``local_bytes`` = one buffer per
source line that creates a value (a loop reuses it), at that line's largest value.

>>> p = Program("demo")
>>> pipe = StreamArray("pipe", Stream["f32", 2], shape=(2,))
>>> @p.task(mapping=[2])
... def src(i):
...     for _ in range(3):
...         pipe[i].put(compute("gen", work=4, out="f32"))
>>> @p.task(mapping=[2])
... def dst(i):
...     for _ in range(3):
...         compute("use", work=2, reads=[pipe[i].get()])
>>> rec = p.record()
>>> sorted(rec.instances), rec.streams["pipe[0]"].puts, rec.instances["src_1"].work
(['dst_0', 'dst_1', 'src_0', 'src_1'], 3, 15)
"""

from __future__ import annotations

import contextvars
import inspect
import itertools
import math
import sys
from dataclasses import dataclass, field

from dfopt.errors import InstanceError, Problem
from dfopt.ir.itensor import DTYPE_BITS

REDUCE_OPS = ("sum", "max", "min", "prod")

# == diagnostics ==============================================================================


@dataclass(frozen=True)
class Diagnostic:
    """One fault of a Dato program: what (``kind``), where (task, instance, stream, line), why.

    ``line`` is the primary source line; ``lines`` every line involved (e.g. both ends of a stream).
    """

    kind: str
    message: str
    task: str | None = None
    stream: str | None = None
    line: int | None = None
    instance: str | None = None
    lines: tuple = ()
    file: str | None = None

    def __str__(self) -> str:
        return self.message


class DatoError(InstanceError):
    """A Dato program that cannot be recorded or does not pass its static checks (exit code 2).

    >>> str(DatoError([Diagnostic("balance", "stream 'x': 3 puts, 2 gets")]))
    "stream 'x': 3 puts, 2 gets"
    """

    def __init__(self, diagnostics):
        self.diagnostics = list(diagnostics)
        super().__init__(problems=[Problem(f"line {d.line}" if d.line else "", d.message)
                                   for d in self.diagnostics])

    def __str__(self) -> str:
        return "\n".join(d.message for d in self.diagnostics)


def _caller() -> tuple[str, int]:
    """(file, line) of the first frame outside this module: the user's call."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<unknown>", 0)


def _fail(kind: str, message: str, **where) -> None:
    file, line = _caller()
    ctx = _CURRENT.get()
    if ctx is not None:
        where.setdefault("task", ctx.task.name)
        where.setdefault("instance", ctx.inst.name)
    raise DatoError([Diagnostic(kind, f"line {line}: {message}", line=line, file=file, lines=(line,), **where)])


# == element and stream types =================================================================


@dataclass(frozen=True)
class ElemType:
    """A stream element or tensor type: ``dtype`` and a ``shape`` (``()`` for a scalar)."""

    dtype: str
    shape: tuple = ()

    @property
    def bits(self) -> int:
        return DTYPE_BITS[self.dtype] * math.prod(self.shape)

    @property
    def bytes(self) -> int:
        return (self.bits + 7) // 8

    def __str__(self) -> str:
        return self.dtype if not self.shape else f"{self.dtype}[{'x'.join(map(str, self.shape))}]"


def _positive(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def elem_type(spec) -> ElemType:
    """``"f32"`` or ``("bf16", (32, 32))`` as an :class:`ElemType`.

    >>> elem_type(("bf16", (32, 32))).bits
    16384
    """
    if isinstance(spec, ElemType):
        return spec
    if isinstance(spec, str):
        dtype, shape = spec, ()
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        dtype, shape = spec[0], tuple(spec[1]) if isinstance(spec[1], (tuple, list)) else (spec[1],)
    else:
        _fail("type", f"expected an element type like 'f32' or ('bf16', (32, 32)), got {spec!r}")
    if dtype not in DTYPE_BITS:
        _fail("type", f"unknown dtype {dtype!r}; expected one of: {', '.join(sorted(DTYPE_BITS))}")
    if not all(_positive(n) for n in shape):
        _fail("type", f"expected positive integer extents in the shape of {dtype}, got {list(shape)}")
    return ElemType(dtype, shape)


@dataclass(frozen=True)
class StreamType:
    """``Stream[T, N, P]``: elements of type T, capacity N elements, P elements per transfer."""

    elem: ElemType
    depth: int = 2
    packing: int = 1

    def __str__(self) -> str:
        return f"Stream[{self.elem}, {self.depth}, {self.packing}]"


def _is_elem_spec(params) -> bool:
    return isinstance(params, (str, ElemType)) or (
        isinstance(params, tuple) and len(params) == 2 and isinstance(params[0], str)
        and isinstance(params[1], (tuple, list)))


def stream_type(spec) -> StreamType:
    """A :class:`StreamType` from itself, an element spec, or ``(T, N[, P])``."""
    if isinstance(spec, StreamType):
        return spec
    params = (spec,) if _is_elem_spec(spec) else tuple(spec)
    if not 1 <= len(params) <= 3:
        _fail("type", f"expected Stream[T, N, P] with 1 to 3 parameters, got {len(params)}")
    elem, depth, packing = (tuple(params) + (2, 1)[len(params) - 1:])[:3]
    for what, n in (("depth N", depth), ("packing P", packing)):
        if not _positive(n):
            _fail("type", f"expected a positive integer {what} in Stream[T, N, P], got {n!r}")
    return StreamType(elem_type(elem), depth, packing)


class Stream:
    """A named FIFO stream: ``Stream("x", Stream["f32", 4])``; ``Stream[T, N, P]`` is its type."""

    def __class_getitem__(cls, params) -> StreamType:
        return stream_type(params)

    def __init__(self, name: str, type, *, array: str | None = None, index: tuple | None = None):
        if not isinstance(name, str) or not name:
            _fail("name", f"expected a non-empty stream name, got {name!r}")
        self.name, self.type, self.array, self.index = name, stream_type(type), array, index

    def put(self, value=None) -> None:
        """Send one element (a traced value, a Python number or None) into the stream."""
        _context("put").put(self, value)

    def get(self, layout=None, chunk=None) -> "Value":
        """Receive one element; ``layout``/``chunk`` declare the consumer's view of it."""
        return _context("get").get(self, layout, chunk)

    def __repr__(self) -> str:
        return f"Stream({self.name!r}, {self.type})"


class StreamArray:
    """An array of streams named ``name[i,j]``: ``StreamArray("pipe", Stream["f32", 2, 1], shape=(4, 4))``."""

    def __init__(self, name: str, type, shape):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not shape or not all(_positive(n) for n in shape):
            _fail("shape", f"stream array {name!r}: expected positive integer extents, got {list(shape)}")
        self.name, self.type, self.shape = name, stream_type(type), shape
        self._items: dict[tuple, Stream] = {}

    def __getitem__(self, index) -> Stream:
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != len(self.shape) or not all(
                isinstance(i, int) and 0 <= i < n for i, n in zip(index, self.shape)):
            _fail("index", f"stream array {self.name!r} of shape {list(self.shape)}: index {list(index)} "
                           "is out of range")
        if index not in self._items:
            label = f"{self.name}[{','.join(map(str, index))}]"
            self._items[index] = Stream(label, self.type, array=self.name, index=index)
        return self._items[index]

    def __len__(self) -> int:
        return math.prod(self.shape)


# == layouts and tensors ======================================================================


@dataclass(frozen=True)
class S:
    """Layout entry: this tensor axis is sharded over grid axis ``axis``."""

    axis: int

    def __repr__(self) -> str:
        return f"S({self.axis})"


@dataclass(frozen=True)
class _Replicated:
    def __repr__(self) -> str:
        return "R"


R = _Replicated()  # layout entry: this tensor axis is replicated (every instance holds it whole)


def layout_text(layout) -> str:
    return "?" if layout is None else "[" + ", ".join(map(repr, layout)) + "]"


def _layout(layout, rank: int, what: str) -> tuple:
    entries = tuple(layout)
    if len(entries) != rank or not all(
            e == R or (isinstance(e, S) and isinstance(e.axis, int) and e.axis >= 0) for e in entries):
        _fail("layout", f"{what}: expected a layout of {rank} entries S(k) or R, got {list(entries)!r}")
    return entries


class Tensor:
    """A global tensor with a layout: ``Tensor("A", ("bf16", (256, 256)), layout=[S(0), R])``."""

    def __init__(self, name: str, type, layout=None):
        self.name, self.type = name, elem_type(type)
        if not self.type.shape:
            _fail("type", f"tensor {name!r}: expected a shaped type like ('bf16', (256, 256)), got {self.type}")
        rank = len(self.type.shape)
        self.layout = _layout(layout if layout is not None else [R] * rank, rank, f"tensor {name!r}")

    def load(self, layout=None, chunk=None) -> "Value":
        """This instance's tile (its layout's block, refined by ``chunk=(axis, i, parts)``)."""
        return _context("load").load(self, layout, chunk)

    def store(self, value, layout=None, chunk=None) -> None:
        """Write ``value`` as this instance's tile of the tensor."""
        _context("store").store(self, value, layout, chunk)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.type}, layout={layout_text(self.layout)})"


# == recorded program =========================================================================


@dataclass(frozen=True)
class Op:
    """One recorded op: kind put | get | compute | reduce | allreduce | load | store."""

    kind: str
    line: int
    name: str = ""  # compute op, reduction op or tensor name
    stream: str | None = None
    group: str | None = None  # collective group of an allreduce
    work: int = 0
    writes: tuple = ()  # tensors a compute writes
    file: str = ""


@dataclass
class TaskInstance:
    """One grid instance of a task with its ops in program order and its estimates."""

    name: str
    task: str
    index: tuple
    grid: tuple
    ops: list = field(default_factory=list)
    work: int = 0
    local_bytes: int = 0
    file: str = ""
    line: int = 0  # the task's definition


@dataclass(frozen=True)
class TokenView:
    """How one end sees one stream token: symbolic layout, concrete view, where."""

    layout: tuple | None
    view: tuple | None
    instance: str
    line: int


@dataclass
class StreamRecord:
    """A stream's recorded use: who puts and gets (with the lines, in order) and token views."""

    name: str
    type: StreamType
    array: str | None = None
    index: tuple | None = None
    producers: dict = field(default_factory=dict)  # instance -> [line of each put]
    consumers: dict = field(default_factory=dict)  # instance -> [line of each get]
    put_views: list = field(default_factory=list)  # TokenView | None per put, in order
    get_views: list = field(default_factory=list)

    @property
    def puts(self) -> int:
        return sum(map(len, self.producers.values()))

    @property
    def gets(self) -> int:
        return sum(map(len, self.consumers.values()))

    @property
    def producer(self) -> str | None:
        return next(iter(self.producers)) if len(self.producers) == 1 else None

    @property
    def consumer(self) -> str | None:
        return next(iter(self.consumers)) if len(self.consumers) == 1 else None

    @property
    def depth(self) -> int:
        return self.type.depth

    @property
    def bits(self) -> int:
        return self.type.elem.bits


@dataclass
class CollectiveGroup:
    """The instances of one task that differ only in grid axis ``axis`` and allreduce together."""

    name: str
    task: str
    axis: int
    members: tuple
    calls: dict = field(default_factory=dict)  # instance -> [(line, op)] in order
    bits: int = 0


@dataclass(frozen=True)
class PendingUse:
    """A value with a pending partial sum (reduced over a sharded axis) used before its allreduce."""

    task: str
    instance: str
    line: int
    use: str  # put | store | compute
    target: str  # stream, tensor or compute op
    axis: int
    reduce_line: int
    file: str = ""


@dataclass(frozen=True)
class Mismatch:
    """A type or layout fault found while recording (a store's view, a put's element type)."""

    kind: str  # type | layout
    task: str
    instance: str
    line: int
    message: str
    stream: str | None = None
    file: str = ""


@dataclass
class Recording:
    """What recording a :class:`Program` gives: instances, streams, collective groups, facts."""

    program: str
    instances: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)
    groups: dict = field(default_factory=dict)
    pending_uses: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)
    _objects: dict = field(default_factory=dict, repr=False)

    def stream(self, s: Stream) -> StreamRecord:
        known = self._objects.setdefault(s.name, s)
        if known is not s:
            _fail("name", f"two different streams are named {s.name!r}; give each stream its own name")
        if s.name not in self.streams:
            self.streams[s.name] = StreamRecord(s.name, s.type, s.array, s.index)
        return self.streams[s.name]


# == tracing ==================================================================================


class Value:
    """A traced value: no data, only its type, layout, concrete view and pending partial sums."""

    __slots__ = ("owner", "elem", "layout", "view", "pending", "line")

    def __init__(self, owner: str, elem: ElemType | None, layout=None, view=None, pending=None, line=0):
        self.owner, self.elem, self.layout, self.view = owner, elem, layout, view
        self.pending = dict(pending or {})  # grid axis -> line of the reduction
        self.line = line

    @property
    def shape(self) -> tuple | None:
        return None if self.elem is None else self.elem.shape

    def __bool__(self):
        _fail("control", "a traced value has no data while recording; branch on grid coordinates or "
                         "loop counters instead (control flow must be static)")

    def split(self, axis: int, parts: int) -> list["Value"]:
        """``parts`` equal chunks along ``axis`` (views of this value, for a static loop)."""
        if self.elem is None or not 0 <= axis < len(self.shape) or not _positive(parts) \
                or self.shape[axis] % parts:
            _fail("shape", f"cannot split a value of type {self.elem} into {parts} chunks along axis {axis}")
        shape = tuple(n // parts if a == axis else n for a, n in enumerate(self.shape))
        out = []
        for i in range(parts):
            view = None if self.view is None else _refine(self.view, (axis, i, parts))
            out.append(Value(self.owner, ElemType(self.elem.dtype, shape), self.layout, view, self.pending, self.line))
        return out

    def __repr__(self) -> str:
        return f"Value({self.elem}, layout={layout_text(self.layout)}, pending={sorted(self.pending)})"


def _refine(view: tuple, chunk) -> tuple:
    axis, i, parts = chunk
    count, index = view[axis]
    return view[:axis] + ((count * parts, index * parts + i),) + view[axis + 1:]


def _drop(t: tuple | None, axis: int) -> tuple | None:
    return None if t is None else t[:axis] + t[axis + 1:]


def _check_chunk(chunk, rank: int) -> None:
    ok = (isinstance(chunk, tuple) and len(chunk) == 3 and all(isinstance(c, int) for c in chunk)
          and 0 <= chunk[0] < rank and chunk[2] >= 1 and 0 <= chunk[1] < chunk[2])
    if not ok:
        _fail("layout", f"expected chunk=(axis, i, parts) with 0 <= axis < {rank} and 0 <= i < parts, got {chunk!r}")


_CURRENT: contextvars.ContextVar = contextvars.ContextVar("dato_recorder", default=None)


def _context(what: str) -> "_Recorder":
    ctx = _CURRENT.get()
    if ctx is None:
        _fail("context", f"{what}() is only meaningful inside a task body that Program.record() runs")
    return ctx


def instance() -> tuple:
    """The grid coordinates of the task instance being recorded."""
    return _context("instance").index


def compute(op: str, work: int | None = None, reads=(), writes=(), out=None) -> Value:
    """A compute placeholder of ``work`` cycles; returns its result (type ``out``, else the first read's)."""
    return _context("compute").compute(op, work, reads, writes, out)


def matmul(a: Value, b: Value, work: int | None = None, out_dtype: str | None = None) -> Value:
    """``a @ b`` (a ``gemm`` compute); a contraction over a sharded axis leaves a pending partial sum."""
    return _context("matmul").matmul(a, b, work, out_dtype)


def reduce_sum(x: Value, axis: int) -> Value:
    """Sum over tensor axis ``axis``; over a sharded axis it leaves a pending partial sum."""
    return _context("reduce_sum").reduce(x, axis)


def allreduce(x: Value, op: str = "sum", axis: int = 0) -> Value:
    """Combine ``x`` over grid axis ``axis`` (all instances that differ only there)."""
    return _context("allreduce").allreduce(x, op, axis)


class _Recorder:
    """Records one task instance: every DSL call lands in one of these methods."""

    def __init__(self, rec: Recording, task: "Task", index: tuple):
        self.rec, self.task, self.index, self.grid = rec, task, index, task.mapping
        self.inst = TaskInstance(task.instance_name(index), task.name, index, task.mapping,
                                 file=task.file, line=task.line)
        self.buffers: dict = {}

    # -- helpers --------------------------------------------------------------------------
    def _op(self, kind: str, **fields) -> Op:
        file, line = _caller()
        op = Op(kind, line, file=file, **fields)
        self.inst.ops.append(op)
        self.inst.work += op.work
        return op

    def _value(self, op: Op, elem, layout=None, view=None, pending=None) -> Value:
        if elem is not None:
            key = (op.file, op.line)
            self.buffers[key] = max(self.buffers.get(key, 0), elem.bytes)
        return Value(self.inst.name, elem, layout, view, pending, op.line)

    def _own(self, value) -> None:
        if isinstance(value, Value) and value.owner != self.inst.name:
            _fail("value", f"a value recorded in instance {value.owner} is used in {self.inst.name}; "
                           "pass data between instances through a stream")

    def _use(self, value, op: Op, use: str, target: str) -> None:
        self._own(value)
        if isinstance(value, Value):
            for axis, reduce_line in sorted(value.pending.items()):
                self.rec.pending_uses.append(PendingUse(self.task.name, self.inst.name, op.line, use, target,
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
    def put(self, s: Stream, value) -> None:
        sr = self.rec.stream(s)
        op = self._op("put", stream=s.name, work=1)
        sr.producers.setdefault(self.inst.name, []).append(op.line)
        self._use(value, op, "put", s.name)
        elem = value.elem if isinstance(value, Value) else None
        if elem is not None and elem != s.type.elem:
            self.rec.mismatches.append(Mismatch(
                "type", self.task.name, self.inst.name, op.line,
                f"stream '{s.name}': {self.inst.name} puts a value of type {elem} at line {op.line}, "
                f"but the stream carries {s.type.elem}", s.name, op.file))
        view = value.view if isinstance(value, Value) else None
        sr.put_views.append(None if view is None else TokenView(value.layout, view, self.inst.name, op.line))

    def get(self, s: Stream, layout, chunk) -> Value:
        sr = self.rec.stream(s)
        op = self._op("get", stream=s.name, work=1)
        sr.consumers.setdefault(self.inst.name, []).append(op.line)
        view = None
        if layout is not None:
            layout = _layout(layout, len(s.type.elem.shape), f"get from stream '{s.name}'")
            view = self._view(layout, chunk)
        sr.get_views.append(None if view is None else TokenView(layout, view, self.inst.name, op.line))
        return self._value(op, s.type.elem, layout, view)

    # -- tensors --------------------------------------------------------------------------
    def load(self, tensor: Tensor, layout, chunk) -> Value:
        layout, view, elem = self._tile(tensor, layout, chunk)
        op = self._op("load", name=tensor.name)
        return self._value(op, elem, layout, view)

    def store(self, tensor: Tensor, value, layout, chunk) -> None:
        layout, view, elem = self._tile(tensor, layout, chunk)
        op = self._op("store", name=tensor.name)
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
    def compute(self, name: str, work, reads, writes, out) -> Value:
        reads = list(reads) if isinstance(reads, (list, tuple)) else [reads]
        first = next((r for r in reads if isinstance(r, Value)), None)
        elem = elem_type(out) if out is not None else (first.elem if first is not None else None)
        if work is None:
            work = math.prod(elem.shape) if elem is not None else 1
        if not isinstance(work, int) or work < 0:
            _fail("work", f"compute {name!r}: expected work as a non-negative integer of cycles, got {work!r}")
        names = tuple(w.name if isinstance(w, Tensor) else str(w) for w in writes)
        op = self._op("compute", name=name, work=work, writes=names)
        for r in reads:
            self._use(r, op, "compute", name)
        if out is None and first is not None:
            return self._value(op, elem, first.layout, first.view)
        return self._value(op, elem)

    def matmul(self, a: Value, b: Value, work, out_dtype) -> Value:
        for v in (a, b):
            if not isinstance(v, Value) or v.elem is None or len(v.shape) != 2:
                _fail("shape", f"matmul expects two traced 2-D values, got {v!r}")
        (m, k), (k2, n) = a.shape, b.shape
        if k != k2:
            _fail("shape", f"matmul of {a.elem} and {b.elem}: inner extents {k} and {k2} differ")
        op = self._op("compute", name="gemm", work=m * k * n if work is None else work)
        self._use(a, op, "compute", "gemm")
        self._use(b, op, "compute", "gemm")
        layout = None if a.layout is None or b.layout is None else (a.layout[0], b.layout[1])
        view = None if a.view is None or b.view is None else (a.view[0], b.view[1])
        contracted = [lay[i] for lay, i in ((a.layout, 1), (b.layout, 0)) if lay is not None]
        pending = {p.axis: op.line for p in contracted if isinstance(p, S)}
        return self._value(op, ElemType(out_dtype or a.elem.dtype, (m, n)), layout, view, pending)

    def reduce(self, x: Value, axis: int) -> Value:
        if not isinstance(x, Value) or x.elem is None or not 0 <= axis < len(x.shape):
            _fail("shape", f"reduce_sum over axis {axis} needs a traced value with that axis, got {x!r}")
        op = self._op("reduce", name="sum", work=math.prod(x.shape))
        self._use(x, op, "compute", "reduce_sum")
        pending = {}
        if x.layout is not None and isinstance(x.layout[axis], S):
            pending[x.layout[axis].axis] = op.line
        elem = ElemType(x.elem.dtype, _drop(x.shape, axis))
        return self._value(op, elem, _drop(x.layout, axis), _drop(x.view, axis), pending)

    def allreduce(self, x: Value, op_name: str, axis: int) -> Value:
        self._own(x)
        if op_name not in REDUCE_OPS:
            _fail("collective", f"allreduce op {op_name!r} is unknown; expected one of: {', '.join(REDUCE_OPS)}")
        if not isinstance(axis, int) or not 0 <= axis < len(self.grid):
            _fail("collective", f"allreduce over grid axis {axis}, but task '{self.task.name}' has the "
                                f"{len(self.grid)}-axis grid {list(self.grid)}")
        group = self._group(axis, x)
        work = math.prod(x.shape) if isinstance(x, Value) and x.elem is not None else 1
        op = self._op("allreduce", name=op_name, group=group.name, work=work)
        group.calls.setdefault(self.inst.name, []).append((op.line, op_name))
        if not isinstance(x, Value):
            return self._value(op, None)
        pending = {a: ln for a, ln in x.pending.items() if a != axis}
        return self._value(op, x.elem, x.layout, x.view, pending)

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


def view_text(view) -> str:
    """``axis 0 block 1 of 4, axis 1 whole`` for a concrete view."""
    if view is None:
        return "unknown view"
    return ", ".join(f"axis {a} whole" if c == 1 else f"axis {a} block {i} of {c}" for a, (c, i) in enumerate(view))


# == program and tasks ========================================================================


@dataclass
class Task:
    """A task: a Python function recorded once per coordinate of its grid ``mapping``."""

    name: str
    fn: object
    mapping: tuple
    file: str = ""
    line: int = 0
    takes_index: bool = False

    def instance_name(self, index: tuple) -> str:
        return "_".join([self.name] + [str(i) for i in index])

    def indices(self):
        return itertools.product(*(range(n) for n in self.mapping))


class Program:
    """A Dato program: register tasks with ``@program.task(mapping=[...])``, then :meth:`record`."""

    def __init__(self, name: str = "program"):
        self.name = name
        self.tasks: dict[str, Task] = {}

    def task(self, mapping=None, name: str | None = None):
        """Decorator: register the function as a task on the grid ``mapping`` (None: one instance)."""
        def register(fn):
            self.add_task(fn, mapping=mapping, name=name)
            return fn
        return register

    def add_task(self, fn, mapping=None, name: str | None = None) -> Task:
        """Register ``fn`` as a task. It takes one parameter per grid axis, or none (then ``instance()``)."""
        name = name or fn.__name__
        grid = () if mapping is None else ((mapping,) if isinstance(mapping, int) else tuple(mapping))
        if not all(_positive(n) for n in grid):
            _fail("mapping", f"task {name!r}: expected a grid of positive integers, got {list(grid)}")
        if name in self.tasks:
            _fail("name", f"task {name!r} is registered twice; pass name=... to tell them apart")
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if params and len(params) != len(grid):
            _fail("mapping", f"task {name!r} takes {len(params)} parameters but its grid {list(grid)} has "
                             f"{len(grid)} axes; take one per grid axis, or none and call instance()")
        code = getattr(fn, "__code__", None)
        task = Task(name, fn, grid, code.co_filename if code else "", code.co_firstlineno if code else 0,
                    bool(params))
        self.tasks[name] = task
        return task

    def record(self) -> Recording:
        """Run every task body once per grid instance with tracers; return what they did."""
        rec = Recording(self.name)
        for task in self.tasks.values():
            for index in task.indices():
                inst = _record_instance(rec, task, index)
                if inst.name in rec.instances:
                    _fail("name", f"two task instances are named {inst.name!r} (tasks "
                                  f"'{rec.instances[inst.name].task}' and '{task.name}'); rename one task")
                rec.instances[inst.name] = inst
        return rec


def _record_instance(rec: Recording, task: Task, index: tuple) -> TaskInstance:
    recorder = _Recorder(rec, task, index)
    token = _CURRENT.set(recorder)
    try:
        task.fn(*index) if task.takes_index else task.fn()
    finally:
        _CURRENT.reset(token)
    return recorder.finish()


def recording(program) -> Recording:
    """A :class:`Recording` from a program (recorded now) or a recording (as is)."""
    if isinstance(program, Recording):
        return program
    if isinstance(program, Program):
        return program.record()
    raise TypeError(f"expected a dato Program or Recording, got {type(program).__name__}")
