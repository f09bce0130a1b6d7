"""The lines ``dfopt solve`` prints for a FIFO solution."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def summary(instance: Instance, solution: Solution) -> list[str]:
    sec = solution.sections["fifo"]
    depths = solution.decision.depths
    base = sec.get("occupancy_baseline", {})
    key = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}[sec["objective"]]
    ratio = ""
    if base.get(key):
        ratio = f" ({sec[key] / base[key]:.3f} x the occupancy baseline {base[key]})"
    lines = [f"  {len(depths)} streams, strategy {sec['strategy']}, objective {sec['objective']}: "
             f"{sec[key]}{ratio}",
             f"  total depth {sec['total_depth']}, total bits {sec['total_bits']}, BRAM18 {sec['bram18']}",
             f"  makespan {sec['makespan']} cycles (unbounded reference {sec['reference_makespan']}"
             + (f", limit {sec['makespan_limit']} at latency slack {sec['latency_slack']:g}" if "makespan_limit" in sec
                else "")
             + f"); answer from {sec['chosen']}"
             + (f", LP depths repaired in {sec['repair_steps']} rounds" if sec.get("repaired") else "")]
    lp = sec.get("witness_lp")
    if lp and lp.get("bound") is not None:
        head = f"; headroom {lp['headroom']:.3f} (answer / that bound)" if lp.get("headroom") else ""
        lines.append(f"  witness LP: bound {lp['bound']} over the shifts of its base ({lp['base']}, "
                     f"{lp['base_value']}){head}")
    elif lp and lp.get("stopped_by"):
        lines.append(f"  witness LP: stopped by the {lp['stopped_by']}; the answer is its base ({lp['base']})")
    if sec.get("frontier"):
        lines.append(f"  frontier ({len(sec['frontier'])} Pareto points, makespan: {key}): "
                     + ", ".join(f"{p['makespan']}: {p[key]}" for p in sec["frontier"]))
    deepest = sorted(depths.items(), key=lambda kv: -kv[1])[:8]
    lines.append("  deepest: " + ", ".join(f"{n}={d}" for n, d in deepest))
    return lines
