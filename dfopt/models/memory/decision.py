"""The memory-binding decision: the kind of every on-chip memory.

>>> Binding.from_json({"binding": {"k.a": "bram18", "fifo.e": "register"}}).binding["k.a"]
'bram18'
>>> try:
...     Binding.from_json({"binding": {"k.a": "dram"}})
... except InstanceError as err:
...     print(err)
/memory/binding/k.a: unknown memory kind 'dram' (expected one of: register, lutram, bram18, uram)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.ir.memory import MEMORY_KINDS
from dfopt.models.base import Decision, frozen_map, require_names


@dataclass(frozen=True)
class Binding(Decision):
    """Memory key (``kernel.buffer``, ``fifo.stream``, ``converter.stream``) -> kind."""

    section: ClassVar[str] = "memory"
    binding: Mapping[str, str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "binding", frozen_map(self.binding))

    def to_json(self) -> dict:
        return {"binding": dict(self.binding)}

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/memory") -> Binding:
        return cls(parse_binding(data, "binding", pointer))


def parse_binding(data: dict, key: str, pointer: str) -> dict:
    """A memory -> kind mapping whose kinds are known (shared with the placement decision)."""
    binding = require_names(data, key, pointer, "memory kinds")
    for name, kind in binding.items():
        if kind not in MEMORY_KINDS:
            raise InstanceError(f"unknown memory kind {kind!r} (expected one of: {', '.join(MEMORY_KINDS)})",
                                pointer=f"{pointer}/{key}/{name}")
    return binding
