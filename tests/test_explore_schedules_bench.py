"""``benchmarks/explore_schedules.py`` end to end on one small kernel: a 3-trial exploration at
mini, then original / pluto / fixed / explore measured at small, one record of the expected shape
and a summary. No assertion on times (a busy 2-core machine)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from dfopt.codegen.poly import CompilerNotFoundError, find_compiler

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "explore_schedules.py"


@pytest.fixture(scope="module")
def bench():
    try:
        find_compiler()
    except CompilerNotFoundError as err:
        pytest.skip(f"no C compiler to build the generated code: {err}")
    spec = importlib.util.spec_from_file_location("explore_schedules", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_space_contains_the_fixed_list(bench):
    assert bench.fixed_points_outside(bench.SPACE) == []
    assert bench.space_size(bench.SPACE) > 29
    narrow = {**bench.SPACE, "tiling": {"choices": [None, 32]}}
    assert {"strategy": "pluto", "tiling": 16} in bench.fixed_points_outside(narrow)


def test_one_kernel_record_and_summary(bench, tmp_path):
    out = tmp_path / "out"
    assert bench.main(["--kernels", "jacobi-1d", "--trials", "3", "--repeats", "1", "--repeat", "1",
                       "--tune-dataset", "mini", "--dataset", "small", "--out", str(out),
                       "--work", str(tmp_path / "work")]) == 0
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec["kernel"] == "jacobi-1d" and rec["dataset"] == "small"
    assert set(rec["variants"]) == {"original", "pluto", "fixed", "explore"}
    assert rec["variants"]["pluto"]["options"] == {"strategy": "pluto", "tiling": 32}
    for v in rec["variants"].values():
        assert v["error"] is None and v["check_ok"] and len(v["seconds"]) == 1
    ex = rec["explore"]
    assert ex["dataset"] == "mini" and ex["trials"] == 3 and len(ex["trials_table"]) == 3
    assert set(ex["values"]) == set(bench.SPACE) and ex["options"] == rec["variants"]["explore"]["options"]
    assert ex["feasible"] + sum(ex["infeasible_by_stage"].values()) == 3
    assert rec["explore_same_code_as_trial"] is True
    assert rec["fixed"]["options"] == rec["variants"]["fixed"]["options"] is not None
    assert rec["verdict"] in ("beat", "tie", "lost")
    assert set(rec["speedups"]) >= {"explore_over_original", "explore_over_pluto", "explore_over_fixed",
                                    "fixed_over_original", "fixed_over_pluto"}
    assert rec["compiler"] and rec["date"] and rec["machine"]["cpus"]
    text = (out / "summary.md").read_text()
    assert "| jacobi-1d | small |" in text and "PolyTOPS" in text and "explore over pluto" in text
