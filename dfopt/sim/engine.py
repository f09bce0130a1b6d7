"""``simulate`` and ``no_stall_depths``: the token timing model (docs/design.md).

Every run is exact. The unbounded run is the dependency-driven advance of
:mod:`dfopt.sim.advance` with no FIFO limits; on a DAG its rounds are as many as the longest
path, each completing a topological level in a few vector steps. A bounded run is done in two
stages: the unbounded times are a lower bound of the bounded ones (the least fixed point of a
monotone system), and when they already respect every FIFO depth -- max occupancy <= depth, one
vectorised check -- they *are* the bounded result, the common case after FIFO sizing. Otherwise
the bounded advance runs from scratch; it also finds deadlocks and what every stuck kernel
waits for.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a", delay=2), Kernel("b", ii=2)], [Stream("e", "a", "b", tokens=4)])
>>> res = simulate(g, unbounded=True, record=True)
>>> res.makespan, res.max_occupancy["e"]
(10, 3)
>>> [t.tolist() for t in res.times("e")]
[[2, 3, 4, 5], [3, 5, 7, 9]]
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import TYPE_CHECKING

import numpy as np

from dfopt.errors import InfeasibleError, InstanceError
from dfopt.sim import events
from dfopt.sim.advance import State, run, time_dtype
from dfopt.sim.events import EventProgram, chunks, compile_events
from dfopt.sim.levels import earliest_times, levels
from dfopt.sim.result import Blocked, SimResult

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph

logger = logging.getLogger(__name__)

__all__ = ["simulate", "no_stall_depths", "occupancy"]


def _room(prog: EventProgram, depths: dict | None, unbounded: bool) -> tuple[np.ndarray, dict]:
    """Depth per stream as an array (T when unbounded) and the depths used, by name."""
    overrides = {} if depths is None else dict(depths)
    for name in overrides:
        try:
            prog.stream_index(name)
        except KeyError:
            raise InstanceError(f"depths names unknown stream {name!r}; expected one of the "
                                "graph's streams", pointer=f"/depths/{name}") from None
    room = prog.tokens.copy()
    used = {}
    for j, name in enumerate(prog.stream_names):
        d = None if unbounded else overrides.get(name, prog.graph_depths[j])
        if d is not None:
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
                raise InstanceError(f"stream {name!r}: expected an integer depth >= 1, got {d!r}",
                                    pointer=f"/depths/{name}")
            d = int(d)
            room[j] = min(d, int(prog.tokens[j]))
        used[name] = d
    return room, used


def occupancy(prog: EventProgram, tt: np.ndarray) -> np.ndarray:
    """Per stream: max over written tokens k of ``k + 1 - #{reads before the write of k}``.

    Per chunk of streams, the writes (key 2t) and reads (key 2t+1) of each stream are merged
    by one stable sort of two sorted runs. Stream j fills merged positions from 2 b_j on (b_j:
    its first token, counted in the chunk); if its write k -- the chunk's write i = b_j + k --
    lands at position p, then p - 2 b_j - k reads precede it, so its occupancy is
    ``k + 1 - (p - 2 b_j - k) = 2 i + 1 - p``. Events that never happened (-1) count as never.
    """
    occ = np.zeros(prog.n_streams, dtype=np.int64)
    if prog.n_events == 0:
        return occ
    unknown = 2 * int(tt.max()) + 4
    shift = (unknown + 1).bit_length()
    finished = int(tt[:-1].min(initial=0)) >= 0
    for j0, j1 in chunks(prog.tokens, events.CHUNK_EVENTS // 4):
        b0, b1 = int(prog.base[j0]), int(prog.base[j1])
        if b1 == b0:
            continue
        if shift + (j1 - j0).bit_length() > 62:      # astronomically late times: per stream
            occ[j0:j1] = [_stream_occupancy(prog, tt, j) for j in range(j0, j1)]
        else:
            occ[j0:j1] = _chunk_occupancy(prog, tt, j0, j1, shift, None if finished else unknown)
    return occ


def _stream_occupancy(prog: EventProgram, tt: np.ndarray, j: int) -> int:
    """:func:`occupancy` of one stream, by binary search (no key packing)."""
    lo, hi = 2 * int(prog.base[j]), 2 * int(prog.base[j + 1])
    w, r = tt[lo + 1:hi:2].astype(np.int64), tt[lo:hi:2].astype(np.int64)
    reads = np.sort(r[r >= 0])
    k = np.flatnonzero(w >= 0)
    return int((k + 1 - np.searchsorted(reads, w[k], side="left")).max(initial=0))


def _chunk_occupancy(prog: EventProgram, tt: np.ndarray, j0: int, j1: int, shift: int,
                     unknown: int | None) -> np.ndarray:
    """:func:`occupancy` of streams ``j0 .. j1-1`` (with tokens)."""
    b0, b1 = int(prog.base[j0]), int(prog.base[j1])
    nt = b1 - b0
    w, r = tt[2 * b0 + 1:2 * b1:2], tt[2 * b0:2 * b1:2]
    merged = np.empty(2 * nt, dtype=np.int64)
    np.left_shift(w, 1, out=merged[:nt], dtype=np.int64)
    np.left_shift(r, 1, out=merged[nt:], dtype=np.int64)
    merged[nt:] |= 1
    if unknown is not None:
        merged[:nt][w < 0] = unknown
        merged[nt:][r < 0] = unknown + 1
    lift = np.repeat(np.arange(j1 - j0, dtype=np.int64) << shift, prog.tokens[j0:j1])
    merged[:nt] += lift
    merged[nt:] += lift
    del lift
    merged.sort(kind="stable")
    level = np.arange(1, 2 * nt, 2, dtype=np.int64)
    level -= np.flatnonzero((merged & 1) == 0)
    if unknown is not None:
        level[w < 0] = 0
    occ = np.zeros(j1 - j0, dtype=np.int64)
    full = np.flatnonzero(prog.tokens[j0:j1] > 0)
    occ[full] = np.maximum.reduceat(level, prog.base[j0 + full] - b0)
    return occ


def _blocked(prog: EventProgram, st: State) -> list[Blocked]:
    """What every unfinished kernel waits for: the dependency of its next event."""
    out = []
    for i in np.flatnonzero(~st.finished(prog)).tolist():
        stream, _, token, is_write = prog.decode(int(st.done[i]))
        out.append(Blocked(prog.kernel_names[i], stream, "full" if is_write else "empty", token))
    return out


def _result(prog: EventProgram, st: State, room: np.ndarray, used: dict, occ: np.ndarray | None,
            record: bool, method: str, t0: float) -> SimResult:
    """Package a finished (or deadlocked) advance as a :class:`SimResult`."""
    has = np.diff(prog.ev_lo) > 0
    began = np.flatnonzero(has & (st.done > prog.ev_lo[:-1]))
    finished = np.flatnonzero(has & st.finished(prog))
    deadlock = len(finished) < int(has.sum())
    first = st.tt[prog.ev_code[prog.ev_lo[began]]]
    last = st.tt[prog.ev_code[prog.ev_lo[finished + 1] - 1]] + 1
    names = prog.kernel_names
    occ = occupancy(prog, st.tt) if occ is None else occ
    res = SimResult(
        deadlock=deadlock,
        makespan=None if deadlock else int(last.max(initial=0)),
        start=dict(zip([names[i] for i in began.tolist()], first.tolist())),
        end=dict(zip([names[i] for i in finished.tolist()], last.tolist())),
        max_occupancy=dict(zip(prog.stream_names, occ.tolist())),
        write_stall_cycles=dict(zip(prog.stream_names, st.stall.tolist())),
        blocked=_blocked(prog, st) if deadlock else [],
        events=int((st.done - prog.ev_lo[:-1]).sum()),
        depths=used,
        stats={"method": method, "rounds": st.rounds, "wall_time_s": time.perf_counter() - t0},
    )
    if record:
        res._attach(prog, st.tt, room)
    logger.debug("simulate: %s", res.summary().splitlines()[0])
    return res


def dag_levels(prog: EventProgram) -> np.ndarray | None:
    """Topological levels of the program's kernels (cached on it); None for a cyclic graph."""
    cache = prog.__dict__          # as EventProgram caches its name indices
    if "_levels" not in cache:
        cache["_levels"] = levels(prog)
    return cache["_levels"]


