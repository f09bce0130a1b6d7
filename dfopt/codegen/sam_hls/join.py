"""Co-iteration processes: the joiner (two-finger ``merge`` or ``dense`` iteration) and the three
bit-vector units.

- **joiner** ``merge``: two fingers over the fibres of ``crd_a`` and ``crd_b`` (and, in lockstep
  with each, its reference lanes ``ref_a.<leaf>`` / ``ref_b.<leaf>``): the smaller coordinate moves;
  an intersection emits a coordinate both hold, a union every one, with each lane's reference or
  the empty reference. ``dense``: each fibre iterated over the whole dimension ``0 .. dim-1``, each
  input found at the coordinate it holds next. Both emit what the simulator's join emits.
- **bv_gen**: each fibre's coordinates packed into ``ceil(dim / word_bits)`` words, written as the
  coordinates pass them (every word, zeros included, as the run counts them).
- **bv_join**: the word-wise AND (intersection) or OR (union) of two bit-vector streams.
- **bv_scan**: the set bits of the joined words, in order, as coordinates; each input's reference
  lanes advance at its own set bits (so an intersection skips the references it drops).
"""

from __future__ import annotations

from dfopt.codegen.hls.emit import ident
from dfopt.codegen.sam_hls.context import Code, Context
from dfopt.codegen.sam_hls.scan import main_loop


def _lanes(ctx: Context) -> list[tuple[str, str]]:
    """(side, leaf) of every reference lane: side ``a`` first."""
    left, right = ctx.attrs["lanes"]
    return [("a", x) for x in left] + [("b", x) for x in right]


def _advance(ctx: Context, side: str) -> list[str]:
    """The next token of input ``side`` and of each of its lanes."""
    return [f"{side} = {ctx.inp('crd_' + side)}.read();"] + [
        f"l{side}_{ident(x)} = {ctx.inp(f'ref_{side}.{x}')}.read();" for s, x in _lanes(ctx) if s == side]


def _emit(ctx: Context, crd: str) -> list[str]:
    """A joined coordinate and each lane's reference (``in_a`` / ``in_b``: which inputs hold it)."""
    out = ctx.leaf("crd", crd)
    for s, x in _lanes(ctx):
        out += ctx.leaf(f"ref.{x}", f"in_{s} ? l{s}_{ident(x)}.value : sam::EMPTY")
    return out


def _stop(ctx: Context) -> list[str]:
    """Both inputs at the same stop token: closed on every output, both advanced."""
    check = (f'SAM_CHECK(b.kind == a.kind && b.stop == a.stop && b.empty == a.empty, "{ctx.node.name}", '
             '"the fibres of the two inputs do not pair up");')
    out = [check, *ctx.follow("crd", "a")]
    for _, x in _lanes(ctx):
        out += ctx.follow(f"ref.{x}", "a")
    return out + _advance(ctx, "a") + _advance(ctx, "b")


def _step(c: Code, ctx: Context, crd: str, keep: str) -> None:
    with c.block(f"if ({keep}) {{"):
        c(*_emit(ctx, crd))
    for side in "ab":
        with c.block(f"if (in_{side}) {{"):
            c(*_advance(ctx, side))


def joiner(ctx: Context) -> list[str]:
    a = ctx.attrs
    keep = "in_a || in_b" if a["op"] == "union" else "in_a && in_b"
    c = ctx.code()
    c("tok_t a, b;", *(f"tok_t l{s}_{ident(x)};" for s, x in _lanes(ctx)), *_advance(ctx, "a"), *_advance(ctx, "b"))
    with c.block("for (;;) {"):
        if a["method"] == "dense":
            c("if (a.kind == sam::DONE) break;")
            with c.block("if (!(a.kind == sam::STOP && a.empty > 0)) {  // an innermost fibre: every coordinate"):
                with c.block(f"for (sam::idx_t q = 0; q < {int(a['dim'])}; ++q) {{"):
                    c("#pragma HLS pipeline II=1", "const bool in_a = a.kind == sam::DATA && a.value == q;",
                      "const bool in_b = b.kind == sam::DATA && b.value == q;")
                    _step(c, ctx, "q", keep)
            c(*_stop(ctx))
        else:
            c("#pragma HLS pipeline II=1", "if (a.kind == sam::DONE) break;")
            with c.block("if (a.kind == sam::STOP && b.kind == sam::STOP) {"):
                c(*_stop(ctx), "continue;")
            c("const bool both = a.kind == sam::DATA && b.kind == sam::DATA;",
              "const bool in_a = a.kind == sam::DATA && (!both || a.value <= b.value);",
              "const bool in_b = b.kind == sam::DATA && (!both || b.value <= a.value);")
            _step(c, ctx, "in_a ? a.value : b.value", keep)
    c(f'SAM_CHECK(b.kind == sam::DONE, "{ctx.node.name}", "input b goes on after input a is done");',
      *ctx.finish_all())
    return c.lines


