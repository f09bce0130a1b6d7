"""The AIE core kernels (dfopt/codegen/aie/include/dfopt_aie_kernels.h, dfopt.codegen.aie.kernels)
compiled on the host and compared with NumPy, at the tile shapes of the shipped Dato programs
(and a few odd ones): gemm's 64x64 blocks and their allreduce; the FFN's 32x128 @ 128x64 with
gelu and 8x64 @ 64x128 chunks; the attention's 64x64 scores q k^T, online softmax, P @ V
accumulation and normalisation."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from dfopt.codegen.aie.kernels import HostKernels, TileOp, reference
from dfopt.reference import to_bf16

BF = ("bf16", "bf16")
OPS = [
    # gemm_program(256, 4): blocks of 64 x 64, C in f32, partial sums added along k
    TileOp("matmul", (64, 64, 64), (*BF, "f32")), TileOp("add", (4096,), ("f32",) * 3),
    # ffn_program(tokens=128, d=128, hidden=128, chunks=4)
    TileOp("matmul", (32, 128, 64), (*BF, "bf16")), TileOp("gelu", (2048,), BF),
    TileOp("matmul", (8, 64, 128), (*BF, "bf16")), TileOp("add", (1024,), ("bf16",) * 3),
    # attention_program(seq=256, dim=64, blocks=4)
    TileOp("matmul_bt", (64, 64, 64), (*BF, "f32")), TileOp("softmax_block", (64, 64), ("bf16",)),
    TileOp("rescale", (64, 64)), TileOp("matmul_acc", (64, 64, 64), (*BF, "f32")),
    TileOp("normalize", (64, 64), ("bf16",)), TileOp("row_sum", (64, 64), ("bf16",)),
    # odd shapes
    TileOp("matmul", (3, 5, 7), ("f32",) * 3), TileOp("matmul_bt", (2, 9, 4), (*BF, "bf16")),
    TileOp("softmax_block", (5, 3), ("f32",)), TileOp("gelu", (33,), ("f32", "f32")),
]


def _compile(ops, folder: Path) -> HostKernels:
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    return HostKernels(ops, folder)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return _compile(OPS, tmp_path_factory.mktemp("aie-kernels"))


def _inputs(op: TileOp, rng) -> list[np.ndarray]:
    """Random arguments (bf16 ones rounded), a running softmax state that has seen a block."""
    out = []
    for k, (n, t) in enumerate(zip(op.sizes(), op.arg_types())):
        x = rng.standard_normal(n).astype(np.float32)
        if op.op == "softmax_block" and k == 1:
            x = np.where(rng.random(n) < 0.3, -np.inf, x).astype(np.float32)   # some rows start fresh
        if op.op in ("softmax_block", "normalize") and k == 2 or op.op == "normalize" and k == 1:
            x = np.abs(x) + 0.5                                                     # a running sum > 0
        out.append(to_bf16(x) if t == "bf16" else x)
    return out


def _call(lib: HostKernels, op: TileOp, args: list[np.ndarray]) -> list[np.ndarray]:
    return lib.call(op, args)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.symbol)
def test_kernel_matches_numpy(lib, op):
    rng = np.random.default_rng(zlib.crc32(op.symbol.encode()))       # the same data in every process
    for _ in range(3):
        args = _inputs(op, rng)
        got, want = _call(lib, op, args), reference(op, args)
        for i, (g, w, t) in enumerate(zip(got, want, op.arg_types())):
            # one bf16 ulp where bf16 values are written or summed (softmax's l sums the bf16 p, whose
            # rounding may flip with the last bit of expf), else float sums in another order
            rounded = t == "bf16" or (op.op == "softmax_block" and "bf16" in op.arg_types())
            rtol = 2 ** -7 if rounded else 1e-5
            scale = float(np.abs(w[np.isfinite(w)]).max(initial=1.0))
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-2 * rtol * scale, err_msg=f"{op.symbol} argument {i}")


def test_online_softmax_over_blocks_is_softmax(tmp_path):
    """Four blocks through softmax_block, rescale and matmul_acc, then normalize: softmax(S) V."""
    rng = np.random.default_rng(0)
    r, c, d = 5, 3, 4
    sm, rs = TileOp("softmax_block", (r, c), ("f32",)), TileOp("rescale", (r, d))
    mm, nz = TileOp("matmul_acc", (r, c, d), ("f32",) * 3), TileOp("normalize", (r, d), ("f32",))
    lib2 = _compile([sm, rs, mm, nz], tmp_path)
    blocks = [rng.standard_normal((r, c)).astype(np.float32) for _ in range(4)]
    values = [rng.standard_normal((c, d)).astype(np.float32) for _ in range(4)]
    m, l_ = np.full(r, -np.inf, np.float32), np.zeros(r, np.float32)
    acc = np.zeros(r * d, np.float32)
    for s, v in zip(blocks, values):
        _, m, l_, p, alpha = _call(lib2, sm, [s.reshape(-1), m, l_, np.zeros(r * c, np.float32), np.zeros(r, np.float32)])
        acc, _ = _call(lib2, rs, [acc, alpha])
        _, _, acc = _call(lib2, mm, [p, v.reshape(-1), acc])
    out = _call(lib2, nz, [acc, l_, np.zeros(r * d, np.float32)])[2].reshape(r, d)
    scores = np.concatenate(blocks, axis=1)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, (e / e.sum(axis=1, keepdims=True)) @ np.concatenate(values), rtol=1e-5, atol=1e-6)



def test_the_attention_programs_numbers_are_the_kernels(lib):
    """dfopt.dato.run of the shipped attention program (the reference a mapped design must match)
    against the compiled kernels called in the program's order, per query block: matmul_bt,
    softmax_block (a fresh state first), rescale + matmul_acc after the first block, normalize."""
    from dfopt.dato.examples import attention_program
    from dfopt.dato.run import run

    rng = np.random.default_rng(11)
    Q, K, V = (to_bf16(rng.standard_normal((256, 64)).astype(np.float32) * 0.5) for _ in range(3))
    out = run(attention_program(), {"Q": Q, "K": K, "V": V}).tensors["O"]
    qk, sm = TileOp("matmul_bt", (64, 64, 64), (*BF, "f32")), TileOp("softmax_block", (64, 64), ("bf16",))
    rs, pv = TileOp("rescale", (64, 64)), TileOp("matmul_acc", (64, 64, 64), (*BF, "f32"))
    nz, b = TileOp("normalize", (64, 64), ("bf16",)), 64
    zeros = np.zeros(b * b, np.float32)
    for i in range(4):
        q = Q[i * b:(i + 1) * b].reshape(-1)
        m, l_, acc = np.full(b, -np.inf, np.float32), np.zeros(b, np.float32), np.zeros(b * b, np.float32)
        for j in range(4):
            k, v = K[j * b:(j + 1) * b].reshape(-1), V[j * b:(j + 1) * b].reshape(-1)
            s = _call(lib, qk, [q, k, zeros])[2]
            _, m, l_, p, alpha = _call(lib, sm, [s, m, l_, zeros, np.zeros(b, np.float32)])
            acc = _call(lib, rs, [acc, alpha])[0]
            acc = _call(lib, pv, [p, v, acc])[2]
        got = _call(lib, nz, [acc, l_, zeros])[2].reshape(b, b)
        np.testing.assert_allclose(got, out[i * b:(i + 1) * b], rtol=2 ** -7, atol=2 ** -12)
