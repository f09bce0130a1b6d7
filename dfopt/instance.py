"""Instance files (``dfopt-instance/1``): load, validate, build the IR, and write back.

Loading checks the JSON Schema (``dfopt/schema/instance-1.json``) and then the meaning: unique
names, streams that name existing kernels, itensor types, acyclic graphs where a problem needs a
DAG, isl strings of programs, option values that name kernels and slots. Every fault is collected
first; then one :class:`~dfopt.errors.InstanceError` lists them all, each with its JSON pointer.
Bad input never ends in another exception.

>>> inst = from_dict({"format": "dfopt-instance/1", "name": "pair", "problem": "fifo",
...     "graph": {"kernels": [{"name": "a"}, {"name": "b", "ii": 2}],
...               "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 4}]}})
>>> inst.graph.consume_ii("e"), inst.options_for()
(2, {})
>>> to_dict(inst)["graph"]["streams"]
[{'name': 'e', 'src': 'a', 'dst': 'b', 'tokens': 4}]
>>> try:
...     from_dict({"format": "dfopt-instance/1", "name": "x", "problem": "fifo"})
... except InstanceError as err:
...     print(err)
/graph: problem 'fifo' needs a graph (kernels and streams), but the instance has none
"""

from __future__ import annotations

import copy
import json
import logging
import os
from dataclasses import dataclass, field
from functools import partial

import networkx as nx

from dfopt.errors import InstanceError, Problem
from dfopt.io import write_json_atomic
from dfopt.ir.graph import DataflowGraph, Kernel, Loop, Stream
from dfopt.ir.itensor import ITensorType
from dfopt.ir.platform import PRESET_NAMES, Platform, load_preset
from dfopt.ir.program import Program, Statement
from dfopt.schema import did_you_mean, found, pointer, schema_issues, to_problems
from dfopt.solution import Solution

log = logging.getLogger(__name__)

FORMAT = "dfopt-instance/1"
PROBLEMS = ("fifo", "fusion", "converter", "placement", "memory", "schedule", "mapping",
            "sparse", "tiling", "pipeline")
NEEDS_GRAPH = frozenset({"fifo", "fusion", "converter", "placement", "memory", "mapping", "tiling",
                         "pipeline"})
NEEDS_DAG = frozenset({"fifo", "fusion"})
NEEDS_PROGRAM = frozenset({"schedule"})
NEEDS_PLATFORM = frozenset({"placement"})

_INSTANCE_ENTITIES = {("graph", "kernels"): "kernel", ("graph", "streams"): "stream",
                      ("platform", "slots"): "slot", ("program", "statements"): "statement",
                      ("program", "arrays"): "array"}
_GRAPH_ENTITIES = {("kernels",): "kernel", ("streams",): "stream"}


@dataclass(eq=False)
class Instance:
    """One parsed instance. ``options`` maps a problem name to its option values as given.

    Equality compares the content (graphs by their kernels and streams), not ``path``.

    >>> a = Instance("x", "memory", options={"memory": {"seed": 3}})
    >>> a.options_for(), a == Instance("x", "memory", options={"memory": {"seed": 3}})
    ({'seed': 3}, True)
    """

    name: str
    problem: str
    graph: DataflowGraph | None = None
    platform: Platform | None = None
    program: Program | None = None
    options: dict = field(default_factory=dict)
    description: str = ""
    path: str | None = None
    platform_name: str | None = None

    def options_for(self, problem: str | None = None) -> dict:
        """A copy of the options of ``problem`` (default: this instance's problem)."""
        return copy.deepcopy(self.options.get(problem or self.problem, {}))

    def _content(self) -> tuple:
        graph = None if self.graph is None else (list(self.graph.kernels.items()),
                                                 list(self.graph.streams.items()))
        return (self.name, self.problem, graph, self.platform, self.program, self.options,
                self.description, self.platform_name)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Instance):
            return NotImplemented
        return self._content() == other._content()


# == loading ==================================================================================

