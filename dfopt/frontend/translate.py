"""Translation of the working ONNX graph (folded and rewritten) onto the operator graph's op
kinds, each node's attributes honoured or refused.

Supported ONNX ops (default domain), each tested numerically against ``onnx.reference`` at the
opsets listed (``tests/test_onnx_frontend.py``; every opset from 13 is read):

=====================  ==================  =====================================================
ONNX op                opsets tested       becomes
=====================  ==================  =====================================================
MatMul                 13 17 18 21 23      ``matmul`` (2-D, batched, B shared or of size-1 batch)
Gemm                   13 17 18 21 23      ``matmul`` (transA/transB, alpha as ``scale``) + ``add``
                                           of beta * C
Add, Mul               13 17 18 21 23      ``add`` / ``mul``: same shapes, a trailing vector, a
                                           constant broadcast along the last axis, or x + 0 / x * 1
                                           (dropped)
Sub, Div               13 17 18 21 23      by a constant: ``add`` of -c / ``mul`` of 1/c; of two
                                           tensors: ``sub`` / ``div`` (:mod:`.arith`)
Add (causal mask)      13 17 21            ``mask``: x + C, C a constant [..., S, T] (size-1
                                           leading axes) 0 where key <= query + offset and one
                                           fill <= -1e4 or -inf above (equal after the Softmax)
Where (causal mask)    13 17 21            ``mask``: Where(M, x, fill) or Where(~M, fill, x), M a
                                           constant (or folded) lower triangle, fill one constant
Relu                   13 17 18 21 23      ``relu``
Softmax                13 17 18 21 23      ``softmax`` (last axis only)
LayerNormalization     17 18 21 23         ``layernorm`` (last axis; Mean / InvStdDev unused)
Gelu                   21 23               ``gelu`` with the same ``approximate``
Transpose              13 17 18 21 23      ``transpose`` (identity dropped)
Reshape, Flatten       13 17 18 21 23      ``reshape`` (0 and -1 resolved; no-op dropped)
Squeeze, Unsqueeze     13 17 18 21 23      ``reshape`` (no-op dropped)
Identity, Dropout      13 17 18 21 23      dropped (Dropout in inference only)
Cast                   13 17 18 21 23      dropped when to the same type, or any float to float
                                           with ``dtype``; of constants: folded
Concat                 13 17 21            ``concat`` (:mod:`.movement`)
Slice, Split           13 17 21            ``slice``: constant indices resolved and clamped;
                                           Split one slice per output (``split`` or
                                           ``num_outputs``)
Expand                 13 17 21            ``expand`` to a constant shape
Gather (embedding)     13 17 21            ``embedding``: a [V, D] weight on axis 0 by integer
                                           ids from a graph input (imported as i32)
Conv                   13 17 21            ``conv2d`` (2-D NCHW, group, auto_pad resolved to
                                           pads, dilation 1; :mod:`.cnn`)
BatchNormalization     13 17 21            folded into the Conv before it; else a depthwise
                                           1x1 ``conv2d`` (inference only)
MaxPool, AveragePool,  13 17 21            ``pool`` (max / avg, count_include_pad; Global*:
GlobalAveragePool,                         kernel [H, W]; ceil_mode only where it gives the
GlobalMaxPool                              floor's shape)
Constant,              13 17 18 21 23      folded (with Shape, Gather, Concat, Unsqueeze ... of
ConstantOfShape                            constants and static shapes)
Exp, Tanh, Erf,        13 17 18 21 23      ``unary`` (``fn``), after the patterns of
Sigmoid, Sqrt,                             :mod:`dfopt.frontend.rewrites` (GELU, SiLU, RMSNorm,
Reciprocal, Neg, Abs                       LayerNorm, the attention core) took theirs
Pow                    13 17 18 21 23      ``unary`` by a constant scalar exponent (:mod:`.arith`)
ReduceSum, ReduceMean, 13 17 18 21 23      ``reduce`` over the last axis, after a transpose /
ReduceMax, ReduceMin                       reshape bringing the reduced axes there (:mod:`.arith`)
=====================  ==================  =====================================================

Everything else is refused with the node named (:mod:`dfopt.frontend.faults`).

>>> from dfopt.frontend.graph import Graph, Node
>>> g = Graph([Node("/Softmax", "Softmax", ["x"], ["y"], {"axis": -1}, 0)], {}, {"x": (4, 8), "y": (4, 8)},
...           {"x": 1, "y": 1}, ["x"], ["y"], set(), 17)
>>> translate(g).graph.to_dict()["ops"]
[{'name': 'Softmax', 'op': 'softmax', 'inputs': ['x'], 'output': 'y'}]
>>> g.nodes[0].attrs["axis"] = 0
>>> try:
...     translate(g)
... except InstanceError as err:
...     print(str(err)[:97])
/graph/node/0: node '/Softmax' (Softmax, opset 17): axis=0: only the last axis (axis=-1, or 1 for
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from dfopt.errors import InstanceError, Problem
from dfopt.frontend import arith, cnn, masks, movement
from dfopt.frontend.faults import node_fault, unsupported_op
from dfopt.frontend.graph import Graph, Node
from dfopt.frontend.onnx_import import FLOAT_TYPES, ONNX_DTYPES, OnnxImport
from dfopt.frontend.rewrites import dropout_trains
from dfopt.frontend.rope import rotary_embedding, translate_rope
from dfopt.ir.opgraph import MASK_VALUE, OpGraph, broadcast_kind
from dfopt.reference import STORAGE, to_bf16


def translate(g: Graph, dtype: str | None = None) -> OnnxImport:
    """The operator graph of ``g`` (see the module docstring)."""
    return _Translator(g, dtype).run()


def _identifier(name: str) -> str:
    out = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")
    out = re.sub(r"_+", "_", out)
    return out if out and out[0].isalpha() else f"t_{out}"


class _Translator:
    def __init__(self, g: Graph, dtype: str | None) -> None:
        self.g, self.dtype = g, dtype
        self.names: dict[str, str] = {}            # ONNX tensor -> operator-graph tensor
        self.alias: dict[str, str] = {}            # ONNX tensor -> the ONNX tensor it equals
        self.taken: set[str] = set()
        self.op_names: set[str] = set()
        self.tensors: dict[str, dict] = {}
        self.weights: dict[str, np.ndarray] = {}
        self.derived: dict[tuple, str] = {}
        self.ops: list[dict] = []
        self.node: Node | None = None

    def run(self) -> OnnxImport:
        """Translate every node; the faults of all of them at once (every op outside the
        coverage, then every node whose attributes or operands the op set cannot express: a
        refused node's results stand in as inputs of their shape, so the nodes after it are
        still checked), never a partial graph."""
        g = self.g
        outside = [unsupported_op(node, g.opset) for node in g.nodes
                   if node.domain not in ("", "ai.onnx") or node.op not in _HANDLERS]
        if outside:
            raise InstanceError(problems=[p for err in outside for p in err.problems] +
                                [Problem("/graph", f"the ONNX ops the front end imports: {', '.join(SUPPORTED)}")])
        refused: list[Problem] = []
        for node in g.nodes:
            self.node = node
            try:
                _HANDLERS[node.op](self, node)
            except InstanceError as err:
                refused += err.problems
                self._stand_in(node)
        if refused:
            raise InstanceError(problems=refused)
        outputs = [self._output(i, name) for i, name in enumerate(g.outputs)]
        inputs = [self.names[n] for n in g.inputs if n in self.names]       # the graph inputs first, in order
        tensors = {**{n: self.tensors[n] for n in inputs}, **self.tensors}
        d = {"tensors": tensors, "ops": self.ops, "outputs": outputs}
        try:
            graph = OpGraph.from_dict(d)
        except InstanceError as err:
            raise InstanceError(f"the operator graph translated from the model is invalid (a front-end bug): {err}",
                                pointer="/graph") from err
        names = {k: v for k, v in self.names.items() if k in g.inputs or k in g.outputs}
        return OnnxImport(graph, self.weights, names, g.opset, tuple(g.notes))

    def _stand_in(self, node: Node) -> None:
        """Each result of a refused ``node`` as a graph input of its shape, so the translation of
        the nodes that read it goes on (and finds their own faults)."""
        for out in node.outputs:
            if out and out not in self.names and out in self.g.shapes:
                name = self._fresh(out)
                self.tensors[name] = {"shape": list(self.g.shapes[out]) or [1], "dtype": "f32"}

    # -- names, tensors, weights ----------------------------------------------------------------
    def _fresh(self, onnx_name: str, suffix: str = "") -> str:
        base = _identifier(onnx_name) + (f"_{suffix}" if suffix else "")
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        if not suffix and onnx_name not in self.names:
            self.names[onnx_name] = name
        return name

    def _declare(self, onnx_name: str, name: str, shape: tuple, dtype: str, kind: str) -> None:
        if not shape or any(d < 1 for d in shape):
            raise self._fault(f"tensor {onnx_name!r} has shape {list(shape)}: the operator graph takes tensors "
                              "of rank >= 1 with positive dimensions")
        self.tensors[name] = {"shape": list(shape), "dtype": dtype, **({"kind": kind} if kind != "input" else {})}

    def _dtype(self, onnx_name: str, where: str = "") -> str:
        elem = self.g.dtypes[onnx_name]
        if self.dtype is not None and elem in FLOAT_TYPES:
            return self.dtype
        if elem not in ONNX_DTYPES:
            from onnx import helper

            what = f"tensor {onnx_name!r} is {helper.tensor_dtype_to_np_dtype(elem).name}: the operator graph's " \
                   f"dtypes are float32, float16, bfloat16, float64, int8, int16, int32"
            if where:
                raise InstanceError(what, pointer=where)
            raise self._fault(what)
        return ONNX_DTYPES[elem]

    def _fault(self, what: str) -> InstanceError:
        assert self.node is not None
        return node_fault(self.node, self.g.opset, what)

    def operand(self, name: str) -> str:
        """The operator-graph tensor of ONNX tensor ``name`` (a constant becomes a weight)."""
        name = self.alias.get(name, name)
        if name in self.g.consts:
            return self.weight(name)
        if name in self.g.inputs and name not in self.names:      # declared at its first use
            i = self.g.inputs.index(name)
            self._declare(name, self._fresh(name), self.g.shapes[name], self._dtype(name, f"/graph/input/{i}"),
                          "input")
        return self.names[name]

    def weight(self, onnx_name: str, value: np.ndarray | None = None, suffix: str = "") -> str:
        """A weight tensor: the constant ``onnx_name`` as it is, or ``value`` derived from it."""
        key = (onnx_name, suffix)
        if key in self.derived:
            return self.derived[key]
        value = self.g.consts[onnx_name] if value is None else value
        name = self._fresh(onnx_name, suffix)
        dtype = self._dtype(onnx_name)
        self._declare(onnx_name, name, tuple(value.shape), dtype, "weight")
        self.weights[name] = to_bf16(value) if dtype == "bf16" else np.asarray(value).astype(STORAGE[dtype])
        self.derived[key] = name
        return name

    def result(self, onnx_name: str) -> str:
        """The operator-graph name for the result ``onnx_name`` of the current node."""
        return self.names[onnx_name] if onnx_name in self.names else self._fresh(onnx_name)

    def emit(self, kind: str, inputs: list[str], output: str, suffix: str = "", attrs: dict | None = None) -> str:
        """Add an op of the current node; returns ``output``."""
        assert self.node is not None
        base = _identifier(self.node.name) + (f"_{suffix}" if suffix else "")
        name, k = base, 1
        while name in self.op_names:
            k += 1
            name = f"{base}_{k}"
        self.op_names.add(name)
        self.ops.append({"name": name, "op": kind, "inputs": inputs, "output": output, **(attrs or {})})
        return output

    def same(self, node: Node, src: str) -> None:
        """``node``'s result equals ``src``: an alias, or (for a graph output) a reshape to itself."""
        out = node.outputs[0]
        src = self.alias.get(src, src)
        if out in self.g.outputs:
            self.emit("reshape", [self.operand(src)], self.result(out), attrs={"shape": list(self.g.shapes[out])})
        else:
            self.alias[out] = src

    def _output(self, i: int, name: str) -> str:
        src = self.alias.get(name, name)
        if src in self.g.consts:
            raise InstanceError(f"graph output {name!r} is a constant: the whole computation of it folds away, so "
                                "there is nothing to map onto the device", pointer=f"/graph/output/{i}")
        if src in self.g.inputs:
            raise InstanceError(f"graph output {name!r} is the graph input {src!r} unchanged",
                                pointer=f"/graph/output/{i}")
        return self.names[src]

    def shape(self, name: str) -> tuple:
        return self.g.shapes[self.alias.get(name, name)]

    # -- broadcasting ---------------------------------------------------------------------------
    def const_operand(self, c: str, value: np.ndarray, target: tuple, kind: str, derived: str = "") -> str:
        """The weight for constant ``c`` (or ``value`` derived from it) broadcast to ``target``:
        a vector of the last dimension when it varies along that axis at most, else its own shape
        (without the size-1 axes beyond the target's rank) when it broadcasts to the target
        (a per-channel ``[C, 1, 1]``, a column ``[..., 1]``)."""
        n = target[-1]
        lead = value.shape[:-1] if value.ndim else ()
        if value.ndim <= len(target) and all(d == 1 for d in lead):
            if value.shape == (n,) and not derived:
                return self.weight(c)
            vector = np.broadcast_to(value.reshape(value.shape[-1:] if value.ndim else (1,)), (n,)).copy()
            return self.weight(c, vector, derived or "vec")
        extra = value.ndim - len(target)
        if extra > 0 and all(d == 1 for d in value.shape[:extra]):
            value, derived = value.reshape(value.shape[extra:]), derived or "squeezed"
        if broadcast_kind(value.shape, target) is not None:
            return self.weight(c, value, derived) if derived else self.weight(c)
        raise self._fault(f"unsupported broadcast: constant {c!r} {list(value.shape)} against {list(target)}: "
                          f"the op set's {kind} takes a second operand that broadcasts to the first (NumPy's rule, "
                          "right-aligned, each dimension equal or 1); the first keeps its shape")

    def two_tensors(self, kind: str, a: str, b: str, out: str, suffix: str = "") -> None:
        target = self.g.shapes[out]
        sa, sb = self.shape(a), self.shape(b)
        if sa != target and sb == target:
            a, b, sa, sb = b, a, sb, sa
        if sa != target:
            raise self._fault(f"unsupported broadcast: {list(sa)} {kind} {list(sb)} -> {list(target)}: the op set's "
                              f"{kind} needs one operand of the result's shape")
        y = self.operand(b)
        if broadcast_kind(sb, target) is None:
            if int(np.prod(sb)) == target[-1] and all(d == 1 for d in sb[:-1]):
                y = self.emit("reshape", [y], self._fresh(b, "vec"), suffix="vec", attrs={"shape": [target[-1]]})
            else:
                raise self._fault(f"unsupported broadcast: {list(sa)} {kind} {list(sb)}: the op set's {kind} takes "
                                  "a second operand that broadcasts to the first (NumPy's rule, right-aligned, each "
                                  "dimension equal or 1)")
        self.emit(kind, [self.operand(a), y], self.result(out), suffix=suffix)


