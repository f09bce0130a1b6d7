"""The analytical kernel model of the tiling stage: delay, II and resources of a tiled kernel.

Rough, documented estimates — not calibrated against synthesis — used to rank unroll choices and
to give FIFO sizing, fusion and placement their inputs. A kernel consumes and produces *tokens*
(tiles); ``lanes`` is its unroll factor (multiply-adds or elements per cycle).

* matmul tile step: ``tm x tn x tk`` MACs over ``lanes`` lanes; an output tile after ``k_steps``
  steps (its whole reduction): ``ii = k_steps x ceil(tm tn tk / lanes)``, ``delay = ii +
  PIPELINE_DEPTH``. It holds its accumulator tile and one A and one B tile.
* row kernels (softmax, layernorm, rmsnorm) buffer a block of whole rows, reduce it, then write
  it normalised: ``ROW_PASSES`` passes of ``ceil(tile / lanes)`` per tile.
* elementwise kernels: one pass of ``ceil(tile / lanes)`` per tile, one tile per operand held.
* DMA kernels: one 512-bit AXI beat per cycle after a fixed request latency; no DSP.
* data movers (transpose, reshape): read the whole tensor into a buffer, then write it in the new
  order (``ceil(tile / lanes)`` per token each way).

Resources per kernel: ``KERNEL_LUT/FF`` for control plus, per lane, ``OP_MACS[op]`` multiply-adds
of ``DSP_PER_MAC[dtype]`` DSPs and ``LUT/FF_PER_LANE_BIT x bits``; ``bram`` from the bytes held
(36Kb blocks of 4,608 bytes); ``bytes`` the on-chip memory the kernel needs alone.

>>> c = matmul_cost("f32", 64, 64, 64, k_steps=2, lanes=128)
>>> c.ii, c.delay, c.resources["dsp"], c.resources["bram"]
(4096, 4108, 384, 11)
>>> elementwise_cost("gelu", "f32", 4096, inputs=1, lanes=16).ii
256
"""

from __future__ import annotations

import math
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
    "relu": 0, "add": 1, "mul": 1, "transpose": 0, "reshape": 0,
}
ROW_PASSES = {"layernorm": 2, "rmsnorm": 2, "softmax": 2}
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


def matmul_cost(dtype: str, tm: int, tn: int, tk: int, k_steps: int, lanes: int) -> KernelCost:
    acc = ACC_BITS.get(dtype, DTYPE_BITS[dtype]) / 8
    nbytes = tm * tn * acc + (tk * tn + tm * tk) * _bytes(dtype)
    lanes = max(1, min(lanes, tm * tn * tk))
    ii = k_steps * -(-(tm * tn * tk) // lanes)
    return KernelCost(ii + PIPELINE_DEPTH, ii, compute_resources(nbytes, lanes, "matmul", dtype))


def row_cost(op: str, dtype: str, row_elems: int, tile_elems: int, lanes: int) -> KernelCost:
    step = -(-tile_elems // max(1, lanes))
    delay = (max(row_elems // tile_elems, 1) + 1) * step + PIPELINE_DEPTH
    return KernelCost(delay, ROW_PASSES[op] * step,
                      compute_resources(row_elems * _bytes(dtype), lanes, op, dtype))


def elementwise_cost(op: str, dtype: str, tile_elems: int, inputs: int, lanes: int) -> KernelCost:
    step = -(-tile_elems // max(1, lanes))
    return KernelCost(step + PIPELINE_DEPTH, step,
                      compute_resources(inputs * tile_elems * _bytes(dtype), lanes, op, dtype))


def mover_cost(op: str, dtype: str, total_elems: int, tile_elems: int, lanes: int) -> KernelCost:
    """A transpose or reshape: the whole tensor is buffered, then written in the new order."""
    step = -(-tile_elems // max(1, lanes))
    tokens = max(total_elems // tile_elems, 1)
    return KernelCost(tokens * step + step + PIPELINE_DEPTH, step,
                      compute_resources(total_elems * _bytes(dtype), lanes, op, dtype))


def dma_cost(dtype: str, tile_elems: int) -> KernelCost:
    size = math.ceil(tile_elems * _bytes(dtype))
    step = -(-size // DMA_BYTES_PER_CYCLE)
    return KernelCost(DMA_LATENCY + step, step, {"bytes": size, "lut": DMA_LUT, "ff": DMA_FF, "dsp": 0,
                                                 "bram": -(-size // BRAM36_BYTES)})
