"""Polyhedral scheduling (``problem: schedule``; PolyTOPS, DESIGN 5.4).

Given a program (statements with isl domains, accesses, C bodies and the original order), find
a new execution order: one affine row per dimension and statement, legal for every memory-based
dependence, built outermost first by one integer program per row (:mod:`.scheduler`), configured
by a preset and overrides (:mod:`.config`). Formulations:

* ``polytops`` (default) — the iterative ILP scheduler; ``solver`` ``cpsat`` (default) or a MIP
  backend (``highs``, ``scip``, ``cbc``);
* ``isl`` — isl's own scheduler through islpy (:mod:`.baseline`), same dependences.

The solution's ``schedule`` section: ``map`` (isl union map, one time length for all
statements), ``parallel`` (per dimension, no dependence carried), ``scalar``, ``bands``
(permutable runs of loop dimensions), ``tiled_map`` / ``tiled_parallel`` with ``tiling``,
``vector`` and ``sequential`` dimensions from directives, ``code`` (C through isl's AST builder
with OpenMP pragmas), the directives dropped with warnings, and the configuration used. The
checker (:mod:`.checks`) re-derives legality and every flag with isl.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/schedule/jacobi-1d.json"))
>>> sol.sections["schedule"]["map"]
'[TSTEPS, N] -> { S0[t, i] -> [t, 2t + i, 0]; S1[t, i] -> [t, 1 + 2t + i, 1] }'
>>> sol.sections["schedule"]["parallel"], [b["dims"] for b in sol.sections["schedule"]["bands"]]
([False, False, False], [[0, 1]])
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import islpy as isl

from dfopt.errors import InstanceError
from dfopt.models.options import CommonOptions, check_formulation
from dfopt.models.schedule.baseline import isl_schedule
from dfopt.models.schedule.checks import check, checks
from dfopt.models.schedule.config import FIELDS, Config, parse_config
from dfopt.models.schedule.problem import SchedulingProblem, build_problem
from dfopt.models.schedule.scheduler import Outcome, rows_to_map, schedule
from dfopt.polyhedral.analysis import bands, dimension_coefficients, parallel_flags, permute, scalar_dims, tile
from dfopt.solution import Solution

__all__ = ["DEFAULT_FORMULATION", "FORMULATIONS", "Options", "check", "checks", "solve", "schedule_program"]

DEFAULT_FORMULATION = "polytops"
MIP_SOLVERS = ("highs", "scip", "cbc")


@dataclass(frozen=True)
class Options(CommonOptions):
    """Scheduler options: the configuration fields of :mod:`.config` (also CLI flags; lists and
    objects as JSON) and ``config``, a JSON file with more of them (these options win)."""

    config: str | None = None
    strategy: str | None = None
    costs: tuple | None = None
    dimensions: tuple | None = None
    constraints: tuple | None = None
    directives: tuple | None = None
    auto_vectorize: bool | None = None
    bounds: dict | None = None
    fusion: str | None = None
    band: str | None = None
    coincidence: str | None = None
    progression: str | None = None
    rar: bool | None = None
    reorder: str | None = None
    tiling: tuple | None = None
    wavefront: bool | None = None


def _raw_config(options: Options) -> dict:
    raw: dict = {}
    if options.config:
        try:
            with open(options.config, encoding="utf-8") as f:
                raw = json.load(f)
        except OSError as exc:
            raise InstanceError(f"cannot read the schedule configuration {options.config}: {exc.strerror}",
                                pointer="/options/schedule/config") from None
        except json.JSONDecodeError as exc:
            raise InstanceError(f"schedule configuration {options.config}: not JSON ({exc.msg} at line "
                                f"{exc.lineno})", pointer="/options/schedule/config") from None
        if not isinstance(raw, dict):
            raise InstanceError(f"schedule configuration {options.config}: expected a JSON object",
                                pointer="/options/schedule/config")
    for name in FIELDS:
        value = getattr(options, name)
        if value is not None:
            raw[name] = value
    return raw


def _program(instance):
    if instance.program is None or not instance.program.statements:
        raise InstanceError("problem schedule needs a program with statements", pointer="/program")
    return instance.program


def _polytops(problem: SchedulingProblem, config: Config, options: Options) -> tuple[Outcome, str, float]:
    solver = options.solver or "cpsat"
    t = time.perf_counter()
    out = schedule(problem, config, solver, options.time_limit, options.seed)
    return out, rows_to_map(problem, out.rows), time.perf_counter() - t


def _isl(problem: SchedulingProblem, config: Config, options: Options) -> tuple[Outcome, str, float]:
    text, seconds = isl_schedule(problem, config)
    return Outcome(rows=[], solver="isl"), text, seconds


FORMULATIONS = {"polytops": _polytops, "isl": _isl}


def _loop_dim(rows, stmt: str, iterator: int, last: bool) -> int | None:
    """The schedule dimension of a statement's loop over ``iterator`` (its first row using the
    iterator; with ``last`` its innermost loop row)."""
    dims = [d for d, r in enumerate(rows) if r.kind == "loop" and any(r.c[stmt])]
    if last:
        return dims[-1] if dims else None
    return next((d for d in dims if rows[d].c[stmt][iterator]), None)


def _positions(n: int, band_list, tiled: bool) -> list:
    """Where each untiled dimension lands in the tiled schedule (its point loop)."""
    if not tiled:
        return list(range(n))
    starts = {b.dims[0]: len(b.dims) for b in band_list if b.permutable and len(b.dims) >= 2}
    pos, shift = [], 0
    for d in range(n):
        shift += starts.get(d, 0)
        pos.append(d + shift)
    return pos


def intra_band_order(problem: SchedulingProblem, sched, band_list) -> list:
    """A legal permutation of the dimensions that moves, in each permutable band, the member
    with the most stride-1 accesses innermost (Pluto's intra-tile reordering), keeping the band's
    outermost parallel member where it is."""
    coeffs = dimension_coefficients(sched)
    n = len(next(iter(coeffs.values())))
    order = list(range(n))

    def score(d):
        total = 0
        for s in problem.stmts:
            row = coeffs.get(s.name, [None] * n)[d]
            if row is None:
                return None
            total += sum(abs(c) * w for c, w in zip(row, s.contiguity))
        return total
    for b in band_list:
        if not b.permutable or len(b.dims) < 2:
            continue
        keep = next((d for d, p in zip(b.dims, b.parallel) if p), None)
        scores = {d: score(d) for d in b.dims}
        if any(v is None for v in scores.values()):
            continue
        movable = [d for d in b.dims if d != keep]
        best = max(movable, key=lambda d: (scores[d], d))
        last = b.dims[-1]
        if best == last or scores[best] <= scores[last]:
            continue
        members = [d for d in b.dims if d != best] + [best]
        for pos, d in zip(b.dims, members):
            order[pos] = d
    return order


def schedule_program(instance, options: Options) -> dict:
    """Solve and build the ``schedule`` section (without the checks)."""
    program = _program(instance)
    raw = _raw_config(options)
    iters = {}
    for s in program.statements:
        dom = isl.Set(s.domain)
        iters[s.name] = [dom.get_dim_name(isl.dim_type.set, j) for j in range(dom.dim(isl.dim_type.set))]
    config = parse_config(raw, [s.name for s in program.statements], iters, len(program.params))
    formulation = check_formulation("schedule", instance, options, FORMULATIONS, DEFAULT_FORMULATION,
                                    {"polytops": ("cpsat",) + MIP_SOLVERS, "isl": ("isl",)},
                                    needs_graph=False)
    t0 = time.perf_counter()
    problem = build_problem(program, rar=config.rar)
    t_deps = time.perf_counter() - t0
    out, text, t_sched = FORMULATIONS[formulation](problem, config, options)
    sched = isl.UnionMap(text).intersect_domain(problem.domains)
    par = parallel_flags(problem.deps, sched)
    n = len(par)
    band_list = bands(problem.deps, sched, par)
    new_pos = list(range(n))
    if formulation == "polytops" and config.reorder == "contiguity" and \
            not any(d.kind == "vectorize" for d in out.directives):
        order = intra_band_order(problem, sched, band_list)
        if order != list(range(n)):
            text = str(permute(isl.UnionMap(text), order))
            sched = isl.UnionMap(text).intersect_domain(problem.domains)
            par = parallel_flags(problem.deps, sched)
            band_list = bands(problem.deps, sched, par)
            new_pos = [order.index(d) for d in range(n)]
    sec = {"map": text, "dims": n, "parallel": par, "scalar": scalar_dims(sched),
           "bands": [b.to_dict() for b in band_list]}
    tiled = config.tiling is not None and any(b.permutable and len(b.dims) >= 2 for b in band_list)
    code_map, code_par = sched, par
    if tiled:
        tmap = tile(sched, band_list, config.tiling, wavefront=config.wavefront)
        code_map, code_par = tmap, parallel_flags(problem.deps, tmap)
        sec["tiled_map"] = str(tmap)
        sec["tiled_parallel"] = code_par
    pos = _positions(n, band_list, tiled)
    vector, sequential = [], []
    for d in out.directives:
        if formulation != "polytops":
            break
        dim = _loop_dim(out.rows, d.statement, d.loop, last=d.kind == "vectorize")
        if dim is None:
            continue
        dim = new_pos[dim]
        if d.kind == "vectorize":
            vector.append(pos[dim])
        elif d.kind == "sequential":
            sequential.append(pos[dim])
    code_flags = [p and k not in sequential for k, p in enumerate(code_par)]
    sec["vector"] = sorted(set(vector))
    sec["sequential"] = sorted(set(sequential))
    sec["code"] = _code(program, str(code_map), code_flags, sec["vector"])
    sec["config"] = config.to_dict()
    if out.warnings:
        sec["warnings"] = list(out.warnings)
    if out.dropped:
        sec["dropped_directives"] = [{"statement": d.statement, "loop": d.loop, "kind": d.kind} for d in out.dropped]
    stats = {"time_dependences_s": t_deps, "time_schedule_s": t_sched, "edges": len(problem.edges),
             "ilp_solves": out.solves, "ilp_build_s": out.build_time, "ilp_solve_s": out.solve_time,
             "cuts": out.cuts, "refinements": out.refinements}
    return {"section": sec, "formulation": formulation, "solver": out.solver, "stats": stats}


def _code(program, schedule_text: str, parallel: list, vector: list) -> str:
    from dfopt.codegen.poly import kernel_c
    return kernel_c(program, schedule_text, parallel=parallel, vector=tuple(vector))


def solve(instance, options: Options) -> Solution:
    """Schedule the instance's program; the schedule is checked before it is returned."""
    got = schedule_program(instance, options)
    solution = Solution(instance=instance.name, problem="schedule", status="feasible", objective=None,
                        bound=None, formulation=got["formulation"], solver=got["solver"], seed=options.seed,
                        sections={"schedule": got["section"]}, stats=got["stats"])
    t = time.perf_counter()
    solution.checks = checks(instance, solution)
    solution.stats["time_check_s"] = time.perf_counter() - t
    return solution
