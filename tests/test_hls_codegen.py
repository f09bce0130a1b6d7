"""HLS C++ code generation: token orders, generated projects compiled with g++ and compared with
the NumPy reference, FIFO depths that deadlock, and refused dtypes.

Every project is emitted and built once per module (in parallel, ``make build``); each test then
runs its ``./csim`` and checks the exit code (0 match, 1 mismatch, 3 deadlock).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dfopt.codegen.hls import EXIT_DEADLOCK, include_dir
from dfopt.codegen.hls.emit import emit_design
from dfopt.codegen.hls.kernels import CTYPES, Port, converter, pp_port
from dfopt.codegen.hls.order import loop_nest, tile_order
from dfopt.errors import CodegenError
from dfopt.ir.itensor import ITensorType
from dfopt.ir.opgraph import OpGraph
from dfopt.models.tiling.tiler import tile_graph
from tools import tool, tools_dir

CXX = shutil.which("g++")
MAKE = shutil.which("make")
needs_gxx = pytest.mark.skipif(CXX is None or MAKE is None,
                               reason="g++ and make are needed to build the generated C++")
ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT = 60  # seconds; a hang is a failure


# -- 1. token order --------------------------------------------------------------------------------

FIG5_SRC = ITensorType("f32", (8, 8), (4, 2), (4, 2), (2, 4), (1, 0))


def test_tile_order_column_major_tiles():
    # loop d0 (4 x 2) drives data dim 1, loop d1 (2 x 4) drives data dim 0: rows vary fastest
    assert list(tile_order(FIG5_SRC)) == [(0, 0), (4, 0), (0, 2), (4, 2),
                                          (0, 4), (4, 4), (0, 6), (4, 6)]


def test_tile_order_reuse_and_whole_dim():
    # dim 0 by loop 0, dim 1 whole, loop 1 drives nothing: each tile sent twice
    t = ITensorType("f32", (4, 6), (2, 6), (2, 2), (2, 1), (0, None))
    assert list(tile_order(t)) == [(0, 0), (0, 0), (2, 0), (2, 0)]
    # the reuse loop outermost: the whole sequence repeats
    t = ITensorType("f32", (4, 6), (2, 3), (3, 2, 2), (1, 2, 3), (1, 2))
    assert list(tile_order(t)) == [(0, 0), (0, 3), (2, 0), (2, 3)] * 3
    assert sum(1 for _ in tile_order(t)) == t.tokens


def test_tile_order_matmul_operand():
    # A of C[i,j] += A[i,k] B[k,j], loops (i, j, k) 2x2x2 over 4x4 tiles of 2: A re-read per j
    a = ITensorType("f32", (4, 4), (2, 2), (2, 2, 2), (2, 2, 2), (0, 2))
    assert list(tile_order(a)) == [(0, 0), (0, 2), (0, 0), (0, 2), (2, 0), (2, 2), (2, 0), (2, 2)]


@needs_gxx
def test_cpp_loop_nest_follows_tile_order(tmp_path):
    types = [FIG5_SRC, ITensorType("f32", (4, 6), (2, 3), (3, 2, 2), (1, 2, 3), (1, 2)),
             ITensorType("f32", (2, 4, 6), (1, 4, 2), (2, 3), (1, 2), (0, None, 1))]
    lines = ["#include <cstdio>", "int main() {"]
    for n, t in enumerate(types):
        emit = "std::printf(\"%d" + " %d" * len(t.shape) + "\\n\", " + str(n) + "".join(
            f", o{d}" for d in range(len(t.shape))) + ");"
        lines += ["{", *loop_nest(t, "i", [emit]), "}"]
    src = tmp_path / "order.cpp"
    src.write_text("\n".join(lines + ["}"]))
    subprocess.run([CXX, "-std=c++17", str(src), "-o", str(tmp_path / "order")], check=True, timeout=60)
    out = subprocess.run([str(tmp_path / "order")], capture_output=True, text=True, check=True).stdout
    got = [tuple(int(v) for v in line.split()) for line in out.splitlines()]
    assert got == [(n, *o) for n, t in enumerate(types) for o in tile_order(t)]


# -- graphs ---------------------------------------------------------------------------------------

def _t(shape, dtype="f32", kind=None):
    d = {"shape": list(shape), "dtype": dtype}
    if kind:
        d["kind"] = kind
    return d


def ffn_graph() -> OpGraph:
    return OpGraph.from_dict({
        "tensors": {"x": _t([32, 16]), "w1": _t([16, 32], kind="weight"), "b1": _t([32], kind="weight"),
                    "w2": _t([32, 16], kind="weight"), "b2": _t([16], kind="weight")},
        "ops": [{"name": "fc1", "op": "matmul", "inputs": ["x", "w1"], "output": "h"},
                {"name": "fc1_bias", "op": "add", "inputs": ["h", "b1"], "output": "hb"},
                {"name": "act", "op": "gelu", "inputs": ["hb"], "output": "g"},
                {"name": "fc2", "op": "matmul", "inputs": ["g", "w2"], "output": "y0"},
                {"name": "fc2_bias", "op": "add", "inputs": ["y0", "b2"], "output": "y"}],
        "outputs": ["y"]})


def attention_graph() -> OpGraph:
    """2 heads of 4, sequence 8: projections, split and transpose heads, q k^T / 2, softmax,
    context, merge heads, output projection."""
    ops = []
    for p in "qkv":
        ops += [{"name": f"{p}_proj", "op": "matmul", "inputs": ["x", f"w{p}"], "output": p},
                {"name": f"{p}_split", "op": "reshape", "inputs": [p], "output": f"{p}3", "shape": [8, 2, 4]},
                {"name": f"{p}_heads", "op": "transpose", "inputs": [f"{p}3"], "output": f"{p}h", "perm": [1, 0, 2]}]
    ops += [{"name": "scores", "op": "matmul", "inputs": ["qh", "kh"], "output": "s", "transpose_b": True,
             "scale": 0.5},
            {"name": "probs", "op": "softmax", "inputs": ["s"], "output": "p"},
            {"name": "context", "op": "matmul", "inputs": ["p", "vh"], "output": "ch"},
            {"name": "merge_heads", "op": "transpose", "inputs": ["ch"], "output": "c3", "perm": [1, 0, 2]},
            {"name": "merge", "op": "reshape", "inputs": ["c3"], "output": "c", "shape": [8, 8]},
            {"name": "o_proj", "op": "matmul", "inputs": ["c", "wo"], "output": "attn"}]
    tensors = {"x": _t([8, 8])} | {f"w{p}": _t([8, 8], kind="weight") for p in "qkvo"}
    return OpGraph.from_dict({"tensors": tensors, "ops": ops, "outputs": ["attn"]})


def layernorm_graph() -> OpGraph:
    """layernorm -> relu -> residual add (x fans out to the norm and the add)."""
    return OpGraph.from_dict({
        "tensors": {"x": _t([16, 32]), "gamma": _t([32], kind="weight"), "beta": _t([32], kind="weight")},
        "ops": [{"name": "ln", "op": "layernorm", "inputs": ["x", "gamma", "beta"], "output": "n"},
                {"name": "act", "op": "relu", "inputs": ["n"], "output": "r"},
                {"name": "res", "op": "add", "inputs": ["r", "x"], "output": "y"}],
        "outputs": ["y"]})


def rmsnorm_graph(dtype: str = "f64") -> OpGraph:
    """rmsnorm -> silu -> broadcast mul -> matmul (transposed A) -> two outputs."""
    return OpGraph.from_dict({
        "tensors": {"x": _t([16, 8], dtype), "g": _t([8], dtype, "weight"), "s": _t([8], dtype, "weight"),
                    "w": _t([16, 4], dtype, "weight")},
        "ops": [{"name": "rms", "op": "rmsnorm", "inputs": ["x", "g"], "output": "n"},
                {"name": "act", "op": "silu", "inputs": ["n"], "output": "a"},
                {"name": "scale", "op": "mul", "inputs": ["a", "s"], "output": "m"},
                {"name": "proj", "op": "matmul", "inputs": ["m", "w"], "output": "y", "transpose_a": True}],
        "outputs": ["y", "m"]})


def fork_join_graph() -> OpGraph:
    """x -> relu -> add and x -> reshape (buffers all of x) -> add: the add waits for the
    reshape's first tile while the relu branch must hold every tile of x."""
    return OpGraph.from_dict({
        "tensors": {"x": _t([16, 16])},
        "ops": [{"name": "act", "op": "relu", "inputs": ["x"], "output": "r"},
                {"name": "mover", "op": "reshape", "inputs": ["x"], "output": "xr", "shape": [16, 16]},
                {"name": "join", "op": "add", "inputs": ["r", "xr"], "output": "y"}],
        "outputs": ["y"]})


