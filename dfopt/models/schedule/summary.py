"""The lines ``dfopt solve`` prints for a schedule."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def summary(instance: Instance, solution: Solution) -> list[str]:
    sec, decision = solution.sections["schedule"], solution.decision
    flags = " ".join("s" if sc else ("P" if p else "-") for p, sc in zip(sec["parallel"], sec["scalar"]))
    lines = [f"  schedule ({sec['dims']} dimensions; P parallel loop, - sequential loop, s scalar: {flags})",
             f"    {decision.map}"]
    bands = ", ".join(f"{b['dims']}" for b in sec["bands"] if len(b["dims"]) > 1)
    if bands:
        lines.append(f"  permutable bands {bands}")
    if decision.tiled_map:
        lines.append(f"  tiled: {decision.tiled_map}")
    if sec.get("vector"):
        lines.append(f"  vectorised dimensions {sec['vector']}")
    lines += [f"  warning: {w}" for w in sec.get("warnings", [])]
    lines.append(f"  C code: {len(sec['code'].splitlines())} lines (in the solution's schedule.code)")
    return lines
