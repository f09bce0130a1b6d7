"""Why a memory binding cannot fit: the messages of :class:`~dfopt.errors.InfeasibleError`.

Three causes, checked in this order: the kernels of a slot alone (with its register FIFOs, which
have no choice) exceed a capacity; one buffer fits in no kind beside them; or the buffers together
do not fit (proven by the exact model), shown by a binding with the least overflow.

>>> from dfopt.ir.graph import DataflowGraph, Kernel
>>> from dfopt.ir.platform import Platform, Slot
>>> from dfopt.models.memory.problem import memory_problem
>>> g = DataflowGraph([Kernel("a", resources={"bram": 700})])
>>> p = Platform("x", "fpga", slots=[Slot("SLR0", resources={"bram": 672})])
>>> print(base_fault(memory_problem(g, p, max_utilization=0.8))[0])  # doctest: +NORMALIZE_WHITESPACE
slot SLR0: kernels need 700 BRAM36 before any buffer, capacity 672 x 0.8 = 537.6;
move kernels to other slots, raise max_utilization or make the kernels smaller
"""

from __future__ import annotations

from collections.abc import Sequence

from dfopt.errors import InfeasibleError
from dfopt.ir.memory import KIND_RESOURCE
from dfopt.models.memory.problem import EPS, RESOURCES, UNIT_NAMES, MemoryProblem

__all__ = ["base_fault", "fmt", "lonely_fault", "overflow_error"]


def fmt(v: float) -> str:
    """A number without a useless ``.0``; at most 6 significant digits otherwise."""
    v = float(v)
    return str(int(v)) if v == int(v) else f"{v:.6g}"


def capacity_text(problem: MemoryProblem, s: int, r: str) -> str:
    slot = problem.slots[s]
    if problem.max_utilization == 1.0:
        return f"capacity {fmt(slot.raw[r])}"
    return f"capacity {fmt(slot.raw[r])} x {fmt(problem.max_utilization)} = {fmt(slot.capacity[r])}"


def _register(problem: MemoryProblem, i: int) -> bool:
    """A FIFO of depth <= 2: registers, no choice."""
    return len(problem.buffers[i].options) == 1


def _forced(problem: MemoryProblem) -> list[dict]:
    extra = [{r: 0.0 for r in RESOURCES} for _ in problem.slots]
    for i, b in enumerate(problem.buffers):
        if _register(problem, i):
            kind, cost = next(iter(b.options.items()))
            extra[problem.slot_of[i]][KIND_RESOURCE[kind]] += cost
    return extra


def base_fault(problem: MemoryProblem) -> tuple[str, tuple] | None:
    """The first slot whose kernels (then kernels plus register FIFOs) exceed a capacity."""
    forced = _forced(problem)
    for s, slot in enumerate(problem.slots):
        for r in RESOURCES:
            base, cap = slot.base[r], slot.capacity[r]
            if base > cap + EPS:
                return (f"slot {slot.name}: kernels need {fmt(base)} {UNIT_NAMES[r]} before any buffer, "
                        f"{capacity_text(problem, s, r)}; move kernels to other slots, raise max_utilization "
                        "or make the kernels smaller"), (slot.name, r)
            if base + forced[s][r] > cap + EPS:
                return (f"slot {slot.name}: kernels need {fmt(base)} {UNIT_NAMES[r]} and the register FIFOs "
                        f"(depth <= 2) {fmt(forced[s][r])} more, {capacity_text(problem, s, r)}"), (slot.name, r)
    return None


def lonely_fault(problem: MemoryProblem) -> tuple[str, tuple] | None:
    """The first buffer that fits in no allowed kind beside its slot's kernels."""
    forced = _forced(problem)
    for i, b in enumerate(problem.buffers):
        if _register(problem, i):
            continue
        s = problem.slot_of[i]
        slot = problem.slots[s]
        free = {r: slot.capacity[r] - slot.base[r] - forced[s][r] for r in RESOURCES}
        if any(cost <= free[KIND_RESOURCE[k]] + EPS for k, cost in problem.options[i].items()):
            continue
        parts = []
        for kind, cost in b.options.items():
            r = KIND_RESOURCE[kind]
            if kind in problem.options[i]:
                parts.append(f"{kind} needs {fmt(cost)} {UNIT_NAMES[r]} with {fmt(max(free[r], 0))} free")
            else:
                parts.append(f"{kind}: the slot has no {r}")
        return (f"slot {slot.name}: {b.source} buffer {b.key} ({b.width} x {b.depth} bits) fits in no "
                f"memory kind beside the kernels: {'; '.join(parts)}"), (slot.name, b.key)
    return None


def overflow_error(problem: MemoryProblem, binding: Sequence[str], least: bool) -> InfeasibleError:
    """The error for buffers that do not fit together (proven by the exact model), shown by
    ``binding``: one with the least overflow when ``least``, else the size-ordered one."""
    used = problem.usage(binding)
    worst = max(((s, r) for s, slot in enumerate(problem.slots) for r in RESOURCES
                 if used[s].get(r, 0) > slot.capacity[r] + EPS),
                key=lambda sr: used[sr[0]][sr[1]] / max(problem.slots[sr[0]].capacity[sr[1]], EPS))
    s, r = worst
    slot = problem.slots[s]
    shown = "even a binding with the least overflow" if least else "the size-ordered binding"
    return InfeasibleError(
        f"slot {slot.name}: the buffers do not fit together (no binding does): {shown} needs "
        f"{fmt(used[s][r])} {UNIT_NAMES[r]} (kernels {fmt(slot.base[r])} + buffers {fmt(used[s][r] - slot.base[r])}), "
        f"{capacity_text(problem, s, r)}; raise max_utilization, move kernels to other slots or make "
        "the buffers smaller", culprits=(slot.name, r))
