"""dfopt.ilp: the neutral linear model and every installed backend.

One battery of small problems with known optima runs on every backend that has the capabilities
a problem needs; the other backend x problem pairs go to a separate test that checks that the
backend refuses the model with a clear error. The split is computed at collection time, so no
test skips. Backends are also compared with brute-force enumeration on random tiny integer
programs (hypothesis).
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt.errors import InstanceError, SolverUnavailableError
from dfopt.ilp import (
    LinearModel,
    available_backends,
    backend_names,
    capabilities,
    export,
    lin_sum,
    solve,
    solve_cp_model,
)
from dfopt.results import SolutionStatus, Termination

BACKENDS = available_backends()
MIP_BACKENDS = [b for b in BACKENDS if capabilities(b).integer_vars]
TOL = 1e-5


# --------------------------------------------------------------------------- battery
def knapsack():
    values, weights, cap = [10, 13, 7, 8, 9], [5, 6, 4, 5, 3], 12
    m = LinearModel("knapsack")
    x = [m.bool_var(f"x[{i}]") for i in range(5)]
    m.add(lin_sum(x, weights) <= cap)
    m.maximize(lin_sum(x, values))
    best = max(sum(v for v, t in zip(values, pick) if t)
               for pick in itertools.product([0, 1], repeat=5)
               if sum(w for w, t in zip(weights, pick) if t) <= cap)
    return m, Termination.OPTIMAL, best


def assignment():
    cost = [[9, 2, 7], [6, 4, 3], [5, 8, 1]]
    m = LinearModel("assignment")
    x = {(i, j): m.bool_var(f"x[{i},{j}]") for i in range(3) for j in range(3)}
    for i in range(3):
        m.add(sum(x[i, j] for j in range(3)) == 1)
        m.add(sum(x[j, i] for j in range(3)) == 1)
    m.minimize(sum(cost[i][j] * x[i, j] for i, j in x))
    best = min(sum(cost[i][p[i]] for i in range(3)) for p in itertools.permutations(range(3)))
    return m, Termination.OPTIMAL, best


def equality():
    m = LinearModel("equality")
    x, y = m.int_var(0, 10, "x"), m.int_var(0, 10, "y")
    m.add(3 * x + 5 * y == 22)
    m.minimize(x + y)
    return m, Termination.OPTIMAL, 6


def infeasible():
    m = LinearModel("infeasible")
    x, y = m.int_var(0, 10, "x"), m.int_var(0, 10, "y")
    m.add(x + y >= 5)
    m.add(x + y <= 3)
    m.minimize(x)
    return m, Termination.INFEASIBLE, None


def unbounded():
    m = LinearModel("unbounded")
    x, y = m.int_var(0, math.inf, "x"), m.int_var(0, 5, "y")
    m.add(x - y >= 2)
    m.maximize(x + y)
    return m, Termination.UNBOUNDED, None


def negative_bounds():
    m = LinearModel("negative")
    x, y = m.int_var(-10, 10, "x"), m.int_var(-5, 5, "y")
    m.add(x - y >= -3)
    m.add(x + y >= -4)
    m.minimize(x + 2 * y)
    best = min(a + 2 * b for a in range(-10, 11) for b in range(-5, 6) if a - b >= -3 and a + b >= -4)
    return m, Termination.OPTIMAL, best


def fractional_coefficients():
    m = LinearModel("fractional")
    x, y = m.int_var(0, 10, "x"), m.int_var(0, 10, "y")
    m.add(0.5 * x + 0.25 * y <= 1.75)
    m.maximize(x + y + 0.5)
    return m, Termination.OPTIMAL, 7.5


def ranged_with_offset():
    m = LinearModel("ranged")
    x, y = m.int_var(0, 10, "x"), m.int_var(0, 10, "y")
    m.add_range(x + y, 3, 4)
    m.minimize(2 * x + y + 3)
    return m, Termination.OPTIMAL, 6


def pure_lp():
    m = LinearModel("lp")
    x, y = m.num_var(0, math.inf, "x"), m.num_var(0, math.inf, "y")
    m.add(x + y <= 4)
    m.add(x + 3 * y <= 6)
    m.add(x <= 3)
    m.maximize(3 * x + 2 * y)
    return m, Termination.OPTIMAL, 11


def mixed_integer():
    m = LinearModel("milp")
    x, y = m.int_var(0, 3, "x"), m.num_var(0, 10, "y")
    m.add(6 * x + 4 * y <= 24)
    m.add(x + 2 * y <= 6)
    m.maximize(5 * x + 4 * y)
    return m, Termination.OPTIMAL, 21


def bulk_rows():
    """A chain s[i+1] - s[i] >= i built with add_rows; least sum is sum of prefix sums."""
    m = LinearModel("bulk")
    n = 30
    s = m.add_vars(n, 0, 1000, integer=True, names="s")
    rows = np.repeat(np.arange(n - 1), 2)
    cols = np.c_[s[:-1], s[1:]].ravel()
    m.add_rows(rows, cols, np.tile([-1.0, 1.0], n - 1), np.arange(n - 1), np.full(n - 1, np.inf))
    m.minimize(lin_sum(s, model=m))
    return m, Termination.OPTIMAL, sum(sum(range(k)) for k in range(n))


PROBLEMS = [knapsack, assignment, equality, infeasible, unbounded, negative_bounds,
            fractional_coefficients, ranged_with_offset, pure_lp, mixed_integer, bulk_rows]


def _missing_capability(backend: str, model: LinearModel) -> str | None:
    caps, data = capabilities(backend), model.data()
    if not caps.continuous_vars and not data.integer.all():
        return f"{backend} takes integer variables only"
    if not caps.integer_vars and data.integer.any():
        return f"{backend} solves LPs only"
    if not caps.infinite_bounds and not (np.isfinite(data.var_lb).all() and np.isfinite(data.var_ub).all()):
        return f"{backend} needs finite bounds"
    return None


def _pairs(*, supported: bool) -> list:
    """The backend x problem pairs whose capability check comes out as ``supported``."""
    return [pytest.param(backend, problem, id=f"{problem.__name__}-{backend}")
            for problem in PROBLEMS for backend in BACKENDS
            if (_missing_capability(backend, problem()[0]) is None) is supported]


SUPPORTED, UNSUPPORTED = _pairs(supported=True), _pairs(supported=False)


@pytest.mark.parametrize(("backend", "problem"), SUPPORTED)
def test_battery(backend, problem):
    model, termination, optimum = problem()
    assert _missing_capability(backend, model) is None
    r = solve(model, backend, time_limit=10, seed=0)
    assert r.termination is termination, r.message
    assert r.solver == backend and r.wall_time_s > 0
    if optimum is None:
        assert r.status is SolutionStatus.NONE and r.values == {}
        return
    assert r.status is SolutionStatus.OPTIMAL
    assert r.objective == pytest.approx(optimum, rel=TOL, abs=TOL)
    assert r.stats["recomputed_objective"] == pytest.approx(optimum, rel=TOL, abs=TOL)
    assert r.stats["max_violation"] <= 1e-5
    assert r.bound == pytest.approx(optimum, rel=TOL, abs=TOL)
    assert set(r.values) == set(model.data().var_names)


@pytest.mark.parametrize(("backend", "problem"), UNSUPPORTED)
def test_missing_capability_is_a_clear_error(backend, problem):
    model, _, _ = problem()
    assert _missing_capability(backend, model) is not None
    with pytest.raises(InstanceError, match=f"backend '{backend}'"):
        solve(model, backend, time_limit=5)


def test_cpsat_refuses_continuous_variables_by_name():
    model, _, _ = pure_lp()
    with pytest.raises(InstanceError, match="CP-SAT .* needs integer variables.*'x'"):
        solve(model, "cpsat")


def test_cpsat_refuses_data_that_does_not_scale_to_integers():
    m = LinearModel()
    x = m.int_var(0, 5, "x")
    m.add(math.pi * x <= 7)
    m.maximize(x)
    with pytest.raises(InstanceError, match="CP-SAT needs integer data"):
        solve(m, "cpsat")
    m2 = LinearModel()
    y = m2.int_var(0, 5, "y")
    m2.maximize(math.sqrt(2) * y)
    with pytest.raises(InstanceError, match="objective"):
        solve(m2, "cpsat")


def test_values_map_back_by_name_and_by_handle():
    m = LinearModel("named")
    x = {k: m.int_var(0, 4, f"x[{k}]") for k in ("a", "b")}
    m.add(x["a"] + x["b"] <= 5)
    m.maximize(2 * x["a"] + x["b"])
    r = solve(m, "highs")
    assert r.values == {"x[a]": 4, "x[b]": 1}
    assert isinstance(r.values["x[a]"], int)
    assert r.value(x["a"]) == 4 and r.value(2 * x["a"] + 1) == 9 and r.value("x[b]") == 1
    assert r.values_array.tolist() == [4.0, 1.0]


# ------------------------------------------------------------------- the model API
def test_expressions_flatten_and_merge():
    m = LinearModel()
    x, y = m.int_var(0, 5, "x"), m.int_var(0, 5, "y")
    e = 2 * x + y - 3 + x - y / 2 + 0
    assert e.terms() == {"x": 3.0, "y": 0.5} and e.constant == -3.0
    assert sum([x, y, x]).terms() == {"x": 2.0, "y": 1.0}
    assert (5 - x).terms() == {"x": -1.0} and (5 - x).constant == 5.0
    assert (np.float64(2.0) * x).terms() == {"x": 2.0}
    c = 3 <= x + y
    assert (c.lb, c.ub) == (3.0, math.inf)
    big = sum(m.var(i % 2) for i in range(20000))  # lazy tree: linear time, no recursion limit
    assert big.terms() == {"x": 10000.0, "y": 10000.0}


def test_expression_errors():
    m, other = LinearModel("m"), LinearModel("other")
    x, z = m.int_var(0, 1, "x"), other.int_var(0, 1, "z")
    with pytest.raises(TypeError, match="not linear"):
        _ = x * x
    with pytest.raises(TypeError, match="chained comparisons"):
        _ = 0 <= x <= 1
    with pytest.raises(TypeError, match="strict"):
        _ = x < 1
    with pytest.raises(InstanceError, match="two different models"):
        _ = x + z
    with pytest.raises(InstanceError, match="another model"):
        m.add(z <= 1)
    with pytest.raises(TypeError, match="comparison"):
        m.add(True)
    with pytest.raises(InstanceError, match="already has a variable named 'x'"):
        m.int_var(0, 1, "x")
    with pytest.raises(InstanceError, match="lb <= ub"):
        m.num_var(2, 1, "bad")


def test_var_handles_work_as_dict_keys():
    m = LinearModel()
    xs = [m.bool_var(f"b{i}") for i in range(50)]
    table = {x: i for i, x in enumerate(xs)}
    assert [table[m.var(i)] for i in range(50)] == list(range(50))
    assert xs[3] in table and (xs[3] == xs[3]) and not (xs[3] == xs[4])


def test_add_rows_validation():
    m = LinearModel()
    m.add_vars(2, 0, 1)
    with pytest.raises(InstanceError, match="var_idx"):
        m.add_rows([0], [5], [1.0], [0], [1])
    with pytest.raises(InstanceError, match="one length"):
        m.add_rows([0, 0], [0], [1.0], [0], [1])
    with pytest.raises(InstanceError, match="row_idx"):
        m.add_rows([1], [0], [1.0], [0], [1])
    with pytest.raises(InstanceError, match="lb <= ub"):
        m.add_rows([0], [0], [1.0], [2], [1])


def test_add_rows_builds_a_large_model():
    n, k = 20000, 50000
    rng = np.random.default_rng(0)
    m = LinearModel("large")
    s = m.add_vars(n, 0, 100, integer=True)
    a, b = rng.integers(0, n, k), rng.integers(0, n, k)
    rows = m.add_rows(np.repeat(np.arange(k), 2), np.c_[s[a], s[b]].ravel(),
                      np.tile([-1.0, 1.0], k), np.zeros(k), np.full(k, np.inf))
    data = m.data()
    assert data.A.shape == (k, n) and rows[-1] == k - 1
    x = np.zeros(n)
    assert m.max_violation(x) == 0.0


def test_unknown_and_missing_backends():
    with pytest.raises(SolverUnavailableError, match="'gurobi' is not available; installed: cpsat"):
        solve(knapsack()[0], "gurobi")
    assert set(BACKENDS) <= set(backend_names())
    assert {"cpsat", "highs"} <= set(BACKENDS)


def test_options_are_validated():
    m = knapsack()[0]
    with pytest.raises(InstanceError, match="time_limit"):
        solve(m, "highs", time_limit=0)
    with pytest.raises(InstanceError, match="seed"):
        solve(m, "highs", seed=-1)
    with pytest.raises(InstanceError, match="unknown CP-SAT parameter"):
        solve(m, "cpsat", params={"no_such_field": 1})


# --------------------------------------------------------- determinism, limits, hints
def _hard_model(n_items: int = 36, rows: int = 4, seed: int = 1) -> LinearModel:
    """Market split (Cornuejols-Dawande) with slacks: hard for every MIP solver."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, (rows, n_items))
    m = LinearModel("market_split")
    x = [m.bool_var(f"x[{j}]") for j in range(n_items)]
    slack = []
    for i in range(rows):
        up, down = m.int_var(0, 10000, f"up[{i}]"), m.int_var(0, 10000, f"down[{i}]")
        m.add(lin_sum(x, a[i]) + up - down == int(a[i].sum() // 2))
        slack += [up, down]
    m.minimize(sum(slack))
    return m


@pytest.mark.parametrize("backend", [b for b in MIP_BACKENDS if capabilities(b).deterministic_seed])
def test_same_seed_same_result(backend):
    runs = [solve(_hard_model(20, 2, seed=3), backend, time_limit=20, seed=7) for _ in range(2)]
    assert runs[0].termination is runs[1].termination
    assert runs[0].objective == runs[1].objective
    assert runs[0].values == runs[1].values


def test_cpsat_deterministic_budget_repeats_itself_under_a_limit():
    params = {"max_deterministic_time": 0.1}
    runs = [solve(_hard_model(), "cpsat", time_limit=30, seed=5, params=params) for _ in range(2)]
    assert runs[0].termination is Termination.TIME_LIMIT
    assert runs[0].values == runs[1].values and runs[0].objective == runs[1].objective


@pytest.mark.parametrize("backend", MIP_BACKENDS)
def test_time_limit_is_a_status_not_a_crash(backend):
    r = solve(_hard_model(), backend, time_limit=0.05, seed=0)
    assert r.termination is Termination.TIME_LIMIT, (r.termination, r.message)
    assert r.wall_time_s < 10.0  # the limit is honoured (loosely: presolve may overrun)
    if r.has_solution:
        assert r.status is SolutionStatus.FEASIBLE and r.stats["max_violation"] <= 1e-6
        assert r.bound is None or r.bound <= r.objective + 1e-6
    else:
        assert r.values == {} and r.values_array is None


@pytest.mark.parametrize("backend", [b for b in MIP_BACKENDS if capabilities(b).incumbents])
def test_incumbents_are_recorded(backend):
    r = solve(_hard_model(24, 3), backend, time_limit=0.5, record_incumbents=True)
    inc = r.stats["incumbents"]
    assert inc and all(t >= 0 for t, _ in inc)
    assert [o for _, o in inc] == sorted((o for _, o in inc), reverse=True)  # minimising


@pytest.mark.parametrize("backend", [b for b in MIP_BACKENDS if capabilities(b).hints])
def test_hints_are_accepted(backend):
    m, _, best = knapsack()
    for j, v in enumerate([0, 1, 0, 0, 1]):
        m.hint(m.var(j), v)
    r = solve(m, backend, time_limit=5)
    assert r.objective == pytest.approx(best)


@pytest.mark.parametrize("backend", ["cpsat", "highs"])
def test_log_goes_to_logging_not_stdout(backend, capfd, caplog):
    caplog.set_level("INFO", logger="dfopt")
    solve(knapsack()[0], backend, time_limit=5, log=True)
    out, _ = capfd.readouterr()
    assert out == ""
    assert any(rec.name.startswith("dfopt.ilp") for rec in caplog.records)


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_model(backend):
    r = solve(LinearModel("empty"), backend, time_limit=5)
    assert r.termination is Termination.OPTIMAL and r.values == {}


# ------------------------------------------------------------------ solve_cp_model
def test_solve_cp_model_statuses_incumbents_and_hints():
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    xs = [model.new_int_var(0, 10, f"x{i}") for i in range(4)]
    model.add_all_different(xs)
    model.add(sum(xs) <= 20)
    model.maximize(sum((i + 1) * x for i, x in enumerate(xs)))
    model.add_hint(xs[0], 1)
    seen = []
    result, solver = solve_cp_model(model, time_limit=5, hint={xs[0]: 2, xs[1]: 3},
                                    callback=lambda cb: seen.append(cb.objective_value))
    assert result.termination is Termination.OPTIMAL and result.status is SolutionStatus.OPTIMAL
    assert result.objective == result.bound == solver.objective_value
    assert result.stats["incumbents"] and len(seen) == len(result.stats["incumbents"])
    assert result.values["x3"] == solver.value(xs[3]) == result.value(xs[3])
    assert sorted(model.proto.solution_hint.vars) == [0, 1]

    bad = cp_model.CpModel()
    y = bad.new_int_var(0, 3, "y")
    bad.add(y >= 5)
    result, _ = solve_cp_model(bad, time_limit=5)
    assert result.termination is Termination.INFEASIBLE and not result.has_solution


def test_solve_cp_model_time_limit():
    data = _hard_model(40, 5).data()
    from dfopt.ilp.cpsat import build_cp_model

    model, _, _ = build_cp_model(data)
    result, _ = solve_cp_model(model, time_limit=0.05, record_incumbents=True)
    assert result.termination is Termination.TIME_LIMIT


# ---------------------------------------------------------------------------- export
@pytest.mark.parametrize("fmt", ["mps", "lp"])
@pytest.mark.parametrize("problem", [knapsack, mixed_integer, negative_bounds, assignment],
                         ids=lambda f: f.__name__)
def test_export_is_readable_by_highs(tmp_path, fmt, problem):
    import highspy

    from dfopt.ilp.highs import new_highs

    model, _, optimum = problem()
    path = export(model, tmp_path / f"model.{fmt}", fmt)
    assert os.path.getsize(path) > 0
    h = new_highs()
    assert h.readModel(str(path)) != highspy.HighsStatus.kError
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(optimum, abs=TOL)


def test_export_cpsat_proto_is_readable(tmp_path):
    from ortools.sat.python import cp_model

    model, _, optimum = knapsack()
    path = export(model, tmp_path / "model.pbtxt", "cpsat-proto")
    again = cp_model.CpModel()
    again.proto.merge_text_format(open(path).read())
    result, _ = solve_cp_model(again, time_limit=5)
    assert result.objective == optimum


def test_export_rejects_unknown_formats(tmp_path):
    with pytest.raises(InstanceError, match="unknown export format 'xls'"):
        export(knapsack()[0], tmp_path / "m.xls")


# ------------------------------------------------------ backends against brute force
@st.composite
def tiny_integer_programs(draw):
    nv = draw(st.integers(1, 3))
    bounds = [tuple(sorted(draw(st.tuples(st.integers(-3, 3), st.integers(-3, 3))))) for _ in range(nv)]
    coef = st.integers(-3, 3)
    rows = [([draw(coef) for _ in range(nv)], draw(st.sampled_from(["<=", ">=", "=="])),
             draw(st.integers(-6, 6))) for _ in range(draw(st.integers(0, 3)))]
    obj = [draw(coef) for _ in range(nv)]
    return bounds, rows, obj, draw(st.booleans())


def _build(bounds, rows, obj, maximize):
    m = LinearModel("tiny")
    xs = [m.int_var(lo, hi, f"x{i}") for i, (lo, hi) in enumerate(bounds)]
    for coeffs, sense, rhs in rows:
        e = lin_sum(xs, coeffs)
        m.add(e <= rhs if sense == "<=" else e >= rhs if sense == ">=" else e == rhs)
    (m.maximize if maximize else m.minimize)(lin_sum(xs, obj))
    return m


def _brute_force(bounds, rows, obj, maximize):
    ops = {"<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "==": lambda a, b: a == b}
    best = None
    for point in itertools.product(*(range(lo, hi + 1) for lo, hi in bounds)):
        if all(ops[s](np.dot(c, point), r) for c, s, r in rows):
            val = int(np.dot(obj, point))
            best = val if best is None else (max if maximize else min)(best, val)
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_integer_programs())
def test_backends_agree_with_brute_force(program):
    expected = _brute_force(*program)
    for backend in MIP_BACKENDS:
        r = solve(_build(*program), backend, time_limit=5)
        if expected is None:
            assert r.termination is Termination.INFEASIBLE, backend
        else:
            assert r.termination is Termination.OPTIMAL, (backend, r.message)
            assert r.objective == pytest.approx(expected, abs=1e-6), backend
            assert r.stats["max_violation"] <= 1e-6


# ------------------------------------------------------- one CP-SAT path through dfopt.ilp
def test_lean_cp_model_is_public_and_lean():
    from ortools.sat.python import cp_model

    from dfopt.ilp import LeanCpModel, lean_model_class, new_cp_model

    m = new_cp_model("lean")
    assert isinstance(m, LeanCpModel) and isinstance(m, cp_model.CpModel)
    assert LeanCpModel is lean_model_class() and m.name == "lean"
    assert not hasattr(m, "NewBoolVar") and hasattr(cp_model.CpModel(), "NewBoolVar")


def test_importing_ilp_imports_no_solver():
    import subprocess
    import sys

    code = "import sys, dfopt.ilp, dfopt.progress; sys.exit('ortools' in sys.modules or 'highspy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("name, limit_hit, expected", [
    ("OPTIMAL", False, (Termination.OPTIMAL, SolutionStatus.OPTIMAL)),
    ("FEASIBLE", False, (Termination.FEASIBLE, SolutionStatus.FEASIBLE)),
    ("FEASIBLE", True, (Termination.TIME_LIMIT, SolutionStatus.FEASIBLE)),
    ("INFEASIBLE", False, (Termination.INFEASIBLE, SolutionStatus.NONE)),
    ("UNKNOWN", True, (Termination.TIME_LIMIT, SolutionStatus.NONE)),
    ("UNKNOWN", False, (Termination.ERROR, SolutionStatus.NONE)),
    ("MODEL_INVALID", False, (Termination.ERROR, SolutionStatus.NONE)),
])
def test_map_cpsat_status_takes_names_and_codes(name, limit_hit, expected):
    from ortools.sat.python import cp_model

    from dfopt.ilp import map_cpsat_status

    assert map_cpsat_status(name, limit_hit) == expected
    assert map_cpsat_status(getattr(cp_model, name), limit_hit) == expected


