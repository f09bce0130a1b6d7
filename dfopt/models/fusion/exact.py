"""The exact fusion model: kernels to group ids, as one neutral linear model (CP-SAT or a MIP).

Variables: ``x[k,g]`` (kernel k in group g), ``f[p]`` (the kernel pair p = (u, v) is fused),
``y[p,g]`` (pair p inside group g, only for pairs with converter bytes) and ``used[g]``.

* every kernel in exactly one group; ``id(k) = sum_g g x[k,g]``;
* ids non-decreasing along every stream — the quotient graph is then acyclic and every group
  convex; fused => equal ids: ``id(v) - id(u) <= M (1 - f[p])`` with M the widest id gap the
  windows allow (the objective rewards fusing, so ``f`` is 1 whenever it may be; for pairs with
  converter bytes ``y[p,g] = x[u,g] and x[v,g]`` and ``f[p] = sum_g y[p,g]`` make it exact, so
  capacity always counts the converters of fused pairs);
* capacity: ``sum_k bytes_k x[k,g] + sum_p conv_p y[p,g] <= C_max`` for every g;
* symmetry breaking: used groups form a prefix ``0..m-1``; with ``dominance``, two consecutive
  used groups cost more than C_max together, counting the converters of the pairs from one to
  the other (``z[p,g] <= x[u,g], x[v,g+1]``): otherwise merging them keeps the ids ordered, cuts no
  stream and so loses nothing, hence some optimum satisfies it;
* group count: that argument leaves at most ``G = floor(2 U / C_max) + 1`` groups (U = kernel plus
  converter bytes; summed over consecutive pairs each kernel and converter counts at most twice),
  and a kernel's id lies in ``[ceil(A_k / C_max) - 1, G - ceil(D_k / C_max)]`` (A_k, D_k: bytes
  of the kernel with its ancestors, its descendants), so x exists only there.

Objective: least DRAM traffic of the cut pairs (weights divided by their gcd, exact). The greedy
solution (merged, :func:`.greedy.merge_consecutive`) is the hint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dfopt import progress
from dfopt.ilp import LinearModel, ModelSolveResult, lin_sum
from dfopt.ilp import solve as solve_model
from dfopt.ilp.rows import RowBuffer as _Rows
from dfopt.models.fusion.data import FusionData


@dataclass
class ExactModel:
    model: LinearModel
    groups: int
    x_kernel: np.ndarray      # per x column: kernel
    x_group: np.ndarray       # per x column: group
    x_cols: np.ndarray
    f_cols: np.ndarray
    y_pair: np.ndarray
    y_group: np.ndarray
    y_cols: np.ndarray
    used_cols: np.ndarray
    scale: float              # model objective x scale = DRAM bytes
    stats: dict
    lo: np.ndarray            # id window per kernel
    hi: np.ndarray


def group_count_bound(data: FusionData) -> int:
    total = int(data.bytes.sum() + data.pair_conv.sum())
    return max(1, min(data.n, 2 * total // data.c_max + 1))


def id_windows(data: FusionData, groups: int, anc: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    anc = data.ancestors() if anc is None else anc
    up = anc.astype(np.int64) @ data.bytes + data.bytes
    down = anc.T.astype(np.int64) @ data.bytes + data.bytes
    lo = -(-up // data.c_max) - 1
    hi = groups - (-(-down // data.c_max))
    return np.maximum(lo, 0), np.minimum(hi, groups - 1)


def build(data: FusionData, dominance: bool = True, groups: int | None = None) -> ExactModel:
    G = groups or group_count_bound(data)
    lo, hi = id_windows(data, G)
    m = LinearModel("fusion")
    width = np.maximum(hi - lo + 1, 0)
    x_kernel = np.repeat(np.arange(data.n), width)
    x_group = (np.concatenate([np.arange(a, b + 1) for a, b in zip(lo.tolist(), hi.tolist())])
               if data.n else np.zeros(0, np.int64))
    x_cols = m.add_vars(len(x_kernel), 0, 1, integer=True,
                        names=[f"x[{data.names[k]},{g}]" for k, g in zip(x_kernel.tolist(), x_group.tolist())])
    P = len(data.src)
    f_cols = m.add_vars(P, 0, 1, integer=True, names=[f"f[{i}]" for i in range(P)])
    used_cols = m.add_vars(G, 0, 1, integer=True, names=[f"used[{g}]" for g in range(G)])
    col_of = {(k, g): c for k, g, c in zip(x_kernel.tolist(), x_group.tolist(), x_cols.tolist())}
    rows = _Rows()
    # one group per kernel
    rows.add(x_kernel, x_cols, np.ones(len(x_cols)), np.ones(data.n), np.ones(data.n))
    # ids non-decreasing along pairs; fused pairs have equal ids
    start = np.concatenate([[0], np.cumsum(width)])
    conv = data.pair_conv > 0
    for p, (u, v) in enumerate(zip(data.src.tolist(), data.dst.tolist())):
        cu, cv = x_cols[start[u]:start[u + 1]], x_cols[start[v]:start[v + 1]]
        gu, gv = x_group[start[u]:start[u + 1]], x_group[start[v]:start[v + 1]]
        rows.add(np.zeros(len(cu) + len(cv)), np.concatenate([cv, cu]), np.concatenate([gv, -gu]), 0, np.inf)
        if not conv[p]:  # f = 1 forces id(v) - id(u) <= 0; the id gap is at most big_m
            big_m = max(int(hi[v] - lo[u]), 1)
            rows.add(np.zeros(len(cu) + len(cv) + 1), np.concatenate([[f_cols[p]], cv, cu]),
                     np.concatenate([[big_m], gv, -gu]), -np.inf, big_m)
    # converter pairs: y[p,g] = x[u,g] and x[v,g]; f = sum_g y
    pair_list: list[int] = []
    group_list: list[int] = []
    for p in np.flatnonzero(conv).tolist():
        u, v = int(data.src[p]), int(data.dst[p])
        both = range(max(lo[u], lo[v]), min(hi[u], hi[v]) + 1)
        pair_list += [p] * len(both)
        group_list += list(both)
    y_pair, y_group = np.array(pair_list, dtype=np.int64), np.array(group_list, dtype=np.int64)
    y_cols = m.add_vars(len(y_pair), 0, 1, integer=True,
                        names=[f"y[{p},{g}]" for p, g in zip(y_pair.tolist(), y_group.tolist())])
    for yc, p, g in zip(y_cols.tolist(), y_pair.tolist(), y_group.tolist()):
        xu, xv = col_of[int(data.src[p]), g], col_of[int(data.dst[p]), g]
        rows.add([0, 0, 1, 1, 2, 2, 2], [yc, xu, yc, xv, xu, xv, yc], [1, -1, 1, -1, 1, 1, -1],
                 [-np.inf] * 3, [0, 0, 1])
    for p in np.flatnonzero(conv).tolist():
        ys = y_cols[y_pair == p]
        rows.add(np.zeros(len(ys) + 1), np.concatenate([[f_cols[p]], ys]),
                 np.concatenate([[1], -np.ones(len(ys))]), 0, 0)
    # capacity, used prefix, dominance
    cap_r = np.concatenate([x_group, y_group])
    cap_c = np.concatenate([x_cols, y_cols])
    cap_v = np.concatenate([data.bytes[x_kernel], data.pair_conv[y_pair]]).astype(np.float64)
    rows.add(cap_r, cap_c, cap_v, np.full(G, -np.inf), np.full(G, float(data.c_max)))
    members = np.bincount(x_group, minlength=G)
    rows.add(np.concatenate([x_group, np.arange(G)]), np.concatenate([x_cols, used_cols]),
             np.concatenate([np.ones(len(x_cols)), -np.maximum(members, 1)]), np.full(G, -np.inf), np.zeros(G))
    rows.add(np.concatenate([x_group, np.arange(G)]), np.concatenate([x_cols, used_cols]),
             np.concatenate([-np.ones(len(x_cols)), np.ones(G)]), np.full(G, -np.inf), np.zeros(G))
    if G > 1:
        rows.add(np.repeat(np.arange(G - 1), 2), np.stack([used_cols[1:], used_cols[:-1]], 1).ravel(),
                 np.tile([1.0, -1.0], G - 1), np.full(G - 1, -np.inf), np.zeros(G - 1))
    if dominance and G > 1:
        # merging g and g+1 would also take in the converters of pairs from g to g+1:
        # z[p,g] <= x[u,g], z[p,g] <= x[v,g+1] may count them
        pair_list, group_list = [], []
        for p in np.flatnonzero(conv).tolist():
            u, v = int(data.src[p]), int(data.dst[p])
            span = range(max(lo[u], lo[v] - 1), min(hi[u], hi[v] - 1, G - 2) + 1)
            pair_list += [p] * len(span)
            group_list += list(span)
        z_pair, z_group = np.array(pair_list, dtype=np.int64), np.array(group_list, dtype=np.int64)
        z_cols = m.add_vars(len(z_pair), 0, 1, integer=True,
                            names=[f"z[{p},{g}]" for p, g in zip(z_pair.tolist(), z_group.tolist())])
        for zc, p, g in zip(z_cols.tolist(), z_pair.tolist(), z_group.tolist()):
            rows.add([0, 0, 1, 1], [zc, col_of[int(data.src[p]), g], zc, col_of[int(data.dst[p]), g + 1]],
                     [1, -1, 1, -1], [-np.inf, -np.inf], [0, 0])
        r = np.concatenate([cap_r, cap_r - 1, z_group])
        c = np.concatenate([cap_c, cap_c, z_cols])
        v = np.concatenate([cap_v, cap_v, data.pair_conv[z_pair].astype(np.float64)])
        keep = (r >= 0) & (r < G - 1)
        rows.add(np.concatenate([r[keep], np.arange(G - 1)]), np.concatenate([c[keep], used_cols[1:]]),
                 np.concatenate([v[keep], -np.full(G - 1, data.c_max + 1.0)]), np.zeros(G - 1), np.full(G - 1, np.inf))
    rows.into(m)
    w = data.pair_traffic_bits
    unit = math.gcd(*w.tolist()) if len(w) and w.any() else 8
    m.minimize(lin_sum(f_cols, -(w // unit), constant=float(w.sum() // unit), model=m))
    stats = {"groups_bound": G, "x_vars": len(x_cols), "y_vars": len(y_cols),
             "vars": m.num_vars, "rows": m.num_rows, "mean_window": float(width.mean()) if data.n else 0.0}
    return ExactModel(m, G, x_kernel, x_group, x_cols, f_cols, y_pair, y_group, y_cols, used_cols,
                      unit / 8, stats, lo, hi)


def set_hint(em: ExactModel, data: FusionData, assign: np.ndarray) -> bool:
    """Hint a complete solution (``assign`` topologically numbered); False when it lies outside
    the model's id windows (then no hint is given)."""
    if np.any(assign < em.lo) or np.any(assign > em.hi):
        return False
    m = em.model
    for c, k, g in zip(em.x_cols.tolist(), em.x_kernel.tolist(), em.x_group.tolist()):
        m.hint(m.var(c), float(assign[k] == g))
    fused = assign[data.src] == assign[data.dst]
    for c, p in zip(em.f_cols.tolist(), range(len(fused))):
        m.hint(m.var(c), float(fused[p]))
    for c, p, g in zip(em.y_cols.tolist(), em.y_pair.tolist(), em.y_group.tolist()):
        m.hint(m.var(c), float(assign[data.src[p]] == g and assign[data.dst[p]] == g))
    for g, c in enumerate(em.used_cols.tolist()):
        m.hint(m.var(c), float(g <= assign.max()))
    return True


