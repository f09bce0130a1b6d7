"""HLS C++ of sparse kernels (``dfopt.codegen.sam_hls``): every shipped kernel emitted from its solved
design, built and run under both C-simulation models — dfopt's threaded runtime (``make csim``:
concurrent processes, bounded FIFOs) and AMD's ``hls_stream.h`` model (``make csim-vitis``: one
process after another, in call order) —, PASS against the reference evaluator, and the tokens the
processes counted on every stream equal to the token-level run's; random small SpMV and Plus2
inputs through ``dfopt.sparse.compile_kernel`` (hypothesis: empty rows, all-zero tensors, one
nonzero), checked against NumPy too; the stop tokens of empty fibres above the innermost level; the emitted FIFO depths and call order read back from the code;
designs the emitter refuses.

The shipped designs are emitted once per module and built two at a time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dfopt
from dfopt.api import make_options
from dfopt.codegen.sam_hls import write_hls
from dfopt.codegen.sam_hls.layout import GENERATORS
from dfopt.errors import CodegenError
from dfopt.ir.sparse.sam import lower
from dfopt.models.sparse import prepare
from dfopt.sim.sparse import run_streams, simulate
from dfopt.sim.sparse.streams import encode
from tools import tool

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.stem for p in (ROOT / "instances" / "sparse").glob("*.json"))
FAST = "CXXFLAGS=-std=c++14 -O0 -pthread -Wno-unknown-pragmas"     # builds faster; the runs are short
TIMEOUT = 300
TOKENS = re.compile(r"^tokens (\S+) (\d+)$", re.M)


def run_both(design: Path, vitis: Path) -> dict:
    """``make csim`` and ``make csim-vitis`` of ``design``, side by side: target -> (exit code,
    stdout, stderr, wall seconds)."""
    start = time.perf_counter()
    procs = {t: subprocess.Popen(["make", "-s", "-C", str(design), t, FAST, f"VITIS_STREAM={vitis}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t in ("csim", "csim-vitis")}
    out = {}
    for target, p in procs.items():
        stdout, stderr = p.communicate(timeout=TIMEOUT)
        out[target] = (p.returncode, stdout, stderr, time.perf_counter() - start)
    return out


def assert_pass(runs: dict) -> dict:
    """Both models PASS; the tokens each printed per stream (the same in both)."""
    counts = {}
    for target, (code, stdout, stderr, _) in runs.items():
        assert code == 0 and "PASS" in stdout.splitlines(), (target, stdout[-2000:], stderr[-2000:])
        counts[target] = {name: int(n) for name, n in TOKENS.findall(stdout)}
    assert counts["csim"] == counts["csim-vitis"]
    return counts["csim"]


def emit(design, prep, out: Path, name: str):
    """The project of ``design`` in ``out``, its summary, and an independent run of the same graph."""
    summary = write_hls(prep, design, out, name)
    graph = lower(prep.concrete, summary["methods"], word_bits=prep.machine.word_bits)
    return summary, simulate(graph, prep.tensors)


def assert_tokens(counts: dict, summary: dict, sim) -> None:
    """Every stream of the graph carries the run's tokens (the stop tokens of empty fibres above the
    innermost level included)."""
    assert summary["tokens"] == sim.streams
    for stream, n in sim.streams.items():
        assert counts[stream] == n, stream


def spgemm_with_empty_rows(folder: Path) -> Path:
    """Gustavson's SpGEMM on a matrix with empty rows: depth-3 streams whose rows have no fibre
    below them, each a stop token of its own."""
    a = np.zeros((6, 5))
    a[0, 1], a[0, 4], a[2, 0], a[3, 3], a[5, 2], a[5, 4] = 1, 2, 3, 4, 5, 6
    b = np.zeros((5, 6))
    b[1, 0], b[4, 5], b[0, 2], b[3, 3], b[3, 1], b[2, 2] = 7, 8, 9, 1, 2, 3
    return write_instance(folder, "spgemm-rows", "C(i,j) = A(i,k) * B(k,j)",
                          {"A": ("csr", a), "B": ("csr", b), "C": ("csr", None)},
                          [{"command": "reorder", "order": ["i", "k", "j"]},
                           {"command": "precompute", "index": "k", "workspace": "row", "format": "sparse"}])


def write_instance(folder: Path, name: str, expression: str, tensors: dict, schedule=()) -> Path:
    """A sparse instance over in-memory arrays (``tensors``: name -> (format, dense array or None
    for the result)), its data as ``.npz`` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    decls = {}
    for t, (fmt, arr) in tensors.items():
        decls[t] = {"format": fmt}
        if arr is not None:
            arr = np.asarray(arr)
            nz = np.nonzero(arr)
            np.savez(folder / f"{t}.npz", coords=np.stack(nz, axis=1).astype(np.int64), values=arr[nz],
                     shape=np.asarray(arr.shape, dtype=np.int64))
            decls[t]["data"] = f"{t}.npz"
    raw = {"format": "dfopt-instance/1", "problem": "sparse", "name": name, "platform": "capstan",
           "sparse": {"expression": expression, "tensors": decls, **({"schedule": list(schedule)} if schedule else {})}}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """name -> (summary, the independent run, the two models' results) of every shipped kernel, and
    of SpGEMM with empty rows."""
    vitis = tool("vitis-stream")
    root = tmp_path_factory.mktemp("sam-hls")
    paths = {n: ROOT / "instances" / "sparse" / f"{n}.json" for n in SHIPPED}
    paths["spgemm-rows"] = spgemm_with_empty_rows(root / "instances")
    emitted = {}
    for name, path in paths.items():
        inst = dfopt.load(path)
        sol = dfopt.solve(path, time_limit=20)
        prep = prepare(inst, make_options(inst))
        emitted[name] = emit(sol.decision, prep, root / name, name.replace("-", "_"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(emitted, pool.map(lambda n: run_both(root / n, vitis), emitted)))
    return {n: (*emitted[n], runs[n], root / n) for n in emitted}


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_kernel_passes_both_models_with_the_runs_tokens(shipped, name):
    summary, sim, runs, _ = shipped[name]
    assert_tokens(assert_pass(runs), summary, sim)


def test_empty_rows_get_their_own_stop_tokens(shipped):
    summary, sim, runs, design = shipped["spgemm-rows"]
    inst = dfopt.load(design.parent / "instances" / "spgemm-rows.json")
    prep = prepare(inst, make_options(inst))
    graph = lower(prep.concrete, summary["methods"], word_bits=prep.machine.word_bits)
    streams = run_streams(graph, prep.tensors)
    empties = {name: s.empty_above for name, s in streams.items() if s.empty_above}
    assert empties and all(streams[name].depth >= 3 for name in empties)
    assert_tokens(assert_pass(runs), summary, sim)


def _processes(design: Path) -> list[tuple[str, list[str]]]:
    top = (design / "top.cpp").read_text()
    return [(fn, [a.strip() for a in args.split(",")]) for fn, args in re.findall(r"DFOPT_PROCESS\((\w+)\((.*)\)\);", top)]


def _signatures(design: Path) -> dict[str, list[str]]:
    decls = re.findall(r"^void (\w+)\((.*)\);$", (design / "kernels.h").read_text(), re.M)
    return {fn: [p.split()[-1].lstrip("*&") for p in params.split(", ")] for fn, params in decls}


def window_tokens_by_decoding(stream, window: int) -> int:
    """The most tokens of ``window`` consecutive outermost-loop coordinates in the stream's token
    list: its tokens cut after each stop that closes a fibre at nesting 1 (each leaf at depth 1)."""
    tokens, depth = encode(stream)[:-1], stream.depth
    if depth < 2:
        return min(window, max(1, len([t for t in tokens if not isinstance(t, str)])))
    per, run = [], 0
    for t in tokens:
        run += 1
        if isinstance(t, str) and int(t[1:].partition("E")[0]) >= depth - 2:
            per, run = per + [run], 0
    per = per + [run] if run else per
    return max(sum(per[i:i + window]) for i in range(max(1, len(per) - window + 1)))


def _declared_depths(design: Path) -> dict[str, int]:
    top = (design / "top.cpp").read_text()
    pattern = r'hls::stream<\w+> \w+\("([^"]+)"\);\n#pragma HLS stream variable=\w+ depth=(\d+)'
    return {name: int(d) for name, d in re.findall(pattern, top)}


@pytest.mark.parametrize("name", ["spmv-karate", "plus3-csf", "spgemm-rows", "mattransmul-airfoil"])
def test_code_declares_the_runs_depths_and_calls_producers_first(shipped, name):
    summary, sim, _, design = shipped[name]
    inst = dfopt.load(design.parent / "instances" / f"{name}.json" if name == "spgemm-rows" else
                      ROOT / "instances" / "sparse" / f"{name}.json")
    prep = prepare(inst, make_options(inst))
    streams = run_streams(lower(prep.concrete, summary["methods"], word_bits=prep.machine.word_bits), prep.tensors)
    assert "as many consecutive iterations of" in (design / "top.cpp").read_text()
    depths, window = _declared_depths(design), len(summary["processes"]) + 1
    for stream, n in sim.streams.items():
        assert depths[stream] == max(2, min(n, window_tokens_by_decoding(streams[stream], window) + 2)), stream
    if name in ("spmv-karate", "mattransmul-airfoil"):     # more outermost iterations than the window
        assert any(depths[s] < n for s, n in sim.streams.items() if n > 2 and streams[s].depth >= 1)
    signatures = _signatures(design)
    writer, reader = {}, {}
    for i, (fn, args) in enumerate(_processes(design)):
        for param, arg in zip(signatures[fn], args):
            if param.startswith("o_"):
                assert arg not in writer, arg
                writer[arg] = i
            elif param.startswith("i_"):
                assert arg not in reader, arg
                reader[arg] = i
    assert set(writer) == set(reader) and len(writer) == len(depths)
    assert all(writer[s] < reader[s] for s in writer)
    manifest = json.loads((design / "design.json").read_text())
    assert [p["name"] for p in manifest["processes"]] == [fn for fn, _ in _processes(design)]


def test_vitis_script_builds_the_makefiles_sources(shipped):
    """AMD's model's own script (sources from the Makefile's SRCS line): PASS, no read of an empty
    stream (every process is called after its producers)."""
    from csim import skip_without_gxx

    skip_without_gxx()
    script = tool("vitis-stream") / "csim-vitis.sh"
    design = shipped["mattransmul-airfoil"][3]
    res = subprocess.run([str(script), str(design)], capture_output=True, text=True, timeout=TIMEOUT,
                         env={**os.environ, "CXXFLAGS_EXTRA": "-O0"})
    assert res.returncode == 0 and res.stdout == f"PASS {design}\n", res.stdout + res.stderr


def test_binding_decides_how_each_array_is_read(shipped):
    summary, _, _, design = shipped["spgemm-knot"]
    kernels = (design / "kernels.cpp").read_text()
    top = (design / "top.cpp").read_text()
    for array, memory in summary["arrays"].items():
        var = array.replace(".", "_")
        assert f"m_axi port={var} " in top, array
        if memory in ("sram", "sparse_sram"):
            assert re.search(rf"#pragma HLS bind_storage variable={var}_ram type=ram_2p impl=(bram|uram)", kernels)
        elif memory == "fifo":
            assert re.search(rf"sam::InOrder<[\w:]+> {var}_rd\({var}\)|sam::\w+Out<[\w:]+> {var}_w\({var},",
                             kernels), array
    assert set(summary["arrays"].values()) >= {"fifo", "sram"}


# -- random small inputs -----------------------------------------------------------------------------

def _values(rng, shape, ints: bool) -> np.ndarray:
    return rng.integers(1, 9, shape).astype(np.int64) if ints else rng.normal(size=shape)


@st.composite
def sparse_matrices(draw, count: int = 1):
    """``count`` matrices of one small shape: random, with empty rows, all zero or one nonzero."""
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    ints = draw(st.booleans())
    out = []
    for _ in range(count):
        kind = draw(st.sampled_from(["random", "empty_rows", "zero", "one"]))
        a = _values(rng, (m, n), ints) * (rng.random((m, n)) < draw(st.sampled_from([0.2, 0.5, 0.9])))
        if kind == "empty_rows":
            a[rng.random(m) < 0.5] = 0
        elif kind == "zero":
            a[:] = 0
        elif kind == "one":
            a[:] = 0
            a[rng.integers(m), rng.integers(n)] = _values(rng, (), ints)
        out.append(a)
    return out


def _compiled(tmp: Path, expression: str, tensors: dict, schedule=()):
    """The design ``compile_kernel`` solves for ``tensors`` (name -> (format, dense array or None)),
    and the problem data of the same kernel from an instance over the same arrays."""
    decls = {t: {"format": f, **({} if a is None else {"data": sp.csr_array(a) if f == "csr" else a})}
             for t, (f, a) in tensors.items()}
    sol = dfopt.sparse.compile_kernel(expression, decls, schedule=list(schedule) or None, time_limit=10)
    assert sol.ok
    inst = dfopt.load(write_instance(tmp / "instance", "kernel", expression, tensors, schedule))
    prep = prepare(inst, make_options(inst))
    assert list(prep.sim.result.shape) == sol.sections["sparse"]["result"]["shape"]
    return sol.decision, prep


def _out(design: Path, array: str, dtype) -> np.ndarray:
    return np.fromfile(design / "data" / f"{array}.out.bin", dtype=dtype)


def _check_random(tmp: Path, expression: str, tensors: dict, numpy_result: np.ndarray, read_result,
                  schedule=()) -> None:
    design, prep = _compiled(tmp, expression, tensors, schedule)
    out = tmp / "hls"
    summary, sim = emit(design, prep, out, "kernel")
    assert_tokens(assert_pass(run_both(out, tool("vitis-stream"))), summary, sim)
    np.testing.assert_allclose(read_result(out, numpy_result.dtype), numpy_result, rtol=1e-9, atol=1e-12)


EMPTY_ROWS = np.array([[0, 0, 0], [4, 0, 1], [0, 0, 0], [0, 0, 0]])


def test_random_spmv_matches_numpy(tmp_path):
    tool("vitis-stream")

    @settings(max_examples=2, deadline=None, database=None)
    @given(sparse_matrices(), st.integers(0, 2**16))
    @example([np.zeros((3, 4))], 1)
    @example([np.array([[0.0, 0.0], [0.0, 2.5], [0.0, 0.0]])], 2)
    def check(mats, seed):
        a = mats[0]
        x = _values(np.random.default_rng(seed), a.shape[1], a.dtype.kind == "i")
        y = a @ x

        def read(out, dtype):
            return _out(out, "y.vals", "<i8" if y.dtype.kind == "i" else "<f8")

        _check_random(tmp_path / "spmv", "y(i) = A(i,j) * x(j)",
                      {"A": ("csr", a), "x": ("dense", x), "y": ("dense", None)}, y, read)

    check()


def test_random_plus2_matches_numpy(tmp_path):
    tool("vitis-stream")

    @settings(max_examples=2, deadline=None, database=None)
    @given(sparse_matrices(count=2))
    @example([np.eye(3, 5), np.zeros((3, 5))])
    @example([EMPTY_ROWS, np.array([[0, 0, 0], [0, 0, 0], [0, 2, 0], [0, 0, 0]])])
    def check(mats):
        a, b = mats
        c = a + b

        def read(out, dtype):
            pos, crd = _out(out, "C.1.pos", "<i4"), _out(out, "C.1.crd", "<i4")
            vals = _out(out, "C.vals", "<i8" if c.dtype.kind == "i" else "<f8")
            return sp.csr_array((vals, crd, pos), shape=c.shape).toarray()

        _check_random(tmp_path / "plus2", "C(i,j) = A(i,j) + B(i,j)",
                      {"A": ("csr", a), "B": ("csr", b), "C": ("csr", None)}, c, read)

    check()


def _read_csr(name: str, shape, ints: bool):
    def read(out, dtype):
        pos, crd = _out(out, f"{name}.1.pos", "<i4"), _out(out, f"{name}.1.crd", "<i4")
        vals = _out(out, f"{name}.vals", "<i8" if ints else "<f8")
        return sp.csr_array((vals, crd, pos), shape=shape).toarray()
    return read


def test_random_spgemm_matches_numpy(tmp_path):
    """Gustavson's SpGEMM (a sparse workspace, depth-3 streams): empty rows of A give empty fibres
    above the innermost level, each a stop token of its own, counted alike by the run and the code."""
    tool("vitis-stream")

    @settings(max_examples=2, deadline=None, database=None)
    @given(sparse_matrices(count=2))
    @example([EMPTY_ROWS, np.array([[0, 1, 0], [0, 0, 0], [2, 0, 3], [0, 0, 0]])])
    def check(mats):
        a, b = mats[0], mats[1].T
        c = a @ b
        _check_random(tmp_path / "spgemm", "C(i,j) = A(i,k) * B(k,j)",
                      {"A": ("csr", a), "B": ("csr", b), "C": ("csr", None)}, c,
                      _read_csr("C", c.shape, c.dtype.kind == "i"),
                      [{"command": "reorder", "order": ["i", "k", "j"]},
                       {"command": "precompute", "index": "k", "workspace": "row", "format": "sparse"}])

    check()


# -- refused designs -----------------------------------------------------------------------------------

def _spmv_karate():
    path = ROOT / "instances" / "sparse" / "spmv-karate.json"
    inst = dfopt.load(path)
    return inst, dfopt.solve(path, time_limit=20).decision, prepare(inst, make_options(inst))


def test_coo_result_is_refused_naming_its_writer(tmp_path):
    a = np.array([[1, 0, 2], [0, 0, 3]])
    inst = dfopt.load(write_instance(tmp_path, "coo", "C(i,j) = A(i,j) * A(i,j)", {"A": ("csr", a),
                                                                                   "C": ("coo", None)}))
    design = dfopt.solve(inst, time_limit=10).decision
    with pytest.raises(CodegenError, match=r"write_C\.0 \(writer\).*COO"):
        write_hls(prepare(inst, make_options(inst)), design, tmp_path / "out", "coo")
    assert not (tmp_path / "out").exists()


def test_unbound_array_and_unknown_kind_are_refused(tmp_path, monkeypatch):
    from dataclasses import replace

    _, design, prep = _spmv_karate()
    unbound = replace(design, binding={k: v for k, v in design.binding.items() if k != "x.vals"})
    with pytest.raises(CodegenError, match=r"array_x \(array\).*'x\.vals'"):
        write_hls(prep, unbound, tmp_path / "a", "spmv")
    monkeypatch.delitem(GENERATORS, "reducer")
    with pytest.raises(CodegenError, match=r"reduce_j: kind 'reducer' has no HLS process"):
        write_hls(prep, design, tmp_path / "b", "spmv")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
