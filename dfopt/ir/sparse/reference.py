"""The reference evaluator of an index-notation assignment over coordinate lists.

Independent of the dataflow graph and its simulator: every subexpression of
:func:`~dfopt.ir.sparse.notation.with_reductions` becomes a relation (index names, unique coordinate
rows, values) — an access is its operand's nonzeros, a product a sorted join on the shared indices,
``+`` and ``-`` a union that adds matching rows, and a ``Sum`` drops its index and adds the rows
that then coincide. Integer data is computed exactly in int64; anything else in float64.

>>> from dfopt.ir.sparse.notation import parse
>>> a = parse("y(i) = A(i,j) * x(j)")
>>> A = Coo((2, 3), [[0, 0], [0, 2], [1, 1]], [1, 2, 3])
>>> x = Coo((3,), [[0], [2]], [10, 20])
>>> y = evaluate(a, {"A": A, "x": x}, {"i": 2, "j": 3})
>>> y.coords.tolist(), y.values.tolist()
([[0]], [50])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dfopt.ir.sparse.notation import Access, Assignment, Binary, Expr, Literal, Neg, Sum, accesses, with_reductions
from dfopt.ir.sparse.tensor import Coo, _row_keys, _sum_rows

MAX_TERMS = 2**27          # rows of one intermediate product; larger ones are refused before allocating

@dataclass(frozen=True, eq=False)
class _Relation:
    """Nonzeros of a subexpression: ``coords[:, c]`` are the coordinates of ``indices[c]``, rows unique."""

    indices: tuple[str, ...]
    coords: np.ndarray
    values: np.ndarray


def evaluate(a: Assignment, operands: dict[str, Coo], dims: dict[str, int]) -> Coo:
    """The result of ``a`` as a canonical Coo (a scalar result: shape ``()``, coords ``(k, 0)``).

    ``operands`` maps every tensor of the right-hand side to its data (dense tensors too: their
    nonzeros); ``dims`` gives the size of each index variable (missing ones are read off the
    operands' shapes). A shape that disagrees with ``dims`` raises ``ValueError``.

    >>> from dfopt.ir.sparse.notation import parse
    >>> B = Coo((2, 2), [[0, 0], [1, 1]], [1.5, 2.0])
    >>> evaluate(parse("a = B(i,j) * B(i,j)"), {"B": B}, {}).values.tolist()
    [6.25]
    """
    dims = _dims(a, operands, dims)
    exact = _is_integer(a, operands)
    dtype = np.int64 if exact else np.float64
    rel = _eval(with_reductions(a), operands, dims, dtype)
    cols = [rel.indices.index(i) for i in a.lhs.indices]
    shape = tuple(dims[i] for i in a.lhs.indices)
    return Coo(shape, rel.coords[:, cols], rel.values).canonical()


def _dims(a: Assignment, operands: dict[str, Coo], dims: dict[str, int]) -> dict[str, int]:
    """Index sizes: ``dims``, completed and checked against the operands' shapes."""
    out = {i: int(n) for i, n in dims.items()}
    for acc in accesses(a.rhs):
        if acc.tensor not in operands:
            raise ValueError(f"no data for tensor {acc.tensor!r}; operands given: {', '.join(sorted(operands))}")
        shape = operands[acc.tensor].shape
        if len(shape) != len(acc.indices):
            raise ValueError(f"tensor {acc.tensor!r} is accessed with {len(acc.indices)} indices but its data has "
                             f"rank {len(shape)}")
        for mode, (idx, size) in enumerate(zip(acc.indices, shape)):
            if out.setdefault(idx, size) != size:
                raise ValueError(f"mode {mode} of tensor {acc.tensor!r} has size {size} but index {idx!r} has "
                                 f"size {out[idx]}")
    missing = [i for i in a.lhs.indices if i not in out]
    if missing:
        raise ValueError(f"no size for index {missing[0]!r}")
    return out


def _is_integer(a: Assignment, operands: dict[str, Coo]) -> bool:
    """Whether every operand holds integers and every literal is integral."""
    literals = [n.value for n in _literals(a.rhs)]
    return all(operands[acc.tensor].values.dtype.kind in "biu" for acc in accesses(a.rhs)) and \
        all(float(v).is_integer() for v in literals)


def _literals(expr: Expr) -> list[Literal]:
    if isinstance(expr, Literal):
        return [expr]
    if isinstance(expr, Binary):
        return _literals(expr.left) + _literals(expr.right)
    if isinstance(expr, Neg | Sum):
        return _literals(expr.arg)
    return []


def _eval(expr: Expr, operands: dict[str, Coo], dims: dict[str, int], dtype) -> _Relation:
    if isinstance(expr, Access):
        coo = operands[expr.tensor]
        coords, values = _sum_rows(coo.coords, coo.values.astype(dtype), coo.shape)
        return _Relation(expr.indices, coords, values)
    if isinstance(expr, Literal):
        value = np.array([expr.value], dtype=dtype)
        return _Relation((), np.zeros((int(value[0] != 0), 0), dtype=np.int64), value[value != 0])
    if isinstance(expr, Neg):
        rel = _eval(expr.arg, operands, dims, dtype)
        return _Relation(rel.indices, rel.coords, -rel.values)
    if isinstance(expr, Sum):
        rel = _eval(expr.arg, operands, dims, dtype)
        keep = [c for c, i in enumerate(rel.indices) if i != expr.index]
        return _group(tuple(rel.indices[c] for c in keep), rel.coords[:, keep], rel.values, dims)
    if isinstance(expr, Binary):
        left, right = _eval(expr.left, operands, dims, dtype), _eval(expr.right, operands, dims, dtype)
        if expr.op == "*":
            return _join(left, right, dims)
        return _union(left, right, expr.op, dims)
    raise TypeError(f"expected an index-notation node, got {type(expr).__name__}")


def _group(indices: tuple[str, ...], coords: np.ndarray, values: np.ndarray, dims: dict[str, int]) -> _Relation:
    """Rows sorted, equal rows added, zeros dropped."""
    coords, values = _sum_rows(coords, values, tuple(dims[i] for i in indices))
    return _Relation(indices, coords, values)


def _union(left: _Relation, right: _Relation, op: str, dims: dict[str, int]) -> _Relation:
    """``left + right`` or ``left - right`` over the same free indices (the parser checks they match)."""
    cols = [right.indices.index(i) for i in left.indices]
    values = np.concatenate([left.values, -right.values if op == "-" else right.values])
    return _group(left.indices, np.concatenate([left.coords, right.coords[:, cols]]), values, dims)


def _join(left: _Relation, right: _Relation, dims: dict[str, int]) -> _Relation:
    """The product: every pair of rows that agree on the shared indices (all pairs when none)."""
    shared = [i for i in left.indices if i in right.indices]
    extra = [c for c, i in enumerate(right.indices) if i not in shared]
    lcols = [left.indices.index(i) for i in shared]
    rcols = [right.indices.index(i) for i in shared]
    sizes = tuple(dims[i] for i in shared)
    keys = _row_keys(np.concatenate([left.coords[:, lcols], right.coords[:, rcols]]), sizes)
    lkeys, rkeys = keys[:len(left.values)], keys[len(left.values):]
    order = np.argsort(rkeys, kind="stable")
    sorted_keys = rkeys[order]
    lo = np.searchsorted(sorted_keys, lkeys, side="left")
    counts = np.searchsorted(sorted_keys, lkeys, side="right") - lo
    total = int(counts.sum())
    if total > MAX_TERMS:
        raise ValueError(f"the product over {', '.join(left.indices)} and {', '.join(right.indices)} has {total} "
                         f"terms, more than the limit of {MAX_TERMS}")
    li = np.repeat(np.arange(len(lkeys)), counts)
    starts = np.cumsum(counts) - counts
    ri = order[np.repeat(lo - starts, counts) + np.arange(total)]
    coords = np.concatenate([left.coords[li], right.coords[ri][:, extra]], axis=1)
    values = left.values[li] * right.values[ri]
    keep = values != 0
    indices = left.indices + tuple(right.indices[c] for c in extra)
    return _Relation(indices, coords[keep], values[keep])
