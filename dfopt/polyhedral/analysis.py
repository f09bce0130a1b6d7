"""Properties of a schedule with respect to dependences, with islpy: parallel dimensions,
permutable bands, scalar dimensions; and the transformations that follow from them (tiling of
permutable bands, wavefront of tile loops).

A *schedule* here is one isl union map giving every statement instance a time vector of one
common length ``n``. Dependences are moved to the time space, ``T = S^-1 . D . S`` as pairs
``[x] -> [y]`` (source time, sink time); all properties read off ``T``:

- dimension ``d`` is **parallel** when every pair with ``x_k = y_k`` for ``k < d`` also has
  ``x_d = y_d`` (no dependence is carried at ``d``);
- a run of consecutive loop dimensions ``[a, b)`` is a **permutable band** when every pair not
  yet ordered before ``a`` (``x_k = y_k`` for ``k < a``) has ``y_d - x_d >= 0`` at every
  ``d`` in the band (so the band's loops can be interchanged and tiled);
- a dimension is **scalar** when each statement's value there is a constant.

>>> import islpy as isl
>>> deps = isl.UnionMap("[N] -> { S0[t, i] -> S0[t + 1, i'] : 0 <= t and 0 <= i < N and "
...                     "i - 1 <= i' <= i + 1 and 0 <= i' < N }")
>>> sched = isl.UnionMap("[N] -> { S0[t, i] -> [t, i] }")
>>> parallel_flags(deps, sched), [b.dims for b in bands(deps, sched)]
([False, True], [(0,), (1,)])
>>> skewed = isl.UnionMap("[N] -> { S0[t, i] -> [t, t + i] }")
>>> parallel_flags(deps, skewed), [(b.dims, b.permutable) for b in bands(deps, skewed)]
([False, True], [((0, 1), True)])
>>> print(tile(skewed, bands(deps, skewed), [4, 8]))
[N] -> { S0[t, i] -> [o0, o1, t, t + i] : ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import islpy as isl

#: What the functions here take for a union map: one, a map, isl text, or a mapping of them
#: (their union; an empty mapping stands for no map at all).
MapLike: TypeAlias = "isl.UnionMap | isl.Map | str | dict"


@dataclass(frozen=True)
class Band:
    dims: tuple            # schedule dimensions, consecutive
    permutable: bool       # every member weakly satisfies the dependences live at its start
    parallel: tuple = ()   # per member: no dependence carried there

    def to_dict(self) -> dict:
        return {"dims": list(self.dims), "permutable": self.permutable, "parallel": list(self.parallel)}


def as_union_map(x: MapLike) -> isl.UnionMap | None:
    """``x`` as one union map; None for an empty mapping."""
    if isinstance(x, isl.UnionMap):
        return x
    if isinstance(x, isl.Map):
        return isl.UnionMap.from_map(x)
    if isinstance(x, dict):
        out = None
        for v in x.values():
            u = as_union_map(v)
            if u is not None:
                out = u if out is None else out.union(u)
        return out
    return isl.UnionMap(x)


def _schedule(x: MapLike) -> isl.UnionMap:
    """A schedule as one union map (a mapping with no statement is a ValueError)."""
    s = as_union_map(x)
    if s is None:
        raise ValueError("a schedule needs at least one statement")
    return s


def maps(umap: isl.UnionMap) -> list[isl.Map]:
    ml = umap.get_map_list()
    return [ml.get_at(i) for i in range(ml.n_map())]


def out_dims(sched: isl.UnionMap) -> int:
    """The common number of time dimensions (ValueError when statements differ)."""
    dims = {m.dim(isl.dim_type.out) for m in maps(sched)}
    if len(dims) != 1:
        raise ValueError(f"the schedule's statements have time vectors of lengths {sorted(dims)}")
    return dims.pop()


def time_dependences(deps: MapLike, sched: MapLike) -> isl.Map | None:
    """Dependences as source-time -> sink-time pairs (None when there are none)."""
    d, s = as_union_map(deps), _schedule(sched)
    if d is None or d.is_empty():
        return None
    t = d.apply_domain(s).apply_range(s)
    if t.is_empty():
        return None
    return isl.Map.from_union_map(t.coalesce())


def _prefix_equal(n: int, upto: int) -> str:
    xs = ", ".join(f"x{k}" for k in range(n))
    ys = ", ".join(f"y{k}" for k in range(n))
    cond = " and ".join(f"x{k} = y{k}" for k in range(upto)) or "true"
    return f"{{ [{xs}] -> [{ys}] : {cond} }}"


def _restrict(t: isl.Map, text: str) -> isl.Map:
    other = isl.Map(text)
    other = other.align_params(t.get_space())
    t = t.align_params(other.get_space())
    return t.intersect(other)


def unordered(t: isl.Map | None, n: int, upto: int) -> isl.Map | None:
    """The pairs of ``t`` with equal time prefix before ``upto``."""
    if t is None:
        return None
    r = _restrict(t, _prefix_equal(n, upto))
    return None if r.is_empty() else r


def _distance_bounds(pairs: isl.Map, d: int) -> tuple[bool, bool]:
    """(every distance at d is >= 0, every distance at d is 0)."""
    delta = pairs.deltas()
    n = delta.dim(isl.dim_type.set)
    zs = ", ".join(f"z{k}" for k in range(n))
    neg = delta.intersect(isl.Set(f"{{ [{zs}] : z{d} < 0 }}").align_params(delta.get_space()))
    pos = delta.intersect(isl.Set(f"{{ [{zs}] : z{d} > 0 }}").align_params(delta.get_space()))
    return neg.is_empty(), neg.is_empty() and pos.is_empty()


def parallel_flags(deps: MapLike, sched: MapLike) -> list[bool]:
    """One flag per time dimension: True when no dependence is carried there."""
    s = _schedule(sched)
    n = out_dims(s)
    t = time_dependences(deps, s)
    flags = []
    for d in range(n):
        pairs = unordered(t, n, d)
        flags.append(True if pairs is None else _distance_bounds(pairs, d)[1])
    return flags


def scalar_dims(sched: MapLike) -> list[bool]:
    """Per time dimension: True when every statement's value there is a constant."""
    s = _schedule(sched)
    n = out_dims(s)
    flags = [True] * n
    for m in maps(s):
        for d in range(n):
            if flags[d] and m.plain_get_val_if_fixed(isl.dim_type.out, d).is_nan():
                flags[d] = False
    return flags


