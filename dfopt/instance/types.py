"""The :class:`Instance` type and the instance format's constants."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from dfopt.ir.graph import DataflowGraph
from dfopt.ir.opgraph import OpGraph
from dfopt.ir.platform import Platform
from dfopt.ir.program import Program
from dfopt.ir.sparse.statement import SparseStatement
from dfopt.models import registry

FORMAT = "dfopt-instance/1"
# What the loader checks, read off the problem registry (dfopt.models.registry).
PROBLEMS = registry.names()
NEEDS_GRAPH = registry.needing("graph")
NEEDS_OPERATORS = registry.needing("operators")
NEEDS_SPARSE = registry.needing("sparse")
NEEDS_DAG = frozenset(n for n in PROBLEMS if registry.info(n).dag)
NEEDS_PROGRAM = registry.needing("program")
NEEDS_PLATFORM = registry.needing("platform")

_INSTANCE_ENTITIES = {("graph", "kernels"): "kernel", ("graph", "streams"): "stream",
                      ("platform", "slots"): "slot", ("program", "statements"): "statement",
                      ("program", "arrays"): "array"}
_GRAPH_ENTITIES = {("kernels",): "kernel", ("streams",): "stream"}


@dataclass(eq=False)
class Instance:
    """One parsed instance. ``options`` maps a problem name to its option values as given.

    Equality compares the content (graphs by their kernels and streams), not ``path``.

    >>> a = Instance("x", "memory", options={"memory": {"seed": 3}})
    >>> a.options_for(), a == Instance("x", "memory", options={"memory": {"seed": 3}})
    ({'seed': 3}, True)
    """

    name: str
    problem: str
    graph: DataflowGraph | None = None
    platform: Platform | None = None
    program: Program | None = None
    options: dict = field(default_factory=dict)
    description: str = ""
    path: str | None = None
    platform_name: str | None = None
    operators: OpGraph | None = None
    sparse: SparseStatement | None = None

    def options_for(self, problem: str | None = None) -> dict:
        """A copy of the options of ``problem`` (default: this instance's problem)."""
        return copy.deepcopy(self.options.get(problem or self.problem, {}))

    def _content(self) -> tuple:
        graph = None if self.graph is None else (list(self.graph.kernels.items()),
                                                 list(self.graph.streams.items()))
        return (self.name, self.problem, graph, self.platform, self.program, self.options,
                self.description, self.platform_name, self.operators, self.sparse)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Instance):
            return NotImplemented
        return self._content() == other._content()
