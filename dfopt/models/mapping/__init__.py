"""Virtual-to-physical mapping on an AMD NPU (``problem: mapping``; Dato; docs/dato.md).

The instance's graph is a virtual mapping graph (one kernel per task instance, as
:func:`dfopt.dato.to_dataflow_graph` exports it: ``attrs.task``, ``attrs.index``, ``latency`` =
work in cycles, ``resources.bytes`` = local memory, ``attrs.io`` = host ports). A mapping folds
it onto the compute tiles of a region of the array (``options.mapping.region``; default: the
first four columns, all compute rows — the Dato paper's 4x4): every tile holds one physical node,
a chain of bundles (:mod:`.evaluate` has the rules), within 2 input / 2 output DMA channels and
64 KB; host channels are routed through mem tiles and shim DMAs (:mod:`.route`). Objective: the
estimated makespan (the busiest tile's work plus its DMA transfer cycles). The formulations are
in :mod:`.formulations` (default ``search``); ``--emit-dir`` writes the MLIR-AIE design.

>>> import dfopt
>>> sol = dfopt.solve("instances/mapping/ffn-2x4.json")
>>> nodes = sol.sections["mapping"]["nodes"]
>>> sol.status.value, sol.objective, {n["kind"] for n in nodes}, sorted(len(n["members"]) for n in nodes)
('feasible', 544776.0, {'bundle'}, [2, 2, 2, 2, 2, 2, 2, 2])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dfopt.errors import InfeasibleError
from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.mapping.checks import check, checks
from dfopt.models.mapping.data import STACK_BYTES, MappingData, mapping_data_of
from dfopt.models.mapping.decision import MappingDecision, tile_text
from dfopt.models.mapping.evaluate import Evaluation, class_text, evaluate, node_kind
from dfopt.models.mapping.formulations import formulations
from dfopt.models.mapping.summary import summary
from dfopt.models.options import CommonOptions, option, where

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.platform import Platform
    from dfopt.solution import Solution

__all__ = ["PROBLEM", "Options", "MappingDecision", "map_tasks", "section", "check", "checks"]

_PAIR = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1023}, "minItems": 2, "maxItems": 2}


@dataclass(frozen=True)
class Options(CommonOptions):
    """Mapping options (``options.mapping``, ``dfopt solve`` flags, keywords)."""

    region: dict | None = option(None, "the part of the array to use: {\"columns\": [first, last], \"rows\": "
                                       "[first, last]} (inclusive; default the first four columns, all compute rows)",
                                 schema={"type": "object", "properties": {"columns": _PAIR, "rows": _PAIR},
                                         "additionalProperties": False}, metavar="JSON")
    first: int = option(5, "search: stop after this many feasible foldings", minimum=1, maximum=10_000)
    branch: int = option(3, "search: moves tried per state", minimum=1, maximum=1000)
    max_states: int = option(400, "search: states expanded at most", minimum=1, maximum=10_000_000)
    hint: bool = option(True, "cpsat: start from the search's answer")
    workers: int = option(8, "cpsat: workers (deterministic: interleaved search)", minimum=1, maximum=256)
    program: dict | None = option(None, "the Dato program the instance was made from, for the numeric model of "
                                        "--emit-dir's design: {\"example\": \"gemm\"|\"ffn\"|\"attention\", "
                                        "\"args\": {keyword: value}}",
                                  schema={"type": "object", "properties": {
                                      "example": {"type": "string", "enum": ["attention", "ffn", "gemm"]},
                                      "args": {"type": "object",
                                               "additionalProperties": {"type": ["integer", "boolean"]}}},
                                      "required": ["example"],
                                      "additionalProperties": False}, metavar="JSON")
    max_members: dict | None = option(None, "the most members of a task one tile may hold: {task: n} (a bundle "
                                            "whose core kernels do not fit the tile's data memory, as --emit-dir "
                                            "reports, kept apart)",
                                      schema={"type": "object",
                                              "additionalProperties": {"type": "integer", "minimum": 1,
                                                                       "maximum": 1_000_000}},
                                      metavar="JSON")
    mlir_aie_version: str = option("latest", "--emit-dir: the mlir-aie the MLIR is written for, 'latest' or a "
                                             "snapshot date YYYY-MM-DD (up to 2025-11-17 the runtime sequence is "
                                             "aiex.runtime_sequence, after it aie.runtime_sequence)", metavar="DATE")


def _presolve(d: MappingData) -> list[str]:
    """Reasons no mapping can exist that a single node or a count shows."""
    reasons = []
    for v in d.nodes:
        mem = STACK_BYTES + d.bytes[v]
        if mem > d.limits["compute_bytes"]:
            reasons.append(f"virtual node {v} alone needs {mem} bytes of data memory (with the stack); a compute tile "
                           f"has {d.limits['compute_bytes']}")
        for dirn in ("in", "out"):
            host = {p.role for p in d.ports[v] if p.kind == "host" and p.dir == dirn}
            if len(host) > d.limits[f"compute_{dirn}"]:
                reasons.append(f"virtual node {v} has {len(host)} host {dirn}put ports; a compute tile has "
                               f"{d.limits[f'compute_{dirn}']} {dirn}put DMA channels")
    for dirn, side in (("in", "shim_out"), ("out", "shim_in")):
        tensors = sorted({p.name for v in d.nodes for p in d.ports[v] if p.kind == "host" and p.dir == dirn})
        have = d.limits[side] * len(d.shim_columns)
        if len(tensors) > have:
            reasons.append(f"{len(tensors)} host {dirn}put tensors ({', '.join(tensors)}) each need a shim DMA "
                           f"channel; the region's shim columns {d.shim_columns} have {have}")
    return reasons


def prepare(instance: Instance, options: Options) -> MappingData:
    from dfopt.dato.examples import check_program, program_from_spec

    d = mapping_data_of(instance, options)
    if options.program is not None:             # the numeric model's program, checked before any solving
        check_program(instance, program_from_spec(options.program, where(options, "program")),
                      where(options, "program"))
    reasons = _presolve(d)
    if reasons:
        raise InfeasibleError("no mapping exists: " + "; ".join(reasons[:8]), culprits=reasons)
    return d


def objective(d: MappingData, decision: MappingDecision) -> float:
    return float(evaluate(d, dict(decision.physical)).makespan)


def report(d: MappingData, outcome: Outcome, options: Options) -> dict:
    ev = evaluate(d, dict(outcome.decision.physical))
    return section(d, ev, list(outcome.decision.routes))


def _emit(instance, solution, out_dir, options: Options | None = None) -> dict:
    from dfopt.codegen.aie.mapping.folder import write_design_folder

    version = options.mlir_aie_version if options is not None else "latest"
    spec = options.program if options is not None else (instance.options or {}).get("mapping", {}).get("program")
    return write_design_folder(instance, solution, out_dir, instance.name, mlir_aie_version=version, spec=spec)


def _region(instance, options: Options):
    d = mapping_data_of(instance, options)
    cols, rows = sorted({t[0] for t in d.tiles}), sorted({t[1] for t in d.tiles})
    return {"columns": [cols[0], cols[-1]], "rows": [rows[0], rows[-1]]}


PROBLEM = Problem(
    recount=True,
    info=registry.info("mapping"), options=Options, decision=MappingDecision, prepare=prepare,
    formulations=formulations(), default="search", objective=objective, report=report, checks=checks,
    summary=summary, emit=_emit,
    emit_help="write the design folder: DIR/<name>.mlir (and .generic.mlir), the core kernels (cores/*.cc), "
              "the XRT host program, data.npz and a Makefile: `make sim` checks it on the host, `make xclbin` and "
              "`make run` build and run it with AMD's toolchain",
    recorded={"region": _region})


def map_tasks(graph: DataflowGraph, platform: Platform | str = "npu1", **options: Any) -> Solution:
    """Fold a virtual mapping graph (:func:`dfopt.dato.graph.to_dataflow_graph`) onto the compute
    tiles of ``platform`` (an NPU preset name or Platform); returns the checked
    :class:`~dfopt.solution.Solution` (``.decision.physical``: virtual node -> (column, row)).

    Examples
    --------
    >>> import dfopt
    >>> inst = dfopt.load("instances/mapping/ffn-2x4.json")
    >>> sol = map_tasks(inst.graph, inst.platform, region=inst.options["mapping"].get("region"))
    >>> sol.objective, len(set(sol.decision.physical.values()))
    (544776.0, 8)
    """
    from dfopt.api import solve_graph

    return solve_graph("mapping", graph, platform, **options)


def section(d: MappingData, ev: Evaluation, routes: list) -> dict:
    """The solution's ``mapping`` section."""
    nodes = []
    for i, (t, members) in enumerate(ev.members.items()):
        tasks: dict[str, int] = {}
        for v in members:
            tasks[d.task[v]] = tasks.get(d.task[v], 0) + 1
        nodes.append({"name": f"p{i}", "tile": list(t), "kind": node_kind(d, members), "members": members,
                      "tasks": tasks, "work": sum(d.work[v] for v in members), "estimate": ev.estimate[t],
                      "memory_bytes": ev.memory[t],
                      "channels": {k: [class_text(c) for c in ev.channels[t][k]] for k in ("in", "out")}})
    modes = {"internal": 0, "shared": 0, "dma": 0}
    for (v, i), m in ev.mode.items():
        if d.ports[v][i].kind == "stream" and d.ports[v][i].dir == "out":
            modes[m] += 1
    mems: dict[tuple, dict] = {}
    for r in routes:
        mem = mems.setdefault(tuple(r["mem"]), {"mm2s": 0, "s2mm": 0, "in_tensors": set(), "out_tensors": set()})
        mem["mm2s" if r["dir"] == "in" else "s2mm"] += 1
        mem[f"{r['dir']}_tensors"].add(r["tensor"])
    shim: dict = {}
    for mem in mems.values():
        mem["s2mm"] += len(mem.pop("in_tensors"))
        mem["mm2s"] += len(mem.pop("out_tensors"))
    for key in {(tuple(r["mem"]), r["tensor"], r["dir"], tuple(r["shim"])) for r in routes}:
        s = shim.setdefault(key[3][0], {"mm2s": 0, "s2mm": 0})
        s["mm2s" if key[2] == "in" else "s2mm"] += 1
    cols = sorted({t[0] for t in d.tiles})
    rows = sorted({t[1] for t in d.tiles})
    use = {"compute_in": sum(len(c["in"]) for c in ev.channels.values()),
           "compute_out": sum(len(c["out"]) for c in ev.channels.values()),
           "compute_in_capacity": d.limits["compute_in"] * len(d.tiles),
           "compute_out_capacity": d.limits["compute_out"] * len(d.tiles),
           "mem_tiles": {f"{m[0]},{m[1]}": v for m, v in sorted(mems.items())},
           "shim": {str(c): v for c, v in sorted(shim.items())}}
    return {"platform": d.platform, "region": {"columns": [cols[0], cols[-1]], "rows": [rows[0], rows[-1]]},
            "tiles": len(d.tiles), "tiles_used": len(nodes), "virtual_nodes": len(d.nodes),
            "makespan": ev.makespan, "nodes": nodes,
            "physical": {v: tile_text(t) for t, members in ev.members.items() for v in members},
            "streams": modes, "channel_use": use, "routes": routes}
