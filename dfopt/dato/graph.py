"""The virtual mapping graph of a recorded Dato program, its export, and the folding legality rules.

One node per task instance; one edge per stream (producer -> consumer, keyed by the stream name);
and *reduction edges* for each collective group: a chain along the group's grid axis
(member i -> member i + 1, keyed ``group#i``), the order in which a cascade accumulates the
partial sums. The chain keeps the graph acyclic where the program is.

Export to the shared IR (:func:`to_dataflow_graph`): a kernel per instance with ``op`` = its
heaviest compute op (``dma_in`` / ``dma_out`` / ``generic`` without one), ``latency`` = its work
estimate in cycles, ``resources={"bytes": local memory}`` and ``attrs`` with the task, grid index
and grid; a stream per Dato stream with ``tokens`` = puts, ``width`` = element bits and ``depth``
= N; and a stream per reduction edge (tokens = allreduce calls, width = the reduced value's bits,
no depth). :func:`to_dict` is the plain JSON form of the whole recording.

Folding the virtual graph onto physical tiles uses two primitives; here are their *legality*
conditions (the search is elsewhere):

* :func:`can_bundle` — isomorphic nodes (the same op sequence, stream types and pattern of peers)
  become one node executed once per member, one after another on one tile; so no member may
  depend on another (no path between any two of them).
* :func:`can_chain` — a producer and its consumer fused into one node; illegal when the consumer
  reaches the producer (a reverse dependency path), since the fused node would then wait on its
  own later output.

>>> from dfopt.dato.examples import attention_program
>>> g = mapping_graph(attention_program())
>>> bool(g.can_chain("send_q_0", "gemm0_0")), bool(g.can_bundle(["gemm0_0", "gemm0_1"]))
(True, True)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import networkx as nx

from dfopt.dato.checks import end_diagnostics
from dfopt.dato.frontend import DatoError, Recording, recording
from dfopt.ir.graph import DataflowGraph, Kernel
from dfopt.ir.graph import Stream as IRStream

if TYPE_CHECKING:
    from dfopt.dato.frontend import Program
    from dfopt.dato.record import CollectiveGroup, TaskInstance
    from dfopt.instance.types import Instance


@dataclass(frozen=True)
class Verdict:
    """Whether a folding step is legal; ``reason`` says why not. True in a boolean context when legal."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


