"""The kernel laid out as C++: its arrays, FIFOs, output ports and one process per primitive, in
canonical order (:func:`layout`).

Each primitive kind has its generator (:data:`GENERATORS`), a function of a
:class:`~dfopt.codegen.sam_hls.context.Context` returning the process's body; a kind without one,
or an attribute it cannot express, is a :class:`~dfopt.errors.CodegenError` naming the primitive.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dfopt.codegen.hls.emit import ident
from dfopt.codegen.hls.region import Process, canonical_order, check_canonical
from dfopt.codegen.sam_hls import accumulate, join, scan, values, writers
from dfopt.codegen.sam_hls.arrays import ArraySpec
from dfopt.codegen.sam_hls.context import (
    Context,
    Fifo,
    Port,
    ident_of_stream,
    iteration_tokens,
    stream_depth,
    token_type,
    window_tokens,
)
from dfopt.errors import CodegenError

GENERATORS: dict[str, Callable[[Context], list[str]]] = {
    "scanner": scan.scanner, "locate": scan.locate, "repeater": scan.repeater, "joiner": join.joiner,
    "bv_gen": join.bv_gen, "bv_join": join.bv_join, "bv_scan": join.bv_scan, "array": values.array,
    "alu": values.alu, "reducer": values.reducer, "accumulator": accumulate.accumulator,
    "crd_drop": writers.crd_drop,
    "writer": lambda ctx: (writers.vals_writer if ctx.attrs["level"] == "vals" else writers.level_writer)(ctx),
}


@dataclass
class Proc:
    """One process: function name, primitive, signature, call, body and the FIFOs it touches."""

    fn: str
    node: str
    kind: str
    params: list[str]
    args: list[str]
    body: list[str]
    reads: tuple[str, ...]
    writes: tuple[str, ...]

    def definition(self) -> list[str]:
        return [f"// {self.node}: {self.kind}", f"void {self.fn}({', '.join(self.params)}) {{", *self.body, "}"]

    def declaration(self) -> str:
        return f"void {self.fn}({', '.join(self.params)});"


@dataclass
class Layout:
    """What the files are written from (:mod:`.project`)."""

    graph: Any
    val_t: str
    fifos: list[Fifo]
    ports: list[Port]
    procs: list[Proc]
    operands: list[ArraySpec]
    results: list[ArraySpec]
    workspaces: dict[str, str] = field(default_factory=dict)   # workspace -> its FIFO's variable


def value_type(data: Any) -> str:
    """``int64_t`` when every operand holds integers and every literal is integral (the
    reference's exact arithmetic), else ``double``."""
    from dfopt.ir.sparse.notation import Binary, Literal, Neg, Sum

    def literals(e) -> list:
        if isinstance(e, Literal):
            return [e.value]
        if isinstance(e, Binary):
            return literals(e.left) + literals(e.right)
        if isinstance(e, Neg | Sum):
            return literals(e.arg)
        return []

    exact = all(t.vals.dtype.kind in "biu" for t in data.tensors.values()) and \
        all(float(v).is_integer() for v in literals(data.statement.assignment.rhs))
    return "int64_t" if exact else "double"


def _arrays_of(node, data) -> list[tuple[str, str, str]]:
    """(array, element kind, role) of each array the primitive reads or writes."""
    a = node.attrs
    if node.kind == "scanner" and a.get("tensor") is not None:
        kind = data.tensors[a["tensor"]].levels[a["level"]].kind
        name = f"{a['tensor']}.{a['level']}"
        return ([(f"{name}.pos", "idx", "operand")] if kind == "compressed" else []) + \
            ([(f"{name}.crd", "idx", "operand")] if kind != "dense" else [])
    if node.kind == "array" and a["tensor"] in data.tensors:
        return [(f"{a['tensor']}.vals", "val", "operand")]
    if node.kind == "accumulator":
        return [(f"{a['workspace']}.vals", "val", "workspace")]
    if node.kind == "writer":
        if a["level"] == "vals":
            return [(f"{a['tensor']}.vals", "val", "result")]
        if a["format"] == "compressed":
            return [(f"{a['tensor']}.{a['level']}.pos", "idx", "result"), (f"{a['tensor']}.{a['level']}.crd", "idx",
                                                                            "result")]
    return []


def _length(name: str, role: str, node, data, output) -> int:
    if role == "operand":
        tensor, rest = name.split(".", 1)
        t = data.tensors[tensor]
        if rest == "vals":
            return len(t.vals)
        level, kind = rest.split(".")
        arr = getattr(t.levels[int(level)], kind)
        return len(arr)
    if role == "result":
        return len(output.arrays()[name.split(".", 1)[1]])
    return math.prod(int(d) for d in node.attrs["dims"])


def _spec(name: str, elem: str, role: str, node, data, design, output) -> ArraySpec:
    binding = design.binding.get(name)
    if binding is None:
        raise CodegenError(f"primitive {node.name} ({node.kind}) reads or writes array {name!r}, which the design "
                           f"does not bind; bound: {', '.join(sorted(design.binding))}")
    length = _length(name, role, node, data, output)
    if role == "workspace" and node.attrs["format"] == "sparse":
        words = max(1, binding.pmus) * data.machine.pmu_words
        needed = data.sim.arrays[name].length if name in data.sim.arrays else 0
        length = min(length, words)
        if needed > length:
            raise CodegenError(f"primitive {node.name} (accumulator): its sparse workspace holds {length} entries "
                               f"({binding.pmus} PMUs), the data needs {needed}")
    return ArraySpec(name, elem, int(length), binding.memory, role)


class _Builder:
    """The FIFOs, ports and processes of one graph, built one after another."""

    def __init__(self, graph, data, design, output, depths):
        self.graph, self.data, self.design, self.output, self.depths = graph, data, design, output, depths
        self.fifos: list[Fifo] = []
        self.ports: list[Port] = []
        self.by_port: dict[tuple[str, str], Port] = {}
        self.ws_fifo: dict[str, str] = {}
        self.specs: dict[str, ArraySpec] = {}
        nodes = graph.nodes.values()
        self.workspaces = {n.attrs["workspace"]: n.name for n in nodes if n.kind == "accumulator"}

    def _port(self, node: str, name: str, depth: int, ctype: str) -> Port:
        if (node, name) not in self.by_port:
            self.by_port[node, name] = Port(name, [], depth, len(self.ports), ctype)
            self.ports.append(self.by_port[node, name])
        return self.by_port[node, name]

    def graph_fifos(self, streams: dict) -> None:
        """One FIFO per stream, as deep as the policy says (:data:`~.context.DEPTHS`)."""
        for s in self.graph.streams:
            port = self._port(s.src, s.src_port, s.depth, token_type(s.kind))
            port.params.append(f"o_{ident(s.src_port)}_{len(port.params)}")
            run = streams[s.name]
            self.fifos.append(Fifo(ident_of_stream(s.name), s.name, token_type(s.kind), self._depth(run, run.tokens),
                                   run.tokens, port.id, s.src, s.dst))

    def _depth(self, run, tokens: int) -> int:
        if self.depths != "iteration":
            return stream_depth(tokens)
        return stream_depth(tokens, window_tokens(iteration_tokens(run), len(self.graph.nodes) + 1))

    def workspace_fifos(self, streams: dict) -> None:
        """One FIFO per workspace read, as deep as the entries its accumulator drains (in one iteration
        of the outermost loop, with the policy ``iteration``)."""
        nodes = self.graph.nodes
        readers = {n.attrs["tensor"]: n.name for n in nodes.values()
                   if n.kind == "array" and n.attrs["tensor"] in self.workspaces}
        for w, acc in self.workspaces.items():
            if w not in readers:
                continue
            port = self._port(acc, "vals", 0, "vtok_t")
            port.params.append("o_vals_0")
            last = nodes[acc].attrs["holds"][-1]
            entries = next(streams[s.name] for s in self.graph.streams
                           if s.src == acc and s.src_port in (f"crd.{last}", f"ref.{last}"))
            self.ws_fifo[w] = accumulate.workspace_port(w)
            self.fifos.append(Fifo(self.ws_fifo[w], f"{acc}.vals->{readers[w]}.ws", "vtok_t",
                                   self._depth(entries, entries.leaves + 1), None, port.id, acc, readers[w]))

    def process(self, name: str) -> Proc:
        node = self.graph.nodes[name]
        if node.kind not in GENERATORS:
            raise CodegenError(f"primitive {name}: kind {node.kind!r} has no HLS process (emitted kinds: "
                               f"{', '.join(GENERATORS)})")
        ins = self.graph.inputs(name)
        inputs = {s.dst_port: (f"i_{ident(s.dst_port)}", s.depth, s.kind) for s in ins}
        params = [f"hls::stream<{token_type(s.kind)}>& i_{ident(s.dst_port)}" for s in ins]
        args = [ident_of_stream(s.name) for s in ins]
        if node.kind == "array" and node.attrs["tensor"] in self.ws_fifo:
            inputs["ws"] = ("i_ws", 0, "val")
            params.append("hls::stream<vtok_t>& i_ws")
            args.append(self.ws_fifo[node.attrs["tensor"]])
        outs = {p.name: p for (src, _), p in self.by_port.items() if src == name}
        for p in outs.values():
            params += [f"hls::stream<{p.ctype}>& {q}" for q in p.params]
            args += [f.var for f in self.fifos if f.src == name and f.port == p.id]
        arrays = {}
        for arr, elem, role in _arrays_of(node, self.data):
            spec = arrays[arr] = self.specs[arr] = _spec(arr, elem, role, node, self.data, self.design, self.output)
            if role != "workspace":
                params.append(spec.param())
                args.append(spec.var)
            if role == "result":
                params.append(f"long* {spec.var}_n")
                args.append(f"{spec.var}_n")
        ctx = Context(node, "p_" + ident(name), inputs, outs, arrays, self.data,
                      extra={"workspaces": set(self.workspaces)})
        body = GENERATORS[node.kind](ctx)
        return Proc(ctx.fn, name, node.kind, params, args, body, tuple(f.var for f in self.fifos if f.dst == name),
                    tuple(f.var for f in self.fifos if f.src == name))


def layout(graph, data, design, streams: dict, output, depths: str = "iteration") -> Layout:
    """Lay out ``graph`` (lowered with the design's methods) with the run's ``streams`` (name ->
    :class:`~dfopt.sim.sparse.streams.Stream`), the result ``output`` it stores and the FIFO depth
    policy ``depths`` (:data:`~.context.DEPTHS`)."""
    b = _Builder(graph, data, design, output, depths)
    b.graph_fifos(streams)
    b.workspace_fifos(streams)
    procs = [b.process(name) for name in graph.topological_order()]
    _unique([p.fn for p in procs], "process functions")
    _unique([f.var for f in b.fifos], "streams")
    order = canonical_order([Process(p.fn, "", p.reads, p.writes) for p in procs])
    check_canonical("top", order, [f.var for f in b.fifos])
    rank = {p.name: i for i, p in enumerate(order)}
    procs.sort(key=lambda p: rank[p.fn])
    operands = [s for s in b.specs.values() if s.role == "operand"]
    results = [s for s in b.specs.values() if s.role == "result"]
    return Layout(graph, value_type(data), b.fifos, b.ports, procs, operands, results, b.ws_fifo)


def _unique(names: list[str], what: str) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise CodegenError(f"two {what} map to the C name {n!r}; rename a tensor or index")
        seen.add(n)
