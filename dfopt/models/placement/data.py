"""The placement problem as arrays: kernel demands, slot capacities, cut lines, streams.

Distances and wires are counted on *cut lines*. The slots' x (and y) coordinates, sorted and
deduplicated, leave a line between each two neighbouring values; a stream crosses that line when
its two kernels sit on different sides. A stream's Manhattan distance is the sum of the gaps of
the lines it crosses, and the wires a line offers are the wires of the platform links that cross
it (a line no link crosses has no wire limit). On a column of SLRs this is exactly "the SLL
wires of each SLR crossing"; on a grid the line is the boundary between two rows or columns.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.ir.platform import load_preset
>>> g = DataflowGraph([Kernel("a", resources={"lut": 10}), Kernel("b", resources={"lut": 20})],
...                   [Stream("e", "a", "b", tokens=4, width=64)])
>>> d = placement_data(g, load_preset("u280"), max_utilization=0.8)
>>> [c.label for c in d.cuts], [c.wires for c in d.cuts]
(['y 0|1', 'y 1|2'], [23040, 23040])
>>> r = d.evaluate(np.array([0, 2]))
>>> r.distance, r.cut_wires.tolist()
(128.0, [64.0, 64.0])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.platform import Platform

PLACEMENT_KINDS = ("lut", "ff", "dsp", "bram", "uram")


@dataclass(frozen=True)
class Cut:
    """A line between two neighbouring coordinate values of one axis."""

    axis: str                 # "x" | "y"
    low: float                # the coordinate just below the line
    high: float               # the coordinate just above it
    low_side: np.ndarray      # per slot: True when the slot lies below the line
    wires: int | None         # wires of the links crossing the line; None = no limit

    @property
    def gap(self) -> float:
        return self.high - self.low

    @property
    def label(self) -> str:
        return f"{self.axis} {self.low:g}|{self.high:g}"


@dataclass
class Evaluation:
    """Everything about one assignment, recounted from the arrays."""

    usage: np.ndarray          # (slots, kinds)
    cut_wires: np.ndarray      # per cut: stream bits crossing it
    distance: float            # sum of width x Manhattan distance
    imbalance: np.ndarray      # per kind: max - min utilisation over slots
    objective: float
    violations: list = field(default_factory=list)

    @property
    def feasible(self) -> bool:
        return not self.violations


@dataclass
class PlacementData:
    names: list
    slots: list
    kinds: list
    demand: np.ndarray        # (kernels, kinds)
    capacity: np.ndarray      # (slots, kinds) full capacity
    limit: np.ndarray         # (slots, kinds) capacity x max_utilization
    sx: np.ndarray
    sy: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    width: np.ndarray
    stream_names: list
    cuts: list
    allowed: np.ndarray       # (kernels, slots) bool: pins
    same_slot: list           # index arrays of kernels that must share a slot
    balance_weight: float
    max_utilization: float
    index: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def num_slots(self) -> int:
        return len(self.slots)

    def distance_matrix(self) -> np.ndarray:
        return np.abs(self.sx[:, None] - self.sx[None, :]) + np.abs(self.sy[:, None] - self.sy[None, :])

    def usage(self, assign: np.ndarray) -> np.ndarray:
        out = np.zeros((self.num_slots, len(self.kinds)))
        np.add.at(out, assign, self.demand)
        return out

    def utilization(self, usage: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.capacity > 0, usage / np.where(self.capacity > 0, self.capacity, 1), 0.0)

    def imbalance(self, usage: np.ndarray) -> np.ndarray:
        util = self.utilization(usage)
        out = np.zeros(len(self.kinds))
        for r in range(len(self.kinds)):
            have = self.capacity[:, r] > 0
            if have.sum() > 1:
                out[r] = util[have, r].max() - util[have, r].min()
        return out

    def evaluate(self, assign: np.ndarray) -> Evaluation:
        assign = np.asarray(assign, dtype=np.int64)
        usage = self.usage(assign)
        a, b = assign[self.src], assign[self.dst]
        cut_wires = np.array([self.width[c.low_side[a] != c.low_side[b]].sum() for c in self.cuts], dtype=float)
        dist = self.distance_matrix()[a, b] if len(a) else np.zeros(0)
        distance = float((self.width * dist).sum())
        imbalance = self.imbalance(usage)
        objective = distance + self.balance_weight * float(imbalance.sum())
        return Evaluation(usage, cut_wires, distance, imbalance, objective, self._violations(assign, usage, cut_wires))

    def _violations(self, assign, usage, cut_wires) -> list[str]:
        bad = []
        over = np.argwhere(usage > self.limit + 1e-6)
        for s, r in over.tolist():
            bad.append(f"slot {self.slots[s]}: {self.kinds[r]} {usage[s, r]:g} > {self.limit[s, r]:g} "
                       f"({self.max_utilization:g} x {self.capacity[s, r]:g})")
        for c, used in zip(self.cuts, cut_wires.tolist()):
            if c.wires is not None and used > c.wires:
                bad.append(f"cut {c.label}: {used:g} wires > {c.wires}")
        pinned = ~self.allowed[np.arange(self.n), assign]
        bad += [f"kernel {self.names[k]} is outside its pinned slots" for k in np.flatnonzero(pinned).tolist()]
        for members in self.same_slot:
            if len(set(assign[members].tolist())) > 1:
                bad.append("kernels " + ", ".join(self.names[k] for k in members) + " must share a slot")
        return bad

    def order(self) -> list[int]:
        """Kernels in topological order (a DFS order where streams form cycles)."""
        g = nx.DiGraph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from(zip(self.src.tolist(), self.dst.tolist()))
        try:
            return list(nx.lexicographical_topological_sort(g))
        except nx.NetworkXUnfeasible:
            return list(nx.dfs_preorder_nodes(g))


def _cuts(platform, sx: np.ndarray, sy: np.ndarray, slot_index: dict) -> list[Cut]:
    cuts = []
    for axis, coord in (("x", sx), ("y", sy)):
        levels = np.unique(coord)
        for lo, hi in zip(levels[:-1].tolist(), levels[1:].tolist()):
            low_side = coord <= lo
            wires = [lk.wires for lk in platform.links
                     if low_side[slot_index[lk.a]] != low_side[slot_index[lk.b]]]
            cuts.append(Cut(axis, lo, hi, low_side, int(sum(wires)) if wires else None))
    return cuts


def placement_data(graph: DataflowGraph, platform: Platform, max_utilization: float = 0.8,
                   balance_weight: float = 0.0, pins: Mapping[str, str | Sequence[str]] | None = None,
                   same_slot: Iterable[Iterable[str]] = (), extra: Mapping[str, Mapping[str, float]] | None = None,
                   ) -> PlacementData:
    """The arrays of one placement instance. ``pins`` maps a kernel to a slot name or a list of
    slot names; ``extra`` adds resources per kernel (memory blocks bound elsewhere)."""
    names = list(graph.kernels)
    index = {k: i for i, k in enumerate(names)}
    slots = [s.name for s in platform.slots]
    slot_index = {s: i for i, s in enumerate(slots)}
    kinds = [r for r in PLACEMENT_KINDS if any(r in s.resources for s in platform.slots)]
    demand = np.array([[float(graph.kernels[k].resources.get(r, 0)) + float((extra or {}).get(k, {}).get(r, 0))
                        for r in kinds] for k in names]).reshape(len(names), len(kinds))
    capacity = np.array([[float(s.resources.get(r, 0)) for r in kinds]
                         for s in platform.slots]).reshape(len(slots), len(kinds))
    sx = np.array([float(s.x) for s in platform.slots])
    sy = np.array([float(s.y) for s in platform.slots])
    streams = [s for s in graph.streams.values() if s.src != s.dst]
    allowed = np.ones((len(names), len(slots)), dtype=bool)
    for k, where in (pins or {}).items():
        allowed[index[k]] = False
        for s in ([where] if isinstance(where, str) else where):
            allowed[index[k], slot_index[s]] = True
    return PlacementData(
        names=names, slots=slots, kinds=kinds, demand=demand, capacity=capacity,
        limit=capacity * max_utilization, sx=sx, sy=sy,
        src=np.array([index[s.src] for s in streams], dtype=np.int64),
        dst=np.array([index[s.dst] for s in streams], dtype=np.int64),
        width=np.array([float(s.width) for s in streams]),
        stream_names=[s.name for s in streams], cuts=_cuts(platform, sx, sy, slot_index),
        allowed=allowed, same_slot=[np.array([index[k] for k in grp], dtype=np.int64) for grp in same_slot],
        balance_weight=float(balance_weight), max_utilization=float(max_utilization), index=index)