class MappingGraph:
    """The virtual mapping graph: ``nx`` is a networkx ``MultiDiGraph`` over instance names."""

    def __init__(self, rec: Recording):
        self.rec = rec
        self.nx = nx.MultiDiGraph()
        for inst in rec.instances.values():
            self.nx.add_node(inst.name, task=inst.task, index=inst.index, work=inst.work, bytes=inst.local_bytes)
        for sr in rec.streams.values():
            for src in sr.producers:
                for dst in sr.consumers:
                    self.nx.add_edge(src, dst, key=sr.name, kind="stream", tokens=sr.puts, bits=sr.bits)
        for src, dst, key, g in reduction_edges(rec):
            self.nx.add_edge(src, dst, key=key, kind="reduce", tokens=max(1, len(g.calls.get(src, []))),
                             bits=g.bits or 32)

    # -- bundle ---------------------------------------------------------------------------
    def signature(self, node: str) -> tuple:
        """The node's ops up to renaming: kinds, ops, work, stream types and the pattern of peers."""
        peers: dict[tuple, int] = {}
        streams: dict[str, int] = {}
        sig: list[tuple] = []
        for op in self.rec.instances[node].ops:
            if op.kind in ("put", "get"):
                sr = self.rec.streams[op.stream]
                ends = tuple(sr.consumers if op.kind == "put" else sr.producers)
                peer = "self" if ends == (node,) else peers.setdefault(ends, len(peers))
                tasks = tuple(self.rec.instances[e].task for e in ends)
                sig.append((op.kind, str(sr.type), tasks, peer, streams.setdefault(op.stream, len(streams))))
            elif op.kind == "allreduce":
                g = self.rec.groups[op.group]
                sig.append((op.kind, op.name, g.axis, len(g.members)))
            else:
                sig.append((op.kind, op.name, op.work, op.writes))
        return tuple(sig)

    def can_bundle(self, nodes: Iterable[str]) -> Verdict:
        """Legal when the nodes are isomorphic and independent of each other."""
        nodes = list(nodes)
        bad = self._unknown(nodes) or (f"{_first_duplicate(nodes)} is listed twice"
                                       if len(set(nodes)) < len(nodes) else "")
        if bad:
            return Verdict(False, bad)
        ref = nodes[0]
        for node in nodes[1:]:
            differ = self._difference(ref, node)
            if differ:
                return Verdict(False, f"{ref} and {node} are not isomorphic: {differ}")
        members = set(nodes)
        for node in nodes:
            reached = sorted(nx.descendants(self.nx, node) & members)
            if reached:
                path = self._path_text(nx.shortest_path(self.nx, node, reached[0]))
                return Verdict(False, f"{node} reaches {reached[0]} through {path}; bundled nodes run one after "
                                      "another on one tile, so none may depend on another")
        return Verdict(True)

    def _difference(self, a: str, b: str) -> str:
        sa, sb = self.signature(a), self.signature(b)
        if sa == sb:
            return ""
        ops_a, ops_b = self.rec.instances[a].ops, self.rec.instances[b].ops
        i = next((i for i, (x, y) in enumerate(zip(sa, sb)) if x != y), min(len(sa), len(sb)))
        if i == min(len(sa), len(sb)):
            return f"{a} has {len(sa)} ops, {b} has {len(sb)}"
        return f"op {i} is {self._op_text(a, ops_a[i])} in {a} but {self._op_text(b, ops_b[i])} in {b}"

    def _op_text(self, node: str, op) -> str:
        if op.kind in ("put", "get"):
            sr = self.rec.streams[op.stream]
            peers = ", ".join(sr.consumers if op.kind == "put" else sr.producers)
            where = "to" if op.kind == "put" else "from"
            return f"{op.kind} {where} '{op.stream}' ({sr.type}, peer {peers}, line {op.line})"
        if op.kind == "allreduce":
            return f"allreduce {op.name} over grid axis {self.rec.groups[op.group].axis} (line {op.line})"
        return f"{op.kind} {op.name!r} of work {op.work} (line {op.line})"

    # -- chain ----------------------------------------------------------------------------
    def can_chain(self, producer: str, consumer: str) -> Verdict:
        """Legal when ``producer`` feeds ``consumer`` and the consumer does not reach the producer."""
        bad = self._unknown([producer, consumer])
        if bad:
            return Verdict(False, bad)
        if producer == consumer:
            return Verdict(False, f"{producer} cannot be chained with itself")
        if not self.nx.has_edge(producer, consumer):
            return Verdict(False, f"no stream from {producer} to {consumer}; chain fuses a producer with its consumer")
        if nx.has_path(self.nx, consumer, producer):
            path = self._path_text(nx.shortest_path(self.nx, consumer, producer))
            return Verdict(False, f"{consumer} reaches {producer} through {path}; fused, the node would wait on "
                                  "its own later output")
        return Verdict(True)

    # -- helpers --------------------------------------------------------------------------
    def _unknown(self, nodes) -> str:
        missing = [n for n in nodes if n not in self.rec.instances]
        return f"unknown task instance {missing[0]!r}" if missing else ""

    def _path_text(self, path: list) -> str:
        hops = [f"{u} -> {v} ({next(iter(self.nx[u][v]))!r})" for u, v in zip(path, path[1:])]
        return ", ".join(hops)


def _first_duplicate(nodes) -> str:
    return next(n for n, c in Counter(nodes).items() if c > 1)


def reduction_edges(rec: Recording) -> Iterator[tuple[str, str, str, CollectiveGroup]]:
    """(src, dst, key, group) for each collective group's chain along its grid axis."""
    for g in rec.groups.values():
        for i, (src, dst) in enumerate(zip(g.members, g.members[1:])):
            yield src, dst, f"{g.name}#{i}", g


def mapping_graph(program: Program | Recording) -> MappingGraph:
    """The virtual mapping graph of a program (recorded now) or of a recording."""
    return MappingGraph(recording(program))


def can_bundle(graph: MappingGraph | Program | Recording, nodes: Iterable[str]) -> Verdict:
    """:meth:`MappingGraph.can_bundle` on a mapping graph, program or recording."""
    return _graph(graph).can_bundle(nodes)


def can_chain(graph: MappingGraph | Program | Recording, producer: str, consumer: str) -> Verdict:
    """:meth:`MappingGraph.can_chain` on a mapping graph, program or recording."""
    return _graph(graph).can_chain(producer, consumer)


def _graph(graph) -> MappingGraph:
    return graph if isinstance(graph, MappingGraph) else mapping_graph(graph)


# == export ===================================================================================

def _kernel_op(inst) -> str:
    work: Counter[str] = Counter()
    for op in inst.ops:
        if op.kind == "compute":
            work[op.name] += op.work
    if work:
        return max(work, key=lambda name: (work[name], name))
    kinds = {op.kind for op in inst.ops}
    if kinds & {"load", "put"} and not kinds & {"get", "store"}:
        return "dma_in"
    if kinds & {"get", "store"} and not kinds & {"load", "put"}:
        return "dma_out"
    return "generic"


