"""FIFO sizing: hand-checked optima, formulations against each other, brute force, simulation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from dfopt.api import solve_instance
from dfopt.errors import InstanceError, SolverUnavailableError
from dfopt.instance import load
from dfopt.ir import DataflowGraph, Kernel, Stream
from dfopt.models import fifo
from dfopt.models.fifo.witness import schedule_family
from dfopt.sim import simulate
from fifo_graphs import as_instance, chain, small_dags
from tamper import failed, tampered

LP_FORMULATIONS = ("flow", "potentials", "paths")
ALL = LP_FORMULATIONS + ("occupancy", "slack", "search")


def test_fig8f_optimum_delays_are_d0_d1_d0_plus_d1():
    inst = load("instances/fifo/fig8f.json")
    D0, D1 = inst.graph.kernels["k0"].delay, inst.graph.kernels["k1"].delay
    for formulation in LP_FORMULATIONS:
        sol = solve_instance(inst, formulation=formulation)
        delays = sol.sections["fifo"]["delays"]
        assert (delays["e01"], delays["e12"], delays["e02"]) == pytest.approx((D0, D1, D0 + D1)), formulation


@pytest.mark.parametrize("path", ["instances/fifo/fig8a.json", "instances/fifo/fig8f.json",
                                  pytest.param("instances/fifo/transformer-block.json", marks=pytest.mark.slow)])
@pytest.mark.parametrize("formulation", ALL)
def test_shipped_instances_every_formulation_is_safe(path, formulation):
    sol = solve_instance(load(path), formulation=formulation, time_limit=20)
    sec = sol.sections["fifo"]
    assert sol.ok, [c for c in sol.checks if not c.ok]
    assert sec["makespan"] == sec["reference_makespan"]


def test_default_never_worse_than_occupancy_on_transformer_block():
    inst = load("instances/fifo/transformer-block.json")
    sol = solve_instance(inst)
    sec = sol.sections["fifo"]
    assert sol.formulation == fifo.PROBLEM.default
    assert sec["total_bits"] <= sec["occupancy_baseline"]["total_bits"]


def test_fast_producer_into_slow_consumer_needs_one_slot_not_the_backlog():
    g = chain((1, 1), (0, 4), tokens=64)
    occ = solve_instance(as_instance(g), formulation="occupancy").sections["fifo"]["depths"]["e01"]
    best = solve_instance(as_instance(g)).sections["fifo"]["depths"]["e01"]
    assert occ > 40  # the unbounded run piles up the backlog
    assert best <= 2


def test_conservative_strategy_sizes_from_the_slowest_ii():
    g = chain((1, 1), (0, 4), tokens=64)
    sol = solve_instance(as_instance(g, strategy="conservative", keep_best=False), formulation="flow")
    assert sol.ok
    assert sol.sections["fifo"]["strategy"] == "conservative"


@pytest.mark.parametrize("formulation", [fifo.PROBLEM.default, "flow"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=small_dags())
def test_default_and_flow_are_safe_latency_preserving_and_not_above_occupancy(formulation, graph):
    for objective in ("depth", "bits", "bram18"):
        sol = solve_instance(as_instance(graph), objective=objective, formulation=formulation)
        assert sol.ok, [c for c in sol.checks if not c.ok]
        sec = sol.sections["fifo"]
        key = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}[objective]
        assert sec[key] <= sec["occupancy_baseline"][key]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dags())
def test_every_witness_schedule_gives_safe_depths(graph):
    """Each mix of the earliest and the latest schedule (lam = 0: the latest, ALAP) is a witness:
    its depths neither deadlock nor lengthen the run."""
    ref = simulate(graph, unbounded=True, record=True)
    family = schedule_family(graph, ref)
    for lam in family.lambdas:
        res = simulate(graph, dict(zip(family.names, family.depths(lam).tolist())))
        assert not res.deadlock and res.makespan == ref.makespan, lam


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dags())
def test_flow_and_potentials_agree_and_paths_is_a_relaxation(graph):
    # potentials forces every path between two kernels to the same total delay (s_v - s_u);
    # the paper's path LP only asks each path to reach the longest one, so it can be lower.
    inst = as_instance(graph, keep_best=False)
    objs = {}
    for formulation, solver in (("flow", None), ("potentials", "highs"), ("potentials", "clarabel"),
                                ("paths", "highs")):
        sol = solve_instance(inst, formulation=formulation, solver=solver)
        objs[formulation, solver] = sol.stats["lp_objective"]
    ref = objs["flow", None]
    for key in (("potentials", "highs"), ("potentials", "clarabel")):
        assert objs[key] == pytest.approx(ref, rel=1e-5, abs=1e-5), (key, objs)
    assert objs["paths", "highs"] <= ref + 1e-6


def test_paths_lp_can_be_strictly_below_potentials():
    from dfopt.bench.generators import random_fifo_dag
    from dfopt.instance import from_dict

    inst = from_dict(random_fifo_dag(12, seed=0))
    paths = solve_instance(inst, formulation="paths", keep_best=False).stats["lp_objective"]
    flow = solve_instance(inst, formulation="flow", keep_best=False).stats["lp_objective"]
    assert paths == pytest.approx(82.75) and flow == pytest.approx(83.0)


def _brute_force_min_total(graph, cap=8):
    ref = simulate(graph, unbounded=True).makespan
    names = list(graph.streams)
    best = None
    for depths in itertools.product(range(1, cap + 1), repeat=len(names)):
        if best is not None and sum(depths) >= best:
            continue
        res = simulate(graph, dict(zip(names, depths)))
        if not res.deadlock and res.makespan == ref:
            best = sum(depths)
    return best


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dags(max_kernels=3, max_tokens=6))
def test_formulations_against_brute_force(graph):
    if len(graph.streams) > 4:
        return
    optimum = _brute_force_min_total(graph, cap=6)
    for formulation in ALL:
        sol = solve_instance(as_instance(graph), formulation=formulation)
        assert sol.ok
        assert sol.sections["fifo"]["total_depth"] >= optimum, formulation


def test_search_reaches_the_brute_force_optimum_on_a_chain():
    g = chain((2, 1), (1, 3), (1, 1), tokens=6)
    optimum = _brute_force_min_total(g, cap=6)
    sol = solve_instance(as_instance(g), formulation="search")
    assert sol.sections["fifo"]["total_depth"] == optimum


def test_repair_grows_lp_depths_that_stall():  # noqa: D103
    # a fork-join with mixed rates: the per-edge curves miss the stall that k1's slow input
    # propagates to k0, so raw LP depths are too small somewhere; the repair must fix it.
    g = DataflowGraph(
        [Kernel("k0", delay=1, ii=1), Kernel("k1", delay=2, ii=3), Kernel("k2", delay=1, ii=1)],
        [Stream("a", "k0", "k1", 12), Stream("b", "k1", "k2", 12), Stream("c", "k0", "k2", 12)])
    sol = solve_instance(as_instance(g, keep_best=False, strategy="conservative"), formulation="flow")
    assert sol.ok
    assert sol.sections["fifo"]["chosen"] in ("lp", "lp-repaired")


def test_checker_rejects_too_small_and_missing_depths():
    inst = load("instances/fifo/fig8f.json")
    sol = solve_instance(inst, formulation="occupancy")
    small = tampered(sol, lambda d: d["fifo"].update(depths={n: 1 for n in inst.graph.streams}))
    assert {"simulated", "objective-recounted"} <= set(failed(inst, small))
    missing = tampered(small, lambda d: d["fifo"]["depths"].pop("e01"))
    assert any("missing depth" in v for v in fifo.check(inst, missing))


def test_witness_and_simulation_agree_on_random_depths():
    rng = np.random.default_rng(0)
    inst = load("instances/fifo/transformer-block.json")
    g = inst.graph
    ref = simulate(g, unbounded=True, record=True)
    family = schedule_family(g, ref)
    for i in range(30):
        row = family.depths(family.lambdas[i % len(family.lambdas)]) + rng.integers(0, 3, len(family.names))
        depths = dict(zip(family.names, row.tolist()))
        assert family.safe(row) is not None
        res = simulate(g, depths)
        assert not res.deadlock and res.makespan == ref.makespan


def test_unknown_formulation_lists_the_valid_ones():
    with pytest.raises(InstanceError, match="unknown fifo formulation 'magic'.*expected one of: slack, flow, potentials, paths, occupancy, search"):
        solve_instance(load("instances/fifo/fig8a.json"), formulation="magic")


def test_missing_solver_is_reported_with_the_installed_ones():
    with pytest.raises(SolverUnavailableError, match="solver 'nosuchsolver' for the fifo formulation 'potentials' is not available; installed: .*highs"):
        solve_instance(load("instances/fifo/fig8f.json"), formulation="potentials", solver="nosuchsolver")


def test_search_time_limit_returns_safe_depths_with_status_time_limit():
    from dfopt.bench.generators import random_fifo_dag
    from dfopt.instance import from_dict

    inst = from_dict(random_fifo_dag(60, seed=1))
    sol = solve_instance(inst, formulation="search", time_limit=0.3)
    assert sol.ok
    assert sol.status == "time_limit"


def test_depths_are_deterministic():
    inst = load("instances/fifo/transformer-block.json")
    a = solve_instance(inst, formulation="potentials").sections["fifo"]["depths"]
    b = solve_instance(inst, formulation="potentials").sections["fifo"]["depths"]
    assert a == b


def test_instance_schema_lists_exactly_the_fifo_options():
    import dataclasses

    from dfopt.schema import get_schema

    schema_fields = set(get_schema("instance")["$defs"]["options"]["properties"]["fifo"]["properties"])
    assert schema_fields == {f.name for f in dataclasses.fields(fifo.Options)}


def test_stored_per_kernel_witness_is_rebuilt_and_verified_by_the_checker():
    from dfopt.bench.generators import random_fifo_dag
    from dfopt.instance import from_dict

    inst = from_dict(random_fifo_dag(10, seed=0))
    sol = solve_instance(inst, formulation="slack")
    sec = sol.sections["fifo"]
    assert "witness" in sec and sec["total_depth"] < sec["occupancy_baseline"]["total_depth"]
    assert not failed(inst, sol, simulate="never")
    name = max(sec["depths"], key=sec["depths"].get)

    def shrink(d):
        d["fifo"]["depths"][name] -= 1
        d["fifo"]["total_depth"] -= 1
        d["objective"] -= 1
        d["fifo"].pop("total_bits"), d["fifo"].pop("bram18")
    bad = failed(inst, tampered(sol, shrink), simulate="never")
    assert "witness" in bad and name in bad["witness"][0]
