"""The numeric model of mapped AIE designs and the core kernels generated from it
(dfopt.codegen.aie.mapping.numeric, .glue, .folder): the shipped GEMM and FFN designs (the search's
and the exact model's) compute the program's numbers with the host-compiled op kernels; the
emitted core kernels, compiled on the host and run inside the design's data movement, do too
(``make sim``); the attention designs with cores that follow their members' op order (one loop
body cannot compute them, and says why); a changed link offset or a changed kernel is caught;
random programs; the host program's blocked layout."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.mapping_designs import solved

from dfopt.api import solve_instance
from dfopt.cli import main
from dfopt.codegen.aie.mapping.glue import Memory, host_check
from dfopt.codegen.aie.mapping.numeric import _errors, numeric_check, pack, unblock
from dfopt.dato.examples import ffn_program, gemm_program, program_from_spec
from dfopt.dato.graph import to_instance
from dfopt.errors import CodegenError, InstanceError
from dfopt.reference import to_bf16

ROOT = Path(__file__).resolve().parent.parent
COMPUTED = ["gemm-4x4x4", "gemm-npu2", "ffn-4x4", "ffn-2x4"]
ATTENTION = ["attention-4x4", "attention-2x4"]


def _need_cxx():
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("no C++ compiler")


@pytest.mark.parametrize("name", COMPUTED)
def test_the_shipped_designs_compute_the_programs_numbers(name):
    _need_cxx()
    inst, sol = solved(name)
    report = numeric_check(inst, sol)
    assert report.faults == [], report.faults
    assert report.errors and all(e <= (2 if report.dtypes[k] == "bf16" else 1e-4) for k, e in report.errors.items())
    assert report.kernels and report.summary["kernel_calls"] > 0
    assert all(not t.faults for t in report.traces)


@pytest.mark.slow
@pytest.mark.parametrize("name", COMPUTED)
def test_the_exact_models_answers_compute_them_too(name):
    _need_cxx()
    inst, sol = solved(name, "cpsat")
    if not sol.ok:
        pytest.skip(f"the exact model found no mapping within its limit ({sol.status})")
    assert numeric_check(inst, sol).faults == []


def _one_loop_body(monkeypatch):
    """Designs built without core programs in op order: every core one loop body."""
    import dfopt.codegen.aie.mapping as mapping

    monkeypatch.setattr(mapping, "_ordered", lambda design, m, spec: design)


@pytest.mark.parametrize("name", ATTENTION)
def test_one_loop_body_cannot_compute_attention_and_says_why(name, monkeypatch):
    """A loop that acquires every FIFO end of a tile in every iteration makes a core send a share
    of data its members compute only later (a member's whole query block, the rescale factors from
    the second block on, the row sums at the end): the model names the core, iteration and FIFO."""
    import dfopt.codegen.aie.mapping as mapping

    inst, sol = solved(name)
    _one_loop_body(monkeypatch)
    design, m = mapping._design(inst, sol)
    assert not any(c.steps for c in design.cores)
    report = numeric_check(inst, sol, kernels="numpy", built=(design, m))
    assert len(report.faults) == 1
    assert "before it is computed" in report.faults[0] and "iteration" in report.faults[0]


@pytest.mark.parametrize("name", ATTENTION)
def test_the_attention_designs_follow_the_op_order_and_compute_the_program(name):
    """With the program named, every attention core runs a program of steps in its members' op
    order (dfopt.codegen.aie.mapping.order): the same objects cross every FIFO as with one loop
    body, and the numbers are the program's, with the host-compiled kernels."""
    _need_cxx()
    inst, sol = solved(name)
    report = numeric_check(inst, sol)
    assert report.faults == [], report.faults
    assert all(c.steps for c in report.design.cores)
    assert any("members' op order" in n for n in report.design.notes)
    assert report.errors["O"] <= 2
    assert all(not t.faults for t in report.traces)
    for c, t in zip(report.design.cores, report.traces):
        assert len(t.calls) == c.calls() == sum(s.repeat for s in c.steps)
        assert set(t.call_kernels) == {s.kernel for s in c.steps} == set(t.entries)


