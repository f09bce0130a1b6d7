"""Backend registry, capabilities and the solver-neutral :func:`solve`.

Every backend declares :class:`Capabilities`, imports its solver library only inside
``solve``, and returns a :class:`RawResult` whose statuses are already mapped into
:class:`~dfopt.results.Termination` and :class:`~dfopt.results.SolutionStatus`. The shared code
here checks capabilities, times the call, rounds integer values, recomputes the objective from
the values and measures the worst constraint violation (``stats["recomputed_objective"]``,
``stats["max_violation"]``): never trust a solver's word alone.

>>> from dfopt.ilp import LinearModel, solve, available_backends
>>> "highs" in available_backends()
True
>>> m = LinearModel()
>>> x = m.int_var(-3, 3, "x")
>>> m.minimize(x)
>>> r = solve(m, "highs", time_limit=5, seed=1)
>>> (r.termination.value, r.values["x"], r.solver)
('optimal', -3, 'highs')
"""

from __future__ import annotations

import abc
import importlib.util
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dfopt import progress
from dfopt.errors import InstanceError, SolverUnavailableError
from dfopt.ilp.expr import Var, as_expr
from dfopt.ilp.model import LinearModel, ModelData
from dfopt.results import SolutionStatus, SolveResult, Termination

logger = logging.getLogger(__name__)

