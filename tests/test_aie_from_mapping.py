"""MLIR-AIE designs from solved mappings: every shipped ``problem: mapping`` instance, solved once
per module with the default ``search`` formulation, becomes a design that validates against its
platform preset, whose generic MLIR parses with xDSL and says what the design says, and whose
structure follows the mapping (cores, stream FIFOs, DMA channels, broadcasts, host transfers);
the CLI writes both MLIR files; a mapping that no design can express raises CodegenError.
"""

from __future__ import annotations

import copy
import functools
import math
import subprocess
import sys
from pathlib import Path

import pytest

from dfopt.api import solve_instance
from dfopt.codegen.aie import DmaTransfer, DmaWait, emit_generic_mlir, problems
from dfopt.codegen.aie.design import dma_channels
from dfopt.codegen.aie.emit import emit_mlir
from dfopt.codegen.aie.mapping import design_from_mapping
from dfopt.codegen.aie.mapping import flows as mapping_flows
from dfopt.codegen.aie.mapping import host as mapping_host
from dfopt.errors import CodegenError
from dfopt.instance import load
from dfopt.models.mapping import section
from dfopt.models.mapping.data import mapping_data
from dfopt.models.mapping.evaluate import evaluate
from dfopt.models.mapping.route import route
from dfopt.solution import Solution
from test_aie_codegen import parse_generic, summarize_design, summarize_generic

ROOT = Path(__file__).resolve().parents[1]
NAMES = sorted(p.stem for p in (ROOT / "instances" / "mapping").glob("*.json"))


@functools.cache
def solved(name: str):
    """(instance, solution, design) of a shipped mapping instance, solved once per module."""
    instance = load(ROOT / "instances" / "mapping" / f"{name}.json")
    solution = solve_instance(instance)
    return instance, solution, design_from_mapping(instance, solution)


@pytest.fixture(params=NAMES)
def case(request):
    return solved(request.param)


def _tile(t) -> tuple:
    return tuple(t)


# -- validity and MLIR ------------------------------------------------------------------------------

def test_every_instance_has_a_mapping():
    assert len(NAMES) >= 6


def test_design_validates(case):
    _, _, design = case
    assert problems(design) == []


def test_generic_mlir_parses_with_xdsl_and_matches_the_design(case):
    _, _, design = case
    module = parse_generic(emit_generic_mlir(design))  # skips without xDSL
    assert summarize_generic(module) == summarize_design(design)


# -- the structure follows the mapping --------------------------------------------------------------

def test_one_core_per_physical_node_tile(case):
    _, solution, design = case
    nodes = solution.sections["mapping"]["nodes"]
    assert sorted(c.tile for c in design.cores) == sorted(_tile(n["tile"]) for n in nodes)
    for n in nodes:
        core = next(c for c in design.cores if c.tile == _tile(n["tile"]))
        factor = len(n["members"]) // len(n["tasks"])
        if core.steps:                       # a program in the members' op order: its calls
            assert core.iterations == core.calls()
        else:                                # the bundle factor, or that many members in steps
            assert core.iterations % factor == 0
        assert core.kernel.startswith("_".join(n["tasks"])) and core.object_file == f"{core.kernel}_{core.tile[0]}_{core.tile[1]}.o"


def _reaches(design, src: tuple, dst: tuple) -> bool:
    """Some FIFO produced by a core on ``src`` ends on ``dst``, directly or through one link."""
    fifos = {f.name: f for f in design.fifos}
    for f in design.fifos:
        if f.producer != src:
            continue
        link = design.link_of(f.name)
        ends = [f] if link is None else [fifos[n] for n in link.outputs]
        if any(dst in g.consumers for g in ends):
            return True
    return False


def test_every_inter_tile_stream_reaches_its_consumer_tile(case):
    instance, solution, design = case
    where = {v: _tile(n["tile"]) for n in solution.sections["mapping"]["nodes"] for v in n["members"]}
    crossing = [s for s in instance.graph.streams.values() if where[s.src] != where[s.dst]]
    for s in crossing:
        assert _reaches(design, where[s.src], where[s.dst]), s.name
    produced = {(c.tile, a.fifo) for c in design.cores for a in c.accesses if a.port == "produce"}
    consumed = {(c.tile, a.fifo) for c in design.cores for a in c.accesses if a.port == "consume"}
    for f in design.fifos:  # every FIFO end on a core's tile is accessed by that core
        cores = {c.tile for c in design.cores}
        assert f.producer not in cores or (f.producer, f.name) in produced
        assert all((t, f.name) in consumed for t in f.consumers if t in cores)


