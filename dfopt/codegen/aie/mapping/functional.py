"""The functional model of a mapped design, checked against the mapping: run the design's data
movement (:func:`dfopt.codegen.aie.sim.run`, element identities through every FIFO, link and
shim transfer) and compare where the elements went with what the mapping says each tile reads,
streams and stores.

Per compute tile: the host blocks it receives, per tensor, are exactly the blocks its members
read (``attrs.io`` of each virtual node; a block is a whole block of the blocked host buffer);
every element it receives from another core comes from a tile holding a member that streams to
one of its members, and it receives as many bytes from each such tile as those streams carry.
Per output buffer: every element is written, by a tile one of whose members stores its block.
A deadlock (with the depths the design declares) or a transfer past its buffer fails the run
before any of that. Faults name the tile, the tensor and block or the FIFO.

Command line (what ``make sim`` in an emitted design folder runs)::

    python -m dfopt.codegen.aie.mapping.functional sim.json     # {"instance": ..., "solution": ...}

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> inst = load("instances/mapping/gemm-4x4x4.json")
>>> report = functional_check(inst, solve_instance(inst))
>>> report.faults, report.run.ok
([], True)
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dfopt.codegen.aie.design import AieDesign
from dfopt.codegen.aie.mapping.host import _flat
from dfopt.codegen.aie.sim import CORE_BASE, UNWRITTEN, WRITER_SHIFT, AieRun, run
from dfopt.ir.itensor import DTYPE_BITS

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution

_INDEX = (1 << WRITER_SHIFT) - 1


@dataclass
class FunctionalReport:
    """The run and what disagrees with the mapping (empty ``faults``: the design moves the data
    the mapping says); ``summary`` has the figures the report prints."""

    design: AieDesign
    run: AieRun
    faults: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    summary: dict = field(default_factory=dict)


def functional_check(instance: Instance, solution: Solution, design: AieDesign | None = None) -> FunctionalReport:
    """Build the design of the mapping (unless given), run it, compare (see the module docstring)."""
    from dfopt.codegen.aie.mapping import design_from_mapping

    if design is None:
        design = design_from_mapping(instance, solution)
    result = run(design)
    report = FunctionalReport(design, result)
    report.faults = [f"deadlock: {w}" for w in result.blocked] + result.faults
    if result.ok:
        report.faults += _compare(instance, solution, design, result, report.notes)
    report.summary = {"objects": sum(result.objects.values()), "steps": result.steps,
                      "wall_s": round(result.wall_s, 3), "fifos": len(design.fifos), "cores": len(design.cores)}
    return report


def _owners(instance: Instance, solution: Solution) -> tuple[dict, dict]:
    """(virtual node -> tile, tile -> members) of the solution's mapping section."""
    tile_of = {v: tuple(n["tile"]) for n in solution.sections["mapping"]["nodes"] for v in n["members"]}
    members: dict = {}
    for v, t in tile_of.items():
        members.setdefault(t, []).append(v)
    return tile_of, members


