"""The FIFO sizing decision: one depth per stream.

>>> d = FifoDepths.from_json({"depths": {"e01": 3, "e12": 1}})
>>> d.depths["e01"], d.to_json()
(3, {'depths': {'e01': 3, 'e12': 1}})
>>> try:
...     FifoDepths.from_json({"depths": {"e01": 0}}, "/fifo")
... except InstanceError as err:
...     print(err)
/fifo/depths/e01: expected a depth: an integer >= 1 and <= 1099511627776, got 0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.models.base import Decision, frozen_map, require

#: The deepest FIFO a decision may hold (2^40 tokens: far beyond any buffer a device has).
MAX_DEPTH = 1 << 40


@dataclass(frozen=True)
class FifoDepths(Decision):
    """Stream name -> depth (tokens the FIFO holds)."""

    section: ClassVar[str] = "fifo"
    depths: Mapping[str, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "depths", frozen_map(self.depths))

    def to_json(self) -> dict:
        return {"depths": dict(self.depths)}

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/fifo") -> FifoDepths:
        depths = require(data, "depths", pointer, dict, "an object of stream depths")
        for name, d in depths.items():
            if isinstance(d, float) and d.is_integer():
                d = int(d)
            if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_DEPTH:
                raise InstanceError(f"expected a depth: an integer >= 1 and <= {MAX_DEPTH}, got {d!r}",
                                    pointer=f"{pointer}/depths/{name}")
        return cls({n: int(d) for n, d in depths.items()})
