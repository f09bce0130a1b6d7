"""MIP and LP backends through OR-Tools ``pywraplp``: SCIP, CBC (MIP) and GLOP (LP only).

Status map (``pywraplp.Solver`` result -> Termination / SolutionStatus):

=============  ====================================================================
OPTIMAL        optimal / optimal (relative MIP gap 0 unless ``params`` relax it)
FEASIBLE       time_limit / feasible when the time limit was hit, else feasible / feasible
INFEASIBLE     infeasible / none (GLOP also says this for unbounded LPs: re-solved with a
               zero objective; a feasible re-solve means unbounded)
UNBOUNDED      unbounded / none
NOT_SOLVED     time_limit / none when the time limit was hit, else error / none
ABNORMAL,      error / none
MODEL_INVALID
=============  ====================================================================

>>> from dfopt.ilp import LinearModel, solve
>>> m = LinearModel()
>>> x, y = m.int_var(0, 9, "x"), m.int_var(0, 9, "y")
>>> _ = m.add(3 * x + 5 * y == 22)
>>> m.minimize(x + y)
>>> solve(m, "scip").objective
6.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dfopt.errors import InstanceError, SolverUnavailableError
from dfopt.ilp.backends import Backend, Capabilities, RawResult, SolveOptions, importable, limit_reached
from dfopt.ilp.model import ModelData
from dfopt.results import SolutionStatus, Termination

if TYPE_CHECKING:
    from ortools.linear_solver import pywraplp

__all__ = ["PywraplpBackend", "ScipBackend", "CbcBackend", "GlopBackend", "build_pywraplp"]

_CODES = {0: "OPTIMAL", 1: "FEASIBLE", 2: "INFEASIBLE", 3: "UNBOUNDED", 4: "ABNORMAL",
          5: "MODEL_INVALID", 6: "NOT_SOLVED"}


class PywraplpBackend(Backend):
    """One ``pywraplp`` solver id behind the neutral model."""

    solver_id = ""               # pywraplp.Solver.CreateSolver name
    problem_type = ""            # pywraplp.Solver problem-type constant name
    is_mip = True
    ambiguous_infeasible = False  # the solver may say INFEASIBLE for an unbounded LP

    def is_available(self) -> bool:
        if not importable("ortools"):
            return False
        from ortools.linear_solver import pywraplp

        return bool(pywraplp.Solver.SupportsProblemType(getattr(pywraplp.Solver, self.problem_type)))

    def solve(self, data: ModelData, options: SolveOptions) -> RawResult:
        solver, xs = build_pywraplp(data, self.solver_id)
        self._configure(solver, data, options)
        if self.capabilities.hints and len(data.hint_idx):
            solver.SetHint([xs[i] for i in data.hint_idx.tolist()], data.hint_val.tolist())
        code = solver.Solve(self._parameters())
        elapsed = solver.wall_time() / 1000.0
        name = _CODES.get(code, f"code {code}")
        if name == "INFEASIBLE" and self.ambiguous_infeasible and data.obj.any():
            name = _recheck_infeasible(solver)
        return self._collect(solver, xs, name, elapsed, options)

    def _parameters(self):
        from ortools.linear_solver import pywraplp

        params = pywraplp.MPSolverParameters()
        if self.is_mip:
            params.SetDoubleParam(params.RELATIVE_MIP_GAP, 0.0)
        return params

    def _configure(self, solver, data: ModelData, options: SolveOptions) -> None:
        solver.SetTimeLimit(max(1, int(options.time_limit * 1000)))
        if options.workers is not None:
            solver.SetNumThreads(int(options.workers))
        if options.log:
            solver.EnableOutput()
        text = self._native_params(options)
        if text and not solver.SetSolverSpecificParametersAsString(text):
            raise InstanceError(f"{self.name} rejected the parameters {text!r}")

    def _native_params(self, options: SolveOptions) -> str:
        return ""

    def _collect(self, solver, xs, name: str, elapsed: float, options: SolveOptions) -> RawResult:
        term, sol = _map_status(name, limit_reached(elapsed, options.time_limit))
        x = objective = bound = None
        if sol is not SolutionStatus.NONE:
            x = np.fromiter((v.solution_value() for v in xs), dtype=np.float64, count=len(xs))
            objective = float(solver.Objective().Value())
            bound = float(solver.Objective().BestBound()) if self.is_mip else (
                objective if term is Termination.OPTIMAL else None)
            if bound is not None and not np.isfinite(bound):
                bound = None
        stats = {"status": name, "solve_time_s": elapsed, "iterations": int(solver.iterations())}
        if self.is_mip:
            stats["nodes"] = int(solver.nodes())
        message = "" if term is not Termination.ERROR else f"{self.name} returned {name}"
        return RawResult(term, sol, objective, bound, x, message, stats)


def _map_status(name: str, limit_hit: bool) -> tuple[Termination, SolutionStatus]:
    if name == "OPTIMAL":
        return Termination.OPTIMAL, SolutionStatus.OPTIMAL
    if name == "FEASIBLE":
        return (Termination.TIME_LIMIT if limit_hit else Termination.FEASIBLE), SolutionStatus.FEASIBLE
    if name == "INFEASIBLE":
        return Termination.INFEASIBLE, SolutionStatus.NONE
    if name == "UNBOUNDED":
        return Termination.UNBOUNDED, SolutionStatus.NONE
    if name == "NOT_SOLVED" and limit_hit:
        return Termination.TIME_LIMIT, SolutionStatus.NONE
    return Termination.ERROR, SolutionStatus.NONE


def _recheck_infeasible(solver) -> str:
    """Re-solve with no objective: feasible means the LP was unbounded, not infeasible."""
    solver.Objective().Clear()
    return "UNBOUNDED" if solver.Solve() == 0 else "INFEASIBLE"


def build_pywraplp(data: ModelData, solver_id: str) -> tuple[pywraplp.Solver, list[pywraplp.Variable]]:
    """A ``pywraplp.Solver`` holding the model; returns ``(solver, variables)``."""
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver(solver_id)
    if solver is None:
        raise SolverUnavailableError(solver_id.lower(), (), kind="pywraplp solver")
    inf = solver.infinity()
    lbs = np.maximum(data.var_lb, -inf).tolist()
    ubs = np.minimum(data.var_ub, inf).tolist()
    xs = [(solver.IntVar if is_int else solver.NumVar)(lo, hi, nm)
          for lo, hi, is_int, nm in zip(lbs, ubs, data.integer.tolist(), data.var_names)]
    A = data.A
    indptr, cols, vals = A.indptr.tolist(), A.indices.tolist(), A.data.tolist()
    row_lb = np.maximum(data.row_lb, -inf).tolist()
    row_ub = np.minimum(data.row_ub, inf).tolist()
    for r in range(data.num_rows):
        ct = solver.RowConstraint(row_lb[r], row_ub[r], data.row_names[r])
        for k in range(indptr[r], indptr[r + 1]):
            ct.SetCoefficient(xs[cols[k]], vals[k])
    objective = solver.Objective()
    for j in np.flatnonzero(data.obj).tolist():
        objective.SetCoefficient(xs[j], float(data.obj[j]))
    objective.SetOffset(float(data.obj_offset))
    if data.maximize:
        objective.SetMaximization()
    else:
        objective.SetMinimization()
    return solver, xs


class ScipBackend(PywraplpBackend):
    """SCIP through pywraplp (seeded by ``randomization/randomseedshift``)."""

    name = "scip"
    display = "SCIP"
    solver_id = "SCIP"
    problem_type = "SCIP_MIXED_INTEGER_PROGRAMMING"
    capabilities = Capabilities(
        integer_vars=True, continuous_vars=True, infinite_bounds=True,
        fractional_coefficients=True, hints=True, incumbents=False,
        uses_seed=True, deterministic_seed=True, multithreaded=False,
        export_formats=("mps", "lp"),
    )

    def _native_params(self, options: SolveOptions) -> str:
        lines = [f"randomization/randomseedshift = {int(options.seed) % 2**31}"]
        lines += [f"{k} = {_scip_value(v)}" for k, v in options.params.items()]
        return "\n".join(lines) + "\n"


def _scip_value(v) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    return str(v)


class CbcBackend(PywraplpBackend):
    """COIN-OR CBC through pywraplp (single thread; CBC takes no seed here)."""

    name = "cbc"
    display = "CBC"
    solver_id = "CBC"
    problem_type = "CBC_MIXED_INTEGER_PROGRAMMING"
    capabilities = Capabilities(
        integer_vars=True, continuous_vars=True, infinite_bounds=True,
        fractional_coefficients=True, hints=False, incumbents=False,
        uses_seed=False, deterministic_seed=True, multithreaded=False,
        export_formats=("mps", "lp"),
    )

    def _native_params(self, options: SolveOptions) -> str:
        if options.params:
            raise InstanceError("the cbc backend takes no native params through pywraplp")
        return ""


class GlopBackend(PywraplpBackend):
    """GLOP (OR-Tools primal/dual simplex), continuous LPs only."""

    name = "glop"
    display = "GLOP"
    solver_id = "GLOP"
    problem_type = "GLOP_LINEAR_PROGRAMMING"
    is_mip = False
    ambiguous_infeasible = True
    capabilities = Capabilities(
        integer_vars=False, continuous_vars=True, infinite_bounds=True,
        fractional_coefficients=True, hints=False, incumbents=False,
        uses_seed=True, deterministic_seed=True, multithreaded=False,
        export_formats=("mps", "lp"),
    )

    def _native_params(self, options: SolveOptions) -> str:
        lines = [f"random_seed: {int(options.seed) % 2**31}"]
        lines += [f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in options.params.items()]
        return "\n".join(lines)
