"""Integer and linear models over several solver backends.

Build a :class:`LinearModel` (variables, linear rows, an objective, hints), then
:func:`solve` it with a backend by name: ``cpsat`` (OR-Tools CP-SAT), ``scip`` and ``cbc``
(OR-Tools pywraplp), ``highs`` (highspy), ``glop`` (LP only). Every solve has a time limit and a
seed and returns a :class:`ModelSolveResult` whose statuses are the two dfopt enums. For
constraints the neutral model lacks, build a native CP-SAT ``CpModel`` and call
:func:`solve_cp_model`. Importing this package imports no solver.

>>> from dfopt.ilp import LinearModel, solve
>>> m = LinearModel("assign")
>>> x = {(w, t): m.bool_var(f"x[{w},{t}]") for w in range(2) for t in range(2)}
>>> for w in range(2):
...     _ = m.add(x[w, 0] + x[w, 1] == 1)
>>> for t in range(2):
...     _ = m.add(x[0, t] + x[1, t] == 1)
>>> cost = {(0, 0): 4, (0, 1): 1, (1, 0): 2, (1, 1): 5}
>>> m.minimize(sum(c * x[k] for k, c in cost.items()))
>>> r = solve(m, "cpsat", time_limit=5, seed=0)
>>> r.objective, [k for k in x if r.value(x[k]) > 0.5]
(3.0, [(0, 1), (1, 0)])
"""

from dfopt.ilp.backends import (Backend, Capabilities, ModelSolveResult, SolveOptions,
                                available_backends, backend_names, capabilities, get_backend,
                                register_backend, solve)
from dfopt.ilp.cpsat import solve_cp_model
from dfopt.ilp.export import EXPORT_FORMATS, export
from dfopt.ilp.expr import LinearConstraint, LinExpr, Var, lin_sum
from dfopt.ilp.model import LinearModel, ModelData

__all__ = [
    "LinearModel", "ModelData", "Var", "LinExpr", "LinearConstraint", "lin_sum",
    "solve", "solve_cp_model", "available_backends", "backend_names", "capabilities",
    "get_backend", "register_backend", "Backend", "Capabilities", "SolveOptions",
    "ModelSolveResult", "export", "EXPORT_FORMATS",
]
