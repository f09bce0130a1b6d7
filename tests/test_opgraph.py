"""Operator graphs (dfopt.ir.opgraph): shape inference, faults, round trips; the NumPy reference
(dfopt.reference); the shipped pipeline instances; the operators schema fragment."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import dfopt.reference as reference_module
from dfopt.errors import InstanceError
from dfopt.ir.opgraph import OP_KINDS, SIGNATURES, OpGraph, TensorSpec, operator_issues
from dfopt.reference import STORAGE, TOLERANCES, compare, evaluate, random_inputs

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "instances" / "pipeline"
INSTANCES = sorted(PIPELINE.glob("*.json"))
SCHEMA = json.loads((ROOT / "dfopt" / "schema" / "operators-1.json").read_text())


def ffn() -> dict:
    """x [8, 4] -> matmul w1 [4, 6] -> gelu -> matmul w2 [6, 4] -> y."""
    return {"tensors": {"x": {"shape": [8, 4], "dtype": "f32"},
                        "w1": {"shape": [4, 6], "dtype": "f32", "kind": "weight"},
                        "w2": {"shape": [6, 4], "dtype": "f32", "kind": "weight"}},
            "ops": [{"name": "fc1", "op": "matmul", "inputs": ["x", "w1"], "output": "h"},
                    {"name": "act", "op": "gelu", "inputs": ["h"], "output": "g"},
                    {"name": "fc2", "op": "matmul", "inputs": ["g", "w2"], "output": "y"}],
            "outputs": ["y"]}


def single(kind: str, shapes: list, dtype: str = "f32", **attrs) -> dict:
    """One op of ``kind`` over inputs t0, t1, ... of the given shapes (or declarations)."""
    names = [f"t{i}" for i in range(len(shapes))]
    return {"tensors": {n: s if isinstance(s, dict) else {"shape": list(s), "dtype": dtype} for n, s in zip(names, shapes)},
            "ops": [{"name": "o", "op": kind, "inputs": names, "output": "y", **attrs}], "outputs": ["y"]}


def run_single(kind: str, arrays: list, dtype: str = "f64", **attrs) -> np.ndarray:
    g = OpGraph.from_dict(single(kind, [a.shape for a in arrays], dtype, **attrs))
    return evaluate(g, {f"t{i}": a for i, a in enumerate(arrays)})["y"]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# -- shape inference --------------------------------------------------------------------------------

SHAPES = [
    ("matmul", [[5, 3], [3, 7]], {}, [5, 7]),
    ("matmul", [[3, 5], [3, 7]], {"transpose_a": True}, [5, 7]),
    ("matmul", [[5, 3], [7, 3]], {"transpose_b": True, "scale": 0.5}, [5, 7]),
    ("matmul", [[2, 5, 3], [2, 3, 7]], {}, [2, 5, 7]),
    ("matmul", [[2, 4, 5, 3], [3, 7]], {}, [2, 4, 5, 7]),
    ("matmul", [[2, 3, 5], [2, 7, 3]], {"transpose_a": True, "transpose_b": True}, [2, 5, 7]),
    ("add", [[4, 6], [4, 6]], {}, [4, 6]),
    ("add", [[2, 4, 6], [6]], {}, [2, 4, 6]),
    ("mul", [[4, 6], [6]], {}, [4, 6]),
    ("gelu", [[3, 2]], {}, [3, 2]),
    ("silu", [[7]], {}, [7]),
    ("relu", [[2, 3, 4]], {}, [2, 3, 4]),
    ("softmax", [[2, 9]], {}, [2, 9]),
    ("layernorm", [[4, 6], [6], [6]], {"eps": 1e-3}, [4, 6]),
    ("rmsnorm", [[4, 6], [6]], {}, [4, 6]),
    ("transpose", [[2, 3, 4]], {"perm": [1, 2, 0]}, [3, 4, 2]),
    ("reshape", [[6, 4]], {"shape": [2, 3, 4]}, [2, 3, 4]),
    ("mask", [[2, 4, 4]], {"causal": True}, [2, 4, 4]),
    ("mask", [[3, 5]], {"causal": True, "offset": 2, "value": -1e4}, [3, 5]),
    ("sub", [[2, 4, 6], [6]], {}, [2, 4, 6]),
    ("div", [[4, 6], [4, 6]], {}, [4, 6]),
    ("unary", [[3, 2]], {"fn": "pow", "exponent": 1.5}, [3, 2]),
    ("reduce", [[2, 3, 5]], {"reduction": "max"}, [2, 3]),
    ("reduce", [[5]], {"reduction": "mean", "keepdims": True}, [1]),
    ("rope", [[2, 4, 6], [4, 6], [4, 6]], {}, [2, 4, 6]),
    ("concat", [[2, 3, 4], [2, 1, 4], [2, 3, 4]], {"axis": 1}, [2, 7, 4]),
    ("slice", [[6, 9]], {"starts": [1, 0], "ends": [5, 9], "steps": [2, 4]}, [2, 3]),
    ("expand", [[2, 1, 4]], {"shape": [3, 2, 5, 4]}, [3, 2, 5, 4]),
    ("embedding", [{"shape": [2, 3], "dtype": "i32"}, [10, 4]], {}, [2, 3, 4]),
    ("conv2d", [[1, 4, 8, 8], [6, 2, 3, 3], [6]], {"groups": 2, "strides": [2, 1], "pads": [1, 1, 1, 1]},
     [1, 6, 4, 8]),
    ("conv2d", [[2, 3, 5, 5], [4, 3, 1, 1]], {}, [2, 4, 5, 5]),
    ("pool", [[1, 2, 7, 7]], {"mode": "avg", "kernel": [3, 3], "strides": [2, 2], "count_include_pad": True},
     [1, 2, 3, 3]),
]


@pytest.mark.parametrize("kind,shapes,attrs,expected", SHAPES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SHAPES)])
def test_shape_inference(kind, shapes, attrs, expected):
    g = OpGraph.from_dict(single(kind, shapes, **attrs))
    assert g.tensors["y"] == TensorSpec("y", tuple(expected), "f32", "output")
    assert set(g.ops[0].attrs) == set(SIGNATURES[kind].attrs)  # defaults filled
    assert {k: g.ops[0].attrs[k] for k in attrs} == {k: tuple(v) if isinstance(v, list) else v
                                                       for k, v in attrs.items()}


def test_every_op_kind_has_a_shape_case():
    assert {case[0] for case in SHAPES} == set(OP_KINDS) == set(SIGNATURES)


def test_graph_queries_and_flops():
    g = OpGraph.from_dict(ffn())
    assert list(g.tensors) == ["x", "w1", "w2", "h", "g", "y"]
    assert [t.kind for t in g.tensors.values()] == ["input", "weight", "weight", "intermediate",
                                                    "intermediate", "output"]
    assert g.inputs == ("x", "w1", "w2")
    assert g.producer("x") is None and g.producer("h").name == "fc1"
    assert [op.name for op in g.consumers("g")] == ["fc2"] and g.consumers("y") == []
    assert g.flops("fc1") == 2 * 8 * 6 * 4 and g.flops(g.ops[1]) == 8 * 6 * 8
    assert g.total_flops() == 2 * 8 * 6 * 4 + 8 * 6 * 8 + 2 * 8 * 4 * 6
    batched = OpGraph.from_dict(single("matmul", [[3, 4, 5], [3, 5, 6]]))
    assert batched.flops("o") == 2 * 3 * 4 * 6 * 5
    moves = OpGraph.from_dict(single("transpose", [[3, 4]], perm=[1, 0]))
    assert moves.flops("o") == 0
    assert OpGraph.from_dict(single("add", [[3, 4], [3, 4]])).tensors["y"].size == 12


def test_ops_in_any_file_order_come_out_topological():
    d = ffn()
    d["ops"].reverse()
    g = OpGraph.from_dict(d)
    assert [op.name for op in g.ops] == ["fc1", "act", "fc2"]
    assert list(g.tensors)[3:] == ["h", "g", "y"]


def test_unused_results_are_allowed_and_listed():
    d = ffn()
    d["ops"].append({"name": "spare", "op": "relu", "inputs": ["h"], "output": "dead"})
    d["tensors"]["idle"] = {"shape": [2], "dtype": "f32"}
    g = OpGraph.from_dict(d)
    assert g.unused() == ["idle", "dead"]
    assert operator_issues(d, ("operators",)) == []


def test_declared_intermediate_is_checked_and_not_an_input():
    d = ffn()
    d["tensors"]["h"] = {"shape": [8, 6], "dtype": "f32"}
    g = OpGraph.from_dict(d)
    assert g.tensors["h"].kind == "intermediate" and "h" not in g.inputs
    assert list(g.tensors) == ["x", "w1", "w2", "h", "g", "y"]


# -- faults -----------------------------------------------------------------------------------------

def mutate(path, value):
    """ffn() with the value at ``path`` (keys and indices) replaced; ``value`` may be a function."""
    d = ffn()
    *head, last = path
    node = d
    for key in head:
        node = node[key]
    node[last] = value(node[last]) if callable(value) else value
    return d


def with_op(index, **fields):
    d = ffn()
    d["ops"][index].update(fields)
    return d


FAULTS = {
    "unknown_op": (with_op(1, op="gelux"), "/operators/ops/1/op", ["op act", "unknown op 'gelux'", "did you mean 'gelu'"]),
    "unknown_tensor": (mutate(("ops", 2, "inputs", 1), "w2x"), "/operators/ops/2/inputs/1",
                       ["op fc2 (matmul)", "unknown tensor 'w2x', did you mean 'w2'?"]),
    "produced_twice": (with_op(1, output="h"), "/operators/ops/1/output",
                       ["op act (gelu)", "'h' is already produced by op fc1", "/operators/ops/0"]),
    "declared_input_and_produced": (mutate(("tensors", "h"), {"shape": [8, 6], "dtype": "f32", "kind": "input"}),
                                    "/operators/ops/0/output", ["op fc1 (matmul)", "declared as a graph input"]),
    "matmul_inner": (mutate(("tensors", "w2", "shape"), [4, 4]), "/operators/ops/2/inputs/1",
                     ["op fc2 (matmul): A is [8, 6] but B is [4, 4]: inner dimensions 6 and 4 differ"]),
    "matmul_transposed_inner": (with_op(0, transpose_b=True), "/operators/ops/0/inputs/1",
                                ["op fc1 (matmul)", "B is [4, 6] (transposed)", "inner dimensions 4 and 6 differ"]),
    "matmul_rank": (mutate(("tensors", "x", "shape"), [4]), "/operators/ops/0/inputs/0",
                    ["op fc1 (matmul)", "A ('x') is [4]", "rank >= 2"]),
    "matmul_batch": (mutate(("tensors", "w1", "shape"), [3, 4, 6]), "/operators/ops/0/inputs/1",
                     ["op fc1 (matmul)", "batch dimensions [] and [3] differ"]),
    "dtype_mismatch": (mutate(("tensors", "w1", "dtype"), "f16"), "/operators/ops/0/inputs/1",
                       ["op fc1 (matmul)", "'x' is f32 but 'w1' is f16"]),
    "float_only_op_on_ints": (mutate(("tensors",), lambda t: {k: {**v, "dtype": "i8"} for k, v in t.items()}),
                              "/operators/ops/1/inputs/0", ["op act (gelu)", "needs a float dtype", "'h' is i8"]),
    "fractional_int_scale": (mutate(("tensors",), lambda t: {k: {**v, "dtype": "i32"} for k, v in t.items()})
                             | {"ops": [{"name": "fc1", "op": "matmul", "inputs": ["x", "w1"], "output": "y",
                                         "scale": 0.5}]},
                             "/operators/ops/0/scale", ["op fc1 (matmul)", "scale 0.5 needs a float dtype"]),
    "missing_input": (mutate(("ops", 0, "inputs"), ["x"]), "/operators/ops/0/inputs",
                      ["op fc1 (matmul)", "expected 2 inputs (A, B), got 1"]),
    "extra_input": (mutate(("ops", 1, "inputs"), ["h", "x"]), "/operators/ops/1/inputs/1",
                    ["op act (gelu)", "expected 1 input (x), got 2"]),
    "unknown_attr": (with_op(0, transpose_c=True), "/operators/ops/0/transpose_c",
                     ["op fc1 (matmul)", "unknown attribute 'transpose_c'", "did you mean", "transpose_a"]),
    "attr_on_attrless_op": (with_op(1, eps=0.1), "/operators/ops/1/eps", ["op act (gelu)", "gelu takes: approximate"]),
    "gelu_form": (with_op(1, approximate="erf"), "/operators/ops/1/approximate", ["erf"]),
    "attr_type": (with_op(0, transpose_b="yes"), "/operators/ops/0/transpose_b", ["op fc1 (matmul)", "true or false"]),
    "duplicate_op_name": (with_op(2, name="fc1"), "/operators/ops/2/name", ["duplicate op name 'fc1'", "/operators/ops/0"]),
    "output_is_input": (mutate(("outputs",), ["x"]), "/operators/outputs/0", ["output 'x' is a graph input"]),
    "output_unknown": (mutate(("outputs",), ["yy"]), "/operators/outputs/0", ["unknown tensor 'yy'", "did you mean 'y'"]),
    "cycle": (mutate(("ops", 0, "inputs", 0), "g"), "/operators/ops/0/inputs/0",
              ["op fc1 (matmul)", "cycle fc1 -> act -> fc1", "'h', 'g'"]),
    "declared_shape_disagrees": (mutate(("tensors", "g"), {"shape": [8, 7]}), "/operators/tensors/g/shape",
                                 ["declared with shape [8, 7]", "op act (gelu) produces [8, 6]"]),
    "input_without_dtype": (mutate(("tensors", "x"), {"shape": [8, 4]}), "/operators/tensors/x",
                            ["tensor 'x' is a graph input", "needs a dtype"]),
    "unknown_dtype": (mutate(("tensors", "x", "dtype"), "f33"), "/operators/tensors/x/dtype", ["unknown dtype 'f33'"]),
    "bad_shape": (mutate(("tensors", "x", "shape"), [8, 0]), "/operators/tensors/x/shape", ["positive integers"]),
    "unknown_top_field": (mutate(("graph",), {}), "/operators/graph", ["unknown field 'graph'"]),
    "empty_ops": (mutate(("ops",), []), "/operators/ops", ["expected a non-empty array, got []"]),
}


def single_fault(kind, shapes, attrs, pointer, parts, dtypes=None):
    d = single(kind, shapes, **attrs)
    for name, dtype in (dtypes or {}).items():
        d["tensors"][name]["dtype"] = dtype
    return d, pointer, ["op o (" + kind + ")"] + parts


FAULTS.update({
    "bad_perm_length": single_fault("transpose", [[2, 3, 4]], {"perm": [1, 0]}, "/operators/ops/0/perm",
                                    ["perm [1, 0] has 2 entries", "[2, 3, 4] (rank 3)"]),
    "bad_perm_repeat": single_fault("transpose", [[2, 3]], {"perm": [0, 0]}, "/operators/ops/0/perm",
                                    ["perm [0, 0] is not a permutation of 0..1"]),
    "missing_perm": single_fault("transpose", [[2, 3]], {}, "/operators/ops/0", ["missing attribute 'perm'"]),
    "reshape_count": single_fault("reshape", [[6, 4]], {"shape": [5, 5]}, "/operators/ops/0/shape",
                                  ["shape [5, 5] has 25 elements", "[6, 4] with 24"]),
    "reshape_minus_one": single_fault("reshape", [[6, 4]], {"shape": [6, -1]}, "/operators/ops/0/shape",
                                      ["-1", "write every dimension out"]),
    "add_shapes": single_fault("add", [[4, 6], [4]], {}, "/operators/ops/0/inputs/1",
                               ["'t0' is [4, 6] but input 't1' is [4]", "vector [6]"]),
    "layernorm_gamma": single_fault("layernorm", [[4, 6], [4], [6]], {}, "/operators/ops/0/inputs/1",
                                    ["gamma 't1' is [4]", "shape [6]"]),
    "eps_negative": single_fault("rmsnorm", [[4, 6], [6]], {"eps": -1}, "/operators/ops/0/eps", ["positive number"]),
    "norm_dtypes": single_fault("rmsnorm", [[4, 6], [6]], {}, "/operators/ops/0/inputs/1", ["'t1' is f16"],
                                {"t1": "f16"}),
    "mask_missing_causal": single_fault("mask", [[4, 4]], {}, "/operators/ops/0", ["missing attribute 'causal'"]),
    "mask_not_causal": single_fault("mask", [[4, 4]], {"causal": False}, "/operators/ops/0/causal",
                                    ["causal: false is not supported", "only the causal mask"]),
    "mask_offset": single_fault("mask", [[4, 4]], {"causal": True, "offset": -1}, "/operators/ops/0/offset",
                                ["offset: expected a non-negative integer", "got -1"]),
    "mask_value": single_fault("mask", [[4, 4]], {"causal": True, "value": "-inf"}, "/operators/ops/0/value",
                               ["value: expected a number"]),
    "mask_rank": single_fault("mask", [[4]], {"causal": True}, "/operators/ops/0/inputs/0",
                              ["input 't0' is [4]: a mask needs rank >= 2", "[query, key]"]),
    "mask_ints": single_fault("mask", [[4, 4]], {"causal": True}, "/operators/ops/0/inputs/0",
                              ["needs a float dtype", "'t0' is i32"], {"t0": "i32"}),
})


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_is_reported_with_op_and_pointer(name):
    d, pointer, parts = FAULTS[name]
    with pytest.raises(InstanceError) as info:
        OpGraph.from_dict(d)
    err = info.value
    assert err.pointer == pointer, str(err)
    first = err.problems[0].message
    for part in parts:
        assert part in first, (part, first)
    issues = operator_issues(d, ("operators",))
    assert issues and issues[0][1] == first
    assert [p.message for p in err.problems] == [message for _, message in issues]


def test_faults_are_all_collected_and_do_not_cascade():
    d = ffn()
    d["ops"][0]["inputs"] = ["x", "w9"]   # fc1 cannot be shaped: act and fc2 are not blamed
    d["ops"][2]["op"] = "matmull"
    issues = operator_issues(d, ("root",))
    assert [path for path, _ in issues] == [("root", "ops", 0, "inputs", 1), ("root", "ops", 2, "op")]


def test_non_object_inputs_are_reported_not_raised():
    assert operator_issues([1, 2], ("operators",))[0][0] == ("operators",)
    d = ffn()
    d["ops"].append("relu")
    d["tensors"]["z"] = 3
    paths = [path for path, _ in operator_issues(d, ())]
    assert paths == [("ops", 3), ("tensors", "z")]
    with pytest.raises(InstanceError):
        OpGraph.from_dict(None)


def paths(node, prefix=()):
    """Every path (keys and indices) into a JSON value."""
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from paths(child, prefix + (key,))


JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 9) | st.floats(allow_nan=False)
                    | st.sampled_from(["x", "h", "y", "w1", "f32", "i8", "matmul", "relu", ""]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                        ["shape", "dtype", "kind", "name", "op", "inputs", "output", "perm", "x"]), inner, max_size=3),
                    max_leaves=6)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_damage_is_reported_never_raised(data):
    d = ffn()
    path = data.draw(st.sampled_from(list(paths(d))[1:]))
    *head, last = path
    node = d
    for key in head:
        node = node[key]
    if data.draw(st.booleans()) and isinstance(node, dict):
        del node[last]
    else:
        node[last] = data.draw(JSON)
    issues = operator_issues(d, ("operators",))
    try:
        g = OpGraph.from_dict(d)
    except InstanceError as err:
        assert issues and [p.message for p in err.problems] == [m for _, m in issues]
    else:
        assert not issues and OpGraph.from_dict(g.to_dict()) == g


# -- round trips ------------------------------------------------------------------------------------

def test_round_trip():
    d = ffn()
    d["ops"][0]["scale"] = 0.5
    d["ops"][0]["transpose_a"] = False  # a default: dropped by to_dict
    g = OpGraph.from_dict(d)
    out = g.to_dict()
    assert "transpose_a" not in out["ops"][0] and out["ops"][0]["scale"] == 0.5
    assert OpGraph.from_dict(out) == g
    assert OpGraph.from_dict(out).to_dict() == out
    assert json.loads(json.dumps(out)) == out


# -- the reference ----------------------------------------------------------------------------------

def test_matmul_transposes_scale_and_batch():
    a, b = rng().standard_normal((5, 3)), rng(1).standard_normal((3, 7))
    np.testing.assert_allclose(run_single("matmul", [a, b]), a @ b)
    np.testing.assert_allclose(run_single("matmul", [a.T.copy(), b], transpose_a=True), a @ b)
    np.testing.assert_allclose(run_single("matmul", [a, b.T.copy()], transpose_b=True, scale=0.25), 0.25 * a @ b)
    batch = rng(2).standard_normal((2, 4, 5, 3))
    np.testing.assert_allclose(run_single("matmul", [batch, b]), np.einsum("xymk,kn->xymn", batch, b))
    bb = rng(3).standard_normal((2, 4, 7, 3))
    np.testing.assert_allclose(run_single("matmul", [batch, bb], transpose_b=True),
                               np.einsum("xymk,xynk->xymn", batch, bb))


def test_elementwise_ops_against_formulas():
    x = rng().standard_normal((4, 6)) * 3
    v = rng(1).standard_normal(6)
    np.testing.assert_allclose(run_single("add", [x, v]), x + v[None, :])
    np.testing.assert_allclose(run_single("mul", [x, x]), x * x)
    gelu = [0.5 * t * (1 + math.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3))) for t in x.ravel()]
    np.testing.assert_allclose(run_single("gelu", [x]).ravel(), gelu, rtol=1e-12)
    silu = [t / (1 + math.exp(-t)) for t in x.ravel()]
    np.testing.assert_allclose(run_single("silu", [x]).ravel(), silu, rtol=1e-12)
    np.testing.assert_array_equal(run_single("relu", [x]), np.where(x > 0, x, 0))
    assert run_single("silu", [np.array([-1e5, 1e5])]).tolist() == [-0.0, 1e5]


def test_softmax_rows_sum_to_one_and_is_stable():
    x = rng().standard_normal((3, 5))
    p = run_single("softmax", [x])
    np.testing.assert_allclose(p.sum(axis=-1), 1)
    np.testing.assert_allclose(p, np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True))
    big = run_single("softmax", [x + 1000.0], dtype="f32")
    assert np.isfinite(big).all()
    np.testing.assert_allclose(big, p, atol=1e-4)  # x + 1000 in f32 keeps ~4 digits of x


def test_norms():
    x = rng().standard_normal((4, 16)) * 3 + 2
    plain = run_single("layernorm", [x, np.ones(16), np.zeros(16)])
    np.testing.assert_allclose(plain.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(plain.var(axis=-1), 1, rtol=1e-5)  # eps 1e-5 against var ~9
    gamma, beta = rng(1).standard_normal(16), rng(2).standard_normal(16)
    np.testing.assert_allclose(run_single("layernorm", [x, gamma, beta]), plain * gamma + beta)
    rms = run_single("rmsnorm", [x, gamma], eps=1e-3)
    np.testing.assert_allclose(rms, x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-3) * gamma)


def test_transpose_and_reshape():
    x = rng().standard_normal((2, 3, 4))
    np.testing.assert_array_equal(run_single("transpose", [x], perm=[2, 0, 1]), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(run_single("reshape", [x], shape=[6, 4]), x.reshape(6, 4))


def test_dtypes_of_results():
    x = rng().standard_normal((3, 4))
    assert run_single("gelu", [x], dtype="f16").dtype == np.float16
    assert run_single("gelu", [x], dtype="f32").dtype == np.float32
    bf = run_single("softmax", [x], dtype="bf16")
    assert bf.dtype == np.float32 and not (bf.view(np.uint32) & 0xFFFF).any()  # bf16 values
    np.testing.assert_array_equal(reference_module.to_bf16(bf), bf)
    wrapped = run_single("add", [np.array([100, -100]), np.array([100, -100])], dtype="i8")
    assert wrapped.dtype == np.int8 and wrapped.tolist() == [-56, 56]
    scaled = run_single("matmul", [np.array([[1, 2]]), np.array([[3], [4]])], dtype="i32", scale=3)
    assert scaled.tolist() == [[33]]


def test_evaluate_refuses_bad_inputs():
    g = OpGraph.from_dict(ffn())
    good = random_inputs(g, 0)
    with pytest.raises(ValueError, match="needs a value for weight 'w2'"):
        evaluate(g, {k: v for k, v in good.items() if k != "w2"})
    with pytest.raises(ValueError, match=r"declared \[8, 4\]"):
        evaluate(g, {**good, "x": np.zeros((4, 8))})
    with pytest.raises(ValueError, match="not graph inputs"):
        evaluate(g, {**good, "h": np.zeros((8, 6))})


def test_random_inputs_are_deterministic_and_scaled_by_role():
    d = {"tensors": {"x": {"shape": [64, 256], "dtype": "f64"},
                     "g": {"shape": [256], "dtype": "f64", "kind": "weight"},
                     "b": {"shape": [256], "dtype": "f64", "kind": "weight"},
                     "w": {"shape": [256, 64], "dtype": "f64", "kind": "weight"}},
         "ops": [{"name": "n", "op": "layernorm", "inputs": ["x", "g", "b"], "output": "h"},
                 {"name": "m", "op": "matmul", "inputs": ["h", "w"], "output": "y"}], "outputs": ["y"]}
    g = OpGraph.from_dict(d)
    a, b = random_inputs(g, 3), random_inputs(g, 3)
    assert all(np.array_equal(a[k], b[k]) for k in a) and not np.array_equal(a["x"], random_inputs(g, 4)["x"])
    assert abs(a["x"].std() - 0.5) < 0.05 and abs(a["g"].mean() - 1) < 0.05 and abs(a["b"].std() - 0.1) < 0.03
    assert abs(a["w"].std() - 1 / 16) < 0.01
    d["tensors"]["extra"] = {"shape": [3], "dtype": "f64"}  # another tensor leaves the others' values alone
    assert np.array_equal(random_inputs(OpGraph.from_dict(d), 3)["x"], a["x"])


def test_compare():
    e = np.array([1.0, -2.0, 0.0, np.inf])
    assert compare(e, e.copy(), "f32") == (True, 0.0, 0.0)
    ok, abs_err, rel_err = compare(e, e + np.array([0, 2e-4, 5e-5, 0]), "f32")
    assert ok and abs_err == pytest.approx(2e-4) and rel_err == pytest.approx(1e-4)
    assert not compare(e, e + np.array([0, 1e-3, 0, 0]), "f32")[0]
    assert compare(e, e[:3], "f32") == (False, math.inf, math.inf)
    assert compare(e, np.array([1.0, -2.0, np.nan, np.inf]), "f32")[:2] == (False, math.inf)
    assert compare(np.array([np.nan]), np.array([np.nan]), "f32")[0]
    assert not compare(np.array([3], np.int8), np.array([4], np.int8), "i8")[0]
    assert set(TOLERANCES) == set(STORAGE)


# -- random chains (hypothesis) ---------------------------------------------------------------------

@st.composite
def chains(draw):
    """A random chain of ops over consistent shapes, with the shapes it must infer."""
    dtype = draw(st.sampled_from(["f32", "f64", "f16", "bf16", "i32", "i8"]))
    floats = dtype in ("f32", "f64", "f16", "bf16")
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    tensors = {"t0": {"shape": list(shape), "dtype": dtype}}
    ops, expected, cur = [], {"t0": shape}, "t0"

    def weight(shape):
        name = f"w{len(tensors)}"
        tensors[name] = {"shape": list(shape), "dtype": dtype, "kind": "weight"}
        expected[name] = tuple(shape)
        return name

    for i in range(draw(st.integers(1, 8))):
        kinds = ["relu", "add", "mul", "transpose", "reshape"] + ["matmul"] * (len(shape) >= 2)
        kinds += ["gelu", "silu", "softmax", "layernorm", "rmsnorm"] if floats else []
        kinds += ["mask"] if floats and len(shape) >= 2 else []
        kind = draw(st.sampled_from(kinds))
        op, out = {"name": f"op{i}", "op": kind, "inputs": [cur]}, f"t{i + 1}"
        if kind == "matmul":
            ta, tb = draw(st.booleans()), draw(st.booleans())
            m, k = (shape[-1], shape[-2]) if ta else (shape[-2], shape[-1])
            n = draw(st.integers(1, 5))
            batch = shape[:-2] if draw(st.booleans()) else ()
            op["inputs"].append(weight(batch + ((n, k) if tb else (k, n))))
            op.update(transpose_a=ta, transpose_b=tb, scale=draw(st.sampled_from([1, 2, 0.5] if floats else [1, 2])))
            shape = shape[:-2] + (m, n)
        elif kind in ("add", "mul"):
            op["inputs"].append(weight(draw(st.sampled_from([shape, shape[-1:]]))))
        elif kind in ("layernorm", "rmsnorm"):
            op["inputs"] += [weight(shape[-1:]) for _ in range(2 if kind == "layernorm" else 1)]
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            op["perm"] = list(perm)
            shape = tuple(shape[p] for p in perm)
        elif kind == "mask":   # a moderate fill keeps chains of masks and matmuls finite
            op.update(causal=True, offset=draw(st.integers(0, 2)), value=draw(st.sampled_from([-4.0, -30.0])))
        elif kind == "reshape":
            shape = draw(st.sampled_from([(math.prod(shape),), shape[::-1], (1,) + shape]))
            op["shape"] = list(shape)
        op["output"] = out
        ops.append(op)
        expected[out], cur = shape, out
    return {"tensors": tensors, "ops": ops, "outputs": [cur]}, expected, dtype


@settings(max_examples=60, deadline=None)
@given(chains(), st.integers(0, 3))
def test_random_chains_infer_and_evaluate(case, seed):
    d, expected, dtype = case
    g = OpGraph.from_dict(d)
    assert {name: spec.shape for name, spec in g.tensors.items()} == expected
    assert OpGraph.from_dict(g.to_dict()) == g
    values = evaluate(g, random_inputs(g, seed))
    for name, spec in g.tensors.items():
        assert values[name].shape == spec.shape and values[name].dtype == STORAGE[dtype]
        if dtype in ("f32", "f64", "bf16"):
            assert np.isfinite(values[name]).all(), name


# -- the shipped instances --------------------------------------------------------------------------

EXPECTED = {"ffn": (5, 10), "mha": (15, 20), "gpt2-block": (28, 45), "llama-block": (24, 34)}


def load(path: Path) -> tuple[dict, OpGraph]:
    data = json.loads(path.read_text())
    return data, OpGraph.from_dict(data["operators"])


def test_the_four_instances_ship():
    assert sorted(p.stem for p in INSTANCES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_instance_loads_and_evaluates(path):
    data, g = load(path)
    assert data["format"] == "dfopt-instance/1" and data["name"] == path.stem
    assert data["problem"] == "pipeline" and data["platform"] == "u280" and data["description"]
    assert set(data) == {"format", "name", "problem", "description", "platform", "operators", "options"}
    assert data["options"] == {"pipeline": {}}
    assert (len(g.ops), len(g.tensors)) == EXPECTED[path.stem]
    assert g.unused() == [] and OpGraph.from_dict(g.to_dict()) == g
    values = evaluate(g, random_inputs(g, 0))
    for name in g.outputs:
        assert np.isfinite(values[name]).all()
        assert 0.01 < float(values[name].std()) < 10  # well conditioned
    assert not list(Draft202012Validator(SCHEMA).iter_errors(data["operators"]))


def test_attention_shapes():
    _, g = load(PIPELINE / "mha.json")
    assert g.tensors["q_h"].shape == (8, 64, 16) and g.tensors["s"].shape == (8, 64, 64)
    assert g.op("scores").attrs == {"transpose_a": False, "transpose_b": True, "scale": 0.25}
    assert g.tensors["attn"].shape == (64, 128)
    _, g = load(PIPELINE / "gpt2-block.json")
    assert g.tensors["attn_s"].shape == (12, 32, 32) and g.tensors["fc_out"].shape == (32, 3072)


@pytest.mark.parametrize("path", [PIPELINE / "mha.json", PIPELINE / "llama-block.json"], ids=lambda p: p.stem)
def test_tolerances_cover_evaluation_in_each_float_dtype(path):
    """Evaluating in f32, f16 or bf16 stays within TOLERANCES of the same graph in f64."""
    _, g = load(path)
    as_dtype = {}
    for dtype in ("f64", "f32", "f16", "bf16"):
        d = g.to_dict()
        for spec in d["tensors"].values():
            spec["dtype"] = dtype
        as_dtype[dtype] = OpGraph.from_dict(d)
    inputs = random_inputs(as_dtype["f64"], 1)
    exact = evaluate(as_dtype["f64"], inputs)
    for dtype in ("f32", "f16", "bf16"):
        values = evaluate(as_dtype[dtype], inputs)
        for name in g.tensors:
            ok, abs_err, rel_err = compare(exact[name], values[name], dtype)
            assert ok, (dtype, name, abs_err, rel_err)


# -- the schema fragment ----------------------------------------------------------------------------

def test_schema_fragment_agrees_with_the_signatures():
    Draft202012Validator.check_schema(SCHEMA)
    item = SCHEMA["properties"]["ops"]["items"]
    assert item["properties"]["op"]["enum"] == list(OP_KINDS)
    by_kind = {rule["if"]["properties"]["op"]["const"]: rule["then"] for rule in item["allOf"]}
    assert list(by_kind) == list(OP_KINDS)
    for kind, then in by_kind.items():
        sig = SIGNATURES[kind]
        assert set(then["properties"]) == {"name", "op", "inputs", "output"} | set(sig.attrs)
        if sig.variadic:        # concat: x1..xn, at least one
            assert then["properties"]["inputs"]["minItems"] == 1 and "maxItems" not in then["properties"]["inputs"]
        else:                   # conv2d: B optional
            assert then["properties"]["inputs"]["minItems"] == len(sig.inputs) - sig.optional
            assert then["properties"]["inputs"]["maxItems"] == len(sig.inputs)
        assert then.get("required", []) == [a for a, v in sig.attrs.items() if v is None]
        assert set(sig.attrs) <= set(item["properties"])


def test_schema_fragment_rejects_what_the_checks_reject():
    validator = Draft202012Validator(SCHEMA)
    for name in ("unknown_op", "missing_input", "unknown_attr", "attr_type", "unknown_dtype", "bad_shape",
                 "unknown_top_field", "empty_ops", "missing_perm", "eps_negative", "attr_on_attrless_op",
                 "mask_missing_causal", "mask_not_causal", "mask_offset", "mask_value"):
        assert list(validator.iter_errors(FAULTS[name][0])), name
    assert not list(validator.iter_errors(ffn()))
