"""MLIR-AIE text of an :class:`~dfopt.codegen.aie.design.AieDesign`, in two forms from one plan.

:func:`emit_mlir` writes the custom syntax that ``aie-opt`` / ``aiecc.py`` read;
:func:`emit_generic_mlir` writes the same module in MLIR's generic form
(``"op"(operands) <{properties}> ({regions}) : (types) -> types``), which any MLIR parser reads
without the AIE dialects, e.g. xDSL with unregistered dialects allowed.

Mapping, in the order of the output:

1. ``aie.device(npu1)`` (generic: ``"aie.device"() <{device = 4 : i32}>``, the ``AIEDevice``
   enum value; its block ends with ``"aie.end"``, printed implicitly in the custom form);
2. one ``func.func private @kernel(memref<...>, ..., i32)`` per kernel, the types of
   :func:`~dfopt.codegen.aie.design.kernel_signature`;
3. ``%tile_c_r = aie.tile(c, r)`` per tile, named as mlir-aie prints them (``shim_noc_tile``,
   ``mem_tile``, ``tile``; ``shim_pl_tile`` in a column without shim DMA);
4. ``aie.objectfifo @f(%producer, {%consumers}, depth : i32) : !aie.objectfifo<memref<...>>``
   (generic properties ``sym_name``, ``elemNumber``, ``elemType`` and the empty data layouts
   ``dimensionsToStream`` / ``dimensionsFromStreamPerConsumer``, one ``[]`` per consumer);
5. ``aie.objectfifo.link [@in] -> [@out0, @out1]([src_offsets] [dst_offsets])``;
6. per core ``%core_c_r = aie.core(%tile_c_r) { %c0, %cN, %c1 = arith.constant ... : index;
   scf.for %arg0 = %c0 to %cN step %c1 { acquire + subview.access per FifoAccess (Consume /
   Produce, count), the i32 scalars, func.call @kernel(objects..., scalars...), release per
   FifoAccess } aie.end } {link_with = "kernel.o"}``; a core with steps has one such body per
   step, one after another (in an ``scf.for`` of its own when the step repeats a multiple of its
   FIFOs' depths, else written out call by call: :meth:`_Plan.pieces`), each calling its step's
   kernel, the objects numbered across the core;
7. ``aie.runtime_sequence @sequence(%arg0: memref<...>, ...) { aiex.npu.dma_memcpy_nd(
   %arg0[offsets][sizes][strides]) {id = n : i64, issue_token = true, metadata = @fifo} :
   memref<...>; aiex.npu.dma_wait {symbol = @fifo} }``, the arguments in ``Runtime.buffers``
   order (a comment names them); ``aiex.runtime_sequence`` for an mlir-aie up to 2025-11-17
   (``mlir_aie_version``, :func:`runtime_sequence_op`), each transfer within the shim buffer
   descriptor's limits (:mod:`dfopt.codegen.aie.bd`, checked by the validator).

Syntax followed (mlir-aie as of 2025; the runtime sequence's dialect by ``mlir_aie_version``):
Xilinx/mlir-aie ``include/aie/Dialect/AIE/IR/AIEOps.td`` (commit 2741ca50: op formats and
property names), ``include/aie/Dialect/AIEX/IR/AIEX.td`` (97737142: ``runtime_sequence``,
``npu.dma_memcpy_nd`` without the old ``(x, y)`` operands, ``npu.dma_wait``),
``include/aie/Dialect/AIE/IR/AIEAttrs.td`` (a3897048: ``npu1`` = 4, ``npu2`` = 8,
``Produce`` = 0, ``Consume`` = 1), ``test/npu-xrt/add_one_objFifo/aie.mlir`` (acquire,
``subview.access`` and release in an ``scf.for`` of an ``aie.core``); the IRON output of the
softmax example as kept in hunhoffe/mlir-aie
``programming_examples/analysis/2025-01-09_21-47-11/iron_ext_mlir/VSoftMax.mlir`` (declarations
first, distribute ``([] [0, 1024])`` and join ``([0, 1024] [])`` links, ``%c1024_i32`` scalars,
``{link_with = ...}``); generic forms as in xdslproject/xdsl-aie
``tests/filecheck/dialects/aie/objectfifo_ops.mlir`` and ``tests/filecheck/dialects/aiex/ops.mlir``.

Not emitted: packet flows and packet-switched FIFOs, cascade (``aie.cascade_flow``,
``put/get_cascade``), data layout transformations (``dimensionsToStream`` /
``dimensionsFromStream``, padding), per-endpoint depths, ``repeat_count``, ``via_DMA``, RTP and
other ``aie.buffer``/lock use, trace, nested loops, ``aiex.dma_configure_task_for`` tasks. Later mlir-aie changes
followed: ``aie.runtime_sequence`` (PR #2708, Nov 2025, by ``mlir_aie_version``); not followed:
acquires returning memrefs without a subview and ``link_with`` on the ``func.func`` (2026);
since PR #2397 (Jun 2025) ``npu1`` is the 4-column array (columns 0-3, a shim DMA in each), not
the 5-column preset checked here.

>>> from dfopt.codegen.aie.design import Tile, ObjectFifo
>>> d = AieDesign(tiles=(Tile(1, 0, "shim"), Tile(1, 2, "compute")),
...               fifos=(ObjectFifo("of_in", (1, 0), ((1, 2),), "i32", (16,)),))
>>> print(*emit_mlir(d).splitlines()[2:], sep=chr(10))  # after the two header comment lines
module {
  aie.device(npu1) {
    %shim_noc_tile_1_0 = aie.tile(1, 0)
    %tile_1_2 = aie.tile(1, 2)
    aie.objectfifo @of_in(%shim_noc_tile_1_0, {%tile_1_2}, 2 : i32) : !aie.objectfifo<memref<16xi32>>
  }
}
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from dfopt.codegen.aie.checks import validate
from dfopt.codegen.aie.design import AieDesign, Core, DmaWait, Runtime, bank_fallbacks, kernel_signature
from dfopt.errors import CodegenError
from dfopt.io import StrPath, write_text_atomic
from dfopt.ir.platform import PRESET_NAMES, Platform, load_preset

#: ``AIEDevice`` enum values (AIEAttrs.td); the generic form of ``aie.device`` carries the number.
DEVICE_ENUM = {"npu1": 4, "npu2": 8}
PORT_ENUM = {"produce": 0, "consume": 1}
PORT_NAMES = {"produce": "Produce", "consume": "Consume"}
HEADER = ("// Generated by dfopt.codegen.aie from an AieDesign.\n"
          "// Syntax of mlir-aie {version} ({sequence}, npu.dma_memcpy_nd without (x, y)).\n")
#: mlir-aie moved the runtime sequence from the AIEX dialect to AIE after this snapshot (commit
#: a7df6e13b, 2025-11-18, "Promote runtime_sequence to aie dialect", PR #2708).
LAST_AIEX_SEQUENCE = "2025-11-17"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")


def runtime_sequence_op(version: str = "latest") -> str:
    """The runtime sequence op of mlir-aie ``version`` (``latest`` or a snapshot date).

    >>> runtime_sequence_op("2025-11-17"), runtime_sequence_op("latest"), runtime_sequence_op("2026-02-01")
    ('aiex.runtime_sequence', 'aie.runtime_sequence', 'aie.runtime_sequence')
    """
    if version == "latest":
        return "aie.runtime_sequence"
    if not isinstance(version, str) or not _DATE.match(version):
        raise CodegenError(f"mlir_aie_version: expected 'latest' or a date YYYY-MM-DD, got {version!r}")
    return "aiex.runtime_sequence" if version <= LAST_AIEX_SEQUENCE else "aie.runtime_sequence"


def _notes(design: AieDesign, platform: Platform | None) -> list[str]:
    """Comment lines for the builder's notes and what mlir-aie will do differently from the plan
    (bank fallbacks)."""
    return [f"// note: {n}" for n in (*design.notes, *bank_fallbacks(design, platform))]


def _header(version: str) -> str:
    return HEADER.format(version=version, sequence=runtime_sequence_op(version))


IND = "  "
#: One line per loop-body step of :meth:`_Plan.body`, in the custom syntax and in the generic form.
STEPS_CUSTOM = {
    "acquire": "{res} = aie.objectfifo.acquire @{fifo}({port_name}, {count}) : {sub}",
    "access": "{res} = aie.objectfifo.subview.access {view}[{i}] : {sub} -> {elem}",
    "scalar": "{res} = arith.constant {value} : i32",
    "call": "func.call @{kernel}({names}) : ({types}) -> ()",
    "release": "aie.objectfifo.release @{fifo}({port_name}, {count})",
}
STEPS_GENERIC = {
    "acquire": ('{res} = "aie.objectfifo.acquire"() <{{objFifo_name = @{fifo}, port = {port_enum} : i32, '
                "size = {count} : i32}}> : () -> {sub}"),
    "access": '{res} = "aie.objectfifo.subview.access"({view}) <{{index = {i} : i32}}> : ({sub}) -> {elem}',
    "scalar": '{res} = "arith.constant"() <{{value = {value} : i32}}> : () -> i32',
    "call": '"func.call"({names}) <{{callee = @{kernel}}}> : ({types}) -> ()',
    "release": ('"aie.objectfifo.release"() <{{objFifo_name = @{fifo}, port = {port_enum} : i32, '
                "size = {count} : i32}}> : () -> ()"),
}


# -- the plan shared by both printers --------------------------------------------------------------

class _Plan:
    """SSA names and orderings of one design, so both printers say the same thing."""

    def __init__(self, design: AieDesign, platform: Platform | None) -> None:
        if platform is None and design.device in PRESET_NAMES:
            platform = load_preset(design.device)
        no_dma = set(platform.npu.get("shim_tile", {}).get("no_dma_columns", [])) if platform else set()
        self.design = design
        self.fifos = {f.name: f for f in design.fifos}
        self.tile: dict[tuple[int, int], str] = {}
        for t in design.tiles:
            name = t.name
            if t.kind == "shim" and t.col in no_dma:
                name = f"shim_pl_tile_{t.col}_{t.row}"
            self.tile[t.coord] = name
        self.kernels: dict[str, tuple] = {}
        for c in design.cores:
            for call, _ in c.schedule():
                self.kernels.setdefault(call.kernel, kernel_signature(design, call))

    def loop_constants(self, core: Core) -> list[tuple[str, int]]:
        """``(name, value)`` of the index constants ``0``, the loop counts, ``1``, deduplicated."""
        out: dict[str, int] = {}
        counts = [n for n, looped, _ in self.program(core)[1] if looped]
        for v in (0, *counts, 1):
            out.setdefault(f"c{v}", v)
        return list(out.items())

    def program(self, core: Core) -> tuple[list, list[tuple[int, bool, list]]]:
        """What a core's region holds before its calls (the scalar constants of a core with steps)
        and its pieces, ``(count, in a loop, body)`` each: one loop for a core with one loop body,
        :meth:`pieces` (a loop for those that repeat) for a core with steps."""
        if not core.steps:
            return [], [(core.iterations, True, self.body(core))]
        return self.scalars(core), [(n, n > 1, body) for n, body in self.pieces(core)]

    def pieces(self, core: Core) -> list[tuple[int, list]]:
        """A core with steps: ``(repeat, body)`` per piece, in order, the objects numbered across
        the core (the core's scalar constants come first, :meth:`scalars`). A step repeats in a
        loop only when its count is a multiple of the least common multiple of its FIFOs' depths:
        mlir-aie's object-FIFO transform unrolls every loop that acquires by that multiple
        (``unrollForLoops``) and, in the 2025-11-17 snapshot, crashes on the remainder and on loops
        it unrolls fully; any other step is written out call by call."""
        out, n = [], 0
        for call, repeat in core.schedule():
            lcm = math.lcm(*(self.fifos[a.fifo].depth for a in call.accesses))
            times, count = (1, repeat) if repeat > 1 and repeat % lcm == 0 and repeat > lcm else (repeat, 1)
            for _ in range(times):
                body = self.body(call, n, scalars=False)
                n += sum(1 for kind, _ in body if kind in ("acquire", "access"))
                out.append((count, body))
        return out

    def scalars(self, core: Core) -> list[tuple[str, dict]]:
        return [("scalar", dict(res=f"%c{v}_i32", value=v)) for v in dict.fromkeys(core.scalars)]

    def body(self, core: Core, n: int = 0, scalars: bool = True) -> list[tuple[str, dict]]:
        """The loop body as ``(kind, fields)`` steps, the fields of the ``STEPS_*`` line of that
        kind; objects are named ``%n, %n+1, ...`` (``scalars``: with the scalar constants)."""
        steps: list[tuple[str, dict]] = []
        args = []
        for a in core.accesses:
            f = self.fifos[a.fifo]
            sub = f"!aie.objectfifosubview<{f.element_type}>"
            steps.append(("acquire", dict(_port(a), res=f"%{n}", sub=sub)))
            view, n = f"%{n}", n + 1
            for i in range(a.count):
                steps.append(("access", dict(res=f"%{n}", view=view, i=i, sub=sub, elem=f.element_type)))
                args.append((f"%{n}", f.element_type))
                n += 1
        if scalars:
            steps += self.scalars(core)
        args += [(f"%c{v}_i32", "i32") for v in core.scalars]
        steps.append(("call", dict(kernel=core.kernel, names=", ".join(name for name, _ in args),
                                   types=", ".join(t for _, t in args))))
        steps += [("release", _port(a)) for a in core.accesses]
        return steps


def _port(a) -> dict:
    """The fields that name one FIFO access: fifo, its port (name and enum value), count."""
    return dict(fifo=a.fifo, port_name=PORT_NAMES[a.port], port_enum=PORT_ENUM[a.port], count=a.count)


def _check(design: AieDesign, platform: Platform | None, check: bool) -> _Plan:
    if check:
        validate(design, platform)
    if design.device not in DEVICE_ENUM:
        raise CodegenError(f"device {design.device!r} has no AIEDevice value; expected one of {sorted(DEVICE_ENUM)}")
    return _Plan(design, platform)


def _arg_comment(design: AieDesign) -> list[str]:
    if design.runtime is None or not design.runtime.buffers:
        return []
    names = ", ".join(f"%arg{i} = {b.name}" for i, b in enumerate(design.runtime.buffers))
    return [f"// runtime sequence arguments: {names}"]


def _ints(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


# -- custom syntax ---------------------------------------------------------------------------------

def emit_mlir(design: AieDesign, platform: Platform | None = None, *, check: bool = True,
              mlir_aie_version: str = "latest") -> str:
    """The design in mlir-aie's custom syntax (the input of ``aiecc.py``) for ``mlir_aie_version``
    (:func:`runtime_sequence_op`); validated first unless ``check`` is false
    (:class:`CodegenError` lists the problems)."""
    p = _check(design, platform, check)
    d = design
    out = [_header(mlir_aie_version).rstrip("\n"), *_notes(d, platform), *_arg_comment(d), "module {",
           f"{IND}aie.device({d.device}) {{"]
    i2 = IND * 2
    for k, sig in p.kernels.items():
        out.append(f"{i2}func.func private @{k}({', '.join(sig)})")
    for t in d.tiles:
        out.append(f"{i2}%{p.tile[t.coord]} = aie.tile({t.col}, {t.row})")
    for f in d.fifos:
        cons = ", ".join(f"%{p.tile[c]}" for c in f.consumers)
        out.append(f"{i2}aie.objectfifo @{f.name}(%{p.tile[f.producer]}, {{{cons}}}, {f.depth} : i32) : "
                   f"!aie.objectfifo<{f.element_type}>")
    for ln in d.links:
        ins = ", ".join(f"@{n}" for n in ln.inputs)
        outs = ", ".join(f"@{n}" for n in ln.outputs)
        out.append(f"{i2}aie.objectfifo.link [{ins}] -> [{outs}]({_ints(ln.src_offsets)} {_ints(ln.dst_offsets)})")
    for c in d.cores:
        out += _core_custom(p, c, 2)
    if d.runtime is not None:
        out += _runtime_custom(d.runtime, 2, runtime_sequence_op(mlir_aie_version))
    out += [f"{IND}}}", "}"]
    return "\n".join(out) + "\n"


def _core_custom(p: _Plan, core: Core, depth: int) -> list[str]:
    ind, ind1, ind2 = IND * depth, IND * (depth + 1), IND * (depth + 2)
    col, row = core.tile
    out = [f"{ind}%core_{col}_{row} = aie.core(%{p.tile[core.tile]}) {{"]
    consts = p.loop_constants(core)
    out += [f"{ind1}%{name} = arith.constant {v} : index" for name, v in consts]
    prologue, pieces = p.program(core)
    out += [ind1 + STEPS_CUSTOM[kind].format(**fields) for kind, fields in prologue]
    for k, (count, looped, body) in enumerate(pieces):
        if looped:
            out.append(f"{ind1}scf.for %arg{k} = %c0 to %c{count} step %c1 {{")
        out += [(ind2 if looped else ind1) + STEPS_CUSTOM[kind].format(**fields) for kind, fields in body]
        if looped:
            out.append(f"{ind1}}}")
    out += [f"{ind1}aie.end", f'{ind}}} {{link_with = "{core.object_file}"}}']
    return out


def _runtime_custom(rt: Runtime, depth: int, op_name: str = "aie.runtime_sequence") -> list[str]:
    ind, ind1 = IND * depth, IND * (depth + 1)
    args = ", ".join(f"%arg{i}: {b.memref}" for i, b in enumerate(rt.buffers))
    index = {b.name: i for i, b in enumerate(rt.buffers)}
    types = {b.name: b.memref for b in rt.buffers}
    out = [f"{ind}{op_name} @{rt.name}({args}) {{"]
    for op in rt.ops:
        if isinstance(op, DmaWait):
            out.append(f"{ind1}aiex.npu.dma_wait {{symbol = @{op.fifo}}}")
            continue
        attrs = [f"id = {op.id} : i64"] + (["issue_token = true"] if op.issue_token else [])
        attrs.append(f"metadata = @{op.fifo}")
        out.append(f"{ind1}aiex.npu.dma_memcpy_nd(%arg{index[op.buffer]}{_ints(op.offsets)}{_ints(op.sizes)}"
                   f"{_ints(op.strides)}) {{{', '.join(attrs)}}} : {types[op.buffer]}")
    out.append(f"{ind}}}")
    return out


# -- generic form ----------------------------------------------------------------------------------

def emit_generic_mlir(design: AieDesign, platform: Platform | None = None, *, check: bool = True,
                      mlir_aie_version: str = "latest") -> str:
    """The same module in MLIR's generic form, with every op attribute as a property
    (``<{...}>``), as ``aie-opt --mlir-print-op-generic`` prints it."""
    p = _check(design, platform, check)
    d = design
    i2 = IND * 2
    out = [_header(mlir_aie_version).rstrip("\n"), *_arg_comment(d), '"builtin.module"() ({',
           f'{IND}"aie.device"() <{{device = {DEVICE_ENUM[d.device]} : i32}}> ({{']
    for k, sig in p.kernels.items():
        out += [f'{i2}"func.func"() <{{function_type = ({", ".join(sig)}) -> (), sym_name = "{k}", '
                f'sym_visibility = "private"}}> ({{', f"{i2}}}) : () -> ()"]
    for t in d.tiles:
        out.append(f'{i2}%{p.tile[t.coord]} = "aie.tile"() <{{col = {t.col} : i32, row = {t.row} : i32}}> '
                   f": () -> index")
    for f in d.fifos:
        ends = ", ".join(f"%{p.tile[c]}" for c in (f.producer, *f.consumers))
        per_consumer = ", ".join("[]" for _ in f.consumers)
        props = (f"dimensionsFromStreamPerConsumer = #aie<bd_dim_layout_array_array[{per_consumer}]>, "
                 f"dimensionsToStream = #aie<bd_dim_layout_array[]>, disable_synchronization = false, "
                 f"elemNumber = {f.depth} : i32, elemType = !aie.objectfifo<{f.element_type}>, plio = false, "
                 f'sym_name = "{f.name}", via_DMA = false')
        types = ", ".join("index" for _ in range(1 + len(f.consumers)))
        out.append(f'{i2}"aie.objectfifo"({ends}) <{{{props}}}> : ({types}) -> ()')
    for ln in d.links:
        ins = ", ".join(f"@{n}" for n in ln.inputs)
        outs = ", ".join(f"@{n}" for n in ln.outputs)
        out.append(f'{i2}"aie.objectfifo.link"() <{{dst_offsets = {_ints(ln.dst_offsets)}, fifoIns = [{ins}], '
                   f"fifoOuts = [{outs}], src_offsets = {_ints(ln.src_offsets)}}}> : () -> ()")
    for c in d.cores:
        out += _core_generic(p, c, 2)
    if d.runtime is not None:
        out += _runtime_generic(d.runtime, 2, runtime_sequence_op(mlir_aie_version))
    out += [f'{i2}"aie.end"() : () -> ()', f"{IND}}}) : () -> ()", "}) : () -> ()"]
    return "\n".join(out) + "\n"


def _core_generic(p: _Plan, core: Core, depth: int) -> list[str]:
    ind, ind1, ind2 = IND * depth, IND * (depth + 1), IND * (depth + 2)
    col, row = core.tile
    out = [f'{ind}%core_{col}_{row} = "aie.core"(%{p.tile[core.tile]}) '
           f'<{{link_with = "{core.object_file}", stack_size = 1024 : i32}}> ({{']
    out += [f'{ind1}%{name} = "arith.constant"() <{{value = {v} : index}}> : () -> index'
            for name, v in p.loop_constants(core)]
    prologue, pieces = p.program(core)
    out += [ind1 + STEPS_GENERIC[kind].format(**fields) for kind, fields in prologue]
    for k, (count, looped, body) in enumerate(pieces):
        if not looped:
            out += [ind1 + STEPS_GENERIC[kind].format(**fields) for kind, fields in body]
            continue
        out += [f'{ind1}"scf.for"(%c0, %c{count}, %c1) ({{', f"{ind1}^bb0(%arg{k}: index):"]
        out += [ind2 + STEPS_GENERIC[kind].format(**fields) for kind, fields in body]
        out += [f'{ind2}"scf.yield"() : () -> ()', f"{ind1}}}) : (index, index, index) -> ()"]
    out += [f'{ind1}"aie.end"() : () -> ()', f"{ind}}}) : (index) -> index"]
    return out


def _array(values, width: int = 64) -> str:
    return f"array<i{width}: " + ", ".join(str(v) for v in values) + ">"


def _runtime_generic(rt: Runtime, depth: int, op_name: str = "aie.runtime_sequence") -> list[str]:
    ind, ind1 = IND * depth, IND * (depth + 1)
    index = {b.name: i for i, b in enumerate(rt.buffers)}
    types = {b.name: b.memref for b in rt.buffers}
    out = [f'{ind}"{op_name}"() <{{sym_name = "{rt.name}"}}> ({{']
    if rt.buffers:
        out.append(f"{ind}^bb0(" + ", ".join(f"%arg{i}: {b.memref}" for i, b in enumerate(rt.buffers)) + "):")
    for op in rt.ops:
        if isinstance(op, DmaWait):
            out.append(f'{ind1}"aiex.npu.dma_wait"() <{{symbol = @{op.fifo}}}> : () -> ()')
            continue
        props = [f"id = {op.id} : i64"] + (["issue_token = true"] if op.issue_token else [])
        props += [f"metadata = @{op.fifo}", f"operandSegmentSizes = {_array((1, 0, 0, 0), 32)}",
                  f"static_offsets = {_array(op.offsets)}", f"static_sizes = {_array(op.sizes)}",
                  f"static_strides = {_array(op.strides)}"]
        out.append(f'{ind1}"aiex.npu.dma_memcpy_nd"(%arg{index[op.buffer]}) <{{{", ".join(props)}}}> : '
                   f"({types[op.buffer]}) -> ()")
    out.append(f"{ind}}}) : () -> ()")
    return out


# -- files -----------------------------------------------------------------------------------------

def write_mlir(design: AieDesign, out_dir: StrPath, platform: Platform | None = None, name: str = "aie",
               mlir_aie_version: str = "latest") -> dict:
    """Write ``<name>.mlir`` (custom syntax) and ``<name>.generic.mlir`` into ``out_dir`` atomically,
    for ``mlir_aie_version`` (:func:`runtime_sequence_op`); returns ``{"custom": path, "generic": path}``."""
    custom = emit_mlir(design, platform, mlir_aie_version=mlir_aie_version)
    generic = emit_generic_mlir(design, platform, check=False, mlir_aie_version=mlir_aie_version)
    out = Path(out_dir)
    paths = {"custom": out / f"{name}.mlir", "generic": out / f"{name}.generic.mlir"}
    write_text_atomic(paths["custom"], custom)
    write_text_atomic(paths["generic"], generic)
    return paths

