"""The exact memory-binding model on the neutral :class:`~dfopt.ilp.LinearModel`.

Variables ``x[key,kind]`` (one per buffer with a choice and allowed kind) and ``P`` (the peak in
units of 1e-6 weighted utilisation). Buffers with one option (register FIFOs) are constants.

* one kind per buffer: ``sum_kind x[b,kind] = 1``;
* capacity per (slot, resource): ``sum cost x <= capacity - base`` in integer units (LUTs, FFs,
  BRAM18 halves of a BRAM36, URAMs), so it is exact;
* peak rows per (slot, resource) with a capacity: ``P >= sum a x + a0`` with
  ``a = round(1e6 * weight * cost / capacity)``;
* optional limits ``used <= p * capacity / weight`` (the peak at most, or strictly below, p),
  again exact in integer units.

The rounded peak rows only guide the search. Exactness comes from the loop in
:func:`minimise_peak`: after each binding of true peak p, solve again with every row strictly
below p; an infeasible answer proves p optimal. Then, with every row at most the optimal peak,
a second solve minimises the sum of the weighted utilisations (the ``a`` coefficients).

>>> import time
>>> from dfopt.instance import load
>>> from dfopt.models.memory import Options
>>> from dfopt.models.memory.heuristic import size_ordered
>>> from dfopt.models.memory.problem import memory_problem
>>> inst = load("instances/memory/tight.json")
>>> prob = memory_problem(inst.graph, inst.platform)
>>> em = build(prob)
>>> em.model.num_vars, em.model.num_rows
(10, 9)
>>> out = minimise_peak(prob, size_ordered(prob), "cpsat", Options(), time.perf_counter() + 10)
>>> out.binding, out.proven, [s["stage"] for s in out.solves]
(['bram18', 'bram18', 'lutram'], True, ['peak', 'peak-strict'])
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dfopt import progress
from dfopt.ilp import LinearModel, lin_sum
from dfopt.ilp import solve as solve_model
from dfopt.ir.memory import KIND_RESOURCE
from dfopt.models.memory.problem import MemoryProblem
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.models.memory import Options

__all__ = ["SCALE", "ExactModel", "ExactOutcome", "build", "least_overflow", "minimise_peak", "minimise_sum"]

SCALE = 10**6
UNITS = {"lut": 1, "ff": 1, "bram": 2, "uram": 1}  # model units per resource unit
MAX_ROUNDS = 50


@dataclass
class ExactModel:
    model: LinearModel
    cols: dict            # (buffer index, kind) -> column
    p_col: int | None
    free: list            # buffer indices with a choice
    fixed: dict           # buffer index -> its only kind
    max_row_terms: int    # most free buffers on one peak row (for the bound)
    infeasible: bool = False  # a row without free buffers already breaks its limit


@dataclass
class ExactOutcome:
    binding: list | None
    proven: bool = False
    infeasible: bool = False
    bound: float | None = None
    solves: list = field(default_factory=list)
    timed_out: bool = False
    deadline: float = 0.0


def _sum(m: LinearModel, cols, coefs):
    return lin_sum(np.asarray(cols, dtype=np.int64), coefs, model=m)


def _eps(v: float) -> float:
    return 1e-9 * max(1.0, abs(v))


def _split(problem: MemoryProblem):
    free = [i for i, o in enumerate(problem.options) if len(o) > 1]
    fixed = {i: next(iter(o)) for i, o in enumerate(problem.options) if len(o) == 1}
    const = [dict(slot.base) for slot in problem.slots]
    for i, kind in fixed.items():
        r = KIND_RESOURCE[kind]
        const[problem.slot_of[i]][r] += problem.options[i][kind]
    return free, fixed, const


def _coef(problem: MemoryProblem, i: int, kind: str, weights: dict) -> int:
    r = KIND_RESOURCE[kind]
    return round(SCALE * weights[r] * problem.options[i][kind] / problem.slots[problem.slot_of[i]].capacity[r])


def _row_terms(problem: MemoryProblem, free: Sequence[int], cols: dict) -> dict:
    """(slot, resource) -> [(column, cost in units, buffer, kind)]."""
    terms: dict = {}
    for i in free:
        for kind, cost in problem.options[i].items():
            r = KIND_RESOURCE[kind]
            terms.setdefault((problem.slot_of[i], r), []).append((cols[i, kind], round(cost * UNITS[r]), i, kind))
    return terms


def _row_limit(problem, s, r, const, capacity: bool, peak: float | None, strict: bool, weights) -> float:
    """Upper bound (in units) on the free buffers' cost on row (s, r)."""
    cap = problem.slots[s].capacity.get(r, 0)
    const_u = const[s].get(r, 0) * UNITS[r]
    limit = math.inf
    if capacity:
        room = cap * UNITS[r] - const_u
        limit = math.floor(room + _eps(room))
    if peak is not None and cap > 0:
        room = peak * cap * UNITS[r] / weights[r] - const_u
        limit = min(limit, math.ceil(room - _eps(room)) - 1 if strict else math.floor(room + _eps(room)))
    return limit


