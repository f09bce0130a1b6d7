"""The causal ``mask`` op through the whole pipeline: its NumPy semantics, the ONNX forms exporters
write (an Add of a constant triangle, a Where of a constant or folded condition) against
``onnx.reference`` at opsets 13, 17 and 21, the refusals of masks that are not causal, and a small
causal attention solved, emitted and run in both C simulation models (the compute loops recounted
against the tiling stage's II)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import hls_parse as P
from csim import both_csims
from dfopt.errors import InstanceError
from dfopt.frontend import import_onnx
from dfopt.ir.opgraph import OpGraph
from dfopt.reference import causal_mask, evaluate
from test_onnx_frontend import _attention, check, kinds

F = TensorProto.FLOAT
MASK_OPSETS = (13, 17, 21)


def test_reference_masks_the_keys_after_each_query():
    g = OpGraph.from_dict({"tensors": {"x": {"shape": [2, 3, 5], "dtype": "f32"}},
                           "ops": [{"name": "m", "op": "mask", "inputs": ["x"], "output": "y", "causal": True,
                                    "offset": 2, "value": -7.5}], "outputs": ["y"]})
    x = np.arange(30, dtype=np.float32).reshape(2, 3, 5)
    y = evaluate(g, {"x": x})["y"]
    hidden = np.arange(5)[None, :] > np.arange(3)[:, None] + 2
    assert (y[:, hidden] == -7.5).all() and (y[:, ~hidden] == x[:, ~hidden]).all()
    assert g.to_dict()["ops"][0] == {"name": "m", "op": "mask", "inputs": ["x"], "output": "y", "causal": True,
                                     "offset": 2, "value": -7.5}
    assert OpGraph.from_dict(g.to_dict()) == g


def test_f16_rounds_the_default_fill_to_minus_infinity():
    g = OpGraph.from_dict({"tensors": {"x": {"shape": [2, 2], "dtype": "f16"}},
                           "ops": [{"name": "m", "op": "mask", "inputs": ["x"], "output": "y", "causal": True}],
                           "outputs": ["y"]})
    assert evaluate(g, {"x": np.ones((2, 2))})["y"].tolist() == [[1, -np.inf], [1, 1]]


# -- ONNX forms ------------------------------------------------------------------------------------

def _scores_model(opset, build, s=4, t=4, softmax=True):
    """scores [1, 2, s, t] (a graph input) -> build(scores) -> Softmax (or not)."""
    nodes, inits = [], {}
    y = build(nodes, inits, "scores")
    if softmax:
        nodes.append(helper.make_node("Softmax", [y], ["probs"], axis=-1, name="/Softmax"))
        y = "probs"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("scores", F, [1, 2, s, t])],
                              [helper.make_tensor_value_info(y, F, [1, 2, s, t])],
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _add(c):
    def build(nodes, inits, x):
        inits["causal"] = c
        nodes.append(helper.make_node("Add", [x, "causal"], ["masked"], name="/Add"))
        return "masked"
    return build


def _where(cond, fill, negated=False):
    def build(nodes, inits, x):
        inits["cond"], inits["fill"] = cond, np.asarray(fill, np.float32)
        ins = ["cond", "fill", x] if negated else ["cond", x, "fill"]
        nodes.append(helper.make_node("Where", ins, ["masked"], name="/Where"))
        return "masked"
    return build


def _where_folded(nodes, inits, x):
    """Where(Greater(key index, query index), -inf, x): the condition folds to a constant."""
    inits["kidx"] = np.arange(4, dtype=np.int64).reshape(1, 4)
    inits["qidx"] = np.arange(4, dtype=np.int64).reshape(4, 1)
    inits["ninf"] = np.asarray(-np.inf, np.float32)
    nodes.append(helper.make_node("Greater", ["kidx", "qidx"], ["above"], name="/Greater"))
    nodes.append(helper.make_node("Where", ["above", "ninf", x], ["masked"], name="/Where"))
    return "masked"


def _tri(fill, s=4, t=4, lead=(1, 1), offset=0):
    return np.where(causal_mask(s, t, offset), np.float32(fill), np.float32(0)).reshape(lead + (s, t))


LOWER = np.tril(np.ones((4, 4), bool))
FORMS = {
    "add-inf": (_add(_tri(-np.inf)), 0, -1e9),                           # torch SDPA is_causal, folded
    "add-finfo-min": (_add(_tri(np.finfo(np.float32).min, lead=())), 0, float(np.finfo(np.float32).min)),
    "add-1e4-offset": (_add(_tri(-1e4, t=6, offset=2)), 2, -1e4),       # a KV cache of 2 past keys
    "where": (_where(LOWER.reshape(1, 1, 4, 4), -1e9), 0, -1e9),
    "where-negated": (_where(~LOWER, -np.inf, negated=True), 0, -1e9),
    "where-folded": (_where_folded, 0, -1e9),
}


@pytest.mark.parametrize("opset", MASK_OPSETS)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_onnx_causal_mask_forms_import_as_mask(form, opset):
    build, offset, value = FORMS[form]
    t = 6 if "offset" in form else 4
    imported = check(_scores_model(opset, build, t=t))          # compared after the Softmax
    assert kinds(imported) == ["mask", "softmax"]
    op = imported.graph.ops[0]
    assert op.attrs == {"causal": True, "offset": offset, "value": pytest.approx(value)}
    assert not imported.weights                                  # the triangle is no weight


@pytest.mark.parametrize("opset", MASK_OPSETS)
def test_where_with_a_finite_fill_matches_the_masked_scores_exactly(opset):
    imported = check(_scores_model(opset, _where(LOWER, -1e9), softmax=False))
    assert kinds(imported) == ["mask"]


@pytest.mark.parametrize("opset", MASK_OPSETS)
def test_attention_with_a_causal_constant_imports_as_mask(opset):
    imported = check(_attention(opset, "div", mask="causal"))
    assert [k for k in kinds(imported) if k in ("matmul", "mask", "softmax")] == \
        ["matmul", "matmul", "mask", "softmax", "matmul"]


REFUSED = {
    "add-upper-kept": (_add(np.tril(np.full((1, 1, 4, 4), -np.inf, np.float32), -1)),
                       ["node '/Add' (Add", "constant 'causal' [1, 1, 4, 4]", "is not a causal mask",
                        "not the keys after each query"]),
    "add-small-fill": (_add(_tri(-1.0)), ["is not a causal mask", "its masked entries are -1.0"]),
    "add-two-fills": (_add(np.where(causal_mask(4, 4), np.arange(16, dtype=np.float32).reshape(4, 4) - 1e5,
                                    0).astype(np.float32).reshape(1, 1, 4, 4)), ["not one fill"]),
    "where-not-causal": (_where(np.eye(4, dtype=bool), -1e9),
                         ["node '/Where' (Where", "the condition 'cond' is not a causal mask"]),
    "where-two-fills": (_where(LOWER, np.array([-1e9, -1e8, -1e9, -1e9], np.float32)), ["the fill 'fill' takes 2 values"]),
    "where-vector": (_where(np.ones(4, bool), -1e9), ["not a causal mask: it is [4], not [..., 4, 4]"]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_masks_that_are_not_causal_are_refused_naming_the_node(case):
    build, parts = REFUSED[case]
    with pytest.raises(InstanceError) as err:
        import_onnx(_scores_model(17, build))
    for part in parts:
        assert part in str(err.value), str(err.value)


def test_where_of_a_computed_condition_is_refused():
    def build(nodes, inits, x):
        inits["zero"], inits["fill"] = np.float32(0), np.float32(-1e9)
        nodes.append(helper.make_node("Greater", [x, "zero"], ["pos"], name="/Greater"))
        nodes.append(helper.make_node("Where", ["pos", x, "fill"], ["masked"], name="/Where"))
        return "masked"
    with pytest.raises(InstanceError) as err:
        import_onnx(_scores_model(17, build))
    assert "Greater" in str(err.value)     # outside the coverage: the condition is data


# -- the pipeline, emitted and simulated -----------------------------------------------------------

def _attention_instance(heads: int, queries: int, keys: int, offset: int, tile: int) -> dict:
    d = 4
    mask = {"name": "causal", "op": "mask", "inputs": ["s"], "output": "sm", "causal": True}
    if offset:
        mask["offset"] = offset
    return {"format": "dfopt-instance/1", "name": "causal-attention", "problem": "pipeline", "platform": "u280",
            "options": {"pipeline": {"default_tile_size": tile, "overall_unroll_size": 32}},
            "operators": {
                "tensors": {"q": {"shape": [heads, queries, d], "dtype": "f32"},
                            "k": {"shape": [heads, keys, d], "dtype": "f32"},
                            "v": {"shape": [heads, keys, d], "dtype": "f32"}},
                "ops": [{"name": "qk", "op": "matmul", "inputs": ["q", "k"], "output": "s", "transpose_b": True,
                         "scale": 0.5},
                        mask,
                        {"name": "sm", "op": "softmax", "inputs": ["sm"], "output": "p"},
                        {"name": "pv", "op": "matmul", "inputs": ["p", "v"], "output": "o"}],
                "outputs": ["o"]}}


def test_tiled_mask_is_an_elementwise_kernel_on_the_scores_tiles():
    from dfopt.models.tiling import costs
    from dfopt.models.tiling.tiler import tile_graph

    g = OpGraph.from_dict(_attention_instance(2, 8, 8, 0, 4)["operators"])
    tiled = tile_graph(g, 4, 32)
    k = tiled.kernels["causal"]
    assert [(lp.name, lp.tripcount, lp.step, lp.kind) for lp in k.loops] == \
        [("d0", 1, 2, "parallel"), ("d1", 2, 4, "parallel"), ("d2", 2, 4, "parallel")]
    s_in, s_out = tiled.streams["s__causal"], tiled.streams["sm__sm"]
    assert s_in.dst_type.element == s_out.src_type.element == (2, 4, 4) and s_out.tokens == 4
    u = costs.elementwise_unroll(32, k.attrs["lanes"])
    assert k.ii == 32 // u and k.resources["dsp"] == 0


@pytest.mark.parametrize("heads,queries,keys,offset,tile", [(1, 8, 8, 0, 4), (2, 4, 8, 4, 4)],
                         ids=["1-head", "kv-cache"])
def test_causal_attention_solves_emits_and_passes_both_csim_models(tmp_path, heads, queries, keys, offset, tile):
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit
    from dfopt.models.tiling.tiler import tile_graph

    inst = from_dict(_attention_instance(heads, queries, keys, offset, tile))
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    out = tmp_path / "design"
    emit(inst, sol, out)
    bodies = P.functions((out / "kernels.cpp").read_text())
    assert any(f"k > q + {offset} ? T(-1000000000.0)" in line for line in bodies["k_causal"])
    tiled = tile_graph(inst.operators, tile, 32)
    for k in tiled.kernels.values():              # the compute loops take the cost model's II
        if k.op in ("dma_in", "dma_out"):
            continue
        stream = next(s for s in tiled.streams.values() if s.src == k.name)
        assert P.compute_cycles(bodies["k_" + re.sub(r"\W", "_", k.name)]) == k.ii * stream.src_type.tokens, k.name
    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    both_csims(out)


@pytest.mark.slow
def test_onnx_attention_with_a_causal_mask_passes_both_csim_models(tmp_path):
    """An exported attention block with a constant causal mask: imported (the mask as ``mask``),
    solved, emitted and run in both C simulation models against NumPy."""
    from dfopt.api import solve_instance
    from dfopt.frontend import onnx_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit

    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    model = tmp_path / "causal.onnx"
    model.write_bytes(_attention(17, "div", mask="causal").SerializeToString())
    data, _ = onnx_instance(str(model))
    inst = from_dict(data)
    assert "mask" in [op.op for op in inst.operators.ops]
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    out = tmp_path / "design"
    emit(inst, sol, out)
    both_csims(out)


@pytest.mark.parametrize("tile,budget", [(3, 5), (9, 64)])
def test_mask_on_odd_tiles_passes_both_csim_models(tmp_path, tile, budget):
    """Sizes that are not powers of two, several tiles along both axes or one, partial beats."""
    from dfopt.codegen.hls.emit import emit_design
    from dfopt.models.tiling.tiler import tile_graph
    from tools import tool

    g = OpGraph.from_dict({"tensors": {"x": {"shape": [2, 6, 9], "dtype": "f32"}},
                           "ops": [{"name": "m", "op": "mask", "inputs": ["x"], "output": "y", "causal": True,
                                    "offset": 3, "value": -30.0},
                                   {"name": "p", "op": "softmax", "inputs": ["y"], "output": "z"}],
                           "outputs": ["z"]})
    tiled = tile_graph(g, tile, budget)
    out = tmp_path / "d"
    emit_design(g, tiled, {}, out, seed=0)
    bodies = P.functions((out / "kernels.cpp").read_text())
    for k in tiled.kernels.values():
        if k.op not in ("dma_in", "dma_out"):
            stream = next(s for s in tiled.streams.values() if s.src == k.name)
            assert P.compute_cycles(bodies["k_" + k.name]) == k.ii * stream.src_type.tokens, k.name
    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    vitis = tool("vitis-stream")
    for target in ("csim", "csim-vitis"):
        res = subprocess.run(["make", "-s", "-C", str(out), target, f"VITIS_STREAM={vitis}"], capture_output=True,
                             text=True, timeout=600)
        assert res.returncode == 0 and "PASS" in res.stdout, (target, res.stdout[-1500:], res.stderr[-1500:])
