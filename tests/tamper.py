"""Test helpers: change a solution as its file would be changed, and list the checks it fails."""

from __future__ import annotations

import copy

import dfopt
from dfopt.solution import Solution


def tampered(solution: Solution, change) -> Solution:
    """The solution after ``change(d)`` edits its JSON form ``d`` in place (as a file edit would)."""
    d = copy.deepcopy(solution.to_dict())
    change(d)
    return Solution.from_dict(d)


def failed(instance, solution: Solution, **options) -> dict:
    """Check name -> details of every failed check (options as for :func:`dfopt.check`)."""
    return {c.name: c.details for c in dfopt.check(instance, solution, **options) if not c.ok}
