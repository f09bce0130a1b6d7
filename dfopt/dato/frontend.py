"""Dato front end: an embedded Python DSL that *records* a task-based dataflow program.

The model (Dato, "A Task-Based Programming Model for Dataflow Accelerators"): a
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

The pieces live in their own modules and are re-exported here: the declarations (diagnostics,
types, streams, layouts, tensors) in :mod:`dfopt.dato.dsl_types`, the recorded program and the
traced values in :mod:`dfopt.dato.record`, the per-instance recorder in
:mod:`dfopt.dato.recorder`; this module holds the tracing API and :class:`Program`.

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

import inspect
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar, overload

from dfopt.dato.dsl_types import (
    _DSL_FILES,
    DatoError,
    Diagnostic,
    ElemType,
    R,
    S,
    Stream,
    StreamArray,
    StreamType,
    Tensor,
    _context,
    _fail,
    _positive,
    elem_type,
    layout_text,
    stream_type,
)
from dfopt.dato.record import (
    CollectiveGroup,
    Mismatch,
    Op,
    PendingUse,
    Recording,
    StreamRecord,
    TaskInstance,
    TokenView,
    Value,
    view_text,
)
from dfopt.dato.recorder import REDUCE_OPS, _record_instance

_F = TypeVar("_F", bound=Callable[..., object])

_DSL_FILES.add(__file__)

__all__ = [
    # tracing API (this module)
    "Program", "Task", "instance", "compute", "matmul", "reduce_sum", "allreduce", "recording",
    # declarations (dfopt.dato.dsl_types)
    "Diagnostic", "DatoError", "ElemType", "elem_type", "StreamType", "stream_type", "Stream", "StreamArray",
    "S", "R", "layout_text", "Tensor",
    # recorded program and traced values (dfopt.dato.record, dfopt.dato.recorder)
    "Op", "TaskInstance", "TokenView", "StreamRecord", "CollectiveGroup", "PendingUse", "Mismatch", "Recording",
    "Value", "view_text", "REDUCE_OPS",
]

# == tracing API ==============================================================================


def instance() -> tuple:
    """The grid coordinates of the task instance being recorded."""
    return _context("instance").index


@overload
def compute(op: str, work: int | None = None, reads: object = (), writes: Iterable[object] = (), *,
            out: list, inplace: None = None) -> tuple[Value, ...]: ...


@overload
def compute(op: str, work: int | None = None, reads: object = (), writes: Iterable[object] = (),
            out: ElemType | str | tuple | None = None, inplace: int | None = None) -> Value: ...


def compute(op: str, work: int | None = None, reads: object = (), writes: Iterable[object] = (),
            out: ElemType | str | tuple | list | None = None, inplace: int | None = None) -> Value | tuple:
    """The op ``op`` of ``work`` cycles (default: the elements it makes) on ``reads``; returns its
    result (type ``out``, else the first read's), or, when ``out`` is a list of types, a tuple of
    results, one per type (an op with several outputs, e.g. ``softmax_block``). ``inplace=i``: the
    op overwrites read ``i`` (an accumulator: ``rescale``, ``matmul_acc``), so its result has that
    read's type and takes no local buffer of its own."""
    return _context("compute").compute(op, work, reads, writes, out, inplace)


def matmul(a: Value, b: Value, work: int | None = None, out_dtype: str | None = None) -> Value:
    """``a @ b`` (a ``gemm`` compute); a contraction over a sharded axis leaves a pending partial sum."""
    return _context("matmul").matmul(a, b, work, out_dtype)


def reduce_sum(x: Value, axis: int) -> Value:
    """Sum over tensor axis ``axis``; over a sharded axis it leaves a pending partial sum."""
    return _context("reduce_sum").reduce(x, axis)


def allreduce(x: Value, op: str = "sum", axis: int = 0) -> Value:
    """Combine ``x`` over grid axis ``axis`` (all instances that differ only there)."""
    return _context("allreduce").allreduce(x, op, axis)


# == program and tasks ========================================================================


@dataclass
class Task:
    """A task: a Python function recorded once per coordinate of its grid ``mapping``."""

    name: str
    fn: Callable[..., object]
    mapping: tuple
    file: str = ""
    line: int = 0
    takes_index: bool = False

    def instance_name(self, index: tuple) -> str:
        return "_".join([self.name] + [str(i) for i in index])

    def indices(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(n) for n in self.mapping))


class Program:
    """A Dato program: register tasks with ``@program.task(mapping=[...])``, then :meth:`record`."""

    def __init__(self, name: str = "program") -> None:
        self.name = name
        self.tasks: dict[str, Task] = {}

    def task(self, mapping: int | Iterable[int] | None = None,
             name: str | None = None) -> Callable[[_F], _F]:
        """Decorator: register the function as a task on the grid ``mapping`` (None: one instance)."""
        def register(fn: _F) -> _F:
            self.add_task(fn, mapping=mapping, name=name)
            return fn
        return register

    def add_task(self, fn: Callable[..., object], mapping: int | Iterable[int] | None = None,
                 name: str | None = None) -> Task:
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


def recording(program: Program | Recording) -> Recording:
    """A :class:`Recording` from a program (recorded now) or a recording (as is)."""
    if isinstance(program, Recording):
        return program
    if isinstance(program, Program):
        return program.record()
    raise TypeError(f"expected a dato Program or Recording, got {type(program).__name__}")
