"""Stardust's fixed rules as a design: the baseline the solved model is measured against.

As Stardust's public code binds memories and co-iterates (the ``spatial`` branch of TACO):

- every join of two compressed levels co-iterates by **bit vectors** (a join with a dense input
  iterates the dimension densely);
- **pos** arrays go to SRAM, sized ``nnz_accel_max / 4`` words (at least their segment), at the
  loop that reads them;
- **crd** and **vals** of an off-chip tensor stream from their region through a FIFO when they are
  read once in order, and a gathered one is copied whole into SRAM (Stardust's user schedule
  precomputes it on chip); on-chip tensors' arrays live in SRAM;
- the result is written through FIFOs when written in order; a workspace is an SRAM (dense) or a
  sparse SRAM (sparse) at the loop that accumulates it; scalars in registers;
- the parallelisation is the environment's (``inner_par``, default one PCU's lanes;
  ``outer_par``, default 1).

>>> rule_memory("pos", "read", True, False, 40, "off_chip", None)
'sram'
>>> rule_memory("vals", "read", False, True, 40, "off_chip", None)
'sram'
"""

from __future__ import annotations

import math
from typing import Any

from dfopt.models.sparse.decision import ArrayBinding, SparseDesign
from dfopt.models.sparse.rules import access_depth, lanes_reading, min_pmus


def rule_memory(kind: str, role: str, in_order: bool, gather: bool, length: int, region: str,
                ws_format: str | None) -> str:
    """The memory Stardust's rules give an array."""
    if length <= 1 and role != "accumulate":
        return "reg"
    if role == "accumulate":
        return "sparse_sram" if ws_format == "sparse" else "sram"
    if kind == "pos" or region == "on_chip":
        return "sram"
    return "fifo" if in_order else "sram"


def stardust_design(data: Any) -> SparseDesign:
    """The baseline design of prepared sparse data (:class:`~.problem.SparseData`)."""
    m, loops = data.machine, data.concrete.loops
    inner = data.inner_choices[-1] if data.statement.inner_par is None else data.statement.inner_par
    inner = min(inner, data.inner_choices[-1])
    outer = 1 if data.statement.outer_par is None else data.statement.outer_par
    outer = min(outer, data.outer_choices[-1])
    binding = {}
    pos_words = max(1, data.statement.nnz_accel_max // 4)
    for name, f in data.sim.arrays.items():
        memory = rule_memory(f.kind, f.role, f.in_order, f.gather, f.length, data.regions[name],
                             data.ws_formats.get(name))
        if name in data.bulk and memory not in ("sram", "sparse_sram"):
            memory = "sram"
        top = access_depth(f.loop, loops)
        if memory in ("sram", "sparse_sram"):
            depth = top if f.kind == "pos" or f.role == "accumulate" else 0
            lanes = lanes_reading(f.loop, data.vloop, inner)
            need = min_pmus(f.segments[depth][0], f.gather, lanes, m.pmu_words, m.banks)
            if f.kind == "pos":
                need = max(need, math.ceil(pos_words / m.pmu_words))
            binding[name] = ArrayBinding(memory, depth, need)
        else:
            binding[name] = ArrayBinding(memory, top, 0)
    methods = {name: "bitvector" if name in data.concrete.needs_method else js.method
               for name, js in data.sim.joiners.items()}
    return SparseDesign(binding, methods, inner, outer)
