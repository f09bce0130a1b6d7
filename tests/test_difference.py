"""dfopt.lp.difference: the three methods agree, and every answer is checked without a solver."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt.errors import InfeasibleError, InstanceError, SolverError
from dfopt.ir.analyses import longest_path_potentials
from dfopt.lp import METHODS, solve_difference_lp
from dfopt.lp.difference import DifferenceTimeLimit
from dfopt.lp.potentials import tight_potentials


def check(n, src, dst, lower, cost, result, tol=1e-6):
    """Feasible, normalised per weak component, objective recomputed from s."""
    s = result.s
    src, dst = np.asarray(src, dtype=int), np.asarray(dst, dtype=int)
    lower, cost = np.asarray(lower, dtype=float), np.asarray(cost, dtype=float)
    assert s.shape == (n,)
    if len(src):
        assert (s[dst] - s[src] >= lower - tol).all()
    assert result.objective == pytest.approx(float(cost @ (s[dst] - s[src])) if len(src) else 0.0, abs=tol)
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in zip(src.tolist(), dst.tolist()):
        parent[find(a)] = find(b)
    for root in {find(v) for v in range(n)}:
        members = [v for v in range(n) if find(v) == root]
        assert min(s[members]) == pytest.approx(0.0, abs=tol)


def solve_all(n, src, dst, lower, cost):
    results = {m: solve_difference_lp(n, src, dst, lower, cost, method=m) for m in METHODS}
    for r in results.values():
        check(n, src, dst, lower, cost, r)
    objs = [r.objective for r in results.values()]
    assert max(objs) - min(objs) <= 1e-6 * max(1.0, abs(objs[0])), objs
    return results


HAND_CASES = {
    # name: (n, src, dst, lower, cost, optimum)
    "chain": (3, [0, 1], [1, 2], [2, 3], [1, 1], 5),
    "diamond": (4, [0, 0, 1, 2], [1, 2, 3, 3], [1, 5, 1, 1], [1, 1, 1, 1], 12),
    "shortcut": (3, [0, 1, 0], [1, 2, 2], [2, 3, 1], [1, 1, 4], 25),
    "parallel arcs": (2, [0, 0, 0], [1, 1, 1], [3, 7, 5], [1, 2, 0], 21),
    "negative lower": (3, [0, 1], [1, 2], [-4, 2], [1, 3], 2),
    "zero cost": (3, [0, 1], [1, 2], [5, 5], [0, 0], 0),
    "two components and isolated": (5, [0, 2], [1, 3], [4, 6], [1, 2], 16),
    "feasible cycle": (3, [0, 1, 2], [1, 2, 0], [2, 1, -3], [1, 1, 1], 0),
    "balanced pull": (3, [0, 1], [1, 2], [1, 1], [2, 1], 3),
    "empty": (0, [], [], [], [], 0),
}


@pytest.mark.parametrize("case", list(HAND_CASES), ids=list(HAND_CASES))
def test_hand_cases(case):
    n, src, dst, lower, cost, optimum = HAND_CASES[case]
    for r in solve_all(n, src, dst, lower, cost).values():
        assert r.objective == pytest.approx(optimum)


def test_shortcut_solution_and_result_fields():
    r = solve_difference_lp(3, [0, 1, 0], [1, 2, 2], [2, 3, 1], [1, 1, 4])
    assert r.s.tolist() == [0.0, 2.0, 5.0] and r.method == "flow" and r.wall_time_s > 0
    assert r.stats["dual_objective"] == r.objective == 25.0


def test_rational_data_is_scaled_exactly():
    lower, cost = [0.5, 1 / 3, 0.25], [0.25, 2.0, 1.5]
    results = solve_all(3, [0, 1, 0], [1, 2, 2], lower, cost)
    assert results["flow"].stats["scale_lower"] == 12
    assert results["flow"].objective == pytest.approx(0.25 * 0.5 + 2.0 / 3 + 1.5 * (0.5 + 1 / 3))


def test_flow_refuses_irrational_data_and_highs_takes_it():
    with pytest.raises(InstanceError, match="method='highs'"):
        solve_difference_lp(2, [0], [1], [math.pi], [1.0], method="flow")
    r = solve_difference_lp(2, [0], [1], [math.pi], [1.0], method="highs")
    assert r.objective == pytest.approx(math.pi)


def test_positive_cycle_is_infeasible_and_named():
    names = ["k0->k1", "k1->k2", "k2->k0", "k0->k3"]
    for method in METHODS:
        with pytest.raises(InfeasibleError, match="k0->k1.*total lower bound 1 > 0") as info:
            solve_difference_lp(4, [0, 1, 2, 0], [1, 2, 0, 3], [2, 1, -2, 9], [1, 1, 1, 1],
                                method=method, arc_names=names)
        assert set(info.value.culprits) == {"k0->k1", "k1->k2", "k2->k0"}


def test_positive_self_loop_is_infeasible():
    with pytest.raises(InfeasibleError, match="arc 1"):
        solve_difference_lp(2, [0, 1], [1, 1], [1, 2], [1, 1])
    r = solve_difference_lp(2, [0, 1], [1, 1], [1, -2], [1, 1])
    assert r.objective == 1.0


@pytest.mark.parametrize("args, match", [
    ((2, [0], [1], [1], [-1]), "cost >= 0"),
    ((2, [0], [2], [1], [1]), "dst: node indices"),
    ((2, [0, 1], [1], [1], [1]), "one length"),
    ((2, [0], [1], [float("nan")], [1]), "finite"),
    ((-1, [], [], [], []), "non-negative integer"),
])
def test_bad_input(args, match):
    with pytest.raises(InstanceError, match=match):
        solve_difference_lp(*args)


def test_unknown_method_lists_the_methods():
    with pytest.raises(InstanceError, match="expected one of: cvxpy, flow, flow-simplex, highs"):
        solve_difference_lp(2, [0], [1], [1], [1], method="simplex")


def test_a_time_limit_the_simplex_flow_reaches_is_its_own_error():
    """A limit of zero stops HiGHS before the optimum: DifferenceTimeLimit (a SolverError), for
    both the flow LP and the primal."""
    rng = np.random.default_rng(3)
    n = 400
    src = rng.integers(0, n - 1, size=3000)
    dst = np.minimum(src + rng.integers(1, 20, size=3000), n - 1)
    lower, cost = rng.integers(0, 50, size=3000), rng.integers(0, 5, size=3000)
    for method in ("flow-simplex", "highs"):
        with pytest.raises(DifferenceTimeLimit, match="time limit"):
            solve_difference_lp(n, src, dst, lower, cost, method=method, time_limit=0.0)
    assert issubclass(DifferenceTimeLimit, SolverError)


def test_the_simplex_flow_runs_whatever_thread_pool_an_earlier_highs_run_left():
    """HiGHS keeps one thread pool per process; a run asking for another thread count fails before
    it starts unless the pool is reset. The flow LP leaves the count alone, and the HiGHS
    backend's ``workers`` resets the pool, so any order of the two works."""
    from dfopt.ilp import LinearModel, solve

    m = LinearModel()
    x = m.num_var(0, 3, "x")
    m.maximize(2 * x)
    for workers in (2, None, 1, 1, 2):
        assert solve(m, "highs", workers=workers).objective == 6.0
        r = solve_difference_lp(3, [0, 1], [1, 2], [1.0, 1.0], [1.0, 1.0], method="flow-simplex")
        assert r.objective == 2.0


