"""The result's level writers and vals writer: the result's arrays, built from the final streams.

A compressed level writes its coordinates and a ``pos`` array counting them per position of the
level above (a dense level above is addressed by ``parent * size + crd``, so its writer reads the
coordinates of that dense run); a non-unique compressed level and the singleton levels below it
(COO) write one entry per nonzero; the vals writer puts each value at its last-level position (an
all-dense result: the row-major position of its coordinates in storage order, any loop order).
"""

from __future__ import annotations

import math

import numpy as np

from dfopt.ir.sparse.sam import SamNode
from dfopt.ir.sparse.tensor import Level
from dfopt.sim.sparse.primitives import Context, Result
from dfopt.sim.sparse.streams import Stream, ancestors, fibre_of, offsets_of


def _dense_positions(streams: dict[int, Stream], levels, sizes, k: int) -> tuple[np.ndarray, int]:
    """Positions of level ``k``'s coordinates (a dense run up from ``k``) and the level's positions."""
    s = streams[k]
    if levels[k] != "dense":
        return np.arange(s.leaves, dtype=np.int64), s.leaves
    if k == 0 or levels[k - 1] != "dense":
        parent, count = np.arange(s.fibers, dtype=np.int64), s.fibers
    else:
        parent, count = _dense_positions(streams, levels, sizes, k - 1)
    return parent[fibre_of(s.segs[-1])] * sizes[k] + s.data, count * sizes[k]


def _entries(streams: dict[int, Stream], k: int, last: int) -> np.ndarray:
    """For each entry of a COO run ``k..last``, the index of its coordinate in level ``k``'s stream."""
    idx = np.arange(streams[last].leaves, dtype=np.int64)
    for m in range(last, k, -1):
        idx = fibre_of(streams[m].segs[-1])[idx]
    return idx


def _write(ctx: Context, node: SamNode, array: str, kind: str, loop, data: np.ndarray, ids: np.ndarray,
           segs) -> None:
    t = node.attrs["tensor"]
    ctx.log(f"{t}.{array}", t, kind, "write", loop, len(data)).add(np.arange(len(data)), ids, segs,
                                                                   node.attrs.get("nest", ""))


def level_writer(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    a = node.attrs
    k, kind, size = a["level"], a["format"], a["size"]
    fmt = a["levels"]
    s = ins["crd"]
    streams = {k: s, **{int(p.split(".")[1]): v for p, v in ins.items() if p.startswith("crd.")}}
    level = Level("dense", size)
    above = a.get("above")
    if kind == "compressed" and a["unique"]:
        if k == 0 or fmt[k - 1] != "dense":
            parent, count = np.arange(s.fibers, dtype=np.int64), s.fibers
        else:
            parent, count = _dense_positions(streams, fmt, a["sizes"], k - 1)
        per = np.bincount(parent, weights=s.lengths(), minlength=count).astype(np.int64)
        pos = offsets_of(per)
        level = Level("compressed", size, pos, s.data.copy(), True)
        _write(ctx, node, f"{k}.pos", "pos", above, pos, _pos_points(parent, len(pos)), s.segs[:-1])
        _write(ctx, node, f"{k}.crd", "crd", node.loop, s.data, np.arange(s.leaves), s.segs)
    elif kind in ("compressed", "singleton"):
        last = max(streams)
        entries = streams[last]
        idx = _entries(streams, k, last)
        crd = s.data[idx]
        pos = None
        if kind == "compressed":
            if k > 0 and s.fibers != 1:
                raise ValueError(f"{node.name}: a non-unique level below another level is not supported")
            pos = np.array([0, len(crd)], dtype=np.int64)
            _write(ctx, node, f"{k}.pos", "pos", above, pos, np.zeros(2, dtype=np.int64), ())
        level = Level(kind, size, pos, crd, False if kind == "compressed" else True)
        _write(ctx, node, f"{k}.crd", "crd", node.loop, crd, np.arange(len(crd)), entries.segs)
    ctx.written[k] = level
    return {}, s.tokens


def _pos_points(parent: np.ndarray, n: int) -> np.ndarray:
    """The iteration that writes each ``pos`` entry: entry ``p + 1`` closes parent position ``p``;
    entries of positions never iterated go with the iteration before them."""
    if len(parent) == 0:
        return np.zeros(n, dtype=np.int64)
    return (np.searchsorted(parent + 1, np.arange(n), side="right") - 1).clip(min=0)


def vals_writer(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    a = node.attrs
    v = ins["val"]
    fmt, sizes = a["levels"], a["sizes"]
    streams = {int(p.split(".")[1]): s for p, s in ins.items() if p.startswith("crd.")}
    if not fmt:
        pos, count = np.zeros(len(v.data), dtype=np.int64), 1
    elif a["dense"]:
        ids = np.arange(v.leaves, dtype=np.int64)
        pos = np.zeros(v.leaves, dtype=np.int64)
        for m, size in enumerate(sizes):
            s = streams[m]
            pos = pos * size + s.data[ancestors(v.segs, ids, s.depth)]
        count = math.prod(sizes)
    elif fmt[-1] == "dense":
        pos, count = _dense_positions(streams, fmt, sizes, len(fmt) - 1)
    else:
        pos, count = np.arange(v.leaves, dtype=np.int64), v.leaves
    vals = np.zeros(count, dtype=v.data.dtype)
    if len(np.unique(pos)) == len(pos):
        vals[pos] = v.data
    else:
        np.add.at(vals, pos, v.data)
    t = a["tensor"]
    ctx.log(f"{t}.vals", t, "vals", "write", node.loop, count).add(pos, np.arange(v.leaves), v.segs,
                                                                   a.get("nest", ""))
    ctx.written["vals"] = vals
    return {}, v.tokens