def load(path) -> Instance:
    """Read, validate and build the instance in the JSON file ``path``.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "missing.json")
    >>> try:
    ...     load(p)
    ... except InstanceError as err:
    ...     "no such file" in str(err)
    True
    """
    instance = loads(_read_text(path, "instance"), source=os.fspath(path))
    instance.path = os.fspath(path)
    return instance


def loads(text: str, source: str = "<string>") -> Instance:
    """Parse JSON text and build the instance; ``source`` names the input in the log.

    >>> try:
    ...     loads('{"name": "x"\\n "problem": "fifo"}')
    ... except InstanceError as err:
    ...     print(err)
    /: invalid JSON at line 2, column 2: Expecting ',' delimiter
    """
    return from_dict(_parse_json(text), source=source)


def from_dict(data: dict, source: str = "<dict>") -> Instance:
    """Validate ``data`` (parsed JSON) and build the instance; raises one InstanceError with
    every problem found."""
    found_problems = validate_dict(data)
    if found_problems:
        log.debug("instance from %s has %d problem(s)", source, len(found_problems))
        raise InstanceError(problems=found_problems)
    return _build(data)


def validate_dict(data: dict) -> list[Problem]:
    """Every problem of an instance (schema, then meaning), sorted by JSON pointer; never raises.

    >>> [str(p) for p in validate_dict({"format": "dfopt-instance/1", "name": "x",
    ...                                 "problem": "fifo", "graph": {"kernels": [{"name": 3}]}})]
    ['/graph/kernels/0/name: expected non-empty string, got 3']
    """
    issues = schema_issues(data, "instance", label=partial(_label, data, _INSTANCE_ENTITIES))
    if isinstance(data, dict):
        issues += _semantic_issues(data, _Faulty(issues))
    return to_problems(issues)


def _read_text(path, what: str) -> str:
    shown = repr(os.fspath(path))
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError as err:
        raise InstanceError(f"cannot read {what} file {shown}: no such file") from err
    except UnicodeDecodeError as err:
        raise InstanceError(f"{what} file {shown} is not UTF-8 text ({err.reason})") from err
    except OSError as err:
        raise InstanceError(f"cannot read {what} file {shown}: {err.strerror or err}") from err


