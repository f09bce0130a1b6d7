"""The iterative scheduler: one integer program per schedule dimension, outermost first
(PolyTOPS; docs/schedule.md).

For loop row ``d`` every statement ``S`` gets an affine function ``theta_S(x) = c_S . x +
p_S . N + e_S`` (iterator coefficients ``c``, parameter coefficients ``p``, constant ``e``).
The row's integer program holds:

* **validity** — for each live dependence edge ``S[s] -> T[t]``: ``theta_T(t) - theta_S(s) >=
  sat_e`` on the whole edge, linearised with the edge's Farkas cone (``sat_e`` is 0, or a 0/1
  variable when the ``feautrier`` cost counts satisfied edges, or the row must carry nothing:
  ``coincidence``, then also ``<= 0``);
* **proximity** — ``u . N + w - (theta_T(t) - theta_S(s)) >= 0`` on every live edge (Pluto's
  bounding function), with ``u``, ``w`` minimised by the ``proximity`` cost;
* **progression** — each statement whose rows do not yet span its iterator space gets a row
  outside that span: with ``H`` its rows so far and ``K`` an integer basis of the orthogonal
  complement (``K H^T = 0``), some ``(K c)_k`` is non-zero. This is a disjunction (0/1 variable
  per sign and basis vector), exact, not Pluto's single-orthant ``K c >= 0, sum K c >= 1``;
* **coefficient bounds**, user constraints (PolyTOPS syntax), directive constraints.

The objective is the configured cost functions in lexicographic order (exact integer weights
from each level's range; levels solved one after the other when the weights would exceed 2^50),
then the sum of iterator coefficients and the constants as tie-breakers.

After a row, every live edge whose cone admits ``theta_T - theta_S - 1`` is satisfied. With
``band: permutable`` the validity constraints keep every edge live at the band's start, so the
rows of a band are permutable (tilable); when no further row exists the band ends and the
satisfied edges are dropped. With ``band: dimension`` satisfied edges are dropped at once. When
no row exists at all, a scalar dimension orders the strongly connected components of the live
dependence graph (a cut). With ``fusion: smart`` (the default), before a loop row where the band
has carried nothing yet, the components are cut where fusing them would lose a parallel row
(:mod:`.fusion`). The schedule is complete when every statement's rows span its iterators and no
edge is live.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NoReturn

import islpy as isl
import networkx as nx
import numpy as np

from dfopt import progress
from dfopt.errors import InfeasibleError, NoSolutionError
from dfopt.ilp import LinearModel, solve
from dfopt.ilp.expr import LinExpr, Operand, Var
from dfopt.models.schedule.config import Config, Directive
from dfopt.models.schedule.fusion import smart_groups
from dfopt.models.schedule.problem import Edge, SchedulingProblem
from dfopt.polyhedral.farkas import cone
from dfopt.results import Termination

MAX_WEIGHT = 2 ** 50


@dataclass
class Row:
    """One schedule dimension: per statement iterator / parameter coefficients and constant."""

    c: dict
    p: dict
    e: dict
    kind: str = "loop"     # loop | cut | fusion
    carried: tuple = ()   # edge ids satisfied here

    @property
    def scalar(self) -> bool:
        return self.kind != "loop" or all(not any(v) for v in self.c.values())


@dataclass
class Outcome:
    rows: list
    warnings: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    directives: list = field(default_factory=list)   # kept directives
    solves: int = 0
    solve_time: float = 0.0
    build_time: float = 0.0
    cuts: int = 0
    refinements: int = 0
    solver: str = "cpsat"


# -- linear algebra -------------------------------------------------------------------------------

def null_space(rows: list, n: int) -> list:
    """An integer basis of ``{x : h . x = 0 for h in rows}`` (exact, by rational elimination)."""
    m = [[Fraction(v) for v in r] for r in rows]
    pivots, r = [], 0
    for col in range(n):
        piv = next((i for i in range(r, len(m)) if m[i][col] != 0), None)
        if piv is None:
            continue
        m[r], m[piv] = m[piv], m[r]
        lead = m[r][col]
        m[r] = [v / lead for v in m[r]]
        for i in range(len(m)):
            if i != r and m[i][col] != 0:
                f = m[i][col]
                m[i] = [a - f * b for a, b in zip(m[i], m[r])]
        pivots.append(col)
        r += 1
    basis = []
    for free in (c for c in range(n) if c not in pivots):
        v = [Fraction(0)] * n
        v[free] = Fraction(1)
        for i, pc in enumerate(pivots):
            v[pc] = -m[i][free]
        lcm = math.lcm(*(x.denominator for x in v))
        ints = [int(x * lcm) for x in v]
        g = math.gcd(*ints) or 1
        basis.append([x // g for x in ints])
    return basis


def rank(rows: list, n: int) -> int:
    return n - len(null_space(rows, n)) if rows else 0


# -- the per-row integer program ----------------------------------------------------------------

def _total(terms: Iterable[Operand]) -> LinExpr:
    """``sum(terms)`` as an expression (the built-in ``sum`` gives the int 0 for no terms)."""
    out = LinExpr()
    for t in terms:
        out = out + t
    return out


@dataclass
class RowRequest:
    """What one row's integer program must do."""

    edges: list                   # live edges for validity (and proximity)
    costs: tuple
    coincident: bool = False      # no dependence carried on this row
    constraints: tuple = ()       # config.Constraint
    zero: dict = field(default_factory=dict)    # stmt -> iterator indices forced to 0 (vectorize)
    unit: dict = field(default_factory=dict)    # stmt -> iterator index: row = that iterator (parallel)
    proximity_edges: list = field(default_factory=list)
    satisfy_one: bool = False     # at least one edge strongly satisfied (rows after full rank)
    idle: frozenset = frozenset()  # statements held at a constant row (smart fusion, .fusion)


