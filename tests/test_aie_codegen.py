"""MLIR-AIE code generation: physical designs, DMA-channel and memory counts, the custom syntax
against golden snippets in order, the generic form parsed back with xDSL (unregistered AIE
dialects) and compared with the design and with the custom text, and every validation error.

Two designs: ``split_join`` (one shim -> mem tile -> two cores by a distribute link, results
joined back through the mem tile to the shim; each core calls a kernel 8 times) and ``gemm``
(2 x 2 cores: A rows and B columns broadcast from two mem tiles, C tiles joined per column).
"""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess

import pytest

from dfopt.codegen.aie import (
    AieDesign,
    Core,
    DmaTransfer,
    DmaWait,
    FifoAccess,
    HostBuffer,
    Link,
    ObjectFifo,
    Runtime,
    Step,
    Tile,
    emit_generic_mlir,
    emit_mlir,
    problems,
    sim,
    validate,
    write_mlir,
)
from dfopt.codegen.aie import design as design_mod
from dfopt.codegen.aie import emit as emit_mod
from dfopt.codegen.aie.design import dma_channels, memory_bytes, requires_dma, shares_memory
from dfopt.errors import CodegenError
from dfopt.ir.platform import Platform, load_preset
from tools import tool

SHIM, MEM, C0, C1 = (1, 0), (1, 1), (1, 2), (1, 3)


def split_join(**changes) -> AieDesign:
    tiles = (Tile(1, 0, "shim"), Tile(1, 1, "mem"), Tile(1, 2, "compute"), Tile(1, 3, "compute"))
    fifos = (
        ObjectFifo("inA", SHIM, (MEM,), "bf16", (2048,)),
        ObjectFifo("memA0", MEM, (C0,), "bf16", (1024,)),
        ObjectFifo("memA1", MEM, (C1,), "bf16", (1024,)),
        ObjectFifo("memC0", C0, (MEM,), "bf16", (1024,)),
        ObjectFifo("memC1", C1, (MEM,), "bf16", (1024,)),
        ObjectFifo("outC", MEM, (SHIM,), "bf16", (2048,)),
    )
    links = (Link(("inA",), ("memA0", "memA1"), MEM, dst_offsets=(0, 1024)),
             Link(("memC0", "memC1"), ("outC",), MEM, src_offsets=(0, 1024)))
    cores = tuple(Core(t, "softmax_bf16", "softmax.o",
                       (FifoAccess(f"memA{i}", "consume"), FifoAccess(f"memC{i}", "produce")),
                       iterations=8, scalars=(1024,))
                  for i, t in enumerate((C0, C1)))
    runtime = Runtime((HostBuffer("x", "bf16", (16384,)), HostBuffer("y", "bf16", (16384,))),
                      (DmaTransfer.linear("inA", "x", 16384, id=1),
                       DmaTransfer.linear("outC", "y", 16384, id=0),
                       DmaWait("outC")))
    d = AieDesign("npu1", tiles, fifos, links, cores, runtime)
    return dataclasses.replace(d, **changes)


def gemm() -> AieDesign:
    """C[64x64] = A[64x32] B[32x64] on 2 x 2 cores, core (i, j) on tile (1 + j, 2 + i)."""
    tiles = [Tile(c, 0, "shim") for c in (1, 2)] + [Tile(c, 1, "mem") for c in (1, 2)]
    tiles += [Tile(c, r, "compute") for r in (2, 3) for c in (1, 2)]
    t = {(i, j): (1 + j, 2 + i) for i in (0, 1) for j in (0, 1)}
    fifos = [
        ObjectFifo("A_L3L2", (1, 0), ((1, 1),), "bf16", (64, 32)),
        ObjectFifo("B_L3L2", (2, 0), ((2, 1),), "bf16", (2, 32, 32)),  # two column blocks of B
        *[ObjectFifo(f"A{i}", (1, 1), (t[i, 0], t[i, 1]), "bf16", (32, 32)) for i in (0, 1)],
        *[ObjectFifo(f"B{j}", (2, 1), (t[0, j], t[1, j]), "bf16", (32, 32)) for j in (0, 1)],
        *[ObjectFifo(f"C{i}{j}", t[i, j], ((1 + j, 1),), "bf16", (32, 32)) for i in (0, 1) for j in (0, 1)],
        *[ObjectFifo(f"C_col{j}", (1 + j, 1), ((1 + j, 0),), "bf16", (64, 32)) for j in (0, 1)],
    ]
    links = [Link(("A_L3L2",), ("A0", "A1"), (1, 1), dst_offsets=(0, 1024)),
             Link(("B_L3L2",), ("B0", "B1"), (2, 1), dst_offsets=(0, 1024)),
             *[Link((f"C0{j}", f"C1{j}"), (f"C_col{j}",), (1 + j, 1), src_offsets=(0, 1024)) for j in (0, 1)]]
    cores = [Core(t[i, j], "matmul_bf16_bf16", "mm_32x32x32.o",
                  (FifoAccess(f"A{i}", "consume"), FifoAccess(f"B{j}", "consume"), FifoAccess(f"C{i}{j}", "produce")))
             for i in (0, 1) for j in (0, 1)]
    runtime = Runtime(
        (HostBuffer("A", "bf16", (64, 32)), HostBuffer("B", "bf16", (32, 64)), HostBuffer("C", "bf16", (64, 64))),
        (DmaTransfer.linear("A_L3L2", "A", 2048, id=0),
         DmaTransfer("B_L3L2", "B", sizes=(1, 2, 32, 32), strides=(0, 32, 64, 1), id=1),
         DmaTransfer("C_col0", "C", sizes=(1, 1, 64, 32), strides=(0, 0, 64, 1), id=2),
         DmaTransfer("C_col1", "C", sizes=(1, 1, 64, 32), strides=(0, 0, 64, 1), offsets=(0, 0, 0, 32), id=3),
         DmaWait("C_col0"), DmaWait("C_col1")), name="gemm")
    return AieDesign("npu1", tiles, fifos, links, cores, runtime)


# -- 1. the designs and mlir-aie's resource rules ---------------------------------------------------

@pytest.mark.parametrize("make", [split_join, gemm])
def test_designs_are_valid(make):
    assert problems(make()) == []
    assert validate(make()) == make()


def test_dma_channels_split_join():
    use = dma_channels(split_join())
    assert use[MEM] == {"in": ["inA", "memC0", "memC1"], "out": ["memA0", "memA1", "outC"]}
    assert use[C0] == {"in": ["memA0"], "out": ["memC0"]}
    assert use[SHIM] == {"in": ["outC"], "out": ["inA"]}


