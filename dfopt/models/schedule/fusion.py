"""The ``smart`` fusion policy: fuse strongly connected components only where the fused loop
can still be parallel (Pluto's ``smartfuse`` / typed fusion, docs/schedule.md).

Maximal fusion puts every statement into one band whenever a legal row exists; on 3mm the
three products then share one band that carries a dependence at every row, on atax the two
matrix-vector products fuse into a skewed nest, and the code loses the parallel loop isl's
scheduler keeps (atax ran 4x slower than the original order). ``smart`` asks, before a loop row, one
question per pair "group so far, next component": does a row exist that carries no live
dependence of the fused statements (a coincident row, the outer parallel loop)? It cuts where
fusing would lose such a row that the parts have on their own, and fuses otherwise (two parts
without a parallel row lose nothing by fusing, and fusing keeps reuse and tilable bands). The
scheduler asks only where its band has carried nothing yet, and counts a statement with a
parallel loop outside already as having no parallel row to lose.

The components come from the live dependence graph in a topological order that lists the
weakly connected parts one after the other (then ties by statement order): parts that share no
dependence are not fused (as isl schedules them apart), each keeps its own loop order. The
groups are runs of consecutive components, so every dependence between groups runs forward and
one scalar dimension orders them legally.

>>> probe = lambda names: not {"S2", "S3"} <= set(names)   # S2 and S3 fused: no parallel row
>>> [g.statements for g in smart_groups([["S0"], ["S1"], ["S2"], ["S3"]], probe)]
[('S0', 'S1', 'S2'), ('S3',)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    """Consecutive components fused into one loop nest; ``parallel``: a coincident row exists."""

    statements: tuple
    parallel: bool


def smart_groups(components: Sequence[Sequence[str]], parallel_row: Callable[[tuple], bool],
                 linked: Callable[[tuple, tuple], bool] = lambda a, b: True) -> list[Group]:
    """Components (in execution order) grouped greedily: the next component joins the current
    group when a dependence links them (``linked(group, component)``: fusing what shares no data
    gains no reuse and ties both to one loop order) and neither the group nor the component has
    a parallel row (``parallel_row(statements)``) that the fused statements do not."""
    groups: list[Group] = []
    for comp in components:
        alone = parallel_row(tuple(comp))
        if groups and linked(groups[-1].statements, tuple(comp)):
            last = groups[-1]
            fused = last.statements + tuple(comp)
            together = parallel_row(fused)
            if together or not (last.parallel or alone):
                groups[-1] = Group(fused, together)
                continue
        groups.append(Group(tuple(comp), alone))
    return groups
