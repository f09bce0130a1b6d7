"""Linear expressions over the variables of a :class:`~dfopt.ilp.model.LinearModel`.

Expressions are immutable. ``a + b`` builds a small tree node instead of copying terms, so
``sum(...)`` over many terms stays linear in time; the tree is flattened (and duplicate variables
merged) once, when the expression is added to a model. :func:`lin_sum` builds a flat expression
from arrays directly and is the fast path for long sums.

>>> from dfopt.ilp import LinearModel
>>> m = LinearModel("demo")
>>> x, y = m.int_var(0, 5, "x"), m.int_var(0, 5, "y")
>>> e = 2 * x + y - 3
>>> e.terms(), e.constant
({'x': 2.0, 'y': 1.0}, -3.0)
>>> c = (x + y <= 4)
>>> (c.lb, c.ub)
(-inf, 4.0)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn, TypeAlias, TypeGuard, TypeVar

import numpy as np
import numpy.typing as npt

from dfopt.errors import InstanceError

if TYPE_CHECKING:  # pragma: no cover
    from dfopt.ilp.model import LinearModel

__all__ = ["Var", "LinExpr", "LinearConstraint", "lin_sum", "as_expr"]

_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)

#: What arithmetic on expressions takes: a variable, an expression or a number.
Operand: TypeAlias = "Var | LinExpr | float"
_E = TypeVar("_E", bound="_ExprOps")


def _is_number(x: object) -> TypeGuard[numbers.Real]:
    return isinstance(x, numbers.Real)


class _ExprOps:
    """Arithmetic and comparison operators shared by :class:`Var` and :class:`LinExpr`."""

    __slots__ = ()
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators

    def __add__(self, other: Operand) -> LinExpr:
        return _combine(self, other, 1.0)

    def __radd__(self, other: Operand) -> LinExpr:
        return _combine(self, other, 1.0)

    def __sub__(self, other: Operand) -> LinExpr:
        return _combine(self, other, -1.0)

    def __rsub__(self, other: Operand) -> LinExpr:
        return _combine(_scale(self, -1.0), other, 1.0)

    def __neg__(self) -> LinExpr:
        return _scale(self, -1.0)

    def __pos__(self: _E) -> _E:
        return self

    def __mul__(self, other: float) -> LinExpr:
        if not _is_number(other):
            raise TypeError(
                f"a linear model can only multiply by numbers, got {type(other).__name__}; "
                "products of variables are not linear (linearise them, or use a native CP-SAT "
                "model through dfopt.ilp.solve_cp_model)"
            )
        return _scale(self, float(other))

    __rmul__ = __mul__

    def __truediv__(self, other: float) -> LinExpr:
        if not _is_number(other) or other == 0:
            raise TypeError(f"a linear expression can only be divided by a nonzero number, got {other!r}")
        return _scale(self, 1.0 / float(other))

    def __le__(self, other: Operand) -> LinearConstraint:
        return _compare(self, other, "<=")

    def __ge__(self, other: Operand) -> LinearConstraint:
        return _compare(self, other, ">=")

    def __eq__(self, other: object) -> LinearConstraint:  # type: ignore[override]
        return _compare(self, other, "==")

    def __ne__(self, other: object) -> bool:
        return NotImplemented

    def __lt__(self, other: Operand) -> NoReturn:
        raise TypeError("strict inequalities are not linear constraints; use <= or >=")

    __gt__ = __lt__


class Var(_ExprOps):
    """A variable of a :class:`LinearModel`; a handle holding the model and a column index."""

    __slots__ = ("model", "index")

    def __init__(self, model: LinearModel, index: int) -> None:
        self.model = model
        self.index = int(index)

    @property
    def name(self) -> str:
        return self.model.var_name(self.index)

    @property
    def lb(self) -> float:
        return self.model.var_bounds(self.index)[0]

    @property
    def ub(self) -> float:
        return self.model.var_bounds(self.index)[1]

    @property
    def is_integer(self) -> bool:
        return self.model.var_is_integer(self.index)

    def __hash__(self) -> int:
        return hash((id(self.model), self.index))

    def __repr__(self) -> str:
        return f"Var({self.name!r})"


class LinExpr(_ExprOps):
    """An affine expression ``sum(coef[i] * x[idx[i]]) + constant``.

    Either flat (``idx``/``coef`` arrays) or a lazy node (``parts``: pairs of scale and
    sub-expression) that :meth:`flatten` turns into arrays once.
    """

    __slots__ = ("model", "_idx", "_coef", "_const", "_parts")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, model: LinearModel | None = None, idx: np.ndarray = _EMPTY_I, coef: np.ndarray = _EMPTY_F,
                 constant: float = 0.0, parts: tuple | None = None) -> None:
        self.model = model
        self._idx = idx
        self._coef = coef
        self._const = float(constant)
        self._parts = parts  # tuple of (scale, Var | LinExpr) or None when flat

    @property
    def constant(self) -> float:
        return self.flatten()[2]

    def flatten(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Return ``(idx, coef, constant)`` with unique indices and no zero coefficients."""
        if self._parts is not None:
            idx, coef, const = _flatten_tree(self)
            self._idx, self._coef, self._const, self._parts = idx, coef, const, None
        return self._idx, self._coef, self._const

    def terms(self) -> dict:
        """Coefficients by variable name (for reading and debugging, not for bulk work)."""
        idx, coef, _ = self.flatten()
        if self.model is None:
            return {}
        return {self.model.var_name(i): float(c) for i, c in zip(idx.tolist(), coef.tolist())}

    def __repr__(self) -> str:
        idx, coef, const = self.flatten()
        name = self.model.var_name if self.model is not None else str  # no model: no terms either
        body = " + ".join(f"{c:g}*{name(i)}" for i, c in zip(idx.tolist(), coef.tolist()))
        return f"LinExpr({body or '0'} + {const:g})"


