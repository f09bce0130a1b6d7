"""The CNN ops of the ONNX front end: Conv, BatchNormalization and the pools, onto the operator
graph's ``conv2d`` and ``pool`` (:mod:`dfopt.ir.opgraph`; NCHW, 2-D, dilation 1).

- ``Conv``: ``strides``, ``pads``, ``group`` as they are; ``auto_pad`` resolved to ``pads`` (VALID:
  none; SAME_UPPER / SAME_LOWER: ``ceil(in / stride)`` outputs, the odd pad at the end / the
  start); ``dilations`` other than 1 refused; the optional bias the op's third input.
- ``BatchNormalization`` (inference) folds into the Conv before it (:func:`fold_batchnorm`, a
  rewrite: ``W' = W s``, ``B' = (B - mean) s + bias`` with ``s = scale / sqrt(var + eps)`` per
  output channel) when the Conv's result has no other use and every parameter is a constant.
  Any other BatchNormalization of an NCHW tensor becomes a depthwise 1x1 ``conv2d`` (groups C,
  weight ``s``, bias ``bias - mean s``): exact, and the op set has no per-channel affine op.
- ``MaxPool``, ``AveragePool`` (``count_include_pad``), ``GlobalAveragePool``,
  ``GlobalMaxPool`` (``kernel`` [H, W]): ``ceil_mode`` only where it gives the floor's shape,
  ``dilations`` 1 only, the Indices output of MaxPool unused (then ``storage_order``, which only
  orders the indices, does not matter).

Each refusal names the node, the attribute and what is supported
(:func:`dfopt.frontend.faults.node_fault`).

>>> same_pads((8, 8), (3, 3), (2, 2), "SAME_UPPER"), same_pads((8, 8), (4, 4), (1, 1), "SAME_LOWER")
([0, 0, 1, 1], [2, 2, 1, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from dfopt.frontend.graph import Graph, Node

if TYPE_CHECKING:
    from dfopt.frontend.translate import _Translator

AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


def same_pads(size: Sequence[int], kernel: Sequence[int], strides: Sequence[int], mode: str) -> list[int]:
    """``[top, left, bottom, right]`` of ``auto_pad`` SAME_UPPER / SAME_LOWER: ``ceil(in / stride)``
    outputs, the odd pad at the end (UPPER) or at the start (LOWER)."""
    begin, end = [], []
    for n, k, s in zip(size, kernel, strides):
        total = max(0, (-(-n // s) - 1) * s + k - n)
        small, large = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else large)
        end.append(large if mode == "SAME_UPPER" else small)
    return begin + end


def _nchw(t: _Translator, node: Node) -> tuple:
    """The shape of the node's input, which must be NCHW (2-D windows only)."""
    x = node.inputs[0]
    shape = t.shape(x)
    if len(shape) != 4:
        raise t._fault(f"input {x!r} is {list(shape)}: only 2-D {node.op} over an NCHW tensor [N, C, H, W] imports "
                       "(the op set's conv2d and pool)")
    return shape