class RowModel:
    """Builds and solves one row's integer program."""

    def __init__(self, problem: SchedulingProblem, config: Config, ranks: dict, history: dict,
                 negative: bool = False):
        self.problem, self.config = problem, config
        self.ranks, self.history = ranks, history
        self.negative = negative

    def solve(self, req: RowRequest, solver: str, time_limit: float, seed: int) -> tuple[Row | None, float, int]:
        t0 = time.perf_counter()
        m = LinearModel("schedule-row")
        b = self.config.bounds
        neg = self.negative
        lo = -b.iterators if neg else 0
        np_ = len(self.problem.params)
        V = {}
        for s in self.problem.stmts:
            c = [m.int_var(lo, b.iterators, f"c[{s.name},{j}]") for j in range(s.depth)]
            p = [m.int_var(0, b.parameters, f"p[{s.name},{k}]") for k in range(np_)]
            e = m.int_var(0, b.constants, f"e[{s.name}]")
            a = [m.int_var(0, b.iterators, f"abs[{s.name},{j}]") for j in range(s.depth)] if neg else c
            if neg:
                for cj, aj in zip(c, a):
                    m.add(aj - cj >= 0)
                    m.add(aj + cj >= 0)
            V[s.name] = (c, p, e, a)
        levels: list[tuple[LinExpr | Var | int, int, int]] = []
        sat = {}
        if "feautrier" in req.costs or req.satisfy_one:
            sat = {edge.id: m.bool_var(f"sat[{edge.id}]") for edge in req.edges}
        if req.satisfy_one:
            m.add(_total(sat.values()) >= 1)
        for edge in req.edges:
            self._farkas(m, edge, V, sign=1, slack=sat.get(edge.id))
            if req.coincident:
                self._farkas(m, edge, V, sign=-1)
        moves = self._progression(m, V, req.idle)
        self._user(m, req, V)
        for name in req.idle:
            for cv in V[name][0]:
                m.add(cv == 0)
        for name, idx in req.zero.items():
            for j in idx:
                m.add(V[name][0][j] == 0)
        for name, j in req.unit.items():
            for k, cv in enumerate(V[name][0]):
                m.add(cv == (1 if k == j else 0))
        max_depth = max((s.depth for s in self.problem.stmts), default=1)
        for cost in req.costs:
            if cost == "proximity":
                u_hi = b.iterators * max_depth * 2
                w_hi = (b.iterators * max_depth + b.constants) * 4 + 16
                u = [m.int_var(0, u_hi, f"u[{k}]") for k in range(np_)]
                w = m.int_var(0, w_hi, "w")
                for edge in req.proximity_edges:
                    self._farkas(m, edge, V, sign=-1, bound=(u, w))
                if u:
                    levels.append((sum(u), 0, u_hi * len(u)))
                levels.append((1 * w, 0, w_hi))
            elif cost == "feautrier":
                if sat:
                    levels.append((len(sat) - sum(sat.values()), 0, len(sat)))
            elif cost in ("contiguity", "bigLoopsFirst"):
                terms, hi = [], 0
                for s in self.problem.stmts:
                    weights = s.contiguity if cost == "contiguity" else s.extent_rank
                    for j, wgt in enumerate(weights):
                        if wgt:
                            terms.append(wgt * V[s.name][3][j])
                            hi += wgt * b.iterators
                if terms:
                    levels.append((sum(terms), 0, hi))
        all_abs = [a for (_, _, _, aa) in V.values() for a in aa]
        if moves:
            # progression "any": a moving statement's first unit of coefficients is free, so a
            # plain row for every statement ties with fewer statements moving; then most move
            levels.append((sum(all_abs) - sum(moves), -len(moves), b.iterators * len(all_abs)))
            levels.append((len(moves) - sum(moves), 0, len(moves)))
        elif all_abs:
            levels.append((sum(all_abs), 0, b.iterators * len(all_abs)))
        all_p = [x for (_, p, _, _) in V.values() for x in p]
        if all_p and b.parameters:
            levels.append((sum(all_p), 0, b.parameters * len(all_p)))
        levels.append((sum(v[2] for v in V.values()), 0, b.constants * len(V)))
        build = time.perf_counter() - t0
        result, solves = self._lexicographic(m, levels, solver, time_limit, seed)
        if result is None:
            return None, build, solves
        row = Row({s: tuple(int(round(result.value(x))) for x in V[s][0]) for s in V},
                  {s: tuple(int(round(result.value(x))) for x in V[s][1]) for s in V},
                  {s: int(round(result.value(V[s][2]))) for s in V})
        return row, build, solves

    def _lexicographic(self, m: LinearModel, levels, solver, time_limit, seed):
        weights, w = [], 1
        for _, lo, hi in reversed(levels):
            weights.append(w)
            w *= (hi - lo + 1)
        weights.reverse()
        solves = 0
        if w <= MAX_WEIGHT:
            m.minimize(sum(wt * expr for wt, (expr, _, _) in zip(weights, levels)))
            r = solve(m, solver, time_limit=time_limit, seed=seed)
            solves += 1
            return (r if r.has_solution and r.termination != Termination.INFEASIBLE else None), solves
        result = None
        for expr, _, _ in levels:   # one level at a time, each fixed at its optimum
            m.minimize(expr)
            r = solve(m, solver, time_limit=time_limit, seed=seed)
            solves += 1
            if not r.has_solution:
                return None, solves
            best = round(r.value(expr))
            m.add(expr <= best)
            result = r
        return result, solves

    def _farkas(self, m: LinearModel, edge: Edge, V, sign: int, slack=None, bound=None):
        """Constraints making ``sign * (theta_T(t) - theta_S(s)) - slack`` (or, with ``bound``,
        ``u.N + w - (theta_T - theta_S)``) non-negative on the edge, through its cone."""
        cs, ps, es, _ = V[edge.src]
        ct, pt, et, _ = V[edge.dst]
        np_ = len(self.problem.params)
        ns, nt = len(cs), len(ct)
        width = 1 + np_ + ns + nt
        cols: dict = {}   # var index -> coefficient vector over a
        assert edge.cone is not None  # the problem is built with cones for this scheduler

        def put(var, pos, coef):
            vec = cols.get(var.index)
            if vec is None:
                vec = cols[var.index] = np.zeros(width)
            vec[pos] += coef

        sg = sign
        put(et, 0, sg)
        put(es, 0, -sg)
        for k in range(np_):
            put(pt[k], 1 + k, sg)
            put(ps[k], 1 + k, -sg)
        for j in range(ns):
            put(cs[j], 1 + np_ + j, -sg)
        for j in range(nt):
            put(ct[j], 1 + np_ + ns + j, sg)
        if slack is not None:
            put(slack, 0, -1)
        if bound is not None:
            u, w = bound
            put(w, 0, 1)
            for k in range(np_):
                put(u[k], 1 + k, 1)
        keys = list(cols)
        M = np.stack([cols[k] for k in keys], axis=1)     # width x vars
        for K, eq in ((edge.cone.ineqs, False), (edge.cone.eqs, True)):
            if not len(K):
                continue
            A = K @ M                                      # rows x vars
            nz = np.nonzero(A)
            n = A.shape[0]
            if not len(nz[0]):
                continue
            lb = np.zeros(n)
            ub = np.zeros(n) if eq else np.full(n, math.inf)
            m.add_rows(nz[0], np.asarray(keys)[nz[1]], A[nz], lb, ub)

    def _progression(self, m: LinearModel, V, idle: frozenset):
        """Rows outside the span of each statement's rows so far (but the ``idle`` ones'); with
        ``progression: any`` only for at least one statement (a 0/1 ``moves`` per statement)."""
        b = self.config.bounds
        neg = self.negative
        anyone = self.config.progression == "any"
        moves = []
        for s in self.problem.stmts:
            if self.ranks[s.name] >= s.depth or s.name in idle:
                continue
            c = V[s.name][0]
            need = m.bool_var(f"moves[{s.name}]") if anyone else 1
            if anyone:
                moves.append(need)
            basis = null_space(self.history[s.name], s.depth) if self.history[s.name] else \
                [[1 if i == j else 0 for i in range(s.depth)] for j in range(s.depth)]
            if not neg and all(all(x >= 0 for x in k) for k in basis):
                m.add(_total(sum(x * c[i] for i, x in enumerate(k) if x) for k in basis) - need >= 0)
                continue
            choices = []
            for k, vec in enumerate(basis):
                expr = sum(x * c[i] for i, x in enumerate(vec) if x)
                big = sum(abs(x) for x in vec) * b.iterators + 1
                if any(x > 0 for x in vec) or neg:
                    z = m.bool_var(f"prog+[{s.name},{k}]")
                    m.add(expr - 1 + big * (1 - z) >= 0)
                    choices.append(z)
                if any(x < 0 for x in vec) or neg:
                    z = m.bool_var(f"prog-[{s.name},{k}]")
                    m.add(expr + 1 - big * (1 - z) <= 0)
                    choices.append(z)
            m.add(_total(choices) - need >= 0)
        if moves:
            m.add(_total(moves) >= 1)
        return moves

    def _user(self, m: LinearModel, req: RowRequest, V):
        for con in req.constraints:
            expr = 0
            for mult, s, kind, index in con.terms:
                c, p, e, _ = V[s]
                if kind == "cst":
                    expr = expr + mult * e
                else:
                    pool = c if kind == "it" else p
                    expr = expr + mult * (sum(pool) if index == "i" else pool[index])
            if isinstance(expr, int):
                continue
            m.add(expr == con.rhs) if con.op == "==" else m.add(expr >= con.rhs)


