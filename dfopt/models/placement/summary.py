"""The lines ``dfopt solve`` prints for a placement."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def summary(instance: Instance, solution: Solution) -> list[str]:
    sec = solution.sections["placement"]
    lines = [f"  {len(solution.decision.slot)} kernels on {len(sec['slots'])} slots; width x distance "
             f"{sec['distance']:g}, {sec['crossing_streams']} streams cross slots"
             + (f"; greedy {sec['greedy']['objective']:g}" if sec.get("greedy") else "")]
    for name, slot in sec["slots"].items():
        util = ", ".join(f"{r} {u:.0%}" for r, u in slot["utilization"].items() if slot["capacity"].get(r))
        lines.append(f"    {name}: {slot['kernels']} kernels; {util}")
    for cut in sec["cuts"]:
        limit = f" of {cut['wires']}" if cut["wires"] is not None else " (no limit)"
        lines.append(f"    line {cut['line']}: {cut['wires_used']:g} wires{limit}")
    return lines
