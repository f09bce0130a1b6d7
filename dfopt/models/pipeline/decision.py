"""The pipeline's decision: every stage's decision, each in its own solution section.

>>> d = Design.from_sections({"fusion": {"groups": [["a", "b"]]}, "fifo": {"depths": {"e": 2}},
...                           "memory": {"binding": {"fifo.e": "register"}},
...                           "placement": {"slot": {"a": "SLR0", "b": "SLR0"}}})
>>> d.fusion.groups, dict(d.fifo.depths), sorted(d.sections())
((('a', 'b'),), {'e': 2}, ['fifo', 'fusion', 'memory', 'placement'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from dfopt.models.base import Decision
from dfopt.models.fifo.decision import FifoDepths
from dfopt.models.fusion.decision import Partition
from dfopt.models.memory.decision import Binding
from dfopt.models.placement.decision import Placement

STAGES = ("fusion", "fifo", "memory", "placement")


@dataclass(frozen=True)
class Design(Decision):
    """The fused groups, the FIFO depths, the memory binding and the placement of one design."""

    section: ClassVar[str] = "pipeline"
    fusion: Partition
    fifo: FifoDepths
    memory: Binding
    placement: Placement

    def to_json(self) -> dict:
        return {}

    def sections(self) -> dict:
        return {name: getattr(self, name).to_json() for name in STAGES}

    @classmethod
    def from_sections(cls, sections: Mapping) -> Design:
        return cls(Partition.from_sections(sections), FifoDepths.from_sections(sections),
                   Binding.from_sections(sections), Placement.from_sections(sections))