# -- the outer iteration -------------------------------------------------------------------------

def _satisfied(edge: Edge, row: Row, n_params: int) -> bool:
    """Whether ``theta_T - theta_S >= 1`` on the whole edge (cone membership of the vector)."""
    a = [row.e[edge.dst] - row.e[edge.src] - 1]
    a += [row.p[edge.dst][k] - row.p[edge.src][k] for k in range(n_params)]
    a += [-x for x in row.c[edge.src]] + list(row.c[edge.dst])
    assert edge.cone is not None  # the problem is built with cones for this scheduler
    return edge.cone.contains(a)


def _coincident(edge: Edge, row: Row, n_params: int) -> bool:
    """Whether ``theta_T - theta_S <= 0`` on the whole edge (with validity: the row carries nothing
    of it)."""
    a = [row.e[edge.src] - row.e[edge.dst]]
    a += [row.p[edge.src][k] - row.p[edge.dst][k] for k in range(n_params)]
    a += list(row.c[edge.src]) + [-x for x in row.c[edge.dst]]
    assert edge.cone is not None  # the problem is built with cones for this scheduler
    return edge.cone.contains(a)


def _affine_text(row: Row, stmt, iters: list, params: list) -> str:
    terms = [f"{c}*{it}" for c, it in zip(row.c[stmt.name], iters) if c]
    terms += [f"{c}*{p}" for c, p in zip(row.p[stmt.name], params) if c]
    terms.append(str(row.e[stmt.name]))
    return " + ".join(terms)


