"""The end-to-end pipeline as a problem (``problem: pipeline``; docs/pipeline.md).

An instance carries an operator graph (``operators``) and a platform; the stages
(:mod:`.stages`: tiling, fusion, FIFO sizing, memory binding, placement) run in order, each on
the IR and the typed decision of the one before. The solution holds every stage's section
(``fusion``, ``fifo``, ``memory``, ``placement``) and a ``pipeline`` section with the per-stage
time, objective and checks and the design's figures. The checker rebuilds each stage's input
from the operator graph, the options and the decisions before it (tiling is deterministic) and
runs that stage's own checker, so ``dfopt check`` re-verifies the whole design without a solver;
``--emit-dir`` writes the HLS C++ project.

>>> import dfopt
>>> sol = dfopt.solve("instances/pipeline/ffn.json", time_limit=10)
>>> sol.ok, [s["name"] for s in sol.sections["pipeline"]["stages"]]
(True, ['tiling', 'fusion', 'fifo', 'memory', 'placement'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.errors import InstanceError
from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.options import CommonOptions, option
from dfopt.models.pipeline.decision import STAGES, Design
from dfopt.models.pipeline.stages import (
    FIFO_FORMULATION,
    channel_graph,
    dram_traffic,
    emit,
    fifo_stage,
    fusion_stage,
    memory_stage,
    placement_stage,
    run,
    stage_details,
    tiling_faults,
    tiling_stage,
)
from dfopt.models.pipeline.summary import summary
from dfopt.models.tiling.schedules import TIMINGS, port_timing
from dfopt.results import Termination
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.models.pipeline.stages import StageResult

__all__ = ["PROBLEM", "Options", "Design", "run", "emit", "channel_graph", "tiling_stage", "fusion_stage",
           "fifo_stage", "memory_stage", "placement_stage", "check", "checks"]

_FUSION = ("auto", "cpsat", "greedy", "mip", "lns")
_PLACEMENT = ("cpsat", "greedy", "bipartition", "mip", "lns")
_FIFO = ("slack", "flow", "potentials", "paths", "occupancy", "search")


@dataclass(frozen=True)
class Options(CommonOptions):
    """Pipeline options (``options.pipeline``, ``dfopt solve`` flags, keywords)."""

    default_tile_size: int = option(64, "tile size of every dimension (its largest divisor at most this)",
                                    minimum=1, maximum=1 << 16)
    overall_unroll_size: int = option(1024, "lanes shared by all compute kernels (intensity-aware unrolling)",
                                      minimum=1, maximum=1 << 20)
    fusion_formulation: str | None = option(None, "formulation of the fusion stage (default: fusion's)",
                                            choices=_FUSION)
    placement_formulation: str | None = option(None, "formulation of the placement stage (default: placement's)",
                                               choices=_PLACEMENT)
    c_max: int | None = option(None, "fusion capacity in bytes (default: the platform's on-chip bytes)",
                               minimum=1, maximum=1 << 50, metavar="BYTES")
    tile_sizes: dict | None = option(None, "tile size per operator name or op kind, over default_tile_size",
                                     schema={"type": "object", "additionalProperties":
                                             {"type": "integer", "minimum": 1, "maximum": 1 << 16}},
                                     metavar="JSON")
    fifo_formulation: str | None = option(None, f"formulation of the FIFO stage (default {FIFO_FORMULATION})",
                                          choices=_FIFO)
    latency_slack: float = option(0.0, "FIFO stage: allow a latency up to (1 + X) x the unbounded design's "
                                       "for fewer FIFO bits (0: latency-preserving)", minimum=0, maximum=100,
                                  metavar="X")
    max_utilization: float | None = option(None, "share of each slot's resources kernels and buffers may use, "
                                                 "for memory binding and placement (default: theirs, 1.0 and 0.8)",
                                           exclusive_minimum=0, maximum=1)
    fifo_timing: str = option("exact", "token timing FIFO sizing runs on: exact (every port's per-token schedule "
                                       "in its kernel's loop order) or steady (delay + k * ii for every port)",
                              choices=TIMINGS)


@dataclass
class PipelineData:
    """The instance, its tiled graph (the tiling stage) and, once solved, the design's latency
    (the FIFO stage's makespan, proven equal to the unbounded one by its checks)."""

    instance: Instance
    tiled: DataflowGraph
    tiling: StageResult
    latency: int | None = None


def prepare(instance: Instance, options: Options) -> PipelineData:
    assert instance.platform is not None and instance.operators is not None  # the driver checks them
    if not instance.platform.slots:
        raise InstanceError("the pipeline problem needs an FPGA platform with slots", pointer="/platform")
    _check_tile_sizes(instance, options)
    tiled, tiling = tiling_stage(instance.operators, options.default_tile_size, options.overall_unroll_size,
                                 options.tile_sizes)
    return PipelineData(instance, tiled, tiling)


def _check_tile_sizes(instance: Instance, options: Options) -> None:
    """Every key of ``tile_sizes`` names an operator or an op kind of the graph."""
    from dfopt.models.options import where
    from dfopt.schema import did_you_mean

    assert instance.operators is not None
    known = {op.name for op in instance.operators.ops} | {op.op for op in instance.operators.ops}
    for key in options.tile_sizes or {}:
        if key not in known:
            raise InstanceError(f"tile_sizes: {key!r} is neither an operator nor an op kind of the graph"
                                f"{did_you_mean(key, known)}", pointer=where(options, "tile_sizes", key))


def _staged(data: PipelineData, options: Options) -> Outcome:
    inst = data.instance
    assert inst.operators is not None
    result = run(inst.operators, inst.platform, inst.name, time_limit=options.time_limit, seed=options.seed,
                 fusion_formulation=options.fusion_formulation, placement_formulation=options.placement_formulation,
                 c_max=options.c_max, tiled=data.tiled, tiling=data.tiling, fifo_timing=options.fifo_timing,
                 fifo_formulation=options.fifo_formulation, latency_slack=options.latency_slack,
                 max_utilization=options.max_utilization, tile_sizes=options.tile_sizes)
    sols: dict[str, Solution] = {}
    for p in STAGES:
        sol = result.stage(p).solution
        assert sol is not None  # a solver stage keeps its solution
        sols[p] = sol
    data.latency = int(result.stage("fifo").details["makespan"])
    design = Design(**{p: sols[p].decision for p in STAGES})
    solver = "+".join(sorted({s.solver for s in sols.values()} - {"none"})) or "none"
    return Outcome(design, Termination.FEASIBLE, solver=solver,
                   stats={"stage_time_s": {s.name: s.time_s for s in result.stages}},
                   limit_reached=any(s.limit_reached for s in sols.values()),
                   report={"result": result, "solutions": sols})


class Staged:
    """The stages in order (:func:`.stages.run`)."""

    name = "staged"
    solvers: tuple = ()
    exact = False
    bound = False
    numbers = False       # the stages' numbers are in different units: show the elapsed time only

    def solve(self, data: PipelineData, options: Options) -> Outcome:
        return _staged(data, options)


def objective(data: PipelineData, design: Design) -> float | None:
    return None if data.latency is None else float(data.latency)


def report(data: PipelineData, outcome: Outcome, options: Options) -> dict:
    result, sols = outcome.report["result"], outcome.report["solutions"]
    assert data.instance.operators is not None
    sections = {p: sols[p].sections[p] for p in STAGES}
    fusion, fifo = result.stage("fusion").details, result.stage("fifo").details
    sections["pipeline"] = {
        "stages": [s.to_dict() for s in result.stages],
        "total_time_s": sum(s.time_s for s in result.stages),
        "latency_cycles": fifo["makespan"],
        "dram": dram_traffic(data.instance.operators, data.tiled, fusion["dram_bytes"]),
        "dram_bytes": fusion["dram_bytes"], "unfused_dram_bytes": fusion["unfused_dram_bytes"],
        "onchip_bytes": fusion["onchip_bytes"], "buffered_bytes": fusion["buffered_bytes"],
        "fifo_bits": fifo["total_bits"],
        "fifo_timing": options.fifo_timing,
        "slot_utilization": result.stage("placement").details["slot_utilization"],
        "options": _recorded_options(data.instance, options),
    }
    return sections


#: The options a pipeline solution records (``pipeline.options``): what the checker and the emitter
#: rebuild the design with; a solution checked with other values fails.
RECORDED = ("default_tile_size", "overall_unroll_size", "tile_sizes", "c_max", "fifo_timing", "fifo_formulation",
            "latency_slack", "max_utilization")


def _recorded_options(instance, options: Options) -> dict:
    return {k: getattr(options, k) for k in RECORDED}


def checks(instance: Instance, options: Options, solution: Solution) -> list[Check]:
    """Each stage's checker on its input rebuilt from the operator graph, the options and the
    decisions before it; then the design's figures against the recount."""
    from dfopt.instance.types import Instance
    from dfopt.models import driver
    from dfopt.models.fusion import fused_design
    from dfopt.models.registry import get_problem

    design = solution.decision
    listed = (solution.sections.get("pipeline") or {}).get("stages", [])
    stages = {s["name"]: s for s in (listed if isinstance(listed, list) else [])
              if isinstance(s, dict) and isinstance(s.get("name"), str)}
    assert instance.operators is not None  # the driver checks the parts a problem needs
    tiled, tiling = tiling_stage(instance.operators, options.default_tile_size, options.overall_unroll_size,
                                 options.tile_sizes)
    faults = tiling_faults(tiled)
    out = [Check("pipeline-tiling", not faults, faults[:10])]

    def _number(value):      # a figure a file may have changed into anything: not a number is no figure
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def stage(problem: str, graph, platform, **stage_options) -> list[Check]:
        sub = Instance(instance.name, problem, graph=graph, platform=platform)
        sub_options = driver.make_options(sub, stage_options)
        recorded = stages.get(problem, {})
        sol = Solution(instance.name, problem, Termination(_status(recorded.get("status", "feasible"))),
                       objective=_number(recorded.get("objective")), bound=_number(recorded.get("bound")),
                       decision=getattr(design, problem),
                       sections={problem: solution.sections.get(problem, {})})
        checks_ = driver.run_checks(get_problem(problem), sub, sub_options, sol)
        return [Check(f"{problem}:{c.name}", c.ok, c.details) for c in checks_]

    out += stage("fusion", tiled, instance.platform, c_max=options.c_max)
    if not all(c.ok for c in out if c.name == "fusion:fusion-partition"):
        return out
    fused = port_timing(fused_design(tiled, design.fusion), options.fifo_timing)
    out += stage("fifo", fused, None, **({"latency_slack": options.latency_slack} if options.latency_slack else {}))
    if not all(c.ok for c in out if c.name == "fifo:depths-complete"):
        return out
    sized = fused.with_depths(dict(design.fifo.depths))
    util = {} if options.max_utilization is None else {"max_utilization": options.max_utilization}
    out += stage("memory", channel_graph(sized), instance.platform, **util)
    out += stage("placement", channel_graph(sized), instance.platform, memory_binding="heuristic", **util)
    out.append(_figures(instance, solution, tiled))
    out.append(_stage_records(listed, tiling.to_dict(), solution, out))
    return out


def _stage_records(listed, tiling: dict, solution: Solution, done: list[Check]) -> Check:
    """The ``pipeline.stages`` list: the stages in order, the tiling stage as recomputed, and each
    later stage's ``checks_ok`` and figures as its checks and its section give them (its objective,
    status and bound are checked by the stage's own record check)."""
    names = [s.get("name") if isinstance(s, dict) else None for s in listed] if isinstance(listed, list) else None
    if names != ["tiling", *STAGES]:
        return Check("pipeline-stages", False, [f"stages must list tiling, {', '.join(STAGES)} in order, got {names}"])
    bad = []
    fresh = {k: v for k, v in tiling.items() if k != "time_s"}
    bad += [f"stages/0/{k}: recorded {listed[0].get(k)!r}, recomputed {v!r}" for k, v in fresh.items()
            if not _same_value(listed[0].get(k, _MISSING), v)]
    for i, name in enumerate(STAGES, start=1):
        rec = listed[i]
        ok = all(c.ok for c in done if c.name.startswith(f"{name}:"))
        if rec.get("checks_ok") is not ok:
            bad.append(f"stages/{i}/checks_ok: recorded {rec.get('checks_ok')!r}, the {name} checks give {ok}")
        try:
            figures = stage_details(name, solution.sections.get(name) or {}, getattr(solution.decision, name))
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            bad.append(f"stages/{i}: the {name} section lacks a figure the stage records ({err})")
            continue
        bad += [f"stages/{i}/{k}: recorded {rec.get(k, _MISSING)!r}, the {name} section gives {v!r}"
                for k, v in figures.items() if not _same_value(rec.get(k, _MISSING), v)]
        for k in ("objective", "status"):
            if k not in rec:
                bad.append(f"stages/{i}/{k}: missing")
        if "status" in rec and _status(rec["status"]) != rec["status"]:
            bad.append(f"stages/{i}/status: {str(rec['status'])[:40]!r} is not a status "
                       f"({', '.join(sorted(_STATUSES))})")
    return Check("pipeline-stages", not bad, bad[:10])


_MISSING = object()
_STATUSES = {t.value for t in Termination}


def _status(value) -> str:
    """A recorded stage status as the stage's sub-solution takes it (``pipeline-stages`` fails on
    anything else): the value when it is a status, else ``feasible``."""
    return value if isinstance(value, str) and value in _STATUSES else "feasible"


def _same_value(a, b) -> bool:
    from dfopt.models.driver import same_value

    return a is not _MISSING and same_value(a, b)


def _figures(instance, solution, tiled) -> Check:
    """The pipeline section's figures and the objective agree with the stages' recounted ones."""
    from dfopt.models.fusion.checks import recount

    sec, fifo = solution.sections.get("pipeline") or {}, solution.sections.get("fifo") or {}
    bad = []
    latency = fifo.get("makespan")
    if solution.objective != latency or sec.get("latency_cycles") != latency:
        bad.append(f"objective {solution.objective} and latency_cycles {sec.get('latency_cycles')} must equal the "
                   f"fifo stage's makespan {latency}")
    groups = [list(g) for g in solution.decision.fusion.groups]
    where = {k: i for i, g in enumerate(groups) for k in g}
    fusion = recount(tiled, groups, where)
    got = dram_traffic(instance.operators, tiled, fusion["dram_bytes"])
    if sec.get("dram") != got:
        bad.append(f"dram {sec.get('dram')} differs from the recount {got}")
    for key, value in (("dram_bytes", fusion["dram_bytes"]), ("unfused_dram_bytes", fusion["unfused_dram_bytes"]),
                       ("fifo_bits", fifo.get("total_bits"))):
        if sec.get(key) != value:
            bad.append(f"{key} {sec.get(key)} differs from the stages' {value}")
    return Check("pipeline-figures", not bad, bad)


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    if options is None:
        from dfopt.models.driver import make_options

        options = make_options(instance, problem="pipeline")
    return [d for c in checks(instance, options, solution) if not c.ok for d in (c.details or [c.name])]


def _emit(instance, solution, out_dir, options=None, data=None) -> dict:
    return emit(instance, solution, out_dir, data=data)


PROBLEM = Problem(
    info=registry.info("pipeline"), options=Options, decision=Design, prepare=prepare,
    formulations=(Staged(),), default="staged", objective=objective, report=report, checks=checks,
    summary=summary, emit=_emit,
    emit_help="write the HLS C++ project (docs/hls.md): 'make -C DIR csim' and 'csim-vitis' check it against NumPy",
    recorded={f"pipeline.options.{k}": (lambda inst, o, k=k: getattr(o, k))
              for k in RECORDED})