def test_longest_path_and_tight_potentials_helpers():
    assert longest_path_potentials(4, [0, 1, 0, 2], [1, 3, 2, 3], [1, 1, 4, 0]).tolist() == [0, 1, 4, 4]
    # tight 0->1 (5) and 2->1 (1): s2 = s1 - 1 = 4; free arc 0->3 puts s3 at 7
    s = tight_potentials(4, [0, 2, 0], [1, 1, 3], [5, 1, 7], [True, True, False])
    assert s.tolist() == [0, 5, 4, 7]


def test_a_thousand_nodes_agree():
    rng = np.random.default_rng(3)
    n, m = 1000, 2500
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    perm = rng.permutation(n)
    src, dst = perm[np.minimum(a, b)[keep]], perm[np.maximum(a, b)[keep]]
    lower, cost = rng.integers(0, 21, len(src)), rng.integers(0, 6, len(src))
    solve_all(n, src, dst, lower, cost)


# --------------------------------------------------------------------- hypothesis
@st.composite
def random_dags(draw, nodes=None):
    n = draw(st.integers(1, 12)) if nodes is None else nodes
    m = draw(st.integers(0, 30))
    pairs = [tuple(sorted(draw(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))))) for _ in range(m)]
    pairs = [(a, b) for a, b in pairs if a != b]
    order = draw(st.permutations(range(n)))
    src = [order[a] for a, _ in pairs]
    dst = [order[b] for _, b in pairs]
    lower = [draw(st.integers(0, 20)) for _ in pairs]
    cost = [draw(st.integers(0, 5)) for _ in pairs]
    return n, src, dst, lower, cost


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dags())
def test_methods_agree_on_random_dags(dag):
    results = solve_all(*dag)
    flow = results["flow"].s
    for other in ("highs", "cvxpy"):  # flow returns the least optimal potentials
        assert (flow <= results[other].s + 1e-6).all()
    # ... which are unique, whichever solver finds the optimal flow
    assert results["flow-simplex"].s.tolist() == flow.tolist()


