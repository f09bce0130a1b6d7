"""The ONNX arithmetic that lands on ``sub``, ``div``, ``unary`` and ``reduce``
(:mod:`dfopt.frontend.arith`): every form against ``onnx.reference`` at each opset, the op kinds
it becomes, the refusals, and an imported model of them solved and run in both C simulation
models against the ONNX reference's outputs."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from csim import both_csims
from dfopt.errors import InstanceError
from dfopt.frontend import from_onnx
from test_onnx_frontend import OPSETS, Builder, check, kinds

X = [("x", [2, 4, 8])]
Y = [2, 4, 8]


def _reduce(b: Builder, op: str, x: str, axes: list[int] | None, keepdims: int = 1, **attrs) -> str:
    """A Reduce node with its axes where the opset keeps them (an input from 18, ReduceSum's from 13)."""
    as_input = op == "ReduceSum" and b.opset >= 13 or b.opset >= 18
    if axes is None:
        return b.node(op, [x], keepdims=keepdims, **attrs)
    if as_input:
        return b.node(op, [x, b.ints(axes)], keepdims=keepdims, **attrs)
    return b.node(op, [x], axes=axes, keepdims=keepdims, **attrs)


def case_sub_two(b):
    return [*X, ("z", Y)], [(b.node("Sub", ["x", "z"]), Y)], ["sub"]


def case_sub_vector_first(b):
    return [*X, ("v", [8])], [(b.node("Sub", ["v", "x"]), Y)], ["sub", "unary"]


def case_sub_constant_first(b):
    return X, [(b.node("Sub", [b.scalar(1.0), "x"]), Y)], ["unary", "add"]


def case_div_two(b):
    return [*X, ("z", Y)], [(b.node("Div", ["x", "z"]), Y)], ["div"]


def case_div_vector_first(b):
    return [*X, ("v", [8])], [(b.node("Div", ["v", "x"]), Y)], ["unary", "mul"]


def case_div_constant_first(b):
    return X, [(b.node("Div", [b.scalar(2.0), "x"]), Y)], ["unary", "mul"]


def case_unary_chain(b):
    y = "x"
    for op in ("Tanh", "Erf", "Abs", "Sqrt", "Exp", "Reciprocal", "Neg", "Sigmoid"):
        y = b.node(op, [y])
    return X, [(y, Y)], ["unary"] * 8


def case_pow(b):
    y = b.node("Pow", ["x", b.scalar(3.0)])
    y = b.node("Pow", [b.node("Abs", [y]), b.scalar(0.5)])      # sqrt
    y = b.node("Pow", [y, b.scalar(2.0)])                       # square
    y = b.node("Pow", [b.node("Pow", [y, b.scalar(-1.0)]), b.scalar(1.0)])   # reciprocal, then dropped
    y = b.node("Pow", [y, b.scalar(1.5)])
    return X, [(b.node("Pow", [y, b.scalar(-0.5)]), Y)], ["unary"] * 7


def case_reduce_last(b):
    s = _reduce(b, "ReduceSum", "x", [-1], keepdims=0)
    m = _reduce(b, "ReduceMean", "x", [2])
    return X, [(s, [2, 4]), (m, [2, 4, 1])], ["reduce", "reduce"]


def case_reduce_middle_axis(b):
    return X, [(_reduce(b, "ReduceMax", "x", [1]), [2, 1, 8])], ["transpose", "reduce", "reshape"]


def case_reduce_trailing_axes(b):
    return X, [(_reduce(b, "ReduceMin", "x", [1, 2], keepdims=0), [2])], ["reshape", "reduce"]


def case_reduce_every_axis(b):
    return X, [(_reduce(b, "ReduceMean", "x", None), [1, 1, 1])], ["reshape", "reduce", "reshape"]


def case_reduce_noop(b):
    r = _reduce(b, "ReduceSum", b.node("Relu", ["x"]), [] if b.opset >= 13 else None, noop_with_empty_axes=1)
    return X, [(b.node("Neg", [r]), Y)], ["relu", "unary"]


def case_sum(b):
    y = b.node("Sum", ["x", b.node("Relu", ["x"]), b.init("c", np.ones(8, np.float32))])
    return X, [(b.node("Sum", [y]), Y)], ["relu", "add", "add", "reshape"]


def case_dropout_with_an_unused_mask(b):
    """opset 9 models converted up name Dropout's mask output without reading it."""
    return X, [(b.node("Relu", [b.node("Dropout", ["x"], n_out=2)]), Y)], ["relu"]


def case_per_channel_constants(b):
    """A decomposed batch norm on NCHW: ``x * s + b`` with ``s``, ``b`` of shape ``[C, 1, 1]``."""
    s = b.init("s", np.linspace(0.5, 1.5, 4, dtype=np.float32).reshape(4, 1, 1))
    y = b.node("Add", [b.node("Mul", ["x", s]), b.init("b", np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1))])
    return [("x", [2, 4, 3, 5])], [(y, [2, 4, 3, 5])], ["mul", "add"]


