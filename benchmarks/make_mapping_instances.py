"""Write the mapping instances of ``instances/mapping/`` from the Dato example programs.

Run from the repository root: ``python benchmarks/make_mapping_instances.py``. Every instance is
the virtual mapping graph of a program (:func:`dfopt.dato.graph.to_instance`) on a region of an
NPU preset, naming the program it was made from (``options.mapping.program``). npu1's column 0 has
no shim DMA, so two-column regions use columns 1-2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dfopt.dato.examples import program_from_spec
from dfopt.dato.graph import to_instance
from dfopt.instance.convert import dump

OUT = Path(__file__).resolve().parent.parent / "instances" / "mapping"
R44 = {"columns": [0, 3], "rows": [2, 5]}
R24 = {"columns": [1, 2], "rows": [2, 5]}
NPU2 = {"columns": [0, 7], "rows": [2, 5]}
FFN = dict(tokens=128, d=128, hidden=128, chunks=4)   # every instance's memory fits a 64 KB tile

SPECS = [
    ("gemm-4x4x4", ("gemm", {"loaders": False}), "npu1", R44,
     "C = A @ B (256 x 256, bf16 in, f32 out) on a 4x4x4 virtual grid (m, n, k): each gemm[m, n, k] loads its "
     "A (m, k) and B (k, n) blocks, the partial sums over k are reduced by allreduce (a chain along k), and "
     "gemm[m, n, 3] stores C (m, n). 64 virtual nodes onto the 4x4 compute tiles of npu1 (the Dato paper's region)."),
    ("gemm-npu2", ("gemm", {"loaders": False}), "npu2", NPU2,
     "The 4x4x4 GEMM on the whole npu2 array (8 columns x 4 rows, a shim DMA in every column): 64 virtual nodes "
     "onto 32 tiles."),
    ("ffn-4x4", ("ffn", FFN), "npu1", R44,
     "FFN Y = gelu(X W1) W2 (128 tokens, 128 -> 128 -> 128) with each GEMM on a 4x2 virtual grid (the two halves "
     "of the hidden dimension): ffn1[i, j] streams row chunks to ffn2[i, j], which combines the halves with "
     "allreduce. 16 virtual nodes on the 4x4 region."),
    ("ffn-2x4", ("ffn", FFN), "npu1", R24,
     "The FFN on 2 columns x 4 rows: 16 virtual nodes onto 8 tiles, so instances must be chained or bundled."),
    ("attention-4x4", ("attention", {}), "npu1", R44,
     "FlashAttention-style pipeline per query block (send_q -> gemm0 -> online softmax -> gemm1) in the AIE "
     "kernels' ops, 4 blocks of 64 "
     "rows, head dimension 64: 16 virtual nodes on the 4x4 region."),
    ("attention-2x4", ("attention", {}), "npu1", R24,
     "The attention pipeline on 2 columns x 4 rows: 16 virtual nodes onto 8 tiles."),
]


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (example, args), platform, region, description in SPECS:
        spec = {"example": example, "args": args}       # the numeric model of `make sim` rebuilds it
        inst = to_instance(program_from_spec(spec), name, platform, region, description,
                           options={"program": spec})
        dump(inst, OUT / f"{name}.json")
        print(f"{name}: {len(inst.graph.kernels)} virtual nodes, {len(inst.graph.streams)} streams")
    return 0


if __name__ == "__main__":
    sys.exit(main())
