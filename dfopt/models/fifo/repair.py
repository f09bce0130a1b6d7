"""Repair of depths that stall or deadlock, and simulation-guided shrinking.

Per-stream token curves ignore stalls that propagate from a kernel's other inputs, so LP depths
can stall or deadlock on mixed-rate graphs. :func:`repair` grows the depths on the blocking chain
(the full FIFOs of a deadlock, or the space stalls on the critical path of a late run) until the
simulated makespan equals the reference. :func:`shrink` is the FIFOAdvisor-style baseline: lower
one stream at a time by binary search while the makespan stays equal.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from dfopt.sim import simulate

log = logging.getLogger(__name__)


@dataclass
class RepairOutcome:
    depths: np.ndarray
    ok: bool
    rounds: int
    grown: int           # streams whose depth grew


def is_latency_preserving(graph, names, depths, reference: int) -> bool:
    res = simulate(graph, dict(zip(names, (int(d) for d in depths))))
    return not res.deadlock and res.makespan == reference


def _streams_to_grow(res) -> set:
    if res.deadlock:
        return {b.stream for b in res.blocked if b.kind == "full"}
    return {step[1] for step in res.critical_path() if step[0] == "space"}


def repair(graph, names, depths, reference: int, target, *, max_rounds: int = 200,
           deadline: float | None = None) -> RepairOutcome:
    """Grow depths on the blocking chain until safe and latency-preserving (or give up).

    ``target`` is a depth vector known to be safe and latency-preserving (occupancy or slack
    depths). Each round simulates, takes the streams that block — the full FIFOs of a deadlock,
    or the space stalls on the critical path of a late run — and raises each of them to its
    target depth. When every blocking stream is already at or above its target the stall comes
    from elsewhere, and the remaining streams below target are raised at once (then the depths
    dominate a safe vector, so they are safe). At most one round per stream plus one.
    """
    depths = np.array(depths, dtype=np.int64)
    target = np.asarray(target, dtype=np.int64)
    index = {n: i for i, n in enumerate(names)}
    touched = np.zeros(len(depths), dtype=bool)
    for rounds in range(max_rounds + 1):
        res = simulate(graph, dict(zip(names, depths.tolist())), record=True)
        if not res.deadlock and res.makespan == reference:
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


def shrink(graph, names, depths, reference: int, order, *, deadline: float) -> tuple[np.ndarray, int, bool]:
    """Binary-search each stream's depth down (in ``order``) while the makespan stays equal.

    Returns (depths, simulations run, finished before the deadline).
    """
    depths = np.array(depths, dtype=np.int64)
    sims = 0
    for i in order:
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
