"""The physical channel of a stream: how many values of its dtype one beat carries, and how many
beats one token (a tile) takes.

A stream's token is a whole tile, but the wire between two processes is at most one 512-bit
AXI-stream beat wide: ``lanes`` values of the dtype per beat (the producer kernel's
``attrs.vector``, else the consumer's, else 1; never more than the token and never above 512
bits), and a token of ``E`` values travels as ``ceil(E / lanes)`` beats in the tile's row-major
element order (the last beat padded). Memory binding and placement count FIFOs in these beats,
and the HLS emitter declares ``hls::stream`` of exactly this beat, so the three agree.

>>> c = channel("f32", 4096, vector=64)
>>> c.lanes, c.bits, c.beats
(16, 512, 256)
>>> channel("f32", 8, vector=16).lanes, channel("f64", 4096, vector=16).bits
(8, 512)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.ir.itensor import DTYPE_BITS

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph, Stream

CHANNEL_BITS_MAX = 512      # one AXI-stream beat


@dataclass(frozen=True)
class Channel:
    """``lanes`` values of ``dtype_bits`` per beat; ``beats`` beats per token of ``elements``."""

    lanes: int
    dtype_bits: int
    elements: int

    @property
    def bits(self) -> int:
        """Bits of one beat."""
        return self.lanes * self.dtype_bits

    @property
    def beats(self) -> int:
        """Beats of one token."""
        return -(-self.elements // self.lanes)


def channel(dtype: str, elements: int, vector: int | None = None) -> Channel:
    """The channel of a token of ``elements`` values of ``dtype`` with ``vector`` lanes wanted."""
    bits = DTYPE_BITS.get(dtype, 32)
    lanes = max(1, min(int(vector or 1), int(elements), CHANNEL_BITS_MAX // bits))
    return Channel(lanes, bits, int(elements))


def stream_vector(graph: DataflowGraph, stream: Stream) -> int:
    """The lanes a stream's ends ask for: the producer's ``attrs.vector``, else the consumer's."""
    return int(graph.kernels[stream.src].attrs.get("vector")
               or graph.kernels[stream.dst].attrs.get("vector") or 1)


def stream_channel(graph: DataflowGraph, stream: Stream) -> Channel:
    """The channel of ``stream`` of ``graph``: from its producer-side itensor type when it has one;
    an untyped stream's token is one value of its ``width`` bits, cut into beats of at most 512."""
    t = stream.src_type
    if t is not None:
        return channel(t.dtype, t.element_count, stream_vector(graph, stream))
    width = max(1, int(stream.width))
    bits = min(width, CHANNEL_BITS_MAX)
    return Channel(1, bits, -(-width // bits))
