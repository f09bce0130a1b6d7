"""Emit a tiled dataflow graph as a self-contained Vitis-style HLS C++ project (docs/pipeline.md).

Layout of ``out_dir``:

- ``kernels.h`` / ``kernels.cpp``: the tile structs (one per dtype and tile size) and one function
  per process: each kernel of the graph (``k_<kernel>``) and each layout converter (on every
  stream whose two ends stream different token sequences: the ping-pong pair ``cvt_<stream>_fill``
  -> ``cvt_<stream>_drain`` joined by the depth-2 FIFO ``s__pp`` of whole buffer halves);
- ``top.h`` / ``top.cpp``: ``void top(<one pointer per graph input, weight and output>)``, a
  ``#pragma HLS dataflow`` region with one FIFO per stream (depth ``max(2, depths[stream])``)
  and one ``DFOPT_PROCESS`` per process. A converted stream ``s`` becomes two FIFOs: ``s``
  (producer -> converter) and ``s__cvt`` (converter -> consumer), each of its own depth
  (``depths["s__cvt"]``, else ``s``'s; :func:`design_depths` maps a FIFO solution of the fused
  design onto these names);
- ``tb.cpp``: the test bench; reads ``data/<input>.bin``, runs ``top``, writes
  ``data/<output>.out.bin`` and compares with ``data/<output>.ref.bin`` within the dtype's
  :data:`dfopt.reference.TOLERANCES`; exit 0 on a match, 1 on a mismatch, 2 on a missing file;
- ``data/``: inputs from :func:`dfopt.reference.random_inputs` and the reference outputs of
  :func:`dfopt.reference.evaluate`, raw little-endian (``numpy.tofile``);
- ``include/``: the simulation runtime headers (``make csim`` runs the processes concurrently
  over bounded FIFOs: exit 3 on a deadlock, 4 on leftover tokens);
- ``Makefile``: ``make build`` compiles ``./csim`` (from ``csim.cpp``, which includes the three
  sources as one translation unit), ``make csim`` compiles and runs it;
- ``floorplan.tcl`` (with ``slots``): one Vivado ``USER_SLR_ASSIGNMENT`` per process, on the
  dataflow instance Vitis names ``<function>_U0``; a converter goes with its consumer.

With ``groups`` (the fused groups, :func:`emit_design`), ``top.cpp`` holds one function
``void group_<i>(...)`` per group, each its own ``#pragma HLS dataflow`` region
(``DFOPT_DATAFLOW_BEGIN("group_<i>")``) with the FIFOs of its internal streams and ``m_axi``
pointers for the graph tensors and DRAM buffers it touches; ``top`` calls them one after another.
A stream ``s`` cut between groups becomes a DRAM buffer ``dram_<s>`` (the whole tensor,
row-major), an extra ``m_axi`` pointer argument of ``top`` after the outputs that the host
allocates (the test bench does): in the producer's group FIFO ``s`` feeds ``wr_<s>``
(a ``dma_out`` in ``src_type`` order), in the consumer's group ``rd_<s>`` (a ``dma_in`` in
``dst_type`` order, re-read tiles read again) feeds FIFO ``s__rd`` (depth ``depths["s__rd"]``,
else ``s``'s); no converter is needed, DRAM converts the layout. Without ``groups`` one top holds
the whole design as one dataflow region.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dfopt import reference
from dfopt.codegen.hls import conv_kernels, include_dir, move_kernels
from dfopt.codegen.hls import kernels as K
from dfopt.codegen.hls.build import assign_banks, build_of, floorplan_tcl, link_cfg, makefile, outputs_py, run_hls_tcl
from dfopt.codegen.hls.kernels import CTYPES, Port
from dfopt.codegen.hls.region import Process, canonical_order, check_canonical
from dfopt.errors import CodegenError
from dfopt.instance.names import CXX_KEYWORDS
from dfopt.io import folder_atomic
from dfopt.ir.channel import CHANNEL_BITS_MAX, channel, stream_vector
from dfopt.ir.converter import same_stream
from dfopt.ir.itensor import DTYPE_BITS

if TYPE_CHECKING:
    from dfopt.io import StrPath
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.opgraph import OpGraph
    from dfopt.ir.platform import Platform

COMPUTE = {"matmul": K.matmul, "add": K.elementwise, "mul": K.elementwise, "gelu": K.elementwise,
           "silu": K.elementwise, "relu": K.elementwise, "mask": K.mask, "softmax": K.row_op,
           "layernorm": K.row_op, "rmsnorm": K.row_op, "sub": K.elementwise, "div": K.elementwise,
           "unary": K.elementwise, "reduce": K.row_op, "rope": K.row_op,
           "conv2d": conv_kernels.window, "pool": conv_kernels.window}
MOVERS = tuple(move_kernels.SOURCES)
HEADERS = ("dfopt_stream.h", "dfopt_dataflow.h", "dfopt_monitor.h")
#: names a kernel or stream may not take as they are: C++ keywords, and names the design uses itself
_KEYWORDS = CXX_KEYWORDS | {"top", "main", "mem"}


def ident(name: str) -> str:
    """A C identifier for ``name``.

    >>> ident("fc1.bias"), ident("2x"), ident("float")
    ('fc1_bias', '_2x', 'float_')
    """
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)     # ASCII: \W would keep letters such as é
    if not out or out[0].isdigit():
        out = "_" + out
    return out + "_" if out in _KEYWORDS else out


def check_dtypes(opgraph: OpGraph) -> None:
    """:class:`CodegenError` naming the first op (or graph tensor) whose dtype is not emitted."""
    supported = ", ".join(CTYPES)
    for op in opgraph.ops:
        dtype = opgraph.tensors[op.output].dtype
        if dtype not in CTYPES:
            raise CodegenError(f"op {op.name}: dtype {dtype} cannot be emitted by the HLS target "
                               f"({supported})")
    for name in opgraph.inputs:
        dtype = opgraph.tensors[name].dtype
        if dtype not in CTYPES:
            raise CodegenError(f"tensor {name}: dtype {dtype} cannot be emitted by the HLS target "
                               f"({supported})")


@dataclass
class Fifo:
    """One ``hls::stream`` of a region: C variable, name, beat port, depth in beats and tokens."""

    var: str
    name: str
    port: Port
    depth: int                 # beats: max(2, depth_tokens x beats)
    depth_tokens: int
    tokens: int                # beats
    beats: int                 # per token (a ping-pong stream: per buffer half)
    storage: str | None = None  # SRL / LUTRAM / BRAM / URAM (the memory stage's binding)
    group: int = 0
    kind: str = "stream"        # stream | ping-pong

    @property
    def element_bits(self) -> int:
        return self.port.lanes * DTYPE_BITS[self.port.itype.dtype]


STORAGE = {"register": "SRL", "lutram": "LUTRAM", "bram18": "BRAM", "uram": "URAM"}
IMPL = {"SRL": "srl", "LUTRAM": "lutram", "BRAM": "bram", "URAM": "uram"}


class _Design:
    """The processes and FIFOs of one top, derived from the graphs; :meth:`files` renders them."""

    def __init__(self, opgraph, graph, depths: dict, groups: list | None = None,
                 storage: Mapping[str, str] | None = None):
        self.opgraph, self.graph = opgraph, graph
        self.depths = depths
        self.storage = dict(storage or {})
        self.group_of = _group_of(graph, groups) if groups is not None else None
        self.n_groups = len(groups) if groups is not None else 0
        self.drams: list[tuple[str, str, int, int, int]] = []  # (buffer, ctype, size, src g, dst g)
        self.dram_procs: list[str] = []
        self.beats: dict[str, tuple[str, int]] = {}        # beat struct -> (C type, lanes)
        self.functions: list[list[str]] = []     # definitions
        self.decls: list[str] = []
        self.procs: list[Process] = []
        self.fifos: list[Fifo] = []
        self.process_slot_of: dict[str, str] = {}          # function -> kernel whose slot it takes
        self.converters: list[str] = []
        self.compute_cycles: dict[str, int] = {}
        self.tensor_of: dict[str, str | None] = {}
        for k in graph.kernels.values():
            self.tensor_of[k.name] = k.attrs.get("output", k.attrs.get("tensor"))
        self.fn = {name: "k_" + ident(name) for name in graph.kernels}
        self.var = {name: "s_" + ident(name) for name in graph.streams}
        self._unique(list(self.fn.values()), "kernel functions")
        self._unique(list(self.var.values()), "streams")
        self.ins: dict[str, list] = {k: [] for k in graph.kernels}        # kernel -> [(stream var, Port)]
        self.in_tensor: dict[str, str | None] = {}       # consumer-side FIFO var -> tensor
        self.outs: dict[str, list] = {k: [] for k in graph.kernels}
        for s in graph.streams.values():
            self._wire(s)
        for k in graph.kernels.values():
            self._kernel(k)
        self._order()
        if self.group_of is not None:
            names = [ident(n) for n in list(opgraph.inputs) + list(opgraph.outputs)]
            self._unique(names + [buf for buf, *_ in self.drams], "top arguments and DRAM buffers")

    @staticmethod
    def _unique(names: list, what: str) -> None:
        seen = set()
        for n in names:
            if n in seen:
                raise CodegenError(f"two {what} map to the C name {n!r}; rename one of them")
            seen.add(n)

    def _port(self, t, vector: int) -> Port:
        if t.dtype not in CTYPES:
            raise CodegenError(f"stream type {t}: dtype {t.dtype} cannot be emitted by the HLS "
                               f"target ({', '.join(CTYPES)})")
        port = Port(t, channel(t.dtype, t.element_count, vector).lanes)
        self._beat(port)
        return port

    def _beat(self, port: Port) -> None:
        self.beats[port.beat] = (CTYPES[port.itype.dtype], port.lanes)

    def _vector(self, kernel: str) -> int:
        return int(self.graph.kernels[kernel].attrs.get("vector") or 1)

    def _wire(self, s) -> None:
        if s.src_type is None or s.dst_type is None:
            raise CodegenError(f"stream {s.name}: needs src_type and dst_type (itensor types) to be "
                               "emitted; tile the graph with dfopt.models.tiling.tile_graph")
        # the channel the memory and placement stages counted (dfopt.ir.channel): the producer's
        # vector on the producer's side; a converter's or a DRAM reader's output, the consumer's
        src = self._port(s.src_type, stream_vector(self.graph, s))
        dst = self._port(s.dst_type, self._vector(s.dst))
        var = self.var[s.name]
        self._fifo(var, s.name, src, s.tokens, s.src, self._depth_tokens(s.name))
        self.outs[s.src].append((var, src))
        if self.group_of is not None and self.group_of[s.src] != self.group_of[s.dst]:
            self._cut(s, var, src, dst)
            return
        if same_stream(s.src_type, s.dst_type):
            self.ins[s.dst].append((var, src))
            self.in_tensor[var] = self.tensor_of[s.src]
            return
        fn, out_var, pp_var = "cvt_" + ident(s.name), var + "__cvt", var + "__pp"
        pp = K.pp_port(src, dst)
        self._beat(pp)
        half_beats = -(-K.converter_buffer(s.src_type, s.dst_type).elements // pp.lanes)
        # the ping-pong pair: up to two buffer halves in flight between fill and drain
        self._fifo(pp_var, s.name + "__pp", pp, 2, s.dst, 2, beats=half_beats, kind="ping-pong")
        self._fifo(out_var, s.name + "__cvt", dst, s.dst_type.tokens, s.dst,
                   self._depth_tokens(s.name + "__cvt", s.name))
        fill, drain = K.converter(fn, src, dst, pp)
        self.functions += [fill, drain]
        self.decls += [fill[0][:-2] + ";", drain[0][:-2] + ";"]
        self._call(f"{fn}_fill", f"{fn}_fill({var}, {pp_var})", (var,), (pp_var,), s.dst)
        self._call(f"{fn}_drain", f"{fn}_drain({pp_var}, {out_var})", (pp_var,), (out_var,), s.dst)
        self.converters += [fn + "_fill", fn + "_drain"]
        self.ins[s.dst].append((out_var, dst))
        self.in_tensor[out_var] = self.tensor_of[s.src]

    def _depth_tokens(self, name: str, fallback: str | None = None) -> int:
        value = self.depths.get(name, self.depths.get(fallback, 2) if fallback else 2)
        return max(1, int(value))

    def _fifo(self, var: str, name: str, port: Port, tokens: int, kernel: str, depth_tokens: int,
              beats: int | None = None, kind: str = "stream") -> None:
        per = port.beats if beats is None else beats
        storage = STORAGE.get(self.storage.get(name, ""), None)
        group = self.group_of[kernel] if self.group_of is not None else 0
        self.fifos.append(Fifo(var, name, port, max(2, depth_tokens * per), depth_tokens, tokens * per, per,
                               storage, group, kind))

    def _call(self, fn: str, call: str, reads: tuple, writes: tuple, kernel: str) -> None:
        group = self.group_of[kernel] if self.group_of is not None else 0
        self.procs.append(Process(fn, call, tuple(reads), tuple(writes), kernel, group))
        self.process_slot_of[fn] = kernel

    def _cut(self, s, var: str, src: Port, dst: Port) -> None:
        """A stream between two groups: the producer's group stores its tokens (``src_type``
        order) into the DRAM buffer ``dram_<s>`` (row-major, the whole tensor); the consumer's
        group reads them back in ``dst_type`` order (re-read tiles included)."""
        assert self.group_of is not None  # only a design with groups cuts streams
        ctype = CTYPES[s.src_type.dtype]
        buf, wr, rd = "dram_" + ident(s.name), "wr_" + ident(s.name), "rd_" + ident(s.name)
        rd_var = var + "__rd"
        self._fifo(rd_var, s.name + "__rd", dst, s.dst_type.tokens, s.dst,
                   self._depth_tokens(s.name + "__rd", s.name))
        self.functions.append(K.dma_out(wr, src, ctype))
        self.decls.append(K.signature(wr, [src], [], f"{ctype}* mem") + ";")
        self._call(wr, f"{wr}({var}, {buf})", (var,), (), s.src)
        self.functions.append(K.dma_in(rd, [dst], ctype))
        self.decls.append(K.signature(rd, [], [dst], f"const {ctype}* mem", mem_first=True) + ";")
        self._call(rd, f"{rd}({buf}, {rd_var})", (), (rd_var,), s.dst)
        self.dram_procs += [wr, rd]
        self.drams.append((buf, ctype, math.prod(int(n) for n in s.src_type.shape),
                           self.group_of[s.src], self.group_of[s.dst]))
        self.ins[s.dst].append((rd_var, dst))
        self.in_tensor[rd_var] = self.tensor_of[s.src]

    def _kernel(self, k) -> None:
        fn = self.fn[k.name]
        ins, outs = self.ins[k.name], self.outs[k.name]
        if k.op != "dma_in" and k.op != "dma_out":
            ins = self._order_inputs(k, ins)
        in_ports, out_ports = [p for _, p in ins], [p for _, p in outs]
        reads, writes = tuple(v for v, _ in ins), tuple(v for v, _ in outs)
        args = [v for v, _ in ins] + [v for v, _ in outs]
        if k.op == "dma_in":
            self._need(k, ins=0, outs=1)
            tensor = k.attrs["tensor"]
            ctype = CTYPES[self.opgraph.tensors[tensor].dtype]
            lines = K.dma_in(fn, out_ports, ctype)
            decl = K.signature(fn, [], out_ports, f"const {ctype}* mem", mem_first=True)
            args = [ident(tensor)] + args
        elif k.op == "dma_out":
            self._need(k, ins=1, outs=0)
            tensor = k.attrs["tensor"]
            ctype = CTYPES[self.opgraph.tensors[tensor].dtype]
            lines = K.dma_out(fn, in_ports[0], ctype)
            decl = K.signature(fn, in_ports, [], f"{ctype}* mem")
            args = args + [ident(tensor)]
        else:
            op = self._op(k)
            self._need(k, ins=1, outs=1)
            ctype = CTYPES[self.opgraph.tensors[op.output].dtype]
            if op.op in MOVERS:
                lines = move_kernels.mover(fn, op, in_ports, out_ports, ctype)
            else:
                lines = COMPUTE[op.op](fn, k, op, in_ports, out_ports, ctype)
            decl = K.signature(fn, in_ports, out_ports)
        self.functions.append(lines)
        self.decls.append(decl + ";")
        self._call(fn, f"{fn}({', '.join(args)})", reads, writes, k.name)
        if k.op not in ("dma_in", "dma_out") and k.ii is not None:
            self.compute_cycles[fn] = int(k.ii)

    def _op(self, k):
        try:
            op = self.opgraph.op(k.name)
        except KeyError as err:
            raise CodegenError(f"kernel {k.name} ({k.op}): no op of that name in the operator "
                               "graph; expected the graph that tile_graph was given") from err
        if op.op not in COMPUTE and op.op not in MOVERS:
            raise CodegenError(f"op {op.name}: kind {op.op} cannot be emitted by the HLS target")
        return op

    def _order_inputs(self, k, ins: list) -> list:
        """Input streams in the op's input order (one per distinct input tensor)."""
        by_tensor = {self.in_tensor[var]: (var, port) for var, port in ins}
        wanted = list(dict.fromkeys(k.attrs.get("inputs", [])))
        missing = [t for t in wanted if t not in by_tensor]
        if missing:
            raise CodegenError(f"kernel {k.name}: no stream brings input {missing[0]!r}")
        return [by_tensor[t] for t in wanted]

    def _need(self, k, ins: int, outs: int) -> None:
        """At least ``outs`` output streams; exactly ``ins`` inputs for a DMA, at least 1 else."""
        n_in, n_out = len(self.ins[k.name]), len(self.outs[k.name])
        ok_in = n_in == ins if k.op in ("dma_in", "dma_out") else n_in >= ins
        if not ok_in or n_out < outs:
            raise CodegenError(f"kernel {k.name} ({k.op}): has {n_in} input and {n_out} output "
                               f"stream(s); expected {ins} input(s) and at least {outs} output(s)")

    def _order(self) -> None:
        """Every region's processes in canonical order (producers first), checked."""
        ordered = []
        for g in range(max(1, self.n_groups)):
            procs = canonical_order([p for p in self.procs if p.group == g])
            check_canonical(self.region_name(g), procs, [f.var for f in self.fifos if f.group == g])
            ordered += procs
        self.procs = ordered

    def region_name(self, g: int) -> str:
        return f"group_{g}" if self.group_of is not None else "top"

    # -- files ------------------------------------------------------------------------------
    def kernels_h(self) -> str:
        lines = ["// Generated by dfopt: beat structs (one stream element: at most one 512-bit beat)",
                 "// and the dataflow processes.", "#pragma once", '#include "dfopt_dataflow.h"', ""]
        for name, (ctype, lanes) in sorted(self.beats.items()):
            lines += [f"struct {name} {{ {ctype} data[{lanes}]; }};",
                      f'static_assert(sizeof({name}) * 8 <= 512, "{name}: a stream element above 512 bits");']
        return "\n".join(lines + ["", *self.decls, ""])

    def kernels_cpp(self) -> str:
        lines = ["// Generated by dfopt: one function per kernel, DMA and layout-converter half.",
                 "#include <cmath>", "#include <limits>", '#include "kernels.h"', ""]
        for fn in self.functions:
            lines += fn + [""]
        return "\n".join(lines)

    def top_ports(self) -> list[tuple[str, str]]:
        """(C parameter, port name) of ``top``: graph inputs, outputs, then the DRAM buffers."""
        params = []
        for name in self.opgraph.inputs:
            params.append((f"const {CTYPES[self.opgraph.tensors[name].dtype]}* {ident(name)}", ident(name)))
        for name in self.opgraph.outputs:
            params.append((f"{CTYPES[self.opgraph.tensors[name].dtype]}* {ident(name)}", ident(name)))
        for buf, ctype, *_ in self.drams:        # DRAM buffers of streams cut between groups
            params.append((f"{ctype}* {buf}", buf))
        return params

    def top_params(self) -> list[str]:
        return [p for p, _ in self.top_ports()]

    def group_params(self, g: int) -> list[tuple[str, str]]:
        """(C parameter, argument) of group ``g``: the graph tensors its DMA kernels touch (in
        ``top``'s order), then the DRAM buffers of the cut streams it writes or reads."""
        assert self.group_of is not None  # only a design with groups has group functions
        touched = {k.attrs["tensor"] for k in self.graph.kernels.values()
                   if k.op in ("dma_in", "dma_out") and self.group_of[k.name] == g}
        names = list(self.opgraph.inputs) + list(self.opgraph.outputs)
        out = [(p, ident(n)) for p, n in zip(self.top_params(), names) if n in touched]
        for buf, ctype, _, gs, gd in self.drams:
            if gs == g:
                out.append((f"{ctype}* {buf}", buf))
            elif gd == g:
                out.append((f"const {ctype}* {buf}", buf))
        return out

    def _region(self, name: str, g: int) -> list[str]:
        lines = ["#pragma HLS dataflow", f'  DFOPT_DATAFLOW_BEGIN("{name}");']
        for f in self.fifos:
            if f.group != g:
                continue
            note = f"  // {f.depth_tokens} token(s) x {f.beats} beat(s)" \
                if f.kind == "stream" else "  // ping-pong: two buffer halves"
            lines += [f'  hls::stream<{f.port.beat}> {f.var}("{f.name}");',
                      f"#pragma HLS stream variable={f.var} depth={f.depth}"]
            if f.storage:
                lines.append(f"#pragma HLS bind_storage variable={f.var} type=fifo impl={IMPL[f.storage]}")
            lines.append(f"  DFOPT_STREAM_DEPTH({f.var}, {f.depth});{note}")
        lines += [f"  DFOPT_PROCESS({p.call});" for p in self.procs if p.group == g]
        return lines + ["  DFOPT_DATAFLOW_END();"]

    def _interfaces(self) -> list[str]:
        lines = []
        for _, port in self.top_ports():
            lines.append(f"#pragma HLS interface m_axi port={port} offset=slave bundle=gmem_{port}")
        lines.append("#pragma HLS interface s_axilite port=return")
        return lines

    def top_cpp(self) -> str:
        head = ['#include "dfopt_dataflow.h"', '#include "kernels.h"', '#include "top.h"', ""]
        if self.group_of is None:
            lines = ["// Generated by dfopt: the dataflow top, processes in canonical order.", *head,
                     f"void top({', '.join(self.top_params())}) {{", *self._interfaces(),
                     *self._region("top", 0), "}", ""]
            return "\n".join(lines)
        lines = ["// Generated by dfopt: one dataflow function per fused group, run in order by top;",
                 "// a stream between groups goes through a DRAM buffer (the whole tensor, row-major).", *head]
        calls = []
        for g in range(self.n_groups):
            params = self.group_params(g)
            lines.append(f"void group_{g}({', '.join(p for p, _ in params)}) {{")
            lines += self._region(f"group_{g}", g) + ["}", ""]
            calls.append(f"  group_{g}({', '.join(a for _, a in params)});")
        lines.append(f"void top({', '.join(self.top_params())}) {{")
        lines += self._interfaces()
        for buf, _, size, gs, gd in self.drams:
            lines.append(f"  // {buf}: {size} values, group {gs} -> group {gd}")
        return "\n".join(lines + calls + ["}", ""])

    def top_h(self) -> str:
        return "\n".join(["#pragma once", f"void top({', '.join(self.top_params())});", ""])

    def manifest(self, slots: Mapping[str, str], bank_of: Mapping[str, str], build: Mapping) -> dict:
        writer = {v: p.name for p in self.procs for v in p.writes}
        reader = {v: p.name for p in self.procs for v in p.reads}
        procs = [{"name": p.name, "function": p.name, "kernel": p.kernel, "slr": slots.get(p.kernel),
                  "region": self.region_name(p.group), "order": i,
                  "role": ("converter" if p.name in self.converters else
                           "dram" if p.name in self.dram_procs else self.graph.kernels[p.kernel].op)}
                 for i, p in enumerate(self.procs)]
        for d in procs:
            if d["name"] in self.compute_cycles:
                d["model_ii"] = self.compute_cycles[d["name"]]
        streams = [{"name": f.name, "var": f.var, "src": writer.get(f.var), "dst": reader.get(f.var),
                    "region": self.region_name(f.group), "kind": f.kind, "dtype": f.port.itype.dtype,
                    "lanes": f.port.lanes, "element_bits": f.element_bits,
                    "beats_per_token": f.beats if f.kind == "stream" else None,
                    "tokens": f.tokens, "depth": f.depth, "depth_tokens": f.depth_tokens,
                    "storage": f.storage} for f in self.fifos]
        m_axi = [{"bundle": f"gmem_{port}", "port": port, "bank": bank_of.get(port),
                  "direction": "in" if param.startswith("const ") else "out"}
                 for param, port in self.top_ports()]
        return {"format": "dfopt-hls-design/1", "top": "top", "platform": build.get("platform"),
                "part": build.get("part"), "depth_unit": "beats", "channel_bits_max": CHANNEL_BITS_MAX,
                "note": ("a stream element is one beat of at most 512 bits; a token (tile) is "
                         "beats_per_token beats in its row-major element order, as the memory and "
                         "placement stages count (dfopt.ir.channel); depth is in beats"),
                "processes": procs, "streams": streams, "m_axi": m_axi}


