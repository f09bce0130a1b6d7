"""The baseline placement: fill the slots in topological order, then refine.

* **Fill**: kernels (same-slot groups as one unit) in topological order go into the slots in a
  serpentine order (row by row, alternating direction), moving on when a slot holds its share
  of the total demand; pinned units go to their allowed slot nearest their placed neighbours.
  Five fills with the shares scaled by 0.9 .. 1.1 are made and the one with the least excess
  wire use (then the lowest cost) is refined. When a unit fits nowhere, the fill falls back to
  a first-fit-decreasing packing.
* **Kernighan–Lin**: for every two neighbouring slots, networkx's KL bisection of the unpinned
  units in them (stream widths as edge weights), kept when it is feasible and lowers the cost.
* **Moves and swaps**: single-unit moves to any allowed slot while the objective falls
  (capacities hard, link wires as a penalty so a fill that overloads a crossing gets repaired),
  then exchanges of two units of different slots (a sample of candidates per unit), then moves.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.ir.platform import load_preset
>>> from dfopt.models.placement.data import placement_data
>>> ks = [Kernel(f"k{i}", resources={"lut": 150000}) for i in range(4)]
>>> ss = [Stream(f"e{i}", f"k{i}", f"k{i + 1}", tokens=1, width=32) for i in range(3)]
>>> d = placement_data(DataflowGraph(ks, ss), load_preset("u55c"), 0.8)
>>> a = greedy_placement(d)
>>> a.tolist(), d.evaluate(a).distance
([0, 0, 1, 1], 32.0)
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from dfopt.models.placement.data import PlacementData

WIRE_PENALTY = 1e3
FILL_SCALES = (1.0, 0.9, 0.95, 1.05, 1.1)   # fills tried; the one with the fewest excess wires is refined


class Units:
    """Same-slot groups merged into units (a kernel alone is a unit of one)."""

    def __init__(self, d: PlacementData):
        unit_of = np.arange(d.n)
        g = nx.Graph()
        g.add_nodes_from(range(d.n))
        for members in d.same_slot:
            g.add_edges_from(zip(members[:-1].tolist(), members[1:].tolist()))
        comps = sorted((sorted(c) for c in nx.connected_components(g)), key=lambda c: c[0])
        for u, comp in enumerate(comps):
            unit_of[comp] = u
        self.unit_of = unit_of
        self.members = [np.array(c, dtype=np.int64) for c in comps]
        self.demand = np.array([d.demand[m].sum(axis=0) for m in self.members]).reshape(len(comps), len(d.kinds))
        self.allowed = np.array([d.allowed[m].all(axis=0) for m in self.members]).reshape(len(comps), d.num_slots)
        adj: list[dict[int, float]] = [{} for _ in comps]
        for a, b, w in zip(unit_of[d.src].tolist(), unit_of[d.dst].tolist(), d.width.tolist()):
            if a != b:
                adj[a][b] = adj[a].get(b, 0.0) + w
                adj[b][a] = adj[b].get(a, 0.0) + w
        self.adj = [(np.array(list(x), dtype=np.int64), np.array(list(x.values()))) for x in adj]

    def __len__(self) -> int:
        return len(self.members)

    def expand(self, unit_slot: np.ndarray) -> np.ndarray:
        return unit_slot[self.unit_of]


def serpentine(d: PlacementData) -> list[int]:
    rows = sorted(set(d.sy.tolist()))
    seq = []
    for i, y in enumerate(rows):
        in_row = sorted(np.flatnonzero(d.sy == y).tolist(), key=lambda s: d.sx[s])
        seq += in_row if i % 2 == 0 else in_row[::-1]
    return seq


def topological_fill(d: PlacementData, units: Units, scale: float = 1.0) -> np.ndarray | None:
    """The fill, moving on when a slot holds ``scale`` x its share; None when some unit fits
    nowhere it is allowed."""
    seq = serpentine(d)
    dist = d.distance_matrix()
    safe_limit = np.where(d.limit > 0, d.limit, 1)
    share = (d.limit / safe_limit.sum(axis=0)).mean(axis=1)         # each slot's share of the device
    load = (units.demand / safe_limit.sum(axis=0)).max(axis=1)      # each unit's share of the device
    first: dict[int, int] = {}
    for pos, k in enumerate(d.order()):
        first.setdefault(int(units.unit_of[k]), pos)
    slot = np.full(len(units), -1, dtype=np.int64)
    usage = np.zeros_like(d.limit)
    filled = np.zeros(d.num_slots)
    cur = 0
    for u in sorted(range(len(units)), key=lambda u: first[u]):
        fits = ((usage + units.demand[u] <= d.limit + 1e-9).all(axis=1)) & units.allowed[u]
        if not fits.any():
            return None
        if units.allowed[u].all():
            while cur < len(seq) - 1 and filled[seq[cur]] >= scale * share[seq[cur]] * load.sum():
                cur += 1
            order = seq[cur:] + seq[:cur][::-1]
            s = next(t for t in order if fits[t])
        else:
            others, ws = units.adj[u]
            placed = slot[others] >= 0
            cost = [(ws[placed] * dist[t, slot[others[placed]]]).sum() if fits[t] else np.inf
                    for t in range(d.num_slots)]
            s = int(np.argmin(cost))
        slot[u] = s
        usage[s] += units.demand[u]
        filled[s] += load[u]
    return slot


class _Refiner:
    """Cost bookkeeping for moving units between slots."""

    def __init__(self, d: PlacementData, units: Units, slot: np.ndarray) -> None:
        self.d, self.units = d, units
        self.dist = d.distance_matrix()
        self.low = np.array([c.low_side for c in d.cuts], dtype=bool).reshape(len(d.cuts), d.num_slots)
        self.wires = np.array([c.wires if c.wires is not None else np.inf for c in d.cuts])
        self._start(slot)

    def _start(self, slot: np.ndarray) -> None:
        """Take ``slot`` as the current placement, with its usage and cut wires counted afresh."""
        self.slot = slot.copy()
        self.usage = np.zeros_like(self.d.limit)
        np.add.at(self.usage, slot, self.units.demand)
        ev = self.d.evaluate(self.units.expand(slot))
        self.cut_wires = ev.cut_wires.copy()

    def cost(self, usage: np.ndarray | None = None, cut_wires: np.ndarray | None = None) -> float:
        usage = self.usage if usage is None else usage
        cut_wires = self.cut_wires if cut_wires is None else cut_wires
        over = np.maximum(cut_wires - self.wires, 0).sum() if len(cut_wires) else 0.0
        return self.d.balance_weight * float(self.d.imbalance(usage).sum()) + WIRE_PENALTY * float(over)

    def try_move(self, u: int, t: int) -> tuple[float, np.ndarray, np.ndarray] | None:
        """(Cost change, usage, cut wires) of moving unit u to slot t (None when capacity forbids it)."""
        s = self.slot[u]
        dem = self.units.demand[u]
        if t == s or not self.units.allowed[u, t]:
            return None
        if (self.usage[t] + dem > self.d.limit[t] + 1e-9).any():
            return None
        others, ws = self.units.adj[u]
        so = self.slot[others]
        delta = float((ws * (self.dist[t, so] - self.dist[s, so])).sum())
        cuts = self.cut_wires
        if len(cuts):
            before = self.low[:, [s]] != self.low[:, so]
            after = self.low[:, [t]] != self.low[:, so]
            cuts = cuts + (after.astype(float) - before) @ ws
        usage = self.usage.copy()
        usage[s] -= dem
        usage[t] += dem
        return delta + self.cost(usage, cuts) - self.cost(), usage, cuts

    def moves(self, sweeps: int = 20) -> None:
        for _ in range(sweeps):
            improved = False
            for u in range(len(self.units)):
                best = None
                for t in range(self.d.num_slots):
                    r = self.try_move(u, t)
                    if r is not None and r[0] < -1e-9 and (best is None or r[0] < best[1][0]):
                        best = (t, r)
                if best is not None:
                    t, (_, usage, cuts) = best
                    self.slot[u], self.usage, self.cut_wires = t, usage, cuts
                    improved = True
            if not improved:
                return

    def _shift(self, u: int, t: int) -> None:
        """Move unit u to slot t, updating usage and cut wires (no capacity test)."""
        s = self.slot[u]
        others, ws = self.units.adj[u]
        so = self.slot[others]
        if len(self.cut_wires):
            before = self.low[:, [s]] != self.low[:, so]
            after = self.low[:, [t]] != self.low[:, so]
            self.cut_wires = self.cut_wires + (after.astype(float) - before) @ ws
        self.usage[s] -= self.units.demand[u]
        self.usage[t] += self.units.demand[u]
        self.slot[u] = t

    def _move_deltas(self) -> np.ndarray:
        """(units, slots): change of the distance term if each unit alone moved to each slot."""
        U, S = len(self.units), self.d.num_slots
        a = self.units.unit_of[self.d.src]
        b = self.units.unit_of[self.d.dst]
        keep = a != b
        a, b, w = a[keep], b[keep], self.d.width[keep]
        out = np.zeros((U, S))
        for x in range(S):
            np.add.at(out[:, x], a, w * (self.dist[x, self.slot[b]] - self.dist[self.slot[a], self.slot[b]]))
            np.add.at(out[:, x], b, w * (self.dist[x, self.slot[a]] - self.dist[self.slot[b], self.slot[a]]))
        return out

    def _distance_of(self, u: int) -> float:
        others, ws = self.units.adj[u]
        return float((ws * self.dist[self.slot[u], self.slot[others]]).sum())

    def swaps(self, rng: np.random.Generator, sweeps: int = 3, candidates: int = 24) -> None:
        """Exchange two units of different slots when that lowers the cost (capacities hard):
        for each unit with a stream leaving its slot, a sample of the units in the slots its
        neighbours occupy."""
        for _ in range(sweeps):
            improved = False
            gain = self._move_deltas()
            for u in range(len(self.units)):
                others, _ = self.units.adj[u]
                s = self.slot[u]
                targets = set(self.slot[others].tolist()) - {s}
                for t in sorted(targets):
                    pool = np.flatnonzero((self.slot == t) & self.units.allowed[:, s])
                    if not len(pool) or not self.units.allowed[u, t]:
                        continue
                    # the units of t that gain most by moving to s, plus a random few
                    best = pool[np.argsort(gain[pool, s], kind="stable")[:candidates]]
                    extra = rng.choice(pool, size=min(candidates // 4, len(pool)), replace=False)
                    for v in dict.fromkeys(best.tolist() + extra.tolist()):
                        before = self.cost() + self._distance_of(u) + self._distance_of(v)
                        state = (self.usage.copy(), self.cut_wires.copy())
                        self._shift(u, t)
                        self._shift(v, s)
                        ok = not (self.usage > self.d.limit + 1e-9).any()
                        if ok and self.cost() + self._distance_of(u) + self._distance_of(v) < before - 1e-9:
                            improved = True
                            break
                        self.slot[u], self.slot[v] = s, t
                        self.usage, self.cut_wires = state
                    if self.slot[u] != s:
                        break
            if not improved:
                return

    def total(self, slot: np.ndarray) -> tuple[float, bool]:
        ev = self.d.evaluate(self.units.expand(slot))
        over = sum(max(w - c.wires, 0) for w, c in zip(ev.cut_wires, self.d.cuts) if c.wires is not None)
        cap_ok = not (ev.usage > self.d.limit + 1e-9).any()
        return ev.objective + WIRE_PENALTY * over, cap_ok

    def kernighan_lin(self, seed: int) -> None:
        pairs = {(min(a, b), max(a, b)) for a in range(self.d.num_slots) for b in range(self.d.num_slots)
                 if a != b and self.dist[a, b] == self.dist[a][self.dist[a] > 0].min()}
        for a, b in sorted(pairs):
            movable = [u for u in range(len(self.units)) if self.slot[u] in (a, b)
                       and self.units.allowed[u, a] and self.units.allowed[u, b]]
            if len(movable) < 2:
                continue
            g = nx.Graph()
            g.add_nodes_from(movable)
            inside = set(movable)
            for u in movable:
                others, ws = self.units.adj[u]
                g.add_weighted_edges_from((u, int(v), float(w)) for v, w in zip(others, ws)
                                          if int(v) in inside and u < v)
            part = ({u for u in movable if self.slot[u] == a}, {u for u in movable if self.slot[u] == b})
            if not part[0] or not part[1]:
                continue
            new_a, _ = nx.algorithms.community.kernighan_lin_bisection(g, partition=part, max_iter=10,
                                                                       weight="weight", seed=seed)
            trial = self.slot.copy()
            for u in movable:
                trial[u] = a if u in new_a else b
            new_cost, ok = self.total(trial)
            if ok and new_cost < self.total(self.slot)[0] - 1e-9:
                self._start(trial)


def refine(d: PlacementData, units: Units, slot: np.ndarray, seed: int = 0, kl: bool = True) -> np.ndarray:
    """KL between neighbouring slots, then single-unit moves; returns unit slots."""
    r = _Refiner(d, units, slot)
    if kl:
        r.kernighan_lin(seed)
    r.moves()
    r.swaps(np.random.default_rng(seed))
    r.moves()
    return r.slot


def packing_fill(d: PlacementData, units: Units) -> np.ndarray | None:
    """First-fit decreasing by share of the device, each unit into the allowed slot that keeps the
    most room (the fallback when the topological fill gets stuck); None when it gets stuck too."""
    safe_limit = np.where(d.limit > 0, d.limit, 1)
    load = (units.demand / safe_limit.sum(axis=0)).max(axis=1)
    pinned = units.allowed.sum(axis=1) < d.num_slots
    slot = np.full(len(units), -1, dtype=np.int64)
    usage = np.zeros_like(d.limit)
    for u in sorted(range(len(units)), key=lambda u: (not pinned[u], -load[u])):
        room = d.limit - usage - units.demand[u]
        fits = (room >= -1e-9).all(axis=1) & units.allowed[u]
        if not fits.any():
            return None
        slack = np.where(fits, (room / safe_limit).min(axis=1), -np.inf)
        slot[u] = int(np.argmax(slack))
        usage[slot[u]] += units.demand[u]
    return slot


def greedy_placement(d: PlacementData, seed: int = 0) -> np.ndarray | None:
    """Kernel slots of the baseline, or None when the fill (and repair) finds no feasible one."""
    units = Units(d)
    fills = [f for f in (topological_fill(d, units, scale) for scale in FILL_SCALES) if f is not None]
    if not fills:
        fills = [f for f in (packing_fill(d, units),) if f is not None]
    if not fills:
        return None

    def start_cost(f):
        ev = d.evaluate(units.expand(f))
        over = sum(max(w - c.wires, 0) for w, c in zip(ev.cut_wires, d.cuts) if c.wires is not None)
        return (over, ev.objective)

    slot = min(fills, key=start_cost)
    assign = units.expand(refine(d, units, slot, seed))
    return assign if d.evaluate(assign).feasible else None
