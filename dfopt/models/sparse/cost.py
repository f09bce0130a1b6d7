"""The cycle and DRAM estimate of a bound, scheduled sparse kernel (docs/sparse.md, the cost model).

Everything is counted from one token-level run of the kernel's primitive graph on its data
(:class:`dfopt.sim.sparse.SimResult`): the work of every primitive, the fibre statistics of every
join, the access trace of every array. The estimate of a design:

- **compute**: the dataflow graph is a pipeline, so its time is its busiest primitive's:
  ``ceil(work / par)`` where ``par`` is the outer factor, times the inner (lane) factor for a
  primitive at the vectorised loop (the innermost, unless an ``accelerate`` command names
  another) — except a two-finger merge, which advances one step a cycle.
  A join costs, by method: ``merge`` its exact two-finger steps; ``bitvector`` the largest of its
  inputs' coordinates (packed into words), its words (``fibers x ceil(dim / word_bits)``) and
  its output coordinates; ``dense`` ``fibers x dim``;
- **DRAM**: words moved — an in-place or FIFO read or write moves its accesses, a gather from DRAM
  a burst per access, an SRAM copy at depth d its segments' total at d — over the bandwidth;
- **bank conflicts** of gathers from SRAM (served ``lanes`` at a time by address modulo banks);
- cycles = max(compute, DRAM) + conflicts + one DRAM latency.

>>> join_work(_Join(fibers=2, dim=64, sizes=(3, 5), inter=2, union=6, merge_steps=6, op="union"), "dense", 32)
128
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dfopt.models.sparse.decision import ON_CHIP_COPIES
from dfopt.models.sparse.rules import lanes_reading

#: the primitives that make up a join: costed by :func:`join_work`, not by their own counts
JOIN_KINDS = frozenset({"joiner", "bv_gen", "bv_join", "bv_scan", "dense_iter"})


@dataclass(frozen=True)
class _Join:
    fibers: int
    dim: int
    sizes: tuple
    inter: int
    union: int
    merge_steps: int
    op: str


@dataclass(frozen=True)
class Estimate:
    """The figures of one design; ``bottleneck`` names the busiest primitive or ``dram``."""

    cycles: int
    compute: int
    dram_cycles: int
    conflicts: int
    dram_words: int
    pmus: int
    pcus: int
    bottleneck: str

    def to_json(self) -> dict:
        return {"cycles": self.cycles, "compute": self.compute, "dram_cycles": self.dram_cycles,
                "conflicts": self.conflicts, "dram_words": self.dram_words, "pmus": self.pmus, "pcus": self.pcus,
                "bottleneck": self.bottleneck}


def join_work(js: Any, method: str, word_bits: int) -> int:
    """One-lane cycles of a join by ``method`` (see the module docstring)."""
    if method == "merge":
        return int(js.merge_steps)
    if method == "dense":
        return int(js.fibers) * int(js.dim)
    words = int(js.fibers) * math.ceil(int(js.dim) / word_bits)
    out = js.inter if js.op == "intersect" else js.union
    return max(int(js.sizes[0]), int(js.sizes[1]), words, int(out))


def join_lane_parallel(method: str) -> bool:
    """A two-finger merge is sequential; bit-vector and dense iteration spread over lanes."""
    return method != "merge"


def unit_cycles(work: int, loop: str | None, vloop: str | None, inner: int, outer: int, parallel: bool = True) -> int:
    """Cycles of ``work`` over the outer replicas, and the lanes at the vectorised loop ``vloop``."""
    par = outer * (inner if parallel and loop is not None and loop == vloop else 1)
    return math.ceil(work / par)


def compute_cycles(sim: Any, vloop: str | None, design: Any, word_bits: int) -> tuple[int, str]:
    """The busiest primitive's cycles and its name."""
    best, name = 0, "none"
    for uname, u in sim.units.items():
        if u.kind in JOIN_KINDS:
            continue
        c = unit_cycles(u.work, u.loop, vloop, design.inner_par, design.outer_par)
        if c > best:
            best, name = c, uname
    for jname, js in sim.joiners.items():
        method = design.coiteration.get(jname, js.method)
        c = unit_cycles(join_work(js, method, word_bits), js.index, vloop, design.inner_par, design.outer_par,
                        join_lane_parallel(method))
        if c > best:
            best, name = c, jname
    return best, name


def array_dram_words(facts: Any, b: Any, region: str, burst: int) -> int:
    """The DRAM words an array moves under binding ``b``."""
    if region != "off_chip" or b.memory == "reg" and facts.role == "read" and facts.length == 0:
        return 0
    if b.memory in ON_CHIP_COPIES:
        moved = int(facts.segments[b.depth][1])
        return moved * (2 if facts.role == "accumulate" else 1)
    if b.memory == "reg":
        return int(facts.length)
    if b.memory == "dram" and facts.gather:
        return int(facts.accesses) * burst
    return int(facts.accesses)


def array_conflicts(facts: Any, b: Any, vloop: str | None, inner: int, outer: int, banks: int) -> int:
    """Bank-conflict cycles of an SRAM copy that is gathered (0 otherwise)."""
    if b.memory not in ON_CHIP_COPIES or not facts.gather:
        return 0
    lanes = lanes_reading(facts.loop, vloop, inner)
    if lanes <= 1:
        return 0
    return math.ceil(facts.bank_conflicts(b.pmus * banks, lanes) / outer)


def pcus_used(sim: Any, inner: int, outer: int, lanes: int) -> int:
    """Compute units: one per primitive and replica, ``ceil(inner / lanes)`` each."""
    return len(sim.units) * outer * math.ceil(inner / lanes)


def estimate(sim: Any, vloop: str | None, design: Any, m: Any, regions: dict) -> Estimate:
    """The :class:`Estimate` of ``design`` (an :class:`~.decision.SparseDesign`) on machine ``m``.

    ``vloop``: the vectorised loop; ``regions``: array name -> the region of its tensor
    (workspaces: ``on_chip``).
    """
    compute, name = compute_cycles(sim, vloop, design, m.word_bits)
    words = conflicts = pmus = 0
    for aname, facts in sim.arrays.items():
        b = design.binding[aname]
        words += array_dram_words(facts, b, regions[aname], m.dram_burst_words)
        conflicts += array_conflicts(facts, b, vloop, design.inner_par, design.outer_par, m.banks)
        pmus += b.pmus
    dram = math.ceil(words / m.dram_words_per_cycle)
    cycles = max(compute, dram) + conflicts + m.dram_latency
    return Estimate(cycles, compute, dram, conflicts, words, pmus * design.outer_par,
                    pcus_used(sim, design.inner_par, design.outer_par, m.lanes), name if compute >= dram else "dram")
