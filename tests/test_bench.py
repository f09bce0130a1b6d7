"""The benchmarking harness: suites, isolated runs, records and reports (dfopt.bench)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import textwrap
from pathlib import Path

import pytest

from dfopt.bench import load_suite, main_bench, plan_runs, suite_from_dict
from dfopt.bench.report import (
    geomean,
    performance_profile,
    performance_ratios,
    primal_integral,
    render_markdown,
    shifted_geomean,
    summary_rows,
    write_profile_png,
)
from dfopt.bench.runner import extract
from dfopt.bench.suite import check_formulations
from dfopt.errors import InstanceError
from dfopt.models import registry

ROOT = Path(__file__).resolve().parents[1]

# A stand-in fifo model, written to a temporary module that the worker processes import too.
FAKE_MODEL = textwrap.dedent('''
    import time
    from dataclasses import dataclass

    from dfopt.errors import InstanceError
    from dfopt.models import registry
    from dfopt.models.base import Outcome, Problem, Simple
    from dfopt.models.fifo.decision import FifoDepths
    from dfopt.models.options import CommonOptions, option
    from dfopt.results import Termination
    from dfopt.solution import Check

    @dataclass(frozen=True)
    class Options(CommonOptions):
        objective: str = option("depth", "what to minimise")

    def prepare(instance, options):
        g = instance.graph
        if any(s.width == 3 for s in g.streams.values()):
            raise InstanceError("the fake model rejects width 3", pointer="/graph/streams/0/width")
        return g

    def formulation(factor, sleeps):
        def solve(g, options):
            if sleeps and len(g.kernels) > 5:
                time.sleep(60)  # ignores its time limit: only the outer timeout stops it
            depths = {n: factor * s.tokens for n, s in g.streams.items()}
            total = sum(depths.values())
            return Outcome(FifoDepths(depths), Termination.OPTIMAL, bound=total, solver=options.solver or "fake",
                           stats={"time_build_s": 0.25, "time_solve_s": 0.5,
                                  "incumbents": [[0.1, 2 * total], [0.3, total]]})
        return solve

    def checks(instance, options, solution):
        ok = (options.formulation or "fast") == "fast"
        return [Check("simulated", ok, [] if ok else ["stalls"])]

    PROBLEM = Problem(
        info=registry.info("fifo"), options=Options, decision=FifoDepths, prepare=prepare,
        formulations=(Simple("fast", formulation(1, False), description="x1 tokens"),
                      Simple("slow", formulation(2, True), description="x2 tokens; sleeps on graphs over 5 kernels")),
        default="fast", objective=lambda g, d: sum(d.depths.values()),
        report=lambda g, outcome, options: {"total_depth": sum(outcome.decision.depths.values()), "makespan": 10},
        checks=checks, summary=lambda instance, solution: [])
''')


def _instance(name: str, width: int = 32) -> dict:
    return {"format": "dfopt-instance/1", "name": name, "problem": "fifo",
            "graph": {"kernels": [{"name": "a", "delay": 1}, {"name": "b", "ii": 2}],
                      "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 8, "width": width}]}}


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """Register the fake module as the fifo model, here and in the worker processes."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "fake_fifo_model.py").write_text(FAKE_MODEL)
    monkeypatch.syspath_prepend(str(models))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(models), os.environ.get("PYTHONPATH")])))
    fake = dataclasses.replace(registry.REGISTRY["fifo"], module="fake_fifo_model")
    monkeypatch.setitem(registry.REGISTRY, "fifo", fake)


# The outer timeout of the sleeping formulation covers the worker's start-up (importing dfopt) too:
# long enough that the tiny instance finishes on a busy machine, short next to the 60 s sleep.
SLOW_TIMEOUT = 10