# == the handlers =================================================================================

def _binary(t: _Translator, node: Node) -> None:
    a, b = node.inputs
    out = node.outputs[0]
    kind = {"Add": "add", "Sub": "add", "Mul": "mul", "Div": "mul"}[node.op]
    consts = t.g.consts
    if node.op in ("Sub", "Div") and (a in consts or b not in consts):
        arith.computed_pair(t, node)
        return
    if a not in consts and b not in consts:
        t.two_tensors(kind, a, b, out)
        return
    x, c = (b, a) if a in consts else (a, b)
    value = consts[c]
    derived = ""
    if node.op == "Sub":
        value, derived = -value, "neg"
    elif node.op == "Div":
        if (value.dtype.kind != "f" and value.dtype.name != "bfloat16") or not np.all(value != 0):
            raise t._fault(f"Div by constant {c!r}: expected a float constant without zeros, to multiply by its "
                           "reciprocal")
        value, derived = (np.ones((), value.dtype) / value).astype(value.dtype), "recip"
    target = t.g.shapes[out]
    if t.shape(x) != target:
        raise t._fault(f"unsupported broadcast: tensor {x!r} {list(t.shape(x))} grows to {list(target)} by the "
                       f"constant {c!r} {list(value.shape)}; the op set's {kind} keeps its first operand's shape")
    if node.op == "Add" and _additive_mask(t, x, c, value, target):
        return
    if np.all(value == (0 if kind == "add" else 1)):
        t.same(node, x)
        return
    w = t.const_operand(c, value, target, kind, derived)
    t.emit(kind, [t.operand(x), w], t.result(out))


