"""Recount a mapping (virtual node -> compute tile) without a solver: the physical nodes, the DMA
channels each tile uses, its data memory, the estimated makespan and every rule it breaks.

Rules (docs/dato.md; the same as the exact model's constraints):

* members of one task on a tile form a *bundle*: isomorphic (the same work, memory and port
  roles) and independent (no path between any two, as :meth:`dfopt.dato.graph.MappingGraph.can_bundle`);
* the tasks on a tile form a *chain*: connected by streams (a chain of bundles), each with the
  same number of members (the core runs one loop, one member of every task per iteration — a
  bundle of chains), a power of two (the loop moves an equal share of every FIFO per iteration:
  1/3 of a FIFO's bytes is rarely whole; the search's pairing makes no other sizes);
* the tiles form an acyclic graph (no tile waits on a tile that waits on it — the chain
  primitive's "no reverse dependency", which also keeps bundles independent through other tiles);
* per tile at most ``compute_in`` / ``compute_out`` DMA channels: one per channel class that has a
  port needing DMA (a host port always; a stream port unless its peer is on the same tile or on
  a tile sharing the data memory);
* per tile data memory: the stack, plus per task the largest member's memory (a bundle reuses its
  buffers), at most ``compute_bytes``.

Estimated makespan: the largest over tiles of the members' work (a bundle runs its members one
after another; a chain shares the core) plus the DMA cycles of every port that needs a channel
(bytes / 4 bytes per cycle). Streams inside a tile or between memory-sharing neighbours cost
nothing: that is what chain and neighbour placement buy.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from itertools import combinations

import networkx as nx

from dfopt.models.mapping.data import STACK_BYTES, MappingData

#: The rules a mapping keeps, as the checker reports them.
RULES = ("assignment", "legality", "ports", "memory")


@dataclass
class Evaluation:
    members: dict                     # tile -> ordered members
    mode: dict                        # (node, port index) -> internal | shared | dma
    channels: dict                    # tile -> {"in": [class...], "out": [class...]}
    memory: dict                      # tile -> bytes
    estimate: dict                    # tile -> cycles
    makespan: int
    problems: dict = field(default_factory=dict)  # rule -> [message]: assignment, legality, ports, memory
    host: list = field(default_factory=list)   # host channel requests (tile, class, dir, tensor, blocks, block bytes)

    @property
    def faults(self) -> list:
        """Every broken rule's message, rule by rule."""
        return [f for rule in RULES for f in self.problems.get(rule, [])]

    @property
    def feasible(self) -> bool:
        return not any(self.problems.values())


def class_text(cls: tuple) -> str:
    """``gemm in host A`` / ``gemm out stream->gemm #0`` for a (task, role) class."""
    task, (d, kind, what, _, ordinal) = cls[0], cls[1]
    arrow = "<-" if d == "in" else "->"
    return f"{task} {d} {kind}{arrow if kind == 'stream' else ' '}{what}" + (f" #{ordinal}" if ordinal else "")


def member_order(d: MappingData, members: Iterable[str]) -> list:
    return sorted(members, key=d.rank.__getitem__)


def node_kind(d: MappingData, members: Collection[str]) -> str:
    """``single``, ``bundle`` (one task, several members), ``chain`` (several tasks, one member
    each) or ``chain of bundles``."""
    tasks = {d.task[v] for v in members}
    if len(members) == 1:
        return "single"
    if len(tasks) == 1:
        return "bundle"
    return "chain" if len(tasks) == len(members) else "chain of bundles"


def legality_faults(d: MappingData, members: Iterable[str], where: str) -> list[str]:
    """Bundle and chain rules inside one physical node (``where`` names it in the messages)."""
    faults = []
    by_task: dict = {}
    for v in members:
        by_task.setdefault(d.task[v], []).append(v)
    for task, vs in by_task.items():
        for a, b in combinations(vs, 2):
            if d.iso[a] != d.iso[b]:
                faults.append(f"{where}: {a} and {b} (task {task}) are not isomorphic (work, memory or ports "
                              "differ), so they cannot be bundled")
            elif frozenset((a, b)) in d.conflicts:
                faults.append(f"{where}: {a} and {b} depend on each other, so they cannot be bundled")
    sizes = {task: len(vs) for task, vs in by_task.items()}
    for task, n in sizes.items():
        if n > d.caps.get(task, n):
            faults.append(f"{where}: {n} members of task {task}; options.mapping.max_members allows {d.caps[task]} "
                          "on one tile")
    odd = {task: n for task, n in sizes.items() if n & (n - 1)}
    if odd:
        text = ", ".join(f"{n} x {task}" for task, n in odd.items())
        faults.append(f"{where}: a bundle of {text}: bundle sizes are powers of two (a core loop of n iterations "
                      "moves 1/n of each FIFO's bytes per iteration, which n = 3 cannot cut evenly)")
    if len(set(sizes.values())) > 1:
        text = ", ".join(f"{n} x {task}" for task, n in sizes.items())
        faults.append(f"{where}: bundles of different sizes ({text}); a core runs one loop over its members, one "
                      "member of every task per iteration, so every task on a tile needs as many")
    tasks = list(by_task)
    if len(tasks) > 1:
        g = nx.Graph()
        g.add_nodes_from(tasks)
        g.add_edges_from(tuple(link) for link in d.task_links if link <= set(tasks))
        if not nx.is_connected(g):
            parts = [sorted(c) for c in nx.connected_components(g)]
            faults.append(f"{where}: tasks {' | '.join(', '.join(p) for p in parts)} share the tile but no stream "
                          "joins them (a physical node is a chain of bundles)")
    return faults


