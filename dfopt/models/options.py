"""Options shared by every model: a frozen dataclass whose fields are the same for the Python
API, the CLI flags and the instance's ``options.<problem>`` object.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Opts(CommonOptions):
...     strategy: str = "normal"
>>> build_options(Opts, {"strategy": "conservative"}, {"seed": 3}, problem="fifo").seed
3
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from dfopt.errors import InstanceError


@dataclass(frozen=True)
class CommonOptions:
    """Fields every problem accepts. ``solver`` and ``formulation`` None mean the model's default."""

    formulation: str | None = None
    solver: str | None = None
    time_limit: float = 60.0
    seed: int = 0
    deterministic: bool = True


def build_options(cls, from_instance: dict | None, overrides: dict | None, problem: str):
    """Merge instance options with overrides (overrides win; None values are ignored).

    Unknown fields are an :class:`InstanceError` naming the field and listing the valid ones.
    """
    names = {f.name: f for f in dataclasses.fields(cls)}
    merged = {}
    for source, values in (("instance", from_instance or {}), ("argument", overrides or {})):
        for key, value in values.items():
            if key not in names:
                pointer = f"/options/{problem}/{key}" if source == "instance" else ""
                raise InstanceError(
                    f"unknown {problem} option {key!r}; expected one of: {', '.join(sorted(names))}",
                    pointer=pointer)
            if value is not None:
                merged[key] = value
    if "time_limit" in merged and not float(merged["time_limit"]) > 0:
        raise InstanceError(f"time_limit must be > 0, got {merged['time_limit']}",
                            pointer=f"/options/{problem}/time_limit")
    return cls(**merged)


def check_formulation(problem: str, instance, options, formulations, default: str,
                      solvers: dict | None = None, needs_graph: bool = True) -> str:
    """The formulation to run, after the checks every model shares: a known formulation, a graph,
    and a ``solver`` that the formulation takes (``solvers``: formulation -> valid backend names)
    and that is installed. Errors name the option field.

    >>> from dfopt.instance.types import Instance
    >>> from dfopt.ir.graph import DataflowGraph
    >>> check_formulation("fusion", Instance("x", "fusion", graph=DataflowGraph()), CommonOptions(),
    ...                   {"greedy": None, "cpsat": None}, "cpsat")
    'cpsat'
    """
    from dfopt.errors import SolverUnavailableError, unknown_name_error

    formulation = options.formulation or default
    if formulation not in formulations:
        raise unknown_name_error(f"{problem} formulation", formulation, formulations,
                                 pointer=f"/options/{problem}/formulation")
    if needs_graph and instance.graph is None:
        raise InstanceError(f"the {problem} problem needs a graph", pointer="/graph")
    if options.solver is not None:
        from dfopt.ilp import available_backends

        valid = (solvers or {}).get(formulation, ())
        if options.solver not in valid:
            raise unknown_name_error(f"solver for the {problem} formulation {formulation!r}", options.solver,
                                     valid or ("none",), pointer=f"/options/{problem}/solver")
        from dfopt.ilp import backend_names

        if options.solver in backend_names() and options.solver not in available_backends():
            raise SolverUnavailableError(options.solver, available_backends(), kind="MIP solver")
    return formulation
