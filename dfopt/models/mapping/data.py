"""The mapping problem's data, built from the instance without a solver: the virtual nodes with
their work, memory and ports, the channel class of every port, the legality relations of the two
folding primitives, and the region of the NPU array the mapping may use.

Ports and channel classes. A virtual node has a port per stream end and per host tensor it loads
or stores (kernel ``attrs.io``, written by :func:`dfopt.dato.graph.host_ports`). A port's *role*
is (direction, kind, peer task or tensor, bytes, ordinal among equal roles of the node); its
*class* is (task, role). Members of one task on one tile form a bundle: they run one after
another, so the ports of one class time-share a single DMA channel of the tile. A stream port
needs no channel when both ends sit on the same tile (a chain: the stream is a local buffer) or
on two tiles that share a data memory (AIE2: a core reaches its own, west, north and south
neighbours' memories; mlir-aie then lowers the FIFO to shared memory without DMA).

>>> from dfopt.instance import load
>>> d = mapping_data(load("instances/mapping/ffn-4x4.json"))
>>> len(d.nodes), len(d.tiles), d.task["ffn2_1_1"]
(16, 16, 'ffn2')
>>> sorted({p.role[:3] for p in d.ports["ffn2_1_1"]})
[('in', 'host', 'W2'), ('in', 'stream', 'ffn1'), ('in', 'stream', 'ffn2'), ('out', 'host', 'Y')]
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

import networkx as nx

from dfopt.errors import InstanceError
from dfopt.models.options import where

if TYPE_CHECKING:
    from dfopt.instance.types import Instance

#: Bytes a DMA channel moves per cycle (AIE2 stream switch ports are 32 bits wide).
BYTES_PER_CYCLE = 4
#: Stack bytes mlir-aie reserves on a core by default.
STACK_BYTES = 1024
#: Objects a mem tile buffers per routed channel (ping-pong).
MEM_TILE_DEPTH = 2


@dataclass(frozen=True)
class Port:
    """One end of a stream or one host tensor access of virtual node ``node``."""

    node: str
    dir: str                    # in | out
    kind: str                   # stream | host
    name: str                   # stream or tensor name
    bytes: int                  # bytes moved over the whole run
    role: tuple                 # (dir, kind, peer task or tensor, bytes, ordinal)
    peer: str | None = None     # streams: the virtual node at the other end
    blocks: tuple = ()          # host: the blocks moved, in order

    @property
    def cycles(self) -> int:
        """DMA cycles the port's traffic takes on one channel."""
        return -(-self.bytes // BYTES_PER_CYCLE)


@dataclass
class MappingData:
    """Everything the formulations and the checker share; see the module docstring."""

    nodes: list
    task: dict
    work: dict
    bytes: dict
    iso: dict                   # node -> isomorphism class id (same task, work, bytes and roles)
    ports: dict                 # node -> [Port]
    edges: list                 # (src, dst, stream name, bytes)
    dag: nx.DiGraph
    tiles: list                 # region compute tiles (col, row), column-major
    neighbours: dict            # tile -> tiles of the region sharing its data memory
    mem_tiles: list             # (col, row) of the region's mem tiles
    shim_columns: list          # region columns with a shim DMA
    limits: dict                # compute_in/out, compute_bytes, mem_in/out, mem_bytes, shim_in/out
    platform: str = ""
    conflicts: set = field(default_factory=set)   # frozenset pairs: same iso class but dependent
    task_links: set = field(default_factory=set)  # frozenset task pairs joined by a stream
    tasks: list = field(default_factory=list)     # in first-appearance order
    index: dict = field(default_factory=dict)     # node -> grid index (attrs.index; else its position)
    # task -> data memory of a bundle of it: its largest member (members run in turn, reusing buffers)
    task_bytes: dict = field(default_factory=dict)
    # task -> the most of its members one tile may hold (options.mapping.max_members; absent: no limit)
    caps: dict = field(default_factory=dict)

    @functools.cached_property
    def rank(self) -> dict:
        """node -> (position of its task, its position): the member order of a physical node."""
        trank = {t: i for i, t in enumerate(self.tasks)}
        return {v: (trank[self.task[v]], i) for i, v in enumerate(self.nodes)}


# -- construction ---------------------------------------------------------------------------------

def _region(platform, region: dict | None, pointer: str) -> tuple[list, list, list]:
    npu = platform.npu
    columns, compute_rows = npu["columns"], list(npu["rows"]["compute"])
    if region is None:
        region = {"columns": [0, min(columns, 4) - 1], "rows": [compute_rows[0], compute_rows[-1]]}
    if not isinstance(region, dict) or set(region) - {"columns", "rows"}:
        raise InstanceError("region must be an object {\"columns\": [first, last], \"rows\": [first, last]} "
                            f"(inclusive array coordinates), got {region!r}", pointer=pointer)
    ranges = {}
    for key, valid in (("columns", list(range(columns))), ("rows", compute_rows)):
        value = region.get(key, [valid[0], valid[-1]])
        ok = (isinstance(value, list) and len(value) == 2 and all(isinstance(x, int) for x in value)
              and value[0] <= value[1] and value[0] in valid and value[1] in valid)
        if not ok:
            raise InstanceError(f"region {key} must be [first, last] within {valid[0]}..{valid[-1]} of "
                                f"{platform.name}, got {value!r}", pointer=f"{pointer}/{key}")
        ranges[key] = list(range(value[0], value[1] + 1))
    tiles = [(c, r) for c in ranges["columns"] for r in ranges["rows"]]
    mem = [(c, npu["rows"]["mem"]) for c in ranges["columns"]]
    no_dma = set(npu.get("shim_tile", {}).get("no_dma_columns", []))
    shim = [c for c in ranges["columns"] if c not in no_dma]
    return tiles, mem, shim


def shares_memory(a: tuple, b: tuple) -> bool:
    """Two compute tiles share a data memory (AIE2): the same column and adjacent rows, or the
    same row and adjacent columns (a core reaches its west, north and south neighbours; its east
    neighbour reaches it).

    >>> shares_memory((1, 2), (1, 3)), shares_memory((1, 2), (2, 2)), shares_memory((1, 2), (2, 3))
    (True, True, False)
    """
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1


def _ports(graph, task: dict) -> dict:
    raw: dict[str, list[tuple]] = {k: [] for k in graph.kernels}
    for s in graph.streams.values():
        b = s.tokens * s.width // 8
        raw[s.src].append(("out", "stream", task[s.dst], b, s.name, s.dst, ()))
        raw[s.dst].append(("in", "stream", task[s.src], b, s.name, s.src, ()))
    for name, k in graph.kernels.items():
        for io in k.attrs.get("io", []):
            raw[name].append((io["dir"], "host", io["tensor"], int(io["bytes"]), io["tensor"], None,
                              tuple(tuple(tuple(ax) for ax in blk) for blk in io.get("blocks", []))))
    ports = {}
    for name, items in raw.items():
        seen: Counter[tuple] = Counter()
        out = []
        for d, kind, what, b, pname, peer, blocks in sorted(items, key=lambda x: (x[:4], x[4])):
            key = (d, kind, what, b)
            out.append(Port(name, d, kind, pname, b, key + (seen[key],), peer, blocks))
            seen[key] += 1
        ports[name] = out
    return ports


def _validate_io(graph) -> None:
    for name, k in graph.kernels.items():
        index = k.attrs.get("index")
        if index is not None and not (isinstance(index, list) and all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in index)):
            raise InstanceError(f"kernel {name}: attrs.index must be a list of integers >= 0 (its position in the "
                                f"task's grid), got {index!r}", pointer=f"/graph/kernels/{name}/attrs/index")
        io = k.attrs.get("io", [])
        if not isinstance(io, list):
            raise InstanceError(f"kernel {name}: attrs.io must be a list of host ports",
                                pointer=f"/graph/kernels/{name}")
        for i, p in enumerate(io):
            ok = (isinstance(p, dict) and p.get("dir") in ("in", "out") and isinstance(p.get("tensor"), str)
                  and isinstance(p.get("bytes"), int) and p["bytes"] >= 0)
            if not ok:
                raise InstanceError(f"kernel {name}: host port {i} must be {{\"tensor\": str, \"dir\": \"in\"|\"out\", "
                                    f"\"bytes\": int >= 0, \"blocks\": [...]}}, got {p!r}",
                                    pointer=f"/graph/kernels/{name}/attrs/io/{i}")
            if not isinstance(p.get("blocks", []), list):
                raise InstanceError(f"kernel {name}: host port {i}: blocks must be a list, got {p['blocks']!r}",
                                    pointer=f"/graph/kernels/{name}/attrs/io/{i}/blocks")
            for j, block in enumerate(p.get("blocks", [])):
                if not _is_block(block):
                    raise InstanceError(f"kernel {name}: host port {i} block {j} must be a list of [count, index] "
                                        f"pairs of integers, 0 <= index < count, got {block!r}",
                                        pointer=f"/graph/kernels/{name}/attrs/io/{i}/blocks/{j}")


