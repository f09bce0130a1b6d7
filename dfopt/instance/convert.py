"""Building the IR from instance JSON and writing it back (round trip: ``from_dict(to_dict(x)) == x``)."""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

from dfopt.errors import InstanceError
from dfopt.instance.common import _Faulty, _itensor_from_dict, _label, _non_finite_issues
from dfopt.instance.semantics import _graph_issues
from dfopt.instance.types import _GRAPH_ENTITIES, FORMAT, Instance
from dfopt.io import StrPath, write_json_atomic
from dfopt.ir.graph import Buffer, DataflowGraph, Kernel, Loop, Stream
from dfopt.ir.itensor import ITensorType
from dfopt.ir.opgraph import OpGraph
from dfopt.ir.platform import PRESET_NAMES, Platform, load_preset
from dfopt.ir.program import Program, Statement
from dfopt.ir.sparse.statement import SparseStatement
from dfopt.ir.tokens import TokenSchedule
from dfopt.schema import schema_issues, to_problems

# == building the IR ==========================================================================

def _build(data: dict) -> Instance:
    platform, platform_name = None, None
    if isinstance(data.get("platform"), str):
        platform_name = data["platform"]
        platform = load_preset(platform_name)
    elif "platform" in data:
        platform = Platform.from_dict(_integral(data["platform"]))
    return Instance(
        name=data["name"], problem=data["problem"],
        graph=graph_from_dict(data["graph"], validate=False) if "graph" in data else None,
        platform=platform,
        program=_program_from_dict(data["program"]) if "program" in data else None,
        options=copy.deepcopy(data.get("options", {})),
        description=data.get("description", ""),
        platform_name=platform_name,
        operators=OpGraph.from_dict(data["operators"]) if "operators" in data else None,
        sparse=SparseStatement.from_dict(data["sparse"]) if "sparse" in data else None,
    )


def _integral(value, skip: str = "resources"):
    """A copy of a validated platform object with its integral floats as ints: JSON Schema counts
    ``4.0`` as an integer, and the models index and range over these counts. The numbers under
    ``skip`` (resource amounts, which may be fractional) stay as given.

    >>> _integral({"npu": {"columns": 4.0, "rows": {"compute": [2.0]}}, "slots": [{"resources": {"lut": 1.0}}]})
    {'npu': {'columns': 4, 'rows': {'compute': [2]}}, 'slots': [{'resources': {'lut': 1.0}}]}
    """
    if isinstance(value, dict):
        return {k: (copy.deepcopy(v) if k == skip else _integral(v, skip)) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v, skip) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def graph_from_dict(d: dict, validate: bool = True) -> DataflowGraph:
    """Validate a graph object (``{"kernels": [...], "streams": [...]}``) and build it.

    Pointers of problems are relative to the graph object. ``validate=False`` is for graphs
    that were already validated as part of a whole instance.

    >>> g = graph_from_dict({"kernels": [{"name": "a"}, {"name": "b"}],
    ...                      "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 8}]})
    >>> g.streams["e"].width
    32
    >>> try:
    ...     graph_from_dict({"kernels": [{"name": "a", "ii": float("nan")}]})
    ... except InstanceError as err:
    ...     print(err)
    /kernels/0/ii: expected a finite number, got NaN
    """
    if validate:
        issues = _non_finite_issues(d)
        if issues:
            raise InstanceError(problems=to_problems(issues))
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
                  resources=dict(d.get("resources", {})), attrs=copy.deepcopy(d.get("attrs", {})),
                  buffers=tuple(Buffer(b["name"], int(b["width"]), int(b["depth"])) for b in d.get("buffers", [])))


def _stream_from_dict(d: dict) -> Stream:
    src_type = _itensor_from_dict(d["src_type"]) if "src_type" in d else None
    dst_type = _itensor_from_dict(d["dst_type"]) if "dst_type" in d else None
    tokens = int(d["tokens"]) if "tokens" in d or src_type is None else src_type.tokens
    width = int(d["width"]) if "width" in d else _default_width(src_type)
    return Stream(name=d["name"], src=d["src"], dst=d["dst"], tokens=tokens, width=width,
                  produce_ii=_int_or_none(d.get("produce_ii")), consume_ii=_int_or_none(d.get("consume_ii")),
                  src_type=src_type, dst_type=dst_type,
                  converter_bytes=_int_or_none(d.get("converter_bytes")), depth=_int_or_none(d.get("depth")),
                  src_schedule=_schedule_or_none(d.get("src_schedule")),
                  dst_schedule=_schedule_or_none(d.get("dst_schedule")))


def _schedule_or_none(value) -> TokenSchedule | None:
    return None if value is None else TokenSchedule.from_json(value)


