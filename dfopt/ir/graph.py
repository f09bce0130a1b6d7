"""The shared dataflow graph: kernels (nodes) and streams (directed edges).

Units are explicit: cycles for time, bits for widths, bytes for memory. Several streams may join
the same pair of kernels, so a networkx ``MultiDiGraph`` (keyed by stream name) sits underneath.
The graph holds data only; it never imports a solver.

>>> g = DataflowGraph()
>>> g.add_kernel(Kernel("a", delay=2, ii=1))
>>> g.add_kernel(Kernel("b", delay=1, ii=2))
>>> g.add_stream(Stream("e0", "a", "b", tokens=8, width=32))
>>> g.consume_ii("e0"), g.produce_ii("e0")
(2, 1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import networkx as nx

from dfopt.ir.itensor import ITensorType
from dfopt.ir.tokens import TokenSchedule

RESOURCE_KINDS = ("lut", "ff", "dsp", "bram", "uram", "bytes")


@dataclass(frozen=True)
class Loop:
    """One loop of a kernel's nest."""

    name: str
    tripcount: int
    step: int = 1
    kind: str = "parallel"  # parallel | reduction


@dataclass(frozen=True)
class Buffer:
    """A kernel-local memory of ``depth`` words of ``width`` bits (memory binding picks where it
    lives: registers, LUTRAM, BRAM18 or URAM, see :mod:`dfopt.ir.memory`)."""

    name: str
    width: int
    depth: int


@dataclass
class Kernel:
    """A dataflow kernel. Timing is in cycles: ``delay`` from start to the first output token,
    ``ii`` between tokens (default 1), ``latency`` total (derived when absent)."""

    name: str
    op: str = "generic"
    loops: tuple = ()
    delay: int = 0
    ii: int = 1
    latency: int | None = None
    resources: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    buffers: tuple = ()  # of Buffer; memory binding adds their blocks to ``resources``

    def resource(self, kind: str) -> float:
        return self.resources.get(kind, 0)


@dataclass
class Stream:
    """A FIFO stream from ``src`` to ``dst`` of ``tokens`` tokens of ``width`` bits each.

    ``src_schedule`` / ``dst_schedule`` give the nominal cycle of every write / read
    (:class:`~dfopt.ir.tokens.TokenSchedule`, relative to the kernel's start); an end without one
    is steady: ``delay + k * produce_ii`` for writes, ``k * consume_ii`` for reads."""

    name: str
    src: str
    dst: str
    tokens: int
    width: int = 32
    produce_ii: int | None = None
    consume_ii: int | None = None
    src_type: ITensorType | None = None
    dst_type: ITensorType | None = None
    converter_bytes: int | None = None
    depth: int | None = None
    src_schedule: TokenSchedule | None = None
    dst_schedule: TokenSchedule | None = None


