"""Unbounded schedules of an acyclic graph, one topological level per vector step.

With unbounded FIFOs a DAG needs no rounds of advancing: a kernel's reads wait only for its
producers, so processing kernels level by level (a kernel after all its producers) gives every
event time in one pass. Within a level, ``a_i = n_i + max(0, max_{j <= i} (ready_j - n_j))`` per
kernel is a segmented running maximum, done for the whole level at once by lifting each kernel's
segment above the previous ones. The mirror pass (a kernel after all its consumers, running
minimum from the end) gives the latest schedule that still ends by a given makespan.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.sim.events import compile_events
>>> g = DataflowGraph([Kernel("a", delay=2), Kernel("b", ii=2)], [Stream("e", "a", "b", tokens=3)])
>>> p = compile_events(g)
>>> earliest_times(p)[:6].tolist()      # read, write of token 0, 1, 2 (by event code)
[3, 2, 5, 3, 7, 4]
>>> latest_times(p, 8)[:6].tolist()
[3, 2, 5, 4, 7, 6]
"""

from __future__ import annotations

import numpy as np

from dfopt.sim.events import EventProgram, ranges


def levels(prog: EventProgram, backwards: bool = False) -> np.ndarray | None:
    """Per kernel, its level: 0 without producers (consumers, when ``backwards``), else one more
    than the largest level among them. None when the graph has a cycle."""
    n = prog.n_kernels
    before, after = (prog.dst, prog.src) if backwards else (prog.src, prog.dst)
    indeg = np.bincount(after, minlength=n)
    order = np.argsort(before, kind="stable")
    ptr = np.searchsorted(before[order], np.arange(n + 1))
    succ = after[order]
    level = np.zeros(n, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    seen = len(frontier)
    depth = 0
    while len(frontier):
        nxt = succ[ranges(ptr[frontier], ptr[frontier + 1])]
        np.subtract.at(indeg, nxt, 1)
        frontier = np.unique(nxt[indeg[nxt] == 0])
        depth += 1
        level[frontier] = depth
        seen += len(frontier)
    return level if seen == n else None


def _level_events(prog: EventProgram, level: np.ndarray):
    """Per level with events: (codes, nominal offsets, kernel segment) of its kernels' events."""
    order = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[order], np.arange(int(level.max(initial=0)) + 2))
    for lv in range(len(bounds) - 1):
        ks = order[bounds[lv]:bounds[lv + 1]]
        lo, hi = prog.ev_lo[ks], prog.ev_lo[ks + 1]
        flat = ranges(lo, hi) if len(ks) else np.zeros(0, dtype=np.int64)
        if len(flat):
            seg = np.repeat(np.arange(len(ks), dtype=np.int64), hi - lo)
            yield prog.ev_code[flat], prog.ev_n[flat].astype(np.int64), seg


def earliest_times(prog: EventProgram, level: np.ndarray | None = None,
                   release: np.ndarray | None = None) -> np.ndarray:
    """Event times by event code (``E + 1`` entries, the last -1) of the unbounded run of a DAG.

    ``release`` (by event code) adds a lower bound per event: the result is then the earliest
    schedule that satisfies the timing model and starts no event before its release.
    """
    level = levels(prog) if level is None else level
    if level is None:
        raise ValueError("earliest_times needs an acyclic graph (the kernels have no levels)")
    tt = np.full(prog.n_events + 1, -1, dtype=np.int64)
    for code, n, seg in _level_events(prog, level):
        read = (code & 1) == 0
        if release is None:
            excess = np.zeros(len(code), dtype=np.int64)
        else:
            excess = np.maximum(release[code] - n, 0)
        excess[read] = np.maximum(excess[read], tt[code[read] + 1] + 1 - n[read])   # write k: 2k+1
        span = int(excess.max(initial=0)) + 1
        lift = seg * span
        tt[code] = n + np.maximum.accumulate(excess + lift) - lift
    return tt


def latest_times(prog: EventProgram, makespan: int, level: np.ndarray | None = None) -> np.ndarray:
    """Latest event times (by code) of a DAG such that every event ends by ``makespan - 1``."""
    level = levels(prog, backwards=True) if level is None else level
    if level is None:
        raise ValueError("latest_times needs an acyclic graph (the kernels have no levels)")
    sigma = np.full(prog.n_events + 1, -1, dtype=np.int64)
    span = int(makespan) + int(prog.ev_n.max(initial=0)) + 2
    for code, n, seg in _level_events(prog, level):
        deadline = np.full(len(code), makespan - 1, dtype=np.int64)
        write = (code & 1) == 1
        deadline[write] = np.minimum(deadline[write], sigma[code[write] - 1] - 1)  # read k: code 2k
        # sigma_i = n_i + min_{j >= i} (deadline_j - n_j): a segmented running minimum from the end
        rev = (deadline - n)[::-1]
        lift = (int(seg[-1]) - seg[::-1]) * span
        sigma[code] = n + (np.minimum.accumulate(rev - lift) + lift)[::-1]
    return sigma