@st.composite
def random_digraphs(draw):
    n = draw(st.integers(1, 8))
    m = draw(st.integers(0, 16))
    src = [draw(st.integers(0, n - 1)) for _ in range(m)]
    dst = [draw(st.integers(0, n - 1)) for _ in range(m)]
    lower = [draw(st.integers(-10, 5)) for _ in range(m)]
    cost = [draw(st.integers(0, 5)) for _ in range(m)]
    return n, src, dst, lower, cost


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_digraphs())
def test_methods_agree_on_graphs_with_cycles(graph):
    outcomes = {}
    for method in METHODS:
        try:
            r = solve_difference_lp(*graph, method=method)
            check(*graph, r)
            outcomes[method] = round(r.objective, 6)
        except InfeasibleError:
            outcomes[method] = "infeasible"
    assert len(set(outcomes.values())) == 1, outcomes


# -------------------------------------------------------------------------- hinges
def hinge_value(s, hinges):
    hs, hd, hb, hc = (np.asarray(a, dtype=float) for a in hinges)
    hs, hd = hs.astype(int), hd.astype(int)
    return float(hc @ np.maximum(0.0, s[hd] - s[hs] - hb)) if len(hs) else 0.0


def solve_all_hinged(n, src, dst, lower, cost, hinges):
    results = {m: solve_difference_lp(n, src, dst, lower, cost, method=m, hinges=hinges) for m in METHODS}
    for r in results.values():
        s = r.s
        if len(src):
            assert (s[np.asarray(dst, int)] - s[np.asarray(src, int)] >= np.asarray(lower) - 1e-6).all()
        linear = float(np.asarray(cost, float) @ (s[np.asarray(dst, int)] - s[np.asarray(src, int)])) if len(src) else 0.0
        assert r.objective == pytest.approx(linear + hinge_value(s, hinges), abs=1e-6)
    objs = [r.objective for r in results.values()]
    assert max(objs) - min(objs) <= 1e-6 * max(1.0, abs(objs[0])), objs
    return results


