"""The one driver every problem runs through: options, problem data, formulation, objective
recomputed, bound, checks, and the :class:`~dfopt.solution.Solution`.

:func:`solve` validates the options (done by :meth:`Problem.make_options`), checks the instance
against the memory budget, builds the problem data once (``prepare``), runs the formulation,
recomputes the objective from the decision (a solver's own number is never trusted), combines
the formulation's bound with the problem's, decides the status, writes the report and runs the
checks. :func:`check` runs the same checks on a solution from anywhere, with the parameters of
the instance and the options only: a solution that records other parameters fails.

>>> from dfopt.instance import load
>>> inst = load("instances/fusion/greedy-trap.json")
>>> sol = solve(inst, make_options(inst))
>>> sol.status.value, sol.objective, sol.decision.groups
('optimal', 64.0, (('a',), ('b', 'c'), ('d',)))
>>> [c.name for c in check(inst, sol, make_options(inst)) if not c.ok]
[]
"""

from __future__ import annotations

import copy
import logging
import math
import time
from typing import TYPE_CHECKING, Any

from dfopt import limits
from dfopt.errors import InstanceError
from dfopt.models.base import Problem
from dfopt.models.registry import get_problem
from dfopt.progress import phase
from dfopt.results import Termination
from dfopt.solution import Check, Solution, lookup

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.options import CommonOptions

log = logging.getLogger(__name__)

#: Relative tolerance under which an objective equals its bound (then it is proven optimal).
OPTIMALITY_TOL = 1e-9


def make_options(instance: Instance, overrides: dict | None = None, origin: str = "argument",
                 problem: str | None = None) -> Any:
    """The Options of the instance's problem (or ``problem``): its ``options`` merged with overrides."""
    p = get_problem(problem or instance.problem)
    return p.make_options(instance.options.get(p.name, {}), overrides, origin)


def solve(instance: Instance, options: CommonOptions) -> Solution:
    """Solve ``instance`` with ``options`` (from :func:`make_options`); the solution is checked.

    ``options.time_limit`` bounds the whole solve (:mod:`dfopt.limits`): the problem data and the
    formulation get what is left of it after a reserve for the checks, the report and writing."""
    with limits.budget(options.time_limit) as budget:
        return _solve(instance, options, budget)


def _solve(instance: Instance, options: CommonOptions, budget: limits.Budget) -> Solution:
    problem = get_problem(instance.problem)
    formulation = problem.formulation(options.formulation, _where(options, "formulation"))
    _check_solver(problem, formulation, options)
    require_parts(problem, instance)
    _check_budget(instance, options)
    t0 = time.perf_counter()
    left = budget.remaining(t0) - limits.reserve(options.time_limit)
    inner = options if left >= options.time_limit else _with_time_limit(options, max(limits.MIN_SOLVE_S, left))
    with phase(f"{problem.name} {formulation.name}", inner.time_limit,
               numbers=getattr(formulation, "numbers", True)) as ph:
        ph.update(detail="preparing the problem data")
        data = problem.prepare(instance, inner)
        t1 = time.perf_counter()
        left = budget.remaining(t1) - limits.reserve(options.time_limit)      # what the problem data left
        if left < inner.time_limit:
            inner = _with_time_limit(options, max(limits.MIN_SOLVE_S, left))
        ph.update(detail="solving")
        log.info("%s: %s formulation %s", instance.name, problem.name, formulation.name)
        outcome = formulation.solve(data, inner)
    t2 = time.perf_counter()
    objective = problem.objective(data, outcome.decision)
    bound = _bound(problem, data, outcome, objective)
    status = _status(outcome.termination, objective, bound)
    if status is Termination.OPTIMAL and bound is None and objective is not None:
        bound = float(objective)         # the formulation's own proof, with no separate bound
    report = problem.report(data, outcome, options)
    sections = overlay_sections(report if problem.info.sections else {problem.name: report},
                                outcome.decision.sections())
    solution = Solution(
        instance=instance.name, problem=problem.name, status=status, objective=objective, bound=bound,
        formulation=formulation.name, solver=outcome.solver, seed=options.seed, decision=outcome.decision,
        sections=sections, limit_reached=outcome.limit_reached,
        stats={"time_limit_s": options.time_limit, "time_load_s": t0 - budget.start,
               "time_solve_budget_s": inner.time_limit, "time_prepare_s": t1 - t0, "time_solve_s": t2 - t1,
               **outcome.stats})
    t3 = time.perf_counter()
    solution.checks = run_checks(problem, instance, options, solution, recount=False)  # the report is fresh
    solution.stats["time_check_s"] = time.perf_counter() - t3
    solution.wall_time_s = time.perf_counter() - t0
    return solution


