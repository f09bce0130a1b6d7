"""The solution file (``dfopt-solution/1``): what ``dfopt solve`` writes and ``dfopt check`` reads.

Keys are stable. Only the sections of the solved problems appear (``fifo``, ``fusion``, ...).

>>> s = Solution(instance="fig8f", problem="fifo", status="optimal", objective=3)
>>> s.sections["fifo"] = {"depths": {"e01": 3}}
>>> s.to_dict()["fifo"]
{'depths': {'e01': 3}}
"""

from __future__ import annotations

from dataclasses import dataclass, field

FORMAT = "dfopt-solution/1"
SECTION_NAMES = ("fifo", "fusion", "converter", "placement", "memory", "schedule", "mapping",
                 "sparse", "tiling", "pipeline")


@dataclass
class Check:
    """One checker verdict; ``details`` lists violations when ``ok`` is false."""

    name: str
    ok: bool
    details: list = field(default_factory=list)

    def to_dict(self) -> dict:
        d = {"name": self.name, "ok": self.ok}
        if self.details:
            d["details"] = list(self.details)
        return d


@dataclass
class Solution:
    instance: str
    problem: str
    status: str                      # optimal | feasible | time_limit | infeasible | error
    objective: float | None = None
    bound: float | None = None
    formulation: str = ""
    solver: str = ""
    seed: int = 0
    wall_time_s: float = 0.0
    sections: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c.ok for c in self.checks)

    def to_dict(self) -> dict:
        d = {"format": FORMAT, "instance": self.instance, "problem": self.problem,
             "status": self.status, "objective": self.objective, "bound": self.bound,
             "formulation": self.formulation, "solver": self.solver, "seed": self.seed,
             "wall_time_s": round(self.wall_time_s, 6)}
        for name in SECTION_NAMES:
            if name in self.sections:
                d[name] = self.sections[name]
        d["checks"] = [c.to_dict() for c in self.checks]
        if self.stats:
            d["stats"] = self.stats
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Solution":
        return cls(
            instance=d["instance"], problem=d["problem"], status=d["status"],
            objective=d.get("objective"), bound=d.get("bound"),
            formulation=d.get("formulation", ""), solver=d.get("solver", ""),
            seed=d.get("seed", 0), wall_time_s=d.get("wall_time_s", 0.0),
            sections={k: d[k] for k in SECTION_NAMES if k in d},
            checks=[Check(c["name"], c["ok"], c.get("details", [])) for c in d.get("checks", [])],
            stats=d.get("stats", {}),
        )
