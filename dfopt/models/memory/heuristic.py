"""The size-ordered baseline binding.

Register FIFOs (no choice) first, then the buffers by bits, largest first (ties by key). Each
takes, among the kinds that still fit its slot, the one giving the smallest weighted peak of that
slot afterwards; ties go to the smaller fraction of capacity, then to the order
register, lutram, bram18, uram. When no kind fits, the one with the least relative overflow.

>>> from dfopt.ir.graph import Buffer, DataflowGraph, Kernel
>>> from dfopt.ir.platform import Platform, Slot
>>> from dfopt.models.memory.problem import memory_problem
>>> g = DataflowGraph([Kernel("a", buffers=(Buffer("x", 32, 1024), Buffer("y", 16, 64)))])
>>> p = Platform("one", "fpga", slots=[Slot("S", resources={"lut": 2000, "bram": 2, "uram": 2})])
>>> size_ordered(memory_problem(g, p))
['lutram', 'bram18']
"""

from __future__ import annotations

from dfopt.ir.memory import KIND_RESOURCE
from dfopt.models.memory.problem import EPS, MemoryProblem, kind_order

__all__ = ["order", "size_ordered"]


def order(problem: MemoryProblem) -> list[int]:
    """Buffer indices in the order the heuristic binds them."""
    return sorted(range(len(problem.buffers)),
                  key=lambda i: (len(problem.options[i]) > 1, -problem.buffers[i].bits, problem.buffers[i].key))


def _slot_peak(problem: MemoryProblem, s: int, used: dict) -> float:
    slot = problem.slots[s]
    return max((problem.weights[r] * used[r] / slot.capacity[r] for r in used if slot.has(r)), default=0.0)


def _choose(problem: MemoryProblem, i: int, used: dict) -> str:
    s = problem.slot_of[i]
    cap = problem.slots[s].capacity
    fitting, overflowing = [], []
    for kind, cost in problem.options[i].items():
        r = KIND_RESOURCE[kind]
        after = dict(used, **{r: used[r] + cost})
        share = cost / cap[r] if cap[r] > 0 else float("inf")
        if after[r] <= cap[r] + EPS:
            fitting.append((_slot_peak(problem, s, after), share, kind_order(kind), kind))
        else:
            over = (after[r] - cap[r]) / cap[r] if cap[r] > 0 else float("inf")
            overflowing.append((over, share, kind_order(kind), kind))
    return min(fitting or overflowing)[-1]


def size_ordered(problem: MemoryProblem) -> list[str | None]:
    """The baseline binding: ``binding[i]`` is the kind of ``problem.buffers[i]``.

    A buffer with no allowed kind at all (its slot has none of their resources) gets None; the
    caller reports it.
    """
    used = [dict(slot.base) for slot in problem.slots]
    binding: list[str | None] = [None] * len(problem.buffers)
    for i in order(problem):
        if not problem.options[i]:
            continue
        kind = _choose(problem, i, used[problem.slot_of[i]])
        binding[i] = kind
        r = KIND_RESOURCE[kind]
        used[problem.slot_of[i]][r] += problem.options[i][kind]
    return binding
