"""The functional model of mapped AIE designs (dfopt.codegen.aie.sim, .mapping.functional): every
shipped design and the exact model's answers move the data the mapping says; a depth, link
offset or transfer changed in the design is a named fault; random pipelines through the model
deliver their input; ``make sim`` in an emitted folder passes."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.mapping_designs import DESIGNS, solved

from dfopt.cli import main
from dfopt.codegen.aie.design import (
    AieDesign,
    Core,
    DmaTransfer,
    DmaWait,
    FifoAccess,
    HostBuffer,
    ObjectFifo,
    Runtime,
    Tile,
)
from dfopt.codegen.aie.mapping import design_from_mapping
from dfopt.codegen.aie.mapping.functional import functional_check
from dfopt.codegen.aie.sim import run

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", DESIGNS)
def test_every_shipped_design_moves_the_data_the_mapping_says(name):
    inst, sol = solved(name)
    report = functional_check(inst, sol)
    assert report.run.ok and report.faults == [], report.faults
    assert report.summary["objects"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", DESIGNS)
def test_the_exact_models_answers_too(name):
    inst, sol = solved(name, "cpsat")
    report = functional_check(inst, sol)
    assert report.faults == [], report.faults


def _changed(design: AieDesign, **fields) -> AieDesign:
    return dataclasses.replace(design, **fields)


def test_a_fifo_too_shallow_for_its_chunks_deadlocks_and_is_named():
    inst, sol = solved("ffn-2x4")
    d = design_from_mapping(inst, sol)
    big = next(a for c in d.cores for a in c.accesses if a.count > 1)
    fifos = tuple(dataclasses.replace(f, depth=big.count - 1) if f.name == big.fifo else f for f in d.fifos)
    report = functional_check(inst, sol, _changed(d, fifos=fifos))
    assert report.faults and all(f.startswith("deadlock") for f in report.faults)
    assert any(big.fifo in f and f"acquire {big.count} of fifo {big.fifo}" in f for f in report.faults), report.faults


def test_a_wrong_link_offset_is_named_with_the_tile_and_block():
    inst, sol = solved("ffn-2x4")
    d = design_from_mapping(inst, sol)
    k = next(i for i, ln in enumerate(d.links) if len(ln.dst_offsets) > 1)
    ln = d.links[k]
    swapped = dataclasses.replace(ln, dst_offsets=tuple(reversed(ln.dst_offsets)))
    report = functional_check(inst, sol, _changed(d, links=d.links[:k] + (swapped,) + d.links[k + 1:]))
    assert any("never receives block" in f for f in report.faults), report.faults
    assert any("receives block(s)" in f and "none of its members reads" in f for f in report.faults)


def test_a_shifted_output_transfer_is_named():
    inst, sol = solved("gemm-4x4x4")
    d = design_from_mapping(inst, sol)
    assert d.runtime is not None
    ops = list(d.runtime.ops)
    k = next(i for i, op in enumerate(ops) if isinstance(op, DmaTransfer) and op.buffer == "C")
    ops[k] = dataclasses.replace(ops[k], offsets=(0, 0, 0, ops[k].offsets[3] + 64))
    report = functional_check(inst, sol, _changed(d, runtime=dataclasses.replace(d.runtime, ops=tuple(ops))))
    assert any(f.startswith("output C") for f in report.faults), report.faults


def test_a_missing_input_transfer_blocks_the_cores_that_wait_for_it():
    inst, sol = solved("attention-2x4")
    d = design_from_mapping(inst, sol)
    assert d.runtime is not None
    ops = tuple(op for i, op in enumerate(d.runtime.ops) if i != 0)
    report = functional_check(inst, sol, _changed(d, runtime=dataclasses.replace(d.runtime, ops=ops)))
    assert report.faults and report.faults[0].startswith("deadlock"), report.faults


def _pipeline(numel: int, depth_in: int, depth_out: int, iters: int, take: int, cuts: list) -> AieDesign:
    """shim -> core (identity, ``take`` objects per iteration) -> shim, the output written by
    transfers cut at ``cuts`` (not object boundaries)."""
    total = numel * iters * take
    bounds = [0, *sorted({c % total for c in cuts if 0 < c % total}), total]
    outs = [DmaTransfer.linear("b", "y", hi - lo, lo) for lo, hi in zip(bounds, bounds[1:])]
    return AieDesign(
        tiles=(Tile(1, 0, "shim"), Tile(1, 2, "compute")),
        fifos=(ObjectFifo("a", (1, 0), ((1, 2),), "i32", (numel,), depth_in),
               ObjectFifo("b", (1, 2), ((1, 0),), "i32", (numel,), depth_out)),
        cores=(Core((1, 2), "copy", "copy.o", (FifoAccess("a", "consume", take), FifoAccess("b", "produce", take)),
                    iters),),
        runtime=Runtime((HostBuffer("x", "i32", (total,)), HostBuffer("y", "i32", (total,))),
                        (DmaTransfer.linear("a", "x", total), *outs, DmaWait("b"))))


def _identity(core, iteration, consumed, sizes):
    return [obj.copy() for objs in consumed for obj in objs]


@settings(max_examples=60, deadline=None)
@given(numel=st.integers(1, 16), iters=st.integers(1, 6), take=st.integers(1, 3),
       depth_in=st.integers(1, 4), depth_out=st.integers(1, 4), cuts=st.lists(st.integers(1, 500), max_size=4))
def test_random_pipelines_deliver_their_input_or_deadlock_exactly_when_a_fifo_is_too_shallow(
        numel, iters, take, depth_in, depth_out, cuts):
    d = _pipeline(numel, depth_in, depth_out, iters, take, cuts)
    x = np.arange(numel * iters * take, dtype=np.int64) * 7 + 3
    r = run(d, inputs={"x": x, "y": np.zeros_like(x)}, kernels={(1, 2): _identity})
    if depth_in >= take and depth_out >= take:
        assert r.ok and np.array_equal(r.outputs["y"], x)
        assert r.objects == {"a": iters * take, "b": iters * take}
    else:
        assert not r.ok and r.blocked and "acquire" in r.blocked[0]


def test_make_sim_in_an_emitted_folder(tmp_path, capsys):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = tmp_path / "design"
    assert main(["solve", str(ROOT / "instances/mapping/ffn-4x4.json"), "--quiet", "--emit-dir", str(out)]) == 0
    assert {"Makefile", "ffn-4x4.generic.mlir", "ffn-4x4.mlir", "sim.json"} <= {p.name for p in out.iterdir()}
    done = subprocess.run(["make", "-C", str(out), "sim"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.count("PASS") == 2 and "functional model" in done.stdout, \
        done.stdout + done.stderr
