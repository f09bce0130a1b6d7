"""dfopt.lp.cvx: cvxpy problems with dfopt's solver names, options and status mapping."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from dfopt.errors import InstanceError, SolverUnavailableError
from dfopt.lp import SOLVERS, available_lp_solvers, map_cvxpy_status, solve_problem
from dfopt.results import SolutionStatus, Termination

SOLVER_NAMES = available_lp_solvers()
EXACT = {"highs", "scipy", "glop"}  # simplex-based: vertex solutions to 1e-9


def lp_problem():
    x = cp.Variable(2, name="x")
    prob = cp.Problem(cp.Maximize(3 * x[0] + 2 * x[1]),
                      [x >= 0, x[0] + x[1] <= 4, x[0] + 3 * x[1] <= 6, x[0] <= 3])
    return prob, Termination.OPTIMAL, 11.0


def equality_problem():
    x = cp.Variable(3, name="flow")
    A = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    prob = cp.Problem(cp.Minimize(cp.sum(x)), [A @ x == np.array([2.0, 3.0]), x >= 0])
    return prob, Termination.OPTIMAL, 3.0  # x = (0, 2, 1): flow[1] serves both rows


def negative_variables():
    y = cp.Variable(name="y")
    prob = cp.Problem(cp.Minimize(y), [y >= -7.5, y <= 3])
    return prob, Termination.OPTIMAL, -7.5


def infeasible_problem():
    x = cp.Variable(2, name="x")
    prob = cp.Problem(cp.Minimize(x[0]), [x >= 0, x[0] + x[1] >= 5, x[0] + x[1] <= 3])
    return prob, Termination.INFEASIBLE, None


def unbounded_problem():
    x = cp.Variable(2, name="x")
    prob = cp.Problem(cp.Maximize(x[0] + x[1]), [x >= 0, x[0] - x[1] <= 2])
    return prob, Termination.UNBOUNDED, None


PROBLEMS = [lp_problem, equality_problem, negative_variables, infeasible_problem, unbounded_problem]


@pytest.mark.parametrize("solver", SOLVER_NAMES)
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda f: f.__name__)
def test_battery(solver, problem):
    prob, termination, optimum = problem()
    r = solve_problem(prob, solver, time_limit=10, seed=1)
    assert r.termination is termination, (r.stats.get("status"), r.message)
    assert r.solver == solver and r.wall_time_s > 0 and r.stats["seed"] == 1
    if optimum is None:
        assert r.status is SolutionStatus.NONE and r.objective is None and r.values == {}
        return
    assert r.has_solution
    tol = 1e-7 if solver in EXACT else 1e-3
    assert r.objective == pytest.approx(optimum, abs=tol)
    assert r.bound == r.objective
    assert set(r.values) == {v.name() for v in prob.variables()}


def test_solvers_are_listed_and_unknown_ones_refused():
    assert {"highs", "clarabel", "scipy"} <= set(SOLVER_NAMES)
    with pytest.raises(SolverUnavailableError, match="'gurobi' is not available; installed: highs"):
        solve_problem(lp_problem()[0], "gurobi")
    with pytest.raises(SolverUnavailableError):
        solve_problem(lp_problem()[0], "no-such-solver")


def test_time_limit_and_seed_use_each_solvers_own_option_name():
    assert SOLVERS["highs"][1](2.0, 5) == {"time_limit": 2.0, "random_seed": 5}
    assert SOLVERS["clarabel"][1](2.0, 5) == {"time_limit": 2.0}
    assert SOLVERS["scipy"][1](2.0, 5) == {"scipy_options": {"method": "highs", "time_limit": 2.0}}
    assert SOLVERS["glop"][1](2.0, 5) == {"time_limit_sec": 2.0}
    assert SOLVERS["scs"][1](2.0, 5) == {"time_limit_secs": 2.0}
    with pytest.raises(InstanceError, match="time_limit"):
        solve_problem(lp_problem()[0], "highs", time_limit=0)


@pytest.mark.parametrize("status, expected", [
    ("optimal", (Termination.OPTIMAL, SolutionStatus.OPTIMAL)),
    ("optimal_inaccurate", (Termination.OPTIMAL, SolutionStatus.FEASIBLE)),
    ("infeasible", (Termination.INFEASIBLE, SolutionStatus.NONE)),
    ("infeasible_inaccurate", (Termination.INFEASIBLE, SolutionStatus.NONE)),
    ("unbounded", (Termination.UNBOUNDED, SolutionStatus.NONE)),
    ("unbounded_inaccurate", (Termination.UNBOUNDED, SolutionStatus.NONE)),
    ("infeasible_or_unbounded", (Termination.ERROR, SolutionStatus.NONE)),
    ("solver_error", (Termination.ERROR, SolutionStatus.NONE)),
    (None, (Termination.ERROR, SolutionStatus.NONE)),
])
def test_status_map(status, expected):
    assert map_cvxpy_status(status, has_values=False) == expected


def test_user_limit_maps_to_time_limit_with_or_without_values():
    assert map_cvxpy_status("user_limit", True) == (Termination.TIME_LIMIT, SolutionStatus.FEASIBLE)
    assert map_cvxpy_status("user_limit", False) == (Termination.TIME_LIMIT, SolutionStatus.NONE)


def test_non_dcp_problem_is_bad_input():
    x = cp.Variable(name="x")
    with pytest.raises(InstanceError, match="not DCP"):
        solve_problem(cp.Problem(cp.Maximize(cp.square(x)), [x <= 1]), "highs")


def test_vectorised_incidence_build_solves_a_chain():
    n = 200
    A = np.zeros((n - 1, n))
    A[np.arange(n - 1), np.arange(n - 1)] = -1
    A[np.arange(n - 1), np.arange(1, n)] = 1
    s = cp.Variable(n, name="s")
    prob = cp.Problem(cp.Minimize(cp.sum(s)), [A @ s >= 1, s >= 0])
    r = solve_problem(prob, "highs")
    assert r.objective == pytest.approx(n * (n - 1) / 2)
    assert len(prob.constraints) == 2 and "compile_time_s" in r.stats


def test_no_banner_on_stdout(capfd):
    solve_problem(lp_problem()[0], "highs")
    out, _ = capfd.readouterr()
    assert "HiGHS" not in out
