"""Solution files (``dfopt-solution/1``): schema-checked load, atomic dump."""

from __future__ import annotations

from dfopt.errors import InstanceError
from dfopt.instance.common import _non_finite_issues
from dfopt.instance.reading import _parse_json, _read_text
from dfopt.io import StrPath, write_json_atomic
from dfopt.schema import schema_issues, to_problems
from dfopt.solution import Solution

# == solutions ================================================================================

def load_solution(path: StrPath) -> Solution:
    """Read and schema-check a solution file (``dfopt-solution/1``); NaN, infinities and
    numbers beyond the schema's bounds are bad input, each with its JSON pointer."""
    solution = _parse_json(_read_text(path, "solution"))
    return _solution(solution, finite_checked=True)


def solution_from_dict(d: dict) -> Solution:
    """Schema-check a solution object and build the :class:`~dfopt.solution.Solution`.

    >>> s = solution_from_dict({"format": "dfopt-solution/1", "instance": "x", "problem": "fifo",
    ...                         "status": "optimal", "fifo": {"depths": {"e": 2}}})
    >>> s.sections["fifo"]["depths"]
    {'e': 2}
    >>> for bad in ({"objective": float("nan")}, {"fifo": {"depths": {"e": 1e40}}}):
    ...     try:
    ...         solution_from_dict({"format": "dfopt-solution/1", "instance": "x", "problem": "fifo",
    ...                             "status": "optimal", **bad})
    ...     except InstanceError as err:
    ...         print(err)
    /objective: expected a finite number, got NaN
    /fifo/depths/e: expected integer >= 1 and <= 1099511627776, got 1e+40
    """
    return _solution(d, finite_checked=False)


def _solution(d, finite_checked: bool) -> Solution:
    issues = _non_finite_issues(d)      # also deep nesting and bad text, which the reader lets through
    if issues:
        raise InstanceError(problems=to_problems(issues))
    issues = schema_issues(d, "solution")
    if issues:
        raise InstanceError(problems=to_problems(issues))
    return Solution.from_dict(d)


def dump_solution(solution: Solution, path: StrPath) -> None:
    """Write a solution as JSON to ``path`` atomically."""
    write_json_atomic(path, solution.to_dict())
