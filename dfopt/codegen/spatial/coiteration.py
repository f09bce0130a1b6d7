"""The loop of one merge point in Spatial: a walk over one coordinate source, or a binary join of
two by the design's method. Every loop's head carries ``// loop <key>`` (and the join and method),
which the checker reads.

- **walk** — ``Foreach(lo until hi par P) { p => ... }`` over a compressed fibre's positions (the
  coordinate read at ``p``), ``Foreach(N by 1 par P) { i => ... }`` over a dimension, or over the
  entries of a sparse workspace;
- **bitvector** — per input, its fibre's coordinates fed to ``gen_bitvector(shift, max, len,
  indices, bv)`` (Spatial's bit-vector generator, one word stream per input), then
  ``Foreach(Scan(P, words, "and" | "or", bv_a, bv_b)) { case List(pa, ja, pb, j) => ... }``:
  Spatial's scanner over the AND / OR of the words, giving each input's rank (its position in the
  fibre; -1 when absent from a union) and the coordinate (TACO's ``ForScan`` / ``ReduceScan``);
- **merge** — a two-finger merge as a Spatial ``FSM``: one step a cycle, each finger a register,
  the smaller head (both when equal) advancing, while either (union) or both (intersection) remain;
- **dense** — ``Foreach(N by 1 par P) { j => ... }`` over the whole dimension, each sparse input
  found by a scan (a finger that advances when its head equals ``j``).

A join that is not the last of its merge point's chain is a *stage*: its loop writes the joined
coordinates and positions into FIFOs that the next join reads as one of its inputs (SAM's joiners
connected by streams).

A reduction's loop is a ``Reduce(Reg[T](0))(...) { ... }{_+_}`` (into the result's register when
it is the whole kernel), or, over a merge, an ``FSM`` adding into a register.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from dfopt.codegen.spatial.text import Block


@dataclass
class Env:
    """What a scope knows: its loop ``path``; the position of every operand level walked or located
    so far (``pos``), the fibre bounds read for the next loops (``bounds``), the presence flags of
    operands absent from some union (``present``), the conditions under which the iteration yields
    an output (``cond``), and values computed in it (``values``)."""

    path: tuple[str, ...] = ()
    pos: dict = field(default_factory=dict)
    bounds: dict = field(default_factory=dict)
    present: dict = field(default_factory=dict)
    cond: tuple[str, ...] = ()
    values: dict = field(default_factory=dict)

    def child(self, key: str) -> Env:
        """The scope of a loop inside this one. Presence flags and output conditions are its own:
        the loops below an absent operand's level are already empty for it."""
        return replace(self, path=self.path + (key,), pos=dict(self.pos), bounds=dict(self.bounds),
                       present={}, cond=(), values={})

    def flag(self, operand: str) -> str | None:
        flags = self.present.get(operand, ())
        return " && ".join(flags) if flags else None

    def mark_absent(self, leaves: tuple[str, ...], flag: str) -> None:
        for leaf in leaves:
            op = leaf.rsplit(".", 1)[0]
            self.present[op] = self.present.get(op, ()) + (flag,)


@dataclass
class Source:
    """A coordinate source of a loop: ``name`` (a leaf ``A.1``, a join, a range), pointers ``lo`` ..
    ``hi``; ``take(q)`` the coordinate at pointer ``q`` read once in order, ``peek(q)`` without
    consuming it, ``advance(en)`` the statements that consume the head when ``en`` holds (a FIFO's),
    ``at(q)`` the carried leaves' positions at pointer ``q``, ``ranked(r, en)`` at rank ``r`` of
    the fibre (a bit-vector scan's), ``dense`` when the pointer is the coordinate itself."""

    name: str
    lo: str
    hi: str
    take: Callable[[str], str]
    peek: Callable[[str], str]
    at: Callable[[str], dict]
    ranked: Callable[[str, str | None], dict]
    advance: Callable[[str], list[str]] = lambda en: []
    dense: bool = False
    walk_name: str | None = None     # the position's name when the loop walks the fibre's positions
    partial: bool = False            # a carried position may be -1 (absent from an earlier union)

    @property
    def length(self) -> str:
        return self.hi if self.lo == "0" else f"{self.hi} - {self.lo}"

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(self.at("0"))


@dataclass
class Frame:
    """An open loop: its body ``block`` and ``env``; ``close(value)`` ends it (the value of a
    reduction's iteration, None for a ``Foreach``)."""

    block: Block
    env: Env
    reduce: str | None = None        # 'reduce' (a Reduce block), 'fsm' (an FSM adding into `total`)
    total: str | None = None
    epilogue: list[str] = field(default_factory=list)

    def close(self, value: str | None) -> None:
        b = self.block
        if self.reduce == "reduce" and value is not None:
            if self.epilogue:
                b.line(f"val {self.total}_term = {value}")
                b.lines(self.epilogue)
                b.line(f"{self.total}_term")
            else:
                b.line(value)
            return
        if self.reduce == "fsm" and value is not None:
            b.line(f"{self.total} := {self.total}.value + {value}")
        b.lines(self.epilogue)