def test_dma_channels_gemm_broadcast_takes_one_mm2s():
    use = dma_channels(gemm())
    assert use[(1, 1)]["out"] == ["A0", "A1", "C_col0"]  # A0 goes to two cores on one channel
    assert use[(2, 2)] == {"in": ["A0", "B1"], "out": ["C01"]}


def test_shared_memory_rules_aie2():
    t = {(c, r): Tile(c, r, "compute") for c in range(5) for r in range(2, 6)}
    assert shares_memory(t[1, 2], t[1, 3]) and shares_memory(t[1, 3], t[1, 2])  # north / south
    assert shares_memory(t[1, 2], t[2, 2])  # the east core reaches its west neighbour
    assert not shares_memory(t[1, 2], t[3, 2]) and not shares_memory(t[1, 2], t[2, 3])
    assert not shares_memory(Tile(1, 1, "mem"), t[1, 2])  # mem tile and core: DMA
    assert shares_memory(Tile(1, 1, "mem"), Tile(2, 1, "mem"))
    assert not shares_memory(Tile(1, 0, "shim"), Tile(2, 0, "shim"))


def _cores_design(fifos, links=()):
    tiles = [Tile(c, r, "compute") for c in (1, 2, 3) for r in (2, 3)] + [Tile(1, 1, "mem")]
    return AieDesign("npu1", tiles, fifos, links)


def test_shared_memory_fifos_take_no_channel():
    near = ObjectFifo("near", (1, 2), ((1, 3),), "i32", (64,))
    east = ObjectFifo("east", (1, 2), ((2, 2),), "i32", (64,))
    far = ObjectFifo("far", (1, 2), ((3, 2),), "i32", (64,))
    bcast = ObjectFifo("bcast", (1, 2), ((1, 3), (2, 2)), "i32", (64,))
    d = _cores_design([near, east, far, bcast])
    assert [requires_dma(d, f) for f in d.fifos] == [False, False, True, True]
    assert dma_channels(d)[(1, 2)] == {"in": [], "out": ["far", "bcast"]}
    # three shared-memory inputs on one core are fine, three DMA inputs are not
    ins = [ObjectFifo(f"s{k}", src, ((2, 3),), "i32", (64,)) for k, src in enumerate([(1, 3), (2, 2), (3, 3)])]
    assert problems(_cores_design(ins)) == []
    dma_ins = [ObjectFifo(f"f{k}", src, ((2, 3),), "i32", (64,)) for k, src in enumerate([(1, 2), (3, 2), (1, 1)])]
    msg = problems(_cores_design(dma_ins))
    assert msg == ["tile (2, 3) (compute): 3 fifos need a S2MM (in) DMA channel, npu1 has 2: ['f0', 'f1', 'f2']; "
                   "move fifos to another tile"]


def test_linked_fifo_between_neighbours_uses_dma():
    a = ObjectFifo("a", (1, 2), ((1, 3),), "i32", (64,))
    b = ObjectFifo("b", (1, 3), ((2, 3),), "i32", (64,))
    assert not requires_dma(_cores_design([a, b]), a)
    assert requires_dma(_cores_design([a, b], [Link(("a",), ("b",), (1, 3))]), a)


def test_memory_bytes_counts_one_side_of_links():
    used = memory_bytes(split_join())
    assert used[MEM] == 2 * 2 * 2048 * 2  # inA (distribute input) + outC (join output), depth 2, bf16
    assert used[C0] == 2 * 2 * 1024 * 2 + design_mod.STACK_BYTES


# -- 2. custom syntax --------------------------------------------------------------------------------

def assert_in_order(text: str, snippets) -> None:
    pos = 0
    for s in snippets:
        found = text.find(s, pos)
        assert found >= 0, f"missing (in order): {s}\n--- text ---\n{text}"
        pos = found + len(s)


SPLIT_JOIN_GOLDEN = [
    "module {",
    "  aie.device(npu1) {",
    "    func.func private @softmax_bf16(memref<1024xbf16>, memref<1024xbf16>, i32)",
    "    %shim_noc_tile_1_0 = aie.tile(1, 0)",
    "    %mem_tile_1_1 = aie.tile(1, 1)",
    "    %tile_1_2 = aie.tile(1, 2)",
    "    %tile_1_3 = aie.tile(1, 3)",
    "    aie.objectfifo @inA(%shim_noc_tile_1_0, {%mem_tile_1_1}, 2 : i32) : !aie.objectfifo<memref<2048xbf16>>",
    "    aie.objectfifo @memA0(%mem_tile_1_1, {%tile_1_2}, 2 : i32) : !aie.objectfifo<memref<1024xbf16>>",
    "    aie.objectfifo @outC(%mem_tile_1_1, {%shim_noc_tile_1_0}, 2 : i32) : !aie.objectfifo<memref<2048xbf16>>",
    "    aie.objectfifo.link [@inA] -> [@memA0, @memA1]([] [0, 1024])",
    "    aie.objectfifo.link [@memC0, @memC1] -> [@outC]([0, 1024] [])",
    "    %core_1_2 = aie.core(%tile_1_2) {",
    "      %c0 = arith.constant 0 : index",
    "      %c8 = arith.constant 8 : index",
    "      %c1 = arith.constant 1 : index",
    "      scf.for %arg0 = %c0 to %c8 step %c1 {",
    "        %0 = aie.objectfifo.acquire @memA0(Consume, 1) : !aie.objectfifosubview<memref<1024xbf16>>",
    "        %1 = aie.objectfifo.subview.access %0[0] : !aie.objectfifosubview<memref<1024xbf16>> -> memref<1024xbf16>",
    "        %2 = aie.objectfifo.acquire @memC0(Produce, 1) : !aie.objectfifosubview<memref<1024xbf16>>",
    "        %3 = aie.objectfifo.subview.access %2[0] : !aie.objectfifosubview<memref<1024xbf16>> -> memref<1024xbf16>",
    "        %c1024_i32 = arith.constant 1024 : i32",
    "        func.call @softmax_bf16(%1, %3, %c1024_i32) : (memref<1024xbf16>, memref<1024xbf16>, i32) -> ()",
    "        aie.objectfifo.release @memA0(Consume, 1)",
    "        aie.objectfifo.release @memC0(Produce, 1)",
    "      }",
    "      aie.end",
    '    } {link_with = "softmax.o"}',
    "    %core_1_3 = aie.core(%tile_1_3) {",
    "    aie.runtime_sequence @sequence(%arg0: memref<16384xbf16>, %arg1: memref<16384xbf16>) {",
    "      aiex.npu.dma_memcpy_nd(%arg0[0, 0, 0, 0][1, 1, 1, 16384][0, 0, 0, 1]) "
    "{id = 1 : i64, issue_token = true, metadata = @inA} : memref<16384xbf16>",
    "      aiex.npu.dma_memcpy_nd(%arg1[0, 0, 0, 0][1, 1, 1, 16384][0, 0, 0, 1]) "
    "{id = 0 : i64, issue_token = true, metadata = @outC} : memref<16384xbf16>",
    "      aiex.npu.dma_wait {symbol = @outC}",
    "    }",
    "  }",
    "}",
]