def _unbounded(prog: EventProgram) -> State:
    """The unbounded run: one level-by-level pass on a DAG, the general advance otherwise."""
    level = dag_levels(prog)
    if level is None:
        return run(prog, prog.tokens)
    tt = earliest_times(prog, level).astype(time_dtype(prog))
    K = prog.n_kernels
    last = prog.ev_lo[1:] - 1
    has = prog.ev_lo[1:] > prog.ev_lo[:-1]
    slack = np.zeros(K, dtype=np.int64)
    slack[has] = tt[prog.ev_code[last[has]]] - prog.ev_n[last[has]]
    count = np.repeat(prog.tokens, 2).astype(np.int64)
    return State(prog.ev_lo[1:].copy(), slack, count, tt, np.zeros(prog.n_streams, np.int64),
                 rounds=int(level.max(initial=0)) + 1)


def simulate(graph: DataflowGraph | EventProgram, depths: dict | None = None, *, unbounded: bool = False,
             record: bool = False) -> SimResult:
    """Simulate ``graph`` under the token timing model (docs/design.md, the token timing model).

    ``depths`` maps stream names to FIFO depths (>= 1); a stream not in it uses its own
    ``depth`` (``None``: unbounded). ``unbounded=True`` ignores every depth. ``graph`` may also be
    an :class:`~dfopt.sim.events.EventProgram` from :func:`~dfopt.sim.events.compile_events`,
    which skips the event sort when one graph is simulated many times. With ``record=True`` the
    result keeps every token's times (:meth:`SimResult.times`, :meth:`SimResult.critical_path`).
    Raises :class:`~dfopt.errors.InstanceError` for an unknown stream or a depth below 1.

    >>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
    >>> g = DataflowGraph([Kernel("a"), Kernel("b", ii=3)], [Stream("e", "a", "b", tokens=4)])
    >>> free = simulate(g, unbounded=True)
    >>> free.makespan, free.max_occupancy["e"]
    (11, 3)
    >>> tight = simulate(g, {"e": 1})
    >>> tight.makespan, tight.max_occupancy["e"], tight.write_stall_cycles["e"]
    (11, 1, 5)
    """
    t0 = time.perf_counter()
    prog = graph if isinstance(graph, EventProgram) else compile_events(graph)
    room, used = _room(prog, depths, unbounded)
    st = _unbounded(prog)
    if not (room < prog.tokens).any():
        return _result(prog, st, room, used, None, record, "unbounded", t0)
    if st.finished(prog).all():
        occ = occupancy(prog, st.tt)
        if (occ <= room).all():
            return _result(prog, st, room, used, occ, record, "unbounded-fits", t0)
    logger.debug("the unbounded run overfills some FIFO; running the bounded advance")
    st = run(prog, room)
    return _result(prog, st, room, used, None, record, "bounded", t0)