@pytest.fixture
def suite_file(tmp_path):
    root = tmp_path / "root"
    (root / "instances").mkdir(parents=True)
    (root / "instances" / "tiny.json").write_text(json.dumps(_instance("tiny")))
    (root / "instances" / "bad.json").write_text(json.dumps(_instance("bad", width=3)))
    suite = {"name": "mini", "problem": "fifo", "root": ".",
             "instances": ["instances/*.json", "gen:fifo_random:n=8,seed=0"],
             "formulations": ["fast", "slow"], "time_limit": 1, "timeout": {"slow": SLOW_TIMEOUT, "*": 60},
             "baseline": "fast", "metrics": {"total_depth": "fifo.total_depth", "makespan": "fifo.makespan"}}
    path = root / "mini.json"
    path.write_text(json.dumps(suite))
    return path


# -- end to end -------------------------------------------------------------------------------

@pytest.mark.slow
def test_suite_runs_end_to_end_with_timeout_and_errors(fake_model, suite_file, tmp_path):
    out = tmp_path / "out"
    records, summary = main_bench(suite_file, out)
    by_run = {r["run"]: r for r in records}
    assert list(by_run) == ["bad/fast/default/s0", "bad/slow/default/s0",
                            "tiny/fast/default/s0", "tiny/slow/default/s0",
                            "rand-n8-s0/fast/default/s0", "rand-n8-s0/slow/default/s0"]
    lines = (out / "records.jsonl").read_text().splitlines()
    assert [json.loads(line)["run"] for line in lines] == list(by_run)
    assert (out / "summary.md").read_text() == summary
    assert (out / "profile.png").read_bytes()[:4] == b"\x89PNG"

    bad = by_run["bad/fast/default/s0"]
    assert (bad["status"], bad["error_type"], bad["exit_class"]) == ("error", "InstanceError", "input")
    assert "/graph/streams/0/width" in bad["error"]

    slow = by_run["rand-n8-s0/slow/default/s0"]
    assert (slow["status"], slow["exit_class"], slow["objective"]) == ("timeout", "timeout", None)
    assert SLOW_TIMEOUT <= slow["wall_time_s"] < 50

    tiny = by_run["tiny/fast/default/s0"]
    assert (tiny["status"], tiny["objective"], tiny["checks_ok"], tiny["checks_failed"]) == ("optimal", 8, True, [])
    assert tiny["metrics"] == {"total_depth": 8, "makespan": 10}
    assert (tiny["n_kernels"], tiny["n_streams"], tiny["solver_used"], tiny["gap"]) == (2, 1, "fake", 0.0)
    assert (tiny["time_build_s"], tiny["time_solve_s"]) == (0.25, 0.5) and tiny["time_check_s"] >= 0
    assert tiny["primal_integral"] == pytest.approx(0.1 + 0.5 * 0.2)   # gap 1 to 0.1 s, 0.5 to 0.3 s
    assert tiny["peak_memory_mb"] > 1 and tiny["time_total_s"] >= 0
    assert tiny["versions"]["dfopt"] and tiny["versions"]["python"]
    assert tiny["parameters"]["time_limit"] == 1.0 and tiny["parameters"]["timeout"] == 60.0
    tiny_slow = by_run["tiny/slow/default/s0"]
    assert (tiny_slow["status"], tiny_slow["checks_failed"]) == ("optimal", ["simulated"]), tiny_slow.get("error")
    assert by_run["rand-n8-s0/fast/default/s0"]["n_kernels"] == 8

    assert "| fast | default | 3 | 2 | 0 | 0 | 1 |" in summary
    assert "| slow | default | 3 | 0 | 1 | 1 | 1 |" in summary


def test_only_and_parallel_jobs_append_records(fake_model, suite_file, tmp_path):
    out = tmp_path / "out"
    (out).mkdir()
    (out / "records.jsonl").write_text('{"earlier": true}\n')
    records, _ = main_bench(suite_file, out, jobs=2, only="tiny/*")
    assert [r["run"] for r in records] == ["tiny/fast/default/s0", "tiny/slow/default/s0"]
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0]) == {"earlier": True}
    assert {r["parameters"]["jobs"] for r in records} == {2}


# -- suites -----------------------------------------------------------------------------------

def _suite(**fields) -> dict:
    base = {"problem": "fifo", "instances": ["gen:fifo_random:n=5,seed=0"], "formulations": ["a", "b"]}
    return {**base, **fields}


