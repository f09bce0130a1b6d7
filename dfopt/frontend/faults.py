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
    "cnn": ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
            "BatchNormalization", "InstanceNormalization", "GroupNormalization", "Resize", "Pad"),
    "embedding": ("Gather", "GatherElements", "GatherND", "OneHot"),
    "mask": ("Expand", "Trilu", "Equal", "Less", "Greater", "Not", "And", "Or", "IsInf", "IsNaN"),
    "rotary": ("Sin", "Cos", "Slice", "Split", "Neg", "RotaryEmbedding"),
}
_WHY = {
    "cnn": "CNN ops need new operator-graph op kinds (later work)",
    "embedding": "embeddings and indexing need a new operator-graph op kind (later work); import the model "
                 "from after its embedding, with the hidden states as the graph input",
    "mask": "masking and broadcasting ops on data need new operator-graph op kinds (later work); a mask "
            "built from constants folds away, and imports as the causal mask op when it is an Add of a causal "
            "constant or a Where of a constant causal condition",
    "rotary": "slicing and rotary embeddings need new operator-graph op kinds (later work)",
}


def who(node: Node, opset: int) -> str:
    """``node 'name' (OpType, opset N)``; a fused pattern shows the kind it became."""
    return f"node {node.name!r} ({node.label}, opset {opset})"


def node_fault(node: Node, opset: int, what: str) -> InstanceError:
    """The error for ``node``: what about it the front end cannot import."""
    return InstanceError(f"{who(node, opset)}: {what}", pointer=f"/graph/node/{node.index}")


def unsupported_op(node: Node, opset: int, supported: list[str]) -> InstanceError:
    """An op outside the coverage, with the reason for known families and the supported list."""
    family = next((f for f, ops in _LATER.items() if node.op in ops), None)
    domain = f" of domain {node.domain!r}" if node.domain not in ("", "ai.onnx") else ""
    why = f": {_WHY[family]}" if family else ""
    return node_fault(node, opset, f"op {node.op}{domain} is outside the ONNX coverage of the operator graph{why} "
                                   f"(supported: {', '.join(supported)})")
