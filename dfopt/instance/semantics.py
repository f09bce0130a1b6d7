"""Checks of an instance's meaning beyond its schema: names, endpoints, types, cycles, platforms,
options. Each check returns ``(path, message)`` issues; nothing here raises on bad input."""

from __future__ import annotations

import networkx as nx

from dfopt.instance.common import (_at, _duplicate_names, _entries, _Faulty, _itensor_from_dict,
                                   _name, _unknown, _who)
from dfopt.instance.isl import _program_issues
from dfopt.instance.types import NEEDS_DAG, NEEDS_GRAPH, NEEDS_OPERATORS, NEEDS_PLATFORM, NEEDS_PROGRAM, PROBLEMS
from dfopt.ir.itensor import ITensorType
from dfopt.ir.opgraph import operator_issues
from dfopt.ir.platform import PRESET_NAMES, load_preset
from dfopt.schema import did_you_mean, found

# == semantic checks ==========================================================================

def _semantic_issues(data: dict, faulty: _Faulty) -> list:
    problem = data.get("problem") if data.get("problem") in PROBLEMS else None
    issues = _requirement_issues(data, problem)
    graph = data.get("graph")
    if isinstance(graph, dict):
        issues += _graph_issues(graph, ("graph",), faulty)
        if problem in NEEDS_DAG:
            issues += _cycle_issues(graph, ("graph",), problem)
    issues += _platform_issues(data.get("platform"), problem)
    if isinstance(data.get("program"), dict):
        issues += _program_issues(data["program"], ("program",))
    if isinstance(data.get("operators"), dict):
        issues += [(path, msg) for path, msg in operator_issues(data["operators"], ("operators",))
                   if faulty.clean(path)]
    issues += _option_issues(data)
    return issues


def _requirement_issues(data: dict, problem: str | None) -> list:
    issues = []
    if problem in NEEDS_GRAPH and "graph" not in data:
        issues.append((("graph",), f"problem {problem!r} needs a graph (kernels and streams), "
                                   "but the instance has none"))
    if problem in NEEDS_OPERATORS and "operators" not in data:
        issues.append((("operators",), f"problem {problem!r} needs an operator graph (tensors, ops, outputs), "
                                       "but the instance has none"))
    if problem in NEEDS_PROGRAM and "program" not in data:
        issues.append((("program",), f"problem {problem!r} needs a program (params and statements "
                                     "with isl domains), but the instance has none"))
    if problem in NEEDS_PLATFORM and "platform" not in data:
        presets = ", ".join(sorted(PRESET_NAMES))
        issues.append((("platform",), f"problem {problem!r} needs a platform (a preset: {presets}; "
                                      "or an inline object), but the instance has none"))
    return issues


def _graph_issues(graph: dict, base: tuple, faulty: _Faulty) -> list:
    kernels = _entries(graph.get("kernels"))
    streams = _entries(graph.get("streams"))
    issues, kernel_at = _duplicate_names(kernels, base + ("kernels",), "kernel")
    more, _ = _duplicate_names(streams, base + ("streams",), "stream")
    issues += more
    for i, kernel in kernels:
        issues += _loop_issues(kernel, base + ("kernels", i))
    for i, stream in streams:
        path = base + ("streams", i)
        issues += _endpoint_issues(stream, path, _who("stream", stream, i), kernel_at)
        issues += _stream_type_issues(stream, path, _who("stream", stream, i), faulty)
    return issues


def _loop_issues(kernel: dict, base: tuple) -> list:
    loops = _entries(kernel.get("loops"))
    issues, _ = _duplicate_names(loops, base + ("loops",), "loop")
    more, _ = _duplicate_names(_entries(kernel.get("buffers")), base + ("buffers",), "buffer")
    issues += more
    who = _who("kernel", kernel, base[-1])
    return [(path, f"{who}: {message}") for path, message in issues]


def _endpoint_issues(stream: dict, base: tuple, who: str, kernel_at: dict) -> list:
    issues = []
    for end in ("src", "dst"):
        name = stream.get(end)
        if isinstance(name, str) and name and name not in kernel_at:
            issues.append((base + (end,), f"{who}: {end} names {_unknown('kernel', name, kernel_at)}"))
    return issues


def _stream_type_issues(stream: dict, base: tuple, who: str, faulty: _Faulty) -> list:
    issues, types = [], {}
    for side in ("src_type", "dst_type"):
        if isinstance(stream.get(side), dict) and faulty.clean(base + (side,)):
            itype = _itensor_from_dict(stream[side])
            faults = itype.problems()
            issues += [(base + (side, name), f"{who}: {side} {message}") for name, message in faults]
            if not faults:
                types[side] = itype
    src, dst = types.get("src_type"), types.get("dst_type")
    tokens = stream.get("tokens")
    if src is not None and "tokens" in stream and faulty.clean(base + ("tokens",)) and int(tokens) != src.tokens:
        issues.append((base + ("tokens",), f"{who}: tokens is {found(tokens)}, but the src_type streams "
                                           f"{src.tokens} tokens (the product of its tripcounts "
                                           f"{list(src.tripcounts)}); drop tokens or make them agree"))
    if src is not None and dst is not None:
        issues += _same_tensor_issues(src, dst, base, who)
    return issues