def _additive_mask(t: _Translator, x: str, c: str, value: np.ndarray, target: tuple) -> bool:
    """``x + c`` as ``mask`` when constant ``c`` is a causal mask (:func:`.masks.additive`);
    False for an ordinary add. A constant that spans the last two axes, broadcast over the others,
    and is not causal is refused."""
    found = masks.additive(value, target)
    if isinstance(found, masks.Causal):
        _emit_mask(t, x, found)
        return True
    if found is not None and tuple(value.shape) != tuple(target):
        raise t._fault(f"constant {c!r} {list(value.shape)} broadcast over the leading axes of {list(target)} "
                       f"(an attention mask?) is not a causal mask: {found}; the op set's mask is causal only "
                       "(0 where key <= query + offset, one large negative fill elsewhere)")
    return False


def _emit_mask(t: _Translator, x: str, found: masks.Causal) -> None:
    assert t.node is not None
    attrs: dict = {"causal": True, "value": found.value(MASK_VALUE)}
    if found.offset:
        attrs["offset"] = found.offset
    t.emit("mask", [t.operand(x)], t.result(t.node.outputs[0]), attrs=attrs)


def _where(t: _Translator, node: Node) -> None:
    """``Where(M, x, fill)`` / ``Where(~M, fill, x)`` with a constant causal condition and a
    constant fill of one value: ``mask`` (:mod:`dfopt.frontend.masks`)."""
    cond, a, b = node.inputs
    consts, out = t.g.consts, node.outputs[0]
    if cond not in consts:
        raise t._fault(f"the condition {cond!r} is computed from data: only a Where of a constant (or folded) "
                       "causal condition imports (as mask)")
    if (a in consts) == (b in consts):
        what = "two constants" if a in consts else "two computed tensors"
        raise t._fault(f"Where between {what}: only a Where between a computed tensor and a constant fill "
                       "imports (as mask)")
    x, fill, keep = (a, b, True) if b in consts else (b, a, False)
    if t.g.dtypes[t.alias.get(x, x)] not in FLOAT_TYPES:
        raise t._fault(f"Where on the non-float tensor {x!r}: only a causal mask on float scores imports (as mask)")
    target = t.g.shapes[out]
    if t.shape(x) != target:
        raise t._fault(f"unsupported broadcast: tensor {x!r} {list(t.shape(x))} grows to {list(target)}; the "
                       "op set's mask keeps its operand's shape")
    values = np.unique(np.asarray(consts[fill], np.float64))
    if values.size != 1:
        raise t._fault(f"the fill {fill!r} takes {values.size} values: a mask fills with one")
    found = masks.selecting(consts[cond], target, keep, float(values[0]))
    if not isinstance(found, masks.Causal):
        why = found or (f"it is {list(consts[cond].shape)}, not [..., {target[-2]}, {target[-1]}] with size-1 "
                        "leading axes")
        raise t._fault(f"the condition {cond!r} is not a causal mask: {why}; the op set's mask is causal only "
                       "(the keys after each query, + offset)")
    _emit_mask(t, x, found)


