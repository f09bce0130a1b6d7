"""The checker of a memory binding, written without the model or a solver: recount everything.

* ``memory-binding`` — every memory of :func:`.buffers.graph_buffers` bound exactly once, to a
  kind its geometry allows (:func:`dfopt.ir.memory.memory_options`), with the reported cost and
  owner; no unknown keys;
* ``memory-capacity`` — per slot and resource, the kernels' resources plus the buffers' cost
  (recounted with :func:`dfopt.ir.memory.memory_cost`; a FIFO with the FIFO geometry of
  :func:`dfopt.ir.memory.fifo_storage`) at most the slot's resource times ``max_utilization``, and
  equal to the reported usage;
* ``memory-objective`` — the peak weighted utilisation recomputed equals the objective (and the
  reported peak, where it is, the sum of the weighted utilisations and the count of each kind);
  the bound is not above it.

The placement, ``max_utilization`` and ``weights`` are the options' (the instance's, and the
user's for ``dfopt check``), never the solution's.

>>> import dataclasses, dfopt
>>> inst = dfopt.load("instances/memory/tight.json")
>>> sol = dfopt.solve(inst)
>>> check(inst, sol)
[]
>>> sol.decision = dataclasses.replace(sol.decision, binding={**sol.decision.binding, "k.a": "register"})
>>> check(inst, sol)
["k.a: kind 'register' is not allowed for 16 x 2048 bits (kernel); allowed: lutram, bram18, uram"]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from dfopt.errors import InstanceError
from dfopt.ir.memory import KIND_RESOURCE, memory_cost, memory_options
from dfopt.models.memory.buffers import BufferUse, graph_buffers
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.memory import Options

RESOURCES = ("lut", "ff", "bram", "uram")
POOLED = "device"
TOL = 1e-9


def _close(a, b) -> bool:
    return abs(float(a) - float(b)) <= TOL * max(1.0, abs(float(a)), abs(float(b)))


def _binding_faults(uses, binding, sec) -> list[str]:
    cost, owner = sec.get("cost", {}), sec.get("owner", {})
    bad = []
    for b in uses:
        kind = binding.get(b.key)
        allowed = memory_options(b.width, b.depth, fifo=b.source == "fifo")
        if kind is None:
            bad.append(f"{b.source} memory {b.key} ({b.width} x {b.depth} bits) is not bound")
        elif kind not in allowed:
            bad.append(f"{b.key}: kind {kind!r} is not allowed for {b.width} x {b.depth} bits ({b.source}); "
                       f"allowed: {', '.join(allowed)}")
        else:
            recount = memory_cost(kind, b.width, b.depth, fifo=b.source == "fifo")
            if b.key in cost and not _close(cost[b.key], recount):
                bad.append(f"{b.key}: reported cost {cost[b.key]} in {kind}, the recount is {recount}")
            if b.key in owner and owner[b.key] != b.owner:
                bad.append(f"{b.key}: reported owner {owner[b.key]!r}, the memory belongs to {b.owner!r}")
    keys = {b.key for b in uses}
    bad += [f"binding names unknown memory {k!r}" for k in binding if k not in keys]
    return bad


def _settings(options) -> tuple[float, dict, dict | None]:
    weights = {r: 1.0 for r in RESOURCES}
    weights.update(options.weights or {})
    return float(options.max_utilization), weights, options.placement


def _capacities(instance, placement, mu) -> tuple[dict, dict, list[str]]:
    """(kernel -> slot, slot -> resource -> capacity, faults)."""
    platform, graph = instance.platform, instance.graph
    raw = {s.name: {r: s.resources.get(r, 0) for r in RESOURCES} for s in platform.slots}
    if placement is None:
        placement = {k: next(iter(raw)) if len(raw) == 1 else POOLED for k in graph.kernels}
    if POOLED in placement.values() and POOLED not in raw:
        raw = {POOLED: {r: sum(v[r] for v in raw.values()) for r in RESOURCES}}
    bad = [f"kernel {k} is not placed" for k in graph.kernels if k not in placement]
    bad += [f"placement names unknown kernel {k!r}" for k in placement if k not in graph.kernels]
    bad += [f"kernel {k} is placed on unknown slot {s!r}" for k, s in placement.items() if s not in raw]
    if not 0 < mu <= 1:
        bad.append(f"max_utilization {mu} is not in (0, 1]")
    caps = {s: {r: v * mu for r, v in res.items()} for s, res in raw.items()}
    return placement, caps, bad


def recount(instance: Instance, uses: Iterable[BufferUse], binding: Mapping[str, str], placement: Mapping[str, str],
            caps: Mapping[str, Mapping[str, float]]) -> dict:
    """slot -> resource -> used: the kernels' resources plus the bound memories' cost."""
    assert instance.graph is not None  # the driver checks the parts a problem needs
    used = {s: {r: 0.0 for r in RESOURCES} for s in caps}
    for name, kernel in instance.graph.kernels.items():
        for r in RESOURCES:
            used[placement[name]][r] += kernel.resources.get(r, 0)
    for b in uses:
        kind = binding[b.key]
        used[placement[b.owner]][KIND_RESOURCE[kind]] += memory_cost(kind, b.width, b.depth, fifo=b.source == "fifo")
    return used


def _capacity_faults(used, caps, sec) -> list[str]:
    bad = []
    reported = sec.get("slots", {})
    for s, res in used.items():
        for r, u in res.items():
            if u > caps[s][r] * (1 + TOL) + TOL:
                bad.append(f"slot {s}: {r} used {u:g}, capacity {caps[s][r]:g}")
            got = reported.get(s, {}).get(r, {}).get("used")
            if got is not None and not _close(got, u):
                bad.append(f"slot {s}: reported {r} usage {got:g} differs from the recount {u:g}")
    return bad


def utilizations(used: Mapping[str, Mapping[str, float]], caps: Mapping[str, Mapping[str, float]],
                 weights: Mapping[str, float]) -> dict:
    """(slot, resource) -> ``weight * used / capacity``, over the resources with a capacity."""
    return {(s, r): weights[r] * u / caps[s][r] for s, res in used.items() for r, u in res.items() if caps[s][r] > 0}


def peak_of(used: Mapping[str, Mapping[str, float]], caps: Mapping[str, Mapping[str, float]],
            weights: Mapping[str, float]) -> float:
    """The largest ``weight * used / capacity`` over the resources with a capacity."""
    return max(utilizations(used, caps, weights).values(), default=0.0)


def _figure_faults(sec, binding, util, peak) -> list[str]:
    """The reported sum, counts and place of the peak against the recount."""
    bad = []
    if sec.get("sum") is not None and not _close(sec["sum"], sum(util.values())):
        bad.append(f"reported sum {sec['sum']} differs from the recount {sum(util.values())}")
    counts = sec.get("counts")
    if isinstance(counts, dict):
        for kind in sorted(set(counts) | set(binding.values())):
            n = sum(1 for k in binding.values() if k == kind)
            if counts.get(kind, 0) != n:
                bad.append(f"reported {counts.get(kind, 0)} memories in {kind}, the binding has {n}")
    at = sec.get("peak_at")
    if isinstance(at, list) and len(at) == 2 and not (tuple(at) in util and _close(util[tuple(at)], peak)):
        bad.append(f"reported peak at {at}, where the weighted utilisation is {util.get(tuple(at))}, not {peak}")
    return bad


def checks(instance: Instance, options: Options, solution: Solution) -> list[Check]:
    sec = solution.sections.get("memory") or {}
    binding = dict(solution.decision.binding)
    assert instance.graph is not None  # the driver checks the parts a problem needs
    try:
        uses = graph_buffers(instance.graph)
    except InstanceError as err:
        return [Check("memory-binding", False, [str(err)])]
    bad = _binding_faults(uses, binding, sec)
    out = [Check("memory-binding", not bad, bad)]
    if bad:
        return out
    mu, weights, placement = _settings(options)
    placement, caps, bad = _capacities(instance, placement, mu)
    if bad:
        return out + [Check("memory-capacity", False, bad)]
    used = recount(instance, uses, binding, placement, caps)
    bad = _capacity_faults(used, caps, sec)
    out.append(Check("memory-capacity", not bad, bad))
    util = utilizations(used, caps, weights)
    peak = max(util.values(), default=0.0)
    obj = _figure_faults(sec, binding, util, peak)
    if solution.objective is None or not _close(solution.objective, peak):
        obj.append(f"objective {solution.objective} differs from the recounted peak utilisation {peak}")
    if sec.get("peak") is not None and not _close(sec["peak"], peak):
        obj.append(f"reported peak {sec['peak']} differs from the recount {peak}")
    if solution.bound is not None and float(solution.bound) > peak * (1 + TOL) + TOL:
        obj.append(f"bound {solution.bound} exceeds the recounted peak {peak}")
    out.append(Check("memory-objective", not obj, obj))
    return out


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    """Violations only (empty when every check passes); ``options`` default to the instance's."""
    if options is None:
        from dfopt.models.driver import make_options

        options = make_options(instance, problem="memory")
    return [d for c in checks(instance, options, solution) if not c.ok for d in c.details]
