"""The front end's refusals come all at once: every op outside the coverage, or every node whose
attributes the op set cannot express, each with its node, op type and opset, through the Python
API and the CLI (exit 2, no traceback); quantised models say why they are refused."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from dfopt.cli import main
from dfopt.errors import InstanceError
from dfopt.frontend import from_onnx
from test_onnx_frontend import Builder

X = [("x", [2, 4, 8])]


def test_every_op_outside_the_coverage_is_listed_at_once():
    b = Builder(17)
    y = b.node("Sin", [b.node("Relu", [b.node("Trilu", ["x"])])])
    y = b.node("Cos", [b.node("Neg", [y])])
    with pytest.raises(InstanceError) as err:
        from_onnx(b.model(X, [(y, [2, 4, 8])]))
    pointers = [p.pointer for p in err.value.problems]
    assert pointers == ["/graph/node/0", "/graph/node/2", "/graph/node/4", "/graph"]
    text = str(err.value)
    for name, op in (("/Trilu", "Trilu"), ("/Sin", "Sin"), ("/Cos", "Cos")):
        assert f"node '{name}' ({op}, opset 17): op {op} is outside the ONNX coverage" in text
    assert "/graph: the ONNX ops the front end imports: " in text and "Relu" in text


def test_every_refused_node_is_listed_at_once_and_the_nodes_after_it_are_checked():
    b = Builder(17)
    s = b.node("Softmax", ["x"], axis=0)                          # refused: not the last axis
    r = b.node("Relu", [s])
    y = b.node("Pow", [r, "e"])                                   # refused: a computed exponent
    z = b.node("Softmax", [y], axis=1)                            # refused, behind two refused nodes
    with pytest.raises(InstanceError) as err:
        from_onnx(b.model([*X, ("e", [2, 4, 8])], [(z, [2, 4, 8])]))
    got = [(p.pointer, p.message.split(":")[0]) for p in err.value.problems]
    assert got == [("/graph/node/0", "node '/Softmax' (Softmax, opset 17)"),
                   ("/graph/node/2", "node '/Pow' (Pow, opset 17)"),
                   ("/graph/node/3", "node '/Softmax_1' (Softmax, opset 17)")]


def test_the_cli_prints_every_fault_and_exits_2(tmp_path, capsys):
    b = Builder(17)
    y = b.node("Sin", [b.node("Softmax", ["x"], axis=0)])
    path = tmp_path / "m.onnx"
    onnx.save(b.model(X, [(y, [2, 4, 8])]), path)
    assert main(["import", str(path), "-o", str(tmp_path / "i.json")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "node '/Sin' (Sin, opset 17)" in err
    assert not (tmp_path / "i.json").exists()


def test_quantised_models_are_refused_saying_why():
    b = Builder(17)
    scale, zero = b.init("scale", np.array(0.1, np.float32)), b.init("zero", np.array(0, np.int8))
    y = b.node("DequantizeLinear", [b.node("QuantizeLinear", ["x", scale, zero]), scale, zero])
    with pytest.raises(InstanceError) as err:
        from_onnx(b.model(X, [(y, [2, 4, 8])]))
    for op in ("QuantizeLinear", "DequantizeLinear"):
        assert f"({op}, opset 17): op {op} is outside the ONNX coverage" in str(err.value)
    assert str(err.value).count("quantised models (QDQ / QOperator) are not imported") == 2


def test_a_dtype_the_hls_target_cannot_emit_is_refused_before_solving(tmp_path, capsys):
    """An f16 model imports (the pipeline solves f16 designs), but the HLS emitter writes f32, f64
    and i32 only: with --emit-dir the command says so at once, naming the op, exit 2."""
    import onnx
    from onnx import TensorProto

    b = Builder(17)
    y = b.node("Relu", ["x"], "/act")
    path = tmp_path / "half.onnx"
    onnx.save(b.model(X, [(y, [2, 4, 8])], elem=TensorProto.FLOAT16), path)
    assert main(["solve", str(path), "--emit-dir", str(tmp_path / "d"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "op act_Relu: dtype f16 cannot be emitted by the HLS target (f32, f64, i32)" in err, err
    assert "Traceback" not in err and not (tmp_path / "d").exists()