def _same_tensor_issues(src: ITensorType, dst: ITensorType, base: tuple, who: str) -> list:
    issues = []
    for name, a, b in (("shape", list(src.shape), list(dst.shape)), ("dtype", src.dtype, dst.dtype)):
        if a != b:
            issues.append((base + ("dst_type", name),
                           f"{who}: dst_type {name} {found(b)} differs from src_type {name} {found(a)}; "
                           "both ends view one tensor (a converter changes only its tiling)"))
    return issues


def _cycle_issues(graph: dict, base: tuple, problem: str) -> list:
    """One cycle, named ``k0 -> k1 -> k0`` with its streams, when ``problem`` needs a DAG."""
    g, order = nx.MultiDiGraph(), {}
    for _, kernel in _entries(graph.get("kernels")):
        name = _name(kernel)
        if name is not None and name not in order:
            order[name] = len(order)
            g.add_node(name)
    for i, stream in _entries(graph.get("streams")):
        src, dst = stream.get("src"), stream.get("dst")
        if isinstance(src, str) and isinstance(dst, str) and src in order and dst in order:
            g.add_edge(src, dst, key=i)
    try:
        edges = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return []
    start = min(range(len(edges)), key=lambda j: order[edges[j][0]])
    edges = edges[start:] + edges[:start]
    path = " -> ".join([u for u, _, _ in edges] + [edges[0][0]])
    streams = graph["streams"]
    names = ", ".join(_name(streams[i]) or f"#{i}" for _, _, i in edges)
    return [(base + ("streams", edges[0][2]),
             f"problem {problem!r} needs an acyclic graph, but the kernels form the cycle {path} "
             f"(streams {names}); remove one of these streams")]


def _platform_issues(platform, problem: str | None) -> list:
    if isinstance(platform, str):
        issues = _preset_issues(platform)
        slotless = platform in PRESET_NAMES and not load_preset(platform).slots
    elif isinstance(platform, dict):
        issues = _link_issues(platform)
        slotless = not platform.get("slots")
    else:
        return []
    if problem in NEEDS_PLATFORM and slotless:
        issues.append((("platform",), f"problem {problem!r} needs a platform with slots, "
                                      f"but platform {_platform_label(platform)} has none"))
    return issues


def _preset_issues(name: str) -> list:
    if name in PRESET_NAMES or not name:
        return []
    presets = ", ".join(sorted(PRESET_NAMES))
    return [(("platform",), f"unknown platform preset {name!r}{did_you_mean(name, PRESET_NAMES)} "
                            f"(expected one of: {presets}; or an inline platform object)")]


def _platform_label(platform) -> str:
    if isinstance(platform, str):
        return repr(platform)
    return repr(platform["name"]) if isinstance(platform.get("name"), str) else "(inline)"


def _link_issues(platform: dict) -> list:
    base = ("platform",)
    slots = _entries(platform.get("slots"))
    issues, slot_at = _duplicate_names(slots, base + ("slots",), "slot")
    for i, link in _entries(platform.get("links")):
        ends = [link.get("a"), link.get("b")]
        for end, name in zip(("a", "b"), ends):
            if isinstance(name, str) and name and name not in slot_at:
                issues.append((base + ("links", i, end), f"link #{i}: {end} names {_unknown('slot', name, slot_at)}"))
        if ends[0] == ends[1] and isinstance(ends[0], str) and ends[0]:
            issues.append((base + ("links", i, "b"), f"link #{i} joins slot {ends[0]!r} to itself; "
                                                      "a link joins two different slots"))
    return issues


def _slot_names(data: dict) -> list[str] | None:
    """The slot names of the instance's platform (preset or inline), or None when unknown."""
    platform = data.get("platform")
    if isinstance(platform, str):
        return [s.name for s in load_preset(platform).slots] if platform in PRESET_NAMES else None
    if isinstance(platform, dict):
        return [n for _, s in _entries(platform.get("slots")) if (n := _name(s))]
    return None


def _option_issues(data: dict) -> list:
    """Pinned kernels and slots of the placement options must exist."""
    pins = _at(data, ("options", "placement", "pins"))
    if not isinstance(pins, dict):
        pins = {}
    graph = data.get("graph")
    kernels = ([n for _, k in _entries(graph.get("kernels")) if (n := _name(k))]
               if isinstance(graph, dict) else None)
    slots = _slot_names(data)
    base, issues = ("options", "placement", "pins"), []
    for kernel, slot in pins.items():
        if kernels is not None and kernel not in kernels:
            issues.append((base + (kernel,), f"the pin names {_unknown('kernel', str(kernel), kernels)}"))
        for one in ([slot] if isinstance(slot, str) else slot if isinstance(slot, list) else []):
            if slots is not None and isinstance(one, str) and one and one not in slots:
                issues.append((base + (kernel,), f"kernel {kernel!r} is pinned to {_unknown('slot', one, slots)}"))
    for i, group in enumerate(_at(data, ("options", "placement", "same_slot")) or []):
        for j, kernel in enumerate(group if isinstance(group, list) else []):
            if kernels is not None and isinstance(kernel, str) and kernel not in kernels:
                issues.append((("options", "placement", "same_slot", i, j),
                               f"same_slot group #{i} names {_unknown('kernel', kernel, kernels)}"))
    return issues
