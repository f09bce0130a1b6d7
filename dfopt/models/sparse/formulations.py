"""The sparse kernel's formulations: ``cpsat`` (the model of :mod:`.model`, hinted with the
baseline) and ``stardust`` (the fixed rules of :mod:`.stardust`, no solver)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dfopt.models.base import Bounded, Outcome, Simple
from dfopt.results import Termination


def _stardust(data: Any, options: Any) -> Outcome:
    return Outcome(data.baseline, Termination.FEASIBLE)


@dataclass(frozen=True)
class CpSat(Bounded):
    """Memory binding, co-iteration and parallelisation on CP-SAT (see :mod:`.model`)."""

    name: str = "cpsat"
    solvers: tuple = ("cpsat",)

    def solve(self, data: Any, options: Any) -> Outcome:
        from dfopt.models.sparse.model import SparseModel

        model = SparseModel(data)
        model.hint(data.baseline)
        termination, design, bound = model.solve(options.time_limit, options.seed, options.deterministic,
                                                 workers=options.workers)
        stats = {"arrays": len(model.place), "placements": sum(len(p.options) for p in model.place.values()),
                 "joins": len(data.sim.joiners), "par_pairs": len(model.pairs)}
        if design is None:      # the baseline is legal within the same space: keep it
            return Outcome(data.baseline, Termination.TIME_LIMIT, solver="cpsat", stats=stats, limit_reached=True)
        if _cycles(data, design) > _cycles(data, data.baseline):   # a limit stopped it above its hint
            stats["kept_baseline"] = True
            design, termination = data.baseline, Termination.FEASIBLE
        return Outcome(design, termination, bound=None if bound is None else bound + data.machine.dram_latency,
                       solver="cpsat", stats=stats, limit_reached=termination == Termination.TIME_LIMIT)


def _cycles(data: Any, design: Any) -> int:
    from dfopt.models.sparse.cost import estimate

    return estimate(data.sim, data.vloop, design, data.machine, data.regions).cycles


def formulations() -> tuple:
    return (CpSat(), Simple("stardust", _stardust, description="Stardust's fixed rules"))
