"""The Python entry points: load an instance, solve it, check a solution.

``dfopt.load``, ``dfopt.solve`` and ``dfopt.check`` are these functions; each problem package
adds an entry point that takes the IR directly (``dfopt.fifo.size``, ``dfopt.fusion.partition``,
``dfopt.placement.place``, ...), built on :func:`solve_graph`.

>>> import dfopt
>>> sol = dfopt.solve("instances/fifo/fig8a.json")
>>> dict(sol.decision.depths), sol.ok
({'e01': 1}, True)
>>> [c.name for c in dfopt.check("instances/fifo/fig8a.json", sol) if not c.ok]
[]
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dfopt.instance.types import Instance
from dfopt.models import driver
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.opgraph import OpGraph
    from dfopt.ir.platform import Platform
    from dfopt.ir.program import Program


def load(path: str | os.PathLike) -> Instance:
    """Read, validate and build the instance in the JSON file ``path``.

    Every fault of the file is reported at once in one :class:`~dfopt.errors.InstanceError`,
    each with its JSON pointer.
    """
    from dfopt.instance import load as _load

    return _load(path)


def _instance(instance_or_path: Instance | str | os.PathLike) -> Instance:
    if isinstance(instance_or_path, Instance):
        return instance_or_path
    return load(instance_or_path)


def make_options(instance: Instance, problem: str | None = None, **overrides: Any) -> Any:
    """The problem's Options: the instance's ``options`` merged with keyword overrides."""
    return driver.make_options(instance, overrides, "argument", problem)


def solve(instance_or_path: Instance | str | os.PathLike, **options: Any) -> Solution:
    """Solve an instance (or the instance file at a path) and check the answer.

    Parameters
    ----------
    instance_or_path : Instance or path
        A loaded :class:`~dfopt.instance.Instance`, or the path of an instance file.
    **options
        Fields of the problem's Options (``formulation``, ``solver``, ``time_limit``, ``seed``,
        and the problem's own); they override the instance's ``options``.

    Returns
    -------
    Solution
        With the typed ``decision``, the objective recomputed from it, the bound, the status and
        the checks (``solution.ok`` is true when all passed).
    """
    instance = _instance(instance_or_path)
    return driver.solve(instance, make_options(instance, **options))


def check(instance_or_path: Instance | str | os.PathLike, solution: Solution, **options: Any) -> list[Check]:
    """Re-run every checker of ``solution``, without a solver, with the parameters of the
    instance and ``options`` (a solution that records other parameters fails its record check)."""
    instance = _instance(instance_or_path)
    return driver.check(instance, solution, make_options(instance, solution.problem, **options))


def solve_graph(problem: str, graph: DataflowGraph | None = None, platform: Platform | str | None = None,
                name: str = "design", program: Program | None = None, operators: OpGraph | None = None,
                **options: Any) -> Solution:
    """Solve ``problem`` on IR objects directly (no instance file): the entry points'
    common body. ``platform`` is a :class:`~dfopt.ir.platform.Platform` or a preset name."""
    from dfopt.ir.platform import load_preset

    platform_name = platform if isinstance(platform, str) else None
    if isinstance(platform, str):
        platform = load_preset(platform)
    instance = Instance(name, problem, graph=graph, platform=platform, program=program,
                        operators=operators, platform_name=platform_name)
    validate(instance)
    return driver.solve(instance, make_options(instance, **options))


def validate(instance: Instance) -> None:
    """Check IR built in Python as a file would be checked (schema bounds, names, types, acyclic
    graphs): one :class:`~dfopt.errors.InstanceError` lists every fault, with the pointer of the
    instance's JSON form."""
    from dfopt.errors import InstanceError
    from dfopt.instance import to_dict, validate_dict

    faults = validate_dict(to_dict(instance))
    if faults:
        raise InstanceError(problems=faults)


# -- the 0.1 names, kept for callers --------------------------------------------------------------

def solve_instance(instance: Instance, **overrides: Any) -> Solution:
    """:func:`solve` on a loaded instance."""
    return solve(instance, **overrides)


def check_solution(instance: Instance, solution: Solution, **options: Any) -> list[Check]:
    """:func:`check` on a loaded instance."""
    return check(instance, solution, **options)
