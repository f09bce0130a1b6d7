"""Exact port schedules (dfopt/models/tiling/schedules.py): every kernel the pipeline builds reads
and writes each token at a cycle of its own loop order. Per op kind: the token counts, monotone
cycles, the writes the steady ``delay + k * ii`` of the kernel, its latency its last event + 1; on
random small operator graphs the FIFO stage's depths never deadlock under them; and the order of
every kernel's events is the order of the stream operations of its emitted process, as a run of
the emitted C++ logs them."""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from csim import assert_stream_order
from dfopt.api import solve_instance
from dfopt.instance import from_dict
from dfopt.ir.graph import DataflowGraph
from dfopt.ir.opgraph import OpGraph
from dfopt.ir.tokens import TokenSchedule, monotone_fault
from dfopt.models.fusion import fused_design
from dfopt.models.fusion.fused import fused_graph
from dfopt.models.pipeline import fifo_stage
from dfopt.models.tiling import schedules
from dfopt.models.tiling.tiler import tile_graph
from dfopt.sim import simulate

CXX, MAKE = shutil.which("g++"), shutil.which("make")
needs_gxx = pytest.mark.skipif(CXX is None or MAKE is None, reason="g++ and make are needed to build the C++")

#: every op kind: a matmul whose A is re-read (a converter in front of it), a broadcast add, the
#: norms, softmax, the movers, a fanout from a DMA and from a compute kernel, two outputs
EVERY_OP = {
    "tensors": {"x": {"shape": [8, 8], "dtype": "f32"},
                "w1": {"shape": [8, 12], "dtype": "f32", "kind": "weight"},
                "b1": {"shape": [12], "dtype": "f32", "kind": "weight"},
                "g1": {"shape": [12], "dtype": "f32", "kind": "weight"},
                "be1": {"shape": [12], "dtype": "f32", "kind": "weight"},
                "w2": {"shape": [12, 8], "dtype": "f32", "kind": "weight"},
                "g2": {"shape": [16], "dtype": "f32", "kind": "weight"}},
    "ops": [{"name": "fc1", "op": "matmul", "inputs": ["x", "w1"], "output": "h"},
            {"name": "bias", "op": "add", "inputs": ["h", "b1"], "output": "hb"},
            {"name": "act", "op": "gelu", "inputs": ["hb"], "output": "a"},
            {"name": "norm", "op": "layernorm", "inputs": ["a", "g1", "be1"], "output": "n1"},
            {"name": "prob", "op": "softmax", "inputs": ["n1"], "output": "p"},
            {"name": "fc2", "op": "matmul", "inputs": ["p", "w2"], "output": "y"},
            {"name": "res", "op": "add", "inputs": ["x", "y"], "output": "r"},
            {"name": "turn", "op": "transpose", "inputs": ["y"], "output": "yt", "perm": [1, 0]},
            {"name": "flat", "op": "reshape", "inputs": ["yt"], "output": "yr", "shape": [4, 16]},
            {"name": "rms", "op": "rmsnorm", "inputs": ["yr", "g2"], "output": "z"},
            {"name": "gate", "op": "silu", "inputs": ["z"], "output": "zs"},
            {"name": "sq", "op": "mul", "inputs": ["zs", "zs"], "output": "out1"},
            {"name": "clip", "op": "relu", "inputs": ["r"], "output": "out2"}],
    "outputs": ["out1", "out2"],
}


def _ends(graph: DataflowGraph, name: str) -> tuple[list, list]:
    """(reads, writes) of kernel ``name``: (stream, its schedule) per input and output."""
    return ([(s.name, graph.read_schedule(s.name)) for s in graph.in_streams(name)],
            [(s.name, graph.write_schedule(s.name)) for s in graph.out_streams(name)])