def _parse_json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InstanceError(f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from err
    except RecursionError as err:
        raise InstanceError("invalid JSON: nested too deeply") from err


class _Faulty:
    """The paths that already have schema faults; checks skip values under them."""

    def __init__(self, issues):
        self.paths = [path for path, _ in issues]

    def clean(self, path: tuple) -> bool:
        return not any(p[:len(path)] == path for p in self.paths)


def _label(root, entities: dict, path: tuple) -> str | None:
    """``"stream 'e2'"`` for a path inside the stream named e2 (see ``entities``), else None."""
    for prefix, kind in entities.items():
        n = len(prefix)
        if path[:n] != prefix or len(path) <= n:
            continue
        if kind == "array":
            return f"array {path[n]!r}"
        entry = _at(root, path[:n + 1])
        name = entry.get("name") if isinstance(entry, dict) else None
        return f"{kind} {name!r}" if isinstance(name, str) and name else None
    return None


def _at(root, path: tuple):
    """The value at ``path`` in nested dicts and lists, or None."""
    for key in path:
        if isinstance(root, dict) and key in root:
            root = root[key]
        elif isinstance(root, list) and isinstance(key, int) and 0 <= key < len(root):
            root = root[key]
        else:
            return None
    return root


def _entries(value) -> list[tuple[int, dict]]:
    """(index, entry) of the object entries of a JSON list (anything else: none)."""
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


def _name(entry: dict) -> str | None:
    name = entry.get("name")
    return name if isinstance(name, str) and name else None


def _who(kind: str, entry: dict, index: int) -> str:
    name = _name(entry)
    return f"{kind} {name!r}" if name else f"{kind} #{index}"


def _unknown(kind: str, name: str, known) -> str:
    """``"unknown kernel 'kk1', did you mean 'k1'?"`` or with the known names listed."""
    known = list(known)
    hint = did_you_mean(name, known)
    if hint:
        return f"unknown {kind} {name!r}{hint}"
    shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
    return f"unknown {kind} {name!r} (known {kind}s: {shown or 'none'})"


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
    issues += _option_issues(data)
    return issues


def _requirement_issues(data: dict, problem: str | None) -> list:
    issues = []
    if problem in NEEDS_GRAPH and "graph" not in data:
        issues.append((("graph",), f"problem {problem!r} needs a graph (kernels and streams), "
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


def _duplicate_names(entries, base: tuple, kind: str) -> tuple[list, dict]:
    """Issues for repeated names, and the index of each name's first entry."""
    first, issues = {}, []
    for i, entry in entries:
        name = _name(entry)
        if name is None:
            continue
        if name in first:
            issues.append((base + (i, "name"), f"duplicate {kind} name {name!r} (first at "
                                               f"{pointer(base + (first[name],))}); {kind} names must be unique"))
        else:
            first[name] = i
    return issues, first


def _loop_issues(kernel: dict, base: tuple) -> list:
    loops = _entries(kernel.get("loops"))
    issues, _ = _duplicate_names(loops, base + ("loops",), "loop")
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
        return []
    graph = data.get("graph")
    kernels = ([n for _, k in _entries(graph.get("kernels")) if (n := _name(k))]
               if isinstance(graph, dict) else None)
    slots = _slot_names(data)
    base, issues = ("options", "placement", "pins"), []
    for kernel, slot in pins.items():
        if kernels is not None and kernel not in kernels:
            issues.append((base + (kernel,), f"the pin names {_unknown('kernel', str(kernel), kernels)}"))
        if slots is not None and isinstance(slot, str) and slot and slot not in slots:
            issues.append((base + (kernel,), f"kernel {kernel!r} is pinned to {_unknown('slot', slot, slots)}"))
    return issues


# == programs (isl) ===========================================================================

_ISL = {"set": ("Set", "an isl set such as '[N] -> { S0[i] : 0 <= i < N }'"),
        "map": ("Map", "an isl map such as '[N] -> { S0[i] -> A[i] }'"),
        "union map": ("UnionMap", "an isl union map such as '[N] -> { S0[i] -> [i, 0]; S1[i] -> [i, 1] }'")}


def _program_issues(program: dict, base: tuple) -> list:
    params = [p for p in program.get("params", []) if isinstance(p, str)] \
        if isinstance(program.get("params"), list) else []
    issues = _duplicate_params(program.get("params"), base)
    arrays = program.get("arrays") if isinstance(program.get("arrays"), dict) else {}
    check = partial(_isl_issues, params=params)
    if isinstance(program.get("context"), str):
        issues += check("set", program["context"], base + ("context",), "")[1]
    statements = _entries(program.get("statements"))
    dup, first = _duplicate_names(statements, base + ("statements",), "statement")
    issues += dup
    for i, statement in statements:
        issues += _statement_issues(statement, base + ("statements", i), check, arrays)
    if isinstance(program.get("schedule"), str):
        umap, more = check("union map", program["schedule"], base + ("schedule",), "")
        issues += more + _scheduled_statement_issues(umap, first, base + ("schedule",), "")
    return issues


def _duplicate_params(params, base: tuple) -> list:
    seen, issues = set(), []
    for i, p in enumerate(params if isinstance(params, list) else []):
        if isinstance(p, str) and p in seen:
            issues.append((base + ("params", i), f"parameter {p!r} is declared twice"))
        elif isinstance(p, str):
            seen.add(p)
    return issues


def _statement_issues(statement: dict, base: tuple, check, arrays: dict) -> list:
    who = _who("statement", statement, base[-1])
    name, issues = _name(statement), []
    if isinstance(statement.get("domain"), str):
        domain, issues = check("set", statement["domain"], base + ("domain",), who)
        if domain is not None and name is not None and domain.get_tuple_name() != name:
            issues.append((base + ("domain",), f"{who}: the domain's tuple is named "
                                               f"{domain.get_tuple_name()!r}; it must be the statement name {name!r}"))
    for kind in ("reads", "writes"):
        for j, text in enumerate(statement.get(kind) if isinstance(statement.get(kind), list) else []):
            if isinstance(text, str):
                issues += _access_issues(text, base + (kind, j), who, name, check, arrays)
    if isinstance(statement.get("schedule"), str):
        umap, more = check("union map", statement["schedule"], base + ("schedule",), who)
        issues += more + _scheduled_statement_issues(umap, {name: 0} if name else None,
                                                     base + ("schedule",), who)
    return issues


def _access_issues(text: str, path: tuple, who: str, name: str | None, check, arrays: dict) -> list:
    access, issues = check("map", text, path, who)
    if access is None:
        return issues
    import islpy as isl

    source, target = access.get_tuple_name(isl.dim_type.in_), access.get_tuple_name(isl.dim_type.out)
    if source is None:
        issues.append((path, f"{who}: expected an access from the statement's tuple such as "
                             f"'{{ {name or 'S0'}[i] -> A[i] }}', got {found(text)} (its domain tuple has no name)"))
    elif name is not None and source != name:
        issues.append((path, f"{who}: the access starts from {source!r}; it must start from the statement {name!r}"))
    if arrays and target not in arrays:
        issues.append((path, f"{who}: the access names {_unknown('array', str(target), arrays)}"))
    return issues


def _scheduled_statement_issues(umap, statements: dict | None, path: tuple, who: str) -> list:
    if umap is None or statements is None:
        return []
    sets = umap.domain().get_set_list()
    names = [sets.get_at(i).get_tuple_name() for i in range(sets.n_set())]
    return [(path, f"{_prefix(who)}the schedule maps {_unknown('statement', str(n), statements)}")
            for n in names if n not in statements]


def _isl_issues(kind: str, text: str, path: tuple, who: str, params: list) -> tuple:
    """Parse ``text`` as an isl object of ``kind``: (object or None, issues)."""
    import islpy as isl

    cls_name, example = _ISL[kind]
    try:
        obj = getattr(isl, cls_name)(text)
    except isl.Error as err:
        return None, [(path, f"{_prefix(who)}expected {example}, got {found(text)} "
                             f"(isl: {_isl_complaint(err, kind)})")]
    space = obj.get_space()
    used = [space.get_dim_name(isl.dim_type.param, i) for i in range(space.dim(isl.dim_type.param))]
    undeclared = [p for p in used if p not in params]
    if not undeclared:
        return obj, []
    declared = ", ".join(params) or "none"
    listing = ", ".join(repr(p) for p in undeclared)
    return obj, [(path, f"{_prefix(who)}uses parameter(s) {listing} that /program/params does not declare "
                        f"(declared: {declared})")]


def _prefix(who: str) -> str:
    return f"{who}: " if who else ""


def _isl_complaint(err: Exception, kind: str) -> str:
    text = str(err)
    if " failed: " in text:
        text = text.split(" failed: ", 1)[1]
    if " in /" in text:
        text = text.rsplit(" in /", 1)[0]
    if text.startswith("Assertion"):
        return f"the text is not a single {kind}"
    return text


# == building the IR ==========================================================================

def _build(data: dict) -> Instance:
    platform, platform_name = None, None
    if isinstance(data.get("platform"), str):
        platform_name = data["platform"]
        platform = load_preset(platform_name)
    elif "platform" in data:
        platform = Platform.from_dict(data["platform"])
    return Instance(
        name=data["name"], problem=data["problem"],
        graph=graph_from_dict(data["graph"], validate=False) if "graph" in data else None,
        platform=platform,
        program=_program_from_dict(data["program"]) if "program" in data else None,
        options=copy.deepcopy(data.get("options", {})),
        description=data.get("description", ""),
        platform_name=platform_name,
    )


def graph_from_dict(d: dict, validate: bool = True) -> DataflowGraph:
    """Validate a graph object (``{"kernels": [...], "streams": [...]}``) and build it.

    Pointers of problems are relative to the graph object. ``validate=False`` is for graphs
    that were already validated as part of a whole instance.

    >>> g = graph_from_dict({"kernels": [{"name": "a"}, {"name": "b"}],
    ...                      "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 8}]})
    >>> g.streams["e"].width
    32
    """
    if validate:
        issues = schema_issues(d, "instance", "graph", label=partial(_label, d, _GRAPH_ENTITIES))
        if isinstance(d, dict):
            issues += _graph_issues(d, (), _Faulty(issues))
        if issues:
            raise InstanceError(problems=to_problems(issues))
    return DataflowGraph([_kernel_from_dict(k) for k in d["kernels"]],
                         [_stream_from_dict(s) for s in d.get("streams", [])])


def _kernel_from_dict(d: dict) -> Kernel:
    loops = tuple(Loop(lp["name"], int(lp["tripcount"]), int(lp.get("step", 1)), lp.get("kind", "parallel"))
                  for lp in d.get("loops", []))
    return Kernel(name=d["name"], op=d.get("op", "generic"), loops=loops, delay=int(d.get("delay", 0)),
                  ii=int(d.get("ii", 1)), latency=_int_or_none(d.get("latency")),
                  resources=dict(d.get("resources", {})), attrs=copy.deepcopy(d.get("attrs", {})))


def _stream_from_dict(d: dict) -> Stream:
    src_type = _itensor_from_dict(d["src_type"]) if "src_type" in d else None
    dst_type = _itensor_from_dict(d["dst_type"]) if "dst_type" in d else None
    tokens = int(d["tokens"]) if "tokens" in d else src_type.tokens
    width = int(d["width"]) if "width" in d else _default_width(src_type)
    return Stream(name=d["name"], src=d["src"], dst=d["dst"], tokens=tokens, width=width,
                  produce_ii=_int_or_none(d.get("produce_ii")), consume_ii=_int_or_none(d.get("consume_ii")),
                  src_type=src_type, dst_type=dst_type,
                  converter_bytes=_int_or_none(d.get("converter_bytes")), depth=_int_or_none(d.get("depth")))


def _itensor_from_dict(d: dict) -> ITensorType:
    ints = lambda key: tuple(int(v) for v in d[key])  # noqa: E731
    return ITensorType(d["dtype"], ints("shape"), ints("element"), ints("tripcounts"), ints("steps"),
                       tuple(None if m is None else int(m) for m in d["map"]))


def _default_width(src_type: ITensorType | None) -> int:
    return src_type.token_bits if src_type is not None else 32


def _int_or_none(value) -> int | None:
    return None if value is None else int(value)


def _program_from_dict(d: dict) -> Program:
    statements = tuple(Statement(s["name"], s["domain"], tuple(s.get("reads", [])), tuple(s.get("writes", [])),
                                 s.get("body", ""), s.get("schedule")) for s in d["statements"])
    return Program(params=tuple(d.get("params", [])), context=d.get("context", ""), statements=statements,
                   arrays=copy.deepcopy(d.get("arrays", {})), schedule=d.get("schedule"))


# == writing ==================================================================================

def to_dict(instance: Instance) -> dict:
    """The JSON object of an instance, without default values; ``from_dict`` reads it back equal."""
    out = {"format": FORMAT, "name": instance.name, "problem": instance.problem}
    if instance.description:
        out["description"] = instance.description
    if instance.platform is not None:
        out["platform"] = _platform_to_data(instance)
    if instance.graph is not None:
        out["graph"] = graph_to_dict(instance.graph)
    if instance.program is not None:
        out["program"] = _program_to_dict(instance.program)
    if instance.options:
        out["options"] = copy.deepcopy(instance.options)
    return out


def dump(instance: Instance, path) -> None:
    """Write the instance as JSON to ``path`` atomically."""
    write_json_atomic(path, to_dict(instance))


def _platform_to_data(instance: Instance):
    name = instance.platform_name
    if name in PRESET_NAMES and instance.platform == load_preset(name):
        return name
    return instance.platform.to_dict()


def graph_to_dict(g: DataflowGraph) -> dict:
    """The JSON object of a graph, without default values.

    >>> graph_to_dict(DataflowGraph([Kernel("a", ii=2)]))
    {'kernels': [{'name': 'a', 'ii': 2}], 'streams': []}
    """
    return {"kernels": [_kernel_to_dict(k) for k in g.kernels.values()],
            "streams": [_stream_to_dict(s) for s in g.streams.values()]}


def _kernel_to_dict(k: Kernel) -> dict:
    out = {"name": k.name}
    if k.op != "generic":
        out["op"] = k.op
    if k.loops:
        out["loops"] = [_loop_to_dict(lp) for lp in k.loops]
    _put_unless(out, "delay", k.delay, 0)
    _put_unless(out, "ii", k.ii, 1)
    _put_unless(out, "latency", k.latency, None)
    if k.resources:
        out["resources"] = dict(k.resources)
    if k.attrs:
        out["attrs"] = copy.deepcopy(k.attrs)
    return out


def _loop_to_dict(lp: Loop) -> dict:
    out = {"name": lp.name, "tripcount": lp.tripcount}
    _put_unless(out, "step", lp.step, 1)
    _put_unless(out, "kind", lp.kind, "parallel")
    return out


def _stream_to_dict(s: Stream) -> dict:
    out = {"name": s.name, "src": s.src, "dst": s.dst}
    _put_unless(out, "tokens", s.tokens, s.src_type.tokens if s.src_type is not None else None)
    _put_unless(out, "width", s.width, _default_width(s.src_type))
    for key in ("produce_ii", "consume_ii"):
        _put_unless(out, key, getattr(s, key), None)
    for key in ("src_type", "dst_type"):
        if getattr(s, key) is not None:
            out[key] = getattr(s, key).to_dict()
    _put_unless(out, "converter_bytes", s.converter_bytes, None)
    _put_unless(out, "depth", s.depth, None)
    return out


def _put_unless(out: dict, key: str, value, default) -> None:
    if value != default:
        out[key] = value


def _program_to_dict(p: Program) -> dict:
    out: dict = {}
    if p.params:
        out["params"] = list(p.params)
    if p.context:
        out["context"] = p.context
    if p.arrays:
        out["arrays"] = copy.deepcopy(p.arrays)
    out["statements"] = [_statement_to_dict(s) for s in p.statements]
    if p.schedule is not None:
        out["schedule"] = p.schedule
    return out


def _statement_to_dict(s: Statement) -> dict:
    out = {"name": s.name, "domain": s.domain}
    if s.reads:
        out["reads"] = list(s.reads)
    if s.writes:
        out["writes"] = list(s.writes)
    if s.body:
        out["body"] = s.body
    if s.schedule is not None:
        out["schedule"] = s.schedule
    return out


# == solutions ================================================================================

def load_solution(path) -> Solution:
    """Read and schema-check a solution file (``dfopt-solution/1``)."""
    solution = _parse_json(_read_text(path, "solution"))
    return solution_from_dict(solution)


def solution_from_dict(d: dict) -> Solution:
    """Schema-check a solution object and build the :class:`~dfopt.solution.Solution`.

    >>> s = solution_from_dict({"format": "dfopt-solution/1", "instance": "x", "problem": "fifo",
    ...                         "status": "optimal", "fifo": {"depths": {"e": 2}}})
    >>> s.sections["fifo"]["depths"]
    {'e': 2}
    """
    issues = schema_issues(d, "solution")
    if issues:
        raise InstanceError(problems=to_problems(issues))
    return Solution.from_dict(d)


def dump_solution(solution: Solution, path) -> None:
    """Write a solution as JSON to ``path`` atomically."""
    write_json_atomic(path, solution.to_dict())
