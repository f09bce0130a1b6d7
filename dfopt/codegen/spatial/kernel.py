"""The ``Accel`` body of a sparse statement: the loop nest in the concrete statement's order, every
memory declared where its binding puts it, the values computed where SAM's primitives compute them.

Per scope (the root, or the body of a loop): the on-chip copies of ``pos`` arrays allocated there
(their windows need only the positions known), the fibre bounds of the compressed levels the next
loops walk (read from ``pos``), the other memories allocated there (copies with their bulk loads,
FIFOs with their streams, registers), then the loops, and at the end the stores of what was
written there. A loop runs its merge point (:mod:`.coiteration`): free indices are ``Foreach``
loops, reductions ``Reduce`` loops (an accumulator's producer adds into its workspace instead, and
its consumer reads the workspace in its own loops after the producer's). The result is written as
SAM's level writers do: a dense level's position is computed, a compressed level's is a counter
(``C_1_n``) whose value after a fibre is the next ``pos`` entry; a compressed level drops a
coordinate whose inner fibre came out empty (SAM's crd-drop).
"""

from __future__ import annotations

from typing import Any

from dfopt.codegen.spatial import coiteration as co
from dfopt.codegen.spatial.coiteration import Env, Frame, LoopSpec, Source
from dfopt.codegen.spatial.layout import CONSUMER, COPIES, MAIN, Layout, Path, Placement, loop_par
from dfopt.codegen.spatial.memory import ArrayPlan
from dfopt.codegen.spatial.result import ResultWriter
from dfopt.codegen.spatial.text import Block, add, conj, dram, ident, mul, paren
from dfopt.ir.sparse.concrete import Leaf, Locate
from dfopt.ir.sparse.notation import Access, Binary, Literal, Neg, Sum, accesses