def check_kernel(graph: DataflowGraph, name: str) -> None:
    """One kernel's ends: counts, monotone, writes steady at the kernel's delay and ii (compute,
    mover, dma_in), every read of a tile before its write, latency = last event + 1."""
    k = graph.kernels[name]
    reads, writes = _ends(graph, name)
    for stream, sched in reads + writes:
        assert sched.count == graph.streams[stream].tokens, (name, stream)
        assert monotone_fault(sched.blocks) is None, (name, stream)
        assert (sched.offsets()[1:] >= sched.offsets()[:-1]).all()
    if k.op in schedules.COMPUTE_OPS + schedules.MOVER_OPS + ("dma_in",):
        for stream, sched in writes:
            assert sched == TokenSchedule.steady(k.delay, k.ii, graph.streams[stream].tokens), (name, stream)
    if k.op in schedules.COMPUTE_OPS:
        tiles, steps = schedules._tiles_and_steps(k)
        for stream, sched in reads:
            n = sched.offsets().reshape(tiles, steps)
            w = k.delay + k.ii * np.arange(tiles)
            assert (n[:, -1] <= w).all(), (name, stream)                 # a tile's reads, then its write
            assert (n[1:, 0] == w[:-1] + 1).all(), (name, stream)        # the next tile after the write
            assert (n[:, 1:] - n[:, :-1] == k.ii // steps).all(), (name, stream)   # one step apart
    if k.op in schedules.MOVER_OPS:
        first = min(s.first for _, s in writes)
        assert all(s.last < first for _, s in reads), name             # read everything, then write
    if k.op in schedules.COMPUTE_OPS + schedules.MOVER_OPS + ("dma_in", "dma_out"):
        last = max(s.last for _, s in reads + writes)
        assert graph.latency(name) == last + 1, name


def test_every_op_kind_has_its_schedules():
    tiled = tile_graph(OpGraph.from_dict(EVERY_OP), default_tile_size=4, overall_unroll_size=64)
    fused = fused_graph(tiled, dict.fromkeys(tiled.kernels, 0))
    ops = {k.op for k in fused.kernels.values()}
    assert ops >= {"matmul", "add", "mul", "gelu", "silu", "relu", "softmax", "layernorm", "rmsnorm",
                   "transpose", "reshape", "dma_in", "dma_out", "converter"}
    for s in fused.streams.values():        # every end of the fused design carries its schedule
        assert s.src_schedule is not None and s.dst_schedule is not None, s.name
    for name in fused.kernels:
        check_kernel(fused, name)
    # fc1: k = 8 in steps of 4 (2 reduction steps), 2 x 3 output tiles; A and B token k at step k's
    # start, the tile written at the end of its last step
    fc1 = fused.kernels["fc1"]
    step = fc1.ii // 2
    assert fused.read_schedule("x__fc1").offsets().tolist()[:4] == [0, step, fc1.delay + 1, fc1.delay + 1 + step]
    assert fused.read_schedule("w1__fc1") == fused.read_schedule("x__fc1")
    assert fused.write_schedule("h__bias").offsets().tolist()[:2] == [fc1.delay, fc1.delay + fc1.ii]


def test_converter_fills_a_phase_then_drains_it():
    tiled = tile_graph(OpGraph.from_dict(EVERY_OP), default_tile_size=4, overall_unroll_size=64)
    fused = fused_graph(tiled, dict.fromkeys(tiled.kernels, 0))
    cvt = [k for k in fused.kernels.values() if k.op == "converter"]
    assert cvt
    for k in cvt:
        (into,), (out,) = fused.in_streams(k.name), fused.out_streams(k.name)
        reads, writes = fused.read_schedule(into.name).offsets(), fused.write_schedule(out.name).offsets()
        assert len(reads) == into.tokens and len(writes) == out.tokens
        assert writes[0] == k.delay and reads[-1] < writes[-1]
        from dfopt.ir.converter import converter_buffer

        phases = converter_buffer(into.src_type, out.dst_type).reuse
        for p in range(phases):          # phase p is written only once it is read whole
            r = reads.reshape(phases, -1)[p]
            w = writes.reshape(phases, -1)[p]
            assert r[-1] < w[0]
            if p + 1 < phases:           # and the next phase starts filling no later than it ends
                assert reads.reshape(phases, -1)[p + 1][0] <= w[-1] + 1


def test_a_steady_graph_stays_steady_through_fusion():
    tiled = schedules.steady_graph(tile_graph(OpGraph.from_dict(EVERY_OP), default_tile_size=4))
    fused = fused_graph(tiled, dict.fromkeys(tiled.kernels, 0))
    assert not fused.has_token_schedules
    assert not schedules.port_timing(tile_graph(OpGraph.from_dict(EVERY_OP)), "steady").has_token_schedules
    with pytest.raises(ValueError, match="exact, steady"):
        schedules.port_timing(fused, "fast")


def _topological(graph: DataflowGraph) -> list[str]:
    import networkx as nx

    return list(nx.topological_sort(graph.nx))


def test_cut_streams_keep_their_ends_schedules():
    tiled = tile_graph(OpGraph.from_dict(EVERY_OP), default_tile_size=4, overall_unroll_size=64)
    order = _topological(tiled)
    cut = order.index("prob")
    where = {k: int(order.index(k) > cut) for k in order}
    # a prefix of the topological order and the rest: convex, acyclic between them
    fused = fused_graph(tiled, where)
    dram = [s for s in fused.streams.values() if s.name.endswith(("_dram_w", "_dram_r"))]
    assert dram
    for s in fused.streams.values():
        assert s.src_schedule is not None and s.dst_schedule is not None, s.name
    for name in fused.kernels:
        check_kernel(fused, name)


# -- the FIFO stage's depths on random small operator graphs ------------------------------------

@st.composite
def op_graphs(draw) -> dict:
    """A small operator graph: up to 6 ops over 2-D tensors, each op reading an earlier tensor."""
    m, n = draw(st.sampled_from([2, 4, 6, 8])), draw(st.sampled_from([2, 3, 4, 8]))
    tensors: dict = {"x": {"shape": [m, n], "dtype": "f32"}}
    avail = [("x", (m, n))]
    ops, used = [], set()
    for i in range(draw(st.integers(1, 6))):
        src, (a, b) = draw(st.sampled_from(avail))
        kind = draw(st.sampled_from(["matmul", "matmul_bt", "add", "bias", "gelu", "relu", "softmax", "layernorm",
                                     "rmsnorm", "transpose", "reshape"]))
        out, op = f"t{i}", {"name": f"op{i}", "output": f"t{i}"}
        if kind == "matmul":
            p = draw(st.sampled_from([2, 4, 6]))
            tensors[f"w{i}"] = {"shape": [b, p], "dtype": "f32", "kind": "weight"}
            op.update(op="matmul", inputs=[src, f"w{i}"])
            shape = (a, p)
        elif kind == "matmul_bt":
            other = draw(st.sampled_from([t for t, s in avail if s[1] == b]))
            op.update(op="matmul", inputs=[src, other], transpose_b=True)
            shape = (a, dict(avail)[other][0])
            used.add(other)
        elif kind == "add":
            other = draw(st.sampled_from([t for t, s in avail if s == (a, b)]))
            op.update(op="add", inputs=[src, other])
            shape = (a, b)
            used.add(other)
        elif kind == "bias":
            tensors[f"v{i}"] = {"shape": [b], "dtype": "f32", "kind": "weight"}
            op.update(op=draw(st.sampled_from(["add", "mul"])), inputs=[src, f"v{i}"])
            shape = (a, b)
        elif kind in ("layernorm", "rmsnorm"):
            tensors[f"g{i}"] = {"shape": [b], "dtype": "f32", "kind": "weight"}
            extra = [f"g{i}"]
            if kind == "layernorm":
                tensors[f"be{i}"] = {"shape": [b], "dtype": "f32", "kind": "weight"}
                extra.append(f"be{i}")
            op.update(op=kind, inputs=[src, *extra])
            shape = (a, b)
        elif kind == "transpose":
            op.update(op="transpose", inputs=[src], perm=[1, 0])
            shape = (b, a)
        elif kind == "reshape":
            r = draw(st.sampled_from([d for d in (1, 2, 4) if (a * b) % d == 0]))
            op.update(op="reshape", inputs=[src], shape=[a * b // r, r])
            shape = (a * b // r, r)
        else:
            op.update(op=kind, inputs=[src])
            shape = (a, b)
        used.add(src)
        ops.append(op)
        avail.append((out, shape))
    outputs = [t for t, _ in avail[1:] if t not in used] or [avail[-1][0]]
    return {"tensors": tensors, "ops": ops, "outputs": outputs}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_graphs(), st.sampled_from([2, 3, 4, 64]), st.sampled_from([4, 32, 1024]), st.data())
def test_fifo_depths_on_exact_schedules_never_deadlock(ops, tile, lanes, data):
    graph = OpGraph.from_dict(ops)
    tiled = tile_graph(graph, default_tile_size=tile, overall_unroll_size=lanes)
    order = _topological(tiled)
    cut = data.draw(st.integers(0, len(order)), label="cut")
    fused = fused_graph(tiled, {k: int(i >= cut) for i, k in enumerate(order)})
    assume(fused.has_token_schedules)
    for name in fused.kernels:
        check_kernel(fused, name)
    sized, r = fifo_stage(fused, time_limit=20)
    assert r.checks_ok
    reference = simulate(fused, unbounded=True)
    run = simulate(sized)
    assert not run.deadlock, run.blocked
    assert run.makespan == reference.makespan


def test_pipeline_option_fifo_timing_is_recorded_and_sizes_differently():
    inst = from_dict({"format": "dfopt-instance/1", "name": "every-op", "problem": "pipeline", "platform": "u280",
                      "operators": EVERY_OP, "options": {"pipeline": {"default_tile_size": 4}}})
    exact = solve_instance(inst, time_limit=10)
    steady = solve_instance(inst, time_limit=10, fifo_timing="steady")
    assert exact.ok and steady.ok
    assert exact.sections["pipeline"]["fifo_timing"] == "exact"
    assert steady.sections["pipeline"]["options"]["fifo_timing"] == "steady"
    # the exact run is the simulated design with its schedules, the steady one without
    assert exact.sections["fifo"]["makespan"] != steady.sections["fifo"]["makespan"]
    from dfopt.models.pipeline import summary

    assert any("exact per-token port schedules" in line for line in summary(inst, exact))


# -- the order of the events is the order of the emitted code's stream operations --------------

#: a C-simulation model of hls::stream (unbounded, as Vitis csim's) that logs every beat read and
#: written: ``R <stream>`` / ``W <stream>`` in ops.log
LOGGING_STREAM = r"""
#pragma once
#include <cstdio>
#include <deque>
#include <string>
inline std::FILE* dfopt_ops_log() { static std::FILE* f = std::fopen("ops.log", "w"); return f; }
namespace hls {
template <typename T, int DEPTH = 0>
class stream {
 public:
  stream() : name_("?") {}
  explicit stream(const char* name) : name_(name) {}
  T read() { std::fprintf(dfopt_ops_log(), "R %s\n", name_.c_str()); T v = q_.front(); q_.pop_front(); return v; }
  void read(T& v) { v = read(); }
  void write(const T& v) { std::fprintf(dfopt_ops_log(), "W %s\n", name_.c_str()); q_.push_back(v); }
  bool empty() const { return q_.empty(); }
  bool full() const { return false; }
  std::size_t size() const { return q_.size(); }
  void operator>>(T& v) { read(v); }
  void operator<<(const T& v) { write(v); }
 private:
  std::string name_;
  std::deque<T> q_;
};
}  // namespace hls
"""


def _emitted_name(graph: DataflowGraph, stream: str) -> str:
    """The emitted FIFO of a fused design's stream (dfopt.codegen.hls.emit.design_depths' map)."""
    s = graph.streams[stream]
    for kernel, suffix, emitted in ((s.dst, "_in", ""), (s.src, "_out", "__cvt"),
                                    (s.dst, "_dram_w", ""), (s.src, "_dram_r", "__rd")):
        k = graph.kernels[kernel]
        if k.op in ("converter", "dma_out", "dma_in") and "stream" in k.attrs and \
                stream == k.attrs["stream"] + suffix:
            return k.attrs["stream"] + emitted
    return stream


def model_order(graph: DataflowGraph, manifest: dict) -> dict[str, list[tuple[str, str]]]:
    """Per emitted process, its stream operations (``R``/``W``, emitted stream) one per token, in
    the order of its kernel's events (by cycle, reads first, then stream order, then token; a
    converter's reads are its fill half's, its writes its drain half's)."""
    index = {s: i for i, s in enumerate(graph.streams)}
    by_stream = {s["name"]: s for s in manifest["streams"]}
    out: dict[str, list] = defaultdict(list)
    for name in graph.kernels:
        events = []
        for s in graph.in_streams(name):
            events += [(int(n), 0, index[s.name], t, "R", s.name) for t, n in enumerate(graph.read_schedule(s.name).offsets())]
        for s in graph.out_streams(name):
            events += [(int(n), 1, index[s.name], t, "W", s.name) for t, n in enumerate(graph.write_schedule(s.name).offsets())]
        for *_, op, stream in sorted(events):
            emitted = _emitted_name(graph, stream)
            process = by_stream[emitted]["dst" if op == "R" else "src"]
            out[process].append((op, emitted))
    return dict(out)


def run_order(log: str, manifest: dict) -> dict[str, list[tuple[str, str]]]:
    """Per process, its logged stream operations one per token: each run of beats on one stream
    cut into tokens of the stream's beats (a ping-pong stream's are left out)."""
    by_stream = {s["name"]: s for s in manifest["streams"]}
    per: dict[str, list] = defaultdict(list)
    for line in log.splitlines():
        op, stream = line.split(" ", 1)
        per[by_stream[stream]["dst" if op == "R" else "src"]].append((op, stream))
    out: dict[str, list] = {}
    for process, ops in per.items():
        tokens, i = [], 0
        while i < len(ops):
            j = i
            while j < len(ops) and ops[j] == ops[i]:
                j += 1
            s = by_stream[ops[i][1]]
            if s["kind"] != "ping-pong":
                assert (j - i) % s["beats_per_token"] == 0, (process, ops[i], j - i, s["beats_per_token"])
                tokens += [ops[i]] * ((j - i) // s["beats_per_token"])
            i = j
        out[process] = tokens
    return out


@pytest.mark.slow
@needs_gxx
@pytest.mark.parametrize("c_max", [None, 4000], ids=["one-group", "cut"])
def test_event_order_is_the_emitted_codes_order(tmp_path, c_max):
    from dfopt.models.pipeline import emit

    data = {"format": "dfopt-instance/1", "name": "every-op", "problem": "pipeline", "platform": "u280",
            "operators": EVERY_OP, "options": {"pipeline": {"default_tile_size": 4, "overall_unroll_size": 64}}}
    if c_max is not None:
        data["options"]["pipeline"]["c_max"] = c_max
    inst = from_dict(data)
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    if c_max is not None:
        assert len(sol.decision.fusion.groups) > 1
    design = tmp_path / "design"
    emit(inst, sol, design)
    opts = data["options"]["pipeline"]
    fused = fused_design(tile_graph(inst.operators, opts["default_tile_size"], opts["overall_unroll_size"]),
                         sol.decision.fusion)
    assert_stream_order(design, fused, tmp_path)
    # and the threaded runtime passes with the depths sized on these schedules
    csim = subprocess.run([MAKE, "-s", "-C", str(design), "csim"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert csim.returncode == 0 and "PASS" in csim.stdout, csim.stdout[-2000:] + csim.stderr[-2000:]
