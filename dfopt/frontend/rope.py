"""The rotary position embedding as exporters write it, rewritten to the operator graph's ``rope``.

Hugging Face's ``apply_rotary_pos_emb`` (Llama, Mistral, Qwen, GPT-NeoX) computes
``x * cos + rotate_half(x) * sin`` with ``rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])``;
torch.onnx writes it as

    x1 = Slice(x, 0, d/2, axis -1)      x2 = Slice(x, d/2, end, axis -1)   (or one Split in halves)
    r  = Concat(Neg(x2), x1, axis -1)
    y  = Add(Mul(x, cos), Mul(r, sin))  (either operand order of each Mul and of the Add)

with ``cos`` and ``sin`` constants once the positions are static (``position_ids`` absent or
an ``arange``: the ``inv_freq`` products and their ``Cos`` / ``Sin`` fold away) of shape
``[..., S, d]`` with size-1 leading axes (``[1, 1, S, d]`` after the head axis is unsqueezed).
:func:`fuse_rope` replaces the pattern by one ``dfopt.rope`` node reading ``x`` and the two
tables as ``[S, d]`` constants; tables computed from data (positions given as a graph input)
leave the nodes to the translation, op by op. The interleaved form of GPT-J (pairs ``(2i,
2i + 1)``) is not this pattern and is not rewritten.

>>> import numpy as np
>>> from dfopt.frontend.graph import Graph, Node
>>> c = {"cos": np.ones((1, 4, 8), np.float32), "sin": np.zeros((1, 4, 8), np.float32),
...      "s0": np.array([0]), "s4": np.array([4]), "s8": np.array([8]), "ax": np.array([-1])}
>>> nodes = [Node("a", "Slice", ["x", "s0", "s4", "ax"], ["x1"], {}, 0),
...          Node("b", "Slice", ["x", "s4", "s8", "ax"], ["x2"], {}, 1), Node("n", "Neg", ["x2"], ["nx"], {}, 2),
...          Node("c", "Concat", ["nx", "x1"], ["r"], {"axis": -1}, 3), Node("m", "Mul", ["r", "sin"], ["rs"], {}, 4),
...          Node("k", "Mul", ["x", "cos"], ["xc"], {}, 5), Node("y", "Add", ["xc", "rs"], ["y"], {}, 6)]
>>> shapes = {n: (2, 4, 8) for n in ("x", "r", "nx", "rs", "xc", "y")} | {"x1": (2, 4, 4), "x2": (2, 4, 4)}
>>> g = Graph(nodes, c, shapes, dict.fromkeys([*shapes, *c], 1), ["x"], ["y"], set(c), 17)
>>> fuse_rope(g), [(n.op, n.inputs) for n in g.nodes][-1]
(1, ('dfopt.rope', ['x', 'cos#rope', 'sin#rope']))
>>> g.consts["cos#rope"].shape
(4, 8)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dfopt.frontend.graph import Graph, Node

if TYPE_CHECKING:
    from dfopt.frontend.translate import _Translator

_INT_MAX = 2 ** 62      # torch writes INT64_MAX (or d) for a slice "to the end"


def fuse_rope(g: Graph) -> int:
    """Every rotate-half rotary embedding -> ``dfopt.rope``; returns how many."""
    count = 0
    for neg in [n for n in g.nodes if n.op == "Neg"]:
        if neg in g.nodes and _rope_at(g, neg):
            count += 1
    return count


def _rope_at(g: Graph, neg: Node) -> bool:
    cat = _only_reader(g, neg.outputs[0], "Concat")
    if cat is None or len(cat.inputs) != 2 or cat.inputs[0] != neg.outputs[0]:
        return False
    halves = _halves(g, neg.inputs[0], cat.inputs[1])
    if halves is None:
        return False
    x, producers = halves
    shape = g.shapes.get(x, ())
    if len(shape) < 2 or int(cat.attrs.get("axis", 0)) % len(shape) != len(shape) - 1:
        return False
    sin_mul = _only_reader(g, cat.outputs[0], "Mul")
    if sin_mul is None:
        return False
    sin = _other(sin_mul, cat.outputs[0])
    add = _only_reader(g, sin_mul.outputs[0], "Add")
    if add is None or sin is None:
        return False
    cos_mul = g.producer(_other(add, sin_mul.outputs[0]) or "")
    if cos_mul is None or cos_mul.op != "Mul" or x not in cos_mul.inputs or not g.single_use(cos_mul.outputs[0]):
        return False
    cos = _other(cos_mul, x)
    cos_table, sin_table = _table(g, cos, shape), _table(g, sin, shape)
    if cos is None or cos_table is None or sin_table is None or g.shapes.get(add.outputs[0]) != shape:
        return False
    names = []
    for t, value in ((cos, cos_table), (sin, sin_table)):
        name = f"{t}#rope"
        g.consts[name], g.shapes[name], g.dtypes[name] = value, tuple(value.shape), g.dtypes[t]
        names.append(name)
    fused = Node(add.name, "dfopt.rope", [x, *names], [add.outputs[0]], {}, add.index)
    g.replace([*producers, neg, cat, sin_mul, cos_mul, add], fused)
    return True


def _only_reader(g: Graph, name: str, op: str) -> Node | None:
    if not g.single_use(name):
        return None
    node = g.consumers(name)[0]
    return node if node.op == op else None


def _other(node: Node, name: str) -> str | None:
    if len(node.inputs) != 2 or name not in node.inputs:
        return None
    return node.inputs[1] if node.inputs[0] == name else node.inputs[0]


def _halves(g: Graph, second: str, first: str) -> tuple[str, list[Node]] | None:
    """``(x, nodes)`` when ``first`` and ``second`` are the two halves of ``x``'s last axis (two
    Slices, or the two outputs of one Split), each used once."""
    if not (g.single_use(first) and g.single_use(second)):
        return None
    a, b = g.producer(first), g.producer(second)
    if a is None or b is None:
        return None
    if a is b and a.op == "Split" and a.outputs == [first, second]:
        x = a.inputs[0]
        rank = len(g.shapes.get(x, ()))
        if rank and int(a.attrs.get("axis", 0)) % rank == rank - 1 and _equal_halves(g, a, x):
            return x, [a]
        return None
    if a.op == b.op == "Slice" and a.inputs[0] == b.inputs[0]:
        x = a.inputs[0]
        d = g.shapes.get(x, (0,))[-1]
        if d % 2 == 0 and _slice(g, a, x) == (0, d // 2) and _slice(g, b, x) == (d // 2, d):
            return x, [a, b]
    return None


def _equal_halves(g: Graph, split: Node, x: str) -> bool:
    d = g.shapes[x][-1]
    sizes = split.input(1)
    if sizes:
        return sizes in g.consts and [int(s) for s in g.consts[sizes].reshape(-1)] == [d // 2, d // 2]
    return d % 2 == 0 and int(split.attrs.get("num_outputs", 2)) == 2


def _slice(g: Graph, node: Node, x: str) -> tuple[int, int] | None:
    """``(start, end)`` of a Slice of ``x``'s last axis with step 1 (constant inputs), else None."""
    rank, d = len(g.shapes[x]), g.shapes[x][-1]
    names = [node.input(j) for j in range(1, 5)]
    if any(n and n not in g.consts for n in names) or not names[0] or not names[1]:
        return None
    starts, ends = (g.consts[n].reshape(-1) for n in names[:2])
    axes = g.consts[names[2]].reshape(-1) if names[2] else np.arange(len(starts))
    steps = g.consts[names[3]].reshape(-1) if names[3] else np.ones(len(starts), np.int64)
    if len(starts) != 1 or int(axes[0]) % rank != rank - 1 or int(steps[0]) != 1:
        return None
    start, end = (int(v) + d if int(v) < 0 else min(int(v), d) for v in (starts[0], ends[0]))
    return start, min(end, d) if end < _INT_MAX else d


