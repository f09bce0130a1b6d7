"""dfopt: solver models for the decisions of dataflow-accelerator compilers.

>>> import dfopt
>>> sol = dfopt.solve("instances/fusion/greedy-trap.json")
>>> sol.status.value, sol.decision.groups
('optimal', (('a',), ('b', 'c'), ('d',)))

``dfopt.load``, ``dfopt.solve`` and ``dfopt.check`` work on instances of any problem,
``dfopt.explore`` searches a pipeline's or a schedule's options (docs/explore.md); each
problem's package is reachable as ``dfopt.<problem>`` (``dfopt.fifo.size(graph)``,
``dfopt.fusion.partition(graph, c_max=...)``, ``dfopt.placement.place(graph, platform)``, ...).
Nothing heavy is imported until it is used.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

__version__ = "0.2.0.dev0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

_API = ("load", "solve", "check")
_PROBLEMS = ("fifo", "converter", "fusion", "placement", "memory", "schedule", "mapping", "pipeline", "sparse")

__all__ = ["__version__", *_API, *_PROBLEMS, "explore"]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module("dfopt.api"), name)
    if name in _PROBLEMS:
        return importlib.import_module(f"dfopt.models.{name}")
    if name == "explore":                 # the package, callable: dfopt.explore(instance, trials=...)
        return importlib.import_module("dfopt.explore")
    raise AttributeError(f"module 'dfopt' has no attribute {name!r}")
