"""Writes the hand-made FIFO instances shipped in instances/fifo/ (deterministic).

    python benchmarks/make_fifo_instances.py

The bursty ones carry per-token schedules (docs/design.md, per-token schedules) built from the
loop structure of HLS dataflow processes; each description says where its cycle counts come from.
"""

from __future__ import annotations

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "instances", "fifo")


def k(name, delay, ii=1, op="generic", **extra):
    return {"name": name, "op": op, "delay": delay, "ii": ii, **extra}


def s(name, src, dst, tokens, width=32, **extra):
    return {"name": name, "src": src, "dst": dst, "tokens": tokens, "width": width, **extra}


def instance(name, description, kernels, streams, **options):
    d = {"format": "dfopt-instance/1", "name": name, "problem": "fifo", "description": description,
         "platform": "u55c", "graph": {"kernels": kernels, "streams": streams}}
    if options:
        d["options"] = {"fifo": options}
    return d


def fig8a():
    return instance(
        "fig8a", "StreamTensor Fig. 8(a): one producer (delay 4, II 1) feeding a slower consumer (II 2).",
        [k("k0", 4, 1), k("k1", 3, 2)],
        [s("e01", "k0", "k1", 16)])


def fig8f():
    return instance(
        "fig8f", "StreamTensor Fig. 8(f): k0 -> k1 -> k2 and k0 -> k2; optimum delays (D0, D1, D0+D1).",
        [k("k0", 5, 1), k("k1", 3, 1), k("k2", 2, 1)],
        [s("e01", "k0", "k1", 32), s("e12", "k1", "k2", 32), s("e02", "k0", "k2", 32)])


def transformer_block():
    """A GPT-2-shaped block at tile granularity: 32 rows x 3 tiles of 256 on the residual stream,
    attention scores as 128 tiles, the FFN 4x wider; two residual fork-joins."""
    kernels = [
        k("x_in", 2, 1, "dma_in"), k("ln1", 8, 1, "layernorm"),
        k("q_proj", 20, 2, "matmul"), k("k_proj", 20, 2, "matmul"), k("v_proj", 20, 2, "matmul"),
        k("qk", 200, 1, "matmul"), k("softmax", 16, 1, "softmax"), k("av", 150, 2, "matmul"),
        k("o_proj", 20, 2, "matmul"), k("add1", 2, 1, "add"), k("ln2", 8, 1, "layernorm"),
        k("ffn_up", 30, 1, "matmul"), k("gelu", 3, 1, "gelu"), k("ffn_down", 40, 1, "matmul"),
        k("add2", 2, 1, "add"), k("x_out", 0, 1, "dma_out"),
    ]
    W = 256 * 16  # a tile row of 256 bf16 values per token
    streams = [
        s("x", "x_in", "ln1", 96, W), s("x_res", "x_in", "add1", 96, W),
        s("h_q", "ln1", "q_proj", 96, W), s("h_k", "ln1", "k_proj", 96, W), s("h_v", "ln1", "v_proj", 96, W),
        s("q", "q_proj", "qk", 96, W), s("kt", "k_proj", "qk", 96, W),
        s("scores", "qk", "softmax", 128, 8 * 16), s("probs", "softmax", "av", 128, 8 * 16),
        s("v", "v_proj", "av", 96, W, consume_ii=1), s("attn", "av", "o_proj", 96, W),
        s("o", "o_proj", "add1", 96, W), s("h1", "add1", "ln2", 96, W), s("h1_res", "add1", "add2", 96, W),
        s("u_in", "ln2", "ffn_up", 96, W, consume_ii=4), s("u", "ffn_up", "gelu", 384, W),
        s("g", "gelu", "ffn_down", 384, W), s("d", "ffn_down", "add2", 96, W, produce_ii=4),
        s("y", "add2", "x_out", 96, W),
    ]
    return instance("transformer-block",
                    "GPT-2-shaped transformer block at tile granularity with residual fork-joins "
                    "(x_in -> add1 around attention, add1 -> add2 around the FFN) and mixed IIs.",
                    kernels, streams, objective="bits")


def block(offset, *loops):
    """One schedule block: ``offset`` and its ``(trip, stride)`` loops, outermost first."""
    return {"offset": offset, "loops": [list(lp) for lp in loops]}


