"""Writes the placement instances shipped in instances/placement/ (deterministic).

    python benchmarks/make_placement_instances.py

Generators of :mod:`dfopt.bench.placement_gen`: transformer blocks (GPT-2, Llama-3-8B, Qwen2-7B at
seq_len 128, tile 64, f32) on the u280; AutoBridge-style CNN systolic arrays 13x2 .. 13x16 (the
utilisation grows with the array) and one 13x8 on the u280 2x3 grid; two stencil chains; two
PageRank designs; random DAGs of 10, 30 and 100 kernels, one tight DAG of 50; and three
infeasible instances whose description states why. Each file's ``name`` is its stem. Only the
files listed here are written; other files in the folder are left alone.
"""

from __future__ import annotations

import os

from dfopt.bench.placement_gen import (
    infeasible_placement,
    pagerank,
    random_placement_dag,
    stencil_chain,
    systolic_array,
    transformer_placement,
)
from dfopt.io import write_json_atomic

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "instances", "placement")

# file stem -> (generator, keyword arguments)
INSTANCES = {
    "gpt2-block": (transformer_placement, {"model": "gpt2"}),
    "llama-block": (transformer_placement, {"model": "llama"}),
    "qwen-block": (transformer_placement, {"model": "qwen"}),
    "systolic-13x2": (systolic_array, {"rows": 13, "cols": 2, "utilization": 0.3}),
    "systolic-13x4": (systolic_array, {"rows": 13, "cols": 4, "utilization": 0.45}),
    "systolic-13x8": (systolic_array, {"rows": 13, "cols": 8, "utilization": 0.6}),
    "systolic-13x16": (systolic_array, {"rows": 13, "cols": 16, "utilization": 0.65}),
    "systolic-13x8-grid": (systolic_array, {"rows": 13, "cols": 8, "utilization": 0.6, "platform": "u280_grid"}),
    "stencil-8": (stencil_chain, {"stages": 8, "seed": 0}),
    "stencil-16": (stencil_chain, {"stages": 16, "seed": 1, "utilization": 0.65}),
    "pagerank-8": (pagerank, {"pes": 8, "seed": 0}),
    "pagerank-16": (pagerank, {"pes": 16, "seed": 1, "utilization": 0.65}),
    "random-n10": (random_placement_dag, {"n_kernels": 10, "seed": 0}),
    "random-n30": (random_placement_dag, {"n_kernels": 30, "seed": 0}),
    "random-n100": (random_placement_dag, {"n_kernels": 100, "seed": 0}),
    "random-n50-tight": (random_placement_dag, {"n_kernels": 50, "seed": 0, "tight": 1}),
    "infeasible-kernel": (infeasible_placement, {"kind": "kernel", "n_kernels": 20}),
    "infeasible-total": (infeasible_placement, {"kind": "total", "n_kernels": 20}),
    "infeasible-pins": (infeasible_placement, {"kind": "pins", "n_kernels": 20}),
}


def build(name: str) -> dict:
    fn, kwargs = INSTANCES[name]
    inst = fn(**kwargs)
    inst["name"] = name
    return inst


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    for name in INSTANCES:
        path = os.path.join(OUT, name + ".json")
        write_json_atomic(path, build(name), indent=1)
        print(os.path.relpath(path))


if __name__ == "__main__":
    main()