def bands(deps: MapLike, sched: MapLike, par: list | None = None) -> list[Band]:
    """Maximal permutable runs of consecutive loop (non-scalar) dimensions, outermost first.
    A loop dimension that cannot join its predecessor's band starts a band of its own
    (``permutable`` is then True: one loop alone is trivially permutable). ``par``: the
    :func:`parallel_flags` when already computed."""
    s = _schedule(sched)
    n = out_dims(s)
    t = time_dependences(deps, s)
    scalar = scalar_dims(s)
    par = parallel_flags(deps, s) if par is None else par
    result, d = [], 0
    while d < n:
        if scalar[d]:
            d += 1
            continue
        live = unordered(t, n, d)
        members = [d]
        e = d + 1
        while e < n and not scalar[e] and (live is None or _distance_bounds(live, e)[0]):
            members.append(e)
            e += 1
        result.append(Band(tuple(members), True, tuple(par[k] for k in members)))
        d = e
    return result


def _affine_out(n: int, exprs: list[str], params: list[str]) -> isl.Map:
    xs = ", ".join(f"x{k}" for k in range(n))
    head = f"[{', '.join(params)}] -> " if params else ""
    return isl.Map(f"{head}{{ [{xs}] -> [{', '.join(exprs)}] }}")


def _params(umap: isl.UnionMap) -> list[str]:
    sp = umap.get_space()
    names = [sp.get_dim_name(isl.dim_type.param, k) for k in range(sp.dim(isl.dim_type.param))]
    return [name for name in names if name is not None]   # isl parameters are named