def test_dma_channels_per_compute_tile_equal_the_mappings(case):
    _, solution, design = case
    use = dma_channels(design)
    for n in solution.sections["mapping"]["nodes"]:
        got = use[_tile(n["tile"])]
        assert (len(got["in"]), len(got["out"])) == (len(n["channels"]["in"]), len(n["channels"]["out"])), n["tile"]
        assert len(got["in"]) <= 2 and len(got["out"]) <= 2


def test_broadcast_routes_are_one_fifo_with_several_consumers(case):
    _, solution, design = case
    routes = [r for r in solution.sections["mapping"]["routes"] if r["dir"] == "in"]
    for r in routes:
        assert len(_route_fifos(design, r)) == 1, r
    assert any(len(r["tiles"]) > 1 for r in routes) == any(len(f.consumers) > 1 for f in design.fifos)


def test_runtime_moves_every_tensor_through_its_shim_fifos(case):
    _, solution, design = case
    routes = solution.sections["mapping"]["routes"]
    rt = design.runtime
    assert sorted(b.name for b in rt.buffers) == sorted({r["tensor"] for r in routes})
    kinds = {t.coord: t.kind for t in design.tiles}
    shim_in = {f.name for f in design.fifos if kinds[f.producer] == "shim"}
    shim_out = {f.name for f in design.fifos if any(kinds[c] == "shim" for c in f.consumers)}
    transfers = [op for op in rt.ops if isinstance(op, DmaTransfer)]
    assert {op.fifo for op in transfers} == shim_in | shim_out
    assert [op.fifo for op in rt.ops if isinstance(op, DmaWait)] == [f.name for f in design.fifos if f.name in shim_out]
    buffers = {b.name: b for b in rt.buffers}
    moved = {}
    for op in transfers:
        moved[op.fifo] = moved.get(op.fifo, 0) + op.elements * (4 if buffers[op.buffer].dtype == "i32" else 1)
    for name, n in moved.items():  # each shim FIFO moves the bytes of its routes' blocks (a hull: at least)
        link = design.link_of(name)
        parts = link.outputs if name in link.inputs else link.inputs
        want = sum(_route_bytes(r) for r in routes if set(_route_fifos(design, r)) & set(parts))
        assert n >= want and n % design.fifo(name).element_bytes == 0


def _route_bytes(route: dict) -> int:
    return len(route["blocks"]) * route["block_bytes"]


def _route_fifos(design, route: dict) -> list[str]:
    """The FIFOs between the route's mem tile and its tiles, in its direction."""
    mem, tiles = _tile(route["mem"]), tuple(map(_tile, route["tiles"]))
    ends = (mem, set(tiles)) if route["dir"] == "in" else (tiles[0], {mem})
    return [f.name for f in design.fifos if (f.producer, set(f.consumers)) == ends]


# -- the CLI ----------------------------------------------------------------------------------------

