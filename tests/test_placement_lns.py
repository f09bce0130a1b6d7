"""The large-neighbourhood search for placement (``formulation: lns``): checked answers, the brute
force optimum on tiny instances, never worse than its start, deterministic under its seed, and the
same refusals as the exact model."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from dfopt.api import solve_instance
from dfopt.errors import InfeasibleError
from dfopt.instance import from_dict, load
from dfopt.models.driver import make_options
from dfopt.models.placement import prepare
from dfopt.models.placement.exact import Q
from dfopt.models.placement.lns import KINDS, Picker, UnitGraph, lns_placement, min_distance
from test_placement import COLUMN, GRID, _instance, brute_force, small_instances

ROOT = Path(__file__).resolve().parents[1]
N100 = ROOT / "instances" / "placement" / "random-n100.json"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances())
def test_lns_reaches_the_brute_force_optimum_on_tiny_instances(data):
    best = brute_force(data)
    inst = from_dict(data)
    if best is None:
        with pytest.raises(InfeasibleError):
            solve_instance(inst, formulation="lns", time_limit=10)
        return
    sol = solve_instance(inst, formulation="lns", time_limit=10)
    assert sol.ok, [c for c in sol.checks if not c.ok]
    margin = data["options"]["placement"].get("balance_weight", 0.0) * 2 * 2 / Q + 1e-6
    assert best - 1e-6 <= sol.objective <= best + margin
    assert sol.bound is None or sol.bound <= best + 1e-6
    assert sol.stats["lns"]["whole_solved"]
    greedy = sol.sections["placement"]["greedy"]
    assert greedy is None or sol.objective <= greedy["objective"] + 1e-9


def test_lns_starts_from_the_exact_model_when_the_heuristics_place_nothing():
    """Five kernels on three 100-LUT slots, two of them pinned together (84 LUTs) and 64 wires per
    link: greedy and bipartition find no placement, one exists (brute force); LNS starts from the
    exact model's first placement instead of giving up."""
    luts = [5, 24, 60, 12, 12]
    kernels = [{"name": f"k{i}", "resources": {"lut": n, "dsp": 0}} for i, n in enumerate(luts)]
    edges = [(0, 1, 8), (0, 3, 8), (1, 4, 32), (0, 2, 32), (0, 4, 32)]
    streams = [{"name": f"e{k}", "src": f"k{a}", "dst": f"k{b}", "tokens": 1, "width": w}
               for k, (a, b, w) in enumerate(edges)]
    data = _instance(COLUMN, kernels, streams, max_utilization=1.0, same_slot=[["k1", "k2"]])
    best = brute_force(data)
    assert best is not None
    sol = solve_instance(from_dict(data), formulation="lns", time_limit=10)
    assert sol.ok and sol.stats["start"] == "exact"
    assert abs(sol.objective - best) <= 1e-6


def test_lns_proves_a_tiny_optimum_and_says_so():
    kernels = [{"name": f"k{i}", "resources": {"lut": 35}} for i in range(5)]     # two per slot
    streams = [{"name": f"e{i}", "src": f"k{i}", "dst": f"k{i + 1}", "tokens": 1, "width": 8 * (i + 1)}
               for i in range(4)]
    data = _instance(COLUMN, kernels, streams, pins={"k0": "R0"})
    sol = solve_instance(from_dict(data), formulation="lns", time_limit=10)
    cp = solve_instance(from_dict(data), formulation="cpsat", time_limit=10)
    assert sol.ok and sol.status.value == "optimal" and sol.objective == cp.objective == brute_force(data)
    assert sol.decision.slot["k0"] == "R0"


def test_lns_never_worse_than_its_start_and_respects_pins_and_groups():
    inst = load(N100)
    kernels = list(inst.graph.kernels)
    pins = {kernels[1]: ["SLR1", "SLR2"], kernels[2]: "SLR2"}
    group = [kernels[3], kernels[4]]
    sol = solve_instance(inst, formulation="lns", time_limit=6, pins=pins, same_slot=[group])
    assert sol.ok, [c for c in sol.checks if not c.ok]
    stats = sol.stats
    assert sol.objective <= min(stats["start_objectives"].values()) + 1e-9
    assert sol.objective <= sol.sections["placement"]["greedy"]["objective"] + 1e-9
    slot = sol.decision.slot
    assert slot[kernels[1]] in ("SLR1", "SLR2") and slot[kernels[2]] == "SLR2"
    assert slot[group[0]] == slot[group[1]]
    assert stats["lns"]["sub_solves"] >= 1 and set(stats["lns"]["by_kind"]) == set(KINDS)


