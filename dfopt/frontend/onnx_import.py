"""ONNX models to operator graphs: load, check, bind the symbolic dimensions, infer shapes, fold
constants, rewrite the patterns, translate (docs/onnx.md).

1. **Load** a path or a ``ModelProto``; ``onnx.checker.check_model``; the default domain's opset
   must be 13 or later (Softmax's last-axis semantics, Squeeze/Unsqueeze axes as an input).
2. **Bind** every symbolic or unknown dimension of a graph input: from ``input_shapes``
   (``{"input_ids": [1, 32]}``, the whole shape of that input), else the leading dimension from
   ``batch``, else an error naming the input and the dimension.
3. **Infer shapes** (``onnx.shape_inference.infer_shapes``, strict, with data propagation) and
   **fold constants** in rounds until nothing changes: a node whose inputs are all constants
   (initializers, ``Constant`` values, folded results) is run by ``onnx.reference`` and its outputs
   become constants; ``Shape`` and ``Size`` of a tensor with a static shape are constants too. So
   the Shape / Gather / Concat / Unsqueeze chains that compute Reshape targets, ``Constant``,
   ``ConstantOfShape`` and Casts of constants all disappear. Every tensor left then has a static
   shape, or the error names it.
4. **Rewrite** the patterns the op set has one kind for (:mod:`dfopt.frontend.rewrites`).
5. **Translate** every node left onto the operator graph's op kinds
   (:mod:`dfopt.frontend.translate`); initializers become ``kind: weight`` tensors (shape and
   dtype only: the operator graph holds no data; :attr:`OnnxImport.weights` keeps the values).

dtypes: float32 -> f32, float16 -> f16, bfloat16 -> bf16, float64 -> f64, int8 -> i8,
int16 -> i16, int32 -> i32; ``dtype`` imports every float tensor as that dtype instead (and then
every float-to-float Cast is dropped). The one exception: the integer token ids of an embedding
(a graph input that a Gather of a weight table reads, :mod:`dfopt.frontend.movement`) import
as i32 from int64 too.

>>> from onnx import TensorProto, helper
>>> x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
>>> y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
>>> model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="act")],
...                                              "tiny", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
>>> from_onnx(model, batch=4).to_dict()["ops"]
[{'name': 'act', 'op': 'relu', 'inputs': ['x'], 'output': 'y'}]
>>> try:
...     from_onnx(model)
... except InstanceError as err:
...     print(str(err)[:104] + "...")
/graph/input/0: input 'x' dimension 0 is symbolic ('batch'): give its shape (input_shapes={'x': [...]}, ...
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from dfopt.errors import InstanceError
from dfopt.frontend.faults import node_fault
from dfopt.frontend.graph import Graph, Node
from dfopt.ir.opgraph import OpGraph

MIN_OPSET = 13
ONNX_DTYPES: dict[int, str] = {TensorProto.FLOAT: "f32", TensorProto.FLOAT16: "f16", TensorProto.BFLOAT16: "bf16",
               TensorProto.DOUBLE: "f64", TensorProto.INT8: "i8", TensorProto.INT16: "i16",
               TensorProto.INT32: "i32"}
FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE)
_NO_FOLD = ("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli")
_MAX_ROUNDS = 20


@dataclass(frozen=True)
class OnnxImport:
    """The result of an import: the operator graph, the value of each of its weights (the
    initializers it reads, and the constants the translation derived from them), the map from the
    ONNX graph's input and output names to the operator graph's tensor names, the opset, and the
    approximations made (``notes``)."""

    graph: OpGraph
    weights: dict[str, np.ndarray]
    names: dict[str, str]
    opset: int
    notes: tuple[str, ...] = ()

    def feeds(self, inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The inputs of :func:`dfopt.reference.evaluate`: ``inputs`` (values by ONNX input name;
        those the graph does not read are left out) and the weights."""
        out = {self.names[k]: np.asarray(v) for k, v in inputs.items() if self.names.get(k) in self.graph.inputs}
        return {**out, **self.weights}


def from_onnx(model_or_path: Any, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
              batch: int | None = None, dtype: str | None = None) -> OpGraph:
    """The operator graph of an ONNX model (a path or a ``ModelProto``); see the module docstring.
    Raises :class:`~dfopt.errors.InstanceError` naming the node, the opset and what is
    unsupported when the model has something the op set cannot express."""
    return import_onnx(model_or_path, input_shapes=input_shapes, batch=batch, dtype=dtype).graph


