"""Buffer-descriptor limits of an AIE2 DMA transfer, and a transfer legalised into pieces within them.

An ``aiex.npu.dma_memcpy_nd`` walks ``sizes`` / ``strides`` (4 entries, outermost first, in
elements of the host buffer) from the element ``sum(offsets[i] * strides[i])``. mlir-aie's
verifier (``AIEXDialect.cpp``, ``verifyStridesWraps`` and ``NpuDmaMemcpyNdOp::verify``, at the
2025-11-17 snapshot) refuses a pattern the buffer descriptor cannot hold. Its rules, with the
widths of AM020 (AIE-ML DMA buffer descriptors) that the platform preset's ``npu.bd`` section
records:

- every size ``>= 1``; a dimension of size ``> 1`` needs a stride ``>= 1``, except the outermost
  (the repeat), whose stride may be 0;
- the innermost size is a whole number of 32-bit words (the address granularity), and so are the
  start, every stride but an innermost stride of 1, and the element width is at most 32 bits;
- the innermost size, in words, at most ``2**wrap_bits - 1`` (1023 on a shim or mem tile, 255 on a
  compute tile) — unless the transfer is linear, ``[r, 1, 1, n][t, 0, 0, 1]``; the next size at most
  ``2**wrap_bits - 1``; the third unbounded; the repeat count at most ``repeat_max`` (64);
- every stride, in words, at most ``2**step_bits`` (shim: 20 bits).

:func:`legalize` rewrites a transfer into one or more transfers that visit exactly the same
elements in the same order and each satisfy the limits: it drops size-1 dimensions, merges
dimensions that continue each other, splits a dimension too long for its slot into two (by its
largest divisor that fits), places the dimensions in the four slots, and when no placement fits,
issues the outermost dimension's iterations as separate transfers. Only the last piece keeps the
original's ``issue_token``: the shim channel runs its tasks in order, so one wait covers them all.

>>> from dfopt.codegen.aie.design import DmaTransfer
>>> op = DmaTransfer("A", "a", (1, 1, 4, 4096), (0, 0, 8192, 1))
>>> pattern_faults(op.sizes, op.strides, op.offsets, 32, SHIM)
['size 0 is 4096 words, above the [0:1023] range (not a linear transfer)']
>>> [(p.sizes, p.strides) for p in legalize(op, 32, SHIM)]     # four contiguous runs, repeated
[((4, 1, 1, 4096), (8192, 0, 0, 1))]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from dfopt.errors import CodegenError

if TYPE_CHECKING:
    from dfopt.codegen.aie.design import DmaTransfer
    from dfopt.ir.platform import Platform


@dataclass(frozen=True)
class BdLimits:
    """The field widths of one tile kind's buffer descriptor."""

    wrap_bits: int = 10
    step_bits: int = 20
    repeat_max: int = 64
    granularity_bits: int = 32

    @property
    def wrap_max(self) -> int:
        return (1 << self.wrap_bits) - 1

    @property
    def step_max(self) -> int:
        return 1 << self.step_bits


#: AIE2 shim tile (NOC module DMA: 10-bit wraps, 20-bit steps, 6-bit iteration count)
SHIM = BdLimits(10, 20, 64, 32)


def limits_of(platform: Platform | None, kind: str = "shim") -> BdLimits:
    """The buffer-descriptor limits of ``kind`` tiles from the preset's ``npu.bd`` section (the
    AIE2 shim values when it has none)."""
    bd = (platform.npu.get("bd", {}) if platform is not None else {}).get(kind)
    if not bd:
        return SHIM
    return BdLimits(int(bd["wrap_bits"]), int(bd["step_bits"]), int(bd.get("repeat_max", 64)),
                    int(platform.npu["bd"].get("granularity_bits", 32)) if platform is not None else 32)


def _words(elements: int, bits: int, lim: BdLimits) -> float:
    return elements * bits / lim.granularity_bits


