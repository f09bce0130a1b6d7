"""What recording a Dato program gives, and the traced values the task bodies compute with.

A :class:`Recording` holds one :class:`TaskInstance` per grid instance (its :class:`Op` list in
program order, with source lines, and its estimates), one :class:`StreamRecord` per stream (who
puts and gets, and how each end views every token), the :class:`CollectiveGroup` of every
allreduce, and the faults noticed while recording (:class:`PendingUse`, :class:`Mismatch`) for
the static checks of :mod:`dfopt.dato.checks`.

A :class:`Value` carries no data: only its element type, its layout, the concrete *view* of each
axis as ``(count, index)`` (the instance holds block ``index`` of ``count`` equal blocks) and
its pending partial sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dfopt.dato.dsl_types import _CURRENT, _DSL_FILES, ElemType, Stream, StreamType, _fail, _positive, layout_text

_DSL_FILES.add(__file__)

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
    block: tuple = ()  # load / store: the tensor block, (count, index) per axis
    bytes: int = 0  # load / store: the block's bytes
    reads: tuple = ()  # ids of the values it reads (Value.vid; None for a constant put)
    out: int = -1  # id of the value it makes (-1: none)
    outs: tuple = ()  # a compute with several results: the id of each, in order (out is the first)
    fn: str = ""  # what it computes, for dfopt.dato.run: matmul, reduce_sum or the compute's name
    axis: int = -1  # reduce: the tensor axis summed; allreduce: the grid axis


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
    chain_uses: list = field(default_factory=list)     # PendingUse: reduce_line is the allreduce's
    mismatches: list = field(default_factory=list)
    views: dict = field(default_factory=dict)  # vid of a split chunk -> (vid it splits, axis, i, parts)
    out_types: dict = field(default_factory=dict)  # vid -> element type (dtype) of the value an op makes
    tensors: dict = field(default_factory=dict)  # name -> the Tensor loaded or stored
    _objects: dict = field(default_factory=dict, repr=False)
    _vids: int = field(default=0, repr=False)

    def new_vid(self) -> int:
        """A fresh value id (the values of every instance share one numbering)."""
        self._vids += 1
        return self._vids - 1

    def stream(self, s: Stream) -> StreamRecord:
        known = self._objects.setdefault(s.name, s)
        if known is not s:
            _fail("name", f"two different streams are named {s.name!r}; give each stream its own name")
        if s.name not in self.streams:
            self.streams[s.name] = StreamRecord(s.name, s.type, s.array, s.index)
        return self.streams[s.name]


# == traced values ============================================================================


class Value:
    """A traced value: no data, only its type, layout, concrete view and pending partial sums."""

    __slots__ = ("owner", "elem", "layout", "view", "pending", "line", "chained", "vid")

    def __init__(self, owner: str, elem: ElemType | None, layout=None, view=None, pending=None, line=0,
                 chained=None, vid: int = -1):
        self.owner, self.elem, self.layout, self.view, self.vid = owner, elem, layout, view, vid
        self.pending = dict(pending or {})  # grid axis -> line of the reduction
        self.line = line
        # grid axis -> line of an allreduce whose sum this (non-last) member of the chain does not hold
        self.chained = dict(chained or {})

    @property
    def shape(self) -> tuple | None:
        return None if self.elem is None else self.elem.shape

    def __bool__(self):
        _fail("control", "a traced value has no data while recording; branch on grid coordinates or "
                         "loop counters instead (control flow must be static)")

    def split(self, axis: int, parts: int) -> list[Value]:
        """``parts`` equal chunks along ``axis`` (views of this value, for a static loop)."""
        if self.elem is None or not 0 <= axis < len(self.elem.shape) or not _positive(parts) \
                or self.elem.shape[axis] % parts:
            _fail("shape", f"cannot split a value of type {self.elem} into {parts} chunks along axis {axis}")
        shape = tuple(n // parts if a == axis else n for a, n in enumerate(self.elem.shape))
        rec = _CURRENT.get()
        out = []
        for i in range(parts):
            view = None if self.view is None else _refine(self.view, (axis, i, parts))
            vid = -1
            if rec is not None and self.vid >= 0:
                vid = rec.rec.new_vid()
                rec.rec.views[vid] = (self.vid, axis, i, parts)
            out.append(Value(self.owner, ElemType(self.elem.dtype, shape), self.layout, view, self.pending, self.line,
                             self.chained, vid))
        return out

    def __repr__(self) -> str:
        return f"Value({self.elem}, layout={layout_text(self.layout)}, pending={sorted(self.pending)})"


def _refine(view: tuple, chunk) -> tuple:
    axis, i, parts = chunk
    count, index = view[axis]
    return view[:axis] + ((count * parts, index * parts + i),) + view[axis + 1:]


def view_text(view: Sequence[tuple[int, int]] | None) -> str:
    """``axis 0 block 1 of 4, axis 1 whole`` for a concrete view."""
    if view is None:
        return "unknown view"
    return ", ".join(f"axis {a} whole" if c == 1 else f"axis {a} block {i} of {c}" for a, (c, i) in enumerate(view))
