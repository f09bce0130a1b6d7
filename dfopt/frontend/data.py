"""The data an imported model's design runs on, and the import's own check.

An operator graph holds shapes and dtypes only; a design emitted from a JSON instance runs on
:func:`dfopt.reference.random_inputs`. A design emitted from an ONNX model (``dfopt solve
MODEL.onnx --emit-dir DIR``) runs on the model's own weights and on inputs that are the user's
(``--inputs FILE.npz``, arrays keyed by the ONNX graph's input names) or random, and its test bench
compares with what ``onnx.reference.ReferenceEvaluator`` computes on the model for them: the
reference of the design is the model, not the import. ``make csim`` then also writes
``DIR/outputs.npz``, keyed by the ONNX graph's output names.

The same run checks the translation: the operator graph's NumPy reference
(:func:`dfopt.reference.evaluate`) on the same inputs and weights against the ONNX reference's
outputs, within the dtype's :data:`~dfopt.reference.TOLERANCES` scaled by
:data:`CHAIN_SLACK` (the two evaluate long chains of float ops in different orders): the
``onnx-reference`` check of the solution (:func:`ModelData.check`).

>>> from onnx import TensorProto, helper
>>> vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3])
>>> model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
...                                               [vi("x")], [vi("y")]), opset_imports=[helper.make_opsetid("", 17)])
>>> from dfopt.frontend import import_onnx
>>> data = model_data(model, import_onnx(model), {"x": np.array([[-1, 2, -3], [4, -5, 6]], np.float32)})
>>> data.expected["y"].tolist(), data.output_names, data.check().ok
([[0.0, 2.0, 0.0], [4.0, 0.0, 6.0]], {'y': 'y'}, True)
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dfopt.errors import InstanceError

if TYPE_CHECKING:
    from dfopt.frontend.onnx_import import OnnxImport
    from dfopt.solution import Check

#: The translation check's tolerance: the dtype's reference tolerance times this (the import and
#: ``onnx.reference`` sum matmuls and norms in different orders; a wrong translation is off by
#: far more).
CHAIN_SLACK = 10


@dataclass
class ModelData:
    """``values``: every graph input and weight of the operator graph (its names); ``expected``:
    the ONNX reference's outputs on them (operator-graph names); ``ours``: the operator graph's
    own reference outputs; ``output_names``: operator-graph output -> ONNX output name;
    ``inputs``: where the inputs came from (a file, or ``random (seed N)``)."""

    values: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    ours: dict[str, np.ndarray]
    output_names: dict[str, str]
    dtypes: dict[str, str]
    inputs: str

    def check(self) -> Check:
        """The translation check (``onnx-reference``): every output of the operator graph's NumPy
        reference within ``CHAIN_SLACK`` x the dtype's tolerance of the ONNX reference's."""
        from dfopt.reference import TOLERANCES
        from dfopt.solution import Check

        details = []
        for name, want in self.expected.items():
            rtol, atol = TOLERANCES[self.dtypes[name]]
            got = np.asarray(self.ours[name], np.float64)
            e = np.asarray(want, np.float64)
            err = np.abs(got - e)
            bad = ~((err <= CHAIN_SLACK * (atol + rtol * np.abs(e))) | (got == e) | (np.isnan(got) & np.isnan(e)))
            if got.shape != e.shape or bad.any():
                worst = float(np.nanmax(err)) if err.size else float("inf")
                details.append(f"output {self.output_names[name]!r} ({name}): {int(bad.sum())} of {e.size} values "
                               f"differ from onnx.reference on {self.inputs} inputs (max abs error {worst:.3g})")
        return Check("onnx-reference", not details, details)

    def max_error(self) -> float:
        errs = [float(np.nanmax(np.abs(np.asarray(self.ours[n], np.float64) - np.asarray(e, np.float64))))
                for n, e in self.expected.items() if np.size(e)]
        return max(errs, default=0.0)


def read_inputs(path: str | os.PathLike, onnx_inputs: Mapping[str, tuple[tuple[int, ...], np.dtype]],
                flag: str = "--inputs") -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` keyed by ONNX graph input names, checked against ``onnx_inputs``
    (name -> (shape, dtype)): an unknown, missing or misshapen array is an error naming it; the
    values are cast to the input's dtype (a float array for an integer input must hold integers)."""
    try:
        with np.load(os.fspath(path), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except FileNotFoundError:
        raise InstanceError(f"no such file: {os.fspath(path)}", pointer=flag) from None
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise InstanceError(f"{os.fspath(path)} is not a NumPy .npz of arrays: {err}", pointer=flag) from None
    known = ", ".join(onnx_inputs) or "none"
    for name in arrays:
        if name not in onnx_inputs:
            raise InstanceError(f"array {name!r} of {os.fspath(path)} is not a graph input of the model (inputs: "
                                f"{known})", pointer=f"{flag}/{name}")
    out = {}
    for name, (shape, dtype) in onnx_inputs.items():
        if name not in arrays:
            raise InstanceError(f"{os.fspath(path)} has no array {name!r} (the model's inputs: {known})",
                                pointer=f"{flag}/{name}")
        value = arrays[name]
        if tuple(value.shape) != tuple(shape):
            raise InstanceError(f"array {name!r} is {list(value.shape)} but the input is {list(shape)}",
                                pointer=f"{flag}/{name}")
        if np.issubdtype(dtype, np.integer) and not (np.issubdtype(value.dtype, np.integer) or
                                                     np.array_equal(value, np.round(value))):
            raise InstanceError(f"array {name!r} holds fractions but the input is {dtype.name}",
                                pointer=f"{flag}/{name}")
        if not np.issubdtype(value.dtype, np.number) and value.dtype != np.bool_:
            raise InstanceError(f"array {name!r} is {value.dtype}, not numbers", pointer=f"{flag}/{name}")
        out[name] = value.astype(dtype)
    return out


def onnx_inputs(model: Any, imported: OnnxImport) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The model's graph inputs (initializers left out) with the shapes the import bound and their
    NumPy dtypes."""
    from onnx import helper

    inits = {t.name for t in model.graph.initializer}
    out = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type))
        name = imported.names.get(v.name)
        if name in imported.graph.tensors:
            shape = imported.graph.tensors[name].shape
        else:
            shape = tuple(d.dim_value or 1 for d in v.type.tensor_type.shape.dim)
        out[v.name] = (tuple(int(d) for d in shape), dtype)
    return out


def spec_lrn() -> type:
    """``LRN`` as the ONNX spec defines it, for ``ReferenceEvaluator(new_ops=...)``: onnx's own
    reference (up to 1.23 at least) sums the window over the batch axis's range instead of the
    channels' (onnx/onnx#7805), so on ``[1, C, H, W]`` only channel 0 is normalised."""
    from onnx.reference.op_run import OpRun

    class LRN(OpRun):
        op_domain = ""

        def _run(self, x, alpha=None, beta=None, bias=None, size=None):
            c = x.shape[1]
            lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
            square = x.astype(np.float64) ** 2
            total = np.zeros_like(square)
            for k in range(c):
                total[:, k] = square[:, max(0, k - lo):min(c, k + hi + 1)].sum(axis=1)
            return ((x / (bias + alpha / size * total) ** beta).astype(x.dtype),)

    return LRN


def model_data(model: Any, imported: OnnxImport, inputs: Mapping[str, np.ndarray] | None = None,
               seed: int = 0) -> ModelData:
    """The :class:`ModelData` of ``model`` (a path or a ``ModelProto``; the one ``imported``
    came from) on ``inputs`` (by ONNX input name, checked by :func:`read_inputs` when they come
    from a file), else on :func:`dfopt.reference.random_inputs` of the operator graph (``seed``)."""
    from onnx.reference import ReferenceEvaluator

    from dfopt.frontend.onnx_import import load_model
    from dfopt.reference import evaluate, random_inputs

    model = load_model(model)
    graph = imported.graph
    wanted = onnx_inputs(model, imported)
    if inputs is None:
        drawn = random_inputs(graph, seed)
        feeds = {}
        for name, (shape, dtype) in wanted.items():
            mine = imported.names.get(name)
            feeds[name] = drawn[mine].astype(dtype) if mine in drawn else np.zeros(shape, dtype)
        source = f"random (seed {seed})"
    else:
        feeds = {k: np.asarray(v) for k, v in inputs.items()}
        source = "the given"
    try:
        run = ReferenceEvaluator(model, new_ops=[spec_lrn()]).run(None, feeds)
    except Exception as err:  # onnx.reference raises what an op's code raises
        raise InstanceError(f"onnx.reference cannot run the model on these inputs: {type(err).__name__}: {err}",
                            pointer="--inputs") from err
    outputs = [o.name for o in model.graph.output]
    names = {imported.names[o]: o for o in outputs if o in imported.names}
    values = imported.feeds(feeds)
    values = {k: np.asarray(v) for k, v in values.items() if k in graph.inputs}
    ours = evaluate(graph, values)
    expected = {imported.names[o]: np.asarray(v) for o, v in zip(outputs, run) if o in imported.names}
    return ModelData(values, expected, {k: ours[k] for k in expected}, names,
                     {k: graph.tensors[k].dtype for k in expected}, source)