def _matmul(t: _Translator, node: Node) -> None:
    a, b = node.inputs[:2]
    attrs = node.attrs if node.op == "dfopt.matmul" else {"transpose_a": False, "transpose_b": False, "scale": 1.0}
    sa, sb, out = t.shape(a), t.shape(b), node.outputs[0]
    if len(sa) < 2 or len(sb) < 2:
        raise t._fault(f"a 1-D operand ({list(sa)} x {list(sb)}): the op set's matmul takes operands of rank >= 2")
    y = t.operand(b)
    if len(sb) > 2 and sb[:-2] != sa[:-2] and all(d == 1 for d in sb[:-2]):
        if b in t.g.consts:
            y = t.weight(b, t.g.consts[b].reshape(sb[-2:]), "2d")
        else:
            y = t.emit("reshape", [y], t._fresh(b, "2d"), suffix="2d", attrs={"shape": list(sb[-2:])})
        sb = sb[-2:]
    m = sa[-1] if attrs["transpose_a"] else sa[-2]
    n = sb[-2] if attrs["transpose_b"] else sb[-1]
    ours = tuple(sa[:-2]) + (m, n)
    if (len(sb) > 2 and sb[:-2] != sa[:-2]) or ours != t.g.shapes[out]:
        raise t._fault(f"unsupported broadcast: {list(sa)} x {list(sb)} -> {list(t.g.shapes[out])}: the op set's "
                       "matmul takes B with A's batch dimensions, or 2-D (shared across the batch)")
    scale = float(attrs["scale"])
    extra: dict = {key: True for key in ("transpose_a", "transpose_b") if attrs[key]}
    if scale != 1.0:
        if t._dtype(out) not in ("f32", "f64", "f16", "bf16"):
            raise t._fault(f"scale {scale} on an integer matmul")
        extra["scale"] = scale
    t.emit("matmul", [t.operand(a), y], t.result(out), attrs=extra)


