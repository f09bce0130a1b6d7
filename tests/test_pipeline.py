"""The end-to-end pipeline: every stage runs on the shipped operator graphs, every stage's checker
passes on the composed solution and catches a tampered one, and failures name their stage."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dfopt.api import check_solution, solve_instance
from dfopt.cli import main
from dfopt.errors import InfeasibleError, InstanceError
from dfopt.instance import from_dict, load
from dfopt.ir.opgraph import OpGraph
from dfopt.ir.platform import load_preset
from dfopt.pipeline import channel_graph, fifo_stage, fusion_stage, tiling_stage

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = sorted((ROOT / "instances" / "pipeline").glob("*.json"))


@pytest.mark.parametrize("path", PIPELINES, ids=lambda p: p.stem)
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
    bad = copy.deepcopy(sol)
    first = next(iter(bad.sections["fifo"]["depths"]))
    bad.sections["fifo"]["depths"][first] = 0
    assert not all(c.ok for c in check_solution(inst, bad))
    bad = copy.deepcopy(sol)
    k = next(iter(bad.sections["placement"]["slot"]))
    bad.sections["placement"]["slot"][k] = "SLR9"
    assert "placement:placement-assignment" in {c.name for c in check_solution(inst, bad) if not c.ok}


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
