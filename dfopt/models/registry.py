"""The one list of problems: what the instance loader, the schemas, the solution file, the
summaries and the command line know about each problem.

Each entry is light (no model code is imported): a problem's name, the package that holds its
:class:`~dfopt.models.base.Problem` record (``PROBLEM``), a title, the parts of an instance it
needs and whether its graph must be acyclic. Adding a problem is one package plus one line here.

>>> names()
('fifo', 'converter', 'fusion', 'placement', 'memory', 'schedule', 'mapping', 'pipeline', 'sparse')
>>> info("fifo").needs, info("fifo").dag
(frozenset({'graph'}), True)
>>> get_problem("memory").name
'memory'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt.errors import unknown_name_error

if TYPE_CHECKING:
    from dfopt.models.base import Problem

#: The parts of an instance a problem may need (instance keys).
PARTS = ("graph", "operators", "program", "platform", "sparse")


@dataclass(frozen=True)
class ProblemInfo:
    """What is known of a problem without importing its model.

    ``needs``: instance keys the problem reads (:data:`PARTS`); ``dag``: its graph must be
    acyclic; ``sections``: the solution sections a solution of it holds (default its name);
    ``platform``: what its platform must offer (``slots``: an FPGA floorplan; ``rda``: a
    reconfigurable dataflow array).
    """

    name: str
    module: str
    title: str
    needs: frozenset
    dag: bool = False
    sections: tuple = ()
    platform: str = "slots"

    @property
    def solution_sections(self) -> tuple:
        return self.sections or (self.name,)


_ENTRIES = (
    ProblemInfo("fifo", "dfopt.models.fifo", "FIFO sizing", frozenset({"graph"}), dag=True),
    ProblemInfo("converter", "dfopt.models.converter", "layout converters", frozenset({"graph"})),
    ProblemInfo("fusion", "dfopt.models.fusion", "kernel fusion", frozenset({"graph"}), dag=True),
    ProblemInfo("placement", "dfopt.models.placement", "multi-die placement",
                frozenset({"graph", "platform"})),
    ProblemInfo("memory", "dfopt.models.memory", "memory binding", frozenset({"graph", "platform"})),
    ProblemInfo("schedule", "dfopt.models.schedule", "polyhedral scheduling", frozenset({"program"})),
    ProblemInfo("mapping", "dfopt.models.mapping", "virtual-to-physical NPU mapping",
                frozenset({"graph"}), dag=True),
    ProblemInfo("pipeline", "dfopt.models.pipeline", "operator graph to a placed dataflow design",
                frozenset({"operators", "platform"}),
                sections=("fusion", "fifo", "memory", "placement", "pipeline")),
    ProblemInfo("sparse", "dfopt.models.sparse", "sparse tensor algebra on a dataflow array",
                frozenset({"sparse", "platform"}), platform="rda"),
)

REGISTRY: dict[str, ProblemInfo] = {e.name: e for e in _ENTRIES}


def names() -> tuple:
    """Every problem name, in registry order."""
    return tuple(REGISTRY)


def info(name: str) -> ProblemInfo:
    """The registry entry of ``name``; an unknown name lists the known ones."""
    if name not in REGISTRY:
        raise unknown_name_error("problem", name, REGISTRY, pointer="/problem")
    return REGISTRY[name]


def get_problem(name: str) -> Problem:
    """The :class:`~dfopt.models.base.Problem` record of ``name`` (imports its package)."""
    return importlib.import_module(info(name).module).PROBLEM


def section_names() -> tuple:
    """Every solution section any problem writes, in a stable order."""
    out: list[str] = []
    for e in _ENTRIES:
        out += [s for s in e.solution_sections if s not in out]
    return tuple(out)


def needing(part: str) -> frozenset:
    """The problems whose instances need ``part`` (one of :data:`PARTS`)."""
    return frozenset(e.name for e in _ENTRIES if part in e.needs)
