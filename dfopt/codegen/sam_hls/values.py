"""Processes on values: array readers, ALUs and reducers.

- **array**: the value at each reference (0 at the empty reference), read from the tensor's
  ``vals`` as its binding says (:mod:`.arrays`); without a reference (a scalar operand) the one
  value. A workspace's reader takes the values its accumulator drains instead (:mod:`.accumulate`).
- **alu**: ``a * b``, ``a + b``, ``a - b`` or ``-a`` of two value streams read in lockstep (one
  operand may be a constant, on either side).
- **reducer**: the sum of each innermost fibre (0 for an empty one) as a leaf one level up; a stop
  token that closes more than the innermost fibre closes the rest there.
"""

from __future__ import annotations

from dfopt.codegen.sam_hls.context import Context
from dfopt.codegen.sam_hls.scan import main_loop

OPS = {"mul": "*", "add": "+", "sub": "-"}


def _const(value) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a numeric literal, got {value!r}")
    return f"(val_t){value!r}"


def array(ctx: Context) -> list[str]:
    if ctx.attrs["tensor"] in ctx.extra.get("workspaces", ()):
        from dfopt.codegen.sam_hls.accumulate import workspace_reader

        return workspace_reader(ctx)
    vals = ctx.array(f"{ctx.attrs['tensor']}.vals")
    c = ctx.code()
    c(*vals.setup())
    if ctx.has("ref"):
        main_loop(c, ctx, "ref", lambda: c(*ctx.leaf("val", f"t.value == sam::EMPTY ? (val_t)0 : "
                                                           f"{vals.read('t.value')}")),
                  lambda: c(*ctx.follow("val", "t")))
    else:
        c(*ctx.leaf("val", vals.read("0")))       # a scalar operand
    c(*ctx.finish_all())
    return c.lines


def alu(ctx: Context) -> list[str]:
    a = ctx.attrs
    op = a["op"]
    if op == "neg":
        expr = "-x.value"
    elif op in OPS:
        left, right = "x.value", "y.value"
        if a.get("const") is not None:
            const = _const(a["const"])
            left, right = (const, "x.value") if a.get("const_side") == "a" else ("x.value", const)
        expr = f"{left} {OPS[op]} {right}"
    else:
        raise ctx.refuse(f"unknown ALU operation {op!r} (expected mul, add, sub or neg)")
    c = ctx.code()
    with c.block("for (;;) {"):
        c("#pragma HLS pipeline II=1", f"const vtok_t x = {ctx.inp('a')}.read();")
        if "y.value" in expr:
            c(f"const vtok_t y = {ctx.inp('b')}.read();",
              f'SAM_CHECK(x.kind == y.kind, "{ctx.node.name}", "operand streams disagree");')
        c("if (x.kind == sam::DONE) break;")
        with c.block("if (x.kind == sam::STOP) {"):
            c(*ctx.follow("val", "x"), "continue;")
        c(*ctx.leaf("val", expr))
    c(*ctx.finish_all())
    return c.lines


def reducer(ctx: Context) -> list[str]:
    if ctx.depth("val") < 1:
        raise ctx.refuse("its input has no fibre to reduce (depth 0)")
    c = ctx.code()
    c("val_t sum = 0;")
    with c.block("for (;;) {"):
        c(f"const vtok_t t = {ctx.inp('val')}.read();", "if (t.kind == sam::DONE) break;")
        with c.block("if (t.kind == sam::DATA) {"):
            c("sum += t.value;", "continue;")
        with c.block("if (t.empty == 0) {  // an innermost fibre ends: its sum"):
            c(*ctx.leaf("val", "sum"), "sum = 0;", *(f"if (t.stop > 0) {s}" for s in ctx.close("val", "t.stop - 1")),
              "continue;")
        c(*ctx.follow("val", "t", -1))            # an empty fibre above: one level up
    c(*ctx.finish_all())
    return c.lines
