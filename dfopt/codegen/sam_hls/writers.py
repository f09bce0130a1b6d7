"""The processes that shape and store the result: crd-drops, level writers and the vals writer.

- **crd_drop**: each coordinate of ``outer`` whose fibre of ``inner`` is empty is dropped, with that
  fibre's stop token (and the value of ``val`` that goes with it, at either depth); the closings of
  the enclosing fibres are kept.
- **level writer**: a dense level stores nothing (its coordinates are read to the end); a unique
  compressed level stores each coordinate in ``crd`` in order and, per position of the level
  above, the running count in ``pos``: one entry per innermost fibre, or — under a dense run of
  levels — at the position ``((fibre * size + c) * size' + c') ...`` its coordinates give, the
  positions no fibre reaches repeating the count (``sam::Ancestors`` over the run's coordinates).
- **vals writer**: each value at its position: the row-major position of its coordinates (an
  all-dense result), the dense run's position (a dense last level), the next one (a sparse last
  level), the one position of a scalar; the positions no value reaches are 0.

A level of a COO result (non-unique compressed, singleton) is refused.
"""

from __future__ import annotations

import math

from dfopt.codegen.sam_hls.context import Code, Context
from dfopt.codegen.sam_hls.scan import main_loop


def crd_drop(ctx: Context) -> list[str]:
    d_out, d_in = ctx.depth("outer"), ctx.depth("inner")
    if d_in != d_out + 1:
        raise ctx.refuse(f"inner stream of depth {d_in} under an outer one of depth {d_out}")
    val = ctx.depth("val") if ctx.has("val") else None
    if val is not None and val not in (d_out, d_in):
        raise ctx.refuse(f"value stream of depth {val}, expected {d_out} or {d_in}")
    at_in, at_out = val == d_in, val == d_out
    iv = ctx.inp("val") if val is not None else ""
    c = ctx.code()
    c("bool prev_leaf = false;")

    def on_data() -> None:                   # an outer coordinate and its inner fibre
        c("bool kept = false;")
        with c.block("for (;;) {"):
            c(f"const tok_t u = {ctx.inp('inner')}.read();", *([f"const vtok_t w = {iv}.read();"] if at_in else []))
            with c.block("if (u.kind == sam::DATA) {"):
                with c.block("if (!kept) {"):
                    c(*ctx.leaf("outer", "t.value"), "kept = true;")
                c(*ctx.leaf("inner", "u.value"), *(ctx.leaf("val", "w.value") if at_in else []), "continue;")
            c(f'SAM_CHECK(u.kind == sam::STOP && u.empty == 0, "{ctx.node.name}", '
              '"an outer coordinate without its inner fibre");')
            with c.block("if (kept) {"):
                c(*ctx.close("inner", "0"), *(ctx.close("val", "0") if at_in else []))
            c("break;")
        if at_out:
            c(f"const vtok_t w = {iv}.read();")
            with c.block("if (kept) {"):
                c(*ctx.leaf("val", "w.value"))
        c("prev_leaf = true;")

    def on_stop() -> None:
        c(*ctx.follow("outer", "t"))
        if at_out:
            c(f"{iv}.read();", *ctx.follow("val", "t"))
        with c.block(f"if (!prev_leaf && t.empty + 1 < {d_in - 1}) {{  // the inner stream's stop of an empty fibre"):
            c(f"{ctx.inp('inner')}.read();", *([f"{iv}.read();"] if at_in else []))
        c(*ctx.follow("inner", "t", 1), *(ctx.follow("val", "t", 1) if at_in else []), "prev_leaf = false;")

    main_loop(c, ctx, "outer", on_data, on_stop)
    c(f"{ctx.inp('inner')}.read();  // the done tokens", *([f"{iv}.read();"] if val is not None else []),
      *ctx.finish_all())
    return c.lines


def _run(c: Code, ctx: Context, top: int, last: int, driver: str) -> bool:
    """Declare ``sam::Ancestors`` over the coordinate streams of result levels ``top .. last - 1``,
    which must lie at consecutive depths just above ``driver``; False for an empty run."""
    depth = ctx.depth(driver)
    for m in range(top, last):
        if ctx.depth(f"crd.{m}") != depth - (last - m):
            raise ctx.refuse(f"the coordinates of result level {m} stream at depth {ctx.depth(f'crd.{m}')}, "
                             f"expected {depth - (last - m)} (the result's levels in loop order)")
    if top == last:
        return False
    streams = ", ".join(f"&{ctx.inp(f'crd.{m}')}" for m in range(top, last))
    c(f'sam::Ancestors<{last - top}> up("{ctx.node.name}", {streams});')
    return True


def _position(sizes, top: int, last: int, leaf: str, base: str | None) -> str:
    """The C expression of a position in the dense run ``top .. last`` (``leaf``: level ``last``'s
    coordinate; ``base``: the run's parent position, None for a row-major position)."""
    expr = base if base is not None else "0"
    for m in range(top, last):
        expr = f"({expr}) * {sizes[m]} + up.at[{m - top}]"
    return f"({expr}) * {sizes[last]} + {leaf}"


