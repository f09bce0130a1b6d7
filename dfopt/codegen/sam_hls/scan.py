"""Processes that walk levels and references: scanners, locates and repeaters.

- **scanner** (SAM's fiber lookup): each input reference ``r`` (the root: one reference 0) opens a
  fibre of the level — dense: ``0 .. size-1`` with references ``r * size + c``; compressed: ``crd[q]``
  for ``q`` in ``pos[r] .. pos[r+1]-1`` with references ``q``; singleton: ``crd[r]``; the empty
  reference an empty fibre — and closes it; each input stop token closes the same fibres one
  level deeper. A range (no tensor) emits ``0 .. size-1`` per coordinate of the loop above.
- **locate**: the position of a coordinate in a dense level, ``parent * size + crd`` (the empty
  reference stays empty), with the parent reference of the same fibre (lockstep), of the fibre
  above (``sam::Ancestors<1>``) or the root's 0.
- **repeater**: each token of its input repeated for every coordinate of the matching fibre of
  ``repsig`` (the root's reference 0 without an input).
"""

from __future__ import annotations

from collections.abc import Callable

from dfopt.codegen.sam_hls.context import Code, Context


def main_loop(c: Code, ctx: Context, port: str, on_data: Callable[[], None], on_stop: Callable[[], None],
              token: str = "tok_t") -> None:
    """``for (;;)`` over the tokens ``t`` of input ``port`` until done."""
    with c.block("for (;;) {"):
        c(f"const {token} t = {ctx.inp(port)}.read();", "if (t.kind == sam::DONE) break;")
        with c.block("if (t.kind == sam::STOP) {"):
            on_stop()
            c("continue;")
        on_data()


def scanner(ctx: Context) -> list[str]:
    a = ctx.attrs
    if a["tensor"] is None:
        return _range(ctx)
    level = ctx.data.tensors[a["tensor"]].levels[a["level"]]
    size, name = int(level.size), f"{a['tensor']}.{a['level']}"
    c = ctx.code()
    arrays = {k: ctx.array(f"{name}.{k}") for k in (("pos", "crd") if level.kind == "compressed" else
                                                     ("crd",) if level.kind == "singleton" else ())}
    for spec in arrays.values():
        c(*spec.setup())

    def fibre() -> None:
        with c.block("if (r != sam::EMPTY) {"):
            if level.kind == "dense":
                with c.block(f"for (sam::idx_t q = 0; q < {size}; ++q) {{"):
                    c("#pragma HLS pipeline II=1", *ctx.leaf("crd", "q"), *ctx.leaf("ref", f"r * {size} + q"))
            elif level.kind == "compressed":
                pos = arrays["pos"]
                c(f"const sam::idx_t lo = {pos.read('r')}, hi = {pos.read('r + 1')};")
                with c.block("for (sam::idx_t q = lo; q < hi; ++q) {"):
                    c("#pragma HLS pipeline II=1", *ctx.leaf("crd", arrays["crd"].read("q")), *ctx.leaf("ref", "q"))
            else:
                c(*ctx.leaf("crd", arrays["crd"].read("r")), *ctx.leaf("ref", "r"))
        c(*ctx.close("crd", "0"), *ctx.close("ref", "0"))

    if ctx.has("ref"):
        def on_data() -> None:
            c("const sam::idx_t r = t.value;")
            fibre()
        main_loop(c, ctx, "ref", on_data, lambda: c(*ctx.follow("crd", "t", 1), *ctx.follow("ref", "t", 1)))
    else:
        with c.block("{"):
            c("const sam::idx_t r = 0;  // the root")
            fibre()
    c(*ctx.finish_all())
    return c.lines


def _range(ctx: Context) -> list[str]:
    c = ctx.code()

    def fibre() -> None:
        with c.block(f"for (sam::idx_t q = 0; q < {int(ctx.attrs['size'])}; ++q) {{"):
            c("#pragma HLS pipeline II=1", *ctx.leaf("crd", "q"))
        c(*ctx.close("crd", "0"))

    if ctx.has("shape"):
        main_loop(c, ctx, "shape", fibre, lambda: c(*ctx.follow("crd", "t", 1)))
    else:
        with c.block("{"):
            fibre()
    c(*ctx.finish_all())
    return c.lines


def _with_parent(ctx: Context, driver: str, parent: str | None, value: Callable[[str], str]) -> list[str]:
    """A process that maps each token of ``driver`` with the parent leaf of its fibre (``value(p)``,
    ``p`` the C expression of that leaf): lockstep when both have the same depth, through
    ``sam::Ancestors<1>`` when the parent is one level up, the root's 0 without a parent."""
    out = next(iter(ctx.outputs), "")
    c = ctx.code()
    if parent is None:
        main_loop(c, ctx, driver, lambda: c(*ctx.leaf(out, value("0"))), lambda: c(*ctx.follow(out, "t")))
    elif ctx.depth(parent) == ctx.depth(driver):
        with c.block("for (;;) {"):
            c(f"const tok_t t = {ctx.inp(driver)}.read();", f"const tok_t u = {ctx.inp(parent)}.read();",
              f'SAM_CHECK(t.kind == u.kind, "{ctx.node.name}", "parent and coordinate streams disagree");',
              "if (t.kind == sam::DONE) break;")
            with c.block("if (t.kind == sam::STOP) {"):
                c(*ctx.follow(out, "t"), "continue;")
            c(*ctx.leaf(out, value("u.value")))
    elif ctx.depth(parent) == ctx.depth(driver) - 1:
        c(f'sam::Ancestors<1> up("{ctx.node.name}", &{ctx.inp(parent)});')
        main_loop(c, ctx, driver, lambda: c("up.leaf();", *ctx.leaf(out, value("up.at[0]"))),
                  lambda: c("up.stop(t.stop, t.empty);", *ctx.follow(out, "t")))
        c("up.done();")
    else:
        raise ctx.refuse(f"its parent stream has depth {ctx.depth(parent)}, the coordinates {ctx.depth(driver)}; "
                         "expected the same depth or one less")
    c(*ctx.finish_all())
    return c.lines


def locate(ctx: Context) -> list[str]:
    size = int(ctx.attrs["size"])
    return _with_parent(ctx, "crd", "ref" if ctx.has("ref") else None,
                        lambda p: f"{p} == sam::EMPTY ? sam::EMPTY : (sam::idx_t)({p} * {size} + t.value)")


def repeater(ctx: Context) -> list[str]:
    return _with_parent(ctx, "repsig", "in" if ctx.has("in") else None, lambda p: p)
