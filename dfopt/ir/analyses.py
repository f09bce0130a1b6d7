"""Pure graph analyses over a :class:`~dfopt.ir.graph.DataflowGraph` (no solver imports).

The one longest-path routine of dfopt lives here: :func:`longest_path_potentials` works on arc
arrays (the difference-constraint LPs of :mod:`dfopt.lp` and the path LP of FIFO sizing call it)
and :func:`longest_path_lengths` is its view over a graph's kernels and streams.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a"), Kernel("b"), Kernel("c")],
...                   [Stream("x", "a", "b", 4), Stream("y", "b", "c", 4), Stream("z", "a", "c", 4)])
>>> topological_order(g)
['a', 'b', 'c']
>>> find_cycle(g) is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np
import numpy.typing as npt

from dfopt.errors import InfeasibleError

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph, Stream


def topological_order(graph: DataflowGraph) -> list[str]:
    """Kernels in a topological order that is stable (file order breaks ties)."""
    rank = {k: i for i, k in enumerate(graph.kernels)}
    return list(nx.lexicographical_topological_sort(graph.nx, key=rank.__getitem__))


def cyclic_nodes(n: int, edges: Iterable[tuple[int, int]]) -> list[int]:
    """The nodes (0 .. n-1) that Kahn's algorithm cannot order: empty for a DAG, else every node on
    or downstream of a cycle (in time linear in the graph, where a depth-first search in Python
    is slow on 100k nodes).

    >>> cyclic_nodes(3, [(0, 1), (1, 2)]), cyclic_nodes(3, [(0, 1), (1, 2), (2, 1)])
    ([], [1, 2])
    """
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v in edges:
        succ[u].append(v)
        indeg[v] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    while ready:
        u = ready.pop()
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return [i for i in range(n) if indeg[i] > 0]


def find_cycle(graph: DataflowGraph) -> list[str] | None:
    """One cycle as a list of stream names, or None for a DAG."""
    index = {k: i for i, k in enumerate(graph.kernels)}
    if not cyclic_nodes(len(index), ((index[s.src], index[s.dst]) for s in graph.streams.values())):
        return None
    try:
        edges = nx.find_cycle(graph.nx)
    except nx.NetworkXNoCycle:
        return None
    return [key for _, _, key in edges]


def sources(graph: DataflowGraph) -> list[str]:
    return [k for k in graph.kernels if graph.nx.in_degree(k) == 0]


def sinks(graph: DataflowGraph) -> list[str]:
    return [k for k in graph.kernels if graph.nx.out_degree(k) == 0]


# -- longest paths ------------------------------------------------------------------------------

class PositiveCycleError(InfeasibleError):
    """A cycle of positive total weight; ``arcs`` are indices into the arrays searched."""

    def __init__(self, arcs: Iterable[int]) -> None:
        self.arcs = [int(a) for a in arcs]
        super().__init__(f"a cycle of positive total weight runs through arcs {self.arcs}", self.arcs)


def longest_path_lengths(graph: DataflowGraph, weight: Callable[[Stream], float]) -> dict[str, float]:
    """Earliest start of every kernel when a stream ``e`` imposes ``start(dst) >= start(src) + weight(e)``.

    >>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
    >>> g = DataflowGraph([Kernel("a"), Kernel("b"), Kernel("c")],
    ...                   [Stream("x", "a", "b", 4), Stream("y", "b", "c", 4), Stream("z", "a", "c", 4)])
    >>> longest_path_lengths(g, lambda s: s.tokens if s.name != "z" else 1)
    {'a': 0.0, 'b': 4.0, 'c': 8.0}
    """
    index = {k: i for i, k in enumerate(graph.kernels)}
    streams = list(graph.streams.values())
    start = longest_path_potentials(len(index), [index[s.src] for s in streams], [index[s.dst] for s in streams],
                                    [weight(s) for s in streams])
    return dict(zip(graph.kernels, start.tolist()))


def longest_path_potentials(n: int, tail: npt.ArrayLike, head: npt.ArrayLike, weight: npt.ArrayLike,
                            start: npt.ArrayLike | None = None) -> np.ndarray:
    """Least ``d >= start`` (default 0) with ``d[head] >= d[tail] + weight`` on every arc.

    Strongly connected parts are relaxed by Bellman-Ford, the rest in one topological pass.
    A ``start`` of ``-inf`` leaves a node at ``-inf`` unless an arc path reaches it from a finite
    one, so ``start = -inf`` but 0 at ``u`` gives the longest paths from ``u``. Raises
    :class:`PositiveCycleError` (an :class:`~dfopt.errors.InfeasibleError` whose ``culprits``
    are the arc indices of a cycle of positive total weight) when no such ``d`` exists.

    >>> longest_path_potentials(3, [0, 1, 0], [1, 2, 2], [2, 3, 1]).tolist()
    [0.0, 2.0, 5.0]
    >>> longest_path_potentials(3, [0, 1, 0], [1, 2, 2], [2, 3, 1], start=[-np.inf, 0, -np.inf]).tolist()
    [-inf, 0.0, 3.0]
    """
    tail = np.asarray(tail, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    weight = np.asarray(weight, dtype=np.float64)
    start = np.zeros(n) if start is None else np.asarray(start, dtype=np.float64)
    loops = tail == head
    if loops.any():
        bad = np.flatnonzero(loops & (weight > 0))
        if len(bad):
            raise PositiveCycleError(bad[:1])
        keep = np.flatnonzero(~loops)
        try:
            return longest_path_potentials(n, tail[keep], head[keep], weight[keep], start)
        except PositiveCycleError as cyc:
            raise PositiveCycleError(keep[cyc.arcs]) from None
    if not len(tail):
        return start.copy()
    from scipy import sparse
    from scipy.sparse import csgraph

    graph = sparse.csr_matrix((np.ones(len(tail)), (tail, head)), shape=(n, n))
    ncomp, label = csgraph.connected_components(graph, directed=True, connection="strong")
    return _topological_relax(n, ncomp, label, tail, head, weight, start)


def _topological_relax(n, ncomp, label, tail, head, weight, start) -> np.ndarray:
    order = np.argsort(tail, kind="stable")
    ptr = np.searchsorted(tail[order], np.arange(n + 1)).tolist()
    heads, ws = head[order].tolist(), weight[order].tolist()
    comp_of = label.tolist()
    members = _group(label, ncomp)
    sizes = [len(g) for g in members]
    cross = label[tail] != label[head]
    indeg = np.bincount(label[head[cross]], minlength=ncomp).tolist()
    internal = _internal_arcs(label, tail, head, ncomp, sizes)
    dist = start.tolist()
    queue = [c for c in range(ncomp) if indeg[c] == 0]
    for c in queue:  # the queue grows while we walk it (Kahn's algorithm)
        if sizes[c] > 1:
            _bellman_ford(members[c], internal[c], tail, head, weight, dist)
        for v in members[c]:
            dv = dist[v]
            for k in range(ptr[v], ptr[v + 1]):
                h = heads[k]
                x = dv + ws[k]
                if x > dist[h]:
                    dist[h] = x
                ch = comp_of[h]
                if ch != c:
                    indeg[ch] -= 1
                    if indeg[ch] == 0:
                        queue.append(ch)
    return np.asarray(dist)


def _group(label: np.ndarray, ncomp: int) -> list[list[int]]:
    order = np.argsort(label, kind="stable")
    bounds = np.searchsorted(label[order], np.arange(ncomp + 1)).tolist()
    flat = order.tolist()
    return [flat[bounds[c]:bounds[c + 1]] for c in range(ncomp)]


def _internal_arcs(label, tail, head, ncomp, sizes) -> dict[int, np.ndarray]:
    inside = np.flatnonzero(label[tail] == label[head])
    comps = label[tail[inside]]
    return {c: inside[comps == c] for c in np.unique(comps).tolist() if sizes[c] > 1}


def _bellman_ford(nodes: list[int], arcs: np.ndarray, tail, head, weight, dist: list) -> None:
    """Relax the arcs of one strongly connected part in place (Jacobi rounds, vectorised)."""
    size = len(nodes)
    local = {v: i for i, v in enumerate(nodes)}
    lt = np.fromiter((local[v] for v in tail[arcs].tolist()), dtype=np.int64, count=len(arcs))
    lh = np.fromiter((local[v] for v in head[arcs].tolist()), dtype=np.int64, count=len(arcs))
    w = weight[arcs]
    d = np.asarray([dist[v] for v in nodes])
    pred = np.full(size, -1)
    tol = 1e-9 * max(1.0, float(np.abs(w).max(initial=0.0)))
    for rnd in range(size + 1):
        cand = d[lt] + w
        better = np.flatnonzero(cand > d[lh] + tol)
        if not len(better):
            break
        if rnd == size:
            raise PositiveCycleError(arcs[_cycle_from_pred(pred, lt, lh[better[0]], size)])
        best = better[np.lexsort((-cand[better], lh[better]))]
        first = best[np.r_[True, lh[best][1:] != lh[best][:-1]]]
        d[lh[first]] = cand[first]
        pred[lh[first]] = first
    for i, v in enumerate(nodes):
        dist[v] = float(d[i])


def _cycle_from_pred(pred: np.ndarray, lt: np.ndarray, start: int, size: int) -> list[int]:
    v = start
    for _ in range(size):  # walk back far enough to stand on the cycle
        if pred[v] < 0:
            return [int(a) for a in range(len(lt))]
        v = int(lt[pred[v]])
    cycle, u = [], v
    for _ in range(size + 1):
        a = int(pred[u])
        cycle.append(a)
        u = int(lt[a])
        if u == v:
            return cycle[::-1]
    return [int(a) for a in range(len(lt))]