def _top(levels, k: int) -> int:
    """The first level of the dense run that ends at level ``k``."""
    while k > 0 and levels[k - 1] == "dense":
        k -= 1
    return k


def level_writer(ctx: Context) -> list[str]:
    a = ctx.attrs
    k, kind, levels, sizes = a["level"], a["format"], a["levels"], [int(s) for s in a["sizes"]]
    c = ctx.code()
    if kind == "dense":
        c(f"while ({ctx.inp('crd')}.read().kind != sam::DONE) {{", "}  // a dense level stores nothing")
        return c.lines
    if kind != "compressed" or not a["unique"]:
        raise ctx.refuse(f"result level {k} is {kind}{'' if a['unique'] else ' (non-unique)'}: COO results are not "
                         "emitted")
    pos, crd = ctx.array(f"{a['tensor']}.{k}.pos"), ctx.array(f"{a['tensor']}.{k}.crd")
    c(*pos.writer("SeqOut"), *crd.writer("SeqOut"), "long n = 0;", f"{pos.var}_w.push(0);")
    chained = k > 0 and levels[k - 1] == "dense"          # a dense run above: positions from its coordinates
    top = _top(levels, k - 1) if chained else k
    if chained:
        _run(c, ctx, top, k, "crd")
        c("long fill = 0, n_start = 0;  // parent positions whose pos entry is written, entries before this fibre")

    def on_data() -> None:
        c(*(["up.leaf();"] if chained else []), f"{crd.var}_w.push(t.value);", "++n;")

    def on_stop() -> None:
        with c.block("if (t.empty == 0) {  // the fibre of one parent position ends"):
            if chained:
                parent = _position(sizes, top, k - 1, f"up.at[{k - 1 - top}]", "up.top_fibre")
                c("up.leaf();", f"const long p = {parent};",
                  f'SAM_CHECK(p >= fill, "{ctx.node.name}", "parent positions out of order");',
                  f"for (; fill < p; ++fill) {pos.var}_w.push(n_start);", f"{pos.var}_w.push(n);", "fill = p + 1;",
                  "n_start = n;")
            else:
                c(f"{pos.var}_w.push(n);")
        if chained:
            c("up.stop(t.stop, t.empty);")

    main_loop(c, ctx, "crd", on_data, on_stop)
    if chained:
        c("up.done();", f"for (; fill < up.fibres * {math.prod(sizes[top:k])}; ++fill) {pos.var}_w.push(n);")
    c(*pos.store(f"{pos.var}_w.n"), *crd.store(f"{crd.var}_w.n"))
    return c.lines


def vals_writer(ctx: Context) -> list[str]:
    a = ctx.attrs
    levels, sizes = a["levels"], [int(s) for s in a["sizes"]]
    vals = ctx.array(f"{a['tensor']}.vals")
    c = ctx.code()
    last = len(levels) - 1
    if last < 0 or levels[last] != "dense":          # a scalar; or one value per entry of the last level
        c(*vals.writer("PosOut" if last < 0 else "SeqOut"))
        store = f"{vals.var}_w.add(0, t.value)" if last < 0 else f"{vals.var}_w.push(t.value)"
        with c.block("for (;;) {"):
            c(f"const vtok_t t = {ctx.inp('val')}.read();", "if (t.kind == sam::DONE) break;",
              f"if (t.kind == sam::DATA) {store};")
        c(f"const long n = {f'{vals.var}_w.end(1)' if last < 0 else f'{vals.var}_w.n'};", *vals.store("n"))
        return c.lines
    if ctx.depth(f"crd.{last}") != ctx.depth("val"):
        raise ctx.refuse(f"values at depth {ctx.depth('val')} but the last level's coordinates at "
                         f"{ctx.depth(f'crd.{last}')}")
    top = 0 if a["dense"] else _top(levels, last)
    c(*vals.writer("PosOut"))
    chained = _run(c, ctx, top, last, f"crd.{last}")
    c("long fibre = 0;  // innermost fibres of the last level's stream so far")
    base = None if a["dense"] else ("up.top_fibre" if chained else "fibre")
    count = math.prod(sizes) if a["dense"] else f"{'up.fibres' if chained else 'fibre'} * {math.prod(sizes[top:])}"
    with c.block("for (;;) {"):
        c(f"const vtok_t t = {ctx.inp('val')}.read();", f"const tok_t u = {ctx.inp(f'crd.{last}')}.read();",
          f'SAM_CHECK(t.kind == u.kind, "{ctx.node.name}", "values and coordinates disagree");',
          "if (t.kind == sam::DONE) break;")
        with c.block("if (t.kind == sam::DATA) {"):
            c(*(["up.leaf();"] if chained else []),
              f"{vals.var}_w.add({_position(sizes, top, last, 'u.value', base)}, t.value);", "continue;")
        c("if (t.empty == 0) ++fibre;", *(["up.stop(t.stop, t.empty);"] if chained else []))
    c(*(["up.done();"] if chained else []), f"const long n = {vals.var}_w.end({count});", *vals.store("n"))
    return c.lines