def _gemm(t: _Translator, node: Node) -> None:
    a, b, c = node.input(0), node.input(1), node.input(2)
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    out = node.outputs[0]
    attrs: dict = {}
    if node.attrs.get("transA", 0):
        attrs["transpose_a"] = True
    if node.attrs.get("transB", 0):
        attrs["transpose_b"] = True
    if alpha != 1.0:
        attrs["scale"] = alpha
    if not c or beta == 0.0:
        t.emit("matmul", [t.operand(a), t.operand(b)], t.result(out), attrs=attrs)
        return
    product = t.emit("matmul", [t.operand(a), t.operand(b)], t._fresh(out, "mm"), suffix="mm", attrs=attrs)
    target = t.g.shapes[out]
    if c in t.g.consts:
        value = t.g.consts[c] * np.asarray(beta, t.g.consts[c].dtype) if beta != 1.0 else t.g.consts[c]
        w = t.const_operand(c, value, target, "add", "beta" if beta != 1.0 else "")
        t.emit("add", [product, w], t.result(out), suffix="bias")
        return
    if beta != 1.0:
        raise t._fault(f"beta={beta} with a computed C: the op set adds C unscaled (beta 1) only")
    t.names[f"{out}#mm"] = product          # the product, as a tensor two_tensors can read
    t.g.shapes[f"{out}#mm"], t.g.dtypes[f"{out}#mm"] = target, t.g.dtypes[out]
    t.two_tensors("add", f"{out}#mm", c, out, suffix="bias")