def is_linear(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """``[r, 1, 1, n][t, 0, 0, 1]``: a contiguous run, repeated (mlir-aie's
    ``isLinearTransferWithoutTransformation``)."""
    return sizes[1] == 1 and sizes[2] == 1 and strides[3] == 1 and strides[2] == 0 and strides[1] == 0


def pattern_faults(sizes: Sequence[int], strides: Sequence[int], offsets: Sequence[int], bits: int,
                   lim: BdLimits = SHIM) -> list[str]:
    """What mlir-aie's verifier would refuse in this pattern (sizes, strides, offsets outermost
    first, in elements of ``bits`` bits), one message each; empty when it lowers."""
    g = lim.granularity_bits
    out = []
    if bits > g:
        return [f"elements of {bits} bits are wider than the {g}-bit address granularity"]
    if any(s < 1 for s in sizes):
        return [f"every size must be >= 1, got {list(sizes)}"]
    inner = [3, 2, 1]          # positions of d0, d1, d2 in the outermost-first tuples
    for pos in inner:
        if sizes[pos] > 1 and strides[pos] < 1:
            out.append(f"stride {3 - pos} must be >= 1 (size {sizes[pos]}), got {strides[pos]}")
    if sizes[0] > 1 and strides[0] < 0:
        out.append(f"the repeat stride must be >= 0, got {strides[0]}")
    if sizes[3] * bits % g:
        out.append(f"size 0 is {sizes[3] * bits // 8} bytes, not a whole number of {g // 8}-byte words")
    for pos in range(4):
        if pos == 3 and strides[3] == 1:
            continue
        if sizes[pos] > 1 and strides[pos] * bits % g:
            out.append(f"stride {3 - pos} is {strides[pos] * bits // 8} bytes, not a whole number of words")
    start = sum(o * s for o, s in zip(offsets, strides)) * bits
    if start % g:
        out.append(f"the start is {start // 8} bytes, not {g // 8}-byte aligned")
    if out:
        return out
    words0 = _words(sizes[3], bits, lim)
    if words0 > lim.wrap_max and not is_linear(sizes, strides):
        out.append(f"size 0 is {int(words0)} words, above the [0:{lim.wrap_max}] range (not a linear transfer)")
    if sizes[2] > lim.wrap_max:
        out.append(f"size 1 is {sizes[2]}, above the [0:{lim.wrap_max}] range")
    if sizes[0] > lim.repeat_max:
        out.append(f"the repeat count (size 3) is {sizes[0]}, above the [1:{lim.repeat_max}] range")
    for pos in range(4):
        if sizes[pos] <= 1 or (pos == 3 and strides[3] == 1):
            continue
        step = _words(strides[pos], bits, lim) - 1
        if step > lim.step_max:
            out.append(f"stride {3 - pos} is {int(step + 1)} words, above the [1:{lim.step_max}] range")
    return out


def address_array(sizes: Sequence[int], strides: Sequence[int], offsets: Sequence[int]) -> np.ndarray:
    """The element addresses a pattern visits, in order: the start ``sum(offsets * strides)``,
    then the walk of ``sizes`` with ``strides``, outermost first.

    >>> address_array((1, 2, 2, 2), (0, 8, 2, 1), (0, 0, 0, 0)).tolist()
    [0, 1, 2, 3, 8, 9, 10, 11]
    """
    idx = np.zeros((1,), dtype=np.int64) + sum(int(o) * int(s) for o, s in zip(offsets, strides))
    for size, stride in zip(sizes, strides):
        idx = (idx[:, None] + np.arange(int(size), dtype=np.int64)[None, :] * int(stride)).reshape(-1)
    return idx


def addresses(sizes: Sequence[int], strides: Sequence[int], offsets: Sequence[int]) -> Iterator[int]:
    """The element addresses a pattern visits, in order (:func:`address_array` as ints)."""
    return iter(address_array(sizes, strides, offsets).tolist())


Dim = tuple[int, int]      # (size, stride), a loop of the pattern


def _normal(dims: Sequence[Dim]) -> list[Dim]:
    """Without size-1 loops, with loops that continue the next inner one merged."""
    out: list[Dim] = []
    for size, stride in dims:
        if size == 1:
            continue
        out.append((size, stride))
    merged: list[Dim] = []
    for size, stride in reversed(out):
        if merged and stride == merged[-1][0] * merged[-1][1]:
            inner = merged.pop()
            merged.append((size * inner[0], inner[1]))
        else:
            merged.append((size, stride))
    return list(reversed(merged))


def _slots(dims: Sequence[Dim], base: int, bits: int, lim: BdLimits) -> tuple | None:
    """A placement of ``dims`` (outermost first, at most 4) in the descriptor's slots that
    passes :func:`pattern_faults`: ``(offsets, sizes, strides)``, or None."""
    dims = list(dims) or [(1, 1)]
    if len(dims) > 4:
        return None
    inner_stride = dims[-1][1]
    if base % inner_stride:
        return None
    offsets = (0, 0, 0, base // inner_stride)
    for chosen in itertools.combinations(range(3), len(dims) - 1):   # slots of the outer loops
        sizes, strides = [1, 1, 1, dims[-1][0]], [0, 0, 0, dims[-1][1]]
        for slot, (n, s) in zip(chosen, dims[:-1]):
            sizes[slot], strides[slot] = n, s
        if not pattern_faults(sizes, strides, offsets, bits, lim):
            return offsets, tuple(sizes), tuple(strides)
    return None


def _split(dims: list[Dim], i: int, cap: int, bits: int, lim: BdLimits, words: bool) -> list[Dim] | None:
    """``dims`` with loop ``i`` cut into an outer and an inner loop, the inner one the largest
    divisor of its size that is at most ``cap`` (in words when ``words``), or None."""
    n, s = dims[i]
    for b in range(min(n - 1, cap if not words else int(cap * lim.granularity_bits // bits)), 1, -1):
        if n % b == 0 and (not words or b * bits % lim.granularity_bits == 0):
            return dims[:i] + [(n // b, b * s), (b, s)] + dims[i + 1:]
    return None


def _pieces(dims: list[Dim], base: int, bits: int, lim: BdLimits) -> list[tuple]:
    dims = _normal(dims)
    fit = _slots(dims, base, bits, lim)
    if fit is not None:
        return [fit]
    tries = []
    if dims and _words(dims[-1][0], bits, lim) > lim.wrap_max:        # the innermost run, in words
        tries.append(_split(dims, len(dims) - 1, lim.wrap_max, bits, lim, words=True))
    for t in list(tries) or [dims]:
        if t is None:
            continue
        fit = _slots(t, base, bits, lim)
        if fit is not None:
            return [fit]
        for i in range(len(t) - 1):                                   # a middle loop too long for d1
            if t[i][0] > lim.wrap_max:
                u = _split(t, i, lim.wrap_max, bits, lim, words=False)
                if u is not None and (fit := _slots(u, base, bits, lim)) is not None:
                    return [fit]
        if t and t[0][0] > lim.repeat_max:                            # a repeat too long for d3
            u = _split(t, 0, lim.repeat_max, bits, lim, words=False)
            if u is not None and (fit := _slots(u, base, bits, lim)) is not None:
                return [fit]
    if len(dims) <= 1:
        raise CodegenError(f"no buffer descriptor walks {dims[0][0] if dims else 1} elements of stride "
                           f"{dims[0][1] if dims else 1}")
    (n, s), rest = dims[0], dims[1:]
    return [p for k in range(n) for p in _pieces(rest, base + k * s, bits, lim)]


def legalize(op: DmaTransfer, bits: int, lim: BdLimits = SHIM) -> list[DmaTransfer]:
    """``op`` as transfers within the limits, visiting the same elements in the same order (one
    transfer when it already fits or a refactoring of its loops does). The pieces keep ``op``'s
    ``id`` (the caller numbers them); only the last keeps its ``issue_token``. :class:`CodegenError`
    naming the fifo when no sequence of descriptors expresses it."""
    base = sum(o * s for o, s in zip(op.offsets, op.strides))
    if not pattern_faults(op.sizes, op.strides, op.offsets, bits, lim):
        return [op]
    try:
        pieces = _pieces(list(zip(op.sizes, op.strides)), base, bits, lim)
    except CodegenError as err:
        raise CodegenError(f"transfer on fifo {op.fifo!r} ({list(op.sizes)} / {list(op.strides)}): {err}") from None
    out = []
    for k, (offsets, sizes, strides) in enumerate(pieces):
        last = k == len(pieces) - 1
        out.append(replace(op, offsets=offsets, sizes=sizes, strides=strides,
                           issue_token=op.issue_token if last else False))
    return out
