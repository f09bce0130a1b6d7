"""OR-Tools CP-SAT backend, and :func:`solve_cp_model` for native ``CpModel`` objects.

CP-SAT takes integer variables with finite bounds and integer coefficients. Rows and the
objective with fractional coefficients are multiplied by the least common denominator of their
coefficients when every coefficient is exactly a ratio of integers (``0.5``, ``0.25``, ``1/3`` as a
float); anything else raises :class:`~dfopt.errors.InstanceError`. Row bounds are then rounded
inwards, which is exact because the scaled row takes integer values only.

Status map (``CpSolverStatus`` -> Termination / SolutionStatus):

=============  =================================================================
OPTIMAL        optimal / optimal (also: a model without objective found a solution)
FEASIBLE       time_limit / feasible when a time limit was hit, else feasible / feasible
INFEASIBLE     infeasible / none
UNKNOWN        time_limit / none when a time limit was hit, else error / none
MODEL_INVALID  error / none (message: ``CpModel.validate()``)
=============  =================================================================

:func:`map_cpsat_status` is the one place that reads CP-SAT statuses: every native model in
dfopt is built with :func:`new_cp_model` (a :class:`LeanCpModel`) and solved by
:func:`solve_cp_model`, which configures the solver with :func:`configure_solver`.

Determinism: with ``deterministic=True`` one worker runs (or, with ``workers > 1``,
``interleave_search``), so one seed gives one result; pass
``params={"max_deterministic_time": t}`` to make the budget itself reproducible.

Progress: every solve runs in a :func:`dfopt.progress.phase`; when an active reporter listens
(or incumbents are recorded anyway) a solution callback reports each incumbent and the best
bound, and a best-bound callback the bound between solutions. Without a listener no callback is
attached (a callback slows CP-SAT a little).

>>> m = new_cp_model("demo")
>>> x = m.new_int_var(0, 10, "x")
>>> _ = m.add(3 * x <= 20)
>>> m.maximize(x)
>>> result, solver = solve_cp_model(m, time_limit=5, record_incumbents=True)
>>> result.termination.value, result.objective, solver.value(x)
('optimal', 6.0, 6)
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dfopt import progress
from dfopt.errors import InstanceError
from dfopt.ilp.backends import (
    Backend,
    Capabilities,
    ModelSolveResult,
    RawResult,
    SolveOptions,
    importable,
    limit_reached,
)
from dfopt.ilp.model import ModelData
from dfopt.results import SolutionStatus, Termination

if TYPE_CHECKING:
    from ortools.sat.python.cp_model import CpModel, CpSolver, IntVar

logger = logging.getLogger(__name__)

__all__ = ["CpSatBackend", "solve_cp_model", "build_cp_model", "map_cpsat_status",
           "configure_solver", "new_cp_model", "lean_model_class",
           "rational_multiplier"]

_MAX_DENOMINATOR = 10**6   # per coefficient: beyond this any float looks "rational"
_MAX_MULTIPLIER = 10**9    # per row, the lcm of the denominators
_MAX_EXACT = 2.0**53


class CpSatBackend(Backend):
    """CP-SAT on the neutral model (integer variables, exact integer scaling of the data)."""

    name = "cpsat"
    display = "CP-SAT"
    capabilities = Capabilities(
        integer_vars=True, continuous_vars=False, infinite_bounds=False,
        fractional_coefficients=False, hints=True, incumbents=True,
        uses_seed=True, deterministic_seed=True, multithreaded=True,
        export_formats=("cpsat-proto",),
    )

    def is_available(self) -> bool:
        return importable("ortools")

    def solve(self, data: ModelData, options: SolveOptions) -> RawResult:
        t0 = time.perf_counter()
        model, _, obj_mult = build_cp_model(data)
        options = options.spent(time.perf_counter() - t0)     # building the CP-SAT model counts too
        outcome = _run(model, options, obj_mult, data.obj_offset, data.has_objective, None,
                       progress.current_phase())
        x = outcome.pop("x")
        return RawResult(outcome["termination"], outcome["status"], outcome["objective"],
                         outcome["bound"], x, outcome["message"], outcome["stats"])


# ------------------------------------------------------------------------ building
_LEAN = None


def lean_model_class() -> type:
    """:class:`LeanCpModel`: a ``CpModel`` without the deprecated camelCase aliases that
    OR-Tools 9.15 attaches to every new model (about 5 ms per model: most of the time of a small
    model). Use its snake_case methods only (``new_bool_var``, not ``NewBoolVar``). The class is
    made on first use, so importing :mod:`dfopt.ilp` imports no solver; ``LeanCpModel`` (a lazy
    attribute of this module and of :mod:`dfopt.ilp`) is the same class.

    >>> from ortools.sat.python import cp_model
    >>> issubclass(lean_model_class(), cp_model.CpModel), hasattr(new_cp_model("m"), "NewBoolVar")
    (True, False)
    """
    global _LEAN
    if _LEAN is None:
        from ortools.sat.python import cp_model

        class LeanCpModel(cp_model.CpModel):
            """A ``CpModel`` without the per-model camelCase aliases (snake_case methods only)."""

            def _add_pre_pep8_methods(self) -> None:
                return None

        LeanCpModel.__module__, LeanCpModel.__qualname__ = __name__, "LeanCpModel"
        _LEAN = LeanCpModel
    return _LEAN


def add_in_values(model: CpModel, expr, values) -> object:
    """Constrain the linear expression ``expr`` to one of the integers ``values`` (a CP-SAT
    domain), e.g. a count that is 0 or a power of two.

    >>> m = new_cp_model("d")
    >>> x = m.new_int_var(0, 9, "x")
    >>> _ = add_in_values(m, x, [0, 1, 2, 4, 8])
    >>> _ = m.add(x >= 5)
    >>> result, _ = solve_cp_model(m, time_limit=5)
    >>> result.values["x"]
    8
    """
    from ortools.util.python.sorted_interval_list import Domain

    return model.add_linear_expression_in_domain(expr, Domain.from_values(sorted({int(v) for v in values})))


def new_cp_model(name: str = "") -> CpModel:
    """A new, empty :class:`LeanCpModel` called ``name`` (for native models: no-overlap,
    element, reified rows, assumptions, ...); solve it with :func:`solve_cp_model`.

    >>> m = new_cp_model("pair")
    >>> a, b = m.new_bool_var("a"), m.new_bool_var("b")
    >>> _ = m.add_bool_or([a, b])
    >>> m.name, len(m.proto.variables)
    ('pair', 2)
    """
    model = lean_model_class()()
    model.name = str(name)
    return model


def __getattr__(name: str) -> type:
    if name == "LeanCpModel":
        return lean_model_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def weighted_sum(variables: list, coefficients: list):
    """The CP-SAT linear expression ``sum(c * v)`` (for native models built with :func:`new_cp_model`)."""
    from ortools.sat.python import cp_model

    return cp_model.LinearExpr.weighted_sum(variables, coefficients)


def build_cp_model(data: ModelData) -> tuple[CpModel, list[IntVar], int]:
    """A ``CpModel`` equal to the arrays; returns ``(model, vars, objective_multiplier)``.

    Raises :class:`InstanceError` for continuous variables, infinite bounds, or data that does
    not scale exactly to integers.
    """
    _require_integer_vars(data)
    model = new_cp_model(data.name)
    lbs, ubs = data.var_lb.astype(np.int64).tolist(), data.var_ub.astype(np.int64).tolist()
    xs = [model.new_int_var(lo, hi, nm) for lo, hi, nm in zip(lbs, ubs, data.var_names)]
    _add_rows(model, xs, data)
    mult = _add_objective(model, xs, data)
    _add_hints(model, xs, data)
    return model, xs, mult


def _require_integer_vars(data: ModelData) -> None:
    if not data.integer.all():
        i = int(np.flatnonzero(~data.integer)[0])
        raise InstanceError(f"CP-SAT needs integer variables, but {data.var_names[i]!r} is continuous; "
                            "declare it integer or use backend 'highs' or 'scip'")
    bad = ~(np.isfinite(data.var_lb) & np.isfinite(data.var_ub))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InstanceError(f"CP-SAT needs finite bounds, but {data.var_names[i]!r} has "
                            f"[{data.var_lb[i]:g}, {data.var_ub[i]:g}]; "
                            "bound it or use backend 'highs' or 'scip'")


def rational_multiplier(values: np.ndarray) -> int | None:
    """Least integer ``k`` with ``k * values`` integral, when every value is (as a float) exactly
    a ratio of integers with a denominator up to 10^6, and ``k * |values|`` stays exact; else None.

    >>> rational_multiplier(np.array([0.5, 0.25, 3.0])), rational_multiplier(np.array([np.pi]))
    (4, None)
    """
    frac = values[values != np.round(values)]
    mult = 1
    for v in np.unique(frac).tolist():
        fr = Fraction(v).limit_denominator(_MAX_DENOMINATOR)
        if float(fr) != v:
            return None
        mult = math.lcm(mult, fr.denominator)
        if mult > _MAX_MULTIPLIER:
            return None
    if len(values) and float(np.abs(values).max()) * mult >= _MAX_EXACT:
        return None
    return mult


def _row_multipliers(data: ModelData) -> np.ndarray:
    A = data.A
    mult = np.ones(data.num_rows, dtype=np.int64)
    frac = A.data != np.round(A.data)
    if not frac.any():
        return mult
    rows = np.repeat(np.arange(data.num_rows), np.diff(A.indptr))
    for r in np.unique(rows[frac]).tolist():
        k = rational_multiplier(A.data[A.indptr[r]:A.indptr[r + 1]])
        if k is None:
            coeffs = A.data[A.indptr[r]:A.indptr[r + 1]].tolist()
            raise InstanceError(
                f"CP-SAT needs integer data: row {data.row_names[r]!r} has coefficients {coeffs[:6]} "
                "that do not scale exactly to integers; round or scale the row, "
                "or use backend 'highs' or 'scip'")
        mult[r] = k
    return mult


def _add_rows(model, xs, data: ModelData) -> None:
    from ortools.sat.python import cp_model

    A = data.A
    mult = _row_multipliers(data)
    coeffs = np.round(A.data * np.repeat(mult, np.diff(A.indptr))).astype(np.int64).tolist()
    lo = _round_bounds(np.ceil(data.row_lb * mult - 1e-9), cp_model.INT_MIN)
    hi = _round_bounds(np.floor(data.row_ub * mult + 1e-9), cp_model.INT_MAX)
    indptr, cols = A.indptr.tolist(), A.indices.tolist()
    weighted_sum = cp_model.LinearExpr.weighted_sum
    for r in range(data.num_rows):
        if lo[r] == cp_model.INT_MIN and hi[r] == cp_model.INT_MAX:
            continue
        if lo[r] > hi[r]:
            model.add_bool_or([])  # an empty row range: the model is infeasible
            continue
        s, e = indptr[r], indptr[r + 1]
        model.add_linear_constraint(weighted_sum([xs[j] for j in cols[s:e]], coeffs[s:e]), lo[r], hi[r])


def _round_bounds(values: np.ndarray, infinite: int) -> list[int]:
    finite = np.isfinite(values)
    if finite.any() and np.abs(values[finite]).max() >= _MAX_EXACT:
        raise InstanceError("CP-SAT needs row bounds below 2^53 in magnitude after integer scaling")
    out = np.where(finite, values, 0).astype(np.int64)
    return [int(v) if f else infinite for v, f in zip(out.tolist(), finite.tolist())]


def _add_objective(model, xs, data: ModelData) -> int:
    from ortools.sat.python import cp_model

    if not data.has_objective:
        return 1
    nz = np.flatnonzero(data.obj)
    mult = rational_multiplier(data.obj[nz])
    if mult is None:
        raise InstanceError("CP-SAT needs integer data: the objective has coefficients that do not "
                            "scale exactly to integers; round them or use backend 'highs' or 'scip'")
    coeffs = np.round(data.obj[nz] * mult).astype(np.int64).tolist()
    expr = cp_model.LinearExpr.weighted_sum([xs[j] for j in nz.tolist()], coeffs)
    (model.maximize if data.maximize else model.minimize)(expr)
    return mult


def _add_hints(model, xs, data: ModelData) -> None:
    for i, v in zip(data.hint_idx.tolist(), data.hint_val.tolist()):
        v = min(max(round(v), data.var_lb[i]), data.var_ub[i])
        model.add_hint(xs[i], int(v))


# ------------------------------------------------------------------------- solving
def map_cpsat_status(status: str | int, limit_hit: bool) -> tuple[Termination, SolutionStatus]:
    """Map a ``CpSolverStatus`` (the value ``CpSolver.solve`` returns, or its name) into the two
    dfopt enums (see the module table); ``limit_hit``: the time limit was reached.

    >>> [t.value for t in map_cpsat_status("FEASIBLE", limit_hit=True)]
    ['time_limit', 'feasible']
    >>> from ortools.sat.python import cp_model
    >>> map_cpsat_status(cp_model.INFEASIBLE, False)[0].value
    'infeasible'
    """
    status_name = status if isinstance(status, str) else _status_name(status)
    if status_name == "OPTIMAL":
        return Termination.OPTIMAL, SolutionStatus.OPTIMAL
    if status_name == "FEASIBLE":
        return (Termination.TIME_LIMIT if limit_hit else Termination.FEASIBLE), SolutionStatus.FEASIBLE
    if status_name == "INFEASIBLE":
        return Termination.INFEASIBLE, SolutionStatus.NONE
    if status_name == "UNKNOWN":
        return (Termination.TIME_LIMIT if limit_hit else Termination.ERROR), SolutionStatus.NONE
    return Termination.ERROR, SolutionStatus.NONE


def _status_name(status: int) -> str:
    from ortools.sat import cp_model_pb2

    try:
        return cp_model_pb2.CpSolverStatus.Name(int(status))
    except ValueError:
        return f"code {int(status)}"


def configure_solver(options: SolveOptions) -> CpSolver:
    """A ``CpSolver`` with the time limit, seed, worker and logging settings of ``options``
    (``params`` set CP-SAT parameter fields by name).

    >>> from dfopt.ilp import SolveOptions
    >>> p = configure_solver(SolveOptions(time_limit=3, seed=7, workers=4)).parameters
    >>> p.max_time_in_seconds, p.random_seed, p.num_workers, p.interleave_search
    (3.0, 7, 4, True)
    """
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_time_in_seconds = float(options.time_limit)
    p.random_seed = int(options.seed) % 2**31
    if options.deterministic:
        p.num_workers = 1 if options.workers in (None, 1) else int(options.workers)
        p.interleave_search = p.num_workers > 1
    else:
        p.num_workers = int(options.workers or 0)
    p.log_search_progress = bool(options.log)
    if options.log:
        p.log_to_stdout = False
        solver.log_callback = lambda line: logger.info("%s", line)
    for key, value in options.params.items():
        if not hasattr(p, key) or key.startswith("_"):
            raise InstanceError(f"unknown CP-SAT parameter {key!r} (see sat_parameters.proto)")
        setattr(p, key, value)
    return solver


def _make_recorder(scale: float, offset: float, user_callback, ph: progress.Phase | None,
                   has_objective: bool):
    from ortools.sat.python import cp_model

    report = ph if ph is not None and ph.live else None

    class _Recorder(cp_model.CpSolverSolutionCallback):
        def __init__(self) -> None:
            super().__init__()
            self.incumbents: list[tuple[float, float]] = []

        def on_solution_callback(self) -> None:
            value = self.objective_value / scale + offset
            self.incumbents.append((float(self.wall_time), value))
            if report is not None:
                bound = self.best_objective_bound / scale + offset if has_objective else None
                report.update(incumbent=value if has_objective else None, bound=bound,
                          detail=_count(len(self.incumbents), "solution"))
            if user_callback is not None:
                user_callback(self)

    return _Recorder()


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _run(model, options: SolveOptions, scale: float, offset: float, has_objective: bool,
         user_callback, ph: progress.Phase | None = None) -> dict:
    """Solve a ``CpModel``; returns the mapped outcome, the solution vector and the solver.
    With a live progress phase ``ph``, incumbents and bounds are reported to it."""
    solver = configure_solver(options)
    recorder = None
    live = ph is not None and ph.live
    if options.record_incumbents or user_callback is not None or live:
        recorder = _make_recorder(scale, offset, user_callback, ph, has_objective)
    if ph is not None and live and has_objective:
        solver.best_bound_callback = lambda b: ph.update(bound=b / scale + offset)
    status = solver.solve(model, recorder)
    name = solver.status_name(status)
    term, sol = map_cpsat_status(name, _limit_hit(solver, options))
    message = ""
    if name == "MODEL_INVALID":
        message = f"CP-SAT model invalid: {model.validate()}"
    elif name == "UNKNOWN":
        message = "CP-SAT stopped before it found a solution or a proof"
    objective = bound = None
    x = None
    if sol is not SolutionStatus.NONE:
        x = np.asarray(list(solver.response_proto.solution), dtype=np.float64)
        objective = solver.objective_value / scale + offset if has_objective else offset
    if has_objective and term not in (Termination.INFEASIBLE, Termination.ERROR):
        b = solver.best_objective_bound / scale + offset
        bound = b if math.isfinite(b) else None
    elif not has_objective and sol is not SolutionStatus.NONE:
        bound = offset
    stats = {"status": name, "conflicts": solver.num_conflicts, "branches": solver.num_branches,
             "deterministic_time": solver.deterministic_time, "solver_wall_time_s": solver.wall_time,
             "num_workers": solver.parameters.num_workers}
    if recorder is not None and (options.record_incumbents or user_callback is not None):
        stats["incumbents"] = recorder.incumbents
    if ph is not None and bound is not None:
        ph.update(incumbent=objective, bound=bound)
    return {"termination": term, "status": sol, "objective": objective, "bound": bound, "x": x,
            "message": message, "stats": stats, "solver": solver}


def _limit_hit(solver, options: SolveOptions) -> bool:
    det_limit = options.params.get("max_deterministic_time")
    if det_limit is not None and solver.deterministic_time >= 0.99 * float(det_limit):
        return True
    return limit_reached(solver.wall_time, options.time_limit)


def solve_cp_model(model: CpModel, time_limit: float = 10.0, seed: int = 0, deterministic: bool = True,
                   workers: int | None = None, hint: Mapping[Any, int] | Iterable | None = None,
                   callback: Callable[[Any], None] | None = None, record_incumbents: bool = False,
                   log: bool = False, params: Mapping[str, Any] | None = None,
                   named_values: bool = True, label: str | None = None) -> tuple[ModelSolveResult, CpSolver]:
    """Solve a native ``CpModel`` with dfopt's options and status mapping.

    For constraints the neutral model lacks (no-overlap, element, reified rows, assumptions,
    ...); build it with :func:`new_cp_model`. ``hint`` (a mapping or pairs of variable -> value)
    is merged into the model's hints. ``callback(cb)`` runs on every improving solution with the
    CP-SAT solution callback ``cb`` (read ``cb.value(x)``, ``cb.objective_value``,
    ``cb.wall_time``); with it or ``record_incumbents``, ``result.stats["incumbents"]`` lists
    ``(seconds, objective)``. The solve runs in a progress phase called ``label`` (default:
    ``CP-SAT`` and the model's name), nested in the caller's phase if one is open.
    Returns ``(result, solver)``: read values with ``solver.value(var)``, or
    ``result.values_array[var.index]``; ``result.values`` maps variable names to values when
    ``named_values`` (then the names must be unique; unnamed variables are left out).
    Assumptions on the model hold for the solve; after an infeasible one,
    ``solver.sufficient_assumptions_for_infeasibility()`` lists a core.
    """
    options = SolveOptions(time_limit, seed, deterministic, workers, log, record_incumbents,
                           dict(params or {}))
    if hint is not None:
        _merge_hints(model, hint)
    label = label or " ".join(["CP-SAT", model.name]).strip()
    start = time.perf_counter()
    with progress.phase(label, time_limit) as ph:
        outcome = _run(model, options, 1.0, 0.0, model.has_objective(), callback, ph)
    wall = time.perf_counter() - start
    x = outcome["x"]
    values = {}
    if x is not None and named_values:
        names = [v.name for v in model.proto.variables]
        values = {nm: int(v) for nm, v in zip(names, x.tolist()) if nm}
    stats = dict(outcome["stats"], seed=seed, time_limit=time_limit, deterministic=deterministic)
    result = ModelSolveResult(outcome["termination"], outcome["status"], outcome["objective"],
                              outcome["bound"], wall, "cpsat", values, outcome["message"], stats,
                              values_array=x)
    return result, outcome["solver"]


def _merge_hints(model, hint) -> None:
    items = hint.items() if isinstance(hint, Mapping) else hint
    proto_hint = model.proto.solution_hint
    merged = dict(zip(list(proto_hint.vars), list(proto_hint.values)))
    variables = {}
    for var, value in items:
        merged[var.index] = int(value)
        variables[var.index] = var
    model.clear_hints()
    for index, value in merged.items():
        var = variables[index] if index in variables else model.get_int_var_from_proto_index(index)
        model.add_hint(var, value)