def _with_time_limit(options: CommonOptions, seconds: float) -> Any:
    """A copy of validated ``options`` with another ``time_limit`` (not validated again: a
    ``dataclasses.replace`` would re-run the checks with another origin in their messages)."""
    inner = copy.copy(options)
    object.__setattr__(inner, "time_limit", seconds)
    return inner


def prepare(instance: Instance, options: CommonOptions) -> Any:
    """The problem data ``solve`` would build (parts, budget, then the problem's ``prepare``), so
    that ``dfopt validate`` refuses what ``solve`` would refuse before it solves."""
    problem = get_problem(instance.problem)
    problem.formulation(options.formulation, _where(options, "formulation"))
    require_parts(problem, instance)
    _check_budget(instance, options)
    return problem.prepare(instance, options)


def overlay_sections(report: dict, decided: dict) -> dict:
    """Each section's report with the decision's keys laid over it (the solution's JSON view)."""
    from dfopt.solution import overlay

    return {name: overlay(report.get(name, {}), decided.get(name, {})) for name in {**report, **decided}}


def check(instance: Instance, solution: Solution, options: CommonOptions) -> list[Check]:
    """Every check of ``solution``'s problem, with the parameters of ``instance`` and ``options``."""
    if solution.problem != instance.problem:
        raise InstanceError(f"the solution is for a {solution.problem} instance, not {instance.problem}",
                            pointer="/problem")
    problem = get_problem(solution.problem)
    require_parts(problem, instance)
    return run_checks(problem, instance, options, solution)


_PART_TEXT = {"graph": "a graph (kernels and streams)", "operators": "an operator graph",
              "program": "a program (statements with isl domains)", "platform": "a platform",
              "sparse": "a sparse statement (expression and tensors)"}


def require_parts(problem: Problem, instance: Instance) -> None:
    """The instance has every part the problem needs, and an acyclic graph where it must."""
    for part in sorted(problem.info.needs):
        if getattr(instance, part) is None:
            raise InstanceError(f"the {problem.name} problem needs {_PART_TEXT[part]}", pointer=f"/{part}")
    if problem.info.dag and instance.graph is not None:
        from dfopt.ir.analyses import find_cycle

        cycle = find_cycle(instance.graph)
        if cycle is not None:
            s = instance.graph.streams
            path = " -> ".join([s[cycle[0]].src] + [s[e].dst for e in cycle])
            raise InstanceError(f"{problem.name} needs an acyclic graph, found the cycle {path} "
                                f"(streams {', '.join(cycle)})", pointer="/graph/streams")


def run_checks(problem: Problem, instance: Instance, options: CommonOptions, solution: Solution,
               recount: bool = True) -> list[Check]:
    """The problem's own checks, then the solution record's (status, bound, recorded parameters)
    and, where the problem recounts its report and ``recount`` asks for it, the report's (``solve``
    skips it: its report was just computed from the decision by the same function)."""
    out = list(problem.checks(instance, options, solution)) + [record_check(problem, instance, options, solution)]
    if recount and problem.recount and all(c.ok for c in out):     # a report is recomputed from a decision that holds
        out.append(report_check(problem, instance, options, solution))
    return out


def report_check(problem: Problem, instance: Instance, options: CommonOptions, solution: Solution) -> Check:
    """Every key of the report recomputed from the instance and the decision (but the problem's
    ``process_keys``) has the same value in the solution's section (numbers within a relative
    1e-9)."""
    from dfopt.models.base import Outcome

    try:
        fresh = problem.report(problem.prepare(instance, options), Outcome(solution.decision), options)
        fresh = overlay_sections({problem.name: fresh}, solution.decision.sections())[problem.name]
    except InstanceError as err:
        return Check(f"{problem.name}-report", False, [f"the report cannot be recomputed: {err}"])
    root = solution.sections.get(problem.name, {})
    bad = []
    for key in sorted(set(fresh) - problem.process_keys):
        if key not in root:
            bad.append(f"{key}: the solution does not give it")
        elif not same_value(root[key], fresh[key]):
            bad.append(f"{key}: the solution says {_short(root[key])}, the decision gives {_short(fresh[key])}")
    return Check(f"{problem.name}-report", not bad, bad)