def test_same_seed_same_placement_whatever_the_clock():
    inst = load(N100)
    pp = prepare(inst, make_options(inst))
    runs = []
    for limit in (30.0, 60.0):          # the clock never binds here: 12 sub-solves end the search
        stats: dict = {}
        runs.append(lns_placement(pp.data, pp.greedy, time_limit=limit, seed=3, stats=stats, workers=2,
                                  max_sub_solves=12))
        assert stats["lns"]["sub_solves"] == 12
    assert np.array_equal(runs[0], runs[1])
    assert pp.data.evaluate(runs[0]).feasible
    assert pp.data.evaluate(runs[0]).objective <= pp.data.evaluate(pp.greedy).objective


def test_neighbourhoods_free_movable_units_only_and_windows_are_connected():
    inst = load(N100)
    pp = prepare(inst, make_options(inst))
    g = UnitGraph(pp.data)
    slot = g.unit_slots(pp.greedy)
    picker = Picker(g, np.random.default_rng(0))
    movable = set(g.movable.tolist())
    for kind in KINDS:
        free = picker.pick(kind, slot, 20)
        assert 0 < len(free) <= 20 and set(free.tolist()) <= movable
    window = set(picker.pick("window", slot, 15).tolist())
    seen, todo = set(), [min(window)]
    while todo:                       # a window grown from one seed is connected (unless it ran dry)
        u = todo.pop()
        if u not in seen:
            seen.add(u)
            todo += [v for v in g.nbrs[u].tolist() if v in window]
    assert seen == window or len(window) < 15


def test_min_distance_counts_streams_between_disjoint_pin_sets():
    kernels = [{"name": "a", "resources": {"lut": 10}}, {"name": "b", "resources": {"lut": 10}},
               {"name": "c", "resources": {"lut": 10}}]
    streams = [{"name": "e0", "src": "a", "dst": "b", "tokens": 1, "width": 8},
               {"name": "e1", "src": "b", "dst": "c", "tokens": 1, "width": 4}]
    data = _instance(COLUMN, kernels, streams, pins={"a": "R0", "b": ["R1", "R2"], "c": ["R0", "R1"]})
    inst = from_dict(data)
    d = prepare(inst, make_options(inst)).data
    assert min_distance(d) == 8.0            # a-b at least one line; b-c may share R1
    sol = solve_instance(inst, formulation="lns", time_limit=10)
    assert sol.ok and sol.bound <= sol.objective and sol.objective == brute_force(data)


@pytest.mark.parametrize("kernels, options, message", [
    ([{"name": "big", "resources": {"dsp": 20}}], {}, "kernel big needs 20 dsp, more than any slot allows"),
    ([{"name": f"k{i}", "resources": {"lut": 90}} for i in range(4)], {},
     "the kernels need 360 lut in all, more than the platform allows (240 = 0.8 x 300)"),
])
def test_infeasible_instances_refused_as_by_cpsat(kernels, options, message):
    for formulation in ("lns", "cpsat"):
        with pytest.raises(InfeasibleError, match=re.escape(message)):
            solve_instance(from_dict(_instance(COLUMN, kernels, [], **options)), formulation=formulation)


def test_solver_conflict_is_the_same_for_lns_and_cpsat():
    kernels = [{"name": f"k{i}", "resources": {"lut": 45}} for i in range(4)]
    data = _instance(COLUMN, kernels, [], pins={"k0": ["R0", "R1"], "k1": ["R0", "R1"], "k2": ["R0", "R1"]})
    texts = []
    for formulation in ("lns", "cpsat"):
        with pytest.raises(InfeasibleError) as info:
            solve_instance(from_dict(data), formulation=formulation, time_limit=10)
        texts.append(str(info.value))
    assert texts[0] == texts[1] and "constraints conflict" in texts[0]


def test_grid_platform():
    kernels = [{"name": f"k{i}", "resources": {"lut": 40, "dsp": 2}} for i in range(6)]
    streams = [{"name": f"e{i}", "src": f"k{i}", "dst": f"k{(i + 1) % 6}", "tokens": 1, "width": 32}
               for i in range(5)]
    data = _instance(GRID, kernels, streams)
    sol = solve_instance(from_dict(data), formulation="lns", time_limit=10)
    assert sol.ok and sol.objective == brute_force(data)
