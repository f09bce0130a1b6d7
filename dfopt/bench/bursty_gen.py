"""Seeded random bursty dataflow designs (``gen:bursty:...`` in suites): DAGs of tiled-matmul-like
and elementwise kernels whose matmuls carry per-token block schedules (docs/design.md, per-token
schedules), the way HLS dataflow processes behave.

Every stream carries ``tiles x tile_tokens`` tokens. ``k0`` is a DMA reader (the only source) and
the last kernel a DMA writer; kernel ``i`` reads kernel ``i - 1`` and (except the DMA writer), with
probability ``fork_probability``, also an earlier kernel (a skip connection: a fork-join), which
makes it an elementwise add. The other kernels are tiled matmuls with probability ``matmul_probability``,
else elementwise:

- **a matmul** (``k_steps`` drawn from its range, an II from ``iis``) reads each input tile in the
  first of its k reduction steps, one token per II (a step: ``tile_tokens x ii`` cycles), and
  writes the tile's tokens in one burst at II 1, ``drain`` cycles after the last step; a tile takes
  ``k x step + tile_tokens`` cycles. Its input and outputs carry the blocks
  ``[{offset 0, [[tiles, period], [tile_tokens, ii]]}]`` and
  ``[{offset k x step + drain, [[tiles, period], [tile_tokens, 1]]}]``;
- **an elementwise kernel** reads and writes steadily at its II (``delay`` 2..16, no schedule).

>>> inst = bursty_dag(6, 0)
>>> inst["name"], [k["op"] for k in inst["graph"]["kernels"]]
('bursty-n6-s0', ['dma_in', 'matmul', 'add', 'silu', 'matmul', 'dma_out'])
>>> inst["graph"]["streams"][1]["src_schedule"]      # k1: 4 steps of 16 tokens x II 2, a burst 8 cycles on
[{'offset': 136, 'loops': [[8, 144], [16, 1]]}]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dfopt.bench.generators import INSTANCE_FORMAT, _defaults, _draw_widths, _params_suffix
from dfopt.errors import InstanceError

ELEMENTWISE = ("gelu", "relu", "silu", "scale")
_DRAIN = (8, 32)          # cycles from a matmul's last step to its first output token
_EW_DELAY = (2, 16)       # latency of an elementwise kernel
_DMA_DELAY = (100, 200)   # HBM latency of the DMA reader
_P_SKIP_STEP = 0.3        # distance back of a skip connection ~ 1 + geometric(p)


def bursty_dag(n_kernels: int, seed: int, *, tile_tokens: int = 16, tiles: int = 8,
               k_steps: Sequence[int] = (2, 8), iis: Sequence[int] | int = (1, 2, 4), fork_probability: float = 0.2,
               matmul_probability: float = 0.5, width: Sequence[int] = (256, 1024)) -> dict:
    """A random bursty DAG instance of the ``fifo`` problem (see the module docstring); ranges are
    inclusive ``(low, high)`` pairs."""
    choices = (iis,) if isinstance(iis, int) else tuple(iis)      # a spec's iis=2 is one number
    _check_args(n_kernels, tile_tokens, tiles, k_steps, choices, fork_probability, matmul_probability, width)
    rng = np.random.default_rng(seed)
    tokens = tiles * tile_tokens
    kernels: list[dict[str, Any]] = [{"name": "k0", "op": "dma_in", "delay": int(rng.integers(*_DMA_DELAY)),
                                      "ii": 1}]
    writes: dict[int, list] = {0: []}       # a matmul's output schedule, for its outgoing streams
    edges = []
    for i in range(1, n_kernels):
        last = i == n_kernels - 1
        inputs = [i - 1]
        if i >= 2 and not last and rng.random() < fork_probability:
            inputs.append(max(0, i - 1 - int(rng.geometric(_P_SKIP_STEP))))
        if len(set(inputs)) == 1:
            inputs = inputs[:1]
        kind = "dma_out" if last else "add" if len(inputs) == 2 else \
            "matmul" if rng.random() < matmul_probability else "elementwise"
        kernel, reads, writes[i] = _kernel(rng, i, kind, tile_tokens, tiles, k_steps, choices)
        kernels.append(kernel)
        edges += [(j, i, reads) for j in inputs]
    widths = _draw_widths(rng, len(edges), width).tolist()
    streams = []
    for e, ((j, i, reads), w) in enumerate(zip(edges, widths)):
        stream: dict[str, Any] = {"name": f"e{e}", "src": f"k{j}", "dst": f"k{i}", "tokens": tokens, "width": w}
        if writes[j]:
            stream["src_schedule"] = writes[j]
        if reads:
            stream["dst_schedule"] = reads
        streams.append(stream)
    given = {"tile_tokens": tile_tokens, "tiles": tiles, "k_steps": k_steps, "iis": choices,
             "fork_probability": fork_probability, "matmul_probability": matmul_probability, "width": width}
    name = f"bursty-n{n_kernels}-s{seed}" + _params_suffix(given, _defaults(bursty_dag))
    return {"format": INSTANCE_FORMAT, "name": name, "problem": "fifo",
            "description": f"Random bursty dataflow design (dfopt.bench.bursty_gen): {n_kernels} kernels, "
                           f"{tiles} tiles of {tile_tokens} tokens per stream, tiled matmuls writing each tile in "
                           "one burst after their last reduction step, steady elementwise kernels, skip "
                           "connections as fork-joins.",
            "graph": {"kernels": kernels, "streams": streams}}


def _kernel(rng: np.random.Generator, i: int, kind: str, tile_tokens: int, tiles: int, k_steps: Sequence[int],
            iis: Sequence[int]) -> tuple[dict, list, list]:
    """(kernel, its input schedule, its output schedule) of one kernel; no schedule: steady."""
    name = f"k{i}"
    ii = int(rng.choice(np.asarray(iis, dtype=np.int64)))
    if kind == "dma_out":
        return {"name": name, "op": "dma_out", "ii": 1}, [], []
    if kind != "matmul":
        op = "add" if kind == "add" else ELEMENTWISE[int(rng.integers(len(ELEMENTWISE)))]
        return {"name": name, "op": op, "delay": int(rng.integers(*_EW_DELAY)), "ii": ii}, [], []
    k = int(rng.integers(k_steps[0], k_steps[1] + 1))
    step = tile_tokens * ii
    period = k * step + tile_tokens
    first = k * step + int(rng.integers(*_DRAIN))
    loops = [{"name": "tile", "tripcount": tiles}, {"name": "k", "tripcount": k, "kind": "reduction"},
             {"name": "row", "tripcount": tile_tokens}]
    kernel = {"name": name, "op": "matmul", "loops": loops, "delay": first, "ii": ii}
    reads = [{"offset": 0, "loops": [[tiles, period], [tile_tokens, ii]]}]
    writes = [{"offset": first, "loops": [[tiles, period], [tile_tokens, 1]]}]
    return kernel, reads, writes


def _check_args(n_kernels, tile_tokens, tiles, k_steps, iis, fork_probability, matmul_probability, width) -> None:
    """Raise :class:`InstanceError` naming the first bad argument."""
    def bad(arg, expected, got):
        raise InstanceError(f"generator argument {arg}: expected {expected}, got {got!r}")

    for arg, value, low in (("n_kernels", n_kernels, 2), ("tile_tokens", tile_tokens, 1), ("tiles", tiles, 1)):
        if not isinstance(value, (int, np.integer)) or value < low:
            bad(arg, f"an integer >= {low}", value)
    for arg, rng_, low in (("k_steps", k_steps, 1), ("width", width, 1)):
        if not isinstance(rng_, (list, tuple)) or len(rng_) != 2 or any(int(v) != v for v in rng_) \
                or not low <= rng_[0] <= rng_[1]:
            bad(arg, f"an integer range (low, high) with {low} <= low <= high", rng_)
    if len(iis) == 0 or any(int(v) != v or v < 1 for v in iis):
        bad("iis", "a non-empty list of integers >= 1", iis)
    for arg, p in (("fork_probability", fork_probability), ("matmul_probability", matmul_probability)):
        if not isinstance(p, (int, float)) or not 0 <= p <= 1:
            bad(arg, "a probability in [0, 1]", p)