class LinearConstraint:
    """``lb <= expr <= ub`` with ``expr`` flattened (its constant moved into the bounds)."""

    __slots__ = ("model", "idx", "coef", "lb", "ub", "_identity")

    def __init__(self, model: LinearModel | None, idx: np.ndarray, coef: np.ndarray, lb: float, ub: float,
                 identity: tuple[Var, Var] | None = None) -> None:
        self.model = model
        self.idx, self.coef = idx, coef
        self.lb, self.ub = float(lb), float(ub)
        self._identity = identity

    def __bool__(self) -> bool:
        # ``x == y`` on two Var handles doubles as identity (dict lookups, ``in``).
        if self._identity is not None:
            a, b = self._identity
            return a.model is b.model and a.index == b.index
        raise TypeError(
            "a linear constraint has no truth value; chained comparisons such as `lb <= e <= ub` "
            "are not supported, use model.add_range(e, lb, ub)"
        )

    def __repr__(self) -> str:
        return f"LinearConstraint({self.lb:g} <= ... <= {self.ub:g}, {len(self.idx)} terms)"


def as_expr(x: object) -> LinExpr | Var:
    """Coerce a number, :class:`Var` or :class:`LinExpr` into an expression."""
    if isinstance(x, (Var, LinExpr)):
        return x
    if _is_number(x):
        return LinExpr(constant=float(x))
    raise TypeError(f"expected a number, Var or LinExpr, got {type(x).__name__}")


