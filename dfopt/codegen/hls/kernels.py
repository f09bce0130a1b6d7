"""C++ bodies of the dataflow processes: one function per kernel, op, DMA or converter half.

Streams carry **beats**, never whole tiles: ``hls::stream<beat_<dtype>_<lanes>>&`` where a beat
is a packed struct of at most 512 bits (:mod:`dfopt.ir.channel`) and a token (a tile) travels as
``ceil(elements / lanes)`` beats in the tile's row-major element order, the last one padded with
zeros. Every process reads a token's beats into a local array of the tile's shape, computes, and
writes its result's beats to each of its output streams (a fanout writes the same beat to each).
Parameters are named ``in0, in1, ...``, ``out0, out1, ...`` and ``mem`` (a DMA's DRAM array).

Compute kernels iterate their tile loops (``kernel.loops``, outermost first); the tiler derived
each port's itensor type from these loops, so the k-th iteration reads the k-th token of every
input stream. Inside a token, the **compute loops** (marked ``// dfopt: compute``) are the ones
the tiling stage's cost model counts (:mod:`dfopt.models.tiling.costs`, the same unroll split):
pipelined at II=1 with the unrolled lanes inside, every array they touch partitioned along the
unrolled dimensions (cyclic by the unroll factor), accumulators interleaved so that a
floating-point add never waits for the previous one (:data:`~dfopt.models.tiling.costs.ADD_LATENCY`),
with a ``dependence`` pragma that states the distance. The beat loops that read and write tokens
are pipelined at II=1 too but are not part of the model (docs/hls.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.codegen.hls.order import flat_index, indent, loop_nest
from dfopt.errors import CodegenError
from dfopt.ir.channel import CHANNEL_BITS_MAX
from dfopt.ir.converter import converter_buffer, shared_prefix
from dfopt.ir.itensor import DTYPE_BITS, ITensorType
from dfopt.ir.opgraph import broadcast_kind
from dfopt.models.tiling import costs

if TYPE_CHECKING:
    from dfopt.ir.graph import Kernel
    from dfopt.ir.opgraph import Op

CTYPES = {"f32": "float", "f64": "double", "i32": "int"}   # i32: token ids, integer streams
COMPUTE_MARK = "// dfopt: compute"


@dataclass(frozen=True)
class Port:
    """One stream end as a process sees it: its itensor type and the values per beat."""

    itype: ITensorType
    lanes: int

    @property
    def beat(self) -> str:
        return beat_struct(self.itype.dtype, self.lanes)

    @property
    def beats(self) -> int:
        return -(-self.itype.element_count // self.lanes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.itype.element)


def beat_struct(dtype: str, lanes: int) -> str:
    """Name of the beat struct of ``lanes`` values of ``dtype``."""
    return f"beat_{dtype}_{lanes}"


def signature(fn: str, ins: list[Port], outs: list[Port], mem: str | None = None,
              mem_first: bool = False) -> str:
    params = [f"hls::stream<{p.beat}>& in{i}" for i, p in enumerate(ins)]
    params += [f"hls::stream<{p.beat}>& out{i}" for i, p in enumerate(outs)]
    if mem is not None:
        params = [mem] + params if mem_first else params + [mem]
    return f"void {fn}({', '.join(params)})"


def _fmt(value: float) -> str:
    return repr(float(value))


# -- arrays, partitions and beats -----------------------------------------------------------------

def footprint(shape: Sequence[int], lanes: int) -> list[int]:
    """Per dimension of a row-major array of ``shape``, how many distinct indices ``lanes``
    consecutive elements span (the dimensions a beat's values fall in).

    >>> footprint((64, 64), 16), footprint((4, 4), 16), footprint((8, 2, 4), 16)
    ([1, 16], [4, 4], [2, 2, 4])
    """
    out = [1] * len(shape)
    left = max(1, lanes)
    for d in range(len(shape) - 1, -1, -1):
        n = int(shape[d])
        out[d] = min(left, n)
        left = -(-left // n)
        if left <= 1:
            break
    return out


def declare(ctype: str, name: str, shape: Sequence[int], factors: Sequence[int],
            static: bool = False) -> list[str]:
    """``T name[d0][d1]...;`` and one ``array_partition`` per dimension cut by ``factors``
    (cyclic, complete when the factor covers the dimension)."""
    dims = "".join(f"[{int(n)}]" for n in shape)
    lines = [f"{'static ' if static else ''}{ctype} {name}{dims};"]
    for d, (n, f) in enumerate(zip(shape, factors)):
        f = min(int(f), int(n))
        if f <= 1:
            continue
        if f >= int(n):
            lines.append(f"#pragma HLS array_partition variable={name} dim={d + 1} complete")
        else:
            lines.append(f"#pragma HLS array_partition variable={name} dim={d + 1} cyclic factor={f}")
    return lines


def merge(*factors: Sequence[int]) -> list[int]:
    """Per-dimension maximum of partition factors."""
    return [max(fs) for fs in zip(*factors)]


def coords(flat: str, shape: Sequence[int]) -> list[str]:
    """Row-major coordinates of the flat element ``flat`` in an array of ``shape``.

    >>> coords("f", (4, 8, 2))
    ['f / 16', '(f / 2) % 8', 'f % 2']
    """
    out = []
    for d, n in enumerate(shape):
        stride = math.prod(int(s) for s in shape[d + 1:])
        expr = flat if stride == 1 else f"({flat} / {stride})" if d else f"{flat} / {stride}"
        if d:
            expr = f"{expr} % {int(n)}" if stride == 1 else f"{expr} % {int(n)}"
        out.append(expr)
    return out


def subscript(idx: Sequence[str]) -> str:
    return "".join(f"[{i}]" for i in idx)


def read_beats(stream: str, port: Port, store: Callable[[list[str]], str], shape=None) -> list[str]:
    """Read one token of ``port`` from ``stream`` beat by beat; ``store(coords)`` is the lvalue
    of the element at tile coordinates ``coords`` (of ``shape``, default the port's tile)."""
    shape = port.shape if shape is None else shape
    n, lanes = math.prod(shape), port.lanes
    put = f"{store(coords('f', shape))} = v.data[l];"
    body = [put] if n % lanes == 0 else [f"if (f < {n}) {put}"]
    return [f"for (int bt = 0; bt < {-(-n // lanes)}; ++bt) {{", "#pragma HLS pipeline II=1",
            f"  const {port.beat} v = {stream}.read();",
            f"  for (int l = 0; l < {lanes}; ++l) {{", "#pragma HLS unroll",
            f"    const int f = bt * {lanes} + l;", *indent(body, 2), "  }", "}"]


def write_beats(streams: Sequence[str], port: Port, load: Callable[[list[str]], str], ctype: str,
                shape=None, mark: bool = False) -> list[str]:
    """Write one token of ``port`` beat by beat to each stream of ``streams`` in turn (a token is
    handed to one output whole before the next, as the FIFO stage's model hands tokens over);
    ``load(coords)`` is the value of the element at tile coordinates ``coords``."""
    shape = port.shape if shape is None else shape
    n, lanes = math.prod(shape), port.lanes
    get = load(coords("f", shape))
    value = f"v.data[l] = {get};" if n % lanes == 0 else f"v.data[l] = f < {n} ? {get} : {ctype}(0);"
    lines = [COMPUTE_MARK] if mark else []
    for s in streams:
        lines += [f"for (int bt = 0; bt < {-(-n // lanes)}; ++bt) {{", "#pragma HLS pipeline II=1",
                  f"  {port.beat} v;", f"  for (int l = 0; l < {lanes}; ++l) {{", "#pragma HLS unroll",
                  f"    const int f = bt * {lanes} + l;", f"    {value}", "  }", f"  {s}.write(v);", "}"]
    return lines


def _element(array: str, dim: int) -> Callable[[list[str]], str]:
    """``array[c[dim]]``: a one-dimensional array indexed by one of the coordinates."""
    return lambda c: f"{array}[{c[dim]}]"


def _table(array: str) -> Callable[[list[str]], str]:
    """``array[c0][c1]...``: an array indexed by every coordinate."""
    return lambda c: f"{array}{subscript(c)}"


def _outs(outs: list[Port]) -> list[str]:
    return [f"out{i}" for i in range(len(outs))]


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


def _nest(loops: Sequence[tuple[str, int]], body: list[str], pipeline: str | None = "II=1",
          pragmas: Sequence[str] = ()) -> list[str]:
    """Perfectly nested loops ``(var, trips)`` around ``body``, the innermost pipelined (``#pragma
    HLS pipeline <pipeline>`` and ``pragmas``); Vitis flattens the nest into one pipeline."""
    lines, depth = [], 0
    for var, trips in loops:
        lines.append("  " * depth + f"for (int {var} = 0; {var} < {int(trips)}; ++{var}) {{")
        depth += 1
    pad = "  " * depth
    if pipeline:
        lines += [f"#pragma HLS pipeline {pipeline}", *pragmas]
    lines += [pad + ln for ln in body]
    for level in range(depth - 1, -1, -1):
        lines.append("  " * level + "}")
    return lines


def _unrolled(loops: Sequence[tuple[str, int]], body: list[str]) -> list[str]:
    """Fully unrolled loops ``(var, trips)`` around ``body`` (a loop of 1 trip is a constant)."""
    consts = [f"const int {v} = 0;" for v, n in loops if n == 1]
    body = consts + body
    for var, trips in reversed([(v, n) for v, n in loops if n > 1]):
        body = [f"for (int {var} = 0; {var} < {int(trips)}; ++{var}) {{", "#pragma HLS unroll",
                *indent(body), "}"]
    return body


def _dependence(var: str, distance: int) -> str:
    return f"#pragma HLS dependence variable={var} type=inter direction=RAW dependent=true distance={distance}"


def _check_tokens(kernel, ins: list[Port], loops) -> None:
    iterations = math.prod(lp.tripcount for lp in loops)
    for i, port in enumerate(ins):
        if port.itype.tokens != iterations:
            raise CodegenError(f"kernel {kernel.name}: input {i} streams {port.itype.tokens} tokens "
                               f"({port.itype}) but the kernel's loops run {iterations} iterations; "
                               "expected the port type of the tiled loop nest")


def _lanes(kernel) -> int:
    return max(1, int(kernel.attrs.get("lanes", 1)))


# -- compute kernels --------------------------------------------------------------------------------

def matmul(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """C = scale * A @ B per output tile, accumulating over the k tiles.

    The compute loop nest ``kb, ib, jb`` (pipelined, flattened) runs ``UK x UI x UJ`` MACs per
    cycle (:func:`~dfopt.models.tiling.costs.matmul_unroll`) into ``NP`` interleaved partial
    accumulators, so the same accumulator cell is updated again only after ``distance >=
    ADD_LATENCY`` cycles; the partials are summed (and reset) when the output tile is written."""
    if len(ins) != 2:
        raise CodegenError(f"op {op.name}: a matmul of a tensor with itself ({op.inputs[0]!r}) "
                           "cannot be emitted yet: both operands share one stream")
    _check_tokens(kernel, ins, kernel.loops)
    steps = {lp.name: lp.step for lp in kernel.loops}
    tm, tn, tk = steps["m"], steps["n"], steps["k"]
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    ui, uj, uk = costs.matmul_unroll(tm, tn, tk, _lanes(kernel))
    ib, jb, kb = tm // ui, tn // uj, tk // uk
    parts = costs.interleave(ib * jb, ctype_dtype(ctype))
    np_ = parts * uk
    a_shape, b_shape, c_shape = ins[0].shape, ins[1].shape, outs[0].shape
    lead_a, lead_b, lead_c = len(a_shape) - 2, len(b_shape) - 2, len(c_shape) - 2
    a_at = ["0"] * lead_a + (["kk", "i"] if ta else ["i", "kk"])
    b_at = ["0"] * lead_b + (["j", "kk"] if tb else ["kk", "j"])
    c_at = ["0"] * lead_c + ["i", "j"]
    a_par = [1] * lead_a + ([uk, ui] if ta else [ui, uk])
    b_par = [1] * lead_b + ([uj, uk] if tb else [uk, uj])
    c_par = [1] * lead_c + [ui, uj]
    decls = [*declare(ctype, "a", a_shape, merge(a_par, footprint(a_shape, ins[0].lanes))),
             *declare(ctype, "b", b_shape, merge(b_par, footprint(b_shape, ins[1].lanes))),
             *declare(ctype, "acc", (np_, tm, tn), (np_, ui, uj)),
             *declare(ctype, "c", c_shape, merge(c_par, footprint(c_shape, outs[0].lanes)))]
    init = _nest([("p", np_), ("e", tm * tn)], [f"acc[p][e / {tn}][e % {tn}] = {ctype}(0);"])
    q = "0" if parts == 1 else f"(l_k * {kb} + kb) % {parts}"
    mac = _unrolled([("dk", uk), ("di", ui), ("dj", uj)],
                    [f"const int kk = kb * {uk} + dk, i = ib * {ui} + di, j = jb * {uj} + dj;",
                     f"acc[{q} * {uk} + dk][i][j] += a{subscript(a_at)} * b{subscript(b_at)};"])
    compute = [COMPUTE_MARK,
               f"// {uk} x {ui} x {uj} MACs per cycle into {np_} partial accumulator(s): a cell is "
               f"updated every {parts * ib * jb} cycles",
               *_nest([("kb", kb), ("ib", ib), ("jb", jb)], mac,
                      pragmas=[_dependence("acc", parts * ib * jb)])]
    step = [*read_beats("in0", ins[0], lambda c: f"a{subscript(c)}"),
            *read_beats("in1", ins[1], lambda c: f"b{subscript(c)}"), *compute]
    scale = "" if op.attrs["scale"] == 1 else f" * {ctype}({_fmt(op.attrs['scale'])})"
    combine = _nest([("ib", ib), ("jb", jb)], _unrolled([("di", ui), ("dj", uj)], [
        f"const int i = ib * {ui} + di, j = jb * {uj} + dj;",
        f"{ctype} s = acc[0][i][j];", f"acc[0][i][j] = {ctype}(0);",
        *(_unrolled([("p1", np_ - 1)], ["s += acc[p1 + 1][i][j];", f"acc[p1 + 1][i][j] = {ctype}(0);"])
          if np_ > 1 else []),
        f"c{subscript(c_at)} = s{scale};"]))
    par, red = _tile_loops(kernel)
    if not red:
        raise CodegenError(f"kernel {kernel.name}: a matmul without its reduction loop k")
    body = [*_wrap_loops(red, step), "// sum the partial accumulators (and reset them)", *combine,
            *write_beats(_outs(outs), outs[0], lambda c: f"c{subscript(c)}", ctype)]
    return [signature(fn, ins, outs) + " {", *indent(decls + init), *indent(_wrap_loops(par, body)), "}"]


def ctype_dtype(ctype: str) -> str:
    return {v: k for k, v in CTYPES.items()}[ctype]


_UNARY = {
    "relu": "v > T(0) ? v : T(0)",
    "silu": "v / (T(1) + std::exp(-v))",
    "gelu": f"T(0.5) * v * (T(1) + std::tanh(T({_fmt(math.sqrt(2 / math.pi))}) * "
            "(v + T(0.044715) * v * v * v)))",
}
#: The exact GELU (``approximate: none``), with erf.
GELU_ERF = f"T(0.5) * v * (T(1) + std::erf(v * T({_fmt(1 / math.sqrt(2))})))"


#: ``unary``'s functions of ``v``.
UNARY_FNS = {"exp": "std::exp(v)", "tanh": "std::tanh(v)", "erf": "std::erf(v)",
             "sigmoid": "T(1) / (T(1) + std::exp(-v))", "sqrt": "std::sqrt(v)", "rsqrt": "T(1) / std::sqrt(v)",
             "reciprocal": "T(1) / v", "neg": "-v", "abs": "std::fabs(v)", "square": "v * v"}
#: The binary elementwise ops' C operators.
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def _unary(op: Op) -> str:
    if op.op == "gelu" and op.attrs.get("approximate", "tanh") == "none":
        return GELU_ERF
    if op.op == "unary":
        fn = op.attrs["fn"]
        return f"std::pow(v, T({_fmt(op.attrs['exponent'])}))" if fn == "pow" else UNARY_FNS[fn]
    return _UNARY[op.op]


def elementwise(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """add / sub / mul / div (y of x's shape, a vector of x's last dimensions, or any other NumPy
    broadcast: ``y`` at the element's tile coordinates with 0 on its size-1 axes) and gelu, silu,
    relu, unary:
    ``n / U`` cycles per tile, ``U`` lanes (:func:`~dfopt.models.tiling.costs.elementwise_unroll`)."""
    _check_tokens(kernel, ins, kernel.loops)
    n = outs[0].itype.element_count
    ny = ins[-1].itype.element_count
    kind = broadcast_kind(ins[-1].itype.shape, outs[0].itype.shape) if op.op in BINARY and len(ins) > 1 else None
    period = ny if kind == "vector" else None
    u = costs.elementwise_unroll(n, _lanes(kernel), period)
    decls = []
    for i, p in enumerate(ins):
        decls += declare(ctype, f"x{i}", (p.itype.element_count,), [max(u, p.lanes)])
    decls += declare(ctype, "y", (n,), [max(u, outs[0].lanes)])
    if op.op not in BINARY:
        compute = ["const T v = x0[e];", f"y[e] = {_unary(op)};"]
    else:
        other = "x0" if len(ins) == 1 else "x1"   # add(x, x): one stream serves both operands
        at = _broadcast_at(outs[0].shape, ins[1].shape) if kind == "general" else \
            "e" if period is None else f"e % {ny}"
        compute = [f"y[e] = x0[e] {BINARY[op.op]} {other}[{at}];"]
    reads: list[str] = []
    for i, p in enumerate(ins):
        reads += read_beats(f"in{i}", p, _element(f"x{i}", 0), shape=(p.itype.element_count,))
    body = [*reads, COMPUTE_MARK,
            *_nest([("eb", n // u)], _unrolled([("l", u)], [f"const int e = eb * {u} + l;", *compute])),
            *write_beats(_outs(outs), outs[0], lambda c: f"y[{c[0]}]", ctype, shape=(n,))]
    return [signature(fn, ins, outs) + " {", f"  typedef {ctype} T;", *indent(decls),
            *indent(_wrap_loops(kernel.loops, body)), "}"]


def _broadcast_at(tile: Sequence[int], ytile: Sequence[int]) -> str:
    """The flat index in ``y``'s tile (right-aligned to the output's ``tile``, its size-1 axes
    broadcast) of the output tile's element ``e``."""
    lead = len(tile) - len(ytile)
    c = coords("e", tile)
    return flat_index(["0" if int(n) == 1 else c[lead + j] for j, n in enumerate(ytile)], ytile)


def mask(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """The causal mask: ``y = key > query + offset ? value : x`` per element, the query and key
    indices (the last two axes) from the tile loops ``l_d<R-2>``, ``l_d<R-1>`` and the element's
    tile coordinates; an elementwise pass of ``n / U`` cycles per tile, ``U`` lanes
    (:func:`~dfopt.models.tiling.costs.elementwise_unroll`)."""
    _check_tokens(kernel, ins, kernel.loops)
    rank = len(outs[0].itype.shape)
    tile = outs[0].shape
    steps = {lp.name: lp.step for lp in kernel.loops}
    qd, kd = f"d{rank - 2}", f"d{rank - 1}"
    if len(tile) != rank or qd not in steps or kd not in steps:
        raise CodegenError(f"kernel {kernel.name}: a mask needs the tile loops {qd} and {kd} of its "
                           f"[query, key] axes and a tile of rank {rank}; got loops "
                           f"{[lp.name for lp in kernel.loops]} and tile {list(tile)}")
    n = outs[0].itype.element_count
    u = costs.elementwise_unroll(n, _lanes(kernel))
    tq, tk = int(tile[-2]), int(tile[-1])
    decls = [*declare(ctype, "x0", (n,), [max(u, ins[0].lanes)]),
             *declare(ctype, "y", (n,), [max(u, outs[0].lanes)])]
    local = coords("e", tile)
    compute = [f"const int e = eb * {u} + l;",
               f"const int q = l_{qd} * {tq} + {local[-2]}, k = l_{kd} * {tk} + {local[-1]};",
               f"y[e] = k > q + {int(op.attrs['offset'])} ? T({_fmt(op.attrs['value'])}) : x0[e];"]
    body = [*read_beats("in0", ins[0], _element("x0", 0), shape=(n,)), COMPUTE_MARK,
            *_nest([("eb", n // u)], _unrolled([("l", u)], compute)),
            *write_beats(_outs(outs), outs[0], lambda c: f"y[{c[0]}]", ctype, shape=(n,))]
    return [signature(fn, ins, outs) + " {", f"  typedef {ctype} T;", *indent(decls),
            *indent(_wrap_loops(kernel.loops, body)), "}"]


def row_op(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """softmax, layernorm, rmsnorm, reduce and rope over the whole last axis of each row of the tile.

    The tile is ``rows x R``; each pass (:data:`~dfopt.models.tiling.costs.ROW_PASSES`) runs
    ``cb`` over the row in steps of ``UC`` and, inside, ``rb`` over blocks of ``UR`` rows
    (pipelined, flattened; ``UR x UC`` lanes, :func:`~dfopt.models.tiling.costs.row_unroll`). A
    reduction accumulates into interleaved partials (a cell updated every ``distance`` cycles)
    that one ``rb`` loop per reduction combines. A reduce writes the combined value of each row;
    rope reads the rows of its cos and sin tables at the tile's positions (``P`` of them: the
    tile's rows cycle through them, the leading axes tiled outside) and writes
    ``x cos + rotate_half(x) sin`` in one pass."""
    _check_tokens(kernel, ins, kernel.loops)
    dtype = ctype_dtype(ctype)
    row = int(ins[0].itype.shape[-1])
    rows = ins[0].itype.element_count // row
    reduced = op.op == "reduce"
    ur, uc = costs.row_unroll(rows, row, _lanes(kernel))
    rb, cb = rows // ur, row // uc
    parts = costs.interleave(rb, dtype)
    npart = parts * uc
    decls = [*declare(ctype, "x", (rows, row), merge([ur, uc], footprint((rows, row), ins[0].lanes))),
             *(declare(ctype, "y", (rows,), [max(ur, outs[0].lanes)]) if reduced else
               declare(ctype, "y", (rows, row), merge([ur, uc], footprint((rows, row), outs[0].lanes)))),
             *declare(ctype, "part", (npart, rows), (npart, ur))]
    positions = ins[1].itype.element_count // row if op.op == "rope" else 1
    for i, p in enumerate(ins[1:]):
        decls += (declare(ctype, f"g{i}", (positions, row), merge([1, uc], footprint((positions, row), p.lanes)))
                  if op.op == "rope" else declare(ctype, f"g{i}", (row,), [max(uc, p.lanes)]))
    lanes = [("dr", ur), ("dc", uc)]
    at = [f"const int r = rbk * {ur} + dr, c = cbk * {uc} + dc;"]
    q = "0" if parts == 1 else f"(cbk % {parts})"
    pidx = f"part[{q} * {uc} + dc][r]"

    def pass_(body: list[str], reduce: str | None = None) -> list[str]:
        pragmas = [_dependence("part", parts * rb)] if reduce else []
        return [COMPUTE_MARK, *_nest([("cbk", cb), ("rbk", rb)], _unrolled(lanes, at + body), pragmas=pragmas)]

    def combine(target: str, fold: str, finish: str, reset: str) -> list[str]:
        """Fold the partials of each row into ``target[r]`` and reset them to ``reset``."""
        body = [f"const int r = rbk * {ur} + dr;", "T s = part[0][r];", f"part[0][r] = {reset};"]
        if npart > 1:
            body += _unrolled([("p0", npart - 1)], ["const int p = p0 + 1;", f"s = {fold};",
                                                    f"part[p][r] = {reset};"])
        body.append(f"{target}[r] = {finish};")
        return [COMPUTE_MARK, *_nest([("rbk", rb)], _unrolled([("dr", ur)], body))]

    floating = dtype in ("f32", "f64", "f16", "bf16")
    ninf = "-std::numeric_limits<T>::infinity()" if floating else "std::numeric_limits<T>::lowest()"
    pinf = "std::numeric_limits<T>::infinity()" if floating else "std::numeric_limits<T>::max()"
    add = "s + part[p][r]"
    eps = f"T({_fmt(op.attrs.get('eps', 0))})"
    first = "T(0)"
    if op.op == "softmax":
        first = ninf       # the max pass starts from -inf; its combine leaves 0 for the sum pass
        stats = [*declare(ctype, "mx", (rows,), [ur]), *declare(ctype, "sum", (rows,), [ur])]
        passes = [*pass_([f"{pidx} = x[r][c] > {pidx} ? x[r][c] : {pidx};"], "max"),
                  *combine("mx", "part[p][r] > s ? part[p][r] : s", "s", "T(0)"),
                  *pass_(["const T ex = std::exp(x[r][c] - mx[r]);", "y[r][c] = ex;", f"{pidx} += ex;"], "sum"),
                  *combine("sum", add, "s", ninf),
                  *pass_(["y[r][c] = y[r][c] / sum[r];"])]
    elif op.op == "layernorm":
        stats = [*declare(ctype, "mean", (rows,), [ur]), *declare(ctype, "den", (rows,), [ur])]
        passes = [*pass_([f"{pidx} += x[r][c];"], "sum"), *combine("mean", add, f"s / T({row})", "T(0)"),
                  *pass_(["const T d = x[r][c] - mean[r];", f"{pidx} += d * d;"], "sum"),
                  *combine("den", add, f"std::sqrt(s / T({row}) + {eps})", "T(0)"),
                  *pass_(["y[r][c] = (x[r][c] - mean[r]) / den[r] * g0[c] + g1[c];"])]
    elif op.op == "reduce":
        how = op.attrs["reduction"]
        stats = []
        if how in ("sum", "mean"):
            passes = [*pass_([f"{pidx} += x[r][c];"], "sum"),
                      *combine("y", add, "s" if how == "sum" else f"s / T({row})", "T(0)")]
        else:
            cmp = ">" if how == "max" else "<"
            first = ninf if how == "max" else pinf
            passes = [*pass_([f"{pidx} = x[r][c] {cmp} {pidx} ? x[r][c] : {pidx};"], how),
                      *combine("y", f"part[p][r] {cmp} s ? part[p][r] : s", "s", first)]
    elif op.op == "rope":
        h, at_pos = row // 2, f"r % {positions}"
        stats = []
        passes = [*pass_([f"const T rot = c < {h} ? -x[r][c + {h}] : x[r][c - {h}];",
                          f"y[r][c] = x[r][c] * g0[{at_pos}][c] + rot * g1[{at_pos}][c];"])]
    else:
        stats = [*declare(ctype, "den", (rows,), [ur])]
        passes = [*pass_([f"{pidx} += x[r][c] * x[r][c];"], "sum"),
                  *combine("den", add, f"std::sqrt(s / T({row}) + {eps})", "T(0)"),
                  *pass_(["y[r][c] = x[r][c] / den[r] * g0[c];"])]
    reset = _nest([("p", npart), ("r", rows)], [f"part[p][r] = {first};"])
    reads = [*read_beats("in0", ins[0], lambda c: f"x{subscript(c)}", shape=(rows, row))]
    for i, p in enumerate(ins[1:]):
        if op.op == "rope":
            reads += read_beats(f"in{i + 1}", p, _table(f"g{i}"), shape=(positions, row))
        else:
            reads += read_beats(f"in{i + 1}", p, _element(f"g{i}", -1), shape=(row,))
    write = (write_beats(_outs(outs), outs[0], lambda c: f"y[{c[0]}]", ctype, shape=(rows,)) if reduced else
             write_beats(_outs(outs), outs[0], lambda c: f"y{subscript(c)}", ctype, shape=(rows, row)))
    body = [*reads, *passes, *write]
    return [signature(fn, ins, outs) + " {", f"  typedef {ctype} T;", *indent(decls + stats),
            *indent(reset), *indent(_wrap_loops(kernel.loops, body)), "}"]


# -- data movement --------------------------------------------------------------------------------

def _tensor_at(prefix: str = "o") -> Callable[[list[str]], list[str]]:
    return lambda c: [f"{prefix}{d} + {e}" for d, e in enumerate(c)]


def dma_in(fn: str, outs: list[Port], ctype: str) -> list[str]:
    """Read the DRAM array (row-major) and stream its tiles in the output type's order."""
    port = outs[0]
    shape = port.itype.shape
    write = write_beats(_outs(outs), port, lambda c: f"mem[{flat_index(_tensor_at()(c), shape)}]", ctype)
    body = loop_nest(port.itype, "j", write)
    return [signature(fn, [], outs, f"const {ctype}* mem", mem_first=True) + " {", *indent(body), "}"]


def dma_out(fn: str, port: Port, ctype: str) -> list[str]:
    """Read the tiles in the input type's order and store them in the DRAM array."""
    shape = port.itype.shape
    read = read_beats("in0", port, lambda c: f"mem[{flat_index(_tensor_at()(c), shape)}]")
    body = loop_nest(port.itype, "i", read)
    return [signature(fn, [port], [], f"{ctype}* mem") + " {", *indent(body), "}"]


def converter(fn: str, src: Port, dst: Port, pp: Port) -> tuple[list[str], list[str]]:
    """Layout converter with Algorithm 1's buffer (:func:`dfopt.ir.converter.converter_buffer`)
    as two processes joined by a stream of beats (port ``pp``, :func:`pp_port`; the fill's
    ``out0``, the drain's ``in0``) that holds up to two whole buffer halves
    — the ping-pong pair: ``<fn>_fill`` reads each phase's ``src`` tokens into its half and passes
    it on, ``<fn>_drain`` takes the half and writes the phase's ``dst`` tokens (re-iterated tiles
    included) from it, so the next phase fills while this one drains. The loops both nests share
    stay outside (one phase per iteration)."""
    s, d = src.itype, dst.itype
    cb = converter_buffer(s, d)
    ctype = CTYPES[s.dtype]
    prefix = len(shared_prefix(s, d))
    s_live = [i for i, n in enumerate(s.tripcounts) if n != 1][:prefix]
    d_live = [i for i, n in enumerate(d.tripcounts) if n != 1][:prefix]
    reduced = {dim for dim, m in enumerate(s.map) if m in s_live}
    shape = tuple(int(n) for n in cb.shape)

    def index(c):
        tc = _tensor_at()(c)
        return [c[k] if k in reduced else tc[k] for k in range(len(c))]

    def phases(body: list[str]) -> list[str]:
        for j in range(prefix - 1, -1, -1):
            trips = int(s.tripcounts[s_live[j]])
            body = [f"for (int p{j} = 0; p{j} < {trips}; ++p{j}) {{", *indent(body), "}"]
        return body

    def tensor_fp(port: Port) -> list[int]:     # a beat's footprint, as buffer dimensions
        return footprint(port.shape, port.lanes)

    half_fp = footprint(shape, pp.lanes)
    fill_decl = declare(ctype, "half", shape, merge(tensor_fp(src), half_fp))
    drain_decl = declare(ctype, "half", shape, merge(tensor_fp(dst), half_fp))
    fill = phases([*(f"const int i{si} = p{j};" for j, si in enumerate(s_live)),
                   f"// phase read: {cb.src_tokens_per_phase} src tokens",
                   *loop_nest(s, "i", read_beats("in0", src, lambda c: f"half{subscript(index(c))}"),
                              skip=set(s_live)),
                   *write_beats(["out0"], pp, lambda c: f"half{subscript(c)}", ctype, shape=shape)])
    drain = phases([*(f"const int j{di} = p{j};" for j, di in enumerate(d_live)),
                    *read_beats("in0", pp, lambda c: f"half{subscript(c)}", shape=shape),
                    f"// phase write: {cb.dst_tokens_per_phase} dst tokens",
                    *loop_nest(d, "j", write_beats(["out0"], dst, lambda c: f"half{subscript(index(c))}",
                                                   ctype), skip=set(d_live))])
    note = f"// Algorithm 1 buffer {list(shape)} x 2 ({cb.reuse} phase(s), {prefix} shared loop(s))"
    return ([f"void {fn}_fill(hls::stream<{src.beat}>& in0, hls::stream<{pp.beat}>& out0) {{", f"  {note}",
             *indent(fill_decl), *indent(fill), "}"],
            [f"void {fn}_drain(hls::stream<{pp.beat}>& in0, hls::stream<{dst.beat}>& out0) {{", f"  {note}",
             *indent(drain_decl), *indent(drain), "}"])


def pp_port(src: Port, dst: Port) -> Port:
    """The port of a converter's ping-pong stream: one buffer half as beats of the widest channel
    (``512 / dtype bits`` values, fewer for a smaller half)."""
    half = converter_buffer(src.itype, dst.itype).elements
    return Port(src.itype, max(1, min(CHANNEL_BITS_MAX // DTYPE_BITS[src.itype.dtype], half)))