class Kernel:
    """Writes the ``Accel`` body of ``data`` (:class:`~dfopt.models.sparse.problem.SparseData`)
    under ``design`` with the arrays' ``plans`` and ``placements``."""

    def __init__(self, data: Any, design: Any, plans: dict[str, ArrayPlan], placements: dict[str, Placement],
                 layout: Layout):
        c = data.concrete
        self.c, self.data, self.design, self.plans, self.place, self.lay = c, data, design, plans, placements, layout
        self.dims = c.dims
        self.word_bits = data.machine.word_bits
        self.ops = {op.name: op for op in c.operands}
        self.opname = {id(e): op.name for e, op in zip(accesses(c.rhs), c.operands)}
        self.acc = c.accumulators[0] if c.accumulators else None
        if c.consumer is not None and self.acc is not None:
            self.opname.update({id(e): self.acc.name for e in accesses(c.consumer) if e.tensor == self.acc.name})
        lhs = c.assignment.lhs
        self.res = lhs.tensor
        self.out = ResultWriter(c, plans, data.sim.arrays, layout)
        self.rnest = CONSUMER if self.acc is not None else MAIN
        self.decls: dict[Path, list[str]] = {}
        for name, p in placements.items():
            if p.decl is not None:
                self.decls.setdefault(p.decl, []).append(name)
        self.n_foreach = layout.depth(self.acc.holds[-1]) if self.acc else len(lhs.indices)

    # -- helpers ---------------------------------------------------------------------------------
    def plan(self, tensor: str, level: int | None, kind: str) -> ArrayPlan | None:
        return self.plans.get(f"{tensor}.vals" if kind == "vals" else f"{tensor}.{level}.{kind}")

    def par(self, key: str) -> int:
        return loop_par(self.lay, key, self.data.vloop, self.design.inner_par, self.design.outer_par)

    def children(self, nest: str, level: int) -> list[str]:
        """The loops a scope opens: the next main loop, and after the shared loops the consumer's."""
        lay = self.lay
        if nest == MAIN:
            out = [lay.loops[level]] if level < len(lay.loops) else []
            if self.acc is not None and level == lay.base:
                out.append(lay.key(lay.holds[0], CONSUMER))
            return out
        return [lay.key(lay.holds[level], CONSUMER)] if level < len(lay.holds) else []

    # -- entry -----------------------------------------------------------------------------------
    def accel(self, block: Block) -> None:
        self.out.declare_counters(block)
        self.main_scope(block, Env(), 0)

    def main_scope(self, block: Block, env: Env, level: int) -> None:
        self.open_scope(block, env, self.children(MAIN, level))
        if level < self.n_foreach:
            if self.acc is not None and level == self.lay.base and self.acc.format == "sparse":
                block.line(f"val {self.acc.name}_n = Reg[Int](0)      // entries of workspace {self.acc.name}")
            self.foreach(block, env, MAIN, self.lay.loops[level], lambda b, e: self.main_scope(b, e, level + 1))
            if self.acc is not None and level == self.lay.base:
                self.foreach(block, env, CONSUMER, self.lay.holds[0], lambda b, e: self.consumer_scope(b, e, 1))
        elif self.acc is not None:
            self.accumulate(block, env, level)
        else:
            self.sink(block, env, self.c.rhs)
        self.close_scope(block, env)

    def consumer_scope(self, block: Block, env: Env, level: int) -> None:
        self.open_scope(block, env, self.children(CONSUMER, level))
        if level < len(self.lay.holds):
            self.foreach(block, env, CONSUMER, self.lay.holds[level], lambda b, e: self.consumer_scope(b, e, level + 1))
        else:
            self.sink(block, env, self.c.consumer)
        self.close_scope(block, env)

    # -- scopes ----------------------------------------------------------------------------------
    def open_scope(self, block: Block, env: Env, children: list[str]) -> None:
        """Allocate what the scope's fibre bounds read (the ``pos`` arrays accessed here), read the
        bounds of the loops it opens, then allocate the rest (whose windows and streams may use
        those bounds)."""
        names = self.decls.get(env.path, [])
        first = [n for n in names if self.plans[n].kind == "pos" and env.path in self.place[n].access]
        for name in first:
            self.allocate(block, env, name)
        for key in children:
            self.bounds(block, env, key)
        for name in names:
            if name not in first:
                self.allocate(block, env, name)

    def close_scope(self, block: Block, env: Env) -> None:
        for name in reversed(self.decls.get(env.path, [])):
            p = self.plans[name]
            if p.role == "read" or not p.off_chip:
                continue
            if self.data.sim.arrays[name].tensor != self.res:
                if p.memory in COPIES:          # an off-chip workspace: its whole window back
                    block.line(p.store(str(p.size), self.transfer_par))
                continue
            if p.memory in COPIES:
                block.line(p.store(self.out.written(env, name), self.transfer_par))
            elif p.memory == "fifo":
                block.line(p.stream_out(p.window or "0", self.out.written(env, name)))
            elif p.memory == "reg":
                block.line(p.reg_out())

    @property
    def transfer_par(self) -> str:
        """Lanes of a bulk transfer (TACO's ``par ip``): the inner factor."""
        return str(self.design.inner_par)

    def allocate(self, block: Block, env: Env, name: str) -> None:
        p, pl = self.plans[name], self.place[name]
        b = self.design.binding[name]
        where = f"depth {b.depth}" + (f", {b.pmus} PMUs" if b.pmus else "")
        if p.memory in COPIES and pl.depth < b.depth:
            where += f"; allocated at depth {pl.depth}, the loops its producer and consumer share"
        block.line(f"// {name}: {p.memory} ({where}), {p.role} at loop {self.data.sim.arrays[name].loop or 'root'}")
        block.line(p.declare())
        if p.memory in COPIES:
            window = self._copy_window(env, name, pl)
            if window != "0":
                p.window = f"{p.id}_win"
                block.line(f"val {p.window} = {window}")
            else:
                p.window = None
            if p.off_chip and p.role != "write":
                block.line(p.load(self.transfer_par))
        elif p.memory == "fifo":
            lo, count = self._stream_span(env, name)
            if p.role != "read" and lo != "0":      # a written stream's start, before the counters move
                p.window = f"{p.id}_win"
                block.line(f"val {p.window} = {lo}")
            if p.role == "read":
                block.line(p.stream_in(lo, count))
                if p.kind == "pos":
                    at = self._at_reg(name)
                    block.line(f"val {at} = Reg[Int](0)")
                    block.line(f"{at} := {p.read('0')}")
            elif p.kind == "pos":
                block.lines(p.write("0", f"{self.out.counter(self._level(name))}.value"))
        elif p.memory == "reg" and p.off_chip and p.role == "read":
            block.line(p.reg_in())

    def _level(self, name: str) -> int:
        return int(name.split(".")[-2])

    def _at_reg(self, name: str) -> str:
        return f"{ident(name)}_at"

    # -- windows and streams ---------------------------------------------------------------------
    def _copy_window(self, env: Env, name: str, pl: Placement) -> str:
        facts = self.data.sim.arrays[name]
        if facts.tensor == self.res:
            return self.out.first(env, name)
        if self.acc is not None and facts.tensor == self.acc.name:
            return "0"
        if pl.depth == 0:
            return str(int(facts.addresses.min())) if len(facts.addresses) else "0"
        return self._operand_span(env, name)[0]

    def _stream_span(self, env: Env, name: str) -> tuple[str, str]:
        facts = self.data.sim.arrays[name]
        if facts.tensor == self.res:
            return self.out.first(env, name), ""
        return self._operand_span(env, name)

    def _operand(self, tensor: str) -> Any:
        return next(op for op in self.c.operands if op.tensor == tensor)

    def _operand_span(self, env: Env, name: str) -> tuple[str, str]:
        """(first position, count) of an operand array's entries one iteration of ``env`` reads."""
        facts = self.data.sim.arrays[name]
        op = self._operand(facts.tensor)
        if facts.kind == "vals":
            return self._span(env, op, len(op.levels) - 1)
        k = self._level(name)
        if facts.kind == "crd":
            return self._span(env, op, k)
        lo, count = self._span(env, op, k - 1)
        return lo, add(count, "1")

    def _span(self, env: Env, op: Any, k: int) -> tuple[str, str]:
        if k < 0:
            return "0", "1"
        if (op.name, k) in env.pos:
            return env.pos[op.name, k], "1"
        plo, pcount = self._span(env, op, k - 1)
        kind, size = op.levels[k], self.dims[op.storage[k]]
        if kind == "dense":
            return mul(plo, size), mul(pcount, size)
        if kind == "singleton":
            return plo, pcount
        if pcount == "1" and (op.name, k) in env.bounds:
            lo, hi = env.bounds[op.name, k]
            return lo, f"{hi} - {lo}"
        pos = dram(f"{op.tensor}.{k}.pos")
        lo, hi = f"{pos}({plo})", f"{pos}({add(plo, pcount)})"
        return lo, f"{hi} - {lo}"

    # -- fibre bounds ----------------------------------------------------------------------------
    def bounds(self, block: Block, env: Env, key: str) -> None:
        """The bounds of every compressed operand level the loop ``key`` walks, read from ``pos``."""
        for leaf in self.c.merges[key].scans:
            if leaf.kind != "compressed" or (self.acc is not None and leaf.tensor == self.acc.name):
                continue
            parent = env.pos.get((leaf.operand, leaf.level - 1), "0") if leaf.level else "0"
            p = self.plan(leaf.tensor, leaf.level, "pos")
            pid = ident(leaf.name)
            lo, hi = f"{pid}_lo", f"{pid}_hi"
            flag = env.flag(leaf.operand)
            if p is None:
                continue
            if p.memory == "fifo":
                at = self._at_reg(p.name)
                block.line(f"val {lo} = {at}.value")
                nxt = p.read("", en=flag)
                block.line(f"val {hi} = {nxt if flag is None else f'mux({flag}, {nxt}, {lo})'}")
                block.line(f"{at} := {hi}")
            else:
                rlo, rhi = p.read(parent), p.read(add(parent, "1"))
                block.line(f"val {lo} = {rlo if flag is None else f'mux({flag}, {rlo}, 0)'}")
                block.line(f"val {hi} = {rhi if flag is None else f'mux({flag}, {rhi}, 0)'}")
            env.bounds[leaf.operand, leaf.level] = (lo, hi)

    # -- sources ---------------------------------------------------------------------------------
    def source(self, env: Env, leaf: Leaf) -> Source:
        if self.acc is not None and leaf.tensor == self.acc.name:
            return self._workspace_source(env, leaf)
        op = self.ops[leaf.operand]
        if leaf.kind == "dense":
            parent = env.pos.get((leaf.operand, leaf.level - 1), "0") if leaf.level else "0"
            size = self.dims[op.storage[leaf.level]]
            at = lambda q: {leaf.name: add(mul(parent, size), q)}
            return Source(leaf.name, "0", str(size), lambda q: q, lambda q: q, at, lambda r, en: at(r), dense=True)
        crd = self.plan(leaf.tensor, leaf.level, "crd")
        assert crd is not None, f"level {leaf.name} has a crd array"
        if leaf.kind == "singleton":
            parent = env.pos[leaf.operand, leaf.level - 1]
            lo, hi = parent, f"{parent} + 1"
        else:
            lo, hi = env.bounds[leaf.operand, leaf.level]
        pname = f"{ident(leaf.name)}_p"
        fifo = crd.memory == "fifo"
        return Source(leaf.name, lo, hi,
                      take=lambda q: crd.read(q),
                      peek=lambda q: crd.peek(q),
                      at=lambda q: {leaf.name: q},
                      ranked=lambda r, en: {leaf.name: f"{lo} + {r}" if en is None else f"mux({en}, {lo} + {r}, -1)"},
                      advance=(lambda en: [f"{crd.id}.deq({en})"]) if fifo else (lambda en: []),
                      walk_name=pname)

    def _workspace_source(self, env: Env, leaf: Leaf) -> Source:
        ws = self.acc
        assert ws is not None
        if ws.format == "dense":
            parent = env.pos.get((leaf.operand, leaf.level - 1), "0") if leaf.level else "0"
            size = self.dims[ws.holds[leaf.level]]
            at = lambda q: {leaf.name: add(mul(parent, size), q)}
            return Source(leaf.name, "0", str(size), lambda q: q, lambda q: q, at, lambda r, en: at(r), dense=True)
        crd = self.plans[f"{ws.name}.crd"]
        return Source(leaf.name, "0", f"{ws.name}_n.value", take=lambda q: crd.read(q), peek=lambda q: crd.read(q),
                      at=lambda q: {leaf.name: q}, ranked=lambda r, en: {leaf.name: r})

    def _range(self, mp: Any) -> Source:
        return Source(f"range_{mp.key}", "0", str(self.dims[mp.index]), lambda q: q, lambda q: q,
                      lambda q: {}, lambda r, en: {}, dense=True)

    # -- loops -----------------------------------------------------------------------------------
    def loop(self, block: Block, env: Env, key: str, body, reduce: str | None = None,
             into: str | None = None) -> None:
        """Open the loop of merge point ``key``, run ``body(block, env)`` inside and close it."""
        mp = self.c.merges[key]
        spec = LoopSpec(key, mp.index, self.dims[mp.index], self.par(key), reduce, into)
        sources = {leaf.name: self.source(env, leaf) for leaf in mp.scans}
        sources[f"range_{mp.key}"] = self._range(mp)
        joins = mp.joins
        for j, nxt in zip(joins, joins[1:]):
            sources[j.name] = self.stage(block, env, spec, j, sources, self.method(nxt.name))
        if joins:
            j = joins[-1]
            frame = co.join(block, env, spec, j.name, j.op, self.method(j.name), sources[j.left], sources[j.right],
                            self.word_bits)
        else:
            frame = co.walk(block, env, spec, sources[mp.output])
        self.locate(frame, mp)
        frame.close(body(frame.block, frame.env))

    def method(self, join: str) -> str:
        known = self.design.coiteration.get(join)
        return known or self.c.joins[join].method or "bitvector"

    def stage(self, block: Block, env: Env, spec: LoopSpec, j: Any, sources: dict, reader: str) -> Source:
        """A join that feeds the next one (read by method ``reader``): its coordinates into a FIFO,
        each carried leaf's positions into a FIFO, or into an SRAM addressed by rank when the next
        join scans bit vectors (its scan skips the entries the other input lacks)."""
        a, b = sources[j.left], sources[j.right]
        ranked = reader == "bitvector"
        block.line(f"val {j.name}_crd = FIFO[Int](16)")
        stores = {leaf: f"{j.name}_{ident(leaf)}" for leaf in a.leaves + b.leaves}
        for f in stores.values():
            block.line(f"val {f} = SRAM[Int]({spec.dim})" if ranked else f"val {f} = FIFO[Int](16)")
        count = f"{j.name}_n"
        block.line(f"val {count} = Reg[Int](0)")
        block.line(f"{count} := 0")
        inner = LoopSpec(spec.key, spec.index, spec.dim, spec.par)
        frame = co.join(block, env, inner, j.name, j.op, self.method(j.name), a, b, self.word_bits)
        en = conj(frame.env.cond)
        body = frame.block
        body.line(f"{j.name}_crd.enq({spec.index})" if en is None else f"{j.name}_crd.enq({spec.index}, {en})")
        for leaf, f in stores.items():
            pos = frame.env.pos[co._leaf_key(leaf)]
            flag = frame.env.flag(leaf.rsplit(".", 1)[0])
            value = pos if flag is None else f"mux({flag}, {pos}, -1)"
            if ranked:
                write = f"{f}({count}.value) = {value}"
                body.lines([write] if en is None else [f"if ({en}) {{", f"  {write}", "}"])
            else:
                body.line(f"{f}.enq({value})" if en is None else f"{f}.enq({value}, {en})")
        body.line(f"{count} := {count}.value + {'1' if en is None else f'mux({en}, 1, 0)'}")
        frame.close(None)
        deq = lambda en_: [f"{j.name}_crd.deq({en_})"] + [f"{f}.deq({en_})" for f in stores.values()]
        at = lambda r, en_: {leaf: f"{f}({r})" if en_ is None else f"mux({en_}, {f}({r}), -1)"
                             for leaf, f in stores.items()}
        return Source(j.name, "0", f"{count}.value", take=lambda q: f"{j.name}_crd.deq",
                      peek=lambda q: f"{j.name}_crd.peek",
                      at=lambda q: {leaf: f"{f}.peek" for leaf, f in stores.items()},
                      ranked=at, advance=deq, partial=j.op == "union" or a.partial or b.partial)

    def locate(self, frame: Frame, mp: Any) -> None:
        for step in mp.steps:
            if not isinstance(step, Locate):
                continue
            leaf = step.leaf
            parent = frame.env.pos.get((leaf.operand, leaf.level - 1), "0") if leaf.level else "0"
            name = f"{ident(leaf.name)}_p"
            frame.block.line(f"val {name} = {add(mul(parent, self.dims[step.crd_index]), step.crd_index)}")
            frame.env.pos[leaf.operand, leaf.level] = name

    def foreach(self, block: Block, env: Env, nest: str, index: str, inner) -> None:
        """A free index's loop, with the result's level at ``index`` written around and inside it."""
        key = self.lay.key(index, nest)
        writes = index in self.out.store and (nest == self.rnest or index in self.lay.outer)
        k = self.out.store.index(index) if writes else -1
        compressed = k >= 0 and self.out.fmt.levels[k] == "compressed"
        if compressed:
            self.out.pos_write(block, env, k, end=False)

        def body(b: Block, e: Env) -> None:
            if k >= 0:
                self.out.enter(b, e, k, index)
            inner(b, e)
            if compressed:
                self.out.leave(b, e, k, index)

        self.loop(block, env, key, body)
        if compressed:
            self.out.pos_write(block, env, k, end=True)

    def sink(self, block: Block, env: Env, root: Any) -> None:
        """Compute the right-hand side where every free index is known and write it."""
        rank = self.out.rank
        vals = self.plan(self.res, None, "vals")
        assert vals is not None
        if rank == 0 and vals.memory == "reg" and isinstance(root, Sum) and not env.path:
            self.reduce(block, env, root, into=vals.id)
            return
        value = self.value(block, env, root)
        name = f"{ident(self.res)}_v"
        block.line(f"val {name} = {value}")
        if rank == 0:
            self.out.write_vals(block, "0", name, conj(env.cond))
            return
        if self.out.fmt.levels[-1] == "compressed":
            env.values["value"] = name
            if self.out.reduced_below(root):
                env.values["drop"] = env.values.get("nonempty") or f"{name} != 0"
            return
        self.out.write_vals(block, env.pos[self.res, rank - 1], name, conj(env.cond))

    # -- the accumulator -------------------------------------------------------------------------
    def accumulate(self, block: Block, env: Env, level: int) -> None:
        """The producer's iteration: the reduced value added into the workspace at the held
        coordinates (a sparse workspace first finds the coordinate's slot)."""
        ws = self.acc
        assert ws is not None
        e = ws.expr
        while isinstance(e, Sum) and self.lay.depth(e.index) < level:
            e = e.arg
        value = self.value(block, env, e)
        name = f"{ws.name}_v"
        block.line(f"val {name} = {value}")
        vals = self.plans[f"{ws.name}.vals"]
        lin = "0"
        for h in ws.holds:
            lin = add(mul(lin, self.dims[h]), h)
        en = conj(env.cond)
        if ws.format == "dense":
            line = vals.accumulate(lin, name if en is None else f"mux({en}, {name}, 0)")
            block.line(line)
            return
        crd = self.plans[f"{ws.name}.crd"]
        slot = f"{ws.name}_slot"
        if crd.memory == "sparse_sram":
            block.line(f'val {slot} = {crd.id}.RMW({lin}, {lin}, "insert", "TSO")   // the coordinate\'s slot')
        else:
            block.line(f"val {slot} = 0")
            block.lines(crd.write("0", lin))
        block.line(f"{ws.name}_n := max({ws.name}_n.value, {slot} + 1)")
        block.line(vals.accumulate(slot, name if en is None else f"mux({en}, {name}, 0)"))

    # -- values ----------------------------------------------------------------------------------
    def value(self, block: Block, env: Env, e: Any) -> str:
        """Scala for ``e`` in the scope ``env``; a reduction becomes a ``Reduce`` loop here."""
        if isinstance(e, Literal):
            v = e.value
            return f"{v}.to[T]" if isinstance(v, float) else str(v)
        if isinstance(e, Access):
            return self.read_value(env, e)
        if isinstance(e, Neg):
            return f"-{paren(self.value(block, env, e.arg))}"
        if isinstance(e, Binary):
            return f"({self.value(block, env, e.left)} {e.op} {self.value(block, env, e.right)})"
        if isinstance(e, Sum):
            return self.reduce(block, env, e)
        raise TypeError(f"unexpected expression node {type(e).__name__}")

    def read_value(self, env: Env, e: Access) -> str:
        name = self.opname[id(e)]
        flag = env.flag(name)
        if self.acc is not None and name == self.acc.name:
            vals = self.plans[f"{self.acc.name}.vals"]
            read = vals.read(env.pos[self.acc.name, len(self.acc.holds) - 1])
            return read if flag is None else f"mux({flag}, {read}, 0)"
        op = self.ops[name]
        plan = self.plan(op.tensor, None, "vals")
        assert plan is not None, f"tensor {op.tensor!r} has a vals array"
        pos = env.pos[name, len(op.levels) - 1] if op.levels else "0"
        read = plan.read(pos, en=flag if plan.memory == "fifo" else None)
        return read if flag is None else f"mux({flag}, {read}, 0)"

    def _nonempty(self, env: Env, mp: Any) -> str | None:
        """Whether a reduction's fibre has entries, when the structure tells: a dense one always, a
        walked fibre when its bounds differ (None: a join's, only known from its value)."""
        if mp.dense:
            return "true"
        if not mp.joins and (mp.scans[0].operand, mp.scans[0].level) in env.bounds:
            lo, hi = env.bounds[mp.scans[0].operand, mp.scans[0].level]
            return f"{lo} < {hi}"
        return None

    def reduce(self, block: Block, env: Env, e: Sum, into: str | None = None) -> str:
        d = self.lay.depth(e.index)
        total = f"{ident(e.index)}_sum_{len(env.path)}"
        mp = self.c.merges[e.index]
        env.values["nonempty"] = self._nonempty(env, mp)

        def body(b: Block, inner: Env) -> str:
            self.open_scope(b, inner, self.children(MAIN, d))
            value = self.value(b, inner, e.arg)
            self.close_scope(b, inner)
            return value

        if bool(mp.joins) and self.method(mp.joins[-1].name) == "merge":     # an FSM sums into a register
            self.loop(block, env, e.index, body, reduce=total)
            if into:
                block.line(f"{into} := {total}.value")
                return f"{into}.value"
            return f"{total}.value"
        self.loop(block, env, e.index, body, reduce=None if into else total, into=into)
        return f"{into}.value" if into else total
