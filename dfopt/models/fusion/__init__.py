"""Kernel fusion (``problem: fusion``; StreamTensor sections 4.2 and 5.2; docs/fusion.md).

Partitions the kernels into fused groups: each group convex, the groups runnable one after another
(no cycle between them), each group's kernel bytes plus the converter bytes of its internal
streams at most ``C_max``; the streams between groups go through DRAM. Objective: least DRAM
traffic. Converters come from the streams' ``src_type``/``dst_type`` (Algorithm 1,
:mod:`dfopt.models.converter`) or their explicit ``converter_bytes``.

The formulations are in :mod:`.formulations` (default ``auto``: the exact model ``cpsat`` below
60 kernels, the large-neighbourhood search ``lns`` from there). ``bound`` is the best of a
combinatorial bound (:mod:`.bound`) and the solver's proven bound. The fused design is returned
as IR (:func:`fused_design`), with its on-chip memory against buffering every intermediate
tensor whole.

>>> import dfopt
>>> sol = dfopt.solve("instances/fusion/greedy-trap.json")
>>> sol.status.value, sol.objective, sol.sections["fusion"]["greedy"]["dram_bytes"], sol.decision.groups
('optimal', 64.0, 512.0, (('a',), ('b', 'c'), ('d',)))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dfopt.errors import InfeasibleError, InstanceError
from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.fusion.bound import lower_bound
from dfopt.models.fusion.checks import check, checks
from dfopt.models.fusion.data import FusionData, fusion_data
from dfopt.models.fusion.decision import Partition
from dfopt.models.fusion.formulations import FusionProblem, assign_of, formulations
from dfopt.models.fusion.fused import fused_graph, onchip_memory
from dfopt.models.fusion.greedy import algorithm2, merge_consecutive
from dfopt.models.options import CommonOptions, option, where
from dfopt.units import format_bytes

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.platform import Platform
    from dfopt.solution import Solution

__all__ = ["PROBLEM", "Options", "Partition", "c_max_of", "fused_design", "partition", "check", "checks"]

MAX_BYTES = 1 << 50


@dataclass(frozen=True)
class Options(CommonOptions):
    """Fusion options (``options.fusion``, ``dfopt solve`` flags, keywords)."""

    c_max: int | None = option(None, "bytes per fused group (default: the platform's onchip_bytes)",
                               exclusive_minimum=0, maximum=MAX_BYTES, metavar="BYTES")
    dominance: bool = option(True, "exact model: two consecutive groups must not fit together (symmetry "
                                   "breaking)")
    hint: bool = option(True, "exact model: start from the merged greedy partition")
    workers: int = option(1, "CP-SAT workers (deterministic with interleaved search)", minimum=1, maximum=256)


def c_max_of(instance: Instance, options: Options) -> int:
    """C_max from the options, else the platform's on-chip bytes; an error says where to set it."""
    if options.c_max is not None:
        return int(options.c_max)
    if instance.platform is not None and instance.platform.onchip_bytes:
        return int(instance.platform.onchip_bytes)
    raise InstanceError("fusion needs C_max: set options.fusion.c_max (bytes) or a platform with "
                        "onchip_bytes", pointer=where(options, "c_max"))


def _check_kernels_fit(data: FusionData) -> None:
    over = np.flatnonzero(data.bytes > data.c_max)
    if len(over):
        worst = sorted(over.tolist(), key=lambda i: -data.bytes[i])
        parts = [f"kernel {data.names[i]} alone needs {_bytes_text(data.bytes[i])}" for i in worst[:5]]
        more = f" (and {len(over) - 5} more)" if len(over) > 5 else ""
        raise InfeasibleError("; ".join(parts) + more + f", C_max is {_bytes_text(data.c_max)}: "
                              "tile these kernels smaller or raise c_max")


def _bytes_text(b) -> str:
    b = int(b)
    return f"{format_bytes(b)} ({b} bytes)" if b >= 1024 else f"{b} bytes"


def prepare(instance: Instance, options: Options) -> FusionProblem:
    graph = instance.graph
    assert graph is not None  # the driver checks the parts a problem needs
    data = fusion_data(graph, c_max_of(instance, options))
    _check_kernels_fit(data)
    greedy = algorithm2(data)
    return FusionProblem(data, graph, greedy, merge_consecutive(data, greedy), lower_bound(data))


