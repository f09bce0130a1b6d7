"""The checker of a schedule, written with isl and without the scheduler or a solver.

* ``schedule-legal`` — the map covers every statement instance of the program, gives every
  statement one common number of time dimensions, and runs the source of every memory-based
  dependence (RAW, WAR, WAW, recomputed from the program) strictly before its sink;
* ``schedule-injective`` — no two instances of a statement share a time vector (the order is
  total);
* ``schedule-parallel`` — each reported parallel flag is true exactly when no dependence is
  carried at that dimension (and the reported ``dims`` and ``scalar`` flags are the map's);
* ``schedule-bands`` — every reported band is a run of loop dimensions whose members weakly
  satisfy the dependences live at its start (permutable);
* ``schedule-tiled`` — when a tiled map is reported, the same legality, injectivity and parallel
  flags for it; when the configuration of the instance and the options asks for tiling, the
  tiled map is there and is the map with its permutable bands tiled by those sizes, each
  statement's point loops in the reported ``point_order`` (Pluto's intra-tile reordering) and
  the reported ``untiled`` statements left untiled;
* ``schedule-code`` — the reported C is what isl's AST builder writes for the map and the
  verified flags;
* ``schedule-objective`` — a schedule has no objective: the solution's objective and bound are null.

>>> import dataclasses, dfopt
>>> inst = dfopt.load("instances/schedule/jacobi-1d.json")
>>> sol = dfopt.solve(inst)
>>> check(inst, sol)
[]
>>> bad = "[TSTEPS, N] -> { S0[t, i] -> [-t, i, 0]; S1[t, i] -> [-t, i, 1] }"
>>> sol.decision = dataclasses.replace(sol.decision, map=bad)
>>> check(inst, sol)[0][:45]
'map: violates 6 of 6 dependence relation(s), '
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import islpy as isl

from dfopt.polyhedral.analysis import as_union_map, bands, maps, out_dims, parallel_flags, scalar_dims, tile
from dfopt.polyhedral.dependences import dependences, domains, violated
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.schedule import Options


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


def _shape(sched, sec) -> list:
    """The reported number of time dimensions and scalar flags against the map's; the claims a
    solved schedule always carries must be there (a deleted claim is a changed solution)."""
    bad = [f"{key}: the solution does not give it" for key in ("dims", "scalar", "parallel", "bands", "vector")
           if key not in sec]
    if "dims" in sec and sec["dims"] != out_dims(sched):
        bad.append(f"dims: reported {sec['dims']}, the map has {out_dims(sched)} time dimensions")
    if sec.get("scalar") is not None and list(sec["scalar"]) != scalar_dims(sched):
        bad.append(f"scalar: reported {sec['scalar']}, the map's scalar dimensions are {scalar_dims(sched)}")
    return bad


def _configuration(instance, options):
    """The scheduler configuration the instance and the options give (never the solution's)."""
    from dfopt.errors import InstanceError
    from dfopt.models.schedule import _raw_config, _repointed
    from dfopt.models.schedule.config import parse_config

    if options is None:
        from dfopt.models.driver import make_options

        options = make_options(instance, problem="schedule")
    program = instance.program
    iters = {}
    for s in program.statements:
        dom = isl.Set(s.domain)
        iters[s.name] = [dom.get_dim_name(isl.dim_type.set, j) for j in range(dom.dim(isl.dim_type.set))]
    try:
        return parse_config(_raw_config(options), [s.name for s in program.statements], iters, len(program.params))
    except InstanceError as err:
        raise _repointed(err, options) from None


def _asked_tiling(config, deps, sched, tiled, what: str, point_order=None, untiled=None) -> list:
    """A configuration with tile sizes and a permutable band of two or more loops asks for the map
    tiled by them; the reported tiled map (None: absent) must be that one, its point loops in the
    reported ``point_order`` (statement -> order of the dimensions within each band) and the
    reported ``untiled`` statements (statement -> band starts) left untiled there; legality is
    checked on the tiled map itself."""
    band_list = bands(deps, sched)
    if config.tiling is None or not any(b.permutable and len(b.dims) >= 2 for b in band_list):
        return []
    if tiled is None:
        return [f"{what}: the configuration tiles by {config.tiling}, but the solution has no tiled map"]
    n = out_dims(sched)
    names = {m.get_tuple_name(isl.dim_type.in_) for m in maps(sched)}
    def permutation(v) -> bool:
        return isinstance(v, list) and sorted(o for o in v if isinstance(o, int)) == list(range(n))
    bad = (_per_statement(point_order, "point_order", "dimension order", names, f"a permutation of 0..{n - 1}",
                          permutation)
           or _per_statement(untiled, "untiled", "band starts", names, "a list of dimensions",
                             lambda v: isinstance(v, list) and all(isinstance(d, int) for d in v)))
    if bad:
        return bad
    try:
        want = tile(sched, band_list, config.tiling, wavefront=config.wavefront, point_order=point_order,
                    untiled=untiled)
    except ValueError as err:      # an order or a band start outside the tiled bands
        return [f"{what}: {err}"]
    if not want.intersect_domain(sched.domain()).is_equal(tiled):
        return [f"{what}: not the map with its permutable bands tiled by {config.tiling}"
                + (" (wavefront)" if config.wavefront else "")
                + (" and the reported point loop order" if point_order else "")
                + (" and untiled statements" if untiled else "")]
    return []


def _per_statement(value, field: str, of: str, names: set, expected: str, ok) -> list:
    """Faults of a reported ``field`` mapping statement names to values ``ok`` accepts (None:
    not reported)."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{field}: expected an object (statement -> {of}), got {value!r}"]
    for name, v in value.items():
        if name not in names:
            return [f"{field}: unknown statement {name!r}"]
        if not ok(v):
            return [f"{field}/{name}: expected {expected}, got {v!r}"]
    return []


def _bands(deps, sched, reported, what: str) -> list:
    """The reported bands are the map's, in order: each band's dimensions, its permutability and
    its parallel flags (a band claimed permutable that is not is named)."""
    if reported is None:
        return []
    actual = [b.to_dict() for b in bands(deps, sched)]
    wanted = [{k: list(v) if isinstance(v, tuple) else v for k, v in b.items()} for b in actual]
    if reported == wanted:
        return []
    bad = []
    dims_of = {tuple(b["dims"]) for b in wanted}
    for b in reported if isinstance(reported, list) else []:
        dims = tuple(b.get("dims", ())) if isinstance(b, dict) else ()
        if isinstance(b, dict) and b.get("permutable") and not any(set(dims) <= set(a) for a in dims_of):
            bad.append(f"{what}: band {list(dims)} is not permutable")
    return bad or [f"{what}: reported {reported!r}, the map's bands are {wanted!r}"]


def checks(instance: Instance, options: Options | None, solution: Solution) -> list[Check]:
    sec = solution.sections.get("schedule") or {}
    decision = solution.decision
    program = instance.program
    assert program is not None  # the driver checks the parts a problem needs
    deps = dependences(program)
    out = []
    bad: list = []
    sched = _parse(decision.map, "map", bad) if decision.map else None
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
    par = _parallel(deps, sched, sec.get("parallel"), "parallel") + _shape(sched, sec)
    out.append(Check("schedule-parallel", not par, par))
    bnd = _bands(deps, sched, sec.get("bands"), "bands")
    out.append(Check("schedule-bands", not bnd, bnd))
    tb: list = []
    code_flags = sec.get("parallel")
    tiled = None
    if decision.tiled_map:
        tiled = _parse(decision.tiled_map, "tiled_map", tb)
        if tiled is not None:
            tb += _legal(program, deps, tiled, "tiled_map")
            if not tb:
                tiled = tiled.intersect_domain(domains(program))
                tb += _injective(program, tiled, "tiled_map")
                tb += _parallel(deps, tiled, sec.get("tiled_parallel"), "tiled_parallel")
        code_flags = sec.get("tiled_parallel")
    if not tb:
        tb += _asked_tiling(_configuration(instance, options), deps, sched, tiled, "tiled_map",
                            sec.get("point_order"), sec.get("untiled"))
    if decision.tiled_map or tb:
        out.append(Check("schedule-tiled", not tb, tb))
    if "code" in sec and not tb and not par:
        out.append(Check("schedule-code", *_code_faults(program, decision.code_map, code_flags, sec)))
    record = [f"{name} {value!r}: a schedule has no objective (null)"
              for name, value in (("objective", solution.objective), ("bound", solution.bound)) if value is not None]
    out.append(Check("schedule-objective", not record, record))
    return out


def _code_faults(program, code_map: str, flags, sec) -> tuple[bool, list]:
    from dfopt.models.schedule.formulations import code_of

    sequential, vector = sec.get("sequential", []), sec.get("vector", [])
    ok_lists = all(isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v)
                   for v in (sequential, vector))
    if not ok_lists or not isinstance(flags, list):
        return False, ["the vector and sequential dimensions must be lists of integers, parallel a list of flags"]
    expected = code_of(program, code_map, flags, sequential, vector)
    if sec["code"] != expected:
        return False, ["the reported code is not what isl's AST builder writes for the map and its flags"]
    return True, []


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    """Every violation found, as text (empty when the schedule passes)."""
    return [d for c in checks(instance, options, solution) for d in c.details]


__all__ = ["check", "checks", "as_union_map"]