class DataflowGraph:
    """Kernels and streams in file order, with a networkx view for graph analyses."""

    def __init__(self, kernels: Iterable[Kernel] = (), streams: Iterable[Stream] = ()) -> None:
        self.kernels: dict[str, Kernel] = {}
        self.streams: dict[str, Stream] = {}
        self._nx = nx.MultiDiGraph()
        for k in kernels:
            self.add_kernel(k)
        for s in streams:
            self.add_stream(s)

    # -- construction -------------------------------------------------------------------
    def add_kernel(self, kernel: Kernel) -> None:
        if kernel.name in self.kernels:
            raise ValueError(f"duplicate kernel name {kernel.name!r}")
        self.kernels[kernel.name] = kernel
        self._nx.add_node(kernel.name)

    def add_stream(self, stream: Stream) -> None:
        if stream.name in self.streams:
            raise ValueError(f"duplicate stream name {stream.name!r}")
        for end in (stream.src, stream.dst):
            if end not in self.kernels:
                raise ValueError(f"stream {stream.name!r} names unknown kernel {end!r}")
        self.streams[stream.name] = stream
        self._nx.add_edge(stream.src, stream.dst, key=stream.name)

    def copy(self) -> DataflowGraph:
        return DataflowGraph([dataclasses.replace(k) for k in self.kernels.values()],
                             [dataclasses.replace(s) for s in self.streams.values()])

    def with_depths(self, depths: Mapping[str, int]) -> DataflowGraph:
        """A copy whose streams carry the given FIFO depths (stream name -> depth; streams not in
        ``depths`` keep theirs); ``self`` is left as it was. A name that is not a stream of the
        graph is a ValueError.

        >>> g = DataflowGraph([Kernel("a"), Kernel("b")], [Stream("e", "a", "b", 4), Stream("f", "a", "b", 4)])
        >>> sized = g.with_depths({"e": 3})
        >>> sized.streams["e"].depth, sized.streams["f"].depth, g.streams["e"].depth
        (3, None, None)
        """
        unknown = sorted(set(depths) - set(self.streams))
        if unknown:
            raise ValueError(f"depths name unknown streams: {', '.join(map(repr, unknown))}")
        g = self.copy()
        for name, d in depths.items():
            g.streams[name].depth = int(d)
        return g

    # -- queries ------------------------------------------------------------------------
    @property
    def nx(self) -> nx.MultiDiGraph:
        """The networkx view (read-only by convention): nodes are kernel names, edge keys stream names."""
        return self._nx

    def __len__(self) -> int:
        return len(self.kernels)

    def in_streams(self, kernel: str) -> list[Stream]:
        return [self.streams[k] for _, _, k in self._nx.in_edges(kernel, keys=True)]

    def out_streams(self, kernel: str) -> list[Stream]:
        return [self.streams[k] for _, _, k in self._nx.out_edges(kernel, keys=True)]

    def produce_ii(self, stream: str) -> int:
        s = self.streams[stream]
        return s.produce_ii if s.produce_ii is not None else self.kernels[s.src].ii

    def consume_ii(self, stream: str) -> int:
        s = self.streams[stream]
        return s.consume_ii if s.consume_ii is not None else self.kernels[s.dst].ii

    def write_schedule(self, stream: str) -> TokenSchedule:
        """Nominal cycles of the stream's writes: its ``src_schedule``, else the steady one."""
        s = self.streams[stream]
        if s.src_schedule is not None:
            return s.src_schedule
        return TokenSchedule.steady(self.kernels[s.src].delay, self.produce_ii(stream), s.tokens)

    def read_schedule(self, stream: str) -> TokenSchedule:
        """Nominal cycles of the stream's reads: its ``dst_schedule``, else the steady one."""
        s = self.streams[stream]
        if s.dst_schedule is not None:
            return s.dst_schedule
        return TokenSchedule.steady(0, self.consume_ii(stream), s.tokens)

    @property
    def has_token_schedules(self) -> bool:
        """Some stream end carries a per-token schedule."""
        return any(s.src_schedule is not None or s.dst_schedule is not None for s in self.streams.values())

    def last_write_offset(self, kernel: str) -> int:
        """Nominal offset of the kernel's last write (its delay when it writes nothing)."""
        k = self.kernels[kernel]
        return max([self.write_schedule(s.name).last for s in self.out_streams(kernel) if s.tokens > 0],
                   default=k.delay)

    def latency(self, kernel: str) -> int:
        """Cycles from start to the kernel's last event + 1 (its ``latency`` field when given)."""
        k = self.kernels[kernel]
        if k.latency is not None:
            return k.latency
        reads = [self.read_schedule(s.name).last for s in self.in_streams(kernel) if s.tokens > 0]
        writes = [self.write_schedule(s.name).last for s in self.out_streams(kernel) if s.tokens > 0]
        return max(reads + writes, default=k.delay) + 1

    def slowest_ii(self) -> int:
        iis = [k.ii for k in self.kernels.values()]
        iis += [self.produce_ii(s) for s in self.streams] + [self.consume_ii(s) for s in self.streams]
        return max(iis, default=1)