def host_ports(inst: TaskInstance) -> list[dict]:
    """The instance's host traffic, one port per (tensor, direction) in first-use order: the blocks
    it moves (``[count, index]`` per axis, in op order) and their bytes. A mapping routes each port
    through a mem tile and a shim DMA.

    >>> from dfopt.dato.examples import ffn_program
    >>> [(p["tensor"], p["dir"], p["bytes"]) for p in host_ports(ffn_program().record().instances["ffn2_1_1"])]
    [('W2', 'in', 524288), ('Y', 'out', 65536)]
    """
    ports: dict = {}
    for op in inst.ops:
        if op.kind in ("load", "store"):
            port = ports.setdefault((op.name, "in" if op.kind == "load" else "out"),
                                    {"tensor": op.name, "dir": "in" if op.kind == "load" else "out",
                                     "blocks": [], "bytes": 0})
            port["blocks"].append([list(b) for b in op.block])
            port["bytes"] += op.bytes
    return list(ports.values())


def to_dataflow_graph(program: Program | Recording) -> DataflowGraph:
    """The shared IR graph of the mapping graph; every stream must have one producer and one consumer.

    >>> from dfopt.dato.examples import ffn_program
    >>> g = to_dataflow_graph(ffn_program())
    >>> len(g.kernels), len(g.streams), g.streams["h_pipe[0,0]"].tokens
    (16, 12, 4)
    """
    rec = recording(program)
    bad = end_diagnostics(rec)
    if bad:
        raise DatoError(bad)
    kernels = [Kernel(inst.name, op=_kernel_op(inst), latency=inst.work, resources={"bytes": inst.local_bytes},
                      attrs={"task": inst.task, "index": list(inst.index), "grid": list(inst.grid),
                             "ops": len(inst.ops), "io": host_ports(inst)})
               for inst in rec.instances.values()]
    streams = [IRStream(sr.name, sr.producer, sr.consumer, tokens=sr.puts, width=sr.bits, depth=sr.depth)
               for sr in rec.streams.values()]
    streams += [IRStream(key, src, dst, tokens=max(1, len(g.calls.get(src, []))), width=g.bits or 32)
                for src, dst, key, g in reduction_edges(rec)]
    return DataflowGraph(kernels, streams)


def _op_dict(op) -> dict:
    out = {"kind": op.kind, "line": op.line}
    for key in ("name", "stream", "group", "work", "writes", "bytes"):
        value = getattr(op, key)
        if value:
            out[key] = list(value) if isinstance(value, tuple) else value
    if op.block:
        out["block"] = [list(axis) for axis in op.block]
    return out


def to_dict(program: Program | Recording) -> dict:
    """The recording as plain JSON-able data: instances with their ops, streams, collectives, edges."""
    rec = recording(program)
    graph = MappingGraph(rec)
    return {
        "program": rec.program,
        "instances": [{"name": i.name, "task": i.task, "index": list(i.index), "grid": list(i.grid),
                       "work": i.work, "local_bytes": i.local_bytes, "ops": [_op_dict(op) for op in i.ops]}
                      for i in rec.instances.values()],
        "streams": [{"name": s.name, "dtype": s.type.elem.dtype, "shape": list(s.type.elem.shape),
                     "bits": s.bits, "depth": s.depth, "packing": s.type.packing,
                     "producers": sorted(s.producers), "consumers": sorted(s.consumers),
                     "puts": s.puts, "gets": s.gets} for s in rec.streams.values()],
        "collectives": [{"name": g.name, "task": g.task, "axis": g.axis, "members": list(g.members),
                         "calls": {m: len(g.calls.get(m, [])) for m in g.members}} for g in rec.groups.values()],
        "edges": [{"src": u, "dst": v, "key": k, "kind": d["kind"], "tokens": d["tokens"], "bits": d["bits"]}
                  for u, v, k, d in graph.nx.edges(keys=True, data=True)],
    }


def to_instance(program: Program | Recording, name: str, platform: str = "npu1", region: dict | None = None,
                description: str = "", options: dict | None = None) -> Instance:
    """A ``problem: mapping`` instance of the program's virtual mapping graph on a platform preset.

    >>> from dfopt.dato.examples import attention_program
    >>> inst = to_instance(attention_program(), "att", region={"columns": [0, 1], "rows": [2, 5]})
    >>> inst.problem, len(inst.graph.kernels), inst.options["mapping"]["region"]["columns"]
    ('mapping', 16, [0, 1])
    """
    from dfopt.instance.types import Instance
    from dfopt.ir.platform import load_preset

    opts = dict(options or {})
    if region is not None:
        opts["region"] = region
    return Instance(name, "mapping", graph=to_dataflow_graph(program), platform=load_preset(platform),
                    options={"mapping": opts} if opts else {}, description=description, platform_name=platform)