__all__ = ["Capabilities", "SolveOptions", "RawResult", "ModelSolveResult", "Backend",
           "register_backend", "get_backend", "available_backends", "backend_names",
           "capabilities", "solve"]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can take and give."""

    integer_vars: bool
    continuous_vars: bool
    infinite_bounds: bool          # variables may be unbounded
    fractional_coefficients: bool  # False: data must scale exactly to integers (CP-SAT)
    hints: bool
    incumbents: bool               # can record (time, objective) of improving solutions
    uses_seed: bool
    deterministic_seed: bool       # same seed (and deterministic=True) -> same result
    multithreaded: bool
    export_formats: tuple = ()


@dataclass(frozen=True)
class SolveOptions:
    """Options common to every backend; ``params`` are passed to the native solver by name."""

    time_limit: float = 10.0
    seed: int = 0
    deterministic: bool = True
    workers: int | None = None
    log: bool = False
    record_incumbents: bool = False
    params: Mapping[str, Any] = field(default_factory=dict)

    def spent(self, seconds: float) -> SolveOptions:
        """These options with ``seconds`` (already spent on the way to the solver) taken off the
        time limit; at least 10 ms remain."""
        return replace(self, time_limit=max(0.01, self.time_limit - max(0.0, seconds)))

    def __post_init__(self) -> None:
        if not (isinstance(self.time_limit, (int, float)) and 0 < self.time_limit < math.inf):
            raise InstanceError("time_limit: expected a positive finite number of seconds, "
                                f"got {self.time_limit!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise InstanceError(f"seed: expected a non-negative integer, got {self.seed!r}")
        if self.workers is not None and (not isinstance(self.workers, (int, np.integer)) or self.workers < 1):
            raise InstanceError(f"workers: expected None or a positive integer, got {self.workers!r}")


@dataclass
class RawResult:
    """What a backend hands back before the shared post-processing."""

    termination: Termination
    status: SolutionStatus
    objective: float | None
    bound: float | None
    x: np.ndarray | None
    message: str = ""
    stats: dict = field(default_factory=dict)


@dataclass
class ModelSolveResult(SolveResult):
    """A :class:`~dfopt.results.SolveResult` that also holds the solution as an array.

    ``values`` maps variable names to values (``int`` for integer variables);
    ``values_array[i]`` is column ``i``; :meth:`value` evaluates a variable or an expression.
    """

    values_array: np.ndarray | None = None
    model: LinearModel | None = field(default=None, repr=False, compare=False)

    def value(self, item: object) -> float:
        """Value of a :class:`Var`, a :class:`LinExpr`, or a variable name."""
        if self.values_array is None:
            raise ValueError(f"no solution to read (termination {self.termination.value})")
        if isinstance(item, str):
            return self.values[item]
        if not isinstance(item, (Var, int, float)) and hasattr(item, "index") and self.model is None:
            return float(self.values_array[item.index])  # a native CP-SAT variable
        e = as_expr(item)
        if isinstance(e, Var):
            return float(self.values_array[e.index])
        idx, coef, const = e.flatten()
        return float(coef @ self.values_array[idx] + const)


class Backend(abc.ABC):
    """A solver behind the neutral model. Subclasses import their library lazily."""

    name: str = ""
    display: str = ""  # the solver's own name, for messages
    capabilities: Capabilities

    @abc.abstractmethod
    def is_available(self) -> bool:
        """True when the solver library is installed (may import it)."""

    @abc.abstractmethod
    def solve(self, data: ModelData, options: SolveOptions) -> RawResult:
        """Solve the model arrays; statuses mapped into the two enums."""

    def check(self, data: ModelData) -> None:
        """Raise :class:`InstanceError` when the model needs a capability this backend lacks."""
        caps = self.capabilities
        if not caps.continuous_vars and not data.integer.all():
            i = int(np.flatnonzero(~data.integer)[0])
            raise InstanceError(
                f"{self.display} (backend {self.name!r}) needs integer variables, but "
                f"{data.var_names[i]!r} is continuous; "
                f"declare it integer or use a backend that takes continuous variables "
                f"({', '.join(b for b in available_backends() if BACKENDS[b].capabilities.continuous_vars)})")
        if not caps.integer_vars and data.integer.any():
            i = int(np.flatnonzero(data.integer)[0])
            raise InstanceError(
                f"{self.display} (backend {self.name!r}) solves LPs only, but {data.var_names[i]!r} "
                "is integer; "
                "use a MIP backend (highs, scip, cbc, cpsat)")
        if not caps.infinite_bounds:
            bad = ~(np.isfinite(data.var_lb) & np.isfinite(data.var_ub))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InstanceError(
                    f"{self.display} (backend {self.name!r}) needs finite bounds on every variable, "
                    f"but {data.var_names[i]!r} has [{data.var_lb[i]:g}, {data.var_ub[i]:g}]; "
                    "give it bounds or use backend 'highs', 'scip' or 'cbc'")


BACKENDS: dict[str, Backend] = {}
_BUILTIN_LOADED = False


def register_backend(backend: Backend) -> Backend:
    """Add a backend to the registry (by its ``name``)."""
    BACKENDS[backend.name] = backend
    return backend


def backend_names() -> list[str]:
    """Every known backend name, installed or not."""
    _load_builtin()
    return list(BACKENDS)


def available_backends() -> list[str]:
    """Names of the backends whose solver is installed."""
    return [name for name in backend_names() if BACKENDS[name].is_available()]


def get_backend(name: str) -> Backend:
    """The backend called ``name``; :class:`SolverUnavailableError` (listing the installed ones)
    when it is unknown or not installed."""
    _load_builtin()
    backend = BACKENDS.get(str(name).lower())
    if backend is None or not backend.is_available():
        raise SolverUnavailableError(str(name), available_backends(), kind="ILP backend")
    return backend


def capabilities(name: str) -> Capabilities:
    """The declared capabilities of a backend."""
    return get_backend(name).capabilities


def solve(model: LinearModel, backend: str = "cpsat", time_limit: float = 10.0, seed: int = 0,
          deterministic: bool = True, workers: int | None = None, log: bool = False,
          record_incumbents: bool = False, params: Mapping[str, Any] | None = None) -> ModelSolveResult:
    """Solve ``model`` with ``backend`` under a time limit and a seed.

    ``deterministic=True`` makes the same seed give the same result (CP-SAT: one worker, or
    ``interleave_search`` when ``workers > 1``). ``log`` sends the solver log to :mod:`logging`
    where the solver allows (pywraplp backends write to the native stdout). ``params`` go to the
    native solver by name (CP-SAT parameter fields, HiGHS options, SCIP parameters).

    The solve runs in a :func:`dfopt.progress.phase` labelled with the solver and the model's
    name (inside the caller's phase when one is open); backends that see incumbents cheaply
    (CP-SAT, HiGHS) report them there.

    >>> from dfopt.ilp import LinearModel
    >>> m = LinearModel()
    >>> a, b = m.bool_var("a"), m.bool_var("b")
    >>> _ = m.add(a + b <= 1)
    >>> m.maximize(2 * a + 3 * b)
    >>> solve(m, "cpsat").values
    {'a': 0, 'b': 1}
    """
    called = time.perf_counter()
    chosen = get_backend(backend)
    options = SolveOptions(time_limit, seed, deterministic, workers, log, record_incumbents,
                           dict(params or {}))
    data = model.data()
    chosen.check(data)
    start = time.perf_counter()
    options = options.spent(start - called)        # the model's conversion counts against the limit
    with progress.phase(f"{chosen.display} {model.name}".strip(), time_limit) as ph:
        raw = chosen.solve(data, options)
        ph.update(incumbent=raw.objective, bound=raw.bound)
    wall = time.perf_counter() - start
    logger.debug("%s on %r: %s in %.3fs", chosen.name, model.name, raw.termination.value, wall)
    return _finish(model, data, raw, chosen.name, wall, options)


def _finish(model: LinearModel, data: ModelData, raw: RawResult, solver: str, wall: float,
            options: SolveOptions) -> ModelSolveResult:
    stats = dict(raw.stats)
    stats.update(seed=options.seed, time_limit=options.time_limit, deterministic=options.deterministic)
    values: dict = {}
    x = raw.x
    if x is not None and raw.status is not SolutionStatus.NONE:
        x = np.where(data.integer, np.round(x), x)
        ints = data.integer.tolist()
        values = {nm: (int(v) if is_int else v)
                  for nm, v, is_int in zip(data.var_names, x.tolist(), ints)}
        stats["recomputed_objective"] = float(data.obj @ x + data.obj_offset)
        stats["max_violation"] = model.max_violation(x)
    else:
        x = None
    return ModelSolveResult(raw.termination, raw.status, raw.objective, raw.bound, wall, solver,
                            values, raw.message, stats, values_array=x, model=model)


def limit_reached(elapsed: float, time_limit: float) -> bool:
    """Whether a run stopped at (or just before) its wall-clock limit."""
    return elapsed >= 0.95 * time_limit - 0.01


def importable(module: str) -> bool:
    """True when ``module`` can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _load_builtin() -> None:
    global _BUILTIN_LOADED
    if _BUILTIN_LOADED:
        return
    _BUILTIN_LOADED = True
    from dfopt.ilp.cpsat import CpSatBackend
    from dfopt.ilp.highs import HighsBackend
    from dfopt.ilp.mip import CbcBackend, GlopBackend, ScipBackend

    for backend in (CpSatBackend(), ScipBackend(), HighsBackend(), CbcBackend(), GlopBackend()):
        BACKENDS.setdefault(backend.name, backend)


__all__ += ["limit_reached", "importable", "BACKENDS"]
