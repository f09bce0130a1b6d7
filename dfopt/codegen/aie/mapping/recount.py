"""The solved mapping recounted for code generation: :class:`_Mapping` (data, evaluation, where each
node is, loop iterations per tile, host tensor layouts, streams; the FIFO each port uses, symbols and
notes as the design is built), loaded from an instance and its solution, and the steps per member
that a tile short of data memory runs."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from dfopt.errors import CodegenError
from dfopt.ir.platform import Platform
from dfopt.models.mapping.data import MappingData, mapping_data
from dfopt.models.mapping.evaluate import Evaluation, evaluate


@dataclass
class _Mapping:
    """The solved mapping recounted: data, evaluation, where each node is, loop iterations per tile,
    host tensor layouts, streams, platform; and, filled by the flow builders, the FIFO each (node,
    port index) uses, the symbols taken and notes for an error message."""

    d: MappingData
    ev: Evaluation
    where: dict
    iterations: dict
    layouts: dict
    streams: dict
    platform: Platform
    fifo_of: dict = field(default_factory=dict)
    names: set = field(default_factory=set)
    notes: list = field(default_factory=list)   # what a CodegenError should also say

    def port(self, node: str, stream: str, dirn: str) -> int:
        return next(i for i, p in enumerate(self.d.ports[node])
                    if p.kind == "stream" and p.name == stream and p.dir == dirn)

    def cls(self, node: str, i: int) -> tuple:
        return (self.d.task[node], self.d.ports[node][i].role)

    def unique(self, base: str) -> str:
        """A fresh symbol from ``base`` (non-word characters become ``_``; ``_2``, ``_3`` on repeats)."""
        base = re.sub(r"[^A-Za-z0-9_]", "_", base)      # ASCII: MLIR bare identifiers
        base = base if re.match(r"[A-Za-z_]", base) else f"s_{base}"
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name


def _tile_text(t: tuple) -> str:
    return f"tile({t[0]},{t[1]})"


def _load(instance, solution) -> _Mapping:
    section = solution.sections.get("mapping") if solution.problem == "mapping" else None
    if not section or not section.get("nodes"):
        raise CodegenError(f"design_from_mapping needs a solved problem: mapping solution; got a {solution.problem} "
                           f"solution with status {solution.status!r} and no mapping section")
    d = mapping_data(instance, section["region"])
    assign = {v: tuple(n["tile"]) for n in section["nodes"] for v in n["members"]}
    ev = evaluate(d, assign)
    if ev.faults:
        raise CodegenError("the mapping breaks its own rules, so no design expresses it: " + "; ".join(ev.faults[:5]))
    return _Mapping(d, ev, assign, _iterations(d, ev.members), _layouts(d), dict(instance.graph.streams),
                    instance.platform)


def _iterations(d: MappingData, members: dict) -> dict:
    """Loop iterations per tile: the bundle factor (the mapping's rules give every task on a tile
    as many members)."""
    return {t: Counter(d.task[v] for v in vs).most_common(1)[0][1] for t, vs in members.items()}


def _layouts(d: MappingData) -> dict:
    """Per host tensor: (block counts per axis, bytes per block), the same for every port."""
    out: dict[str, tuple] = {}
    for v in d.nodes:
        for p in d.ports[v]:
            if p.kind != "host":
                continue
            blocks = p.blocks or ((),)
            if p.bytes % len(blocks):
                raise CodegenError(f"tensor {p.name}: node {v} moves {p.bytes} bytes in {len(blocks)} blocks of "
                                   "unequal size")
            for b in blocks:
                layout = (tuple(ax[0] for ax in b), p.bytes // len(blocks))
                if out.setdefault(p.name, layout) != layout:
                    raise CodegenError(f"tensor {p.name}: node {v} moves blocks of {layout[1]} bytes on a {layout[0]} "
                                       f"grid, another port {out[p.name][1]} bytes on a {out[p.name][0]} grid; one "
                                       "host buffer needs one block grid")
    return out


def _steps(m: _Mapping, tile: tuple) -> int:
    """Steps per member for a tile short of memory: the most tokens (blocks) a member moves on one port."""
    units = [m.streams[p.name].tokens if p.kind == "stream" else max(1, len(p.blocks))
             for v in m.ev.members[tile] for i, p in enumerate(m.d.ports[v]) if m.ev.mode[(v, i)] != "internal"]
    return max(units, default=1)
