"""The exact placement model (AutoBridge's ILP), one neutral linear model for CP-SAT or a MIP.

Variables: ``x[k,s]`` (kernel k in slot s; only for slots its pins allow), ``z[e,c]`` (stream e
crosses cut line c), and with a balance weight ``hi[r]`` / ``lo[r]`` (the largest and smallest
slot utilisation of resource r, in 1/Q steps).

* exactly one slot per kernel; kernels of a same-slot group take equal ``x`` per slot;
* capacity: ``sum_k demand[k,r] x[k,s] <= max_utilization x capacity[s,r]``;
* crossing: with ``low_k = sum_{s below c} x[k,s]``, ``z[e,c] >= low_a - low_b`` and
  ``z[e,c] >= low_b - low_a`` (the absolute value of AutoBridge's distance, split per line);
* wires: ``sum_e width_e z[e,c] <= wires(c)`` for every line with links;
* balance: ``Q used[s,r] <= capacity[s,r] hi[r]`` and ``Q used[s,r] >= capacity[s,r] lo[r]``.

Objective: ``sum_{e,c} gap_c width_e z[e,c] + balance_weight sum_r (hi[r] - lo[r]) / Q``. A
stream's Manhattan distance is the sum of the gaps of the lines it crosses, so the first term is
the width-weighted distance exactly. Utilisation is measured in 1/Q steps (rounded up for ``hi``,
down for ``lo``), so with a balance weight the model's imbalance can exceed the true one by less
than 2/Q per resource; the reported objective is recomputed exactly and the bound lowered by
that margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dfopt import progress
from dfopt.ilp import LinearModel, ModelSolveResult, lin_sum
from dfopt.ilp import solve as solve_model
from dfopt.ilp.rows import RowBuffer
from dfopt.ir.memory import KIND_RESOURCE
from dfopt.models.placement.data import PlacementData

if TYPE_CHECKING:
    from dfopt.models.memory.buffers import BufferUse

Q = 1000


def model_units(values: npt.ArrayLike) -> np.ndarray:
    """Demands rounded up to half units (exact for integer and BRAM18-half counts)."""
    return np.ceil(np.asarray(values, dtype=float) * 2 - 1e-9) / 2


@dataclass
class ExactModel:
    model: LinearModel
    x_cols: np.ndarray        # (kernels, slots), -1 where a pin forbids the slot
    z_cols: np.ndarray        # (streams, cuts)
    hi_cols: np.ndarray       # per balanced resource
    lo_cols: np.ndarray
    balanced: np.ndarray      # resource indices with a balance term
    stats: dict
    choices: list = field(default_factory=list)     # joint memory binding: buffers
    w_cols: dict = field(default_factory=dict)      # (choice, slot, kind) -> column


def build(d: PlacementData, choices: Sequence[BufferUse] | None = None) -> ExactModel:
    """The model; ``choices`` (joint memory binding) are buffers (:class:`BufferUse`) whose kind
    the model picks, their owner's ``d.demand`` holding none of their cost."""
    m = LinearModel("placement")
    n, S, C = d.n, d.num_slots, len(d.cuts)
    x_cols = np.full((n, S), -1, dtype=np.int64)
    ks, ss = np.nonzero(d.allowed)
    cols = m.add_vars(len(ks), 0, 1, integer=True,
                      names=[f"x[{d.names[k]},{d.slots[s]}]" for k, s in zip(ks.tolist(), ss.tolist())])
    x_cols[ks, ss] = cols
    rows = RowBuffer()
    rows.add(ks, cols, np.ones(len(cols)), np.ones(n), np.ones(n))
    for members in d.same_slot:
        for a, b in zip(members[:-1].tolist(), members[1:].tolist()):
            for s in range(S):
                ca, cb = x_cols[a, s], x_cols[b, s]
                if ca >= 0 and cb >= 0:
                    rows.add([0, 0], [ca, cb], [1, -1], 0, 0)
                elif ca >= 0 or cb >= 0:
                    rows.add([0], [max(ca, cb)], [1], 0, 0)
    demand = model_units(d.demand)
    limit = np.floor(d.limit * 2 + 1e-9) / 2
    # joint memory binding: w[b,s,m] = buffer b of kernel k in kind m at slot s; sum_m w = x[k,s]
    w_cols: dict[tuple[int, int, str], int] = {}
    w_terms: dict[tuple[int, int], list] = {}
    for i, b in enumerate(choices or ()):
        k = d.index[b.owner]
        for s in np.flatnonzero(x_cols[k] >= 0).tolist():
            kinds = list(b.options)
            wc = m.add_vars(len(kinds), 0, 1, integer=True, names=[f"w[{b.key},{d.slots[s]},{kd}]" for kd in kinds])
            rows.add(np.zeros(len(kinds) + 1), np.append(wc, x_cols[k, s]), np.append(np.ones(len(kinds)), -1), 0, 0)
            for kd, c in zip(kinds, wc.tolist()):
                w_cols[i, s, kd] = c
                res = KIND_RESOURCE[kd]
                if res in d.kinds:
                    w_terms.setdefault((s, d.kinds.index(res)), []).append((c, float(model_units(b.options[kd]))))

    def usage_terms(s: int, r: int) -> tuple[np.ndarray, np.ndarray]:
        have = x_cols[:, s] >= 0
        cols, coef = x_cols[have, s], demand[have, r]
        nz = coef > 0
        extra = w_terms.get((s, r), [])
        return (np.concatenate([cols[nz], np.array([c for c, _ in extra], dtype=np.int64)]),
                np.concatenate([coef[nz], np.array([v for _, v in extra], dtype=float)]))

    for s in range(S):
        for r in range(len(d.kinds)):
            cols, coef = usage_terms(s, r)
            if coef.sum() > limit[s, r]:
                rows.add(np.zeros(len(cols)), cols, coef, -np.inf, limit[s, r])
    E = len(d.src)
    z_cols = np.full((E, C), -1, dtype=np.int64)
    obj_cols, obj_coef = [], []
    for c, cut in enumerate(d.cuts):
        low = np.flatnonzero(cut.low_side)
        high = np.flatnonzero(~cut.low_side)
        fixed_low = ~np.any(d.allowed[:, high], axis=1)      # the kernel can only sit below the line
        fixed_high = ~np.any(d.allowed[:, low], axis=1)
        a, b = d.src, d.dst
        same = (fixed_low[a] & fixed_low[b]) | (fixed_high[a] & fixed_high[b])
        need = np.flatnonzero(~same)
        if not len(need):
            continue
        zc = m.add_vars(len(need), 0, 1, integer=True,
                        names=[f"z[{d.stream_names[e]},{cut.label}]" for e in need.tolist()])
        z_cols[need, c] = zc
        for e, col in zip(need.tolist(), zc.tolist()):
            la = [x_cols[a[e], s] for s in low if x_cols[a[e], s] >= 0]
            lb = [x_cols[b[e], s] for s in low if x_cols[b[e], s] >= 0]
            # z >= low_a - low_b and z >= low_b - low_a
            rows.add(np.zeros(1 + len(la) + len(lb)), [col] + la + lb, [1] + [-1] * len(la) + [1] * len(lb), 0, np.inf)
            rows.add(np.zeros(1 + len(la) + len(lb)), [col] + la + lb, [1] + [1] * len(la) + [-1] * len(lb), 0, np.inf)
        if cut.wires is not None and d.width[need].sum() > cut.wires:
            rows.add(np.zeros(len(need)), zc, d.width[need], -np.inf, cut.wires)
        obj_cols.append(zc)
        obj_coef.append(d.width[need] * cut.gap)
    balanced = np.array([r for r in range(len(d.kinds)) if d.balance_weight > 0
                         and (demand[:, r].sum() > 0 or any(key[1] == r for key in w_terms))
                         and (d.capacity[:, r] > 0).sum() > 1], dtype=np.int64)
    hi_cols = m.add_vars(len(balanced), 0, Q, integer=True, names=[f"hi[{d.kinds[r]}]" for r in balanced.tolist()])
    lo_cols = m.add_vars(len(balanced), 0, Q, integer=True, names=[f"lo[{d.kinds[r]}]" for r in balanced.tolist()])
    for r, hc, lc in zip(balanced.tolist(), hi_cols.tolist(), lo_cols.tolist()):
        for s in np.flatnonzero(d.capacity[:, r] > 0).tolist():
            cols_s, coef = usage_terms(s, r)
            coef = Q * coef
            cap = float(d.capacity[s, r])
            rows.add(np.zeros(len(cols_s) + 1), np.append(cols_s, hc), np.append(coef, -cap), -np.inf, 0)
            rows.add(np.zeros(len(cols_s) + 1), np.append(cols_s, lc), np.append(coef, -cap), 0, np.inf)
    if len(balanced):
        obj_cols += [hi_cols, lo_cols]
        w = d.balance_weight / Q
        obj_coef += [np.full(len(balanced), w), np.full(len(balanced), -w)]
    rows.into(m)
    if obj_cols:
        m.minimize(lin_sum(np.concatenate(obj_cols), np.concatenate(obj_coef), model=m))
    stats = {"variables": m.num_vars, "rows": m.num_rows, "x_vars": len(cols),
             "z_vars": int((z_cols >= 0).sum()), "balanced_resources": [d.kinds[r] for r in balanced.tolist()]}
    return ExactModel(m, x_cols, z_cols, hi_cols, lo_cols, balanced, stats, list(choices or ()), w_cols)


