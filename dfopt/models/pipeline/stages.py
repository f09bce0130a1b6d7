"""The end-to-end pipeline: an operator graph to a solved, checked dataflow design.

Stages, each reading the IR and the decisions before it and leaving the IR valid; each can be
run alone from Python on the same IR:

1. :func:`tiling_stage` — :func:`dfopt.models.tiling.tiler.tile_graph`: kernels, loops, unroll,
   itensor port types, costs;
2. :func:`fusion_stage` — kernel fusion with converters (``problem: fusion``); returns the fused
   design as IR (converter and DMA kernels inserted);
3. :func:`fifo_stage` — FIFO sizing of the fused design (``problem: fifo``);
4. :func:`memory_stage` — memory binding of every kernel buffer and FIFO (``problem: memory``,
   device pooled), FIFOs at their channel geometry (:func:`channel_graph`); the fused design's
   converters are kernels whose ping-pong bytes are their own resources;
5. :func:`placement_stage` — placement on the platform's slots (``problem: placement``), streams
   counted at their physical channel width (a kernel's vector x dtype bits), memories bound by
   the memory stage's heuristic.

Then :func:`emit` writes the HLS C++ project (``dfopt solve --emit-dir``). Every stage's
solution is checked by its own checker; :func:`run` collects per-stage time,
objective and checks. Stage solvers share ``time_limit`` (a third each for fusion, memory and
placement).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

from dfopt.instance.types import Instance
from dfopt.ir.graph import DataflowGraph
from dfopt.ir.itensor import DTYPE_BITS

log = logging.getLogger(__name__)

CHANNEL_BITS_MAX = 512      # a stream's physical width is at most one AXI-stream beat of 512 bits


@dataclass
class StageResult:
    name: str
    time_s: float
    objective: float | None = None
    status: str = "done"
    checks_ok: bool = True
    solution: object = None
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"name": self.name, "time_s": round(self.time_s, 4), "objective": self.objective,
                "status": self.status, "checks_ok": self.checks_ok, **self.details}


def tiling_stage(opgraph, default_tile_size: int = 64, overall_unroll_size: int = 1024) -> tuple[DataflowGraph, StageResult]:
    from dfopt.models.tiling.tiler import tile_graph

    t = time.perf_counter()
    graph = tile_graph(opgraph, default_tile_size, overall_unroll_size)
    faults = tiling_faults(graph)
    lanes = sum(k.attrs.get("lanes", 0) for k in graph.kernels.values())
    slowest = max(graph.kernels.values(), key=lambda k: k.latency or 0)
    return graph, StageResult("tiling", time.perf_counter() - t, float(slowest.latency or 0), checks_ok=not faults,
                              details={"kernels": len(graph.kernels), "streams": len(graph.streams), "lanes": lanes,
                                       "slowest_kernel": slowest.name, "faults": faults[:10]})


def tiling_faults(graph: DataflowGraph) -> list[str]:
    """Recount of the tiled graph: both ends of a stream view one tensor and the tokens match."""
    bad = []
    for s in graph.streams.values():
        if s.src_type is None or s.dst_type is None:
            bad.append(f"stream {s.name}: missing port types")
        elif s.src_type.shape != s.dst_type.shape or s.src_type.dtype != s.dst_type.dtype:
            bad.append(f"stream {s.name}: {s.src_type} and {s.dst_type} view different tensors")
        elif s.tokens != s.src_type.tokens:
            bad.append(f"stream {s.name}: {s.tokens} tokens, its src_type streams {s.src_type.tokens}")
    return bad


def _solve(problem: str, graph, platform, name: str, options: dict):
    from dfopt.api import solve_instance

    inst = Instance(name, problem, graph=graph, platform=platform)
    return inst, solve_instance(inst, **options)


def fusion_stage(graph: DataflowGraph, platform, name: str = "design", **options) -> tuple[DataflowGraph, StageResult]:
    from dfopt.instance.convert import graph_from_dict

    t = time.perf_counter()
    _, sol = _solve("fusion", graph, platform, name, options)
    sec = sol.sections["fusion"]
    fused = graph_from_dict(sec["fused_graph"], validate=False)
    return fused, StageResult("fusion", time.perf_counter() - t, sol.objective, sol.status, sol.ok, sol,
                              {"groups": len(sec["groups"]), "dram_bytes": sec["dram_bytes"],
                               "unfused_dram_bytes": sec["unfused_dram_bytes"],
                               "onchip_bytes": sec["onchip"]["fused_bytes"],
                               "buffered_bytes": sec["onchip"]["buffered_bytes"]})


def fifo_stage(graph: DataflowGraph, name: str = "design", **options) -> tuple[DataflowGraph, StageResult]:
    t = time.perf_counter()
    _, sol = _solve("fifo", graph, None, name, options)
    sec = sol.sections["fifo"]
    sized = DataflowGraph(list(graph.kernels.values()),
                          [dataclasses.replace(s, depth=int(sec["depths"][n])) for n, s in graph.streams.items()])
    return sized, StageResult("fifo", time.perf_counter() - t, sol.objective, sol.status, sol.ok, sol,
                              {"total_depth": sec["total_depth"], "total_bits": sec["total_bits"],
                               "bram18": sec["bram18"], "makespan": sec["makespan"]})


def memory_stage(graph: DataflowGraph, platform, name: str = "design", **options) -> StageResult:
    t = time.perf_counter()
    _, sol = _solve("memory", channel_graph(graph), platform, name, options)
    sec = sol.sections["memory"]
    counts = sec.get("counts", {})
    return StageResult("memory", time.perf_counter() - t, sol.objective, sol.status, sol.ok, sol,
                       {"peak": sec["peak"], "peak_at": sec.get("peak_at"), "counts": counts})


def channel_graph(graph: DataflowGraph) -> DataflowGraph:
    """The graph with every stream as its physical channel: ``vector`` elements of the stream's
    dtype per beat (the producer's ``attrs.vector``, else the consumer's; at most 512 bits), each
    token (tile) taking ``ceil(token bits / channel bits)`` beats, so ``tokens`` and ``depth`` count
    beats. Memory binding then sees a FIFO's real geometry (a depth-2 FIFO of 64x64 f32 tiles is a
    512 x 512-bit buffer, not 262,144 flip-flops) and placement the wires a crossing uses."""
    streams = []
    for s in graph.streams.values():
        t = s.src_type
        bits = DTYPE_BITS.get(t.dtype, 32) if t is not None else s.width
        vector = graph.kernels[s.src].attrs.get("vector") or graph.kernels[s.dst].attrs.get("vector") or 1
        channel = int(min(s.width, vector * bits, CHANNEL_BITS_MAX))
        beats = -(-s.width // channel)
        streams.append(dataclasses.replace(s, width=channel, tokens=s.tokens * beats,
                                           depth=None if s.depth is None else s.depth * beats,
                                           src_type=None, dst_type=None, converter_bytes=0))
    return DataflowGraph(list(graph.kernels.values()), streams)


def placement_stage(graph: DataflowGraph, platform, name: str = "design", **options) -> StageResult:
    t = time.perf_counter()
    _, sol = _solve("placement", channel_graph(graph), platform, name, {"memory_binding": "heuristic", **options})
    sec = sol.sections["placement"]
    util = {s: max(v["utilization"].values()) for s, v in sec["slots"].items()}
    return StageResult("placement", time.perf_counter() - t, sol.objective, sol.status, sol.ok, sol,
                       {"slot_utilization": util, "crossing_streams": sec["crossing_streams"]})


@dataclass
class PipelineResult:
    graph: DataflowGraph          # the final design: fused, FIFO depths set
    stages: list
    slots: dict

    @property
    def ok(self) -> bool:
        return all(s.checks_ok for s in self.stages)


def run(opgraph, platform, name: str = "design", default_tile_size: int = 64, overall_unroll_size: int = 1024,
        time_limit: float = 60.0, seed: int = 0, fusion_formulation: str | None = None,
        placement_formulation: str | None = None, c_max: int | None = None) -> PipelineResult:
    """Every stage in order; raises the stage's error (with the stage named) when one fails."""
    from dfopt.errors import DfoptError

    share = {"time_limit": time_limit / 3, "seed": seed}
    stages = []

    def step(label, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DfoptError as err:
            err.args = (f"pipeline stage {label}: {err}",) + err.args[1:]
            if hasattr(err, "reason"):
                err.reason = f"pipeline stage {label}: {err.reason}"
            raise

    tiled, r = step("tiling", tiling_stage, opgraph, default_tile_size, overall_unroll_size)
    stages.append(r)
    fused, r = step("fusion", fusion_stage, tiled, platform, name, formulation=fusion_formulation, c_max=c_max,
                    **share)
    stages.append(r)
    sized, r = step("fifo", fifo_stage, fused, name)
    stages.append(r)
    stages.append(step("memory", memory_stage, sized, platform, name, **share))
    r = step("placement", placement_stage, sized, platform, name, formulation=placement_formulation, **share)
    stages.append(r)
    for s in stages:
        log.info("stage %s: %.2f s, objective %s, checks %s", s.name, s.time_s, s.objective, s.checks_ok)
    return PipelineResult(sized, stages, r.solution.sections["placement"]["slot"])


def emit(instance, solution, out_dir) -> dict:
    """Write the HLS C++ project of a solved pipeline instance into ``out_dir`` (atomically):
    the operator graph tiled again with the solution's options (deterministic), FIFO depths of
    the fifo stage mapped onto the emitted streams, kernels assigned to their placement slots,
    one dataflow function per fused group (the fusion stage's groups restricted to the tiled
    graph's kernels: its converter and DMA kernels are the emitter's own; a cut stream goes
    through DRAM). Returns the emitter's summary."""
    from dfopt.codegen.hls.emit import design_depths, emit_design
    from dfopt.instance.convert import graph_from_dict
    from dfopt.models.tiling.tiler import tile_graph

    opts = solution.sections["pipeline"]["options"]
    tiled = tile_graph(instance.operators, opts["default_tile_size"], opts["overall_unroll_size"])
    fused = graph_from_dict(solution.sections["fusion"]["fused_graph"], validate=False)
    depths = design_depths(fused, solution.sections["fifo"]["depths"])
    slots = {k: s for k, s in solution.sections["placement"]["slot"].items() if k in tiled.kernels}
    groups = [[k for k in members if k in tiled.kernels] for members in solution.sections["fusion"]["groups"]]
    groups = [members for members in groups if members]
    return emit_design(instance.operators, tiled, depths, out_dir, slots=slots, seed=solution.seed, groups=groups)