def test_the_op_order_moves_what_one_loop_body_moves(monkeypatch):
    """The data-movement model of the stepped design moves the same objects over every FIFO as the
    one-loop design, and the functional check of the mapping accepts it."""
    import dfopt.codegen.aie.mapping as mapping
    from dfopt.codegen.aie.mapping.functional import functional_check
    from dfopt.codegen.aie.sim import run

    inst, sol = solved("attention-2x4")
    stepped, _ = mapping._design(inst, sol)
    _one_loop_body(monkeypatch)
    plain, _ = mapping._design(inst, sol)
    a, b = run(stepped), run(plain)
    assert a.ok and b.ok and a.objects == b.objects
    assert functional_check(inst, sol, stepped).faults == []


def test_a_changed_link_offset_gives_other_numbers(monkeypatch):
    """Swap the parts of a distribute link: the tag identities still reach some tile, but the
    numbers come out wrong (or a member never gets its block) -- a fault either way."""
    import dfopt.codegen.aie.mapping as mapping

    inst, sol = solved("gemm-4x4x4")
    design, m = mapping._design(inst, sol)
    k, link = next((k, ln) for k, ln in enumerate(design.links) if len(ln.dst_offsets) > 1
                   and len(set(ln.dst_offsets)) > 1)
    swapped = dataclasses.replace(link, dst_offsets=tuple(reversed(link.dst_offsets)))
    bad = dataclasses.replace(design, links=design.links[:k] + (swapped,) + design.links[k + 1:])
    monkeypatch.setattr(mapping, "_design", lambda *a: (bad, m))
    assert numeric_check(inst, sol, kernels="numpy").faults


def test_the_gemm_kernels_work_in_place():
    """Every value of every GEMM core's kernel sits in the objects it acquired (a product whose one
    use is an allreduce step accumulates on the partial sum): no copies, no arena, only op calls."""
    inst, sol = solved("gemm-4x4x4")
    for trace in numeric_check(inst, sol, kernels="numpy").traces:
        mem = Memory(trace)
        kept = [a for k, call in enumerate(trace.calls) for i, a in enumerate(call) if (k, i) not in mem.dropped]
        assert mem.arena_bytes == 0, trace.tile
        assert {a[0] for a in kept} <= {"op", "copy"}, (trace.tile, {a[0] for a in kept})


# -- the design folder -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("aie") / "ffn"
    assert main(["solve", str(ROOT / "instances/mapping/ffn-2x4.json"), "--quiet", "--emit-dir", str(out)]) == 0
    return out


def test_the_folder_has_the_kernels_host_and_data(folder):
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["Makefile", "cores", "data.npz", "design.json", "ffn-2x4.generic.mlir", "ffn-2x4.mlir", "host.py",
                     "include", "sim.json"]
    meta = json.loads((folder / "design.json").read_text())
    assert meta["kernels"]["status"] == "written" and len(meta["cores"]) == 8
    assert [b["name"] for b in meta["buffers"]] == ["W2", "W1", "X", "Y"]      # the runtime sequence's order
    assert [b["dir"] for b in meta["buffers"]] == ["in", "in", "in", "out"]
    mlir = (folder / "ffn-2x4.mlir").read_text()
    for core in meta["cores"]:          # every core links the object its own source builds
        assert (folder / core["source"]).exists()
        assert f'link_with = "{Path(core["object"]).name}"' in mlir


def test_make_sim_runs_the_emitted_kernels(folder):
    _need_cxx()
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-C", str(folder), "sim"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASS") == 2 and "core kernels on the host" in done.stdout


def test_a_changed_kernel_fails_make_sim(folder, tmp_path):
    """One core copies its products through instead of applying gelu: the outputs are wrong."""
    _need_cxx()
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    src = next(p for p in sorted((bad / "cores").iterdir()) if "dfopt::gelu<" in p.read_text())
    src.write_text(src.read_text().replace("dfopt::gelu<", "dfopt::convert<"))
    report = host_check(bad)
    assert report.faults and "from the program's numbers" in report.faults[0]


