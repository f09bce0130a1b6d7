"""Target platforms: FPGA slots and links, an NPU tile array, or a reconfigurable dataflow array.

Presets live as JSON data files beside this module (``platforms/<name>.json``), each with a
``source`` field citing where its numbers come from.

>>> p = load_preset("u55c")
>>> [s.name for s in p.slots], p.kind
(['SLR0', 'SLR1', 'SLR2'], 'fpga')
>>> capstan = load_preset("capstan")
>>> capstan.kind, capstan.rda["lanes"], capstan.rda["banks"]
('rda', 16, 16)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

PRESET_NAMES = ("u55c", "u280", "u280_grid", "vck190", "npu1", "npu2", "capstan")


@dataclass(frozen=True)
class Slot:
    name: str
    x: int = 0
    y: int = 0
    resources: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    wires: int


@dataclass
class Platform:
    """A target. FPGA: ``slots``, ``links``, ``memory`` (block geometries), ``onchip_bytes``, and
    ``build`` for the Vitis flow: ``part``, ``vitis_platform``, ``clock_mhz``, the external memory
    ``banks`` (``[{"name": "HBM", "count": 32}, ...]``, Vitis's ``HBM[i]`` / ``DDR[i]``) and
    ``max_interfaces_per_bank``. NPU: ``npu`` holds the tile grid, per-tile memory and DMA
    channels. RDA (a reconfigurable dataflow array such as Capstan): ``rda`` holds the compute and
    memory unit counts, SIMD lanes, words and banks per memory unit, the units that take sparse
    updates, the word size, DRAM words per cycle, latency and burst, and the clock."""

    name: str
    kind: str  # fpga | npu | rda
    slots: list[Slot] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    onchip_bytes: int | None = None
    memory: dict = field(default_factory=dict)
    npu: dict = field(default_factory=dict)
    rda: dict = field(default_factory=dict)
    source: str = ""
    build: dict = field(default_factory=dict)

    def slot(self, name: str) -> Slot:
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(name)

    def total(self, kind: str) -> float:
        return sum(s.resources.get(kind, 0) for s in self.slots)

    @classmethod
    def from_dict(cls, d: dict, name: str = "inline") -> Platform:
        return cls(
            name=d.get("name", name),
            kind=d["kind"],
            slots=[Slot(s["name"], s.get("x", 0), s.get("y", 0), dict(s.get("resources", {})))
                   for s in d.get("slots", [])],
            links=[Link(ln["a"], ln["b"], ln["wires"]) for ln in d.get("links", [])],
            onchip_bytes=d.get("onchip_bytes"),
            memory=dict(d.get("memory", {})),
            npu=dict(d.get("npu", {})),
            rda=dict(d.get("rda", {})),
            source=d.get("source", ""),
            build=dict(d.get("build", {})),
        )

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.slots:
            out["slots"] = [{"name": s.name, "x": s.x, "y": s.y, "resources": dict(s.resources)}
                            for s in self.slots]
        if self.links:
            out["links"] = [{"a": ln.a, "b": ln.b, "wires": ln.wires} for ln in self.links]
        if self.onchip_bytes is not None:
            out["onchip_bytes"] = self.onchip_bytes
        if self.memory:
            out["memory"] = self.memory
        if self.npu:
            out["npu"] = self.npu
        if self.rda:
            out["rda"] = self.rda
        if self.source:
            out["source"] = self.source
        if self.build:
            out["build"] = self.build
        return out


def load_preset(name: str) -> Platform:
    """The named preset platform; raises KeyError for an unknown name."""
    if name not in PRESET_NAMES:
        raise KeyError(name)
    text = resources.files("dfopt.ir").joinpath("platforms").joinpath(f"{name}.json").read_text()
    return Platform.from_dict(json.loads(text), name=name)