ROW = 64 * 16        # a token: one 64-wide bf16 row of a 64 x 64 tile (1024 bits)
STEP = 512           # a reduction step: a 64 x 64 x 64 tile product at 512 MACs per cycle
DRAIN = 24           # cycles from a matmul's last multiply-accumulate to its first output row


def matmul_chain_bursty():
    """Three tiled matmuls on 256 rows (K x N = 256 x 512, 512 x 384, 384 x 256); each output tile
    leaves in one burst after the last of its k_steps, the input panels are read steadily."""
    layers = [("mm1", 4, 8), ("mm2", 8, 6), ("mm3", 6, 4)]     # (kernel, k_steps, output tiles per row block)
    row_blocks = 4
    kernels, writes = [k("x_dma", 120, 2, "dma_in")], {"x_dma": None}
    for name, k_steps, n_tiles in layers:
        period = k_steps * n_tiles * STEP           # a row block: n_tiles output tiles x k_steps steps
        first = period + k_steps * STEP + DRAIN     # row block r is computed while panel r + 1 is read
        kernels.append(k(name, first, 8 * n_tiles, "matmul"))
        writes[name] = [block(first, (row_blocks, period), (n_tiles, k_steps * STEP), (64, 1))]
    kernels.append(k("y_dma", 0, 2, "dma_out"))
    ends = ["x_dma", "mm1", "mm2", "mm3", "y_dma"]
    tokens = [row_blocks * k_steps * 64 for _, k_steps, _ in layers] + [row_blocks * layers[-1][2] * 64]
    streams = []
    for name, src, dst, count in zip(["x", "a1", "a2", "y"], ends, ends[1:], tokens):
        streams.append(s(name, src, dst, count, ROW))   # the input panel: k_steps tiles of 64 rows per row block
        if writes[src] is not None:
            streams[-1]["src_schedule"] = writes[src]
    return instance(
        "matmul-chain-bursty",
        "Three chained tiled matmuls (mm1: K 256 -> N 512, mm2: 512 -> 384, mm3: 384 -> 256) on 256 rows of bf16, "
        "a token one 64-wide row (1024 bits) of a 64x64 tile. Each keeps its weights on chip and reads its input "
        "panel steadily one row per 8 x n_tiles cycles (a ping-pong panel buffer: row block r is computed while "
        "panel r+1 arrives); a tile takes k_steps (4, 8, 6) reduction steps of 512 cycles (64x64x64 MACs on 512 "
        "DSPs), and its 64 rows are written only after the last step (+24 cycles of pipeline): a burst of 64 "
        "tokens in 64 cycles every 2048, 4096, 3072 cycles. x_dma reads HBM (first row after 120 cycles, a "
        "1024-bit row per 2 cycles on a 512-bit port); y_dma writes it back at the same rate.",
        kernels, streams)


def residual_zero_fill():
    """A residual block whose second matmul zero-fills its accumulator before its first read; the
    skip connection around both matmuls must buffer what the main branch's latency holds back."""
    rows, zero_fill, lat_b = 512, 13312, 36
    kernels = [k("x_dma", 120, 2, "dma_in"), k("mm_a", 30, 8, "matmul"),
               k("mm_b", zero_fill + lat_b, 8, "matmul"), k("add", 3, 1, "add"), k("y_dma", 0, 2, "dma_out")]
    streams = [
        s("x", "x_dma", "mm_a", rows, ROW), s("x_skip", "x_dma", "add", rows, ROW),
        s("h", "mm_a", "mm_b", rows, ROW, dst_schedule=[block(zero_fill, (rows, 8))]),
        s("r", "mm_b", "add", rows, ROW, src_schedule=[block(zero_fill + lat_b, (rows, 8))]),
        s("y", "add", "y_dma", rows, ROW),
    ]
    return instance(
        "residual-zero-fill",
        "Residual block on 512 rows x 64 channels (bf16, a token one 1024-bit row): x_dma forks x to mm_a and "
        "the skip x_skip to add; mm_a and mm_b are 64x64 matmuls at one row per 8 cycles (4096 MACs per row on "
        "512 DSPs; pipeline depths 30 and 36). mm_b first zero-fills its 13,312-word fp32 accumulator one word "
        "per cycle (the init loop of an unpartitioned array), so its first read of h comes 13,312 cycles after "
        "the region starts. add joins r and x_skip (II 1, latency 3): the skip connection must hold the tokens "
        "that the main branch's latency keeps add from reading.",
        kernels, streams)


