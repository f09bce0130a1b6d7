"""Solver-neutral results: why the solver stopped, what solution exists, and the numbers.

Every backend (``dfopt.ilp``, ``dfopt.lp``) maps its own statuses into :class:`Termination` and
:class:`SolutionStatus`, and keeps the bound and the time.

>>> r = SolveResult(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=3.0, bound=3.0)
>>> r.has_solution, r.gap
(True, 0.0)
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field


class Termination(str, enum.Enum):
    """Why the solver stopped."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"          # stopped with a solution, optimality not proven (not time)
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    TIME_LIMIT = "time_limit"
    ERROR = "error"


class SolutionStatus(str, enum.Enum):
    """What the solver hands back."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    NONE = "none"


@dataclass
class SolveResult:
    """The outcome of one solve.

    ``values`` maps variable names (or keys) to values; ``objective`` is the solver's objective,
    which callers recompute from the decoded decisions before they trust it.
    """

    termination: Termination
    status: SolutionStatus
    objective: float | None = None
    bound: float | None = None
    wall_time_s: float = 0.0
    solver: str = ""
    values: dict = field(default_factory=dict)
    message: str = ""
    stats: dict = field(default_factory=dict)

    @property
    def has_solution(self) -> bool:
        return self.status is not SolutionStatus.NONE

    @property
    def gap(self) -> float | None:
        """Relative gap |obj - bound| / max(1, |obj|); None without both numbers."""
        return relative_gap(self.objective, self.bound)


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return None
    return abs(objective - bound) / max(1.0, abs(objective))
