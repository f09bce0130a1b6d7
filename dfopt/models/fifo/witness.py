"""Witness schedules: depth vectors that are safe and latency-preserving by construction, and the
check that proves a depth vector safe without running the bounded simulation.

The bounded design runs at the least solution of a system of difference constraints (DESIGN 4):
each kernel's events in nominal order with at least the nominal spacing and no event before its
nominal offset, every read after its write, every write after the read that frees its slot. Any
schedule ``sigma`` that satisfies all of them with depths ``N`` and ends by cycle ``M - 1`` is a
*witness*: the least solution is no later than ``sigma`` event by event, so the design neither
deadlocks nor runs past ``M`` — and ``M``, the unbounded makespan, is a lower bound, so the
makespan is exactly ``M``. Without the space constraints, both

* the earliest (unbounded, ASAP) schedule, and
* the latest (ALAP) schedule that ends by ``M - 1``

satisfy the system, and so does ``floor(lam * ASAP + (1 - lam) * ALAP)`` for every lam in [0, 1]
(difference constraints with integer bounds survive convex combination and flooring). The space
constraints then hold exactly when ``N_e >= occupancy_e(sigma)`` for every stream, where
occupancy is the smallest depth with ``sigma(write k) > sigma(read k - N)``. So each lam gives a
safe depth vector, and a depth vector is proven safe when it dominates one of them.

>>> from dfopt.ir import DataflowGraph, Kernel, Stream
>>> from dfopt.sim import simulate
>>> g = DataflowGraph([Kernel("a", delay=1), Kernel("b", ii=4)], [Stream("e", "a", "b", 64)])
>>> fam = schedule_family(g, simulate(g, unbounded=True, record=True))
>>> fam.depths(1.0).tolist(), fam.depths(0.0).tolist(), fam.safe([1])
([48], [1], 0.0)
"""

from __future__ import annotations

import numpy as np

from dfopt.sim.engine import occupancy
from dfopt.sim.levels import latest_times

LAMBDAS = (1.0, 0.0, 0.25, 0.5, 0.75)


class ScheduleFamily:
    """Mixed earliest/latest schedules of one graph; each mix's depths computed on demand."""

    def __init__(self, prog, asap: np.ndarray, makespan: int, lambdas=LAMBDAS):
        self.prog = prog
        self.names = list(prog.stream_names)
        self.makespan = int(makespan)
        self.lambdas = tuple(lambdas)
        self._asap = asap.astype(np.int64)
        self._alap = None
        self._depths: dict = {}

    def schedule(self, lam: float) -> np.ndarray:
        """Event times (by code) of ``floor(lam * earliest + (1 - lam) * latest)``."""
        if lam == 1.0:
            return self._asap
        if self._alap is None:
            self._alap = latest_times(self.prog, self.makespan)
        if lam == 0.0:
            return self._alap
        sigma = np.floor(lam * self._asap + (1.0 - lam) * self._alap).astype(np.int64)
        sigma[-1] = -1
        return sigma

    def depths(self, lam: float) -> np.ndarray:
        """The depths that make the ``lam`` schedule a witness (each at least 1)."""
        if lam not in self._depths:
            self._depths[lam] = np.maximum(occupancy(self.prog, self.schedule(lam)), 1)
        return self._depths[lam]

    def safe(self, depths) -> float | None:
        """A lam whose schedule witnesses that ``depths`` are safe (None: no witness here)."""
        depths = np.asarray(depths, dtype=np.int64)
        for lam in self.lambdas:
            if (depths >= self.depths(lam)).all():
                return lam
        return None


def schedule_family(graph, reference, lambdas=LAMBDAS) -> ScheduleFamily:
    """The family around an unbounded reference run (``simulate(..., record=True)``)."""
    prog, asap = reference.event_times()
    return ScheduleFamily(prog, asap, reference.makespan, lambdas)
