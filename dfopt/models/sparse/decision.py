"""The sparse-kernel decision: where every array lives, how every join co-iterates, and the
parallelisation factors.

>>> d = SparseDesign.from_json({"binding": {"A.1.crd": {"memory": "fifo", "depth": 2},
...                                         "x.vals": {"memory": "sram", "depth": 0, "pmus": 1}},
...                             "coiteration": {}, "par": {"inner": 16, "outer": 1}})
>>> d.binding["x.vals"], d.inner_par
(ArrayBinding(memory='sram', depth=0, pmus=1), 16)
>>> try:
...     SparseDesign.from_json({"binding": {"x.vals": {"memory": "hbm", "depth": 0}}, "coiteration": {},
...                             "par": {"inner": 1, "outer": 1}})
... except InstanceError as err:
...     print(err)
/sparse/binding/x.vals/memory: unknown memory 'hbm' (expected one of: dram, sram, sparse_sram, fifo, reg)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from dfopt.errors import InstanceError
from dfopt.models.base import Decision, frozen_map, require, require_int, require_names

#: where an array can live (Stardust's memories on Capstan)
MEMORIES = ("dram", "sram", "sparse_sram", "fifo", "reg")
#: how the inputs of a join co-iterate
METHODS = ("merge", "bitvector", "dense")
#: memories that hold an on-chip copy in PMUs
ON_CHIP_COPIES = ("sram", "sparse_sram")


@dataclass(frozen=True)
class ArrayBinding:
    """An array's memory, the loop depth its copy is allocated at (0: before every loop; d: inside
    the first d loops, transferred once per iteration of them) and the PMUs it takes (SRAM kinds)."""

    memory: str
    depth: int
    pmus: int = 0

    def to_json(self) -> dict:
        out: dict = {"memory": self.memory, "depth": self.depth}
        if self.pmus:
            out["pmus"] = self.pmus
        return out


@dataclass(frozen=True)
class SparseDesign(Decision):
    """Array name (``A.1.crd``, ``A.vals``, ``w_k.vals``) -> :class:`ArrayBinding`; join name ->
    co-iteration method; the inner (lanes) and outer parallelisation factors."""

    section: ClassVar[str] = "sparse"
    binding: Mapping[str, ArrayBinding]
    coiteration: Mapping[str, str]
    inner_par: int = 1
    outer_par: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "binding", frozen_map(self.binding))
        object.__setattr__(self, "coiteration", frozen_map(self.coiteration))

    def to_json(self) -> dict:
        return {"binding": {k: v.to_json() for k, v in self.binding.items()},
                "coiteration": dict(self.coiteration),
                "par": {"inner": self.inner_par, "outer": self.outer_par}}

    @classmethod
    def from_json(cls, data: dict, pointer: str = "/sparse") -> SparseDesign:
        raw = require(data, "binding", pointer, dict, "an object of array bindings")
        binding = {}
        for name, entry in raw.items():
            at = f"{pointer}/binding/{name}"
            if not isinstance(entry, dict):
                raise InstanceError("expected an object {memory, depth, pmus}", pointer=at)
            memory = require(entry, "memory", at, str, "a memory name")
            if memory not in MEMORIES:
                raise InstanceError(f"unknown memory {memory!r} (expected one of: {', '.join(MEMORIES)})",
                                    pointer=f"{at}/memory")
            binding[name] = ArrayBinding(memory, require_int(entry, "depth", at, minimum=0),
                                         require_int(entry, "pmus", at, minimum=0) if "pmus" in entry else 0)
        methods = require_names(data, "coiteration", pointer, "co-iteration methods")
        for name, method in methods.items():
            if method not in METHODS:
                raise InstanceError(f"unknown co-iteration method {method!r} (expected one of: {', '.join(METHODS)})",
                                    pointer=f"{pointer}/coiteration/{name}")
        par = require(data, "par", pointer, dict, "an object {inner, outer}")
        return cls(binding, methods, require_int(par, "inner", f"{pointer}/par", minimum=1),
                   require_int(par, "outer", f"{pointer}/par", minimum=1))