TB_PRELUDE = r"""// Generated by dfopt: host test bench (exit 0: outputs match the NumPy reference).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>
#include "top.h"

template <class T>
static bool load(const std::string& path, std::vector<T>& v) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) { std::fprintf(stderr, "cannot open %s\n", path.c_str()); return false; }
  const size_t got = std::fread(v.data(), sizeof(T), v.size(), f);
  std::fclose(f);
  if (got != v.size()) {
    std::fprintf(stderr, "%s: expected %zu values, got %zu\n", path.c_str(), v.size(), got);
    return false;
  }
  return true;
}

template <class T>
static void save(const std::string& path, const std::vector<T>& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f) { std::fwrite(v.data(), sizeof(T), v.size(), f); std::fclose(f); }
}

// |got - ref| <= atol + rtol * |ref| elementwise (equal infinities, NaN against NaN: equal).
template <class T>
static bool check(const char* name, const std::vector<T>& got, const std::vector<T>& ref,
                  double rtol, double atol) {
  double max_err = 0;
  size_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double e = ref[i], a = got[i];
    if (a == e || (std::isnan(a) && std::isnan(e))) continue;
    const double d = std::isnan(a - e) ? INFINITY : std::fabs(a - e);
    if (d > max_err) max_err = d;
    if (!(d <= atol + rtol * (std::isfinite(e) ? std::fabs(e) : 0.0))) ++bad;
  }
  std::printf("%s: max abs error %.3g, %zu of %zu outside tolerance (rtol %g, atol %g)\n",
              name, max_err, bad, ref.size(), rtol, atol);
  return bad == 0;
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "data";
"""


