"""The on-chip memories of a dataflow graph, each with the kernel that owns it.

Three sources (docs/memory.md): every kernel-local buffer (``Kernel.buffers``), every stream FIFO with
a ``depth``, and every layout converter a stream needs (:func:`dfopt.models.converter.stream_converter`,
one ping-pong buffer of the stream's width). A buffer lives beside its owner: the kernel itself,
or the consumer (``dst``) of a stream. This module depends on the IR and the converter model
only; the placement model uses it too.

>>> from dfopt.ir.graph import Buffer, DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a", buffers=(Buffer("acc", 32, 1024),)), Kernel("b")],
...                   [Stream("e", "a", "b", tokens=8, width=64, depth=2, converter_bytes=512)])
>>> for b in graph_buffers(g):
...     print(b.key, b.owner, b.width, b.depth, b.source, b.options)
a.acc a 32 1024 kernel {'lutram': 512, 'bram18': 1.0, 'uram': 1}
fifo.e b 64 2 fifo {'register': 128}
conv.e b 64 64 converter {'lutram': 64, 'bram18': 2.0, 'uram': 1}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.errors import InstanceError
from dfopt.ir.memory import memory_options
from dfopt.models.converter import stream_converter

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph

__all__ = ["SOURCES", "BufferUse", "graph_buffers"]

SOURCES = ("kernel", "fifo", "converter")


@dataclass(frozen=True)
class BufferUse:
    """One memory to bind: ``width`` bits x ``depth`` words, owned by kernel ``owner``.

    ``source`` is ``kernel`` (a kernel-local buffer), ``fifo`` (a stream FIFO) or ``converter``
    (a stream's layout converter).
    """

    key: str
    owner: str
    width: int
    depth: int
    source: str

    @property
    def bits(self) -> int:
        return self.width * self.depth

    @property
    def options(self) -> dict[str, float]:
        """Kind -> cost in the kind's resource (:func:`dfopt.ir.memory.memory_options`); a FIFO of
        depth <= 2 is registers only, a deeper one costs what Vitis builds for each kind
        (:func:`dfopt.ir.memory.fifo_storage`: in BRAM18 the simple-dual-port packing, so a 36 x 512
        FIFO is one BRAM18 where a 36 x 512 kernel buffer takes two).

        >>> [BufferUse("x", "b", 36, 512, source).options["bram18"] for source in ("fifo", "kernel")]
        [0.5, 1.0]
        """
        return memory_options(self.width, self.depth, fifo=self.source == "fifo")


def _origins(graph):
    """(key, origin text, BufferUse) for every buffer, in graph order."""
    for kernel in graph.kernels.values():
        for buf in kernel.buffers:
            yield (f"{kernel.name}.{buf.name}", f"buffer {buf.name!r} of kernel {kernel.name!r}",
                   BufferUse(f"{kernel.name}.{buf.name}", kernel.name, buf.width, buf.depth, "kernel"))
    for s in graph.streams.values():
        if s.depth is not None:
            yield (f"fifo.{s.name}", f"the FIFO of stream {s.name!r}",
                   BufferUse(f"fifo.{s.name}", s.dst, s.width, s.depth, "fifo"))
    for s in graph.streams.values():
        conv = stream_converter(s).bytes
        if conv > 0:
            depth = -(-conv * 8 // s.width)
            yield (f"conv.{s.name}", f"the converter of stream {s.name!r}",
                   BufferUse(f"conv.{s.name}", s.dst, s.width, depth, "converter"))


def graph_buffers(graph: DataflowGraph) -> list[BufferUse]:
    """Every memory of ``graph`` to bind: kernel buffers (``kernel.buffer``), stream FIFOs with a
    depth (``fifo.stream``; FIFOs without a depth are skipped), converters that need bytes
    (``conv.stream``, depth ``ceil(bytes * 8 / width)``).

    Two memories with one key (a kernel named ``fifo`` with a buffer named like a stream, or
    names with dots) are an :class:`~dfopt.errors.InstanceError` naming both.
    """
    seen: dict[str, str] = {}
    out = []
    for key, origin, use in _origins(graph):
        if key in seen:
            raise InstanceError(f"two memories share the key {key!r}: {seen[key]} and {origin}; "
                                "rename one of them", pointer="/graph")
        seen[key] = origin
        out.append(use)
    return out
