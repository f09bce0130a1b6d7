"""The Python entry points behind ``dfopt solve`` and ``dfopt check``.

>>> from dfopt.api import solve_instance   # doctest: +SKIP
>>> sol = solve_instance(load("instances/fifo/fig8f.json"), formulation="flow")   # doctest: +SKIP
"""

from __future__ import annotations

import time

from dfopt.models import get_model
from dfopt.models.options import build_options
from dfopt.solution import Check, Solution


def make_options(instance, problem: str | None = None, **overrides):
    """The problem's Options from the instance's ``options`` merged with keyword overrides."""
    problem = problem or instance.problem
    model = get_model(problem)
    return build_options(model.Options, instance.options.get(problem, {}), overrides, problem)


def solve_instance(instance, **overrides) -> Solution:
    """Solve an instance's problem; every solution is checked before it is returned.

    Keyword overrides are option fields (``formulation``, ``solver``, ``time_limit``, ``seed``, ...).
    """
    model = get_model(instance.problem)
    options = make_options(instance, **overrides)
    t0 = time.perf_counter()
    solution = model.solve(instance, options)
    solution.wall_time_s = time.perf_counter() - t0
    return solution


def check_solution(instance, solution: Solution, **kwargs) -> list[Check]:
    """Re-run every checker of the solution's problem, without a solver.

    Keyword arguments go to the model's checker (fifo: ``simulate_mode`` auto | always | never).
    """
    model = get_model(solution.problem)
    return model.checks(instance, solution, **kwargs)
