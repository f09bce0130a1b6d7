"""The placement decision: the slot of every kernel, and the kind of every memory it counts.

>>> p = Placement.from_json({"slot": {"a": "SLR0"}, "memory": {"binding": {"a.w": "bram18"}}})
>>> dict(p.slot), dict(p.binding), p.to_json()["memory"]
({'a': 'SLR0'}, {'a.w': 'bram18'}, {'binding': {'a.w': 'bram18'}})
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.models.base import Decision, frozen_map, require_names
from dfopt.models.memory.decision import parse_binding


@dataclass(frozen=True)
class Placement(Decision):
    """Kernel -> slot name; memory key -> kind (the binding the slots' usage counts)."""

    section: ClassVar[str] = "placement"
    slot: Mapping[str, str]
    binding: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slot", frozen_map(self.slot))
        object.__setattr__(self, "binding", frozen_map(self.binding))

    def to_json(self) -> dict:
        return {"slot": dict(self.slot), "memory": {"binding": dict(self.binding)}}

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/placement") -> Placement:
        slot = require_names(data, "slot", pointer, "kernel slots")
        memory = data.get("memory", {})
        if not isinstance(memory, dict):
            raise InstanceError(f"expected an object, got {memory!r}", pointer=f"{pointer}/memory")
        binding = parse_binding(memory, "binding", f"{pointer}/memory") if "binding" in memory else {}
        return cls(slot, binding)
