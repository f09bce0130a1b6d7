"""The memory-binding problem parsed once: buffers, the slot of each, capacities, weights.

A slot's usage of resource r (``lut``, ``ff``, ``bram`` in BRAM36 blocks, ``uram``) is the sum of
its kernels' ``resources[r]`` (the *base*) plus the cost of every buffer bound to a kind on r.
Capacity is the slot's resource times ``max_utilization``. A resource the slot lacks (absent or
0) has capacity 0: no kernel and no buffer may use it, and it is not in the objective.

The objective rows are the (slot, resource) pairs with a positive capacity; a binding's *peak* is
the largest ``weight[r] * used / capacity`` over them, its *sum* the total.

>>> from dfopt.ir.graph import Buffer, DataflowGraph, Kernel
>>> from dfopt.ir.platform import Platform, Slot
>>> g = DataflowGraph([Kernel("a", resources={"bram": 1}, buffers=(Buffer("t", 32, 1024),))])
>>> p = Platform("one", "fpga", slots=[Slot("S", resources={"lut": 1000, "bram": 4})])
>>> prob = memory_problem(g, p)
>>> prob.buffers[0].key, prob.options[0]
('a.t', {'lutram': 512, 'bram18': 1.0})
>>> prob.peak(["bram18"]), prob.peak(["lutram"])
((0.5, ('S', 'bram')), (0.512, ('S', 'lut')))
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dfopt.errors import InstanceError
from dfopt.ir.memory import KIND_RESOURCE, MEMORY_KINDS
from dfopt.models.memory.buffers import BufferUse, graph_buffers

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.platform import Platform

__all__ = [
    "POOLED_SLOT",
    "RESOURCES",
    "UNIT_NAMES",
    "MemoryProblem",
    "SlotCapacity",
    "memory_problem",
    "parse_mapping",
]

RESOURCES = ("lut", "ff", "bram", "uram")
UNIT_NAMES = {"lut": "LUTs", "ff": "FFs", "bram": "BRAM36", "uram": "URAM"}
POOLED_SLOT = "device"
EPS = 1e-9


@dataclass
class SlotCapacity:
    """One slot: the raw resources, the capacity (raw x max_utilization) and the kernels' base."""

    name: str
    raw: dict
    capacity: dict
    base: dict
    kernels: list = field(default_factory=list)

    def has(self, resource: str) -> bool:
        return self.capacity.get(resource, 0) > 0


@dataclass
class MemoryProblem:
    """Buffers (``buffers[i]`` in slot ``slot_of[i]``, its allowed ``options[i]``: kind -> cost),
    slots, weights and the kernel -> slot map."""

    buffers: list
    slot_of: list
    options: list
    slots: list
    weights: dict
    max_utilization: float
    placement: dict
    pooled: bool = False

    def rows(self) -> list[tuple[int, str]]:
        """(slot index, resource) of every objective row (positive capacity)."""
        return [(s, r) for s, slot in enumerate(self.slots) for r in RESOURCES if slot.has(r)]

    def usage(self, binding: Sequence[str]) -> list[dict]:
        """Per slot: resource -> used (base plus the buffers' cost), for ``binding[i]`` = kind."""
        used = [dict(slot.base) for slot in self.slots]
        for i, kind in enumerate(binding):
            r = KIND_RESOURCE[kind]
            used[self.slot_of[i]][r] = used[self.slot_of[i]].get(r, 0) + self.buffers[i].options[kind]
        return used

    def utilizations(self, binding: Sequence[str]) -> dict:
        """(slot index, resource) -> weighted utilisation ``weight * used / capacity``."""
        used = self.usage(binding)
        return {(s, r): self.weights[r] * used[s].get(r, 0) / self.slots[s].capacity[r]
                for s, r in self.rows()}

    def peak(self, binding: Sequence[str]) -> tuple[float, tuple[str, str] | None]:
        """The largest weighted utilisation and where it is (slot name, resource)."""
        util = self.utilizations(binding)
        if not util:
            return 0.0, None
        (s, r), value = max(util.items(), key=lambda kv: kv[1])
        return value, (self.slots[s].name, r)

    def weighted_sum(self, binding: Sequence[str]) -> float:
        return sum(self.utilizations(binding).values())

    def over_capacity(self, binding: Sequence[str]) -> list[tuple[int, str, float]]:
        """(slot index, resource, used) of every resource above its capacity."""
        out = []
        for s, used in enumerate(self.usage(binding)):
            cap = self.slots[s].capacity
            out += [(s, r, u) for r, u in used.items() if u > cap.get(r, 0) + EPS and u > 0]
        return out

    def fits(self, binding: Sequence[str]) -> bool:
        return not self.over_capacity(binding)