GEMM_GOLDEN = [
    "    func.func private @matmul_bf16_bf16(memref<32x32xbf16>, memref<32x32xbf16>, memref<32x32xbf16>)",
    "    %shim_noc_tile_2_0 = aie.tile(2, 0)",
    "    %tile_2_3 = aie.tile(2, 3)",
    "    aie.objectfifo @B_L3L2(%shim_noc_tile_2_0, {%mem_tile_2_1}, 2 : i32) : !aie.objectfifo<memref<2x32x32xbf16>>",
    "    aie.objectfifo @A0(%mem_tile_1_1, {%tile_1_2, %tile_2_2}, 2 : i32) : !aie.objectfifo<memref<32x32xbf16>>",
    "    aie.objectfifo.link [@B_L3L2] -> [@B0, @B1]([] [0, 1024])",
    "    aie.objectfifo.link [@C01, @C11] -> [@C_col1]([0, 1024] [])",
    "    %core_2_2 = aie.core(%tile_2_2) {",
    "      scf.for %arg0 = %c0 to %c1 step %c1 {",
    "        func.call @matmul_bf16_bf16(%1, %3, %5) : "
    "(memref<32x32xbf16>, memref<32x32xbf16>, memref<32x32xbf16>) -> ()",
    '    } {link_with = "mm_32x32x32.o"}',
    "    aie.runtime_sequence @gemm(%arg0: memref<64x32xbf16>, %arg1: memref<32x64xbf16>, "
    "%arg2: memref<64x64xbf16>) {",
    "      aiex.npu.dma_memcpy_nd(%arg1[0, 0, 0, 0][1, 2, 32, 32][0, 32, 64, 1]) "
    "{id = 1 : i64, issue_token = true, metadata = @B_L3L2} : memref<32x64xbf16>",
    "      aiex.npu.dma_memcpy_nd(%arg2[0, 0, 0, 32][1, 1, 64, 32][0, 0, 64, 1]) "
    "{id = 3 : i64, issue_token = true, metadata = @C_col1} : memref<64x64xbf16>",
    "      aiex.npu.dma_wait {symbol = @C_col0}",
    "      aiex.npu.dma_wait {symbol = @C_col1}",
]


def test_custom_syntax_split_join_golden():
    text = emit_mlir(split_join())
    assert text.startswith("// Generated by dfopt.codegen.aie")
    assert "// runtime sequence arguments: %arg0 = x, %arg1 = y" in text
    assert_in_order(text, SPLIT_JOIN_GOLDEN)
    assert text.count("aie.core(") == 2 and text.count("aie.end") == 2


def test_the_runtime_sequence_follows_the_mlir_aie_version():
    for version, op in (("latest", "aie.runtime_sequence"), ("2025-11-17", "aiex.runtime_sequence"),
                        ("2025-06-01", "aiex.runtime_sequence"), ("2025-11-18", "aie.runtime_sequence")):
        text = emit_mlir(split_join(), mlir_aie_version=version)
        generic = emit_generic_mlir(split_join(), mlir_aie_version=version)
        assert f"    {op} @sequence(" in text and f'"{op}"() <{{sym_name = "sequence"}}>' in generic
        assert f"// Syntax of mlir-aie {version} ({op}," in text
    with pytest.raises(CodegenError, match=r"mlir_aie_version: expected 'latest' or a date YYYY-MM-DD, got 'v1'"):
        emit_mlir(split_join(), mlir_aie_version="v1")


def test_custom_syntax_gemm_golden():
    text = emit_mlir(gemm())
    assert_in_order(text, GEMM_GOLDEN)
    assert text.count("= aie.tile(") == 8 and text.count("aie.objectfifo @") == 12
    assert text.count("func.func private") == 1  # one declaration for four cores
    # iterations == 1: the loop bound and step share %c1, declared once
    assert text.count("%c1 = arith.constant 1 : index") == 4


def test_emitting_an_invalid_design_raises():
    bad = split_join(fifos=split_join().fifos[:-1])  # outC missing
    with pytest.raises(CodegenError, match="unknown fifo"):
        emit_mlir(bad)
    with pytest.raises(CodegenError, match="unknown fifo"):
        emit_generic_mlir(bad)


def test_write_mlir(tmp_path):
    paths = write_mlir(gemm(), tmp_path / "out")
    assert paths["custom"].read_text() == emit_mlir(gemm())
    assert paths["generic"].read_text() == emit_generic_mlir(gemm())


def test_shim_pl_tile_name_in_column_without_shim_dma():
    d = AieDesign("npu1", (Tile(0, 0, "shim"), Tile(1, 0, "shim")))
    text = emit_mlir(d)
    assert "%shim_pl_tile_0_0 = aie.tile(0, 0)" in text and "%shim_noc_tile_1_0 = aie.tile(1, 0)" in text


def test_npu2_device():
    d = dataclasses.replace(split_join(), device="npu2")
    assert problems(d) == []
    assert "aie.device(npu2) {" in emit_mlir(d)
    assert '"aie.device"() <{device = 8 : i32}>' in emit_generic_mlir(d)


# -- 3. the generic form through xDSL -------------------------------------------------------------

def _context():
    pytest.importorskip("xdsl")
    try:
        from xdsl.context import Context
    except ImportError:  # older xDSL
        from xdsl.ir import MLContext as Context
    from xdsl.dialects import arith, builtin, func, memref, scf

    ctx = Context()
    ctx.allow_unregistered = True
    for dialect in (builtin.Builtin, func.Func, arith.Arith, scf.Scf, memref.MemRef):
        if dialect.name in getattr(ctx, "registered_dialect_names", ()):
            continue
        (ctx.load_dialect if hasattr(ctx, "load_dialect") else ctx.register_dialect)(dialect)
    return ctx


