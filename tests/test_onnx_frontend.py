"""The ONNX front end (dfopt.frontend, docs/onnx.md): every supported op at several opsets, every
pattern rewrite as torch.onnx writes it, the faults through the CLI, random graphs, and the shipped
models end to end. Each import is checked numerically: ``onnx.reference.ReferenceEvaluator`` on the
model against ``dfopt.reference.evaluate`` on the imported operator graph, fed the model's
initializer values (and the constants the import derived from them) as the weights."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from csim import both_csims
from dfopt.cli import main
from dfopt.errors import InstanceError
from dfopt.frontend import from_onnx, from_torch, import_onnx
from dfopt.instance import load
from dfopt.reference import compare, evaluate

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("make_onnx_models", ROOT / "benchmarks" / "make_onnx_models.py")
assert _spec is not None and _spec.loader is not None
models = importlib.util.module_from_spec(_spec)
sys.modules["make_onnx_models"] = models
_spec.loader.exec_module(models)
Builder = models.Builder

OPSETS = (13, 17, 18, 21, 23)
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset, inits=(), elem=F):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, elem, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, elem, s) for n, s in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _w(*shape, mean=0.0, seed=1):
    return (mean + np.random.default_rng(seed).standard_normal(shape)).astype(np.float32)


def check(model, atol=None, reference=None, feeds=None, **kw):
    """Import ``model``, run both evaluators on random inputs, compare every output; the import.
    ``reference``: the model ``onnx.reference`` runs instead (same inputs and outputs); ``feeds``:
    the values of some inputs by ONNX name (token ids in range), the others random."""
    imported = import_onnx(model, **kw)
    rng = np.random.default_rng(0)
    feeds = dict(feeds or {})
    for value in model.graph.input:
        if value.name in {t.name for t in model.graph.initializer} or value.name in feeds:
            continue
        name = imported.names.get(value.name)
        shape = imported.graph.tensors[name].shape if name in imported.graph.tensors else \
            [d.dim_value for d in value.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    expected = ReferenceEvaluator(reference or model).run(None, feeds)
    values = evaluate(imported.graph, imported.feeds(feeds))
    for out, want in zip(model.graph.output, expected):
        got = values[imported.names[out.name]]
        assert got.shape == want.shape
        dtype = imported.graph.tensors[imported.names[out.name]].dtype
        if atol is None:
            ok, err, _ = compare(want, got, dtype)
            assert ok, f"{out.name}: max abs error {err}"
        else:
            np.testing.assert_allclose(got, want, atol=atol, rtol=atol)
    for name, value in imported.weights.items():        # weights named after an initializer are its value
        init = next((t for t in model.graph.initializer if t.name.replace(".", "_") == name), None)
        if init is not None:
            np.testing.assert_array_equal(value, numpy_helper.to_array(init))
    return imported


def kinds(imported):
    return [op.op for op in imported.graph.ops]


# == every supported op at every opset where it exists ============================================

def _c(b: Builder, value, dtype=np.float32):
    return b.node("Constant", [], "", value=numpy_helper.from_array(np.asarray(value, dtype=dtype)))


def _ints(b: Builder, values):
    return _c(b, values, np.int64)


def case_matmul_2d(b):
    y = b.node("MatMul", ["x", b.init("w", _w(16, 12))])
    return [("x", [8, 16])], [(y, [8, 12])], ["matmul"]


def case_matmul_batched(b):
    y = b.node("MatMul", ["x", "z"])
    return [("x", [2, 8, 16]), ("z", [2, 16, 4])], [(y, [2, 8, 4])], ["matmul"]


def case_matmul_shared_b(b):
    y = b.node("MatMul", ["x", b.init("w", _w(16, 4))])
    return [("x", [2, 3, 8, 16])], [(y, [2, 3, 8, 4])], ["matmul"]


def case_matmul_size1_batch(b):
    y = b.node("MatMul", ["x", b.init("w", _w(1, 16, 4))])
    return [("x", [2, 8, 16])], [(y, [2, 8, 4])], ["matmul"]


def case_gemm(b):
    y = b.node("Gemm", ["x", b.init("w", _w(12, 16)), b.init("c", _w(12))], transB=1, alpha=0.5, beta=2.0)
    return [("x", [8, 16])], [(y, [8, 12])], ["matmul", "add"]


def case_gemm_trans_a_computed_c(b):
    y = b.node("Gemm", ["x", b.init("w", _w(16, 12)), "c"], transA=1)
    return [("x", [16, 8]), ("c", [8, 12])], [(y, [8, 12])], ["matmul", "add"]


def case_gemm_no_c(b):
    y = b.node("Gemm", ["x", b.init("w", _w(16, 12))])
    return [("x", [8, 16])], [(y, [8, 12])], ["matmul"]


def case_add(b):
    y = b.node("Add", [b.init("bias", _w(16)), b.node("Add", ["x", "z"])])
    return [("x", [4, 8, 16]), ("z", [4, 8, 16])], [(y, [4, 8, 16])], ["add", "add"]


def case_add_vector_tensor(b):
    y = b.node("Add", ["z", "x"])                  # a computed vector, first
    return [("x", [4, 16]), ("z", [1, 16])], [(y, [4, 16])], ["add"]                  # [1, 16] broadcasts as it is


def case_add_scalar_and_zero(b):
    y = b.node("Add", [b.node("Add", ["x", _c(b, 0.5)]), _c(b, 0.0)])
    return [("x", [4, 16])], [(y, [4, 16])], ["add", "reshape"]


def case_mul(b):
    y = b.node("Mul", [b.node("Mul", ["x", b.init("g", _w(1, 1, 16))]), "z"])
    return [("x", [2, 8, 16]), ("z", [2, 8, 16])], [(y, [2, 8, 16])], ["mul", "mul"]


def case_mul_full_constant(b):
    y = b.node("Mul", ["x", b.init("g", _w(8, 16))])
    return [("x", [8, 16])], [(y, [8, 16])], ["mul"]


def case_sub(b):
    y = b.node("Sub", ["x", b.init("mu", _w(16))])
    return [("x", [8, 16])], [(y, [8, 16])], ["add"]


def case_div(b):
    y = b.node("Div", ["x", _c(b, 4.0)])
    return [("x", [8, 16])], [(y, [8, 16])], ["mul"]


def case_relu(b):
    return [("x", [8, 16])], [(b.node("Relu", ["x"]), [8, 16])], ["relu"]


def case_softmax(b):
    y = b.node("Softmax", [b.node("Softmax", ["x"], axis=-1)], axis=2)
    return [("x", [2, 8, 16])], [(y, [2, 8, 16])], ["softmax", "softmax"]


def case_layernorm(b):
    if b.opset < 17:
        return None
    y = b.node("LayerNormalization", ["x", b.init("g", _w(16, mean=1)), b.init("beta", _w(16))], epsilon=1e-3)
    y = b.node("LayerNormalization", [y, b.init("g2", _w(16, mean=1))], axis=2)
    return [("x", [2, 8, 16])], [(y, [2, 8, 16])], ["layernorm", "layernorm"]


def case_gelu_tanh_op(b):
    if b.opset < 20:
        return None
    return [("x", [8, 16])], [(b.node("Gelu", ["x"], approximate="tanh"), [8, 16])], ["gelu"]


def case_transpose(b):
    y = b.node("Transpose", [b.node("Transpose", ["x"], perm=[1, 0, 2])])
    return [("x", [2, 8, 16])], [(y, [16, 2, 8])], ["transpose", "transpose"]


def case_reshape(b):
    y = b.node("Reshape", ["x", _ints(b, [0, -1])])
    y = b.node("Reshape", [y, _ints(b, [2, 8, 16])])        # back: a no-op is still the graph output
    return [("x", [2, 8, 16])], [(y, [2, 8, 16])], ["reshape", "reshape"]


def case_reshape_from_shape_chain(b):
    shape = b.node("Shape", ["x"])
    dims = [b.node("Unsqueeze", [b.node("Gather", [shape, _c(b, i, np.int64)], axis=0), _ints(b, [0])])
            for i in (0, 1)]
    target = b.node("Concat", dims + [_ints(b, [4, -1])], axis=0)
    y = b.node("Reshape", ["x", target])
    return [("x", [2, 8, 16])], [(y, [2, 8, 4, 4])], ["reshape"]


def case_flatten(b):
    y = b.node("Flatten", ["x"], axis=2)
    return [("x", [2, 3, 4, 5])], [(y, [6, 20])], ["reshape"]


def case_squeeze_unsqueeze(b):
    y = b.node("Relu", [b.node("Unsqueeze", ["x", _ints(b, [0])])])
    y = b.node("Squeeze", [y, _ints(b, [0])])
    return [("x", [8, 16])], [(y, [8, 16])], ["reshape", "relu", "reshape"]


def case_identity_dropout(b):
    y = b.node("Identity", [b.node("Dropout", [b.node("Relu", ["x"])])])
    return [("x", [8, 16])], [(y, [8, 16])], ["relu"]


def case_cast(b):
    scale = b.node("Cast", [_c(b, 2.0, np.float64)], to=TensorProto.FLOAT)      # a Cast of a constant: folded
    y = b.node("Cast", [b.node("Mul", [b.node("Cast", ["x"], to=TensorProto.FLOAT), scale])], to=TensorProto.FLOAT)
    return [("x", [8, 16])], [(y, [8, 16])], ["mul"]


def case_constant_of_shape(b):
    c = b.node("ConstantOfShape", [_ints(b, [16])], value=numpy_helper.from_array(np.array([0.25], np.float32)))
    return [("x", [8, 16])], [(b.node("Add", ["x", c]), [8, 16])], ["add"]


CASES = {name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}
OP_MATRIX = [(name, opset) for name in CASES for opset in OPSETS]


@pytest.mark.parametrize("case,opset", OP_MATRIX, ids=[f"{c}-{o}" for c, o in OP_MATRIX])
def test_op(case, opset):
    b = Builder(opset)
    made = CASES[case](b)
    if made is None:
        pytest.skip(f"{case} is not defined at opset {opset}")
    inputs, outputs, expected = made
    imported = check(b.model(inputs, outputs))
    assert kinds(imported) == expected
    assert imported.opset == opset


@pytest.mark.parametrize("opset", [21, 23])
def test_gelu_op_erf_imports_as_the_exact_gelu(opset):
    b = Builder(opset)
    model = b.model([("x", [8, 16])], [(b.node("Gelu", ["x"]), [8, 16])])
    imported = check(model)
    assert kinds(imported) == ["gelu"] and imported.graph.ops[0].attrs["approximate"] == "none"
    assert not imported.notes


# == pattern rewrites, as torch.onnx and Hugging Face write them ==================================

def _single(opset, build, shape=(2, 8, 16)):
    b = Builder(opset)
    y = build(b, "x")
    return b.model([("x", list(shape))], [(y, list(shape))])


@pytest.mark.parametrize("form", ["torch", "hf"])
@pytest.mark.parametrize("opset", [13, 18])
def test_gelu_erf_rewrite(form, opset):
    imported = check(_single(opset, lambda b, x: b.gelu_erf(x, "/act", form)))
    assert kinds(imported) == ["gelu"] and imported.graph.ops[0].attrs["approximate"] == "none"
    assert not imported.notes


@pytest.mark.parametrize("form", ["torch", "hf"])
@pytest.mark.parametrize("opset", [13, 18])
def test_gelu_tanh_rewrite(form, opset):
    imported = check(_single(opset, lambda b, x: b.gelu_tanh(x, "/act", form)))
    assert kinds(imported) == ["gelu"] and imported.graph.ops[0].attrs["approximate"] == "tanh"
    assert not imported.notes


@pytest.mark.parametrize("opset", [13, 18])
def test_silu_and_swiglu_rewrite(opset):
    def build(b, x):
        return b.node("Mul", [b.silu(b.node("MatMul", [x, b.weight("wg", (16, 16))]), "/act"),
                              b.node("MatMul", [x, b.weight("wu", (16, 16))])])
    assert kinds(check(_single(opset, build))) == ["matmul", "silu", "matmul", "mul"]


@pytest.mark.parametrize("form", ["rsqrt", "reciprocal", "div"])
@pytest.mark.parametrize("opset", [13, 18])
def test_rmsnorm_rewrite(form, opset):
    imported = check(_single(opset, lambda b, x: b.rmsnorm(x, 16, "/norm", form)))
    assert kinds(imported) == ["rmsnorm"]
    assert imported.graph.ops[0].attrs["eps"] == 1e-6


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_decomposed_layernorm_rewrite(opset):
    imported = check(_single(opset, lambda b, x: b.layernorm(x, 16, "/ln", decomposed=True)))
    assert kinds(imported) == ["layernorm"] and imported.graph.ops[0].attrs["eps"] == 1e-5


def test_layernorm_without_affine_gets_unit_gamma_zero_beta():
    def build(b, x):
        d = b.node("Sub", [x, b.reduce_mean(x, "")])
        var = b.reduce_mean(b.node("Mul", [d, d]), "")
        return b.node("Mul", [d, b.node("Reciprocal", [b.node("Sqrt", [b.node("Add", [var, b.scalar(1e-5)])])])])
    imported = check(_single(18, build))
    assert kinds(imported) == ["layernorm"]
    assert sorted(np.unique(v).tolist() for v in imported.weights.values()) == [[0.0], [1.0]]


def _attention(opset, scale, mask=None, heads=2, seq=8, hidden=32):
    b = Builder(opset)
    models.SEQ, saved = seq, models.SEQ
    try:
        d = hidden // heads
        q = b.split_heads("x", heads, "", [0, 2, 1, 3], True)
        k = b.split_heads(b.node("MatMul", ["x", b.weight("wk", (hidden, hidden))]), heads, "", [0, 2, 3, 1], False)
        v = b.split_heads("x", heads, "", [0, 2, 1, 3], False)
        if scale == "sdpa":
            root = b.scalar(1 / math.sqrt(math.sqrt(d)))
            q, k = b.node("Mul", [q, root]), b.node("Mul", [k, root])
        s = b.node("MatMul", [q, k])
        if scale == "div":
            s = b.node("Div", [s, b.scalar(math.sqrt(d))])
        elif scale == "mul":
            s = b.node("Mul", [s, b.scalar(1 / math.sqrt(d))])
        inputs = [("x", [1, seq, hidden])]
        if mask == "input":
            inputs.append(("mask", [1, heads, seq, seq]))
            s = b.node("Add", [s, "mask"])
        elif mask == "causal":
            s = b.node("Add", [s, b.init("causal", np.triu(np.full((1, 1, seq, seq), -1e9, np.float32), 1))])
        ctx = b.node("MatMul", [b.node("Softmax", [s], axis=-1), v])
        y = b.node("Reshape", [b.node("Transpose", [ctx], perm=[0, 2, 1, 3]), b.ints([1, seq, hidden])])
        return b.model(inputs, [(y, [1, seq, hidden])])
    finally:
        models.SEQ = saved


@pytest.mark.parametrize("scale", ["div", "mul", "sdpa"])
@pytest.mark.parametrize("opset", [13, 17, 21])
def test_attention_rewrite(scale, opset):
    imported = check(_attention(opset, scale))
    ops = imported.graph.ops
    scores = next(op for op in ops if op.op == "matmul" and op.attrs["transpose_b"])
    assert math.isclose(scores.attrs["scale"], 0.25, rel_tol=1e-6)
    assert [op.op for op in ops if op.op in ("matmul", "softmax")] == ["matmul", "matmul", "softmax", "matmul"]
    assert [op.attrs["perm"] for op in ops if op.op == "transpose"] == [(0, 2, 1, 3)] * 4


def test_attention_with_an_input_mask_of_the_scores_shape():
    assert "add" in kinds(check(_attention(17, "div", mask="input")))


def test_causal_mask_constant_imports_as_mask_and_others_are_refused_naming_the_add():
    assert "mask" in kinds(check(_attention(17, "div", mask="causal")))      # more forms: tests/test_mask.py
    model = _attention(17, "div", mask="causal")
    init = next(t for t in model.graph.initializer if t.name == "causal")
    init.CopyFrom(numpy_helper.from_array(np.tril(np.full((1, 1, 8, 8), -1e9, np.float32), -1), "causal"))
    with pytest.raises(InstanceError) as err:
        import_onnx(model)
    assert "node '/Add' (Add, opset 17): constant 'causal' [1, 1, 8, 8] broadcast over the leading axes of " \
           "[1, 2, 8, 8] (an attention mask?) is not a causal mask" in str(err.value)


def test_a_partial_pattern_imports_op_by_op():
    b = Builder(17)
    model = b.model([("x", [4, 8]), ("z", [4, 8])], [(b.node("Mul", ["x", b.node("Sigmoid", ["z"])]), [4, 8])])
    assert kinds(check(model)) == ["unary", "mul"]          # x * sigmoid(z) is no silu


def test_shared_inner_tensor_blocks_the_rewrite():
    b = Builder(17)
    sig = b.node("Sigmoid", ["x"])
    y = b.node("Add", [b.node("Mul", ["x", sig]), sig])        # the sigmoid also feeds the Add
    assert kinds(check(b.model([("x", [4, 8])], [(y, [4, 8])]))) == ["unary", "mul", "add"]   # not silu


# == faults, through the CLI =====================================================================

def _run(tmp_path, model, *flags, command="import"):
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    out = ["-o", str(tmp_path / "inst.json")] if command == "import" else ["--time-limit", "10", "--quiet"]
    return main([command, str(path), *out, *flags])


def _relu_model(shape=(4, 8), opset=17):
    b = Builder(opset)
    return b.model([("x", list(shape))], [(b.node("Relu", ["x"]), list(shape))])


def test_fault_unsupported_op(tmp_path, capsys):
    b = Builder(17)
    y = b.node("ConvTranspose", ["x", b.weight("w", (3, 4, 3, 3))])
    assert _run(tmp_path, b.model([("x", [1, 3, 8, 8])], [(y, [1, 4, 10, 10])])) == 2
    err = capsys.readouterr().err
    assert "/graph/node/0: node '/ConvTranspose' (ConvTranspose, opset 17): op ConvTranspose is outside" in err
    assert "these CNN ops need new operator-graph op kinds" in err and "Traceback" not in err


def test_fault_gather_that_is_no_embedding(tmp_path, capsys):
    b = Builder(17)           # a Gather along the table's columns: not a token embedding
    y = b.node("Gather", [b.weight("wte", (100, 16)), "ids"], axis=1)
    model = b.model([("ids", [1, 8])], [(y, [100, 1, 8])])
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.INT64
    assert _run(tmp_path, model) == 2
    err = capsys.readouterr().err
    assert "node '/Gather' (Gather, opset 17): the table 'wte' is [100, 16], gathered on axis 1" in err
    assert "Traceback" not in err


def test_fault_softmax_axis_0(tmp_path, capsys):
    b = Builder(13)
    model = b.model([("x", [4, 8])], [(b.node("Softmax", ["x"], axis=0), [4, 8])])
    assert _run(tmp_path, model) == 2
    assert "node '/Softmax' (Softmax, opset 13): axis=0: only the last axis (axis=-1, or 1 for this rank-2 " \
           "input) is supported" in capsys.readouterr().err


def test_fault_symbolic_dim_without_shape(tmp_path, capsys):
    assert _run(tmp_path, _relu_model(("batch", 8))) == 2
    assert "/graph/input/0: input 'x' dimension 0 is symbolic ('batch')" in capsys.readouterr().err
    assert _run(tmp_path, _relu_model((2, "seq"))) == 2
    err = capsys.readouterr().err
    assert "input 'x' dimension 1 is symbolic ('seq')" in err and "--batch" not in err


def test_symbolic_dims_bound_by_batch_and_input_shape(tmp_path):
    assert _run(tmp_path, _relu_model(("batch", 8)), "--batch", "3") == 0
    assert load(tmp_path / "inst.json").operators.tensors["x"].shape == (3, 8)
    assert _run(tmp_path, _relu_model(("batch", "seq")), "--input-shape", "x=2x5", "--name", "r") == 0
    inst = load(tmp_path / "inst.json")
    assert inst.operators.tensors["x"].shape == (2, 5) and inst.name == "r" and inst.platform_name == "u280"


@pytest.mark.parametrize("flag,message", [
    ("x=4x0", "--input-shape: expected NAME=DIMxDIM... with positive dimensions"),
    ("x=4xq", "--input-shape: expected NAME=DIMxDIM..."),
    ("y=4x8", "--input-shape: input_shapes names 'y', which is not a graph input (inputs: x)"),
    ("x=4x8x2", "--input-shape: input 'x' has rank 2 but the shape given, [4, 8, 2], has 3 dimensions"),
    ("x=5x8", "--input-shape: input 'x' dimension 0 is 4 in the model but the shape given, [5, 8], says 5"),
])
def test_fault_bad_input_shape(tmp_path, capsys, flag, message):
    assert _run(tmp_path, _relu_model(), "--input-shape", flag) == 2
    assert message in capsys.readouterr().err


def test_fault_checker(tmp_path, capsys):
    model = _relu_model()
    model.graph.node[0].input[0] = "missing"
    assert _run(tmp_path, model) == 2
    err = capsys.readouterr().err
    assert "/graph: the model fails onnx.checker:" in err and "missing" in err and "/Relu" in err


def test_fault_through_solve_and_a_bad_platform(tmp_path, capsys):
    b = Builder(17)
    model = b.model([("x", [4, 8])], [(b.node("Softmax", ["x"], axis=0), [4, 8])])
    assert _run(tmp_path, model, command="solve") == 2
    assert "node '/Softmax' (Softmax, opset 17): axis=0" in capsys.readouterr().err
    assert _run(tmp_path, _relu_model(), "--platform", "npu1") == 2
    assert "/platform: problem 'pipeline' needs a platform with slots" in capsys.readouterr().err
    assert not (tmp_path / "inst.json").exists()
    assert main(["solve", str(ROOT / "instances" / "pipeline" / "ffn.json"), "--batch", "2"]) == 2
    assert "--batch: applies to an ONNX model (MODEL.onnx)" in capsys.readouterr().err


def test_fault_old_opset(tmp_path, capsys):
    assert _run(tmp_path, _relu_model(opset=11)) == 2
    assert "the model is at opset 11; the importer reads opset 13 and later" in capsys.readouterr().err


def test_fault_sub_of_two_tensors_and_mixed_floats(tmp_path, capsys):
    b = Builder(17)
    assert _run(tmp_path, b.model([("x", [4, 1]), ("z", [1, 4])], [(b.node("Sub", ["x", "z"]), [4, 4])])) == 2
    assert "node '/Sub' (Sub, opset 17): unsupported broadcast: [4, 1] sub [1, 4] -> [4, 4]" in \
        capsys.readouterr().err
    b = Builder(17)
    y = b.node("Cast", [b.node("Relu", ["x"])], to=TensorProto.FLOAT16)
    model = b.model([("x", [4, 8])], [(y, [4, 8])], elem=TensorProto.FLOAT)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    assert _run(tmp_path, model) == 2
    assert "Cast from float32 to float16: the operator graph has no cast op" in capsys.readouterr().err
    assert _run(tmp_path, model, "--dtype", "f16") == 0
    assert {t.dtype for t in load(tmp_path / "inst.json").operators.tensors.values()} == {"f16"}


def test_training_dropout_is_refused_and_a_mean_over_no_axes_is_the_identity():
    b = Builder(17)
    y = b.node("Dropout", [b.node("Relu", ["x"]), b.scalar(0.5), "train"])
    graph = helper.make_graph(b.nodes, "g", [helper.make_tensor_value_info("x", F, [4, 8]),
                                              helper.make_tensor_value_info("train", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info(y, F, [4, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(InstanceError, match=r"node '/Dropout' \(Dropout, opset 17\): training mode"):
        from_onnx(model)
    b = Builder(18)
    r = b.node("ReduceMean", [b.node("Pow", ["x", b.scalar(2.0)])], noop_with_empty_axes=1)   # an identity
    y = b.node("Div", ["x", b.node("Sqrt", [b.node("Add", [r, b.scalar(1e-6)])])])
    assert kinds(check(b.model([("x", [8])], [(y, [8])]))) == ["unary", "add", "unary", "div"]    # not rmsnorm


def test_dtype_override_retypes_weights():
    b = Builder(17)
    model = b.model([("x", [4, 16])], [(b.node("MatMul", ["x", b.weight("w", (16, 8))]), [4, 8])])
    imported = import_onnx(model, dtype="bf16")
    assert {t.dtype for t in imported.graph.tensors.values()} == {"bf16"}
    with pytest.raises(InstanceError, match="--dtype: expected a float dtype"):
        import_onnx(model, dtype="i8")


def test_from_torch_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(InstanceError, match=r"pip install dfopt\[torch\]"):
        from_torch(object(), ())


# == random graphs ===============================================================================

_KINDS = ["relu", "gelu_tanh", "gelu_erf", "silu", "softmax", "rmsnorm", "layernorm", "bias", "scale", "sub",
          "div", "residual", "matmul", "transpose", "reshape"]


def _step(b, kind, name, other, s, p):
    """One random op on ``name`` (shape ``s``) in builder ``b``: its output and shape."""
    n, k = s[-1], len(b.inits)
    steps = {
        "gelu_erf": lambda: b.gelu_erf(name, "/g", p["form"]),
        "relu": lambda: b.node("Relu", [name]),
        "gelu_tanh": lambda: b.gelu_tanh(name, "/g", p["form"]),
        "silu": lambda: b.silu(name, "/s"),
        "softmax": lambda: b.node("Softmax", [name], axis=-1),
        "rmsnorm": lambda: b.rmsnorm(name, n, f"/rms{k}"),
        "layernorm": lambda: b.layernorm(name, n, f"/ln{k}", decomposed=b.opset < 17 or p["decomposed"]),
        "bias": lambda: b.node("Add", [b.weight(f"b{k}", (n,), std=0.1), name]),
        "scale": lambda: b.node("Mul", [name, b.scalar(p["scale"])]),
        "sub": lambda: b.node("Sub", [name, b.weight(f"m{k}", (n,), std=0.1)]),
        "div": lambda: b.node("Div", [name, b.scalar(3.0)]),
        "residual": lambda: b.node("Add", [name, other]),
    }
    if kind in steps:
        return steps[kind](), s
    if kind == "matmul":
        return b.node("MatMul", [name, b.weight(f"w{k}", (n, p["m"]))]), s[:-1] + [p["m"]]
    if kind == "transpose":
        perm = list(range(len(s) - 2)) + [len(s) - 1, len(s) - 2]
        return b.node("Transpose", [name], perm=perm), s[:-2] + [s[-1], s[-2]]
    return b.node("Reshape", [name, b.ints([-1, n])]), [math.prod(s[:-1]), n]


@st.composite
def random_graphs(draw):
    """A DAG of supported ops and patterns on random shapes."""
    opset, seed = draw(st.sampled_from([13, 17, 18, 21])), draw(st.integers(0, 9))
    b = Builder(opset, seed)
    shape = draw(st.lists(st.integers(2, 5), min_size=2, max_size=3))
    live = [("x", list(shape))]
    for _ in range(draw(st.integers(1, 6))):
        name, s = live[draw(st.integers(0, len(live) - 1))]
        kind = draw(st.sampled_from(_KINDS))
        same = [t for t, ts in live if ts == s]
        other = same[draw(st.integers(0, len(same) - 1))]
        p = {"form": draw(st.sampled_from(["torch", "hf"])), "decomposed": draw(st.booleans()),
             "scale": draw(st.sampled_from([0.5, 2.0, -1.0])), "m": draw(st.integers(2, 5))}
        live.append(_step(b, kind, name, other, s, p))
    out, s = live[-1]
    return b.model([("x", list(shape))], [(out, s)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs())
def test_random_graphs_match_the_onnx_reference(model):
    check(model)


# == the shipped models ==========================================================================

@pytest.mark.parametrize("name", ["gpt2-block", "llama-block"])
def test_shipped_models_import_validate_and_match(tmp_path, capsys, name):
    path = ROOT / "instances" / "onnx" / f"{name}.onnx"
    assert path.stat().st_size < 2 * 2**20
    assert onnx.load(path) == models.MODELS[name](), "regenerate: python benchmarks/make_onnx_models.py"
    out = tmp_path / f"{name}.json"
    assert main(["import", str(path), "-o", str(out)]) == 0
    assert main(["validate", str(out)]) == 0
    instance = load(out)
    imported = check(onnx.load(path))
    assert instance.operators == imported.graph and instance.problem == "pipeline"
    x = np.random.default_rng(5).standard_normal((1, 32, 256)).astype(np.float32)
    want = ReferenceEvaluator(str(path)).run(None, {"hidden_states": x})[0]
    got = evaluate(instance.operators, imported.feeds({"hidden_states": x}))["output"]
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-3)
    expected_ops = {"gpt2-block": {"layernorm": 2, "gelu": 1, "softmax": 1, "matmul": 8, "mask": 1},
                    "llama-block": {"rmsnorm": 2, "silu": 1, "softmax": 1, "matmul": 9, "rope": 2, "expand": 2}}[name]
    assert {k: kinds(imported).count(k) for k in expected_ops} == expected_ops


def test_solve_shipped_gpt2_onnx_end_to_end(capsys):
    code = main(["solve", str(ROOT / "instances" / "onnx" / "gpt2-block.onnx"), "--time-limit", "30", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "pipeline instance 'gpt2-block': feasible" in captured.out
    assert "pipeline-record ok" in captured.out and "FAIL" not in captured.out


@pytest.mark.parametrize("name", ["gpt2-block", "llama-block"])
def test_shipped_models_run_in_both_csim_models_against_numpy(tmp_path, name):
    """The imported model's HLS design, built and run by the emitted Makefile (dfopt's threaded
    hls_stream) and by the Vitis C-simulation model's own script; the exact erf GELU included."""
    import shutil

    from dfopt.api import solve_instance
    from dfopt.frontend import onnx_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit

    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    data, _ = onnx_instance(str(ROOT / "instances" / "onnx" / f"{name}.onnx"))
    inst = from_dict(data)
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    out = tmp_path / name
    emit(inst, sol, out)
    if name == "gpt2-block":
        assert "std::erf" in (out / "kernels.cpp").read_text()
    both_csims(out)
