"""Stardust's memory rules, re-derived from how the simulated graph accesses each array.

An array's access facts (:class:`dfopt.sim.sparse.AccessFacts`: role, loop, in-order, gather,
segments) decide where it may live:

- ``reg``: only a scalar (at most one word);
- ``fifo``: only a read-once, in-order traversal (or an in-order write) at one loop — a FIFO
  cannot be indexed;
- ``dram``: an off-chip array read or written in place (no accumulation: a read-modify-write
  per update);
- ``sram``: any read or write; an accumulation only into a dense workspace (a bank-parallel
  read-modify-write at a computed address);
- ``sparse_sram``: anything, the one memory for atomic accumulation into a sparse result.

A copy in ``sram`` / ``sparse_sram`` is allocated at a loop depth from 0 (before every loop) to
the depth of the loop that reads it and holds the largest segment one iteration of the enclosing
loops touches, in whole PMUs; a gathered array needs at least as many banks as lanes read it.

>>> rule_reason("fifo", role="read", in_order=False, length=8, region="off_chip", ws_format=None)
'a FIFO serves only a read-once, in-order traversal; this array is read out of order or more than once'
"""

from __future__ import annotations

import math
from typing import Any

from dfopt.models.sparse.decision import ON_CHIP_COPIES


def rule_reason(memory: str, *, role: str, in_order: bool, length: int, region: str,
                ws_format: str | None, bulk: bool = False) -> str | None:
    """Why ``memory`` cannot hold an array with these facts, or None when it can."""
    if bulk and memory not in ON_CHIP_COPIES:
        return "a bulk_load / bulk_store command maps this loop's transfers onto bulk copies into SRAM"
    if memory == "reg" and length > 1:
        return f"a register holds a scalar; this array has {length} words"
    if memory == "fifo" and (role == "accumulate" or not in_order):
        return ("a FIFO serves only a read-once, in-order traversal; this array is read out of order or more "
                "than once") if role != "accumulate" else "a FIFO cannot accumulate (it cannot be indexed)"
    if memory == "dram" and region != "off_chip":
        return "the array lives on chip (region on_chip); it has no DRAM copy"
    if memory == "dram" and role == "accumulate":
        return "accumulation needs an on-chip memory with read-modify-write (sram for a dense workspace, " \
               "sparse_sram for a sparse one)"
    if memory == "sram" and role == "accumulate" and ws_format == "sparse":
        return "atomic accumulation into a sparse workspace needs sparse_sram"
    return None


def access_depth(loop: str | None, loops: tuple) -> int:
    """The depth of the loop that accesses an array (0: the root, before every loop)."""
    return 0 if loop is None else loops.index(loop) + 1


def lanes_reading(loop: str | None, vloop: str | None, inner_par: int) -> int:
    """The lanes that access an array at once: the inner factor at the vectorised loop ``vloop``
    (the innermost unless an ``accelerate`` command names another), else 1."""
    return inner_par if loop is not None and loop == vloop else 1


def min_pmus(segment_words: int, gather: bool, lanes: int, pmu_words: int, banks: int) -> int:
    """The fewest PMUs that hold ``segment_words`` and, for a gather, give ``lanes`` banks.

    >>> min_pmus(100_000, False, 16, 65536, 16), min_pmus(10, True, 32, 65536, 16)
    (2, 2)
    """
    need = max(1, math.ceil(segment_words / pmu_words))
    if gather:
        need = max(need, math.ceil(lanes / banks))
    return need


def binding_issues(name: str, b: Any, facts: Any, loops: tuple, region: str, ws_format: str | None,
                   inner_par: int, pmu_words: int, banks: int, vloop: str | None = None,
                   bulk: bool = False) -> list[str]:
    """Every rule ``b`` (an :class:`~.decision.ArrayBinding`) breaks for array ``name``; ``bulk``:
    a ``bulk_load`` / ``bulk_store`` command maps its loop's transfers onto bulk copies."""
    reason = rule_reason(b.memory, role=facts.role, in_order=facts.in_order, length=facts.length,
                         region=region, ws_format=ws_format, bulk=bulk)
    issues = [f"array {name!r} in {b.memory}: {reason}"] if reason else []
    top = access_depth(facts.loop, loops)
    if b.memory in ON_CHIP_COPIES:
        if not 0 <= b.depth <= top:
            issues.append(f"array {name!r}: allocation depth {b.depth} is outside 0..{top} (the loop that reads it)")
            return issues
        seg = facts.segments[b.depth][0]
        lanes = lanes_reading(facts.loop, loops[-1] if vloop is None and loops else vloop, inner_par)
        need = min_pmus(seg, facts.gather, lanes, pmu_words, banks)
        if b.pmus < need:
            why = f"{seg} words" + (f" gathered by {lanes} lanes" if facts.gather else "")
            issues.append(f"array {name!r}: {b.pmus} PMUs hold {b.pmus * pmu_words} words in {b.pmus * banks} banks; "
                          f"its segment at depth {b.depth} needs {need} ({why})")
    elif b.pmus:
        issues.append(f"array {name!r} in {b.memory} takes no PMUs, got {b.pmus}")
    elif b.depth != top:
        issues.append(f"array {name!r} in {b.memory} is accessed at depth {top}, got depth {b.depth}")
    return issues