def parse_generic(text: str):
    ctx = _context()  # skips the test without xDSL
    from xdsl.parser import Parser

    return Parser(ctx, text).parse_module()


def opname(op) -> str:
    from xdsl.dialects.builtin import UnregisteredOp

    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def props(op) -> dict:
    return {**op.attributes, **op.properties}


def prop_int(op, key) -> int:
    return props(op)[key].value.data


def sym(attr) -> str:
    return attr.root_reference.data


def _tile_coord(value) -> tuple:
    op = value.owner
    assert opname(op) == "aie.tile"
    return (prop_int(op, "col"), prop_int(op, "row"))


def summarize_generic(module) -> dict:
    """Everything the test compares, read from the xDSL-parsed generic module."""
    from xdsl.dialects.func import CallOp, FuncOp

    devices = [op for op in module.ops if opname(op) == "aie.device"]
    assert len(devices) == 1
    device = devices[0]
    body = list(device.regions[0].block.ops)
    assert opname(body[-1]) == "aie.end"
    out = {"device": prop_int(device, "device"), "tiles": [], "fifos": {}, "links": [], "cores": {},
           "kernels": {}, "dma": [], "waits": [], "args": []}
    for op in body:
        name = opname(op)
        if isinstance(op, FuncOp):
            out["kernels"][op.sym_name.data] = tuple(str(t) for t in op.function_type.inputs.data)
        elif name == "aie.tile":
            out["tiles"].append((prop_int(op, "col"), prop_int(op, "row")))
        elif name == "aie.objectfifo":
            coords = [_tile_coord(v) for v in op.operands]
            p = props(op)
            assert str(p["dimensionsFromStreamPerConsumer"]).count("[]") == len(coords) - 1
            out["fifos"][p["sym_name"].data] = (coords[0], tuple(coords[1:]), prop_int(op, "elemNumber"),
                                                str(p["elemType"]))
        elif name == "aie.objectfifo.link":
            p = props(op)
            out["links"].append((tuple(sym(a) for a in p["fifoIns"].data), tuple(sym(a) for a in p["fifoOuts"].data),
                                 tuple(a.value.data for a in p["src_offsets"].data),
                                 tuple(a.value.data for a in p["dst_offsets"].data)))
        elif name == "aie.core":
            out["cores"][_tile_coord(op.operands[0])] = _summarize_core(op, out["kernels"], CallOp)
        elif name in ("aie.runtime_sequence", "aiex.runtime_sequence"):
            block = op.regions[0].block
            out["args"] = [str(a.type) for a in block.args]
            for inner in block.ops:
                if opname(inner) == "aiex.npu.dma_memcpy_nd":
                    p = props(inner)
                    out["dma"].append((sym(p["metadata"]), block.args.index(inner.operands[0]),
                                       tuple(p["static_offsets"].get_values()), tuple(p["static_sizes"].get_values()),
                                       tuple(p["static_strides"].get_values()), prop_int(inner, "id")))
                elif opname(inner) == "aiex.npu.dma_wait":
                    out["waits"].append(sym(props(inner)["symbol"]))
    return out


def _summarize_core(core, kernels, call_type) -> dict:
    """The core's program as ``(trip count, steps)`` pieces: each ``scf.for`` one piece, each call
    outside a loop a piece of trip count 1."""
    from xdsl.dialects.scf import ForOp

    ops = list(core.regions[0].block.ops)
    assert opname(ops[-1]) == "aie.end"
    pieces: list = []
    loose: list = []
    for op in ops:
        if isinstance(op, ForOp):
            if loose:
                pieces.append((1, loose))
                loose = []
            pieces.append((op.ub.owner.value.value.data, _summarize_steps(op.body.block.ops, kernels, call_type)))
            continue
        step = _summarize_steps([op], kernels, call_type)
        if loose and step and step[0][0] == "acquire" and loose[-1][0] == "release":
            pieces.append((1, loose))
            loose = []
        loose += step
    if loose:
        pieces.append((1, loose))
    return {"pieces": pieces, "link_with": props(core)["link_with"].data}


def _summarize_steps(ops, kernels, call_type) -> list:
    steps = []
    for op in ops:
        name = opname(op)
        if name in ("aie.objectfifo.acquire", "aie.objectfifo.release"):
            port = {0: "produce", 1: "consume"}[prop_int(op, "port")]
            steps.append((name.rsplit(".", 1)[1], sym(props(op)["objFifo_name"]), port, prop_int(op, "size")))
        elif name == "aie.objectfifo.subview.access":
            steps.append(("access", prop_int(op, "index")))
        elif isinstance(op, call_type):
            callee = op.callee.root_reference.data
            assert callee in kernels, f"func.call @{callee} has no func.func declaration"
            assert tuple(str(a.type) for a in op.arguments) == kernels[callee]
            steps.append(("call", callee))
    return steps


def summarize_design(d: AieDesign) -> dict:
    """The same summary, computed from the design."""
    buffers = {b.name: i for i, b in enumerate(d.runtime.buffers)}
    cores = {}
    kernels = {}
    for c in d.cores:
        pieces = []
        for call, repeat in c.schedule():
            steps = []
            for a in call.accesses:
                steps.append(("acquire", a.fifo, a.port, a.count))
                steps += [("access", i) for i in range(a.count)]
            steps.append(("call", call.kernel))
            steps += [("release", a.fifo, a.port, a.count) for a in call.accesses]
            # a step loops when its count is a multiple of its FIFOs' depths above them, else each
            # call is written out (a core with one loop body: always its loop)
            lcm = math.lcm(*(d.fifo(a.fifo).depth for a in call.accesses))
            if not c.steps or (repeat > lcm and repeat % lcm == 0):
                pieces.append((repeat, steps))
            else:
                pieces += [(1, steps)] * repeat
            kernels[call.kernel] = design_mod.kernel_signature(d, call)
        cores[c.tile] = {"pieces": pieces, "link_with": c.object_file}
    return {
        "device": emit_mod.DEVICE_ENUM[d.device],
        "tiles": [t.coord for t in d.tiles],
        "fifos": {f.name: (f.producer, f.consumers, f.depth, f"!aie.objectfifo<{f.element_type}>") for f in d.fifos},
        "links": [(ln.inputs, ln.outputs, ln.src_offsets, ln.dst_offsets) for ln in d.links],
        "cores": cores,
        "kernels": kernels,
        "dma": [(op.fifo, buffers[op.buffer], op.offsets, op.sizes, op.strides, op.id)
                for op in d.runtime.ops if isinstance(op, DmaTransfer)],
        "waits": [op.fifo for op in d.runtime.ops if isinstance(op, DmaWait)],
        "args": [b.memref for b in d.runtime.buffers],
    }