def _table(g: Graph, name: str | None, shape: tuple) -> np.ndarray | None:
    """The constant ``name`` as an ``[S, d]`` table for ``x`` of ``shape`` (size-1 leading axes), else None."""
    if name is None or name not in g.consts:
        return None
    value = g.consts[name]
    if value.ndim < 2 or tuple(value.shape[-2:]) != tuple(shape[-2:]) or any(s != 1 for s in value.shape[:-2]):
        return None
    if value.ndim > len(shape):
        return None
    return np.ascontiguousarray(value.reshape(shape[-2:]))


def translate_rope(t: _Translator, node: Node) -> None:
    x, cos, sin = node.inputs
    t.emit("rope", [t.operand(x), t.weight(cos), t.weight(sin)], t.result(node.outputs[0]))


def rotary_embedding(t: _Translator, node: Node) -> None:
    """ONNX's ``RotaryEmbedding`` (opset 23) on ``[B, H, S, D]`` in the rotate-half form
    (``interleaved=0``) over the whole head (``rotary_embedding_dim`` 0 or D): ``rope`` with the
    tables ``[cos, cos]`` and ``[sin, sin]`` of the caches' half-width rows at the positions
    (``position_ids`` a constant, or absent with caches ``[B, S, D/2]``), the same for every batch
    entry. Other forms are refused naming the attribute."""
    x, cos, sin, positions = node.input(0), node.input(1), node.input(2), node.input(3)
    shape = t.shape(x)
    if len(shape) != 4:
        raise t._fault(f"input {x!r} is {list(shape)}: only the 4-D form [batch, heads, sequence, head size] "
                       "imports (the 3-D one needs num_heads and a head split first)")
    if int(node.attrs.get("interleaved", 0)):
        raise t._fault("interleaved=1: only the rotate-half form (interleaved=0) imports as rope")
    d = shape[-1]
    if int(node.attrs.get("rotary_embedding_dim", 0)) not in (0, d):
        raise t._fault(f"rotary_embedding_dim={node.attrs['rotary_embedding_dim']}: only the whole head ({d}) rotates "
                       "in the op set's rope")
    tables = []
    for name in (cos, sin):
        if name not in t.g.consts or (positions and positions not in t.g.consts):
            raise t._fault(f"the cache {name!r} or the positions are computed from data: only constant tables import "
                           "(as rope)")
        value = t.g.consts[name]
        if positions:
            value = value[np.asarray(t.g.consts[positions], dtype=np.int64)]
        if value.shape != (shape[0], shape[2], d // 2) or not np.all(value == value[:1]):
            raise t._fault(f"the cache {name!r} gives positions of shape {list(value.shape)}: expected [{shape[0]}, "
                           f"{shape[2]}, {d // 2}], the same for every batch entry")
        tables.append(t.weight(name, np.concatenate([value[0], value[0]], axis=-1), "rope"))
    t.emit("rope", [t.operand(x), *tables], t.result(node.outputs[0]))
