"""The checker of a placement, written without the solver and without the model's arrays:
everything is recounted from the graph, the platform and the options.

* ``placement-assignment`` — every kernel in exactly one known slot; pins and same-slot groups hold;
* ``placement-memory`` — every memory (kernel buffer, FIFO, converter) bound once to a kind its
  geometry allows, and to the kind ``memory_binding`` fixes (``bram``: BRAM18, registers for a
  FIFO too shallow for a block; ``heuristic``: the size-ordered binding; ``joint``: any); the
  reported resources of the memories recounted;
* ``placement-capacity`` — per slot and resource, the kernels' sum plus the blocks of their bound
  memories (recounted from width x depth) at most ``max_utilization`` x capacity, and equal to the
  reported usage;
* ``placement-wires`` — per cut line, the widths of the streams crossing it at most the wires of
  the links crossing it, and equal to the reported wires;
* ``placement-objective`` — width x Manhattan distance of every stream plus ``balance_weight`` x
  the summed (max - min) utilisation equals the reported objective (and the reported distance,
  imbalance and crossing streams their recount).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.placement import Options

_KINDS = ("lut", "ff", "dsp", "bram", "uram")


def _memory_faults(graph, solution) -> tuple[dict, list[str]]:
    """Per-kernel resources of the solution's memory binding, recounted from each buffer's
    geometry, and the faults of the binding (a buffer unbound, unknown, or in a kind its
    geometry does not allow)."""
    from dfopt.ir.memory import KIND_RESOURCE
    from dfopt.models.memory.buffers import graph_buffers

    binding = dict(solution.decision.binding)
    extra: dict[str, dict[str, float]] = {}
    bad: list[str] = []
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


def _mode_faults(instance, mode: str, binding: dict) -> list[str]:
    """Memories bound to another kind than the one ``memory_binding`` fixes (``joint``: none)."""
    from dfopt.models.memory.buffers import graph_buffers

    if mode == "joint":
        return []
    if mode == "heuristic":
        from dfopt.models.memory import bind_for_placement

        want = bind_for_placement(instance.graph, instance.platform)[1]
    else:
        want = {b.key: "bram18" if "bram18" in b.options else "register" for b in graph_buffers(instance.graph)}
    return [f"memory {k} is {binding[k]}; memory_binding {mode!r} binds it to {kind}"
            for k, kind in sorted(want.items()) if k in binding and binding[k] != kind]


def _reported_faults(sec: dict, rc: dict, extra: dict, slot_of: dict, graph) -> dict:
    """Check name -> the section's figures that differ from the recount."""
    def close(a, b) -> bool:
        return isinstance(a, (int, float)) and not isinstance(a, bool) and abs(float(a) - b) <= 1e-6 * max(1.0, abs(b))

    out: dict = {"memory": [], "capacity": [], "wires": [], "objective": []}
    resources = (sec.get("memory") or {}).get("resources")
    if isinstance(resources, dict):
        for k in sorted(set(resources) | set(extra)):
            got, want = resources.get(k) or {}, extra.get(k, {})
            for r in sorted(set(got) | set(want)):
                if not close(got.get(r, 0), float(want.get(r, 0))):
                    out["memory"].append(f"kernel {k}: reported memory {r} {got.get(r, 0)}, recounted {want.get(r, 0)}")
    for name, row in (sec.get("slots") or {}).items():
        for r, v in ((row or {}).get("used") or {}).items():
            if name in rc["used"] and r in rc["used"][name] and not close(v, rc["used"][name][r]):
                out["capacity"].append(f"slot {name}: reported {r} usage {v}, recounted {rc['used'][name][r]:g}")
        n = sum(1 for k, s in slot_of.items() if s == name and k in graph.kernels)
        if "kernels" in (row or {}) and row["kernels"] != n:
            out["capacity"].append(f"slot {name}: reported {row['kernels']} kernels, it holds {n}")
    limits = {f"{axis} {lo:g}|{hi:g}": limit for axis, lo, hi, _, limit in rc["lines"]}
    for cut in sec.get("cuts") or []:
        line = cut.get("line") if isinstance(cut, dict) else None
        used = rc["wires"].get(line, 0.0)
        if line is not None and "wires_used" in cut and not close(cut["wires_used"], used):
            out["wires"].append(f"line {line}: reported {cut['wires_used']} wires, recounted {used:g}")
        if line is not None and "wires" in cut and cut["wires"] != limits.get(line, cut["wires"]):
            out["wires"].append(f"line {line}: reported a limit of {cut['wires']} wires, its links have {limits[line]}")
    if "distance" in sec and not close(sec["distance"], rc["distance"]):
        out["objective"].append(f"reported distance {sec['distance']}, recounted {rc['distance']:g}")
    for r, v in (sec.get("imbalance") or {}).items():
        if r in rc["imbalance"] and not close(v, rc["imbalance"][r]):
            out["objective"].append(f"reported {r} imbalance {v}, recounted {rc['imbalance'][r]:g}")
    crossing = sum(1 for st in graph.streams.values() if slot_of.get(st.src) != slot_of.get(st.dst))
    if "crossing_streams" in sec and sec["crossing_streams"] != crossing:
        out["objective"].append(f"reported {sec['crossing_streams']} crossing streams, recounted {crossing}")
    return out


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