@dataclass(frozen=True)
class LoopSpec:
    """A loop to open: ``key`` (``// loop`` marker), ``index`` (the coordinate's name), ``dim``,
    ``par``, ``reduce`` (the name of the reduction's value, None for a ``Foreach``) and ``into``
    (the register a whole-kernel reduction adds into)."""

    key: str
    index: str
    dim: int
    par: int
    reduce: str | None = None
    into: str | None = None


def _reduce_head(spec: LoopSpec, counters: str, binder: str) -> tuple[str, str]:
    reg = spec.into or "Reg[T](0)"
    head = f"Reduce({reg})({counters}) {{ {binder} =>"
    return (head if spec.into else f"val {spec.reduce} = {head}"), "}{_+_}"


def _open(block: Block, env: Env, spec: LoopSpec, counters: str, binder: str, note: str) -> Frame:
    if spec.reduce is None and spec.into is None:
        body = block.block(f"Foreach({counters}) {{ {binder} =>", key=spec.key, note=note)
        return Frame(body, env.child(spec.key))
    head, tail = _reduce_head(spec, counters, binder)
    body = block.block(head, tail, key=spec.key, note=note)
    return Frame(body, env.child(spec.key), "reduce", spec.reduce or spec.into)


def walk(block: Block, env: Env, spec: LoopSpec, src: Source) -> Frame:
    """The loop over one source's coordinates."""
    if src.walk_name is not None:
        frame = _open(block, env, spec, f"{src.lo} until {src.hi} par {spec.par}", src.walk_name,
                      f"walk {src.name}")
        frame.block.line(f"val {spec.index} = {src.take(src.walk_name)}")
        frame.env.pos.update({_leaf_key(leaf): pos for leaf, pos in src.at(src.walk_name).items()})
        return frame
    if src.dense:
        frame = _open(block, env, spec, f"{spec.dim} by 1 par {spec.par}", spec.index, f"dense {src.name}")
        _bind_positions(frame, src.at(spec.index))
        return frame
    q = f"{spec.index}_q"
    frame = _open(block, env, spec, f"{src.length} by 1 par {spec.par}", q, f"entries of {src.name}")
    frame.block.line(f"val {spec.index} = {src.take(q)}")
    _bind_positions(frame, src.at(q))
    return frame


def _bind_positions(frame: Frame, positions: dict) -> None:
    for leaf, expr in positions.items():
        name = _pos_name(leaf)
        frame.block.line(f"val {name} = {expr}")
        frame.env.pos[_leaf_key(leaf)] = name


def _pos_name(leaf: str) -> str:
    return leaf.replace("#", "x").replace(".", "_").replace("@", "_at_") + "_p"


def _leaf_key(leaf: str) -> tuple[str, int]:
    op, level = leaf.rsplit(".", 1)
    return op, int(level)


def join(block: Block, env: Env, spec: LoopSpec, name: str, op: str, method: str, a: Source, b: Source,
         word_bits: int) -> Frame:
    """The loop of join ``name`` (``intersect`` | ``union``) of sources ``a`` and ``b`` by ``method``."""
    if method == "bitvector":
        return _bitvector(block, env, spec, name, op, a, b, word_bits)
    if method == "merge":
        return _merge(block, env, spec, name, op, a, b)
    return _dense(block, env, spec, name, op, a, b)


def _presence(frame: Frame, name: str, op: str, flags: tuple[str, str], sides: tuple[Source, Source]) -> None:
    """Record which inputs are present: an intersection yields only where both are, a union marks
    each side's operands absent where its flag is false; an operand an earlier union left out of a
    stage's output is absent where its position is -1."""
    for src in sides:
        if src.partial:
            for leaf in src.leaves:
                frame.env.mark_absent((leaf,), f"{_pos_name(leaf)} >= 0")
    if op == "intersect":
        both = f"{flags[0]} && {flags[1]}"
        frame.block.line(f"val {name}_both = {both}")
        frame.env.cond = frame.env.cond + (f"{name}_both",)
        for src in sides:
            frame.env.mark_absent(src.leaves, f"{name}_both")
        return
    frame.block.line(f"val {name}_any = {flags[0]} || {flags[1]}")
    frame.env.cond = frame.env.cond + (f"{name}_any",)
    for src, flag in zip(sides, flags):
        frame.env.mark_absent(src.leaves, flag)


