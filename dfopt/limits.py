"""One wall-clock budget per command: ``--time-limit`` bounds the whole ``dfopt solve``.

The command marks its start (:func:`start_command`, the first thing ``dfopt``'s ``main`` does); the
outermost :func:`dfopt.models.driver.solve` turns its ``time_limit`` into a deadline from that
start, so loading and validating the instance count against it, and gives the problem data and
the formulation what is left after a *reserve* for the checks, the report and the output files
(:func:`reserve`). A solve inside another (a pipeline stage) keeps its own limit but never runs
past the outer deadline. Checks that have a cheaper proof at hand skip a redundant expensive one
when the deadline is near (the FIFO checks' bounded simulation when a witness schedule proves the
depths) and say so; checks that are the only proof always run.

Without a command (the Python API) the deadline counts from the call to ``solve``.

>>> b = Budget(start=100.0, limit=10.0)
>>> b.deadline, b.remaining(now=104.0), b.remaining(now=111.0)
(110.0, 6.0, 0.0)
>>> reserve(10.0), reserve(600.0), reserve(0.5)
(1.0, 10.0, 0.25)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

#: the share of a time limit kept for the checks, the report and the output files, and its cap
RESERVE_SHARE, RESERVE_MAX_S = 0.1, 10.0
#: what a formulation is given at least, even when the reserve takes everything
MIN_SOLVE_S = 0.05
#: how far past its limit a command may end (interpreter start, imports, a last solver step)
STATED_OVERHEAD_S = 2.0

_command_start: float | None = None
_active: ContextVar[Budget | None] = ContextVar("dfopt_budget", default=None)


@dataclass(frozen=True)
class Budget:
    """``limit`` seconds from ``start`` (``time.perf_counter`` values)."""

    start: float
    limit: float

    @property
    def deadline(self) -> float:
        return self.start + self.limit

    def remaining(self, now: float | None = None) -> float:
        """Seconds left before the deadline (0 when past it)."""
        return max(0.0, self.deadline - (time.perf_counter() if now is None else now))

    def elapsed(self, now: float | None = None) -> float:
        return (time.perf_counter() if now is None else now) - self.start


def start_command(at: float | None = None) -> None:
    """Mark the start of a command; the next outermost solve's limit counts from here."""
    global _command_start
    _command_start = time.perf_counter() if at is None else at


def command_start() -> float | None:
    """When the running command started (None outside a command)."""
    return _command_start


def reserve(limit: float) -> float:
    """Seconds of a ``limit`` kept for what follows the formulation: checks, report, writing."""
    return min(RESERVE_MAX_S, max(RESERVE_SHARE * limit, min(0.5, limit / 2)))


def active() -> Budget | None:
    """The budget of the solve running now (the outermost one's deadline bounds inner ones)."""
    return _active.get()


def remaining() -> float | None:
    """Seconds left in the running solve's budget, or None when no solve runs."""
    b = _active.get()
    return None if b is None else b.remaining()


@contextmanager
def budget(limit: float) -> Iterator[Budget]:
    """The budget of one solve: from the command's start for the outermost solve of a command
    (the start is used once), else from now; never past an enclosing solve's deadline."""
    global _command_start
    outer = _active.get()
    now = time.perf_counter()
    start = now
    if outer is None and _command_start is not None:
        start, _command_start = _command_start, None
    b = Budget(start, limit)
    if outer is not None and b.deadline > outer.deadline:
        b = Budget(start, max(0.0, outer.deadline - start))
    token = _active.set(b)
    try:
        yield b
    finally:
        _active.reset(token)
