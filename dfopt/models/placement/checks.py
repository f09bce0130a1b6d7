"""The checker of a placement, written without the solver and without the model's arrays:
everything is recounted from the graph, the platform and the options.

* ``placement-assignment`` — every kernel in exactly one known slot; pins and same-slot groups hold;
* ``placement-memory`` — every memory (kernel buffer, FIFO, converter) bound once to a kind its
  geometry allows;
* ``placement-capacity`` — per slot and resource, the kernels' sum plus the blocks of their bound
  memories (recounted from width x depth) at most ``max_utilization`` x capacity;
* ``placement-wires`` — per cut line, the widths of the streams crossing it at most the wires of
  the links crossing it;
* ``placement-objective`` — width x Manhattan distance of every stream plus ``balance_weight`` x
  the summed (max - min) utilisation equals the reported objective.
"""

from __future__ import annotations

from dfopt.solution import Check

_KINDS = ("lut", "ff", "dsp", "bram", "uram")


def _memory_faults(graph, solution) -> tuple[dict, list[str]]:
    """Per-kernel resources of the solution's memory binding, recounted from each buffer's
    geometry, and the faults of the binding (a buffer unbound, unknown, or in a kind its
    geometry does not allow)."""
    from dfopt.ir.memory import KIND_RESOURCE
    from dfopt.models.memory.buffers import graph_buffers

    binding = (solution.sections["placement"].get("memory") or {}).get("binding") or {}
    extra, bad = {}, []
    buffers = graph_buffers(graph)
    for b in buffers:
        kind = binding.get(b.key)
        if kind is None:
            bad.append(f"memory {b.key} has no binding")
        elif kind not in b.options:
            bad.append(f"memory {b.key} ({b.width} x {b.depth}) cannot be {kind}; it may be {', '.join(b.options)}")
        else:
            res = KIND_RESOURCE[kind]
            extra.setdefault(b.owner, {})
            extra[b.owner][res] = extra[b.owner].get(res, 0) + b.options[kind]
    keys = {b.key for b in buffers}
    bad += [f"unknown memory {k!r} in the binding" for k in binding if k not in keys]
    return extra, bad


def _assignment_faults(graph, platform, slot_of: dict, pins: dict, same_slot) -> list[str]:
    names = {s.name for s in platform.slots}
    bad = [f"kernel {k} is in no slot" for k in graph.kernels if k not in slot_of]
    bad += [f"unknown kernel {k!r}" for k in slot_of if k not in graph.kernels]
    bad += [f"kernel {k} is in unknown slot {s!r}" for k, s in slot_of.items() if s not in names]
    for k, where in pins.items():
        allowed = [where] if isinstance(where, str) else list(where)
        if k in slot_of and slot_of[k] not in allowed:
            bad.append(f"kernel {k} is in {slot_of[k]}, pinned to {', '.join(allowed)}")
    for group in same_slot:
        if len({slot_of.get(k) for k in group}) > 1:
            bad.append("kernels " + ", ".join(f"{k} ({slot_of.get(k)})" for k in group) + " must share a slot")
    return bad


def _usage(graph, platform, slot_of: dict, extra: dict) -> dict:
    used = {s.name: {r: 0.0 for r in _KINDS} for s in platform.slots}
    for k, s in slot_of.items():
        if s in used and k in graph.kernels:
            for r in _KINDS:
                used[s][r] += float(graph.kernels[k].resources.get(r, 0)) + float(extra.get(k, {}).get(r, 0))
    return used


def _cut_lines(platform):
    """(axis, low, high, side-of-slot, wires) of every line between neighbouring coordinates."""
    lines = []
    for axis in ("x", "y"):
        coord = {s.name: float(getattr(s, axis)) for s in platform.slots}
        levels = sorted(set(coord.values()))
        for lo, hi in zip(levels, levels[1:]):
            crossing = [lk.wires for lk in platform.links if (coord[lk.a] <= lo) != (coord[lk.b] <= lo)]
            lines.append((axis, lo, hi, {n: c <= lo for n, c in coord.items()}, sum(crossing) if crossing else None))
    return lines