def _default_width(src_type: ITensorType | None) -> int:
    return src_type.token_bits if src_type is not None else 32


def _int_or_none(value) -> int | None:
    return None if value is None else int(value)


def _program_from_dict(d: dict) -> Program:
    statements = tuple(Statement(s["name"], s["domain"], tuple(s.get("reads", [])), tuple(s.get("writes", [])),
                                 s.get("body", ""), s.get("schedule")) for s in d["statements"])
    return Program(params=tuple(d.get("params", [])), context=d.get("context", ""), statements=statements,
                   arrays=copy.deepcopy(d.get("arrays", {})), schedule=d.get("schedule"),
                   scalars=copy.deepcopy(d.get("scalars", {})), prelude=d.get("prelude", ""),
                   sizes=copy.deepcopy(d.get("sizes", {})))


# == writing ==================================================================================

def to_dict(instance: Instance) -> dict:
    """The JSON object of an instance, without default values; ``from_dict`` reads it back equal."""
    out: dict[str, Any] = {"format": FORMAT, "name": instance.name, "problem": instance.problem}
    if instance.description:
        out["description"] = instance.description
    if instance.platform is not None:
        out["platform"] = _platform_to_data(instance.platform, instance.platform_name)
    if instance.graph is not None:
        out["graph"] = graph_to_dict(instance.graph)
    if instance.program is not None:
        out["program"] = _program_to_dict(instance.program)
    if instance.operators is not None:
        out["operators"] = instance.operators.to_dict()
    if instance.sparse is not None:
        out["sparse"] = instance.sparse.to_dict()
    if instance.options:
        out["options"] = copy.deepcopy(instance.options)
    return out


def dump(instance: Instance, path: StrPath) -> None:
    """Write the instance as JSON to ``path`` atomically."""
    write_json_atomic(path, to_dict(instance))


def _platform_to_data(platform: Platform, name: str | None) -> str | dict:
    if name is not None and name in PRESET_NAMES and platform == load_preset(name):
        return name
    return platform.to_dict()


def graph_to_dict(g: DataflowGraph) -> dict:
    """The JSON object of a graph, without default values.

    >>> graph_to_dict(DataflowGraph([Kernel("a", ii=2)]))
    {'kernels': [{'name': 'a', 'ii': 2}], 'streams': []}
    """
    return {"kernels": [_kernel_to_dict(k) for k in g.kernels.values()],
            "streams": [_stream_to_dict(s) for s in g.streams.values()]}


def _kernel_to_dict(k: Kernel) -> dict:
    out: dict[str, Any] = {"name": k.name}
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
    if k.buffers:
        out["buffers"] = [{"name": b.name, "width": b.width, "depth": b.depth} for b in k.buffers]
    return out


def _loop_to_dict(lp: Loop) -> dict:
    out: dict[str, Any] = {"name": lp.name, "tripcount": lp.tripcount}
    _put_unless(out, "step", lp.step, 1)
    _put_unless(out, "kind", lp.kind, "parallel")
    return out


def _stream_to_dict(s: Stream) -> dict:
    out: dict[str, Any] = {"name": s.name, "src": s.src, "dst": s.dst}
    _put_unless(out, "tokens", s.tokens, s.src_type.tokens if s.src_type is not None else None)
    _put_unless(out, "width", s.width, _default_width(s.src_type))
    for key in ("produce_ii", "consume_ii"):
        _put_unless(out, key, getattr(s, key), None)
    for key in ("src_type", "dst_type"):
        if getattr(s, key) is not None:
            out[key] = getattr(s, key).to_dict()
    _put_unless(out, "converter_bytes", s.converter_bytes, None)
    _put_unless(out, "depth", s.depth, None)
    for key in ("src_schedule", "dst_schedule"):
        if getattr(s, key) is not None:
            out[key] = getattr(s, key).to_json()
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
    if p.scalars:
        out["scalars"] = copy.deepcopy(p.scalars)
    if p.prelude:
        out["prelude"] = p.prelude
    if p.sizes:
        out["sizes"] = copy.deepcopy(p.sizes)
    out["statements"] = [_statement_to_dict(s) for s in p.statements]
    if p.schedule is not None:
        out["schedule"] = p.schedule
    return out


def _statement_to_dict(s: Statement) -> dict:
    out: dict[str, Any] = {"name": s.name, "domain": s.domain}
    if s.reads:
        out["reads"] = list(s.reads)
    if s.writes:
        out["writes"] = list(s.writes)
    if s.body:
        out["body"] = s.body
    if s.schedule is not None:
        out["schedule"] = s.schedule
    return out
