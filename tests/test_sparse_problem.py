"""``problem: sparse`` end to end: every shipped kernel solved by both formulations and checked,
the solved design never estimated slower than Stardust's rules, and the checker catching broken
bindings and wrong results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dfopt
from dfopt.models.sparse.decision import ArrayBinding, SparseDesign

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted((ROOT / "instances" / "sparse").glob("*.json"))


def _solve(path, formulation):
    return dfopt.solve(str(path), formulation=formulation, time_limit=20)


@pytest.mark.parametrize("path", KERNELS, ids=[p.stem for p in KERNELS])
def test_every_kernel_solves_checked_and_never_slower_than_stardust(path):
    base = _solve(path, "stardust")
    sol = _solve(path, "cpsat")
    for s in (base, sol):
        assert all(c.ok for c in s.checks), [c for c in s.checks if not c.ok]
    sec = sol.sections["sparse"]
    assert sec["cycles"] <= sec["baseline"]["cycles"] == base.sections["sparse"]["cycles"]
    assert sec["result"]["nnz"] == base.sections["sparse"]["result"]["nnz"]


def _tampered(sol, **changes):
    d = sol.decision
    binding = dict(d.binding)
    binding.update(changes.pop("binding", {}))
    return SparseDesign(binding, changes.get("coiteration", dict(d.coiteration)), changes.get("inner", d.inner_par),
                        changes.get("outer", d.outer_par))


def _check(path, sol, design):
    data = sol.to_dict()
    data["sparse"] = {**data["sparse"], **design.to_json()}
    other = dfopt.solution.Solution.from_dict(data)
    return {c.name: c for c in dfopt.check(str(path), other)}


def test_the_checker_refuses_a_fifo_for_a_gather_and_an_overfull_sram():
    path = ROOT / "instances" / "sparse" / "spmv-karate.json"
    sol = _solve(path, "cpsat")
    gathered = [a for a, f in sol.sections["sparse"]["arrays"].items() if f["gather"]]
    assert gathered
    checks = _check(path, sol, _tampered(sol, binding={gathered[0]: ArrayBinding("fifo", 2)}))
    assert not checks["sparse-binding"].ok and "FIFO" in " ".join(checks["sparse-binding"].details)
    checks = _check(path, sol, _tampered(sol, binding={gathered[0]: ArrayBinding("sram", 0, 300)}))
    assert not checks["sparse-binding"].ok and "PMUs used, the machine has 200" in " ".join(
        checks["sparse-binding"].details)
    checks = _check(path, sol, _tampered(sol, binding={gathered[0]: ArrayBinding("sram", 0, 0)}))
    assert not checks["sparse-binding"].ok


def test_the_checker_refuses_sram_for_an_atomic_sparse_accumulation():
    path = ROOT / "instances" / "sparse" / "spgemm-knot.json"
    sol = _solve(path, "stardust")
    acc = [a for a, f in sol.sections["sparse"]["arrays"].items() if f["role"] == "accumulate"]
    assert acc and sol.decision.binding[acc[0]].memory == "sparse_sram"
    b = sol.decision.binding[acc[0]]
    checks = _check(path, sol, _tampered(sol, binding={acc[0]: ArrayBinding("sram", b.depth, b.pmus)}))
    assert not checks["sparse-binding"].ok and "sparse_sram" in " ".join(checks["sparse-binding"].details)


def test_the_checker_catches_a_changed_figure_and_a_wrong_result(monkeypatch):
    path = ROOT / "instances" / "sparse" / "spmv-karate.json"
    sol = _solve(path, "cpsat")
    data = sol.to_dict()
    data["sparse"]["cycles"] += 1
    checks = {c.name: c for c in dfopt.check(str(path), dfopt.solution.Solution.from_dict(data))}
    assert not checks["sparse-estimate"].ok
    import dfopt.ir.sparse.reference as reference

    real = reference.evaluate

    def off_by_one(*args, **kw):
        coo = real(*args, **kw)
        values = coo.values.copy()
        values[0] += 1
        return type(coo)(coo.shape, coo.coords, values)

    import sys

    monkeypatch.setattr(sys.modules["dfopt.models.sparse.checks"], "evaluate", off_by_one)
    checks = {c.name: c for c in dfopt.check(str(path), sol)}
    assert not checks["sparse-result"].ok


def test_emit_writes_the_result_the_binding_and_the_graph(tmp_path):
    import scipy.io

    path = ROOT / "instances" / "sparse" / "plus2-bar.json"
    sol = _solve(path, "cpsat")
    problem = dfopt.models.registry.get_problem("sparse")
    written = problem.emit(dfopt.load(str(path)), sol, tmp_path / "out")
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["C.mtx", "binding.md", "graph.dot", "hls", "plus2-bar.scala"]
    assert "Accel {" in (out / "plus2-bar.scala").read_text()
    assert "#pragma HLS dataflow" in (out / "hls" / "top.cpp").read_text()
    assert written["hls"]["processes"] == [p["name"] for p in
                                           json.loads((out / "hls" / "design.json").read_text())["processes"]]
    assert written["result"] == "C.mtx"
    c = scipy.io.mmread(out / "C.mtx")
    assert c.nnz == sol.sections["sparse"]["result"]["nnz"]
    assert "digraph" in (out / "graph.dot").read_text()


@pytest.mark.parametrize("target, files", [("tensor", ["C.mtx", "binding.md", "graph.dot"]),
                                           ("spatial", ["C.mtx", "binding.md", "graph.dot", "plus2-bar.scala"]),
                                           ("hls", ["C.mtx", "binding.md", "graph.dot", "hls"])])
def test_cli_target_chooses_what_is_written(tmp_path, capsys, target, files):
    from dfopt.cli import main

    out = tmp_path / "out"
    code = main(["solve", str(ROOT / "instances" / "sparse" / "plus2-bar.json"), "--time-limit", "10",
                 "--emit-dir", str(out), "--target", target, "--hls-depths", "stream", "--quiet"])
    assert code == 0 and sorted(p.name for p in out.iterdir()) == files
    said = capsys.readouterr().out
    assert ("the HLS C++ project to" in said) == (target == "hls") and ("Spatial program" in said) == (target == "spatial")
    if target == "hls":      # policy stream: every FIFO holds its whole stream
        manifest = json.loads((out / "hls" / "design.json").read_text())
        assert all(f["depth"] == max(2, f["tokens"]) for f in manifest["streams"] if f["tokens"] is not None)


def test_bad_data_is_reported_with_its_pointer(tmp_path):
    inst = json.loads((ROOT / "instances" / "sparse" / "spmv-karate.json").read_text())
    inst["sparse"]["tensors"]["x"]["data"] = {"random": {"seed": 1, "shape": [35], "density": 1.0}}
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(inst))
    with pytest.raises(dfopt.errors.InstanceError) as err:
        dfopt.solve(str(p), time_limit=5)
    assert "index 'j'" in str(err.value) and "/sparse/tensors/x/data" in str(err.value)


KERNELS_2D = {"spmv": ("y(i) = A(i,j) * x(j)", {"x": "vector", "y": "dense"}),
              "plus2": ("C(i,j) = A(i,j) + B(i,j)", {"B": "csr", "C": "csr"}),
              "elemmul": ("C(i,j) = A(i,j) * B(i,j)", {"B": "dcsr", "C": "dcsr"}),
              "spgemm": ("C(i,j) = A(i,k) * B(k,j)", {"B": "csr", "C": "csr"})}


def _matrix(draw, st, rows, cols):
    import numpy as np

    density = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 5, size=(rows, cols)) * (rng.random((rows, cols)) < density)
    return m


def test_random_kernels_solve_checked_by_both_formulations():
    import numpy as np
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data):
        kernel = data.draw(st.sampled_from(sorted(KERNELS_2D)))
        expression, formats = KERNELS_2D[kernel]
        n, m = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12))
        a = _matrix(data.draw, st, n, m)
        tensors = {"A": {"format": data.draw(st.sampled_from(["csr", "dcsr"])), "data": a}}
        if kernel == "spmv":
            tensors["x"] = {"format": "dense", "data": np.arange(1, m + 1)}
            tensors["y"] = {"format": "dense"}
        else:
            b = _matrix(data.draw, st, m if kernel == "spgemm" else n, data.draw(st.integers(1, 12))
                        if kernel == "spgemm" else m)
            tensors["B"] = {"format": formats["B"], "data": b}
            tensors["C"] = {"format": formats["C"]}
        schedule = [{"command": "reorder", "order": ["i", "k", "j"]}] if kernel == "spgemm" else None
        sols = [dfopt.sparse.compile_kernel(expression, tensors, schedule=schedule, formulation=f, time_limit=10)
                for f in ("stardust", "cpsat")]
        for sol in sols:
            assert all(c.ok for c in sol.checks), [c for c in sol.checks if not c.ok]
        assert sols[1].sections["sparse"]["cycles"] <= sols[0].sections["sparse"]["cycles"]
        want = a @ b if kernel == "spgemm" else (a @ np.arange(1, m + 1) if kernel == "spmv" else
                                                 (a + b if kernel == "plus2" else a * b))
        assert sols[1].sections["sparse"]["result"]["nnz"] == int(np.count_nonzero(want))

    run()


def test_a_discordant_loop_order_points_at_the_reorder_command(tmp_path):
    inst = json.loads((ROOT / "instances" / "sparse" / "spmv-karate.json").read_text())
    inst["sparse"]["schedule"].append({"command": "reorder", "order": ["j", "i"]})
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(inst))
    with pytest.raises(dfopt.errors.InstanceError) as err:
        dfopt.solve(str(p), time_limit=5)
    assert err.value.pointer == "/sparse/schedule/1/order" and "tensor 'A' stores 'i' above 'j'" in str(err.value)


def test_an_inline_rda_platform_changes_the_answer(tmp_path):
    inst = json.loads((ROOT / "instances" / "sparse" / "spmv-bar.json").read_text())
    capstan = json.loads((ROOT / "dfopt" / "ir" / "platforms" / "capstan.json").read_text())
    slow = dict(capstan, name="slow-dram")
    slow["rda"] = dict(capstan["rda"], dram_words_per_cycle=4)
    inst["platform"] = slow
    p = tmp_path / "slow.json"
    p.write_text(json.dumps(inst).replace("data/pyamg_bar.mtx", str(ROOT / "instances/sparse/data/pyamg_bar.mtx")))
    fast = _solve(ROOT / "instances" / "sparse" / "spmv-bar.json", "cpsat").sections["sparse"]
    sol = dfopt.solve(str(p), time_limit=20)
    sec = sol.sections["sparse"]
    assert all(c.ok for c in sol.checks) and sec["bottleneck"] == "dram"
    assert sec["dram_cycles"] == -(-sec["dram_words"] // 4) and sec["cycles"] > fast["cycles"]
    bad = dict(slow, rda={k: v for k, v in slow["rda"].items() if k != "banks"})
    inst["platform"] = bad
    p.write_text(json.dumps(inst))
    with pytest.raises(dfopt.errors.InstanceError, match="/platform/rda: the rda platform lacks banks"):
        dfopt.solve(str(p), time_limit=5)