def test_the_toolchain_targets_say_what_is_missing(folder):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-C", str(folder), "kernels", "PEANO_INSTALL_DIR=/nonexistent"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no Peano clang++" in done.stderr
    done = subprocess.run(["make", "-C", str(folder), "xclbin", "PEANO_INSTALL_DIR=/nonexistent"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no Peano clang++" in done.stderr


def test_a_folder_without_kernels_says_why(tmp_path, monkeypatch):
    _one_loop_body(monkeypatch)
    out = tmp_path / "att"
    assert main(["solve", str(ROOT / "instances/mapping/attention-2x4.json"), "--quiet", "--emit-dir", str(out)]) == 0
    meta = json.loads((out / "design.json").read_text())
    assert meta["kernels"]["status"] == "not generated" and "before it is computed" in meta["kernels"]["reason"]
    assert not (out / "cores").exists() and not (out / "host.py").exists()
    if shutil.which("make") is not None:
        done = subprocess.run(["make", "-C", str(out), "kernels"], capture_output=True, text=True)
        assert done.returncode == 2 and "no core kernels" in done.stderr


def test_make_sim_passes_on_the_attention_design(tmp_path, capsys):
    """The stepped attention design's folder: one symbol per step signature in each core's file,
    declared in the MLIR, and ``make sim`` PASS with the emitted kernels. Its gemm1 pairs overflow
    their tiles' 64 KiB: design.json and the terminal say so and which bundles to keep apart."""
    _need_cxx()
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = tmp_path / "att"
    assert main(["solve", str(ROOT / "instances/mapping/attention-2x4.json"), "--quiet", "--emit-dir", str(out)]) == 0
    meta = json.loads((out / "design.json").read_text())
    assert meta["kernels"]["status"] == "written"
    assert 'options.mapping.max_members {"gemm1": 1}' in meta["kernels"]["reason"]
    assert "warning: the kernels' arenas and FIFO buffers exceed" in capsys.readouterr().out
    over = {tuple(c["tile"]) for c in meta["cores"] if c["over_memory"]}
    assert over and all(c["kernel"] == "gemm1" for c in meta["cores"] if tuple(c["tile"]) in over)
    mlir = (out / "attention-2x4.mlir").read_text()
    for core in meta["cores"]:
        text = (out / core["source"]).read_text()
        for symbol in re.findall(r'extern "C" void DFOPT_ENTRY\((\w+)\)', text):
            assert f"func.func private @{symbol}(" in mlir
    done = subprocess.run(["make", "-C", str(out), "sim"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASS") == 2


def test_keeping_the_overflowing_bundles_apart_leaves_no_gemm1_pair_over(tmp_path):
    """The suggestion followed: with max_members {"gemm1": 1} every gemm1 core fits; the mapping then
    pairs gemm0 and send_q instead, and the next suggestion names those."""
    out = tmp_path / "att"
    assert main(["solve", str(ROOT / "instances/mapping/attention-2x4.json"), "--quiet", "--emit-dir", str(out),
                 "--max-members", '{"gemm1": 1}']) == 0
    meta = json.loads((out / "design.json").read_text())
    assert not [c for c in meta["cores"] if c["kernel"] == "gemm1" and c["over_memory"]]
    assert '"gemm1"' not in meta["kernels"]["reason"] and "max_members" in meta["kernels"]["reason"]


def test_attention_at_128_rows_fits_every_core_of_the_2x4_region(tmp_path):
    """Half the rows: every core's arena, FIFO buffers and stack fit its 64 KiB, nothing to keep
    apart, and the numeric model gives the program's numbers."""
    from dfopt.instance.convert import dump

    spec = {"example": "attention", "args": {"seq": 128}}
    inst = to_instance(program_from_spec(spec), "att128", "npu1", {"columns": [1, 2], "rows": [2, 5]},
                       options={"program": spec})
    dump(inst, tmp_path / "att128.json")
    out = tmp_path / "att"
    assert main(["solve", str(tmp_path / "att128.json"), "--quiet", "--emit-dir", str(out)]) == 0
    meta = json.loads((out / "design.json").read_text())
    assert meta["kernels"] == {"status": "written", "reason": ""}
    assert meta["cores"] and not [c for c in meta["cores"] if c["over_memory"]]


def test_make_sim_skips_the_kernels_of_an_instance_without_its_program(tmp_path):
    from dfopt.instance.convert import dump

    inst = to_instance(gemm_program(64, 2, loaders=False), "plain", "npu1", {"columns": [0, 3], "rows": [2, 5]})
    dump(inst, tmp_path / "plain.json")
    out = tmp_path / "plain"
    assert main(["solve", str(tmp_path / "plain.json"), "--quiet", "--emit-dir", str(out)]) == 0
    assert json.loads((out / "design.json").read_text())["kernels"]["status"] == "no program"
    if shutil.which("make") is not None:
        done = subprocess.run(["make", "-C", str(out), "sim"], capture_output=True, text=True)
        assert done.returncode == 0 and "core kernels: skipped" in done.stdout, done.stdout + done.stderr


def test_the_host_program_packs_as_the_design_reads(folder):
    """host.py's blocked layout (numpy only) is the numeric model's: the inputs it would write equal
    the buffers the model runs on, and its unpacking of the model's outputs gives the outputs."""
    spec = importlib.util.spec_from_file_location("host", folder / "host.py")
    host = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(host)
    meta = json.loads((folder / "design.json").read_text())
    data = np.load(folder / "data.npz")
    inst, sol = solved("ffn-2x4")
    report = numeric_check(inst, sol, tensors={k[3:]: data[k] for k in data.files if k.startswith("in_")},
                           kernels="numpy")
    for b in meta["buffers"]:
        if b["dir"] == "in":
            raw = host.pack(data[f"in_{b['name']}"], b["counts"], b["dtype"])
            assert np.array_equal(raw.view("<u4").astype(np.int64), pack(data[f"in_{b['name']}"], b["counts"],
                                                                           b["dtype"]))
        else:
            words = report.run.outputs[b["name"]]
            got = host.unpack(words.astype("<u4").view(np.uint8), b["counts"], b["dtype"], b["shape"])
            assert np.array_equal(got, report.outputs[b["name"]])
            scale = data[f"scale_{b['name']}"] if f"scale_{b['name']}" in data.files else None
            assert scale is not None                 # Y is the FFN's allreduce result
            assert host.error(got, data[f"out_{b['name']}"], b["dtype"], scale) == report.errors[b["name"]] <= 2


def test_a_bf16_sum_whose_terms_cancel_is_measured_in_the_ulps_of_its_terms():
    """30.25 + -38.75 rounded along the chain: -8.5 is exact only to the ulps of 38.75 (0.25), so
    -8.25 is one ulp off at the chain's scale but four at its own magnitude."""
    got, ref = np.array([-8.25], np.float32), np.array([-8.5], np.float32)
    assert float(_errors(got, ref, "bf16")[0]) == 4.0
    assert float(_errors(got, ref, "bf16", np.array([38.75], np.float32))[0]) == 1.0
    # the scale never shrinks the magnitude an element is measured at
    assert float(_errors(got, ref, "bf16", np.array([0.5], np.float32))[0]) == 4.0


def test_an_ffn_whose_partial_sums_cancel_computes_its_numbers():
    """A case the random programs found: Y[16, 34] is -8.375 from partial sums 30.2 and -38.6, and
    the chain's rounding of the first prefix differs by one ulp of 38.6 from NumPy's (4 ulps of
    8.375): within the allowed error at the scale of its terms."""
    program = ffn_program(tokens=64, d=64, hidden=64, chunks=2)
    inst = to_instance(program, "random", "npu1", {"columns": [1, 2], "rows": [2, 5]})
    sol = solve_instance(inst, seed=65536 % 7)
    rng = np.random.default_rng(65536)
    rec = program.record()
    loaded = {op.name for i in rec.instances.values() for op in i.ops if op.kind == "load"}
    tensors = {name: rng.standard_normal(t.type.shape).astype(np.float32) for name, t in rec.tensors.items()
               if name in loaded}
    report = numeric_check(inst, sol, program, tensors=tensors, kernels="numpy")
    assert report.faults == [] and report.errors["Y"] <= 2
    assert float(report.scale["Y"][16, 34]) > 30 > abs(float(report.reference["Y"][16, 34]))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["bf16", "f32"]), st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=3),
       st.integers(1, 3), st.integers(0, 2 ** 31))
def test_blocked_layout_round_trips(dtype, counts, inner, seed):
    shape = tuple(c * inner for c in counts)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x = to_bf16(x) if dtype == "bf16" else x
    width = 2 if dtype == "bf16" else 4
    words = "i32" if x.size * width % 4 == 0 else "i8"      # what a design uses for such a buffer
    raw = pack(x, counts, dtype, words)
    raw = raw.astype("<u4").view(np.uint8) if words == "i32" else raw.astype(np.uint8)
    assert np.array_equal(unblock(raw, counts, dtype, shape), x)
    # block (0, ..., 0) is the first run of the buffer
    first = x[tuple(slice(0, inner) for _ in shape)]
    assert np.array_equal(unblock(raw[:first.size * width], (1,) * len(shape), dtype, first.shape), first)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["gemm", "gemm-loaders", "ffn"]), st.sampled_from([32, 64]), st.integers(0, 2 ** 16))
