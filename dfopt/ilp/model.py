"""A solver-neutral linear (mixed-integer) model stored as arrays.

Variables live in flat arrays (bounds, integrality, names); constraints in COO blocks that are
concatenated once into a CSR matrix (:meth:`LinearModel.data`) when a backend asks. Callers keep
their own dicts from IR names to :class:`~dfopt.ilp.expr.Var` handles, and name the variables
after the IR so results map back by name.

>>> from dfopt.ilp import LinearModel, solve
>>> m = LinearModel("knap")
>>> x = {k: m.bool_var(f"x[{k}]") for k in "abc"}
>>> _ = m.add(3 * x["a"] + 4 * x["b"] + 5 * x["c"] <= 8)
>>> m.maximize(4 * x["a"] + 5 * x["b"] + 6 * x["c"])
>>> r = solve(m, "cpsat", time_limit=5)
>>> r.objective, r.values["x[c]"]
(10.0, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from dfopt.errors import InstanceError
from dfopt.ilp.expr import LinearConstraint, LinExpr, Operand, Var, as_expr

__all__ = ["LinearModel", "ModelData"]


@dataclass(frozen=True)
class ModelData:
    """A snapshot of a model as arrays; what every backend reads.

    ``A`` is ``num_rows x num_vars`` CSR (duplicates summed); rows are ``row_lb <= A x <= row_ub``;
    the objective is ``obj @ x + obj_offset``, maximised when ``maximize``.
    """

    name: str
    var_lb: np.ndarray
    var_ub: np.ndarray
    integer: np.ndarray
    var_names: list
    obj: np.ndarray
    obj_offset: float
    maximize: bool
    has_objective: bool
    A: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    row_names: list
    hint_idx: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hint_val: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def num_vars(self) -> int:
        return len(self.var_lb)

    @property
    def num_rows(self) -> int:
        return len(self.row_lb)


class LinearModel:
    """Variables with bounds and integrality, linear rows, a linear objective and hints.

    >>> m = LinearModel("lp")
    >>> x, y = m.num_var(0, 4, "x"), m.num_var(0, 4, "y")
    >>> _ = m.add(x + 2 * y <= 6)
    >>> m.maximize(x + y)
    >>> m.num_vars, m.num_rows
    (2, 1)
    """

    def __init__(self, name: str = "model") -> None:
        self.name = name
        self._lb: list[float] = []
        self._ub: list[float] = []
        self._int: list[bool] = []
        self._names: list[str] = []
        self._name_index: dict[str, int] = {}
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._row_lb: list[np.ndarray] = []
        self._row_ub: list[np.ndarray] = []
        self._row_names: dict[int, str] = {}
        self._num_rows = 0
        self._objective = (np.zeros(0, dtype=np.int64), np.zeros(0), 0.0)
        self._maximize = False
        self._has_objective = False
        self._hints: dict[int, float] = {}
        self._data: ModelData | None = None

    # ----------------------------------------------------------------- variables
    def int_var(self, lb: float, ub: float, name: str | None = None) -> Var:
        """An integer variable in ``[lb, ub]`` (bounds may be infinite for MIP backends)."""
        return self._new_var(lb, ub, True, name)

    def bool_var(self, name: str | None = None) -> Var:
        """A 0/1 variable."""
        return self._new_var(0, 1, True, name)

    def num_var(self, lb: float = 0.0, ub: float = math.inf, name: str | None = None) -> Var:
        """A continuous variable in ``[lb, ub]``."""
        return self._new_var(lb, ub, False, name)

    def add_vars(self, count: int, lb: npt.ArrayLike = 0.0, ub: npt.ArrayLike = math.inf,
                 integer: bool | Sequence[bool] = False,
                 names: Sequence[str] | str | None = None) -> np.ndarray:
        """Add ``count`` variables at once; returns their column indices (for :meth:`add_rows`).

        ``lb``/``ub``/``integer`` are scalars or arrays; ``names`` a list, or a prefix string that
        names them ``prefix[i]``.

        >>> m = LinearModel()
        >>> cols = m.add_vars(3, 0, 9, integer=True, names="s")
        >>> cols.tolist(), m.var(2).name
        ([0, 1, 2], 's[2]')
        """
        count = int(count)
        lb_a = np.broadcast_to(np.asarray(lb, dtype=np.float64), (count,))
        ub_a = np.broadcast_to(np.asarray(ub, dtype=np.float64), (count,))
        int_a = np.broadcast_to(np.asarray(integer, dtype=bool), (count,))
        start = len(self._lb)
        if names is None or isinstance(names, str):
            prefix = names if isinstance(names, str) else "_x"
            offset = 0 if isinstance(names, str) else start
            names = [f"{prefix}[{i + offset}]" for i in range(count)]
        elif len(names) != count:
            raise InstanceError(f"add_vars: expected {count} names, got {len(names)}")
        lb_a, ub_a = _check_bounds(lb_a, ub_a, int_a, names)
        self._register_names(names, start)
        self._lb.extend(lb_a.tolist())
        self._ub.extend(ub_a.tolist())
        self._int.extend(int_a.tolist())
        self._data = None
        return np.arange(start, start + count, dtype=np.int64)

    def var(self, index: int) -> Var:
        """The handle of column ``index``."""
        if not 0 <= index < len(self._lb):
            raise IndexError(f"variable index {index} out of range 0..{len(self._lb) - 1}")
        return Var(self, index)

    def var_by_name(self, name: str) -> Var:
        """The variable called ``name``."""
        try:
            return Var(self, self._name_index[name])
        except KeyError:
            raise InstanceError(f"model {self.name!r} has no variable named {name!r}") from None

    def var_name(self, index: int) -> str:
        return self._names[index]

    def var_bounds(self, index: int) -> tuple[float, float]:
        return self._lb[index], self._ub[index]

    def var_is_integer(self, index: int) -> bool:
        return self._int[index]

    @property
    def num_vars(self) -> int:
        return len(self._lb)

    @property
    def num_rows(self) -> int:
        return self._num_rows

    # --------------------------------------------------------------- constraints
    def add(self, constraint: LinearConstraint, name: str | None = None) -> int:
        """Add ``expr <= rhs``, ``expr >= rhs`` or ``expr == rhs``; returns the row index.

        Ranged rows: :meth:`add_range`. Chained ``lb <= e <= ub`` is rejected (Python evaluates
        it as two comparisons).
        """
        if not isinstance(constraint, LinearConstraint):
            raise TypeError(
                f"model.add expects a comparison of linear expressions (e.g. x + y <= 3), got "
                f"{constraint!r}; a plain bool here usually means a comparison of two numbers"
            )
        self._check_owner(constraint.model)
        return self._append_row(constraint.idx, constraint.coef, constraint.lb, constraint.ub, name)

    def add_range(self, expr: Operand, lb: float, ub: float, name: str | None = None) -> int:
        """Add ``lb <= expr <= ub``; returns the row index."""
        e = as_expr(expr)
        e = e if isinstance(e, LinExpr) else 1.0 * e
        idx, coef, const = e.flatten()
        self._check_owner(e.model)
        return self._append_row(idx, coef, float(lb) - const, float(ub) - const, name)

    def add_rows(self, row_idx: npt.ArrayLike, var_idx: npt.ArrayLike, coeffs: npt.ArrayLike, lb: npt.ArrayLike,
                 ub: npt.ArrayLike, names: Sequence[str] | None = None) -> np.ndarray:
        """Add many rows from COO triplets: row ``r`` is ``lb[r] <= sum coeffs*x[var_idx] <= ub[r]``.

        ``row_idx`` counts from 0 within this call; ``len(lb) == len(ub)`` is the number of rows.
        Returns the global row indices.

        >>> m = LinearModel()
        >>> s = m.add_vars(3, 0, 10, integer=True)
        >>> rows = m.add_rows([0, 0, 1, 1], [0, 1, 1, 2], [-1, 1, -1, 1], [2, 3], [math.inf, math.inf])
        >>> rows.tolist(), m.num_rows
        ([0, 1], 2)
        """
        r = np.asarray(row_idx, dtype=np.int64).ravel()
        c = np.asarray(var_idx, dtype=np.int64).ravel()
        v = np.asarray(coeffs, dtype=np.float64).ravel()
        lo = np.asarray(lb, dtype=np.float64).ravel()
        hi = np.asarray(ub, dtype=np.float64).ravel()
        _check_rows(r, c, v, lo, hi, self.num_vars)
        start = self._num_rows
        self._blocks.append((r + start, c, v))
        self._row_lb.append(lo)
        self._row_ub.append(hi)
        self._num_rows += len(lo)
        if names is not None:
            if len(names) != len(lo):
                raise InstanceError(f"add_rows: expected {len(lo)} names, got {len(names)}")
            self._row_names.update(zip(range(start, start + len(lo)), names))
        self._data = None
        return np.arange(start, start + len(lo), dtype=np.int64)

    # ------------------------------------------------------------------ objective
    def minimize(self, expr: Operand) -> None:
        """Set the objective to minimise ``expr``."""
        self._set_objective(expr, maximize=False)

    def maximize(self, expr: Operand) -> None:
        """Set the objective to maximise ``expr``."""
        self._set_objective(expr, maximize=True)

    def hint(self, var: Var, value: float) -> None:
        """Suggest a value for ``var`` (a solution hint / MIP start; backends may ignore it)."""
        self._check_owner(var.model)
        self._hints[var.index] = float(value)
        self._data = None

    def clear_hints(self) -> None:
        self._hints.clear()
        self._data = None

    # -------------------------------------------------------------------- arrays
    def data(self) -> ModelData:
        """The model as arrays (cached until the model changes)."""
        if self._data is None:
            self._data = self._build_data()
        return self._data

    def evaluate(self, expr: Operand, x: np.ndarray) -> float:
        """Value of ``expr`` at the point ``x`` (indexed by column)."""
        e = as_expr(expr)
        if isinstance(e, Var):
            return float(x[e.index])
        idx, coef, const = e.flatten()
        return float(coef @ np.asarray(x, dtype=np.float64)[idx] + const)

    def objective_value(self, x: np.ndarray) -> float:
        """The objective recomputed at ``x``."""
        d = self.data()
        return float(d.obj @ np.asarray(x, dtype=np.float64) + d.obj_offset)

    def max_violation(self, x: np.ndarray) -> float:
        """Largest violation of a bound, a row or integrality at ``x`` (0 when feasible)."""
        d = self.data()
        x = np.asarray(x, dtype=np.float64)
        ax = d.A @ x if d.num_rows else np.zeros(0)
        parts = [d.var_lb - x, x - d.var_ub, d.row_lb - ax, ax - d.row_ub,
                 np.abs(x - np.round(x))[d.integer]]
        return float(max((p.max(initial=0.0) for p in parts), default=0.0))

    def __repr__(self) -> str:
        n_int = sum(self._int)
        return (f"LinearModel({self.name!r}, vars={self.num_vars} ({n_int} integer), "
                f"rows={self.num_rows})")

    # ------------------------------------------------------------------ internals
    def _new_var(self, lb, ub, integer: bool, name: str | None) -> Var:
        index = len(self._lb)
        name = f"_x[{index}]" if name is None else str(name)
        (lb,), (ub,) = _check_bounds(np.array([lb], float), np.array([ub], float),
                                     np.array([integer]), [name])
        self._register_names([name], index)
        self._lb.append(float(lb))
        self._ub.append(float(ub))
        self._int.append(bool(integer))
        self._data = None
        return Var(self, index)

    def _register_names(self, names: Sequence[str], start: int) -> None:
        index = self._name_index
        for i, nm in enumerate(names, start):
            if nm in index:
                raise InstanceError(f"model {self.name!r} already has a variable named {nm!r}; "
                                    "variable names must be unique (results are keyed by name)")
            index[nm] = i
        self._names.extend(names)

    def _append_row(self, idx, coef, lb: float, ub: float, name: str | None) -> int:
        if math.isnan(lb) or math.isnan(ub) or lb > ub:
            raise InstanceError(f"constraint {name or self._num_rows}: expected lb <= ub, got [{lb}, {ub}]")
        row = self._num_rows
        self._blocks.append((np.full(len(idx), row, dtype=np.int64), idx, coef))
        self._row_lb.append(np.array([lb]))
        self._row_ub.append(np.array([ub]))
        self._num_rows += 1
        if name is not None:
            self._row_names[row] = name
        self._data = None
        return row

    def _set_objective(self, expr, maximize: bool) -> None:
        e = as_expr(expr)
        e = e if isinstance(e, LinExpr) else 1.0 * e
        self._check_owner(e.model)
        self._objective = e.flatten()
        self._maximize = maximize
        self._has_objective = True
        self._data = None

    def _check_owner(self, model) -> None:
        if model is not None and model is not self:
            raise InstanceError(f"the expression uses variables of another model than {self.name!r}")

    def _build_data(self) -> ModelData:
        n = self.num_vars
        rows, cols, vals = (np.concatenate([b[k] for b in self._blocks]) if self._blocks
                            else np.zeros(0, dtype=np.int64 if k < 2 else np.float64) for k in range(3))
        A = sp.csr_matrix((vals, (rows, cols)), shape=(self._num_rows, n))
        A.sum_duplicates()
        A.eliminate_zeros()
        idx, coef, const = self._objective
        obj = np.zeros(n)
        np.add.at(obj, idx, coef)
        hint_idx = np.fromiter(self._hints.keys(), dtype=np.int64, count=len(self._hints))
        hint_val = np.fromiter(self._hints.values(), dtype=np.float64, count=len(self._hints))
        row_names = [self._row_names.get(i, f"c{i}") for i in range(self._num_rows)]
        cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0))
        return ModelData(self.name, np.array(self._lb), np.array(self._ub), np.array(self._int, dtype=bool),
                         list(self._names), obj, float(const), self._maximize, self._has_objective,
                         A, cat(self._row_lb), cat(self._row_ub), row_names, hint_idx, hint_val)


def _check_bounds(lb: np.ndarray, ub: np.ndarray, integer: np.ndarray,
                  names) -> tuple[np.ndarray, np.ndarray]:
    """Validate bounds; round integer bounds inwards."""
    lb = np.where(integer, np.ceil(lb - 1e-9), lb)
    ub = np.where(integer, np.floor(ub + 1e-9), ub)
    bad = np.isnan(lb) | np.isnan(ub) | (lb > ub) | (lb == np.inf) | (ub == -np.inf)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InstanceError(f"variable {names[i]!r}: expected lb <= ub with lb < inf and ub > -inf, "
                            f"got [{lb[i]}, {ub[i]}] (integer bounds are rounded inwards)")
    return lb, ub


def _check_rows(r, c, v, lo, hi, num_vars: int) -> None:
    if not (len(r) == len(c) == len(v)):
        raise InstanceError(f"add_rows: row_idx, var_idx and coeffs must have one length, "
                            f"got {len(r)}, {len(c)}, {len(v)}")
    if len(lo) != len(hi):
        raise InstanceError(f"add_rows: lb and ub must have one length, got {len(lo)} and {len(hi)}")
    if len(r) and (r.min() < 0 or r.max() >= len(lo)):
        raise InstanceError(f"add_rows: row_idx must lie in 0..{len(lo) - 1} (one per lb/ub entry)")
    if len(c) and (c.min() < 0 or c.max() >= num_vars):
        raise InstanceError(f"add_rows: var_idx must lie in 0..{num_vars - 1}, got {c.min()}..{c.max()}")
    if not np.isfinite(v).all():
        raise InstanceError("add_rows: coefficients must be finite numbers")
    bad = np.isnan(lo) | np.isnan(hi) | (lo > hi)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InstanceError(f"add_rows: row {i}: expected lb <= ub, got [{lo[i]}, {hi[i]}]")