def decode(em: ExactModel, values: np.ndarray) -> np.ndarray:
    """Group id per kernel from a solution vector."""
    chosen = values[em.x_cols] > 0.5
    assign = np.full(int(em.x_kernel.max()) + 1 if len(em.x_kernel) else 0, -1, dtype=np.int64)
    assign[em.x_kernel[chosen]] = em.x_group[chosen]
    return assign


def solve_exact(em: ExactModel, backend: str, time_limit: float, seed: int, deterministic: bool,
                workers: int | None = None) -> ModelSolveResult:
    """Solve the model with ``backend`` (a :class:`~dfopt.ilp.ModelSolveResult`); progress goes
    to a phase in DRAM bytes (the model's objective times ``em.scale``)."""
    with progress.phase(f"fusion: exact model ({backend})", time_limit, scale=em.scale):
        return _solve(em, backend, time_limit, seed, deterministic, workers)


def _solve(em: ExactModel, backend: str, time_limit: float, seed: int, deterministic: bool,
           workers: int | None):
    params = None
    if backend == "cpsat":  # CP-SAT's probing presolve alone can eat a minute at 1,000 kernels
        params = {"presolve_probing_deterministic_time_limit": max(0.5, 0.05 * time_limit)}
    return solve_model(em.model, backend, time_limit=time_limit, seed=seed, params=params,
                       deterministic=deterministic, workers=workers, record_incumbents=True)
