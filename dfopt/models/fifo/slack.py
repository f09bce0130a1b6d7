"""Slack depths: read each FIFO's depth off the latest schedule that keeps the reference makespan.

Let M be the makespan with unbounded FIFOs. The latest (ALAP) schedule sigma gives every event
the latest cycle such that every kernel still performs its events in nominal order with at least
the nominal spacing, every read still follows its write, and every event ends by cycle M - 1
(:func:`dfopt.sim.levels.latest_times`). sigma is at least the unbounded (earliest) schedule
event by event, so it respects every first offset too. Take N_e = the smallest depth with
``sigma(write k) > sigma(read k - N_e)`` for all k. Then sigma satisfies every constraint of the
bounded system, whose least solution — what the design does — is therefore no later than sigma:
the makespan stays M and nothing deadlocks. Slack depths are small where a fast producer feeds a
slow consumer (the producer is throttled just in time). :mod:`.witness` generalises this to the
mixed earliest/latest schedules.

>>> from dfopt.ir import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a", delay=1, ii=1), Kernel("b", ii=4)], [Stream("e", "a", "b", 64)])
>>> slack_depths(g, makespan=1 + 1 + 63 * 4 + 1)["e"]
1
"""

from __future__ import annotations

from dfopt.sim import compile_events
from dfopt.sim.engine import occupancy
from dfopt.sim.levels import latest_times


def slack_depths(graph, makespan: int) -> dict:
    """Depth of every stream read off the latest schedule (safe and latency-preserving)."""
    prog = compile_events(graph)
    occ = occupancy(prog, latest_times(prog, makespan))
    return {name: max(1, int(d)) for name, d in zip(prog.stream_names, occ)}
