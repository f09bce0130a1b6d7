"""StreamTensor Algorithm 2 (greedy fusion) and the merge of consecutive groups.

Algorithm 2 walks the kernels in topological order. A kernel without predecessors opens a group;
otherwise it joins the group of its nearest predecessor (the latest in topological order) when the
group's cost plus the kernel's bytes plus the converters of the streams joining them stays within
``C_max``, and opens a new group otherwise. One guard is added to the paper's description: the
join is also refused when it would make the groups depend on each other in a cycle (a path from
that group through another group back into the kernel), which no schedule of fused kernels can run.

:func:`merge_consecutive` then merges neighbouring groups of a topological numbering while their
combined cost fits: it never cuts a stream, so it never adds DRAM traffic, and it leaves at most
``2 * total_cost / C_max + 1`` groups (the bound the exact model's group count relies on).
"""

from __future__ import annotations

import numpy as np

from dfopt.models.fusion.data import FusionData, topological_groups


def _reaches(succ: list[set], start: int, target: int) -> bool:
    seen, stack = {start}, [start]
    while stack:
        g = stack.pop()
        for h in succ[g]:
            if h == target:
                return True
            if h not in seen:
                seen.add(h)
                stack.append(h)
    return False


def algorithm2(data: FusionData) -> np.ndarray:
    """Group ids (topologically numbered) of the paper's greedy fusion."""
    n = data.n
    preds: list[list[int]] = [[] for _ in range(n)]
    conv_in: list[dict] = [{} for _ in range(n)]
    for u, v, c in zip(data.src.tolist(), data.dst.tolist(), data.pair_conv.tolist()):
        preds[v].append(u)
        conv_in[v][u] = c
    group = np.full(n, -1, dtype=np.int64)
    cost: list[int] = []
    succ: list[set] = []                      # quotient graph between groups
    for k in range(n):
        target = None
        if preds[k]:
            g = int(group[max(preds[k])])
            extra = int(data.bytes[k]) + sum(c for u, c in conv_in[k].items() if group[u] == g)
            others = {int(group[u]) for u in preds[k]} - {g}
            if cost[g] + extra <= data.c_max and not any(_reaches(succ, g, h) for h in others):
                target, cost[g] = g, cost[g] + extra
        if target is None:
            target = len(cost)
            cost.append(int(data.bytes[k]))
            succ.append(set())
        group[k] = target
        for u in preds[k]:
            if group[u] != target:
                succ[int(group[u])].add(target)
    return topological_groups(data, group)


def merge_consecutive(data: FusionData, assign: np.ndarray) -> np.ndarray:
    """Merge groups ``g`` and ``g+1`` of a topological numbering while their cost fits C_max.

    One pass suffices: once group ``g`` cannot take ``g+1``, later merges only make ``g+1``
    dearer, so every consecutive pair of the result costs more than C_max together.
    """
    a = topological_groups(data, assign)
    g = 0
    while g < int(a.max()):
        merged = np.where(a > g, a - 1, a)
        if data.group_costs(merged)[g] <= data.c_max:
            a = merged
        else:
            g += 1
    return a