def _compare(instance: Instance, solution: Solution, design: AieDesign, result: AieRun, notes: list) -> list[str]:
    assert design.runtime is not None and instance.graph is not None
    buffers = {b.name: (k, b) for k, b in enumerate(design.runtime.buffers)}
    by_writer = {k + 1: name for name, (k, _) in buffers.items()}
    tile_of, members = _owners(instance, solution)
    kernels = instance.graph.kernels
    reads: dict = {}       # (tile, tensor) -> {block}
    stores: dict = {}      # tensor -> block -> {tile}
    for v, t in tile_of.items():
        for port in kernels[v].attrs.get("io", []):
            if port["tensor"] not in buffers:
                continue
            counts = buffers[port["tensor"]][1].shape[:-1]
            for block in port["blocks"] or [[]]:
                b = _flat(block, counts)
                if port["dir"] == "in":
                    reads.setdefault((t, port["tensor"]), set()).add(b)
                else:
                    stores.setdefault(port["tensor"], {}).setdefault(b, set()).add(t)
    faults: list[str] = []
    core_tiles = [c.tile for c in design.cores]
    got: dict = {}
    from_cores: Counter = Counter()
    elem_bytes = {f.name: DTYPE_BITS.get(f.dtype, 8) // 8 for f in design.fifos}
    for (t, fifo), tags in result.received.items():
        writer, index = tags >> WRITER_SHIFT, tags & _INDEX
        for w in np.unique(writer):
            sel = writer == w
            if w > CORE_BASE:
                from_cores[(core_tiles[int(w) - CORE_BASE - 1], t)] += int(sel.sum()) * elem_bytes[fifo]
            elif int(w) in by_writer:
                name = by_writer[int(w)]
                n = buffers[name][1].shape[-1]
                blocks, per = np.unique(index[sel] // n, return_counts=True)
                got.setdefault((t, name), Counter()).update(dict(zip(blocks.tolist(), per.tolist())))
            else:
                faults.append(f"tile {t}: fifo {fifo} delivers elements no writer wrote (an unwritten part of a "
                              "joined object)")
    for key in sorted(set(reads) | set(got)):
        t, tensor = key
        want, have = reads.get(key, set()), got.get(key, Counter())
        n = buffers[tensor][1].shape[-1]
        partial = sorted(b for b, c in have.items() if c % n)
        missing, extra = sorted(want - set(have)), sorted(set(have) - want)
        if missing:
            faults.append(f"tile {t}: never receives block(s) {missing[:6]} of {tensor} that its members "
                          f"{sorted(v for v in members.get(t, []))[:4]} read")
        if extra:
            faults.append(f"tile {t}: receives block(s) {extra[:6]} of {tensor} that none of its members reads")
        if partial:
            faults.append(f"tile {t}: receives only part of block(s) {partial[:6]} of {tensor}")
    faults += _stream_faults(instance, tile_of, from_cores)
    for tensor, out in result.outputs.items():
        n = buffers[tensor][1].shape[-1]
        unwritten = np.flatnonzero(out == UNWRITTEN)
        if unwritten.size:
            faults.append(f"output {tensor}: {unwritten.size} elements never written (first in block "
                          f"{int(unwritten[0]) // n})")
        writer = out >> WRITER_SHIFT
        twice = np.flatnonzero(result.writes[tensor] > 1)
        owned = stores.get(tensor, {})
        shared = sorted({int(i) // n for i in twice if len(owned.get(int(i) // n, ())) > 1})
        clash = sorted({int(i) // n for i in twice} - set(shared))
        if clash:
            faults.append(f"output {tensor}: block(s) {clash[:6]} written more than once, with one tile storing "
                          "each: the transfers overlap")
        if shared:
            notes.append(f"output {tensor}: block(s) {shared[:6]} written once per tile that stores them "
                         "(members on several tiles store the same block)")
        for b, tiles in sorted(owned.items()):
            ws = {int(w) for w in np.unique(writer[b * n:(b + 1) * n]) if w > CORE_BASE}
            wrong = sorted(core_tiles[w - CORE_BASE - 1] for w in ws if core_tiles[w - CORE_BASE - 1] not in tiles)
            if wrong:
                faults.append(f"output {tensor} block {b}: written by tile(s) {wrong}, stored by the members on "
                              f"{sorted(tiles)}")
    return faults


def _stream_faults(instance: Instance, tile_of: dict, from_cores: Counter) -> list[str]:
    """Core-to-core bytes per (producer tile, consumer tile) against the streams between members."""
    assert instance.graph is not None
    want: Counter = Counter()
    for s in instance.graph.streams.values():
        a, b = tile_of.get(s.src), tile_of.get(s.dst)
        if a is not None and b is not None and a != b:
            want[(a, b)] += s.tokens * s.width // 8
    faults = []
    for pair in sorted(set(want) | set(from_cores)):
        if want[pair] != from_cores[pair]:
            faults.append(f"tile {pair[1]} receives {from_cores[pair]} bytes from tile {pair[0]}; the streams "
                          f"between their members carry {want[pair]}")
    return faults


def report_text(report: FunctionalReport) -> str:
    """What ``make sim`` prints: the run's size, every fault and note, then PASS or FAIL."""
    s = report.summary
    lines = [f"functional model: {s['cores']} cores, {s['fifos']} fifos, {s['objects']} objects moved in "
             f"{s['wall_s']} s"]
    lines += [f"  {f}" for f in report.faults] + [f"  note: {n}" for n in report.notes]
    lines.append("PASS" if not report.faults else "FAIL")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m dfopt.codegen.aie.mapping.functional sim.json``: PASS / FAIL with the faults."""
    from dfopt.errors import DfoptError
    from dfopt.instance import from_dict, solution_from_dict

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m dfopt.codegen.aie.mapping.functional sim.json\n")
        return 2
    try:
        with open(args[0]) as fh:
            doc = json.load(fh)
        report = functional_check(from_dict(doc["instance"], source=args[0]), solution_from_dict(doc["solution"]))
    except (OSError, ValueError, KeyError, TypeError, DfoptError) as err:
        sys.stderr.write(f"functional model: cannot read {args[0]}: {err}\n")
        return 2
    sys.stdout.write(report_text(report))
    return 0 if not report.faults else 1


if __name__ == "__main__":
    sys.exit(main())
