"""Declarations of the Dato DSL: diagnostics, element and stream types, streams, layouts, tensors.

A program declares its streams and tensors once, outside the task bodies. Their data-moving
methods (``put``, ``get``, ``load``, ``store``) hand over to the recorder of the task instance
being recorded (:mod:`dfopt.dato.recorder`); called anywhere else they raise a
:class:`DatoError` that names the user's source line.

>>> Stream("x", Stream["f32", 4])
Stream('x', Stream[f32, 4, 1])
>>> Tensor("A", ("bf16", (256, 256)), layout=[S(0), R])
Tensor('A', bf16[256x256], layout=[S(0), R])
"""

from __future__ import annotations

import contextvars
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, cast

from dfopt.errors import InstanceError, Problem
from dfopt.ir.itensor import DTYPE_BITS

if TYPE_CHECKING:
    from dfopt.dato.record import Value
    from dfopt.dato.recorder import _Recorder

# == diagnostics and the current recorder =====================================================


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

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__(problems=[Problem(f"line {d.line}" if d.line else "", d.message)
                                   for d in self.diagnostics])

    def __str__(self) -> str:
        return "\n".join(d.message for d in self.diagnostics)


#: The DSL's own source files (the modules of the DSL add theirs): a diagnostic names the line of
#: the first frame outside them, the user's call.
_DSL_FILES = {__file__}

#: The recorder of the task instance being recorded; None outside ``Program.record()``.
_CURRENT: contextvars.ContextVar = contextvars.ContextVar("dato_recorder", default=None)


def _caller() -> tuple[str, int]:
    """(file, line) of the first frame outside the DSL's modules: the user's call."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _DSL_FILES:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<unknown>", 0)


def _fail(kind: str, message: str, **where: Any) -> NoReturn:
    file, line = _caller()
    ctx = _CURRENT.get()
    if ctx is not None:
        where.setdefault("task", ctx.task.name)
        where.setdefault("instance", ctx.inst.name)
    raise DatoError([Diagnostic(kind, f"line {line}: {message}", line=line, file=file, lines=(line,), **where)])


def _context(what: str) -> _Recorder:
    ctx = _CURRENT.get()
    if ctx is None:
        _fail("context", f"{what}() is only meaningful inside a task body that Program.record() runs")
    return ctx


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


def elem_type(spec: ElemType | str | tuple) -> ElemType:
    """``"f32"`` or ``("bf16", (32, 32))`` as an :class:`ElemType`.

    >>> elem_type(("bf16", (32, 32))).bits
    16384
    """
    if isinstance(spec, ElemType):
        return spec
    shape: tuple
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


def stream_type(spec: StreamType | ElemType | str | tuple) -> StreamType:
    """A :class:`StreamType` from itself, an element spec, or ``(T, N[, P])``."""
    if isinstance(spec, StreamType):
        return spec
    params = (spec,) if _is_elem_spec(spec) else tuple(cast("Iterable[Any]", spec))  # (T, N[, P])
    if not 1 <= len(params) <= 3:
        _fail("type", f"expected Stream[T, N, P] with 1 to 3 parameters, got {len(params)}")
    elem, depth, packing = (tuple(params) + (2, 1)[len(params) - 1:])[:3]
    for what, n in (("depth N", depth), ("packing P", packing)):
        if not _positive(n):
            _fail("type", f"expected a positive integer {what} in Stream[T, N, P], got {n!r}")
    return StreamType(elem_type(elem), depth, packing)


class _StreamClass(type):
    """The class of :class:`Stream`: ``Stream[T, N, P]`` is a :class:`StreamType`."""

    def __getitem__(cls, params: StreamType | ElemType | str | tuple) -> StreamType:
        return stream_type(params)


class Stream(metaclass=_StreamClass):
    """A named FIFO stream: ``Stream("x", Stream["f32", 4])``; ``Stream[T, N, P]`` is its type."""

    def __init__(self, name: str, type: StreamType | ElemType | str | tuple, *, array: str | None = None,
                 index: tuple | None = None) -> None:
        if not isinstance(name, str) or not name:
            _fail("name", f"expected a non-empty stream name, got {name!r}")
        self.name, self.type, self.array, self.index = name, stream_type(type), array, index

    def put(self, value: object = None) -> None:
        """Send one element (a traced value, a Python number or None) into the stream."""
        _context("put").put(self, value)

    def get(self, layout: Iterable[object] | None = None, chunk: tuple | None = None) -> Value:
        """Receive one element; ``layout``/``chunk`` declare the consumer's view of it."""
        return _context("get").get(self, layout, chunk)

    def __repr__(self) -> str:
        return f"Stream({self.name!r}, {self.type})"


class StreamArray:
    """An array of streams named ``name[i,j]``: ``StreamArray("pipe", Stream["f32", 2, 1], shape=(4, 4))``."""

    def __init__(self, name: str, type: StreamType | ElemType | str | tuple, shape: int | Iterable[int]) -> None:
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


def layout_text(layout: Iterable[object] | None) -> str:
    return "?" if layout is None else "[" + ", ".join(map(repr, layout)) + "]"


def _layout(layout, rank: int, what: str) -> tuple:
    entries = tuple(layout)
    if len(entries) != rank or not all(
            e == R or (isinstance(e, S) and isinstance(e.axis, int) and e.axis >= 0) for e in entries):
        _fail("layout", f"{what}: expected a layout of {rank} entries S(k) or R, got {list(entries)!r}")
    return entries


class Tensor:
    """A global tensor with a layout: ``Tensor("A", ("bf16", (256, 256)), layout=[S(0), R])``."""

    def __init__(self, name: str, type: ElemType | str | tuple, layout: Iterable[object] | None = None) -> None:
        self.name, self.type = name, elem_type(type)
        if not self.type.shape:
            _fail("type", f"tensor {name!r}: expected a shaped type like ('bf16', (256, 256)), got {self.type}")
        rank = len(self.type.shape)
        self.layout = _layout(layout if layout is not None else [R] * rank, rank, f"tensor {name!r}")

    def load(self, layout: Iterable[object] | None = None, chunk: tuple | None = None) -> Value:
        """This instance's tile (its layout's block, refined by ``chunk=(axis, i, parts)``)."""
        return _context("load").load(self, layout, chunk)

    def store(self, value: Value, layout: Iterable[object] | None = None, chunk: tuple | None = None) -> None:
        """Write ``value`` as this instance's tile of the tensor."""
        _context("store").store(self, value, layout, chunk)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.type}, layout={layout_text(self.layout)})"
