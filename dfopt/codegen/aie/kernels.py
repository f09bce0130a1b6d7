"""The ops of Dato tasks as AIE core kernels: ``extern "C"`` entry points for concrete tile shapes
over the scalar reference code of ``include/dfopt_aie_kernels.h``, and the NumPy reference of each.

A :class:`TileOp` names one op at one shape and element types; :func:`entry_source` writes the C++
of a list of them (one ``extern "C"`` function each, named by :attr:`TileOp.symbol`, taking the tiles
as row-major pointers: what an ``aie.core`` passes for its ``memref`` arguments), and
:func:`reference` computes the same op with NumPy (bf16 rounding by
:func:`dfopt.reference.to_bf16`), so the tests compile
the entry points on the host and compare. The ops:

==================  =====================================================  ======================
op                  computes                                               arguments
==================  =====================================================  ======================
``matmul``          ``c = a @ b`` (``M x K`` by ``K x N``), float sums      a, b, c
``matmul_acc``      ``c += a @ b``                                         a, b, c
``matmul_bt``       ``c = a @ b.T`` (``b`` given ``N x K``: scores q k^T)   a, b, c
``add``             ``out = a + b`` (allreduce: a partial sum accumulated)  a, b, out
``gelu``            the tanh approximation                                 x, out
``row_sum``         ``out[r] = x[r, :].sum()`` (``reduce_sum`` axis 1)      x, out (f32)
``softmax_block``   one online-softmax block (running max ``m``, sum ``l``)  s, m, l, p, alpha
``rescale``         ``acc[r, :] *= alpha[r]``                              acc, alpha
``normalize``       ``out[r, :] = acc[r, :] / l[r]``                       acc, l, out
==================  =====================================================  ======================

>>> op = TileOp("matmul", (64, 64, 64), ("bf16", "bf16", "f32"))
>>> op.symbol
'dfopt_matmul_64x64x64_bf16_bf16_f32'
>>> entry_source([op]).splitlines()[-1].split(" { ")
['extern "C" void dfopt_matmul_64x64x64_bf16_bf16_f32(const dfopt_bf16* a, const dfopt_bf16* b, float* c)', \
'dfopt::matmul<64, 64, 64>(a, b, c, false); }']
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dfopt.reference import to_bf16

HEADER = Path(__file__).resolve().parent / "include" / "dfopt_aie_kernels.h"
CTYPES = {"bf16": "dfopt_bf16", "f32": "float"}

#: op -> (template, argument names, which arguments are written, shape arity)
OPS = {
    "matmul": ("matmul", ("a", "b", "c"), {"c"}, 3),
    "matmul_acc": ("matmul", ("a", "b", "c"), {"c"}, 3),
    "matmul_bt": ("matmul_bt", ("a", "b", "c"), {"c"}, 3),
    "add": ("add", ("a", "b", "out"), {"out"}, 1),
    "gelu": ("gelu", ("x", "out"), {"out"}, 1),
    "row_sum": ("row_sum", ("x", "out"), {"out"}, 2),
    "softmax_block": ("softmax_block", ("s", "m", "l", "p", "alpha"), {"m", "l", "p", "alpha"}, 2),
    "rescale": ("rescale", ("acc", "alpha"), {"acc"}, 2),
    "normalize": ("normalize", ("acc", "l", "out"), {"out"}, 2),
}
#: arguments whose element type is fixed (float), whatever the op's dtypes say
_FLOAT_ARGS = {("row_sum", "out"), ("softmax_block", "s"), ("softmax_block", "m"), ("softmax_block", "l"),
               ("softmax_block", "alpha"), ("rescale", "acc"), ("rescale", "alpha"), ("normalize", "acc"),
               ("normalize", "l")}


@dataclass(frozen=True)
class TileOp:
    """One op at one tile shape: ``shape`` as the op's template takes it (matmul ``M, K, N``;
    elementwise ``N``; row ops ``R, C``), ``dtypes`` the element types of the arguments that have
    a choice, in argument order (``bf16`` or ``f32``)."""

    op: str
    shape: tuple
    dtypes: tuple = ()

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown kernel op {self.op!r}; expected one of {', '.join(OPS)}")
        if len(self.shape) != OPS[self.op][3]:
            raise ValueError(f"op {self.op} takes a shape of {OPS[self.op][3]} extents, got {self.shape}")

    def arg_types(self) -> list[str]:
        """The dfopt dtype of each argument."""
        names = OPS[self.op][1]
        free = iter(self.dtypes)
        return ["f32" if (self.op, a) in _FLOAT_ARGS else next(free, "f32") for a in names]

    @property
    def symbol(self) -> str:
        types = "_".join(t for (a, t) in zip(OPS[self.op][1], self.arg_types()) if (self.op, a) not in _FLOAT_ARGS)
        return f"dfopt_{self.op}_{'x'.join(map(str, self.shape))}" + (f"_{types}" if types else "")

    def sizes(self) -> list[int]:
        """Elements of each argument."""
        s = self.shape
        if self.op.startswith("matmul"):
            m, k, n = s
            return [m * k, k * n, m * n]
        if self.op in ("add", "gelu"):
            return [s[0]] * len(OPS[self.op][1])
        r, c = s
        return {"row_sum": [r * c, r], "softmax_block": [r * c, r, r, r * c, r], "rescale": [r * c, r],
                "normalize": [r * c, r, r * c]}[self.op]


def call_text(op: TileOp, args: list[str]) -> str:
    """The C++ call of ``op``'s template on the argument expressions ``args`` (one per argument)."""
    template = OPS[op.op][0]
    dims = ", ".join(map(str, op.shape))
    tail = (", true" if op.op == "matmul_acc" else ", false") if op.op.startswith("matmul") else ""
    return f"dfopt::{template}<{dims}>({', '.join(args)}{tail})"


