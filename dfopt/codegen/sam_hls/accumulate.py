"""The accumulator (SAM's sparse accumulator, Stardust's workspace) and its workspace's reader.

**accumulator**: each value of ``val`` is added into the workspace at its held coordinates (the
leaves of ``crd.<f>``: the last one in lockstep with ``val``, the ones above through
``sam::Ancestors``). When the val stream closes a fibre of the outer loops (an iteration of them,
even one without values), the touched entries are drained in lexicographic order: per held index
``f`` a coordinate (``crd.<f>``) and a reference (``ref.<f>``, counted over the whole run), nested as
the indices are, and each entry's value to the workspace's reader (FIFO ``w_<workspace>``, in the
order of the last level's references). A ``dense`` workspace is an array over the held indices'
extent with a touched flag per entry (drained by a scan of it); a ``sparse`` one keeps the
entries of one outer iteration in first-touch order behind a hash table of twice its capacity
(``min(extent, PMUs x PMU words)`` of its binding) and sorts them to drain.

**workspace reader** (the array node of a workspace): for each reference (non-decreasing; the
empty reference: 0) the value of that entry, taking the drained values in order.
"""

from __future__ import annotations

import math

from dfopt.codegen.hls.emit import ident
from dfopt.codegen.sam_hls.context import Code, Context
from dfopt.codegen.sam_hls.scan import main_loop


def workspace_port(name: str) -> str:
    """The C variable of the FIFO from a workspace's accumulator to its reader."""
    return "w_" + ident(name)


def _held(ctx: Context) -> tuple[list[str], int]:
    """Held indices and the level of the outer iterations' fibres in the val stream."""
    a = ctx.attrs
    holds = list(a["holds"])
    depth, base = ctx.depth("val"), int(a["outer"])
    for m, f in enumerate(holds):
        want = depth - (len(holds) - 1 - m)
        if ctx.depth(f"crd.{f}") != want:
            raise ctx.refuse(f"held index {f!r} streams at depth {ctx.depth(f'crd.{f}')}, expected {want} (the held "
                             "indices innermost, in order)")
        out = ctx.out_depth(f"crd.{f}") or ctx.out_depth(f"ref.{f}")
        if out is not None and out != base + m + 1:
            raise ctx.refuse(f"output crd.{f} has depth {out}, expected {base + m + 1}")
    if depth - len(holds) < base:
        raise ctx.refuse(f"{len(holds)} held indices below {base} outer loops do not fit a stream of depth {depth}")
    return holds, depth - 1 - base


class _Dense:
    """A dense workspace: values and touched flags over the whole extent."""

    def __init__(self, ctx: Context, size: int):
        self.ctx, self.size = ctx, size

    def declare(self, c: Code) -> None:
        impl = self.ctx.array(f"{self.ctx.attrs['workspace']}.vals").impl
        c(f"static val_t ws[{self.size}];", f"#pragma HLS bind_storage variable=ws type=ram_2p impl={impl}",
          f"static bool hit[{self.size}];")
        with c.block(f"for (long q = 0; q < {self.size}; ++q) {{"):
            c("ws[q] = 0;", "hit[q] = false;")

    def add(self, c: Code) -> None:
        c("ws[key] = hit[key] ? ws[key] + v.value : v.value;", "hit[key] = true;")

    def entries(self, c: Code, body) -> None:
        with c.block(f"for (long key = 0; key < {self.size}; ++key) {{"):
            c("if (!hit[key]) continue;", "const val_t value = ws[key];", "hit[key] = false;", "ws[key] = 0;")
            body()


class _Sparse:
    """A sparse workspace: the entries of one outer iteration behind a hash table."""

    def __init__(self, ctx: Context, size: int):
        self.ctx = ctx
        self.spec = ctx.array(f"{ctx.attrs['workspace']}.vals")
        self.cap = int(self.spec.length)
        self.log = max(1, (2 * self.cap - 1).bit_length())

    def declare(self, c: Code) -> None:
        slots, impl = 1 << self.log, self.spec.impl
        c(f"static long keys[{self.cap}];", f"#pragma HLS bind_storage variable=keys type=ram_2p impl={impl}",
          f"static val_t vals[{self.cap}];", f"#pragma HLS bind_storage variable=vals type=ram_2p impl={impl}",
          f"static int32_t slot[{slots}];  // entry + 1 by hashed key, 0: free",
          f"for (long q = 0; q < {slots}; ++q) slot[q] = 0;", "long used = 0;")

    def _probe(self, c: Code) -> None:
        c(f"unsigned long h = (unsigned long)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> {64 - self.log});",
          f"while (slot[h] != 0 && keys[slot[h] - 1] != key) h = (h + 1) & {(1 << self.log) - 1};")

    def add(self, c: Code) -> None:
        self._probe(c)
        with c.block("if (slot[h] != 0) {"):
            c("vals[slot[h] - 1] += v.value;")
        with c.block(f"else if (used < {self.cap}) {{"):
            c("keys[used] = key;", "vals[used] = v.value;", "slot[h] = (int32_t)++used;")
        c(f'else SAM_CHECK(false, "{self.ctx.node.name}", "sparse workspace full");')

    def entries(self, c: Code, body) -> None:
        with c.block("for (long e = used - 1; e >= 0; --e) {  // free the hash slots, the last entry first"):
            c("const long key = keys[e];")
            self._probe(c)
            c("slot[h] = 0;")
        with c.block("for (long e = 1; e < used; ++e) {  // sort the entries by key"):
            c("const long key = keys[e];", "const val_t value = vals[e];", "long f = e;")
            with c.block("for (; f > 0 && keys[f - 1] > key; --f) {"):
                c("keys[f] = keys[f - 1];", "vals[f] = vals[f - 1];")
            c("keys[f] = key;", "vals[f] = value;")
        with c.block("for (long e = 0; e < used; ++e) {"):
            c("const long key = keys[e];", "const val_t value = vals[e];")
            body()
        c("used = 0;")


