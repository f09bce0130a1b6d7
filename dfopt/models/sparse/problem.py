"""The problem data of a sparse kernel, built once: tensors loaded and stored in their formats,
the concrete index notation, the primitive graph and one token-level run of it.

The run is made with every join by bit vectors (the method changes only how a join's primitives
count their work, not what any array sees), and its counts are the statistics every formulation
and the checker's estimate read (:mod:`.cost`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dfopt.errors import InstanceError, ResourceLimitError
from dfopt.ir.sparse import data as sparse_data
from dfopt.ir.sparse.notation import accesses
from dfopt.ir.sparse.statement import SparseStatement
from dfopt.ir.sparse.tensor import SparseTensor
from dfopt.models.sparse.machine import Machine, machine


@dataclass
class SparseData:
    """What :func:`prepare` builds (see the module docstring)."""

    statement: SparseStatement
    operands: dict                 # name -> Coo (canonical)
    tensors: dict                  # name -> SparseTensor (operands)
    dims: dict                     # index -> size
    concrete: Any
    sim: Any                       # SimResult of the bit-vector graph
    machine: Machine
    regions: dict                  # array -> off_chip | on_chip
    ws_formats: dict               # array -> dense | sparse for accumulator arrays
    inner_choices: tuple
    outer_choices: tuple
    vloop: str | None = None       # the loop whose primitives run on the inner factor's lanes
    bulk: frozenset = frozenset()  # arrays a bulk_load / bulk_store command puts into SRAM copies
    sim_seconds: float = 0.0
    baseline: Any = None
    baseline_estimate: Any = None
    extra: dict = field(default_factory=dict)
    graph: Any = None              # the primitive graph ``sim`` ran


def load_operands(statement: SparseStatement, base_dir: Path) -> dict:
    """Every operand's data as a canonical :class:`Coo` (faults at its ``data`` pointer). A random
    operand without a ``shape`` takes its extents from the operands loaded before it."""
    out: dict = {}
    access = {a.tensor: a.indices for a in accesses(statement.assignment.rhs)}

    def shapeless(name: str) -> bool:
        spec = statement.tensors[name].data
        return (statement.tensors[name].shape is None and isinstance(spec, dict) and "random" in spec
                and isinstance(spec["random"], dict) and "shape" not in spec["random"])

    order = sorted(statement.operands, key=shapeless)
    for name in order:
        decl, pointer = statement.tensors[name], f"/sparse/tensors/{name}/data"
        shape = decl.shape
        if shapeless(name):
            known = {i: out[t].shape[m] for t in out for m, i in enumerate(access[t])}
            missing = [i for i in access[name] if i not in known]
            if missing:
                raise InstanceError(f"random operand {name!r} has no shape and no other operand gives the size of "
                                    f"index {missing[0]!r}; give random.shape", pointer=pointer)
            shape = tuple(known[i] for i in access[name])
        out[name] = sparse_data.load(decl.data, base_dir, len(access[name]), shape, pointer)
    return {name: out[name] for name in statement.operands}


def index_dims(statement: SparseStatement, operands: dict) -> dict:
    """Index -> size from the operands' shapes (and a declared result shape); a disagreement is
    bad input naming the index and both tensors."""
    dims: dict = {}
    seen: dict = {}
    for a in accesses(statement.assignment.rhs):
        for mode, index in enumerate(a.indices):
            size = operands[a.tensor].shape[mode]
            if index in dims and dims[index] != size:
                other, omode = seen[index]
                raise InstanceError(f"index {index!r} has size {dims[index]} in {other} (mode {omode}) but {size} in "
                                    f"{a.tensor} (mode {mode})", pointer=f"/sparse/tensors/{a.tensor}/data")
            dims.setdefault(index, size)
            seen.setdefault(index, (a.tensor, mode))
    result = statement.tensors[statement.result]
    lhs = statement.assignment.lhs.indices
    if result.shape is not None:
        for mode, (index, size) in enumerate(zip(lhs, result.shape)):
            if dims[index] != size:
                raise InstanceError(f"result {statement.result!r} declares size {size} for index {index!r} (mode "
                                    f"{mode}); the operands give {dims[index]}",
                                    pointer=f"/sparse/tensors/{statement.result}/shape")
    return dims


def _concrete(statement: SparseStatement, dims: dict):
    from dfopt.ir.sparse.concrete import concretize

    formats = {n: t.format for n, t in statement.tensors.items()}
    workspaces = {w.index: {"name": w.name, "format": w.format} for w in statement.workspaces}
    try:
        return concretize(statement.assignment, formats, dims, reorder=list(statement.reorder)
                          if statement.reorder else None, workspaces=workspaces or None)
    except ValueError as err:
        raise InstanceError(str(err), pointer=_schedule_pointer(statement)) from err


def _schedule_pointer(statement: SparseStatement) -> str:
    """Where a loop-order fault points: the last ``reorder`` command, else the tensors' formats."""
    commands = statement.raw.get("schedule", []) if isinstance(statement.raw, dict) else []
    at = [n for n, c in enumerate(commands) if isinstance(c, dict) and c.get("command") == "reorder"]
    if at:
        return f"/sparse/schedule/{at[-1]}/order"
    return "/sparse/schedule" if statement.workspaces else "/sparse/tensors"