def same_value(a, b) -> bool:
    """JSON-equal, tuples as lists, numbers within a relative 1e-9."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (type(a) is type(b) and a == b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        a, b = {str(k): v for k, v in a.items()}, {str(k): v for k, v in b.items()}
        return set(a) == set(b) and all(same_value(a[k], b[k]) for k in a)
    return a == b


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def record_check(problem: Problem, instance: Instance, options: CommonOptions, solution: Solution) -> Check:
    """The solution's record agrees with itself and with the parameters it was checked under:
    a finite objective, a bound not above it, ``optimal`` only when the bound reaches it, a
    known status, and every recorded parameter equal to what the instance and options give."""
    bad = []
    obj, bound = solution.objective, solution.bound
    for name, value in (("objective", obj), ("bound", bound)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            bad.append(f"{name} {value!r} is not a finite number")
    if not bad and obj is not None and bound is not None and bound > obj + OPTIMALITY_TOL * max(1.0, abs(obj)):
        bad.append(f"bound {bound} is above the objective {obj}")
    if solution.status not in (Termination.OPTIMAL, Termination.FEASIBLE, Termination.TIME_LIMIT):
        bad.append(f"status {solution.status.value!r}: a solution with a decision is optimal, feasible or "
                   "time_limit")
    if solution.status is Termination.OPTIMAL and not bad and (
            obj is None or bound is None or obj > bound + OPTIMALITY_TOL * max(1.0, abs(obj))):
        bad.append(f"status optimal, but the bound {bound} does not reach the objective {obj}")
    root = solution.sections if problem.info.sections else solution.sections.get(problem.name, {})
    for key, expected in problem.recorded.items():
        recorded = lookup(root, key, _ABSENT)
        want = expected(instance, options)
        if recorded is _ABSENT:
            bad.append(f"{key}: the solution does not record it (the instance and options give {want!r})")
        elif _normal(recorded) != _normal(want):
            bad.append(f"{key}: the solution records {recorded!r}, the instance and options give {want!r}")
    return Check(f"{problem.name}-record", not bad, bad)


_ABSENT = object()


def _normal(value):
    """Lists and tuples alike, numbers by value, for comparing recorded parameters."""
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _status(termination: Termination, objective, bound) -> Termination:
    """Optimal when the bound reaches the recomputed objective; a formulation's claim of
    optimality that its bound does not back (a model that approximates the objective) is only
    feasible."""
    if objective is None or bound is None:
        return termination
    if objective <= bound + OPTIMALITY_TOL * max(1.0, abs(objective)):
        return Termination.OPTIMAL
    return Termination.FEASIBLE if termination is Termination.OPTIMAL else termination


def _bound(problem: Problem, data, outcome, objective) -> float | None:
    bounds = [b for b in (outcome.bound, problem.lower_bound(data) if problem.lower_bound else None)
              if b is not None and math.isfinite(b)]
    if not bounds:
        return None
    bound = float(max(bounds))
    return min(bound, float(objective)) if objective is not None else bound


def _where(options, name: str) -> str:
    from dfopt.models.options import where

    return where(options, name)


def _check_solver(problem: Problem, formulation, options) -> None:
    """``solver`` must be one the formulation takes, and installed (MIP backends of
    :mod:`dfopt.ilp`; LP solvers of :mod:`dfopt.lp` for the LP formulations); else a
    :class:`SolverUnavailableError` (exit 5) that lists the installed ones it takes."""
    from dfopt.errors import SolverUnavailableError

    if options.solver is None:
        return
    valid = tuple(formulation.solvers)
    installed = tuple(s for s in valid if _installed(s))
    if options.solver not in installed:
        raise SolverUnavailableError(options.solver, installed or ("none",),
                                     kind=f"{_where(options, 'solver')}: solver",
                                     context=f" for the {problem.name} formulation {formulation.name!r}")


def _installed(name: str) -> bool:
    from dfopt.ilp import available_backends, backend_names

    if name in backend_names():
        return name in available_backends()
    from dfopt.lp import available_lp_solvers
    from dfopt.lp.cvx import SOLVERS

    if name in SOLVERS:
        return name in available_lp_solvers()
    return True        # a solver the formulation brings itself (isl)


def _check_budget(instance, options) -> None:
    from dfopt.instance.budget import check_budget

    check_budget(instance, options.max_memory, options=options)
