"""C++ bodies of the dataflow processes: one function per kernel, op or converter.

Every process reads and writes ``hls::stream<tile>&`` where one token is one tile (a struct of
``T data[elements]``, the tile's elements row-major). Parameters are named ``in0, in1, ...``
(one per input stream), ``out0, out1, ...`` (one per consumer of the result: a fanout writes the
same tile to each) and ``mem`` (the DRAM array of a DMA).

Compute kernels iterate their tile loops (``kernel.loops``, outermost first); the tiler derived
each input port's itensor type from these loops, so the k-th iteration reads the k-th token of
every input stream (a reduction loop reads one A and one B tile per step, a broadcast operand and
gamma/beta re-arrive with every output token). Movers, DMAs and converters address whole tensors
and follow :func:`dfopt.codegen.hls.order.loop_nest` of their stream types.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.codegen.hls.order import element_loops, flat_index, indent, loop_nest
from dfopt.errors import CodegenError
from dfopt.ir.converter import converter_buffer, shared_prefix
from dfopt.ir.itensor import ITensorType

if TYPE_CHECKING:
    from dfopt.ir.graph import Kernel
    from dfopt.ir.opgraph import Op

CTYPES = {"f32": "float", "f64": "double"}


@dataclass(frozen=True)
class Port:
    """One stream end as a process sees it: the C++ tile struct and the itensor type."""

    tile: str
    itype: ITensorType


def tile_struct(dtype: str, elements: int) -> str:
    """Name of the tile struct of ``elements`` values of ``dtype``."""
    return f"tile_{dtype}_{elements}"


def signature(fn: str, ins: list[Port], outs: list[Port], mem: str | None = None,
              mem_first: bool = False) -> str:
    params = [f"hls::stream<{p.tile}>& in{i}" for i, p in enumerate(ins)]
    params += [f"hls::stream<{p.tile}>& out{i}" for i, p in enumerate(outs)]
    if mem is not None:
        params = [mem] + params if mem_first else params + [mem]
    return f"void {fn}({', '.join(params)})"


def _write_all(outs: list[Port], var: str) -> list[str]:
    return [f"out{i}.write({var});" for i in range(len(outs))]


def _fmt(value: float) -> str:
    return repr(float(value))


def _tile_loops(kernel) -> tuple[list, list]:
    par = [lp for lp in kernel.loops if lp.kind != "reduction"]
    red = [lp for lp in kernel.loops if lp.kind == "reduction"]
    return par, red


def _wrap_loops(loops, body: list[str]) -> list[str]:
    """``body`` inside the kernel's tile loops ``l_<name>``, outermost first."""
    for lp in reversed(loops):
        body = [f"for (int l_{lp.name} = 0; l_{lp.name} < {lp.tripcount}; ++l_{lp.name}) {{",
                *indent(body), "}"]
    return body


def _unroll(kernel, trips: int) -> list[str]:
    """The unroll pragma of a point loop of ``trips`` iterations (factor: the kernel's lanes)."""
    lanes = min(int(kernel.attrs.get("lanes", 1)), trips)
    return [f"#pragma HLS unroll factor={lanes}"] if lanes > 1 else []


def _check_tokens(kernel, ins: list[Port], loops) -> None:
    iterations = math.prod(lp.tripcount for lp in loops)
    for i, port in enumerate(ins):
        if port.itype.tokens != iterations:
            raise CodegenError(f"kernel {kernel.name}: input {i} streams {port.itype.tokens} tokens "
                               f"({port.itype}) but the kernel's loops run {iterations} iterations; "
                               "expected the port type of the tiled loop nest")


# -- compute kernels --------------------------------------------------------------------------------

