"""The fusion decision: the kernels of each fused group, groups in execution order.

>>> p = Partition.from_json({"groups": [["a"], ["b", "c"]]})
>>> p.groups, p.group_of()
((('a',), ('b', 'c')), {'a': 0, 'b': 1, 'c': 1})
>>> try:
...     Partition.from_json({"groups": [["a"], "b"]})
... except InstanceError as err:
...     print(err)
/fusion/groups/1: expected a list of kernel names, got 'b'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.models.base import Decision, require


@dataclass(frozen=True)
class Partition(Decision):
    """Fused groups (tuples of kernel names), in the order they run."""

    section: ClassVar[str] = "fusion"
    groups: tuple

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(tuple(g) for g in self.groups))

    def group_of(self) -> dict:
        """Kernel -> group index (the last group wins for a kernel listed twice)."""
        return {k: i for i, members in enumerate(self.groups) for k in members}

    def to_json(self) -> dict:
        return {"groups": [list(g) for g in self.groups]}

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/fusion") -> Partition:
        groups = require(data, "groups", pointer, list, "a list of groups")
        for i, members in enumerate(groups):
            if not isinstance(members, list) or not all(isinstance(k, str) and k for k in members):
                raise InstanceError(f"expected a list of kernel names, got {members!r}",
                                    pointer=f"{pointer}/groups/{i}")
        return cls(tuple(tuple(g) for g in groups))