def _tb_vector(opgraph, name: str, output: bool) -> tuple[list[str], str]:
    """The testbench's host vector of a top-level tensor, loaded from its file (an output loads
    its expected values into a second vector ``ref_<var>``): ``(lines, var)``."""
    spec = opgraph.tensors[name]
    v = ("out_" if output else "in_") + ident(name)
    decl = f"{v}({spec.size})"
    if output:
        decl += f", ref_{v}({spec.size})"
    target, file = (f"ref_{v}", f"{name}.ref.bin") if output else (v, f"{name}.bin")
    return [f"  std::vector<{CTYPES[spec.dtype]}> {decl};", f'  if (!load(dir + "/{file}", {target})) return 2;'], v


def _tb_cpp(opgraph, drams=()) -> str:
    tol = {dt: reference.TOLERANCES[dt] for dt in CTYPES}
    lines = TB_PRELUDE.splitlines()
    args = []
    for name, output in [(n, False) for n in opgraph.inputs] + [(n, True) for n in opgraph.outputs]:
        more, v = _tb_vector(opgraph, name, output)
        lines += more
        args.append(f"{v}.data()")
    for buf, ctype, size, *_ in drams:      # the host allocates the DRAM buffers between groups
        lines.append(f"  std::vector<{ctype}> {buf}({size});")
        args.append(f"{buf}.data()")
    lines += [f"  top({', '.join(args)});", "  bool ok = true;"]
    for name in opgraph.outputs:
        spec = opgraph.tensors[name]
        v = "out_" + ident(name)
        rtol, atol = tol[spec.dtype]
        lines += [f'  save(dir + "/{name}.out.bin", {v});',
                  f'  ok = check("{name}", {v}, ref_{v}, {rtol!r}, {atol!r}) && ok;']
    lines += ['  std::printf(ok ? "PASS\\n" : "FAIL\\n");', "  return ok ? 0 : 1;", "}", ""]
    return "\n".join(lines)