def _is_block(block) -> bool:
    """``[[count, index], ...]``: the block's position along each axis of the tensor's grid."""
    return isinstance(block, list) and all(
        isinstance(ax, list) and len(ax) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in ax)
        and 0 <= ax[1] < ax[0] <= 1 << 20 for ax in block)


def mapping_data(instance: Instance, region: dict | None = None,
                 region_pointer: str = "/options/mapping/region", max_members: dict | None = None,
                 members_pointer: str = "/options/mapping/max_members") -> MappingData:
    """The data of a ``problem: mapping`` instance (``region`` and ``max_members`` override
    ``options.mapping.region`` and ``.max_members``; the pointers say where errors about them
    point)."""
    graph, platform = instance.graph, instance.platform
    assert graph is not None  # the driver checks the parts a problem needs
    if platform is None or platform.kind != "npu" or not platform.npu:
        raise InstanceError("the mapping problem needs an NPU platform (a preset: npu1, npu2; or an inline "
                            "object with kind \"npu\")", pointer="/platform")
    if region is None:
        region = instance.options_for("mapping").get("region")
    tiles, mem, shim = _region(platform, region, region_pointer)
    _validate_io(graph)
    task = {n: str(k.attrs.get("task", n)) for n, k in graph.kernels.items()}
    work = {n: int(k.latency or 0) for n, k in graph.kernels.items()}
    mem_bytes = {n: int(k.resources.get("bytes", 0)) for n, k in graph.kernels.items()}
    ports = _ports(graph, task)
    dag = nx.DiGraph()
    dag.add_nodes_from(graph.kernels)
    edges = []
    for s in graph.streams.values():
        dag.add_edge(s.src, s.dst)
        edges.append((s.src, s.dst, s.name, s.tokens * s.width // 8))
    if not nx.is_directed_acyclic_graph(dag):
        cycle = " -> ".join(u for u, _ in nx.find_cycle(dag))
        raise InstanceError(f"the virtual graph has a cycle ({cycle}); a mapping needs an acyclic graph",
                            pointer="/graph")
    sig = {n: (task[n], work[n], mem_bytes[n], tuple(p.role for p in ports[n])) for n in graph.kernels}
    classes: dict = {}
    iso = {n: classes.setdefault(sig[n], len(classes)) for n in graph.kernels}
    conflicts = set()
    by_iso: dict = {}
    for n in graph.kernels:
        by_iso.setdefault(iso[n], []).append(n)
    reach = {n: nx.descendants(dag, n) for n in graph.kernels}
    for members in by_iso.values():
        for a, b in combinations(members, 2):
            if b in reach[a] or a in reach[b]:
                conflicts.add(frozenset((a, b)))
    tasks = list(dict.fromkeys(task[n] for n in graph.kernels))
    links = {frozenset((task[s.src], task[s.dst])) for s in graph.streams.values() if task[s.src] != task[s.dst]}
    npu = platform.npu
    limits = {"compute_in": npu["compute_tile"]["dma_in"], "compute_out": npu["compute_tile"]["dma_out"],
              "compute_bytes": npu["compute_tile"]["memory_bytes"],
              "mem_in": npu["mem_tile"]["dma_in"], "mem_out": npu["mem_tile"]["dma_out"],
              "mem_bytes": npu["mem_tile"]["memory_bytes"],
              "shim_in": npu["shim_tile"]["dma_in"], "shim_out": npu["shim_tile"]["dma_out"]}
    neighbours = {t: [u for u in tiles if shares_memory(t, u)] for t in tiles}
    index = {n: tuple(k.attrs["index"]) if isinstance(k.attrs.get("index"), list) else (i,)
             for i, (n, k) in enumerate(graph.kernels.items())}
    task_bytes: dict = {}
    for n in graph.kernels:
        task_bytes[task[n]] = max(task_bytes.get(task[n], 0), mem_bytes[n])
    if max_members is None:
        max_members = instance.options_for("mapping").get("max_members")
    caps = _caps(max_members or {}, tasks, members_pointer)
    return MappingData(list(graph.kernels), task, work, mem_bytes, iso, ports, edges, dag, tiles, neighbours,
                       mem, shim, limits, platform.name, conflicts, links, tasks, index, task_bytes, caps)


def mapping_data_of(instance: Instance, options) -> MappingData:
    """:func:`mapping_data` with the region and ``max_members`` of the problem's ``options``, errors
    pointing where each came from."""
    return mapping_data(instance, options.region, where(options, "region"), options.max_members,
                        where(options, "max_members"))


def _caps(max_members: dict, tasks: list, pointer: str) -> dict:
    """``options.mapping.max_members`` checked: task names of the graph, integers >= 1."""
    if not isinstance(max_members, dict):
        raise InstanceError(f"max_members must be an object {{task: most members on one tile}}, got {max_members!r}",
                            pointer=pointer)
    caps = {}
    for name, n in max_members.items():
        at = f"{pointer}/{name}" if pointer.startswith("/") else f"{pointer}[{name!r}]"
        if name not in tasks:
            raise InstanceError(f"max_members names task {name!r}, which the graph does not have (its tasks: "
                                f"{', '.join(tasks[:12])}{', ...' if len(tasks) > 12 else ''})",
                                pointer=at)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InstanceError(f"max_members[{name!r}] must be an integer >= 1, got {n!r}", pointer=at)
        caps[name] = n
    return caps


def connected_task_sets(d: MappingData) -> list[frozenset]:
    """Every set of tasks that may share a tile: non-empty and connected by streams (a chain of
    bundles). Enumerated by growing connected sets one neighbour at a time."""
    adj: dict[str, set[str]] = {t: set() for t in d.tasks}
    for link in d.task_links:
        a, b = tuple(link)
        adj[a].add(b)
        adj[b].add(a)
    found, frontier = set(), [frozenset([t]) for t in d.tasks]
    while frontier:
        s = frontier.pop()
        if s in found:
            continue
        found.add(s)
        for t in set().union(*(adj[x] for x in s)) - s:
            frontier.append(s | {t})
    return sorted(found, key=lambda s: (len(s), sorted(s)))
