"""Readable text summaries of solutions (returned as strings; the CLI prints them): a header
common to every problem (status, limits, objective, bound, gap), the problem's own lines (its
``summary`` hook) and the checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dfopt.models.registry import get_problem
from dfopt.results import Termination, relative_gap

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.io import StrPath
    from dfopt.solution import Solution


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def status_text(solution: Solution) -> str:
    """The status, with what stopped the search when a limit did."""
    text = solution.status.value
    if solution.limit_reached or solution.status is Termination.TIME_LIMIT:
        limit = solution.stats.get("time_limit_s")
        gap = relative_gap(solution.objective, solution.bound)
        text += (f" (stopped by its limit{f' of {limit:g} s' if limit else ''}; "
                 + (f"gap {gap:.3g})" if gap else "optimality not proven)"))
    return text


def solution_summary(instance: Instance, solution: Solution, output_path: StrPath | None = None) -> str:
    lines = [f"{solution.problem} instance {solution.instance!r}: {status_text(solution)}",
             f"  formulation {solution.formulation}, solver {solution.solver}, seed {solution.seed}, "
             f"{solution.wall_time_s:.3f} s",
             f"  objective {_fmt(solution.objective)}"
             + (f", bound {_fmt(solution.bound)}" if solution.bound is not None else "")]
    lines += get_problem(solution.problem).summary(instance, solution)
    lines.append("  checks: " + ", ".join(f"{c.name} {'ok' if c.ok else 'FAILED'}" for c in solution.checks))
    for c in solution.checks:
        lines += [f"    {c.name}: {d}" for d in c.details[:10]]
    if output_path:
        lines.append(f"  solution written to {output_path}")
    return "\n".join(lines)
