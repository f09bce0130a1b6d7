"""Memory-based dependences of a polyhedral program, computed with islpy.

A dependence relates two statement instances (source -> sink) that access the same array
element, at least one of them by a write, with the source executed strictly before the sink in
the original schedule:

- ``raw`` (flow): source writes, sink reads;
- ``war`` (anti): source reads, sink writes;
- ``waw`` (output): both write.

They are *memory-based*, not value-based: every ordered pair counts, not only the last writer
before a read (no ``compute_flow`` / array dataflow analysis). This is the conservative set a
reordering must respect when nothing is renamed or expanded. The order is computed directly as
``before = S.lex_lt_union_map(S)`` (i.e. ``S^-1 . (<<) . S`` on the common time space), and a
dependence kind is ``(W . R^-1) & before`` (for RAW; WAR and WAW alike).

All relations are restricted to the statement domains and to the program's ``context``.

>>> from dfopt.ir.program import Program, Statement
>>> p = Program(params=("N",), context="[N] -> { : N >= 1 }", statements=(
...     Statement("S0", "[N] -> { S0[i] : 0 <= i < N }", reads=("[N] -> { S0[i] -> A[i - 1] }",),
...               writes=("[N] -> { S0[i] -> A[i] }",)),),
...     schedule="[N] -> { S0[i] -> [0, i, 0] }")
>>> d = dependences(p)
>>> d["raw"]
UnionMap("[N] -> { S0[i] -> S0[i' = 1 + i] : N > 0 and 0 <= i <= -2 + N }")
>>> {k: v.is_empty() for k, v in d.items()}
{'raw': False, 'war': True, 'waw': True}
>>> import islpy as isl
>>> violated(d, isl.UnionMap("[N] -> { S0[i] -> [-i] }"))["raw"].is_empty()
False
"""

from __future__ import annotations

from collections.abc import Collection

import islpy as isl

from dfopt.errors import InstanceError
from dfopt.ir.program import Program

KINDS = ("raw", "war", "waw")


def _context(program: Program) -> isl.Set | None:
    return isl.Set(program.context) if program.context else None


def domains(program: Program) -> isl.UnionSet:
    """The union of the statement domains, within the program's context."""
    domains = None
    for s in program.statements:
        d = isl.UnionSet.from_set(isl.Set(s.domain))
        domains = d if domains is None else domains.union(d)
    if domains is None:
        raise ValueError("the program has no statements")
    context = _context(program)
    return domains if context is None else domains.intersect_params(context)


def _union(texts, space_of: isl.UnionSet) -> isl.UnionMap:
    result = isl.UnionMap.empty(space_of.get_space())
    for text in texts:
        result = result.union(isl.UnionMap.from_map(isl.Map(text)))
    return result


def access_relations(program: Program) -> tuple[isl.UnionMap, isl.UnionMap]:
    """(reads, writes): statement instance -> array element, restricted to the domains and the context."""
    doms = domains(program)
    reads = _union((r for s in program.statements for r in s.reads), doms)
    writes = _union((w for s in program.statements for w in s.writes), doms)
    return reads.intersect_domain(doms).coalesce(), writes.intersect_domain(doms).coalesce()


def original_schedule(program: Program) -> isl.UnionMap:
    """The program's schedule (``program.schedule``, else the union of the statements' own
    schedules) restricted to the domains. Raises ``ValueError`` when a statement is unscheduled
    or when the schedule's time spaces differ (pad to one 2d+1 length)."""
    doms = domains(program)
    if program.schedule:
        sched = isl.UnionMap(program.schedule)
    else:
        pieces = [s.schedule for s in program.statements]
        if any(p is None for p in pieces):
            missing = [s.name for s in program.statements if s.schedule is None]
            raise InstanceError(f"no program schedule, and statement(s) {missing} have none of their own: give "
                                "program.schedule or a schedule per statement", pointer="/program/schedule")
        sched = _union(pieces, doms)
    sched = sched.intersect_domain(doms).coalesce()
    unscheduled = doms.subtract(sched.domain())
    if not unscheduled.is_empty():
        raise ValueError(f"the schedule does not cover the instances {unscheduled}")
    _check_one_time_space(sched)
    return sched


def _check_one_time_space(sched: isl.UnionMap) -> None:
    dims = set()
    maps = sched.get_map_list()
    for i in range(maps.n_map()):
        dims.add(maps.get_at(i).dim(isl.dim_type.out))
    if len(dims) > 1:
        raise ValueError(f"the schedule maps statements to time spaces of different dimensions "
                         f"{sorted(dims)}; pad every statement's time vector to one length")


def _before(sched: isl.UnionMap) -> isl.UnionMap:
    """Pairs of instances (a -> b) with sched(a) lexicographically before sched(b)."""
    return sched.lex_lt_union_map(sched)


def dependences(program: Program, kinds: Collection[str] = KINDS) -> dict[str, isl.UnionMap]:
    """Memory-based dependences {kind: source -> sink} for ``kinds`` among raw, war, waw."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown dependence kind(s) {unknown}; expected some of {list(KINDS)}")
    reads, writes = access_relations(program)
    before = _before(original_schedule(program))
    pairs = {"raw": (writes, reads), "war": (reads, writes), "waw": (writes, writes)}
    context = _context(program)
    result = {}
    for kind in kinds:
        src, dst = pairs[kind]
        dep = src.apply_range(dst.reverse()).intersect(before)
        if context is not None:
            dep = dep.intersect_params(context)
        result[kind] = dep.coalesce()
    return result


def read_pairs(program: Program) -> isl.UnionMap:
    """Read-after-read pairs (source read before sink read of one element): not a dependence, a
    reordering may swap them, but a scheduler may keep them close (proximity)."""
    reads, _ = access_relations(program)
    return reads.apply_range(reads.reverse()).intersect(_before(original_schedule(program))).coalesce()


def violated(deps: dict, schedule: isl.UnionMap | str) -> dict[str, isl.UnionMap]:
    """The dependence pairs that ``schedule`` does not run source strictly before sink, per kind
    (all empty when the schedule is legal). Pairs whose source or sink the schedule does not map
    count as violated. The schedule's statements must share one time space."""
    sched = isl.UnionMap(schedule) if isinstance(schedule, str) else schedule
    _check_one_time_space(sched)
    before = _before(sched)
    return {kind: dep.subtract(before).coalesce() for kind, dep in deps.items()}


def is_legal(deps: dict, schedule: isl.UnionMap | str) -> bool:
    """True when ``schedule`` violates none of ``deps``."""
    return all(v.is_empty() for v in violated(deps, schedule).values())
