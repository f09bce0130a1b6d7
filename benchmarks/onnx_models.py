"""The ONNX front end on the shipped models and on the ONNX package's own model zoo graphs.

**Shipped models** (``instances/onnx/*.onnx``, built by ``benchmarks/make_onnx_models.py``), per
model, in one run: the ONNX graph's nodes, the import's wall time (median of ``--repeats``), the
operator graph's ops after the rewrites (by kind), the translation check against
``onnx.reference`` (max abs error on random inputs), the pipeline's stage times and estimated
latency (``solve_instance``, ``--time-limit``), and the emitted design on the model's own data
(weights, random inputs, the ONNX reference's outputs): ``make csim`` (dfopt's threaded runtime)
and ``make csim-vitis`` (AMD's hls_stream.h model, ``../shared/tools/vitis-stream`` or
``--vitis-stream``), each its verdict, wall time and the max abs error of the ``outputs.npz``
it writes against the ONNX reference.

**The zoo** (``onnx/backend/test/data/light/*.onnx`` in the onnx wheel: AlexNet, DenseNet-121,
Inception v1 and v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512, all at opset 9, their
weights made by ``ConstantOfShape``): each converted to opset 17
(``onnx.version_converter``), then imported; per model whether it imports (ops, kinds, import
time, and the translation check with the weights made random (:func:`randomised`): the operator
graph's NumPy reference against ``onnx.reference`` on random inputs) or every refusal (node, op
type, why), and the refusals counted by op type.

Usage::

    python benchmarks/onnx_models.py [--zoo-only | --shipped-only] [--time-limit 30]

Results: ``benchmarks/results/onnx-models.json``; summarised in docs/onnx.md.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

from dfopt.api import solve_instance
from dfopt.errors import InstanceError
from dfopt.frontend import import_onnx
from dfopt.frontend.data import model_data
from dfopt.frontend.onnx_import import instance_dict
from dfopt.instance import from_dict
from dfopt.models.pipeline import emit

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "onnx-models.json"
ZOO = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, statistics.median(times)


def _csim(design: Path, target: str, vitis: Path | None, expected: dict) -> dict:
    extra = [] if target == "csim" else [f"VITIS_STREAM={vitis}"]
    (design / "outputs.npz").unlink(missing_ok=True)
    t0 = time.perf_counter()
    res = subprocess.run(["make", "-s", "-C", str(design), target, *extra], capture_output=True, text=True,
                         timeout=1800)
    wall = time.perf_counter() - t0
    entry: dict = {"ok": res.returncode == 0 and "PASS" in res.stdout.splitlines(), "wall_s": round(wall, 2)}
    if (design / "outputs.npz").exists():
        with np.load(design / "outputs.npz") as got:
            entry["max_abs_error"] = max(float(np.max(np.abs(got[k].astype(np.float64) - v.astype(np.float64))))
                                         for k, v in expected.items())
    if not entry["ok"]:
        entry["tail"] = (res.stdout + res.stderr)[-800:]
    return entry


def shipped(time_limit: float, repeats: int, vitis: Path | None, work: Path) -> dict:
    out = {}
    for path in sorted((ROOT / "instances" / "onnx").glob("*.onnx")):
        name = path.stem
        print(f"[shipped] {name}", file=sys.stderr, flush=True)
        model = onnx.load(path)
        imported, import_s = _timed(lambda p=path: import_onnx(str(p)), repeats)
        data = model_data(model, imported)
        check = data.check()
        inst = from_dict(instance_dict(imported, str(path)))
        sol = solve_instance(inst, time_limit=time_limit)
        sec = sol.sections["pipeline"]
        entry = {"onnx_nodes": len(model.graph.node), "onnx_ops": dict(Counter(n.op_type for n in model.graph.node)),
                 "import_s": round(import_s, 3), "ops": len(imported.graph.ops),
                 "kinds": dict(Counter(op.op for op in imported.graph.ops)),
                 "weights": sum(t.kind == "weight" for t in imported.graph.tensors.values()),
                 "translation_check": {"ok": check.ok, "max_abs_error": data.max_error()},
                 "solve_ok": sol.ok, "latency_cycles": sec.get("latency_cycles"),
                 "stage_s": {s["name"]: s["time_s"] for s in sec["stages"]},
                 "total_s": round(sec["total_time_s"], 3)}
        if sol.ok:
            design = work / name
            emit(inst, sol, design, data=data)
            entry["csim"] = _csim(design, "csim", vitis, {data.output_names[k]: v for k, v in data.expected.items()})
            if vitis is not None:
                entry["csim_vitis"] = _csim(design, "csim-vitis", vitis,
                                            {data.output_names[k]: v for k, v in data.expected.items()})
        out[name] = entry
    return out


def randomised(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """The light model with random weights: each ``ConstantOfShape`` that makes a weight (one
    value everywhere, so every class scores alike and a check of the outputs would say nothing)
    replaced by an initializer of its shape: normal / sqrt(fan-in) for Conv / Gemm weights and
    biases, and for a BatchNormalization 1 + 0.1 normal (scale), 0.1 normal (bias, mean) and
    uniform [0.5, 1.5] (variance); the final Softmax dropped, so that the check compares the
    logits."""
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    users: dict[str, list] = {}
    for n in model.graph.node:
        for j, i in enumerate(n.input):
            users.setdefault(i, []).append((n.op_type, j))
    out = onnx.ModelProto()
    out.CopyFrom(model)
    keep, new = [], []
    for n in out.graph.node:
        if n.op_type != "ConstantOfShape" or n.input[0] not in inits:
            keep.append(n)
            continue
        shape = tuple(int(d) for d in inits[n.input[0]])
        role = (users.get(n.output[0]) or [("", 0)])[0]
        if role[0] == "BatchNormalization":
            value = {1: 1 + 0.1 * rng.standard_normal(shape), 4: rng.uniform(0.5, 1.5, shape)}.get(
                role[1], 0.1 * rng.standard_normal(shape))
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            value = rng.standard_normal(shape) / np.sqrt(fan_in)
        new.append(numpy_helper.from_array(value.astype(np.float32), n.output[0]))
    final = keep[-1] if keep and keep[-1].op_type == "Softmax" and keep[-1].output[0] == out.graph.output[0].name \
        else None
    if final is not None:                           # compare the logits: near-uniform probabilities hide errors
        keep.pop()
        out.graph.output[0].name = final.input[0]
    del out.graph.node[:]
    out.graph.node.extend(keep)
    out.graph.initializer.extend(new)
    out.ir_version = max(out.ir_version, 4)        # IR 3 wants every initializer among the graph inputs
    return out


def zoo(check: bool = True) -> dict:
    from onnx import version_converter

    models, refused_ops = {}, Counter()
    for path in sorted(glob.glob(str(ZOO / "*.onnx"))):
        name = Path(path).stem.removeprefix("light_")
        print(f"[zoo] {name}", file=sys.stderr, flush=True)
        model = onnx.load(path)
        entry: dict = {"opset": model.opset_import[0].version, "onnx_nodes": len(model.graph.node),
                       "onnx_ops": dict(Counter(n.op_type for n in model.graph.node))}
        try:
            model = version_converter.convert_version(model, 17)
        except Exception as err:  # the converter's own errors
            entry.update(imported=False, refusals=[{"at": "/", "why": f"version conversion failed: {err}"}])
            models[name] = entry
            continue
        t0 = time.perf_counter()
        try:
            imported = import_onnx(model, batch=1)
        except InstanceError as err:
            entry.update(imported=False, import_s=round(time.perf_counter() - t0, 2),
                         refusals=[{"at": p.pointer, "why": p.message} for p in err.problems])
            for p in err.problems:
                op = p.message.split("(", 1)[1].split(",", 1)[0] if p.message.startswith("node ") else "-"
                refused_ops[op] += 1
        else:
            entry.update(imported=True, import_s=round(time.perf_counter() - t0, 2), ops=len(imported.graph.ops),
                         kinds=dict(Counter(op.op for op in imported.graph.ops)))
            if check:
                t0 = time.perf_counter()
                model = randomised(model)
                data = model_data(model, import_onnx(model, batch=1))
                entry["translation_check"] = {"ok": data.check().ok, "max_abs_error": data.max_error(),
                                              "max_abs_output": max(float(np.max(np.abs(v)))
                                                                    for v in data.expected.values()),
                                              "wall_s": round(time.perf_counter() - t0, 1)}
        models[name] = entry
    return {"models": models, "imported": sum(m["imported"] for m in models.values()), "of": len(models),
            "refused_by_op": dict(refused_ops.most_common())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-limit", type=float, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vitis-stream", default=str(ROOT.parent / "shared" / "tools" / "vitis-stream"))
    parser.add_argument("--shipped-only", action="store_true")
    parser.add_argument("--zoo-only", action="store_true")
    parser.add_argument("--no-zoo-check", action="store_true",
                        help="import the zoo models without running both references on them")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    vitis = Path(args.vitis_stream) if Path(args.vitis_stream, "hls_stream.h").exists() else None
    result = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    result.update({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                   "cpus": os.cpu_count(), "python": platform.python_version(), "onnx": onnx.__version__})
    with tempfile.TemporaryDirectory() as work:
        if not args.zoo_only:
            result["shipped"] = shipped(args.time_limit, args.repeats, vitis, Path(work))
        if not args.shipped_only:
            result["zoo"] = zoo(not args.no_zoo_check)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
