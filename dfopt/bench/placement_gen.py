"""Seeded instances of the ``placement`` problem: AutoBridge-style designs and random DAGs.

Every generator returns a complete ``dfopt-instance/1`` dict, deterministic for its arguments:

- :func:`systolic_array`: a CNN systolic array (AutoBridge's 13x2 .. 13x16 benchmarks),
- :func:`stencil_chain`: a SODA-style chain of stencil stages, some fanned out into lanes,
- :func:`pagerank`: PageRank-like fan-out / fan-in around a central vertex handler,
- :func:`random_placement_dag`: a random connected DAG with log-normal kernel sizes,
- :func:`infeasible_placement`: instances that no placement satisfies, for a stated reason,
- :func:`transformer_placement`: a transformer block of :mod:`dfopt.bench.transformer`.

The first four build a design with relative kernel sizes and fit it to the platform with
:func:`dfopt.bench.placement_fit.fit_design`: DMA kernels pinned at the HBM (bottom row of slots),
resources scaled so that the dominant one totals ``utilization`` of the platform, unless a hidden
feasible assignment (:func:`witness_assignment`) needs less (the description states what was
reached); ``tight`` random DAGs scale every resource to 0.9 of the limit in its fullest slot of
that assignment. So all their instances are feasible. Kernels with ``buffers`` (PE weight
buffers, feeder ping-pong buffers, stencil line buffers, accumulators) leave them out of ``resources.bram`` (the
placement model's ``memory_binding`` counts them beside their kernel, in BRAM18 by default)
unless ``buffers_in_bram=1`` (see :func:`fit_design`).

Common parameters: ``seed``; ``platform`` (a preset name such as ``u280``, ``u55c``,
``u280_grid``, or an inline object; a Python argument only, since specs hold numbers);
``utilization`` (0..1, of the platform's total); ``max_utilization`` and ``balance_weight``
(written to ``options.placement``); ``buffers_in_bram`` (0/1).

>>> inst = systolic_array(rows=2, cols=2)
>>> inst["name"], inst["problem"], len(inst["graph"]["kernels"])
('systolic-2x2-s0', 'placement', 13)
>>> inst["options"]["placement"]["pins"]["dma_in"]
'SLR0'
>>> all(fits(inst, witness_assignment(inst)) for inst in (inst, pagerank(pes=2)))
True
"""

from __future__ import annotations

import math

import numpy as np

from dfopt.bench.generators import (
    _defaults,
    _draw_edges,
    _draw_widths,
    _params_suffix,
    _token_walk,
)
from dfopt.bench.placement_fit import (
    RESOURCES,
    Design,
    Geometry,
    Target,
    apportion,
    check_count,
    check_target,
    fit_design,
    fits,
    platform_geometry,
    usage_text,
    violations,
    witness_assignment,
)
from dfopt.errors import InstanceError

__all__ = [
    "INFEASIBLE_KINDS",
    "fits",
    "infeasible_placement",
    "pagerank",
    "random_placement_dag",
    "stencil_chain",
    "systolic_array",
    "transformer_placement",
    "violations",
    "witness_assignment",
]


def _jitter(rng: np.random.Generator, value: float, spread: float = 0.15) -> float:
    return float(value * rng.uniform(1 - spread, 1 + spread))


def _fit(d: Design, stem: str, description: str, fn, given: dict, tight: bool = False,
         same_slot: bool = True) -> dict:
    """Fit ``d`` with the common arguments in ``given``; the name hashes the non-default ones."""
    t = Target(given["platform"], given["utilization"], given["max_utilization"], given["balance_weight"],
               tight, same_slot, bool(given["buffers_in_bram"]))
    return fit_design(d, stem + _params_suffix(given, _defaults(fn)), description, t)


def _given(platform, utilization, max_utilization, balance_weight, buffers_in_bram, **more) -> dict:
    return {"platform": platform, "utilization": utilization, "max_utilization": max_utilization,
            "balance_weight": balance_weight, "buffers_in_bram": buffers_in_bram, **more}


