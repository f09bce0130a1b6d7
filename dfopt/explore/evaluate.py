"""One trial of an exploration: the design its parameters give, solved, checked and measured.

A trial applies its parameter values to the instance (options; the platform preset), then:

* **pipeline**: a cheap *precheck* first — the tiled graph (tiling is counting only) against the
  platform: every kernel's resources within the largest slot x ``max_utilization``, and their sum
  within the platform's x ``max_utilization`` (fusion, FIFOs and buffers only add to them, so a
  design that fails this cannot fit; the stages are not run); then the whole pipeline through
  :func:`dfopt.models.driver.solve`, which runs every stage's checker. With one objective
  (``latency``) and ``prune``, a run whose latency is already known to be no better than the best
  design so far stops early: after tiling (the slowest kernel's latency is a lower bound of the
  design's) and after FIFO sizing (the latency itself);
* **schedule**: the scheduler's solution (its checks: isl legality) and the generated C compiled,
  checked byte for byte against the original program and timed (:mod:`dfopt.explore.runtime`).

A design that does not fit, a stage that proves the design infeasible, a stage that finds nothing
within the trial's time or a failed check make the trial *infeasible*: its ``stage`` and
``reason`` say where and why, and ``violation`` (> 0) how far (the largest need / limit - 1 for a
precheck, 1 otherwise) is what the study's constraint sees. Only a feasible trial whose every
check passed counts.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dfopt.errors import CodegenError, DfoptError, InfeasibleError, InstanceError, NoSolutionError

if TYPE_CHECKING:
    from dfopt.explore.space import Config
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution

#: The placement stage's default share of a slot (the precheck's limit when the trial sets none).
PLACEMENT_UTILIZATION = 0.8
RESOURCES = ("lut", "ff", "dsp", "bram", "uram")


@dataclass
class TrialOutcome:
    """What one trial gave: objective ``values`` (None when pruned), feasibility with the stage
    and reason that decided it, the design's ``figures`` and the checked ``solution``."""

    values: tuple | None
    feasible: bool
    stage: str | None = None
    reason: str | None = None
    violation: float = 0.0
    figures: dict = field(default_factory=dict)
    solution: Solution | None = None
    pruned: bool = False


class _Prune(Exception):
    """Raised from the pipeline's stage hook: the trial cannot beat the best."""

    def __init__(self, stage: str, reason: str):
        super().__init__(reason)
        self.stage, self.reason = stage, reason


def infeasible(config: Config, stage: str, reason: str, violation: float = 1.0, figures: dict | None = None
               ) -> TrialOutcome:
    """An infeasible trial: every objective at infinity (the sampler ranks it by its violation)."""
    return TrialOutcome(tuple(math.inf for _ in config.objectives), False, stage, reason, max(violation, 1e-9),
                        dict(figures or {}))


