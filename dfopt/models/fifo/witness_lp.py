"""``witness-lp``: the best shift of a witness schedule, by one convex tension LP (:mod:`.shifts`).

The base is the witness schedule of ``slack`` (the cheapest global mix, refined per kernel
within ``refine_budget``). Two LPs over the kernels' shifts, both solved by min-cost flow with
integer start times, side by side in two threads:

* the *answer* LP costs each stream by the lower convex envelope of its step curve from the
  least feasible ``tau`` to where the stream is full (and at least to the base, ``tau = 0``),
  the last slope going on beyond: a convex model that is close where the optimum lies;
* the *bound* LP costs it by the envelope over its whole window (to the largest ``tau`` the
  windows allow), which is below the exact curve on every feasible shift, so its optimum bounds
  the objective of every shift of the base: the family's bound (``witness_lp.bound``).

The answer is the exact depths at the answer LP's shifts or the base's own, whichever is
cheaper (never above ``slack``'s answer), proven by the shifted schedule, which the solution
stores (``witness``: the mix and ``shift``) for the checker. ``witness_lp.headroom`` is the
answer over that bound. The solution's ``bound`` stays the problem's (docs/fifo.md, lower
bound), which holds over every safe assignment; the family's bound does not (docs/fifo.md,
``witness-lp``).
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dfopt import progress
from dfopt.lp.difference import DifferenceTimeLimit
from dfopt.models.base import Outcome
from dfopt.models.fifo import shifts
from dfopt.models.fifo.data import Candidate, FifoData
from dfopt.models.fifo.edges import objective_weights
from dfopt.models.fifo.formulations import _Fifo, choose

if TYPE_CHECKING:
    from dfopt.models.fifo import Options


@dataclass(frozen=True)
class WitnessLP(_Fifo):
    """Witness depths at the best shifts of ``slack``'s witness schedule."""

    name: str = "witness-lp"

    def solve_one(self, data: FifoData, options: Options) -> Outcome:
        with progress.phase("fifo: witness LP", time_limit=options.time_limit) as ph:
            best, info, stopped = _solve(data, options, ph)
        outcome = choose(data, [best], self.name, limit_reached=stopped or "refine_stopped_by" in data.stats)
        outcome.report["witness_lp"] = info
        outcome.stats.update({f"witness_lp_{k}": v for k, v in info.items() if k != "stopped_by"})
        if stopped:
            outcome.stats["witness_lp_stopped_by"] = "time limit"
        return outcome


def _solve(data: FifoData, options: Options, ph: progress.Phase) -> tuple[Candidate, dict, bool]:
    """(best candidate, the ``witness_lp`` record, whether the time limit stopped it)."""
    fam, prog = data.family, data.family.prog
    base = _base(data)
    ph.update(incumbent=float(base.value), detail="answer LP")
    info: dict = {"base": base.proof, "base_value": int(base.value)}
    weights = objective_weights(data.arrays, options.objective)
    mix = _mix(base)
    beta = fam.mix_schedule(mix)
    if _late(data, info, "answer LP"):
        return base, info, True
    t = time.perf_counter()
    sampled = shifts.sampled_thresholds(prog, beta)
    info["curves_time_s"] = time.perf_counter() - t
    # The bound LP does not depend on the answer: it runs in a second thread beside the answer
    # LP (HiGHS leaves Python's lock while it solves), each under the time left to the deadline.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dfopt-bound-lp") as pool:
        bound_job = pool.submit(_timed, shifts.solve_shifts, prog, beta, fam.makespan, weights, right_end=True,
                                sampled=sampled, time_limit=_left(data))
        try:
            answer, info["answer_lp_time_s"] = _timed(shifts.solve_shifts, prog, beta, fam.makespan, weights,
                                                      right_end=False, sampled=sampled, time_limit=_left(data))
        except DifferenceTimeLimit:
            info["stopped_by"] = "time limit during the answer LP"
            return base, info, True
        info.update(lp_nodes=answer.stats["lp_nodes"], lp_arcs=answer.stats["lp_arcs"],
                    lp_hinges=answer.stats["lp_hinges"])
        t = time.perf_counter()
        best = _shifted_candidate(data, base, beta, answer.shift)
        info["evaluate_time_s"] = time.perf_counter() - t
        ph.update(incumbent=float(best.value), detail="bound LP")
        try:
            bound, info["bound_lp_time_s"] = bound_job.result()
        except DifferenceTimeLimit:
            info["stopped_by"] = "time limit during the bound LP"
            return best, info, True
    value = shifts.ceil_bound(bound.bound)
    info.update(bound=value, headroom=round(best.value / value, 6) if value > 0 else None)
    ph.update(incumbent=float(best.value), bound=float(value), detail="done (bound: over the shifts of the base)")
    return best, info, False


def _timed(solve, *args, **kwargs) -> tuple[shifts.ShiftLP, float]:
    """``solve(*args, **kwargs)`` and its wall time in seconds."""
    t = time.perf_counter()
    out = solve(*args, **kwargs)
    return out, time.perf_counter() - t


def _left(data: FifoData) -> float:
    """Seconds until the deadline (at least a moment: the caller checked it had not passed)."""
    return max(0.01, data.deadline - time.perf_counter())


def _late(data: FifoData, info: dict, step: str) -> bool:
    """Whether the deadline has passed before ``step``; then the record says where it stopped."""
    if time.perf_counter() < data.deadline:
        return False
    info["stopped_by"] = f"time limit before the {step}"
    return True


def _base(data: FifoData) -> Candidate:
    """The base schedule: the witness of ``slack`` (the cheapest global mix, refined per kernel
    within ``refine_budget``), as a candidate with its per-kernel mix."""
    slack = data.slack_candidate()
    if slack.witness is not None:
        return dataclasses.replace(slack, name="witness-lp")
    lam = float(slack.proof.removeprefix("witness lam="))
    return dataclasses.replace(slack, name="witness-lp", witness=np.full(data.family.prog.n_kernels, lam))


def _mix(base: Candidate) -> np.ndarray:
    if base.witness is None:            # _base always sets it
        raise ValueError("the base candidate has no per-kernel mix")
    return base.witness


def _shifted_candidate(data: FifoData, base: Candidate, beta: np.ndarray, shift: np.ndarray) -> Candidate:
    """The exact depths of the base's schedule ``beta`` shifted (the schedule the checker rebuilds
    from the mix and the shifts), as a candidate; the base when they are not cheaper or the run
    would end late."""
    fam = data.family
    sigma, depths = fam.shifted(beta, shift)
    if int(sigma[:-1].max(initial=-1)) > fam.makespan - 1:
        return base
    value = data.value(depths)
    if value >= base.value:
        return base
    return Candidate("witness-lp", depths, True, value, "witness (shifted schedule)", witness=base.witness,
                     shift=np.asarray(shift, dtype=np.int64))
