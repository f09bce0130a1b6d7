"""NumPy reference evaluation of operator graphs (:mod:`dfopt.ir.opgraph`), the oracle that
generated HLS C++ is compared with in software simulation.

Arithmetic per dtype (:data:`STORAGE` maps a dtype to the NumPy type its values are kept in):

- ``f64``, ``f32``, ``f16``: each op computes in the dtype's NumPy type (``f16`` as ``float16``;
  NumPy accumulates ``float16`` matmuls and means in ``float32`` and rounds once).
- ``bf16``: emulated. Values are ``float32`` arrays that hold bf16 numbers; each op computes in
  ``float32`` and its result is rounded to bf16 (round to nearest, ties to even) once, at its end.
  Graph inputs are rounded the same way.
- ``i32``, ``i16``, ``i8``: integer arithmetic in the dtype that wraps around on overflow (two's
  complement, as an ``ap_int`` of that width would); an integer ``scale`` multiplies after the
  matmul.

``layernorm`` uses the biased variance (divide by N, as PyTorch); ``gelu`` is the tanh
approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), or with ``approximate: none`` the exact
0.5x(1 + erf(x / sqrt 2)); ``softmax`` subtracts the row maximum; ``mask`` sets the elements
whose key index (last axis) exceeds the query index (second to last) + ``offset`` to ``value``
rounded to the dtype (f16: -1e9 becomes -inf); ``unary`` applies its ``fn`` (as C does: a
``sqrt`` of a negative number is NaN, a ``reciprocal`` of 0 infinite); ``reduce`` reduces the last
axis (an integer ``sum`` wraps around like the other integer ops); ``rope`` is the rotary
embedding of the last axis, ``x * cos + rotate_half(x) * sin`` with :func:`rotate_half` (the
"rotate half" form of GPT-NeoX and Llama). The movers copy values: ``concat``, ``slice``,
``expand`` are NumPy's concatenate, basic slicing and broadcast; ``embedding`` takes row
``ids[...]`` of its table and raises ``ValueError`` for an id outside the table's rows.
``conv2d`` is ONNX's Conv (zero padding, groups, dilation 1), accumulated in float64; ``pool`` is
MaxPool (padding never wins) or AveragePool (``count_include_pad`` as ONNX's), floor output sizes.

>>> from dfopt.ir.opgraph import OpGraph
>>> g = OpGraph.from_dict({"tensors": {"x": {"shape": [2, 3], "dtype": "f32"}},
...                        "ops": [{"name": "p", "op": "softmax", "inputs": ["x"], "output": "y"}],
...                        "outputs": ["y"]})
>>> values = evaluate(g, random_inputs(g, seed=0))
>>> values["y"].shape, values["y"].dtype, bool(np.allclose(values["y"].sum(axis=-1), 1))
((2, 3), dtype('float32'), True)
>>> compare(values["y"], values["y"] + 1e-6, "f32")[0]
True
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from dfopt.ir.opgraph import Op, OpGraph

STORAGE = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32,
           "i32": np.int32, "i16": np.int16, "i8": np.int8}

# (rtol, atol) for comparing a result with the reference: |actual - expected| <= atol + rtol*|expected|.
# Calibrated on the shipped pipeline instances (values of order 1, see random_inputs): evaluating
# them in the dtype stays within these bounds of the f64 evaluation. Integers must match exactly.
TOLERANCES = {"f64": (1e-9, 1e-9), "f32": (1e-4, 1e-4), "f16": (2e-2, 2e-2), "bf16": (8e-2, 8e-2),
              "i32": (0, 0), "i16": (0, 0), "i8": (0, 0)}


def to_bf16(values: npt.ArrayLike) -> np.ndarray:
    """``values`` rounded to bf16 (nearest, ties to even), as ``float32``; NaN stays NaN.

    >>> to_bf16(np.array([1.0, 1.00390625, 1.01171875, 3.4e38], dtype=np.float32)).tolist()
    [1.0, 1.0, 1.015625, inf]
    """
    a = np.ascontiguousarray(values, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), out)


def _store(values, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return to_bf16(values)
    return np.ascontiguousarray(values).astype(STORAGE[dtype], copy=False)


def evaluate(graph: OpGraph, inputs: dict) -> dict[str, np.ndarray]:
    """Every tensor of ``graph`` (inputs and weights included) from the values of its inputs and
    weights, in the graph's tensor order. Raises ``ValueError`` for a missing, misshapen or
    unknown input. See the module docstring for the arithmetic of each dtype."""
    unknown = sorted(set(inputs) - set(graph.inputs))
    if unknown:
        raise ValueError(f"inputs {unknown} are not graph inputs or weights; expected: {list(graph.inputs)}")
    values = {}
    for name in graph.inputs:
        spec = graph.tensors[name]
        if name not in inputs:
            raise ValueError(f"evaluate needs a value for {spec.kind} {name!r} ({list(spec.shape)} {spec.dtype})")
        given = np.asarray(inputs[name])
        if given.shape != spec.shape:
            raise ValueError(f"{spec.kind} {name!r} is declared {list(spec.shape)} but the value given is "
                             f"{list(given.shape)}")
        values[name] = _store(given, spec.dtype)
    for op in graph.ops:
        args = [values[name] for name in op.inputs]
        values[op.output] = _store(_KERNELS[op.op](op, *args), graph.tensors[op.output].dtype)
    return {name: values[name] for name in graph.tensors}


# -- the ops ----------------------------------------------------------------------------------------

def _matmul(op: Op, a, b):
    if op.attrs["transpose_a"]:
        a = np.swapaxes(a, -1, -2)
    if op.attrs["transpose_b"]:
        b = np.swapaxes(b, -1, -2)
    out = np.matmul(a, b)
    scale = op.attrs["scale"]
    if scale == 1:
        return out
    if np.issubdtype(out.dtype, np.integer):
        return (out.astype(np.int64) * int(scale)).astype(out.dtype)
    return out * out.dtype.type(scale)


def _gelu(op: Op, x):
    t = x.dtype.type
    if op.attrs.get("approximate", "tanh") == "none":
        from scipy.special import erf

        return (t(0.5) * x * (t(1) + erf(x * t(1 / math.sqrt(2))))).astype(x.dtype)
    inner = t(math.sqrt(2 / math.pi)) * (x + t(0.044715) * x * x * x)
    return t(0.5) * x * (t(1) + np.tanh(inner))


def _silu(op: Op, x):
    t = x.dtype.type
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for very negative x: silu -> -0
        return x / (t(1) + np.exp(-x))


def _softmax(op: Op, x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(op: Op, x, gamma, beta):
    centred = x - x.mean(axis=-1, keepdims=True)
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + x.dtype.type(op.attrs["eps"])) * gamma + beta


def _rmsnorm(op: Op, x, gamma):
    ms = (x * x).mean(axis=-1, keepdims=True)
    return x / np.sqrt(ms + x.dtype.type(op.attrs["eps"])) * gamma


def causal_mask(queries: int, keys: int, offset: int = 0) -> np.ndarray:
    """``[queries, keys]`` booleans, True where ``mask`` replaces the value (key > query + offset).

    >>> causal_mask(2, 3).astype(int).tolist(), causal_mask(2, 3, 1).astype(int).tolist()
    ([[0, 1, 1], [0, 0, 1]], [[0, 0, 1], [0, 0, 0]])
    """
    return np.arange(keys)[None, :] > np.arange(queries)[:, None] + int(offset)


def _mask(op: Op, x):
    with np.errstate(over="ignore"):       # f16 rounds -1e9 to -inf
        fill = x.dtype.type(op.attrs["value"])
    return np.where(causal_mask(x.shape[-2], x.shape[-1], op.attrs["offset"]), fill, x)


def _unary(op: Op, x):
    t = x.dtype.type
    fn = op.attrs["fn"]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # as C: inf, nan
        if fn == "erf":
            from scipy.special import erf

            return erf(x).astype(x.dtype)
        if fn == "sigmoid":
            return t(1) / (t(1) + np.exp(-x))
        if fn == "rsqrt":
            return t(1) / np.sqrt(x)
        if fn == "reciprocal":
            return t(1) / x
        if fn == "square":
            return x * x
        if fn == "pow":
            return np.power(x, t(op.attrs["exponent"]))
        return {"exp": np.exp, "tanh": np.tanh, "sqrt": np.sqrt, "neg": np.negative, "abs": np.abs}[fn](x)


def _reduce(op: Op, x):
    keep = bool(op.attrs["keepdims"])
    how = op.attrs["reduction"]
    if how == "sum":
        return np.sum(x, axis=-1, keepdims=keep)
    if how == "mean":
        return np.mean(x, axis=-1, keepdims=keep)
    return (np.max if how == "max" else np.min)(x, axis=-1, keepdims=keep)


def rotate_half(x: np.ndarray) -> np.ndarray:
    """``[-x2, x1]`` of the halves ``[x1, x2]`` of the last axis (rotary embedding's rotation).

    >>> rotate_half(np.array([1.0, 2.0, 3.0, 4.0])).tolist()
    [-3.0, -4.0, 1.0, 2.0]
    """
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def _rope(op: Op, x, cos, sin):
    return x * cos + rotate_half(x) * sin


def _embedding(op: Op, ids, table):
    """Row ``ids[...]`` of the table per id; an id outside ``[0, rows)`` is bad input (ONNX Gather's
    error; the HLS kernel, which cannot fail, clamps it)."""
    bad = (ids < 0) | (ids >= table.shape[0])
    if bad.any():
        raise ValueError(f"op {op.name} (embedding): id {int(ids[bad].flat[0])} is outside the table's rows "
                         f"[0, {table.shape[0]})")
    return table[ids]


def _windows(op: Op, x, kernel: tuple, fill: float) -> np.ndarray:
    """``[N, C, Ho, Wo, kh, kw]``: the ``kernel`` window under every output element of a conv2d or
    pool over x, padded with ``fill``."""
    top, left, bottom, right = op.attrs["pads"]
    kh, kw = kernel
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    sh, sw = op.attrs["strides"]
    return np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]


def _conv2d(op: Op, x, w, b=None):
    """Each group's output channels from its ``C / groups`` input channels, accumulated in float64
    and rounded to the dtype once (the HLS kernel accumulates in the dtype: within tolerance)."""
    o, cg, kh, kw = w.shape
    g = op.attrs["groups"]
    win = _windows(op, x, (kh, kw), 0.0)
    n, _, ho, wo = win.shape[:4]
    win = win.reshape(n, g, cg, ho, wo, kh, kw).astype(np.float64)
    y = np.einsum("ngchwij,gocij->ngohw", win, w.reshape(g, o // g, cg, kh, kw).astype(np.float64))
    y = y.reshape(n, o, ho, wo)
    if b is not None:
        y = y + b.astype(np.float64)[None, :, None, None]
    return y.astype(x.dtype)


def _pool(op: Op, x):
    """max (padding never wins) or avg (divided by ``kh x kw`` with ``count_include_pad``, else by
    the window's elements inside x), as ONNX's MaxPool and AveragePool."""
    kernel = op.attrs["kernel"]
    if op.attrs["mode"] == "max":
        return _windows(op, x, kernel, -np.inf).max(axis=(-2, -1)).astype(x.dtype)
    total = _windows(op, x.astype(np.float64), kernel, 0.0).sum(axis=(-2, -1))
    if op.attrs["count_include_pad"]:
        count = float(math.prod(kernel))
    else:
        count = _windows(op, np.ones((1, 1, *x.shape[2:])), kernel, 0.0).sum(axis=(-2, -1))
    return (total / count).astype(x.dtype)


_KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "matmul": _matmul,
    "add": lambda op, x, y: x + y,
    "mul": lambda op, x, y: x * y,
    "gelu": _gelu,
    "silu": _silu,
    "relu": lambda op, x: np.maximum(x, x.dtype.type(0)),
    "softmax": _softmax,
    "layernorm": _layernorm,
    "rmsnorm": _rmsnorm,
    "transpose": lambda op, x: np.transpose(x, op.attrs["perm"]),
    "reshape": lambda op, x: x.reshape(op.attrs["shape"]),
    "mask": _mask,
    "sub": lambda op, x, y: x - y,
    "div": lambda op, x, y: x / y,
    "unary": _unary,
    "reduce": _reduce,
    "rope": _rope,
    "concat": lambda op, *xs: np.concatenate(xs, axis=op.attrs["axis"]),
    "slice": lambda op, x: x[tuple(slice(*a) for a in zip(op.attrs["starts"], op.attrs["ends"], op.attrs["steps"]))],
    "expand": lambda op, x: np.broadcast_to(x, op.attrs["shape"]),
    "embedding": _embedding,
    "conv2d": _conv2d,
    "pool": _pool,
}


# -- inputs and comparison ------------------------------------------------------------------------

def random_inputs(graph: OpGraph, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic values for the graph's inputs and weights, chosen by role so that
    activations stay of order 1 (softmax and gelu well conditioned):

    - the B operand of a matmul: normal / sqrt(K) (K the contracted dimension); a conv2d's W:
      normal / sqrt(C / groups x kh x kw), its B 0.1 normal;
    - gamma of a norm, or a vector that ``mul`` broadcasts, a divisor, the operand of a ``unary``
      sqrt, rsqrt, reciprocal or pow: 1 + 0.1 normal (away from 0 and from negative roots);
    - beta of ``layernorm``, or a vector that ``add`` broadcasts (a bias): 0.1 normal;
    - anything else: 0.5 normal. Integer dtypes: uniform integers in [-3, 3]; the ids of an
      ``embedding``: uniform in [0, rows) of its table.

    Each tensor draws from its own stream (seeded by ``seed`` and its name), so adding a tensor
    does not change the others' values.

    >>> from dfopt.ir.opgraph import OpGraph
    >>> g = OpGraph.from_dict({"tensors": {"x": {"shape": [2, 2], "dtype": "i8"}},
    ...     "ops": [{"name": "r", "op": "relu", "inputs": ["x"], "output": "y"}], "outputs": ["y"]})
    >>> random_inputs(g, 1)["x"].dtype, bool((random_inputs(g, 1)["x"] == random_inputs(g, 1)["x"]).all())
    (dtype('int8'), True)
    """
    out = {}
    for name in graph.inputs:
        spec = graph.tensors[name]
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        values: np.ndarray
        rows = _embedding_rows(graph, name)
        if rows:
            values = rng.integers(0, rows, size=spec.shape)
        elif np.issubdtype(STORAGE[spec.dtype], np.integer):
            values = rng.integers(-3, 4, size=spec.shape)
        else:
            mean, std = _role_scale(graph, name)
            values = mean + std * rng.standard_normal(spec.shape)
        out[name] = _store(values, spec.dtype)
    return out


_POSITIVE_FNS = ("sqrt", "rsqrt", "reciprocal", "pow")


def _embedding_rows(graph: OpGraph, name: str) -> int:
    """The table rows of the first ``embedding`` that reads ``name`` as its ids (0: none does)."""
    for op in graph.consumers(name):
        if op.op == "embedding" and op.inputs[0] == name:
            return graph.tensors[op.inputs[1]].shape[0]
    return 0


def _role_scale(graph: OpGraph, name: str) -> tuple[float, float]:
    """(mean, standard deviation) of the values of graph input ``name``, from its first use."""
    rank = len(graph.tensors[name].shape)
    for op in graph.consumers(name):
        j = op.inputs.index(name)
        if op.op == "matmul" and j == 1:
            shape = graph.tensors[name].shape
            k = shape[-1] if op.attrs["transpose_b"] else shape[-2]
            return 0.0, 1 / math.sqrt(k)
        if op.op == "conv2d" and j > 0:          # W: normal / sqrt(fan-in); B: a bias
            return (0.0, 1 / math.sqrt(math.prod(graph.tensors[name].shape[1:]))) if j == 1 else (0.0, 0.1)
        if (op.op in ("layernorm", "rmsnorm") and j == 1) or (op.op == "mul" and j == 1 and rank == 1):
            return 1.0, 0.1
        if (op.op == "div" and j == 1) or (op.op == "unary" and op.attrs["fn"] in _POSITIVE_FNS):
            return 1.0, 0.1
        if (op.op == "layernorm" and j == 2) or (op.op == "add" and j == 1 and rank == 1):
            return 0.0, 0.1
    return 0.0, 0.5


def compare(expected: npt.ArrayLike, actual: npt.ArrayLike, dtype: str) -> tuple[bool, float, float]:
    """``(ok, max_abs_err, max_rel_err)`` of ``actual`` against the reference ``expected``.

    ``ok``: equal shapes and every element within ``atol + rtol * |expected|``
    (:data:`TOLERANCES` of ``dtype``); equal infinities and NaN against NaN count as equal.
    ``max_rel_err`` is taken over the elements with ``|expected| > atol`` (near zero the absolute
    error is the meaningful one); a shape mismatch gives ``(False, inf, inf)``.

    >>> compare(np.array([1.0, 2.0]), np.array([1.0, 2.002]), "f16")
    (True, 0.0019999999999997797, 0.0009999999999998899)
    """
    rtol, atol = TOLERANCES[dtype]
    e = np.asarray(expected, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    if e.shape != a.shape:
        return False, math.inf, math.inf
    if e.size == 0:
        return True, 0.0, 0.0
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a - e))
    diff = np.where(np.isnan(diff), np.inf, diff)
    size = np.abs(e)
    ok = bool(np.all(same | (diff <= atol + rtol * np.where(np.isfinite(size), size, 0.0))))
    big = np.isfinite(size) & (size > atol)
    rel = float((diff[big] / size[big]).max()) if big.any() else 0.0
    return ok, float(diff.max()), rel
