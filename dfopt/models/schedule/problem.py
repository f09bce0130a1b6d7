"""The scheduling problem built from a polyhedral program: statements (iterators, domains,
per-iterator contiguity and extent ranks) and dependence edges with their Farkas dual cones.

An *edge* is one basic relation ``S[s] -> T[t]`` of the memory-based dependences (RAW, WAR and
WAW together; RAR edges, when asked for, only bound proximity). Its cone (:mod:`dfopt.polyhedral.
farkas`) is computed once and reused at every dimension.

Contiguity and extents are measured at one dataset of the program (``sizes``: ``large`` when
present, else the first; parameters without a value count as 1000):

* ``contiguity[j]`` — how many accesses of the statement move by one element when iterator ``j``
  steps (row-major layout, stride +-1); the iterator with the most should be innermost;
* ``extent_rank[j]`` — how many of the statement's iterators have a larger trip count than
  ``j`` (0 for the biggest loop).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from dfopt.ir.program import Program
from dfopt.polyhedral.analysis import maps
from dfopt.polyhedral.dependences import dependences, read_pairs
from dfopt.polyhedral.farkas import Cone, cone

DEFAULT_PARAM = 1000


@dataclass
class Stmt:
    name: str
    index: int
    iters: list
    domain: isl.Set
    contiguity: list = field(default_factory=list)
    strides: list = field(default_factory=list)     # per affine access: its element stride per iterator
    extent_rank: list = field(default_factory=list)
    extents: list = field(default_factory=list)

    @property
    def depth(self) -> int:
        return len(self.iters)


@dataclass
class Edge:
    id: int
    src: str
    dst: str
    relation: isl.BasicMap
    kinds: tuple
    cone: Cone | None
    proximity_only: bool = False

    def describe(self) -> str:
        return f"{'/'.join(self.kinds)} {self.src} -> {self.dst}"


@dataclass
class SchedulingProblem:
    program: Program
    params: list
    stmts: list
    edges: list
    deps: dict                 # kind -> isl.UnionMap (raw, war, waw)
    domains: isl.UnionSet
    param_values: dict

    def stmt(self, name: str) -> Stmt:
        return self.stmts[self.index[name]]

    @property
    def index(self) -> dict:
        return {s.name: i for i, s in enumerate(self.stmts)}


def _dataset(program: Program) -> dict:
    sizes = program.sizes or {}
    chosen = sizes.get("large") or (next(iter(sizes.values())) if sizes else {})
    return {p: int(chosen.get(p, DEFAULT_PARAM)) for p in program.params}


def _fixed(s: isl.Set, values: dict) -> isl.Set:
    sp = s.get_space()
    for k in range(sp.dim(isl.dim_type.param)):
        name = sp.get_dim_name(isl.dim_type.param, k)
        if name in values:
            s = s.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(s.get_ctx(), values[name]))
    return s


def _extents(domain: isl.Set, values: dict) -> list:
    fixed = _fixed(domain, values)
    out = []
    for j in range(fixed.dim(isl.dim_type.set)):
        try:
            hi, lo = fixed.dim_max_val(j), fixed.dim_min_val(j)
            out.append(int(hi.to_python()) - int(lo.to_python()) + 1 if hi.is_int() and lo.is_int() else DEFAULT_PARAM)
        except (isl.Error, TypeError, ValueError):
            out.append(DEFAULT_PARAM)
    return out


def _strides(access: isl.Map, program: Program, values: dict) -> list | None:
    """Per iterator: the access's element stride (row-major), None when not affine."""
    array = access.get_tuple_name(isl.dim_type.out)
    shape = (program.arrays.get(array) or {}).get("shape")
    n_in, n_out = access.dim(isl.dim_type.in_), access.dim(isl.dim_type.out)
    if shape is None or len(shape) != n_out:
        return None
    sizes = [int(values.get(x, DEFAULT_PARAM)) if isinstance(x, str) else int(x) for x in shape]
    try:
        ma = access.as_pw_multi_aff().as_multi_aff()
    except isl.Error:  # not a single affine function (e.g. a guarded or multi-valued access)
        return None
    strides = [0] * n_in
    for k in range(n_out):
        aff = ma.get_at(k)
        inner = 1
        for size in sizes[k + 1:]:
            inner *= size
        for j in range(n_in):
            c = aff.get_coefficient_val(isl.dim_type.in_, j)
            if not c.is_int():
                return None
            strides[j] += int(c.to_python()) * inner
    return strides


def _stmt_measures(stmt: Stmt, accesses: list, program: Program, values: dict) -> None:
    stmt.extents = _extents(stmt.domain, values)
    stmt.contiguity = [0] * stmt.depth
    for acc in accesses:
        strides = _strides(acc, program, values)
        if strides is None:
            continue
        stmt.strides.append(strides)
        for j, s in enumerate(strides):
            if abs(s) == 1:
                stmt.contiguity[j] += 1
    stmt.extent_rank = [sum(1 for e in stmt.extents if e > x) for x in stmt.extents]


def _basic_maps(umap: isl.UnionMap) -> list:
    out = []
    for m in maps(umap.coalesce()):
        bl = m.get_basic_map_list()
        out += [bl.get_at(i) for i in range(bl.n_basic_map())]
    return out


def build_problem(program: Program, rar: bool = False, deps: dict | None = None,
                  cones: bool = True) -> SchedulingProblem:
    """The statements and edges of ``program``; ``deps`` reuses dependences computed before,
    ``cones=False`` skips the Farkas cones (for isl's scheduler, which computes its own)."""
    context = isl.Set(program.context) if program.context else None
    stmts = []
    for i, s in enumerate(program.statements):
        dom = isl.Set(s.domain)
        if context is not None:
            dom = dom.intersect_params(context)
        iters = [dom.get_dim_name(isl.dim_type.set, j) or f"i{j}" for j in range(dom.dim(isl.dim_type.set))]
        stmts.append(Stmt(s.name, i, iters, dom))
    values = _dataset(program)
    for st, s in zip(stmts, program.statements):
        _stmt_measures(st, [isl.Map(t) for t in tuple(s.reads) + tuple(s.writes)], program, values)
    deps = dependences(program) if deps is None else deps
    union = None
    for d in deps.values():
        union = d if union is None else union.union(d)
    kinds_of: dict[tuple, list[str]] = {}
    for kind, d in deps.items():
        for m in maps(d):
            key = (m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out))
            kinds_of.setdefault(key, []).append(kind)
    edges: list[Edge] = []
    for bm in (_basic_maps(union) if union is not None else []):
        if bm.is_empty():
            continue
        key = (bm.get_tuple_name(isl.dim_type.in_), bm.get_tuple_name(isl.dim_type.out))
        edges.append(Edge(len(edges), key[0], key[1], bm, tuple(kinds_of.get(key, ())),
                          cone(bm) if cones else None))
    if rar:
        for bm in _basic_maps(read_pairs(program)):
            if not bm.is_empty():
                key = (bm.get_tuple_name(isl.dim_type.in_), bm.get_tuple_name(isl.dim_type.out))
                edges.append(Edge(len(edges), key[0], key[1], bm, ("rar",), cone(bm) if cones else None,
                                  proximity_only=True))
    if not stmts:
        raise ValueError("a program to schedule needs statements")
    domains = isl.UnionSet.from_set(stmts[0].domain)
    for st in stmts[1:]:
        domains = domains.union(isl.UnionSet.from_set(st.domain))
    return SchedulingProblem(program, list(program.params), stmts, edges, deps, domains, values)
