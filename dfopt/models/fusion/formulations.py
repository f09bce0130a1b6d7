"""The fusion formulations.

* ``cpsat`` — the exact model (:mod:`.exact`) solved by OR-Tools CP-SAT, hinted with the greedy
  solution after merging its consecutive groups;
* ``greedy`` — the paper's Algorithm 2 (:mod:`.greedy`);
* ``mip`` — the same exact model through a MIP backend (``highs`` by default; ``scip``, ``cbc``);
* ``lns`` — large-neighbourhood search from the better of Algorithm 2 and its merged form:
  windows of consecutive groups in a topological order of the quotient re-partitioned exactly on
  CP-SAT, the rest fixed (:mod:`.lns`);
* ``auto`` (default) — ``cpsat`` below ``LNS_FROM`` kernels, where it proves optimality, and
  ``lns`` from there, where the exact model stays near its hint (docs/fusion.md).

The exact formulations never return worse than the merged greedy hint.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dfopt.ir.graph import DataflowGraph
from dfopt.models.base import Bounded, Outcome, Unbounded, incumbent_stats
from dfopt.models.fusion.checks import partition_faults
from dfopt.models.fusion.data import FusionData
from dfopt.models.fusion.decision import Partition
from dfopt.models.fusion.exact import build, decode, set_hint, solve_exact
from dfopt.models.fusion.lns import lns_fusion
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.models.fusion import Options

MIP_SOLVERS = ("highs", "scip", "cbc")
#: kernels from which ``auto`` runs ``lns``: at 50 kernels the exact model proves optima that lns
#: only matches; from 75 on lns in 30 s was 15-52% below the exact model's answer (docs/fusion.md)
LNS_FROM = 60


@dataclass
class FusionProblem:
    """The arrays, Algorithm 2's partition, its merged form (the hint) and the combinatorial bound."""

    data: FusionData
    graph: DataflowGraph
    greedy: np.ndarray
    merged: np.ndarray
    bound: float


def partition_of(data: FusionData, assign: np.ndarray) -> Partition:
    names = data.names
    return Partition(tuple(tuple(names[k] for k in np.flatnonzero(assign == g).tolist())
                           for g in range(int(assign.max()) + 1)))


def assign_of(data: FusionData, decision: Partition) -> np.ndarray:
    where = decision.group_of()
    return np.array([where[k] for k in data.names], dtype=np.int64)


@dataclass(frozen=True)
class Greedy(Unbounded):
    """StreamTensor's Algorithm 2 (joins guarded against cycles between groups)."""

    name: str = "greedy"

    def solve(self, fp: FusionProblem, options: Options) -> Outcome:
        return Outcome(partition_of(fp.data, fp.greedy), Termination.FEASIBLE, solver="none")


@dataclass(frozen=True)
class Exact(Bounded):
    """The exact partition model, hinted with the merged greedy partition."""

    def solve(self, fp: FusionProblem, options: Options) -> Outcome:
        backend = self.backend(options)
        data = fp.data
        t0 = time.perf_counter()
        em = build(data, dominance=options.dominance)
        hinted = set_hint(em, data, fp.merged) if options.hint else False
        t_build = time.perf_counter() - t0
        res = solve_exact(em, backend, options.time_limit, options.seed, options.deterministic,
                          workers=options.workers if backend == "cpsat" else None)
        stats = {**em.stats, "hinted": hinted, "time_build_s": t_build, "time_solver_s": res.wall_time_s,
                 "termination": res.termination.value}
        greedy_bytes = data.cut_traffic(fp.merged)
        stats.update(incumbent_stats([(t, v * em.scale) for t, v in res.stats.get("incumbents", [])], greedy_bytes))
        bound = res.bound * em.scale if res.bound is not None else None
        limit = res.termination is Termination.TIME_LIMIT
        if res.values_array is not None:
            assign = decode(em, res.values_array)
            if np.all(assign >= 0) and data.cut_traffic(assign) <= greedy_bytes:
                proven = res.termination is Termination.OPTIMAL
                return Outcome(partition_of(data, assign), Termination.OPTIMAL if proven else Termination.FEASIBLE,
                               bound, backend, stats, limit_reached=limit)
        stats["fell_back_to_greedy"] = True
        status = Termination.TIME_LIMIT if limit else Termination.FEASIBLE
        return Outcome(partition_of(data, fp.merged), status, bound, backend, stats, limit_reached=limit)


@dataclass(frozen=True)
class Lns(Unbounded):
    """Large-neighbourhood search (:mod:`.lns`) from the better of Algorithm 2 and its merged
    form; every partition it accepts is re-checked by :func:`.checks.partition_faults`. Its bound
    is the combinatorial one, or the objective when a neighbourhood of every kernel was solved
    to optimality."""

    name: str = "lns"
    solvers: tuple = ("cpsat",)
    bound: bool = True

    def solve(self, fp: FusionProblem, options: Options) -> Outcome:
        data = fp.data
        starts = {"greedy": fp.greedy, "merged": fp.merged}
        scores = {k: data.cut_traffic(a) for k, a in starts.items()}
        first = min(scores, key=lambda k: (scores[k], k != "merged"))
        stats: dict = {"start": first, "start_objectives": scores}
        assign = lns_fusion(data, starts[first], time_limit=options.time_limit, seed=options.seed, stats=stats,
                            workers=options.workers, bound=fp.bound, verify=_verifier(fp))
        stats.update(incumbent_stats(stats["lns"].pop("incumbents"), scores["merged"]))
        proven = bool(stats["proven_optimal"])
        bound = data.cut_traffic(assign) if proven else fp.bound
        return Outcome(partition_of(data, assign), Termination.OPTIMAL if proven else Termination.FEASIBLE, bound,
                       "cpsat", stats, limit_reached=not proven)


def _verifier(fp: FusionProblem):
    """The check run on every partition the search accepts: the solver-free checker's faults."""
    def verify(assign: np.ndarray) -> None:
        faults = partition_faults(fp.graph, partition_of(fp.data, assign).groups, fp.data.c_max)
        if faults:
            raise AssertionError("fusion lns accepted an invalid partition: " + "; ".join(faults[:3]))
    return verify


@dataclass(frozen=True)
class Auto(Bounded):
    """The exact model below :data:`LNS_FROM` kernels, the large-neighbourhood search from
    there; ``stats.auto`` names the one that ran."""

    name: str = "auto"
    solvers: tuple = ("cpsat",)

    def solve(self, fp: FusionProblem, options: Options) -> Outcome:
        chosen = Exact("cpsat", ("cpsat",)) if fp.data.n < LNS_FROM else Lns()
        out = chosen.solve(fp, options)
        out.stats["auto"] = chosen.name
        return out


def formulations() -> tuple:
    return (Auto(), Exact("cpsat", ("cpsat",)), Greedy(), Exact("mip", MIP_SOLVERS), Lns())