# == AutoBridge-style designs ====================================================================

def systolic_array(rows: int = 13, cols: int = 4, seed: int = 0, platform: str | dict = "u280",
                   utilization: float = 0.6, max_utilization: float = 0.7, balance_weight: float = 0.0, simd: int = 4,
                   buffers_in_bram: int = 0) -> dict:
    """A CNN systolic array of ``rows`` x ``cols`` PEs (AutoBridge's CNN benchmarks, 13x2 .. 13x16).

    Features enter from the left: ``dma_in`` -> a chain of row feeders ``feed_r{i}``, each feeding
    ``pe_{i}_0``. Weights enter from the top: ``dma_w`` -> column loaders ``feed_c{j}`` -> ``pe_0_{j}``.
    Every PE streams features right and weights down (``simd`` x 32 bits), and its results down
    (32 bits); the bottom row drains into ``drain_c{j}``, chained (64 bits) into ``dma_out``. DMA
    streams are 512 bits. PEs are DSP-heavy (5 DSP per lane, ~1.4k LUT, a weight buffer in one or two
    BRAMs); feeders hold ping-pong buffers. ``seed`` jitters the kernel sizes by up to 15 %.

    >>> inst = systolic_array(rows=3, cols=2, seed=1)
    >>> sorted(k["name"] for k in inst["graph"]["kernels"] if k["name"].startswith("pe_"))
    ['pe_0_0', 'pe_0_1', 'pe_1_0', 'pe_1_1', 'pe_2_0', 'pe_2_1']
    """
    for arg, value in (("rows", rows), ("cols", cols), ("simd", simd)):
        check_count(arg, value)
    rng = np.random.default_rng(seed)
    d, data = Design(), 32 * simd
    d.add_dma("dma_in", "dma_in")
    d.add_dma("dma_w", "dma_in")
    for j in range(cols):
        d.add(f"feed_c{j}", "loader", _jitter(rng, 1500), _jitter(rng, 2500), 0, 4,
              buffers=[("ping", data, 0.5), ("pong", data, 0.5)])
    for i in range(rows):                  # each row feeder next to its row: the sweep keeps them together
        d.add(f"feed_r{i}", "feeder", _jitter(rng, 1500), _jitter(rng, 2500), 0, 4,
              buffers=[("ping", data, 0.5), ("pong", data, 0.5)])
        for j in range(cols):
            lut = _jitter(rng, 1000 + 100 * simd)
            d.add(f"pe_{i}_{j}", "pe", lut, 2 * lut, 5 * simd, _jitter(rng, 1.5, 0.4),
                  buffers=[("weights", data, 1.0)])
    for j in range(cols):
        d.add(f"drain_c{j}", "drain", _jitter(rng, 800), _jitter(rng, 1200), 0, 1)
    d.add_dma("dma_out", "dma_out")
    _systolic_streams(d, rows, cols, data)
    given = _given(platform, utilization, max_utilization, balance_weight, buffers_in_bram, simd=simd)
    return _fit(d, f"systolic-{rows}x{cols}-s{seed}",
                f"CNN systolic array {rows}x{cols} (AutoBridge-style): row feeders, column loaders, "
                f"PEs streaming right and down ({data}-bit data), bottom drains, seed {seed}",
                systolic_array, given)


