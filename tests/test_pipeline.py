"""The end-to-end pipeline: every stage runs on the shipped operator graphs, every stage's checker
passes on the composed solution and catches a tampered one, and failures name their stage."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dfopt.api import solve_instance
from dfopt.cli import main
from dfopt.errors import InfeasibleError, InstanceError
from dfopt.instance import from_dict, load
from dfopt.ir.opgraph import OpGraph
from dfopt.ir.platform import load_preset
from dfopt.models.pipeline import channel_graph, fifo_stage, fusion_stage, tiling_stage
from tamper import failed, tampered

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = sorted((ROOT / "instances" / "pipeline").glob("*.json"))


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem == "gpt2-block" else p
                                  for p in PIPELINES], ids=lambda p: p.stem)
def test_shipped_pipelines_solve_and_every_stage_checks(path):
    sol = solve_instance(load(path), time_limit=15)
    assert sol.ok, [c for c in sol.checks if not c.ok]
    sec = sol.sections["pipeline"]
    assert [s["name"] for s in sec["stages"]] == ["tiling", "fusion", "fifo", "memory", "placement"]
    assert all(s["checks_ok"] for s in sec["stages"])
    assert sec["dram_bytes"] <= sec["unfused_dram_bytes"]
    assert set(sol.sections) >= {"fusion", "fifo", "memory", "placement", "pipeline"}


def test_checker_catches_a_tampered_stage():
    inst = load(ROOT / "instances" / "pipeline" / "ffn.json")
    sol = solve_instance(inst, time_limit=10)
    depths = sol.decision.fifo.depths
    deepest = max(depths, key=depths.get)
    # one slot more than the stage reported: safe still, but the figures no longer recount
    bad = tampered(sol, lambda d: d["fifo"]["depths"].update({deepest: depths[deepest] + 1}))
    assert "fifo:objective-recounted" in failed(inst, bad)
    k = next(iter(sol.decision.placement.slot))
    bad = tampered(sol, lambda d: d["placement"]["slot"].update({k: "SLR9"}))
    assert "placement:placement-assignment" in failed(inst, bad)
    bad = tampered(sol, lambda d: d["pipeline"]["options"].update(default_tile_size=32))
    assert "pipeline-record" in failed(inst, bad)


def test_stages_run_alone_on_the_same_ir():
    data = json.loads((ROOT / "instances" / "pipeline" / "ffn.json").read_text())
    graph, r = tiling_stage(OpGraph.from_dict(data["operators"]), default_tile_size=32, overall_unroll_size=256)
    assert r.checks_ok and r.details["lanes"] <= 256
    fused, r = fusion_stage(graph, load_preset("u280"), formulation="greedy")
    assert r.checks_ok
    sized, r = fifo_stage(fused)
    assert r.checks_ok and all(s.depth is not None for s in sized.streams.values())
    channels = channel_graph(sized)
    for name, s in channels.streams.items():
        assert s.width <= 512 and s.depth == sized.streams[name].depth * (-(-sized.streams[name].width // s.width))


def test_failures_name_the_stage_and_the_numbers():
    data = json.loads((ROOT / "instances" / "pipeline" / "ffn.json").read_text())
    data["platform"] = {"kind": "fpga", "name": "tiny", "onchip_bytes": 1 << 30,
                        "slots": [{"name": "S", "resources": {"lut": 1000, "ff": 2000, "dsp": 10, "bram": 10, "uram": 0}}]}
    with pytest.raises(InfeasibleError, match="pipeline stage (memory|placement)"):
        solve_instance(from_dict(data), time_limit=5)
    with pytest.raises(InstanceError, match="default_tile_size"):
        solve_instance(load(ROOT / "instances" / "pipeline" / "ffn.json"), default_tile_size=0)


def test_cli_solve_and_check(tmp_path, capsys):
    out = tmp_path / "sol.json"
    path = ROOT / "instances" / "pipeline" / "mha.json"
    assert main(["solve", str(path), "-o", str(out), "--time-limit", "10"]) == 0
    text = capsys.readouterr().out
    assert "placement" in text and "estimated latency" in text
    assert main(["check", str(path), str(out)]) == 0


# == HLS emission and software simulation ==========================================================

needs_gxx = pytest.mark.skipif(__import__("shutil").which("g++") is None, reason="g++ is not installed")

FORK_JOIN = {
    "format": "dfopt-instance/1", "name": "fork-join", "problem": "pipeline", "platform": "u280",
    "operators": {
        "tensors": {"x": {"shape": [16, 16], "dtype": "f32"}},
        "ops": [{"name": "act", "op": "relu", "inputs": ["x"], "output": "r"},
                {"name": "mover", "op": "reshape", "inputs": ["x"], "output": "xr", "shape": [16, 16]},
                {"name": "join", "op": "add", "inputs": ["r", "xr"], "output": "y"}],
        "outputs": ["y"]},
    "options": {"pipeline": {"default_tile_size": 4}},
}


def _csim(folder: Path) -> __import__("subprocess").CompletedProcess:
    import subprocess

    subprocess.run(["make", "-s", "-C", str(folder), "build"], check=True, capture_output=True, timeout=300)
    return subprocess.run(["./csim"], cwd=folder, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
@needs_gxx
def test_emitted_design_matches_numpy_and_deadlocks_when_depths_are_cut(tmp_path):
    from dfopt.models.pipeline import emit

    inst = from_dict(FORK_JOIN)
    sol = solve_instance(inst, time_limit=10)
    assert sol.ok
    emit(inst, sol, tmp_path / "solved")
    run = _csim(tmp_path / "solved")
    assert run.returncode == 0 and "PASS" in run.stdout
    # the same design with every FIFO cut to 2 (below the solution on the branch the reshape delays)
    deep = {k: v for k, v in sol.sections["fifo"]["depths"].items() if v > 2}
    assert deep
    cut = tampered(sol, lambda d: d["fifo"].update(depths={k: 2 for k in sol.sections["fifo"]["depths"]}))
    emit(inst, cut, tmp_path / "cut")
    run = _csim(tmp_path / "cut")
    assert run.returncode == 3 and "DEADLOCK" in run.stderr


@pytest.mark.slow
@needs_gxx
def test_cli_emit_dir_then_make_csim(tmp_path):
    import subprocess

    out = tmp_path / "mha"
    path = ROOT / "instances" / "pipeline" / "mha.json"
    assert main(["solve", str(path), "--time-limit", "10", "--default-tile-size", "16", "--emit-dir", str(out)]) == 0
    assert {"top.cpp", "kernels.cpp", "tb.cpp", "Makefile", "floorplan.tcl"} <= {p.name for p in out.iterdir()}
    make = subprocess.run(["make", "-s", "-C", str(out), "csim"], capture_output=True, text=True, timeout=600, check=False)
    assert make.returncode == 0 and "PASS" in make.stdout


@pytest.mark.slow
@needs_gxx
def test_cli_emit_dir_with_fused_groups_then_make_csim(tmp_path):
    """A small c_max splits llama-block into fused groups: one dataflow function per group, the
    cut streams through DRAM buffers, and the simulation still matches NumPy."""
    import subprocess

    out, sol = tmp_path / "llama", tmp_path / "llama.sol.json"
    path = ROOT / "instances" / "pipeline" / "llama-block.json"
    assert main(["solve", str(path), "--c-max", "1000000", "--time-limit", "20", "-o", str(sol),
                 "--emit-dir", str(out)]) == 0
    fusion = json.loads(sol.read_text())["fusion"]
    assert len(fusion["groups"]) >= 2 and fusion["cut_streams"]
    top = (out / "top.cpp").read_text()
    for i in range(len(fusion["groups"])):
        assert f"void group_{i}(" in top and f'DFOPT_DATAFLOW_BEGIN("group_{i}");' in top
    for s in fusion["cut_streams"]:
        assert f"float* dram_{s}" in top
    make = subprocess.run(["make", "-s", "-C", str(out), "csim"], capture_output=True, text=True, timeout=600, check=False)
    assert make.returncode == 0 and "PASS" in make.stdout, make.stdout + make.stderr


def test_emit_dir_refuses_other_problems_and_unemittable_dtypes(tmp_path, capsys):
    assert main(["solve", str(ROOT / "instances" / "placement" / "chain-u55c.json"), "--emit-dir", str(tmp_path / "x")]) == 2
    data = copy.deepcopy(FORK_JOIN)
    data["operators"]["tensors"]["x"]["dtype"] = "f16"
    path = tmp_path / "f16.json"
    path.write_text(json.dumps(data))
    assert main(["solve", str(path), "--emit-dir", str(tmp_path / "f16")]) == 2
    assert "f16 cannot be emitted" in capsys.readouterr().err
    assert not (tmp_path / "f16").exists() and not (tmp_path / "x").exists()
