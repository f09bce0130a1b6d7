"""The FIFO sizing formulations. Each returns the cheapest of its candidates that is proven safe
and latency-preserving (a witness schedule or the bounded simulation); the report keeps every
candidate with its proof.

* ``slack`` — depths read off witness schedules, refined per kernel (no LP, safe by construction);
* ``flow``, ``potentials``, ``paths`` — the LP over stream delays (:mod:`.delays`), depths from the
  token curves at the solved delays, repaired when they stall; with ``keep_best`` the best verified
  of the LP depths, the occupancy baseline, the slack depths and their per-stream minimum;
* ``occupancy`` — each stream's maximum occupancy in the unbounded run (the cosim baseline);
* ``search`` — shrink the occupancy depths one stream at a time by binary search under simulation;
* ``witness-lp`` — the best per-kernel shift of a witness schedule by one convex tension LP
  (:mod:`.witness_lp`), with the bound of that family.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dfopt.errors import InfeasibleError
from dfopt.models.base import Outcome, Unbounded
from dfopt.models.fifo import delays as lp
from dfopt.models.fifo.curves import exact_max_tokens_array, paper_max_tokens_array, schedule_max_tokens
from dfopt.models.fifo.data import Candidate, FifoData
from dfopt.models.fifo.decision import FifoDepths
from dfopt.models.fifo.edges import objective_weights, scheduled_ends, totals
from dfopt.models.fifo.repair import repair, shrink
from dfopt.results import Termination
from dfopt.sim import simulate

if TYPE_CHECKING:
    from dfopt.models.fifo import Options

LP_SOLVER_DEFAULT = "highs"


def _lp_solvers() -> tuple:
    from dfopt.lp.cvx import SOLVERS

    return (LP_SOLVER_DEFAULT,) + tuple(s for s in SOLVERS if s != LP_SOLVER_DEFAULT)


def choose(data: FifoData, candidates: list, name: str, limit_reached: bool = False) -> Outcome:
    """The cheapest safe candidate as the outcome; none safe is an :class:`InfeasibleError`."""
    safe = [c for c in candidates if c.safe]
    if not safe:  # occupancy and slack are always safe; search starts from occupancy
        raise InfeasibleError(f"{name} found no depths it could prove safe: "
                              + "; ".join(f"{c.name}: {c.proof}" for c in candidates))
    best = min(safe, key=lambda c: c.value)
    return Outcome(FifoDepths(dict(zip(data.names, best.depths.tolist()))),
                   Termination.TIME_LIMIT if limit_reached else Termination.FEASIBLE,
                   solver=data.stats.get("lp_solver", "none"), stats=dict(data.stats),
                   limit_reached=limit_reached, report={"best": best, "candidates": candidates})


class _Fifo(Unbounded):
    """What every FIFO formulation shares: one answer at the options' latency slack
    (``solve_one``) and, when ``frontier`` asks for it, the frontier of answers over slacks."""

    def solve(self, data: FifoData, options: Options) -> Outcome:
        outcome = self.solve_one(data, options)
        if not options.frontier:
            return outcome
        points = frontier(self, data, options)
        # a point of a larger slack whose simulated makespan is within this limit is an answer too
        within = [Candidate(f"frontier-{i}", np.array([p["depths"][n] for n in data.names], dtype=np.int64), True,
                            data.value([p["depths"][n] for n in data.names]), "simulated")
                  for i, p in enumerate(points) if p["makespan"] <= data.limit]
        if any(c.value < outcome.report["best"].value for c in within):
            outcome = choose(data, outcome.report["candidates"] + within, self.name,
                             limit_reached=outcome.limit_reached)
        outcome.report["frontier"] = points
        if data.stats.get("frontier_stopped_by"):
            outcome.stats["frontier_stopped_by"] = data.stats["frontier_stopped_by"]
        return outcome

    def solve_one(self, data: FifoData, options: Options) -> Outcome:
        raise NotImplementedError


def frontier(formulation: _Fifo, data: FifoData, options: Options) -> list[dict]:
    """Pareto points (objective vs makespan) of ``formulation`` at ``frontier`` latency slacks
    evenly from 0 to ``frontier_slack``: each point's depths, their figures and the makespan of
    their bounded run (simulated: a point is proven, not estimated); dominated points (no
    shorter and no cheaper than another, one of them strictly) are dropped. Stops at the
    deadline with the points so far (``frontier_stopped_by``)."""
    points = []
    key = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}[options.objective]
    for i, slack in enumerate(np.linspace(0.0, options.frontier_slack, options.frontier).tolist()):
        if i and time.perf_counter() >= data.deadline:
            data.stats["frontier_stopped_by"] = "time limit"
            break
        sub = data.at_slack(slack)
        best = formulation.solve_one(sub, sub.options).report["best"]
        run = simulate(data.graph, dict(zip(data.names, best.depths.tolist())))
        points.append({"latency_slack": slack, "makespan_limit": sub.limit, "makespan": run.makespan,
                       **totals(data.arrays, best.depths), "proof": best.proof,
                       "depths": dict(zip(data.names, best.depths.tolist()))})
    return pareto(points, key)


def pareto(points: list[dict], key: str) -> list[dict]:
    """The points no other point dominates on (``makespan``, ``key``), by makespan; of equal
    points the first.

    >>> [p["n"] for p in pareto([{"n": 0, "makespan": 10, "d": 9}, {"n": 1, "makespan": 12, "d": 9},
    ...                          {"n": 2, "makespan": 12, "d": 4}, {"n": 3, "makespan": 12, "d": 4}], "d")]
    [0, 2]
    """
    out: list[dict] = []
    for p in sorted(points, key=lambda p: (p["makespan"], p[key])):
        if not out or p[key] < out[-1][key]:
            out.append(p)
    return out


@dataclass(frozen=True)
class Slack(_Fifo):
    """Witness-schedule depths, refined per kernel (the default)."""

    name: str = "slack"

    def solve_one(self, data: FifoData, options: Options) -> Outcome:
        candidate = data.slack_candidate()
        return choose(data, [candidate], self.name, limit_reached="refine_stopped_by" in data.stats)


@dataclass(frozen=True)
class Occupancy(_Fifo):
    """Each stream's largest occupancy in the unbounded run."""

    name: str = "occupancy"

    def solve_one(self, data: FifoData, options: Options) -> Outcome:
        return choose(data, [data.verify("occupancy", data.occupancy)], self.name)


