"""Integer and linear models over several solver backends.

Build a :class:`LinearModel` (variables, linear rows, an objective, hints), then
:func:`solve` it with a backend by name: ``cpsat`` (OR-Tools CP-SAT), ``scip`` and ``cbc``
(OR-Tools pywraplp), ``highs`` (highspy), ``glop`` (LP only). Every solve has a time limit and a
seed and returns a :class:`ModelSolveResult` whose statuses are the two dfopt enums.

Every CP-SAT model in dfopt goes through this package: for constraints the neutral model lacks
(no-overlap, element, reified rows, assumptions), build a native model with
:func:`new_cp_model` (a :class:`LeanCpModel`: a ``CpModel`` without OR-Tools' per-model
camelCase aliases) and solve it with :func:`solve_cp_model`; :func:`configure_solver` sets a
``CpSolver`` from :class:`SolveOptions` and :func:`map_cpsat_status` is the one map from
``CpSolverStatus`` to the dfopt enums. Every solve runs in a :func:`dfopt.progress.phase` and
reports incumbents and bounds where the solver gives them cheaply. Importing this package
imports no solver.

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

A native model, for a constraint the neutral model lacks:

>>> from dfopt.ilp import new_cp_model, solve_cp_model
>>> cm = new_cp_model("pick")
>>> a, b = cm.new_bool_var("a"), cm.new_bool_var("b")
>>> _ = cm.add_bool_xor([a, b])
>>> cm.maximize(2 * a + b)
>>> res, solver = solve_cp_model(cm, time_limit=5)
>>> res.termination.value, res.values
('optimal', {'a': 1, 'b': 0})
"""

from dfopt.ilp.backends import (
    Backend,
    Capabilities,
    ModelSolveResult,
    SolveOptions,
    available_backends,
    backend_names,
    capabilities,
    get_backend,
    register_backend,
    solve,
)
from dfopt.ilp.cpsat import (
    add_in_values,
    configure_solver,
    lean_model_class,
    map_cpsat_status,
    new_cp_model,
    solve_cp_model,
    weighted_sum,
)
from dfopt.ilp.export import EXPORT_FORMATS, export
from dfopt.ilp.expr import LinearConstraint, LinExpr, Var, lin_sum
from dfopt.ilp.model import LinearModel, ModelData

__all__ = [
    "weighted_sum",
    "LinearModel", "ModelData", "Var", "LinExpr", "LinearConstraint", "lin_sum",
    "solve", "solve_cp_model", "available_backends", "backend_names", "capabilities",
    "get_backend", "register_backend", "Backend", "Capabilities", "SolveOptions",
    "ModelSolveResult", "export", "EXPORT_FORMATS", "new_cp_model", "lean_model_class",
    "configure_solver", "map_cpsat_status", "add_in_values",
]


def __getattr__(name: str):
    if name == "LeanCpModel":      # made on first use: importing dfopt.ilp imports no solver
        return lean_model_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
