"""Seeded random instances of the ``fusion`` problem (``gen:fusion_random:...`` in suites).

The DAG shape is the FIFO generator's (:func:`dfopt.bench.generators._draw_edges`: long paths and
reconvergent fork-joins). Kernel bytes are log-uniform in ``kernel_bytes``. Every stream carries a
2-D tensor tiled in square tiles, streamed row-major by its producer; ``typed`` of the streams give
their consumer's view as an itensor type — the same order (no converter), column-major tile order
(Algorithm 1 buffers the whole tensor) or each row block read twice (a row-block buffer) — and the
others an explicit ``converter_bytes`` drawn as a share of the tensor's bytes (sometimes 0).
``c_max`` is ``c_max_fraction`` of the total kernel and converter bytes, never below the largest
kernel (so every instance is feasible).

>>> inst = random_fusion_dag(6, 0)
>>> inst["name"], len(inst["graph"]["kernels"]), inst["options"]["fusion"]["c_max"] > 0
('fusion-n6-s0', 6, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dfopt.bench.generators import (
    INSTANCE_FORMAT,
    _defaults,
    _draw_edges,
    _params_suffix,
)
from dfopt.errors import InstanceError
from dfopt.ir.converter import converter_buffer
from dfopt.ir.itensor import ITensorType

DIMS = (64, 128, 256)
TILES = (16, 32)
DST_ORDERS = ("same", "column", "reuse")


def _types(rng, dtype: str) -> tuple[ITensorType, ITensorType]:
    r, c = (int(v) for v in rng.choice(DIMS, size=2))
    e = int(rng.choice(TILES))
    src = ITensorType(dtype, (r, c), (e, e), (r // e, c // e), (e, e), (0, 1))
    order = DST_ORDERS[int(rng.integers(len(DST_ORDERS)))]
    if order == "same":
        dst = src
    elif order == "column":
        dst = ITensorType(dtype, (r, c), (e, e), (c // e, r // e), (e, e), (1, 0))
    else:
        dst = ITensorType(dtype, (r, c), (e, e), (r // e, 2, c // e), (e, 1, e), (0, 2))
    return src, dst


def random_fusion_dag(n_kernels: int, seed: int, *, c_max_fraction: float = 0.2, typed: float = 0.3,
                      kernel_bytes: Sequence[int] = (1024, 1 << 20), max_fan_in: int = 4,
                      dtype: str = "f32") -> dict:
    """A random DAG instance of the ``fusion`` problem (see the module docstring)."""
    if not isinstance(n_kernels, (int, np.integer)) or n_kernels < 1:
        raise InstanceError(f"generator argument n_kernels: expected an integer >= 1, got {n_kernels!r}")
    if not 0 < c_max_fraction <= 1:
        raise InstanceError(f"generator argument c_max_fraction: expected a number in (0, 1], got {c_max_fraction!r}")
    if not 0 <= typed <= 1:
        raise InstanceError(f"generator argument typed: expected a share in [0, 1], got {typed!r}")
    rng = np.random.default_rng(seed)
    lo, hi = np.log(kernel_bytes[0]), np.log(kernel_bytes[1])
    kbytes = np.exp(rng.uniform(lo, hi, size=n_kernels)).astype(np.int64)
    src, dst = _draw_edges(rng, n_kernels, max_fan_in)
    streams, conv_total = [], 0
    for j, (s, t) in enumerate(zip(src.tolist(), dst.tolist())):
        st, dt = _types(rng, dtype)
        entry: dict[str, Any] = {"name": f"e{j}", "src": f"k{s}", "dst": f"k{t}"}
        if rng.random() < typed:
            entry.update(src_type=st.to_dict(), dst_type=dt.to_dict())
            conv_total += converter_buffer(st, dt).bytes
        else:
            tensor = st.tokens * st.token_bits // 8
            share = 0.0 if rng.random() < 0.3 else float(rng.uniform(0.05, 1.0))
            entry.update(tokens=st.tokens, width=st.token_bits, converter_bytes=int(share * tensor))
            conv_total += entry["converter_bytes"]
        streams.append(entry)
    c_max = max(int(kbytes.max()), int(c_max_fraction * (int(kbytes.sum()) + conv_total)))
    given = {"c_max_fraction": c_max_fraction, "typed": typed, "kernel_bytes": kernel_bytes,
             "max_fan_in": max_fan_in, "dtype": dtype}
    name = f"fusion-n{n_kernels}-s{seed}" + _params_suffix(given, _defaults(random_fusion_dag))
    kernels = [{"name": f"k{i}", "resources": {"bytes": int(b)}} for i, b in enumerate(kbytes.tolist())]
    return {"format": INSTANCE_FORMAT, "name": name, "problem": "fusion",
            "description": f"random fusion DAG: {n_kernels} kernels, seed {seed}, "
                           f"C_max {c_max_fraction:g} of the total",
            "graph": {"kernels": kernels, "streams": streams}, "options": {"fusion": {"c_max": c_max}}}