def test_cli_emit_dir_writes_both_mlir_files(tmp_path):
    out = tmp_path / "mlir"
    path = ROOT / "instances" / "mapping" / "ffn-2x4.json"
    run = subprocess.run([sys.executable, "-m", "dfopt.cli", "solve", str(path), "--emit-dir", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    custom, generic = out / "ffn-2x4.mlir", out / "ffn-2x4.generic.mlir"
    assert f"MLIR-AIE written to {custom} and {generic}" in run.stdout
    assert "aie.device(npu1)" in custom.read_text() and '"aie.device"()' in generic.read_text()
    parse_generic(generic.read_text())


# -- what no design expresses -----------------------------------------------------------------------

def test_a_host_channel_without_route_raises():
    instance, solution, _ = solved("attention-4x4")
    edited = copy.deepcopy(solution)
    dropped = edited.sections["mapping"]["routes"].pop(0)
    with pytest.raises(CodegenError, match=rf"host channel\(s\) without a route: tile\({dropped['tiles'][0][0]},"
                                           rf"{dropped['tiles'][0][1]}\) .* {dropped['tensor']}"):
        design_from_mapping(instance, edited)


def _hand_mapping(instance, assign: dict) -> Solution:
    """A solution holding the mapping ``assign`` (virtual node -> tile), routed even if it breaks a rule."""
    d = mapping_data(instance)
    ev = evaluate(d, assign)
    routes, why = route(d, ev.host)
    assert routes is not None, why
    return Solution(instance=instance.name, problem="mapping", status="feasible",
                    sections={"mapping": section(d, ev, routes)})


def test_bundles_of_different_sizes_on_one_tile_raise():
    """A mapping whose tile (1,3) chains one gemm0 with two softmax members: no single loop runs one
    member of every bundle per iteration, so the mapping's rules refuse it and so does the design."""
    instance = load(ROOT / "instances" / "mapping" / "attention-4x4.json")
    assign = {"gemm0_3": (1, 3), "softmax_2": (1, 3), "softmax_3": (1, 3), "gemm1_2": (1, 2), "gemm1_3": (1, 4),
              "softmax_0": (2, 3), "gemm1_0": (2, 2), "softmax_1": (3, 3), "gemm1_1": (3, 2), "gemm0_0": (0, 2),
              "gemm0_1": (3, 4), "gemm0_2": (0, 4), "send_q_0": (0, 5), "send_q_1": (2, 4), "send_q_2": (2, 5),
              "send_q_3": (0, 3)}
    with pytest.raises(CodegenError, match=r"breaks its own rules.*tile\(1,3\): bundles of different sizes "
                                           r"\(1 x gemm0, 2 x softmax\)"):
        design_from_mapping(instance, _hand_mapping(instance, assign))


def test_a_mapping_that_breaks_its_rules_raises():
    instance, solution, _ = solved("ffn-2x4")
    edited = copy.deepcopy(solution)
    edited.sections["mapping"]["nodes"][0]["tile"] = [4, 2]  # outside the region's columns
    with pytest.raises(CodegenError, match=r"the mapping breaks its own rules.*outside the region"):
        design_from_mapping(instance, edited)


def test_not_a_mapping_solution_raises():
    instance, _, _ = solved("ffn-2x4")
    with pytest.raises(CodegenError, match="needs a solved problem: mapping solution"):
        design_from_mapping(instance, Solution(instance=instance.name, problem="mapping", status="error"))


# -- helpers -------------------------------------------------------------------------------------

def test_access_patterns():
    pattern = mapping_host._pattern
    assert pattern([(0, 8), (32, 8), (8, 8), (40, 8)]) == ((0, 0, 0, 0), (1, 2, 2, 8), (0, 8, 32, 1))
    assert pattern([(16, 4), (16, 4)]) == ((0, 0, 0, 16), (2, 1, 1, 4), (0, 0, 0, 1))  # outermost repeat
    assert pattern([(0, 4), (8, 4), (16, 4), (32, 4)]) is None  # blocks 0, 2, 4, 8
    assert pattern([(0, 4), (4, 4), (4, 4)]) is None  # an inner repeat


def test_depth_bound_avoids_deadlock():
    fifo = mapping_flows._Fifo("f", (0, 2), ((0, 3),), 0, counts={(0, 2): 2, (0, 3): 3})
    assert mapping_flows._depth_bound(fifo) == 4 == 2 + 3 - math.gcd(2, 3)


@pytest.mark.slow
def test_the_exact_models_answer_has_a_design_too():
    """The exact model may pair instances the search would not (a task's bundle with another
    block's instances); the equal-bundle-size rule keeps its answers expressible as one core loop."""
    instance = load(ROOT / "instances" / "mapping" / "attention-2x4.json")
    solution = solve_instance(instance, formulation="cpsat", time_limit=30)
    design = design_from_mapping(instance, solution)
    assert problems(design) == []
    assert len(design.cores) == solution.sections["mapping"]["tiles_used"]
    use = dma_channels(design)       # never fewer channels than counted; more where ends fan out and in
    more = False
    for n in solution.sections["mapping"]["nodes"]:
        got = use[tuple(n["tile"])]
        assert len(got["in"]) >= len(n["channels"]["in"]) and len(got["out"]) >= len(n["channels"]["out"])
        more |= (len(got["in"]), len(got["out"])) != (len(n["channels"]["in"]), len(n["channels"]["out"]))
    fanned = [n for n in design.notes if "fan out and in at once" in n]
    assert more == bool(fanned)      # the design says where it takes more channels than counted
    assert all(f"// note: {n}" in emit_mlir(design) for n in fanned)