CSIM_CPP = """\
// Generated by dfopt: the software-simulation build as one translation unit.
#include "kernels.cpp"
#include "top.cpp"
#include "tb.cpp"
"""

def _floorplan(design: _Design, slots: dict) -> str:
    unknown = sorted(set(slots) - set(design.graph.kernels))
    if unknown:
        raise CodegenError(f"slots name unknown kernel {unknown[0]!r}; kernels: "
                           f"{', '.join(design.graph.kernels)}")
    return floorplan_tcl({fn: slots[k] for fn, k in design.process_slot_of.items() if k in slots})


def _write_data(opgraph, data_dir: Path, seed: int, values: Mapping | None = None,
                expected: Mapping | None = None) -> None:
    """The inputs (``values``' where given, else random) and the reference outputs (``expected``
    where given, else the NumPy reference's on those inputs)."""
    data_dir.mkdir()
    inputs = reference.random_inputs(opgraph, seed)
    inputs.update({k: np.asarray(v) for k, v in (values or {}).items() if k in inputs})
    values = {**reference.evaluate(opgraph, inputs), **dict(expected or {})}
    for name in opgraph.inputs:
        dt = np.dtype(reference.STORAGE[opgraph.tensors[name].dtype]).newbyteorder("<")
        np.ascontiguousarray(inputs[name], dtype=dt).tofile(data_dir / f"{name}.bin")
    for name in opgraph.outputs:
        dt = np.dtype(reference.STORAGE[opgraph.tensors[name].dtype]).newbyteorder("<")
        np.ascontiguousarray(values[name], dtype=dt).tofile(data_dir / f"{name}.ref.bin")


