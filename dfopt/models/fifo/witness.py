"""Witness schedules: depth vectors that are safe and latency-preserving by construction, and the
check that proves a depth vector safe without running the bounded simulation.

The bounded design runs at the least solution of a system of difference constraints
(docs/design.md, the token timing model): each kernel's events in nominal order with at least the
nominal spacing and no event before its nominal offset, every read after its write, every write
after the read that frees its slot. Any schedule ``sigma`` that satisfies all of them with depths
``N`` and ends by cycle ``M - 1`` is a *witness*: the least solution is no later than ``sigma``
event by event, so the design neither deadlocks nor runs past ``M`` — and ``M``, the unbounded
makespan, is a lower bound, so the makespan is exactly ``M``. Without the space constraints, both

* the earliest (unbounded, ASAP) schedule, and
* the latest (ALAP) schedule that ends by ``M - 1``

satisfy the system, and so does ``floor(lam * ASAP + (1 - lam) * ALAP)`` for every lam in [0, 1]
(difference constraints with integer bounds survive convex combination and flooring). The space
constraints then hold exactly when ``N_e >= occupancy_e(sigma)`` for every stream, where
occupancy is the smallest depth with ``sigma(write k) > sigma(read k - N)``. So each lam gives a
safe depth vector, and a depth vector is proven safe when it dominates one of them.

The mix can also differ per kernel: release every event of kernel k at
``floor(lam_k * ASAP + (1 - lam_k) * ALAP)`` and take the earliest schedule that satisfies the
timing model and those releases. The latest schedule satisfies both, so this schedule is no later
than it and still ends by ``M - 1``: another witness. :func:`refine` searches the per-kernel
mixes by coordinate descent; the solution stores the mix (``fifo.witness``) so that the checker
can rebuild the schedule and verify it without trusting the search.

>>> from dfopt.ir import DataflowGraph, Kernel, Stream
>>> from dfopt.sim import simulate
>>> g = DataflowGraph([Kernel("a", delay=1), Kernel("b", ii=4)], [Stream("e", "a", "b", 64)])
>>> fam = schedule_family(g, simulate(g, unbounded=True, record=True))
>>> fam.depths(1.0).tolist(), fam.depths(0.0).tolist(), fam.safe([1])
([48], [1], 0.0)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dfopt import progress
from dfopt.sim.engine import dag_levels, occupancy
from dfopt.sim.events import EventProgram
from dfopt.sim.levels import earliest_times, latest_times

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph
    from dfopt.sim.result import SimResult

LAMBDAS = (1.0, 0.0, 0.25, 0.5, 0.75)


class ScheduleFamily:
    """Mixed earliest/latest schedules of one graph; each mix's depths computed on demand."""

    def __init__(self, prog: EventProgram, asap: np.ndarray, makespan: int, lambdas: Iterable[float] = LAMBDAS):
        self.prog = prog
        self.names = list(prog.stream_names)
        self.makespan = int(makespan)
        self.lambdas = tuple(lambdas)
        self._asap = asap.astype(np.int64)
        self._alap: np.ndarray | None = None
        self._depths: dict = {}
        self._kcode: np.ndarray | None = None

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

    def kernel_mix(self, lam_per_kernel: npt.ArrayLike, shift: npt.ArrayLike | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
        """(schedule by code, depths) of the per-kernel mix ``lam_per_kernel`` (one per kernel),
        then, with ``shift`` (cycles, one per kernel), every kernel of that schedule moved by its
        shift and taken as the releases of a second earliest schedule.

        Each schedule is the earliest one that satisfies the timing model and its releases, so it
        is a witness whenever it ends by ``makespan - 1``, whatever the mix and the shifts; when
        the shifted schedule satisfies the timing model itself (the shifts of :mod:`.shifts`), the
        second one is exactly the shifted schedule."""
        sigma = self.mix_schedule(lam_per_kernel)
        if shift is not None:
            return self.shifted(sigma, shift)
        return sigma, np.maximum(occupancy(self.prog, sigma), 1)

    def mix_schedule(self, lam_per_kernel: npt.ArrayLike) -> np.ndarray:
        """The schedule by code of the per-kernel mix alone (:meth:`kernel_mix` without depths)."""
        kcode = self._kernel_of_code()
        lam = np.asarray(lam_per_kernel, dtype=float)[kcode]
        if self._alap is None:
            self._alap = latest_times(self.prog, self.makespan)
        release = np.floor(lam * self._asap + (1.0 - lam) * self._alap).astype(np.int64)
        release[-1] = -1
        return earliest_times(self.prog, dag_levels(self.prog), release)

    def shifted(self, sigma: np.ndarray, shift: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(schedule, depths) of :meth:`kernel_mix` with ``shift`` from the mix's own schedule
        ``sigma`` (:meth:`mix_schedule`)."""
        moved = sigma + np.asarray(shift, dtype=np.int64)[self._kernel_of_code()]
        moved[-1] = -1
        moved = earliest_times(self.prog, dag_levels(self.prog), moved)
        return moved, np.maximum(occupancy(self.prog, moved), 1)

    def _kernel_of_code(self) -> np.ndarray:
        if self._kcode is None:
            p = self.prog
            self._kcode = np.zeros(p.n_events + 1, dtype=np.int64)
            self._kcode[p.ev_code] = np.repeat(np.arange(p.n_kernels), np.diff(p.ev_lo))
        return self._kcode

    def lower_bound(self) -> np.ndarray:
        """Per stream, a depth no safe assignment within the family's makespan goes below.

        The bounded run of any such assignment satisfies every constraint of the unbounded
        system and ends by ``makespan - 1``, so each of its events lies between the earliest and
        the latest schedule; a stream's occupancy falls as its writes come later and its reads
        earlier, so its depth is at least the occupancy with writes at their latest and reads
        at their earliest (and at least 1).

        >>> from dfopt.ir import DataflowGraph, Kernel, Stream
        >>> from dfopt.sim import simulate
        >>> g = DataflowGraph([Kernel("a"), Kernel("c", delay=6), Kernel("b")],
        ...                   [Stream("ab", "a", "b", 8), Stream("ac", "a", "c", 8), Stream("cb", "c", "b", 8)])
        >>> schedule_family(g, simulate(g, unbounded=True, record=True)).lower_bound().tolist()  # = the optimum
        [7, 2, 2]
        """
        if self._alap is None:
            self._alap = latest_times(self.prog, self.makespan)
        mixed = self._asap.copy()
        mixed[1:-1:2] = self._alap[1:-1:2]         # writes (odd codes) at their latest
        return np.maximum(occupancy(self.prog, mixed), 1)

    def safe(self, depths: npt.ArrayLike) -> float | None:
        """A lam whose schedule witnesses that ``depths`` are safe (None: no witness here)."""
        depths = np.asarray(depths, dtype=np.int64)
        for lam in self.lambdas:
            if (depths >= self.depths(lam)).all():
                return lam
        return None


def schedule_family(graph: DataflowGraph, reference: SimResult, lambdas: Iterable[float] = LAMBDAS,
                    makespan: int | None = None) -> ScheduleFamily:
    """The family around an unbounded reference run (``simulate(..., record=True)``), its latest
    schedules ending by ``makespan`` (default the reference's: latency-preserving witnesses; a
    larger one, a latency slack, allows later schedules and so smaller depths).

    Its lam = 1 depths are the reference run's occupancy, taken from the run, not recounted.
    """
    prog, asap = reference.event_times()
    if reference.makespan is None:
        raise ValueError("a schedule family needs a reference run without deadlock")
    family = ScheduleFamily(prog, asap, reference.makespan if makespan is None else max(makespan, reference.makespan),
                            lambdas)
    occ = np.array([reference.max_occupancy[n] for n in family.names], dtype=np.int64)
    family._depths[1.0] = np.maximum(occ, 1)
    return family


def refine(family: ScheduleFamily, value: Callable[[np.ndarray], Any], start_lam: float, budget: int,
           choices: Iterable[float] = (0.0, 0.5, 1.0), deadline: float | None = None
           ) -> tuple[np.ndarray, np.ndarray, int]:
    """Coordinate descent over per-kernel mixes: (lam per kernel, depths, evaluations spent).

    Starts from ``start_lam`` everywhere; sweeps the kernels in order, trying each of ``choices``
    and keeping a change only when ``value(depths)`` drops; stops after a sweep without gain or
    after ``budget`` evaluations (each one schedule pass and one occupancy count), or at
    ``deadline`` (a ``time.perf_counter`` value; then the result depends on the machine's speed).
    Deterministic without a deadline.
    Progress: the best value so far and the evaluations spent, in a :func:`dfopt.progress.phase`.
    """
    with progress.phase("fifo: witness search") as ph:
        return _refine(family, value, start_lam, budget, choices, ph, deadline)


def _refine(family: ScheduleFamily, value, start_lam: float, budget: int, choices,
            ph: progress.Phase, deadline: float | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    lam = np.full(family.prog.n_kernels, float(start_lam))
    _, best_depths = family.kernel_mix(lam)
    best, spent = value(best_depths), 1
    improved = True
    while improved and spent < budget:
        improved = False
        for k in range(len(lam)):
            for choice in choices:
                if choice == lam[k] or spent >= budget:
                    continue
                if deadline is not None and time.perf_counter() >= deadline:
                    return lam, best_depths, spent
                old, lam[k] = lam[k], choice
                _, depths = family.kernel_mix(lam)
                spent += 1
                v = value(depths)
                if v < best:
                    best, best_depths, improved = v, depths, True
                else:
                    lam[k] = old
                if ph.live:
                    ph.update(incumbent=_number(best), detail=f"{spent}/{budget} evaluations")
    return lam, best_depths, spent


def _number(v) -> float | None:
    """A value :func:`refine` minimises, as a number for progress reports (None if it is not one,
    e.g. a tuple)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def check_mix(family: ScheduleFamily, lam_per_kernel: npt.ArrayLike, depths: np.ndarray,
              shift: npt.ArrayLike | None = None) -> list[str]:
    """Faults of a stored per-kernel witness (mix and optional shifts): it must end by M - 1 and
    ``depths`` must cover it."""
    sigma, need = family.kernel_mix(lam_per_kernel, shift)
    faults = []
    if int(sigma[:-1].max(initial=-1)) > family.makespan - 1:
        faults.append(f"the witness schedule ends at {int(sigma[:-1].max()) + 1}, after the makespan {family.makespan}")
    short = np.flatnonzero(np.asarray(depths) < need)
    faults += [f"stream {family.names[j]}: depth {int(depths[j])} below the witness occupancy {int(need[j])}"
               for j in short[:10]]
    return faults
