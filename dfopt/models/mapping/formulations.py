"""The mapping formulations.

* ``search`` (default) — branch-and-reduce over bundle / chain applications with a lower-bound
  priority, the best of the first ``first`` feasible foldings (:mod:`.search`);
* ``cpsat`` — the exact assignment of virtual nodes to tiles (:mod:`.exact`), hinted with the
  search's answer when ``hint``; a routing failure adds a no-good and re-solves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.errors import InfeasibleError, NoSolutionError
from dfopt.models.base import Bounded, Outcome, Unbounded
from dfopt.models.mapping import exact
from dfopt.models.mapping.data import MappingData
from dfopt.models.mapping.decision import MappingDecision
from dfopt.models.mapping.evaluate import evaluate
from dfopt.models.mapping.route import route
from dfopt.models.mapping.search import Search
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.models.mapping import Options

ROUTING_RETRIES = 5


def _search(d: MappingData, options, time_limit: float) -> Search:
    s = Search(d, first=options.first, branch=options.branch, max_states=options.max_states,
               time_limit=time_limit, seed=options.seed)
    s.run()
    return s


def _decision(assign: dict, routes: list) -> MappingDecision:
    return MappingDecision(assign, tuple(routes))


def _limited(s: Search) -> bool:
    """The search stopped at ``max_states`` or its time limit before ``first`` foldings."""
    return len(s.found) < s.first


@dataclass(frozen=True)
class SearchFormulation(Unbounded):
    """Branch-and-reduce over the folding primitives (the Dato paper's search)."""

    name: str = "search"
    solvers: tuple = ("cpsat",)

    def solve(self, d: MappingData, options: Options) -> Outcome:
        s = _search(d, options, options.time_limit)
        best = s.best()
        if best is None:
            stop = (f"stopped by the time limit ({options.time_limit:g} s for the search) after"
                    if time.perf_counter() > s.deadline else "in")
            raise NoSolutionError(f"the search found no feasible folding: {stop} {s.stats['states']} states "
                                  f"({s.stats['leaves_failed']} foldings that fit the tiles failed to place or "
                                  "route); raise --time-limit, max_states or branch, or try --formulation cpsat")
        _, assign, routes, _ = best
        return Outcome(_decision(assign, routes), Termination.FEASIBLE, solver="cpsat",
                       stats={**s.stats, "found": sorted(f[0] for f in s.found)}, limit_reached=_limited(s))


@dataclass(frozen=True)
class ExactFormulation(Bounded):
    """The exact CP-SAT assignment, routed lazily (a no-good per unroutable answer)."""

    name: str = "cpsat"
    solvers: tuple = ("cpsat",)

    def solve(self, d: MappingData, options: Options) -> Outcome:
        return _run_cpsat(d, options)


def _run_cpsat(d: MappingData, opts) -> Outcome:
    t0 = time.perf_counter()
    stats: dict = {}
    hint = None
    if opts.hint:
        s = _search(d, opts, opts.time_limit / 4)
        best = s.best()
        stats["hint_makespan"] = None if best is None else best[0]
        hint = best
    em = exact.build(d)
    stats.update(em.stats)
    if hint is not None:
        exact.set_hint(em, hint[1])
    best_bound = None
    limit = False
    for attempt in range(ROUTING_RETRIES + 1):
        left = max(0.5, opts.time_limit - (time.perf_counter() - t0))
        status, assign, bound, wall = exact.solve(em, left, opts.seed, opts.workers, opts.deterministic)
        stats["time_solver_s"] = stats.get("time_solver_s", 0.0) + wall
        limit = limit or status is Termination.TIME_LIMIT
        if bound is not None:       # no-goods only cut unroutable answers: every attempt's bound holds
            best_bound = bound if best_bound is None else max(best_bound, bound)
        if status is Termination.INFEASIBLE and attempt:
            raise InfeasibleError(f"no mapping exists on the {len(d.tiles)} compute tiles of the region: the exact "
                                  f"model's {attempt} answer(s) failed routing ({stats['routing_failure']}) and it "
                                  "proved that no other assignment exists; enlarge the region")
        if status is Termination.INFEASIBLE:
            raise InfeasibleError(f"no mapping exists on the {len(d.tiles)} compute tiles of the region (the exact "
                                  "model proved it): the nodes cannot be bundled and chained within the DMA channels, "
                                  "the data memory and an acyclic tile order; enlarge the region")
        if assign is None:
            break
        ev = evaluate(d, assign)
        routes, why = route(d, ev.host, seed=opts.seed)
        if routes is not None:
            stats["routing_retries"] = attempt
            proven = status is Termination.OPTIMAL and (hint is None or ev.makespan <= hint[0])
            return Outcome(_decision(assign, routes), Termination.OPTIMAL if proven else Termination.FEASIBLE,
                           best_bound, "cpsat", stats, limit_reached=limit)
        stats["routing_failure"] = why
        exact.forbid(em, assign)
    if hint is not None:
        stats["fell_back_to_search"] = True
        return Outcome(_decision(hint[1], hint[2]), Termination.FEASIBLE, best_bound, "cpsat", stats,
                       limit_reached=limit)
    raise NoSolutionError(f"CP-SAT found no routable mapping within {opts.time_limit:g} s; raise time_limit or "
                          "enlarge the region")


def formulations() -> tuple:
    return (SearchFormulation(), ExactFormulation())