def mha_graph() -> OpGraph:
    return OpGraph.from_dict(json.loads((ROOT / "instances/pipeline/mha.json").read_text())["operators"])


def _generous(graph) -> dict:
    return {name: s.tokens for name, s in graph.streams.items()}


#: name -> (opgraph factory, tile size, depths: None = all 2, "generous" = tokens per stream)
DESIGNS = {
    "ffn": (ffn_graph, 8, None),
    "attention": (attention_graph, 4, None),
    "layernorm": (layernorm_graph, 8, None),
    "rmsnorm_f64": (rmsnorm_graph, 4, None),
    "fork_join_depth2": (fork_join_graph, 4, None),
    "fork_join_generous": (fork_join_graph, 4, "generous"),
    "mha_full_size": (mha_graph, 16, None),
    "ffn_groups": (ffn_graph, 8, None),
}

#: designs emitted with fused groups (one dataflow function per group, cut streams through DRAM):
#: the ffn in three groups; act -> fc2 is cut and fc2 re-reads its A operand per n tile
FFN_GROUPS = [["x_in", "w1_in", "b1_in", "fc1", "fc1_bias"], ["act"],
              ["w2_in", "b2_in", "fc2", "fc2_bias", "y_out"]]
GROUPED = {"ffn_groups": FFN_GROUPS}