def parse_mapping(value: object, pointer: str) -> dict | None:
    """A dict option given as a dict, or as JSON text (how it comes from a CLI flag)."""
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as err:
            raise InstanceError(f"expected a JSON object, got {value!r} ({err.msg})", pointer=pointer) from None
        if isinstance(parsed, dict):
            return parsed
    raise InstanceError(f"expected an object, got {value!r}", pointer=pointer)


def _default_where(name: str, *path) -> str:
    return "/options/memory/" + "/".join(str(p) for p in (name,) + path)


def _weights(value, where=_default_where) -> dict:
    weights = {r: 1.0 for r in RESOURCES}
    for r, w in (parse_mapping(value, where("weights")) or {}).items():
        pointer = where("weights", r)
        if r not in RESOURCES:
            raise InstanceError(f"unknown resource {r!r}; expected one of: {', '.join(RESOURCES)}", pointer=pointer)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0:
            raise InstanceError(f"expected a positive number, got {w!r}", pointer=pointer)
        weights[r] = float(w)
    return weights


def _placement(graph, platform, value, where=_default_where) -> tuple[dict, bool]:
    given = parse_mapping(value, where("placement"))
    names = [s.name for s in platform.slots]
    if given is None:
        if len(names) == 1:
            return {k: names[0] for k in graph.kernels}, False
        return {k: POOLED_SLOT for k in graph.kernels}, True
    for kernel, slot in given.items():
        pointer = where("placement", kernel)
        if kernel not in graph.kernels:
            raise InstanceError(f"unknown kernel {kernel!r}; the graph has: {', '.join(graph.kernels)}",
                                pointer=pointer)
        if slot not in names:
            raise InstanceError(f"kernel {kernel}: unknown slot {slot!r}; platform {platform.name!r} has: "
                                f"{', '.join(names)}", pointer=pointer)
    missing = [k for k in graph.kernels if k not in given]
    if missing:
        raise InstanceError(f"the placement leaves out kernel(s) {', '.join(missing)}; place every kernel "
                            "or drop the placement to pool the device", pointer=where("placement"))
    return dict(given), False


def _slots(graph, platform, placement: dict, pooled: bool, mu: float) -> list[SlotCapacity]:
    if pooled:
        raw = {r: sum(s.resources.get(r, 0) for s in platform.slots) for r in RESOURCES}
        slots = [SlotCapacity(POOLED_SLOT, raw, {}, {})]
    else:
        slots = [SlotCapacity(s.name, {r: s.resources.get(r, 0) for r in RESOURCES}, {}, {})
                 for s in platform.slots]
    index = {s.name: i for i, s in enumerate(slots)}
    for slot in slots:
        slot.capacity = {r: slot.raw[r] * mu for r in RESOURCES}
        slot.base = {r: 0 for r in RESOURCES}
    for name, kernel in graph.kernels.items():
        slot = slots[index[placement[name]]]
        slot.kernels.append(name)
        for r in RESOURCES:
            slot.base[r] += kernel.resources.get(r, 0)
    return slots


def memory_problem(graph: DataflowGraph, platform: Platform | None, placement: object = None, weights: object = None,
                   max_utilization: float = 1.0, buffers: list[BufferUse] | None = None,
                   where: Callable[..., str] = _default_where) -> MemoryProblem:
    """Parse the problem; a bad option is an :class:`InstanceError` naming the option
    (``where(name, *path)`` gives its pointer; by default the instance's ``/options/memory/...``).

    Without a placement, a one-slot platform holds everything; a platform with several slots is
    pooled into one slot named ``device`` whose capacity is the sum over its slots.
    """
    if platform is None or not platform.slots:
        raise InstanceError("memory binding needs a platform with slots", pointer="/platform")
    if isinstance(max_utilization, bool) or not 0 < float(max_utilization) <= 1:
        raise InstanceError(f"max_utilization must be in (0, 1], got {max_utilization!r}",
                            pointer=where("max_utilization"))
    mu = float(max_utilization)
    placed, pooled = _placement(graph, platform, placement, where)
    slots = _slots(graph, platform, placed, pooled, mu)
    index = {s.name: i for i, s in enumerate(slots)}
    uses = graph_buffers(graph) if buffers is None else buffers
    slot_of = [index[placed[b.owner]] for b in uses]
    options = [{k: c for k, c in b.options.items() if slots[s].has(KIND_RESOURCE[k]) or len(b.options) == 1}
               for b, s in zip(uses, slot_of)]
    return MemoryProblem(uses, slot_of, options, slots, _weights(weights, where), mu, placed, pooled)


def kind_order(kind: str) -> int:
    return MEMORY_KINDS.index(kind)