def _systolic_streams(d: Design, rows: int, cols: int, data: int) -> None:
    feature_tokens, result_tokens = 4096, 256
    d.link("dma_in", "feed_r0", 512, feature_tokens * rows * data // 512)
    d.link("dma_w", "feed_c0", 512, feature_tokens * cols * data // 512)
    for i in range(rows):
        if i + 1 < rows:
            d.link(f"feed_r{i}", f"feed_r{i + 1}", data, feature_tokens * (rows - i - 1))
        d.link(f"feed_r{i}", f"pe_{i}_0", data, feature_tokens)
    for j in range(cols):
        if j + 1 < cols:
            d.link(f"feed_c{j}", f"feed_c{j + 1}", data, feature_tokens * (cols - j - 1))
        d.link(f"feed_c{j}", f"pe_0_{j}", data, feature_tokens)
    for i in range(rows):
        for j in range(cols):
            if j + 1 < cols:
                d.link(f"pe_{i}_{j}", f"pe_{i}_{j + 1}", data, feature_tokens)
            if i + 1 < rows:
                d.link(f"pe_{i}_{j}", f"pe_{i + 1}_{j}", data, feature_tokens)
            below = f"pe_{i + 1}_{j}" if i + 1 < rows else f"drain_c{j}"
            d.link(f"pe_{i}_{j}", below, 32, result_tokens * (i + 1))
    for j in range(cols):
        d.link(f"drain_c{j}", f"drain_c{j + 1}" if j + 1 < cols else "dma_out", 64,
               result_tokens * rows * (j + 1) // 2)


STENCIL_POINTS = (5, 9, 13, 19, 27)    # jacobi2d, blur / seidel, 13-point, 19- and 27-point 3-D stencils


def stencil_chain(stages: int = 8, seed: int = 0, platform: str | dict = "u280", utilization: float = 0.6,
                  max_utilization: float = 0.7, balance_weight: float = 0.0, max_lanes: int = 4,
                  same_slot: int = 1, buffers_in_bram: int = 0) -> dict:
    """A SODA-style chain of ``stages`` stencil stages between ``load`` and ``store`` (AutoBridge's
    stencil benchmarks).

    A stage is a line-buffer kernel ``s{i}_lb`` (a ``lines`` buffer) feeding the stencil kernel
    ``s{i}_pe`` a 512-bit window; streams between stages are 256 or 512 bits. About 40 % of the stages
    (at least one when there are two or more) split the image into 2 .. ``max_lanes`` lanes:
    ``s{i}_split`` -> per lane ``s{i}_lb{l}`` -> ``s{i}_pe{l}`` -> ``s{i}_join``. With ``same_slot``
    the line buffer and stencil kernel of the first two single-lane stages must share a slot.

    >>> inst = stencil_chain(stages=3, seed=0)
    >>> [k["name"] for k in inst["graph"]["kernels"]][:3], inst["options"]["placement"]["same_slot"]
    (['load', 's0_lb', 's0_pe'], [['s0_lb', 's0_pe']])
    """
    check_count("stages", stages)
    check_count("max_lanes", max_lanes)
    rng = np.random.default_rng(seed)
    lanes = [int(rng.integers(2, max_lanes + 1)) if max_lanes > 1 and rng.random() < 0.4 else 1
             for _ in range(stages)]
    if stages >= 2 and max_lanes > 1 and max(lanes) == 1:
        lanes[stages // 2] = int(rng.integers(2, max_lanes + 1))
    d = Design()
    d.add_dma("load", "dma_in")
    prev, width, pixels = "load", 512, 1024 * 1024
    for s, lane_count in enumerate(lanes):
        points = int(rng.choice(STENCIL_POINTS))
        out_width = int(rng.choice((256, 512)))
        prev = _stencil_stage(d, rng, s, lane_count, points, prev, width, out_width, pixels)
        width = out_width
    d.add_dma("store", "dma_out")
    d.link(prev, "store", width, pixels * 32 // width)
    single = [s for s, n in enumerate(lanes) if n == 1][:2]
    d.same_slot = [[f"s{s}_lb", f"s{s}_pe"] for s in single]
    given = _given(platform, utilization, max_utilization, balance_weight, buffers_in_bram,
                   max_lanes=max_lanes, same_slot=same_slot)
    return _fit(d, f"stencil-{stages}-s{seed}",
                f"stencil chain of {stages} stages (SODA-style), lanes per stage {lanes}, seed {seed}",
                stencil_chain, given, same_slot=bool(same_slot))


def _stencil_stage(d: Design, rng, s: int, lanes: int, points: int, prev: str, width: int,
                   out_width: int, pixels: int) -> str:
    """Add stage ``s``; return the kernel its output leaves from."""
    share = 1.0 if lanes == 1 else 1.0 / lanes + 0.15      # a lane works on a strip (plus halo)
    words = 512 // 32

    def lane(suffix: str, src: str, dst: str | None):
        lb, pe = f"s{s}_lb{suffix}", f"s{s}_pe{suffix}"
        d.add(lb, "line_buffer", _jitter(rng, 1500 * share), _jitter(rng, 2500 * share), 0,
              _jitter(rng, (4 + 2 * points) * share), buffers=[("lines", 512, 1.0)])
        lut = _jitter(rng, (2000 + 60 * points * words) * share)
        d.add(pe, "stencil", lut, 2 * lut, points * words * share / 2, 1)
        d.link(src, lb, width, pixels * 32 // width // lanes)
        d.link(lb, pe, 512, pixels * 32 // 512 // lanes)
        if dst is not None:
            d.link(pe, dst, out_width, pixels * 32 // out_width // lanes)
        return pe

    if lanes == 1:
        return lane("", prev, None)
    split, join = f"s{s}_split", f"s{s}_join"
    d.add(split, "split", _jitter(rng, 800), _jitter(rng, 1200))
    d.link(prev, split, width, pixels * 32 // width)
    for lane_index in range(lanes):
        lane(str(lane_index), split, join)
    d.add(join, "join", _jitter(rng, 800), _jitter(rng, 1200))
    return join


def pagerank(pes: int = 8, seed: int = 0, platform: str | dict = "u280", utilization: float = 0.6,
             max_utilization: float = 0.7, balance_weight: float = 0.0, buffers_in_bram: int = 0) -> dict:
    """PageRank-like fan-out / fan-in (AutoBridge's PageRank benchmark) with ``pes`` PEs.

    ``ctrl`` sends 32-bit commands to the edge loaders ``load_e{p}`` (DMA kernels, pinned at the HBM)
    and 64-bit ones to the central ``vertex`` handler (URAM-heavy), and collects 32-bit done signals
    from the gather PEs. ``load_v`` -> ``vertex`` -> ``store_v`` move the ranks (512 bits). Per PE:
    ``load_e{p}`` -> ``scatter{p}`` (512-bit edges), ``vertex`` -> ``scatter{p}`` (256-bit ranks),
    ``scatter{p}`` -> ``gather{p}`` (512-bit updates) and -> ``gather{p ^ 1}`` (a shuffle, 128 or 256
    bits), ``gather{p}`` -> ``vertex`` (256-bit ranks). The graph has cycles through ``vertex`` and
    ``ctrl``, as the iterative design does.

    >>> inst = pagerank(pes=2)
    >>> [k["name"] for k in inst["graph"]["kernels"]]
    ['ctrl', 'load_v', 'load_e0', 'load_e1', 'vertex', 'scatter0', 'scatter1', 'gather0', 'gather1', 'store_v']
    """
    check_count("pes", pes)
    rng = np.random.default_rng(seed)
    d = Design()
    d.add("ctrl", "control", 3000, 4000, 0, 1)
    d.add_dma("load_v", "dma_in")
    for p in range(pes):
        d.add_dma(f"load_e{p}", "dma_in")
    d.add("vertex", "vertex_handler", 20000 + 1500 * pes, 40000 + 3000 * pes, 0, 16, 16 + 4 * pes,
          buffers=[("ranks", 64, 1.0)])
    for p in range(pes):
        d.add(f"scatter{p}", "scatter", _jitter(rng, 6000), _jitter(rng, 9000), 0, _jitter(rng, 4))
    for p in range(pes):
        d.add(f"gather{p}", "gather", _jitter(rng, 8000), _jitter(rng, 12000), 10, _jitter(rng, 16),
              buffers=[("acc", 64, 1.0)])
    d.add_dma("store_v", "dma_out")
    edges, vertices = 1 << 22, 1 << 18
    d.link("load_v", "vertex", 512, vertices * 64 // 512)
    d.link("ctrl", "vertex", 64, 64)
    for p in range(pes):
        d.link("ctrl", f"load_e{p}", 32, 64)
        d.link(f"load_e{p}", f"scatter{p}", 512, edges // pes // 8)
        d.link("vertex", f"scatter{p}", 256, vertices // 4)
        d.link(f"scatter{p}", f"gather{p}", 512, edges // pes // 8)
        if (p ^ 1) < pes:
            d.link(f"scatter{p}", f"gather{p ^ 1}", int(rng.choice((128, 256))), edges // pes // 16)
        d.link(f"gather{p}", "vertex", 256, vertices // pes // 4)
        d.link(f"gather{p}", "ctrl", 32, 64)
    d.link("vertex", "store_v", 512, vertices * 64 // 512)
    given = _given(platform, utilization, max_utilization, balance_weight, buffers_in_bram)
    return _fit(d, f"pagerank-{pes}-s{seed}",
                f"PageRank-like design with {pes} scatter/gather PEs around a central vertex handler, "
                f"seed {seed}", pagerank, given)


# == random DAGs ==================================================================================

PROFILES = ("logic", "dsp", "memory")
_PROFILE_P = (0.4, 0.35, 0.25)


def random_placement_dag(n_kernels: int = 100, seed: int = 0, platform: str | dict = "u280", utilization: float = 0.6,
                         max_utilization: float = 0.7, balance_weight: float = 0.0, tight: int = 0,
                         max_fan_in: int = 4, buffers_in_bram: int = 0) -> dict:
    """A random connected DAG of ``n_kernels`` kernels (the FIFO generator's edge drawing).

    ``k0`` (the only source) is a ``dma_in``; the ``max(1, round(n / 40))`` latest sinks are
    ``dma_out``; both are pinned at the HBM. Other kernels have a profile (logic 40 %, DSP 35 %,
    memory 25 %) and log-normal sizes (median 4k LUT, sigma 0.7, clipped to 1/5 .. 4x the
    median); memory kernels take BRAM (half of them a ``buf`` buffer) and sometimes URAM. Stream
    widths are uniform over 32, 64, 128, 256, 512. ``tight`` (0/1) ignores ``utilization`` and
    scales each resource so that its fullest slot of the hidden assignment is at 0.9 of
    ``max_utilization``.

    >>> inst = random_placement_dag(10, 3)
    >>> inst["name"], [k["op"] for k in inst["graph"]["kernels"]][::9]
    ('placement-n10-s3', ['dma_in', 'dma_out'])
    """
    check_count("n_kernels", n_kernels, 2)
    check_count("max_fan_in", max_fan_in)
    rng = np.random.default_rng(seed)
    src, dst = _draw_edges(rng, n_kernels, max_fan_in)
    sinks = sorted(set(range(1, n_kernels)) - set(src.tolist()))
    outs = set(sinks[-max(1, round(n_kernels / 40)):])
    d = Design()
    profiles = rng.choice(len(PROFILES), size=n_kernels, p=_PROFILE_P)
    luts = 4000 * np.clip(rng.lognormal(0.0, 0.7, size=n_kernels), 0.2, 4.0)
    for i in range(n_kernels):
        if i == 0 or i in outs:
            d.add_dma(f"k{i}", "dma_in" if i == 0 else "dma_out")
        else:
            _random_kernel(d, rng, f"k{i}", PROFILES[profiles[i]], float(luts[i]))
    widths = _draw_widths(rng, len(src), (32, 512))
    tokens = _token_walk(rng, n_kernels, (256, 65536))
    for s, t_, w in zip(src.tolist(), dst.tolist(), widths.tolist()):
        d.link(f"k{s}", f"k{t_}", w, tokens[t_])
    given = _given(platform, utilization, max_utilization, balance_weight, buffers_in_bram,
                   max_fan_in=max_fan_in)
    stem = f"placement-n{n_kernels}-s{seed}" + ("-tight" if tight else "")   # tight: named, not hashed
    return _fit(d, stem, f"random placement DAG: {n_kernels} kernels, seed {seed}", random_placement_dag,
                given, tight=bool(tight))


def _random_kernel(d: Design, rng, name: str, profile: str, lut: float) -> None:
    ff = lut * rng.uniform(1.2, 2.2)
    dsp = lut / rng.lognormal(np.log(120), 0.4) if profile == "dsp" else float(rng.integers(0, 3))
    if profile == "memory":
        bram = lut / rng.lognormal(np.log(300), 0.5)
        uram = lut / rng.lognormal(np.log(1500), 0.5) if rng.random() < 0.3 else 0.0
        buffers = [("buf", int(rng.choice((32, 64, 128, 256))), 1.0)] if rng.random() < 0.5 else []
    else:
        bram, uram, buffers = float(rng.integers(0, 3)), 0.0, []
    d.add(name, profile, lut, ff, dsp, bram, uram, buffers=buffers)


# == infeasible instances =========================================================================

INFEASIBLE_KINDS = ("kernel", "total", "pins")


def infeasible_placement(kind: str = "kernel", n_kernels: int = 20, seed: int = 0, platform: str | dict = "u280",
                         max_utilization: float = 0.7) -> dict:
    """A placement instance that no assignment satisfies; the description states why.

    ``kernel``: one kernel needs 1.25x the DSPs of the largest whole slot. ``total``: the LUTs
    of all kernels are 1.1x ``max_utilization`` of the platform's LUTs. ``pins``: the largest
    kernels are pinned to the first HBM slot until their LUTs are 1.15x its limit (the platform as a
    whole has room). Built from :func:`random_placement_dag` at utilisation 0.4.

    >>> inst = infeasible_placement("total", n_kernels=8)
    >>> inst["name"], inst["description"].startswith("INFEASIBLE")
    ('infeasible-total-n8-s0', True)
    """
    if kind not in INFEASIBLE_KINDS:
        raise InstanceError(f"infeasible_placement kind: expected one of {', '.join(INFEASIBLE_KINDS)}, "
                            f"got {kind!r}")
    inst = random_placement_dag(n_kernels, seed, platform, 0.4, max_utilization)
    geo = platform_geometry(platform)
    kernels = inst["graph"]["kernels"]
    compute = [k for k in kernels if not k["op"].startswith("dma")] or kernels
    if kind == "kernel":
        big = max(compute, key=lambda k: (k["resources"]["dsp"], k["name"]))
        cap = int(geo.caps[:, RESOURCES.index("dsp")].max())
        big["resources"]["dsp"] = math.ceil(1.25 * cap)
        why = (f"kernel {big['name']} needs {big['resources']['dsp']} DSPs, more than any slot has "
               f"({cap}; {max_utilization:g} of it = {max_utilization * cap:g} may be used)")
    elif kind == "total":
        luts = np.array([k["resources"]["lut"] for k in kernels], dtype=float)
        limit = max_utilization * float(geo.caps[:, 0].sum())
        for k, v in zip(kernels, apportion(luts * 1.1 * limit / luts.sum()).tolist()):
            k["resources"]["lut"] = max(int(v), 1)
        total = sum(k["resources"]["lut"] for k in kernels)
        why = f"the kernels need {total} LUTs in all, above {max_utilization:g} x {geo.caps[:, 0].sum():g} = {limit:g}"
    else:
        why = _overload_pins(inst, geo, compute, max_utilization)
    inst["name"] = f"infeasible-{kind}-n{n_kernels}-s{seed}" + _params_suffix(
        {"platform": platform, "max_utilization": max_utilization},
        {"platform": "u280", "max_utilization": 0.7})
    inst["description"] = (f"INFEASIBLE ({kind}): {why}. Otherwise a random placement DAG of {n_kernels} kernels, "
                           f"seed {seed}, scaled to utilisation 0.4")
    return inst


def _overload_pins(inst: dict, geo: Geometry, compute: list, max_utilization: float) -> str:
    slot = geo.names[geo.hbm[0]]
    pins = inst["options"]["placement"]["pins"]
    cap = float(geo.caps[geo.hbm[0], 0])
    limit = max_utilization * cap
    pinned = sum(k["resources"]["lut"] for k in inst["graph"]["kernels"] if pins.get(k["name"]) == slot)
    goal = 1.15 * limit
    for k in sorted(compute, key=lambda k: (-k["resources"]["lut"], k["name"])):
        if pinned >= goal:
            break
        pins[k["name"]] = slot
        pinned += k["resources"]["lut"]
    if pinned < goal:                      # too few kernels: grow the largest pinned one
        big = max(compute, key=lambda k: (k["resources"]["lut"], k["name"]))
        big["resources"]["lut"] += math.ceil(goal - pinned)
        pinned = math.ceil(goal)
    names = sorted(k for k, s in pins.items() if s == slot)
    return (f"the kernels pinned to {slot} ({', '.join(names)}) need {pinned} LUTs, above its limit "
            f"{max_utilization:g} x {cap:g} = {limit:g}")


# == transformer blocks ===========================================================================

def transformer_placement(model: str = "gpt2", seq_len: int = 128, tile: int = 64, platform: str | dict = "u280",
                          dtype: str = "f32", max_utilization: float = 0.8, balance_weight: float = 0.0,
                          channel_bits: int = 512) -> dict:
    """One decoder layer of :func:`dfopt.bench.transformer.transformer_block` as a placement
    instance on ``platform``, with its ``*_in`` / ``*_out`` DMA kernels pinned at the HBM.

    The block's streams carry whole tiles (a 64 x 64 f32 tile is 131072 bits), wider than any SLR
    crossing; here each becomes a hardware channel of ``min(tile bits, channel_bits)`` wires whose
    ``tokens`` are channel beats (tiles x beats per tile). The itensor types (a fusion concern)
    are dropped; kernel resources, loops and timing are the block's (timing stays per tile).
    Resources are not scaled. Raises :class:`InstanceError` when the hidden assignment does not fit.

    >>> inst = transformer_placement("gpt2")
    >>> inst["options"]["placement"]["pins"]
    {'x_in': 'SLR0', 'y_out': 'SLR0'}
    >>> max(s["width"] for s in inst["graph"]["streams"]), fits(inst, witness_assignment(inst))
    (512, True)
    """
    from dfopt.bench.transformer import transformer_block
    from dfopt.ir.itensor import ITensorType

    check_count("channel_bits", channel_bits)
    check_target(Target(platform, 1.0, max_utilization, balance_weight))
    inst = transformer_block(model, seq_len, tile, dtype, None, problem="placement")
    geo = platform_geometry(platform)
    for s in inst["graph"]["streams"]:
        src = ITensorType.from_dict(s.pop("src_type"))
        s.pop("dst_type")
        width = min(src.token_bits, channel_bits)
        s.update(tokens=src.tokens * -(-src.token_bits // width), width=width)
    dma = [k["name"] for k in inst["graph"]["kernels"] if k["name"].endswith(("_in", "_out"))]
    pins = {k: geo.names[geo.hbm[i % len(geo.hbm)]] for i, k in enumerate(dma)}
    inst["options"] = {"placement": {"max_utilization": max_utilization, "balance_weight": balance_weight,
                                     "pins": pins}}
    inst["platform"] = platform
    inst["name"] = f"{inst['name']}-{platform if isinstance(platform, str) else 'inline'}"
    res = [[k["resources"].get(r, 0) for r in RESOURCES] for k in inst["graph"]["kernels"]]
    where = platform if isinstance(platform, str) else "inline platform"
    inst["description"] = (inst["description"].rsplit(";", 1)[0] + f". Placement: streams as "
                           f"{channel_bits}-bit channels, DMA kernels pinned at the HBM; uses "
                           f"{usage_text(res, geo.caps)} of the {where} (limit {max_utilization:g} per slot).")
    if not fits(inst, witness_assignment(inst)):
        raise InstanceError(f"transformer_placement: no feasible assignment found for {model!r} on "
                            f"{platform!r} at max_utilization {max_utilization:g}; raise it or use a "
                            "smaller tile")
    return inst
