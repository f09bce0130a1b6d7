"""The stages of the pipeline: an operator graph to a solved, checked dataflow design.

Each stage reads the IR and the typed decisions before it and leaves the IR valid; each can be
run alone from Python on the same IR, and passes its decision on as a frozen dataclass (no JSON
in between):

1. :func:`tiling_stage` — :func:`dfopt.models.tiling.tiler.tile_graph`: kernels, loops, unroll,
   itensor port types, costs;
2. :func:`fusion_stage` — kernel fusion with converters (``problem: fusion``); returns the fused
   design as IR (converter and DMA kernels inserted, :func:`dfopt.models.fusion.fused_design`);
3. :func:`fifo_stage` — FIFO sizing of the fused design (``problem: fifo``), by default on the exact
   per-token schedule of every port (:mod:`dfopt.models.tiling.schedules`; the pipeline option
   ``fifo_timing: steady`` sizes on ``delay + k * ii`` instead);
4. :func:`memory_stage` — memory binding of every kernel buffer and FIFO (``problem: memory``,
   device pooled), FIFOs at their channel geometry (:func:`channel_graph`); the fused design's
   converters are kernels whose ping-pong bytes are their own resources;
5. :func:`placement_stage` — placement on the platform's slots (``problem: placement``), streams
   counted at their physical channel width (a kernel's vector x dtype bits), memories bound by
   the memory stage's heuristic.

Then :func:`emit` writes the HLS C++ project (``dfopt solve --emit-dir``). Every stage's
solution is checked by its own checker; :func:`run` collects per-stage time, objective and
checks. Stage solvers share ``time_limit`` (a third each for fusion, memory and placement).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dfopt.instance.types import Instance
from dfopt.ir.channel import stream_channel
from dfopt.ir.graph import DataflowGraph

if TYPE_CHECKING:
    from dfopt.io import StrPath
    from dfopt.ir.opgraph import OpGraph
    from dfopt.ir.platform import Platform
    from dfopt.solution import Solution

log = logging.getLogger(__name__)



@dataclass
class StageResult:
    name: str
    time_s: float
    objective: float | None = None
    status: str = "done"
    checks_ok: bool = True
    solution: Solution | None = None
    details: dict = field(default_factory=dict)
    bound: float | None = None

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "time_s": round(self.time_s, 4), "objective": self.objective,
             "status": self.status, "checks_ok": self.checks_ok}
        if self.bound is not None:
            d["bound"] = self.bound
        return {**d, **self.details}


def tiling_stage(opgraph: OpGraph, default_tile_size: int = 64, overall_unroll_size: int = 1024,
                 tile_sizes: dict | None = None) -> tuple[DataflowGraph, StageResult]:
    from dfopt.models.tiling.tiler import tile_graph

    t = time.perf_counter()
    graph = tile_graph(opgraph, default_tile_size, overall_unroll_size, tile_sizes)
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


def _solve(problem: str, graph: DataflowGraph, platform: Platform | None, name: str,
           options: dict) -> Solution:
    from dfopt.api import solve

    return solve(Instance(name, problem, graph=graph, platform=platform), **options)


def _result(name: str, t0: float, sol: Solution, details: dict) -> StageResult:
    return StageResult(name, time.perf_counter() - t0, sol.objective, sol.status.value, sol.ok, sol, details,
                       sol.bound)


def stage_details(stage: str, section: dict, decision: Any) -> dict:
    """The figures a pipeline stage records beside its objective, read off its solution's section
    and decision (also what the pipeline's checker compares the recorded stages with)."""
    if stage == "fusion":
        return {"groups": len(decision.groups), "dram_bytes": section["dram_bytes"],
                "unfused_dram_bytes": section["unfused_dram_bytes"], "onchip_bytes": section["onchip"]["fused_bytes"],
                "buffered_bytes": section["onchip"]["buffered_bytes"]}
    if stage == "fifo":
        return {k: section[k] for k in ("total_depth", "total_bits", "bram18", "makespan")}
    if stage == "memory":
        return {"peak": section["peak"], "peak_at": section.get("peak_at"), "counts": section.get("counts", {})}
    if stage == "placement":
        return {"slot_utilization": {s: max(v["utilization"].values()) for s, v in section["slots"].items()},
                "crossing_streams": section["crossing_streams"]}
    raise KeyError(stage)


def fusion_stage(graph: DataflowGraph, platform: Platform | None, name: str = "design",
                 **options: Any) -> tuple[DataflowGraph, StageResult]:
    from dfopt.models.fusion import fused_design

    t = time.perf_counter()
    sol = _solve("fusion", graph, platform, name, options)
    return fused_design(graph, sol.decision), _result("fusion", t, sol, stage_details("fusion", sol.sections["fusion"],
                                                                                      sol.decision))


#: The FIFO stage's formulation: the LP with the best of its candidates (the slack witnesses, the
#: occupancy baseline and their per-stream minimum among them), never above ``slack`` and on the
#: exact port schedules often below it (llama-block: 55 slots, the lower bound, against 97); the
#: fused designs are small enough (tens to hundreds of kernels) for its LP.
FIFO_FORMULATION = "flow"


def fifo_stage(graph: DataflowGraph, name: str = "design", **options: Any) -> tuple[DataflowGraph, StageResult]:
    t = time.perf_counter()
    sol = _solve("fifo", graph, None, name, {"formulation": FIFO_FORMULATION, **options})
    return graph.with_depths(sol.decision.depths), _result("fifo", t, sol, stage_details("fifo", sol.sections["fifo"],
                                                                                         sol.decision))


def memory_stage(graph: DataflowGraph, platform: Platform | None, name: str = "design",
                 **options: Any) -> StageResult:
    t = time.perf_counter()
    sol = _solve("memory", channel_graph(graph), platform, name, options)
    return _result("memory", t, sol, stage_details("memory", sol.sections["memory"], sol.decision))


def channel_graph(graph: DataflowGraph) -> DataflowGraph:
    """The graph with every stream as its physical channel (:func:`dfopt.ir.channel.stream_channel`:
    the producer's ``attrs.vector`` values of the stream's dtype per beat, else the consumer's, at
    most 512 bits), each token (tile) taking ``ceil(token bits / channel bits)`` beats, so
    ``tokens`` and ``depth`` count beats. Memory binding then sees a FIFO's real geometry (a
    depth-2 FIFO of 64x64 f32 tiles is a 512 x 512-bit buffer, not 262,144 flip-flops) and
    placement the wires a crossing uses; the HLS emitter declares streams of these beats. Its
    streams carry no per-token schedules (theirs count tokens, not beats)."""
    streams = []
    for s in graph.streams.values():
        c = stream_channel(graph, s)
        streams.append(dataclasses.replace(s, width=c.bits, tokens=s.tokens * c.beats,
                                           depth=None if s.depth is None else s.depth * c.beats,
                                           src_type=None, dst_type=None, converter_bytes=0,
                                           src_schedule=None, dst_schedule=None))
    return DataflowGraph(list(graph.kernels.values()), streams)


def placement_stage(graph: DataflowGraph, platform: Platform | None, name: str = "design",
                    **options: Any) -> StageResult:
    t = time.perf_counter()
    sol = _solve("placement", channel_graph(graph), platform, name, {"memory_binding": "heuristic", **options})
    return _result("placement", t, sol, stage_details("placement", sol.sections["placement"], sol.decision))


def dram_traffic(opgraph: OpGraph, tiled: DataflowGraph, fusion_dram_bytes: float) -> dict:
    """Bytes the design moves through DRAM: what the ``dma_in`` kernels read of the weights and of
    the graph inputs (per stream they feed, re-read tiles counted again), what the ``dma_out``
    kernels write of the outputs, and the intermediates cut between fused groups (written and read
    back, as the fusion stage counts them)."""
    out: dict[str, float] = {"weights": 0, "inputs": 0, "outputs": 0, "intermediates": float(fusion_dram_bytes)}
    for s in tiled.streams.values():
        src, dst = tiled.kernels[s.src], tiled.kernels[s.dst]
        if src.op == "dma_in":
            kind = opgraph.tensors[src.attrs["tensor"]].kind
            out["weights" if kind == "weight" else "inputs"] += s.tokens * s.width // 8
        if dst.op == "dma_out":
            out["outputs"] += s.tokens * s.width // 8
    out["total"] = out["weights"] + out["inputs"] + out["outputs"] + out["intermediates"]
    return out


@dataclass
class PipelineResult:
    graph: DataflowGraph          # the final design: fused, FIFO depths set
    stages: list[StageResult]
    tiled: DataflowGraph

    @property
    def ok(self) -> bool:
        return all(s.checks_ok for s in self.stages)

    def stage(self, name: str) -> StageResult:
        return next(s for s in self.stages if s.name == name)


def run(opgraph: OpGraph, platform: Platform | None, name: str = "design", default_tile_size: int = 64,
        overall_unroll_size: int = 1024, time_limit: float = 60.0, seed: int = 0, fusion_formulation: str | None = None,
        placement_formulation: str | None = None, c_max: int | None = None, tiled: DataflowGraph | None = None,
        tiling: StageResult | None = None, fifo_timing: str = "exact", fifo_formulation: str | None = None,
        latency_slack: float = 0.0, max_utilization: float | None = None,
        tile_sizes: dict | None = None) -> PipelineResult:
    """Every stage in order; raises the stage's error (with the stage named) when one fails.
    ``fifo_timing`` is the token timing of the fused design from FIFO sizing on: ``exact``, every
    port's per-token schedule, or ``steady`` (:func:`dfopt.models.tiling.schedules.port_timing`).
    ``fifo_formulation`` and ``latency_slack`` go to the FIFO stage, ``max_utilization`` (None:
    each stage's own default) to memory binding and placement. After each stage the hooks of
    :func:`watching` see its result (a hook may stop the run by raising)."""
    from dfopt.errors import DfoptError
    from dfopt.models.tiling.schedules import port_timing

    share = {"time_limit": time_limit / 3, "seed": seed}
    util = {} if max_utilization is None else {"max_utilization": max_utilization}
    stages: list[StageResult] = []

    def step(label, fn, *args, **kwargs):
        try:
            out = fn(*args, **kwargs)
        except DfoptError as err:
            err.args = (f"pipeline stage {label}: {err}",) + err.args[1:]
            if hasattr(err, "reason"):
                err.reason = f"pipeline stage {label}: {err.reason}"
            raise
        result = out[1] if isinstance(out, tuple) else out
        for hook in _HOOKS.get():
            hook(label, result, stages)
        return out

    if tiled is None:
        tiled, tiling = step("tiling", tiling_stage, opgraph, default_tile_size, overall_unroll_size, tile_sizes)
    elif tiling is not None:
        for hook in _HOOKS.get():
            hook("tiling", tiling, stages)
    if tiling is None:
        raise ValueError("run: a tiled graph given without its tiling stage result")
    stages.append(tiling)
    fused, r = step("fusion", fusion_stage, tiled, platform, name, formulation=fusion_formulation, c_max=c_max,
                    **share)
    stages.append(r)
    sized, r = step("fifo", fifo_stage, port_timing(fused, fifo_timing), name,
                    **({"formulation": fifo_formulation} if fifo_formulation else {}),
                    **({"latency_slack": latency_slack} if latency_slack else {}))
    stages.append(r)
    stages.append(step("memory", memory_stage, sized, platform, name, **share, **util))
    stages.append(step("placement", placement_stage, sized, platform, name, formulation=placement_formulation,
                       **share, **util))
    for s in stages:
        log.info("stage %s: %.2f s, objective %s, checks %s", s.name, s.time_s, s.objective, s.checks_ok)
    return PipelineResult(sized, stages, tiled)


#: Hooks ``hook(stage name, its StageResult, the stages before it)`` called after each stage of
#: :func:`run` in this context (:func:`watching`).
_HOOKS: contextvars.ContextVar[tuple] = contextvars.ContextVar("pipeline_stage_hooks", default=())


@contextlib.contextmanager
def watching(hook: Callable[[str, StageResult, list], None]) -> Iterator[None]:
    """Call ``hook`` after every stage of the pipeline runs started inside the ``with`` block
    (design-space exploration prunes a trial whose latency is already known to lose)."""
    token = _HOOKS.set(_HOOKS.get() + (hook,))
    try:
        yield
    finally:
        _HOOKS.reset(token)


def emit(instance: Instance, solution: Solution, out_dir: StrPath, data: Any = None) -> dict:
    """Write the HLS C++ project of a solved pipeline instance into ``out_dir`` (atomically):
    the operator graph tiled again with the solution's options (deterministic), the fused design
    rebuilt from the fusion decision, FIFO depths of the fifo stage and memory kinds of the memory
    stage mapped onto the emitted streams, kernels assigned to their placement slots, one dataflow
    function per fused group (the fusion stage's groups restricted to the tiled graph's kernels:
    its converter and DMA kernels are the emitter's own; a cut stream goes through DRAM), the
    platform's part and memory banks for the Vitis build. ``data`` (a
    :class:`dfopt.frontend.data.ModelData`, for a design imported from a model) gives the test
    bench the model's weights, inputs and reference outputs, and ``outputs.npz`` its names.
    Returns the emitter's summary."""
    from dfopt.codegen.hls.emit import design_depths, design_storage, emit_design
    from dfopt.models.fusion import fused_design
    from dfopt.models.tiling.tiler import tile_graph

    opts = solution.sections["pipeline"]["options"]
    design = solution.decision
    assert instance.operators is not None  # the driver checks the parts a problem needs
    tiled = tile_graph(instance.operators, opts["default_tile_size"], opts["overall_unroll_size"],
                       opts.get("tile_sizes"))
    fused = fused_design(tiled, design.fusion)
    depths = design_depths(fused, dict(design.fifo.depths))
    storage = design_storage(fused, dict(design.memory.binding))
    slots = {k: s for k, s in design.placement.slot.items() if k in tiled.kernels}
    groups = [[k for k in members if k in tiled.kernels] for members in design.fusion.groups]
    groups = [members for members in groups if members]
    model = {} if data is None else {"values": data.values, "expected": data.expected,
                                     "output_names": data.output_names}
    return emit_design(instance.operators, tiled, depths, out_dir, slots=slots, seed=solution.seed, groups=groups,
                       storage=storage, platform=instance.platform, **model)