def build(problem: MemoryProblem, objective: str = "peak", capacity: bool = True, peak: float | None = None,
          strict: bool = False, weights: dict | None = None) -> ExactModel:
    """The model; ``objective`` is ``peak`` or ``sum``; ``peak``/``strict`` add the limit rows."""
    weights = weights or problem.weights
    free, fixed, const = _split(problem)
    m = LinearModel("memory")
    cols = {}
    for i in free:
        for kind in problem.options[i]:
            cols[i, kind] = m.bool_var(f"x[{problem.buffers[i].key},{kind}]").index
    for i in free:
        m.add(_sum(m, [cols[i, k] for k in problem.options[i]], np.ones(len(problem.options[i]))) == 1,
              name=f"one[{problem.buffers[i].key}]")
    terms = _row_terms(problem, free, cols)
    infeasible = False
    for s, slot in enumerate(problem.slots):
        for r in slot.capacity:
            limit = _row_limit(problem, s, r, const, capacity, peak, strict, weights)
            row = terms.get((s, r), [])
            if row and limit < math.inf:
                m.add(_sum(m, [c for c, *_ in row], [u for _, u, *_ in row]) <= limit,
                      name=f"cap[{slot.name},{r}]")
            infeasible |= limit < 0
    p_col = None
    widest = max((len(row) for row in terms.values()), default=0)
    if objective == "peak":
        p_col = _add_peak_rows(m, problem, terms, const, weights)
    else:
        obj = [(cols[i, k], _coef(problem, i, k, weights)) for i in free for k in problem.options[i]]
        m.minimize(_sum(m, [c for c, _ in obj], [a for _, a in obj]))
    return ExactModel(m, cols, p_col, free, fixed, widest, infeasible)


def _add_peak_rows(m: LinearModel, problem, terms, const, weights) -> int:
    floor, rows, top = 0, [], 0
    for s, r in problem.rows():
        cap = problem.slots[s].capacity[r]
        a0 = math.ceil(SCALE * weights[r] * const[s].get(r, 0) / cap - 1e-9)
        row = [(c, round(SCALE * weights[r] * u / UNITS[r] / cap)) for c, u, *_ in terms.get((s, r), [])]
        floor = max(floor, a0)
        top = max(top, a0 + sum(a for _, a in row))
        if row:
            rows.append((s, r, a0, row))
    p = m.int_var(max(floor, 0), max(top, floor, 0), "P")
    for s, r, a0, row in rows:
        m.add(_sum(m, [c for c, _ in row] + [p.index], [a for _, a in row] + [-1]) <= -a0,
              name=f"peak[{problem.slots[s].name},{r}]")
    m.minimize(p)
    return p.index


def hint(em: ExactModel, problem: MemoryProblem, binding: Sequence[str | None]) -> None:
    for i in em.free:
        for kind in problem.options[i]:
            em.model.hint(em.model.var(em.cols[i, kind]), float(binding[i] == kind))


def decode(em: ExactModel, problem: MemoryProblem, values: Sequence[float] | np.ndarray) -> list:
    binding: list = [None] * len(problem.buffers)
    for i, kind in em.fixed.items():
        binding[i] = kind
    for i in em.free:
        binding[i] = max(problem.options[i], key=lambda k: values[em.cols[i, k]])
    return binding


def _solve(em, backend, opts, deadline, stage: str, out: ExactOutcome):
    remaining = deadline - time.perf_counter()
    res = solve_model(em.model, backend, time_limit=max(remaining, 0.05), seed=opts.seed,
                      deterministic=opts.deterministic)
    out.solves.append({"stage": stage, "termination": res.termination.value, "time_s": round(res.wall_time_s, 4),
                       "objective": res.objective, "vars": em.model.num_vars, "rows": em.model.num_rows})
    if res.termination is Termination.TIME_LIMIT:
        out.timed_out = True
    return res


def _peak_bound(em: ExactModel, res) -> float | None:
    """A rigorous lower bound on the true peak from the solver's bound on the rounded P."""
    if res.bound is None or not np.isfinite(res.bound):
        return None
    return max(0.0, (math.ceil(res.bound - 1e-6) - 1 - 0.5 * em.max_row_terms) / SCALE)


