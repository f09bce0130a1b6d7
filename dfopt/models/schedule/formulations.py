"""The scheduling formulations and what both share after the schedule is found.

* ``polytops`` (default) — the iterative ILP scheduler (:mod:`.scheduler`); ``solver`` ``cpsat``
  (default) or a MIP backend (``highs``, ``scip``, ``cbc``);
* ``isl`` — isl's own scheduler through islpy (:mod:`.baseline`), same dependences.

:func:`finish` turns a schedule map into the decision and the section: parallel flags, bands, the
intra-band reordering (polytops), tiling, the directives' vector and sequential dimensions, and
the C code through isl's AST builder.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import islpy as isl
import networkx as nx

from dfopt.ir.program import Program
from dfopt.models.base import Outcome, Unbounded
from dfopt.models.schedule.baseline import isl_schedule
from dfopt.models.schedule.config import Config
from dfopt.models.schedule.decision import Schedule
from dfopt.models.schedule.problem import SchedulingProblem
from dfopt.models.schedule.scheduler import Outcome as RowOutcome
from dfopt.models.schedule.scheduler import rows_to_map, schedule
from dfopt.polyhedral.analysis import (
    bands,
    dimension_coefficients,
    maps,
    parallel_flags,
    permute,
    scalar_dims,
    tile,
    time_dependences,
    unordered,
)
from dfopt.polyhedral.dependences import is_legal
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.models.schedule import Options
    from dfopt.polyhedral.analysis import Band

MIP_SOLVERS = ("highs", "scip", "cbc")


@dataclass
class ScheduleData:
    """The program, its configuration (preset and overrides) and its dependences."""

    program: Program
    config: Config
    problem: SchedulingProblem
    time_dependences_s: float


@dataclass(frozen=True)
class PolyTOPS(Unbounded):
    """One integer program per schedule dimension, outermost first."""

    name: str = "polytops"
    solvers: tuple = ("cpsat",) + MIP_SOLVERS

    def solve(self, data: ScheduleData, options: Options) -> Outcome:
        t = time.perf_counter()
        out = schedule(data.problem, data.config, options.solver or "cpsat", options.time_limit, options.seed)
        return finish(data, self.name, out, rows_to_map(data.problem, out.rows), time.perf_counter() - t)


@dataclass(frozen=True)
class Isl(Unbounded):
    """isl's scheduler on the same dependences (the baseline)."""

    name: str = "isl"
    solvers: tuple = ("isl",)

    def solve(self, data: ScheduleData, options: Options) -> Outcome:
        text, seconds = isl_schedule(data.problem, data.config)
        return finish(data, self.name, RowOutcome(rows=[], solver="isl"), text, seconds)


def finish(data: ScheduleData, formulation: str, out: RowOutcome, text: str, t_sched: float) -> Outcome:
    """The decision and the section of a found schedule (see the module docstring)."""
    problem, config, program = data.problem, data.config, data.program
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
    sec: dict[str, Any] = {"dims": n, "parallel": par, "scalar": scalar_dims(sched),
                           "bands": [b.to_dict() for b in band_list]}
    tiled = config.tiling is not None and any(b.permutable and len(b.dims) >= 2 for b in band_list)
    code_map, code_par, tiled_text = sched, par, None
    if tiled and config.tiling is not None:
        tmap = tile(sched, band_list, config.tiling, wavefront=config.wavefront)
        if formulation == "polytops" and config.reorder == "contiguity" and not out.directives:
            coeffs = dimension_coefficients(sched)
            groups = band_groups(problem, sched, band_list, coeffs)
            orders, flats = point_loop_orders(problem, coeffs, groups), untiled_groups(coeffs, groups)
            for o, f in ((orders, flats), (orders, {}), ({}, flats)):
                if not o and not f:
                    continue
                cand = tile(sched, band_list, config.tiling, wavefront=config.wavefront, point_order=o, untiled=f)
                if is_legal(problem.deps, cand):
                    tmap = cand
                    sec.update({k: v for k, v in (("point_order", o), ("untiled", f)) if v})
                    break
        code_map, code_par = tmap, parallel_flags(problem.deps, tmap)
        tiled_text = str(tmap)
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
    sec["vector"] = sorted(set(vector))
    sec["sequential"] = sorted(set(sequential))
    sec["code"] = code_of(program, str(code_map), code_par, sec["sequential"], sec["vector"])
    sec["config"] = config.to_dict()
    if out.warnings:
        sec["warnings"] = list(out.warnings)
    if out.dropped:
        sec["dropped_directives"] = [{"statement": d.statement, "loop": d.loop, "kind": d.kind} for d in out.dropped]
    stats = {"time_dependences_s": data.time_dependences_s, "time_schedule_s": t_sched, "edges": len(problem.edges),
             "ilp_solves": out.solves, "ilp_build_s": out.build_time, "ilp_solve_s": out.solve_time,
             "cuts": out.cuts, "refinements": out.refinements}
    return Outcome(Schedule(text, tiled_text), Termination.FEASIBLE, solver=out.solver, stats=stats, report=sec)


