"""Writes the hand-made FIFO instances shipped in instances/fifo/ (deterministic).

    python benchmarks/make_fifo_instances.py
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


def main():
    os.makedirs(OUT, exist_ok=True)
    for inst in (fig8a(), fig8f(), transformer_block()):
        with open(os.path.join(OUT, inst["name"] + ".json"), "w") as fh:
            json.dump(inst, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
