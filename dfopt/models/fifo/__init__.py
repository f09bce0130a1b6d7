"""FIFO sizing (``problem: fifo``; StreamTensor section 5.3; docs/fifo.md).

Chooses the depth of every stream so that the design neither deadlocks nor runs longer than with
unbounded FIFOs (docs/design.md, the token timing model), at the least total depth, bits or
BRAM18 blocks. Every answer is proven safe and latency-preserving before it is returned — by a
witness schedule (:mod:`.witness`) or by the bounded simulation (:mod:`dfopt.sim`) — and checked
again by :mod:`.checks`. The formulations are in :mod:`.formulations` (default ``slack``).

A fork-join whose long branch (through ``c``, 6 cycles to its first token) makes the short one
buffer:

>>> from dfopt.ir import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a"), Kernel("c", delay=6), Kernel("b")],
...                   [Stream("ab", "a", "b", tokens=8), Stream("ac", "a", "c", tokens=8),
...                    Stream("cb", "c", "b", tokens=8)])
>>> sol = size(g, objective="bits")
>>> dict(sol.decision.depths), sol.objective, sol.ok
({'ab': 7, 'ac': 2, 'cb': 2}, 352, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.fifo.checks import SIMULATE_MODES, check, checks
from dfopt.models.fifo.data import FifoData, prepare
from dfopt.models.fifo.decision import FifoDepths
from dfopt.models.fifo.edges import OBJECTIVES, STRATEGIES, objective_value, totals
from dfopt.models.fifo.formulations import formulations
from dfopt.models.fifo.summary import summary
from dfopt.models.options import CommonOptions, option
from dfopt.sim import simulate

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph
    from dfopt.solution import Solution

__all__ = ["PROBLEM", "Options", "FifoDepths", "size", "check", "checks"]

CURVES = ("exact", "paper")


@dataclass(frozen=True)
class Options(CommonOptions):
    """FIFO sizing options (``options.fifo`` of an instance, ``dfopt solve`` flags, keywords)."""

    strategy: str = option("normal", "which IIs the token curves assume: each stream's own (normal) or the "
                                     "slowest kernel's everywhere (conservative)", choices=STRATEGIES)
    objective: str = option("depth", "what to minimise: total depth, total bits, or BRAM18 blocks",
                            choices=OBJECTIVES)
    curve: str = option("exact", "token-curve closed forms of the LP formulations: exact, or the paper's",
                        choices=CURVES)
    keep_best: bool = option(True, "LP formulations: return the best verified candidate (LP, occupancy, "
                                   "slack, their minimum)")
    repair_rounds: int = option(100, "simulations the repair of stalling LP depths may spend",
                                minimum=0, maximum=1_000_000)
    simulate: str = option("auto", "bounded simulation of candidates and in the checks: auto (graphs up to "
                                   "8M events, or when no witness proves the depths), always, never",
                           choices=SIMULATE_MODES)
    refine_budget: int = option(100_000_000, "events x schedule passes the per-kernel witness search may "
                                             "spend", minimum=0, maximum=10**12)
    latency_slack: float = option(0.0, "allow a makespan up to (1 + X) x the unbounded reference (0: "
                                        "latency-preserving)", minimum=0, maximum=100, metavar="X")
    frontier: int = option(0, "also return N Pareto points (objective vs makespan) at latency slacks from 0 to "
                              "frontier_slack, each proven by simulation", minimum=0, maximum=64, metavar="N")
    frontier_slack: float = option(1.0, "the largest latency slack of the frontier", exclusive_minimum=0,
                                   maximum=100, metavar="X")


def objective(data: FifoData, decision: FifoDepths) -> int:
    return objective_value(data.arrays, _vector(data, decision), data.options.objective)


def _vector(data: FifoData, decision: FifoDepths) -> np.ndarray:
    return np.array([decision.depths[n] for n in data.names], dtype=np.int64)


def report(data: FifoData, outcome: Outcome, options: Options) -> dict:
    """The ``fifo`` section beside the depths: totals, the proof, every candidate, the baseline.

    From a decision alone (``outcome.report`` empty: the checker's recount) only the figures the
    instance and the depths give; the search's record (``PROCESS_KEYS``) is checked by
    :func:`~dfopt.models.fifo.checks.search_record_faults` instead."""
    arrays = data.arrays
    rec = _search_record(data, outcome.report["best"], outcome.report["candidates"]) if outcome.report else {}
    slack = options.latency_slack > 0
    section = {
        "makespan": int(data.makespan), "reference_makespan": int(data.makespan),
        "objective": options.objective, "strategy": options.strategy,
        **totals(arrays, _vector(data, outcome.decision)),
        **{k: rec[k] for k in ("chosen", "proof", "repaired", "repair_steps") if k in rec},
        "safe": True, "latency_preserving": True,          # the checks prove both before a recount
        **{k: rec[k] for k in ("candidates",) if k in rec},
        "occupancy_baseline": totals(arrays, data.occupancy),
        **{k: rec[k] for k in ("lp", "witness", "start") if k in rec},
        **({"witness_lp": outcome.report["witness_lp"]} if "witness_lp" in outcome.report else {}),
    }
    if slack:
        # the depths' own makespan is what the bounded run gives: the checks simulate it
        run = simulate(data.graph, dict(zip(data.names, _vector(data, outcome.decision).tolist())))
        section.update(makespan=run.makespan, latency_slack=options.latency_slack, makespan_limit=data.limit,
                       latency_preserving=run.makespan == data.makespan)
    if outcome.report.get("frontier") is not None:
        section["frontier"] = outcome.report["frontier"]
    if data.delays is not None:
        section["delays"] = {n: float(round(d, 6)) for n, d in zip(data.names, data.delays)}
    return section


def _search_record(data: FifoData, best, candidates: list) -> dict:
    """What the search knows: the chosen candidate and its proof, every candidate, the LP's."""
    arrays = data.arrays
    rec = {"chosen": best.name, "proof": best.proof, "repaired": best.name.endswith("-repaired"),
           "repair_steps": int(data.stats.get(f"{best.name.removesuffix('-repaired')}_repair_rounds", 0)),
           "candidates": {c.name: {"safe": c.safe, "proof": c.proof, **totals(arrays, c.depths)} for c in candidates}}
    lp_cands = [c for c in candidates if c.name.startswith("lp")]
    if lp_cands:
        rec["lp"] = {"candidate": lp_cands[0].name, "safe": lp_cands[0].safe, **totals(arrays, lp_cands[0].depths)}
    if best.witness is not None:
        rec["witness"] = _witness_dict(data, best.witness, best.shift)
    if best.sim is not None:
        rec["start"] = {k: int(v) for k, v in best.sim.start.items()}
    return rec


#: what only the search knows (checked for consistency by ``search_record_faults``, the witness by
#: the witness check, not recounted): the candidates and their proofs, the LP's delays, start times
PROCESS_KEYS = frozenset({"chosen", "proof", "repaired", "repair_steps", "candidates", "lp", "witness", "start",
                          "delays", "frontier", "witness_lp"})


def _witness_dict(data: FifoData, mix: np.ndarray, shift: np.ndarray | None = None) -> dict:
    """The per-kernel mix as stored in the solution: the common value and the exceptions, and
    the kernels' non-zero shifts (``witness-lp``)."""
    values, counts = np.unique(mix, return_counts=True)
    common = float(values[int(np.argmax(counts))])
    names = data.family.prog.kernel_names
    out: dict = {"lam": common, "kernels": {names[i]: float(mix[i]) for i in np.flatnonzero(mix != common)}}
    if shift is not None:
        out["shift"] = {names[i]: int(shift[i]) for i in np.flatnonzero(shift)}
    return out


def _plot(instance, solution, path, streams=None) -> None:
    from dfopt.plot import plot_fifo

    plot_fifo(instance, solution, path, streams=streams)


PROBLEM = Problem(
    info=registry.info("fifo"), options=Options, decision=FifoDepths, prepare=prepare,
    formulations=formulations(), default="slack", objective=objective, report=report, checks=checks,
    lower_bound=lambda data: data.lower_bound(),
    summary=summary, plot=_plot, recount=True, process_keys=PROCESS_KEYS,
    recorded={"objective": lambda inst, o: o.objective, "strategy": lambda inst, o: o.strategy})


def size(graph: DataflowGraph, **options: Any) -> Solution:
    """Size the FIFOs of ``graph`` (a :class:`~dfopt.ir.DataflowGraph`); returns the checked
    :class:`~dfopt.solution.Solution` (``.decision.depths``: stream -> depth).

    Parameters
    ----------
    graph : DataflowGraph
        Kernels and streams with their timing (``delay``, ``ii``, ``tokens``, ``width``).
    **options
        Fields of :class:`Options` (``objective="bits"``, ``formulation="flow"``, ``time_limit=10``).

    Examples
    --------
    >>> from dfopt.ir import DataflowGraph, Kernel, Stream
    >>> g = DataflowGraph([Kernel("a"), Kernel("b", ii=3)], [Stream("e", "a", "b", tokens=4)])
    >>> size(g, formulation="occupancy").decision.depths["e"]
    3
    """
    from dfopt.api import solve_graph

    return solve_graph("fifo", graph, **options)