def objective(fp: FusionProblem, decision: Partition) -> float:
    return fp.data.cut_traffic(assign_of(fp.data, decision))


def fused_design(graph: DataflowGraph, decision: Partition) -> DataflowGraph:
    """The fused design as IR: converter and DMA kernels inserted (:func:`.fused.fused_graph`)."""
    return fused_graph(graph, decision.group_of())


def report(fp: FusionProblem, outcome: Outcome, options: Options) -> dict:
    """The ``fusion`` section beside the groups: costs, converters, cut streams, traffic, baselines,
    on-chip memory and the fused graph."""
    data, graph, assign = fp.data, fp.graph, assign_of(fp.data, outcome.decision)
    where_ = outcome.decision.group_of()
    internal = [s for s in graph.streams.values() if where_[s.src] == where_[s.dst]]
    converters = {s.name: data.converters[s.name].to_dict() for s in internal if data.converters[s.name].bytes > 0}
    unfused = data.total_traffic()
    dram = data.cut_traffic(assign)
    from dfopt.instance.convert import graph_to_dict

    return {
        "group_costs": data.group_costs(assign).tolist(), "c_max": data.c_max,
        "converters": converters,
        "cut_streams": [s.name for s in graph.streams.values() if where_[s.src] != where_[s.dst]],
        "dram_bytes": dram, "unfused_dram_bytes": unfused,
        "dram_ratio": dram / unfused if unfused else 1.0,
        "greedy": {"dram_bytes": data.cut_traffic(fp.greedy), "groups": int(fp.greedy.max()) + 1,
                   "merged_dram_bytes": data.cut_traffic(fp.merged), "merged_groups": int(fp.merged.max()) + 1},
        "combinatorial_bound": fp.bound,
        "onchip": onchip_memory(graph, where_),
        "fused_graph": graph_to_dict(fused_graph(graph, where_)),
    }


def _summary(instance, solution) -> list[str]:
    sec, groups = solution.sections["fusion"], solution.decision.groups
    greedy, onchip, b = sec["greedy"], sec["onchip"], format_bytes
    lines = [f"  {sum(len(g) for g in groups)} kernels in {len(groups)} groups, "
             f"C_max {b(sec['c_max'])}, largest group {b(max(sec['group_costs']))}",
             f"  DRAM traffic {b(sec['dram_bytes'])} ({sec['dram_ratio']:.3f} of no fusion, "
             f"{b(sec['unfused_dram_bytes'])}); Algorithm 2 greedy {b(greedy['dram_bytes'])} "
             f"in {greedy['groups']} groups",
             f"  on-chip {b(onchip['fused_bytes'])} = {onchip['ratio']:.3f} x buffering every "
             f"fused intermediate whole ({b(onchip['buffered_bytes'])}); converters "
             f"{b(onchip['converter_bytes'])} on {len(sec['converters'])} streams"]
    for i, members in enumerate(groups[:8]):
        shown = ", ".join(members[:10]) + (f", ... ({len(members)})" if len(members) > 10 else "")
        lines.append(f"    group {i} ({b(sec['group_costs'][i])}): {shown}")
    if len(groups) > 8:
        lines.append(f"    ... {len(groups) - 8} more groups")
    return lines


PROBLEM = Problem(
    recount=True,
    info=registry.info("fusion"), options=Options, decision=Partition, prepare=prepare,
    formulations=formulations(), default="auto", objective=objective, lower_bound=lambda fp: fp.bound,
    report=report, checks=checks, summary=_summary, recorded={"c_max": c_max_of})


def partition(graph: DataflowGraph, c_max: int | None = None, platform: Platform | str | None = None,
              **options: Any) -> Solution:
    """Fuse the kernels of ``graph`` into groups of at most ``c_max`` bytes (default: the
    platform's on-chip bytes); returns the checked :class:`~dfopt.solution.Solution`
    (``.decision.groups``).

    Examples
    --------
    >>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
    >>> g = DataflowGraph([Kernel("a", resources={"bytes": 10}), Kernel("b", resources={"bytes": 5}),
    ...                    Kernel("c", resources={"bytes": 10})],
    ...                   [Stream("e", "a", "b", tokens=4), Stream("f", "b", "c", tokens=64)])
    >>> partition(g, c_max=16).decision.groups
    (('a',), ('b', 'c'))
    """
    from dfopt.api import solve_graph

    return solve_graph("fusion", graph, platform, c_max=c_max, **options)
