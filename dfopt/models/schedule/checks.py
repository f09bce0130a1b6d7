"""The checker of a schedule, written with isl and without the scheduler or a solver.

* ``schedule-legal`` — the map covers every statement instance of the program, gives every
  statement one common number of time dimensions, and runs the source of every memory-based
  dependence (RAW, WAR, WAW, recomputed from the program) strictly before its sink;
* ``schedule-injective`` — no two instances of a statement share a time vector (the order is
  total);
* ``schedule-parallel`` — each reported parallel flag is true exactly when no dependence is
  carried at that dimension;
* ``schedule-bands`` — every reported band is a run of loop dimensions whose members weakly
  satisfy the dependences live at its start (permutable);
* ``schedule-tiled`` — when a tiled map is reported, the same legality, injectivity and parallel
  flags for it.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> inst = load("instances/schedule/jacobi-1d.json")
>>> sol = solve_instance(inst)
>>> check(inst, sol)
[]
>>> sol.sections["schedule"]["map"] = "[TSTEPS, N] -> { S0[t, i] -> [-t, i, 0]; S1[t, i] -> [-t, i, 1] }"
>>> check(inst, sol)[0][:45]
'map: violates 6 of 6 dependence relation(s), '
"""

from __future__ import annotations

import islpy as isl

from dfopt.polyhedral.analysis import as_union_map, bands, maps, parallel_flags
from dfopt.polyhedral.dependences import dependences, domains, violated
from dfopt.solution import Check


def _parse(text, what: str, bad: list):
    try:
        return isl.UnionMap(text)
    except (isl.Error, TypeError) as exc:
        bad.append(f"{what}: not an isl union map ({exc})")
        return None


def _legal(program, deps, sched: isl.UnionMap, what: str) -> list:
    bad = []
    doms = domains(program)
    missing = doms.subtract(sched.domain())
    if not missing.is_empty():
        bad.append(f"{what}: instances without a time: {missing}")
        return bad
    dims = {m.dim(isl.dim_type.out) for m in maps(sched)}
    if len(dims) != 1:
        bad.append(f"{what}: statements have time vectors of different lengths {sorted(dims)}")
        return bad
    broken = []
    for kind, v in violated(deps, sched.intersect_domain(doms)).items():
        for m in maps(v):
            broken.append(f"{kind} {m}")
    if broken:
        total = sum(len(maps(d)) for d in deps.values())
        bad.append(f"{what}: violates {len(broken)} of {total} dependence relation(s), e.g. {broken[0]}")
    return bad


def _injective(program, sched: isl.UnionMap, what: str) -> list:
    bad = []
    doms = domains(program)
    for m in maps(sched.intersect_domain(doms)):
        if not m.is_injective():
            bad.append(f"{what}: two instances of {m.get_tuple_name(isl.dim_type.in_)} share a time vector")
    return bad


def _parallel(deps, sched, reported, what: str) -> list:
    if reported is None:
        return []
    actual = parallel_flags(deps, sched)
    if list(reported) != actual:
        wrong = [d for d, (a, b) in enumerate(zip(reported, actual)) if a != b]
        if len(reported) != len(actual):
            return [f"{what}: {len(reported)} parallel flags for {len(actual)} dimensions"]
        return [f"{what}: dimension {d} is reported {'parallel' if reported[d] else 'sequential'} but "
                f"{'carries a dependence' if reported[d] else 'carries none'}" for d in wrong]
    return []


def _bands(deps, sched, reported, what: str) -> list:
    if not reported:
        return []
    actual = {tuple(b.dims) for b in bands(deps, sched)}
    bad = []
    for b in reported:
        dims = tuple(b.get("dims", ()))
        if b.get("permutable") and not any(set(dims) <= set(a) for a in actual):
            bad.append(f"{what}: band {list(dims)} is not permutable")
    return bad


def checks(instance, solution) -> list[Check]:
    sec = solution.sections.get("schedule") or {}
    program = instance.program
    deps = dependences(program)
    out = []
    bad: list = []
    sched = _parse(sec.get("map", ""), "map", bad) if sec.get("map") else None
    if sched is None and not bad:
        bad.append("the solution has no schedule map")
    if sched is not None:
        bad += _legal(program, deps, sched, "map")
    out.append(Check("schedule-legal", not bad, bad))
    if sched is None or bad:
        return out
    sched = sched.intersect_domain(domains(program))
    inj = _injective(program, sched, "map")
    out.append(Check("schedule-injective", not inj, inj))
    par = _parallel(deps, sched, sec.get("parallel"), "parallel")
    out.append(Check("schedule-parallel", not par, par))
    bnd = _bands(deps, sched, sec.get("bands"), "bands")
    out.append(Check("schedule-bands", not bnd, bnd))
    if sec.get("tiled_map"):
        tb: list = []
        tiled = _parse(sec["tiled_map"], "tiled_map", tb)
        if tiled is not None:
            tb += _legal(program, deps, tiled, "tiled_map")
            if not tb:
                tiled = tiled.intersect_domain(domains(program))
                tb += _injective(program, tiled, "tiled_map")
                tb += _parallel(deps, tiled, sec.get("tiled_parallel"), "tiled_parallel")
        out.append(Check("schedule-tiled", not tb, tb))
    return out


def check(instance, solution) -> list[str]:
    """Every violation found, as text (empty when the schedule passes)."""
    return [d for c in checks(instance, solution) for d in c.details]


__all__ = ["check", "checks", "as_union_map"]