@pytest.mark.parametrize("fields, pointer, needle", [
    ({"colour": 1}, "/colour", "unknown suite field 'colour'"),
    ({"formulations": []}, "/formulations", "at least one"),
    ({"formulations": ["a", 3]}, "/formulations/1", "non-empty string"),
    ({"instances": "x.json"}, "/instances", "expected a list"),
    ({"seeds": [0, "1"]}, "/seeds/1", "integer"),
    ({"time_limit": -1}, "/time_limit", "> 0"),
    ({"timeout": {"a": 0}}, "/timeout/a", "> 0"),
    ({"solvers": {"a": []}}, "/solvers/a", "non-empty list"),
    ({"solvers": {"c": [None]}}, "/solvers/c", "not one of the suite's formulations"),
    ({"baseline": "c"}, "/baseline", "not one of the suite's formulations"),
    ({"metrics": {"d": 3}}, "/metrics/d", "dotted path"),
    ({"skip": [{"formulation": "a", "min_kernel": 3}]}, "/skip/0/min_kernel", "unknown skip field"),
    ({"skip": [{"min_kernels": -1}]}, "/skip/0/min_kernels", "integer >= 0"),
    ({"options": {"seed": 3}}, "/options/seed", "set per run"),
    ({"profile_metric": "d"}, "/profile_metric", "not one of the metrics"),
])
def test_suite_faults_name_the_field(fields, pointer, needle):
    with pytest.raises(InstanceError) as info:
        suite_from_dict(_suite(**fields))
    assert info.value.pointer == pointer and needle in str(info.value)


def test_missing_required_fields_and_bad_files(tmp_path):
    with pytest.raises(InstanceError, match="'problem' is required"):
        suite_from_dict({"instances": ["x"], "formulations": ["a"]})
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(InstanceError, match="is not JSON"):
        load_suite(tmp_path / "broken.json")
    with pytest.raises(InstanceError, match="cannot read suite file"):
        load_suite(tmp_path / "missing.json")


def test_defaults_and_per_formulation_limits():
    s = suite_from_dict(_suite(solvers={"b": ["highs", "clarabel"]},
                               time_limit={"b": 5, "*": 20}, timeout={"*": 100}))
    assert (s.baseline, s.seeds, s.options, s.metrics) == ("a", (0,), {}, {})
    assert s.solvers_for("a") == [None] and s.solvers_for("b") == ["highs", "clarabel"]
    assert (s.time_limit_for("a"), s.time_limit_for("b"), s.timeout_for("b")) == (20.0, 5.0, 100.0)
    assert suite_from_dict(_suite(time_limit=10)).timeout_for("a") == 50.0   # 2 x limit + 30 s


def test_plan_expands_globs_gen_specs_skip_rules_and_only(tmp_path):
    (tmp_path / "inst").mkdir()
    (tmp_path / "inst" / "x.json").write_text(json.dumps(_instance("x")))
    (tmp_path / "inst" / "notjson.json").write_text("{")
    data = _suite(root=".", instances=["inst/*.json", "gen:fifo_random:n=300,seed=1", "none/*.json"],
                  seeds=[0, 1], skip=[{"formulation": "b", "min_kernels": 100}])
    (tmp_path / "s.json").write_text(json.dumps(data))
    plan = plan_runs(load_suite(tmp_path / "s.json"))
    keys = [r.key for r in plan.runs]
    assert keys[:4] == ["notjson/a/default/s0", "notjson/a/default/s1", "notjson/b/default/s0",
                        "notjson/b/default/s1"]
    assert "rand-n300-s1/a/default/s1" in keys and "rand-n300-s1/b/default/s0" not in keys
    assert plan.skipped == ["rand-n300-s1/b/default/s0", "rand-n300-s1/b/default/s1"]
    run = plan.runs[-1]
    assert (run.n_kernels, run.source.kind, run.time_limit, run.timeout) == (300, "gen", 60.0, 150.0)
    only = plan_runs(load_suite(tmp_path / "s.json"), only="x/*/s1")
    assert [r.key for r in only.runs] == ["x/a/default/s1", "x/b/default/s1"]
    with pytest.raises(InstanceError, match="no run of suite 's' matches 'zzz'"):
        plan_runs(load_suite(tmp_path / "s.json"), only="zzz")


