"""The lines ``dfopt solve`` prints for a pipeline design."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dfopt.units import format_bytes

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _timing(sec: dict) -> str:
    """How the FIFO stage timed the ports: exact per-token schedules or the steady model."""
    timing = sec.get("fifo_timing")
    if timing == "exact":
        return " (sized on exact per-token port schedules)"
    return f" (sized on {timing} port timing)" if timing else ""


def summary(instance: Instance, solution: Solution) -> list[str]:
    sec, b = solution.sections["pipeline"], format_bytes
    lines = [f"  {'stage':<10} {'time (s)':>9} {'objective':>12}  status      checks"]
    for st in sec["stages"]:
        obj = "-" if st.get("objective") is None else _fmt(st["objective"])
        lines.append(f"  {st['name']:<10} {st['time_s']:>9.3f} {obj:>12}  {st['status']:<11} "
                     f"{'ok' if st['checks_ok'] else 'FAILED'}")
    util = ", ".join(f"{s} {u:.0%}" for s, u in sec["slot_utilization"].items())
    dram = sec["dram"]
    lines += [f"  total {sec['total_time_s']:.2f} s; estimated latency {sec['latency_cycles']} cycles",
              f"  DRAM traffic {b(dram['total'])}: weights {b(dram['weights'])}, inputs {b(dram['inputs'])}, "
              f"outputs {b(dram['outputs'])}, intermediates between fused groups {b(dram['intermediates'])} "
              f"(every stream through DRAM, no fusion: {b(sec['unfused_dram_bytes'])})",
              f"  on-chip {b(sec['onchip_bytes'])} (buffering every intermediate whole: {b(sec['buffered_bytes'])})",
              f"  FIFOs {sec['fifo_bits']} bits{_timing(sec)}; peak slot utilisation {util}"]
    return lines
