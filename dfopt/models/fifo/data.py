"""What every FIFO formulation shares: the graph as arrays, the unbounded reference run, the
family of witness schedules, and the verification of candidate depths.

A :class:`Candidate` is a depth vector with how it was proven safe and latency-preserving (a
witness schedule, or a bounded simulation) or why it is not.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dfopt.errors import InfeasibleError
from dfopt.models.fifo.checks import SIMULATE_EVENTS, blocked_text, makespan_limit
from dfopt.models.fifo.edges import objective_value, stream_arrays
from dfopt.models.fifo.witness import refine, schedule_family
from dfopt.sim import compile_events, reference_run, simulate
from dfopt.sim.result import SimResult

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.models.fifo import Options

REPAIR_EVENTS = 250_000


@dataclass
class Candidate:
    name: str
    depths: np.ndarray
    safe: bool
    value: int
    proof: str                      # "witness lam=0.3", "simulated", or why it is unsafe
    sim: SimResult | None = None    # the bounded simulation, when it was simulated
    witness: np.ndarray | None = None  # per-kernel mix whose schedule proves the depths
    shift: np.ndarray | None = None    # per-kernel shift of that schedule (witness-lp), cycles


class FifoData:
    """The graph as arrays, the reference run and the witness family, built once per solve."""

    def __init__(self, graph: DataflowGraph, options: Options) -> None:
        self.graph = graph
        self.options = options
        self.deadline = time.perf_counter() + options.time_limit
        self.arrays = stream_arrays(graph, options.strategy)
        self.names = self.arrays.names
        self.reference = reference_run(graph)
        if self.reference.deadlock:
            raise InfeasibleError("the graph deadlocks even with unbounded FIFOs: " + blocked_text(self.reference))
        assert self.reference.makespan is not None  # a run without deadlock has a makespan
        self.makespan: int = self.reference.makespan
        self.limit: int = makespan_limit(self.makespan, options.latency_slack)   # what a safe answer may take
        self.family = schedule_family(graph, self.reference, makespan=self.limit)
        self.occupancy = self.family.depths(1.0)
        self.delays: np.ndarray | None = None      # stream delays, when an LP ran
        self._slack: Candidate | None = None
        self.events = compile_events(graph).n_events
        self.stats: dict = {"events": self.events}

    def at_slack(self, slack: float) -> FifoData:
        """The same problem at another latency slack: shares the graph, the reference run and the
        deadline; a new witness family (its latest schedules end by the new limit)."""
        other = copy.copy(self)
        other.options = dataclasses.replace(self.options, latency_slack=float(slack), frontier=0)
        other.limit = makespan_limit(self.makespan, slack)
        other.family = schedule_family(self.graph, self.reference, makespan=other.limit)
        other.occupancy = self.occupancy
        other.delays, other._slack, other.stats = None, None, {"events": self.events}
        return other

    def lower_bound(self) -> int:
        """A bound of the objective over every safe assignment within the limit: the objective
        of the per-stream depths below which no such assignment goes
        (:meth:`~.witness.ScheduleFamily.lower_bound`; every objective grows with depth)."""
        return self.value(self.family.lower_bound())

    def value(self, depths: npt.ArrayLike) -> int:
        return objective_value(self.arrays, depths, self.options.objective)

    @property
    def can_simulate(self) -> bool:
        return self.options.simulate == "always" or (
            self.options.simulate == "auto" and self.events <= SIMULATE_EVENTS)

    @property
    def can_repair(self) -> bool:
        return self.can_simulate and self.events <= REPAIR_EVENTS and self.options.repair_rounds > 0

    def slack(self) -> np.ndarray:
        """The cheapest depths of the witness family, refined per kernel (safe by construction)."""
        return self.slack_candidate().depths

    def slack_candidate(self) -> Candidate:
        if self._slack is None:
            lams: list[float] = []
            values: list = []
            for lam in self.family.lambdas:      # lam = 1 first: the reference run's occupancy, at no cost
                if lams and time.perf_counter() >= self.deadline:
                    self.stats["refine_stopped_by"] = "time limit"
                    break
                lams.append(lam)
                values.append(self.value(self.family.depths(lam)))
            start = lams[int(np.argmin(values))]
            budget = self.options.refine_budget // max(self.events, 1)
            if budget >= 2 and self.family.prog.n_kernels > 1:
                mix, depths, spent = refine(self.family, self.value, start, budget, deadline=self.deadline)
                self.stats["refine_evaluations"] = spent
                if spent < budget and time.perf_counter() >= self.deadline:
                    self.stats["refine_stopped_by"] = "time limit"
                self._slack = Candidate("slack", depths, True, self.value(depths),
                                        "witness (per-kernel mix)", witness=mix)
            else:
                depths = self.family.depths(start)
                self._slack = Candidate("slack", depths, True, self.value(depths), f"witness lam={start:g}")
        return self._slack

    def verify(self, name: str, depths: npt.ArrayLike) -> Candidate:
        """``depths`` as a candidate: proven by a witness schedule or by the bounded simulation."""
        depths = np.maximum(np.asarray(depths, dtype=np.int64), 1)
        lam = self.family.safe(depths)
        if lam is not None and not (self.options.simulate == "always"):
            return Candidate(name, depths, True, self.value(depths), f"witness lam={lam:g}")
        if not self.can_simulate and self.options.simulate != "always":
            return Candidate(name, depths, False, self.value(depths), "no witness; too large to simulate")
        res = simulate(self.graph, dict(zip(self.names, depths.tolist())))
        safe = res.makespan is not None and res.makespan <= self.limit
        proof = "simulated" if safe else ("deadlock" if res.deadlock else f"makespan {res.makespan}")
        return Candidate(name, depths, safe, self.value(depths), proof, res)


def prepare(instance: Instance, options: Options) -> FifoData:
    """The FIFO problem data of ``instance.graph`` under ``options``."""
    assert instance.graph is not None  # the driver checks the parts a problem needs
    return FifoData(instance.graph, options)
