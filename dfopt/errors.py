"""One exception tree for dfopt (docs/design.md, errors and exit codes).

Every error carries what a user needs to find the fault: the JSON pointer of a bad field, or the
name of the kernel or stream at fault. Messages say what was expected, what was found and what to
try. The CLI maps each class to an exit code (:data:`EXIT_CODES`).

>>> err = InstanceError("expected a positive integer, got -3", pointer="/graph/streams/0/tokens")
>>> str(err)
'/graph/streams/0/tokens: expected a positive integer, got -3'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class DfoptError(Exception):
    """Base class of every error dfopt raises on purpose."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One fault found in an instance: where (JSON pointer) and what."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"


class InstanceError(DfoptError):
    """Bad input: an instance, solution, option or argument that does not fit the contract.

    Holds one or more :class:`Problem` entries, each with its JSON pointer.
    """

    exit_code = 2

    def __init__(self, message: str | None = None, pointer: str = "", problems: Iterable[Problem] | None = None,
                 source: str | None = None):
        self.source = source            # the file at fault, when it is not the instance (a solution file)
        self.problems: list[Problem] = list(problems or [])
        if message is not None:
            self.problems.insert(0, Problem(pointer, message))
        if not self.problems:
            self.problems.append(Problem(pointer, "invalid input"))
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def pointer(self) -> str:
        return self.problems[0].pointer


class ResourceLimitError(InstanceError):
    """An instance too large for the memory budget, found from counts before anything is
    allocated (:func:`dfopt.instance.budget.check_budget`); bad input, exit code 2.

    ``part`` names what would need the memory; ``estimate`` and ``budget`` are in bytes.

    >>> err = ResourceLimitError("too large", pointer="/graph", part="events", estimate=3, budget=2)
    >>> err.exit_code, err.part, str(err)
    (2, 'events', '/graph: too large')
    """

    def __init__(self, message: str, pointer: str = "", part: str = "", estimate: int = 0, budget: int = 0):
        super().__init__(message, pointer=pointer)
        self.part, self.estimate, self.budget = part, int(estimate), int(budget)


class InfeasibleError(DfoptError):
    """The instance is well formed but has no solution; ``reason`` says why."""

    exit_code = 3

    def __init__(self, reason: str, culprits: Iterable[object] = ()):
        self.reason = reason
        self.culprits = tuple(culprits)
        super().__init__(reason)


class NoSolutionError(DfoptError):
    """The solver stopped (time limit) before it found any solution."""

    exit_code = 4


class SolverUnavailableError(DfoptError):
    """A solver that is not installed (or not known) was asked for."""

    exit_code = 5

    def __init__(self, name: str, available: Iterable[str] = (), kind: str = "solver", context: str = ""):
        self.name = name
        self.available = tuple(available)
        listing = ", ".join(self.available) or "none"
        super().__init__(f"{kind} {name!r}{context} is not available; installed: {listing}")


class SolverError(DfoptError):
    """A solver failed in a way that is not the instance's fault."""

    exit_code = 1


class CodegenError(DfoptError):
    """Code generation could not express the solved design; the AIE checker also sets
    ``problems``, every problem it found."""

    exit_code = 2
    problems: list[str]


EXIT_CODES = {
    "ok": 0,
    "internal": 1,
    "input": 2,
    "infeasible": 3,
    "no_solution": 4,
    "unavailable": 5,
}


def unknown_name_error(kind: str, name: str, valid: Iterable[str], pointer: str = "") -> InstanceError:
    """The error for a name that is not in a registry; it lists the valid names."""
    choices = ", ".join(sorted(valid))
    return InstanceError(f"unknown {kind} {name!r}; expected one of: {choices}", pointer=pointer)
