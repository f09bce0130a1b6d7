"""Shim DMA transfers within the buffer-descriptor limits (dfopt.codegen.aie.bd), and every shipped
mapping design — the search's answer and the exact model's — through mlir-aie's own parser,
verifier and the aiecc pass pipeline up to the NPU instruction lowering (the tools folder's
aie-check)."""

from __future__ import annotations

import math
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.cli import main
from dfopt.codegen.aie.bd import SHIM, BdLimits, addresses, legalize, limits_of, pattern_faults
from dfopt.codegen.aie.design import AieDesign, DmaTransfer, HostBuffer, ObjectFifo, Runtime, Tile, problems
from dfopt.errors import CodegenError
from dfopt.ir.platform import load_preset
from tools import tool

ROOT = Path(__file__).resolve().parents[1]
MAPPINGS = sorted(p.stem for p in (ROOT / "instances" / "mapping").glob("*.json"))


def _same(op: DmaTransfer, bits: int, lim: BdLimits = SHIM) -> list[DmaTransfer]:
    pieces = legalize(op, bits, lim)
    want = list(addresses(op.sizes, op.strides, op.offsets))
    got = [a for p in pieces for a in addresses(p.sizes, p.strides, p.offsets)]
    assert got == want
    for p in pieces:
        assert pattern_faults(p.sizes, p.strides, p.offsets, bits, lim) == [], (p.sizes, p.strides)
    assert [p.issue_token for p in pieces] == [False] * (len(pieces) - 1) + [op.issue_token]
    return pieces


def test_the_presets_carry_the_limits_mlir_aie_checks():
    for name in ("npu1", "npu2"):
        assert limits_of(load_preset(name), "shim") == BdLimits(10, 20, 64, 32)
        assert limits_of(load_preset(name), "compute").wrap_max == 255


def test_the_transfers_of_the_issue():
    # gemm-4x4x4: four rows of 4096 words, 8192 apart -> contiguous runs repeated (linear form)
    op = DmaTransfer("A", "a", (1, 1, 4, 4096), (0, 0, 8192, 1))
    assert pattern_faults(op.sizes, op.strides, op.offsets, 32) == [
        "size 0 is 4096 words, above the [0:1023] range (not a linear transfer)"]
    assert [(p.sizes, p.strides) for p in _same(op, 32)] == [((4, 1, 1, 4096), (8192, 0, 0, 1))]
    # a row block re-read: the innermost run is cut by its largest divisor within 1023 words
    assert [(p.sizes, p.strides) for p in _same(DmaTransfer("B", "b", (2, 1, 2, 2048), (0, 0, 8192, 1)), 32)] == \
        [((2, 2, 4, 512), (0, 8192, 512, 1))]
    # five loops after the cut: the outermost becomes separate transfers
    pieces = _same(DmaTransfer("B", "b", (4, 2, 2, 2048), (0, 4096, 8192, 1)), 32)
    assert len(pieces) == 4 and all(p.sizes == (2, 2, 4, 512) for p in pieces)
    # bf16: the word count is half the element count, the start must be word aligned
    assert pattern_faults((1, 1, 1, 3), (0, 0, 0, 1), (0, 0, 0, 0), 16) == [
        "size 0 is 6 bytes, not a whole number of 4-byte words"]
    _same(DmaTransfer("C", "c", (1, 1, 3, 2046), (0, 0, 4096, 1)), 16)
    assert len(_same(DmaTransfer("C", "c", (1, 1, 3, 2048), (0, 0, 4096, 1)), 16)) == 1


def test_what_no_descriptor_expresses_is_named():
    with pytest.raises(CodegenError, match=r"transfer on fifo 'D' .*no buffer descriptor walks 3 elements"):
        legalize(DmaTransfer("D", "d", (1, 1, 1, 3), (0, 0, 0, 1)), 8)    # 3 bytes: not a word


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 5000)), min_size=3, max_size=3),
       st.integers(1, 5000), st.sampled_from([32, 16, 8]), st.integers(0, 64), st.booleans())