def evaluate(d: MappingData, assign: dict) -> Evaluation:
    """Recount ``assign`` (virtual node -> (col, row)); faults are empty when every rule holds."""
    problems: dict[str, list[str]] = {rule: [] for rule in RULES}
    placed, legal, ports, memory_use = (problems[rule] for rule in RULES)
    tiles = set(d.tiles)
    members: dict = {}
    for v in d.nodes:
        t = assign.get(v)
        if t is None:
            placed.append(f"virtual node {v} is not mapped")
            continue
        t = tuple(t)
        if t not in tiles:
            placed.append(f"virtual node {v} is on tile({t[0]},{t[1]}), outside the region's compute tiles")
            continue
        members.setdefault(t, []).append(v)
    members = {t: member_order(d, vs) for t, vs in sorted(members.items())}
    where = {v: t for t, vs in members.items() for v in vs}
    for t, vs in members.items():
        legal += legality_faults(d, vs, f"tile({t[0]},{t[1]})")
    quotient = nx.DiGraph()
    quotient.add_nodes_from(members)
    for src, dst, _, _ in d.edges:
        if src in where and dst in where and where[src] != where[dst]:
            quotient.add_edge(where[src], where[dst])
    if not nx.is_directed_acyclic_graph(quotient):
        cycle = " -> ".join(f"tile({u[0]},{u[1]})" for u, _ in nx.find_cycle(quotient))
        legal.append(f"the tiles wait on each other in a cycle: {cycle} (a chain with a reverse dependency)")
    mode, channels, memory, estimate, host = {}, {}, {}, {}, []
    lim = d.limits
    for t, vs in members.items():
        need: dict[str, dict] = {"in": {}, "out": {}}
        cycles = 0
        for v in vs:
            cycles += d.work[v]
            for i, p in enumerate(d.ports[v]):
                if p.kind == "stream":
                    other = where.get(p.peer)
                    m = "internal" if other == t else ("shared" if other in d.neighbours[t] else "dma")
                else:
                    m = "dma"
                mode[(v, i)] = m
                if m == "dma":
                    need[p.dir].setdefault((d.task[v], p.role), []).append(p)
                    cycles += p.cycles
        channels[t] = {k: sorted(need[k]) for k in need}
        for dirn in ("in", "out"):
            for cls, ps in sorted(need[dirn].items()):
                if ps[0].kind == "host":
                    blocks = tuple(b for p in ps for b in p.blocks)
                    size = max(p.bytes // max(1, len(p.blocks)) for p in ps)
                    host.append((t, cls, dirn, ps[0].name, blocks, size))
            if len(need[dirn]) > lim[f"compute_{dirn}"]:
                names = ", ".join(class_text(c) for c in sorted(need[dirn]))
                ports.append(f"tile({t[0]},{t[1]}) needs {len(need[dirn])} {dirn}put DMA channels ({names}); "
                              f"it has {lim[f'compute_{dirn}']}")
        memory[t] = STACK_BYTES + sum(d.task_bytes[task] for task in {d.task[v] for v in vs})
        if memory[t] > lim["compute_bytes"]:
            tasks = ", ".join(sorted({d.task[v] for v in vs}))
            memory_use.append(f"tile({t[0]},{t[1]}) needs {memory[t]} bytes of data memory (tasks {tasks} + stack); "
                          f"it has {lim['compute_bytes']}")
        estimate[t] = cycles
    makespan = max(estimate.values(), default=0)
    return Evaluation(members, mode, channels, memory, estimate, makespan, problems, host)
