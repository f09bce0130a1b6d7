"""Collecting many linear rows as arrays before adding them to a :class:`LinearModel`."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dfopt.ilp.model import LinearModel


class RowBuffer:
    """COO rows collected in numpy chunks, added to a model once (the fast path for big models).

    >>> from dfopt.ilp import LinearModel
    >>> m = LinearModel()
    >>> cols = m.add_vars(2, 0, 1, integer=True)
    >>> rows = RowBuffer()
    >>> rows.add([0, 0], cols, [1, 1], 1, 1)      # x0 + x1 == 1
    >>> rows.into(m); m.num_rows
    1
    """

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.count = 0

    def add(self, rows: npt.ArrayLike, cols: npt.ArrayLike, vals: npt.ArrayLike, lo: npt.ArrayLike,
            hi: npt.ArrayLike) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        self.r.append(rows + self.count)
        self.c.append(np.asarray(cols, dtype=np.int64))
        self.v.append(np.asarray(vals, dtype=np.float64))
        n = len(np.atleast_1d(lo))
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=np.float64), (n,)))
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=np.float64), (n,)))
        self.count += n

    def into(self, model: LinearModel) -> None:
        if self.count:
            model.add_rows(np.concatenate(self.r), np.concatenate(self.c), np.concatenate(self.v),
                           np.concatenate(self.lo), np.concatenate(self.hi))
