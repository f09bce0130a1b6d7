"""Slack depths: read each FIFO's depth off the latest schedule that keeps the reference makespan.

Let M be the makespan with unbounded FIFOs. The latest (ALAP) schedule sigma gives every event
the latest cycle such that every kernel still performs its events in nominal order with at least
the nominal spacing, every read still follows its write, and every event ends by cycle M - 1.
sigma is at least the unbounded (earliest) schedule event by event, so it respects every first
offset too. Take N_e = the smallest depth with ``sigma(write k) > sigma(read k - N_e)`` for all k.
Then sigma satisfies every constraint of the bounded system, whose least solution — what the
design does — is therefore no later than sigma: the makespan stays M and nothing deadlocks.
So slack depths are safe and latency-preserving by construction, and they are small where a fast
producer feeds a slow consumer (the producer is throttled just in time).

The backward pass runs level by level (a kernel after all its consumers), each level as one
vector step over its events: ``sigma_i = n_i + min_{j >= i} (deadline_j - n_j)`` within a kernel.

>>> from dfopt.ir import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a", delay=1, ii=1), Kernel("b", ii=4)], [Stream("e", "a", "b", 64)])
>>> slack_depths(g, makespan=1 + 1 + 63 * 4 + 1)["e"]
1
"""

from __future__ import annotations

import numpy as np

from dfopt.sim import compile_events
from dfopt.sim.engine import occupancy
from dfopt.sim.events import ranges


def _consumer_levels(prog) -> np.ndarray:
    """Per kernel: 0 without consumers, else 1 + the largest level of its consumers (a DAG)."""
    n = prog.n_kernels
    level = np.zeros(n, dtype=np.int64)
    succ = [[] for _ in range(n)]
    indeg = np.zeros(n, dtype=np.int64)
    for u, v in zip(prog.src.tolist(), prog.dst.tolist()):
        succ[v].append(u)          # walk backwards: from consumer to producer
        indeg[u] += 1
    frontier = [k for k in range(n) if indeg[k] == 0]
    while frontier:
        nxt = []
        for v in frontier:
            for u in succ[v]:
                level[u] = max(level[u], level[v] + 1)
                indeg[u] -= 1
                if indeg[u] == 0:
                    nxt.append(u)
        frontier = nxt
    return level


def latest_times(graph, makespan: int) -> tuple:
    """(program, sigma by event code): the latest schedule of every event (DAG, unbounded)."""
    prog = compile_events(graph)
    E = prog.n_events
    sigma = np.full(E + 1, -1, dtype=np.int64)
    levels = _consumer_levels(prog)
    order = np.argsort(levels, kind="stable")
    bounds = np.searchsorted(levels[order], np.arange(levels.max(initial=0) + 2))
    span = int(makespan) + int(prog.ev_n.max(initial=0)) + 2
    for lv in range(len(bounds) - 1):
        ks = order[bounds[lv]:bounds[lv + 1]]
        if len(ks) == 0:
            continue
        lo, hi = prog.ev_lo[ks], prog.ev_lo[ks + 1]
        flat = ranges(lo, hi)
        if len(flat) == 0:
            continue
        code = prog.ev_code[flat]
        n = prog.ev_n[flat].astype(np.int64)
        deadline = np.full(len(flat), makespan - 1, dtype=np.int64)
        write = (code & 1) == 1
        deadline[write] = np.minimum(deadline[write], sigma[code[write] - 1] - 1)  # read k has code 2k
        seg = np.repeat(np.arange(len(ks), dtype=np.int64), hi - lo)
        # segmented reverse cumulative minimum: lower each later-processed segment by a big step
        rev = (deadline - n)[::-1]
        lift = (len(ks) - 1 - seg[::-1]) * span
        cum = np.minimum.accumulate(rev - lift) + lift
        sigma[code] = n + cum[::-1]
    return prog, sigma


def slack_depths(graph, makespan: int) -> dict:
    """Depth of every stream read off the latest schedule (safe and latency-preserving)."""
    prog, sigma = latest_times(graph, makespan)
    occ = occupancy(prog, sigma)
    return {name: max(1, int(d)) for name, d in zip(prog.stream_names, occ)}
