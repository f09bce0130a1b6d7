"""The mapping decision: the compute tile of every virtual node, and the route of every host
channel (through a mem tile and a shim DMA).

>>> m = MappingDecision.from_json({"physical": {"g_0": "tile(0,2)"}, "routes": []})
>>> dict(m.physical), m.to_json()["physical"]
({'g_0': (0, 2)}, {'g_0': 'tile(0,2)'})
>>> try:
...     MappingDecision.from_json({"physical": {"g_0": "tile 0 2"}})
... except InstanceError as err:
...     print(err)
/mapping/physical/g_0: expected tile(col,row), got 'tile 0 2'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.models.base import Decision, frozen_map, require

TILE = re.compile(r"^tile\((\d+),\s*(\d+)\)$")
_ROUTE_LISTS = ("mem", "shim")


def parse_tile(text: object) -> tuple[int, int] | None:
    m = TILE.match(str(text))
    return (int(m.group(1)), int(m.group(2))) if m else None


def tile_text(t: Sequence[int]) -> str:
    return f"tile({t[0]},{t[1]})"


def _pair(value) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1024 for v in value))


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 1 << 40


def _route(r, pointer: str) -> dict:
    if not isinstance(r, dict):
        raise InstanceError(f"expected a route object, got {r!r}", pointer=pointer)
    if not isinstance(r.get("tensor"), str) or r.get("dir") not in ("in", "out"):
        raise InstanceError("a route needs a tensor name and a dir (in or out)", pointer=pointer)
    for key in _ROUTE_LISTS:
        if not _pair(r.get(key)):
            raise InstanceError(f"expected [col, row], got {r.get(key)!r}", pointer=f"{pointer}/{key}")
    tiles = r.get("tiles", [])
    if not isinstance(tiles, list) or not all(_pair(t) for t in tiles):
        raise InstanceError(f"expected a list of [col, row], got {tiles!r}", pointer=f"{pointer}/tiles")
    blocks = r.get("blocks", [])
    if not isinstance(blocks, list):
        raise InstanceError("expected a list of blocks", pointer=f"{pointer}/blocks")
    for i, b in enumerate(blocks):
        if not isinstance(b, list) or not all(isinstance(ax, list) and all(_count(v) for v in ax) for ax in b):
            raise InstanceError(f"expected a block: a list of lists of integers >= 0, got {b!r}",
                                pointer=f"{pointer}/blocks/{i}")
    nbytes = r.get("block_bytes", 0)
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 <= nbytes <= 1 << 40:
        raise InstanceError(f"expected a byte count, got {nbytes!r}", pointer=f"{pointer}/block_bytes")
    return dict(r)


@dataclass(frozen=True)
class MappingDecision(Decision):
    """Virtual node -> (column, row) of its compute tile; the host routes as recorded objects
    (``tensor``, ``dir``, ``tiles``, ``blocks``, ``block_bytes``, ``mem``, ``shim``)."""

    section: ClassVar[str] = "mapping"
    physical: Mapping[str, tuple]
    routes: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "physical", frozen_map({v: tuple(t) for v, t in self.physical.items()}))
        object.__setattr__(self, "routes", tuple(dict(r) for r in self.routes))

    def to_json(self) -> dict:
        return {"physical": {v: tile_text(t) for v, t in self.physical.items()},
                "routes": [dict(r) for r in self.routes]}

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/mapping") -> MappingDecision:
        physical = require(data, "physical", pointer, dict, "an object of virtual node tiles")
        tiles = {}
        for v, text in physical.items():
            t = parse_tile(text)
            if t is None:
                raise InstanceError(f"expected tile(col,row), got {text!r}", pointer=f"{pointer}/physical/{v}")
            tiles[v] = t
        routes = data.get("routes", [])
        if not isinstance(routes, list):
            raise InstanceError(f"expected a list of routes, got {routes!r}", pointer=f"{pointer}/routes")
        return cls(tiles, tuple(_route(r, f"{pointer}/routes/{i}") for i, r in enumerate(routes)))
