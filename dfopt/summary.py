"""Readable text summaries of solutions (returned as strings; the CLI prints them)."""

from __future__ import annotations


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def solution_summary(instance, solution, output_path=None) -> str:
    lines = [f"{solution.problem} instance {solution.instance!r}: {solution.status}",
             f"  formulation {solution.formulation}, solver {solution.solver}, seed {solution.seed}, "
             f"{solution.wall_time_s:.3f} s",
             f"  objective {_fmt(solution.objective)}" + (f", bound {_fmt(solution.bound)}" if solution.bound is not None else "")]
    body = SECTION_SUMMARIES.get(solution.problem)
    if body:
        lines += body(instance, solution)
    lines.append("  checks: " + ", ".join(f"{c.name} {'ok' if c.ok else 'FAILED'}" for c in solution.checks))
    for c in solution.checks:
        lines += [f"    {c.name}: {d}" for d in c.details[:10]]
    if output_path:
        lines.append(f"  solution written to {output_path}")
    return "\n".join(lines)


def _fifo_summary(instance, solution) -> list[str]:
    sec = solution.sections["fifo"]
    base = sec.get("occupancy_baseline", {})
    key = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}[sec["objective"]]
    ratio = ""
    if base.get(key):
        ratio = f" ({sec[key] / base[key]:.3f} x the occupancy baseline {base[key]})"
    lines = [f"  {len(sec['depths'])} streams, strategy {sec['strategy']}, objective {sec['objective']}: "
             f"{sec[key]}{ratio}",
             f"  total depth {sec['total_depth']}, total bits {sec['total_bits']}, BRAM18 {sec['bram18']}",
             f"  makespan {sec['makespan']} cycles (unbounded reference {sec['reference_makespan']}); "
             f"answer from {sec['chosen']}" + (f", LP depths repaired in {sec['repair_steps']} rounds" if sec.get("repaired") else "")]
    deepest = sorted(sec["depths"].items(), key=lambda kv: -kv[1])[:8]
    lines.append("  deepest: " + ", ".join(f"{n}={d}" for n, d in deepest))
    return lines


SECTION_SUMMARIES = {"fifo": _fifo_summary}
