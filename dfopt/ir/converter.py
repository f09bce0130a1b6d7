"""Layout converters between two itensor types (StreamTensor Algorithm 1; docs/fusion.md).

A converter sits on a stream whose producer and consumer stream the same tensor in different
orders or tiles. It buffers part of the tensor in a ping-pong buffer: while the producer fills one
half, the consumer drains the other. The two loop nests share their outermost loops up to the
first loop where they differ (loops of tripcount 1 are ignored: they do not change the order);
each iteration of these *shared loops* is one phase, and the buffer is reused once per phase.

A data dimension is reduced to its element size when a shared loop drives it (then both types
have the same element there, because a loop's step is its element); every other dimension is
buffered whole. No smaller buffer serves the phase: within a phase the producer writes, and the
consumer reads, the whole box ``buffer shape`` (:mod:`dfopt.sim.converter` checks it element by
element).

Paper Fig. 5 — an 8x8 tensor, 4x2 tiles, the consumer re-reading each column block twice:

>>> src = ITensorType("f32", (8, 8), (4, 2), (4, 2), (2, 4), (1, 0))
>>> dst = ITensorType("f32", (8, 8), (4, 2), (4, 2, 2), (2, 1, 4), (2, 0))
>>> c = converter_buffer(src, dst)
>>> c.shape, c.reuse, c.bytes, c.shared_loops
((8, 2), 4, 128, 1)
>>> converter_buffer(src, src).needed
False
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from dfopt.ir.itensor import DTYPE_BITS, ITensorType

PING_PONG = 2


@dataclass(frozen=True)
class ConverterBuffer:
    """Algorithm 1's answer for one stream.

    ``shape`` is one half of the ping-pong buffer (elements per data dimension); ``bytes`` counts
    both halves; ``reuse`` is how many phases (shared-loop iterations) the buffer serves;
    ``shared_loops`` how many non-trivial outer loops the two nests share.
    """

    needed: bool
    shape: tuple
    bytes: int
    reuse: int
    shared_loops: int
    src_tokens_per_phase: int
    dst_tokens_per_phase: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    def to_dict(self) -> dict:
        return {"needed": self.needed, "shape": list(self.shape), "bytes": self.bytes,
                "reuse": self.reuse, "shared_loops": self.shared_loops,
                "src_tokens_per_phase": self.src_tokens_per_phase,
                "dst_tokens_per_phase": self.dst_tokens_per_phase}


def nest(t: ITensorType) -> list[tuple[int, int, int | None]]:
    """The type's loops as (tripcount, step, driven data dimension or None), outermost first,
    without the loops of tripcount 1."""
    drives = {m: d for d, m in enumerate(t.map) if m is not None}
    return [(int(t.tripcounts[i]), int(t.steps[i]), drives.get(i))
            for i in range(len(t.tripcounts)) if t.tripcounts[i] != 1]


def shared_prefix(src: ITensorType, dst: ITensorType) -> list[tuple[int, int, int | None]]:
    """The outermost loops both nests share: equal tripcount, step and driven dimension."""
    out = []
    for a, b in zip(nest(src), nest(dst)):
        if a != b:
            break
        out.append(a)
    return out


def same_stream(src: ITensorType, dst: ITensorType) -> bool:
    """Whether the two types produce the same token sequence (no converter needed)."""
    return src.element == dst.element and nest(src) == nest(dst)


def buffer_bytes(shape: Iterable[int], dtype: str, copies: int = PING_PONG) -> int:
    """Bytes of ``copies`` buffers of ``shape`` elements of ``dtype`` (rounded up to whole bytes)."""
    return copies * math.ceil(math.prod(shape) * DTYPE_BITS[dtype] / 8)


def converter_buffer(src: ITensorType, dst: ITensorType) -> ConverterBuffer:
    """Algorithm 1: the minimal ping-pong buffer converting ``src`` order into ``dst`` order.

    Both types must stream the same tensor (dtype and shape); :class:`ValueError` otherwise.
    """
    if src.dtype != dst.dtype or tuple(src.shape) != tuple(dst.shape):
        raise ValueError(f"a converter needs the same tensor on both sides: {src} vs {dst}")
    if same_stream(src, dst):
        return ConverterBuffer(False, tuple(src.element), 0, 1, len(nest(src)), 1, 1)
    prefix = shared_prefix(src, dst)
    reduced = {d for _, _, d in prefix if d is not None}
    shape = tuple(src.element[d] if d in reduced else src.shape[d] for d in range(len(src.shape)))
    reuse = math.prod(trip for trip, _, _ in prefix)
    return ConverterBuffer(True, shape, buffer_bytes(shape, src.dtype), reuse, len(prefix),
                           src.tokens // reuse, dst.tokens // reuse)
