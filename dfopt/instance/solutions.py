"""Solution files (``dfopt-solution/1``): schema-checked load, atomic dump."""

from __future__ import annotations

from dfopt.errors import InstanceError
from dfopt.instance.reading import _parse_json, _read_text
from dfopt.io import write_json_atomic
from dfopt.schema import schema_issues, to_problems
from dfopt.solution import Solution

# == solutions ================================================================================

def load_solution(path) -> Solution:
    """Read and schema-check a solution file (``dfopt-solution/1``)."""
    solution = _parse_json(_read_text(path, "solution"))
    return solution_from_dict(solution)


def solution_from_dict(d: dict) -> Solution:
    """Schema-check a solution object and build the :class:`~dfopt.solution.Solution`.

    >>> s = solution_from_dict({"format": "dfopt-solution/1", "instance": "x", "problem": "fifo",
    ...                         "status": "optimal", "fifo": {"depths": {"e": 2}}})
    >>> s.sections["fifo"]["depths"]
    {'e': 2}
    """
    issues = schema_issues(d, "solution")
    if issues:
        raise InstanceError(problems=to_problems(issues))
    return Solution.from_dict(d)


def dump_solution(solution: Solution, path) -> None:
    """Write a solution as JSON to ``path`` atomically."""
    write_json_atomic(path, solution.to_dict())