def _ints(text: str) -> tuple:
    return tuple(int(v) for v in re.findall(r"-?\d+", text))


def summarize_custom(text: str) -> dict:
    """The same summary, read from the custom syntax with regular expressions (a check that both
    printers say the same thing)."""
    tiles, names = [], {}
    for name, col, row in re.findall(r"%(\w+) = aie\.tile\((\d+), (\d+)\)", text):
        tiles.append((int(col), int(row)))
        names[name] = (int(col), int(row))
    fifos = {}
    for name, prod, cons, depth, ty in re.findall(
            r"aie\.objectfifo @(\w+)\(%(\w+), \{([^}]*)\}, (\d+) : i32\) : (\S+)", text):
        fifos[name] = (names[prod], tuple(names[c.strip()[1:]] for c in cons.split(",")), int(depth), ty)
    links = [(tuple(re.findall(r"@(\w+)", ins)), tuple(re.findall(r"@(\w+)", outs)), _ints(src), _ints(dst))
             for ins, outs, src, dst in re.findall(
                 r"aie\.objectfifo\.link \[([^\]]*)\] -> \[([^\]]*)\]\(\[([^\]]*)\] \[([^\]]*)\]\)", text)]
    dma = [(fifo, int(arg), _ints(o), _ints(s), _ints(st), int(i)) for arg, o, s, st, i, fifo in re.findall(
        r"dma_memcpy_nd\(%arg(\d+)\[([^\]]*)\]\[([^\]]*)\]\[([^\]]*)\]\) \{id = (\d+) : i64, "
        r"(?:issue_token = true, )?metadata = @(\w+)\}", text)]
    args = re.findall(r"runtime_sequence @\w+\((.*)\) \{", text)[0]
    return {"tiles": tiles, "fifos": fifos, "links": links, "dma": dma,
            "waits": re.findall(r"dma_wait \{symbol = @(\w+)\}", text),
            "args": [a.split(": ")[1] for a in args.split(", %")]}


@pytest.mark.parametrize("make", [split_join, gemm])
def test_generic_form_parses_with_xdsl_and_matches_the_design(make):
    d = make()
    module = parse_generic(emit_generic_mlir(d))
    got = summarize_generic(module)
    assert got == summarize_design(d)
    assert len(got["tiles"]) == len(d.tiles)


@pytest.mark.parametrize("make", [split_join, gemm])
def test_generic_form_verifies_op_by_op(make):
    """Registered ops (func, arith, scf) pass xDSL's verifiers; ``func.call`` is left out: its callee
    lives in ``aie.device``'s symbol table, which an unregistered op does not provide (checked by
    hand in :func:`_summarize_core`)."""
    module = parse_generic(emit_generic_mlir(make()))  # skips without xDSL
    from xdsl.dialects.func import CallOp

    checked = 0
    for op in module.walk():
        if not isinstance(op, CallOp):
            op.verify(verify_nested_ops=False)
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("make", [split_join, gemm])
def test_custom_and_generic_say_the_same(make):
    d = make()
    custom = summarize_custom(emit_mlir(d))
    generic = summarize_generic(parse_generic(emit_generic_mlir(d)))
    assert custom == {k: generic[k] for k in custom}


def test_generic_core_structure_split_join():
    got = summarize_generic(parse_generic(emit_generic_mlir(split_join())))
    assert got["device"] == 4
    assert got["fifos"]["memA0"] == (MEM, (C0,), 2, "!aie.objectfifo<memref<1024xbf16>>")
    assert got["cores"][C1] == {"link_with": "softmax.o", "pieces": [(8, [
        ("acquire", "memA1", "consume", 1), ("access", 0), ("acquire", "memC1", "produce", 1), ("access", 0),
        ("call", "softmax_bf16"), ("release", "memA1", "consume", 1), ("release", "memC1", "produce", 1)])]}
    assert got["kernels"] == {"softmax_bf16": ("memref<1024xbf16>", "memref<1024xbf16>", "i32")}
    assert [(fifo, arg) for fifo, arg, *_ in got["dma"]] == [("inA", 0), ("outC", 1)]
    assert got["waits"] == ["outC"]


def test_generic_multi_object_acquire():
    d = split_join()
    cores = tuple(dataclasses.replace(c, accesses=(FifoAccess(c.accesses[0].fifo, "consume", 2), c.accesses[1]),
                                      kernel="pair") for c in d.cores)
    d = dataclasses.replace(d, cores=cores)
    assert problems(d) == []
    got = summarize_generic(parse_generic(emit_generic_mlir(d)))
    assert got["kernels"]["pair"] == ("memref<1024xbf16>",) * 3 + ("i32",)
    assert got["cores"][C0]["pieces"][0][1][:3] == [("acquire", "memA0", "consume", 2), ("access", 0), ("access", 1)]
    assert "aie.objectfifo.subview.access %0[1]" in emit_mlir(d)


def _stepped(d: AieDesign) -> AieDesign:
    """split_join with core C1 running a program of steps moving the same 8 objects each way: a
    call taking two objects of each FIFO, four taking one (a loop: 4 is a multiple of the depths
    above them), and two more (written out: 2 is not above the depths)."""
    a, c = FifoAccess("memA1", "consume"), FifoAccess("memC1", "produce")
    steps = (Step("sm_pair", (FifoAccess("memA1", "consume", 2), FifoAccess("memC1", "produce", 2)), 1),
             Step("softmax_bf16", (a, c), 4), Step("sm_last", (c, a), 2))
    return dataclasses.replace(d, cores=tuple(dataclasses.replace(k, steps=steps, iterations=7) if k.tile == C1
                                              else k for k in d.cores))


def test_a_core_with_steps_emits_its_pieces_in_order_in_both_forms():
    d = _stepped(split_join())
    assert problems(d) == []
    got = summarize_generic(parse_generic(emit_generic_mlir(d)))
    assert got == summarize_design(d)
    pieces = got["cores"][C1]["pieces"]
    assert [(n, [s[1] for s in steps if s[0] == "call"]) for n, steps in pieces] == [
        (1, ["sm_pair"]), (4, ["softmax_bf16"]), (1, ["sm_last"]), (1, ["sm_last"])]
    assert got["kernels"]["sm_pair"] == ("memref<1024xbf16>",) * 4 + ("i32",)
    text = emit_mlir(d)
    core = text[text.index("%core_1_3"):]
    core = core[:core.index("link_with")]
    assert core.count("scf.for") == 1 and core.count("func.call @sm_last") == 2
    # every object name is defined once in the core (the pieces number them across the core)
    names = re.findall(r"(%\d+) = aie", core)
    assert len(names) == len(set(names))
    run = sim.run(d)
    assert run.ok and run.objects == sim.run(split_join()).objects


