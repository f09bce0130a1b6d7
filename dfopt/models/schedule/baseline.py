"""The ``isl`` formulation: isl's own scheduler (``isl_schedule_constraints_compute_schedule``)
through islpy, on the same dependences, as the baseline for the iterative ILP scheduler.

Validity and proximity are the memory-based RAW, WAR and WAW dependences (plus RAR for proximity
with ``rar``); coincidence is the same set, so isl marks and prefers parallel band members.
Options map to isl's context options: ``strategy: feautrier`` selects isl's Feautrier
algorithm, ``coincidence: outer`` sets ``schedule_outer_coincidence``, ``fusion: min`` sets
``schedule_serialize_sccs``. A fresh isl context per call keeps the options local.
"""

from __future__ import annotations

import time

import islpy as isl

from dfopt.models.schedule.config import Config
from dfopt.models.schedule.problem import SchedulingProblem
from dfopt.polyhedral.analysis import pad
from dfopt.polyhedral.dependences import read_pairs

ALGORITHM_ISL, ALGORITHM_FEAUTRIER = 0, 1


def isl_schedule(problem: SchedulingProblem, config: Config) -> tuple[str, float]:
    """(the schedule as padded union-map text, seconds isl spent in compute_schedule)."""
    ctx = isl.Context()
    ctx.set_schedule_algorithm(ALGORITHM_FEAUTRIER if config.strategy == "feautrier" else ALGORITHM_ISL)
    ctx.set_schedule_outer_coincidence(1 if config.coincidence == "outer" else 0)
    ctx.set_schedule_serialize_sccs(1 if config.fusion == "min" else 0)
    domain = isl.UnionSet(str(problem.domains), context=ctx)
    deps = None
    for d in problem.deps.values():
        deps = d if deps is None else deps.union(d)
    validity = isl.UnionMap(str(deps), context=ctx)
    proximity = validity
    if config.rar:
        proximity = proximity.union(isl.UnionMap(str(read_pairs(problem.program)), context=ctx))
    sc = isl.ScheduleConstraints.on_domain(domain)
    if problem.program.context:
        sc = sc.set_context(isl.Set(problem.program.context, context=ctx))
    sc = sc.set_validity(validity).set_proximity(proximity).set_coincidence(validity)
    t = time.perf_counter()
    sched = sc.compute_schedule()
    seconds = time.perf_counter() - t
    umap = sched.get_map().intersect_domain(domain)
    return str(pad(umap)), seconds