def _unary(kind: str) -> Callable[[_Translator, Node], None]:
    def handle(t: _Translator, node: Node) -> None:
        form = node.attrs.get("approximate", "tanh") if kind == "gelu" else "tanh"
        attrs = {"approximate": form} if form != "tanh" else None
        t.emit(kind, [t.operand(node.inputs[0])], t.result(node.outputs[0]), attrs=attrs)
    return handle


def _last_axis(t: _Translator, node: Node, default: int) -> None:
    rank = len(t.shape(node.inputs[0]))
    axis = int(node.attrs.get("axis", default))
    if axis % rank != rank - 1 or not -rank <= axis < rank:
        raise t._fault(f"axis={axis}: only the last axis (axis=-1, or {rank - 1} for this rank-{rank} input) is "
                       f"supported; the op set's {_NORMALISES.get(node.op, 'layernorm')} normalises "
                       "the last axis")


_NORMALISES = {"Softmax": "softmax", "RMSNormalization": "rmsnorm"}


def _softmax(t: _Translator, node: Node) -> None:
    _last_axis(t, node, -1)
    _unary("softmax")(t, node)


def _norm_param(t: _Translator, name: str, x: str, fill: float, role: str) -> str:
    """gamma or beta of a norm over ``x``: a vector [N] (``fill`` when the model has none)."""
    n = t.shape(x)[-1]
    if not name:
        key = f"{x}#{role}"
        t.g.dtypes[key] = t.g.dtypes[t.alias.get(x, x)]
        return t.weight(key, np.full((n,), fill, np.float32))
    if name in t.g.consts:
        value = t.g.consts[name]
        return t.weight(name) if value.shape == (n,) else t.weight(name, np.broadcast_to(value, (n,)).copy(), "vec")
    if t.shape(name) != (n,):
        raise t._fault(f"{role} {name!r} is {list(t.shape(name))}: expected a vector [{n}] of the normalised axis")
    return t.operand(name)


