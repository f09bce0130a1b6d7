"""The dfopt command: exit codes, atomic output, summaries, every invalid instance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dfopt.cli import main

ROOT = Path(__file__).resolve().parent.parent
INVALID = sorted((ROOT / "instances" / "invalid").glob("*.json"))


def run(*args, capsys=None):
    code = main([str(a) for a in args])
    out = capsys.readouterr() if capsys else None
    return code, out


def test_solve_prints_a_summary_and_writes_the_solution(tmp_path, capsys):
    out_file = tmp_path / "sol.json"
    code, out = run("solve", ROOT / "instances/fifo/fig8f.json", "-o", out_file, capsys=capsys)
    assert code == 0
    assert "fifo instance 'fig8f'" in out.out and "checks:" in out.out
    sol = json.loads(out_file.read_text())
    assert sol["format"] == "dfopt-solution/1" and set(sol["fifo"]["depths"]) == {"e01", "e12", "e02"}
    assert [p.name for p in tmp_path.iterdir()] == ["sol.json"]  # no temporary file left behind


def test_check_accepts_its_own_solution_and_rejects_a_damaged_one(tmp_path, capsys):
    sol_file = tmp_path / "sol.json"
    inst = ROOT / "instances/fifo/fig8a.json"
    assert run("solve", inst, "-o", sol_file, "--formulation", "occupancy", capsys=capsys)[0] == 0
    code, out = run("check", inst, sol_file, capsys=capsys)
    assert code == 0 and "FAIL" not in out.out
    sol = json.loads(sol_file.read_text())
    sol["fifo"]["depths"]["e01"] = 1
    sol["objective"] = 1
    sol_file.write_text(json.dumps(sol))
    sol["fifo"]["depths"]["e01"] = 1
    code, out = run("check", inst, sol_file, capsys=capsys)
    assert code == 3 and "FAIL" in out.out


def test_json_output_is_the_solution(capsys):
    code, out = run("solve", ROOT / "instances/fifo/fig8a.json", "--json", capsys=capsys)
    assert code == 0 and json.loads(out.out)["problem"] == "fifo"


def test_options_are_flags(capsys):
    code, out = run("solve", ROOT / "instances/fifo/fig8a.json", "--json", "--strategy", "conservative",
                    "--objective", "bits", "--no-keep-best", capsys=capsys)
    sol = json.loads(out.out)
    assert code == 0 and sol["fifo"]["strategy"] == "conservative" and sol["fifo"]["objective"] == "bits"


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_every_invalid_instance_exits_2_with_its_error(path, capsys):
    code, out = run("validate", path, capsys=capsys)
    expected = path.with_suffix(".expected").read_text().strip()
    assert code == 2
    assert expected.splitlines()[0] in out.err
    assert "Traceback" not in out.err


def test_unknown_formulation_exits_2(capsys):
    code, out = run("solve", ROOT / "instances/fifo/fig8a.json", "--formulation", "nope", capsys=capsys)
    assert code == 2 and "argument --formulation: invalid choice: 'nope'" in out.err and "slack" in out.err


def test_missing_solver_exits_5_listing_installed_ones(capsys):
    code, out = run("solve", ROOT / "instances/fifo/fig8a.json", "--formulation", "potentials",
                    "--solver", "gurobi", capsys=capsys)
    assert code == 5 and "installed" in out.err


def test_missing_file_exits_2(capsys):
    code, out = run("solve", "no/such/file.json", capsys=capsys)
    assert code == 2 and "no such file" in out.err


def test_time_limit_returns_safe_depths_with_status(tmp_path, capsys):
    from dfopt.bench.generators import random_fifo_dag

    inst = tmp_path / "r.json"
    inst.write_text(json.dumps(random_fifo_dag(60, seed=2)))
    code, out = run("solve", inst, "--formulation", "search", "--time-limit", "0.2", "--json", capsys=capsys)
    sol = json.loads(out.out)
    assert code == 0 and sol["status"] == "time_limit" and all(c["ok"] for c in sol["checks"])


def test_schema_prints_json(capsys):
    code, out = run("schema", "solution", capsys=capsys)
    assert code == 0 and json.loads(out.out)["title"]


def test_usage_error_exits_2():
    proc = subprocess.run([sys.executable, "-m", "dfopt.cli", "solve"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_plot_writes_a_png(tmp_path, capsys):
    png = tmp_path / "fifo.png"
    code, _ = run("solve", ROOT / "instances/fifo/transformer-block.json", "--plot", png, capsys=capsys)
    assert code == 0 and png.read_bytes()[:4] == b"\x89PNG"


def test_check_can_force_or_skip_the_simulation(tmp_path, capsys):
    sol_file = tmp_path / "sol.json"
    inst = ROOT / "instances/fifo/transformer-block.json"
    assert run("solve", inst, "-o", sol_file, capsys=capsys)[0] == 0
    code, out = run("check", inst, sol_file, "--simulate", "always", capsys=capsys)
    assert code == 0 and "simulated" in out.out and "witness" not in out.out
    code, out = run("check", inst, sol_file, "--simulate", "never", capsys=capsys)
    assert code == 0 and "simulated" not in out.out and "witness" in out.out