def _group_of(graph, groups: list) -> dict:
    """Kernel -> index of its group; :class:`CodegenError` unless ``groups`` partitions the
    kernels of ``graph`` in an order where every group reads only from groups before it."""
    where: dict[str, int] = {}
    for g, members in enumerate(groups):
        if not members:
            raise CodegenError(f"group {g} is empty")
        for name in members:
            if name not in graph.kernels:
                raise CodegenError(f"group {g} names unknown kernel {name!r}")
            if name in where:
                raise CodegenError(f"kernel {name!r} is in group {where[name]} and group {g}")
            where[name] = g
    missing = [k for k in graph.kernels if k not in where]
    if missing:
        raise CodegenError(f"kernel {missing[0]!r} is in no group")
    for s in graph.streams.values():
        if where[s.src] > where[s.dst]:
            raise CodegenError(f"stream {s.name}: group {where[s.dst]} ({s.dst}) reads from group "
                               f"{where[s.src]} ({s.src}) after it; order the groups so that each "
                               "reads only from groups before it")
    return where


def _depth(depths: dict, name: str, fallback: str | None = None) -> int:
    """The emitted depth of FIFO ``name`` (else ``fallback``'s): at least 2, the Vitis minimum."""
    value = depths.get(name, depths.get(fallback, 2) if fallback else 2)
    return max(2, int(value))


