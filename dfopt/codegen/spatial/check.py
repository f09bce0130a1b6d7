"""The Spatial program read back against the design, with no Spatial compiler: the text's brace
nesting gives every line's loop path (a loop is a block whose head carries ``// loop <key>``),
and the faults are listed.

Checked:

- **memories** — every array of the run declared exactly once on chip with its binding's memory
  (none when bound to ``dram``), at the path the binding's depth gives (:mod:`.layout`), an on-chip
  copy sized by its segment and a FIFO by Stardust's 16 words; its bulk transfer (``load`` /
  ``store``, ``stream_load_vec`` / ``stream_store_vec``) beside the declaration; every use inside
  the declaring block, in the loops that access the array (a FIFO's first element also where it is
  declared), and at least one use in each of them; a ``dram`` array read or written in place only
  there; every declared memory used;
- **DRAM** — one ``DRAM`` per off-chip array, sized from the stored tensors, ``setMem`` of every
  operand's and ``getMem`` of every result's;
- **loops** — every loop of the concrete statement present, opened in its parent's scope (the
  loop order), with the design's ``par`` (inner factor on the vectorised loop, outer on the
  outermost); reductions as ``Reduce`` (or a merge's ``FSM``), free indices never ``Reduce``;
- **joins** — every join's loop by the design's method: bit vectors (two ``gen_bitvector`` and a
  ``Scan`` with ``and`` / ``or``), a merge ``FSM``, or a dense ``Foreach`` over the dimension.

>>> import dfopt
>>> from dfopt.api import make_options
>>> from dfopt.models.sparse import prepare
>>> from dfopt.codegen.spatial.program import spatial_program
>>> inst = dfopt.load("instances/sparse/spmv-karate.json")
>>> data = prepare(inst, make_options(inst))
>>> text = spatial_program(data, data.baseline, "spmv-karate")
>>> check_program(text, data, data.baseline)
[]
>>> check_program(text.replace("val x_vals = SRAM[T](34)", ""), data, data.baseline)[0]
"array 'x.vals': declared 0 times on chip, expected once as SRAM (binding sram)"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dfopt.codegen.spatial.layout import COPIES, FIFO_DEPTH, Layout, Placement, loop_par, placement
from dfopt.codegen.spatial.memory import SPATIAL
from dfopt.codegen.spatial.text import ident

_DECL = re.compile(r"^val (\w+) = (SRAM|SparseSRAM|FIFO|Reg|DRAM)\[(\w+)\]\(([^)]*)\)")
_MARK = re.compile(r"^\s*loop (\S+?)(?::\s*(.*))?\s*$")
_TRANSFERS = (
    ("load", re.compile(r"^(\w+) load (\w+)_dram\(")),
    ("store", re.compile(r"^(\w+)_dram\(.*\) store (\w+)$")),
    ("stream_in", re.compile(r"^(\w+)_dram stream_load_vec\(.*, (\w+)\)$")),
    ("stream_out", re.compile(r"^(\w+)_dram stream_store_vec\(.*?, (\w+), ")),
    ("reg_in", re.compile(r"^(\w+) := (\w+)_dram\(0\)$")),
    ("reg_out", re.compile(r"^(\w+)_dram\(0\) = (\w+)\.value$")),
)
#: the transfer that fills (reads) or drains (writes) each memory of an off-chip array
_EXPECTED = {("sram", "read"): "load", ("sparse_sram", "read"): "load", ("sram", "write"): "store",
             ("sparse_sram", "write"): "store", ("fifo", "read"): "stream_in", ("fifo", "write"): "stream_out",
             ("reg", "read"): "reg_in", ("reg", "write"): "reg_out"}


@dataclass(frozen=True)
class Line:
    """One line of the program: its code (comment stripped), loop ``path``, enclosing ``blocks``
    (ids, outermost first), whether it is inside ``Accel``, and for a loop's head its ``key`` and
    ``note``."""

    no: int
    code: str
    path: tuple[str, ...]
    blocks: tuple[int, ...]
    accel: bool
    key: str | None = None
    note: str = ""


def parse(text: str) -> list[Line]:
    """Every line with its place in the brace nesting."""
    out: list[Line] = []
    stack: list[tuple[int, str | None, bool]] = []
    ids = 0
    for no, raw in enumerate(text.splitlines(), start=1):
        code, _, comment = raw.partition("//")
        code = code.strip()
        mark = _MARK.match(comment) if comment else None
        i = 0
        while i < len(code) and code[i] == "}":
            if stack:
                stack.pop()
            i += 1
        key, note = (mark.group(1), mark.group(2) or "") if mark else (None, "")
        out.append(Line(no, code, tuple(k for _, k, _ in stack if k), tuple(b for b, _, _ in stack),
                        any(a for _, _, a in stack), key, note))
        first = True
        for ch in code[i:]:
            if ch == "{":
                ids += 1
                stack.append((ids, key if first else None, code.startswith("Accel")))
                first = False
            elif ch == "}" and stack:
                stack.pop()
    return out


def _transfer(code: str) -> tuple[str, str] | None:
    for kind, pattern in _TRANSFERS:
        m = pattern.match(code)
        if m and m.group(1) == m.group(2):
            return m.group(1), kind
    return None


class _Program:
    def __init__(self, text: str):
        self.lines = parse(text)
        self.accel = [ln for ln in self.lines if ln.accel]
        self.heads = [ln for ln in self.lines if ln.key is not None]
        self.decls: dict[str, list[tuple[Line, re.Match]]] = {}
        for ln in self.lines:
            m = _DECL.match(ln.code)
            if m:
                self.decls.setdefault(m.group(1), []).append((ln, m))
        self.transfers = {ln.no: _transfer(ln.code) for ln in self.accel}

    def uses(self, name: str) -> list[Line]:
        """Lines of ``Accel`` that use ``name`` (its declaration and its transfers excluded)."""
        word = re.compile(rf"\b{re.escape(name)}\b")
        out = []
        for ln in self.accel:
            decl = _DECL.match(ln.code)
            if not word.search(ln.code) or (decl is not None and decl.group(1) == name):
                continue
            t = self.transfers.get(ln.no)
            if t is not None and t[0] == name:
                continue
            out.append(ln)
        return out

    def dram_uses(self, name: str) -> list[Line]:
        """In-place accesses of ``<name>_dram`` in ``Accel`` (transfers and windows are descriptors)."""
        ref = re.compile(rf"\b{re.escape(name)}_dram\(")
        return [ln for ln in self.accel if ref.search(ln.code) and self.transfers.get(ln.no) is None
                and not re.match(r"^val \w+_win = ", ln.code)]


def check_program(text: str, data: Any, design: Any) -> list[str]:
    """Every fault of the Spatial program ``text`` against prepared ``data`` and ``design`` (see
    the module docstring); empty when it is consistent."""
    prog = _Program(text)
    layout = Layout.of(data.concrete)
    faults: list[str] = []
    if not re.search(r"@spatial object \w+ extends SpatialApp", text):
        faults.append("no '@spatial object <Name> extends SpatialApp'")
    if sum(1 for ln in prog.lines if ln.code == "Accel {") != 1:
        faults.append("expected one 'Accel {' block")
    for name, facts in data.sim.arrays.items():
        b = design.binding.get(name)
        if b is None:
            faults.append(f"array {name!r}: the design does not bind it")
            continue
        nests = layout.nests(facts.tensor, data.concrete.operands)
        pl = placement(layout, facts, b, nests)
        if b.memory in COPIES and b.depth > layout.depth(facts.loop):
            faults.append(f"array {name!r}: binding depth {b.depth} is below the loop that accesses it "
                          f"(depth {layout.depth(facts.loop)})")
        faults += _array_faults(prog, data, name, b.memory, facts, pl)
    faults += _dram_faults(prog, data)
    faults += _unused(prog)
    faults += _loop_faults(prog, data, design, layout)
    faults += _join_faults(prog, data, design)
    return faults


def _array_faults(prog: _Program, data: Any, name: str, memory: str, facts: Any, pl: Placement) -> list[str]:
    x = ident(name)
    decls = [(ln, m) for ln, m in prog.decls.get(x, []) if ln.accel]
    want = SPATIAL[memory]
    if memory == "dram":
        faults = [f"array {name!r}: bound to dram but declared on chip as {m.group(2)}" for _, m in decls]
        uses = prog.dram_uses(x)
        return faults + _use_faults(name, uses, pl, None, memory)
    if len(decls) != 1:
        return [f"array {name!r}: declared {len(decls)} times on chip, expected once as {want} (binding {memory})"]
    ln, m = decls[0]
    faults = []
    if m.group(2) != want:
        faults.append(f"array {name!r}: declared as {m.group(2)}, its binding is {memory} ({want})")
    if ln.path != pl.decl:
        faults.append(f"array {name!r}: declared in loops ({', '.join(ln.path)}), its binding puts it in "
                      f"({', '.join(pl.decl or ())})")
    size = pl.size if memory in COPIES else FIFO_DEPTH if memory == "fifo" else None
    if size is not None and m.group(4) != str(size):
        faults.append(f"array {name!r}: {m.group(2)} of {m.group(4)} words, expected {size}")
    uses = prog.uses(x)
    outside = [u for u in uses if u.blocks[:len(ln.blocks)] != ln.blocks or u.no < ln.no]
    if outside:
        faults.append(f"array {name!r}: used outside the block that declares it (line {outside[0].no})")
    faults += _use_faults(name, uses, pl, ln.path if memory == "fifo" else None, memory)
    if data.regions[name] == "off_chip":
        kind = _EXPECTED.get((memory, "read" if facts.role == "read" else "write"))
        found = [t for t in prog.lines if t.accel and prog.transfers.get(t.no) == (x, kind)]
        if kind is not None and (len(found) != 1 or found[0].blocks != ln.blocks):
            faults.append(f"array {name!r}: expected one {kind} transfer beside its declaration, found {len(found)}")
    return faults


def _use_faults(name: str, uses: list[Line], pl: Placement, also: tuple | None, memory: str) -> list[str]:
    faults = []
    allowed = set(pl.access) | ({also} if also is not None else set())
    wrong = [u for u in uses if u.path not in allowed]
    if wrong:
        faults.append(f"array {name!r} ({memory}): used in loops ({', '.join(wrong[0].path)}) at line {wrong[0].no}; "
                      f"it is accessed in {' and '.join('(' + ', '.join(p) + ')' for p in pl.access)}")
    for path in pl.access:
        if not any(u.path == path for u in uses):
            faults.append(f"array {name!r} ({memory}): never used in loops ({', '.join(path)}), which access it")
    return faults


def _dram_faults(prog: _Program, data: Any) -> list[str]:
    from dfopt.codegen.spatial.program import dram_words

    faults = []
    result = data.statement.result
    for name, facts in data.sim.arrays.items():
        x = ident(name)
        decls = [(ln, m) for ln, m in prog.decls.get(f"{x}_dram", []) if not ln.accel]
        off = data.regions[name] == "off_chip"
        if not off:
            if decls:
                faults.append(f"array {name!r} is on chip (no DRAM), but {x}_dram is declared")
            continue
        if len(decls) != 1:
            faults.append(f"array {name!r}: {len(decls)} DRAM declarations, expected one")
            continue
        words = dram_words(data, name)
        if decls[0][1].group(4) != str(words):
            faults.append(f"array {name!r}: DRAM of {decls[0][1].group(4)} words, the stored array has {words}")
        if facts.tensor == result and not any(f"getMem({x}_dram)" in ln.code for ln in prog.lines):
            faults.append(f"array {name!r}: the result's array is never read back (getMem)")
        if facts.tensor != result and facts.role == "read" and \
                not any(ln.code.startswith(f"setMem({x}_dram,") for ln in prog.lines):
            faults.append(f"array {name!r}: the operand's array is never set (setMem)")
    return faults


def _unused(prog: _Program) -> list[str]:
    faults = []
    for name, decls in prog.decls.items():
        for ln, m in decls:
            transferred = any((prog.transfers.get(t.no) or ("",))[0] == name for t in prog.accel)
            if ln.accel and not prog.uses(name) and not transferred:
                faults.append(f"memory {name!r} ({m.group(2)}) is declared at line {ln.no} but never used")
    return faults


def _loop_faults(prog: _Program, data: Any, design: Any, layout: Layout) -> list[str]:
    faults = []
    keys = layout.loop_keys()
    c = data.concrete
    n_foreach = layout.depth(layout.holds[-1]) if layout.holds else len(c.assignment.lhs.indices)
    for head in prog.heads:
        if head.key not in keys:
            faults.append(f"line {head.no}: loop {head.key!r} is not a loop of the statement ({', '.join(keys)})")
    for key in keys:
        heads = [h for h in prog.heads if h.key == key]
        if not heads:
            faults.append(f"loop {key!r} is missing")
            continue
        for h in heads:
            if h.path != layout.parent(key):
                faults.append(f"loop {key!r} opens in loops ({', '.join(h.path)}), expected "
                              f"({', '.join(layout.parent(key))})")
            want = loop_par(layout, key, data.vloop, design.inner_par, design.outer_par)
            got = _par_of(h.code)
            if got is not None and got != want:
                faults.append(f"loop {key!r} (line {h.no}): par {got}, the design gives {want}")
        reduction = "@" not in key and layout.depth(key) > n_foreach
        kinds = {h.code.split("(")[0].replace("val ", "").split(" = ")[-1] for h in heads}
        if reduction and not kinds & {"Reduce", "FSM"}:
            faults.append(f"loop {key!r} is a reduction but no Reduce (or merge FSM) runs it")
        if not reduction and "Reduce" in kinds:
            faults.append(f"loop {key!r} runs a free index but is a Reduce")
    return faults


def _par_of(code: str) -> int | None:
    if code.startswith("FSM("):
        return None
    m = re.search(r"Scan\((\d+),", code) or re.search(r" par (\d+)\)", code)
    return int(m.group(1)) if m else None


def _join_faults(prog: _Program, data: Any, design: Any) -> list[str]:
    faults = []
    c = data.concrete
    where = {j.name: (mp, j) for mp in c.merges.values() for j in mp.joins}
    for name in sorted(set(data.sim.joiners) | set(design.coiteration)):
        method = design.coiteration.get(name)
        if name not in where:
            faults.append(f"join {name!r} is not a join of the statement")
            continue
        mp, j = where[name]
        if method is None:
            faults.append(f"join {name!r}: the design gives no co-iteration method")
            continue
        heads = [h for h in prog.heads if h.note.split(" ")[:2] == [name, method]]
        others = [h for h in prog.heads if h.note.split(" ")[0] == name and h.note.split(" ")[1] != method
                  and h.note.split(" ")[1] != "bit"]
        if others:
            faults.append(f"join {name!r}: line {others[0].no} co-iterates it by {others[0].note.split(' ')[1]}, "
                          f"the design says {method}")
        if len(heads) != 1:
            faults.append(f"join {name!r}: {len(heads)} loops co-iterate it by {method}, expected one")
            continue
        h = heads[0]
        if h.key != mp.key:
            faults.append(f"join {name!r}: its loop is {h.key!r}, expected {mp.key!r}")
        faults += _pattern_faults(prog, name, method, j.op, c.dims[j.index], h)
    return faults


def _pattern_faults(prog: _Program, name: str, method: str, op: str, dim: int, head: Line) -> list[str]:
    if method == "bitvector":
        mode = "and" if op == "intersect" else "or"
        gens = [ln for ln in prog.accel if ln.code.startswith("gen_bitvector(")
                and re.search(rf"\b{name}_bv_[ab]\)$", ln.code)]
        faults = [] if len(gens) == 2 else [f"join {name!r}: {len(gens)} gen_bitvector calls, expected one per input"]
        if 'Scan(' not in head.code or f'"{mode}"' not in head.code:
            faults.append(f"join {name!r}: its loop is not a Scan over the {mode.upper()} of the bit vectors")
        return faults
    if method == "merge":
        return [] if head.code.startswith("FSM(") else [f"join {name!r}: its merge is not an FSM"]
    if f"({dim} by 1" not in head.code:
        return [f"join {name!r}: its dense iteration does not run over the dimension ({dim} by 1)"]
    return []