def import_onnx(model_or_path: Any, *, input_shapes: Mapping[str, Sequence[int]] | None = None,
                batch: int | None = None, dtype: str | None = None) -> OnnxImport:
    """:func:`from_onnx` with the weights' values and the names (:class:`OnnxImport`)."""
    from dfopt.frontend.rewrites import rewrite
    from dfopt.frontend.translate import translate

    if dtype is not None and dtype not in ("f32", "f16", "bf16", "f64"):
        raise InstanceError(f"expected a float dtype (f32, f16, bf16, f64) to import the float tensors as, got "
                            f"{dtype!r}", pointer="--dtype")
    model = load_model(model_or_path)
    opset = model_opset(model)
    model = bind_inputs(model, input_shapes or {}, batch)
    graph = fold(model, opset)
    rewrite(graph, dtype)
    return translate(graph, dtype)


# -- loading --------------------------------------------------------------------------------------

def load_model(model_or_path: Any) -> onnx.ModelProto:
    """The model, read and checked by ``onnx.checker``."""
    if isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path
    else:
        path = os.fspath(model_or_path)
        try:
            model = onnx.load(path)
        except OSError as err:
            raise InstanceError(f"cannot read the ONNX model {path}: {err.strerror or err}") from err
        except Exception as err:  # a protobuf DecodeError: not an ONNX file
            raise InstanceError(f"{path} is not an ONNX model: {type(err).__name__}: {err}") from err
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as err:
        text = " ".join(str(err).split())
        raise InstanceError(f"the model fails onnx.checker: {text}", pointer="/graph") from err
    return model


