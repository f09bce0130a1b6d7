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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dfopt.models.fifo.slack import latest_times
from dfopt.sim.engine import occupancy

LAMBDAS = tuple(i / 10 for i in range(11))


@dataclass
class ScheduleFamily:
    """ASAP and ALAP event times (by event code) and the depths each mixed schedule needs."""

    names: list
    makespan: int
    lambdas: tuple
    depths: np.ndarray        # (len(lambdas), streams): occupancy of each mixed schedule

    def safe(self, depths) -> float | None:
        """A lam whose schedule witnesses that ``depths`` are safe (None: no witness here)."""
        depths = np.asarray(depths, dtype=np.int64)
        for lam, need in zip(self.lambdas, self.depths):
            if (depths >= need).all():
                return lam
        return None


def schedule_family(graph, reference, lambdas=LAMBDAS) -> ScheduleFamily:
    """Depths of every mixed schedule between the reference (``record=True``) and the latest."""
    prog, asap = reference.event_times()
    _, alap = latest_times(graph, reference.makespan)
    asap = asap.astype(np.int64)
    rows = []
    for lam in lambdas:
        if lam == 1.0:
            sigma = asap
        elif lam == 0.0:
            sigma = alap
        else:
            sigma = np.floor(lam * asap + (1.0 - lam) * alap).astype(np.int64)
            sigma[-1] = -1
        rows.append(np.maximum(occupancy(prog, sigma), 1))
    return ScheduleFamily(list(prog.stream_names), int(reference.makespan), tuple(lambdas), np.array(rows))
