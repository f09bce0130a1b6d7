"""The affine form of Farkas' lemma through isl's coefficient sets.

An affine function ``f(p, x) = a0 + a_p . p + a_x . x`` is non-negative on every point of a
(non-empty) polyhedron ``P`` exactly when the coefficient vector ``(a0, a_p, a_x)`` lies in a
polyhedral cone, the *dual cone* of ``P``. isl computes that cone (``isl_set_coefficients``:
it eliminates the Farkas multipliers itself), so a schedule constraint "``f >= 0`` on ``P``"
becomes a handful of linear constraints over the coefficients ``a``, which are in turn linear in
the schedule's unknowns. No Fourier–Motzkin of our own.

A dependence ``S[s] -> T[t]`` gives a polyhedron over ``(p, s, t)`` (the wrapped relation);
:class:`Cone` stores its dual cone as integer rows over ``[a0, a_p..., a_s..., a_t...]``.

>>> import islpy as isl
>>> c = cone(isl.BasicMap("[N] -> { S0[i] -> S0[i + 1] : 0 <= i < N - 1 }"))
>>> c.width, c.contains([-1, 0, -1, 1]), c.contains([-2, 0, -1, 1]), c.contains([-1, 0, 0, 1])
(4, True, False, True)

``i' - i - 1 >= 0`` holds on the dependence (distance 1), ``i' - i - 2 >= 0`` does not,
``i' - 1 >= 0`` holds (``i' >= 1``).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl
import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Cone:
    """``{a : eqs @ a == 0, ineqs @ a >= 0}`` over ``a = [a0, a_params..., a_vars...]``."""

    eqs: np.ndarray     # shape (m, width), integers
    ineqs: np.ndarray   # shape (k, width)
    width: int

    def contains(self, a: npt.ArrayLike) -> bool:
        v = np.asarray(a, dtype=np.int64)
        return bool(np.all(self.eqs @ v == 0) and np.all(self.ineqs @ v >= 0))


def _int(val: isl.Val) -> int:
    if not val.is_int():  # isl normalises constraint rows to integers; never expected
        raise ValueError(f"non-integer coefficient {val} in a dual cone")
    return val.to_python()


def cone(relation: isl.BasicMap | isl.Map | isl.BasicSet | isl.Set) -> Cone:
    """The dual cone of ``relation`` (a map is wrapped: its input then output variables)."""
    obj = relation.wrap() if isinstance(relation, (isl.BasicMap, isl.Map)) else relation
    coeffs = obj.coefficients()
    width = coeffs.dim(isl.dim_type.set)
    eqs: list[list[int]] = []
    ineqs: list[list[int]] = []
    for con in coeffs.get_constraints():
        row = [_int(con.get_coefficient_val(isl.dim_type.set, k)) for k in range(width)]
        if _int(con.get_constant_val()) != 0:  # a cone has no constant terms
            raise ValueError(f"unexpected constant in the dual cone of {relation}")
        (eqs if con.is_equality() else ineqs).append(row)
    return Cone(np.array(eqs, dtype=np.int64).reshape(-1, width),
                np.array(ineqs, dtype=np.int64).reshape(-1, width), width)