def code_of(program: Program, schedule_text: str, parallel: list, sequential: list, vector: list) -> str:
    """The C of ``program`` in the order of ``schedule_text``: OpenMP on the parallel loops that no
    ``sequential`` directive holds back, ``omp simd`` on the ``vector`` ones (isl's AST builder)."""
    from dfopt.codegen.poly import kernel_c

    flags = [p and k not in sequential for k, p in enumerate(parallel)]
    return kernel_c(program, schedule_text, parallel=flags, vector=tuple(vector))


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


def intra_band_order(problem: SchedulingProblem, sched: isl.UnionMap, band_list: Sequence[Band]) -> list:
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


def band_groups(problem: SchedulingProblem, sched: isl.UnionMap, band_list: Sequence[Band], coeffs: dict) -> list:
    """Per tiled band (permutable, two members or more), the groups of statements that a
    dependence live at the band's start links, as ``(band, names)``: one point order keeps a
    group's dependences (the band is permutable), and different groups are ordered before the
    band. ``coeffs`` are the map's :func:`~dfopt.polyhedral.analysis.dimension_coefficients`;
    statements without rows are left out."""
    names = [st.name for st in problem.stmts if coeffs.get(st.name)]
    tiled = [b for b in band_list if b.permutable and len(b.dims) >= 2]
    if not names or not tiled:
        return []
    n = len(coeffs[names[0]])
    links = []
    for dep in problem.deps.values():
        for m in maps(dep):
            a, b = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
            if a != b and a in coeffs and b in coeffs:
                links.append((a, b, time_dependences(isl.UnionMap.from_map(m), sched)))
    out = []
    for band in tiled:
        g = nx.Graph()
        g.add_nodes_from(names)
        g.add_edges_from((a, b) for a, b, t in links if unordered(t, n, band.dims[0]) is not None)
        out += [(band, [name for name in names if name in c]) for c in nx.connected_components(g)]
    return out


def point_loop_orders(problem: SchedulingProblem, coeffs: dict, groups: list) -> dict:
    """Per statement, the order of its point loops when its permutable bands are tiled (the
    ``point_order`` of :func:`~dfopt.polyhedral.analysis.tile`): in each band, each group of
    :func:`band_groups` moves the member with the best locality for *its* accesses
    (:func:`_locality`: fewest accesses jumping by more than one element, then most stepping by
    one) innermost among the point loops, when the innermost one has accesses jumping by more
    than one element and that member has none and some stepping by one (Pluto's intra-tile
    reordering, per group). The tile loops keep the band's order, so the outermost parallel tile
    loop stays where it is: atax's ``y = A^T tmp`` keeps its parallel tile loop over ``j`` and
    runs ``j`` innermost in a tile (stride-1 in ``A[i][j]``). A group with a statement constant
    in a member of the band (a shallower nest, such as bicg's ``s[j] = 0`` beside
    ``s[j] += r[i] A[i][j]``) keeps its order: that statement would become a condition inside
    the new innermost loop, which costs more than the stride (bicg ran 2.5x slower).
    Statements whose order stays are left out."""
    stmt = {st.name: st for st in problem.stmts}
    orders: dict = {}
    for b, group in groups:
        rows = [coeffs[name] for name in group]
        if any(r[d] is None or not any(r[d]) for r in rows for d in b.dims):
            continue     # a statement constant in a member would run inside the new innermost loop
        cost = {d: _locality([stmt[name] for name in group], coeffs, d) for d in b.dims}
        best, last = min(b.dims, key=lambda d: (cost[d], -d)), b.dims[-1]
        if best == last or cost[last][0] == 0 or cost[best][0] > 0 or cost[best][1] == 0:
            continue     # only to take the innermost loop from jumps to steps of one element
        for name in group:
            order = orders.setdefault(name, list(range(len(coeffs[name]))))
            for pos, d in zip(b.dims, [d for d in b.dims if d != best] + [best]):
                order[pos] = d
    return orders


def untiled_groups(coeffs: dict, groups: list) -> dict:
    """Per statement, the tiled bands (first dimensions) it is left untiled in: those where every
    statement of its group (:func:`band_groups`) runs one loop of the band at most. Tiling
    splits that one loop into a tile loop and a point loop with ``min`` bounds, which buys no
    locality (durbin's three 1-D loops under ``k`` share a band of two members, each statement
    running one of them). Statements tiled everywhere are left out."""
    out: dict = {}
    for b, group in groups:
        rows = [coeffs[name] for name in group]
        if any(r[d] is None for r in rows for d in b.dims):
            continue
        if all(sum(1 for d in b.dims if any(r[d])) <= 1 for r in rows):
            for name in group:
                out.setdefault(name, []).append(b.dims[0])
    return out


def _locality(members: list, coeffs: dict, d: int) -> tuple[int, int]:
    """How well dimension ``d`` does as the innermost loop of ``members``: (accesses that jump by
    more than one element from one iteration to the next, minus the accesses that step by one);
    less is better. An access invariant along ``d`` counts as neither."""
    far = near = 0
    for st in members:
        row = coeffs[st.name][d]
        for strides in st.strides:
            step = abs(sum(c * s for c, s in zip(row, strides)))
            far += step > 1
            near += step == 1
    return far, -near


def formulations() -> tuple:
    return (PolyTOPS(), Isl())