def test_a_core_with_steps_lowers_through_aiecc(tmp_path):
    """mlir-aie's own passes, through the NPU lowering, on the stepped design (both forms)."""
    check = tool("aie-check") / "check.sh"
    paths = write_mlir(_stepped(split_join()), tmp_path, name="stepped", mlir_aie_version="2025-11-17")
    done = subprocess.run([str(check), str(paths["custom"]), str(paths["generic"])], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_dma_consumer_end_holds_one_more_object_than_its_core_acquires():
    """mlir-aie sizes the consumer end of a DMA FIFO by the core's largest acquire, not the depth
    (``findObjectFifoSize``): 2 objects for single acquires (even at depth 40), 3 when a step
    acquires 2, 1 when it acquires 1 at depth 1."""
    from dfopt.codegen.aie.design import consumer_buffers

    d = _replace_fifo(split_join(), "memA0", depth=40)
    assert consumer_buffers(d, d.fifo("memA0"), C0) == 2
    assert memory_bytes(d)[C0] == memory_bytes(split_join())[C0]
    stepped = _stepped(split_join())
    assert consumer_buffers(stepped, stepped.fifo("memA1"), C1) == 3
    assert memory_bytes(stepped)[C1] == memory_bytes(split_join())[C1] + 2048
    single = _replace_fifo(split_join(), "memA0", depth=1)
    assert consumer_buffers(single, single.fifo("memA0"), C0) == 1
    assert consumer_buffers(d, d.fifo("memA0"), MEM) == 40        # no core there: the depth


def test_a_step_program_is_checked_like_a_loop_body():
    d = _stepped(split_join())
    bad = dataclasses.replace(d, cores=tuple(
        dataclasses.replace(k, steps=(Step("sm-x", k.steps[0].accesses, 0), Step("sm_pair", (), 1),
                                      Step("sm_pair", (FifoAccess("memA0", "consume"),), 1)))
        if k.tile == C1 else k for k in d.cores))
    text = "\n".join(problems(bad))
    assert "step kernel name 'sm-x' is not a valid symbol name" in text
    assert "step 'sm-x' repeats 0 times" in text
    assert "step 'sm_pair' acquires nothing" in text
    assert "consumes fifo 'memA0' but is not one of its consumers" in text
    assert "kernel 'sm_pair' is called with" in text


# -- 4. validation errors --------------------------------------------------------------------------

def _replace_fifo(d: AieDesign, which: str, **changes) -> AieDesign:
    return dataclasses.replace(d, fifos=tuple(dataclasses.replace(f, **changes) if f.name == which else f
                                              for f in d.fifos))


def _replace_core(d: AieDesign, at, **changes) -> AieDesign:
    return dataclasses.replace(d, cores=tuple(dataclasses.replace(c, **changes) if c.tile == at else c
                                              for c in d.cores))


def _replace_runtime(d: AieDesign, **changes) -> AieDesign:
    return dataclasses.replace(d, runtime=dataclasses.replace(d.runtime, **changes))


def _ops(d: AieDesign, *ops) -> AieDesign:
    return _replace_runtime(d, ops=ops)


def _in_column_0() -> AieDesign:
    d = split_join()
    move = {SHIM: (0, 0), MEM: (0, 1), C0: (0, 2), C1: (0, 3)}
    tiles = tuple(Tile(*move[t.coord], t.kind) for t in d.tiles)
    fifos = tuple(dataclasses.replace(f, producer=move[f.producer], consumers=tuple(move[c] for c in f.consumers))
                  for f in d.fifos)
    links = tuple(dataclasses.replace(ln, via=move[ln.via]) for ln in d.links)
    cores = tuple(dataclasses.replace(c, tile=move[c.tile]) for c in d.cores)
    return dataclasses.replace(d, tiles=tiles, fifos=fifos, links=links, cores=cores)


def _three_inputs_on_a_core() -> AieDesign:
    d = split_join()
    return dataclasses.replace(d, fifos=d.fifos + tuple(ObjectFifo(f"extra{k}", MEM, (C0,), "bf16", (64,))
                                                        for k in range(2)))


def _seven_outputs_on_a_mem_tile() -> AieDesign:
    d = split_join()
    tiles = d.tiles + tuple(Tile(c, r, "compute") for c in (2, 3) for r in (2, 3, 4))
    outs = tuple(ObjectFifo(f"o{k}", MEM, (t.coord,), "bf16", (256,)) for k, t in enumerate(tiles[4:]))
    return dataclasses.replace(d, tiles=tiles, fifos=d.fifos + outs)


def _three_shim_outputs() -> AieDesign:
    d = split_join()
    outs = tuple(ObjectFifo(f"s{k}", SHIM, (MEM,), "bf16", (64,)) for k in range(2))
    return dataclasses.replace(d, fifos=d.fifos + outs)


CASES = {
    # device and tiles
    "device not an NPU": (lambda: split_join(device="u55c"), r"device 'u55c' is not an NPU platform preset"),
    "tile listed twice": (lambda: split_join(tiles=split_join().tiles + (Tile(1, 2, "compute"),)),
                          r"tile \(1, 2\): listed twice"),
    "tile kind unknown": (lambda: split_join(tiles=split_join().tiles + (Tile(2, 2, "core"),)),
                          r"kind 'core' is not one of"),
    "compute tile outside rows": (lambda: split_join(tiles=split_join().tiles + (Tile(2, 6, "compute"),)),
                                  r"tile \(2, 6\): a compute tile must be in row\(s\) \[2, 3, 4, 5\] of npu1"),
    "compute tile on the mem row": (lambda: split_join(tiles=split_join().tiles + (Tile(2, 1, "compute"),)),
                                    r"tile \(2, 1\): a compute tile must be in row"),
    "tile outside columns": (lambda: split_join(tiles=split_join().tiles + (Tile(5, 2, "compute"),)),
                             r"tile \(5, 2\): column 5 is outside npu1's columns 0-4"),
    # fifos
    "fifo endpoint not a tile": (lambda: _replace_fifo(split_join(), "memA1", consumers=((2, 3),)),
                                 r"fifo 'memA1': consumer \(2, 3\) is not a tile of the design"),
    "fifo producer not a tile": (lambda: _replace_fifo(split_join(), "inA", producer=(2, 0)),
                                 r"fifo 'inA': producer \(2, 0\) is not a tile of the design"),
    "shim DMA in column 0": (_in_column_0, r"fifo 'inA': producer \(0, 0\) is a shim tile in column 0, which "
                                           r"has no shim DMA on npu1"),
    "depth < 1": (lambda: _replace_fifo(split_join(), "memA0", depth=0),
                  r"fifo 'memA0': depth must be an integer >= 1, got 0"),
    "fifo bad name": (lambda: _replace_fifo(split_join(), "outC", name="out C"), r"'out C': not a valid symbol"),
    "fifo name twice": (lambda: _replace_fifo(split_join(), "outC", name="inA"), r"fifo 'inA': the name is used twice"),
    "fifo dtype": (lambda: _replace_fifo(split_join(), "memA0", dtype="i4"), r"dtype 'i4' is not supported"),
    "fifo shape": (lambda: _replace_fifo(split_join(), "memA0", shape=(0,)), r"shape must be a non-empty list"),
    "fifo without consumer": (lambda: _replace_fifo(split_join(), "memA0", consumers=()), r"'memA0': has no consumer"),
    "fifo to itself": (lambda: _replace_fifo(split_join(), "memA0", consumers=(MEM,)),
                       r"'memA0': producer and consumer tiles must all differ"),
    # DMA channels and memory
    "3 S2MM on a compute tile": (_three_inputs_on_a_core,
                                 r"tile \(1, 2\) \(compute\): 3 fifos need a S2MM \(in\) DMA channel, npu1 has 2"),
    "7 MM2S on a mem tile": (_seven_outputs_on_a_mem_tile,
                             r"tile \(1, 1\) \(mem\): 9 fifos need a MM2S \(out\) DMA channel, npu1 has 6"),
    "3 MM2S on a shim tile": (_three_shim_outputs, r"tile \(1, 0\) \(shim\): 3 fifos need a MM2S \(out\)"),
    "compute memory": (lambda: _replace_fifo(split_join(), "memC0", depth=40),
                       r"tile \(1, 2\) \(compute\): fifo objects and stack need 87040 bytes, the tile has 65536"),
    # links
    "link via a compute tile": (lambda: split_join(links=(dataclasses.replace(split_join().links[0], via=C0),)),
                                r"links go through a mem tile, \(1, 2\) is a compute tile"),
    "link via no tile": (lambda: split_join(links=(dataclasses.replace(split_join().links[0], via=(3, 1)),)),
                         r"tile \(3, 1\) is not a tile of the design"),
    "join and distribute": (lambda: split_join(links=(Link(("memC0", "memC1"), ("memA0", "memA1"), MEM),)),
                            r"cannot join and distribute at once"),
    "link unknown fifo": (lambda: split_join(links=(Link(("inA",), ("nope",), MEM),)), r"unknown fifo\(s\) \['nope'\]"),
    "link offsets count": (lambda: split_join(links=(dataclasses.replace(split_join().links[0], dst_offsets=(0,)),
                                                     split_join().links[1])),
                           r"dst_offsets needs one offset per fifo \(2\), got \[0\]"),
    "link offsets overlap": (lambda: split_join(links=(dataclasses.replace(split_join().links[0],
                                                                           dst_offsets=(0, 512)),)),
                             r"fifo 'memA1' at offset 512 overlaps"),
    "link past the end": (lambda: split_join(links=(dataclasses.replace(split_join().links[0],
                                                                        dst_offsets=(0, 1536)),)),
                          r"fifo 'memA1' at offset 1536 \(1024 elements\) runs past the 2048 elements of 'inA'"),
    "link wrong side offsets": (lambda: split_join(links=(dataclasses.replace(split_join().links[0],
                                                                              src_offsets=(0,)),)),
                                r"src_offsets must be empty here"),
    "1-to-1 link with offsets": (lambda: split_join(links=(Link(("inA",), ("memA0",), MEM, dst_offsets=(0,)),)),
                                 r"a 1-to-1 link takes no offsets"),
    "link input not ending at via": (lambda: split_join(links=(Link(("memA0",), ("memC0",), MEM),)),
                                     r"input fifo 'memA0' must have the link tile \(1, 1\) as its only consumer"),
    "link output not from via": (lambda: split_join(links=(Link(("inA",), ("memC0", "memC1"), MEM,
                                                                dst_offsets=(0, 1024)),)),
                                 r"output fifo 'memC0' must be produced by the link tile"),
    "fifo in two links": (lambda: split_join(links=split_join().links + (Link(("inA",), ("memA0",), MEM),)),
                          r"fifo 'inA': takes part in 2 links"),
    "link dtypes differ": (lambda: _replace_fifo(split_join(), "memA0", dtype="i16"),
                           r"all fifos of a link must have the same dtype"),
    # cores
    "core on a mem tile": (lambda: _replace_core(split_join(), C0, tile=MEM),
                           r"core \(1, 1\): cores run on compute tiles, \(1, 1\) is a mem tile"),
    "two cores on a tile": (lambda: _replace_core(split_join(), C1, tile=C0), r"core \(1, 2\): the tile has two cores"),
    "core on no tile": (lambda: _replace_core(split_join(), C1, tile=(3, 3)),
                        r"core \(3, 3\): \(3, 3\) is not a tile of the design"),
    "core unknown fifo": (lambda: _replace_core(split_join(), C0, accesses=(FifoAccess("nope", "consume"),)),
                          r"core \(1, 2\): accesses unknown fifo 'nope'"),
    "core consumes foreign fifo": (lambda: _replace_core(split_join(), C0, accesses=(FifoAccess("memA1", "consume"),)),
                                   r"consumes fifo 'memA1' but is not one of its consumers"),
    "core produces foreign fifo": (lambda: _replace_core(split_join(), C0, accesses=(FifoAccess("memC1", "produce"),)),
                                   r"produces into fifo 'memC1' but its producer is \(1, 3\)"),
    "core bad port": (lambda: _replace_core(split_join(), C0, accesses=(FifoAccess("memA0", "read"),)),
                      r"port 'read' of fifo 'memA0' is not one of"),
    "acquire more than depth": (lambda: _replace_core(split_join(), C0, accesses=(FifoAccess("memA0", "consume", 3),
                                                                                  FifoAccess("memC0", "produce"))),
                                r"acquires 3 objects of fifo 'memA0'; expected 1..depth \(2\)"),
    "access twice": (lambda: _replace_core(split_join(), C0, accesses=(FifoAccess("memA0", "consume"),) * 2),
                     r"accesses fifo 'memA0' \(consume\) twice"),
    "iterations < 1": (lambda: _replace_core(split_join(), C0, iterations=0), r"iterations must be an integer >= 1"),
    "kernel bad name": (lambda: _replace_core(split_join(), C0, kernel="soft-max"), r"kernel name 'soft-max' is not"),
    "no object file": (lambda: _replace_core(split_join(), C0, object_file=""), r"needs the object file"),
    "kernel signatures differ": (lambda: _replace_core(split_join(), C1, scalars=()),
                                 r"kernel 'softmax_bf16' is called with .* here and .* elsewhere"),
    "kernel name is a fifo name": (lambda: _replace_core(_replace_core(split_join(), C0, kernel="inA"), C1,
                                                         kernel="inA"),
                                   r"kernel and fifo names share one symbol table; rename \['inA'\]"),
    # runtime sequence
    "runtime bad name": (lambda: _replace_runtime(split_join(), name="my seq"), r"runtime sequence 'my seq'"),
    "host buffer twice": (lambda: _replace_runtime(split_join(), buffers=(HostBuffer("x", "bf16", (16384,)),) * 2),
                          r"host buffer 'x': the name is used twice"),
    "host buffer dtype": (lambda: _replace_runtime(split_join(), buffers=(HostBuffer("x", "q8", (16,)),)),
                          r"host buffer 'x': dtype 'q8' is not supported"),
    "transfer unknown fifo": (lambda: _ops(split_join(), DmaTransfer.linear("nope", "x", 64)),
                              r"runtime op 0: transfer on unknown fifo 'nope'"),
    "transfer not at a shim": (lambda: _ops(split_join(), DmaTransfer.linear("memA0", "x", 1024)),
                               r"fifo 'memA0' has no shim tile end"),
    "transfer unknown buffer": (lambda: _ops(split_join(), DmaTransfer.linear("inA", "z", 2048)),
                                r"unknown host buffer 'z'"),
    "transfer dtype": (lambda: _replace_runtime(split_join(), buffers=(HostBuffer("x", "f32", (16384,)),
                                                                       HostBuffer("y", "bf16", (16384,)))),
                       r"host buffer 'x' is f32, fifo 'inA' is bf16"),
    "buffer descriptor id": (lambda: _ops(split_join(), DmaTransfer.linear("inA", "x", 2048, id=16)),
                             r"buffer descriptor id 16 is outside 0-15"),
    "pattern rank": (lambda: _ops(split_join(), DmaTransfer("inA", "x", (2048,), (1,), (0,))),
                     r"offsets, sizes and strides need 4 entries each"),
    "pattern signs": (lambda: _ops(split_join(), DmaTransfer("inA", "x", (1, 1, 0, 2048), (0, 0, 0, 1))),
                      r"sizes must be >= 1, strides and offsets >= 0"),
    "zero stride inside": (lambda: _ops(split_join(), DmaTransfer("inA", "x", (1, 2, 1, 2048), (0, 0, 0, 1))),
                           r"only the outermost dimension may repeat with stride 0"),
    "not whole words": (lambda: _ops(split_join(), DmaTransfer.linear("inA", "x", 2048, offset=1)),
                        r"the start \(2 B\), the innermost length \(4096 B\) and the outer strides \(\[\] B\) "
                        r"must be multiples of 4 bytes"),
    "out of bounds": (lambda: _ops(split_join(), DmaTransfer.linear("inA", "x", 16384, offset=2048)),
                      r"reaches element 18431 of host buffer 'x', which has 16384"),
    "partial object": (lambda: _ops(split_join(), DmaTransfer.linear("inA", "x", 3000)),
                       r"moves 3000 elements, not a whole number of fifo 'inA' objects \(2048 elements each\)"),
    "wait before transfer": (lambda: _ops(split_join(), DmaWait("outC"), DmaTransfer.linear("outC", "y", 2048)),
                             r"runtime op 0: waits on fifo 'outC', which has no transfer before it"),
    "wait without token": (lambda: _ops(split_join(), dataclasses.replace(DmaTransfer.linear("inA", "x", 2048),
                                                                          issue_token=False), DmaWait("inA")),
                           r"issue_token=False, so the wait would never return"),
    "runtime op type": (lambda: _ops(split_join(), "sync"), r"expected a DmaTransfer or DmaWait, got str"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validation_errors(case):
    make, pattern = CASES[case]
    found = problems(make())
    assert any(re.search(pattern, p) for p in found), f"{pattern!r} not in {found}"
    with pytest.raises(CodegenError, match=pattern) as info:
        validate(make())
    assert info.value.problems == found
    assert info.value.exit_code == 2


def test_s2mm_wait_needs_no_token():
    d = _ops(split_join(), dataclasses.replace(DmaTransfer.linear("outC", "y", 2048), issue_token=False),
             DmaWait("outC"))
    assert problems(d) == []
    assert "{id = 0 : i64, metadata = @outC}" in emit_mlir(d)
    assert "issue_token" not in emit_generic_mlir(d).split("aiex.npu.dma_memcpy_nd")[1].split("\n")[0]


def test_outermost_dimension_may_repeat():
    d = _ops(split_join(), DmaTransfer("inA", "x", (2, 1, 1, 2048), (0, 0, 0, 1)))
    assert problems(d) == []
    assert "%arg0[0, 0, 0, 0][2, 1, 1, 2048][0, 0, 0, 1]" in emit_mlir(d)


def test_validate_lists_every_problem_at_once():
    d = _replace_core(_replace_fifo(split_join(), "memA0", depth=0), C0, iterations=0)
    with pytest.raises(CodegenError) as info:
        validate(d)
    assert len(info.value.problems) >= 2
    assert "depth must be" in str(info.value) and "iterations must be" in str(info.value)


def test_explicit_platform():
    assert problems(split_join(), load_preset("npu1")) == []
    assert problems(split_join(), load_preset("u280")) == ["platform 'u280' is not an NPU"]
    assert problems(split_join(), Platform.from_dict({"kind": "npu", "npu": {}}, "bare")) == [
        "platform 'bare': its npu section needs 'columns' and 'rows'"]
    wide = load_preset("npu2")
    assert problems(dataclasses.replace(_in_column_0(), device="npu2"), wide) == []  # a shim DMA in every column
