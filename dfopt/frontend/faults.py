"""The errors of the ONNX front end: every refusal names the node (its name, op type and index in
the ONNX graph), the opset and what is unsupported, as one :class:`~dfopt.errors.InstanceError`
whose pointer is the node's place in the model (``/graph/node/12``).

>>> from dfopt.frontend.graph import Node
>>> err = node_fault(Node("sm", "Softmax", ["x"], ["y"], {"axis": 0}, 3), 17, "axis 0 is not the last axis")
>>> str(err)
"/graph/node/3: node 'sm' (Softmax, opset 17): axis 0 is not the last axis"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dfopt.errors import InstanceError

if TYPE_CHECKING:
    from dfopt.frontend.graph import Node

# Why a family of ONNX ops is outside the coverage, and what would bring it in.
_LATER = {
    "cnn": ("ConvTranspose", "InstanceNormalization", "GroupNormalization", "LpPool", "MaxUnpool", "Resize",
            "Pad"),
    "embedding": ("GatherElements", "GatherND", "OneHot"),
    "mask": ("Trilu", "Equal", "Less", "Greater", "Not", "And", "Or", "IsInf", "IsNaN"),
    "rotary": ("Sin", "Cos"),
    "quantised": ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
                  "MatMulInteger", "ConvInteger", "QLinearAdd", "QLinearMul"),
}
_WHY = {
    "cnn": "these CNN ops need new operator-graph op kinds (later work); Conv, BatchNormalization, MaxPool, "
           "AveragePool, GlobalAveragePool and GlobalMaxPool import (as conv2d and pool)",
    "embedding": "indexing other than the token embedding needs new operator-graph op kinds (later work); "
                 "a Gather of a weight table on axis 0 by ids from a graph input imports as embedding",
    "mask": "masking and broadcasting ops on data need new operator-graph op kinds (later work); a mask "
            "built from constants folds away, and imports as the causal mask op when it is an Add of a causal "
            "constant or a Where of a constant causal condition",
    "rotary": "sines and cosines of data (positions given as a graph input) need new operator-graph op kinds "
              "(later work); a rotary embedding with constant tables (static positions: the Sin and Cos fold "
              "away), as the rotate-half pattern or the RotaryEmbedding op, imports as rope",
    "quantised": "quantised models (QDQ / QOperator) are not imported: the front end builds float designs and "
                 "no integer quantisation scheme (scales, zero points, requantisation); export the float model, "
                 "or pass --dtype to choose the float type",
}


def who(node: Node, opset: int) -> str:
    """``node 'name' (OpType, opset N)``; a fused pattern shows the kind it became."""
    return f"node {node.name!r} ({node.label}, opset {opset})"


def node_fault(node: Node, opset: int, what: str) -> InstanceError:
    """The error for ``node``: what about it the front end cannot import."""
    return InstanceError(f"{who(node, opset)}: {what}", pointer=f"/graph/node/{node.index}")


def unsupported_op(node: Node, opset: int, supported: list[str] | None = None) -> InstanceError:
    """An op outside the coverage, with the reason for known families (and the supported list,
    when given)."""
    family = next((f for f, ops in _LATER.items() if node.op in ops), None)
    domain = f" of domain {node.domain!r}" if node.domain not in ("", "ai.onnx") else ""
    why = f": {_WHY[family]}" if family else ""
    listed = f" (supported: {', '.join(supported)})" if supported else ""
    return node_fault(node, opset, f"op {node.op}{domain} is outside the ONNX coverage of the operator graph{why}"
                                   f"{listed}")