def tile(sched: MapLike, band_list: list[Band], sizes: int | Sequence[int], wavefront: bool = False,
         point_order: Mapping[str, Sequence[int]] | None = None,
         untiled: Mapping[str, Sequence[int]] | None = None) -> isl.UnionMap:
    """Tile every permutable band with two or more members: each band's tile loops
    ``floor(x_d / size)`` are inserted before its point loops. ``sizes`` is one integer for all
    members or a list, member by member (reused cyclically when shorter). With ``wavefront`` the
    outermost tile loop of each band becomes the sum of its first two tile loops, so the second
    tile loop carries no dependence of the band (pipelined parallelism).

    ``point_order`` (statement name -> a permutation of the ``n`` dimensions that moves only
    members of a tiled band among themselves) orders that statement's *point* loops: the point
    loop in member ``k``'s place runs dimension ``order[k]``; the tile loops keep the band's
    order. Within one tile every dependence of a permutable band has non-negative distances in
    every member, so any order is legal for one statement; statements with a dependence inside
    the band need orders that keep it (the caller checks legality).

    ``untiled`` (statement name -> first dimensions of tiled bands) gives that statement tile
    loops of 0 in those bands: its points run in the band's order in one tile, which keeps its
    own dependences; statements with a dependence on it inside the band need the same (the
    caller checks legality).

    >>> s = isl.UnionMap("[N] -> { S[i, j] -> [j, i] : 0 <= i, j < N }")
    >>> print(tile(s, [Band((0, 1), True, (True, True))], 32, point_order={"S": [1, 0]}))
    [N] -> { S[i, j] -> [o0, o1, i, j] : ...
    """
    s = _schedule(sched)
    n = out_dims(s)
    tiled = {b.dims[0]: b for b in band_list if b.permutable and len(b.dims) >= 2}

    def exprs_of(order: Sequence[int], flat: Sequence[int]) -> list[str]:
        exprs, d = [], 0
        while d < n:
            b = tiled.get(d)
            if b is None:
                exprs.append(f"x{d}")
                d += 1
                continue
            tiles = []
            for i, k in enumerate(b.dims):
                sz = sizes if isinstance(sizes, int) else int(list(sizes)[i % len(sizes)])
                tiles.append(f"floor(x{k} / {sz})" if sz > 1 else f"x{k}")
            if wavefront and len(tiles) >= 2:
                tiles[0] = f"{tiles[0]} + {tiles[1]}"
            if d in flat:
                tiles = ["0"] * len(tiles)
            points = [int(order[k]) for k in b.dims]
            if sorted(points) != list(b.dims):
                raise ValueError(f"point order {list(order)} moves a dimension out of band {list(b.dims)}")
            exprs += tiles + [f"x{k}" for k in points]
            d = b.dims[-1] + 1
        return exprs

    def tiled_map(umap: isl.UnionMap, order: Sequence[int], flat: Sequence[int] = ()) -> isl.UnionMap:
        t = _affine_out(n, exprs_of(order, flat), _params(s))
        return umap.apply_range(isl.UnionMap.from_map(t.align_params(umap.get_space())))

    identity = list(range(n))
    orders = {name: list(o) for name, o in (point_order or {}).items() if list(o) != identity}
    flats = {name: [int(d) for d in f] for name, f in (untiled or {}).items() if len(f)}
    for f in flats.values():
        if any(d not in tiled for d in f):
            raise ValueError(f"untiled {f}: not the first dimensions of tiled bands ({sorted(tiled)})")
    if not orders and not flats:
        return tiled_map(s, identity).coalesce()
    out = None
    for m in maps(s):
        name = m.get_tuple_name(isl.dim_type.in_)
        part = tiled_map(isl.UnionMap.from_map(m), orders.get(name, identity), flats.get(name, ()))
        out = part if out is None else out.union(part)
    assert out is not None
    return out.coalesce()


def permute(sched: MapLike, order: list) -> isl.UnionMap:
    """The schedule with its dimensions in ``order`` (new position k holds old dimension
    ``order[k]``). Legal when only members of one permutable band move among themselves."""
    s = _schedule(sched)
    n = out_dims(s)
    if sorted(order) != list(range(n)):
        raise ValueError(f"{order} is not a permutation of 0..{n - 1}")
    t = _affine_out(n, [f"x{k}" for k in order], _params(s))
    return s.apply_range(isl.UnionMap.from_map(t.align_params(s.get_space()))).coalesce()


def dimension_coefficients(sched: MapLike) -> dict:
    """Per statement: for each time dimension, the coefficients of the statement's iterators
    (None when that dimension is not one affine function of them, e.g. after tiling)."""
    out = {}
    for m in maps(_schedule(sched)):
        name = m.get_tuple_name(isl.dim_type.in_)
        n_in, n_out = m.dim(isl.dim_type.in_), m.dim(isl.dim_type.out)
        out[name] = _affine_rows(m, n_in, n_out)
    return out


def _affine_rows(m: isl.Map, n_in: int, n_out: int) -> list:
    try:
        pieces = []
        m.as_pw_multi_aff().foreach_piece(lambda _dom, ma: pieces.append(ma))
        coeffs = [[[int(p.get_at(d).get_coefficient_val(isl.dim_type.in_, j).to_python()) for j in range(n_in)]
                   for d in range(n_out)] for p in pieces]
    except (isl.Error, ValueError, TypeError):   # not a function of the iterators (e.g. tiled)
        return [None] * n_out
    return coeffs[0] if coeffs and all(c == coeffs[0] for c in coeffs) else [None] * n_out


def pad(sched: MapLike) -> isl.UnionMap:
    """Every statement's time vector extended with zeros to the longest length."""
    s = _schedule(sched)
    ms = maps(s)
    n = max(m.dim(isl.dim_type.out) for m in ms)
    parts = []
    for m in ms:
        k = m.dim(isl.dim_type.out)
        if k < n:
            m = m.add_dims(isl.dim_type.out, n - k)
            for j in range(k, n):
                m = m.fix_val(isl.dim_type.out, j, isl.Val.zero(m.get_ctx()))
        if m.has_tuple_name(isl.dim_type.out):
            m = m.set_tuple_name(isl.dim_type.out, None)  # type: ignore[arg-type]  # None drops the name
        parts.append(isl.UnionMap.from_map(m))
    out = parts[0]      # ms is not empty: max() above needs a map
    for u in parts[1:]:
        out = out.union(u)
    return out
