"""Whether a parallel loop under sequential loops is worth an OpenMP team: the work per fork.

A ``#pragma omp parallel for`` inside a sequential loop forks and joins a team once per
iteration of that loop. When one execution of the parallel loop runs few statement instances
(durbin's ``for k { parallel for i < k }``: at most ``N`` multiply-adds per fork), the fork/join
costs more than the threads gain, and the loop runs faster sequentially. The printer of
:mod:`.emit` asks :meth:`ForkModel.worth_forking` before it forks such a loop; the outermost
parallel loop of a nest (no sequential loop around it) forks once and is always forked.

The estimate: the statement instances of one execution of the loop, bounded by a box. Each loop
of schedule dimension ``d`` runs at most ``trips(d) = 1 + max (x_d - x'_d)`` iterations, the
maximum over the time vectors ``x, x'`` that agree on the dimensions before ``d`` (the largest
of isl's ``deltas`` of dimension ``d`` given the outer dimensions), with the program's parameters fixed at
its largest listed size (the valid dataset of ``program.sizes`` with the largest sum of values); a loop's work
is its trips times the work of its body, a block's the sum of its children's, an ``if``'s the sum
of its branches', a statement call's 1. The loop is forked when that work is at least
:data:`FORK_MIN_WORK`. A program without sizes has no estimate and every such loop is forked
(the other rules of :mod:`.emit` still apply).

>>> from dfopt.ir.program import Program, Statement
>>> p = Program(params=("N",), context="[N] -> { : N >= 1 }", arrays={"A": {"dtype": "f64", "shape": ["N"]}},
...     sizes={"small": {"N": 100}, "large": {"N": 2000}},
...     statements=(Statement("S0", "[N] -> { S0[t, i] : 0 <= t, i < N }", body="A[i] += 1;"),))
>>> from dfopt.codegen.poly.emit import _fixed_context, _largest_sizes, _schedule
>>> sizes = _largest_sizes(p)
>>> m = ForkModel(_schedule(p, "[N] -> { S0[t, i] -> [t, i] }")[0], 2, sizes, _fixed_context(p, sizes))
>>> m.sizes, m.trips(0), m.trips(1)
({'N': 2000}, 2000, 2000)
"""

from __future__ import annotations

import islpy as isl

#: statement instances one execution of a parallel loop under a sequential loop must run to be
#: forked: a fork/join of a small team costs microseconds, a statement instance nanoseconds
FORK_MIN_WORK = 1 << 15


class ForkModel:
    """Trip counts of the loops of one schedule (``n`` time dimensions) at ``sizes``, the
    program's largest dataset, under ``context``, the program's context with the parameters fixed
    at ``sizes``; computed on demand (module docstring)."""

    def __init__(self, sched: isl.UnionMap, n: int, sizes: dict, context: isl.Set):
        self.sizes = sizes
        self._sched, self._n, self._context = sched, n, context
        self._trips: dict[int, int | None] = {}
        self._vectors: isl.Set | None = None

    def _time_vectors(self) -> isl.Set:
        """The schedule's time vectors at :attr:`sizes` (one space: every statement maps to ``n``
        anonymous dimensions)."""
        if self._vectors is None:
            self._vectors = self._sched.intersect_params(self._context).range().coalesce().as_set()
        return self._vectors

    def trips(self, dim: int) -> int | None:
        """Most iterations of a loop of schedule dimension ``dim`` (None: no estimate)."""
        if dim not in self._trips:
            self._trips[dim] = self._count(dim)
        return self._trips[dim]

    def _count(self, d: int) -> int | None:
        try:
            s = self._time_vectors().project_out(isl.dim_type.set, d + 1, self._n - d - 1)
            m = isl.Map.from_range(s).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, d)
            width = m.reverse().apply_range(m).deltas().dim_max_val(0)
        except isl.Error:
            return None
        if not width.is_int():           # unbounded (infinity) or NaN
            return None
        return 1 + width.to_python()

    def work(self, nd: isl.AstNode, dim_of: dict) -> int | None:
        """Statement instances of one execution of AST node ``nd`` (a box bound; None: no estimate)."""
        t = nd.get_type()
        if t == isl.ast_node_type.for_:  # type: ignore[attr-defined]  # not in islpy's stubs
            body = self.work(nd.for_get_body(), dim_of)
            if nd.for_is_degenerate() or body is None:
                return body
            dim = dim_of.get(nd.for_get_iterator().get_id().get_name())
            trips = self.trips(dim) if dim is not None else None
            return None if trips is None else trips * body
        if t == isl.ast_node_type.block:
            children = nd.block_get_children()
            return _total(self.work(children.get_at(i), dim_of) for i in range(children.n_ast_node()))
        if t == isl.ast_node_type.if_:  # type: ignore[attr-defined]  # not in islpy's stubs
            parts = [self.work(nd.if_get_then_node(), dim_of)]
            if nd.if_has_else_node():
                parts.append(self.work(nd.if_get_else_node(), dim_of))
            return _total(parts)
        if t == isl.ast_node_type.mark:
            return self.work(nd.mark_get_node(), dim_of)
        return 1

    def worth_forking(self, nd: isl.AstNode, dim_of: dict) -> tuple[bool, int | None]:
        """(fork the loop ``nd``, its estimated work per fork): forked without an estimate."""
        work = self.work(nd, dim_of)
        return work is None or work >= FORK_MIN_WORK, work


def _total(parts) -> int | None:
    out = 0
    for p in parts:
        if p is None:
            return None
        out += p
    return out