def recount(instance: Instance, solution: Solution, balance_weight: float = 0.0) -> dict:
    """Usage, cut wires, distance, imbalance and objective of the solution's assignment."""
    graph, platform = instance.graph, instance.platform
    assert graph is not None and platform is not None  # the driver checks the parts a problem needs
    slot_of = dict(solution.decision.slot)
    pos = {s.name: (float(s.x), float(s.y)) for s in platform.slots}
    used = _usage(graph, platform, slot_of, _memory_faults(graph, solution)[0])
    distance = 0.0
    wires: dict[str, float] = {}
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
    weight = float(balance_weight)
    return {"used": used, "wires": wires, "lines": lines, "distance": distance, "imbalance": imbalance,
            "objective": distance + weight * sum(imbalance.values())}


def checks(instance: Instance, options: Options, solution: Solution) -> list[Check]:
    """The checks above; pins, same-slot groups, ``max_utilization`` and ``balance_weight`` are
    the instance's and the options', never the solution's."""
    graph, platform = instance.graph, instance.platform
    assert graph is not None and platform is not None  # the driver checks the parts a problem needs
    slot_of = dict(solution.decision.slot)
    pins, same_slot = dict(options.pins), [list(g) for g in options.same_slot]
    max_util = float(options.max_utilization)
    sec = solution.sections.get("placement") or {}
    extra, memory = _memory_faults(graph, solution)
    memory += _mode_faults(instance, options.memory_binding, dict(solution.decision.binding))
    rc = recount(instance, solution, options.balance_weight)
    reported = _reported_faults(sec, rc, extra, slot_of, graph)
    out = [Check("placement-assignment", *_verdict(_assignment_faults(graph, platform, slot_of, pins, same_slot))),
           Check("placement-memory", *_verdict(memory + reported["memory"]))]
    over = []
    for s in platform.slots:
        for r in _KINDS:
            cap = float(s.resources.get(r, 0))
            need = rc["used"][s.name][r]
            if need > max_util * cap + 1e-6 and (cap > 0 or need > 0):
                over.append(f"slot {s.name}: {r} {need:g} > {max_util:g} x {cap:g}")
    out.append(Check("placement-capacity", *_verdict(over + reported["capacity"])))
    wire_faults = []
    for axis, lo, hi, _, limit in rc["lines"]:
        used = rc["wires"].get(f"{axis} {lo:g}|{hi:g}", 0.0)
        if limit is not None and used > limit:
            wire_faults.append(f"line {axis} {lo:g}|{hi:g}: {used:g} wires > {limit}")
    out.append(Check("placement-wires", *_verdict(wire_faults + reported["wires"])))
    obj = solution.objective
    ok = obj is not None and abs(rc["objective"] - float(obj)) <= 1e-6 * max(1.0, abs(rc["objective"]))
    objective = ([] if ok else [f"recounted objective {rc['objective']:.9g}, reported {obj}"]) + reported["objective"]
    out.append(Check("placement-objective", *_verdict(objective)))
    return out


def _verdict(faults: list[str]) -> tuple[bool, list[str]]:
    return (not faults, faults[:20])


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    """Violations as text (empty when the placement is valid); ``options`` default to the instance's."""
    if options is None:
        from dfopt.models.driver import make_options

        options = make_options(instance, problem="placement")
    return [f"{c.name}: {d}" for c in checks(instance, options, solution) if not c.ok
            for d in (c.details or ["failed"])]