def unordered_part(problem: SchedulingProblem, edge: Edge, rows: list) -> list:
    """The basic maps of the edge's pairs with equal values at every row so far."""
    src, dst = problem.stmt(edge.src), problem.stmt(edge.dst)
    si = [f"s{k}" for k in range(src.depth)]
    ti = [f"t{k}" for k in range(dst.depth)]
    eqs = [f"{_affine_text(r, src, si, problem.params)} = {_affine_text(r, dst, ti, problem.params)}" for r in rows]
    head = f"[{', '.join(problem.params)}] -> " if problem.params else ""
    text = f"{head}{{ {src.name}[{', '.join(si)}] -> {dst.name}[{', '.join(ti)}] : {' and '.join(eqs)} }}"
    rel = isl.Map.from_basic_map(edge.relation).intersect(isl.Map(text)).coalesce()
    bl = rel.get_basic_map_list()
    return [b for b in (bl.get_at(i) for i in range(bl.n_basic_map())) if not b.is_empty()]


def _scalar_row(problem: SchedulingProblem, order: dict, kind: str) -> Row:
    np_ = len(problem.params)
    return Row({s.name: (0,) * s.depth for s in problem.stmts}, {s.name: (0,) * np_ for s in problem.stmts},
               {s.name: order[s.name] for s in problem.stmts}, kind)


def scc_order(problem: SchedulingProblem, edges: list) -> dict | None:
    """Statement -> position of its strongly connected component in a topological order of the
    live dependence graph; None when everything is one component."""
    g = nx.DiGraph()
    g.add_nodes_from(s.name for s in problem.stmts)
    g.add_edges_from((e.src, e.dst) for e in edges if not e.proximity_only)
    cond = nx.condensation(g)
    if cond.number_of_nodes() <= 1:
        return None
    # topological order, ties by the smallest original statement index (stable, deterministic)
    first = {n: min(problem.index[s] for s in cond.nodes[n]["members"]) for n in cond.nodes}
    order = list(nx.lexicographical_topological_sort(cond, key=lambda n: first[n]))
    pos = {n: i for i, n in enumerate(order)}
    return {s: pos[n] for n in cond.nodes for s in cond.nodes[n]["members"]}


