"""Design-space exploration (dfopt.explore, `dfopt explore`): the space's checks, trials that
are solved and checked, infeasible designs as constraints with their stage, pruning, resuming,
repeatability, several workers on one journal file, and the command line."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dfopt.cli import main
from dfopt.errors import InfeasibleError, InstanceError
from dfopt.explore import explore
from dfopt.explore.evaluate import Evaluator
from dfopt.explore.space import DEFAULT_SPACES, parse
from dfopt.instance import from_dict, load
from dfopt.models import driver
from pgserver import postgres_url as postgres_url  # a fixture: `as` tells ruff it is used

ROOT = Path(__file__).resolve().parents[1]
FFN = ROOT / "instances" / "pipeline" / "ffn.json"
SMALL = {"default_tile_size": {"choices": [32, 64]}, "overall_unroll_size": {"choices": [512, 1024]}}
#: Enough distinct points that neither worker runs out of new ones before the other starts.
WIDE = {"default_tile_size": {"choices": [32, 64]}, "overall_unroll_size": {"low": 256, "high": 1024}}


def _ffn(explore_section: dict | None = None):
    d = json.loads(FFN.read_text())
    if explore_section is not None:
        d.setdefault("options", {})["explore"] = explore_section
    return from_dict(d)


# -- the space ------------------------------------------------------------------------------------

@pytest.mark.parametrize("space, pointer, text", [
    ({"default_tile_size": {"low": 200000, "high": 300000}}, "/options/explore/space/default_tile_size/low",
     "<= 65536"),
    ({"max_utilization": {"low": 0.9, "high": 0.5}}, "/options/explore/space/max_utilization/low", "above high"),
    ({"bogus": {"choices": [1]}}, "/options/explore/space/bogus", "unknown parameter 'bogus'"),
    ({"fifo_formulation": {"choices": ["flow", "nope"]}}, "/options/explore/space/fifo_formulation/choices/1",
     "unknown fifo formulation 'nope'"),
    ({"tile_size:matmull": {"choices": [8]}}, "/options/explore/space/tile_size:matmull", "did you mean 'matmul'"),
    ({"platform": {"choices": ["u280", "zzz"]}}, "/options/explore/space/platform/choices/1", "not a preset"),
    ({"default_tile_size": {"low": 8.5, "high": 16}}, "/options/explore/space/default_tile_size/low",
     "must be an integer"),
    ({"latency_slack": {"low": 0, "high": 0.5, "log": True}}, "/options/explore/space/latency_slack/low",
     "log range needs low > 0"),
    ({"fifo_timing": {"low": 1, "high": 2}}, "/options/explore/space/fifo_timing", "takes choices, not a range"),
    ({"default_tile_size": {"choices": [16, 16]}}, "/options/explore/space/default_tile_size/choices",
     "listed twice"),
    ({"time_limit": {"choices": [1, 2]}}, "/options/explore/space/time_limit", "unknown parameter"),
    ({"overall_unroll_size": {"choices": [512], "per": "kind"}}, "/options/explore/space/overall_unroll_size/per",
     "default_tile_size only"),
])
def test_bad_space_names_the_field(space, pointer, text):
    with pytest.raises(InstanceError) as err:
        parse(_ffn({"space": space}))
    assert err.value.problems[0].pointer == pointer
    assert text in str(err.value)


def test_bad_settings_name_the_field_or_flag():
    with pytest.raises(InstanceError) as err:
        parse(_ffn({"objectives": ["latency", "speed"]}))
    assert err.value.problems[0].pointer == "/options/explore/objectives/1"
    with pytest.raises(InstanceError) as err:
        parse(_ffn(), overrides={"objectives": "latency,latency"})
    assert err.value.problems[0].pointer == "--objectives"
    with pytest.raises(InstanceError) as err:
        parse(_ffn({"trial_time_limit": -1}))
    assert err.value.problems[0].pointer == "/options/explore/trial_time_limit"
    with pytest.raises(InstanceError) as err:
        parse(load(ROOT / "instances" / "fusion" / "greedy-trap.json"))
    assert "not 'fusion'" in str(err.value)


def test_per_kind_tile_sizes_and_the_options_they_give():
    config = parse(_ffn({"space": {"default_tile_size": {"choices": [16, 32], "per": "kind"},
                                   "platform": {"choices": ["u280", "u55c"]}}}))
    assert [p.name for p in config.params] == ["tile_size:matmul", "tile_size:add", "tile_size:gelu", "platform"]
    overrides, platform = config.overrides({"tile_size:matmul": 16, "tile_size:gelu": 32, "platform": "u55c"})
    assert overrides == {"tile_sizes": {"matmul": 16, "gelu": 32}} and platform == "u55c"


@pytest.mark.parametrize("path", sorted((ROOT / "instances" / "pipeline").glob("*.json"))
                         + sorted((ROOT / "instances" / "schedule").glob("*.json"))[:3], ids=lambda p: p.stem)
def test_default_space_of_every_shipped_instance_is_valid(path):
    inst = load(path)
    config = parse(inst)
    assert [p.name for p in config.params] == list(DEFAULT_SPACES[inst.problem])


@pytest.mark.parametrize("path", sorted((ROOT / "instances" / "explore").glob("*.json")), ids=lambda p: p.stem)
def test_the_shipped_spaces_parse_and_hold_their_instance_defaults(path):
    from dfopt.explore.study import default_params

    inst = load(path)
    config = parse(inst)
    assert config.params and inst.options["explore"]["space"]
    assert default_params(inst, config) is None or set(default_params(inst, config)) == {p.name for p in config.params}


def test_the_instance_schema_takes_an_explore_section():
    inst = _ffn({"space": SMALL, "objectives": ["latency", "lut"], "sampler": "nsga2"})
    assert parse(inst).multi
    with pytest.raises(InstanceError) as err:
        _ffn({"spaces": {}})
    assert "spaces" in str(err.value)


# -- one trial -------------------------------------------------------------------------------------

def test_a_trial_is_solved_checked_and_measured():
    inst = _ffn()
    ev = Evaluator(inst, parse(inst, overrides={"space": SMALL, "trial_time_limit": 20}))
    out = ev.evaluate({"default_tile_size": 64, "overall_unroll_size": 1024})
    assert out.feasible and out.solution is not None and out.solution.ok
    assert out.values == (out.figures["latency"],) and out.figures["latency"] == out.solution.objective
    again = driver.check(ev.instance_for({"default_tile_size": 64, "overall_unroll_size": 1024}), out.solution,
                         driver.make_options(inst))
    assert all(c.ok for c in again)


def test_the_precheck_refuses_a_design_that_cannot_fit_before_any_stage(monkeypatch):
    inst = _ffn()
    ev = Evaluator(inst, parse(inst, overrides={"space": {"overall_unroll_size": {"choices": [1 << 14]}}}))

    def no_solve(*a, **k):
        raise AssertionError("the stages ran")

    monkeypatch.setattr(driver, "solve", no_solve)
    out = ev.evaluate({"overall_unroll_size": 1 << 14})
    assert not out.feasible and out.stage == "precheck" and out.violation > 0
    assert "lut" in out.reason and "fc1" in out.reason or "the kernels need" in out.reason


def test_a_stage_that_proves_the_design_infeasible_names_itself(monkeypatch):
    inst = _ffn()
    ev = Evaluator(inst, parse(inst, overrides={"space": SMALL}))

    def infeasible(*a, **k):
        raise InfeasibleError("pipeline stage memory: slot SLR0: kernels need 700 BRAM36 before any buffer")

    monkeypatch.setattr(driver, "solve", infeasible)
    out = ev.evaluate({"default_tile_size": 64, "overall_unroll_size": 1024})
    assert (out.feasible, out.stage) == (False, "memory")
    assert out.reason.startswith("slot SLR0") and out.values == (float("inf"),)


def test_a_failed_check_makes_the_trial_infeasible(monkeypatch):
    from dfopt.solution import Check

    inst = _ffn()
    ev = Evaluator(inst, parse(inst, overrides={"space": SMALL}))
    real = driver.solve

    def tampered(instance, options):
        sol = real(instance, options)
        if instance.problem == "pipeline":               # the whole design, not its stages' solves
            sol.checks = [*sol.checks, Check("fifo:bound", False, ["depth below the bound"])]
        return sol

    monkeypatch.setattr(driver, "solve", tampered)
    out = ev.evaluate({"default_tile_size": 64, "overall_unroll_size": 1024})
    assert (out.feasible, out.stage) == (False, "checks") and "fifo:bound" in out.reason


def test_pruning_stops_a_trial_that_cannot_beat_the_best():
    inst = _ffn()
    ev = Evaluator(inst, parse(inst, overrides={"space": SMALL}))
    full = ev.evaluate({"default_tile_size": 64, "overall_unroll_size": 1024})
    out = ev.evaluate({"default_tile_size": 64, "overall_unroll_size": 512}, best=full.values[0] / 10)
    assert out.pruned and out.stage in ("tiling", "fifo") and "no better than" in out.reason
    multi = Evaluator(inst, parse(inst, overrides={"space": SMALL, "objectives": ["latency", "lut"]}))
    assert not multi.evaluate({"default_tile_size": 64, "overall_unroll_size": 512}, best=1.0).pruned


# -- studies ---------------------------------------------------------------------------------------

def _rows(out: Path) -> list[dict]:
    with open(out / "trials.csv") as f:
        return list(csv.DictReader(f))


def test_a_study_writes_its_folder_and_the_best_design_checks(tmp_path):
    from dfopt.explore.study import counted

    r = explore(_ffn(), trials=4, out_dir=tmp_path, space=SMALL, trial_time_limit=20)
    rows = _rows(tmp_path)
    assert len(rows) == r.summary["trials"] and counted(r.study) == 4        # a repeated point is free
    assert sum(1 for x in rows if x["same_as"]) == r.summary["repeated"]
    assert rows[0]["default_tile_size"] == "64" and rows[0]["overall_unroll_size"] == "1024"   # the default first
    assert r.summary["default"]["values"] and r.best
    best = load(tmp_path / "best.instance.json")
    from dfopt.instance import load_solution

    sol = load_solution(tmp_path / "best.sol.json")
    assert sol.objective == r.best[0].values[0] == min(float(x["latency"]) for x in rows if x["feasible"] == "True")
    assert all(c.ok for c in driver.check(best, sol, driver.make_options(best)))
    assert (tmp_path / "history.png").stat().st_size > 1000
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["best"][0]["number"] == r.best[0].number


def test_running_the_command_again_continues_the_study(tmp_path):
    from dfopt.explore.study import counted

    first = explore(_ffn(), trials=3, out_dir=tmp_path, space=WIDE, trial_time_limit=20)
    params = [t.params for t in first.study.trials]
    again = explore(_ffn(), trials=5, out_dir=tmp_path, space=WIDE, trial_time_limit=20)
    assert again.study.study_name == first.study.study_name
    assert [t.params for t in again.study.trials[:len(params)]] == params and counted(again.study) == 5
    with pytest.raises(InstanceError) as err:            # the same study name with another space
        explore(_ffn(), trials=5, out_dir=tmp_path, space={"default_tile_size": {"choices": [16]}},
                study=first.study.study_name)
    assert "other settings" in str(err.value)


def test_a_small_space_is_run_through_and_the_study_says_it_is_exhausted(tmp_path):
    from dfopt.explore.study import _distinct

    r = explore(_ffn(), trials=10, out_dir=tmp_path, space={"default_tile_size": {"choices": [32, 64]}},
                trial_time_limit=20)
    assert r.summary["stopped"] == "exhausted" and _distinct(r.study) == 2
    assert r.summary["trials"] == 2 + r.summary["repeated"]


def test_one_worker_with_a_seed_is_repeatable(tmp_path):
    space = {"default_tile_size": {"choices": [16, 32, 64, 128]}, "overall_unroll_size": {"low": 256, "high": 2048}}
    runs = [explore(_ffn(), trials=6, out_dir=tmp_path / str(i), space=space, seed=7, trial_time_limit=20)
            for i in range(2)]
    assert [t.params for t in runs[0].study.trials] == [t.params for t in runs[1].study.trials]
    assert [t.values for t in runs[0].study.trials] == [t.values for t in runs[1].study.trials]


def test_a_multi_objective_study_writes_the_pareto_set(tmp_path):
    r = explore(_ffn(), trials=6, out_dir=tmp_path, space=SMALL, objectives=["latency", "lut"], trial_time_limit=20)
    files = sorted((tmp_path / "pareto").glob("*.sol.json"))
    assert len(files) == len(r.best) >= 1
    points = [tuple(t.values) for t in r.best]
    for a in points:                                      # no point of the set dominates another
        assert not any(b != a and all(x <= y for x, y in zip(b, a)) for b in points)
    feasible = [tuple(t.values) for t in r.study.trials if t.user_attrs.get("feasible") and t.values]
    for p in feasible:                                    # every feasible design is matched or dominated
        assert any(all(x <= y for x, y in zip(q, p)) for q in points)


def test_two_workers_share_one_journal_file(tmp_path):
    r = explore(_ffn(), trials=16, out_dir=tmp_path, space=WIDE, workers=2, prune=False, trial_time_limit=20)
    from dfopt.explore.study import counted

    trials = r.study.trials
    numbers = [t.number for t in trials]
    assert len(numbers) == len(set(numbers)) and 16 <= counted(r.study) <= 17      # repeats run nothing
    assert len({t.user_attrs.get("worker", "").split(":")[-1] for t in trials}) == 2   # both workers ran trials
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)


GPT2 = ROOT / "instances" / "pipeline" / "gpt2-block.json"
#: A space whose trials each run the whole gpt2-block pipeline (seconds), so a worker can be caught
#: in the middle of one.
SLOW = {"default_tile_size": {"choices": [64]}, "overall_unroll_size": {"low": 512, "high": 1024}}


def _kill_mid_trial(storage: str, name: str, out: Path, heartbeat: int = 10):
    """Start a worker on the study, SIGKILL it while it runs a trial (after its first heartbeat);
    returns the number of the trial it left RUNNING."""
    import optuna

    from dfopt.explore.study import open_storage

    for _ in range(3):                   # a kill that lands between two trials is tried again
        proc = subprocess.Popen([sys.executable, "-m", "dfopt.explore.worker", "--storage", storage, "--join", name,
                                 "--trials", "50", "-o", str(out), "--heartbeat", str(heartbeat)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        running = None
        try:
            deadline = time.time() + 240     # a busy machine starts the worker slowly
            while time.time() < deadline and running is None:
                study = optuna.load_study(study_name=name, storage=open_storage(storage, out, heartbeat))
                trial = next((t for t in study.trials if t.state.name == "RUNNING" and _fresh(t)
                              and f":{proc.pid}:" in t.user_attrs.get("worker", "")), None)
                # killed only once it has run past its first heartbeat, and still running now
                if trial is not None and time.time() - trial.datetime_start.timestamp() >= 1.5:
                    running = trial
                else:
                    time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        study = optuna.load_study(study_name=name, storage=open_storage(storage, out, heartbeat))
        if running is not None and study.trials[running.number].state.name == "RUNNING":
            return running.number, len([t for t in study.trials if t.state.name != "WAITING"])
    pytest.fail("the worker never died in the middle of a trial")


def _fresh(t) -> bool:
    """Not itself a retry: a trial is run again once, so a retry killed in turn stays FAIL (a kill
    that missed its trial, landing in the next one, leaves the missed one reaped and queued)."""
    return "retry_of" not in t.user_attrs and "failed_trial" not in t.system_attrs


def _retried(trials, killed: int):
    retry = [t for t in trials if t.user_attrs.get("retry_of") == killed or t.system_attrs.get("failed_trial") == killed]
    assert trials[killed].state.name == "FAIL" and len(retry) == 1
    assert retry[0].state.name == "COMPLETE" and retry[0].params == trials[killed].params
    assert not [t for t in trials if t.state.name in ("RUNNING", "WAITING")]


def test_a_worker_killed_mid_trial_is_failed_and_its_trial_run_again(tmp_path):
    first = explore(load(GPT2), trials=1, out_dir=tmp_path, space=SLOW, prune=False, trial_time_limit=30)
    killed, held = _kill_mid_trial(str(tmp_path / "study.journal"), first.study.study_name, tmp_path)
    r = explore(load(GPT2), trials=held, out_dir=tmp_path, space=SLOW, prune=False, trial_time_limit=30)
    _retried(r.study.trials, killed)                      # the journal has no heartbeat: the dead pid tells
    assert r.study.user_attrs[f"reaped_{killed}"].endswith("died during the trial")


def test_two_workers_on_one_postgresql_study(tmp_path, postgres_url):
    r = explore(_ffn(), trials=16, out_dir=tmp_path, storage=postgres_url, space=WIDE, workers=2, study="two-pg",
                prune=False, trial_time_limit=20)
    from dfopt.explore.study import counted

    trials = r.study.trials
    assert len({t.number for t in trials}) == len(trials) and 16 <= counted(r.study) <= 17
    assert len({t.user_attrs.get("worker", "").split(":")[-1] for t in trials}) == 2
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials) and r.best
    assert not (tmp_path / "study.journal").exists()


def test_a_postgresql_worker_killed_mid_trial_goes_stale_and_is_run_again(tmp_path, postgres_url):
    first = explore(load(GPT2), trials=1, out_dir=tmp_path, storage=postgres_url, space=SLOW, prune=False,
                    study="kill-pg", heartbeat=1, trial_time_limit=30)
    killed, held = _kill_mid_trial(postgres_url, first.study.study_name, tmp_path, heartbeat=1)
    time.sleep(3.5)                                       # three silent beats: stale
    r = explore(load(GPT2), trials=held, out_dir=tmp_path, storage=postgres_url, space=SLOW, prune=False,
                study="kill-pg", heartbeat=1, trial_time_limit=30)
    _retried(r.study.trials, killed)


# -- the command line -----------------------------------------------------------------------------

def test_the_command_runs_a_study_reports_and_emits_the_best(tmp_path, capsys):
    code = main(["explore", str(FFN), "-o", str(tmp_path / "o"), "--trials", "3", "--quiet", "--emit-dir",
                 str(tmp_path / "hls"), "--space", json.dumps(SMALL), "--trial-time-limit", "20"])
    out = capsys.readouterr().out
    assert code == 0 and " trials (" in out and "best trial" in out and "default options (trial 0)" in out
    assert (tmp_path / "hls" / "Makefile").is_file() and "code written to" in out


@pytest.mark.parametrize("argv, text", [
    (["explore"], "give an instance"),
    (["explore", "--join", "x"], "--join needs the --storage"),
    (["explore", str(FFN), "--objectives", "latency,bogus"], "--objectives/1: unknown objective 'bogus'"),
    (["explore", str(FFN), "--trials", "0"], "--trials"),
    (["explore", str(FFN), "--workers", "1000"], "--workers"),
    (["explore", str(FFN), "--space", '{"bogus": {"choices": [1]}}'], "--space/bogus: unknown parameter"),
])
def test_bad_command_lines_exit_2_naming_the_flag(argv, text, capsys, tmp_path):
    code = main(argv + ["-o", str(tmp_path / "o")])
    assert code == 2 and text in capsys.readouterr().err


def test_progress_shows_the_trial_count_and_the_best(tmp_path):
    from dfopt.progress import RecordingReporter, reporting

    rec = RecordingReporter()
    with reporting(rec):
        explore(_ffn(), trials=2, out_dir=tmp_path, space=SMALL, trial_time_limit=20)
    details = [e.detail for e in rec.events if e.kind == "update"]
    assert any("trial 2/2" in (d or "") for d in details) and rec.incumbents()


def test_a_database_that_cannot_be_reached_is_named(tmp_path, capsys):
    code = main(["explore", str(FFN), "-o", str(tmp_path), "--storage", "postgresql+psycopg2://u:secret@127.0.0.1:1/x",
                 "--trials", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "--storage: cannot open the storage postgresql+psycopg2://u:***@127.0.0.1:1/x" in err
    assert "secret" not in err


def test_an_sqlite_storage_holds_a_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    r = explore(_ffn(), trials=2, out_dir=tmp_path / "o", storage=url, space=SMALL, trial_time_limit=20)
    assert len(r.study.trials) == 2 and (tmp_path / "study.db").is_file()


def test_joining_a_missing_study_names_it(tmp_path, capsys):
    code = main(["explore", "--join", "nope", "--storage", str(tmp_path / "s.journal")])
    assert code == 2 and "no study 'nope'" in capsys.readouterr().err


def test_the_package_is_callable_from_dfopt(tmp_path):
    import dfopt
    import dfopt.explore.space  # noqa: F401  # a submodule imported first must not hide the call

    r = dfopt.explore(str(FFN), trials=1, out_dir=tmp_path, space=SMALL, trial_time_limit=20)
    assert r.summary["trials"] == 1 and callable(dfopt.explore)


def test_a_schedule_study_times_checked_code_with_list_valued_choices(tmp_path):
    import shutil

    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("a C compiler is needed to time the generated code")
    space = {"strategy": {"choices": ["pluto", "isl"]},
             "tiling": {"choices": [None, [16, 16]]},
             "costs": {"choices": [None, ["contiguity", "proximity"]]}}
    r = explore(ROOT / "instances" / "schedule" / "jacobi-1d.json", trials=3, out_dir=tmp_path, space=space,
                dataset="mini", repeats=1, trial_time_limit=30)
    assert r.best and r.best[0].user_attrs["figures"]["original_s"] > 0
    rows = _rows(tmp_path)
    assert {x["costs"] for x in rows} <= {"null", '["contiguity", "proximity"]'}
    from dfopt.explore.report import summary_text

    sol = json.loads((tmp_path / "best.sol.json").read_text())
    assert sol["problem"] == "schedule" and "original order" in summary_text(r.summary, r.config, tmp_path)
