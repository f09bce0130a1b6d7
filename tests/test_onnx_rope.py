"""Rotary embeddings and RMSNorm as exporters and opset 23 write them: the rotate-half pattern
(two Slices or a Split, tables of constants) rewritten to ``rope``, ONNX's ``RotaryEmbedding`` and
``RMSNormalization`` ops, each against ``onnx.reference``; what is not the pattern imports node by
node (still exact), and the forms the op set lacks are refused naming the attribute."""

from __future__ import annotations

import numpy as np
import pytest

from dfopt.errors import InstanceError
from dfopt.frontend import from_onnx
from test_onnx_frontend import Builder, check, kinds

H, S, D = 2, 6, 8


def _tables(b: Builder, lead: tuple = (1, 1)) -> tuple[str, str]:
    theta = 10000.0 ** (-np.arange(D // 2) * 2 / D)
    angles = np.tile(np.arange(S)[:, None] * theta[None, :], 2).astype(np.float32)
    return (b.init("cos", np.cos(angles).reshape(lead + (S, D))), b.init("sin", np.sin(angles).reshape(lead + (S, D))))


@pytest.mark.parametrize("split", [False, True], ids=["slices", "split"])
@pytest.mark.parametrize("opset", [13, 17, 18, 21])
@pytest.mark.parametrize("lead", [(1, 1), ()], ids=["4d-tables", "2d-tables"])
def test_the_rotate_half_pattern_becomes_rope(split, opset, lead):
    b = Builder(opset)
    cos, sin = _tables(b, lead)
    y = b.rope("x", cos, sin, D, "/rope", split=split)
    imported = check(b.model([("x", [1, H, S, D])], [(y, [1, H, S, D])]))
    assert kinds(imported) == ["rope"]
    assert [imported.graph.tensors[t].shape for t in imported.graph.ops[0].inputs[1:]] == [(S, D), (S, D)]


def test_tables_computed_from_data_leave_the_nodes_to_the_translation():
    """Positions as a graph input: the tables are data, the pattern is not rewritten, and the
    nodes import one by one (the Slices, the Neg, the Concat, two Muls and an Add)."""
    b = Builder(17)
    y = b.rope("x", "cos", "sin", D, "/rope")
    imported = check(b.model([("x", [1, H, S, D]), ("cos", [1, 1, S, D]), ("sin", [1, 1, S, D])], [(y, [1, H, S, D])]))
    assert "rope" not in kinds(imported) and sorted(set(kinds(imported))) == ["add", "concat", "mul", "slice", "unary"]


def _rotary_op(b: Builder, x: str, positions: bool, interleaved: int = 0, dim: int = 0, batch: int = 1) -> str:
    theta = 10000.0 ** (-np.arange(D // 2) * 2 / D)
    rows = S + 3 if positions else S
    angles = (np.arange(rows)[:, None] * theta[None, :]).astype(np.float32)
    cos, sin = np.cos(angles), np.sin(angles)
    ins = [x]
    if positions:
        ins += [b.init("cos_cache", cos), b.init("sin_cache", sin),
                b.init("pos", np.tile(np.arange(3, 3 + S), (batch, 1)).astype(np.int64))]
    else:
        ins += [b.init("cos_cache", np.tile(cos, (batch, 1, 1))), b.init("sin_cache", np.tile(sin, (batch, 1, 1)))]
    return b.node("RotaryEmbedding", ins, "", interleaved=interleaved, rotary_embedding_dim=dim)


@pytest.mark.parametrize("positions", [False, True], ids=["caches-per-position", "position-ids"])
@pytest.mark.parametrize("batch", [1, 2])
def test_onnx_rotary_embedding_op_imports_as_rope(positions, batch):
    b = Builder(23)
    y = _rotary_op(b, "x", positions, batch=batch)
    imported = check(b.model([("x", [batch, H, S, D])], [(y, [batch, H, S, D])]))
    assert kinds(imported) == ["rope"]


@pytest.mark.parametrize("kw,what", [({"interleaved": 1}, "interleaved=1"), ({"dim": 4}, "rotary_embedding_dim=4")])
def test_rotary_embedding_forms_outside_rope_are_refused(kw, what):
    b = Builder(23)
    y = _rotary_op(b, "x", False, **kw)
    with pytest.raises(InstanceError, match=rf"\(RotaryEmbedding, opset 23\): {what}"):
        from_onnx(b.model([("x", [1, H, S, D])], [(y, [1, H, S, D])]))


def test_the_3d_rotary_embedding_is_refused_naming_the_input():
    b = Builder(23)
    theta = np.arange(S)[:, None] * 10000.0 ** (-np.arange(D // 2) * 2 / D)[None, :]
    cos = b.init("c", np.cos(theta)[None].astype(np.float32))
    sin = b.init("s", np.sin(theta)[None].astype(np.float32))
    y = b.node("RotaryEmbedding", ["x", cos, sin], num_heads=H)
    with pytest.raises(InstanceError, match="only the 4-D form"):
        from_onnx(b.model([("x", [1, S, H * D])], [(y, [1, S, H * D])]))


@pytest.mark.parametrize("eps", [1e-5, 1e-6])
def test_onnx_rms_normalization_op_imports_as_rmsnorm(eps):
    b = Builder(23)
    y = b.node("RMSNormalization", ["x", b.init("w", np.linspace(0.5, 1.5, D, dtype=np.float32))], axis=-1,
               epsilon=eps)
    imported = check(b.model([("x", [2, S, D])], [(y, [2, S, D])]))
    assert kinds(imported) == ["rmsnorm"] and imported.graph.ops[0].attrs["eps"] == pytest.approx(eps)


def test_rms_normalization_over_several_axes_is_refused():
    b = Builder(23)
    y = b.node("RMSNormalization", ["x", b.init("w", np.ones((S, D), np.float32))], axis=1)
    with pytest.raises(InstanceError, match=r"\(RMSNormalization, opset 23\): axis=1: only the last axis"):
        from_onnx(b.model([("x", [2, S, D])], [(y, [2, S, D])]))
