"""Fitting a generated placement design to a platform (used by :mod:`dfopt.bench.placement_gen`).

A :class:`Design` lists kernels with *relative* resources, streams, its DMA kernels and same-slot
groups. :func:`fit_design` turns it into a ``placement`` instance dict:

1. DMA kernels are pinned to the bottom row of slots, where the HBM is (``SLR0`` on the u280 and
   u55c; ``SLR0_X0`` / ``SLR0_X1`` in turn on ``u280_grid``).
2. Every resource is multiplied by one factor such that the dominant resource totals
   ``utilization`` of the platform (each column rounded so its total is exact).
3. A hidden assignment is built (:func:`witness_assignment`: a sweep over the kernels in order that
   fills the slots bottom-up and snakes across columns, the best of 25 per-slot targets; else
   first-fit decreasing) and the factor is lowered until that assignment keeps every slot within
   ``max_utilization``. With ``tight`` each resource gets its own factor instead, such that its
   fullest slot in the hidden assignment is at :data:`TIGHT_FILL` of the limit.
4. Stream widths that would make the hidden assignment cross a boundary between two rows (or
   columns) of slots with more wires than the narrowest link there carries are halved, widest first.

So every fitted instance is feasible, and :func:`witness_assignment` recomputes the proof from the
instance dict alone. Buffers get their depth from the kernel's final ``bram`` (see
:func:`fit_design`).

>>> d = Design()
>>> d.add_dma("load", "dma_in"); d.add("pe", "pe", lut=2000, ff=4000, dsp=20, bram=2)
>>> d.link("load", "pe", 512, 1024)
>>> inst = fit_design(d, "tiny", "two kernels", Target(utilization=0.1))
>>> inst["options"]["placement"]["pins"], fits(inst, witness_assignment(inst))
({'load': 'SLR0'}, True)
>>> sum(k["resources"]["bram"] for k in inst["graph"]["kernels"]) == round(0.1 * 2016)  # BRAM dominates
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import numpy.typing as npt

from dfopt.errors import InstanceError
from dfopt.ir.memory import BRAM18_SHAPES, memory_cost
from dfopt.ir.platform import Platform, load_preset

INSTANCE_FORMAT = "dfopt-instance/1"
RESOURCES = ("lut", "ff", "dsp", "bram", "uram")
TIGHT_FILL = 0.9           # tight: per resource, the fullest slot of the hidden assignment at 0.9 of the limit
MIN_WIDTH = 32             # stream widths are never halved below this
DMA = {"lut": 4000, "ff": 6000, "bram": 8}   # an AXI master with burst buffers (as in transformer.py)
_SWEEP_TARGETS = np.linspace(1.0, 1.6, 25)   # per-slot targets of the sweep, x the average fullness


# == a design under construction ==================================================================

@dataclass
class Design:
    """Kernels with relative resources, streams, DMA kernels (pinned when fitted), same-slot groups."""

    kernels: list = field(default_factory=list)
    streams: list = field(default_factory=list)
    dma: list = field(default_factory=list)
    same_slot: list = field(default_factory=list)

    def add(self, name: str, op: str, lut: float, ff: float, dsp: float = 0, bram: float = 0, uram: float = 0,
            buffers: Iterable[tuple[str, int, float]] = ()) -> None:
        """Add a kernel; ``buffers`` are (name, width in bits, share of the kernel's bram)."""
        self.kernels.append({"name": name, "op": op, "base": [lut, ff, dsp, bram, uram],
                             "buffers": list(buffers)})
        if op in ("dma_in", "dma_out"):
            self.dma.append(name)

    def add_dma(self, name: str, op: str) -> None:
        self.add(name, op, DMA["lut"], DMA["ff"], 0, DMA["bram"])

    def link(self, src: str, dst: str, width: int, tokens: int) -> None:
        self.streams.append({"name": f"e{len(self.streams)}", "src": src, "dst": dst,
                             "tokens": int(tokens), "width": int(width)})


@dataclass(frozen=True)
class Target:
    """How to fit a design: platform (preset name or inline object), utilisation of the dominant
    resource, the per-slot limit and balance weight written to the options, ``tight`` scaling,
    whether same-slot groups are written, and whether ``bram`` includes the buffers."""

    platform: str | dict = "u280"    # a preset name or an inline platform object
    utilization: float = 0.6
    max_utilization: float = 0.7
    balance_weight: float = 0.0
    tight: bool = False
    same_slot: bool = True
    buffers_in_bram: bool = False


def check_count(arg: str, value: object, low: int = 1) -> None:
    """Raise :class:`InstanceError` unless ``value`` is an integer >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InstanceError(f"generator argument {arg}: expected an integer >= {low}, got {value!r}")


def check_target(t: Target) -> None:
    """Raise :class:`InstanceError` naming the first bad number of ``t``."""
    for arg, value in (("utilization", t.utilization), ("max_utilization", t.max_utilization)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise InstanceError(f"generator argument {arg}: expected a number in (0, 1], got {value!r}")
    if isinstance(t.balance_weight, bool) or not isinstance(t.balance_weight, (int, float)) \
            or t.balance_weight < 0:
        raise InstanceError(f"generator argument balance_weight: expected a number >= 0, "
                            f"got {t.balance_weight!r}")


# == platform geometry ============================================================================

@dataclass(frozen=True)
class Geometry:
    """Slots (platform order), their capacities, the sweep order (rows bottom-up, snaking across
    columns), the bottom (HBM) row, and per boundary the wires of its narrowest link."""

    names: tuple
    xy: np.ndarray
    caps: np.ndarray
    sweep: tuple
    hbm: tuple
    row_wires: dict
    col_wires: dict


@cache
def _preset_geometry(name: str) -> Geometry:
    return _geometry(load_preset(name))


def platform_geometry(platform: str | dict) -> Geometry:
    """The :class:`Geometry` of a preset name (cached) or an inline platform object (integer x, y)."""
    if isinstance(platform, str):
        return _preset_geometry(platform)
    return _geometry(Platform.from_dict(platform))


def _geometry(p: Platform) -> Geometry:
    if not p.slots:
        raise InstanceError(f"platform {p.name!r} has no slots; placement needs an FPGA platform "
                            "such as u280, u55c or u280_grid")
    xy = np.array([(s.x, s.y) for s in p.slots], dtype=np.int64)
    caps = np.array([[s.resources.get(r, 0) for r in RESOURCES] for s in p.slots], dtype=float)
    rows = sorted(set(xy[:, 1].tolist()))
    sweep = []
    for i, y in enumerate(rows):
        row = sorted((int(x), j) for j, (x, yy) in enumerate(xy.tolist()) if yy == y)
        sweep += [j for _, j in (row if i % 2 == 0 else row[::-1])]
    hbm = tuple(j for j in sweep if xy[j, 1] == rows[0])
    index = {s.name: j for j, s in enumerate(p.slots)}
    row_wires: dict[int, float] = {}
    col_wires: dict[int, float] = {}
    for link in p.links:
        (xa, ya), (xb, yb) = xy[index[link.a]], xy[index[link.b]]
        if xa == xb and abs(ya - yb) == 1:
            key, table = int(min(ya, yb)), row_wires
        elif ya == yb and abs(xa - xb) == 1:
            key, table = int(min(xa, xb)), col_wires
        else:
            continue
        table[key] = min(table.get(key, math.inf), link.wires)
    return Geometry(tuple(s.name for s in p.slots), xy, caps, tuple(sweep), hbm, row_wires, col_wires)


# == the hidden assignment ========================================================================

def _fullness(load: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """max over resources of load / limit, per row (inf where a load meets a zero limit)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(load > 0, load / limit, 0.0)
    return ratio.max(axis=-1)


def _units(n: int, pinned: dict, groups: list) -> tuple[list, list]:
    """Kernels joined by same-slot groups, in order of their first member, with their pinned slot."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for group in groups:
        for a in group[1:]:
            parent[root(a)] = root(group[0])
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(root(i), []).append(i)
    units = sorted(members.values())
    pins = [next((pinned[i] for i in unit if i in pinned), None) for unit in units]
    return units, pins


def _sweep(size: np.ndarray, pins: list, limits: np.ndarray, order: tuple, target: float) -> np.ndarray:
    """Pinned units first; then the others in order, each in the current slot unless it would
    pass ``target`` fullness there, in which case the sweep moves on to the next slot."""
    load, at = np.zeros_like(limits), np.zeros(len(size), dtype=np.int64)
    for u, pin in enumerate(pins):
        if pin is not None:
            at[u] = pin
            load[pin] += size[u]
    j = 0
    for u, pin in enumerate(pins):
        if pin is None:
            while j < len(order) - 1 and _fullness(load[order[j]] + size[u], limits[order[j]]) > target:
                j += 1
            at[u] = order[j]
            load[order[j]] += size[u]
    return at


def _first_fit_decreasing(size: np.ndarray, pins: list, limits: np.ndarray, order: tuple) -> np.ndarray:
    """Pinned units first; then the others largest first, each in the first slot (sweep order)
    where it fits, else where it overflows least."""
    load, at = np.zeros_like(limits), np.zeros(len(size), dtype=np.int64)
    for u, pin in enumerate(pins):
        if pin is not None:
            at[u] = pin
            load[pin] += size[u]
    free = [u for u, pin in enumerate(pins) if pin is None]
    for u in sorted(free, key=lambda u: -_fullness(size[u], limits.sum(axis=0))):
        after = _fullness(load[list(order)] + size[u], limits[list(order)])
        fit = np.flatnonzero(after <= 1)
        j = order[int(fit[0]) if fit.size else int(np.argmin(after))]
        at[u] = j
        load[j] += size[u]
    return at


def _witness(res: np.ndarray, limits: np.ndarray, order: tuple, pinned: dict, groups: list) -> np.ndarray:
    """A slot index per kernel: the best sweep if one fits, else first-fit decreasing if that
    fits, else whichever of them overflows least."""
    units, pins = _units(len(res), pinned, groups)
    size = np.array([res[u].sum(axis=0) for u in units]).reshape(len(units), res.shape[1])
    average = _fullness(res.sum(axis=0), limits.sum(axis=0))

    def score(at):
        load = np.zeros_like(limits)
        np.add.at(load, at, size)
        return float(_fullness(load, limits).max())

    sweeps = [_sweep(size, pins, limits, order, average * t) for t in _SWEEP_TARGETS]
    best = min(sweeps, key=score)
    if score(best) > 1:
        ffd = _first_fit_decreasing(size, pins, limits, order)
        best = ffd if score(ffd) < score(best) else best
    at = np.zeros(len(res), dtype=np.int64)
    for unit, j in zip(units, best):
        at[unit] = j
    return at


def _crossings(geo: Geometry, src: np.ndarray, dst: np.ndarray) -> list:
    """Per stream, the wire-limited boundaries it crosses: ('row', y) between rows y and y+1,
    ('col', x) between columns x and x+1 (only boundaries with a link are listed)."""
    out = []
    for a, b in zip(src.tolist(), dst.tolist()):
        (xa, ya), (xb, yb) = geo.xy[a], geo.xy[b]
        cut = [("row", y) for y in range(min(ya, yb), max(ya, yb)) if y in geo.row_wires]
        cut += [("col", x) for x in range(min(xa, xb), max(xa, xb)) if x in geo.col_wires]
        out.append(cut)
    return out


def _wire_loads(cuts: list, widths) -> dict:
    load: dict = {}
    for cut, w in zip(cuts, widths):
        for b in cut:
            load[b] = load.get(b, 0) + w
    return load


def _wire_cap(geo: Geometry, boundary) -> float:
    kind, at = boundary
    return (geo.row_wires if kind == "row" else geo.col_wires)[at]


# == the instance dict: arrays in, arrays out ====================================================

def _arrays(inst: dict, geo: Geometry):
    """(resources n x R, kernel index by name, pinned {kernel index: slot index}, groups)."""
    kernels = inst["graph"]["kernels"]
    res = np.array([[k.get("resources", {}).get(r, 0) + (_buffer_bram(k) if r == "bram" else 0) for r in RESOURCES]
                    for k in kernels], dtype=float)
    index = {k["name"]: i for i, k in enumerate(kernels)}
    opts = inst.get("options", {}).get("placement", {})
    slot = {name: j for j, name in enumerate(geo.names)}
    pinned = {index[k]: slot[s if isinstance(s, str) else s[0]] for k, s in opts.get("pins", {}).items()}
    groups = [[index[k] for k in g] for g in opts.get("same_slot", [])]
    return res, index, pinned, groups


def _buffer_bram(kernel: dict) -> float:
    """BRAM36 blocks of the kernel's buffers in BRAM18 (the placement model's default binding)."""
    return sum(memory_cost("bram18", b["width"], b["depth"]) for b in kernel.get("buffers", []))


def _limits(inst: dict, geo: Geometry) -> np.ndarray:
    return geo.caps * inst.get("options", {}).get("placement", {}).get("max_utilization", 0.8)


def witness_assignment(inst: dict) -> dict[str, str]:
    """The hidden assignment (kernel -> slot) of a placement instance dict, recomputed from it.

    For instances built by :func:`fit_design` it satisfies every capacity, pin, same-slot group and
    link (see :func:`fits`): the generator checks that before returning. A kernel pinned to a list
    of slots is put in the first.

    >>> from dfopt.bench.placement_gen import random_placement_dag
    >>> inst = random_placement_dag(12, 0, tight=True)
    >>> slots = witness_assignment(inst)
    >>> slots["k0"], fits(inst, slots)
    ('SLR0', True)
    """
    geo = platform_geometry(inst["platform"])
    res, index, pinned, groups = _arrays(inst, geo)
    at = _witness(res, _limits(inst, geo), geo.sweep, pinned, groups)
    return {name: geo.names[at[i]] for name, i in index.items()}


def violations(inst: dict, slot_of: dict[str, str]) -> list[str]:
    """What an assignment breaks: slot capacities at ``max_utilization``, pins, same-slot groups,
    and links. Links are checked conservatively: all the width crossing a boundary between two
    rows (or columns) of slots must fit its narrowest link, whatever the route.

    >>> from dfopt.bench.placement_gen import infeasible_placement
    >>> inst = infeasible_placement("pins", n_kernels=10)
    >>> violations(inst, witness_assignment(inst))[0].startswith("slot SLR0 lut")
    True
    """
    geo = platform_geometry(inst["platform"])
    res, index, _, groups = _arrays(inst, geo)
    slot = {name: j for j, name in enumerate(geo.names)}
    at = np.array([slot[slot_of[k["name"]]] for k in inst["graph"]["kernels"]], dtype=np.int64)
    out = []
    load = np.zeros_like(geo.caps)
    np.add.at(load, at, res)
    limits = _limits(inst, geo)
    for j, r in zip(*np.nonzero(load > limits + 1e-9)):
        out.append(f"slot {geo.names[j]} {RESOURCES[r]} {load[j, r]:g} > limit {limits[j, r]:g}")
    for k, where in inst.get("options", {}).get("placement", {}).get("pins", {}).items():
        allowed = [where] if isinstance(where, str) else list(where)
        if slot_of[k] not in allowed:
            out.append(f"kernel {k} is in {slot_of[k]}, pinned to {', '.join(allowed)}")
    out += [f"same-slot group {g} is split" for g in groups if len({int(at[i]) for i in g}) > 1]
    streams = inst["graph"]["streams"]
    cuts = _crossings(geo, at[[index[s["src"]] for s in streams]], at[[index[s["dst"]] for s in streams]])
    for b, w in sorted(_wire_loads(cuts, [s.get("width", 32) for s in streams]).items()):
        if w > _wire_cap(geo, b):
            out.append(f"{b[0]} boundary {b[1]}|{b[1] + 1}: {w} wires > {_wire_cap(geo, b):g}")
    return out


def fits(inst: dict, slot_of: dict[str, str]) -> bool:
    """Whether ``slot_of`` breaks nothing that :func:`violations` checks."""
    return not violations(inst, slot_of)



# == scaling a design into an instance ==========================================================

def apportion(values: np.ndarray) -> np.ndarray:
    """Integers that sum to the rounded total of ``values``, each the floor or the ceiling of its
    value (largest remainders round up).

    >>> apportion(np.array([0.4, 0.4, 0.4, 1.8])).tolist()
    [1, 0, 0, 2]
    """
    floor = np.floor(values)
    extra = round(float(values.sum())) - int(floor.sum())
    order = np.argsort(-(values - floor), kind="stable")
    floor[order[:max(extra, 0)]] += 1
    return floor.astype(np.int64)


def _scaled(base: np.ndarray, factors: np.ndarray) -> np.ndarray:
    out = np.column_stack([apportion(base[:, r] * factors[r]) for r in range(base.shape[1])])
    out[:, :2] = np.maximum(out[:, :2], 1)          # every kernel has some LUTs and flip-flops
    return out


def _loads(res: np.ndarray, at: np.ndarray, slots: int) -> np.ndarray:
    load = np.zeros((slots, res.shape[1]))
    np.add.at(load, at, res)
    return load


def _factors(base: np.ndarray, geo: Geometry, limits: np.ndarray, t: Target, at: np.ndarray) -> np.ndarray:
    """Per-resource scale factors: the utilisation target capped by the hidden assignment ``at``
    of the base sizes, or (tight) each resource's own fill of its fullest slot."""
    load = _loads(base, at, len(geo.names))
    if t.tight:
        with np.errstate(divide="ignore", invalid="ignore"):
            fullest = np.where(load > 0, load / limits, 0.0).max(axis=0)
        return np.where(fullest > 0, TIGHT_FILL / np.where(fullest > 0, fullest, 1), 1.0)
    total = geo.caps.sum(axis=0)
    has = total > 0
    factor = t.utilization / float(np.max(base.sum(axis=0)[has] / total[has]))
    return np.full(len(RESOURCES), min(factor, 1.0 / float(_fullness(load, limits).max())))


