"""Tiling, cost and port schedules of the window ops over NCHW feature maps: ``conv2d`` and ``pool``.

A window op's output element reads a window of its input that overlaps its neighbours' (a 3x3
conv reads each input element up to nine times), so the kernel buffers its **whole input feature
map**, as the data movers do (:func:`.tiler._mover_plan`): it reads X's tokens in X's own tile
order (the port has its own loop nest, ``attrs.input_tiling``), then computes the output tile by
tile. The output is tiled over ``(n, o, h, w)`` (``o`` the channels of a pool) by the op's tile
size; a conv2d's weights **stream**: per output tile one token of W, the tile's ``to`` output
channels ``[to, C / groups, kh, kw]`` (and one of B, ``[to]``), re-read for every spatial tile.

Per output tile of ``E`` elements the compute loop runs the window's reduction of ``R`` elements
(``C / groups x kh x kw`` for a conv2d, ``kh x kw`` for a pool) with ``UR x UE`` lanes
(:func:`window_unroll`: an adder tree of ``UR`` products for each of ``UE`` output elements at
once, the split that uses the most lanes): ``ii = (R / UR) x (E / UE)`` cycles, the reduction outermost so that one
output cell's partial sum comes back only every ``E / UE`` cycles (``interleave`` partials when
that is below the add latency). ``delay`` = the read phase (``X tokens x read_ii``, one beat per
cycle as a mover reads) + ``ii`` + ``PIPELINE_DEPTH``. Resources: ``UR x UE`` multiply-add lanes
for a conv2d, adders for an average pool, comparators (no DSP) for a max pool; the bytes of the
input buffer, the weight tile, the partial sums and the output tile.

>>> c = window_cost("conv2d", "f32", {"reduction": 72, "tile_elems": 512, "input_tokens": 1,
...                                   "input_tile": 512, "input_elems": 512, "weight_tile": 576,
...                                   "bias_tile": 8}, lanes=64)
>>> window_unroll(72, 512, 64), c.ii, c.delay, c.resources["dsp"]
((8, 8), 576, 620, 192)
"""

from __future__ import annotations

import math

from dfopt.ir.graph import DataflowGraph
from dfopt.ir.itensor import DTYPE_BITS
from dfopt.ir.tokens import TokenSchedule
from dfopt.models.tiling import costs
from dfopt.models.tiling.schedules import WINDOW_OPS, PortSchedules, tile_schedules

__all__ = ["WINDOW_OPS", "OUTPUT_LOOPS", "reduction", "plan_fields", "window_unroll", "window_cycles", "partials",
           "read_phase", "window_cost", "window_schedules"]
OUTPUT_LOOPS = ("n", "o", "h", "w")     # the output tile loops: batch, channel, row, column