def recount(instance, solution) -> dict:
    """Usage, cut wires, distance, imbalance and objective of the solution's assignment."""
    graph, platform = instance.graph, instance.platform
    sec = solution.sections["placement"]
    slot_of = sec["slot"]
    pos = {s.name: (float(s.x), float(s.y)) for s in platform.slots}
    used = _usage(graph, platform, slot_of, _memory_faults(graph, solution)[0])
    distance, wires = 0.0, {}
    lines = _cut_lines(platform)
    for st in graph.streams.values():
        a, b = slot_of.get(st.src), slot_of.get(st.dst)
        if st.src == st.dst or a not in pos or b not in pos:
            continue
        distance += st.width * (abs(pos[a][0] - pos[b][0]) + abs(pos[a][1] - pos[b][1]))
        for axis, lo, hi, low, _ in lines:
            if low[a] != low[b]:
                key = f"{axis} {lo:g}|{hi:g}"
                wires[key] = wires.get(key, 0.0) + st.width
    imbalance = {}
    for r in _KINDS:
        utils = [used[s.name][r] / s.resources[r] for s in platform.slots if s.resources.get(r, 0) > 0]
        if len(utils) > 1:
            imbalance[r] = max(utils) - min(utils)
    weight = float(sec.get("balance_weight", 0.0))
    return {"used": used, "wires": wires, "lines": lines, "distance": distance, "imbalance": imbalance,
            "objective": distance + weight * sum(imbalance.values())}


def checks(instance, solution) -> list[Check]:
    graph, platform = instance.graph, instance.platform
    sec = solution.sections.get("placement")
    if sec is None or "slot" not in sec:
        return [Check("placement-assignment", False, ["the solution has no placement.slot"])]
    opts = instance.options_for("placement")
    pins = sec.get("pins", opts.get("pins", {})) or {}            # the options it was solved under
    same_slot = sec.get("same_slot", opts.get("same_slot", [])) or []
    max_util = float(sec.get("max_utilization", opts.get("max_utilization", 0.8)))
    out = [Check("placement-assignment", *_verdict(_assignment_faults(graph, platform, sec["slot"], pins, same_slot))),
           Check("placement-memory", *_verdict(_memory_faults(graph, solution)[1]))]
    rc = recount(instance, solution)
    over = []
    for s in platform.slots:
        for r in _KINDS:
            cap = float(s.resources.get(r, 0))
            need = rc["used"][s.name][r]
            if need > max_util * cap + 1e-6 and (cap > 0 or need > 0):
                over.append(f"slot {s.name}: {r} {need:g} > {max_util:g} x {cap:g}")
    out.append(Check("placement-capacity", *_verdict(over)))
    wire_faults = []
    for axis, lo, hi, _, limit in rc["lines"]:
        used = rc["wires"].get(f"{axis} {lo:g}|{hi:g}", 0.0)
        if limit is not None and used > limit:
            wire_faults.append(f"line {axis} {lo:g}|{hi:g}: {used:g} wires > {limit}")
    out.append(Check("placement-wires", *_verdict(wire_faults)))
    obj = solution.objective
    ok = obj is not None and abs(rc["objective"] - float(obj)) <= 1e-6 * max(1.0, abs(rc["objective"]))
    out.append(Check("placement-objective", ok, [] if ok else [f"recounted objective {rc['objective']:.9g}, reported {obj}"]))
    if solution.bound is not None and obj is not None and solution.bound > float(obj) + 1e-6 * max(1.0, abs(float(obj))):
        out.append(Check("placement-bound", False, [f"bound {solution.bound} above the objective {obj}"]))
    return out


def _verdict(faults: list[str]) -> tuple[bool, list[str]]:
    return (not faults, faults[:20])


def check(instance, solution) -> list[str]:
    """Violations as text (empty when the placement is valid)."""
    return [f"{c.name}: {d}" for c in checks(instance, solution) if not c.ok for d in (c.details or ["failed"])]
