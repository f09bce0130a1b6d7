"""Memory binding: buffer geometry, heuristic <= exact == brute force, the checker, errors, CLI."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt.api import check_solution, solve_instance
from dfopt.cli import main
from dfopt.errors import InfeasibleError, InstanceError, NoSolutionError
from dfopt.instance import from_dict, load
from dfopt.ir.graph import Buffer, DataflowGraph, Kernel, Stream
from dfopt.ir.memory import KIND_RESOURCE, memory_cost, memory_options
from dfopt.models.memory import graph_buffers
from dfopt.solution import Solution

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances" / "memory"
RESOURCES = ("lut", "ff", "bram", "uram")
FIG5 = {"src_type": {"dtype": "f32", "shape": [8, 8], "element": [4, 2], "tripcounts": [4, 2],
                     "steps": [2, 4], "map": [1, 0]},
        "dst_type": {"dtype": "f32", "shape": [8, 8], "element": [4, 2], "tripcounts": [4, 2, 2],
                     "steps": [2, 1, 4], "map": [2, 0]}}


def instance(kernels, streams=(), slots=None, options=None, platform=None, name="t"):
    d = {"format": "dfopt-instance/1", "name": name, "problem": "memory",
         "platform": platform or {"name": "p", "kind": "fpga", "slots": slots},
         "graph": {"kernels": list(kernels), "streams": list(streams)}}
    if options:
        d["options"] = {"memory": options}
    return from_dict(d)


# == geometry =================================================================================

def test_graph_buffers_keys_owners_and_geometry():
    from dfopt.instance.common import _itensor_from_dict

    g = DataflowGraph(
        [Kernel("a", buffers=(Buffer("acc", 32, 1024), Buffer("w", 512, 4096))), Kernel("b")],
        [Stream("e0", "a", "b", tokens=8, width=64, depth=2),
         Stream("e1", "a", "b", tokens=8, width=16, depth=300),
         Stream("e2", "a", "b", tokens=8, width=16),                       # no depth: no FIFO
         Stream("e3", "a", "b", tokens=8, width=256, converter_bytes=1000),  # explicit converter
         Stream("e4", "a", "b", tokens=8, width=256, src_type=_itensor_from_dict(FIG5["src_type"]),
                dst_type=_itensor_from_dict(FIG5["dst_type"]))])
    uses = {b.key: b for b in graph_buffers(g)}
    assert list(uses) == ["a.acc", "a.w", "fifo.e0", "fifo.e1", "conv.e3", "conv.e4"]
    assert uses["a.acc"].owner == "a" and uses["fifo.e1"].owner == "b" and uses["conv.e4"].owner == "b"
    assert uses["fifo.e0"].options == {"register": 128}                 # depth <= 2: registers only
    assert set(uses["fifo.e1"].options) == {"lutram", "bram18", "uram"}
    assert uses["conv.e3"].depth == 32                                   # ceil(1000 * 8 / 256)
    assert uses["conv.e4"].depth == 4                                    # fig. 5: 8x2 f32 x2 = 128 bytes
    w = uses["a.w"].options
    assert w == {"lutram": 32768, "bram18": 57.0, "uram": 8}          # 512x4096: 114 BRAM18 (2Kx9), 8 URAM
    assert all(c == memory_cost(k, 512, 4096) for k, c in w.items())


def test_duplicate_keys_name_both_origins():
    g = DataflowGraph([Kernel("fifo", buffers=(Buffer("e", 8, 64),)), Kernel("b")],
                      [Stream("e", "fifo", "b", tokens=4, depth=8)])
    with pytest.raises(InstanceError, match="buffer 'e' of kernel 'fifo' and the FIFO of stream 'e'"):
        graph_buffers(g)


# == heuristic <= exact == brute force ========================================================

def brute_force(inst) -> tuple[float, float] | None:
    """(least peak, least sum at that peak) over every binding of every memory, or None."""
    opts = inst.options.get("memory", {})
    mu = opts.get("max_utilization", 1.0)
    weights = {**{r: 1.0 for r in RESOURCES}, **opts.get("weights", {})}
    slots = {s.name: s.resources for s in inst.platform.slots}
    placement = opts.get("placement")
    if placement is None:
        if len(slots) > 1:
            slots = {"device": {r: sum(s.get(r, 0) for s in slots.values()) for r in RESOURCES}}
        placement = {k: next(iter(slots)) for k in inst.graph.kernels}
    caps = {s: {r: res.get(r, 0) * mu for r in RESOURCES} for s, res in slots.items()}
    uses = graph_buffers(inst.graph)
    found = []
    for combo in itertools.product(*[list(memory_options(b.width, b.depth, b.source == "fifo")) for b in uses]):
        used = {s: {r: 0.0 for r in RESOURCES} for s in caps}
        for k, kernel in inst.graph.kernels.items():
            for r in RESOURCES:
                used[placement[k]][r] += kernel.resources.get(r, 0)
        for b, kind in zip(uses, combo):
            used[placement[b.owner]][KIND_RESOURCE[kind]] += memory_cost(kind, b.width, b.depth, b.source == "fifo")
        if any(u > caps[s][r] + 1e-9 for s in used for r, u in used[s].items()):
            continue
        utils = [weights[r] * u / caps[s][r] for s in used for r, u in used[s].items() if caps[s][r] > 0]
        found.append((max(utils, default=0.0), sum(utils)))
    if not found:
        return None
    peak = min(p for p, _ in found)
    return peak, min(s for p, s in found if p <= peak + 1e-12)


@st.composite
def tiny_instances(draw):
    n_slots = draw(st.integers(1, 2))
    slots = [{"name": f"S{i}", "resources": {
        "lut": draw(st.sampled_from([300, 1000, 3000])), "ff": draw(st.sampled_from([400, 4000])),
        "bram": draw(st.sampled_from([1, 2, 4])), "uram": draw(st.sampled_from([0, 1, 2]))}}
        for i in range(n_slots)]
    kernels = []
    budget = 6
    for i in range(draw(st.integers(1, 3))):
        count = draw(st.integers(0, min(3, budget)))
        budget -= count
        kernels.append({"name": f"k{i}",
                        "resources": {"lut": draw(st.sampled_from([0, 100, 200])),
                                      "bram": draw(st.sampled_from([0, 0.5, 1]))},
                        "buffers": [{"name": f"b{j}", "width": draw(st.sampled_from([1, 8, 16, 32, 72])),
                                     "depth": draw(st.sampled_from([16, 64, 512, 1024, 2048]))}
                                    for j in range(count)]})
    streams = []
    for i in range(len(kernels) - 1):
        depth = draw(st.sampled_from([None, 1, 2, 16, 512]))
        if depth is not None and budget > 0:
            budget -= 1
            streams.append({"name": f"e{i}", "src": f"k{i}", "dst": f"k{i + 1}", "tokens": 16,
                            "width": draw(st.sampled_from([8, 32, 64])), "depth": depth})
    options = {}
    if n_slots == 2 and draw(st.booleans()):
        options["placement"] = {k["name"]: draw(st.sampled_from(["S0", "S1"])) for k in kernels}
    if draw(st.booleans()):
        options["max_utilization"] = 0.75
    if draw(st.booleans()):
        options["weights"] = {"bram": 2.0, "lut": 0.5}
    return instance(kernels, streams, slots, options)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_exact_matches_brute_force_and_heuristic_is_no_better(inst):
    best = brute_force(inst)
    if best is None:
        with pytest.raises(InfeasibleError):
            solve_instance(inst)
        return
    exact = solve_instance(inst, formulation="cpsat")
    assert exact.ok and exact.status == "optimal"
    assert exact.objective == pytest.approx(best[0], rel=1e-9, abs=1e-12)
    assert exact.bound == pytest.approx(exact.objective)
    assert exact.sections["memory"]["sum"] <= best[1] + 1e-5   # the sum is minimised in 1e-6 units
    mip = solve_instance(inst, formulation="mip")
    assert mip.ok and mip.objective == pytest.approx(exact.objective, rel=1e-9, abs=1e-12)
    try:
        heur = solve_instance(inst, formulation="heuristic")
    except NoSolutionError:
        return  # the heuristic overfilled a slot that the exact model fits
    assert heur.ok and heur.objective >= best[0] - 1e-12
    assert exact.sections["memory"]["heuristic"]["peak"] == pytest.approx(heur.objective)


def test_tight_instance_heuristic_is_worse_than_exact():
    inst = load(INSTANCES / "tight.json")
    heur = solve_instance(inst, formulation="heuristic")
    exact = solve_instance(inst)
    assert heur.objective == pytest.approx(5 / 6) and exact.objective == pytest.approx(4 / 6)
    assert exact.sections["memory"]["binding"] == {"k.a": "bram18", "k.b": "bram18", "k.c": "lutram"}


def test_register_fifos_have_no_choice_and_cpsat_equals_highs():
    inst = load(INSTANCES / "u55c-attention.json")
    a, b = solve_instance(inst, formulation="cpsat"), solve_instance(inst, formulation="mip", solver="highs")
    assert a.objective == pytest.approx(b.objective) and a.status == b.status == "optimal"
    sec = a.sections["memory"]
    assert sec["binding"]["fifo.x"] == sec["binding"]["fifo.y"] == "register"
    assert sec["owner"]["conv.qk"] == "attn" and sec["cost"]["fifo.x"] == 1024
    assert sec["sum"] <= sec["heuristic"]["sum"] + 1e-12


def test_pooled_device_without_placement():
    kernels = [{"name": "a", "resources": {"bram": 1000}, "buffers": [{"name": "t", "width": 32, "depth": 1024}]}]
    sol = solve_instance(instance(kernels, platform="u55c"))
    sec = sol.sections["memory"]
    assert sec["pooled"] and list(sec["slots"]) == ["device"] and sec["placement"] == {"a": "device"}
    assert sec["slots"]["device"]["bram"]["capacity"] == 3 * 672


def test_placement_and_weights_shift_the_binding():
    kernels = [{"name": "k", "buffers": [{"name": "t", "width": 32, "depth": 1024}]}]
    slots = [{"name": "A", "resources": {"lut": 2048, "bram": 2, "uram": 1}},
             {"name": "B", "resources": {"lut": 2048, "bram": 2, "uram": 1}}]
    inst = instance(kernels, slots=slots)
    sol = solve_instance(inst, placement={"k": "B"})
    assert sol.sections["memory"]["placement"] == {"k": "B"}
    assert sol.sections["memory"]["binding"] == {"k.t": "lutram"}        # 512/2048 LUTs beats 1/2 BRAM
    heavy = solve_instance(inst, placement={"k": "B"}, weights={"lut": 4})  # 4 x 512/2048 does not
    assert heavy.sections["memory"]["binding"] == {"k.t": "bram18"}


# == the checker ==============================================================================

@pytest.fixture(scope="module")
def tight():
    inst = load(INSTANCES / "tight.json")
    return inst, solve_instance(inst)


def damaged(solution, change) -> Solution:
    d = copy.deepcopy(solution.to_dict())
    change(d)
    return Solution.from_dict(d)


def failed(inst, sol) -> set[str]:
    return {c.name for c in check_solution(inst, sol) if not c.ok} - {"memory-record"}


def test_checker_accepts_the_solution(tight):
    assert failed(*tight) == set()


def test_checker_catches_a_wrong_kind(tight):
    inst, sol = tight
    bad = damaged(sol, lambda d: d["memory"]["binding"].update({"k.a": "register"}))
    assert failed(inst, bad) == {"memory-binding"}


def test_checker_catches_an_over_capacity_binding(tight):
    inst, sol = tight

    def both_in_uram(d):
        d["memory"]["binding"].update({"k.a": "uram", "k.b": "uram"})
        d["memory"]["cost"].update({"k.a": 1, "k.b": 1})
    assert "memory-capacity" in failed(inst, damaged(sol, both_in_uram))


def test_checker_catches_a_missing_buffer_and_an_unknown_one(tight):
    inst, sol = tight
    bad = damaged(sol, lambda d: d["memory"]["binding"].pop("k.c"))
    assert failed(inst, bad) == {"memory-binding"}
    bad = damaged(sol, lambda d: d["memory"]["binding"].update({"k.zz": "uram"}))
    assert failed(inst, bad) == {"memory-binding"}


def test_checker_catches_a_wrong_objective(tight):
    inst, sol = tight
    bad = damaged(sol, lambda d: d.update(objective=0.5, bound=0.5))
    assert failed(inst, bad) == {"memory-objective"}


# == infeasible and bad input =================================================================

def test_buffers_that_do_not_fit_together_name_slot_resource_need_and_capacity():
    with pytest.raises(InfeasibleError) as err:
        solve_instance(load(INSTANCES / "infeasible.json"))
    msg = str(err.value)
    assert "slot PL" in msg and "do not fit together" in msg
    assert "needs 1024 LUTs (kernels 0 + buffers 1024), capacity 1000" in msg
    assert err.value.culprits == ("PL", "lut")


def test_kernels_over_capacity_before_any_buffer():
    kernels = [{"name": "a", "resources": {"bram": 700}}, {"name": "b"}]
    inst = instance(kernels, platform="u55c",
                    options={"max_utilization": 0.8, "placement": {"a": "SLR0", "b": "SLR1"}})
    with pytest.raises(InfeasibleError, match=r"slot SLR0: kernels need 700 BRAM36 before any buffer, "
                                              r"capacity 672 x 0\.8 = 537\.6"):
        solve_instance(inst)


def test_one_buffer_that_fits_nowhere():
    kernels = [{"name": "a", "resources": {"lut": 900}, "buffers": [{"name": "t", "width": 32, "depth": 1024}]}]
    inst = instance(kernels, slots=[{"name": "S", "resources": {"lut": 1000, "bram": 0.5}}])
    with pytest.raises(InfeasibleError, match=r"slot S: kernel buffer a\.t .*fits in no memory kind.*"
                                              r"uram: the slot has no uram"):
        solve_instance(inst)


@pytest.mark.parametrize("placement, text", [
    ({"a": "SLR0", "b": "SLR1", "ghost": "SLR0"}, "placement/ghost: unknown kernel 'ghost'"),
    ({"a": "SLR9", "b": "SLR1"}, "placement/a: kernel a: unknown slot 'SLR9'"),
    ({"a": "SLR0"}, "placement: the placement leaves out kernel(s) b"),
])
def test_bad_placement_is_an_instance_error(placement, text):
    inst = instance([{"name": "a"}, {"name": "b"}], platform="u55c", options={"placement": placement})
    with pytest.raises(InstanceError) as err:         # set in the instance: the JSON pointer
        solve_instance(inst)
    assert "/options/memory/" + text in str(err.value)
    inst = instance([{"name": "a"}, {"name": "b"}], platform="u55c")
    with pytest.raises(InstanceError) as err:         # from Python: the keyword
        solve_instance(inst, placement=placement)
    key = text.split(":")[0].split("/")
    assert str(err.value).startswith("option placement" + "".join(f"[{k!r}]" for k in key[1:]))


def test_bad_weights_and_utilization_are_instance_errors():
    inst = instance([{"name": "a"}], platform="u55c")
    with pytest.raises(InstanceError, match=r"option weights\['dsp'\]: unknown field 'dsp'"):
        solve_instance(inst, weights={"dsp": 1})
    with pytest.raises(InstanceError, match="option max_utilization: expected a value <= 1, got 1.5"):
        solve_instance(inst, max_utilization=1.5)
    with pytest.raises(InstanceError, match="option placement: expected object"):
        solve_instance(inst, placement="{nope")


# == command line =============================================================================

def run(*args, capsys):
    code = main([str(a) for a in args])
    return code, capsys.readouterr()


@pytest.mark.parametrize("name", ["u55c-attention", "tight", "heuristic-overfills"])
def test_cli_solve_then_check(name, tmp_path, capsys):
    out = tmp_path / "sol.json"
    code, printed = run("solve", INSTANCES / f"{name}.json", "-o", out, capsys=capsys)
    assert code == 0 and "peak weighted utilisation" in printed.out
    code, printed = run("check", INSTANCES / f"{name}.json", out, capsys=capsys)
    assert code == 0 and "FAIL" not in printed.out
    assert json.loads(out.read_text())["memory"]["binding"]


def test_cli_exit_codes_for_infeasible_and_a_failing_heuristic(capsys):
    code, printed = run("solve", INSTANCES / "infeasible.json", capsys=capsys)
    assert code == 3 and "slot PL" in printed.err and "Traceback" not in printed.err
    code, printed = run("solve", INSTANCES / "heuristic-overfills.json", "--formulation", "heuristic", capsys=capsys)
    assert code == 4 and "use formulation cpsat" in printed.err


def test_cli_placement_flag_takes_json(capsys):
    code, printed = run("solve", INSTANCES / "u55c-attention.json", "--json", "--placement",
                        '{"load": "SLR0", "qkv": "SLR0", "attn": "SLR1", "proj": "SLR2", "store": "SLR1"}',
                        capsys=capsys)
    assert code == 0 and json.loads(printed.out)["memory"]["placement"]["store"] == "SLR1"


def test_bind_for_placement_adds_the_bound_blocks_to_their_owners():
    from dfopt.models.memory import bind_for_placement

    inst = load(INSTANCES / "u55c-attention.json")
    extra, binding = bind_for_placement(inst.graph, inst.platform)
    assert set(binding) == {b.key for b in graph_buffers(inst.graph)}
    assert binding["fifo.x"] == "register" and extra["qkv"]["ff"] >= 1024   # fifo.x belongs to qkv
    total = sum(v for per in extra.values() for v in per.values())
    assert total == sum(memory_cost(k, b.width, b.depth, b.source == "fifo") for b in graph_buffers(inst.graph)
                        for k in [binding[b.key]])