def brute_force(n, src, dst, lower, cost, hinges, radius):
    """The least objective over integer s with s[0] = 0 and the others in [-radius, radius]."""
    grids = np.meshgrid(*[np.arange(-radius, radius + 1)] * (n - 1), indexing="ij")
    S = np.stack([np.zeros_like(grids[0]), *grids], axis=-1).reshape(-1, n).astype(float)
    src, dst = np.asarray(src, int), np.asarray(dst, int)
    diff = S[:, dst] - S[:, src]
    ok = (diff >= np.asarray(lower, float)).all(axis=1)
    value = diff @ np.asarray(cost, float)
    hs, hd, hb, hc = (np.asarray(a) for a in hinges)
    if len(hs):
        value = value + np.maximum(0.0, S[:, hd.astype(int)] - S[:, hs.astype(int)] - hb) @ hc
    return float(value[ok].min())


def test_a_convex_cost_of_one_difference_is_least_at_its_kink():
    # cost of d = s1 - s0 >= 0: d through 2 free, then slope 1, then slope 4 beyond 6; the arc asks d >= 3
    r = solve_all_hinged(2, [0], [1], [3], [0], ([0, 0], [1, 1], [2, 6], [1, 3]))
    assert r["flow"].objective == 1.0 and r["flow"].s.tolist() == [0.0, 3.0]
    # a pull on the other side: s1 - s0 costs -1 per unit from the other arc, so d runs to the kink at 2
    r = solve_all_hinged(3, [0, 1], [1, 2], [0, 0], [0, 1], ([0, 0], [1, 1], [2, 6], [1, 3]))
    assert r["flow"].objective == 0.0


def test_hinge_faults_are_named():
    with pytest.raises(InstanceError, match="hinges: cost: expected cost >= 0"):
        solve_difference_lp(2, [0], [1], [0], [1], hinges=([0], [1], [0], [-1]))
    with pytest.raises(InstanceError, match="hinges: dst: node indices"):
        solve_difference_lp(2, [0], [1], [0], [1], hinges=([0], [2], [0], [1]))
    with pytest.raises(InstanceError, match="four arrays"):
        solve_difference_lp(2, [0], [1], [0], [1], hinges=([0], [1]))


@st.composite
def hinged_dags(draw, nodes=None):
    n, src, dst, lower, cost = draw(random_dags(nodes))
    h = draw(st.integers(0, 12))
    pairs = [draw(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))) for _ in range(h)]
    hs, hd = [a for a, _ in pairs], [b for _, b in pairs]
    hb = [draw(st.integers(-10, 25)) for _ in pairs]
    hc = [draw(st.integers(0, 4)) for _ in pairs]
    return n, src, dst, lower, cost, (hs, hd, hb, hc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hinged_dags())
def test_methods_agree_with_hinges(case):
    results = solve_all_hinged(*case)
    for other in ("highs", "cvxpy"):  # flow returns the least optimal potentials
        assert (results["flow"].s <= results[other].s + 1e-6).all()
    assert results["flow-simplex"].s.tolist() == results["flow"].s.tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hinged_dags(nodes=3))
def test_flow_with_hinges_matches_brute_force_on_three_nodes(case):
    n, src, dst, lower, cost, hinges = case
    radius = int(sum(abs(x) for x in lower) + sum(abs(b) for b in hinges[2]) + 1)
    r = solve_difference_lp(n, src, dst, lower, cost, method="flow", hinges=hinges)
    assert r.objective == pytest.approx(brute_force(n, src, dst, lower, cost, hinges, radius))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hinged_dags())
def test_hinge_potentials_all_limits_at_once_match_the_lazy_rounds(case):
    """With no lazy rounds allowed, every hinge's upper limit goes in at once (cycles against the
    graph's direction, Bellman-Ford inside them): the same least potentials."""
    import dfopt.lp.potentials as pot

    lazy = solve_difference_lp(*case[:5], method="flow", hinges=case[5])
    saved = pot.HINGE_ROUNDS
    pot.HINGE_ROUNDS = 0
    try:
        eager = solve_difference_lp(*case[:5], method="flow", hinges=case[5])
    finally:
        pot.HINGE_ROUNDS = saved
    assert eager.s.tolist() == lazy.s.tolist() and eager.objective == lazy.objective