def accumulator(ctx: Context) -> list[str]:
    a = ctx.attrs
    holds, outer = _held(ctx)
    dims = [int(d) for d in a["dims"]]
    strides = [math.prod(dims[m + 1:]) for m in range(len(dims))]
    h, last = len(holds), ctx.inp(f"crd.{holds[-1]}")
    ws = (_Dense if a["format"] == "dense" else _Sparse)(ctx, math.prod(dims))
    c = ctx.code()
    ws.declare(c)
    c(f"long refs[{h}] = {{0}};  // references emitted per held level", f"sam::idx_t prev[{h}] = {{0}};",
      "bool drained = false;")
    if h > 1:
        c(f'sam::Ancestors<{h - 1}> up("{ctx.node.name}", '
          f'{", ".join("&" + ctx.inp(f"crd.{f}") for f in holds[:-1])});')
    key = " + ".join([f"(long)up.at[{m}] * {strides[m]}" for m in range(h - 1)] + [f"(long)c.value * {strides[-1]}"])

    def entry() -> None:
        coords = ", ".join(f"(sam::idx_t)((key / {strides[m]}) % {dims[m]})" for m in range(h))
        c(f"const sam::idx_t at[{h}] = {{{coords}}};", "int same = 0;",
          f"while (!first && same < {h} && at[same] == prev[same]) ++same;")
        for m, f in enumerate(holds):
            with c.block(f"if (first || same <= {m}) {{  // a new coordinate of {f}"):
                if m > 0:                               # the fibres below the first index that changed end
                    gap = f"{m} - same - 1"
                    c(*(f"if (!first && {gap} >= 0) {s}" for s in
                        ctx.close(f"crd.{f}", gap) + ctx.close(f"ref.{f}", gap)))
                c(*ctx.leaf(f"crd.{f}", f"at[{m}]"), *ctx.leaf(f"ref.{f}", f"(sam::idx_t)refs[{m}]"), f"++refs[{m}];")
        c(*ctx.leaf("vals", "value"), f"for (int m = 0; m < {h}; ++m) prev[m] = at[m];", "first = false;")

    def drain() -> None:
        c("bool first = true;  // drain: the touched entries in order, nested by held index")
        ws.entries(c, entry)
        for m, f in enumerate(holds):
            c(*ctx.close(f"crd.{f}", str(m)), *ctx.close(f"ref.{f}", str(m)))
        c("drained = true;")

    def on_stop() -> None:
        if h > 1:
            c("up.stop(t.stop, t.empty);")
        with c.block(f"if (t.empty <= {outer} && t.stop >= {outer}) {{  // an outer iteration ends"):
            drain()
            with c.block(f"if (t.stop > {outer}) {{"):
                for m, f in enumerate(holds):
                    c(*ctx.close(f"crd.{f}", f"t.stop - {outer - m}"), *ctx.close(f"ref.{f}", f"t.stop - {outer - m}"))
        with c.block(f"else if (t.empty > {outer}) {{  // an empty fibre above the outer iterations"):
            for m, f in enumerate(holds):
                c(*ctx.follow(f"crd.{f}", "t", m - outer), *ctx.follow(f"ref.{f}", "t", m - outer))

    def on_data() -> None:
        c(f"const tok_t c = {last}.read();",
          f'SAM_CHECK(c.kind == sam::DATA, "{ctx.node.name}", "a value without its coordinate");')
        if h > 1:
            c("up.leaf();")
        c(f"const long key = {key};", "const vtok_t& v = t;")
        ws.add(c)

    def on_stop_both() -> None:
        c(f"{last}.read();  // the same stop token")
        on_stop()

    main_loop(c, ctx, "val", on_data, on_stop_both, "vtok_t")
    c(f"{last}.read();  // its done token")
    if h > 1:
        c("up.done();")
    if int(a["outer"]) == 0:
        with c.block("if (!drained) {  // the root was empty: its one iteration, without values"):
            drain()
    c(*ctx.finish_all())
    return c.lines


def workspace_reader(ctx: Context) -> list[str]:
    c = ctx.code()
    c("long next = 0;  // entries taken from the workspace FIFO", "val_t cur = 0;")

    def on_data() -> None:
        with c.block("if (t.value == sam::EMPTY) {"):
            c(*ctx.leaf("val", "(val_t)0"), "continue;")
        c(f'SAM_CHECK(t.value >= next - 1, "{ctx.node.name}", "workspace references go back");')
        with c.block("while (next <= t.value) {"):
            c(f"cur = {ctx.inp('ws')}.read().value;", "++next;")
        c(*ctx.leaf("val", "cur"))

    main_loop(c, ctx, "ref", on_data, lambda: c(*ctx.follow("val", "t")))
    c(f"while ({ctx.inp('ws')}.read().kind != sam::DONE) {{", "}  // the values no reference took")
    c(*ctx.finish_all())
    return c.lines
