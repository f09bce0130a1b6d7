"""The end-to-end pipeline as a problem (``problem: pipeline``; DESIGN 5.7, :mod:`dfopt.pipeline`).

An instance carries an operator graph (``operators``) and a platform; the solution holds every
stage's section (``fusion``, ``fifo``, ``memory``, ``placement``) and a ``pipeline`` section with
the per-stage time, objective and checks and the design's figures. The checker rebuilds each
stage's input from the operator graph and the sections before it (tiling is deterministic) and
runs that stage's own checker, so ``dfopt check`` re-verifies the whole design without a solver.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/pipeline/ffn.json"), time_limit=10)
>>> sol.ok, [s["name"] for s in sol.sections["pipeline"]["stages"]]
(True, ['tiling', 'fusion', 'fifo', 'memory', 'placement'])
"""

from __future__ import annotations

from dataclasses import dataclass

from dfopt.errors import InstanceError, unknown_name_error
from dfopt.models.options import CommonOptions
from dfopt.solution import Check, Solution

__all__ = ["DEFAULT_FORMULATION", "FORMULATIONS", "Options", "check", "checks", "solve"]

DEFAULT_FORMULATION = "staged"
FORMULATIONS = {"staged": None}      # the stages in order (dfopt.pipeline.run)
STAGE_PROBLEMS = ("fusion", "fifo", "memory", "placement")


@dataclass(frozen=True)
class Options(CommonOptions):
    """Pipeline options (also CLI flags and ``options.pipeline`` fields)."""

    default_tile_size: int = 64
    overall_unroll_size: int = 1024
    fusion_formulation: str | None = None
    placement_formulation: str | None = None
    c_max: int | None = None            # fusion capacity in bytes (default: the platform's on-chip bytes)


def _validate(instance, options: Options) -> None:
    formulation = options.formulation or DEFAULT_FORMULATION
    if formulation not in FORMULATIONS:
        raise unknown_name_error("pipeline formulation", formulation, FORMULATIONS, pointer="/options/pipeline/formulation")
    if instance.operators is None:
        raise InstanceError("the pipeline problem needs an operator graph", pointer="/operators")
    if instance.platform is None or not instance.platform.slots:
        raise InstanceError("the pipeline problem needs an FPGA platform with slots", pointer="/platform")
    for field_name in ("default_tile_size", "overall_unroll_size"):
        if getattr(options, field_name) < 1:
            raise InstanceError(f"{field_name} must be >= 1, got {getattr(options, field_name)}",
                                pointer=f"/options/pipeline/{field_name}")


def solve(instance, options: Options) -> Solution:
    from dfopt import pipeline

    _validate(instance, options)
    result = pipeline.run(instance.operators, instance.platform, instance.name,
                          default_tile_size=options.default_tile_size,
                          overall_unroll_size=options.overall_unroll_size, time_limit=options.time_limit,
                          seed=options.seed, fusion_formulation=options.fusion_formulation,
                          placement_formulation=options.placement_formulation, c_max=options.c_max)
    by = {s.name: s for s in result.stages}
    sections = {p: by[p].solution.sections[p] for p in STAGE_PROBLEMS}
    fusion, fifo = by["fusion"].details, by["fifo"].details
    sections["pipeline"] = {
        "stages": [s.to_dict() for s in result.stages],
        "total_time_s": sum(s.time_s for s in result.stages),
        "latency_cycles": fifo["makespan"],
        "dram_bytes": fusion["dram_bytes"], "unfused_dram_bytes": fusion["unfused_dram_bytes"],
        "onchip_bytes": fusion["onchip_bytes"], "buffered_bytes": fusion["buffered_bytes"],
        "fifo_bits": fifo["total_bits"],
        "slot_utilization": by["placement"].details["slot_utilization"],
        "options": {"default_tile_size": options.default_tile_size, "overall_unroll_size": options.overall_unroll_size,
                    "c_max": options.c_max},
    }
    solution = Solution(instance=instance.name, problem="pipeline", status="feasible",
                        objective=float(fifo["makespan"]), formulation="staged",
                        solver="+".join(sorted({by[p].solution.solver for p in STAGE_PROBLEMS} - {"none"})) or "none",
                        seed=options.seed, sections=sections,
                        stats={"stage_time_s": {s.name: s.time_s for s in result.stages}})
    solution.checks = checks(instance, solution)
    return solution


def checks(instance, solution) -> list[Check]:
    """Each stage's checker on its rebuilt input (see the module docstring)."""
    from dfopt import pipeline
    from dfopt.api import check_solution
    from dfopt.instance.convert import graph_from_dict
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.models.tiling.tiler import tile_graph

    sec = solution.sections.get("pipeline") or {}
    opts = sec.get("options", {})
    out = []
    tiled = tile_graph(instance.operators, opts.get("default_tile_size", 64), opts.get("overall_unroll_size", 1024))
    faults = pipeline.tiling_faults(tiled)
    out.append(Check("pipeline-tiling", not faults, faults[:10]))

    def stage(problem, graph, platform):
        if problem not in solution.sections:
            return [Check(f"pipeline-{problem}", False, [f"the solution has no {problem} section"])]
        sub = Solution(instance.name, problem, solution.status, sections={problem: solution.sections[problem]})
        sub.objective = _stage_objective(problem, sec)
        result = check_solution(Instance(instance.name, problem, graph=graph, platform=platform), sub)
        return [Check(f"{problem}:{c.name}", c.ok, c.details) for c in result]

    out += stage("fusion", tiled, instance.platform)
    fused = graph_from_dict(solution.sections["fusion"]["fused_graph"], validate=False)
    out += stage("fifo", fused, None)
    depths = solution.sections["fifo"]["depths"]
    sized = DataflowGraph(list(fused.kernels.values()),
                          [_with_depth(s, depths.get(n)) for n, s in fused.streams.items()])
    out += stage("memory", pipeline.channel_graph(sized), instance.platform)
    out += stage("placement", pipeline.channel_graph(sized), instance.platform)
    return out


def _with_depth(stream, depth):
    import dataclasses

    return dataclasses.replace(stream, depth=None if depth is None else int(depth))


def _stage_objective(problem: str, pipeline_section: dict):
    """The objective the pipeline recorded for stage ``problem``."""
    for s in pipeline_section.get("stages", []):
        if s["name"] == problem:
            return s.get("objective")
    return None


def check(instance, solution) -> list[str]:
    return [d for c in checks(instance, solution) if not c.ok for d in (c.details or [c.name])]