def group_order(problem: SchedulingProblem, groups: Iterable[Iterable[str]], edges: list) -> tuple[dict | None, str]:
    """Statement -> group position for a configured fusion; (None, why) when a live dependence
    runs from a later group to an earlier one."""
    where = {s: i for i, g in enumerate(groups) for s in g}
    for e in edges:
        if not e.proximity_only and where[e.src] > where[e.dst]:
            return None, (f"{e.describe()} runs from group {where[e.src]} back to group {where[e.dst]}")
    return where, ""


class Scheduler:
    def __init__(self, problem: SchedulingProblem, config: Config, solver: str = "cpsat",
                 time_limit: float = 60.0, seed: int = 0):
        self.problem, self.config = problem, config
        self.solver, self.time_limit, self.seed = solver, time_limit, seed
        self.np = len(problem.params)
        self.history: dict[str, list] = {s.name: [] for s in problem.stmts}
        self.ranks = {s.name: 0 for s in problem.stmts}
        self.validity = [e for e in problem.edges if not e.proximity_only]
        self.rar = [e for e in problem.edges if e.proximity_only]
        self.out = Outcome(rows=[], solver=solver)
        self.directives = list(config.directives) + self._auto_directives()
        self.deadline = time.perf_counter() + time_limit
        self.separated: set[str] = set()   # statements distributed before their vector loop (auto_vectorize)
        self.negative = config.bounds.negative is True
        self.edge_ids = max((e.id for e in problem.edges), default=0)
        self.fused_at: set[int] = set()    # loop dimensions whose configured fusion was applied
        self.idle: frozenset = frozenset()  # smart fusion: groups without a parallel row wait (constant rows)
        self.smart_seen: set = set()       # (live edges, ranks) the smart policy has looked at
        self.probes: dict = {}             # smart fusion: (statements, edges, ranks, negative) -> parallel row?
        self.parallel_loop: set[str] = set()   # statements with a parallel loop row so far

    def _auto_directives(self) -> list:
        if not self.config.auto_vectorize:
            return []
        named = {(d.statement, d.kind) for d in self.config.directives}
        out = []
        for s in self.problem.stmts:
            if s.depth < 2 or (s.name, "vectorize") in named or not any(s.contiguity):
                continue
            best = max(range(s.depth), key=lambda j: (s.contiguity[j], j))
            out.append(Directive(s.name, best, "vectorize", "/options/schedule/auto_vectorize", auto=True))
        return out

    def _full(self, name: str) -> bool:
        return self.ranks[name] >= self.problem.stmt(name).depth

    def _append(self, row: Row, live: list) -> list:
        carried = [e for e in live if _satisfied(e, row, self.np)]
        row.carried = tuple(e.id for e in carried)
        self.out.rows.append(row)
        if row.kind == "loop":
            self._note_parallel(row, live)
            for s in self.problem.stmts:
                vec = list(row.c[s.name])
                if any(vec) and self.ranks[s.name] < s.depth:
                    new = self.history[s.name] + [vec]
                    if rank(new, s.depth) > self.ranks[s.name]:
                        self.history[s.name] = new
                        self.ranks[s.name] += 1
        ids = set(row.carried)
        return [e for e in live if e.id not in ids]

    def _note_parallel(self, row: Row, live: list) -> None:
        """The statements with a loop in ``row`` that carries none of their live dependences."""
        moving = {n for n, c in row.c.items() if any(c)}
        busy = {n for e in live if not _coincident(e, row, self.np) for n in (e.src, e.dst)}
        self.parallel_loop.update(moving - busy)

    def _request(self, band_live: list, live: list, loop_index: int, coincident: bool) -> RowRequest:
        dim = self.config.dimension(loop_index)
        costs = dim.costs or self.config.costs
        edges = band_live if self.config.band == "permutable" else live
        zero: dict[str, list[int]] = {}
        unit: dict[str, int] = {}
        for d in self.directives:
            s = self.problem.stmt(d.statement)
            if d.kind == "vectorize" and self.ranks[s.name] < s.depth - 1:
                zero.setdefault(s.name, []).append(d.loop)
            if d.kind == "parallel" and self.ranks[s.name] == 0:
                unit[s.name] = d.loop
                coincident = True
        return RowRequest(edges=edges, costs=costs, coincident=coincident,
                          constraints=tuple(self.config.constraints) + tuple(dim.constraints),
                          zero=zero, unit=unit, proximity_edges=edges + self.rar, idle=self.idle)

    def _try(self, req: RowRequest) -> Row | None:
        model = RowModel(self.problem, self.config, self.ranks, self.history, self.negative)
        left = max(0.05, self.deadline - time.perf_counter())
        t = time.perf_counter()
        row, build, solves = model.solve(req, self.solver, left, self.seed)
        self.out.solves += solves
        self.out.build_time += build
        self.out.solve_time += time.perf_counter() - t - build
        if row is None and "proximity" in req.costs:
            # the bounding function may not fit its bounds (unbounded distances): try without it
            alt = RowRequest(**{**req.__dict__, "costs": tuple(c for c in req.costs if c != "proximity")})
            row, build, solves = model.solve(alt, self.solver, left, self.seed)
            self.out.solves += solves
        return row

    def _row(self, band_live, live, loop_index) -> Row | None:
        dim = self.config.dimension(loop_index)
        want_coincident = dim.coincidence if dim.coincidence is not None else self.config.coincidence == "outer"
        req = self._request(band_live, live, loop_index, bool(want_coincident))
        row = self._try(req)
        if row is None and req.coincident and dim.coincidence is not True and not req.unit:
            req = self._request(band_live, live, loop_index, False)
            row = self._try(req)
        if row is None and (req.zero or req.unit):
            bare = RowRequest(**{**req.__dict__, "zero": {}, "unit": {}, "coincident": bool(dim.coincidence)})
            row = self._try(bare)
            if row is not None:
                self._drop_directives(req, loop_index)
        return row

    def _drop_directives(self, req: RowRequest, loop_index: int) -> None:
        keep = []
        for d in self.directives:
            involved = (d.kind == "vectorize" and d.statement in req.zero) or \
                       (d.kind == "parallel" and d.statement in req.unit)
            if involved:
                self.out.dropped.append(d)
                self.out.warnings.append(f"directive {d.describe()} ({d.pointer}) dropped: no legal row "
                                         f"at loop dimension {loop_index} obeys it")
            else:
                keep.append(d)
        self.directives = keep

    def _cut(self, live: list, kind: str, order: dict | None = None) -> list | None:
        order = order if order is not None else scc_order(self.problem, live)
        if order is None:
            return None
        row = _scalar_row(self.problem, order, kind)
        if kind == "cut" and not any(_satisfied(e, row, self.np) for e in live):
            return None   # the components are not linked by a live edge: a cut would change nothing
        self.out.cuts += 1
        return self._append(row, live)

    def _auto_separate(self, live: list) -> list:
        """auto_vectorize: distribute a statement before its vector loop (innermost) when it
        shares the nest with others."""
        names = [d.statement for d in self.directives if d.auto and d.kind == "vectorize"]
        due = [n for n in names if n not in self.separated and self.ranks[n] == self.problem.stmt(n).depth - 1]
        if not due:
            return live
        self.separated.update(due)
        out = self._cut(live, "fusion")
        return live if out is None else out

    def run(self) -> Outcome:
        """The schedule rows, one dimension at a time; progress: one phase for the whole
        schedule (the rows found and the dependences still live)."""
        with progress.phase(f"schedule ({self.solver})", self.time_limit, numbers=False) as ph:
            return self._run(ph)

    def _run(self, ph: progress.Phase) -> Outcome:
        live = list(self.validity)
        band_live = list(live)
        loop_index = 0
        if self.config.fusion == "min":
            live = self._cut(live, "fusion") or live
            band_live = list(live)
        guard = 0
        while True:
            guard += 1
            if guard > 200:
                raise NoSolutionError("the scheduler did not converge within 200 dimensions")
            if time.perf_counter() > self.deadline:
                raise NoSolutionError(f"the scheduler ran out of its time limit ({self.time_limit:g} s) after "
                                      f"{len(self.out.rows)} dimension(s)")
            if ph.live:
                ph.update(detail=f"{len(self.out.rows)} rows, {len(live)} dependences live")
            full = all(self._full(s.name) for s in self.problem.stmts)
            if full and live:
                refined = self._refine(live)
                if refined is not None:
                    live, band_live = refined, list(refined)
                    continue
            if full and not live:
                break
            if full:
                cut = self._cut(live, "cut")
                if cut is None:   # ties in both directions between statements: a row must order them
                    cut = self._ordering_row(live, loop_index)
                    loop_index += 1
                live, band_live = cut, list(cut)
                continue
            dim = self.config.dimension(loop_index)
            if dim.fusion is not None and loop_index not in self.fused_at:
                self.fused_at.add(loop_index)
                live, band_live = self._configured_fusion(dim.fusion, live, band_live, loop_index)
                continue
            if self.config.fusion == "smart" and dim.fusion is None and len(band_live) == len(live):
                smart = self._smart(live, loop_index)   # only where no band row carried anything yet
                if smart is not None:
                    live, band_live = smart, list(smart)
                    continue
            self._wake()
            if self.config.auto_vectorize:
                before = len(self.out.rows)
                live = self._auto_separate(live)
                if len(self.out.rows) != before:
                    band_live = list(live)
            row = self._row(band_live, live, loop_index)
            if row is None and self.idle:
                self.idle = frozenset()     # the waiting statements join: they may be what a row needs
                continue
            if row is None:
                if self.config.band == "permutable" and len(band_live) != len(live):
                    band_live = list(live)      # end the band: drop what it satisfied
                    continue
                cut = self._cut(live, "cut")
                if cut is not None:
                    live, band_live = cut, list(cut)
                    continue
                refined = self._refine(live)
                if refined is not None:
                    live, band_live = refined, list(refined)
                    continue
                if self.config.bounds.negative == "auto" and not self.negative:
                    self.negative = True    # Pluto+: allow negative coefficients from here on
                    self.out.warnings.append(f"no row with non-negative coefficients at loop dimension "
                                             f"{loop_index}; negative coefficients allowed from there")
                    continue
                self._explain_failure(live, loop_index)
            live = self._append(row, live)
            if self.config.band == "dimension":
                band_live = list(live)
            loop_index += 1
        self.out.directives = list(self.directives)
        return self.out

    def _ordering_row(self, live: list, loop_index: int) -> list:
        """Every statement is full rank, yet live pairs are tied in a cycle no cut can order: a
        row that strongly satisfies at least one live edge (as many as possible)."""
        req = RowRequest(edges=live, costs=("feautrier",) + tuple(c for c in self.config.costs if c != "feautrier"),
                         constraints=tuple(self.config.constraints), proximity_edges=live + self.rar, satisfy_one=True)
        row = self._try(req)
        if row is None and self.config.bounds.negative == "auto" and not self.negative:
            self.negative = True
            self.out.warnings.append(f"no ordering row with non-negative coefficients at loop dimension "
                                     f"{loop_index}; negative coefficients allowed from there")
            row = self._try(req)
        if row is None:
            raise NoSolutionError("every statement has a full-rank schedule but dependences "
                                  f"{[e.describe() for e in live][:3]} stay tied in a cycle and no row within "
                                  f"the bounds {vars(self.config.bounds)} orders any of them")
        return self._append(row, live)

    def _refine(self, live: list) -> list | None:
        """Replace each live edge by its pairs still unordered by the rows so far (a whole edge
        counts as satisfied only when one row orders all its pairs; the rest may be ordered row by
        row). None when nothing changes."""
        if not self.out.rows:
            return None
        changed, out = False, []
        for e in live:
            parts = unordered_part(self.problem, e, self.out.rows)
            if len(parts) == 1 and parts[0].is_equal(e.relation):
                out.append(e)
                continue
            changed = True
            for bm in parts:
                out.append(Edge(self._next_id(), e.src, e.dst, bm, e.kinds, cone(bm), e.proximity_only))
        if not changed:
            return None
        self.out.refinements += 1
        return out

    def _next_id(self) -> int:
        self.edge_ids += 1
        return self.edge_ids

    def _configured_fusion(self, fusion, live, band_live, loop_index):
        pointer = f"/options/schedule/dimensions/{loop_index}/fusion"
        if fusion == "max":
            return live, band_live
        if fusion == "min":
            out = self._cut(live, "fusion")
            return (out, list(out)) if out is not None else (live, band_live)
        if fusion == "smart":
            out = self._smart(live, loop_index)
            return (out, list(out)) if out is not None else (live, band_live)
        order, why = group_order(self.problem, fusion, live)
        if order is None:
            self.out.warnings.append(f"fusion at loop dimension {loop_index} ({pointer}) ignored: {why}")
            return live, band_live
        if len(set(order.values())) <= 1:
            return live, band_live
        self.out.cuts += 1
        out = self._append(_scalar_row(self.problem, order, "fusion"), live)
        return out, list(out)

    def _smart(self, live: list, loop_index: int) -> list | None:
        """``fusion: smart`` before a loop row: cut the live components where fusing them would
        lose a parallel row (:func:`.fusion.smart_groups`); the live edges after the cut, or None
        when nothing is cut. When some groups have a parallel row and others not, the others
        wait (constant rows) until the parallel ones are full, so that the parallel loops get
        dimensions of their own (a parallel flag is per dimension: one carried loop at a
        dimension makes it sequential for every statement); statements this dimension's
        constraints name do not wait, their row is the one the constraints shape."""
        key = (frozenset(e.id for e in live), tuple(self.ranks.values()))
        if not live or key in self.smart_seen:
            return None   # nothing live: every row from here on is parallel
        self.smart_seen.add(key)
        order = scc_order(self.problem, live)
        if order is None:
            return None
        links = {(e.src, e.dst) for e in live + self.rar} | {(e.dst, e.src) for e in live + self.rar}
        groups = smart_groups(self._components(order, links), lambda names: self._parallel_row(names, live, loop_index),
                              lambda a, b: any((x, y) in links for x in a for y in b))
        if len(groups) == 1:
            return None
        if any(g.parallel for g in groups):
            named = {t[1] for c in self.config.dimension(loop_index).constraints for t in c.terms}
            self.idle = frozenset(s for g in groups if not g.parallel for s in g.statements
                                  if not self._full(s) and s not in named)   # a row the user shaped goes on
        position = {s: k for k, g in enumerate(groups) for s in g.statements}
        if all(self._apart(x, y) for x in position for y in position if position[x] < position[y]):
            return None   # distributed already: a cut would change nothing
        return self._cut(live, "fusion", position)

    def _apart(self, a: str, b: str) -> bool:
        """Whether a scalar dimension so far gives ``a`` and ``b`` different values (they share
        no loop after it)."""
        return any(r.scalar and r.e[a] != r.e[b] for r in self.out.rows)

    def _components(self, order: dict, links: set) -> list:
        """The components of a cut's ``order``, the weakly connected parts (by ``links``) one after
        the other, each in the cut's order (a topological order still: the parts are independent)."""
        g = nx.Graph()
        g.add_nodes_from(order)
        g.add_edges_from(links)
        part = {s: min(self.problem.index[t] for t in c) for c in nx.connected_components(g) for s in c}
        positions = sorted(set(order.values()), key=lambda k: (min(part[s] for s in order if order[s] == k), k))
        return [[s.name for s in self.problem.stmts if order[s.name] == k] for k in positions]

    def _parallel_row(self, names: tuple, live: list, loop_index: int) -> bool:
        """Whether a legal row moves every statement of ``names`` that is not full yet and carries
        none of the live dependences among them; False when each is full or has a parallel loop
        outside already (OpenMP runs the outermost parallel loop of a nest: a parallel row more
        inside gains nothing that a cut would pay for). The other statements are held constant;
        answers are cached."""
        inside = set(names)
        if all(self._full(n) or n in self.parallel_loop for n in inside):
            return False
        edges = [e for e in live if e.src in inside and e.dst in inside]
        key = (frozenset(inside), frozenset(e.id for e in edges), tuple(self.ranks[n] for n in sorted(inside)),
               self.negative)
        if key not in self.probes:
            base = self._request(live, live, loop_index, True)
            idle = frozenset(s.name for s in self.problem.stmts if s.name not in inside)
            req = RowRequest(**{**base.__dict__, "edges": edges, "costs": (), "proximity_edges": [], "idle": idle})
            self.probes[key] = self._try(req) is not None
        return self.probes[key]

    def _wake(self) -> None:
        """The statements waiting for the parallel groups (smart fusion) go on once those are full."""
        if self.idle and all(self._full(s.name) for s in self.problem.stmts if s.name not in self.idle):
            self.idle = frozenset()

    def _explain_failure(self, live: list, loop_index: int) -> NoReturn:
        """No row, no cut: say why (user constraints, bounds)."""
        dim = self.config.dimension(loop_index)
        user = tuple(self.config.constraints) + tuple(dim.constraints)
        if user:
            bare = self._request(live, live, loop_index, False)
            bare = RowRequest(**{**bare.__dict__, "constraints": ()})
            if self._try(bare) is not None:
                raise InfeasibleError(
                    f"no legal schedule row at loop dimension {loop_index} satisfies the configured "
                    f"constraints {[c.text for c in user]} ({', '.join(sorted({c.pointer for c in user}))})",
                    culprits=[c.pointer for c in user])
        pending = [s.name for s in self.problem.stmts if not self._full(s.name)]
        raise NoSolutionError(
            f"no legal schedule row at loop dimension {loop_index} for statement(s) {pending} within the "
            f"coefficient bounds {vars(self.config.bounds)}, and the live dependences form one strongly "
            f"connected component ({len(live)} edge(s), e.g. {live[0].describe() if live else '-'}); "
            f"raise bounds.iterators or allow negative coefficients")


def schedule(problem: SchedulingProblem, config: Config, solver: str = "cpsat", time_limit: float = 60.0,
             seed: int = 0) -> Outcome:
    return Scheduler(problem, config, solver, time_limit, seed).run()


def rows_to_map(problem: SchedulingProblem, rows: list) -> str:
    """The schedule as isl union-map text, one time vector of ``len(rows)`` per statement."""
    pieces = []
    for s in problem.stmts:
        exprs = [_affine_text(r, s, s.iters, problem.params) for r in rows]
        pieces.append(f"{s.name}[{', '.join(s.iters)}] -> [{', '.join(exprs)}]")
    head = f"[{', '.join(problem.params)}] -> " if problem.params else ""
    return str(isl.UnionMap(f"{head}{{ {'; '.join(pieces)} }}"))
