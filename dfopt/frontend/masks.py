"""Causal attention masks among the constants of an ONNX graph: the forms exporters write, recognised
so that translation can emit the operator graph's ``mask`` op (:mod:`dfopt.ir.opgraph`).

A causal mask on scores ``[..., S, T]`` (the last two axes [query, key]) hides the keys after each
query: key ``k`` of query ``q`` is masked when ``k > q + offset`` (``offset``: past keys of a KV
cache, ``T - S`` for a cache in front). Exporters write it as

- ``Add(scores, C)``: ``C`` a constant ``[..., S, T]`` (leading axes of size 1, broadcast over batch
  and heads) that is 0 where visible and one fill value where masked: -inf (``torch`` SDPA's
  ``is_causal``, folded from its Trilu / Where), the dtype's lowest value (Hugging Face) or -1e4 /
  -1e9 (older exports). The fill must be at most :data:`LARGE_NEGATIVE`: then the Softmax after it
  gives 0 there, as for ``mask``. The scores themselves differ (``s + fill`` against ``fill``);
- ``Where(M, scores, fill)``: ``M`` a constant boolean ``[..., S, T]``, True where visible (a lower
  triangle), or its negation with the operands swapped ``Where(~M, fill, scores)``; ``fill`` a
  constant of one value. A condition computed from constants is folded before translation.

:func:`additive` and :func:`selecting` give the :class:`Causal` of a constant, or a reason why it is
not a causal mask.

>>> c = np.triu(np.full((1, 1, 3, 3), -np.inf, np.float32), 1)
>>> additive(c, (2, 4, 3, 3))
Causal(offset=0, fill=-inf)
>>> additive(np.triu(np.full((3, 3), -1.0, np.float32), 1), (2, 3, 3))
'its masked entries are -1.0: a causal mask fills with at most -10000.0 (or -inf)'
>>> selecting(np.tril(np.ones((2, 3), bool), 1), (2, 3), True)
Causal(offset=1, fill=0.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dfopt.reference import causal_mask

#: A fill at most this large negative counts as masking for an additive mask: exp(-1e4) is 0 in
#: every float dtype, so the Softmax after it gives 0 as after ``mask``.
LARGE_NEGATIVE = -1e4


@dataclass(frozen=True)
class Causal:
    """A recognised causal mask: its offset and fill (as the model has it, -inf allowed)."""

    offset: int
    fill: float

    def value(self, default: float) -> float:
        """The ``mask`` op's ``value``: the fill, or ``default`` for an infinite fill."""
        return self.fill if math.isfinite(self.fill) else default


def square(value: np.ndarray, target: tuple) -> np.ndarray | None:
    """``value`` as ``[S, T]`` when it spans ``target``'s last two axes and broadcasts over its
    leading ones (each of size 1); else None."""
    if value.ndim < 2 or value.ndim > len(target) or tuple(value.shape[-2:]) != tuple(target[-2:]):
        return None
    if any(d != 1 for d in value.shape[:-2]):
        return None
    return value.reshape(value.shape[-2:])


def triangle(masked: np.ndarray) -> int | str:
    """The ``offset`` for which ``masked`` (``[S, T]`` booleans) is ``key > query + offset``, or why
    there is none."""
    s, t = masked.shape
    if not masked.any():
        return "it masks nothing"
    visible = int((~masked[0]).sum())
    if visible < 1:
        return "it masks every key of the first query"
    if not np.array_equal(masked, causal_mask(s, t, visible - 1)):
        return (f"its masked entries are not the keys after each query (key > query + {visible - 1}, as "
                "the first query's row has it)")
    return visible - 1


def additive(value: np.ndarray, target: tuple) -> Causal | str | None:
    """The causal mask that adding constant ``value`` to a tensor of shape ``target`` applies;
    None when ``value`` does not span the last two axes (not a mask), else the :class:`Causal` or
    why it is not one."""
    m = square(np.asarray(value), target)
    if m is None:
        return None
    if m.dtype.kind != "f" and m.dtype.name != "bfloat16":
        return f"it is of type {m.dtype.name}, not float"
    m = m.astype(np.float64)
    masked = m != 0
    fills = np.unique(m[masked])
    if fills.size > 1:
        return f"its masked entries take {fills.size} values ({fills[0]}, {fills[-1]}, ...), not one fill"
    if fills.size == 1 and fills[0] > LARGE_NEGATIVE:
        return f"its masked entries are {fills[0]}: a causal mask fills with at most {LARGE_NEGATIVE} (or -inf)"
    offset = triangle(masked)
    if isinstance(offset, str):
        return offset
    return Causal(offset, float(fills[0]))


def selecting(cond: np.ndarray, target: tuple, keep_if_true: bool, fill: float = 0.0) -> Causal | str | None:
    """The causal mask of ``Where(cond, ...)`` on a tensor of shape ``target`` that keeps the tensor
    where ``cond`` is ``keep_if_true`` and writes ``fill`` elsewhere; None when ``cond`` does not
    span the last two axes, else the :class:`Causal` or why it is not one."""
    m = square(np.asarray(cond), target)
    if m is None:
        return None
    masked = m.astype(bool) != keep_if_true
    offset = triangle(masked)
    if isinstance(offset, str):
        return offset
    return Causal(offset, float(fill))