def matmul(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """C = scale * A @ B per output tile, accumulating over the k tiles."""
    if len(ins) != 2:
        raise CodegenError(f"op {op.name}: a matmul of a tensor with itself ({op.inputs[0]!r}) "
                           "cannot be emitted yet: both operands share one stream")
    _check_tokens(kernel, ins, kernel.loops)
    steps = {lp.name: lp.step for lp in kernel.loops}
    tm, tn, tk = steps["m"], steps["n"], steps["k"]
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    a_at = f"kk * {tm} + i" if ta else f"i * {tk} + kk"
    b_at = f"j * {tk} + kk" if tb else f"kk * {tn} + j"
    par, red = _tile_loops(kernel)
    point = [f"for (int kk = 0; kk < {tk}; ++kk) {{",
             f"  for (int i = 0; i < {tm}; ++i) {{",
             f"    for (int j = 0; j < {tn}; ++j) {{",
             "      #pragma HLS pipeline II=1", *indent(_unroll(kernel, tn), 3),
             f"      acc[i * {tn} + j] += a.data[{a_at}] * b.data[{b_at}];",
             "    }", "  }", "}"]
    step = [f"const {ins[0].tile} a = in0.read();", f"const {ins[1].tile} b = in1.read();", *point]
    body = [f"{ctype} acc[{tm * tn}];",
            f"for (int e = 0; e < {tm * tn}; ++e) acc[e] = {ctype}(0);",
            *_wrap_loops(red, step),
            f"{outs[0].tile} c;",
            f"for (int e = 0; e < {tm * tn}; ++e) c.data[e] = acc[e]"
            + ("" if op.attrs["scale"] == 1 else f" * {ctype}({_fmt(op.attrs['scale'])})") + ";",
            *_write_all(outs, "c")]
    return [signature(fn, ins, outs) + " {", *indent(_wrap_loops(par, body)), "}"]


_UNARY = {
    "relu": "v > T(0) ? v : T(0)",
    "silu": "v / (T(1) + std::exp(-v))",
    "gelu": f"T(0.5) * v * (T(1) + std::tanh(T({_fmt(math.sqrt(2 / math.pi))}) * "
            "(v + T(0.044715) * v * v * v)))",
}


def elementwise(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """add / mul (y of x's shape, or a vector of x's last dimension) and gelu, silu, relu."""
    _check_tokens(kernel, ins, kernel.loops)
    n = outs[0].itype.element_count
    reads = [f"const {p.tile} x{i} = in{i}.read();" for i, p in enumerate(ins)]
    if op.op in _UNARY:
        expr = _UNARY[op.op]
        compute = ["const T v = x0.data[e];", f"y.data[e] = {expr};"]
    else:
        other = "x0" if len(ins) == 1 else "x1"   # add(x, x): one stream serves both operands
        ny = ins[-1].itype.element_count
        at = "e" if ny == n else f"e % {ny}"
        sym = "+" if op.op == "add" else "*"
        compute = [f"y.data[e] = x0.data[e] {sym} {other}.data[{at}];"]
    body = [*reads, f"{outs[0].tile} y;",
            f"for (int e = 0; e < {n}; ++e) {{", "  #pragma HLS pipeline II=1", *indent(_unroll(kernel, n)),
            *indent(compute), "}", *_write_all(outs, "y")]
    return [signature(fn, ins, outs) + " {", f"  typedef {ctype} T;",
            *indent(_wrap_loops(kernel.loops, body)), "}"]


def _row_compute(op) -> list[str]:
    eps = f"T({_fmt(op.attrs.get('eps', 0))})"
    if op.op == "softmax":
        return ["T mx = x[0];", "for (int c = 1; c < R; ++c) mx = x[c] > mx ? x[c] : mx;",
                "T ex[R];", "T sum = T(0);",
                "for (int c = 0; c < R; ++c) {", "  #pragma HLS pipeline II=1",
                "  ex[c] = std::exp(x[c] - mx);", "  sum += ex[c];", "}",
                "for (int c = 0; c < R; ++c) y[c] = ex[c] / sum;"]
    if op.op == "layernorm":
        return ["T sum = T(0);", "for (int c = 0; c < R; ++c) sum += x[c];",
                "const T mean = sum / T(R);", "T sq = T(0);",
                "for (int c = 0; c < R; ++c) sq += (x[c] - mean) * (x[c] - mean);",
                f"const T den = std::sqrt(sq / T(R) + {eps});",
                "for (int c = 0; c < R; ++c) {", "  #pragma HLS pipeline II=1",
                "  y[c] = (x[c] - mean) / den * g0.data[c] + g1.data[c];", "}"]
    return ["T sq = T(0);", "for (int c = 0; c < R; ++c) sq += x[c] * x[c];",
            f"const T den = std::sqrt(sq / T(R) + {eps});",
            "for (int c = 0; c < R; ++c) {", "  #pragma HLS pipeline II=1",
            "  y[c] = x[c] / den * g0.data[c];", "}"]


def row_op(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """softmax, layernorm, rmsnorm over the whole last axis of each row of the tile."""
    _check_tokens(kernel, ins, kernel.loops)
    row = int(outs[0].itype.shape[-1])
    rows = outs[0].itype.element_count // row
    reads = [f"const {ins[0].tile} t = in0.read();"]
    reads += [f"const {p.tile} g{i} = in{i + 1}.read();" for i, p in enumerate(ins[1:])]
    per_row = ["const T* x = &t.data[r * R];", "T* y = &o.data[r * R];", *_row_compute(op)]
    body = [*reads, f"{outs[0].tile} o;",
            f"for (int r = 0; r < {rows}; ++r) {{", *indent(_unroll(kernel, rows)), *indent(per_row), "}",
            *_write_all(outs, "o")]
    return [signature(fn, ins, outs) + " {", f"  typedef {ctype} T;", f"  const int R = {row};",
            *indent(_wrap_loops(kernel.loops, body)), "}"]


# -- data movement --------------------------------------------------------------------------------

def _scatter(port: Port, stream: str, target: str, index) -> list[str]:
    """Read every token of ``stream`` (type ``port``) and store its elements at
    ``target[index(coords)]``, coords being the tensor coordinates ``o<d> + e<d>``."""
    t = port.itype
    coords = [f"o{d} + e{d}" for d in range(len(t.shape))]
    at = flat_index([f"e{d}" for d in range(len(t.shape))], t.element)
    inner = element_loops(t.element, "e", [f"{target}[{index(coords)}] = t.data[{at}];"])
    return loop_nest(t, "i", [f"const {port.tile} t = {stream}.read();", *inner])


def _gather(port: Port, outs: list[Port], source: str, index) -> list[str]:
    """Build every token of type ``port`` from ``source[index(coords)]`` and write it to every
    output stream."""
    t = port.itype
    coords = [f"o{d} + e{d}" for d in range(len(t.shape))]
    at = flat_index([f"e{d}" for d in range(len(t.shape))], t.element)
    inner = element_loops(t.element, "e", [f"t.data[{at}] = {source}[{index(coords)}];"])
    return loop_nest(t, "j", [f"{port.tile} t;", *inner, *_write_all(outs, "t")])


def dma_in(fn: str, outs: list[Port], ctype: str) -> list[str]:
    """Read the DRAM array (row-major) and stream its tiles in the output type's order."""
    shape = outs[0].itype.shape
    body = _gather(outs[0], outs, "mem", lambda c: flat_index(c, shape))
    return [signature(fn, [], outs, f"const {ctype}* mem", mem_first=True) + " {", *indent(body), "}"]


def dma_out(fn: str, port: Port, ctype: str) -> list[str]:
    """Read the tiles in the input type's order and store them in the DRAM array."""
    shape = port.itype.shape
    body = _scatter(port, "in0", "mem", lambda c: flat_index(c, shape))
    return [signature(fn, [port], [], f"{ctype}* mem") + " {", *indent(body), "}"]


def mover(fn: str, op: Op, port: Port, outs: list[Port], ctype: str) -> list[str]:
    """transpose / reshape: buffer the whole input (read in its stream's order), then write the
    output tiles in the output type's order."""
    src, out = port.itype.shape, outs[0].itype.shape
    if op.op == "transpose":
        perm = list(op.attrs["perm"])
        def index(c):   # out[c] = in[c'] with c'[perm[i]] = c[i]
            return flat_index([c[perm.index(d)] for d in range(len(src))], src)
    else:
        def index(c):   # reshape keeps the row-major flat index
            return flat_index(c, out)
    body = [f"static {ctype} buf[{math.prod(src)}];",
            *_scatter(port, "in0", "buf", lambda c: flat_index(c, src)),
            *_gather(outs[0], outs, "buf", index)]
    return [signature(fn, [port], outs) + " {", *indent(body), "}"]


def converter_buffer_elements(src: Port, dst: Port) -> int:
    """Elements of one half of the converter's ping-pong buffer (Algorithm 1's shape)."""
    return math.prod(converter_buffer(src.itype, dst.itype).shape)


def converter(fn: str, src: Port, dst: Port, buf: Port) -> tuple[list[str], list[str]]:
    """Layout converter with Algorithm 1's buffer (:func:`dfopt.ir.converter.converter_buffer`)
    as two processes joined by a depth-2 stream of whole buffers — the ping-pong pair: ``<fn>_fill``
    reads each phase's ``src`` tokens into one half and passes it on, ``<fn>_drain`` writes the
    phase's ``dst`` tokens (re-iterated tiles included) from it, so the next phase fills the other
    half while this one drains. The loops both nests share stay outside (one phase per
    iteration). ``buf`` is the port whose tile struct holds one half."""
    s, d = src.itype, dst.itype
    cb = converter_buffer(s, d)
    prefix = len(shared_prefix(s, d))
    s_live = [i for i, n in enumerate(s.tripcounts) if n != 1][:prefix]
    d_live = [i for i, n in enumerate(d.tripcounts) if n != 1][:prefix]
    reduced = {dim for dim, m in enumerate(s.map) if m in s_live}
    buf_shape = cb.shape

    def index(c):
        return flat_index([f"e{k}" if k in reduced else c[k] for k in range(len(c))], buf_shape)

    def phases(body: list[str]) -> list[str]:
        for j in range(prefix - 1, -1, -1):
            trips = int(s.tripcounts[s_live[j]])
            body = [f"for (int p{j} = 0; p{j} < {trips}; ++p{j}) {{", *indent(body), "}"]
        return body

    fill = phases([*(f"const int i{si} = p{j};" for j, si in enumerate(s_live)),
                   f"{buf.tile} half;  // phase read: {cb.src_tokens_per_phase} src tokens",
                   *_loop_nest_skip(src, "in0", index, set(s_live), scatter=True, buf="half.data"),
                   "pp.write(half);"])
    drain = phases([*(f"const int j{di} = p{j};" for j, di in enumerate(d_live)),
                    f"const {buf.tile} half = pp.read();  // phase write: {cb.dst_tokens_per_phase} dst tokens",
                    *_loop_nest_skip(dst, "out0", index, set(d_live), scatter=False, buf="half.data")])
    note = f"// Algorithm 1 buffer {list(buf_shape)} x 2 ({cb.reuse} phase(s), {prefix} shared loop(s))"
    return ([f"void {fn}_fill(hls::stream<{src.tile}>& in0, hls::stream<{buf.tile}>& pp) {{", f"  {note}",
             *indent(fill), "}"],
            [f"void {fn}_drain(hls::stream<{buf.tile}>& pp, hls::stream<{dst.tile}>& out0) {{", f"  {note}",
             *indent(drain), "}"])


def _loop_nest_skip(port: Port, stream: str, index, skip: set, scatter: bool, buf: str = "buf") -> list[str]:
    t = port.itype
    e = [f"e{k}" for k in range(len(t.shape))]
    coords = [f"o{k} + e{k}" for k in range(len(t.shape))]
    if scatter:
        inner = element_loops(t.element, "e", [f"{buf}[{index(coords)}] = t.data[{flat_index(e, t.element)}];"])
        return loop_nest(t, "i", [f"const {port.tile} t = {stream}.read();", *inner], skip=skip)
    inner = element_loops(t.element, "e", [f"t.data[{flat_index(e, t.element)}] = {buf}[{index(coords)}];"])
    return loop_nest(t, "j", [f"{port.tile} t;", *inner, f"{stream}.write(t);"], skip=skip)
