"""A design imported from an ONNX model runs on the model's data: its weights, the user's inputs
(``--inputs FILE.npz``, keyed by the ONNX input names) or random ones, and a test bench that
compares with ``onnx.reference`` on them; ``make csim`` writes ``outputs.npz`` under the ONNX
output names; the import's own check (``onnx-reference``) is in the solution and in the imported
instance's description; bad ``--inputs`` files are refused naming the array."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from dfopt.cli import main
from dfopt.frontend import import_onnx
from dfopt.frontend.data import ModelData, model_data
from dfopt.instance import load
from test_onnx_frontend import Builder


def _mlp(tmp_path):
    """x [4, 16] -> Linear 16x32 + bias -> Gelu (erf) -> Linear 32x8 -> y; z = relu(x) - x; the
    row means of x."""
    b = Builder(17)
    h = b.gelu_erf(b.linear("x", 16, 32, "/fc1"), "/act")
    y = b.linear(h, 32, 8, "/fc2")
    z = b.node("Sub", [b.node("Relu", ["x"]), "x"])
    m = b.node("ReduceMean", ["x"], axes=[-1], keepdims=0)
    path = tmp_path / "mlp.onnx"
    onnx.save(b.model([("x", [4, 16])], [(y, [4, 8]), (z, [4, 16]), (m, [4])]), path)
    return path


def test_model_data_is_the_onnx_reference_on_the_given_inputs(tmp_path):
    path = _mlp(tmp_path)
    imported = import_onnx(str(path))
    x = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
    data = model_data(str(path), imported, {"x": x})
    want = ReferenceEvaluator(str(path)).run(None, {"x": x})
    outs = [o.name for o in onnx.load(path).graph.output]
    for name, value in zip(outs, want):
        assert np.array_equal(data.expected[imported.names[name]], value)
        assert data.output_names[imported.names[name]] == name
    assert np.array_equal(data.values[imported.names["x"]], x)
    assert {k for k in data.values} == set(imported.graph.inputs)       # the weights too
    assert data.check().ok and data.max_error() < 1e-5


def test_the_check_fails_naming_the_output_that_differs(tmp_path):
    path = _mlp(tmp_path)
    imported = import_onnx(str(path))
    data = model_data(str(path), imported)
    out = next(iter(data.ours))
    tampered = ModelData(data.values, data.expected, {**data.ours, out: data.ours[out] + 0.1}, data.output_names,
                         data.dtypes, data.inputs)
    check = tampered.check()
    assert not check.ok and check.name == "onnx-reference"
    assert f"output {data.output_names[out]!r}" in check.details[0] and "random (seed 0) inputs" in check.details[0]


@pytest.mark.slow
def test_solve_with_inputs_runs_the_design_on_them_and_writes_outputs_npz(tmp_path, capsys):
    from tools import tool

    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    vitis = tool("vitis-stream")
    path = _mlp(tmp_path)
    x = np.random.default_rng(7).standard_normal((4, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    out, sol = tmp_path / "design", tmp_path / "sol.json"
    code = main(["solve", str(path), "--inputs", str(tmp_path / "in.npz"), "--emit-dir", str(out), "-o", str(sol),
                 "--time-limit", "10", "--quiet"])
    assert code == 0, capsys.readouterr().err
    checks = {c["name"]: c["ok"] for c in json.loads(sol.read_text())["checks"]}
    assert checks["onnx-reference"] is True
    assert np.array_equal(np.fromfile(out / "data" / "x.bin", dtype="<f4").reshape(4, 16), x)
    want = dict(zip([o.name for o in onnx.load(path).graph.output], ReferenceEvaluator(str(path)).run(None, {"x": x})))
    manifest_outputs = {k: v for k, v in import_onnx(str(path)).names.items() if k in want}
    for onnx_name, ours in manifest_outputs.items():   # the test bench's reference is the model's output
        ref = np.fromfile(out / "data" / f"{ours}.ref.bin", dtype="<f4").reshape(want[onnx_name].shape)
        assert np.array_equal(ref, want[onnx_name])
    for target, extra in (("csim", []), ("csim-vitis", [f"VITIS_STREAM={vitis}"])):
        (out / "outputs.npz").unlink(missing_ok=True)
        res = subprocess.run(["make", "-s", "-C", str(out), target, *extra], capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0 and "PASS" in res.stdout.splitlines(), res.stdout[-2000:] + res.stderr[-2000:]
        with np.load(out / "outputs.npz") as got:
            assert sorted(got.files) == sorted(want)
            for name, value in want.items():
                np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4)


def test_import_records_its_check_in_the_description(tmp_path, capsys):
    path = _mlp(tmp_path)
    assert main(["import", str(path), "-o", str(tmp_path / "i.json")]) == 0
    assert "checked against onnx.reference on random (seed 0) inputs: max abs error" in \
        load(tmp_path / "i.json").description


@pytest.mark.parametrize("arrays,where,what", [
    ({"x": np.zeros((4, 16)), "w": np.zeros(3)}, "--inputs/w", "array 'w' of"),
    ({}, "--inputs/x", "has no array 'x'"),
    ({"x": np.zeros((4, 15))}, "--inputs/x", "array 'x' is [4, 15] but the input is [4, 16]"),
    ({"x": np.array([["a"] * 16] * 4)}, "--inputs/x", "not numbers"),
], ids=["unknown", "missing", "shape", "strings"])
def test_bad_inputs_are_refused_naming_the_array(tmp_path, capsys, arrays, where, what):
    path = _mlp(tmp_path)
    np.savez(tmp_path / "in.npz", **arrays)
    assert main(["import", str(path), "-o", str(tmp_path / "i.json"), "--inputs", str(tmp_path / "in.npz")]) == 2
    err = capsys.readouterr().err
    assert f"{where}: " in err and what in err and "Traceback" not in err, err


def test_inputs_that_are_not_an_npz_or_absent_are_refused(tmp_path, capsys):
    path = _mlp(tmp_path)
    (tmp_path / "bad.npz").write_text("no zip")
    for f, what in (("bad.npz", "is not a NumPy .npz"), ("none.npz", "no such file")):
        assert main(["import", str(path), "-o", str(tmp_path / "i.json"), "--inputs", str(tmp_path / f)]) == 2
        assert what in capsys.readouterr().err
    assert main(["solve", "instances/pipeline/ffn.json", "--inputs", str(tmp_path / "bad.npz")]) == 2
    assert "--inputs: applies to an ONNX model" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mlp", "gpt2-block"])
def test_shipped_models_run_on_their_own_data_in_both_csim_models(tmp_path, capsys, name):
    """``dfopt solve instances/onnx/<model>.onnx --emit-dir``: the model's weights, random inputs,
    the ONNX reference's outputs in the test bench; both C simulations pass and write outputs.npz."""
    import importlib.util
    import sys
    from pathlib import Path

    from tools import tool

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("make_onnx_models", root / "benchmarks" / "make_onnx_models.py")
    assert spec is not None and spec.loader is not None
    models = sys.modules.get("make_onnx_models") or importlib.util.module_from_spec(spec)
    if "make_onnx_models" not in sys.modules:
        spec.loader.exec_module(models)
    path = root / "instances" / "onnx" / f"{name}.onnx"
    assert onnx.load(path) == models.MODELS[name](), "regenerate: python benchmarks/make_onnx_models.py"
    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ and make are needed to build the generated C++")
    vitis = tool("vitis-stream")
    out = tmp_path / name
    assert main(["solve", str(path), "--emit-dir", str(out), "--time-limit", "20", "--quiet"]) == 0, \
        capsys.readouterr().err
    data = model_data(str(path), import_onnx(str(path)))
    for target, extra in (("csim", []), ("csim-vitis", [f"VITIS_STREAM={vitis}"])):
        res = subprocess.run(["make", "-s", "-C", str(out), target, *extra], capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0 and "PASS" in res.stdout.splitlines(), res.stdout[-2000:] + res.stderr[-2000:]
        with np.load(out / "outputs.npz") as got:
            for ours, value in data.expected.items():
                np.testing.assert_allclose(got[data.output_names[ours]], value, rtol=1e-4, atol=1e-4)