#: the designs checked with the literal ``make csim`` (Makefile defaults, -O2); the others are
#: built with ``make build`` at -O1, which compiles faster
MAKE_CSIM = ("ffn",)
FAST_FLAGS = "CXXFLAGS=-std=c++14 -O1 -pthread -Wno-unknown-pragmas"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every design emitted and built in parallel: name -> (dir, summary, make's result)."""
    if CXX is None or MAKE is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    root = tmp_path_factory.mktemp("hls_designs")
    emitted = {}
    for name, (factory, tile, depths) in DESIGNS.items():
        g = factory()
        dg = tile_graph(g, default_tile_size=tile, overall_unroll_size=64)
        d = _generous(dg) if depths == "generous" else {}
        extra = {}
        if name in GROUPED:
            extra = {"groups": GROUPED[name], "slots": {k: f"SLR{i % 3}" for i, k in enumerate(dg.kernels)}}
        emitted[name] = (root / name, emit_design(g, dg, d, root / name, seed=0, **extra))

    def build(name: str):
        args = ["csim"] if name in MAKE_CSIM else ["build", FAST_FLAGS]
        return subprocess.run([MAKE, "-C", str(emitted[name][0]), *args], capture_output=True,
                              text=True, timeout=300, check=False)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = dict(zip(emitted, pool.map(build, list(emitted))))
    return {name: (emitted[name][0], emitted[name][1], results[name]) for name in emitted}


def _run(built, name: str) -> subprocess.CompletedProcess:
    path, _, build = built[name]
    assert build.returncode == 0, build.stderr[-3000:]
    return subprocess.run(["./csim"], cwd=path, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          check=False)


# -- 2. designs match NumPy -------------------------------------------------------------------------

@pytest.mark.slow
def test_make_csim_passes(built):
    path, _, make = built["ffn"]
    assert make.returncode == 0, make.stdout[-2000:] + make.stderr[-3000:]
    assert "PASS" in make.stdout
    assert (path / "data" / "y.out.bin").stat().st_size == 32 * 16 * 4


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ffn", "attention", "layernorm", "rmsnorm_f64", "mha_full_size", "ffn_groups"])
def test_design_matches_numpy(built, name):
    run = _run(built, name)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS" in run.stdout and "outside tolerance" in run.stdout


@pytest.mark.slow
def test_every_design_passes_vitis_csim(built):
    """AMD's csim model of hls_stream.h (the tool's csim-vitis.sh): the processes one after the
    other in call order over unbounded streams; a consumer called before its producer would read
    empty streams. Too-small depths do not show there (the depth-2 fork-join passes)."""
    script = tool("vitis-stream") / "csim-vitis.sh"
    dirs = [str(built[name][0]) for name in DESIGNS]
    res = subprocess.run([str(script), *dirs], capture_output=True, text=True, timeout=1800, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("PASS ") == len(DESIGNS) and "empty stream" not in res.stdout, res.stdout


@pytest.mark.slow
def test_converters_and_layout(built):
    path, summary, _ = built["attention"]
    assert summary["converters"], "the heads transposes feed the score matmul through converters"
    for f in ("kernels.h", "kernels.cpp", "top.cpp", "tb.cpp", "Makefile", "include/dfopt_stream.h",
              "run_hls.tcl", "link.cfg", "design.json", "data/x.bin", "data/attn.ref.bin"):
        assert (path / f).is_file(), f
    assert not (path / "include" / "hls_stream.h").exists()   # never shadows Vitis's
    top = (path / "top.cpp").read_text()
    assert "#pragma HLS dataflow" in top and "DFOPT_DATAFLOW_END();" in top
    assert top.count("DFOPT_PROCESS(") == len(summary["kernels"]) + len(summary["converters"])
    assert re.search(r'hls::stream<beat_f32_\d+> s_qh__scores\("qh__scores"\);', top)
    assert "#pragma HLS interface m_axi port=wq" in top


@pytest.mark.slow
def test_groups_one_dataflow_function_each_cut_streams_through_dram(built):
    path, summary, _ = built["ffn_groups"]
    dg = tile_graph(ffn_graph(), default_tile_size=8, overall_unroll_size=64)
    g = dg.streams["g__fc2"]
    assert g.src_type.tokens != g.dst_type.tokens   # fc2 re-reads its A operand per n tile
    top = (path / "top.cpp").read_text()
    assert summary["groups"] == ["group_0", "group_1", "group_2"]
    for i in range(3):
        assert top.count(f"void group_{i}(") == 1 and f'DFOPT_DATAFLOW_BEGIN("group_{i}");' in top
    assert top.count("#pragma HLS dataflow") == 3 and top.count("DFOPT_DATAFLOW_END();") == 3
    # top keeps its signature and runs the groups one after another
    body = top[top.index("void top("):]
    calls = [body.index(f"\n  group_{i}(") for i in range(3)]
    assert calls == sorted(calls) and "DFOPT_DATAFLOW_BEGIN" not in body
    # the cut streams' DRAM buffers are extra top arguments the host allocates
    assert (path / "top.h").read_text() == "#pragma once\nvoid top(const float* x, const float* w1, " \
        "const float* b1, const float* w2, const float* b2, float* y, float* dram_hb__act, float* dram_g__fc2);\n"
    # the cut streams are DRAM buffers of the whole tensor, no converter: DRAM converts the layout
    assert summary["dram_buffers"] == {"dram_hb__act": 32 * 32, "dram_g__fc2": 32 * 32}
    assert "#pragma HLS interface m_axi port=dram_g__fc2" in top and summary["converters"] == []
    assert "std::vector<float> dram_g__fc2(1024);" in (path / "tb.cpp").read_text()
    assert sorted(summary["dram_processes"]) == ["rd_g__fc2", "rd_hb__act", "wr_g__fc2", "wr_hb__act"]
    assert {"g__fc2", "g__fc2__rd", "hb__act", "hb__act__rd"} <= set(summary["streams"])
    group_1 = top[top.index("void group_1("):top.index("void group_2(")]
    assert group_1.startswith("void group_1(const float* dram_hb__act, float* dram_g__fc2) {")
    assert "#pragma HLS interface" not in group_1    # the interfaces are top's
    assert "DFOPT_PROCESS(rd_hb__act(dram_hb__act, s_hb__act__rd));" in group_1
    assert "DFOPT_PROCESS(k_act(s_hb__act__rd, s_g__fc2));" in group_1
    assert "DFOPT_PROCESS(wr_g__fc2(s_g__fc2, dram_g__fc2));" in group_1
    # the floorplan places the DRAM movers with their kernels
    plan = (path / "floorplan.tcl").read_text()
    assert plan.count("set_property") == len(summary["kernels"]) + 4
    assert '*/rd_g__fc2_U0' in plan


def test_groups_in_a_bad_order_are_refused(tmp_path):
    g = ffn_graph()
    dg = tile_graph(g, default_tile_size=8, overall_unroll_size=64)
    with pytest.raises(CodegenError, match=r"stream hb__act: group 0 \(act\) reads from group 1 \(fc1_bias\)"):
        emit_design(g, dg, {}, tmp_path / "bad", groups=[FFN_GROUPS[1], FFN_GROUPS[0], FFN_GROUPS[2]])
    with pytest.raises(CodegenError, match="kernel 'y_out' is in no group"):
        emit_design(g, dg, {}, tmp_path / "bad", groups=[FFN_GROUPS[0], FFN_GROUPS[1], FFN_GROUPS[2][:-1]])
    with pytest.raises(CodegenError, match="group 1 names unknown kernel 'nope'"):
        emit_design(g, dg, {}, tmp_path / "bad", groups=[FFN_GROUPS[0], ["nope"], *FFN_GROUPS[1:]])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_mismatch_is_reported(built, tmp_path):
    path, _, _ = built["ffn"]
    copy = tmp_path / "ffn"
    shutil.copytree(path, copy)
    ref = copy / "data" / "y.ref.bin"
    raw = bytearray(ref.read_bytes())
    raw[0:4] = b"\x00\x00\x80\x7f"  # +inf: no result matches it
    ref.write_bytes(bytes(raw))
    run = subprocess.run(["./csim"], cwd=copy, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                         check=False)
    assert run.returncode == 1 and "FAIL" in run.stdout


# -- 3. depths ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_depth_2_deadlocks_the_fork_join(built):
    run = _run(built, "fork_join_depth2")
    assert run.returncode == EXIT_DEADLOCK, run.stdout + run.stderr
    assert "DEADLOCK" in run.stderr


@pytest.mark.slow
def test_generous_depths_pass_the_fork_join(built):
    _, summary, _ = built["fork_join_generous"]
    assert summary["streams"]["r__join"] == 16  # every token of r
    run = _run(built, "fork_join_generous")
    assert run.returncode == 0, run.stdout + run.stderr


def test_depths_are_emitted_at_least_2(tmp_path):
    g = fork_join_graph()
    dg = tile_graph(g, 4)
    summary = emit_design(g, dg, {"r__join": 1, "x__act": 5}, tmp_path / "d")
    top = (tmp_path / "d" / "top.cpp").read_text()
    assert summary["streams"]["r__join"] == 2 and summary["streams"]["xr__join"] == 2
    assert "#pragma HLS stream variable=s_x__act depth=5" in top and "DFOPT_STREAM_DEPTH(s_x__act, 5);" in top


# -- 4. errors and atomic output --------------------------------------------------------------------

def test_f16_is_refused_and_leaves_no_folder(tmp_path):
    g = OpGraph.from_dict({"tensors": {"x": _t([8, 4], "f16"), "w": _t([4, 4], "f16", "weight")},
                           "ops": [{"name": "fc1", "op": "matmul", "inputs": ["x", "w"], "output": "y"}],
                           "outputs": ["y"]})
    with pytest.raises(CodegenError, match=r"op fc1: dtype f16 cannot be emitted by the HLS target \(f32, f64, i32\)"):
        emit_design(g, tile_graph(g, 4), {}, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_failure_keeps_an_existing_folder_and_no_temp(tmp_path):
    g = fork_join_graph()
    dg = tile_graph(g, 4)
    emit_design(g, dg, {}, tmp_path / "out")
    with pytest.raises(CodegenError, match="unknown kernel 'nope'"):
        emit_design(g, dg, {}, tmp_path / "out", slots={"nope": "SLR0"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert (tmp_path / "out" / "top.cpp").is_file()


def test_floorplan(tmp_path):
    g = attention_graph()
    dg = tile_graph(g, 4)
    slots = {k: ("SLR0" if i % 2 else "SLR1") for i, k in enumerate(dg.kernels)}
    summary = emit_design(g, dg, {}, tmp_path / "fp", slots=slots)
    plan = (tmp_path / "fp" / "floorplan.tcl").read_text()
    assert "floorplan.tcl" in summary["files"]
    assert f'set_property USER_SLR_ASSIGNMENT {slots["scores"]} [get_cells -hierarchical -filter ' \
           '{NAME =~ "*/k_scores_U0"}]' in plan
    # a converter sits with its consumer
    for part in ("fill", "drain"):    # the ping-pong pair of the converter
        assert f'{slots["scores"]} [get_cells -hierarchical -filter {{NAME =~ "*/cvt_qh__scores_{part}_U0"}}]' in plan
    assert plan.count("set_property") == len(summary["kernels"]) + len(summary["converters"])


# -- converters, in isolation ---------------------------------------------------------------------

CONVERSIONS = [
    # paper Fig. 5: column-major 4x2 tiles -> row-major with each column block read twice
    (FIG5_SRC, ITensorType("f32", (8, 8), (4, 2), (4, 2, 2), (2, 1, 4), (2, 0))),
    # tile loops of tripcount 1, whole-row tiles -> 1x2x2 tiles re-sent per outer loop
    (ITensorType("f32", (2, 4, 4), (1, 2, 4), (2, 1, 2), (1, 4, 2), (0, 2, None)),
     ITensorType("f32", (2, 4, 4), (1, 2, 2), (2, 3, 2, 2), (1, 1, 2, 2), (0, 2, 3))),
    # different tile shapes, no shared loop: the whole tensor is buffered
    (ITensorType("f64", (4, 6), (2, 3), (2, 2), (2, 3), (0, 1)),
     ITensorType("f64", (4, 6), (4, 1), (6,), (1,), (None, 0))),
]


@needs_gxx
@pytest.mark.parametrize("lanes", [(1, 1), (2, 4), (16, 3)])
def test_converters_reorder_tiles(tmp_path, lanes):
    """Each converter gets its source tokens as beats of ``lanes[0]`` values (element value = flat
    index in the tensor) and must emit exactly the destination order's tiles as beats of
    ``lanes[1]`` values (a partial last beat padded with zeros)."""
    def tiles(t):
        strides = [math.prod(t.shape[d + 1:]) for d in range(len(t.shape))]
        out = []
        for offs in tile_order(t):
            out.append([sum((o + e) * s for o, e, s in zip(offs, idx, strides))
                        for idx in _indices(t.element)])
        return out

    lines = ["#include <cstdio>", '#include "dfopt_dataflow.h"']
    structs, body = set(), []
    for n, (src, dst) in enumerate(CONVERSIONS):
        ps = Port(src, min(lanes[0], src.element_count))
        pd = Port(dst, min(lanes[1], dst.element_count))
        pp = pp_port(ps, pd)
        for p in (ps, pd, pp):
            if p.beat not in structs:
                structs.add(p.beat)
                lines.append(f"struct {p.beat} {{ {CTYPES[p.itype.dtype]} data[{p.lanes}]; }};")
        fill, drain = converter(f"cvt{n}", ps, pd, pp)
        lines += fill + drain
        flat = [v for tile in tiles(src) for v in tile]
        n_src, n_dst = src.element_count, dst.element_count
        body += ["{", f"  static const double src[] = {{{', '.join(map(str, flat))}}};",
                 f"  hls::stream<{ps.beat}> a; hls::stream<{pp.beat}> pp; hls::stream<{pd.beat}> b;",
                 f"  for (int t = 0; t < {src.tokens}; ++t)",
                 f"    for (int bt = 0; bt < {ps.beats}; ++bt) {{ {ps.beat} x;",
                 f"      for (int l = 0; l < {ps.lanes}; ++l) {{ const int e = bt * {ps.lanes} + l;",
                 f"        x.data[l] = e < {n_src} ? src[t * {n_src} + e] : -1; }}",
                 "      a.write(x); }",
                 f"  cvt{n}_fill(a, pp); cvt{n}_drain(pp, b);",
                 f"  for (int t = 0; t < {dst.tokens}; ++t) {{",
                 f"    for (int bt = 0; bt < {pd.beats}; ++bt) {{ {pd.beat} y = b.read();",
                 f"      for (int l = 0; l < {pd.lanes}; ++l) if (bt * {pd.lanes} + l < {n_dst}) "
                 "std::printf(\"%g \", (double)y.data[l]); }",
                 "    std::printf(\"\\n\"); }",
                 "  std::printf(\"--\\n\");", "}"]
    src_file = tmp_path / "cvt.cpp"
    src_file.write_text("\n".join(lines + ["int main() {", *body, "}"]))
    # sequential, unbounded streams (the converter pair called one after the other): AMD's model
    # of hls_stream.h when the tools are here, else dfopt's threaded one (depths unbounded outside
    # a region)
    vitis = tools_dir() / "vitis-stream"
    if (vitis / "hls_stream.h").is_file():
        flags = ["-isystem", str(vitis), "-DALLOW_EMPTY_HLS_STREAM_READS"]
    else:
        flags = ["-DDFOPT_THREADED_CSIM"]
    subprocess.run([CXX, "-std=c++14", "-O0", "-pthread", "-Wno-unknown-pragmas", *flags, "-I", str(include_dir()),
                    str(src_file), "-o", str(tmp_path / "cvt")], check=True, timeout=120)
    out = subprocess.run([str(tmp_path / "cvt")], capture_output=True, text=True, check=True,
                         timeout=RUN_TIMEOUT).stdout
    blocks = out.split("--\n")[:len(CONVERSIONS)]
    assert len(blocks) == len(CONVERSIONS)
    for block, (_, dst) in zip(blocks, CONVERSIONS):
        got = [[int(float(v)) for v in line.split()] for line in block.splitlines()]
        assert got == tiles(dst)


def _indices(shape):
    return itertools.product(*(range(n) for n in shape))
