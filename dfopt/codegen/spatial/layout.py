"""Where things sit in the Spatial program of a sparse statement: the loop paths of its nests, of
every array's accesses and of every memory's declaration. The emitter writes by these rules and the
checker reads the program back against them.

A *path* names a point of the loop nest by the keys of its enclosing loops, outermost first: the
main nest's loops are keyed by their index (``("i", "k", "j")``); the loops of what reads an
accumulator's workspace (its *consumer*) by the merge-point key ``"<index>@<workspace>"``, after the
loops the two share (``("i", "j@row")`` in Gustavson's SpGEMM). Depths are the concrete statement's:
depth ``d`` is inside the first ``d`` main loops; a consumer's array at depth ``d`` sits inside the
shared loops and the held indices whose main loop is among the first ``d`` (as the access facts
count them, :mod:`dfopt.sim.sparse.facts`).

Declarations, by memory (docs/sparse.md, the decisions):

- ``sram`` / ``sparse_sram`` — at the binding's depth, with its bulk transfer there. An array both
  the producer and the consumer of a workspace touch is allocated no deeper than the loops they
  share (a copy inside one of them is out of the other's reach); its segment is the one at that
  depth;
- ``fifo`` / ``reg`` — in the scope that encloses the loop accessing it (a FIFO is filled there by
  a stream from DRAM, or drained there into DRAM);
- ``dram`` — none on chip: the array is read or written in place.

>>> from dfopt.ir.sparse.concrete import concretize
>>> from dfopt.ir.sparse.formats import named
>>> from dfopt.ir.sparse.notation import parse
>>> c = concretize(parse("C(i,j) = A(i,k) * B(k,j)"), {t: named("csr", 2) for t in "ABC"},
...                {"i": 4, "j": 4, "k": 4}, reorder=["i", "k", "j"], workspaces={"k": "sparse"})
>>> lay = Layout.of(c)
>>> lay.main_path(3), lay.consumer_path(3), lay.loop_keys()
(('i', 'k', 'j'), ('i', 'j@w_k'), ['i', 'k', 'j', 'j@w_k'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Path = tuple[str, ...]

MAIN, CONSUMER = "main", "consumer"
#: memories that hold an on-chip copy at an allocation depth
COPIES = ("sram", "sparse_sram")
#: a FIFO's depth in words (Stardust's)
FIFO_DEPTH = 16


@dataclass(frozen=True)
class Layout:
    """The loops of a concrete statement: ``loops`` (main, outermost first), ``outer`` (the loops
    above the accumulator, shared with its consumer), ``holds`` (the consumer's own loops) and
    ``workspace`` (the accumulator's name; None without one)."""

    loops: tuple[str, ...]
    outer: tuple[str, ...] = ()
    holds: tuple[str, ...] = ()
    workspace: str | None = None
    result: str = ""

    @classmethod
    def of(cls, concrete: Any) -> Layout:
        if not concrete.accumulators:
            return cls(tuple(concrete.loops), result=concrete.result)
        acc = concrete.accumulators[0]
        return cls(tuple(concrete.loops), tuple(acc.outer), tuple(acc.holds), acc.name, concrete.result)

    @property
    def base(self) -> int:
        """Depth of the loops the producer and the consumer share."""
        return len(self.outer)

    def depth(self, index: str | None) -> int:
        """The main depth of a loop index (None: the root, 0)."""
        return 0 if index is None else self.loops.index(index) + 1

    def key(self, index: str, nest: str) -> str:
        """A loop's key: its index, or ``index@workspace`` for a consumer's own loop."""
        return f"{index}@{self.workspace}" if nest == CONSUMER and index in self.holds else index

    def main_path(self, depth: int) -> Path:
        return self.loops[:depth]

    def consumer_path(self, depth: int) -> Path:
        """The consumer's scope standing for main depth ``depth``."""
        if depth <= self.base or self.workspace is None:
            return self.loops[:depth]
        own = tuple(self.key(h, CONSUMER) for h in self.holds if self.depth(h) <= depth)
        return self.outer + own

    def path(self, nest: str, depth: int) -> Path:
        return self.consumer_path(depth) if nest == CONSUMER else self.main_path(depth)

    def loop_keys(self) -> list[str]:
        """Every loop's key in program order: the main loops, then the consumer's."""
        return list(self.loops) + [self.key(h, CONSUMER) for h in self.holds]

    def parent(self, key: str) -> Path:
        """The path of the scope a loop opens in."""
        if "@" in key:
            return self.outer + tuple(self.key(h, CONSUMER) for h in self.holds[:self.holds.index(key.split("@")[0])])
        return self.loops[:self.loops.index(key)]

    def nests(self, tensor: str, operands: Any) -> tuple[str, ...]:
        """The nests that touch a tensor's arrays: a workspace both, the result the consumer's when
        there is one, an operand those of its accesses."""
        if self.workspace is None:
            return (MAIN,)
        if tensor == self.workspace:
            return (MAIN, CONSUMER)
        if tensor == self.result:
            return (CONSUMER,)
        found = {MAIN if op.nest == "main" else CONSUMER for op in operands if op.tensor == tensor}
        return tuple(n for n in (MAIN, CONSUMER) if n in found) or (MAIN,)


def common_prefix(paths: list[Path]) -> Path:
    out: list[str] = []
    for keys in zip(*paths):
        if any(k != keys[0] for k in keys):
            break
        out.append(keys[0])
    return tuple(out)


@dataclass(frozen=True)
class Placement:
    """Where an array is accessed and declared: ``access`` (the paths of the loops that access it),
    ``decl`` (the declaration's path; None for ``dram``), ``depth`` (the allocation depth a copy's
    segment is taken at), ``size`` (words of the declared memory; None for ``dram`` and ``reg``)."""

    access: tuple[Path, ...]
    decl: Path | None
    depth: int
    size: int | None


def placement(layout: Layout, facts: Any, binding: Any, nests: tuple[str, ...]) -> Placement:
    """The :class:`Placement` of an array with these access facts and this binding."""
    top = layout.depth(facts.loop)
    access = tuple(dict.fromkeys(layout.path(n, top) for n in nests))
    memory = binding.memory
    if memory == "dram":
        return Placement(access, None, top, None)
    if memory in COPIES:
        depth = min(binding.depth, top)
        if len(nests) > 1:
            depth = min(depth, layout.base)
        decl = layout.path(nests[0], depth) if len(nests) == 1 else layout.main_path(depth)
        return Placement(access, decl, depth, max(1, int(facts.segments[depth][0])))
    decl = common_prefix(list(access)) if len(access) > 1 else access[0][:-1]
    return Placement(access, decl, top, FIFO_DEPTH if memory == "fifo" else None)


def loop_par(layout: Layout, key: str, vloop: str | None, inner: int, outer: int) -> int:
    """A loop's parallelisation: the inner factor on the vectorised loop (its index, in either
    nest), times the outer factor on the outermost loop of a top-level nest (the main nest's first
    loop, and the consumer's first when it shares no loop with the producer).

    >>> loop_par(Layout(("i", "j")), "j", "j", 16, 4), loop_par(Layout(("i", "j")), "i", "j", 16, 4)
    (16, 4)
    """
    index = key.split("@")[0]
    par = inner if index == vloop else 1
    top = key == layout.loops[0] or ("@" in key and not layout.outer and index == layout.holds[0])
    return par * outer if top else par