@dataclass(frozen=True)
class Search(_Fifo):
    """Binary search per stream under simulation, from the occupancy depths, within the limit."""

    name: str = "search"

    def solve_one(self, data: FifoData, options: Options) -> Outcome:
        contribution = data.occupancy * objective_weights(data.arrays, options.objective)
        order = np.argsort(-contribution, kind="stable")
        depths, sims, finished = shrink(data.graph, data.names, data.occupancy, data.limit, order,
                                        deadline=data.deadline)
        data.stats.update(search_simulations=sims, search_finished=finished)
        return choose(data, [data.verify("search", depths)], self.name, limit_reached=not finished)


@dataclass(frozen=True)
class DelayLP(_Fifo):
    """The LP over stream delays (``flow``: min-cost flow; ``potentials``, ``paths``: cvxpy LPs)."""

    name: str

    def solve_one(self, data: FifoData, options: Options) -> Outcome:
        raw = _lp_depths(data, self.name)
        t = time.perf_counter()
        cands = [_repaired(data, "lp", raw)]
        data.stats["lp_value_raw"] = data.value(raw)
        if options.keep_best:
            slack = data.slack()
            cands += [data.verify("occupancy", data.occupancy), data.slack_candidate()]
            cands.append(_repaired(data, "combined", np.minimum.reduce([raw, data.occupancy, slack])))
        data.stats["time_repair_s"] = time.perf_counter() - t
        return choose(data, cands, self.name)


def _lp_depths(data: FifoData, formulation: str) -> np.ndarray:
    opts, arrays = data.options, data.arrays
    weights = objective_weights(arrays, opts.objective)
    remaining = max(0.1, data.deadline - time.perf_counter())
    ends = scheduled_ends(data.graph, arrays)
    if formulation == "flow":
        res = lp.delays_flow(arrays, weights, ends)
    elif formulation == "potentials":
        res = lp.delays_potentials(arrays, weights, opts.solver or LP_SOLVER_DEFAULT, remaining, opts.seed, ends)
    else:
        res = lp.delays_paths(arrays, weights, opts.solver or LP_SOLVER_DEFAULT, remaining, opts.seed, ends)
    data.stats.update(lp_status=res.status, lp_solver=res.solver, lp_objective=res.lp_objective, **res.stats)
    data.delays = res.delays
    curve = exact_max_tokens_array if opts.curve == "exact" else paper_max_tokens_array
    delays = np.round(res.delays, 6)
    depths = curve(arrays.tokens, arrays.lower, arrays.ii_src, arrays.ii_dst, delays)
    for j, (w, r) in ends.items():          # per-token schedules: the exact curve of the pair (no closed form)
        depths[j] = schedule_max_tokens(w, r, delays[j])
    return depths


def _repaired(data: FifoData, name: str, depths) -> Candidate:
    """Verify ``depths``; when unsafe and affordable, repair them towards the cheaper safe vector."""
    cand = data.verify(name, depths)
    if cand.safe or not data.can_repair:
        return cand
    target = min((data.occupancy, data.slack()), key=data.value)
    out = repair(data.graph, data.names, cand.depths, data.limit, target,
                 max_rounds=data.options.repair_rounds, deadline=None)
    data.stats[f"{name}_repair_rounds"] = out.rounds
    depths = out.depths if out.ok else np.maximum(out.depths, target)
    return data.verify(f"{name}-repaired", depths)


def formulations() -> tuple:
    """Every FIFO formulation, the default first."""
    from dfopt.models.fifo.witness_lp import WitnessLP

    lp_solvers = _lp_solvers()
    return (Slack(), DelayLP("flow"), DelayLP("potentials", lp_solvers), DelayLP("paths", lp_solvers),
            Occupancy(), Search(), WitnessLP())