def mixed_ii():
    """A flash-attention-style process whose three pipelined loops run one after another per query
    tile, each at its own achieved II on its own port."""
    q_tiles, q_rows, kv_rows = 4, 64, 128
    load_end = (q_rows - 1) * 1 + 5            # load_q: II 1, 4-stage pipeline drains
    scan_end = load_end + (kv_rows - 1) * 7 + 31
    store_end = scan_end + (q_rows - 1) * 2 + 13
    period = store_end
    kernels = [k("x_dma", 120, 1, "dma_in"), k("q_proj", 40, 4, "matmul"), k("kv_dma", 150, 1, "dma_in"),
               k("attn", scan_end, 1, "attention"), k("o_dma", 0, 1, "dma_out")]
    streams = [
        s("x", "x_dma", "q_proj", q_tiles * q_rows, ROW),
        s("q", "q_proj", "attn", q_tiles * q_rows, ROW, dst_schedule=[block(0, (q_tiles, period), (q_rows, 1))]),
        s("kv", "kv_dma", "attn", q_tiles * kv_rows, 2 * ROW,
          dst_schedule=[block(load_end, (q_tiles, period), (kv_rows, 7))]),
        s("o", "attn", "o_dma", q_tiles * q_rows, ROW, src_schedule=[block(scan_end, (q_tiles, period), (q_rows, 2))]),
    ]
    return instance(
        "mixed-ii",
        f"One attention process (attn) with three pipelined loops run one after another for each of {q_tiles} "
        f"query tiles, each at its achieved II on its own port: load_q reads 64 q rows at II 1 (then 4 cycles of "
        f"pipeline), scan_kv reads 128 K/V rows at II 7 (the online-softmax running max and sum carry a 7-cycle "
        f"fp32 add from one iteration to the next) then drains 30 cycles, store_o writes 64 output rows at II 2 "
        f"(one divider shared by two lanes) then 12; a tile takes {period} cycles. q_proj makes q at II 4 "
        f"(latency 40); kv_dma streams K/V from HBM at II 1 (first after 150 cycles), re-read for every tile.",
        kernels, streams)


def fork_join_burst():
    """A fork-join whose matmul branch writes in bursts while the elementwise branch is steady."""
    tiles, tile_rows, k_steps, read_ii, lat = 8, 64, 4, 4, 20
    step = tile_rows * read_ii                         # a reduction step: one pass over the tile
    period = k_steps * step + tile_rows                # k_steps steps, then the burst of the tile's rows
    kernels = [k("src", 100, 2, "dma_in"), k("mm", k_steps * step + lat, read_ii, "matmul"), k("gelu", 12, 1, "gelu"),
               k("join", 2, 1, "add"), k("dst", 0, 2, "dma_out")]
    streams = [
        s("a", "src", "mm", tiles * tile_rows, ROW, dst_schedule=[block(0, (tiles, period), (tile_rows, read_ii))]),
        s("b", "src", "gelu", tiles * tile_rows, ROW),
        s("a_mm", "mm", "join", tiles * tile_rows, ROW,
          src_schedule=[block(k_steps * step + lat, (tiles, period), (tile_rows, 1))]),
        s("b_gelu", "gelu", "join", tiles * tile_rows, ROW),
        s("y", "join", "dst", tiles * tile_rows, ROW),
    ]
    return instance(
        "fork-join-burst",
        f"Fork-join on {tiles} tiles of 64 rows (1024-bit tokens): src (HBM, first row after 100 cycles, one per 2) "
        f"forks to a tiled matmul mm and an elementwise gelu (II 1, latency 12), joined by an add. mm reads each "
        f"input tile in its first reduction step (one row per 4 cycles), runs 4 steps of 256 cycles, and writes "
        f"the tile's 64 rows in one burst 20 cycles after the last step: 64 tokens in 64 cycles every {period}. "
        f"The steady branch must hold what it makes while join waits for mm's burst.",
        kernels, streams)


BURSTY = (matmul_chain_bursty, residual_zero_fill, mixed_ii, fork_join_burst)


def main():
    os.makedirs(OUT, exist_ok=True)
    for inst in (fig8a(), fig8f(), transformer_block(), *(make() for make in BURSTY)):
        with open(os.path.join(OUT, inst["name"] + ".json"), "w") as fh:
            json.dump(inst, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