def _bitvector(block: Block, env: Env, spec: LoopSpec, name: str, op: str, a: Source, b: Source,
               word_bits: int) -> Frame:
    words = math.ceil(spec.dim / word_bits)
    block.line(f"// {name}: bit vectors of {a.name} and {b.name}, {words} words of {word_bits} bits, "
               f"{'AND' if op == 'intersect' else 'OR'}, scanned")
    for side, src in (("a", a), ("b", b)):
        crd, bv = f"{name}_crd_{side}", f"{name}_bv_{side}"
        block.line(f"val {crd} = FIFO[Int](16)")
        block.line(f"val {bv} = FIFO[U{word_bits}](16)")
        q = f"{name}_q{side}"
        gen = block.block(f"Foreach({src.lo} until {src.hi} par {spec.par}) {{ {q} =>", key=spec.key,
                          note=f"{name} bit vector of {src.name}")
        gen.line(f"{crd}.enq({src.take(q)})")
        block.line(f"gen_bitvector(0, {spec.dim}, {src.length}, {crd}, {bv})")
    mode = "and" if op == "intersect" else "or"
    counters = f"Scan({spec.par}, {words}, \"{mode}\", {name}_bv_a, {name}_bv_b)"
    binder = f"case List({name}_ra, {name}_ja, {name}_rb, {spec.index})"
    frame = _open(block, env, spec, counters, binder, f"{name} bitvector")
    if op == "intersect":                       # the scan yields only the coordinates of both
        for src, r in ((a, f"{name}_ra"), (b, f"{name}_rb")):
            _bind_positions(frame, src.ranked(r, None))
        for src in (a, b):
            if src.partial:
                for leaf in src.leaves:
                    frame.env.mark_absent((leaf,), f"{_pos_name(leaf)} >= 0")
        return frame
    flags = (f"{name}_ha", f"{name}_hb")
    for src, r, h in ((a, f"{name}_ra", flags[0]), (b, f"{name}_rb", flags[1])):
        frame.block.line(f"val {h} = {r} >= 0")
        _bind_positions(frame, src.ranked(r, h))
    _presence(frame, name, op, flags, (a, b))
    return frame


def _finger(block: Block, name: str, side: str, src: Source) -> str:
    """A finger register at the source's first pointer."""
    reg = f"{name}_f{side}"
    block.line(f"val {reg} = Reg[Int](0)")
    block.line(f"{reg} := {src.lo}")
    return reg


def _at_finger(frame: Frame, src: Source, reg: str, flag: str) -> None:
    """Bind the source's positions at its finger ``reg``, which advances (and the source with it)
    where ``flag`` says the source is at the loop's coordinate."""
    _bind_positions(frame, src.at(reg + ".value"))
    frame.epilogue.append(f"{reg} := {reg}.value + mux({flag}, 1, 0)")
    frame.epilogue.extend(src.advance(flag))


def _merge(block: Block, env: Env, spec: LoopSpec, name: str, op: str, a: Source, b: Source) -> Frame:
    block.line(f"// {name}: two-finger merge of {a.name} and {b.name}, one step a cycle")
    fa, fb = _finger(block, name, "a", a), _finger(block, name, "b", b)
    total = spec.into or spec.reduce
    if spec.reduce is not None and spec.into is None:
        block.line(f"val {total} = Reg[T](0)")
    if total is not None:
        block.line(f"{total} := 0")
    more = "||" if op == "union" else "&&"
    state = f"{name}_s"
    body = block.block(f"FSM(0)({state} => {fa}.value < {a.hi} {more} {fb}.value < {b.hi}) {{ {state} =>",
                       f"}}{{ {state} => {state} + 1 }}", key=spec.key, note=f"{name} merge")
    frame = Frame(body, env.child(spec.key), "fsm" if total else None, total)
    heads = []
    for side, src, f in (("a", a, fa), ("b", b, fb)):
        head = f"{name}_j{side}"
        body.line(f"val {head} = mux({f}.value < {src.hi}, {src.peek(f + '.value')}, {spec.dim})")
        heads.append(head)
    body.line(f"val {spec.index} = min({heads[0]}, {heads[1]})")
    flags = []
    for side, src, f, head in (("a", a, fa, heads[0]), ("b", b, fb, heads[1])):
        flag = f"{name}_h{side}"
        body.line(f"val {flag} = {head} == {spec.index}")
        flags.append(flag)
        _at_finger(frame, src, f, flag)
    _presence(frame, name, op, (flags[0], flags[1]), (a, b))
    return frame


def _dense(block: Block, env: Env, spec: LoopSpec, name: str, op: str, a: Source, b: Source) -> Frame:
    block.line(f"// {name}: dense iteration over {spec.index} (0 until {spec.dim}), each input found by a scan")
    regs = {side: _finger(block, name, side, src) for side, src in zip("ab", (a, b)) if not src.dense}
    frame = _open(block, env, spec, f"{spec.dim} by 1 par {spec.par}", spec.index, f"{name} dense")
    flags = []
    for side, src in zip("ab", (a, b)):
        if src.dense:
            flags.append("true")
            _bind_positions(frame, src.at(spec.index))
            continue
        f, flag = regs[side], f"{name}_h{side}"
        frame.block.line(f"val {flag} = {f}.value < {src.hi} && {src.peek(f + '.value')} == {spec.index}")
        flags.append(flag)
        _at_finger(frame, src, f, flag)
    _presence(frame, name, op, (flags[0], flags[1]), (a, b))
    return frame

