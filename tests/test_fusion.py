"""Fusion: the exact models against brute force, never worse than greedy, the checker, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dfopt.api import solve_instance
from dfopt.bench.fusion_gen import random_fusion_dag
from dfopt.errors import InfeasibleError, InstanceError, SolverUnavailableError
from dfopt.instance import from_dict, load
from dfopt.instance.convert import graph_from_dict
from dfopt.models.fusion.bound import lower_bound
from dfopt.models.fusion.data import fusion_data
from dfopt.models.fusion.greedy import algorithm2, merge_consecutive
from tamper import failed, tampered


def set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]
        yield [[first]] + part


def brute_force(data) -> float:
    """Least DRAM traffic over every partition with an acyclic quotient within C_max."""
    best = np.inf
    for part in set_partitions(list(range(data.n))):
        assign = np.empty(data.n, dtype=np.int64)
        for g, members in enumerate(part):
            assign[members] = g
        if data.group_costs(assign).max() > data.c_max:
            continue
        q = nx.DiGraph(list(data.quotient_edges(assign)))
        if q.number_of_nodes() and not nx.is_directed_acyclic_graph(q):
            continue
        best = min(best, data.cut_traffic(assign))
    return best


def small_instance(n, seed, frac):
    return from_dict(random_fusion_dag(n, seed, c_max_fraction=frac, typed=0.5))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 7), st.integers(0, 10_000), st.sampled_from([0.05, 0.2, 0.35, 0.5]))
@example(6, 761, 0.5)     # HiGHS's presolve reported "optimal" 12 with columns worth 36
def test_exact_models_match_brute_force(n, seed, frac):
    inst = small_instance(n, seed, frac)
    data = fusion_data(inst.graph, inst.options["fusion"]["c_max"])
    best = brute_force(data)
    assert lower_bound(data) <= best + 1e-9
    for kw in ({"formulation": "cpsat"}, {"formulation": "mip"}, {"formulation": "cpsat", "dominance": False}):
        sol = solve_instance(inst, time_limit=20, **kw)
        assert sol.status == "optimal", kw
        assert sol.objective == pytest.approx(best), kw
        assert sol.ok, [c for c in sol.checks if not c.ok]
    greedy = solve_instance(inst, formulation="greedy")
    assert greedy.ok and greedy.objective >= best - 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_exact_is_never_worse_than_greedy(seed):
    inst = from_dict(random_fusion_dag(40 + 20 * seed, seed))
    g = solve_instance(inst, formulation="greedy")
    for f in ("cpsat", "mip"):
        s = solve_instance(inst, formulation=f, time_limit=3)
        assert s.ok and s.objective <= g.objective + 1e-9
        assert s.objective <= s.sections["fusion"]["greedy"]["merged_dram_bytes"] + 1e-9
        assert s.bound <= s.objective + 1e-9


def test_merging_never_adds_traffic_and_bounds_the_group_count():
    for seed in range(5):
        inst = from_dict(random_fusion_dag(80, seed, c_max_fraction=0.1))
        data = fusion_data(inst.graph, inst.options["fusion"]["c_max"])
        a = algorithm2(data)
        m = merge_consecutive(data, a)
        assert data.cut_traffic(m) <= data.cut_traffic(a)
        costs = data.group_costs(m)
        assert costs.max() <= data.c_max
        for i in range(len(costs) - 1):   # no two neighbours fit together (with their converters)
            assert data.group_costs(np.where(m == i + 1, i, m))[i] > data.c_max
        total = data.bytes.sum() + data.pair_conv.sum()
        assert len(costs) <= 2 * total // data.c_max + 1


def test_greedy_trap_shows_algorithm2_loses():
    inst = load("instances/fusion/greedy-trap.json")
    g = solve_instance(inst, formulation="greedy")
    e = solve_instance(inst, formulation="cpsat")
    assert g.sections["fusion"]["groups"] == [["a", "b"], ["c", "d"]] and g.objective == 512
    assert e.sections["fusion"]["groups"] == [["a"], ["b", "c"], ["d"]] and e.objective == 64
    assert e.status == "optimal"


def test_diamond_respects_convexity():
    inst = load("instances/fusion/diamond.json")
    sol = solve_instance(inst)
    assert sol.objective == 160 and sol.status == "optimal"
    assert ["a", "b", "d"] not in sol.sections["fusion"]["groups"]


def _solved(path="instances/fusion/diamond.json"):
    inst = load(path)
    return inst, solve_instance(inst)


def _failed(inst, sol):
    return set(failed(inst, sol))


def _regrouped(sol, groups, objective=None):
    def change(d):
        d["fusion"].update(groups=groups)
        for key in ("group_costs", "cut_streams", "dram_bytes", "dram_ratio"):
            d["fusion"].pop(key)
        if objective is not None:
            d.update(objective=objective, bound=None, status="feasible")
    return tampered(sol, change)


def test_checker_rejects_a_non_convex_group():
    inst, sol = _solved()
    assert "fusion-convex" in _failed(inst, _regrouped(sol, [["a", "b", "d"], ["c"]]))


def test_checker_rejects_over_capacity_missing_kernels_and_wrong_objective():
    inst, sol = _solved()
    assert _failed(inst, _regrouped(sol, [["a", "b", "c", "d"]])) >= {"fusion-capacity", "fusion-objective"}
    assert _failed(inst, _regrouped(sol, [["a", "b"], ["c"]])) == {"fusion-partition"}


def test_checker_rejects_groups_depending_on_each_other():
    g = {"kernels": [{"name": n, "resources": {"bytes": 1}} for n in "abcd"],
         "streams": [{"name": "ab", "src": "a", "dst": "b", "tokens": 1},
                     {"name": "cd", "src": "c", "dst": "d", "tokens": 1},
                     {"name": "ad", "src": "a", "dst": "d", "tokens": 1},
                     {"name": "cb", "src": "c", "dst": "b", "tokens": 1}]}
    inst = from_dict({"format": "dfopt-instance/1", "name": "x", "problem": "fusion", "graph": g,
                      "options": {"fusion": {"c_max": 10}}})
    sol = solve_instance(inst)
    assert _failed(inst, _regrouped(sol, [["a", "d"], ["c", "b"]], objective=16.0)) == {"fusion-convex"}


def test_kernel_above_c_max_is_infeasible_and_named():
    d = random_fusion_dag(6, 0)
    d["options"]["fusion"]["c_max"] = 2000
    with pytest.raises(InfeasibleError, match=r"kernel k\d+ alone needs .* C_max is .*2000 bytes"):
        solve_instance(from_dict(d))


def test_c_max_defaults_to_the_platform_and_is_required_otherwise():
    d = random_fusion_dag(5, 0)
    del d["options"]
    with pytest.raises(InstanceError, match="c_max"):
        solve_instance(from_dict(d))
    d["platform"] = "u55c"
    sol = solve_instance(from_dict(d))
    assert sol.sections["fusion"]["c_max"] == 44679168 and len(sol.sections["fusion"]["groups"]) == 1


def test_unknown_formulation_and_solver_are_named():
    inst = load("instances/fusion/diamond.json")
    with pytest.raises(InstanceError, match="greedy"):
        solve_instance(inst, formulation="nope")
    with pytest.raises(SolverUnavailableError, match="solver 'cpsat' for the fusion formulation 'mip' is not available; installed: highs"):
        solve_instance(inst, formulation="mip", solver="cpsat")


def test_fused_graph_is_a_dag_that_fifo_sizing_accepts():
    inst = from_dict(random_fusion_dag(12, 3, typed=1.0, c_max_fraction=0.5))
    sol = solve_instance(inst)
    fused = graph_from_dict(sol.sections["fusion"]["fused_graph"])
    groups = {k.attrs["group"] for k in fused.kernels.values()}
    assert groups == set(range(len(sol.sections["fusion"]["groups"])))
    assert nx.is_directed_acyclic_graph(fused.nx)
    assert all(fused.kernels[s.src].attrs["group"] == fused.kernels[s.dst].attrs["group"]
               for s in fused.streams.values())
    convs = [k for k in fused.kernels.values() if k.op == "converter"]
    assert sum(k.resources["bytes"] for k in convs) == sol.sections["fusion"]["onchip"]["converter_bytes"]
    fifo = solve_instance(from_dict({"format": "dfopt-instance/1", "name": "f", "problem": "fifo",
                                     "graph": sol.sections["fusion"]["fused_graph"]}))
    assert fifo.ok


@pytest.mark.slow
def test_cli_exit_codes(tmp_path):
    d = random_fusion_dag(6, 0)
    d["options"]["fusion"]["c_max"] = 2000
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d))
    run = subprocess.run([sys.executable, "-m", "dfopt.cli", "solve", str(bad)], capture_output=True, text=True, check=False)
    assert run.returncode == 3 and "alone needs" in run.stderr and "Traceback" not in run.stderr
    out = tmp_path / "sol.json"
    ok = subprocess.run([sys.executable, "-m", "dfopt.cli", "solve", "instances/fusion/greedy-trap.json",
                         "-o", str(out), "--formulation", "mip"], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    chk = subprocess.run([sys.executable, "-m", "dfopt.cli", "check", "instances/fusion/greedy-trap.json",
                          str(out)], capture_output=True, text=True, check=False)
    assert chk.returncode == 0, chk.stdout + chk.stderr