def bound_margin(em: ExactModel, d: PlacementData) -> float:
    """How much the model's objective may exceed the exact one (the 1/Q rounding)."""
    return d.balance_weight * 2.0 * len(em.balanced) / Q


def set_hint(em: ExactModel, d: PlacementData, assign: np.ndarray, binding: dict | None = None) -> None:
    """Hint the model with ``assign`` (and, for joint memory binding, the kinds of ``binding``)."""
    m = em.model
    m.clear_hints()
    for (i, s, kind), col in em.w_cols.items():
        b = em.choices[i]
        on = assign[d.index[b.owner]] == s and binding is not None and binding.get(b.key) == kind
        m.hint(m.var(col), 1.0 if on else 0.0)
    for k, s in enumerate(assign.tolist()):
        for t in range(d.num_slots):
            if em.x_cols[k, t] >= 0:
                m.hint(m.var(int(em.x_cols[k, t])), 1.0 if t == s else 0.0)
    a, b = assign[d.src], assign[d.dst]
    for c, cut in enumerate(d.cuts):
        cross = cut.low_side[a] != cut.low_side[b]
        for e in np.flatnonzero(em.z_cols[:, c] >= 0).tolist():
            m.hint(m.var(int(em.z_cols[e, c])), float(cross[e]))
    if len(em.balanced):
        demand = model_units(d.demand)
        usage = np.zeros_like(d.capacity)
        np.add.at(usage, assign, demand)
        for b in em.choices:
            kind = (binding or {}).get(b.key)
            if kind is not None and KIND_RESOURCE[kind] in d.kinds:
                usage[assign[d.index[b.owner]], d.kinds.index(KIND_RESOURCE[kind])] += model_units(b.options[kind])
        for r, hc, lc in zip(em.balanced.tolist(), em.hi_cols.tolist(), em.lo_cols.tolist()):
            have = d.capacity[:, r] > 0
            util = usage[have, r] * Q / d.capacity[have, r]
            m.hint(m.var(hc), float(min(Q, np.ceil(util.max() - 1e-9))))
            m.hint(m.var(lc), float(max(0, np.floor(util.min() + 1e-9))))


def decode(em: ExactModel, values: np.ndarray) -> np.ndarray:
    x = np.where(em.x_cols >= 0, values[np.maximum(em.x_cols, 0)], -1.0)
    return np.argmax(x, axis=1).astype(np.int64)


def decode_binding(em: ExactModel, values: np.ndarray, binding: dict) -> dict:
    """``binding`` with the kinds the model chose for its buffers."""
    out = dict(binding)
    for (i, _s, kind), col in em.w_cols.items():
        if values[col] > 0.5:
            out[em.choices[i].key] = kind
    return out


def solve_exact(em: ExactModel, backend: str, time_limit: float, seed: int, deterministic: bool,
                workers: int | None = None, record_incumbents: bool = True) -> ModelSolveResult:
    """Solve the model with ``backend`` (a :class:`~dfopt.ilp.ModelSolveResult`); progress goes
    to a phase labelled with the backend."""
    with progress.phase(f"placement: exact model ({backend})", time_limit):
        return solve_model(em.model, backend, time_limit=time_limit, seed=seed, deterministic=deterministic,
                           workers=workers, record_incumbents=record_incumbents)
