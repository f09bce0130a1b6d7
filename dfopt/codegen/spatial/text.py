"""Scala text of a Spatial program: identifiers for dfopt's names and a small tree of blocks that
renders with two-space indentation.

>>> ident("A.1.crd"), ident("A#2.1.pos"), dram("x.vals"), object_name("spmv-karate")
('A_1_crd', 'Ax2_1_pos', 'x_vals_dram', 'SpmvKarate')
>>> top = Block("Accel {")
>>> loop = top.block("Foreach(4 by 1 par 2) { i =>", key="i")
>>> loop.line("y(i) = x(i)")
>>> print("\\n".join(top.render()))
Accel {
  Foreach(4 by 1 par 2) { i =>  // loop i
    y(i) = x(i)
  }
}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

INDENT = "  "


def ident(name: str) -> str:
    """A Scala identifier for an array, operand or join name (``.`` -> ``_``, ``#`` -> ``x``)."""
    return name.replace("#", "x").replace(".", "_").replace("@", "_at_")


def dram(name: str) -> str:
    """The host-side DRAM of an array."""
    return f"{ident(name)}_dram"


def object_name(name: str) -> str:
    """The app object's name: the words of ``name`` capitalised (``spmv-karate`` -> ``SpmvKarate``)."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+", name) if w]
    out = "".join(w[:1].upper() + w[1:] for w in words) or "Kernel"
    return out if out[0].isalpha() else f"K{out}"


@dataclass
class Block:
    """A block of Scala: ``head`` (the line that opens it, ending with ``{`` or ``=>``), its body of
    lines and blocks, and ``tail`` (the closing line). ``key`` is the loop key of a loop's block; it
    is written as a ``// loop <key>`` comment on the head, with ``note`` after it."""

    head: str
    tail: str = "}"
    key: str | None = None
    note: str = ""
    body: list = field(default_factory=list)

    def line(self, text: str) -> None:
        self.body.append(text)

    def lines(self, texts: list[str]) -> None:
        self.body.extend(texts)

    def block(self, head: str, tail: str = "}", key: str | None = None, note: str = "") -> Block:
        b = Block(head, tail, key, note)
        self.body.append(b)
        return b

    def render(self, depth: int = 0) -> list[str]:
        pad = INDENT * depth
        head = self.head
        if self.key is not None:
            head += f"  // loop {self.key}" + (f": {self.note}" if self.note else "")
        out = [pad + head]
        for item in self.body:
            if isinstance(item, Block):
                out.extend(item.render(depth + 1))
            else:
                out.append(INDENT * (depth + 1) + item if item else "")
        out.append(pad + self.tail)
        return out


# --- index arithmetic, constants folded ----------------------------------------------------------

def mul(a: str, n: int | str) -> str:
    """``a * n``: ``mul("i", 8)``, ``mul("1", 34) == "34"``, ``mul("p + 1", 2) == "(p + 1) * 2"``."""
    n = str(n)
    if a == "0" or n == "0":
        return "0"
    if a.isdigit() and n.isdigit():
        return str(int(a) * int(n))
    if a == "1":
        return n
    return a if n == "1" else f"{paren(a)} * {n}"


def add(a: str, b: str) -> str:
    """``a + b``: ``add("34", "1") == "35"``, ``add("0", "p") == "p"``."""
    if a.isdigit() and b.isdigit():
        return str(int(a) + int(b))
    if a == "0":
        return b
    return a if b == "0" else f"{a} + {b}"


def paren(e: str) -> str:
    return f"({e})" if any(ch in e for ch in " +-") and not e.endswith(")") else e


def conj(conds: tuple[str, ...] | list[str]) -> str | None:
    """The conjunction of conditions (``true`` dropped), None when there is none."""
    kept = [c for c in conds if c and c != "true"]
    return " && ".join(kept) if kept else None
