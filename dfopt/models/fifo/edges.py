"""The FIFO model's view of a graph: one array entry per stream, kernels as integer indices.

The strategy decides which initiation intervals the token curves assume: ``normal`` uses each
stream's own produce / consume II, ``conservative`` scales every II to the slowest one in the
graph (StreamTensor 5.3). A stream with a per-token schedule at either end (docs/design.md, the
token timing model) keeps its cycles as given under both strategies: :func:`scheduled_ends` gives
its write and read cycles, from which the LP formulations compute its curve (:mod:`.curves`).
Verification always simulates the real graph.

>>> from dfopt.ir import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a", delay=3), Kernel("b", ii=2)], [Stream("e", "a", "b", 8, 16)])
>>> d = stream_arrays(g, "normal")
>>> d.lower.tolist(), d.ii_src.tolist(), d.ii_dst.tolist()
([3], [1], [2])
>>> stream_arrays(g, "conservative").ii_src.tolist()
[2]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dfopt.ir.graph import DataflowGraph
from dfopt.ir.memory import fifo_bram18_counts

STRATEGIES = ("normal", "conservative")
OBJECTIVES = ("depth", "bits", "bram18")


@dataclass(frozen=True)
class StreamArrays:
    kernels: list            # kernel names; index = position
    names: list              # stream names in file order
    src: np.ndarray          # kernel index of each stream's producer
    dst: np.ndarray
    lower: np.ndarray        # producer's initial delay D_u: start(dst) >= start(src) + D_u
    tokens: np.ndarray
    width: np.ndarray
    ii_src: np.ndarray       # II the curves assume (strategy applied)
    ii_dst: np.ndarray
    scheduled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # a per-token schedule at an end


def stream_arrays(graph: DataflowGraph, strategy: str = "normal") -> StreamArrays:
    kernels = list(graph.kernels)
    index = {k: i for i, k in enumerate(kernels)}
    streams = list(graph.streams.values())
    names = [s.name for s in streams]
    ii_src = np.array([graph.produce_ii(n) for n in names], dtype=np.int64)
    ii_dst = np.array([graph.consume_ii(n) for n in names], dtype=np.int64)
    if strategy == "conservative":
        slowest = graph.slowest_ii()
        ii_src = np.full_like(ii_src, slowest)
        ii_dst = np.full_like(ii_dst, slowest)
    lower = np.array([graph.kernels[s.src].delay for s in streams], dtype=np.int64)
    scheduled = np.array([(s.src_schedule is not None or s.dst_schedule is not None) and s.tokens > 0
                          for s in streams], dtype=bool)
    for j in np.flatnonzero(scheduled).tolist():
        # the consumer's first read may come no earlier than the first write
        lower[j] = graph.write_schedule(names[j]).first - graph.read_schedule(names[j]).first
    return StreamArrays(
        kernels=kernels, names=names,
        src=np.array([index[s.src] for s in streams], dtype=np.int64),
        dst=np.array([index[s.dst] for s in streams], dtype=np.int64),
        lower=lower,
        tokens=np.array([s.tokens for s in streams], dtype=np.int64),
        width=np.array([s.width for s in streams], dtype=np.int64),
        ii_src=ii_src, ii_dst=ii_dst, scheduled=scheduled,
    )


def scheduled_ends(graph: DataflowGraph, arrays: StreamArrays) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per scheduled stream (by index): its write cycles and its read cycles."""
    return {j: (graph.write_schedule(arrays.names[j]).offsets(), graph.read_schedule(arrays.names[j]).offsets())
            for j in np.flatnonzero(arrays.scheduled).tolist()}


def objective_weights(arrays: StreamArrays, objective: str) -> np.ndarray:
    """Cost per token of depth: 1 (depth) or the width in bits (bits, and bram18 as its proxy)."""
    return np.ones(len(arrays.names)) if objective == "depth" else arrays.width.astype(float)


def objective_value(arrays: StreamArrays, depths: npt.ArrayLike, objective: str) -> int:
    """The objective of a depth vector, recounted: total depth, total bits or BRAM18 blocks (as Vitis
    implements each FIFO: :func:`dfopt.ir.memory.fifo_storage`, the memory stage's rule)."""
    depths = np.asarray(depths, dtype=np.int64)
    if objective == "depth":
        return int(depths.sum())
    if objective == "bits":
        return int((depths * arrays.width).sum())
    return int(fifo_bram18_counts(arrays.width, depths).sum())


def totals(arrays: StreamArrays, depths: np.ndarray) -> dict:
    """All three objectives of a depth vector."""
    return {"total_depth": objective_value(arrays, depths, "depth"),
            "total_bits": objective_value(arrays, depths, "bits"),
            "bram18": objective_value(arrays, depths, "bram18")}