def test_configure_solver_sets_options():
    from dfopt.ilp import SolveOptions, configure_solver

    p = configure_solver(SolveOptions(time_limit=2.5, seed=3, deterministic=True, workers=1)).parameters
    assert (p.max_time_in_seconds, p.random_seed, p.num_workers, p.interleave_search) == (2.5, 3, 1, False)
    p = configure_solver(SolveOptions(deterministic=False, workers=3, params={"cp_model_probing_level": 1})).parameters
    assert (p.num_workers, p.interleave_search, p.cp_model_probing_level) == (3, False, 1)


def test_solve_cp_model_gives_an_assumption_core():
    from dfopt.ilp import new_cp_model

    m = new_cp_model("core")
    x = m.new_int_var(0, 10, "x")
    big, small, free = m.new_bool_var("big"), m.new_bool_var("small"), m.new_bool_var("free")
    m.add(x >= 7).only_enforce_if(big)
    m.add(x <= 3).only_enforce_if(small)
    m.add_assumptions([big, small, free])
    result, solver = solve_cp_model(m, time_limit=5, named_values=False)
    assert result.termination is Termination.INFEASIBLE and not result.has_solution
    assert set(solver.sufficient_assumptions_for_infeasibility()) <= {big.index, small.index, free.index}
    assert {big.index, small.index} <= set(solver.sufficient_assumptions_for_infeasibility())


def test_no_native_cp_sat_outside_ilp_and_no_unnamed_variables():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent / "dfopt"
    native = re.compile(r"CpSolver\(|CpModel\(\)|from ortools|import ortools")
    unnamed = re.compile(r"new_(bool|int)_var\((.*,\s*)?(\"\"|'')\s*\)")
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        assert not unnamed.search(text), f"{rel}: a CP-SAT variable without a name"
        if not rel.startswith(("ilp/", "lp/")):
            assert not native.search(text), f"{rel}: native OR-Tools use outside dfopt.ilp / dfopt.lp"