def test_random_programs_compute_their_numbers(kind, size, seed):
    """GEMM (both forms) and FFN programs at random sizes, mapped by the search: the numeric model
    gives the program's numbers (or the design builder says why there is no design)."""
    if kind == "ffn":
        program, region = ffn_program(tokens=size, d=size, hidden=size, chunks=2), {"columns": [1, 2], "rows": [2, 5]}
    else:
        program, region = gemm_program(size * 2, 2, loaders=kind == "gemm-loaders"), {"columns": [0, 3],
                                                                                      "rows": [2, 5]}
    inst = to_instance(program, "random", "npu1", region)
    sol = solve_instance(inst, seed=seed % 7)
    assume(sol.ok)
    rng = np.random.default_rng(seed)
    tensors = {name: rng.standard_normal(t.type.shape).astype(np.float32)
               for name, t in program.record().tensors.items()
               if any(op.kind == "load" and op.name == name for i in program.record().instances.values() for op in i.ops)}
    try:
        report = numeric_check(inst, sol, program, tensors=tensors, kernels="numpy")
    except CodegenError as err:
        assume(False), err
        return
    assert report.faults == [], report.faults


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([2, 4]), st.sampled_from([32, 64]), st.sampled_from([32, 64]), st.booleans(),
       st.integers(0, 2 ** 16))