def _fit_resources(base, geo, limits, t: Target, pinned: dict, groups: list, name: str):
    """(integer resources, hidden assignment) with the assignment within ``fill`` of the limits."""
    if np.any((base.sum(axis=0) > 0) & (geo.caps.sum(axis=0) == 0)):
        raise InstanceError(f"platform {t.platform!r} lacks a resource the design {name!r} needs")
    factors = _factors(base, geo, limits, t, _witness(base, limits, geo.sweep, pinned, groups))
    fill = TIGHT_FILL if t.tight else 1.0
    for _ in range(300):
        res = _scaled(base, factors)
        at = _witness(res.astype(float), limits, geo.sweep, pinned, groups)
        if _fullness(_loads(res, at, len(geo.names)), limits).max() <= fill:
            return res, at
        factors = factors * 0.99
    raise InstanceError(f"generator could not fit {name!r} on {t.platform!r}: a kernel or a pinned "
                        "group is too large for one slot; use fewer pins or a larger platform")


def _buffer_depth(width: int, bram36: float) -> int:
    """The largest depth whose BRAM18 cost (its best aspect ratio) is at most ``bram36`` blocks."""
    return max(int(2 * bram36 // -(-width // w)) * d for d, w in BRAM18_SHAPES)


def _kernel_entry(kernel: dict, res: list, buffers_in_bram: bool) -> dict:
    """The kernel's JSON entry; its buffers take their share of its ``bram`` as BRAM18."""
    resources = dict(zip(RESOURCES, res))
    buffers = []
    for name, width, share in kernel["buffers"]:
        depth = _buffer_depth(width, share * resources["bram"])
        if depth >= 3:
            buffers.append({"name": name, "width": int(width), "depth": depth})
    if not buffers_in_bram and buffers:
        own = resources["bram"] - sum(memory_cost("bram18", b["width"], b["depth"]) for b in buffers)
        resources["bram"] = int(own) if float(own).is_integer() else own
    entry = {"name": kernel["name"], "op": kernel["op"], "resources": resources}
    if buffers:
        entry["buffers"] = buffers
    return entry


def _fit_wires(streams: list, geo: Geometry, at: np.ndarray, index: dict) -> list:
    """Copies of the streams whose widths are halved, widest first, until the hidden assignment
    crosses every boundary within its narrowest link."""
    streams = [dict(s) for s in streams]
    cuts = _crossings(geo, at[[index[s["src"]] for s in streams]], at[[index[s["dst"]] for s in streams]])
    while True:
        load = _wire_loads(cuts, [s["width"] for s in streams])
        over = [b for b, w in sorted(load.items()) if w > _wire_cap(geo, b)]
        if not over:
            return streams
        crossing = [i for i, cut in enumerate(cuts) if over[0] in cut and streams[i]["width"] > MIN_WIDTH]
        if not crossing:
            raise InstanceError(f"generator could not fit the streams across boundary {over[0]} "
                                "of the platform; use fewer kernels or a larger platform")
        widest = max(crossing, key=lambda i: (streams[i]["width"], -i))
        streams[widest]["width"] //= 2


def usage_text(res: npt.ArrayLike, caps: np.ndarray) -> str:
    """``LUT 58%, DSP 60%, ...``: each used resource's total as a share of the platform's."""
    used = np.asarray(res, dtype=float).sum(axis=0) / caps.sum(axis=0)
    return ", ".join(f"{r.upper()} {u:.0%}" for r, u in zip(RESOURCES, used) if u > 0)


def fit_design(design: Design, name: str, description: str, t: Target) -> dict:
    """The feasible placement instance dict of ``design`` fitted to ``t`` (see the module docstring).

    Kernels with buffers get each buffer's depth from its share of the kernel's final ``bram``:
    the largest depth whose BRAM18 cost fits. By default the buffers' BRAM18 cost is left out of
    ``resources.bram`` (possibly a half block): the placement model (``memory_binding``) and the
    ``memory`` problem add bound buffers to the kernel's own resources. With
    ``t.buffers_in_bram`` ``resources.bram`` is the kernel's whole block memory, buffers included
    as BRAM18 (for tools that ignore ``buffers``). Both describe the same total when the buffers
    go to BRAM18.
    """
    check_target(t)
    geo = platform_geometry(t.platform)
    index = {k["name"]: i for i, k in enumerate(design.kernels)}
    pins = {k: geo.names[geo.hbm[i % len(geo.hbm)]] for i, k in enumerate(design.dma)}
    pinned = {index[k]: geo.names.index(s) for k, s in pins.items()}
    groups = [[index[k] for k in g] for g in design.same_slot] if t.same_slot else []
    limits = geo.caps * t.max_utilization
    base = np.array([k["base"] for k in design.kernels], dtype=float)
    res, at = _fit_resources(base, geo, limits, t, pinned, groups, name)
    streams = _fit_wires(design.streams, geo, at, index)
    kernels = [_kernel_entry(k, r, t.buffers_in_bram) for k, r in zip(design.kernels, res.tolist())]
    options = {"max_utilization": t.max_utilization, "balance_weight": t.balance_weight, "pins": pins}
    if groups:
        options["same_slot"] = [list(g) for g in design.same_slot]
    where = t.platform if isinstance(t.platform, str) else "inline platform"
    tight = (f"; each resource fills its fullest slot of a hidden feasible assignment to {TIGHT_FILL:g} "
             "of the limit" if t.tight else "")
    description += f"; uses {usage_text(res, geo.caps)} of the {where} (limit {t.max_utilization:g} per slot{tight})"
    return {"format": INSTANCE_FORMAT, "name": name, "problem": "placement", "description": description,
            "platform": t.platform, "graph": {"kernels": kernels, "streams": streams},
            "options": {"placement": options}}
