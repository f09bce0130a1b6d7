"""The converter decision: for every stream that needs one, the reordering buffer.

>>> d = Converters.from_json({"converters": {"e": {"bytes": 128, "source": "types", "shape": [8, 2],
...                                                  "shared_loops": 1, "reuse": 4}}})
>>> d.converters["e"].shape, d.total_bytes
((8, 2), 128)
>>> try:
...     Converters.from_json({"converters": {"e": {"bytes": 128, "source": "types"}}})
... except InstanceError as err:
...     print(err)
/converter/converters/e/shape: missing the buffer shape (elements per dimension)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.models.base import Decision, frozen_map, require, require_int

SOURCES = ("types", "explicit", "none")
MAX_BYTES = 1 << 50


@dataclass(frozen=True)
class ConverterEntry:
    """One stream's converter: ``bytes`` (both ping-pong halves), where it comes from
    (``types``: Algorithm 1; ``explicit``: the stream's ``converter_bytes``), and for ``types``
    the buffer ``shape``, the ``shared_loops`` and the rest of Algorithm 1's answer (``extra``)."""

    bytes: int
    source: str
    shape: tuple | None = None
    shared_loops: int | None = None
    extra: Mapping = field(default_factory=dict)

    def to_json(self) -> dict:
        d: dict = {"bytes": self.bytes, "source": self.source}
        if self.shape is not None:
            d.update(self.extra)
            d["shape"] = list(self.shape)
            d["shared_loops"] = self.shared_loops
        return d

    @classmethod
    def from_json(cls, data: object, pointer: str) -> ConverterEntry:
        if not isinstance(data, dict):
            raise InstanceError(f"expected a converter object, got {data!r}", pointer=pointer)
        nbytes = require_int(data, "bytes", pointer, minimum=0, maximum=MAX_BYTES)
        source = data.get("source", "types" if "shape" in data else "explicit")
        if source not in SOURCES:
            raise InstanceError(f"expected a source among {', '.join(SOURCES)}, got {source!r}",
                                pointer=f"{pointer}/source")
        if source != "types":
            return cls(nbytes, source)
        if "shape" not in data:
            raise InstanceError("missing the buffer shape (elements per dimension)", pointer=f"{pointer}/shape")
        shape = require(data, "shape", pointer, list, "a list of positive integers")
        for i, n in enumerate(shape):
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_BYTES:
                raise InstanceError(f"expected a positive integer, got {n!r}", pointer=f"{pointer}/shape/{i}")
        shared = require_int(data, "shared_loops", pointer, minimum=0, maximum=64)
        extra = {k: v for k, v in data.items() if k not in ("bytes", "source", "shape", "shared_loops")}
        return cls(nbytes, source, tuple(shape), shared, frozen_map(extra))


@dataclass(frozen=True)
class Converters(Decision):
    """Stream name -> :class:`ConverterEntry`, for the streams that need a converter."""

    section: ClassVar[str] = "converter"
    converters: Mapping[str, ConverterEntry]

    def __post_init__(self) -> None:
        object.__setattr__(self, "converters", frozen_map(self.converters))

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.converters.values())

    def to_json(self) -> dict:
        return {"converters": {n: c.to_json() for n, c in self.converters.items()}}

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/converter") -> Converters:
        entries = require(data, "converters", pointer, dict, "an object of stream converters")
        return cls({n: ConverterEntry.from_json(e, f"{pointer}/converters/{n}") for n, e in entries.items()})
