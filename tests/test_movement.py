"""The data movers ``concat``, ``slice``, ``expand`` and ``embedding`` (with integer token-id streams)
through the whole pipeline: their NumPy semantics and the faults of bad attributes, the tiling
stage's cost model and port schedules against the emitted kernels (compute cycles recounted from
the code, every process's stream operations logged and compared with its kernel's events), small
graphs solved, emitted and run in both C simulation models (an embedding -> layernorm -> matmul fed
integer ids, a grouped-query attention's KV repeat), and the ONNX ops that import as them
(Concat, Slice, Split, Expand, Gather) against ``onnx.reference`` at opsets 13, 17 and 21."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from onnx import TensorProto, helper, numpy_helper

import hls_parse as P
from csim import assert_stream_order, both_csims
from dfopt.errors import InstanceError
from dfopt.frontend import import_onnx
from dfopt.ir.opgraph import OpGraph
from dfopt.models.tiling import costs, schedules
from dfopt.models.tiling.tiler import tile_graph
from dfopt.reference import evaluate, random_inputs
from test_onnx_frontend import check, kinds
from test_opgraph import SCHEMA
from test_port_schedules import check_kernel

F, I64 = TensorProto.FLOAT, TensorProto.INT64
OPSETS = (13, 17, 21)
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("make") is None,
                               reason="g++ and make are needed to build the generated C++")

#: every mover: a concat of three inputs (one twice), a strided slice, a broadcast with a new
#: leading axis, an embedding; the results feed compute kernels, two outputs
MOVERS = {
    "tensors": {"a": {"shape": [4, 6], "dtype": "f32"}, "b": {"shape": [4, 3], "dtype": "f32"},
                "ids": {"shape": [2, 5], "dtype": "i32"},
                "wte": {"shape": [11, 6], "dtype": "f32", "kind": "weight"}},
    "ops": [{"name": "cat", "op": "concat", "inputs": ["a", "b", "a"], "output": "c", "axis": 1},
            {"name": "sl", "op": "slice", "inputs": ["c"], "output": "s", "starts": [1, 2], "ends": [4, 15],
             "steps": [2, 3]},
            {"name": "act", "op": "relu", "inputs": ["s"], "output": "r"},
            {"name": "ex", "op": "expand", "inputs": ["r"], "output": "e", "shape": [3, 2, 5]},
            {"name": "emb", "op": "embedding", "inputs": ["ids", "wte"], "output": "h"},
            {"name": "sq", "op": "mul", "inputs": ["h", "h"], "output": "hh"}],
    "outputs": ["e", "hh"],
}


# -- the operator graph and the reference --------------------------------------------------------

def test_reference_moves_values_as_numpy_does():
    g = OpGraph.from_dict(MOVERS)
    feeds = random_inputs(g, 3)
    v = evaluate(g, feeds)
    a, b = feeds["a"], feeds["b"]
    c = np.concatenate([a, b, a], axis=1)
    assert np.array_equal(v["c"], c)
    assert np.array_equal(v["s"], c[1:4:2, 2:15:3])
    assert np.array_equal(v["e"], np.broadcast_to(np.maximum(c[1:4:2, 2:15:3], 0), (3, 2, 5)))
    assert feeds["ids"].dtype == np.int32 and feeds["ids"].min() >= 0 and feeds["ids"].max() < 11
    assert np.array_equal(v["h"], feeds["wte"][feeds["ids"]])
    assert OpGraph.from_dict(g.to_dict()) == g


def test_embedding_refuses_an_id_outside_the_table():
    g = OpGraph.from_dict(MOVERS)
    feeds = random_inputs(g)
    feeds["ids"] = np.array([[0, 1, 2, 3, 11], [0, 0, 0, 0, 0]], np.int32)
    with pytest.raises(ValueError, match=r"op emb \(embedding\): id 11 is outside the table's rows \[0, 11\)"):
        evaluate(g, feeds)


def _one(kind: str, inputs: dict, **attrs) -> dict:
    return {"tensors": inputs, "ops": [{"name": "o", "op": kind, "inputs": list(inputs), "output": "y", **attrs}],
            "outputs": ["y"]}


X = {"x": {"shape": [4, 6], "dtype": "f32"}}
FAULTS = {
    "concat-no-axis": (_one("concat", X), "/operators/ops/0", "missing attribute 'axis'"),
    "concat-no-inputs": ({**_one("concat", {}, axis=0), "tensors": X}, "/operators/ops/0/inputs",
                         "expected at least one input"),
    "concat-axis-out": (_one("concat", X, axis=2), "/operators/ops/0/axis", "axis 2 is outside input 'x'"),
    "concat-negative-axis": (_one("concat", X, axis=-1), "/operators/ops/0/axis", "non-negative axis number"),
    "concat-shapes": (_one("concat", {**X, "z": {"shape": [3, 6], "dtype": "f32"}}, axis=1),
                      "/operators/ops/0/inputs/1", "agree in every other dimension"),
    "slice-rank": (_one("slice", X, starts=[0], ends=[2], steps=[1]), "/operators/ops/0/starts",
                   "has 1 entries but input 'x' is [4, 6] (rank 2)"),
    "slice-empty": (_one("slice", X, starts=[0, 3], ends=[4, 3], steps=[1, 1]), "/operators/ops/0/starts",
                    "expected 0 <= start < end <= 6"),
    "slice-past-end": (_one("slice", X, starts=[0, 0], ends=[5, 6], steps=[1, 1]), "/operators/ops/0/ends",
                       "expected 0 <= start < end <= 4"),
    "slice-step-zero": (_one("slice", X, starts=[0, 0], ends=[4, 6], steps=[1, 0]), "/operators/ops/0/steps",
                        "integers >= 1"),
    "expand-not-broadcast": (_one("expand", X, shape=[4, 5]), "/operators/ops/0/shape", "does not broadcast"),
    "expand-lower-rank": (_one("expand", X, shape=[6]), "/operators/ops/0/shape", "expected rank <= 1"),
    "embedding-float-ids": (_one("embedding", {**X, "t": {"shape": [8, 3], "dtype": "f32"}}),
                            "/operators/ops/0/inputs/0", "ids 'x' are f32: an embedding's ids are i32"),
    "embedding-table-rank": (_one("embedding", {"i": {"shape": [3], "dtype": "i32"},
                                                "t": {"shape": [8], "dtype": "f32"}}),
                             "/operators/ops/0/inputs/1", "expected [rows, width]"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_bad_attributes_name_the_field(case):
    d, where, part = FAULTS[case]
    with pytest.raises(InstanceError) as err:
        OpGraph.from_dict(d)
    assert str(err.value).startswith(where + ": op o (") and part in str(err.value), str(err.value)


def test_schema_takes_the_movers_and_rejects_a_slice_without_steps():
    validator = Draft202012Validator(SCHEMA)
    assert not list(validator.iter_errors(MOVERS))
    bad = _one("slice", X, starts=[0, 0], ends=[4, 6])
    assert list(validator.iter_errors(bad))


# -- tiling: cost model and port schedules --------------------------------------------------------

def test_a_mover_reads_each_input_whole_one_after_another_then_writes():
    g = OpGraph.from_dict(MOVERS)
    tiled = tile_graph(g, 2, 8)
    for name in tiled.kernels:
        check_kernel(tiled, name)
    cat = tiled.kernels["cat"]
    ins = tiled.in_streams("cat")
    assert [s.name for s in ins] == ["a__cat", "b__cat"]          # one stream per distinct input
    lanes = cat.attrs["lanes"]
    reads = [(s.tokens, costs.mover_read_ii("f32", s.dst_type.element_count, lanes)) for s in ins]
    a, b = (tiled.read_schedule(s.name).offsets().tolist() for s in ins)
    assert a == [k * reads[0][1] for k in range(reads[0][0])]
    assert b[0] == reads[0][0] * reads[0][1] and b[-1] < tiled.write_schedule("c__sl").first
    read = sum(n * ii for n, ii in reads)
    assert cat.delay == read + cat.ii + costs.PIPELINE_DEPTH
    assert cat.resources["bytes"] == (24 + 12) * 4 and cat.resources["dsp"] == 0
    emb = tiled.kernels["emb"]                                    # the ids (i32), then the whole table
    ids, table = tiled.in_streams("emb")
    assert ids.src_type.dtype == "i32" and table.src_type.dtype == "f32"
    first = ids.tokens * costs.mover_read_ii("i32", ids.dst_type.element_count, emb.attrs["lanes"])
    assert tiled.read_schedule(table.name).first == first
    assert emb.resources["bytes"] == (10 + 66) * 4


@st.composite
def mover_graphs(draw) -> dict:
    """Up to 5 movers over a 2-D input, each reading earlier tensors: concats (of an earlier
    tensor with itself or a relu of it), slices, broadcasts along a new leading axis."""
    m, n = draw(st.sampled_from([2, 3, 4, 6])), draw(st.sampled_from([2, 4, 5]))
    avail = [("x", (m, n))]
    ops = []
    for i in range(draw(st.integers(1, 5))):
        src, shape = draw(st.sampled_from(avail))
        kind = draw(st.sampled_from(["concat", "concat_relu", "slice", "expand"]))
        op: dict = {"name": f"op{i}", "output": f"t{i}"}
        if kind == "concat":
            axis = draw(st.integers(0, len(shape) - 1))
            op.update(op="concat", inputs=[src, src], axis=axis)
            shape = shape[:axis] + (2 * shape[axis],) + shape[axis + 1:]
        elif kind == "concat_relu":
            ops.append({"name": f"act{i}", "op": "relu", "inputs": [src], "output": f"r{i}"})
            op.update(op="concat", inputs=[f"r{i}", src], axis=0)
            shape = (2 * shape[0],) + shape[1:]
        elif kind == "slice":
            starts = [draw(st.integers(0, d - 1)) for d in shape]
            ends = [draw(st.integers(s0 + 1, d)) for s0, d in zip(starts, shape)]
            steps = [draw(st.integers(1, 3)) for _ in shape]
            op.update(op="slice", inputs=[src], starts=starts, ends=ends, steps=steps)
            shape = tuple(-(-(e - s0) // k) for s0, e, k in zip(starts, ends, steps))
        else:
            if len(shape) > 2:
                continue
            shape = (draw(st.integers(2, 3)),) + shape
            op.update(op="expand", inputs=[src], shape=list(shape))
        ops.append(op)
        avail.append((f"t{i}", shape))
    used = {t for op in ops for t in op["inputs"]}
    outputs = [t for t, _ in avail[1:] if t not in used] or [avail[-1][0]]
    return {"tensors": {"x": {"shape": [m, n], "dtype": "f32"}}, "ops": ops, "outputs": outputs}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mover_graphs(), st.sampled_from([1, 2, 3, 64]), st.sampled_from([4, 16, 256]))
def test_fifo_depths_on_the_movers_schedules_never_deadlock(ops, tile, lanes):
    from dfopt.models.fusion.fused import fused_graph
    from dfopt.models.pipeline import fifo_stage
    from dfopt.sim import simulate

    assume(len(ops["ops"]) > 0)
    tiled = tile_graph(OpGraph.from_dict(ops), tile, lanes)
    fused = fused_graph(tiled, dict.fromkeys(tiled.kernels, 0))
    for name in fused.kernels:
        check_kernel(fused, name)
    sized, r = fifo_stage(fused, time_limit=20)
    assert r.checks_ok
    run = simulate(sized)
    assert not run.deadlock, run.blocked
    assert run.makespan == simulate(fused, unbounded=True).makespan


# -- emitted code against the model, and both csim models -----------------------------------------

def _emit_and_recount(g: OpGraph, tile: int, budget: int, out) -> None:
    from dfopt.codegen.hls.emit import emit_design

    tiled = tile_graph(g, tile, budget)
    emit_design(g, tiled, {}, out, seed=0)
    bodies = P.functions((out / "kernels.cpp").read_text())
    for k in tiled.kernels.values():
        if k.op not in ("dma_in", "dma_out"):
            stream = next(s for s in tiled.streams.values() if s.src == k.name)
            assert P.compute_cycles(bodies["k_" + re.sub(r"\W", "_", k.name)]) == k.ii * stream.src_type.tokens, k.name
    assert max(P.beat_structs((out / "kernels.h").read_text()).values()) <= 512


@needs_gxx
@pytest.mark.parametrize("tile,budget", [(2, 8), (3, 5), (64, 1024)])
def test_movers_emit_at_the_models_ii_and_pass_both_csim_models(tmp_path, tile, budget):
    """Several tiles per axis or one, partial beats, 1-value beats; integer ids streamed from DRAM."""
    out = tmp_path / "d"
    _emit_and_recount(OpGraph.from_dict(MOVERS), tile, budget, out)
    kernels_h = (out / "kernels.h").read_text()
    assert re.search(r"struct beat_i32_\d+ \{ int data\[\d+\]; \};", kernels_h)
    assert "const int* ids" in (out / "top.h").read_text()
    both_csims(out)


@needs_gxx
def test_the_embedding_kernel_clamps_an_id_outside_the_table(tmp_path):
    """The reference refuses such ids (ONNX Gather's error); the kernel, which cannot fail, reads
    row 0 for a negative id and row V - 1 for one past the end: the design's data is rewritten
    with such ids and the expected rows of the clamped ids, and both models still pass."""
    from dfopt.codegen.hls.emit import emit_design

    g = OpGraph.from_dict({"tensors": {"ids": {"shape": [2, 3], "dtype": "i32"},
                                       "wte": {"shape": [7, 4], "dtype": "f32", "kind": "weight"}},
                           "ops": [{"name": "emb", "op": "embedding", "inputs": ["ids", "wte"], "output": "h"}],
                           "outputs": ["h"]})
    out = tmp_path / "d"
    emit_design(g, tile_graph(g, 2, 4), {}, out)
    ids = np.array([[-5, 0, 6], [7, 99, 3]], "<i4")
    ids.tofile(out / "data" / "ids.bin")
    table = np.fromfile(out / "data" / "wte.bin", "<f4").reshape(7, 4)
    table[np.clip(ids, 0, 6)].astype("<f4").tofile(out / "data" / "h.ref.bin")
    both_csims(out)


@needs_gxx
def test_an_integer_graph_streams_and_computes_in_int(tmp_path):
    """i32 tensors end to end: read from DRAM, a matmul (integer scale), a broadcast add, a relu
    and a concat, written back and compared exactly."""
    g = OpGraph.from_dict({"tensors": {"x": {"shape": [6, 8], "dtype": "i32"},
                                       "w": {"shape": [8, 4], "dtype": "i32", "kind": "weight"},
                                       "b": {"shape": [4], "dtype": "i32", "kind": "weight"}},
                           "ops": [{"name": "mm", "op": "matmul", "inputs": ["x", "w"], "output": "h", "scale": 2},
                                   {"name": "bias", "op": "add", "inputs": ["h", "b"], "output": "hb"},
                                   {"name": "act", "op": "relu", "inputs": ["hb"], "output": "r"},
                                   {"name": "cat", "op": "concat", "inputs": ["r", "hb"], "output": "y", "axis": 1}],
                           "outputs": ["y"]})
    out = tmp_path / "d"
    _emit_and_recount(g, 4, 16, out)
    tb = (out / "tb.cpp").read_text()
    assert "std::vector<int> in_x(48)" in tb and 'check("y", out_y, ref_out_y, 0, 0)' in tb    # exact
    both_csims(out)


def _instance(name: str, operators: dict, tile: int, budget: int, **options) -> dict:
    return {"format": "dfopt-instance/1", "name": name, "problem": "pipeline", "platform": "u280",
            "options": {"pipeline": {"default_tile_size": tile, "overall_unroll_size": budget, **options}},
            "operators": operators}


EMBED_BLOCK = {
    "tensors": {"ids": {"shape": [2, 8], "dtype": "i32"},
                "wte": {"shape": [40, 16], "dtype": "f32", "kind": "weight"},
                "g": {"shape": [16], "dtype": "f32", "kind": "weight"},
                "be": {"shape": [16], "dtype": "f32", "kind": "weight"},
                "w": {"shape": [16, 12], "dtype": "f32", "kind": "weight"}},
    "ops": [{"name": "wte_lookup", "op": "embedding", "inputs": ["ids", "wte"], "output": "x"},
            {"name": "ln", "op": "layernorm", "inputs": ["x", "g", "be"], "output": "n"},
            {"name": "proj", "op": "matmul", "inputs": ["n", "w"], "output": "y"}],
    "outputs": ["y"],
}

#: grouped-query attention: 4 query heads share 2 KV heads; the KV repeat [1, 2, 1, S, D] ->
#: [1, 2, 2, S, D] -> [1, 4, S, D] of k and v
GQA = {
    "tensors": {"q": {"shape": [1, 4, 8, 4], "dtype": "f32"}, "k": {"shape": [1, 2, 1, 8, 4], "dtype": "f32"},
                "v": {"shape": [1, 2, 1, 8, 4], "dtype": "f32"}},
    "ops": [{"name": "k_rep", "op": "expand", "inputs": ["k"], "output": "k5", "shape": [1, 2, 2, 8, 4]},
            {"name": "k_heads", "op": "reshape", "inputs": ["k5"], "output": "kh", "shape": [1, 4, 8, 4]},
            {"name": "v_rep", "op": "expand", "inputs": ["v"], "output": "v5", "shape": [1, 2, 2, 8, 4]},
            {"name": "v_heads", "op": "reshape", "inputs": ["v5"], "output": "vh", "shape": [1, 4, 8, 4]},
            {"name": "qk", "op": "matmul", "inputs": ["q", "kh"], "output": "s", "transpose_b": True, "scale": 0.5},
            {"name": "sm", "op": "softmax", "inputs": ["s"], "output": "p"},
            {"name": "pv", "op": "matmul", "inputs": ["p", "vh"], "output": "o"}],
    "outputs": ["o"],
}


#: a fork-join through a concat that reads its second input (x) only after the whole first one
#: (relu(x)): the FIFO stage must give x -> cat the depth of x's tokens, or the design deadlocks
FORK_JOIN = {
    "tensors": {"x": {"shape": [8, 8], "dtype": "f32"}},
    "ops": [{"name": "act", "op": "relu", "inputs": ["x"], "output": "r"},
            {"name": "cat", "op": "concat", "inputs": ["r", "x"], "output": "c", "axis": 0},
            {"name": "sl", "op": "slice", "inputs": ["c"], "output": "s", "starts": [4, 0], "ends": [12, 8],
             "steps": [1, 1]},
            {"name": "res", "op": "add", "inputs": ["s", "x"], "output": "y"}],
    "outputs": ["y"],
}
PIPELINES = {"embedding-layernorm-matmul": (EMBED_BLOCK, 4, 32), "gqa-kv-repeat": (GQA, 4, 32),
             "movers": (MOVERS, 2, 16), "concat-fork-join": (FORK_JOIN, 2, 16)}


@needs_gxx
@pytest.mark.parametrize("case", sorted(PIPELINES))
def test_pipeline_solves_emits_and_passes_both_csim_models(tmp_path, case):
    """``make csim`` runs the processes concurrently over FIFOs of the solved depths: a depth
    too small for the movers' read order would deadlock it."""
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit

    operators, tile, budget = PIPELINES[case]
    inst = from_dict(_instance(case, operators, tile, budget))
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok, sol.sections["pipeline"]
    out = tmp_path / "design"
    emit(inst, sol, out)
    ids = np.fromfile(out / "data" / "ids.bin", dtype="<i4") if "ids" in operators["tensors"] else None
    if ids is not None:                 # the ids are integers in the table's range, stored as i32
        rows = operators["tensors"]["wte"]["shape"][0]
        assert ids.size == np.prod(operators["tensors"]["ids"]["shape"]) and 0 <= ids.min() and ids.max() < rows
    both_csims(out)
    if case == "concat-fork-join":        # x reaches cat after all of relu(x): the FIFO holds it
        tokens = sol.sections["fifo"]["depths"]["x__cat"]
        assert tokens >= tile_graph(inst.operators, tile, budget).streams["x__cat"].tokens - 1


@needs_gxx
def test_random_mover_graphs_solve_emit_at_the_models_ii_and_pass_both_csim_models(tmp_path):
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit

    @settings(max_examples=4, deadline=None, database=None)
    @given(mover_graphs(), st.sampled_from([1, 2, 3]), st.sampled_from([4, 16]))
    def run(ops, tile, lanes):
        inst = from_dict(_instance("random-movers", ops, tile, lanes))
        sol = solve_instance(inst, time_limit=20)
        assert sol.ok
        out = tmp_path / "d"
        if out.exists():
            shutil.rmtree(out)
        emit(inst, sol, out)
        bodies = P.functions((out / "kernels.cpp").read_text())
        tiled = tile_graph(inst.operators, tile, lanes)
        for k in tiled.kernels.values():
            if k.op not in ("dma_in", "dma_out"):
                stream = next(s for s in tiled.streams.values() if s.src == k.name)
                assert P.compute_cycles(bodies["k_" + k.name]) == k.ii * stream.src_type.tokens, k.name
        both_csims(out)

    run()


@needs_gxx
@pytest.mark.parametrize("c_max", [None, 600], ids=["one-group", "cut"])
def test_event_order_of_the_movers_is_the_emitted_codes_order(tmp_path, c_max):
    """The logged stream operations of every process, token by token, in the order of its
    kernel's events (docs/pipeline.md, exact port schedules), in one fused group and cut by DRAM."""
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.fusion import fused_design
    from dfopt.models.pipeline import emit

    extra = {"c_max": c_max} if c_max is not None else {}
    inst = from_dict(_instance("movers", MOVERS, 2, 16, **extra))
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    if c_max is not None:
        assert len(sol.decision.fusion.groups) > 1
    design = tmp_path / "design"
    emit(inst, sol, design)
    fused = fused_design(tile_graph(inst.operators, 2, 16), sol.decision.fusion)
    for name in fused.kernels:
        check_kernel(fused, name)
    assert_stream_order(design, fused, tmp_path)
    assert {k.op for k in fused.kernels.values()} >= set(schedules.MOVER_OPS) - {"transpose", "reshape"}


# -- ONNX ---------------------------------------------------------------------------------------

def _model(opset: int, nodes: list, inputs: list, outputs: list, inits: dict | None = None):
    """A model of ``nodes``; ``inputs`` / ``outputs`` as (name, element type, shape)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, e, s) for n, e, s in inputs],
                              [helper.make_tensor_value_info(n, e, s) for n, e, s in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ints(*values) -> np.ndarray:
    return np.array(values, np.int64)


@pytest.mark.parametrize("opset", OPSETS)
def test_onnx_concat(opset):
    c = np.random.default_rng(1).standard_normal((2, 1, 4)).astype(np.float32)
    model = _model(opset, [helper.make_node("Concat", ["x", "c", "z"], ["y"], axis=-2, name="/Concat")],
                   [("x", F, [2, 3, 4]), ("z", F, [2, 5, 4])], [("y", F, [2, 9, 4])], {"c": c})
    imported = check(model)
    assert kinds(imported) == ["concat"] and imported.graph.ops[0].attrs == {"axis": 1}


SLICES = {   # starts, ends, axes, steps -> the resolved starts, ends, steps of x [4, 10, 6]
    "negative-and-int64-max": ((1, -4), (2**63 - 1, -1), (1, 2), (2, 1), ([0, 1, 2], [4, 10, 5], [1, 2, 1])),
    "clamped": ((-100, 2), (3, 1000), (0, -1), None, ([0, 0, 2], [3, 10, 6], [1, 1, 1])),
    "no-axes": ((1, 0, 0), (3, 10, 6), None, None, ([1, 0, 0], [3, 10, 6], [1, 1, 1])),
    "strided": ((0,), (6,), (2,), (4,), ([0, 0, 0], [4, 10, 6], [1, 1, 4])),
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case", sorted(SLICES))
def test_onnx_slice_resolves_negative_and_clamped_indices(case, opset):
    starts, ends, axes, steps, want = SLICES[case]
    inits = {"starts": _ints(*starts), "ends": _ints(*ends)}
    names = ["x", "starts", "ends"]
    if axes is not None or steps is not None:
        inits["axes"] = _ints(*(axes if axes is not None else range(len(starts))))
        names.append("axes")
    if steps is not None:
        inits["steps"] = _ints(*steps)
        names.append("steps")
    shape = [len(range(*slice(s, e, st).indices(n))) for n, s, e, st in zip([4, 10, 6], *want)]
    model = _model(opset, [helper.make_node("Slice", names, ["y"], name="/Slice")], [("x", F, [4, 10, 6])],
                   [("y", F, shape)], inits)
    imported = check(model)
    op = imported.graph.ops[0]
    assert op.op == "slice" and (list(op.attrs["starts"]), list(op.attrs["ends"]), list(op.attrs["steps"])) == want


@pytest.mark.parametrize("opset,form", [(13, "split"), (17, "split"), (17, "equal"), (21, "split"),
                                        (21, "num_outputs")])
def test_onnx_split_becomes_one_slice_per_output(opset, form):
    inits, ins, attrs = {}, ["x"], {"axis": 1}
    sizes = {"split": [2, 4, 1], "equal": [3, 3, 3], "num_outputs": [3, 3, 1]}[form]   # num_outputs: the last smaller
    shape = [2, sum(sizes), 4]
    if form == "split":
        inits["split"] = _ints(*sizes)
        ins.append("split")
    if form == "num_outputs":
        attrs["num_outputs"] = 3
    outs = [f"y{j}" for j in range(3)]
    model = _model(opset, [helper.make_node("Split", ins, outs, name="/Split", **attrs)], [("x", F, shape)],
                   [(o, F, [2, n, 4]) for o, n in zip(outs, sizes)], inits)
    imported = check(model)
    assert kinds(imported) == ["slice"] * 3
    starts = [op.attrs["starts"][1] for op in imported.graph.ops]
    assert starts == [0, sizes[0], sizes[0] + sizes[1]]


@pytest.mark.parametrize("opset", OPSETS)
def test_onnx_expand_and_the_gqa_kv_repeat(opset):
    nodes = [helper.make_node("Expand", ["k", "shape"], ["k5"], name="/Expand"),
             helper.make_node("Reshape", ["k5", "heads"], ["kh"], name="/Reshape"),
             helper.make_node("Expand", ["b", "bshape"], ["bb"], name="/Expand_1")]
    model = _model(opset, nodes, [("k", F, [1, 2, 1, 8, 4]), ("b", F, [3, 1])],
                   [("kh", F, [1, 4, 8, 4]), ("bb", F, [3, 5])],
                   {"shape": _ints(1, 2, 2, 8, 4), "heads": _ints(1, 4, 8, 4), "bshape": _ints(1, 5)})
    imported = check(model)     # the second broadcasts both ways: [3, 1] to [1, 5] is [3, 5]
    assert kinds(imported) == ["expand", "reshape", "expand"]
    assert [op.attrs.get("shape") for op in imported.graph.ops] == [(1, 2, 2, 8, 4), (1, 4, 8, 4), (3, 5)]


def _embedding_model(opset: int, ids_type=I64, then_matmul: bool = True):
    rng = np.random.default_rng(2)
    inits = {"wte": rng.standard_normal((50, 16)).astype(np.float32),
             "w": (rng.standard_normal((16, 8)) / 4).astype(np.float32)}
    nodes = [helper.make_node("Gather", ["wte", "input_ids"], ["h"], axis=0, name="/wte/Gather")]
    out = ("h", F, [2, 7, 16])
    if then_matmul:
        nodes.append(helper.make_node("MatMul", ["h", "w"], ["y"], name="/proj/MatMul"))
        out = ("y", F, [2, 7, 8])
    return _model(opset, nodes, [("input_ids", ids_type, [2, 7])], [out], inits)


IDS = np.random.default_rng(5).integers(0, 50, (2, 7))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("ids_type", [I64, TensorProto.INT32], ids=["int64", "int32"])
def test_onnx_gather_of_a_weight_by_input_ids_is_an_embedding(opset, ids_type):
    ids = IDS.astype(helper.tensor_dtype_to_np_dtype(ids_type))
    imported = check(_embedding_model(opset, ids_type), feeds={"input_ids": ids})
    assert kinds(imported) == ["embedding", "matmul"]
    spec = imported.graph.tensors[imported.names["input_ids"]]
    assert (spec.dtype, spec.kind, spec.shape) == ("i32", "input", (2, 7))


REFUSED = {
    "slice-computed-start": (     # a start from a graph input (the output's shape declared)
        lambda o: _model(o, [helper.make_node("Slice", ["x", "i", "ends"], ["y"], name="/Slice")],
                         [("x", F, [8]), ("i", TensorProto.INT32, [1])], [("y", F, [5])],
                         {"ends": np.array([8], np.int32)}),
        "node '/Slice' (Slice, opset 17): the starts 'i' are computed from data: only constant starts"),
    "slice-start-of-unknown-shape": (   # the same start made by a node: the result has no static shape
        lambda o: _model(o, [helper.make_node("ReduceMax", ["i"], ["m"], keepdims=1, name="/ReduceMax"),
                             helper.make_node("Slice", ["x", "m", "ends"], ["y"], name="/Slice")],
                         [("x", F, [8]), ("i", I64, [1])], [("y", F, [None])], {"ends": _ints(8)}),
        "node '/Slice' (Slice, opset 17): tensor 'y' has no static shape"),
    "slice-negative-step": (
        lambda o: _model(o, [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="/Slice")],
                         [("x", F, [8, 4])], [("y", F, [8, 4])],
                         {"s": _ints(-1), "e": _ints(-(2**63)), "a": _ints(0), "st": _ints(-1)}),
        "node '/Slice' (Slice, opset 17): steps[0] = -1 on axis 0: only positive steps import"),
    "gather-computed-data": (
        lambda o: _model(o, [helper.make_node("Relu", ["x"], ["r"], name="/Relu"),
                             helper.make_node("Gather", ["r", "ids"], ["y"], axis=0, name="/Gather")],
                         [("x", F, [6, 4]), ("ids", I64, [3])], [("y", F, [3, 4])]),
        "node '/Gather' (Gather, opset 17): the data 'r' is computed: only an embedding lookup imports"),
    "gather-computed-ids": (
        lambda o: _model(o, [helper.make_node("Gather", ["x", "i"], ["j"], axis=0, name="/Gather"),
                             helper.make_node("Gather", ["t", "j"], ["y"], axis=0, name="/Gather_1")],
                         [("x", I64, [6]), ("i", I64, [3])], [("y", F, [3, 4])],
                         {"t": np.ones((6, 4), np.float32)}),
        "node '/Gather' (Gather, opset 17): the data 'x' is computed"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_onnx_movement_that_does_not_import_is_refused_naming_the_node(case):
    build, part = REFUSED[case]
    with pytest.raises(InstanceError) as err:
        import_onnx(build(17))
    assert part in str(err.value), str(err.value)


@needs_gxx
def test_onnx_embedding_layernorm_matmul_passes_both_csim_models(tmp_path):
    """An exported token embedding (int64 ids) -> LayerNormalization -> MatMul: imported (ids as
    an i32 graph input), solved, emitted and run in both C simulation models against NumPy."""
    from dfopt.api import solve_instance
    from dfopt.frontend import onnx_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit

    rng = np.random.default_rng(3)
    inits = {"wte": rng.standard_normal((50, 16)).astype(np.float32), "g": np.ones(16, np.float32),
             "b": np.zeros(16, np.float32), "w": (rng.standard_normal((16, 8)) / 4).astype(np.float32)}
    nodes = [helper.make_node("Gather", ["wte", "input_ids"], ["h"], axis=0, name="/wte/Gather"),
             helper.make_node("LayerNormalization", ["h", "g", "b"], ["n"], axis=-1, name="/ln/LayerNorm"),
             helper.make_node("MatMul", ["n", "w"], ["y"], name="/proj/MatMul")]
    model = _model(17, nodes, [("input_ids", I64, [2, 7])], [("y", F, [2, 7, 8])], inits)
    check(model, feeds={"input_ids": IDS})
    path = tmp_path / "embed.onnx"
    path.write_bytes(model.SerializeToString())
    data, _ = onnx_instance(str(path))
    data["options"] = {"pipeline": {"default_tile_size": 4, "overall_unroll_size": 32}}
    inst = from_dict(data)
    assert [op.op for op in inst.operators.ops] == ["embedding", "layernorm", "matmul"]
    assert inst.operators.tensors["input_ids"].dtype == "i32"
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    out = tmp_path / "design"
    emit(inst, sol, out)
    both_csims(out)
