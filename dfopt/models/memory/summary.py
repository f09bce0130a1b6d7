"""The lines ``dfopt solve`` prints for a memory binding."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def summary(instance: Instance, solution: Solution) -> list[str]:
    sec = solution.sections["memory"]
    heur = sec["heuristic"]
    counts = ", ".join(f"{n} {k}" for k, n in sec["counts"].items() if n)
    where = " in {} {}".format(*sec["peak_at"]) if sec.get("peak_at") else ""
    lines = [f"  {len(solution.decision.binding)} memories: {counts or 'none'}",
             f"  peak weighted utilisation {sec['peak']:.4g}{where}, sum {sec['sum']:.4g}; size-ordered heuristic "
             + (f"{heur['peak']:.4g} (sum {heur['sum']:.4g})" if heur.get("fits") else "overfills a slot")]
    for name, res in sec["slots"].items():
        lines.append(f"    {name}: " + ", ".join(f"{r} {u['used']:g}/{u['capacity']:g} ({u['utilization']:.0%})"
                                                 for r, u in res.items()))
    return lines
