"""The whole Spatial app of a bound, scheduled sparse statement: the host's DRAMs (one per off-chip
array, sized from the stored tensors), ``setMem`` of the operands' arrays from CSV files, the
``Accel`` block (:mod:`.kernel`) and ``getMem`` of the result's arrays.

>>> import dfopt
>>> from dfopt.api import make_options
>>> from dfopt.models.sparse import prepare
>>> inst = dfopt.load("instances/sparse/spmv-karate.json")
>>> data = prepare(inst, make_options(inst))
>>> text = spatial_program(data, data.baseline, "spmv-karate")
>>> [line.strip() for line in text.splitlines() if "DRAM[" in line][:2]
['val A_1_pos_dram = DRAM[Int](35)', 'val A_1_crd_dram = DRAM[Int](156)']
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from dfopt.codegen.spatial.kernel import Kernel
from dfopt.codegen.spatial.layout import Layout, Placement, placement
from dfopt.codegen.spatial.memory import SPATIAL, ArrayPlan
from dfopt.codegen.spatial.text import Block, object_name
from dfopt.io import StrPath, write_text_atomic


def array_plans(data: Any, design: Any, layout: Layout) -> tuple[dict[str, ArrayPlan], dict[str, Placement]]:
    """Every array's :class:`~.memory.ArrayPlan` and :class:`~.layout.Placement` under ``design``."""
    plans, places = {}, {}
    for name, facts in data.sim.arrays.items():
        b = design.binding[name]
        nests = layout.nests(facts.tensor, data.concrete.operands)
        pl = placement(layout, facts, b, nests)
        elem = "Int" if facts.kind in ("pos", "crd") else "T"
        plans[name] = ArrayPlan(name, facts.kind, facts.role, b.memory, elem, data.regions[name] == "off_chip",
                                pl.size)
        places[name] = pl
    return plans, places


def dram_words(data: Any, name: str) -> int:
    """The words of an array's DRAM: its stored tensor's array (the result's as the run wrote it)."""
    facts = data.sim.arrays[name]
    part = name[len(facts.tensor) + 1:]
    tensor = data.tensors.get(facts.tensor)
    if tensor is None and facts.tensor == data.statement.result:
        tensor = data.sim.output
    if tensor is not None and part in tensor.arrays():
        return max(1, len(tensor.arrays()[part]))
    return max(1, int(facts.length))


def value_type(data: Any) -> str:
    """``Int`` when every operand's values are integers, else ``Float``."""
    kinds = {t.vals.dtype.kind for t in data.tensors.values()}
    return "Int" if kinds <= {"i", "u", "b"} else "Float"


def _header(data: Any, design: Any, name: str) -> list[str]:
    c = data.concrete
    joins = ", ".join(f"{j} {m}" for j, m in design.coiteration.items()) or "none"
    return ["import spatial.dsl._", "",
            f"// {data.statement.expression}",
            f"// written by dfopt from a bound, scheduled sparse statement ({name}); loops ({', '.join(c.loops)}),",
            f"// vectorised loop {data.vloop}, par inner {design.inner_par} outer {design.outer_par}; "
            f"co-iteration: {joins}",
            "// arrays are read from and written to CSV files in the folder given as the first argument"]


def _host(block: Block, data: Any, plans: dict[str, ArrayPlan]) -> None:
    block.line("val data = args(0)")
    off = [p for p in plans.values() if p.off_chip]
    for p in off:
        block.line(f"val {p.dram} = DRAM[{p.elem}]({dram_words(data, p.name)})")
    for p in off:
        if data.sim.arrays[p.name].tensor != data.statement.result and p.role == "read":
            block.line(f'setMem({p.dram}, loadCSV1D[{p.elem}](data + "/{p.id}.csv", "\\n"))')


def _results(block: Block, data: Any, plans: dict[str, ArrayPlan]) -> None:
    for p in plans.values():
        if p.off_chip and data.sim.arrays[p.name].tensor == data.statement.result:
            block.line(f'writeCSV1D(getMem({p.dram}), data + "/{p.id}.out.csv", "\\n")')


def spatial_program(data: Any, design: Any, name: str) -> str:
    """The Scala text of the Spatial app (``@spatial object <Name> extends SpatialApp``) of prepared
    sparse ``data`` (:func:`dfopt.models.sparse.prepare`) under ``design`` (a
    :class:`~dfopt.models.sparse.decision.SparseDesign`); ``name`` gives the object's name."""
    layout = Layout.of(data.concrete)
    plans, places = array_plans(data, design, layout)
    app = Block(f"@spatial object {object_name(name)} extends SpatialApp {{")
    app.line(f"type T = {value_type(data)}")
    app.line("")
    main = app.block("def main(args: Array[String]): Unit = {")
    _host(main, data, plans)
    accel = main.block("Accel {")
    Kernel(data, design, plans, places, layout).accel(accel)
    _results(main, data, plans)
    return "\n".join(_header(data, design, name) + app.render()) + "\n"


def summary(text: str, data: Any, design: Any) -> dict:
    """Counts of the program: memories declared per kind, loops, joins by method, lines."""
    kinds: Counter = Counter()
    for line in text.splitlines():
        for spatial in SPATIAL.values():
            if f" = {spatial}[" in line:
                kinds[spatial] += 1
    return {"memories": dict(kinds), "loops": text.count("// loop "), "joins": dict(design.coiteration),
            "lines": len(text.splitlines())}


def write_spatial(data: Any, design: Any, out: StrPath, name: str) -> dict:
    """Write the Spatial app to ``out`` (a ``.scala`` file, or a folder: ``<out>/<name>.scala``)
    atomically; returns its ``path``, ``faults`` (:func:`~.check.check_program`, empty when the
    program is consistent with the design) and the :func:`summary`."""
    from dfopt.codegen.spatial.check import check_program

    path = Path(out)
    if path.suffix != ".scala":
        path = path / f"{name}.scala"
    text = spatial_program(data, design, name)
    write_text_atomic(path, text)
    return {"path": str(path), "faults": check_program(text, data, design), **summary(text, data, design)}