def case_softmax_decomposed(b):
    """``exp(x - max) / sum``, as a hand-written softmax exports: two column broadcasts."""
    e = b.node("Exp", [b.node("Sub", ["x", _reduce(b, "ReduceMax", "x", [-1])])])
    return X, [(b.node("Div", [e, _reduce(b, "ReduceSum", e, [-1])]), Y)], \
        ["reduce", "sub", "unary", "reduce", "div"]


def case_column_constant(b):
    return X, [(b.node("Mul", ["x", b.init("c", np.arange(8, dtype=np.float32).reshape(2, 4, 1))]), Y)], ["mul"]


CASES = {name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}
MATRIX = [(name, opset) for name in CASES for opset in OPSETS]


@pytest.mark.parametrize("case,opset", MATRIX, ids=[f"{c}-{o}" for c, o in MATRIX])
def test_op(case, opset):
    b = Builder(opset)
    inputs, outputs, expected = CASES[case](b)
    imported = check(b.model(inputs, outputs))
    assert kinds(imported) == expected


def test_pow_exponents_become_their_functions():
    b = Builder(17)
    model = b.model(*case_pow(b)[:2])
    fns = [(op.attrs["fn"], op.attrs["exponent"]) for op in from_onnx(model).ops]
    assert fns == [("pow", 3.0), ("abs", 1), ("sqrt", 1), ("square", 1), ("reciprocal", 1), ("pow", 1.5),
                   ("rsqrt", 1)]


@pytest.mark.parametrize("build,out,what", [
    (lambda b: b.node("Pow", ["x", "e"]), Y, "the exponent 'e' is computed from data"),
    (lambda b: b.node("Pow", ["x", b.init("e", np.array([1.0, 2.0] * 4, np.float32))]), Y, "takes several values"),
    (lambda b: _reduce(b, "ReduceSum", "x", None, keepdims=0), [], "is a scalar"),
], ids=["computed-exponent", "vector-exponent", "scalar"])
def test_refusals_name_the_node(build, out, what):
    b = Builder(17)
    y = build(b)
    e = [("e", [8])] if "'e'" in what else []
    with pytest.raises(InstanceError) as err:
        from_onnx(b.model([*X, *e], [(y, out)]))
    assert what in str(err.value) and f"({b.nodes[-1].op_type}, opset 17)" in str(err.value), str(err.value)


def test_computed_axes_are_refused():
    from onnx import TensorProto, helper

    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="/ReduceSum", keepdims=0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, Y),
                                            helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(InstanceError, match=r"node '/ReduceSum' \(ReduceSum, opset 17\): the axes 'axes' are computed"):
        from_onnx(model)


@pytest.mark.slow
def test_an_imported_model_of_the_arithmetic_passes_both_csim_models(tmp_path):
    """Sub / Div of computed tensors, the unary functions and the reductions, imported, solved,
    emitted and run against the design's NumPy reference in both C simulation models."""
    from dfopt.api import solve_instance
    from dfopt.frontend import onnx_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit

    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    b = Builder(17)
    d = b.node("Div", [b.node("Sub", ["x", "z"]), b.node("Exp", [b.node("Tanh", ["z"])])])
    s = _reduce(b, "ReduceSum", b.node("Sigmoid", [d]), [-1], keepdims=0)
    m = _reduce(b, "ReduceMax", d, [1])
    path = tmp_path / "arith.onnx"
    path.write_bytes(b.model([*X, ("z", Y)], [(s, [2, 4]), (m, [2, 1, 8])]).SerializeToString())
    check(b.model([*X, ("z", Y)], [(s, [2, 4]), (m, [2, 1, 8])]))
    data, _ = onnx_instance(str(path))
    inst = from_dict(data)
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    out = tmp_path / "design"
    emit(inst, sol, out)
    both_csims(out)