def bv_gen(ctx: Context) -> list[str]:
    bits = int(ctx.attrs["width"])
    words = -(-int(ctx.attrs["dim"]) // bits)
    c = ctx.code()
    c("uint64_t word = 0;", "long wi = 0;  // the word being filled, in its fibre")

    def words_up_to(w: str) -> None:
        with c.block(f"while (wi < {w}) {{"):
            c(*ctx.leaf("bv", "word"), "word = 0;", "++wi;")

    def on_data() -> None:
        words_up_to(f"t.value / {bits}")
        c(f"word |= (uint64_t)1 << (t.value % {bits});")

    def on_stop() -> None:
        with c.block("if (t.empty == 0) {  // the fibre ends: its remaining words"):
            words_up_to(str(words))
            c("wi = 0;")
        c(*ctx.follow("bv", "t"))

    main_loop(c, ctx, "crd", on_data, on_stop)
    c(*ctx.finish_all())
    return c.lines


def bv_join(ctx: Context) -> list[str]:
    op = "&" if ctx.attrs["op"] == "and" else "|"
    c = ctx.code()
    with c.block("for (;;) {"):
        c("#pragma HLS pipeline II=1", f"const bvtok_t x = {ctx.inp('bv_a')}.read();",
          f"const bvtok_t y = {ctx.inp('bv_b')}.read();",
          f'SAM_CHECK(x.kind == y.kind, "{ctx.node.name}", "bit-vector streams disagree");',
          "if (x.kind == sam::DONE) break;")
        with c.block("if (x.kind == sam::STOP) {"):
            c(*ctx.follow("bv", "x"), "continue;")
        c(*ctx.leaf("bv", f"x.value {op} y.value"))
    c(*ctx.finish_all())
    return c.lines


def bv_scan(ctx: Context) -> list[str]:
    bits = int(ctx.attrs["width"])
    lanes = _lanes(ctx)
    c = ctx.code()
    c("long wi = 0;  // the word's index in its fibre")
    with c.block("for (;;) {"):
        c(f"const bvtok_t t = {ctx.inp('bv')}.read();", f"const bvtok_t x = {ctx.inp('bv_a')}.read();",
          f"const bvtok_t y = {ctx.inp('bv_b')}.read();",
          f'SAM_CHECK(t.kind == x.kind && t.kind == y.kind, "{ctx.node.name}", "bit-vector streams disagree");')
        with c.block("if (t.kind != sam::DATA) {  // and the lanes' stop or done token"):
            c(*(f"{ctx.inp(f'ref_{s}.{x}')}.read();" for s, x in lanes), "if (t.kind == sam::DONE) break;",
              *ctx.follow("crd", "t"), *(line for _, x in lanes for line in ctx.follow(f"ref.{x}", "t")),
              "if (t.empty == 0) wi = 0;", "continue;")
        with c.block(f"for (int q = 0; q < {bits}; ++q) {{"):
            c("#pragma HLS pipeline II=1", "const bool in_a = (x.value >> q) & 1, in_b = (y.value >> q) & 1;",
              "(void)in_a;", "(void)in_b;")
            for s, x in lanes:
                c(f"const sam::idx_t r{s}_{ident(x)} = in_{s} ? {ctx.inp(f'ref_{s}.{x}')}.read().value : sam::EMPTY;")
            with c.block("if ((t.value >> q) & 1) {"):
                c(*ctx.leaf("crd", f"(sam::idx_t)(wi * {bits} + q)"),
                  *(line for s, x in lanes for line in ctx.leaf(f"ref.{x}", f"r{s}_{ident(x)}")))
        c("++wi;")
    c(*ctx.finish_all())
    return c.lines
