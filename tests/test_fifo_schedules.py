"""FIFO sizing on per-token schedules (docs/fifo.md): every formulation's depths never lengthen the
exact schedule, the lower bound never exceeds brute force, the latency slack and the frontier are
each proven, and the LP's split arcs reach the convex-envelope optimum."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fifo_graphs import as_instance, small_dags
from tests.test_token_schedules import offsets

from dfopt.api import solve_instance
from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.ir.tokens import Block, TokenSchedule
from dfopt.models.fifo.checks import makespan_limit
from dfopt.models.fifo.curves import convex_pieces, schedule_curve, schedule_max_tokens
from dfopt.models.fifo.delays import delays_flow, delays_potentials
from dfopt.models.fifo.edges import objective_weights, scheduled_ends, stream_arrays, totals
from dfopt.sim import simulate

ALL = ("slack", "flow", "potentials", "paths", "occupancy", "search")
FEW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def bursty_dags(draw, max_kernels=4, max_tokens=8):
    """Small DAGs with mixed IIs whose stream ends are randomly bursty."""
    g = draw(small_dags(max_kernels=max_kernels, max_tokens=max_tokens))
    streams = []
    for s in g.streams.values():
        src = TokenSchedule.from_offsets(draw(offsets(s.tokens))) if draw(st.booleans()) else None
        dst = TokenSchedule.from_offsets(draw(offsets(s.tokens))) if draw(st.booleans()) else None
        streams.append(dataclasses.replace(s, src_schedule=src, dst_schedule=dst))
    return DataflowGraph(list(g.kernels.values()), streams)


def _brute_force(graph, limit, objective=lambda d: sum(d)):
    """Least objective over depth vectors (each up to its tokens) safe within ``limit``."""
    names = list(graph.streams)
    best = None
    for depths in itertools.product(*[range(1, graph.streams[n].tokens + 1) for n in names]):
        if best is not None and objective(depths) >= best:
            continue
        res = simulate(graph, dict(zip(names, depths)))
        if not res.deadlock and res.makespan <= limit:
            best = objective(depths)
    return best


@FEW
@given(bursty_dags())
def test_every_formulation_keeps_the_exact_schedule(graph):
    """On bursty schedules every formulation's answer is checked, proven, and its bounded run is
    the unbounded one's length; the bound is below every answer."""
    ref = simulate(graph, unbounded=True).makespan
    for formulation in ALL:
        sol = solve_instance(as_instance(graph), formulation=formulation)
        assert sol.ok, (formulation, [c for c in sol.checks if not c.ok])
        res = simulate(graph, dict(sol.decision.depths))
        assert not res.deadlock and res.makespan == ref, formulation
        assert sol.bound is not None and sol.bound <= sol.objective


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bursty_dags(max_kernels=3, max_tokens=5), st.sampled_from([0.0, 0.2, 0.6]))
def test_bound_and_answers_against_brute_force(graph, slack):
    if len(graph.streams) > 3:
        return
    ref = simulate(graph, unbounded=True).makespan
    limit = makespan_limit(ref, slack)
    optimum = _brute_force(graph, limit)
    for formulation in ("slack", "search", "flow"):
        sol = solve_instance(as_instance(graph, latency_slack=slack), formulation=formulation)
        assert sol.ok, (formulation, [c for c in sol.checks if not c.ok])
        assert sol.bound <= optimum <= sol.sections["fifo"]["total_depth"], formulation
        assert simulate(graph, dict(sol.decision.depths)).makespan <= limit


def _burst_chain():
    """dma -> matmul writing its 8-token tile in the last of 4 reduction steps -> consumer at ii 3,
    with a skip stream that must buffer: the tile's burst makes the join wait."""
    tile = TokenSchedule((Block(90, ((4, 100), (8, 1))),))
    kernels = [Kernel("dma"), Kernel("mm"), Kernel("out", ii=3)]
    streams = [Stream("a", "dma", "mm", 32), Stream("c", "mm", "out", 32, src_schedule=tile),
               Stream("skip", "dma", "out", 32)]
    return DataflowGraph(kernels, streams)


def test_latency_slack_trades_depth_for_makespan():
    g = _burst_chain()
    exact = solve_instance(as_instance(g), formulation="search")
    loose = solve_instance(as_instance(g, latency_slack=0.5), formulation="search")
    assert exact.ok and loose.ok
    sec = loose.sections["fifo"]
    assert sec["makespan_limit"] == makespan_limit(sec["reference_makespan"], 0.5)
    assert sec["reference_makespan"] <= sec["makespan"] <= sec["makespan_limit"]
    assert loose.objective < exact.objective