def entry_source(ops: list[TileOp]) -> str:
    """C++ with one ``extern "C"`` entry point per op (duplicates once)."""
    lines = ['#include "dfopt_aie_kernels.h"', ""]
    for op in dict.fromkeys(ops):
        _, names, written, _ = OPS[op.op]
        params = ", ".join(f"{'' if a in written else 'const '}{CTYPES[t]}* {a}"
                           for a, t in zip(names, op.arg_types()))
        lines.append(f'extern "C" void {op.symbol}({params}) {{ {call_text(op, list(names))}; }}')
    return "\n".join(lines)


# -- the NumPy reference ----------------------------------------------------------------------------

def to_bits(x: np.ndarray) -> np.ndarray:
    """float32 values as bf16 bits (uint16), rounded."""
    return (to_bf16(x).view(np.uint32) >> 16).astype(np.uint16)


def from_bits(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


def _store(x: np.ndarray, dtype: str) -> np.ndarray:
    return to_bf16(x) if dtype == "bf16" else x.astype(np.float32)


def reference(op: TileOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """The op on float32 arrays (bf16 arguments already rounded): every argument after the call."""
    t = op.arg_types()
    out = [np.array(a, dtype=np.float32, copy=True) for a in args]
    if op.op.startswith("matmul"):
        m, k, n = op.shape
        a, b = out[0].reshape(m, k), out[1]
        b = b.reshape(n, k).T if op.op == "matmul_bt" else b.reshape(k, n)
        c = a.astype(np.float64) @ b.astype(np.float64)
        if op.op == "matmul_acc":
            c += out[2].reshape(m, n)
        out[2] = _store(c.astype(np.float32).reshape(-1), t[2])
    elif op.op == "add":
        out[2] = _store(out[0] + out[1], t[2])
    elif op.op == "gelu":
        v = out[0].astype(np.float64)
        g = 0.5 * v * (1 + np.tanh(0.7978845608028654 * (v + 0.044715 * v ** 3)))
        out[1] = _store(g.astype(np.float32), t[1])
    elif op.op == "row_sum":
        r, c = op.shape
        out[1] = out[0].reshape(r, c).sum(axis=1, dtype=np.float64).astype(np.float32)
    elif op.op == "softmax_block":
        r, c = op.shape
        s, m, l_ = out[0].reshape(r, c), out[1], out[2]
        hi = np.maximum(m, s.max(axis=1))
        alpha = np.where(np.isneginf(m), 0.0, np.exp(m - hi)).astype(np.float32)
        p = _store(np.exp(s - hi[:, None]).astype(np.float32), t[3])
        out[1], out[2], out[3], out[4] = hi, (alpha * l_ + p.sum(axis=1)).astype(np.float32), p.reshape(-1), alpha
    elif op.op == "rescale":
        r, d = op.shape
        out[0] = (out[0].reshape(r, d) * out[1][:, None]).reshape(-1)
    elif op.op == "normalize":
        r, d = op.shape
        out[2] = _store((out[0].reshape(r, d) / out[1][:, None]).reshape(-1), t[2])
    return out


# -- the kernels compiled on the host ---------------------------------------------------------------

class HostKernels:
    """The entry points of ``ops`` compiled on the host into a shared library (``g++``, or the C++
    compiler ``CXX`` names) and called through ctypes: :meth:`call` takes float32 arrays (bf16
    arguments already rounded) and gives every argument after the call, as :func:`reference` does."""

    def __init__(self, ops: list[TileOp], folder) -> None:
        import ctypes
        import os
        import shutil
        import subprocess

        from dfopt.errors import CodegenError

        cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        if cxx is None:
            raise CodegenError("no C++ compiler to build the AIE kernels on the host (install g++ or set CXX)")
        import hashlib

        text = entry_source(list(ops)) + "\n"
        tag = hashlib.sha256(text.encode()).hexdigest()[:12]      # a library path per source: dlopen caches paths
        folder = Path(folder)
        src, so = folder / f"dfopt_host_kernels_{tag}.cc", folder / f"libdfopt_host_kernels_{tag}.so"
        src.write_text(text)
        done = subprocess.run([cxx, "-std=c++14", "-O2", "-Wall", "-Werror", "-shared", "-fPIC",
                               f"-I{HEADER.parent}", str(src), "-o", str(so)], capture_output=True, text=True)
        if done.returncode:
            raise CodegenError(f"the AIE kernels do not compile on the host with {cxx}:\n{done.stderr[-2000:]}")
        self.ops = tuple(dict.fromkeys(ops))
        self.lib = ctypes.CDLL(str(so))
        self._ptr = ctypes.c_void_p

    def call(self, op: TileOp, args: list[np.ndarray]) -> list[np.ndarray]:
        types = op.arg_types()
        bufs = [np.ascontiguousarray(to_bits(np.asarray(a, np.float32).reshape(-1))) if t == "bf16"
                else np.array(a, dtype=np.float32, copy=True).reshape(-1) for a, t in zip(args, types)]
        for b, n in zip(bufs, op.sizes()):
            if b.size != n:
                raise ValueError(f"{op.symbol}: an argument of {b.size} elements, the op takes {n}")
        getattr(self.lib, op.symbol)(*[b.ctypes.data_as(self._ptr) for b in bufs])
        return [from_bits(b) if t == "bf16" else b for b, t in zip(bufs, types)]