def design_depths(fused_graph: DataflowGraph, fifo_depths: Mapping[str, int]) -> dict:
    """FIFO depths of the emitted design from a FIFO solution of the fused design: a stream the
    fusion stage routed through a converter kernel (``s_in`` -> ``cvt_s`` -> ``s_out``) is emitted
    as ``s`` and ``s__cvt``; every other stream keeps its name."""
    out = dict(fifo_depths)
    for k in fused_graph.kernels.values():
        if k.op == "converter" and "stream" in k.attrs:
            s = k.attrs["stream"]
            out[s] = fifo_depths.get(f"{s}_in", 2)
            out[s + "__cvt"] = fifo_depths.get(f"{s}_out", 2)
        elif k.op == "dma_out" and "stream" in k.attrs:    # a cut stream: s_dram_w -> DRAM
            s = k.attrs["stream"]
            out[s] = fifo_depths.get(f"{s}_dram_w", 2)
        elif k.op == "dma_in" and "stream" in k.attrs:     # DRAM -> s_dram_r
            s = k.attrs["stream"]
            out[s + "__rd"] = fifo_depths.get(f"{s}_dram_r", 2)
    return out


def design_storage(fused_graph: DataflowGraph, binding: Mapping[str, str]) -> dict:
    """Memory kind of every emitted FIFO from the memory stage's binding of the fused design
    (keys ``fifo.<stream>``), on the emitted names as :func:`design_depths` maps them."""
    kinds = {key[len("fifo."):]: kind for key, kind in binding.items() if key.startswith("fifo.")}
    out = dict(kinds)
    for k in fused_graph.kernels.values():
        s = k.attrs.get("stream")
        if s is None:
            continue
        if k.op == "converter":
            for src, dst in ((f"{s}_in", s), (f"{s}_out", s + "__cvt")):
                if src in kinds:
                    out[dst] = kinds[src]
        elif k.op == "dma_out" and f"{s}_dram_w" in kinds:
            out[s] = kinds[f"{s}_dram_w"]
        elif k.op == "dma_in" and f"{s}_dram_r" in kinds:
            out[s + "__rd"] = kinds[f"{s}_dram_r"]
    return out