def test_frontier_points_are_proven_and_non_dominated():
    g = _burst_chain()
    sol = solve_instance(as_instance(g, frontier=6, frontier_slack=1.0), formulation="search")
    assert sol.ok and any(c.name == "frontier" and c.ok for c in sol.checks)
    points = sol.sections["fifo"]["frontier"]
    assert len(points) >= 2
    for a, b in zip(points, points[1:]):
        assert a["makespan"] < b["makespan"] and a["total_depth"] > b["total_depth"]
    for p in points:
        res = simulate(g, p["depths"])
        assert res.makespan == p["makespan"] <= p["makespan_limit"]


def test_frontier_tampering_is_caught():
    from dfopt.models.fifo import Options
    from dfopt.models.fifo.checks import frontier_faults

    g = _burst_chain()
    sol = solve_instance(as_instance(g, frontier=4, frontier_slack=1.0), formulation="search")
    points = sol.sections["fifo"]["frontier"]
    arrays, ref = stream_arrays(g), simulate(g, unbounded=True).makespan
    opts = Options(frontier=4, frontier_slack=1.0)
    assert frontier_faults(g, arrays, points, ref, opts) == []
    late = [dict(p) for p in points]
    late[0]["makespan"] -= 1
    assert "simulated" in frontier_faults(g, arrays, late, ref, opts)[0]
    # one slot more everywhere on the first (reference-makespan) point: as long, and dearer
    deeper = {n: d + 1 for n, d in points[0]["depths"].items()}
    vec = np.array([deeper[n] for n in arrays.names])
    extra = {**points[0], "depths": deeper, "makespan": simulate(g, deeper).makespan, **totals(arrays, vec)}
    assert any("dominated" in f for f in frontier_faults(g, arrays, points + [extra], ref, opts))


def _envelope_cost(pieces, d):
    breaks, slopes, _ = pieces
    ends = np.append(breaks[1:], np.inf)
    return float(sum(s * max(0.0, min(d, e) - b) for b, e, s in zip(breaks, ends, slopes)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bursty_dags(max_kernels=3, max_tokens=6))
def test_split_arc_lp_reaches_the_envelope_optimum(graph):
    """The LP with scheduled streams split into pieces has the optimum of the convex-envelope
    costs over integer start times (found here by enumeration)."""
    from dfopt.models.fifo.delays import curve_pieces, stream_costs

    arrays = stream_arrays(graph)
    ends = scheduled_ends(graph, arrays)
    w = objective_weights(arrays, "depth")
    pieces = curve_pieces(ends)
    cost = stream_costs(arrays, w)
    n = len(arrays.kernels)
    reach = int(max([abs(int(x)) for x in arrays.lower] + [int(p[0][-1]) for p in pieces.values()] + [1])) * n + 2

    def value(s):
        total = 0.0
        for j in range(len(arrays.names)):
            d = s[arrays.dst[j]] - s[arrays.src[j]]
            if d < arrays.lower[j]:
                return None
            total += w[j] * _envelope_cost(pieces[j], d) if j in pieces else cost[j] * d
        return total

    best = min(v for s in itertools.product(range(-reach, reach + 1), repeat=n - 1)
               if (v := value((0,) + s)) is not None)
    steady = float(sum(cost[j] * 0 for j in range(len(arrays.names))))
    for res in (delays_flow(arrays, w, ends), delays_potentials(arrays, w, "highs", 10, 0, ends)):
        start = res.start
        assert value(tuple(start - start[0])) == pytest.approx(best + steady, abs=1e-6)


def test_schedule_curve_matches_the_simulator():
    """The scheduled pair's curve is the occupancy of the pair simulated with the consumer held back."""
    w = TokenSchedule((Block(5, ((3, 20), (4, 1))),))
    r = TokenSchedule.from_offsets([0, 3, 6, 9, 12, 15, 18, 21, 40, 41, 42, 43])
    for delay in range(1, 80, 7):
        # the timer's token, written at delay - 1, holds the consumer until cycle delay; its
        # stream reads come one cycle after the timer's: the pair's delay is delay + 1
        timer = [Kernel("timer", delay=delay - 1), Kernel("src"), Kernel("dst")]
        g = DataflowGraph(timer, [Stream("t", "timer", "dst", 1),
                                  Stream("e", "src", "dst", 12, src_schedule=w, dst_schedule=r.shifted(1))])
        occ = simulate(g, unbounded=True).max_occupancy["e"]
        assert occ == schedule_max_tokens(w.offsets(), r.offsets(), delay + 1), delay
    d, f = schedule_curve(w.offsets(), r.offsets())
    assert (np.diff(f) >= 0).all() and f[-1] == 12
    b, s = convex_pieces(d, f)
    assert (np.diff(s) > 0).all() and (s >= 0).all()
