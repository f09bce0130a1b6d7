"""Pure graph analyses over a :class:`~dfopt.ir.graph.DataflowGraph` (no solver imports).

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a"), Kernel("b"), Kernel("c")],
...                   [Stream("x", "a", "b", 4), Stream("y", "b", "c", 4), Stream("z", "a", "c", 4)])
>>> topological_order(g)
['a', 'b', 'c']
>>> find_cycle(g) is None
True
"""

from __future__ import annotations

import networkx as nx


def topological_order(graph) -> list[str]:
    """Kernels in a topological order that is stable (file order breaks ties)."""
    rank = {k: i for i, k in enumerate(graph.kernels)}
    return list(nx.lexicographical_topological_sort(graph.nx, key=rank.__getitem__))


def find_cycle(graph) -> list[str] | None:
    """One cycle as a list of stream names, or None for a DAG."""
    try:
        edges = nx.find_cycle(graph.nx)
    except nx.NetworkXNoCycle:
        return None
    return [key for _, _, key in edges]


def longest_path_lengths(graph, weight) -> dict[str, float]:
    """Earliest start of every kernel when a stream ``e`` imposes ``start(dst) >= start(src) + weight(e)``."""
    start = {k: 0.0 for k in graph.kernels}
    for k in topological_order(graph):
        for s in graph.out_streams(k):
            start[s.dst] = max(start[s.dst], start[k] + weight(s))
    return start


def sources(graph) -> list[str]:
    return [k for k in graph.kernels if graph.nx.in_degree(k) == 0]


def sinks(graph) -> list[str]:
    return [k for k in graph.kernels if graph.nx.out_degree(k) == 0]