def test_random_transfers_cover_the_same_elements_within_the_limits(outer, inner, bits, offset, token):
    per_word = 32 // bits
    inner = -(-inner // per_word) * per_word                      # whole words
    sizes = (*(n for n, _ in outer), inner)
    strides = (*(s * per_word for _, s in outer), 1)
    if any(n > 1 and s == 0 for n, s in zip(sizes[1:3], strides[1:3])):
        strides = (strides[0], *(max(s, per_word) for s in strides[1:3]), 1)
    op = DmaTransfer("f", "b", sizes, strides, (0, 0, 0, offset * per_word), issue_token=token)
    assert math.prod(sizes) == sum(1 for _ in addresses(op.sizes, op.strides, op.offsets))
    _same(op, bits)


def test_the_validator_refuses_a_transfer_the_descriptor_cannot_hold():
    d = AieDesign(tiles=(Tile(1, 0, "shim"), Tile(1, 2, "compute")),
                  fifos=(ObjectFifo("of_in", (1, 0), ((1, 2),), "i32", (4096,)),),
                  runtime=Runtime((HostBuffer("a", "i32", (8 * 8192,)),),
                                  (DmaTransfer("of_in", "a", (1, 1, 4, 4096), (0, 0, 8192, 1)),)))
    faults = [p for p in problems(d) if "buffer descriptor" in p]
    assert faults == ["runtime op 0 (fifo 'of_in', sizes [1, 1, 4, 4096], strides [0, 0, 8192, 1]): the shim "
                      "buffer descriptor cannot hold it: size 0 is 4096 words, above the [0:1023] range "
                      "(not a linear transfer)"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemm-4x4x4", "gemm-npu2"])
def test_the_planned_transfers_outside_the_limits_are_emitted_within_them(name):
    """The GEMM designs plan transfers the buffer descriptor cannot hold (what 0.1 emitted as they
    were); the runtime sequence holds them legalised: every transfer within the limits, moving the
    same elements in the same order, FIFO by FIFO."""
    from tests.mapping_designs import solved

    from dfopt.codegen.aie.mapping import design_from_mapping

    inst, sol = solved(name)
    design = design_from_mapping(inst, sol)
    lim = limits_of(inst.platform)
    bits = {f.name: 32 if f.dtype == "i32" else 8 for f in design.fifos}
    planned = design.runtime.planned
    assert any(pattern_faults(t.sizes, t.strides, t.offsets, bits[t.fifo], lim) for t, _ in planned)
    emitted = [op for op in design.runtime.ops if isinstance(op, DmaTransfer)]
    assert not [t for t in emitted if pattern_faults(t.sizes, t.strides, t.offsets, bits[t.fifo], lim)]
    assert len(emitted) == sum(n for _, n in planned)
    for fifo in {t.fifo for t, _ in planned}:
        want = [a for t, _ in planned if t.fifo == fifo for a in addresses(t.sizes, t.strides, t.offsets)]
        got = [a for t in emitted if t.fifo == fifo for a in addresses(t.sizes, t.strides, t.offsets)]
        assert got == want, fifo


def test_every_shipped_mapping_lowers_through_aiecc(tmp_path):
    """The search's and the exact model's design of every shipped mapping instance, written for
    mlir-aie 2025-11-17 (what the checker parses), custom and generic form: OK through the NPU
    instruction lowering. The exact model may find no routable mapping within its time limit on a
    busy machine (exit 4, nothing to emit); every design it does return is checked. Files with the
    same text (the exact model proving the search's answer) are checked once: the first alone (on a
    fresh machine the checker installs its Debian library, and two apt-gets at once fail on apt's
    lock), the rest two at a time."""
    check = tool("aie-check") / "check.sh"
    files, texts = [], set()
    for name in MAPPINGS:
        for formulation, limit in (("search", "60"), ("cpsat", "20")):
            out = tmp_path / f"{name}-{formulation}"
            rc = main(["solve", str(ROOT / "instances" / "mapping" / f"{name}.json"), "--formulation",
                       formulation, "--time-limit", limit, "--quiet", "--mlir-aie-version", "2025-11-17",
                       "--emit-dir", str(out)])
            assert rc == 0 or (formulation == "cpsat" and rc == 4), (name, formulation, rc)
            if rc:
                continue
            assert "aiex.runtime_sequence" in (out / f"{name}.mlir").read_text()
            for f in (out / f"{name}.mlir", out / f"{name}.generic.mlir"):
                if f.read_text() not in texts:
                    texts.add(f.read_text())
                    files.append(f)
    assert len(files) >= 2 * len(MAPPINGS)
    staged = tmp_path / "check"          # unique names: the checker keeps its logs per file name
    staged.mkdir()
    named = []
    for f in files:
        named.append(staged / f"{f.parent.name}.{f.name}")
        named[-1].write_text(f.read_text())

    def run(k, paths):
        return subprocess.run([str(check), f"--keep={tmp_path / f'keep{k}'}", *map(str, paths)],
                              capture_output=True, text=True, timeout=1800, check=False)

    first = run(0, named[:1])
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = [first, *pool.map(run, [1, 2], [named[1::2], named[2::2]])]
    for res in results:
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert sum(r.stdout.count("OK ") for r in results) == len(files)
    # the tiles where mlir-aie's bank-aware allocation falls back are the ones the emitter notes
    logs = "".join(p.read_text() for k in (0, 1, 2) for p in (tmp_path / f"keep{k}").glob("*/*.log"))
    fallbacks = 0
    for f in named:
        if f.name.endswith(".generic.mlir"):
            continue
        lines = f.read_text().splitlines()
        noted = {tuple(map(int, m.groups())) for m in re.finditer(r"^// note: \w+ tile \((\d+), (\d+)\): a buffer",
                                                                   f.read_text(), re.M)}
        warned = set()
        for m in re.finditer(re.escape(str(f)) + r":(\d+):\d+: warning: Bank-aware allocation failed", logs):
            t = re.search(r"aie\.tile\((\d+), (\d+)\)", lines[int(m.group(1)) - 1])
            assert t, lines[int(m.group(1)) - 1]
            warned.add((int(t.group(1)), int(t.group(2))))
        assert noted == warned, (f.name, noted, warned)
        fallbacks += len(warned)
    assert fallbacks >= 3      # gemm-4x4x4's B buffers on three mem tiles, at least


def test_the_default_spelling_is_the_current_mlir_aie(tmp_path):
    out = tmp_path / "ffn"
    assert main(["solve", str(ROOT / "instances" / "mapping" / "ffn-2x4.json"), "--quiet", "--emit-dir",
                 str(out)]) == 0
    text = (out / "ffn-2x4.mlir").read_text()
    assert "    aie.runtime_sequence @sequence(" in text and "aiex.runtime_sequence" not in text
    assert main(["solve", str(ROOT / "instances" / "mapping" / "ffn-2x4.json"), "--quiet", "--emit-dir",
                 str(tmp_path / "bad"), "--mlir-aie-version", "v2"]) == 2
