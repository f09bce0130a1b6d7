"""The scheduling decision: the schedule as one isl union map, and its tiled form.

>>> s = Schedule.from_json({"map": "[N] -> { S0[i] -> [i, 0] }"})
>>> s.map, s.tiled_map, s.code_map
('[N] -> { S0[i] -> [i, 0] }', None, '[N] -> { S0[i] -> [i, 0] }')
>>> try:
...     Schedule.from_json({"map": 3})
... except InstanceError as err:
...     print(err)
/schedule/map: expected an isl union map (text), got 3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.models.base import Decision, require

MAX_TEXT = 1 << 20


@dataclass(frozen=True)
class Schedule(Decision):
    """``map``: statement instance -> time vector (one length for every statement); ``tiled_map``:
    the same order with its permutable bands tiled, when tiling was asked for."""

    section: ClassVar[str] = "schedule"
    map: str
    tiled_map: str | None = None

    @property
    def code_map(self) -> str:
        """The map the code follows (the tiled one when there is one)."""
        return self.tiled_map or self.map

    def to_json(self) -> dict:
        d = {"map": self.map}
        if self.tiled_map:
            d["tiled_map"] = self.tiled_map
        return d

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/schedule") -> Schedule:
        text = require(data, "map", pointer, str, "an isl union map (text)")
        tiled = data.get("tiled_map")
        if tiled is not None and not isinstance(tiled, str):
            raise InstanceError(f"expected an isl union map (text), got {tiled!r}", pointer=f"{pointer}/tiled_map")
        for key, value in (("map", text), ("tiled_map", tiled)):
            if value is not None and len(value) > MAX_TEXT:
                raise InstanceError(f"the map has {len(value)} characters; at most {MAX_TEXT}",
                                    pointer=f"{pointer}/{key}")
        return cls(text, tiled or None)
