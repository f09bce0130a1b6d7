"""The working form of an ONNX graph inside the front end: nodes with plain-Python attributes,
the constants (initializers and folded values), and the static shape and element type of every
tensor. The rewrites (:mod:`dfopt.frontend.rewrites`) edit it; the translation
(:mod:`dfopt.frontend.translate`) reads it.

A rewrite replaces the nodes of a pattern by one *fused* node whose ``op`` is ``dfopt.<kind>``
(an operator-graph op kind: ``dfopt.gelu``, ``dfopt.matmul`` ...), placed where the pattern's
last node was, so the node list stays in topological order.

>>> g = Graph([Node("r", "Relu", ["x"], ["y"], {}, 0)], {}, {"x": (2, 3), "y": (2, 3)},
...           {"x": 1, "y": 1}, ["x"], ["y"], set(), 17)
>>> [n.name for n in g.consumers("x")], g.producer("y").name, g.single_use("x")
(['r'], 'r', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(eq=False)
class Node:
    """One node: ``op`` is the ONNX op type or ``dfopt.<kind>``; an empty input name is an
    omitted optional input; ``index`` is the node's position in the ONNX graph (for messages)."""

    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    index: int
    domain: str = ""
    proto: Any = field(default=None, repr=False)      # the NodeProto, while constants are folded

    @property
    def label(self) -> str:
        """The op type, or ``<kind> pattern`` for a fused node."""
        return f"{self.op[len('dfopt.'):]} pattern" if self.op.startswith("dfopt.") else self.op

    def input(self, j: int) -> str:
        """Input ``j``'s name, ``""`` when it is omitted."""
        return self.inputs[j] if j < len(self.inputs) else ""


@dataclass(eq=False)
class Graph:
    """An ONNX graph with static shapes: ``consts`` holds the value of every constant tensor,
    ``initializers`` the names that came from the model's initializers, ``dtypes`` the ONNX
    element type (``TensorProto.FLOAT`` ...) of every tensor, ``opset`` the default domain's."""

    nodes: list[Node]
    consts: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, int]
    inputs: list[str]
    outputs: list[str]
    initializers: set[str]
    opset: int
    notes: list[str] = field(default_factory=list)    # approximations the rewrites made

    def producer(self, name: str) -> Node | None:
        return next((n for n in self.nodes if name in n.outputs), None)

    def consumers(self, name: str) -> list[Node]:
        return [n for n in self.nodes if name in n.inputs]

    def single_use(self, name: str) -> bool:
        """Read by exactly one node, once, and not a graph output: a pattern may swallow it."""
        uses = [n for n in self.nodes for i in n.inputs if i == name]
        return len(uses) == 1 and name not in self.outputs

    def scalar(self, name: str) -> float | None:
        """The value of a constant whose elements are all equal (a broadcast scalar), else None."""
        value = self.consts.get(name)
        if value is not None and value.dtype.name == "bfloat16":
            value = value.astype(np.float32)
        if value is None or value.size == 0 or value.dtype.kind not in "fiu":
            return None
        flat = value.reshape(-1)
        if not np.all(flat == flat[0]):
            return None
        # the shortest decimal that is the value in its own precision: float32 1e-5 reads 1e-05
        return float(str(flat[0])) if value.dtype.kind == "f" and value.dtype.itemsize <= 4 else float(flat[0])

    def replace(self, matched: list[Node], fused: Node) -> None:
        """Drop ``matched`` and put ``fused`` where the last of them was."""
        last = max(self.nodes.index(n) for n in matched)
        self.nodes[last] = fused
        gone = {id(n) for n in matched}
        self.nodes = [n for n in self.nodes if id(n) not in gone or n is fused]

    def prune(self) -> None:
        """Drop the nodes no graph output depends on."""
        needed = set(self.outputs)
        keep = []
        for node in reversed(self.nodes):
            if any(o in needed for o in node.outputs):
                keep.append(node)
                needed.update(i for i in node.inputs if i)
        self.nodes = keep[::-1]