def test_plan_rejects_bad_gen_specs_and_duplicate_names():
    with pytest.raises(InstanceError, match="bad generator entry"):
        plan_runs(suite_from_dict(_suite(instances=["gen:fifo_random:n=5"])))
    with pytest.raises(InstanceError, match="two instances are named 'rand-n5-s0'"):
        plan_runs(suite_from_dict(_suite(instances=["gen:fifo_random:n=5,seed=0"] * 2)))


def test_formulations_are_checked_against_the_model(fake_model):
    check_formulations(suite_from_dict(_suite(formulations=["fast", "slow"])))
    with pytest.raises(InstanceError) as info:
        check_formulations(suite_from_dict(_suite(formulations=["fast", "quick"])))
    assert info.value.pointer == "/formulations/1" and "expected one of: fast, slow" in str(info.value)


def test_shipped_suites_load_and_plan():
    small = load_suite(ROOT / "benchmarks" / "suites" / "fifo-small.json")
    assert small.root == ROOT and small.baseline == "occupancy"
    assert {"occupancy", "potentials", "flow", "paths", "search"} <= set(small.formulations)
    scale = load_suite(ROOT / "benchmarks" / "suites" / "fifo-scale.json")
    assert scale.skipped("rand-n10000-s0", 10_000, "search", None)
    assert not scale.skipped("rand-n1000-s0", 1000, "search", None)
    assert scale.skipped("rand-n100000-s0", 100_000, "potentials", None)
    assert "paths" in load_suite(ROOT / "benchmarks" / "suites" / "fifo-paths.json").formulations
    assert scale.time_limit_for("search") < scale.time_limit_for("flow")
    plan = plan_runs(small)
    assert len({r.instance for r in plan.runs}) >= 10


# -- report -----------------------------------------------------------------------------------

def _rec(instance, formulation, time_s, depth, status="optimal", checks_ok=True, seed=0, n=10, solver=None):
    solved = status in ("optimal", "feasible")
    return {"instance": instance, "seed": seed, "n_kernels": n, "formulation": formulation, "solver": solver,
            "status": status, "checks_ok": checks_ok if solved else None,
            "objective": depth, "time_total_s": time_s if solved else None,
            "parameters": {"time_limit": 10.0}, "metrics": {"depth": depth}}


RECORDS = [
    _rec("a", "base", 1.0, 10), _rec("b", "base", 3.0, 20),
    _rec("a", "alt", 0.0, 5), _rec("b", "alt", None, None, status="timeout"),
    _rec("a", "third", 1.0, 20), _rec("b", "third", 1.0, 10),
]


def test_summary_rows_by_hand():
    rows = {r["formulation"]: r for r in summary_rows(RECORDS, "base", ["depth"])}
    assert rows["base"]["time_sgm"] == pytest.approx(math.sqrt(2 * 4) - 1)     # shift 1 s
    assert rows["alt"]["time_sgm"] == pytest.approx(math.sqrt(1 * 11) - 1)     # timeout counts 10 s
    assert rows["third"]["time_sgm"] == pytest.approx(1.0)
    assert rows["third"]["time_scaled"] == 1.0
    assert rows["base"]["time_scaled"] == pytest.approx(math.sqrt(8) - 1)
    assert rows["alt"]["time_scaled"] == pytest.approx(math.sqrt(11) - 1)
    assert (rows["alt"]["runs"], rows["alt"]["solved"], rows["alt"]["timeouts"]) == (2, 1, 1)
    assert rows["base"]["depth"] == {"geomean": 1.0, "worst": 1.0, "n": 2}
    assert rows["alt"]["depth"] == {"geomean": 0.5, "worst": 0.5, "n": 1}
    assert rows["third"]["depth"]["geomean"] == pytest.approx(1.0)   # sqrt(2 * 0.5)
    assert rows["third"]["depth"]["worst"] == 2.0


