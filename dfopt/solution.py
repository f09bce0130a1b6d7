"""The solution (``dfopt-solution/1``): what ``dfopt solve`` writes and ``dfopt check`` reads.

A :class:`Solution` holds the problem's typed decision (``decision``, a frozen dataclass of the
problem's package) and ``sections``, the report of each solution section (figures beside the
decision: totals, baselines, the recorded parameters). When written, each section is its report
with the decision's keys laid over it, so the decision is the one source of what was decided.
Keys are stable; only the sections of the solved problem appear.

>>> s = Solution(instance="fig8f", problem="fifo", status="feasible", objective=3)
>>> s.sections["fifo"] = {"depths": {"e01": 3}}
>>> s.to_dict()["fifo"], s.status
({'depths': {'e01': 3}}, <Termination.FEASIBLE: 'feasible'>)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dfopt.results import Termination

FORMAT = "dfopt-solution/1"


@dataclass
class Check:
    """One checker verdict; ``details`` lists violations when ``ok`` is false."""

    name: str
    ok: bool
    details: list = field(default_factory=list)

    def to_dict(self) -> dict:
        d: dict = {"name": self.name, "ok": self.ok}
        if self.details:
            d["details"] = list(self.details)
        return d


@dataclass
class Solution:
    """One answer of a problem. ``status`` is a :class:`~dfopt.results.Termination`: ``optimal``
    (proven), ``feasible`` or ``time_limit`` (the limit stopped the formulation before its own
    answer); ``limit_reached`` says a time or size limit cut the search short whatever the status;
    ``rejected`` marks a solution written although a check failed (``--keep-failed``)."""

    instance: str
    problem: str
    status: Termination  # a str (as read from a file) is converted by __post_init__
    objective: float | None = None
    bound: float | None = None
    formulation: str = ""
    solver: str = ""
    seed: int = 0
    wall_time_s: float = 0.0
    sections: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    decision: Any = None
    limit_reached: bool = False
    rejected: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.status, Termination):
            self.status = Termination(self.status)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c.ok for c in self.checks)

    @property
    def failed_checks(self) -> list:
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict:
        d: dict = {"format": FORMAT, "instance": self.instance, "problem": self.problem,
                   "status": self.status.value, "objective": self.objective, "bound": self.bound,
                   "formulation": self.formulation, "solver": self.solver, "seed": self.seed,
                   "wall_time_s": round(self.wall_time_s, 6)}
        if self.limit_reached:
            d["limit_reached"] = True
        if self.rejected:
            d["rejected"] = True
        decided = self.decision.sections() if self.decision is not None else {}
        for name in _section_order(self.sections, decided):
            d[name] = overlay(self.sections.get(name, {}), decided.get(name, {}))
        d["checks"] = [c.to_dict() for c in self.checks]
        if self.stats:
            d["stats"] = self.stats
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Solution:
        """The solution of a parsed file (already schema-checked); the decision is parsed by the
        problem's decision type, whose errors carry the pointer of the fault."""
        from dfopt.models.registry import REGISTRY, get_problem

        names = REGISTRY[d["problem"]].solution_sections if d.get("problem") in REGISTRY else ()
        sections = {k: d[k] for k in names if k in d}
        sol = cls(instance=d["instance"], problem=d["problem"], status=d["status"],
                  objective=d.get("objective"), bound=d.get("bound"),
                  formulation=d.get("formulation", ""), solver=d.get("solver", ""),
                  seed=d.get("seed", 0), wall_time_s=d.get("wall_time_s", 0.0), sections=sections,
                  checks=[Check(c["name"], c["ok"], c.get("details", [])) for c in d.get("checks", [])],
                  stats=d.get("stats", {}), limit_reached=bool(d.get("limit_reached", False)),
                  rejected=bool(d.get("rejected", False)))
        if names:
            sol.decision = get_problem(d["problem"]).decision.from_sections(sections)
        return sol


def lookup(data: Any, dotted: str, missing: Any = None) -> Any:
    """The value at a dotted path of a solution's JSON form, or ``missing``.

    >>> lookup({"fifo": {"total_depth": 7}}, "fifo.total_depth"), lookup({}, "fifo.x")
    (7, None)
    """
    value = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return missing
        value = value[part]
    return value


def _section_order(report: dict, decided: dict) -> list:
    from dfopt.models.registry import section_names

    present = set(report) | set(decided)
    return [n for n in section_names() if n in present] + sorted(present - set(section_names()))


def overlay(report: dict, decided: dict) -> dict:
    """``report`` with ``decided`` laid over it (nested objects merged key by key); the decision's
    keys come first."""
    out: dict = {key: None for key in decided}
    out.update(report)
    for key, value in decided.items():
        if isinstance(value, dict) and isinstance(report.get(key), dict):
            out[key] = overlay(report[key], value)
        else:
            out[key] = value
    return out