class Evaluator:
    """Runs trials of one study in one process (keeps the platform presets and, for schedules,
    the run-time measurement with its cache of compiled programs)."""

    def __init__(self, instance: Instance, config: Config, seed: int = 0):
        self.instance, self.config, self.seed = instance, config, seed
        self._variants: dict = {}
        self._measure: Any = None

    def close(self) -> None:
        if self._measure is not None:
            self._measure.close()
            self._measure = None

    def variant(self, platform: str | None) -> Instance:
        """The instance on the preset ``platform`` (None: its own)."""
        if platform is None:
            return self.instance
        if platform not in self._variants:
            from dfopt.ir.platform import load_preset

            self._variants[platform] = dataclasses.replace(self.instance, platform=load_preset(platform),
                                                           platform_name=platform)
        return self._variants[platform]

    def instance_for(self, values: dict) -> Instance:
        """The instance a trial solved: on its platform, its options written into
        ``options.<problem>`` (so ``dfopt solve`` / ``dfopt check`` of it reproduce the trial)."""
        overrides, platform = self.config.overrides(values)
        inst = self.variant(platform)
        options = {**inst.options, self.config.problem: {**inst.options.get(self.config.problem, {}), **overrides}}
        options.pop("explore", None)
        return dataclasses.replace(inst, options=options)

    def evaluate(self, values: dict, best: float | None = None) -> TrialOutcome:
        """The trial with parameter values ``values`` (by name, decoded); ``best`` the best
        feasible single objective so far (for pruning)."""
        overrides, platform = self.config.overrides(values)
        if self.config.problem == "pipeline":
            return self._pipeline(overrides, platform, best)
        return self._schedule(overrides)

    def solve(self, values: dict) -> Solution:
        """The checked solution of a trial's parameters (what ``best.sol.json`` holds when the
        trial ran on another machine); raises when it is not feasible now."""
        outcome = self.evaluate(values, None)
        if not outcome.feasible or outcome.solution is None:
            raise InfeasibleError(f"the trial's design is not feasible: {outcome.stage}: {outcome.reason}")
        return outcome.solution

    # -- pipeline ---------------------------------------------------------------------------------
    def _options(self, instance: Instance, overrides: dict) -> Any:
        from dfopt.models import driver

        return driver.make_options(instance, {**overrides, "time_limit": self.config.trial_time_limit,
                                              "seed": self.seed})

    def _pipeline(self, overrides: dict, platform: str | None, best: float | None) -> TrialOutcome:
        from dfopt.models import driver
        from dfopt.models.pipeline.stages import watching

        cfg = self.config
        instance = self.variant(platform)
        try:
            options = self._options(instance, overrides)
        except InstanceError as err:
            return infeasible(cfg, "options", str(err))
        try:
            tiled = _tiled(instance, options)
        except DfoptError as err:
            return infeasible(cfg, "tiling", str(err))
        reason, violation = precheck(instance, tiled, options)
        if reason:
            return infeasible(cfg, "precheck", reason, violation)
        single = cfg.objectives == ("latency",)
        limit = best if cfg.prune and single and best is not None and math.isfinite(best) else None

        def hook(stage: str, result, before) -> None:
            if limit is None:
                return
            if stage == "tiling" and result.objective is not None and result.objective >= limit:
                raise _Prune("tiling", f"the slowest kernel alone takes {result.objective:.0f} cycles, no better "
                                       f"than the best design's {limit:.0f}")
            if stage == "fifo" and result.details.get("makespan", 0) >= limit:
                raise _Prune("fifo", f"latency {result.details['makespan']:.0f} cycles after FIFO sizing, no "
                                     f"better than the best design's {limit:.0f}")

        try:
            with watching(hook):
                sol = driver.solve(instance, options)
        except _Prune as p:
            return TrialOutcome(None, True, p.stage, p.reason, pruned=True)
        except (InfeasibleError, NoSolutionError, InstanceError, CodegenError) as err:
            return infeasible(cfg, _stage_of(err), _reason_of(err))
        failed = [c for c in sol.checks if not c.ok]
        if failed:
            c = failed[0]
            return infeasible(cfg, "checks", f"check {c.name} failed: {'; '.join(map(str, c.details[:2]))}")
        figures = pipeline_figures(sol)
        return TrialOutcome(tuple(float(figures[o]) for o in cfg.objectives), True, figures=figures, solution=sol)

    # -- schedule ---------------------------------------------------------------------------------
    def prepare(self) -> None:
        """What every trial needs, made before the first one so that its faults stop the study
        with a clear error instead of failing each trial: for schedules, the compiler and the
        original program's measurement (the reference of every check and of the speedups)."""
        if self.config.problem != "schedule" or self._measure is not None:
            return
        from dfopt.explore.runtime import RuntimeMeasure

        cfg = self.config
        self._measure = RuntimeMeasure(self.instance, dataset=cfg.dataset, repeats=cfg.repeats, threads=cfg.threads)
        original = self._measure.original()
        if original.error or original.min is None:
            raise InfeasibleError(f"the original program of {self.instance.name} does not run at the {cfg.dataset} "
                                  f"dataset, so no schedule can be checked or timed: {original.error}")

    def _schedule(self, overrides: dict) -> TrialOutcome:
        cfg = self.config
        self.prepare()
        original = self._measure.original()
        m = self._measure.measure({**overrides, "time_limit": cfg.trial_time_limit, "seed": self.seed})
        figures = {"original_s": original.min, "solve_s": m.solve_s}
        if m.error or m.min is None:
            reason = m.error or "no timed run"
            if m.stage and reason.startswith(f"{m.stage}: "):
                reason = reason[len(m.stage) + 2:]
            return infeasible(cfg, m.stage or "measure", reason, figures=figures)
        figures.update(runtime=m.min, runtime_median=m.median, speedup=original.min / m.min if m.min else None,
                       runs=len(m.seconds), code_hash=m.code_hash)
        return TrialOutcome((float(m.min),), True, figures=figures, solution=m.solution)


