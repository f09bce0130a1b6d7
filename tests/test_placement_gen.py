"""Placement instance generators (dfopt.bench.placement_gen) and benchmarks/make_placement_instances.py.

Feasibility and infeasibility are recounted here from the instance dicts and the platform presets,
without the generator's own checker and without a solver.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.bench.generators import generate
from dfopt.bench.placement_gen import (
    INFEASIBLE_KINDS,
    infeasible_placement,
    pagerank,
    random_placement_dag,
    stencil_chain,
    systolic_array,
    transformer_placement,
    witness_assignment,
)
from dfopt.errors import InstanceError
from dfopt.instance import from_dict
from dfopt.ir.memory import memory_cost
from dfopt.ir.platform import load_preset

ROOT = Path(__file__).resolve().parents[1]
PLACEMENT = ROOT / "instances" / "placement"
KINDS = ("lut", "ff", "dsp", "bram", "uram")

SMALL = {
    "systolic": lambda **kw: systolic_array(rows=4, cols=3, **kw),
    "stencil": lambda **kw: stencil_chain(stages=5, **kw),
    "pagerank": lambda **kw: pagerank(pes=4, **kw),
    "random": lambda **kw: random_placement_dag(25, **kw),
}
FEASIBLE = {
    **{f"{name}-s1": (lambda fn=fn: fn(seed=1)) for name, fn in SMALL.items()},
    "random-tight": lambda: random_placement_dag(40, 2, tight=1),
    "random-u55c": lambda: random_placement_dag(30, 3, platform="u55c"),
    "systolic-grid": lambda: systolic_array(rows=6, cols=4, platform="u280_grid"),
    "pagerank-grid": lambda: pagerank(pes=6, seed=2, platform="u280_grid", utilization=0.5),
    "stencil-no-groups": lambda: stencil_chain(stages=4, seed=3, same_slot=0),
    "random-own-bram": lambda: random_placement_dag(30, 4, buffers_in_bram=0),
    "gpt2-block": lambda: transformer_placement("gpt2"),
}


# == independent recounts ======================================================================

def _slots(inst: dict) -> dict:
    return {s.name: s for s in load_preset(inst["platform"]).slots}


def _usage(inst: dict, slot_of: dict) -> dict:
    used = {s: dict.fromkeys(KINDS, 0) for s in _slots(inst)}
    for k in inst["graph"]["kernels"]:
        for r in KINDS:
            used[slot_of[k["name"]]][r] += k["resources"].get(r, 0)
        used[slot_of[k["name"]]]["bram"] += sum(memory_cost("bram18", b["width"], b["depth"]) for b in k.get("buffers", []))
    return used


def _line_wires(inst: dict, slot_of: dict) -> list:
    """(crossing width, wires of the links crossing the line) per line between slot rows/columns."""
    platform, slots = load_preset(inst["platform"]), _slots(inst)
    out = []
    for axis in ("x", "y"):
        coord = {n: getattr(s, axis) for n, s in slots.items()}
        for lo in sorted(set(coord.values()))[:-1]:
            links = [lk.wires for lk in platform.links if (coord[lk.a] <= lo) != (coord[lk.b] <= lo)]
            width = sum(s["width"] for s in inst["graph"]["streams"]
                        if (coord[slot_of[s["src"]]] <= lo) != (coord[slot_of[s["dst"]]] <= lo))
            out.append((width, sum(links) if links else None))
    return out


def _faults(inst: dict, slot_of: dict) -> list:
    opts, slots = inst["options"]["placement"], _slots(inst)
    limit = opts["max_utilization"]
    bad = [(s, r) for s, used in _usage(inst, slot_of).items() for r in KINDS
           if used[r] > limit * slots[s].resources.get(r, 0) + 1e-9]
    bad += [("pin", k) for k, s in opts.get("pins", {}).items() if slot_of[k] != s]
    bad += [("group", tuple(g)) for g in opts.get("same_slot", []) if len({slot_of[k] for k in g}) > 1]
    bad += [("wires", w) for w, cap in _line_wires(inst, slot_of) if cap is not None and w > cap]
    return bad


def _share(inst: dict) -> dict:
    """Each resource's total (buffers in BRAM18) as a share of the platform's."""
    platform = load_preset(inst["platform"])

    def need(k, r):
        bufs = sum(memory_cost("bram18", b["width"], b["depth"]) for b in k.get("buffers", [])) if r == "bram" else 0
        return k["resources"].get(r, 0) + bufs

    return {r: sum(need(k, r) for k in inst["graph"]["kernels"]) / platform.total(r) for r in KINDS}


# == determinism, validity, resources ==========================================================

@pytest.mark.parametrize("name", sorted(SMALL))
def test_same_seed_same_instance_and_other_seed_differs(name):
    fn = SMALL[name]
    assert fn(seed=3) == fn(seed=3)
    assert fn(seed=3)["graph"] != fn(seed=4)["graph"]
    json.dumps(fn(seed=3))                          # plain JSON types only


@pytest.mark.parametrize("name", sorted(FEASIBLE))
def test_generated_instances_load_and_have_positive_resources(name):
    inst = FEASIBLE[name]()
    loaded = from_dict(inst)
    assert loaded.problem == "placement" and len(loaded.graph.kernels) == len(inst["graph"]["kernels"])
    for k in inst["graph"]["kernels"]:
        res = k["resources"]
        assert res["lut"] >= 1 and res["ff"] >= 1, k["name"]
        assert all(res.get(r, 0) >= 0 for r in KINDS), k["name"]
    assert all(32 <= s["width"] <= 512 for s in inst["graph"]["streams"])


@pytest.mark.parametrize("name", sorted(FEASIBLE))
def test_the_hidden_assignment_is_feasible(name):
    inst = FEASIBLE[name]()
    assert _faults(inst, witness_assignment(inst)) == []


def test_dma_kernels_are_pinned_at_the_hbm():
    grid = systolic_array(rows=3, cols=2, platform="u280_grid")
    assert grid["options"]["placement"]["pins"] == {"dma_in": "SLR0_X0", "dma_w": "SLR0_X1", "dma_out": "SLR0_X0"}
    inst = random_placement_dag(80, 1)
    dma = {k["name"] for k in inst["graph"]["kernels"] if k["op"].startswith("dma")}
    assert dma == set(inst["options"]["placement"]["pins"]) and len(dma) == 3
    assert set(inst["options"]["placement"]["pins"].values()) == {"SLR0"}


def test_buffers_are_left_out_of_the_kernel_bram_unless_asked_otherwise():
    whole, own = systolic_array(rows=3, cols=3, seed=5, buffers_in_bram=1), systolic_array(rows=3, cols=3, seed=5)
    buffered = 0
    for a, b in zip(whole["graph"]["kernels"], own["graph"]["kernels"]):
        cost = sum(memory_cost("bram18", buf["width"], buf["depth"]) for buf in a.get("buffers", []))
        assert a.get("buffers") == b.get("buffers") and cost <= a["resources"]["bram"]
        assert b["resources"]["bram"] == a["resources"]["bram"] - cost
        buffered += bool(cost)
    assert buffered >= 9                            # every PE has a weight buffer


# == utilisation =================================================================================

@pytest.mark.parametrize("fn", [lambda u: random_placement_dag(60, 1, utilization=u),
                                lambda u: systolic_array(rows=13, cols=4, utilization=u),
                                lambda u: pagerank(pes=8, seed=2, utilization=u)], ids=["random", "systolic", "pagerank"])
def test_the_dominant_resource_totals_the_utilization_and_totals_scale(fn):
    low, high = _share(fn(0.2)), _share(fn(0.4))
    assert max(low.values()) == pytest.approx(0.2, abs=1e-3)
    assert max(high.values()) == pytest.approx(0.4, abs=1e-3)
    for r in KINDS:
        assert high[r] == pytest.approx(2 * low[r], rel=0.05, abs=2e-3), r


def test_tight_instances_fill_every_resource_near_the_limit():
    inst = random_placement_dag(60, 7, tight=1)
    assert inst["name"] == "placement-n60-s7-tight"
    slots, limit = _slots(inst), inst["options"]["placement"]["max_utilization"]
    used = _usage(inst, witness_assignment(inst))
    for r in KINDS:
        fullest = max(used[s][r] / (limit * slots[s].resources[r]) for s in slots)
        assert 0.8 <= fullest <= 0.9 + 1e-9, r
    assert max(_share(inst).values()) > 0.8 * limit


# == infeasible instances ======================================================================

@pytest.mark.parametrize("kind", INFEASIBLE_KINDS)
def test_infeasible_instances_exceed_what_they_claim(kind):
    inst = infeasible_placement(kind, n_kernels=15, seed=2)
    from_dict(inst)
    assert inst["description"].startswith(f"INFEASIBLE ({kind})")
    kernels, slots = inst["graph"]["kernels"], _slots(inst)
    limit = inst["options"]["placement"]["max_utilization"]
    total_lut = sum(s.resources["lut"] for s in slots.values())
    if kind == "kernel":
        assert any(k["resources"]["dsp"] > max(s.resources["dsp"] for s in slots.values()) for k in kernels)
    elif kind == "total":
        assert sum(k["resources"]["lut"] for k in kernels) > limit * total_lut
    else:
        pins = inst["options"]["placement"]["pins"]
        assert set(pins.values()) == {"SLR0"}
        pinned = sum(k["resources"]["lut"] for k in kernels if k["name"] in pins)
        assert pinned > limit * slots["SLR0"].resources["lut"]
        assert sum(k["resources"]["lut"] for k in kernels) < limit * total_lut   # the device has room
    assert _faults(inst, witness_assignment(inst))


# == registry, transformer, arguments =========================================================

def test_generator_specs():
    assert generate("placement_random:n=12,seed=2") == random_placement_dag(12, 2)
    assert generate("placement_random:n=12,seed=2,tight=1")["name"] == "placement-n12-s2-tight"
    assert generate("systolic:rows=3,cols=2,utilization=0.3") == systolic_array(3, 2, utilization=0.3)
    assert generate("stencil:stages=4,seed=1,max_lanes=3") == stencil_chain(4, 1, max_lanes=3)
    assert generate("pagerank:pes=3,seed=1") == pagerank(3, 1)
    assert generate("pagerank:pes=3,seed=1,utilization=0.3")["name"].startswith("pagerank-3-s1-h")


def test_transformer_placement_drops_the_tile_types():
    inst = transformer_placement("llama", platform="u280_grid")
    assert set(inst["options"]) == {"placement"}
    assert inst["options"]["placement"]["pins"] == {"x_in": "SLR0_X0", "y_out": "SLR0_X1"}
    assert all("src_type" not in s and s["width"] == 512 for s in inst["graph"]["streams"])
    assert _faults(inst, witness_assignment(inst)) == []


@pytest.mark.parametrize("call, match", [
    (lambda: systolic_array(rows=0), "rows"),
    (lambda: pagerank(utilization=1.5), "utilization"),
    (lambda: stencil_chain(max_utilization=0), "max_utilization"),
    (lambda: random_placement_dag(1), "n_kernels"),
    (lambda: infeasible_placement("nope"), "kernel, total, pins"),
    (lambda: random_placement_dag(10, platform="npu1"), "no slots"),
])
def test_bad_arguments_are_instance_errors(call, match):
    with pytest.raises(InstanceError, match=match):
        call()


# == random small instances ====================================================================

@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 30), seed=st.integers(0, 2**32 - 1), utilization=st.floats(0.05, 0.9),
       tight=st.booleans(), platform=st.sampled_from(["u280", "u55c", "u280_grid"]))
def test_random_dags_are_valid_and_feasible(n, seed, utilization, tight, platform):
    inst = random_placement_dag(n, seed, platform=platform, utilization=utilization, tight=int(tight))
    from_dict(inst)
    assert len(inst["graph"]["kernels"]) == n
    assert _faults(inst, witness_assignment(inst)) == []
    if not tight:
        assert max(_share(inst).values()) <= utilization + 1e-3


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["systolic", "stencil", "pagerank"]), size=st.integers(1, 5),
       seed=st.integers(0, 1000), utilization=st.floats(0.05, 0.7))
def test_designs_are_valid_and_feasible(kind, size, seed, utilization):
    if kind == "systolic":
        inst = systolic_array(rows=size, cols=6 - size, seed=seed, utilization=utilization)
    elif kind == "stencil":
        inst = stencil_chain(stages=size, seed=seed, utilization=utilization)
    else:
        inst = pagerank(pes=size, seed=seed, utilization=utilization)
    from_dict(inst)
    assert _faults(inst, witness_assignment(inst)) == []


# == shipped files =============================================================================

def _maker():
    spec = importlib.util.spec_from_file_location("make_placement_instances",
                                                  ROOT / "benchmarks" / "make_placement_instances.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_files_are_shipped():
    maker = _maker()
    for name in maker.INSTANCES:
        path = PLACEMENT / f"{name}.json"
        assert path.stat().st_size < 300_000, name
        shipped = json.loads(path.read_text())
        assert shipped == maker.build(name), f"{path} is stale; run benchmarks/make_placement_instances.py"
        from_dict(shipped)
        assert (_faults(shipped, witness_assignment(shipped)) != []) == name.startswith("infeasible-"), name
