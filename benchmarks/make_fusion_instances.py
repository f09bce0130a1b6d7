"""Writes the transformer-block fusion instances shipped in instances/fusion/ (deterministic).

    python benchmarks/make_fusion_instances.py

One decoder layer per model preset of :mod:`dfopt.bench.transformer` (seq_len 128, tile 64, f32,
c_max = 0.3 x the sum of kernel and converter bytes), plus a tight GPT-2 variant (0.1).
"""

from __future__ import annotations

import os

from dfopt.bench.transformer import transformer_block
from dfopt.io import write_json_atomic

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "instances", "fusion")

# file stem -> (model, c_max_fraction)
INSTANCES = {
    "gpt2-block": ("gpt2", 0.3),
    "llama-block": ("llama", 0.3),
    "qwen-block": ("qwen", 0.3),
    "gpt2-block-tight": ("gpt2", 0.1),
}


def build(name: str, model: str, fraction: float) -> dict:
    inst = transformer_block(model, seq_len=128, tile=64, dtype="f32", c_max_fraction=fraction)
    inst["name"] = name
    return inst


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    for name, (model, fraction) in INSTANCES.items():
        path = os.path.join(OUT, name + ".json")
        write_json_atomic(path, build(name, model, fraction), indent=1)
        print(os.path.relpath(path))


if __name__ == "__main__":
    main()
