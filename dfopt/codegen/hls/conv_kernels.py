"""C++ bodies of the window kernels over NCHW feature maps: ``conv2d`` and ``pool``.

One function does both (the tiling and cost model are :mod:`dfopt.models.tiling.conv`): the
whole input feature map is read into a static buffer (``xbuf``, in its stream's tile order, as a
data mover reads), then per output tile (the kernel's loops ``l_n, l_o, l_h, l_w``) a conv2d reads
its W token (the tile's output channels, ``[to, C / groups, kh, kw]``, as ``wt[to][R]``) and its
B token (``bias``), runs the compute loop and writes the tile. The compute loop (``// dfopt: compute``) is
``rb`` over the window's ``R`` elements in steps of ``UR`` outside ``eb`` over the tile's ``E``
elements in steps of ``UE`` (:func:`~dfopt.models.tiling.conv.window_unroll`), pipelined at II=1:
per cycle ``UE`` output elements each take an adder tree (a max for a max pool) of ``UR`` window
elements into one of ``P`` interleaved partials (:func:`~dfopt.models.tiling.conv.partials`); a
window element outside the input is padding (0, or -inf for a max). The partials are folded per
output element with the bias (or the average's divisor) before the write; that fold and the beat
loops are not counted by the model, as for a matmul.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dfopt.codegen.hls.kernels import (
    COMPUTE_MARK,
    Port,
    _check_tokens,
    _dependence,
    _lanes,
    _nest,
    _outs,
    _tensor_at,
    _unrolled,
    _wrap_loops,
    coords,
    ctype_dtype,
    declare,
    footprint,
    merge,
    read_beats,
    signature,
    subscript,
    write_beats,
)
from dfopt.codegen.hls.order import flat_index, indent, loop_nest
from dfopt.errors import CodegenError
from dfopt.models.tiling import conv

if TYPE_CHECKING:
    from dfopt.ir.graph import Kernel
    from dfopt.ir.opgraph import Op

NEG_INF = "-std::numeric_limits<T>::infinity()"


def window(fn: str, kernel: Kernel, op: Op, ins: list[Port], outs: list[Port], ctype: str) -> list[str]:
    """A conv2d or pool kernel (see the module docstring)."""
    x, out = ins[0], outs[0]
    if tuple(lp.name for lp in kernel.loops) != conv.OUTPUT_LOOPS:
        raise CodegenError(f"kernel {kernel.name}: a {op.op} needs the tile loops {list(conv.OUTPUT_LOOPS)}; got "
                           f"{[lp.name for lp in kernel.loops]}")
    _check_tokens(kernel, ins[1:], kernel.loops)
    g = _Geometry(op, x, out, ins[1] if op.op == "conv2d" else None)
    ur, ue = conv.window_unroll(g.r, g.e, _lanes(kernel))
    parts = conv.partials(g.r, g.e, _lanes(kernel), ctype_dtype(ctype))
    body = [*_weights(op, ins), *_nest([("p", parts), ("e", g.e)], [f"acc[p][e] = {g.init};"]),
            COMPUTE_MARK, f"// {ur} window elements x {ue} outputs per cycle into {parts} partial(s): a cell is "
            f"updated every {parts * (g.e // ue)} cycles",
            *_nest([("rb", g.r // ur), ("eb", g.e // ue)], _unrolled([("de", ue)], g.step(ur, ue, parts)),
                   pragmas=[_dependence("acc", parts * (g.e // ue))]),
            "// fold the partials (and reset them)", *_nest([("e", g.e)], g.fold(parts, len(ins) == 3)),
            *write_beats(_outs(outs), out, lambda c: f"y[{c[0]}]", ctype, shape=(g.e,))]
    scatter = loop_nest(x.itype, "i", read_beats("in0", x, lambda c: f"xbuf{subscript(_tensor_at()(c))}"))
    decls = _declarations(op, ins, out, ctype, g, ur, ue, parts)
    return [signature(fn, ins, outs) + " {", f"  typedef {ctype} T;", *indent(decls),
            "  // the whole input feature map, in its stream's tile order", *indent(scatter),
            *indent(_wrap_loops(kernel.loops, body)), "}"]


class _Geometry:
    """The window of one op as C++ expressions: the output tile's coordinates, the window
    element ``r``'s input position, what padding reads."""

    def __init__(self, op: Op, x: Port, out: Port, w: Port | None) -> None:
        self.op, self.x_shape = op, tuple(int(n) for n in x.itype.shape)
        self.tile = out.shape
        self.e = math.prod(self.tile)
        if w is not None:
            _, self.cg, self.kh, self.kw = (int(n) for n in w.itype.shape)
            self.per_group = int(w.itype.shape[0]) // int(op.attrs["groups"])
        else:
            self.cg, (self.kh, self.kw), self.per_group = 1, (int(k) for k in op.attrs["kernel"]), 1
        self.r = self.cg * self.kh * self.kw
        self.max = op.op == "pool" and op.attrs["mode"] == "max"
        self.init = NEG_INF if self.max else "T(0)"

    def _at(self) -> list[str]:
        """Lines defining ``nn, oo, yy, xx``: the global output coordinates of element ``e``."""
        local = coords("e", self.tile)
        return [f"const int nn = l_n * {self.tile[0]} + {local[0]}, oo = l_o * {self.tile[1]} + {local[1]};",
                f"const int yy = l_h * {self.tile[2]} + {local[2]}, xx = l_w * {self.tile[3]} + {local[3]};"]

    def step(self, ur: int, ue: int, parts: int) -> list[str]:
        """One cycle's work for output element ``e = eb * UE + de``: ``UR`` window elements."""
        sh, sw = (int(s) for s in self.op.attrs["strides"])
        top, left = (int(p) for p in self.op.attrs["pads"][:2])
        h, w = self.x_shape[2:]
        chan = f"(oo / {self.per_group}) * {self.cg} + ci" if self.op.op == "conv2d" else "oo"
        read = f"inside ? xbuf[nn][{chan}][iy][ix] : {self.init}"
        take = {"conv2d": "s += v * wt[eo][r];", "pool": "s = v > s ? v : s;" if self.max else "s += v;"}[self.op.op]
        window_el = [f"const int r = rb * {ur} + dr;",
                     f"const int ci = r / {self.kh * self.kw}, ki = (r / {self.kw}) % {self.kh}, kj = r % {self.kw};",
                     f"const int iy = yy * {sh} - {top} + ki, ix = xx * {sw} - {left} + kj;",
                     f"const bool inside = iy >= 0 && iy < {h} && ix >= 0 && ix < {w};",
                     f"const T v = {read};", take]
        q = "0" if parts == 1 else f"rb % {parts}"
        merge_ = "acc[q][e] = s > acc[q][e] ? s : acc[q][e];" if self.max else "acc[q][e] += s;"
        eo = [f"const int eo = {coords('e', self.tile)[1]};"] if self.op.op == "conv2d" else []
        return [f"const int e = eb * {ue} + de;", *self._at(), *eo, f"const int q = {q};", f"T s = {self.init};",
                *_unrolled([("dr", ur)], window_el), merge_]

    def fold(self, parts: int, bias: bool) -> list[str]:
        """``y[e]`` from the partials: + the bias, / the divisor of an average, or the max."""
        fold = "s = acc[p1][e] > s ? acc[p1][e] : s;" if self.max else "s += acc[p1][e];"
        lines = ["T s = acc[0][e];", f"acc[0][e] = {self.init};"]
        if parts > 1:
            lines += _unrolled([("p0", parts - 1)], ["const int p1 = p0 + 1;", fold, f"acc[p1][e] = {self.init};"])
        if self.op.op == "conv2d":
            return lines + [f"y[e] = s + bias[{coords('e', self.tile)[1]}];" if bias else "y[e] = s;"]
        if self.max:
            return lines + ["y[e] = s;"]
        return lines + [*self._at(), *self._divisor(), "y[e] = s / T(count);"]

    def _divisor(self) -> list[str]:
        """``count``: kh x kw with ``count_include_pad``, else the window's elements inside x."""
        if self.op.attrs["count_include_pad"]:
            return [f"const int count = {self.kh * self.kw};"]
        sh, sw = (int(s) for s in self.op.attrs["strides"])
        top, left = (int(p) for p in self.op.attrs["pads"][:2])
        h, w = self.x_shape[2:]
        return [f"const int y0 = yy * {sh} - {top}, x0 = xx * {sw} - {left};",
                f"const int hs = y0 < 0 ? 0 : y0, he = y0 + {self.kh} > {h} ? {h} : y0 + {self.kh};",
                f"const int ws = x0 < 0 ? 0 : x0, we = x0 + {self.kw} > {w} ? {w} : x0 + {self.kw};",
                "const int count = (he - hs) * (we - ws);"]


