"""Branch-and-reduce over folding primitives (the Dato paper's mapping search).

A state is a partition of the virtual nodes into physical nodes (each a chain of bundles). A
*move* applies one primitive to a whole class of isomorphic physical nodes at once (the
"reduce": symmetric applications are not branched on separately):

* ``bundle(class, axis)`` pairs the nodes of one class whose grid indices differ only along
  ``axis`` (neighbours in index order); ``bundle(class, peers)`` pairs nodes that share the most
  peers and host blocks (for graphs without a grid);
* ``chain(class1, class2)`` fuses each node of class 1 with the node of class 2 it exchanges the
  most bytes with.

Pairs that would break a rule of :mod:`.evaluate` are skipped; a move that leaves the tile graph
cyclic is dropped. The priority of a move (:meth:`Search.rank`) ranks first the moves whose
nodes pass the port and memory prechecks, then by the lower bound it leaves on the makespan
(every crossing stream assumed to take DMA): the largest node's estimate, the total spread over
the tiles, and while more nodes than tiles remain, the sum of the T-th and (T+1)-th largest (two
of the T + 1 largest must share a tile) — bounds within 0.5% of the best count as equal, so that
near-ties go to the move that keeps more traffic inside nodes (a smaller total estimate), then
to the one merging more. The search is a depth-first
branch over the ``branch`` best moves per state; a state with at most as many nodes as tiles,
whose nodes pass the port and memory prechecks, is placed by the exact model with the folding
fixed (:func:`.exact.build` with a ``partition``) and routed (:mod:`.route`). It stops after the
first ``first`` feasible mappings (or ``max_states`` expanded states, or the time limit) and
returns the best by estimated makespan. Progress: one phase for the whole search, with the
states expanded, the foldings found and the best makespan as the incumbent.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence

import networkx as nx

from dfopt import progress
from dfopt.models.mapping import exact
from dfopt.models.mapping.data import STACK_BYTES, MappingData
from dfopt.models.mapping.evaluate import evaluate, legality_faults, member_order
from dfopt.models.mapping.route import route


class Search:
    def __init__(self, d: MappingData, first: int = 5, branch: int = 3, max_states: int = 400,
                 time_limit: float = 60.0, seed: int = 0):
        self.d, self.first, self.branch, self.max_states = d, first, branch, max_states
        self.time_limit = time_limit
        self.deadline = time.perf_counter() + time_limit
        self.seed = seed
        self.found: list = []           # (makespan, assign, routes, partition)
        self.stats = {"states": 0, "leaves_placed": 0, "leaves_failed": 0, "moves_tried": 0}
        self.seen: set = set()
        self._legal_cache: dict = {}
        self._cost_cache: dict = {}

    # -- node properties -------------------------------------------------------------------------
    def legal(self, members: frozenset) -> bool:
        ok = self._legal_cache.get(members)
        if ok is None:
            ok = not legality_faults(self.d, list(members), "")
            self._legal_cache[members] = ok
        return ok

    def node_cost(self, members: frozenset) -> tuple[int, bool]:
        """(pessimistic estimate, passes the prechecks) of one physical node (cached: every state
        and child ranks the same nodes again)."""
        cost = self._cost_cache.get(members)
        if cost is None:
            cost = self._cost_cache[members] = self._node_cost(members)
        return cost

    def _node_cost(self, members: frozenset) -> tuple[int, bool]:
        d = self.d
        cycles = 0
        host: dict[str, set] = {"in": set(), "out": set()}
        stream_peers: dict = {"in": {}, "out": {}}
        for v in members:
            cycles += d.work[v]
            for p in d.ports[v]:
                if p.kind == "stream" and p.peer in members:
                    continue
                cycles += p.cycles
                cls = (d.task[v], p.role)
                if p.kind == "host":
                    host[p.dir].add(cls)
                else:
                    stream_peers[p.dir].setdefault(cls, set()).add(p.peer)
        ok = True
        for dirn in ("in", "out"):
            hard = sum(1 for peers in stream_peers[dirn].values() if len(peers) > 4)
            if len(host[dirn]) + hard > d.limits[f"compute_{dirn}"]:
                ok = False
        mem = STACK_BYTES + sum(d.task_bytes[t] for t in {d.task[v] for v in members})
        return cycles, ok and mem <= d.limits["compute_bytes"]

    def bound(self, partition: Sequence[frozenset]) -> int:
        """A lower bound on the makespan of any folding of ``partition`` (pessimistic transfers):
        the largest node, the total spread over the tiles, and — while there are more nodes than
        tiles — the two smallest of the T + 1 largest nodes, which some tile must hold together."""
        costs = sorted((self.node_cost(n)[0] for n in partition), reverse=True)
        T = len(self.d.tiles)
        pack = costs[T - 1] + costs[T] if len(costs) > T else 0
        return max(costs[0], -(-sum(costs) // T), pack)

    def rank(self, children: list) -> list:
        """Children ``(state, pairs)`` in priority order: first those whose nodes all pass the
        port / memory prechecks; then by the lower bound they leave, where bounds within 0.5% of
        the best child's count as equal, so that near-ties go to the smaller total estimate
        (traffic kept inside nodes by a chain) and then to the move merging more pairs."""
        keyed = []
        for child, pairs in children:
            costs = [self.node_cost(n) for n in child]
            keyed.append((sum(1 for _, ok in costs if not ok), self.bound(child), sum(c for c, _ in costs),
                          -len(pairs), child))
        if not keyed:
            return []
        best = min(k[1] for k in keyed)
        order = sorted(range(len(keyed)), key=lambda i: (keyed[i][0], 0 if keyed[i][1] <= best * 1.005 else keyed[i][1],
                                                         keyed[i][2], keyed[i][3], i))
        return [keyed[i][4] for i in order]

    # -- moves -----------------------------------------------------------------------------------
    def classes(self, partition: Iterable[frozenset]) -> dict:
        out: dict = {}
        for n in partition:
            key = tuple(sorted(Counter((self.d.task[v], self.d.iso[v]) for v in n).items()))
            out.setdefault(key, []).append(n)
        return out

    def primary(self, node: frozenset) -> str:
        return member_order(self.d, node)[0]

    def task_groups(self, classes: dict) -> list:
        """Classes gathered by their tasks and member counts: a bundle along a grid axis applies to
        every isomorphism class of a task at once (pairs never cross classes)."""
        groups: dict = {}
        for key, nodes in classes.items():
            tasks: Counter[str] = Counter()
            for (task, _), count in key:
                tasks[task] += count
            groups.setdefault(tuple(sorted(tasks.items())), []).append(nodes)
        return [g for g in groups.values() if sum(len(ns) for ns in g) > 1]

    def bundle_moves(self, group: list) -> list:
        """Bundle moves over a task group (a list of classes, each a list of nodes)."""
        d = self.d
        moves = []
        everything = [n for ns in group for n in ns]
        rank = max(len(d.index[self.primary(n)]) for n in everything)
        for axis in range(rank):
            groups: dict = {}
            for c, nodes in enumerate(group):
                for n in nodes:
                    idx = d.index[self.primary(n)]
                    if axis < len(idx):
                        groups.setdefault((c, idx[:axis] + idx[axis + 1:]), []).append(n)
            pairs = []
            for line in groups.values():
                line.sort(key=lambda n: d.index[self.primary(n)][axis])
                pairs += [(a, b) for a, b in zip(line[0::2], line[1::2]) if self.legal(a | b)]
            if pairs:
                moves.append((f"bundle axis {axis}", pairs))
        affinity = [p for nodes in group for p in self._affinity_pairs(nodes)]
        if affinity:
            moves.append(("bundle peers", affinity))
        return moves

    def _affinity_pairs(self, nodes: list) -> list:
        d = self.d
        feats = {}
        for n in nodes:
            f = set()
            for v in n:
                for p in d.ports[v]:
                    f.add(("peer", p.peer) if p.kind == "stream" else ("host", p.name, p.blocks))
            feats[n] = f
        used: set = set()
        pairs: list = []
        for a in nodes:
            if a in used:
                continue
            if time.perf_counter() > self.deadline:     # quadratic in the class: stop at the time limit
                break
            best = None
            for b in nodes:
                if b is a or b in used or not self.legal(a | b):
                    continue
                score = len(feats[a] & feats[b])
                if best is None or score > best[0]:
                    best = (score, b)
            if best is not None:
                used.update((a, best[1]))
                pairs.append((a, best[1]))
        return pairs

    def chain_moves(self, classes: dict, where: dict) -> list:
        """Per pair of classes: ``chain`` by traffic (each node of the first with the node of the
        second it exchanges most bytes with) and ``chain`` by load (the heaviest nodes of one class
        with the lightest of the other, when their tasks are joined by a stream: a chain of
        bundles at the task level, which fills tiles when traffic pairs overflow memory)."""
        d = self.d
        traffic: dict = {}
        for src, dst, _, b in d.edges:
            a, c = where[src], where[dst]
            if a != c:
                traffic[(a, c)] = traffic.get((a, c), 0) + b
                traffic[(c, a)] = traffic.get((c, a), 0) + b
        moves = []
        for k1, ns1 in classes.items():
            for k2, ns2 in classes.items():
                if k1 >= k2:
                    continue
                used, pairs = set(), []
                for a in ns1:
                    cands = [(traffic[(a, b)], b) for b in ns2 if b not in used and (a, b) in traffic]
                    for _, b in sorted(cands, key=lambda x: (-x[0], sorted(x[1]))):
                        if self.legal(a | b):
                            used.add(b)
                            pairs.append((a, b))
                            break
                if pairs:
                    moves.append((f"chain {k1} {k2}", pairs))
                small, big = (ns1, ns2) if len(ns1) <= len(ns2) else (ns2, ns1)
                small = sorted(small, key=lambda n: (-self.node_cost(n)[0], sorted(n)))
                big = sorted(big, key=lambda n: (self.node_cost(n)[0], sorted(n)))
                by_load = [(a, b) for a, b in zip(small, big) if self.linked(a | b) and self.legal(a | b)]
                if by_load and {frozenset(p) for p in by_load} != {frozenset(p) for p in pairs}:
                    moves.append((f"chain by load {k1} {k2}", by_load))
        return moves

    def linked(self, members: frozenset) -> bool:
        """Whether the merged node chains two or more tasks of which some pair is joined by a
        stream (a chain never merges nodes of one task: that is a bundle); legality then checks
        the whole chain."""
        tasks = {self.d.task[v] for v in members}
        return len(tasks) > 1 and any(link <= tasks for link in self.d.task_links)

    def apply(self, partition: Iterable[frozenset],
              pairs: Iterable[tuple[frozenset, frozenset]]) -> list[frozenset]:
        merged: set[frozenset] = set()
        out = []
        for a, b in pairs:
            out.append(a | b)
            merged.update((a, b))
        out += [n for n in partition if n not in merged]
        return out

    def acyclic(self, partition: Sequence[frozenset]) -> bool:
        where = {v: i for i, n in enumerate(partition) for v in n}
        g = nx.DiGraph()
        g.add_nodes_from(range(len(partition)))
        g.add_edges_from((where[s], where[t]) for s, t, _, _ in self.d.edges if where[s] != where[t])
        return nx.is_directed_acyclic_graph(g)

    # -- search ----------------------------------------------------------------------------------
    def leaf(self, partition: list[frozenset]) -> bool:
        """Place and route a folding that fits; record it when feasible."""
        em = exact.build(self.d, partition)
        budget = max(0.1, min(2.0, self.deadline - time.perf_counter()))
        status, assign, _, _ = exact.solve(em, budget, self.seed, workers=1)
        if assign is None:
            self.stats["leaves_failed"] += 1
            return False
        ev = evaluate(self.d, assign)
        routes, _ = route(self.d, ev.host, seed=self.seed) if ev.feasible else (None, "")
        if routes is None:
            self.stats["leaves_failed"] += 1
            return False
        self.stats["leaves_placed"] += 1
        self.found.append((ev.makespan, assign, routes, partition))
        return True

    def done(self) -> bool:
        return (len(self.found) >= self.first or self.stats["states"] >= self.max_states
                or time.perf_counter() > self.deadline)

    def run(self, partition: list[frozenset] | None = None) -> None:
        """Search from ``partition`` (default: every virtual node alone) until :meth:`done`."""
        if partition is None:
            partition = [frozenset([v]) for v in self.d.nodes]
        with progress.phase("mapping: search", self.time_limit, numbers=False) as ph:
            self._expand([partition], ph)

    def _report(self, ph: progress.Phase) -> None:
        best = min((f[0] for f in self.found), default=None)
        ph.update(incumbent=best, detail=f"{self.stats['states']} states, "
                                         f"{len(self.found)}/{self.first} foldings found")

    def _expand(self, stack: list, ph: progress.Phase) -> None:
        while stack and not self.done():
            state = stack.pop()
            key = frozenset(state)
            if key in self.seen:
                continue
            self.seen.add(key)
            self.stats["states"] += 1
            fits = len(state) <= len(self.d.tiles) and all(self.node_cost(n)[1] for n in state)
            placed = fits and self.leaf(state)
            if ph.live:
                self._report(ph)
            if placed:
                continue
            children = []
            classes = self.classes(state)
            where = {v: n for n in state for v in n}
            moves = []
            for group in self.task_groups(classes):
                moves += self.bundle_moves(group)
            moves += self.chain_moves(classes, where)
            for _, pairs in moves:
                self.stats["moves_tried"] += 1
                child = self.apply(state, pairs)
                if frozenset(child) in self.seen or not self.acyclic(child):
                    continue
                children.append((child, pairs))
            for child in reversed(self.rank(children)[:self.branch]):
                stack.append(child)

    def best(self) -> tuple | None:
        return min(self.found, key=lambda f: (f[0], len(f[3]))) if self.found else None