def model_opset(model: onnx.ModelProto) -> int:
    """The default domain's opset, refused below :data:`MIN_OPSET`."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        raise InstanceError("the model imports no opset of the default ONNX domain", pointer="/opset_import")
    if opset < MIN_OPSET:
        raise InstanceError(f"the model is at opset {opset}; the importer reads opset {MIN_OPSET} and later "
                            "(Softmax's last-axis semantics, Squeeze/Unsqueeze axes as an input): convert it with "
                            "onnx.version_converter.convert_version(model, 17)", pointer="/opset_import")
    return opset


def bind_inputs(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]],
                batch: int | None) -> onnx.ModelProto:
    """A copy of ``model`` whose graph inputs have static shapes (see the module docstring)."""
    inits = {t.name for t in model.graph.initializer}
    real = [(i, v) for i, v in enumerate(model.graph.input) if v.name not in inits]
    names = [v.name for _, v in real]
    for name in input_shapes:
        if name not in names:
            raise InstanceError(f"input_shapes names {name!r}, which is not a graph input (inputs: "
                                f"{', '.join(names) or 'none'})", pointer="--input-shape")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise InstanceError(f"expected a positive batch size, got {batch!r}", pointer="--batch")
    model = _copy(model)
    for i, value in real:
        target = model.graph.input[i]
        given = input_shapes.get(value.name)
        if not target.type.HasField("tensor_type"):
            raise InstanceError(f"input {value.name!r} is not a tensor", pointer=f"/graph/input/{i}")
        dims = target.type.tensor_type.shape.dim
        if given is not None:
            _set_shape(target, list(given), i)
            continue
        for d, dim in enumerate(dims):
            if dim.HasField("dim_value") and dim.dim_value > 0:
                continue
            if d == 0 and batch is not None:
                dim.Clear()
                dim.dim_value = batch
                continue
            what = f"symbolic ({dim.dim_param!r})" if dim.HasField("dim_param") else "unknown"
            raise InstanceError(f"input {value.name!r} dimension {d} is {what}: give its shape (input_shapes="
                                f"{{{value.name!r}: [...]}}, --input-shape {value.name}=...)"
                                + (" or the batch size (batch=N, --batch N)" if d == 0 else ""),
                                pointer=f"/graph/input/{i}")
        if not target.type.tensor_type.HasField("shape"):
            raise InstanceError(f"input {value.name!r} has no shape: give it (--input-shape {value.name}=...)",
                                pointer=f"/graph/input/{i}")
    return model


def _set_shape(target: onnx.ValueInfoProto, shape: list, i: int) -> None:
    if not shape or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in shape):
        raise InstanceError(f"input {target.name!r}: expected a shape of positive integers, got {shape!r}",
                            pointer="--input-shape")
    tt = target.type.tensor_type
    if tt.HasField("shape"):
        declared = tt.shape.dim
        if len(declared) != len(shape):
            raise InstanceError(f"input {target.name!r} has rank {len(declared)} but the shape given, {shape}, has "
                                f"{len(shape)} dimensions", pointer="--input-shape")
        for d, (dim, size) in enumerate(zip(declared, shape)):
            if dim.HasField("dim_value") and dim.dim_value > 0 and dim.dim_value != size:
                raise InstanceError(f"input {target.name!r} dimension {d} is {dim.dim_value} in the model but the "
                                    f"shape given, {shape}, says {size}", pointer="--input-shape")
    tt.ClearField("shape")
    for size in shape:
        tt.shape.dim.add().dim_value = size


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    return out


# -- shape inference and constant folding ---------------------------------------------------------

def fold(model: onnx.ModelProto, opset: int) -> Graph:
    """The working graph of ``model`` with its constants folded and a static shape for every tensor."""
    graph = _working_graph(model, opset)
    for _ in range(_MAX_ROUNDS):
        _infer(model, graph)
        if not _fold_round(graph):
            break
        model = _rebuild(model, graph)
    graph.prune()
    _check_static(graph)
    return graph


def _working_graph(model: onnx.ModelProto, opset: int) -> Graph:
    g = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    nodes = []
    for i, n in enumerate(g.node):
        attrs = {a.name: _attr(a) for a in n.attribute}
        nodes.append(Node(n.name or f"{n.op_type}_{i}", n.op_type, list(n.input), list(n.output), attrs, i,
                          n.domain, n))
    inputs = [v.name for v in g.input if v.name not in consts]
    return Graph(nodes, consts, {}, {}, inputs, [v.name for v in g.output], set(consts), opset)


def _attr(a: onnx.AttributeProto) -> Any:
    value = helper.get_attribute_value(a)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
    return value


def _infer(model: onnx.ModelProto, graph: Graph) -> None:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as err:
        text = " ".join(str(err).split())
        raise InstanceError(f"shape inference failed: {text}", pointer="/graph") from err
    g = inferred.graph
    for value in list(g.input) + list(g.value_info) + list(g.output):
        tt = value.type.tensor_type
        if not value.type.HasField("tensor_type"):
            continue
        graph.dtypes[value.name] = tt.elem_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            graph.shapes[value.name] = tuple(int(d.dim_value) for d in tt.shape.dim)
    for name, value in graph.consts.items():
        graph.shapes[name] = tuple(value.shape)
        graph.dtypes[name] = _elem_type(value)


def _elem_type(value: np.ndarray) -> int:
    if value.dtype.name == "bfloat16":
        return TensorProto.BFLOAT16
    return int(helper.np_dtype_to_tensor_dtype(value.dtype))


def _fold_round(graph: Graph) -> bool:
    """Fold every node that can be; True when one was."""
    folded = False
    for node in list(graph.nodes):
        values = _fold_node(graph, node)
        if values is None:
            continue
        for name, value in zip(node.outputs, values):
            if name:
                graph.consts[name] = np.asarray(value)
                graph.shapes[name] = tuple(np.shape(value))
                graph.dtypes[name] = _elem_type(np.asarray(value))
        graph.nodes.remove(node)
        folded = True
    return folded


def _fold_node(graph: Graph, node: Node) -> list | None:
    if node.domain not in ("", "ai.onnx") or node.op in _NO_FOLD:
        return None
    if node.op in ("Shape", "Size") and node.inputs[0] in graph.shapes and node.inputs[0] not in graph.consts:
        shape = graph.shapes[node.inputs[0]]
        if node.op == "Size":
            return [np.array(int(np.prod(shape)), dtype=np.int64)]
        start, end = node.attrs.get("start", 0), node.attrs.get("end", len(shape))
        return [np.array(shape[slice(start, end)], dtype=np.int64)]
    if not all(i in graph.consts for i in node.inputs if i):
        return None
    if any(isinstance(v, onnx.GraphProto) for v in node.attrs.values()):
        return None
    from onnx.reference import ReferenceEvaluator

    feeds = {i: graph.consts[i] for i in node.inputs if i}
    try:
        return list(ReferenceEvaluator(node.proto, opsets={"": graph.opset}).run(None, feeds))
    except Exception as err:  # onnx.reference raises what the op's code raises
        raise node_fault(node, graph.opset, f"folding this node of constants failed: {type(err).__name__}: "
                                            f"{err}") from err


def _rebuild(model: onnx.ModelProto, graph: Graph) -> onnx.ModelProto:
    """The model of the nodes left, for the next round of shape inference: integer constants as
    initializers (their values drive the inference of Reshape targets), float ones as inputs."""
    used = {i for n in graph.nodes for i in n.inputs if i} | set(graph.outputs)
    inits, const_inputs = [], []
    for name in sorted(used & set(graph.consts)):
        value = graph.consts[name]
        if value.dtype.kind in "iub":
            inits.append(numpy_helper.from_array(value, name))
        else:
            const_inputs.append(helper.make_tensor_value_info(name, graph.dtypes[name], value.shape))
    inputs = [v for v in model.graph.input if v.name in graph.inputs]
    g = helper.make_graph([n.proto for n in graph.nodes], model.graph.name, inputs + const_inputs,
                          list(model.graph.output), initializer=inits)
    out = helper.make_model(g, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    return out


def _check_static(graph: Graph) -> None:
    for node in graph.nodes:
        for name in [i for i in node.inputs if i] + [o for o in node.outputs if o]:
            if name not in graph.shapes:
                raise node_fault(node, graph.opset, f"tensor {name!r} has no static shape after shape inference "
                                                    "and constant folding (a shape computed from data?)")


def input_shapes(given: Sequence[str] | None) -> dict[str, list[int]]:
    """``["ids=1x32", ...]`` (``--input-shape``) as ``{"ids": [1, 32]}``; a malformed one is bad
    input naming the flag.

    >>> input_shapes(["input_ids=1x32", "mask=1X32"])
    {'input_ids': [1, 32], 'mask': [1, 32]}
    """
    shapes: dict[str, list[int]] = {}
    for text in given or []:
        name, sep, dims = text.rpartition("=")
        try:
            shape = [int(d) for d in dims.lower().split("x")]
        except ValueError:
            shape = []
        if not sep or not name or not shape or min(shape) < 1:
            raise InstanceError(f"expected NAME=DIMxDIM... with positive dimensions (input_ids=1x32), got {text!r}",
                                pointer="--input-shape")
        if name in shapes:
            raise InstanceError(f"input {name!r} is given twice", pointer="--input-shape")
        shapes[name] = shape
    return shapes


def onnx_instance(path: str, *, input_shapes: Mapping[str, Sequence[int]] | None = None, batch: int | None = None,
                  dtype: str | None = None, platform: str | None = None, name: str | None = None
                  ) -> tuple[dict, tuple[str, ...]]:
    """The ``problem: pipeline`` instance (as a dict, what ``dfopt import`` writes) of the ONNX
    model at ``path`` on ``platform`` (default u280), and the import's notes."""
    imported = import_onnx(path, input_shapes=input_shapes, batch=batch, dtype=dtype)
    return instance_dict(imported, path, platform=platform, name=name), imported.notes


def instance_dict(imported: OnnxImport, path: str, platform: str | None = None, name: str | None = None,
                  checked: str = "") -> dict:
    """The ``problem: pipeline`` instance of an import of the model at ``path``; ``checked``
    (how the import compares with ``onnx.reference``) goes into the description."""
    from dfopt.instance import FORMAT

    g = imported.graph
    stem = os.path.splitext(os.path.basename(path))[0]
    weights = sum(t.kind == "weight" for t in g.tensors.values())
    data = {"format": FORMAT, "name": name or stem, "problem": "pipeline",
            "description": f"imported from {os.path.basename(path)} (ONNX opset {imported.opset}) by dfopt import: "
                           f"{len(g.ops)} ops, {weights} weights" + "".join(f"; {note}" for note in imported.notes)
                           + (f"; {checked}" if checked else ""),
            "platform": platform or "u280", "operators": g.to_dict()}
    return data