def lin_sum(variables: Sequence[Var] | np.ndarray, coeffs: npt.ArrayLike | None = None, constant: float = 0.0,
            model: LinearModel | None = None) -> LinExpr:
    """Fast flat ``sum(coeffs[i] * variables[i]) + constant``.

    ``variables`` is a sequence of :class:`Var` or an integer array of column indices (then
    ``model`` is required).

    >>> from dfopt.ilp import LinearModel
    >>> m = LinearModel()
    >>> xs = [m.int_var(0, 1, f"x{i}") for i in range(3)]
    >>> lin_sum(xs, [1, 2, 3]).terms()
    {'x0': 1.0, 'x1': 2.0, 'x2': 3.0}
    """
    if isinstance(variables, np.ndarray) and variables.dtype.kind in "iu":
        if model is None:
            raise TypeError("lin_sum over an index array needs model=")
        idx = variables.astype(np.int64, copy=False)
    else:
        variables = list(variables)
        if variables and model is None:
            model = variables[0].model
        for v in variables:
            if not isinstance(v, Var) or v.model is not model:
                raise InstanceError(f"lin_sum expects variables of one model, got {v!r}")
        idx = np.fromiter((v.index for v in variables), dtype=np.int64, count=len(variables))
    coef = np.ones(len(idx)) if coeffs is None else np.asarray(coeffs, dtype=np.float64)
    if coef.shape != idx.shape:
        raise InstanceError(f"lin_sum: expected {len(idx)} coefficients, got {coef.shape}")
    return LinExpr(model, idx, coef, constant)


def _model_of(a, b):
    ma, mb = getattr(a, "model", None), getattr(b, "model", None)
    if ma is not None and mb is not None and ma is not mb:
        raise InstanceError("an expression mixes variables of two different models")
    return ma if ma is not None else mb


def _scale(x, s: float) -> LinExpr:
    return LinExpr(x.model, parts=((s, x),))


def _combine(a, b, sign: float) -> LinExpr:
    if _is_number(b):
        if b == 0:
            return a
        return LinExpr(a.model, parts=((1.0, a), (sign, LinExpr(constant=float(b)))))
    if not isinstance(b, (Var, LinExpr)):
        return NotImplemented
    return LinExpr(_model_of(a, b), parts=((1.0, a), (sign, b)))


def _compare(a, b, op: str) -> LinearConstraint:
    if not (_is_number(b) or isinstance(b, (Var, LinExpr))):
        return NotImplemented
    identity = (a, b) if op == "==" and isinstance(a, Var) and isinstance(b, Var) else None
    diff = _combine(a, b, -1.0) if not _is_number(b) else _combine(a, -float(b), 1.0)
    diff = diff if isinstance(diff, LinExpr) else _scale(diff, 1.0)
    idx, coef, const = diff.flatten()
    lb, ub = {"<=": (-math.inf, -const), ">=": (-const, math.inf), "==": (-const, -const)}[op]
    return LinearConstraint(diff.model, idx, coef, lb, ub, identity)


def _flatten_tree(root: LinExpr) -> tuple[np.ndarray, np.ndarray, float]:
    """Walk a lazy expression tree iteratively; merge duplicate variables."""
    singles_i: list[int] = []
    singles_c: list[float] = []
    blocks_i: list[np.ndarray] = []
    blocks_c: list[np.ndarray] = []
    const = 0.0
    stack: list = [(1.0, root)]
    while stack:
        s, node = stack.pop()
        if isinstance(node, Var):
            singles_i.append(node.index)
            singles_c.append(s)
        elif node._parts is not None:
            stack.extend((s * ps, child) for ps, child in node._parts)
        else:
            const += s * node._const
            if len(node._idx):
                blocks_i.append(node._idx)
                blocks_c.append(node._coef * s)
    blocks_i.append(np.asarray(singles_i, dtype=np.int64))
    blocks_c.append(np.asarray(singles_c, dtype=np.float64))
    return (*merge_terms(np.concatenate(blocks_i), np.concatenate(blocks_c)), const)


def merge_terms(idx: np.ndarray, coef: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum coefficients of repeated indices, drop zeros, sort by index."""
    if len(idx) > 1:
        uniq, inv = np.unique(idx, return_inverse=True)
        coef = np.bincount(inv, weights=coef, minlength=len(uniq))
        idx = uniq
    keep = coef != 0
    if not keep.all():
        idx, coef = idx[keep], coef[keep]
    return idx.astype(np.int64, copy=False), coef.astype(np.float64, copy=False)

