"""FIFO sizing (``problem: fifo``; StreamTensor section 5.3, DESIGN 4 and 5.1).

Chooses the depth of every stream so that the design neither deadlocks nor runs longer than with
unbounded FIFOs, at the least total depth, bits or BRAM18 blocks. Every answer is proven safe and
latency-preserving before it is returned — by a witness schedule (:mod:`.witness`) or by the
bounded simulation (:mod:`dfopt.sim`) — and checked again by :mod:`.checks`.

Formulations (``FORMULATIONS``):

* ``slack`` (default) — depths read off witness schedules (:mod:`.witness`): mixes of the
  earliest and latest schedules, refined per kernel; safe by construction, no LP, fast at scale.
* ``flow``, ``potentials``, ``paths`` — the LP over delays (:mod:`.delays`), depths from the
  token curves at the solved delays. Depths that stall or deadlock are repaired
  (:func:`.repair.repair`). With ``keep_best`` (default) the answer is the best verified one
  among the LP depths, the ``occupancy`` baseline, the ``slack`` depths and their per-stream
  minimum after repair (``combined``).
* ``occupancy`` — the Vitis cosim / hls4ml / FINN baseline: each stream's maximum occupancy in
  one unbounded simulation.
* ``search`` — FIFOAdvisor-style: shrink the occupancy depths one stream at a time by binary
  search under simulation, within the time limit.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/fifo/fig8a.json"))
>>> sol.sections["fifo"]["depths"], sol.sections["fifo"]["occupancy_baseline"]["total_depth"]
({'e01': 1}, 9)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dfopt.errors import InfeasibleError, InstanceError, SolverUnavailableError, unknown_name_error
from dfopt.ir.analyses import find_cycle, topological_order
from dfopt.models.fifo import delays as lp
from dfopt.models.fifo.checks import SIMULATE_EVENTS, SIMULATE_MODES, blocked_text, check, checks
from dfopt.models.fifo.curves import exact_max_tokens_array, paper_max_tokens_array
from dfopt.models.fifo.edges import (OBJECTIVES, STRATEGIES, objective_value, objective_weights,
                                     stream_arrays, totals)
from dfopt.models.fifo.repair import repair, shrink
from dfopt.models.fifo.witness import refine, schedule_family
from dfopt.models.options import CommonOptions
from dfopt.sim import compile_events, simulate
from dfopt.solution import Solution

__all__ = ["Options", "FORMULATIONS", "DEFAULT_FORMULATION", "solve", "check", "checks"]

DEFAULT_FORMULATION = "slack"
LP_SOLVER_DEFAULT = "highs"
CURVES = ("exact", "paper")
REPAIR_EVENTS = 250_000


@dataclass(frozen=True)
class Options(CommonOptions):
    """FIFO sizing options (also CLI flags and ``options.fifo`` fields)."""

    strategy: str = "normal"        # normal | conservative: which IIs the token curves assume
    objective: str = "depth"        # depth | bits | bram18
    curve: str = "exact"            # exact | paper: token-curve closed forms
    keep_best: bool = True          # LP formulations: return the best verified candidate
    repair_rounds: int = 100        # simulations the repair may spend
    simulate: str = "auto"          # auto | always | never: bounded simulation of candidates
    refine_budget: int = 100_000_000  # events x schedule passes the per-kernel witness search may spend


@dataclass
class Candidate:
    name: str
    depths: np.ndarray
    safe: bool
    value: int
    proof: str                      # "witness lam=0.3", "simulated", or why it is unsafe
    sim: object = None              # the bounded SimResult when it was simulated
    witness: np.ndarray | None = None  # per-kernel mix whose schedule proves the depths


class _Context:
    """What the formulations share: the graph as arrays, the reference run, the witness family."""

    def __init__(self, graph, options: Options):
        self.graph = graph
        self.options = options
        self.deadline = time.perf_counter() + options.time_limit
        self.arrays = stream_arrays(graph, options.strategy)
        self.names = self.arrays.names
        self.reference = simulate(graph, unbounded=True, record=True)
        if self.reference.deadlock:
            raise InfeasibleError("the graph deadlocks even with unbounded FIFOs: " + blocked_text(self.reference))
        self.makespan = self.reference.makespan
        self.family = schedule_family(graph, self.reference)
        self.occupancy = self.family.depths(1.0)
        self.delays: np.ndarray | None = None      # stream delays, when an LP ran
        self._slack: Candidate | None = None
        self.events = compile_events(graph).n_events
        self.stats: dict = {"events": self.events}

    def value(self, depths) -> int:
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
            lams = self.family.lambdas
            values = [self.value(self.family.depths(lam)) for lam in lams]
            start = lams[int(np.argmin(values))]
            budget = self.options.refine_budget // max(self.events, 1)
            if budget >= 2 and self.family.prog.n_kernels > 1:
                mix, depths, spent = refine(self.family, self.value, start, budget)
                self.stats["refine_evaluations"] = spent
                self._slack = Candidate("slack", depths, True, self.value(depths),
                                        "witness (per-kernel mix)", witness=mix)
            else:
                depths = self.family.depths(start)
                self._slack = Candidate("slack", depths, True, self.value(depths), f"witness lam={start:g}")
        return self._slack

    def verify(self, name: str, depths) -> Candidate:
        depths = np.maximum(np.asarray(depths, dtype=np.int64), 1)
        lam = self.family.safe(depths)
        if lam is not None and not (self.options.simulate == "always"):
            return Candidate(name, depths, True, self.value(depths), f"witness lam={lam:g}")
        if not self.can_simulate and self.options.simulate != "always":
            return Candidate(name, depths, False, self.value(depths), "no witness; too large to simulate")
        res = simulate(self.graph, dict(zip(self.names, depths.tolist())))
        safe = not res.deadlock and res.makespan == self.makespan
        proof = "simulated" if safe else ("deadlock" if res.deadlock else f"makespan {res.makespan}")
        return Candidate(name, depths, safe, self.value(depths), proof, res)


def _lp_depths(ctx: _Context, formulation: str) -> np.ndarray:
    opts, arrays = ctx.options, ctx.arrays
    weights = objective_weights(arrays, opts.objective)
    remaining = max(0.1, ctx.deadline - time.perf_counter())
    if formulation == "flow":
        res = lp.delays_flow(arrays, weights)
    elif formulation == "potentials":
        res = lp.delays_potentials(arrays, weights, opts.solver or LP_SOLVER_DEFAULT, remaining, opts.seed)
    else:
        rank = {k: i for i, k in enumerate(topological_order(ctx.graph))}
        topo = np.array([rank[k] for k in arrays.kernels])
        res = lp.delays_paths(arrays, weights, topo, opts.solver or LP_SOLVER_DEFAULT, remaining, opts.seed)
    ctx.stats.update(lp_status=res.status, lp_solver=res.solver, lp_objective=res.lp_objective, **res.stats)
    ctx.delays = res.delays
    curve = exact_max_tokens_array if opts.curve == "exact" else paper_max_tokens_array
    return curve(arrays.tokens, arrays.lower, arrays.ii_src, arrays.ii_dst, np.round(res.delays, 6))


def _repaired(ctx: _Context, name: str, depths) -> Candidate:
    """Verify ``depths``; when unsafe and affordable, repair them towards the cheaper safe vector."""
    cand = ctx.verify(name, depths)
    if cand.safe or not ctx.can_repair:
        return cand
    target = min((ctx.occupancy, ctx.slack()), key=ctx.value)
    out = repair(ctx.graph, ctx.names, cand.depths, ctx.makespan, target,
                 max_rounds=ctx.options.repair_rounds, deadline=None)
    ctx.stats[f"{name}_repair_rounds"] = out.rounds
    depths = out.depths if out.ok else np.maximum(out.depths, target)
    return ctx.verify(f"{name}-repaired", depths)


def _solve_lp(ctx: _Context, formulation: str) -> list[Candidate]:
    raw = _lp_depths(ctx, formulation)
    t = time.perf_counter()
    lp_cand = _repaired(ctx, "lp", raw)
    ctx.stats["lp_value_raw"] = ctx.value(raw)
    cands = [lp_cand]
    if ctx.options.keep_best:
        slack = ctx.slack()
        cands += [ctx.verify("occupancy", ctx.occupancy), ctx.slack_candidate()]
        cands.append(_repaired(ctx, "combined", np.minimum.reduce([raw, ctx.occupancy, slack])))
    ctx.stats["time_repair_s"] = time.perf_counter() - t
    return cands


def _solve_search(ctx: _Context) -> list[Candidate]:
    contribution = ctx.occupancy * objective_weights(ctx.arrays, ctx.options.objective)
    order = np.argsort(-contribution, kind="stable")
    depths, sims, finished = shrink(ctx.graph, ctx.names, ctx.occupancy, ctx.makespan, order,
                                    deadline=ctx.deadline)
    ctx.stats.update(search_simulations=sims, search_finished=finished)
    return [ctx.verify("search", depths)]


FORMULATIONS = {
    "flow": lambda ctx: _solve_lp(ctx, "flow"),
    "potentials": lambda ctx: _solve_lp(ctx, "potentials"),
    "paths": lambda ctx: _solve_lp(ctx, "paths"),
    "occupancy": lambda ctx: [ctx.verify("occupancy", ctx.occupancy)],
    "slack": lambda ctx: [ctx.slack_candidate()],
    "search": _solve_search,
}


def _validate(instance, options: Options) -> str:
    for field, value, valid in (("strategy", options.strategy, STRATEGIES),
                                ("objective", options.objective, OBJECTIVES),
                                ("curve", options.curve, CURVES),
                                ("simulate", options.simulate, SIMULATE_MODES)):
        if value not in valid:
            raise unknown_name_error(f"fifo {field}", value, valid, pointer=f"/options/fifo/{field}")
    formulation = options.formulation or DEFAULT_FORMULATION
    if formulation not in FORMULATIONS:
        raise unknown_name_error("fifo formulation", formulation, FORMULATIONS,
                                 pointer="/options/fifo/formulation")
    if options.solver is not None and formulation in ("potentials", "paths"):
        from dfopt.lp import available_lp_solvers

        if options.solver not in available_lp_solvers():
            raise SolverUnavailableError(options.solver, available_lp_solvers(), kind="LP solver")
    if instance.graph is None:
        raise InstanceError("the fifo problem needs a graph", pointer="/graph")
    cycle = find_cycle(instance.graph)
    if cycle is not None:
        s = instance.graph.streams
        path = " -> ".join([s[cycle[0]].src] + [s[e].dst for e in cycle])
        raise InstanceError(f"fifo sizing needs a DAG, found the cycle {path} (streams {', '.join(cycle)})",
                            pointer="/graph/streams")
    return formulation


def solve(instance, options: Options) -> Solution:
    """Size every FIFO of ``instance.graph``; the answer is proven safe, then checked."""
    formulation = _validate(instance, options)
    t0 = time.perf_counter()
    ctx = _Context(instance.graph, options)
    t_build = time.perf_counter()
    candidates = FORMULATIONS[formulation](ctx)
    t_solve = time.perf_counter()
    safe = [c for c in candidates if c.safe]
    if not safe:  # occupancy and slack are always safe; search starts from occupancy
        raise InfeasibleError(f"{formulation} found no depths it could prove safe: "
                              + "; ".join(f"{c.name}: {c.proof}" for c in candidates))
    best = min(safe, key=lambda c: c.value)
    timed_out = formulation == "search" and not ctx.stats.get("search_finished", True)
    solution = Solution(
        instance=instance.name, problem="fifo", status="time_limit" if timed_out else "feasible",
        objective=best.value, bound=None, formulation=formulation,
        solver=ctx.stats.get("lp_solver", "none"), seed=options.seed,
        sections={"fifo": _section(ctx, best, candidates)},
        stats={**ctx.stats, "time_build_s": t_build - t0, "time_solve_s": t_solve - t_build},
    )
    t = time.perf_counter()
    solution.checks = checks(instance, solution, options.simulate)
    solution.stats["time_check_s"] = time.perf_counter() - t
    return solution


def _section(ctx: _Context, best: Candidate, candidates) -> dict:
    section = {
        "depths": dict(zip(ctx.names, best.depths.tolist())),
        "makespan": int(ctx.makespan), "reference_makespan": int(ctx.makespan),
        "objective": ctx.options.objective, "strategy": ctx.options.strategy,
        **totals(ctx.arrays, best.depths),
        "chosen": best.name, "proof": best.proof,
        "repaired": best.name.endswith("-repaired"),
        "repair_steps": int(ctx.stats.get(f"{best.name.removesuffix('-repaired')}_repair_rounds", 0)),
        "safe": True, "latency_preserving": True,
        "candidates": {c.name: {"safe": c.safe, "proof": c.proof, **totals(ctx.arrays, c.depths)}
                       for c in candidates},
        "occupancy_baseline": totals(ctx.arrays, ctx.occupancy),
    }
    lp_cands = [c for c in candidates if c.name.startswith("lp")]
    if lp_cands:
        section["lp"] = {"candidate": lp_cands[0].name, "safe": lp_cands[0].safe,
                         **totals(ctx.arrays, lp_cands[0].depths)}
    if best.witness is not None:
        section["witness"] = _witness_dict(ctx, best.witness)
    if best.sim is not None:
        section["start"] = {k: int(v) for k, v in best.sim.start.items()}
    if ctx.delays is not None:
        section["delays"] = {n: float(round(d, 6)) for n, d in zip(ctx.names, ctx.delays)}
    return section


def _witness_dict(ctx: _Context, mix: np.ndarray) -> dict:
    """The per-kernel mix as stored in the solution: the common value and the exceptions."""
    values, counts = np.unique(mix, return_counts=True)
    common = float(values[int(np.argmax(counts))])
    names = ctx.family.prog.kernel_names
    return {"lam": common, "kernels": {names[i]: float(mix[i]) for i in np.flatnonzero(mix != common)}}