def store(statement: SparseStatement, operands: dict) -> dict:
    """Each operand in its level format (a dense expansion too large is refused with its size)."""
    out = {}
    for name, coo in operands.items():
        try:
            out[name] = SparseTensor.from_coo(name, coo, statement.tensors[name].format)
        except ValueError as err:
            raise ResourceLimitError(str(err), pointer=f"/sparse/tensors/{name}/format", part="positions") from err
    return out


def regions_of(statement: SparseStatement, concrete: Any, sim: Any) -> tuple[dict, dict]:
    """Array -> region of its tensor, and array -> workspace format for accumulator arrays."""
    ws = {acc.name: acc for acc in concrete.accumulators}
    regions, formats = {}, {}
    for name, facts in sim.arrays.items():
        tensor = facts.tensor
        if tensor in ws:
            regions[name] = next((w.region for w in statement.workspaces if w.name == tensor), "on_chip")
            formats[name] = ws[tensor].format
        else:
            regions[name] = statement.tensors[tensor].region
    return regions, formats


def build(statement: SparseStatement, base_dir: Path, platform: Any, methods: dict | None = None) -> SparseData:
    """The problem data (also what the checker rebuilds, with the decision's ``methods``)."""
    from dfopt.ir.sparse.sam import lower
    from dfopt.sim.sparse import simulate

    m = machine(platform)
    operands = load_operands(statement, base_dir)
    dims = index_dims(statement, operands)
    concrete = _concrete(statement, dims)
    tensors = store(statement, operands)
    graph = lower(concrete, methods or {j: "bitvector" for j in _join_names(concrete)}, word_bits=m.word_bits)
    start = time.perf_counter()
    sim = simulate(graph, tensors)
    seconds = time.perf_counter() - start
    regions, ws_formats = regions_of(statement, concrete, sim)
    inner = m.par_choices(statement.inner_par)
    outer = m.par_choices(statement.outer_par or 1)
    vloop, bulk = schedule_effects(statement, concrete, sim)
    return SparseData(statement, operands, tensors, dims, concrete, sim, m, regions, ws_formats, inner, outer,
                      vloop=vloop, bulk=bulk, sim_seconds=seconds, graph=graph)


LANE_PATTERNS = ("reduce", "foreach", "vector_mul")


def schedule_effects(statement: SparseStatement, concrete: Any, sim: Any) -> tuple[str | None, frozenset]:
    """What ``accelerate`` / ``map`` commands change: the vectorised loop (the last loop mapped onto
    a lane pattern — ``reduce``, ``foreach``, ``vector_mul`` —, else the innermost) and the arrays
    whose transfers at a loop mapped onto ``bulk_load`` (operands read there) or ``bulk_store``
    (the result written there) must be bulk copies into SRAM."""
    loops = concrete.loops
    vloop = loops[-1] if loops else None
    for index, pattern in statement.patterns.items():
        if pattern in LANE_PATTERNS:
            vloop = index
    bulk = set()
    for name, f in sim.arrays.items():
        pattern = statement.patterns.get(f.loop)
        if (pattern == "bulk_load" and f.role == "read") or (pattern == "bulk_store" and f.role == "write"):
            bulk.add(name)
    return vloop, frozenset(bulk)


def _join_names(concrete: Any) -> list:
    return list(concrete.needs_method)
