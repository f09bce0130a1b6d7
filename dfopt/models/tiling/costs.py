"""The analytical kernel model of the tiling stage: delay, II and resources of a tiled kernel.

Rough, documented estimates — not calibrated against synthesis — used to rank unroll choices and
to give FIFO sizing, fusion and placement their inputs. A kernel consumes and produces *tokens*
(tiles); ``lanes`` is its unroll factor (multiply-adds or elements per cycle).

The cycle counts are those of the loops the HLS emitter writes (:mod:`dfopt.codegen.hls.kernels`,
its ``// dfopt: compute`` loops, pipelined at II=1): the lanes are split over the tile's
dimensions by the functions below (each factor divides its dimension, so every unrolled access
has its own bank of a cyclically partitioned array), and a reduction keeps :func:`interleave`
partial accumulators so that a floating-point add never waits on the previous one.

* matmul tile step: ``tm x tn x tk`` MACs, ``UI x UJ x UK`` per cycle (:func:`matmul_unroll`);
  an output tile after ``k_steps`` steps (its whole reduction): ``ii = k_steps x (tm / UI) x
  (tn / UJ) x (tk / UK)`` (``k_steps x ceil(tm tn tk / lanes)`` when the sizes are powers of
  two), ``delay = ii + PIPELINE_DEPTH``. It holds its accumulator tile and one A and one B tile.
* row kernels (softmax, layernorm, rmsnorm, reduce, rope) buffer a block of whole rows, reduce
  it, then write it normalised (reduce: one value per row; rope: rotated, no reduction):
  ``ROW_PASSES`` passes of ``(rows / UR) x (row / UC)`` cycles per tile (:func:`row_unroll`)
  plus one ``rows / UR`` loop per reduction (``ROW_REDUCTIONS``) that folds the partial sums.
* elementwise kernels (add, sub, mul, div, gelu, silu, relu, unary, and mask: a compare of the
  element's query and key indices and a select): one pass of ``tile / U`` per tile
  (:func:`elementwise_unroll`), one tile per operand held. A unary function (exp, tanh, erf,
  sqrt, ...) is costed as 3 multiply-adds per lane, like silu: rough, the IP cores differ.
* window kernels (conv2d, pool; :mod:`.conv`): the whole input feature map read into a buffer
  (one beat per cycle, as a mover), then per output tile of ``E`` elements ``(R / UR) x (E / UE)``
  cycles over the window's ``R`` elements (:func:`.conv.window_unroll`).
* DMA kernels: one 512-bit AXI beat per cycle after a fixed request latency; no DSP.
* data movers (transpose, reshape, concat, slice, expand, embedding): read every input whole into
  its buffer, one input after another (embedding: the ids, then the whole table), then write the
  output in its order, one beat per cycle (``ceil(tile / min(lanes, 512 / dtype bits))`` per token, the input's
  tiles on the way in, the output's on the way out).

When each port reads or writes each token, in the emitted loop order and with these cycle
counts, is :mod:`.schedules`.

Not counted: the beat loops that read a token's operands and write its result (``ceil(tile /
beat lanes)`` cycles each, beats of at most 512 bits), and the fold of a matmul's partial
accumulators per output tile (``(tm / UI) x (tn / UJ)`` cycles).

Resources per kernel: ``KERNEL_LUT/FF`` for control plus, per lane, ``OP_MACS[op]`` multiply-adds
of ``DSP_PER_MAC[dtype]`` DSPs and ``LUT/FF_PER_LANE_BIT x bits``; ``bram`` from the bytes held
(36Kb blocks of 4,608 bytes); ``bytes`` the on-chip memory the kernel needs alone.

>>> c = matmul_cost("f32", 64, 64, 64, k_steps=2, lanes=128)
>>> c.ii, c.delay, c.resources["dsp"], c.resources["bram"]
(4096, 4108, 384, 11)
>>> elementwise_cost("gelu", "f32", 4096, inputs=1, lanes=16).ii
256
>>> matmul_unroll(43, 64, 64, 128), matmul_cost("f32", 43, 64, 64, k_steps=1, lanes=128).ii
((1, 64, 2), 1376)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dfopt.ir.itensor import DTYPE_BITS

BRAM36_BYTES = 4608        # one 36Kb block RAM holds 4608 bytes
DSP_PER_MAC = {            # DSP slices per multiply-add lane (floating-point / integer IP)
    "f64": 10,             # double-precision fmul + fadd
    "f32": 3,              # single-precision fmul + fadd, DSP-heavy configuration
    "bf16": 2, "f16": 2,   # half-width floating point
    "i32": 3,              # a 32 x 32 multiply spans three 27 x 18 DSP48E2 multipliers
    "i16": 1,              # one DSP48E2
    "i8": 0.5,             # two 8-bit MACs packed in one DSP48E2
}
ACC_BITS = {"bf16": 32, "f16": 32, "i8": 32, "i16": 32}   # accumulator width (else the dtype's)
OP_MACS = {                # multiply-adds per element of one pass, per lane
    "matmul": 1, "layernorm": 3, "rmsnorm": 2, "softmax": 3, "gelu": 4, "silu": 3, "silu_mul": 3,
    "relu": 0, "mask": 0, "add": 1, "mul": 1, "transpose": 0, "reshape": 0,
    "sub": 1, "div": 1, "unary": 3, "reduce": 1, "rope": 2,
    "concat": 0, "slice": 0, "expand": 0, "embedding": 0,
    "conv2d": 1, "avgpool": 1, "maxpool": 0,    # pool by mode: an add, or a compare (no DSP)
}
ROW_PASSES = {"layernorm": 3, "rmsnorm": 2, "softmax": 3,   # max, exp-sum, divide / mean, var, scale
              "reduce": 1, "rope": 1}                       # accumulate / rotate
ROW_REDUCTIONS = {"layernorm": 2, "rmsnorm": 1, "softmax": 2, "reduce": 1, "rope": 0}  # partial-sum folds per tile
ADD_LATENCY = {"f32": 8, "f64": 8}   # cycles of a pipelined fadd / dadd (Vitis reports 4-8 on
                                     # UltraScale+ by clock; the upper end), also a max's compare
LUT_PER_LANE_BIT = 20      # datapath LUTs per lane per bit of the dtype (align, normalise, mux)
FF_PER_LANE_BIT = 30       # pipeline registers per lane per bit of the dtype
MOVE_LUT_PER_LANE_BIT = 2  # a data mover's lane is a mux, not an arithmetic unit
KERNEL_LUT, KERNEL_FF = 2000, 3000   # per kernel: loop control, address generation, handshakes
DMA_LUT, DMA_FF = 4000, 6000         # per DMA kernel: an AXI master with burst logic
PIPELINE_DEPTH = 12        # cycles from a tile's last operand to its result
DMA_BYTES_PER_CYCLE = 64   # one 512-bit AXI beat per cycle
DMA_LATENCY = 64           # cycles from a burst request to its first beat (HBM, rough)


@dataclass(frozen=True)
class KernelCost:
    delay: int          # cycles from start to the first output token
    ii: int             # cycles between output tokens
    resources: dict     # lut, ff, dsp, bram, bytes


def _bytes(dtype: str) -> float:
    return DTYPE_BITS[dtype] / 8


def compute_resources(nbytes: float, lanes: int, op: str, dtype: str) -> dict:
    """bytes, bram (36Kb blocks), dsp, lut, ff of a compute kernel with ``lanes`` lanes."""
    bits = DTYPE_BITS[dtype]
    macs = lanes * OP_MACS[op]
    size = math.ceil(nbytes)
    lut_lane = LUT_PER_LANE_BIT if OP_MACS[op] else MOVE_LUT_PER_LANE_BIT
    return {"bytes": size, "lut": KERNEL_LUT + max(macs, lanes) * lut_lane * bits,
            "ff": KERNEL_FF + max(macs, lanes) * FF_PER_LANE_BIT * bits,
            "dsp": math.ceil(macs * DSP_PER_MAC[dtype]), "bram": -(-size // BRAM36_BYTES)}


def divisor_at_most(n: int, cap: int) -> int:
    """The largest divisor of ``n`` that is at most ``cap`` (at least 1).

    >>> divisor_at_most(64, 16), divisor_at_most(43, 16), divisor_at_most(48, 32)
    (16, 1, 24)
    """
    n, cap = int(n), max(1, int(cap))
    if n <= cap:
        return max(n, 1)
    return max(d for d in range(1, cap + 1) if n % d == 0)


def matmul_unroll(tm: int, tn: int, tk: int, lanes: int) -> tuple[int, int, int]:
    """``(UI, UJ, UK)``: the lanes of a ``tm x tn x tk`` tile step spread over ``n`` first (the
    innermost loop), then ``m``, then ``k`` (a reduction into separate partial accumulators)."""
    uj = divisor_at_most(tn, lanes)
    ui = divisor_at_most(tm, max(1, lanes // uj))
    uk = divisor_at_most(tk, max(1, lanes // (uj * ui)))
    return ui, uj, uk


def row_unroll(rows: int, row: int, lanes: int) -> tuple[int, int]:
    """``(UR, UC)``: the lanes of a row kernel over its rows first, then along the row."""
    ur = divisor_at_most(rows, lanes)
    return ur, divisor_at_most(row, max(1, lanes // ur))


def elementwise_unroll(tile_elems: int, lanes: int, period: int | None = None) -> int:
    """The lanes of an elementwise kernel: a divisor of the tile (and of a broadcast operand's
    length ``period``, so that its cyclic banks line up)."""
    n = math.gcd(int(tile_elems), int(period)) if period else int(tile_elems)
    return divisor_at_most(n, lanes)


def interleave(distance: int, dtype: str) -> int:
    """How many interleaved partial accumulators keep a reduction at II=1 when the same cell comes
    back every ``distance`` cycles: a power of two ``P`` with ``P x distance >= ADD_LATENCY``.

    >>> interleave(64, "f32"), interleave(3, "f32"), interleave(1, "f64")
    (1, 4, 8)
    """
    need = -(-ADD_LATENCY.get(dtype, 8) // max(1, int(distance)))
    return 1 << max(0, (need - 1).bit_length())


def row_cycles(op: str, rows: int, row: int, lanes: int) -> int:
    """Cycles of a row kernel's compute loops per tile of ``rows`` rows of ``row`` values."""
    ur, uc = row_unroll(rows, row, lanes)
    return ROW_PASSES[op] * (rows // ur) * (row // uc) + ROW_REDUCTIONS[op] * (rows // ur)


def matmul_cost(dtype: str, tm: int, tn: int, tk: int, k_steps: int, lanes: int) -> KernelCost:
    acc = ACC_BITS.get(dtype, DTYPE_BITS[dtype]) / 8
    nbytes = tm * tn * acc + (tk * tn + tm * tk) * _bytes(dtype)
    ui, uj, uk = matmul_unroll(tm, tn, tk, lanes)
    ii = k_steps * (tm // ui) * (tn // uj) * (tk // uk)
    return KernelCost(ii + PIPELINE_DEPTH, ii, compute_resources(nbytes, ui * uj * uk, "matmul", dtype))


def row_cost(op: str, dtype: str, row_elems: int, tile_elems: int, lanes: int, row: int | None = None) -> KernelCost:
    """A row kernel over tiles of ``tile_elems`` values made of whole rows of ``row`` values
    (default: one row per tile)."""
    row = int(row or tile_elems)
    ur, uc = row_unroll(tile_elems // row, row, lanes)
    step = -(-tile_elems // (ur * uc))
    ii = row_cycles(op, tile_elems // row, row, lanes)
    # the block's other tiles arrive (one step each), then the first tile is processed
    delay = (max(row_elems // tile_elems, 1) - 1) * step + ii + PIPELINE_DEPTH
    return KernelCost(delay, ii, compute_resources(row_elems * _bytes(dtype), ur * uc, op, dtype))


def elementwise_cost(op: str, dtype: str, tile_elems: int, inputs: int, lanes: int,
                     period: int | None = None) -> KernelCost:
    u = elementwise_unroll(tile_elems, lanes, period)
    step = tile_elems // u
    return KernelCost(step + PIPELINE_DEPTH, step,
                      compute_resources(inputs * tile_elems * _bytes(dtype), u, op, dtype))


def mover_lanes(dtype: str, lanes: int) -> int:
    """A data mover moves one beat per cycle: at most ``512 / dtype bits`` values."""
    return max(1, min(int(lanes), 512 // DTYPE_BITS[dtype]))


def mover_read_ii(dtype: str, in_tile_elems: int, lanes: int) -> int:
    """Cycles a data mover takes per input token: one beat of ``mover_lanes`` values per cycle."""
    return -(-int(in_tile_elems) // mover_lanes(dtype, lanes))


def mover_cost(op: str, dtype: str, reads: Sequence[tuple[int, int, str]], tile_elems: int,
               lanes: int) -> KernelCost:
    """A data mover: every input is buffered whole, one after another (``reads``: per distinct
    input, its tokens, the values of one token and its dtype; one :func:`mover_read_ii` per
    token), then the output written in its own order, ``tile_elems`` values per token:
    ``delay`` = the read phase + one output token + ``PIPELINE_DEPTH``. It holds every input.

    >>> c = mover_cost("concat", "f32", [(4, 64, "f32"), (2, 64, "f32")], tile_elems=128, lanes=16)
    >>> c.delay, c.ii, c.resources["bytes"]
    (44, 8, 1536)
    """
    read = sum(int(tokens) * mover_read_ii(dt, elems, lanes) for tokens, elems, dt in reads)
    held = sum(int(tokens) * int(elems) * _bytes(dt) for tokens, elems, dt in reads)
    lanes = mover_lanes(dtype, lanes)
    step = -(-tile_elems // lanes)
    return KernelCost(read + step + PIPELINE_DEPTH, step, compute_resources(held, lanes, op, dtype))


def dma_cost(dtype: str, tile_elems: int) -> KernelCost:
    size = math.ceil(tile_elems * _bytes(dtype))
    step = -(-size // DMA_BYTES_PER_CYCLE)
    return KernelCost(DMA_LATENCY + step, step, {"bytes": size, "lut": DMA_LUT, "ff": DMA_FF, "dsp": 0,
                                                 "bram": -(-size // BRAM36_BYTES)})
