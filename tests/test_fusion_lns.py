"""The large-neighbourhood search for fusion (``formulation: lns``): checked answers never worse than
their start, the brute-force optimum on tiny graphs, every accepted partition valid, deterministic
under its seed, and the time limit reported."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt import progress
from dfopt.api import solve_instance
from dfopt.bench.fusion_gen import random_fusion_dag
from dfopt.instance import from_dict
from dfopt.models.driver import make_options
from dfopt.models.fusion import prepare
from dfopt.models.fusion.bound import forced_cuts, lower_bound, prefix_bound, star_bound
from dfopt.models.fusion.checks import partition_faults
from dfopt.models.fusion.data import fusion_data
from dfopt.models.fusion.formulations import partition_of
from dfopt.models.fusion.lns import KINDS, lns_fusion, merge_adjacent
from test_fusion import brute_force, small_instance


def _problem(n, seed, frac=0.2, typed=0.3):
    inst = from_dict(random_fusion_dag(n, seed, c_max_fraction=frac, typed=typed))
    return inst, prepare(inst, make_options(inst, problem="fusion"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 7), st.integers(0, 10_000), st.sampled_from([0.05, 0.2, 0.35, 0.5]))
def test_lns_reaches_the_brute_force_optimum_on_tiny_graphs(n, seed, frac):
    inst = small_instance(n, seed, frac)
    data = fusion_data(inst.graph, inst.options["fusion"]["c_max"])
    best = brute_force(data)
    assert lower_bound(data) <= best + 1e-9
    exact = solve_instance(inst, formulation="cpsat", time_limit=20)
    sol = solve_instance(inst, formulation="lns", time_limit=20)
    assert sol.ok, [c for c in sol.checks if not c.ok]
    assert sol.bound is not None and sol.bound <= best + 1e-9
    if exact.status == "optimal":
        assert sol.status == "optimal" and sol.objective == pytest.approx(best)
    assert sol.objective <= min(sol.stats["start_objectives"].values())


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(20, 80), st.integers(0, 10_000), st.sampled_from([0.05, 0.2, 0.5]))
def test_every_accepted_partition_is_valid_and_never_worse_than_the_start(n, seed, frac):
    inst, fp = _problem(n, seed, frac, typed=0.5)
    seen: list[float] = []

    def verify(assign):
        assert not partition_faults(inst.graph, partition_of(fp.data, assign).groups, fp.data.c_max)
        seen.append(fp.data.cut_traffic(assign))

    stats: dict = {}
    out = lns_fusion(fp.data, fp.greedy, time_limit=600, seed=seed, stats=stats, max_sub_solves=4,
                     budget=0.1, verify=verify)
    assert seen and seen == sorted(seen, reverse=True)          # every accepted step is no worse
    assert fp.data.cut_traffic(out) == seen[-1] <= fp.data.cut_traffic(fp.merged) <= fp.data.cut_traffic(fp.greedy)
    assert stats["lns"]["sub_solves"] <= 4 and set(stats["lns"]["by_kind"]) == set(KINDS)


def test_merging_adjacent_groups_keeps_the_partition_valid_and_never_adds_traffic():
    for seed in range(5):
        inst, fp = _problem(60, seed, frac=0.3)
        start = np.arange(fp.data.n)                    # every kernel alone: a valid partition
        merged = merge_adjacent(fp.data, start)
        assert not partition_faults(inst.graph, partition_of(fp.data, merged).groups, fp.data.c_max)
        assert fp.data.cut_traffic(merged) < fp.data.cut_traffic(start)
        again = merge_adjacent(fp.data, fp.merged)
        assert fp.data.cut_traffic(again) <= fp.data.cut_traffic(fp.merged)


def test_same_seed_same_partition_whatever_the_clock():
    _, fp = _problem(100, 0)
    runs = []
    for limit in (300.0, 600.0):        # the clock never binds here: 5 sub-solves end the search
        stats: dict = {}
        runs.append(lns_fusion(fp.data, fp.merged, time_limit=limit, seed=5, stats=stats, max_sub_solves=5,
                               budget=0.2))
        assert stats["lns"]["clock"] == 0
    assert np.array_equal(runs[0], runs[1])
    other = lns_fusion(fp.data, fp.merged, time_limit=300, seed=6, max_sub_solves=5, budget=0.2)
    assert fp.data.cut_traffic(other) <= fp.data.cut_traffic(fp.merged)


def test_the_time_limit_is_reported_when_it_stops_the_search():
    inst, _ = _problem(300, 0)
    out = io.StringIO()
    with progress.reporting(progress.LogReporter(out, quiet=0.0, every=1.0, min_gap=0.0)):
        sol = solve_instance(inst, formulation="lns", time_limit=2)
    assert sol.ok and sol.status == "feasible" and sol.limit_reached
    assert "time limit reached after" in out.getvalue()
    assert sol.objective <= sol.sections["fusion"]["greedy"]["merged_dram_bytes"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 8), st.integers(0, 10_000), st.sampled_from([0.05, 0.15, 0.3, 0.5]),
       st.sampled_from([0.0, 0.5, 1.0]))
def test_both_bounds_are_below_the_brute_force_optimum(n, seed, frac, typed):
    data = fusion_data(from_dict(random_fusion_dag(n, seed, c_max_fraction=frac, typed=typed)).graph,
                       random_fusion_dag(n, seed, c_max_fraction=frac, typed=typed)["options"]["fusion"]["c_max"])
    best = brute_force(data)
    forced = forced_cuts(data)
    assert star_bound(data, forced) <= best + 1e-9
    assert prefix_bound(data, forced) <= best + 1e-9
    assert lower_bound(data) == max(star_bound(data, forced), prefix_bound(data, forced))


def test_the_prefix_bound_beats_the_star_bound_at_scale():
    _, fp = _problem(1000, 0)
    forced = forced_cuts(fp.data)
    assert prefix_bound(fp.data, forced) > 1.5 * star_bound(fp.data, forced)


@pytest.mark.parametrize("n,seed", [(12, 0), (12, 1), (16, 2), (16, 3), (20, 4), (20, 5)])
def test_lns_matches_the_proven_optimum_and_the_bound_stays_below_it(n, seed):
    inst = from_dict(random_fusion_dag(n, seed, typed=0.5))
    exact = solve_instance(inst, formulation="cpsat", time_limit=30)
    sol = solve_instance(inst, formulation="lns", time_limit=30)
    assert exact.ok and sol.ok, [c for c in sol.checks if not c.ok]
    assert sol.sections["fusion"]["combinatorial_bound"] <= exact.objective + 1e-9
    if exact.status == "optimal":
        assert sol.status == "optimal" and sol.objective == pytest.approx(exact.objective)
        assert sol.stats["lns"]["whole_solved"]


def test_auto_runs_the_exact_model_on_small_graphs_and_lns_on_large_ones():
    small = solve_instance(from_dict(random_fusion_dag(20, 0)), time_limit=10)
    large = solve_instance(_problem(100, 0)[0], time_limit=3)
    assert small.formulation == large.formulation == "auto"
    assert small.stats["auto"] == "cpsat" and large.stats["auto"] == "lns"
    assert small.ok and large.ok