def _phase(stage: str, backend: str, deadline: float):
    """The progress phase of one stage, in weighted utilisation (the model's units / SCALE)."""
    return progress.phase(f"memory binding: {stage} ({backend})", max(deadline - time.perf_counter(), 0.0),
                          scale=1.0 / SCALE)


def minimise_peak(problem: MemoryProblem, start: Sequence[str] | None, backend: str, opts: Options,
                  deadline: float) -> ExactOutcome:
    """Least peak: hinted from ``start`` (kept when it fits), then strictly-better solves until one
    is infeasible (proof) or time runs out. ``infeasible`` means no binding fits at all."""
    with _phase("least peak", backend, deadline):
        return _minimise_peak(problem, start, backend, opts, deadline)


def _minimise_peak(problem: MemoryProblem, start, backend: str, opts, deadline: float) -> ExactOutcome:
    out = ExactOutcome(start if start is not None and problem.fits(start) else None)
    best_peak = problem.peak(out.binding)[0] if out.binding is not None else None
    strict = False
    for _ in range(MAX_ROUNDS):
        if time.perf_counter() >= deadline:
            out.timed_out = True
            break
        em = build(problem, "peak", peak=best_peak, strict=strict)
        if em.infeasible:  # a limit no binding meets, decided without a solver
            out.infeasible, out.proven = out.binding is None, out.binding is not None
            break
        if not em.free:  # every memory has one kind: one binding, and it fits
            out.binding, out.proven = out.binding or decode(em, problem, []), True
            break
        if out.binding is not None and not strict and opts.hint:
            hint(em, problem, out.binding)
        res = _solve(em, backend, opts, deadline, "peak-strict" if strict else "peak", out)
        if res.termination is Termination.INFEASIBLE:
            out.infeasible = out.binding is None
            out.proven = out.binding is not None
            break
        if res.values_array is None:
            break
        binding = decode(em, problem, res.values_array)
        value = problem.peak(binding)[0]
        if best_peak is not None and value >= best_peak and strict:
            break  # cannot happen with exact limit rows; never loop on it
        if best_peak is None or value < best_peak:
            out.binding, best_peak = binding, value
        bound = _peak_bound(em, res) if res.termination is Termination.OPTIMAL else None
        if bound is not None:
            out.bound = max(out.bound or 0.0, min(bound, best_peak))
        if res.termination is not Termination.OPTIMAL:
            break
        strict = True
    if out.proven:
        out.bound = best_peak
    return out


def minimise_sum(problem: MemoryProblem, binding: Sequence[str], backend: str, opts: Options, deadline: float,
                 out: ExactOutcome) -> Sequence[str]:
    """With every row at most the peak of ``binding``, the least weighted sum (rounded units);
    returns ``binding`` when the solve finds nothing better."""
    if time.perf_counter() >= deadline:
        out.timed_out = True
        return binding
    em = build(problem, "sum", peak=problem.peak(binding)[0])
    hint(em, problem, binding)
    with _phase("least sum at the peak", backend, deadline):
        res = _solve(em, backend, opts, deadline, "sum", out)
    if res.values_array is None:
        return binding
    better = decode(em, problem, res.values_array)
    if problem.fits(better) and lexicographically_better(problem, better, binding):
        return better
    return binding


def least_overflow(problem: MemoryProblem, start: Sequence[str | None] | None, backend: str, opts: Options,
                   deadline: float, out: ExactOutcome) -> list | None:
    """A binding with the least largest unweighted utilisation, capacities ignored (to explain an
    infeasible instance); None when the solver finds none in time."""
    if time.perf_counter() >= deadline:
        return None
    em = build(problem, "peak", capacity=False, weights={r: 1.0 for r in problem.weights})
    if start is not None and None not in start:
        hint(em, problem, start)
    with _phase("least overflow", backend, deadline):
        res = _solve(em, backend, opts, deadline, "least-overflow", out)
    return decode(em, problem, res.values_array) if res.values_array is not None else None


def lexicographically_better(problem: MemoryProblem, a: Sequence[str], b: Sequence[str]) -> bool:
    """True when ``a`` has a smaller peak, or the same peak (within 1e-12) and a smaller sum."""
    pa, pb = problem.peak(a)[0], problem.peak(b)[0]
    if abs(pa - pb) > 1e-12:
        return pa < pb
    return problem.weighted_sum(a) < problem.weighted_sum(b) - 1e-12