def _window_attrs(t: _Translator, node: Node, kernel: tuple) -> dict:
    """``strides`` and ``pads`` of a Conv or pool over x's spatial axes, ``auto_pad`` resolved and
    ``dilations`` checked; faults name the attribute."""
    shape = _nchw(t, node)
    dilations = [int(d) for d in node.attrs.get("dilations", [1, 1])]
    if any(d != 1 for d in dilations):
        raise t._fault(f"dilations={dilations}: only dilation 1 is supported (the op set's conv2d and pool have no "
                       "dilation)")
    strides = [int(s) for s in node.attrs.get("strides", [1, 1])]
    auto = node.attrs.get("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if auto not in AUTO_PADS:
        raise t._fault(f"auto_pad={auto!r}: expected one of {', '.join(AUTO_PADS)}")
    if auto == "NOTSET":
        pads = [int(p) for p in node.attrs.get("pads", [0, 0, 0, 0])]
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = same_pads(shape[2:], kernel, strides, auto)
    attrs: dict = {}
    if strides != [1, 1]:
        attrs["strides"] = strides
    if any(pads):
        attrs["pads"] = pads
    return attrs


def _check_shape(t: _Translator, node: Node, kernel: tuple, attrs: dict) -> None:
    """The floor output shape of ``attrs`` against ONNX's inferred one (``ceil_mode`` may differ)."""
    shape, out = t.shape(node.inputs[0]), t.g.shapes[node.outputs[0]]
    top, left, bottom, right = attrs.get("pads", [0, 0, 0, 0])
    sh, sw = attrs.get("strides", [1, 1])
    floor = ((shape[2] + top + bottom - kernel[0]) // sh + 1, (shape[3] + left + right - kernel[1]) // sw + 1)
    if tuple(out[2:]) != floor:
        ceil = " (ceil_mode=1 rounds up)" if node.attrs.get("ceil_mode", 0) else ""
        raise t._fault(f"the output is {list(out)}{ceil}: the op set's windows give [{shape[0]}, {out[1]}, "
                       f"{floor[0]}, {floor[1]}] (floor((in + pads - kernel) / stride) + 1); only ceil_mode=0, or a "
                       "ceil_mode=1 that gives the same shape, imports")


def conv(t: _Translator, node: Node) -> None:
    """``Conv`` -> ``conv2d`` [X, W] or [X, W, B]."""
    x, w, b = node.inputs[0], node.inputs[1], node.input(2)
    _nchw(t, node)
    wshape = t.shape(w)
    kernel = tuple(int(k) for k in node.attrs.get("kernel_shape", wshape[2:]))
    if len(wshape) != 4 or kernel != tuple(wshape[2:]):
        raise t._fault(f"kernel_shape={list(kernel)} with W {list(wshape)}: expected W [O, C / group, kh, kw] and "
                       "kernel_shape its last two dimensions")
    attrs = _window_attrs(t, node, kernel)
    _check_shape(t, node, kernel, attrs)
    groups = int(node.attrs.get("group", 1))
    if groups != 1:
        attrs["groups"] = groups
    inputs = [t.operand(x), t.operand(w)] + ([t.operand(b)] if b else [])
    t.emit("conv2d", inputs, t.result(node.outputs[0]), attrs=attrs)


def pool(t: _Translator, node: Node) -> None:
    """``MaxPool``, ``AveragePool``, ``GlobalAveragePool``, ``GlobalMaxPool`` -> ``pool``."""
    shape = _nchw(t, node)
    kernel = tuple(shape[2:]) if node.op.startswith("Global") else \
        tuple(int(k) for k in node.attrs.get("kernel_shape", ()))
    if node.op == "MaxPool" and len(node.outputs) > 1 and node.outputs[1] and \
            (t.g.consumers(node.outputs[1]) or node.outputs[1] in t.g.outputs):
        raise t._fault("the Indices output is used: the op set's pool gives the values only")
    attrs = {"mode": "max" if "Max" in node.op else "avg", "kernel": list(kernel), **_window_attrs(t, node, kernel)}
    _check_shape(t, node, kernel, attrs)
    pads = attrs.get("pads", [0, 0, 0, 0])
    if max(pads[0], pads[2]) >= kernel[0] or max(pads[1], pads[3]) >= kernel[1]:
        raise t._fault(f"pads={pads} with kernel_shape={list(kernel)}: each pad must be below the kernel's extent "
                       "(a window all padding has no value)")
    if node.op == "AveragePool" and int(node.attrs.get("count_include_pad", 0)):
        attrs["count_include_pad"] = True
    t.emit("pool", [t.operand(node.inputs[0])], t.result(node.outputs[0]), attrs=attrs)


# -- BatchNormalization ---------------------------------------------------------------------------

def _bn_params(g: Graph, node: Node) -> tuple[np.ndarray, np.ndarray] | str:
    """``(s, shift)`` per channel of an inference BatchNormalization (``y = x s + shift``), or why
    it has none."""
    if int(node.attrs.get("training_mode", 0)):
        return "training_mode=1: only inference BatchNormalization (running mean and variance) imports"
    if any(o and (g.consumers(o) or o in g.outputs) for o in node.outputs[1:]):
        return "the running mean / variance outputs are used: only inference BatchNormalization imports"
    names = node.inputs[1:5]
    missing = [n for n in names if n not in g.consts]
    if missing:
        return f"{missing[0]!r} is computed: scale, B, mean and var must be constants to fold"
    scale, bias, mean, var = (np.asarray(g.consts[n], np.float64) for n in names)
    s = scale / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
    return s, bias - mean * s


def _const(g: Graph, name: str, value: np.ndarray, like: str) -> str:
    g.consts[name] = value.astype(g.consts[like].dtype)
    g.shapes[name], g.dtypes[name] = tuple(value.shape), g.dtypes[like]
    return name


def fold_batchnorm(g: Graph) -> int:
    """Every inference BatchNormalization whose input is a Conv's result with no other use, with
    constant W (and B) and constant parameters, folded into that Conv (placed where the
    BatchNormalization was, writing its output). Returns how many were folded."""
    count = 0
    for bn in [n for n in g.nodes if n.op == "BatchNormalization"]:
        conv_node = g.producer(bn.inputs[0])
        params = _bn_params(g, bn)
        if conv_node is None or conv_node.op != "Conv" or not g.single_use(bn.inputs[0]) or isinstance(params, str):
            continue
        w, b = conv_node.inputs[1], conv_node.input(2)
        if w not in g.consts or (b and b not in g.consts):
            continue
        s, shift = params
        weight = np.asarray(g.consts[w], np.float64)
        bias = (np.asarray(g.consts[b], np.float64) if b else np.zeros(weight.shape[0])) * s + shift
        inputs = [conv_node.inputs[0], _const(g, f"{w}#folded", weight * s[:, None, None, None], w),
                  _const(g, f"{bn.inputs[2]}#folded", bias, w)]
        fused = Node(conv_node.name, "Conv", inputs, [bn.outputs[0]], dict(conv_node.attrs), conv_node.index)
        g.replace([conv_node, bn], fused)
        g.notes.append(f"BatchNormalization {bn.name!r} folded into Conv {conv_node.name!r}")
        count += 1
    return count


def batchnorm(t: _Translator, node: Node) -> None:
    """A BatchNormalization :func:`fold_batchnorm` left: a depthwise 1x1 ``conv2d`` of weight ``s``
    and bias ``shift`` per channel (NCHW input; the op set has no per-channel affine op)."""
    params = _bn_params(t.g, node)
    if isinstance(params, str):
        raise t._fault(params)
    x = node.inputs[0]
    shape = t.shape(x)
    if len(shape) != 4:
        raise t._fault(f"input {x!r} is {list(shape)}: a BatchNormalization that does not fold into a Conv imports "
                       "as a depthwise 1x1 conv2d, over an NCHW tensor [N, C, H, W] only")
    s, shift = params
    c = shape[1]
    key = node.inputs[1]
    w = t.weight(key, s.reshape(c, 1, 1, 1).astype(t.g.consts[key].dtype), "bn_scale")
    b = t.weight(key, shift.astype(t.g.consts[key].dtype), "bn_shift")
    t.emit("conv2d", [t.operand(x), w, b], t.result(node.outputs[0]), attrs={"groups": c})
    t.g.notes.append(f"BatchNormalization {node.name!r} imported as a depthwise 1x1 conv2d (no Conv to fold into)")


HANDLERS = {"Conv": conv, "BatchNormalization": batchnorm, "MaxPool": pool, "AveragePool": pool,
            "GlobalAveragePool": pool, "GlobalMaxPool": pool}