def _weights(op: Op, ins: list[Port]) -> list[str]:
    """Read the output tile's W token (as ``wt[to][R]``) and B token (as ``bias``) of a conv2d."""
    if op.op != "conv2d":
        return []
    w = ins[1]
    inner = tuple(int(n) for n in w.itype.element[1:])
    lines = read_beats("in1", w, lambda c: f"wt[{c[0]}][{flat_index(c[1:], inner)}]")
    if len(ins) == 3:
        lines += read_beats("in2", ins[2], lambda c: f"bias[{c[0]}]")
    return lines


def _declarations(op: Op, ins: list[Port], out: Port, ctype: str, g: _Geometry, ur: int, ue: int,
                  parts: int) -> list[str]:
    """The buffers: ``xbuf`` (static, the whole input; banked along its channels by the unrolled
    channels and by the beats' footprint), ``wt`` and ``bias`` (a conv2d's W and B tokens), ``acc``
    (the partials) and ``y`` (the output tile)."""
    x = ins[0]
    chans = max(1, ur // (g.kh * g.kw)) if op.op == "conv2d" else 1
    x_fp = merge(footprint(x.shape, x.lanes), [1, chans, 1, 1])
    decls = declare(ctype, "xbuf", g.x_shape, x_fp, static=True)
    if op.op == "conv2d":
        w = ins[1]
        to = int(w.itype.element[0])
        w_fp = footprint((to, g.r), w.lanes)
        decls += declare(ctype, "wt", (to, g.r), merge(w_fp, [1, ur]))
        if len(ins) == 3:
            decls += declare(ctype, "bias", (to,), [ins[2].lanes])
    decls += declare(ctype, "acc", (parts, g.e), (parts, ue))
    decls += declare(ctype, "y", (g.e,), [max(ue, out.lanes)])
    return decls