def _norm(kind: str) -> Callable[[_Translator, Node], None]:
    def handle(t: _Translator, node: Node) -> None:
        if node.op == "LayerNormalization":
            _last_axis(t, node, -1)
            if any(node.outputs[1:]) and any(t.g.consumers(o) or o in t.g.outputs for o in node.outputs[1:] if o):
                raise t._fault("the Mean / InvStdDev outputs are used: the op set's layernorm gives Y only")
            eps = float(node.attrs.get("epsilon", 1e-5))
        elif node.op == "RMSNormalization":          # opset 23
            _last_axis(t, node, -1)
            eps = float(node.attrs.get("epsilon", 1e-5))
        else:
            eps = float(node.attrs["eps"])
        x = node.inputs[0]
        inputs = [t.operand(x), _norm_param(t, node.input(1), x, 1.0, "gamma")]
        if kind == "layernorm":
            inputs.append(_norm_param(t, node.input(2), x, 0.0, "beta"))
        t.emit(kind, inputs, t.result(node.outputs[0]), attrs={"eps": eps})
    return handle


def _transpose(t: _Translator, node: Node) -> None:
    rank = len(t.shape(node.inputs[0]))
    perm = [int(p) for p in node.attrs.get("perm", range(rank)[::-1])]
    if perm == list(range(rank)):
        t.same(node, node.inputs[0])
        return
    t.emit("transpose", [t.operand(node.inputs[0])], t.result(node.outputs[0]), attrs={"perm": perm})


def _reshape(t: _Translator, node: Node) -> None:
    x, out = node.inputs[0], node.outputs[0]
    shape = list(t.g.shapes[out])
    if node.op == "Reshape":
        shape = _reshape_target(t, node)
    if tuple(shape) == t.shape(x):
        t.same(node, x)
        return
    t.emit("reshape", [t.operand(x)], t.result(out), attrs={"shape": shape})