def emit_design(opgraph: OpGraph, graph: DataflowGraph, depths: dict | None, out_dir: StrPath,
                slots: dict | None = None, seed: int = 0, groups: list[list[str]] | None = None,
                storage: Mapping[str, str] | None = None, platform: Platform | None = None,
                values: Mapping | None = None, expected: Mapping | None = None,
                output_names: Mapping[str, str] | None = None) -> dict:
    """Write the HLS C++ project of ``graph`` (tiled from ``opgraph`` by
    :func:`dfopt.models.tiling.tiler.tile_graph`) into ``out_dir``; see the module docstring.

    ``depths`` maps stream names to FIFO depths in tokens (absent: 2), emitted in beats (``depth
    x beats per token``, at least 2); ``slots`` maps kernel names to SLR names for
    ``floorplan.tcl``; ``storage`` maps FIFO names to the memory stage's kind (``register``,
    ``lutram``, ``bram18``, ``uram``: a ``bind_storage`` pragma); ``platform`` gives the part, the
    Vitis platform and the memory banks of ``run_hls.tcl`` and ``link.cfg`` (default: the U280
    preset's). ``values`` (arrays by graph input and weight name) replace the random test data,
    ``expected`` (arrays by output name) the NumPy reference's outputs the test bench compares
    with; ``output_names`` (output -> a name of the model's) adds ``outputs.py``, which ``make
    csim`` and ``make csim-vitis`` run to write what the design computed to ``outputs.npz`` under
    those names (:func:`dfopt.codegen.hls.build.outputs_py`). ``groups`` (kernel names per fused
    group, each group reading only from groups before it) emits one dataflow function
    ``group_<i>`` per group, run one after another by ``top``; a stream between two groups goes
    through a DRAM buffer (FIFOs ``s`` and ``s__rd``, see the module docstring). The folder is
    built next to ``out_dir`` and renamed into place at the end (an existing ``out_dir`` is
    replaced), so a failed emission leaves no partial folder.
    Raises :class:`CodegenError` for a dtype other than f32 / f64 / i32, an op kind or stream it cannot
    express, a region it cannot put in canonical order, ports that do not fit the memory banks.
    Returns a summary: ``out_dir``, ``files``, ``kernels`` (process functions), ``converters``,
    ``streams`` (FIFO name -> depth in beats), ``manifest`` (the contents of ``design.json``).

    >>> from dfopt.ir.opgraph import OpGraph
    >>> from dfopt.models.tiling.tiler import tile_graph
    >>> import tempfile, pathlib
    >>> g = OpGraph.from_dict({"tensors": {"x": {"shape": [4, 8], "dtype": "f32"}},
    ...     "ops": [{"name": "r", "op": "relu", "inputs": ["x"], "output": "y"}], "outputs": ["y"]})
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "relu"
    >>> summary = emit_design(g, tile_graph(g, 4), {}, out)
    >>> summary["kernels"], sorted(summary["streams"].items())
    (['k_r', 'k_x_in', 'k_y_out'], [('x__r', 2), ('y__y_out', 2)])
    >>> [p["name"] for p in summary["manifest"]["processes"]]
    ['k_x_in', 'k_r', 'k_y_out']
    """
    check_dtypes(opgraph)
    build = build_of(platform)
    design = _Design(opgraph, graph, dict(depths or {}), groups, storage)
    floorplan = _floorplan(design, slots) if slots else None
    ports = [port for _, port in design.top_ports()]
    bank_of = assign_banks(ports, build)
    manifest = design.manifest(slots or {}, bank_of, build)
    out_dir = Path(out_dir)
    with folder_atomic(out_dir) as tmp:
        files = {"kernels.h": design.kernels_h(), "kernels.cpp": design.kernels_cpp(),
                 "top.h": design.top_h(), "top.cpp": design.top_cpp(), "tb.cpp": _tb_cpp(opgraph, design.drams),
                 "csim.cpp": CSIM_CPP, "Makefile": makefile(build, floorplan is not None),
                 "run_hls.tcl": run_hls_tcl(build, floorplan is not None), "link.cfg": link_cfg(bank_of, build),
                 "design.json": json.dumps(manifest, indent=1) + "\n"}
        if floorplan is not None:
            files["floorplan.tcl"] = floorplan
        if output_names:
            files["outputs.py"] = outputs_py({n: (output_names[n], opgraph.tensors[n].shape,
                                                   np.dtype(reference.STORAGE[opgraph.tensors[n].dtype]).str)
                                               for n in opgraph.outputs if n in output_names})
        for name, text in files.items():
            (tmp / name).write_text(text)
        (tmp / "include").mkdir()
        for h in HEADERS:
            shutil.copy(include_dir() / h, tmp / "include" / h)
        _write_data(opgraph, tmp / "data", seed, values, expected)
    summary = {"out_dir": str(out_dir),
               "files": sorted(files) + [f"include/{h}" for h in HEADERS]
               + [f"data/{n}.bin" for n in opgraph.inputs] + [f"data/{n}.ref.bin" for n in opgraph.outputs],
               "kernels": sorted(fn for fn in design.process_slot_of
                                 if fn not in design.converters and fn not in design.dram_procs),
               "converters": list(design.converters),
               "streams": {f.name: f.depth for f in design.fifos},
               "tokens": {s.name: s.tokens for s in graph.streams.values()},
               "manifest": manifest}
    if groups is not None:
        summary["groups"] = [f"group_{g}" for g in range(design.n_groups)]
        summary["dram_buffers"] = {buf: size for buf, _, size, _, _ in design.drams}
        summary["dram_processes"] = list(design.dram_procs)
    return summary
