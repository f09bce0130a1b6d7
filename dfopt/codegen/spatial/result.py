"""The result's level writers, as SAM's: a dense level's position is computed from its parent's and
the coordinate, a compressed level's is a counter (``C_1_n``, entries written so far) whose value
after a fibre is the next ``pos`` entry; a compressed level drops a coordinate whose inner fibre
came out empty (SAM's crd-drop), and a value written at a repeated position is added.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dfopt.codegen.spatial.coiteration import Env
from dfopt.codegen.spatial.layout import Layout
from dfopt.codegen.spatial.memory import ArrayPlan
from dfopt.codegen.spatial.text import Block, add, conj, ident, mul
from dfopt.ir.sparse.notation import Binary, Neg, Sum


class ResultWriter:
    """Writes the result ``concrete.result`` through its arrays' ``plans``."""

    def __init__(self, concrete: Any, plans: dict[str, ArrayPlan], arrays: dict, layout: Layout):
        lhs = concrete.assignment.lhs
        self.res, self.dims, self.plans, self.arrays, self.lay = lhs.tensor, concrete.dims, plans, arrays, layout
        self.fmt = concrete.formats[self.res]
        self.store = [lhs.indices[m] for m in self.fmt.order]
        self.rank = len(self.fmt.levels)

    def plan(self, k: int | None, kind: str) -> ArrayPlan | None:
        return self.plans.get(f"{self.res}.vals" if kind == "vals" else f"{self.res}.{k}.{kind}")

    def counter(self, k: int) -> str:
        return f"{ident(self.res)}_{k}_n"

    def declare_counters(self, block: Block) -> None:
        for k, kind in enumerate(self.fmt.levels):
            if kind == "compressed":
                block.line(f"val {self.counter(k)} = Reg[Int](0)      // entries written to {self.res}.{k}")

    def level_of(self, name: str) -> int:
        """The level an array's positions are of (``pos`` arrays: the parent level's)."""
        kind = self.arrays[name].kind
        k = self.rank - 1 if kind == "vals" else int(name.split(".")[-2])
        return k - 1 if kind == "pos" else k

    # -- windows of the result's copies and streams ----------------------------------------------
    def span(self, env: Env, k: int, end: bool) -> str:
        """The first (``end``: one past the last) position of level ``k`` in the scope."""
        if k < 0:
            return "1" if end else "0"
        if (self.res, k) in env.pos:
            return add(env.pos[self.res, k], "1") if end else env.pos[self.res, k]
        if self.fmt.levels[k] == "compressed":
            return f"{self.counter(k)}.value"
        return mul(self.span(env, k - 1, end), self.dims[self.store[k]])

    def count(self, env: Env, k: int) -> str | None:
        """The positions of level ``k`` in the scope when they do not depend on the data."""
        if k < 0 or (self.res, k) in env.pos:
            return "1"
        if self.fmt.levels[k] == "compressed":
            return None
        parent = self.count(env, k - 1)
        return None if parent is None else mul(parent, self.dims[self.store[k]])

    def first(self, env: Env, name: str) -> str:
        """The first entry of array ``name`` the scope writes."""
        return self.span(env, self.level_of(name), end=False)

    def written(self, env: Env, name: str) -> str:
        """Entries of array ``name`` the scope wrote (at its end)."""
        k, pos = self.level_of(name), self.arrays[name].kind == "pos"
        count = self.count(env, k)
        if count is not None:
            return add(count, "1") if pos else count
        hi = self.span(env, k, end=True)
        hi = add(hi, "1") if pos else hi
        window = self.plans[name].window
        return hi if window is None else f"{hi} - {window}"

    # -- the writers around and inside a level's loop --------------------------------------------
    def parent(self, env: Env, k: int) -> str:
        return env.pos.get((self.res, k - 1), "0") if k else "0"

    def pos_write(self, block: Block, env: Env, k: int, end: bool) -> None:
        """``pos`` of level ``k``: the entry of its fibre's start (not for a FIFO, which got it when
        declared) and after the fibre its end, unless the parent coordinate is dropped."""
        p = self.plan(k, "pos")
        if p is None or (p.memory == "fifo" and not end):
            return
        parent = self.parent(env, k)
        en = None
        if end and k and self.fmt.levels[k - 1] == "compressed":
            en = f"{self.counter(k)}.value > {ident(self.res)}_{k}_start"
        block.lines(p.write(add(parent, "1") if end else parent, f"{self.counter(k)}.value", en))

    def enter(self, block: Block, env: Env, k: int, index: str) -> None:
        """The position of level ``k`` in its loop's iteration."""
        name = f"{ident(self.res)}_{k}_p"
        if self.fmt.levels[k] == "dense":
            block.line(f"val {name} = {add(mul(self.parent(env, k), self.dims[index]), index)}")
        else:
            block.line(f"val {name} = {self.counter(k)}.value")
            if k + 1 < self.rank and self.fmt.levels[k + 1] == "compressed":
                block.line(f"val {ident(self.res)}_{k + 1}_start = {self.counter(k + 1)}.value")
        env.pos[self.res, k] = name

    def leave(self, block: Block, env: Env, k: int, index: str) -> None:
        """A compressed level's coordinate (and the value, at the last level) at the end of its
        iteration, kept when the iteration yields an output whose inner fibre is not empty."""
        conds = list(env.cond)
        last = k == self.rank - 1
        if not last and self.fmt.levels[k + 1] == "compressed":
            conds.append(f"{self.counter(k + 1)}.value > {ident(self.res)}_{k + 1}_start")
        if last and "drop" in env.values:
            conds.append(env.values["drop"])
        keep = conj(conds)
        if keep is not None:
            block.line(f"val {ident(self.res)}_{k}_keep = {keep}")
            keep = f"{ident(self.res)}_{k}_keep"
        pos = env.pos[self.res, k]
        crd = self.plan(k, "crd")
        if crd is not None:
            block.lines(crd.write(pos, index, keep))
        if last and "value" in env.values:
            self.write_vals(block, pos, env.values["value"], keep)
        step = "1" if keep is None else f"mux({keep}, 1, 0)"
        block.line(f"{self.counter(k)} := {self.counter(k)}.value + {step}")

    def write_vals(self, block: Block, pos: str, value: str, en: str | None) -> None:
        """The value at ``pos``; added when positions repeat (a dense level driven by a non-unique
        one adds its entries, as SAM's vals writer does)."""
        vals = self.plan(None, "vals")
        assert vals is not None, f"result {self.res!r} has a vals array"
        trace = self.arrays[vals.name].addresses
        if vals.memory != "fifo" and len(np.unique(trace)) < len(trace):
            block.line(vals.accumulate(pos, value if en is None else f"mux({en}, {value}, 0)"))
            return
        block.lines(vals.write(pos, value, en))

    def reduced_below(self, root: Any) -> bool:
        """A reduction right below the last level's loop, reached through products: its empty
        fibres make the coordinate structurally zero (SAM's crd-drop)."""
        final = self.lay.depth(self.store[-1]) if self.store else 0
        stack = [root]
        while stack:
            e = stack.pop()
            if isinstance(e, Sum):
                if self.lay.depth(e.index) == final + 1:
                    return True
            elif isinstance(e, Neg):
                stack.append(e.arg)
            elif isinstance(e, Binary) and e.op == "*":
                stack.extend((e.right, e.left))
        return False
