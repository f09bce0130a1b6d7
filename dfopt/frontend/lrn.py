"""Local response normalisation (ONNX ``LRN``, AlexNet / GoogLeNet / ZFNet) rewritten into ops the
operator graph has, exactly.

ONNX defines, over the channels of an NCHW tensor,

    square_sum[n, c, h, w] = sum of x[n, i, h, w]^2 for i in [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)]
    y = x / (bias + alpha / size * square_sum) ^ beta

The windowed sum over channels is a 1x1 convolution of ``x^2`` with a band matrix ``W[c, i] =
1`` inside the window (clipped at the first and last channel, as ONNX clips it), so :func:`expand_lrn`
replaces the node by ``Mul(x, x)``, that ``Conv``, ``Mul`` by ``alpha / size``, ``Add`` of
``bias``, ``Pow`` by ``-beta`` and ``Mul`` by ``x``, which translation then imports as ``unary``
square, ``conv2d``, ``mul``, ``add``, ``unary`` pow and ``mul``. The convolution costs ``C`` MACs
per element where a dedicated kernel would cost ``size``; it is exact.

>>> band(5, 3).astype(int).tolist()
[[1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]]
"""

from __future__ import annotations

import numpy as np

from dfopt.frontend.graph import Graph, Node


def band(channels: int, size: int) -> np.ndarray:
    """``[C, C]``: 1 where input channel ``i`` is in output channel ``c``'s LRN window."""
    c = np.arange(channels)[:, None]
    i = np.arange(channels)[None, :]
    return ((i >= c - (size - 1) // 2) & (i <= c + -(-(size - 1) // 2))).astype(np.float32)


def expand_lrn(g: Graph) -> int:
    """Every 4-D ``LRN`` -> the exact chain of the module docstring; returns how many."""
    count = 0
    for node in [n for n in g.nodes if n.op == "LRN"]:
        if len(g.shapes.get(node.inputs[0], ())) == 4:      # else translation refuses it, naming the node
            _expand(g, node)
            count += 1
    return count


def _expand(g: Graph, node: Node) -> None:
    x, y = node.inputs[0], node.outputs[0]
    shape = g.shapes[x]
    size = int(node.attrs["size"])
    alpha, beta = float(node.attrs.get("alpha", 1e-4)), float(node.attrs.get("beta", 0.75))
    bias = float(node.attrs.get("bias", 1.0))
    dtype = g.dtypes[x]
    np_dtype = np.float64 if dtype == 11 else np.float32     # TensorProto.DOUBLE

    def tensor(suffix: str, value: np.ndarray | None = None) -> str:
        name = f"{y}#lrn_{suffix}"
        if value is None:
            g.shapes[name] = shape
        else:
            g.consts[name], g.shapes[name] = value, tuple(value.shape)
        g.dtypes[name] = dtype
        return name

    w = tensor("band", band(shape[1], size).reshape(shape[1], shape[1], 1, 1).astype(np_dtype))
    k = [tensor(n, np.array(v, np_dtype)) for n, v in (("scale", alpha / size), ("bias", bias), ("power", -beta))]
    steps: list[tuple[str, list[str | None]]] = [("Mul", [x, x]), ("Conv", [None, w]), ("Mul", [None, k[0]]),
                                                  ("Add", [None, k[1]]), ("Pow", [None, k[2]]), ("Mul", [x, None])]
    nodes, prev = [], x
    for j, (op, ins) in enumerate(steps):          # None: the previous step's result
        out = y if j == len(steps) - 1 else tensor(f"{j}")
        attrs = {"kernel_shape": [1, 1]} if op == "Conv" else {}
        nodes.append(Node(f"{node.name}/{op}_{j}", op, [prev if i is None else i for i in ins], [out], attrs,
                          node.index))
        prev = out
    at = g.nodes.index(node)
    g.nodes[at:at + 1] = nodes