def test_markdown_table_and_size_groups():
    text = render_markdown(RECORDS, "base", ["depth"])
    lines = text.splitlines()
    assert lines[0].startswith("| formulation | solver | runs | solved | checks failed")
    assert "| alt | default | 2 | 1 | 0 | 1 | 0 | 2.32 | 2.32 | 0.500 | 0.500 |" in lines
    assert "| third | default | 2 | 2 | 0 | 0 | 0 | 1 | 1.00 | 1.000 | 2.000 |" in lines
    big = [dict(r, instance=r["instance"] + "-big", n_kernels=1000) for r in RECORDS]
    failed = [_rec("c", "base", 0.5, 7, checks_ok=False, n=1000)]
    grouped = render_markdown(RECORDS + big + failed, "base", ["depth"], group_by="size").splitlines()
    assert grouped[0].startswith("| size | formulation")
    assert grouped[2].startswith("| <=10 | base") and grouped[5].startswith("| <=1k | base")
    assert "| <=1k | base | default | 3 | 2 | 1 | 0 | 0 |" in grouped[5]


def test_baseline_with_solver_and_zero_ratios():
    recs = [_rec("a", "lp", 1.0, 4, solver="highs"), _rec("a", "lp", 1.0, 8, solver="clarabel"),
            _rec("a", "sim", 1.0, 0)]
    rows = {(r["formulation"], r["solver"]): r for r in summary_rows(recs, "lp:clarabel", ["depth"])}
    assert rows[("lp", "highs")]["depth"]["geomean"] == 0.5
    assert rows[("sim", "default")]["depth"]["geomean"] == 0.0
    assert geomean([1.0, math.inf]) == math.inf and math.isnan(geomean([0.0, math.inf]))
    assert shifted_geomean([]) is None


def test_performance_profile_by_hand():
    recs = [_rec("p1", "x", 1.0, 3), _rec("p1", "y", 2.0, 3),
            _rec("p2", "x", 4.0, 9), _rec("p2", "y", 2.0, 6),
            _rec("p3", "x", None, None, status="error"), _rec("p3", "y", 5.0, 1)]
    problems, labels, ratios = performance_ratios(recs)
    assert labels == ["x/default", "y/default"] and len(problems) == 3
    assert ratios.tolist() == [[1.0, 2.0], [2.0, 1.0], [math.inf, 1.0]]
    taus, rho = performance_profile(recs)
    assert taus.tolist() == [1.0, 2.0]
    assert rho["x/default"].tolist() == pytest.approx([1 / 3, 2 / 3])
    assert rho["y/default"].tolist() == pytest.approx([2 / 3, 1.0])
    taus, rho = performance_profile(recs, measure="depth", taus=[1.0, 1.5])
    assert rho["x/default"].tolist() == pytest.approx([1 / 3, 2 / 3])        # depth ratios 1, 1.5, inf
    assert rho["y/default"].tolist() == pytest.approx([1.0, 1.0])


def test_profile_png_and_missing_matplotlib(tmp_path, monkeypatch, caplog):
    assert write_profile_png(RECORDS, tmp_path / "p.png", metric="depth") == tmp_path / "p.png"
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    monkeypatch.setitem(__import__("sys").modules, "matplotlib.figure", None)
    assert write_profile_png(RECORDS, tmp_path / "q.png") is None
    assert not (tmp_path / "q.png").exists() and "matplotlib is not installed" in caplog.text


def test_primal_integral_by_hand():
    assert primal_integral([[1.0, 20.0], [3.0, 10.0]], 10.0, horizon=5.0) == pytest.approx(2.0)
    assert primal_integral([[1.0, 20.0], [3.0, 10.0]], None) == pytest.approx(2.0)   # best 10, end 3
    assert primal_integral([[0.0, -1.0], [2.0, 4.0]], 4.0, horizon=2.0) == pytest.approx(2.0)  # signs differ
    assert primal_integral([[0.0, 0.0]], 0.0, horizon=4.0) == 0.0
    assert primal_integral([], 3.0, horizon=4.0) == 4.0


def test_extract_dotted_paths():
    assert extract({"fifo": {"bram18": 0}}, "fifo.bram18") == 0
    assert extract({"fifo": 3}, "fifo.bram18") is None
