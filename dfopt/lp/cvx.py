"""Solve a ``cvxpy.Problem`` with dfopt's options, solver names and status mapping.

Solver names are lower case (``highs``, ``clarabel``, ``scipy``, ``glop``, ``pdlp``, ``scs``,
``osqp``); the time limit and the seed go to each solver under its own option name
(:data:`SOLVERS`). Build problems vectorised (one ``A @ x >= b`` over an incidence matrix, not
one scalar constraint per edge): cvxpy's compile time grows with the number of constraint
objects.

Status map (cvxpy status -> Termination / SolutionStatus):

==========================  ==================================================
optimal                     optimal / optimal
optimal_inaccurate          optimal / feasible (message says inaccurate)
infeasible(_inaccurate)     infeasible / none
unbounded(_inaccurate)      unbounded / none
infeasible_or_unbounded     re-solved with a zero objective: infeasible, or
                            unbounded when that re-solve is feasible
user_limit                  time_limit / feasible if values exist, else none
solver_error, a raised      error / none (message from the solver)
cvxpy SolverError
==========================  ==================================================

GLOP (through cvxpy, as through pywraplp) answers ``infeasible`` for unbounded LPs; its
``infeasible`` is re-checked the same way.

>>> import cvxpy as cp
>>> x = cp.Variable(2, name="x")
>>> prob = cp.Problem(cp.Maximize(x[0] + x[1]), [x >= 0, x[0] + 2 * x[1] <= 4, x[0] <= 2])
>>> r = solve_problem(prob, "highs", time_limit=5)
>>> r.termination.value, round(r.objective, 6), r.values["x"].round(6).tolist()
('optimal', 3.0, [2.0, 1.0])
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from dfopt.errors import InstanceError, SolverUnavailableError
from dfopt.results import SolutionStatus, SolveResult, Termination

if TYPE_CHECKING:
    import cvxpy as cp

logger = logging.getLogger(__name__)

__all__ = ["solve_problem", "available_lp_solvers", "SOLVERS", "map_cvxpy_status"]


def _highs(t: float, seed: int) -> dict:
    return {"time_limit": t, "random_seed": seed % 2147483647}


def _clarabel(t: float, seed: int) -> dict:
    return {"time_limit": t}


def _scipy(t: float, seed: int) -> dict:
    return {"scipy_options": {"method": "highs", "time_limit": t}}


def _ortools(t: float, seed: int) -> dict:
    return {"time_limit_sec": t}


def _scs(t: float, seed: int) -> dict:
    return {"time_limit_secs": t}


def _osqp(t: float, seed: int) -> dict:
    return {"time_limit": t}


#: dfopt name -> (cvxpy solver name, options builder(time_limit, seed))
SOLVERS: dict[str, tuple[str, Callable[[float, int], dict]]] = {
    "highs": ("HIGHS", _highs),
    "clarabel": ("CLARABEL", _clarabel),
    "scipy": ("SCIPY", _scipy),
    "glop": ("GLOP", _ortools),
    "pdlp": ("PDLP", _ortools),
    "scs": ("SCS", _scs),
    "osqp": ("OSQP", _osqp),
}

_STATUS = {
    "optimal": (Termination.OPTIMAL, SolutionStatus.OPTIMAL),
    "optimal_inaccurate": (Termination.OPTIMAL, SolutionStatus.FEASIBLE),
    "infeasible": (Termination.INFEASIBLE, SolutionStatus.NONE),
    "infeasible_inaccurate": (Termination.INFEASIBLE, SolutionStatus.NONE),
    "unbounded": (Termination.UNBOUNDED, SolutionStatus.NONE),
    "unbounded_inaccurate": (Termination.UNBOUNDED, SolutionStatus.NONE),
    "infeasible_or_unbounded": (Termination.ERROR, SolutionStatus.NONE),
    "solver_error": (Termination.ERROR, SolutionStatus.NONE),
}

#: solvers whose "infeasible" may mean "unbounded"
_AMBIGUOUS_INFEASIBLE = {"glop"}


def available_lp_solvers() -> list[str]:
    """The dfopt names of the cvxpy solvers installed here."""
    import cvxpy as cp

    installed = set(cp.installed_solvers())
    return [name for name, (cv_name, _) in SOLVERS.items() if cv_name in installed]


def map_cvxpy_status(status: str | None, has_values: bool) -> tuple[Termination, SolutionStatus]:
    """Map a cvxpy status string into the two dfopt enums (see the module table)."""
    if status == "user_limit":
        return Termination.TIME_LIMIT, (SolutionStatus.FEASIBLE if has_values else SolutionStatus.NONE)
    return _STATUS.get(status or "", (Termination.ERROR, SolutionStatus.NONE))


def solve_problem(problem: cp.Problem, solver: str = "highs", time_limit: float = 10.0, seed: int = 0,
                  verbose: bool = False, options: Mapping[str, Any] | None = None) -> SolveResult:
    """Solve ``problem`` with ``solver`` under a time limit; never raises for solver failures.

    ``values`` maps each variable's name to its value (a NumPy array, or None without a
    solution); ``stats`` holds cvxpy's compile and solve times. ``options`` are passed to the
    solver as extra cvxpy keyword options. ``verbose`` lets cvxpy and the solver write their
    own logs.
    """
    cv_name, build = _lookup(solver)
    if not (0 < time_limit < math.inf):
        raise InstanceError(f"time_limit: expected a positive finite number of seconds, got {time_limit!r}")
    kwargs = dict(build(float(time_limit), int(seed)), **dict(options or {}))
    if cv_name == "HIGHS":
        _absorb_highs_banner()
    start = time.perf_counter()
    status, message = _run(problem, cv_name, verbose, kwargs)
    ambiguous = status == "infeasible" and solver.lower() in _AMBIGUOUS_INFEASIBLE
    if status == "infeasible_or_unbounded" or ambiguous:
        status = _disambiguate(problem, cv_name, kwargs, status)
    wall = time.perf_counter() - start
    return _result(problem, status, message, solver, wall, seed, time_limit)


def _run(problem, cv_name: str, verbose: bool, kwargs: dict) -> tuple[str, str]:
    import cvxpy as cp

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"(?s).*infeasible or unbounded")
            problem.solve(solver=cv_name, verbose=verbose, **kwargs)
        return problem.status, ""
    except cp.error.DCPError as err:
        raise InstanceError(f"the problem is not DCP (disciplined convex): {err}") from err
    except (cp.error.SolverError, ValueError) as err:  # ValueError: cvxpy could not unpack
        return "solver_error", str(err)


def _disambiguate(problem, cv_name: str, kwargs: dict, status: str) -> str:
    """Re-solve with a zero objective: feasible means unbounded; a zero objective is never
    unbounded, so anything but a solution means infeasible."""
    import cvxpy as cp

    feasibility = cp.Problem(cp.Minimize(0), problem.constraints)
    again, _ = _run(feasibility, cv_name, False, kwargs)
    if again in ("optimal", "optimal_inaccurate"):
        return "unbounded"
    if again in ("infeasible", "infeasible_inaccurate", "infeasible_or_unbounded"):
        return "infeasible"
    return status


def _absorb_highs_banner() -> None:
    """HiGHS prints a banner on stdout once per process; take it where it goes to /dev/null."""
    from dfopt.ilp.highs import absorb_banner

    absorb_banner()


def _lookup(solver: str):
    entry = SOLVERS.get(str(solver).lower())
    if entry is None or str(solver).lower() not in available_lp_solvers():
        raise SolverUnavailableError(str(solver), available_lp_solvers(), kind="LP solver")
    return entry


def _result(problem, status, message, solver, wall, seed, time_limit) -> SolveResult:
    variables = problem.variables()
    has_values = bool(variables) and all(v.value is not None for v in variables)
    term, sol = map_cvxpy_status(status, has_values)
    if status == "optimal_inaccurate":
        message = message or "the solver reports an inaccurate optimum"
    elif status == "infeasible_or_unbounded":
        message = message or "the solver could not tell infeasible from unbounded, nor could a re-solve"
    values = {v.name(): v.value for v in variables} if sol is not SolutionStatus.NONE else {}
    objective = _finite(problem.value) if sol is not SolutionStatus.NONE else None
    bound = objective if term is Termination.OPTIMAL else None
    stats = {"status": status, "seed": seed, "time_limit": time_limit}
    stats.update(_solver_stats(problem))
    return SolveResult(term, sol, objective, bound, wall, solver, values, message, stats)


def _solver_stats(problem: cp.Problem) -> dict:
    out: dict[str, Any] = {}
    st = getattr(problem, "solver_stats", None)
    if st is not None:
        out.update(solve_time_s=st.solve_time, setup_time_s=st.setup_time, iterations=st.num_iters)
    compile_time = getattr(problem, "compilation_time", None)
    if compile_time is not None:
        out["compile_time_s"] = compile_time
    return out


def _finite(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
