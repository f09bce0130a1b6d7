"""Repair of depths that stall or deadlock, and simulation-guided shrinking.

Per-stream token curves ignore stalls that propagate from a kernel's other inputs, so LP depths
can stall or deadlock on mixed-rate graphs. :func:`repair` grows the depths on the blocking chain
(the full FIFOs of a deadlock, or the space stalls on the critical path of a late run) until the
simulated makespan equals the reference. :func:`shrink` is the FIFOAdvisor-style baseline: lower
one stream at a time by binary search while the makespan stays equal. Both report progress
(rounds or simulations so far) in a :func:`dfopt.progress.phase`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dfopt import progress
from dfopt.ir.graph import DataflowGraph
from dfopt.sim import simulate

log = logging.getLogger(__name__)


@dataclass
class RepairOutcome:
    depths: np.ndarray
    ok: bool
    rounds: int
    grown: int           # streams whose depth grew


def is_latency_preserving(graph: DataflowGraph, names: Sequence[str], depths: Iterable[int], reference: int) -> bool:
    """No deadlock and a makespan within ``reference`` (the unbounded makespan, or the limit a
    latency slack allows: no bounded run is shorter than the unbounded one)."""
    res = simulate(graph, dict(zip(names, (int(d) for d in depths))))
    return not res.deadlock and res.makespan is not None and res.makespan <= reference


def _streams_to_grow(res) -> set:
    if res.deadlock:
        return {b.stream for b in res.blocked if b.kind == "full"}
    return {step[1] for step in res.critical_path() if step[0] == "space"}


def repair(graph: DataflowGraph, names: Sequence[str], depths: npt.ArrayLike, reference: int,
           target: npt.ArrayLike, *, max_rounds: int = 200,
           deadline: float | None = None) -> RepairOutcome:
    """Grow depths on the blocking chain until safe and latency-preserving (or give up).

    ``target`` is a depth vector known to be safe and latency-preserving (occupancy or slack
    depths). Each round simulates, takes the streams that block — the full FIFOs of a deadlock,
    or the space stalls on the critical path of a late run — and raises each of them to its
    target depth. When every blocking stream is already at or above its target the stall comes
    from elsewhere, and the remaining streams below target are raised at once (then the depths
    dominate a safe vector, so they are safe). At most one round per stream plus one.
    """
    with progress.phase("fifo: repair of stalling depths", _left(deadline)) as ph:
        return _repair(graph, names, depths, reference, target, max_rounds, deadline, ph)


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(deadline - time.perf_counter(), 0.0)


def _repair(graph, names, depths, reference: int, target, max_rounds: int, deadline: float | None,
            ph: progress.Phase) -> RepairOutcome:
    depths = np.array(depths, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    index = {n: i for i, n in enumerate(names)}
    touched = np.zeros(len(depths), dtype=bool)
    for rounds in range(max_rounds + 1):
        res = simulate(graph, dict(zip(names, depths.tolist())), record=True)
        ph.update(detail=f"round {rounds + 1}, {int(touched.sum())} streams grown")
        if res.makespan is not None and res.makespan <= reference:
            return RepairOutcome(depths, True, rounds, int(touched.sum()))
        if rounds == max_rounds or (deadline is not None and time.perf_counter() > deadline):
            break
        grow = np.array(sorted({index[s] for s in _streams_to_grow(res)}), dtype=np.int64)
        grow = grow[depths[grow] < target[grow]] if len(grow) else grow
        if len(grow) == 0:
            grow = np.flatnonzero(depths < target)
        if len(grow) == 0:
            break
        depths[grow] = target[grow]
        touched[grow] = True
    log.info("repair gave up after %d rounds", rounds)
    return RepairOutcome(depths, False, rounds, int(touched.sum()))


def shrink(graph: DataflowGraph, names: Sequence[str], depths: npt.ArrayLike, reference: int, order: Iterable[int],
           *, deadline: float) -> tuple[np.ndarray, int, bool]:
    """Binary-search each stream's depth down (in ``order``) while the makespan stays within
    ``reference``.

    Returns (depths, simulations run, finished before the deadline).
    """
    with progress.phase("fifo: shrinking depths by simulation", _left(deadline)) as ph:
        return _shrink(graph, names, depths, reference, list(order), deadline, ph)


def _shrink(graph, names, depths, reference: int, order: list, deadline: float,
            ph: progress.Phase) -> tuple[np.ndarray, int, bool]:
    depths = np.array(depths, dtype=np.int64)
    sims = 0
    for done, i in enumerate(order):
        if ph.live:
            ph.update(incumbent=int(depths.sum()), detail=f"stream {done + 1}/{len(order)}, {sims} simulations")
        lo, hi = 1, int(depths[i])
        while lo < hi:
            if time.perf_counter() > deadline:
                return depths, sims, False
            mid = (lo + hi) // 2
            trial = depths.copy()
            trial[i] = mid
            sims += 1
            if is_latency_preserving(graph, names, trial, reference):
                hi = mid
            else:
                lo = mid + 1
        depths[i] = hi
    return depths, sims, True