def _tiled(instance: Instance, options: Any):
    from dfopt.models.tiling.tiler import tile_graph

    assert instance.operators is not None
    return tile_graph(instance.operators, options.default_tile_size, options.overall_unroll_size, options.tile_sizes)


def precheck(instance: Instance, tiled, options: Any) -> tuple[str | None, float]:
    """(why the tiled design cannot fit the platform, by how much) or (None, 0): each kernel
    within the largest slot and the kernels' sum within the platform, x the utilisation limit."""
    platform = instance.platform
    if platform is None or not platform.slots:
        return None, 0.0
    util = options.max_utilization if options.max_utilization is not None else PLACEMENT_UTILIZATION
    worst: tuple[float, str] = (0.0, "")
    for r in RESOURCES:
        caps = [float(s.resources.get(r, 0)) for s in platform.slots]
        if not any(caps):
            continue
        need = [float(k.resources.get(r, 0)) for k in tiled.kernels.values()]
        total, limit = sum(need), util * sum(caps)
        if total > limit and total / limit - 1 > worst[0]:
            worst = (total / limit - 1, f"the kernels need {total:.6g} {r} before fusion, FIFOs and buffers, above "
                                        f"{util:g} x {sum(caps):.6g} = {limit:.6g} on {platform.name}")
        big = max(range(len(need)), key=need.__getitem__)
        largest = util * max(caps)
        if need[big] > largest and need[big] / largest - 1 > worst[0]:
            name = list(tiled.kernels)[big]
            worst = (need[big] / largest - 1, f"kernel {name} needs {need[big]:.6g} {r}, above the largest slot's "
                                              f"{util:g} x {max(caps):.6g} = {largest:.6g}")
    return (worst[1], worst[0]) if worst[1] else (None, 0.0)


def pipeline_figures(sol: Solution) -> dict:
    """The design's figures a study can minimise (:data:`dfopt.explore.space.OBJECTIVES`)."""
    sec = sol.sections
    slots = sec["placement"]["slots"].values()
    used = {r: sum(float(s["used"].get(r, 0)) for s in slots) for r in RESOURCES}
    cap = {r: sum(float(s["capacity"].get(r, 0)) for s in slots) for r in RESOURCES}
    out: dict[str, Any] = {r: (used[r] / cap[r] if cap[r] else 0.0) for r in RESOURCES}
    out.update(latency=float(sol.objective or 0), utilization=max(max(s["utilization"].values()) for s in slots),
               fifo_bits=float(sec["fifo"]["total_bits"]), fifo_bram18=float(sec["fifo"].get("bram18", 0)),
               dram_bytes=float(sec["pipeline"]["dram_bytes"]))
    return out


_STAGE = re.compile(r"pipeline stage (\w+): ")


def _stage_of(err: DfoptError) -> str:
    m = _STAGE.search(str(err))
    if m:
        return m.group(1)
    return "solve" if isinstance(err, NoSolutionError) else "options" if isinstance(err, InstanceError) else "solve"


def _reason_of(err: DfoptError) -> str:
    text = getattr(err, "reason", None) or str(err)
    return _STAGE.sub("", text, count=1)
