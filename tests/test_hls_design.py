"""The shipped pipeline designs as Vitis would take them: solved, emitted, and run in both C
simulation models — dfopt's threaded runtime (``make csim``) and AMD's csim model of
``hls_stream.h`` from the tools folder (``make csim-vitis`` and the tool's own ``csim-vitis.sh``),
each against the NumPy reference. Beside the runs: the regions are in canonical order, every
stream element is one beat of at most 512 bits, the manifest says what the code does, the
compute loops' pragmas give the tiling stage's II, and link.cfg puts every m_axi port on a bank.

Every design is solved and emitted once per module and built in parallel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import hls_parse as P
from dfopt.api import solve_instance
from dfopt.codegen.hls.build import assign_banks
from dfopt.codegen.hls.region import Process, check_canonical
from dfopt.errors import CodegenError
from dfopt.instance import load
from dfopt.ir.itensor import DTYPE_BITS
from dfopt.ir.platform import load_preset
from dfopt.models.pipeline import emit
from dfopt.models.tiling.tiler import tile_graph
from tools import tool

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.stem for p in (ROOT / "instances" / "pipeline").glob("*.json"))
CXX, MAKE = shutil.which("g++"), shutil.which("make")
TIMEOUT = 900
pytestmark = pytest.mark.slow   # each design takes seconds of g++


@pytest.fixture(scope="module")
def designs(tmp_path_factory):
    """name -> (folder, instance, solution); the designs emitted, not built."""
    root = tmp_path_factory.mktemp("shipped")
    out = {}
    for name in SHIPPED:
        inst = load(ROOT / "instances" / "pipeline" / f"{name}.json")
        sol = solve_instance(inst, time_limit=20)
        assert sol.ok, name
        emit(inst, sol, root / name)
        out[name] = (root / name, inst, sol)
    return out


@pytest.fixture(scope="module")
def runs(designs):
    """name -> {"csim": (result, seconds), "csim-vitis": ..., "tool": ...}: both models built
    and run through the emitted Makefile, and the tool's csim-vitis.sh on a copy."""
    if CXX is None or MAKE is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    vitis = tool("vitis-stream")

    def run(job):
        name, target = job
        path = designs[name][0]
        t = time.perf_counter()
        if target == "tool":
            cmd = [str(vitis / "csim-vitis.sh"), str(path)]
        else:
            cmd = [MAKE, "-s", "-C", str(path), target, f"VITIS_STREAM={vitis}"]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        return (name, target), (res, time.perf_counter() - t)

    jobs = [(n, t) for n in designs for t in ("csim", "csim-vitis")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = dict(pool.map(run, jobs))
        done.update(pool.map(run, [(n, "tool") for n in designs]))   # after make: no shared folder
    out: dict[str, dict] = {n: {} for n in designs}
    for (name, target), value in done.items():
        out[name][target] = value
    return out


def _manifest(path: Path) -> dict:
    return json.loads((path / "design.json").read_text())


@pytest.mark.parametrize("name", SHIPPED)
def test_both_csim_models_pass_against_numpy(runs, name):
    for target in ("csim", "csim-vitis"):
        res, _ = runs[name][target]
        assert res.returncode == 0, (target, res.stdout[-2000:], res.stderr[-2000:])
        assert "PASS" in res.stdout.splitlines(), (target, res.stdout[-2000:])
        assert "read while empty" not in res.stdout + res.stderr, target
    res, _ = runs[name]["tool"]
    assert res.returncode == 0 and res.stdout.startswith("PASS "), res.stdout + res.stderr
    assert "reads of an empty stream" not in res.stdout


@pytest.mark.parametrize("name", SHIPPED)
def test_regions_are_canonical(designs, name):
    path = designs[name][0]
    files = P.design_files(path)
    streams, calls = P.streams_and_calls(files["top.cpp"])
    for region, procs in calls.items():
        written: dict[str, int] = {}
        read: dict[str, int] = {}
        for i, (fn, args) in enumerate(procs):
            r, w = P.reads_writes(files["kernels.h"], fn, args)
            for s in w:
                assert s not in written, f"{s} written twice in {region}"
                written[s] = i
            for s in r:
                assert s not in read, f"{s} read twice in {region}"
                read[s] = i
        declared = {v for v, s in streams.items() if s.region == region}
        assert set(written) == set(read) == declared, region
        assert all(written[s] < read[s] for s in declared), region   # producers first


@pytest.mark.parametrize("name", SHIPPED)
def test_every_stream_element_is_one_beat_of_at_most_512_bits(designs, name):
    path = designs[name][0]
    files = P.design_files(path)
    beats = P.beat_structs(files["kernels.h"])
    streams, _ = P.streams_and_calls(files["top.cpp"])
    assert beats and max(beats.values()) <= 512
    for b in beats:     # the build fails if a beat is wider: every struct has its assertion
        assert f'static_assert(sizeof({b}) * 8 <= 512' in files["kernels.h"]
    assert {s.beat for s in streams.values()} <= set(beats)
    assert "tile_" not in files["top.cpp"] and "hls::stream<tile" not in files["kernels.h"]
    assert max(s["element_bits"] for s in _manifest(path)["streams"]) <= 512


@pytest.mark.parametrize("name", SHIPPED)
def test_manifest_matches_the_code(designs, name):
    path, inst, sol = designs[name]
    files = P.design_files(path)
    streams, calls = P.streams_and_calls(files["top.cpp"])
    beats = P.beat_structs(files["kernels.h"])
    m = _manifest(path)
    assert m["depth_unit"] == "beats" and {s["var"] for s in m["streams"]} == set(streams)
    order = [fn for region in calls.values() for fn, _ in region]
    assert [p["name"] for p in sorted(m["processes"], key=lambda p: p["order"])] == order
    for s in m["streams"]:
        code = streams[s["var"]]
        assert (code.name, code.depth, beats[code.beat]) == (s["name"], s["depth"], s["element_bits"])
        assert s["element_bits"] == s["lanes"] * DTYPE_BITS[s["dtype"]]
        impl = {"SRL": "srl", "LUTRAM": "lutram", "BRAM": "bram", "URAM": "uram"}.get(s["storage"])
        assert code.impl == impl, s["name"]
        if s["kind"] == "stream":
            assert s["depth"] == max(2, s["depth_tokens"] * s["beats_per_token"])
    # the FIFO stage's depths, in tokens, are what the manifest multiplies by the beats
    fifo = sol.sections["fifo"]["depths"]
    plain = [s for s in m["streams"] if s["kind"] == "stream" and s["name"] in fifo]
    assert plain and all(s["depth_tokens"] == fifo[s["name"]] for s in plain)
    # placement's slots are the processes' SLRs, and the floorplan says the same
    plan = (path / "floorplan.tcl").read_text()
    for p in m["processes"]:
        assert p["slr"] == sol.sections["placement"]["slot"][p["kernel"]]
        assert f'USER_SLR_ASSIGNMENT {p["slr"]} [get_cells -hierarchical -filter {{NAME =~ "*/{p["name"]}_U0"}}]' in plan
    assert {a["port"]: a["bundle"] for a in m["m_axi"]} == P.top_ports(files["top.cpp"])


@pytest.mark.parametrize("name", SHIPPED)
def test_compute_pragmas_give_the_tiling_stages_ii(designs, name):
    path, inst, sol = designs[name]
    opts = sol.sections["pipeline"]["options"]
    tiled = tile_graph(inst.operators, opts["default_tile_size"], opts["overall_unroll_size"])
    bodies = P.functions((path / "kernels.cpp").read_text())
    checked = 0
    for k in tiled.kernels.values():
        if k.op in ("dma_in", "dma_out"):
            continue
        out = next(s for s in tiled.streams.values() if s.src == k.name)
        cycles = P.compute_cycles(bodies["k_" + re.sub(r"\W", "_", k.name)])
        assert cycles == k.ii * out.src_type.tokens, (k.name, k.op, cycles, k.ii, out.src_type.tokens)
        checked += 1
    assert checked >= 5


def test_link_cfg_puts_every_gpt2_port_on_a_bank(designs):
    path, _, _ = designs["gpt2-block"]
    m = _manifest(path)
    sp = {}
    for line in (path / "link.cfg").read_text().splitlines():
        if line.startswith("sp="):
            cu_port, bank = line[3:].split(":")
            cu, port = cu_port.split(".")
            assert cu == "top_1" and port not in sp
            sp[port] = bank
    assert len(m["m_axi"]) == 18 and set(sp) == {a["port"] for a in m["m_axi"]}
    build = load_preset("u280").build
    banks = {f"{b['name']}[{i}]" for b in build["banks"] for i in range(b["count"])}
    per_bank: dict[str, int] = {}
    for port, bank in sp.items():
        assert bank in banks and bank == next(a["bank"] for a in m["m_axi"] if a["port"] == port)
        per_bank[bank] = per_bank.get(bank, 0) + 1
    assert max(per_bank.values()) <= build["max_interfaces_per_bank"]
    assert "nk=top:1:top_1" in (path / "link.cfg").read_text()


def test_build_scripts(designs):
    path, _, _ = designs["gpt2-block"]
    tcl = (path / "run_hls.tcl").read_text()
    for step in ("open_project", "set_top top", "add_files", "add_files -tb", "-flow_target vitis",
                 "set_part {xcu280-fsvh2892-2L-e}", "create_clock -period 3.333", "csim_design",
                 "csynth_design", "export_design -format xo"):
        assert step in tcl, step
    mk = (path / "Makefile").read_text()
    assert "run.impl_1.STEPS.OPT_DESIGN.TCL.PRE=$(CURDIR)/floorplan.tcl" in mk
    assert "--config link.cfg" in mk and "xilinx_u280_gen3x16_xdma_1_202211_1" in mk


def test_make_targets_without_vitis_say_what_is_missing(designs, tmp_path):
    if MAKE is None:
        pytest.skip("make is needed")
    path, _, _ = designs["ffn"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}   # no vitis_hls, no v++, no XILINX_HLS
    for target, words in (("hls", "vitis_hls is not on PATH"), ("csim-vitis", "no hls_stream.h in")):
        res = subprocess.run([MAKE, "-s", "-C", str(path), target], capture_output=True, text=True,
                             env=env, timeout=60, check=False)
        assert res.returncode != 0 and words in res.stderr, (target, res.stderr)


def test_a_non_canonical_region_is_refused():
    a = Process("k_load", "k_load(x, s0)", writes=("s0",))
    b = Process("k_use", "k_use(s0, s1)", reads=("s0",), writes=("s1",))
    with pytest.raises(CodegenError, match=r"region top is not canonical: stream s0 is read by k_use"):
        check_canonical("top", [b, a])
    with pytest.raises(CodegenError, match=r"stream s0 is written by more than one process \(k_load, k_load2\)"):
        check_canonical("top", [a, Process("k_load2", "", writes=("s0",)), b])
    with pytest.raises(CodegenError, match="stream s9 has no writer"):
        check_canonical("top", [a, b], streams=["s9"])


def test_ports_beyond_the_banks_are_refused():
    build = {"banks": [{"name": "DDR", "count": 1}], "max_interfaces_per_bank": 15, "platform": "x"}
    assert set(assign_banks([f"p{i}" for i in range(15)], build).values()) == {"DDR[0]"}
    with pytest.raises(CodegenError, match="16 m_axi ports do not fit 1 memory bank"):
        assign_banks([f"p{i}" for i in range(16)], build)


def test_report(designs, runs, capsys):
    """The figures of the issue's note, printed (``pytest -s``) and kept as a record."""
    lines = []
    for name in SHIPPED:
        path, _, sol = designs[name]
        m = _manifest(path)
        streams = [s for s in m["streams"] if s["kind"] == "stream"]
        bits = sum(s["depth"] * s["element_bits"] for s in streams)
        banks = {a["bank"] for a in m["m_axi"]}
        lines.append(f"{name}: {len(streams)} streams (+{len(m['streams']) - len(streams)} ping-pong), "
                     f"max element {max(s['element_bits'] for s in m['streams'])} bits, FIFO bits "
                     f"{bits} emitted vs {sol.sections['fifo']['total_bits']} FIFO stage, "
                     f"{len(m['m_axi'])} m_axi on {len(banks)} banks, csim {runs[name]['csim'][1]:.1f} s, "
                     f"csim-vitis {runs[name]['csim-vitis'][1]:.1f} s")
        assert bits >= sol.sections["fifo"]["total_bits"] * 0.99
    with capsys.disabled():
        print("\n" + "\n".join(lines))


# -- random operator chains ------------------------------------------------------------------------

def _random_design(case, tile, budget, root: Path):
    from hypothesis import assume

    from dfopt.codegen.hls.emit import emit_design
    from dfopt.ir.opgraph import OpGraph

    d, _, dtype = case
    assume(dtype in ("f32", "f64"))
    g = OpGraph.from_dict(d)
    tiled = tile_graph(g, tile, budget)
    if root.exists():
        shutil.rmtree(root)
    emit_design(g, tiled, {}, root, seed=0)
    return g, tiled


def _structure_holds(path: Path, tiled) -> None:
    files = P.design_files(path)
    streams, calls = P.streams_and_calls(files["top.cpp"])
    (region, procs), = calls.items()
    order = {fn: i for i, (fn, _) in enumerate(procs)}
    for fn, args in procs:
        for s in P.reads_writes(files["kernels.h"], fn, args)[0]:
            writer = next(f for f, a in procs if s in P.reads_writes(files["kernels.h"], f, a)[1])
            assert order[writer] < order[fn], (s, writer, fn)
    assert max(P.beat_structs(files["kernels.h"]).values()) <= 512
    bodies = P.functions(files["kernels.cpp"])
    for k in tiled.kernels.values():
        if k.op in ("dma_in", "dma_out"):
            continue
        out = next(s for s in tiled.streams.values() if s.src == k.name)
        assert P.compute_cycles(bodies["k_" + re.sub(r"\W", "_", k.name)]) == k.ii * out.src_type.tokens, k.name


def test_random_chains_emit_canonical_beat_streams_at_the_models_ii(tmp_path):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from test_opgraph import chains

    @settings(max_examples=40, deadline=None)
    @given(chains(), st.integers(1, 6), st.sampled_from([4, 16, 64, 256]))
    def check(case, tile, budget):
        _, tiled = _random_design(case, tile, budget, tmp_path / "d")
        _structure_holds(tmp_path / "d", tiled)

    check()


def test_random_chains_pass_both_csim_models(tmp_path):
    """A few random chains (sizes that are not powers of two, partial beats, broadcasts,
    transposes, every row op) built and run in both models against NumPy."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from test_opgraph import chains

    if CXX is None or MAKE is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    vitis = tool("vitis-stream")
    fast = "CXXFLAGS=-std=c++14 -O0 -pthread -Wno-unknown-pragmas"

    @settings(max_examples=6, deadline=None, database=None)
    @given(chains(), st.integers(1, 6), st.sampled_from([4, 16, 64]))
    def check(case, tile, budget):
        path = tmp_path / "d"
        _random_design(case, tile, budget, path)
        for target in ("csim", "csim-vitis"):
            res = subprocess.run([MAKE, "-s", "-C", str(path), target, fast, f"VITIS_STREAM={vitis}"],
                                 capture_output=True, text=True, timeout=TIMEOUT, check=False)
            assert res.returncode == 0 and "PASS" in res.stdout, (target, res.stdout[-1500:], res.stderr[-1500:])

    check()