def test_random_attention_programs_compute_their_numbers(blocks, rows, dim, wide, seed):
    """Attention programs at random shapes on a 4x4 or 2x4 region, naming their program: the cores
    run one loop body where it computes the program and their members' op order where it does not;
    either way the numeric model gives the program's numbers."""
    spec = {"example": "attention", "args": {"seq": blocks * rows, "dim": dim, "blocks": blocks}}
    region = {"columns": [0, 3] if wide else [1, 2], "rows": [2, 5]}
    inst = to_instance(program_from_spec(spec), "random", "npu1", region, options={"program": spec})
    sol = solve_instance(inst, seed=seed % 7)
    assume(sol.ok)
    try:
        report = numeric_check(inst, sol, kernels="numpy", seed=seed)
    except CodegenError as err:
        assume(False), err
        return
    assert report.faults == [], report.faults


def test_the_op_order_program_is_the_same_every_time():
    import dfopt.codegen.aie.mapping as mapping

    inst, sol = solved("attention-2x4")
    assert mapping._design(inst, sol)[0] == mapping._design(inst, sol)[0]


def test_an_instance_names_its_program_or_is_told():
    assert program_from_spec({"example": "ffn", "args": {"tokens": 64, "d": 64, "hidden": 64}}).name == "ffn"
    for spec, where in [({"example": "conv"}, "example"), ({"example": "gemm", "args": {"depth": 2}}, "depth"),
                        ({"example": "gemm", "args": {"size": 1 << 20}}, "size"),
                        ({"example": "gemm", "args": {"loaders": 1}}, "loaders"), ("gemm", "program")]:
        with pytest.raises(InstanceError) as err:
            program_from_spec(spec)
        assert where in str(err.value)
    inst = to_instance(gemm_program(64, 2, loaders=False), "plain", "npu1", {"columns": [0, 3], "rows": [2, 5]})
    with pytest.raises(CodegenError, match="does not name the Dato program"):
        numeric_check(inst, solve_instance(inst))
