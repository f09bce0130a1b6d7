"""``LRN`` imports as its exact decomposition (:mod:`dfopt.frontend.lrn`): square, a 1x1
convolution with a band matrix over the channels, scale, bias, pow, times x; checked against the
ONNX spec written out in NumPy and against ``onnx.reference`` with its LRN corrected
(onnx/onnx#7805: the stock one sums over the batch axis's range)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

from dfopt.frontend import import_onnx
from dfopt.frontend.data import model_data, spec_lrn
from dfopt.reference import evaluate
from test_onnx_frontend import Builder, kinds


def lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """The ONNX spec: the window [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)], clipped."""
    out = np.empty_like(x, dtype=np.float64)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + int(np.ceil((size - 1) / 2)))
        s = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
        out[:, c] = x[:, c] / (bias + alpha / size * s) ** beta
    return out


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("opset", [13, 17, 21])
def test_lrn_imports_as_its_exact_decomposition(size, opset):
    b = Builder(opset)
    y = b.node("LRN", ["x"], size=size, alpha=0.5, beta=0.75, bias=2.0)
    model = b.model([("x", [2, 6, 3, 4])], [(y, [2, 6, 3, 4])])
    imported = import_onnx(model)
    assert kinds(imported) == ["mul", "conv2d", "mul", "add", "unary", "mul"]
    x = np.random.default_rng(size).standard_normal((2, 6, 3, 4)).astype(np.float32)
    got = evaluate(imported.graph, imported.feeds({"x": x}))[imported.names[y]]
    np.testing.assert_allclose(got, lrn(x, size, 0.5, 0.75, 2.0), rtol=1e-5, atol=1e-6)
    fixed = ReferenceEvaluator(model, new_ops=[spec_lrn()]).run(None, {"x": x})[0]
    np.testing.assert_allclose(fixed, lrn(x, size, 0.5, 0.75, 2.0), rtol=1e-5, atol=1e-6)
    assert model_data(model, imported, {"x": x}).check().ok


def test_the_stock_reference_lrn_differs_from_the_spec_on_one_image():
    """Why the corrected LRN is needed: onnx's reference normalises channel 0 only on [1, C, H, W]
    (when this starts failing, onnx has shipped its fix and :func:`spec_lrn` can go)."""
    b = Builder(17)
    y = b.node("LRN", ["x"], size=3, alpha=0.5, beta=0.75, bias=2.0)
    model = b.model([("x", [1, 6, 3, 4])], [(y, [1, 6, 3, 4])])
    x = np.random.default_rng(0).standard_normal((1, 6, 3, 4)).astype(np.float32)
    stock = ReferenceEvaluator(model).run(None, {"x": x})[0]
    assert not np.allclose(stock, lrn(x, 3, 0.5, 0.75, 2.0), rtol=1e-3)