def _loop(name: str, size: int, tile: int) -> dict:
    step = costs.divisor_at_most(size, tile)
    return {"name": name, "tripcount": size // step, "step": step, "kind": "parallel"}


def reduction(op, graph) -> int:
    """``R``: the window's elements per output element (``C / groups x kh x kw``, or ``kh x kw``)."""
    if op.op == "conv2d":
        return math.prod(graph.tensors[op.inputs[1]].shape[1:])
    return math.prod(op.attrs["kernel"])


def plan_fields(op, graph, tile: int) -> dict:
    """The fields of the tiler's ``Plan`` for a conv2d or pool ``op`` at tile size ``tile``: the
    output loops ``(n, o, h, w)``, X read whole in its own tiles (``attrs.input_tiling``), W one
    ``[to, C / groups, kh, kw]`` token per output tile, B one ``[to]``."""
    x, out = graph.tensors[op.inputs[0]], graph.tensors[op.output]
    loops = [_loop(name, size, tile) for name, size in zip(OUTPUT_LOOPS, out.shape)]
    in_loops = [_loop(f"d{i}", size, tile) for i, size in enumerate(x.shape)]
    ports: dict[str, tuple] = {op.output: (out.shape, list(OUTPUT_LOOPS))}
    for t, idx in zip(op.inputs[1:], (["o", None, None, None], ["o"])):
        ports[t] = (graph.tensors[t].shape, idx)
    tile_elems = math.prod(lp["step"] for lp in loops)
    to = loops[1]["step"]
    r = reduction(op, graph)
    attrs = {"input_tiling": {op.inputs[0]: (in_loops, [lp["name"] for lp in in_loops])}, "reduction": r,
             "tile_elems": tile_elems, "input_tokens": math.prod(lp["tripcount"] for lp in in_loops),
             "input_tile": math.prod(lp["step"] for lp in in_loops), "input_elems": x.size,
             "weight_tile": to * r if op.op == "conv2d" else 0,
             "bias_tile": to if len(op.inputs) == 3 else 0}
    if op.op == "pool":
        attrs["mode"] = op.attrs["mode"]
    return {"loops": loops, "ports": ports, "point_loops": ["r", *OUTPUT_LOOPS], "max_lanes": r * tile_elems,
            "attrs": attrs}


def window_unroll(reduction: int, tile_elems: int, lanes: int) -> tuple[int, int]:
    """``(UR, UE)``: a divisor of ``R`` times a divisor of ``E``, as many lanes as fit in ``lanes``
    (the larger ``UR`` among equals: an adder tree costs no partial sums). Both factors dividing
    their loops keeps the nest exact; R is rarely a power of two (C x 9), so taking the largest
    ``UR`` first would waste lanes (R = 144, 256 lanes: 144 x 1, where 16 x 16 uses them all).

    >>> window_unroll(144, 4096, 256), window_unroll(72, 512, 64), window_unroll(9, 7, 4)
    ((16, 16), (8, 8), (3, 1))
    """
    lanes = max(1, int(lanes))
    best = (1, 1)
    for ur in range(1, min(reduction, lanes) + 1):
        if reduction % ur == 0:
            ue = costs.divisor_at_most(tile_elems, lanes // ur)
            if ur * ue >= best[0] * best[1]:
                best = (ur, ue)
    return best


def window_cycles(reduction: int, tile_elems: int, lanes: int) -> int:
    """Cycles of the compute loop per output tile: ``(R / UR) x (E / UE)``."""
    ur, ue = window_unroll(reduction, tile_elems, lanes)
    return (reduction // ur) * (tile_elems // ue)


def partials(reduction: int, tile_elems: int, lanes: int, dtype: str) -> int:
    """Interleaved partial sums per output element, so that one cell's add waits ``ADD_LATENCY``."""
    _, ue = window_unroll(reduction, tile_elems, lanes)
    return costs.interleave(tile_elems // ue, dtype)


def read_phase(dtype: str, tokens: int, tile_elems: int, lanes: int) -> tuple[int, int]:
    """``(cycles, read_ii)`` of reading the whole input: ``tokens`` tokens, one beat per cycle."""
    read_ii = costs.mover_read_ii(dtype, tile_elems, lanes)
    return tokens * read_ii, read_ii


def _macs_key(op: str, attrs: dict) -> str:
    return f"{attrs['mode']}pool" if op == "pool" else op


def window_cost(op: str, dtype: str, attrs: dict, lanes: int) -> costs.KernelCost:
    """Delay, II and resources of a conv2d or pool kernel from its plan's ``attrs``
    (:func:`plan_fields`) and ``lanes``."""
    r, e = attrs["reduction"], attrs["tile_elems"]
    ur, ue = window_unroll(r, e, lanes)
    ii = window_cycles(r, e, lanes)
    read, _ = read_phase(dtype, attrs["input_tokens"], attrs["input_tile"], lanes)
    held = attrs["input_elems"] + attrs["weight_tile"] + attrs["bias_tile"] + \
        e * (partials(r, e, lanes, dtype) + 1)
    resources = costs.compute_resources(held * DTYPE_BITS[dtype] / 8, ur * ue, _macs_key(op, attrs), dtype)
    return costs.KernelCost(read + ii + costs.PIPELINE_DEPTH, ii, resources)


def window_schedules(graph: DataflowGraph, name: str) -> dict[str, PortSchedules]:
    """The port schedules of window kernel ``name``: X's tokens one ``read_ii`` apart from cycle 0
    (the read phase), then per output tile ``t`` its W and B tokens at the tile's start and its
    write at ``delay + t * ii`` (the compute kernels' tile order, after the read phase). Empty when
    X's stream is not found (named ``<X>__<kernel>``, or a converter's or DRAM reader's
    ``<X>__<kernel>_...`` after fusion)."""
    k = graph.kernels[name]
    ins, outs = graph.in_streams(name), graph.out_streams(name)
    base = f"{k.attrs['inputs'][0]}__{name}"
    x = next((s for s in ins if s.name == base or s.name.startswith(base + "_")), None)
    if x is None or x.dst_type is None:
        return {}
    tokens, elems = x.dst_type.tokens, math.prod(x.dst_type.element)
    start, read_ii = read_phase(x.dst_type.dtype, tokens, elems, int(k.attrs.get("lanes", 1)))
    tiles = math.prod(lp.tripcount for lp in k.loops)
    per_tile = tile_schedules(tiles, 1, k.ii, k.delay - start)
    assert per_tile.reads is not None and per_tile.writes is not None    # a compute kernel's: both
    one = PortSchedules(per_tile.reads.shifted(start), per_tile.writes.shifted(start))
    out = {s.name: one for s in ins + outs if s is not x}
    out[x.name] = PortSchedules(TokenSchedule.steady(0, read_ii, tokens), one.writes)
    return out
