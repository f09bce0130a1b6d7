"""Reasons a placement cannot exist, found without a solver: a kernel (or a same-slot group)
larger than every slot it may use, total demand above total capacity, pins that overload a slot.

>>> from dfopt.ir.graph import DataflowGraph, Kernel
>>> from dfopt.ir.platform import load_preset
>>> from dfopt.models.placement.data import placement_data
>>> g = DataflowGraph([Kernel("big", resources={"dsp": 5000})])
>>> infeasibility_reasons(placement_data(g, load_preset("u55c"), 0.8))
['kernel big needs 5000 dsp, more than any slot allows (at most 2406.4 = 0.8 x 3008 in SLR0)']
"""

from __future__ import annotations

import numpy as np

from dfopt.models.placement.data import PlacementData


def _best_slot(d: PlacementData, r: int, mask: np.ndarray) -> str:
    s = int(np.flatnonzero(mask)[np.argmax(d.limit[mask, r])])
    return (f"at most {d.limit[s, r]:.6g} = {d.max_utilization:g} x {d.capacity[s, r]:.6g} "
            f"in {d.slots[s]}")


def _too_big(d: PlacementData, who: str, need: np.ndarray, mask: np.ndarray, pinned: bool) -> list[str]:
    fits = (need[None, :] <= d.limit + 1e-9).all(axis=1)
    if (fits & mask).any():
        return []
    out = []
    for r in np.flatnonzero((need[None, :] > d.limit[mask] + 1e-9).all(axis=0)).tolist():
        where = "any slot it is pinned to" if pinned and mask.sum() < d.num_slots else "any slot"
        out.append(f"{who} needs {need[r]:.6g} {d.kinds[r]}, more than {where} allows ({_best_slot(d, r, mask)})")
    if not out:  # each resource fits somewhere, but never all in one slot
        allowed = ", ".join(d.slots[s] for s in np.flatnonzero(mask).tolist())
        out.append(f"{who} fits no single slot with all its resources at once (slots tried: {allowed})")
    return out


def infeasibility_reasons(d: PlacementData) -> list[str]:
    """Every reason found; empty when none of these simple tests fails."""
    reasons = []
    for k in range(d.n):
        reasons += _too_big(d, f"kernel {d.names[k]}", d.demand[k], d.allowed[k],
                            pinned=not d.allowed[k].all())
    for members in d.same_slot:
        mask = d.allowed[members].all(axis=0)
        label = "same-slot group [" + ", ".join(d.names[k] for k in members) + "]"
        if not mask.any():
            reasons.append(f"{label} has no slot allowed by all its pins")
        else:
            reasons += _too_big(d, label, d.demand[members].sum(axis=0), mask, pinned=not mask.all())
    total, limit = d.demand.sum(axis=0), d.limit.sum(axis=0)
    for r in np.flatnonzero(total > limit + 1e-9).tolist():
        reasons.append(f"the kernels need {total[r]:.6g} {d.kinds[r]} in all, more than the platform allows "
                       f"({limit[r]:.6g} = {d.max_utilization:g} x {d.capacity[:, r].sum():.6g})")
    only = d.allowed.sum(axis=1) == 1
    for s in range(d.num_slots):
        members = np.flatnonzero(only & d.allowed[:, s])
        if len(members) < 2:
            continue
        load = d.demand[members].sum(axis=0)
        for r in np.flatnonzero(load > d.limit[s] + 1e-9).tolist():
            names = ", ".join(d.names[k] for k in members[:6]) + (" ..." if len(members) > 6 else "")
            reasons.append(f"the {len(members)} kernels pinned to {d.slots[s]} ({names}) need {load[r]:.6g} "
                           f"{d.kinds[r]}, more than it allows ({d.limit[s, r]:.6g} = "
                           f"{d.max_utilization:g} x {d.capacity[s, r]:.6g})")
    return reasons