def _reshape_target(t: _Translator, node: Node) -> list[int]:
    """Reshape's target with 0 (copy the input's dimension, unless allowzero) and -1 resolved."""
    src, target = t.shape(node.inputs[0]), node.inputs[1]
    if target not in t.g.consts:
        raise t._fault(f"the target shape {target!r} is computed from data, not constant")
    dims = [int(d) for d in np.reshape(t.g.consts[target], -1)]
    if node.attrs.get("allowzero", 0) and 0 in dims:
        raise t._fault(f"allowzero=1 with 0 in the target {dims}: a zero-size dimension")
    dims = [src[i] if d == 0 else d for i, d in enumerate(dims)]
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1]))
        dims[dims.index(-1)] = int(np.prod(src)) // known
    if tuple(dims) != t.g.shapes[node.outputs[0]]:
        raise t._fault(f"the target {dims} disagrees with the inferred shape {list(t.g.shapes[node.outputs[0]])}")
    return dims


def _identity(t: _Translator, node: Node) -> None:
    mask_used = any(o and (t.g.consumers(o) or o in t.g.outputs) for o in node.outputs[1:])
    if node.op == "Dropout" and (mask_used or dropout_trains(t.g, node)):
        raise t._fault("training mode, or the mask output used: only inference Dropout (an identity) imports")
    t.same(node, node.inputs[0])


def _cast(t: _Translator, node: Node) -> None:
    from onnx import helper

    src, to = t.g.dtypes[node.inputs[0]], int(node.attrs["to"])
    names = [helper.tensor_dtype_to_np_dtype(v).name if v != 16 else "bfloat16" for v in (src, to)]
    if src in FLOAT_TYPES and to in FLOAT_TYPES:
        raise t._fault(f"Cast from {names[0]} to {names[1]}: the operator graph has no cast op (every op's inputs "
                       "share one dtype); give dtype= (--dtype) to import every float tensor as one dtype")
    raise t._fault(f"Cast from {names[0]} to {names[1]} of a computed tensor: only casts of constants (folded) "
                   "and float-to-float casts import")


def _folded_only(t: _Translator, node: Node) -> None:
    raise t._fault(f"{node.op} of a computed tensor: {node.op} imports only when its inputs are constants, "
                   "and is then folded")


def _gelu_op(t: _Translator, node: Node) -> None:
    raise t._fault(f"approximate={node.attrs.get('approximate')!r}: expected 'none' or 'tanh'")


_HANDLERS: dict[str, Callable[[_Translator, Node], None]] = {
    "dfopt.matmul": _matmul, "MatMul": _matmul, "Gemm": _gemm, "dfopt.rope": translate_rope,
    "Add": _binary, "Mul": _binary, "Sub": _binary, "Div": _binary,
    "Relu": _unary("relu"), "dfopt.gelu": _unary("gelu"), "dfopt.silu": _unary("silu"), "Gelu": _gelu_op,
    "Softmax": _softmax, "LayerNormalization": _norm("layernorm"), "RMSNormalization": _norm("rmsnorm"),
    "RotaryEmbedding": rotary_embedding,
    "dfopt.layernorm": _norm("layernorm"), "dfopt.rmsnorm": _norm("rmsnorm"),
    "Transpose": _transpose, "Reshape": _reshape, "Flatten": _reshape, "Squeeze": _reshape, "Unsqueeze": _reshape,
    "Identity": _identity, "Dropout": _identity, "Cast": _cast, "Where": _where, **movement.HANDLERS,
    **cnn.HANDLERS,
    "Constant": _folded_only, "ConstantOfShape": _folded_only, "Shape": _folded_only,
    **dict.fromkeys(arith.UNARY, arith.unary), "Pow": arith.power, "Sum": arith.sum_,
    **dict.fromkeys(arith.REDUCE, arith.reduce),
}
SUPPORTED = sorted({op for op in _HANDLERS if not op.startswith("dfopt.")} - {"Shape"})
