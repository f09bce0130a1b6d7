"""The memory-binding formulations.

* ``heuristic`` — size-ordered baseline (:mod:`.heuristic`);
* ``cpsat`` — the exact model (:mod:`.exact`) solved by CP-SAT, hinted with the heuristic;
* ``mip`` — the same model through a MIP backend (``highs`` by default; ``scip``, ``cbc``).

The exact formulations never return worse than the heuristic.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.errors import NoSolutionError
from dfopt.ir.memory import KIND_RESOURCE
from dfopt.models.base import Bounded, Outcome, Unbounded
from dfopt.models.memory.decision import Binding
from dfopt.models.memory.diagnose import capacity_text, fmt, overflow_error
from dfopt.models.memory.exact import (
    ExactOutcome,
    least_overflow,
    lexicographically_better,
    minimise_peak,
    minimise_sum,
)
from dfopt.models.memory.problem import UNIT_NAMES, MemoryProblem
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.models.memory import Options

MIP_SOLVERS = ("highs", "scip", "cbc")
EXPLAIN_SECONDS = 10.0  # extra time to find a least-overflow binding for the infeasibility message


@dataclass
class MemoryData:
    """The parsed problem and the size-ordered binding (the hint and the fallback)."""

    problem: MemoryProblem
    heuristic: list[str]


def floor_bound(problem: MemoryProblem) -> float:
    """The peak of the kernels and register FIFOs alone: no binding does better."""
    used = [dict(slot.base) for slot in problem.slots]
    for i, options in enumerate(problem.options):
        if len(options) == 1:
            kind, cost = next(iter(options.items()))
            used[problem.slot_of[i]][KIND_RESOURCE[kind]] += cost
    return max((problem.weights[r] * used[s][r] / problem.slots[s].capacity[r] for s, r in problem.rows()),
               default=0.0)


def _outcome(data: MemoryData, binding: Sequence[str], termination: Termination, solver: str, bound=None,
             stats=None, limit_reached: bool = False) -> Outcome:
    keys = [b.key for b in data.problem.buffers]
    return Outcome(Binding(dict(zip(keys, binding))), termination, bound, solver, stats or {}, limit_reached,
                   report={"binding": binding})


def _decide(data: MemoryData, backend: str, opts) -> ExactOutcome:
    """The exact least-peak search; an instance with no fitting binding raises InfeasibleError."""
    problem = data.problem
    deadline = time.perf_counter() + opts.time_limit
    out = minimise_peak(problem, data.heuristic, backend, opts, deadline)
    if out.infeasible:
        shown = least_overflow(problem, data.heuristic, backend, opts, deadline + EXPLAIN_SECONDS, out)
        raise overflow_error(problem, shown or data.heuristic, least=shown is not None)
    out.deadline = deadline
    return out


def _no_fit(data: MemoryData, what: str) -> NoSolutionError:
    problem = data.problem
    s, r, u = problem.over_capacity(data.heuristic)[0]
    return NoSolutionError(f"{what}; the size-ordered binding needs {fmt(u)} {UNIT_NAMES[r]} in slot "
                           f"{problem.slots[s].name}, {capacity_text(problem, s, r)}")


@dataclass(frozen=True)
class Heuristic(Unbounded):
    """The size-ordered binding: largest memories first, each in its cheapest kind that fits."""

    name: str = "heuristic"

    def solve(self, data: MemoryData, options: Options) -> Outcome:
        if data.problem.fits(data.heuristic):
            return _outcome(data, data.heuristic, Termination.FEASIBLE, "none")
        out = _decide(data, "cpsat", options)  # raises InfeasibleError when no binding fits
        if out.binding is None:
            raise _no_fit(data, "the size-ordered heuristic overfills a slot and CP-SAT did not decide in time "
                                "whether any binding fits")
        raise _no_fit(data, "the size-ordered heuristic overfills a slot although a binding that fits exists; "
                            "use formulation cpsat")


@dataclass(frozen=True)
class Exact(Bounded):
    """Least peak, then least sum at that peak (:mod:`.exact`), on CP-SAT or a MIP backend."""

    def solve(self, data: MemoryData, options: Options) -> Outcome:
        backend = self.backend(options)
        out = _decide(data, backend, options)
        if out.binding is None:
            raise _no_fit(data, f"{backend} found no binding within the time limit ({options.time_limit:g} s)")
        binding = minimise_sum(data.problem, out.binding, backend, options, out.deadline, out)
        stats = {"solves": out.solves, "proven": out.proven}
        heur = data.heuristic
        if data.problem.fits(heur) and lexicographically_better(data.problem, heur, binding):
            binding, stats["fell_back_to_heuristic"] = heur, True
        status = Termination.OPTIMAL if out.proven else (
            Termination.TIME_LIMIT if out.timed_out else Termination.FEASIBLE)
        return _outcome(data, binding, status, backend, out.bound, stats, limit_reached=out.timed_out)


def formulations() -> tuple:
    return (Exact("cpsat", ("cpsat",)), Heuristic(), Exact("mip", MIP_SOLVERS))