_REFERENCE_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def reference_run(graph: DataflowGraph) -> SimResult:
    """``simulate(graph, unbounded=True, record=True)``, run once per graph object: the solver's
    data and the checks of one ``solve`` share the unbounded run (the simulator's answer for the
    instance, not a solver's), so a large graph is not simulated twice. A changed graph is a new
    object (``with_depths`` and the converters build one), so the run is never stale; ``dfopt
    check`` in a fresh process recomputes it.
    """
    key = (len(graph.kernels), len(graph.streams))
    hit = _REFERENCE_RUNS.get(graph)
    if hit is not None and hit[0] == key:
        return hit[1]
    res = simulate(graph, unbounded=True, record=True)
    _REFERENCE_RUNS[graph] = (key, res)
    return res


def no_stall_depths(graph: DataflowGraph | EventProgram) -> dict[str, int]:
    """Per stream, the max occupancy of one unbounded run (at least 1): the no-stall depth.

    Raises :class:`~dfopt.errors.InfeasibleError` when the graph deadlocks even unbounded.

    >>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
    >>> g = DataflowGraph([Kernel("a"), Kernel("b", ii=3)], [Stream("e", "a", "b", tokens=4)])
    >>> no_stall_depths(g)
    {'e': 3}
    """
    res = simulate(graph, unbounded=True)
    if res.deadlock:
        waits = ", ".join(f"{b.kernel} waits for {b.stream}[{b.token}]" for b in res.blocked[:5])
        raise InfeasibleError(f"the graph deadlocks even with unbounded FIFOs ({waits}): a cycle "
                              "reads a token before it is written; break the cycle",
                              culprits=[b.kernel for b in res.blocked])
    return {name: max(1, occ) for name, occ in res.max_occupancy.items()}
