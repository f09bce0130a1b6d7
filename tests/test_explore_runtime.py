"""The run-time objective of the explorer (:mod:`dfopt.explore.runtime`): the original order and
a legal option set are checked against the original's bytes and timed; option sets with one
generated C share one check and one timing (each is still solved); a wrong C, a bad option, a
compile or run failure becomes the measurement's error at its stage, never an exception; a slow
run stops the repeats; a missing compiler is a clear error. No assertion on times (a busy
2-core machine), only on what was run and recorded."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from dfopt.codegen.poly import CompilerNotFoundError, RunError, find_compiler
from dfopt.errors import DfoptError, InstanceError
from dfopt.explore import runtime
from dfopt.explore.runtime import Measurement, RuntimeMeasure
from dfopt.instance import load

ROOT = Path(__file__).resolve().parent.parent
PLUTO_16 = {"strategy": "pluto", "tiling": 16}
BOTH_CHECKED = (("mini", True), ("small", True))


def instance(name: str):
    return load(ROOT / "instances" / "schedule" / f"{name}.json")


@pytest.fixture(scope="module")
def cc():
    try:
        return find_compiler()
    except CompilerNotFoundError as err:
        pytest.skip(f"no C compiler to build the generated code: {err}")


@pytest.fixture(scope="module")
def gemm(cc):
    with RuntimeMeasure(instance("gemm"), "small", repeats=1) as rt:
        yield rt


@pytest.fixture
def counts(monkeypatch):
    """How often the module solves, compiles and times."""
    seen = {"solve": 0, "compile": 0, "time": 0}

    def counted(name, what):
        real = getattr(runtime, name)

        def wrapper(*args, **kwargs):
            seen[what] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(runtime, name, wrapper)

    counted("solve_instance", "solve")
    counted("compile_c", "compile")
    counted("_run_timed", "time")
    return seen


def test_original_is_checked_and_timed(gemm, counts):
    m = gemm.original()
    assert (m.checked, m.error, m.stage, m.checks, m.dataset) == (True, None, None, BOTH_CHECKED, "small")
    assert len(m.seconds) == 1 and m.min == m.median == m.seconds[0] and m.ok
    assert m.solve_s is None and m.schedule == gemm.program.schedule and m.tiled_schedule is None
    assert m.checksum is not None and len(m.code_hash or "") == 12
    before = dict(counts)
    assert gemm.original() == m and counts == before      # cached: no new build or run


def test_legal_options_are_checked_and_timed(gemm):
    m = gemm.measure(PLUTO_16)
    assert (m.checked, m.error, m.stage, m.checks) == (True, None, None, BOTH_CHECKED)
    assert len(m.seconds) == 1 and m.solve_s is not None and m.solve_s > 0
    assert m.tiled_schedule is not None and m.schedule is not None
    assert m.code_hash != gemm.original().code_hash
    assert m.checksum == gemm.original().checksum      # a legal order keeps the floating-point operations
    assert m.to_json()["checks"] == {"mini": True, "small": True}
    assert m.solution is not None and m.solution.sections["schedule"]["map"] == m.schedule
    assert gemm.original().solution is None


def test_same_code_shares_one_measurement(gemm, counts):
    first = gemm.measure(PLUTO_16)                          # measured before, or now
    before = dict(counts)
    same = gemm.measure({"tiling": 16, "reorder": "contiguity"})   # pluto's defaults spelled out
    assert counts["solve"] == before["solve"] + 1           # the solve happens
    assert (counts["compile"], counts["time"]) == (before["compile"], before["time"])   # no build, no run
    assert same.code_hash == first.code_hash and same.seconds == first.seconds and same.checked
    assert same.solve_s is not None
    gemm.measure(PLUTO_16)                                  # the same option set: not even solved again
    assert counts["solve"] == before["solve"] + 1


def test_measure_all_interleaves_and_reports_every_run(cc, counts):
    with RuntimeMeasure(instance("atax"), "mini", repeats=2) as rt:
        runs: list = []
        out = rt.measure_all([None, {"strategy": "pluto"}, {"strategy": "pluto", "reorder": "contiguity"}],
                             on_run=lambda indices, seconds: runs.append(indices))
    assert runs == [(0,), (1, 2), (0,), (1, 2)]            # round by round, one run per distinct code
    assert [len(m.seconds) for m in out] == [2, 2, 2] and out[1].seconds == out[2].seconds
    assert counts["solve"] == 2 and counts["time"] == 4


def test_wrong_code_fails_its_check(cc, monkeypatch):
    """A kernel that skips statement S0's first call writes other bytes than the original."""
    real = runtime.program_c

    def dropped(program, schedule, sizes, **kwargs):
        kernel = kwargs.get("kernel")
        if kernel is not None:
            head, body = kernel.split("kernel_body(void)", 1)
            kwargs["kernel"] = head + "kernel_body(void)" + re.sub(r"\bS0\(", "if (0) S0(", body, count=1)
        return real(program, schedule, sizes, **kwargs)

    monkeypatch.setattr(runtime, "program_c", dropped)
    with RuntimeMeasure(instance("atax"), "mini", repeats=1) as rt:
        m = rt.measure({"strategy": "pluto"})
        assert rt.original().ok
    assert (m.stage, m.checked, m.seconds, m.checks) == ("check mini", False, (), (("mini", False),))
    assert m.error is not None and m.error.startswith("check mini: output differs from the original's")
    assert not m.ok and m.min is None and m.median is None


def test_failures_are_recorded_with_their_stage(cc, monkeypatch):
    with RuntimeMeasure(instance("jacobi-1d"), "mini", repeats=3) as rt:
        bad = rt.measure({"strategy": "nope"})
        assert (bad.stage, bad.code_hash, bad.checked) == ("solve", None, False)
        assert bad.error is not None and bad.error.startswith("solve: InstanceError: option strategy")

        monkeypatch.setattr(runtime, "TIME_FLAGS", ("-O3", "-fno-such-flag-dfopt"))
        broken = rt.measure({"strategy": "feautrier"})
        assert (broken.stage, broken.checked, broken.seconds) == ("compile", True, ())
        assert broken.error is not None and broken.error.startswith("compile: CompileError:")
        monkeypatch.undo()

        def crash(binary, threads, timeout_s):
            raise RunError(f"{binary} failed with exit code 139", "", 139)

        monkeypatch.setattr(runtime, "_run_timed", crash)
        crashed = rt.measure({"strategy": "isl"})
        assert crashed.stage == "run" and crashed.error is not None and "exit code 139" in crashed.error


def test_a_slow_run_stops_the_repeats(cc, monkeypatch):
    calls = []

    def slow(binary, threads, timeout_s):
        calls.append(timeout_s)
        return 25.0, "checksum"

    monkeypatch.setattr(runtime, "_run_timed", slow)
    with RuntimeMeasure(instance("jacobi-1d"), "mini", repeats=3, max_run_s=20.0, timeout_s=99.0) as rt:
        m = rt.measure({"strategy": "pluto"})
        assert rt.probe(7.0) == 25.0                        # the original's first run, with its own limit
        assert rt.original().seconds == (25.0,) and rt.probe(7.0) == 25.0
    assert m.seconds == (25.0,) and m.ok and calls == [99.0, 7.0]


def test_probe_counts_as_the_first_run(cc, counts):
    with RuntimeMeasure(instance("jacobi-1d"), "mini", repeats=2) as rt:
        first = rt.probe(60.0)
        assert first is not None and math.isfinite(first)
        m = rt.original()
    assert m.seconds[0] == first and len(m.seconds) == 2 and counts["time"] == 2


def test_missing_compiler_is_a_clear_error(monkeypatch):
    inst = instance("jacobi-1d")
    with pytest.raises(CompilerNotFoundError, match="not found"):
        RuntimeMeasure(inst, "mini", compiler="/nonexistent/dfopt-cc")
    monkeypatch.setenv("CC", "")
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(CompilerNotFoundError, match="no C compiler found"):
        RuntimeMeasure(inst, "mini")


def test_bad_arguments(cc):
    inst = instance("jacobi-1d")
    with pytest.raises(InstanceError, match="one of mini, small, medium, large; got 'huge'"):
        RuntimeMeasure(inst, "huge")
    with pytest.raises(InstanceError, match="argument repeats"):
        RuntimeMeasure(inst, "mini", repeats=0)
    with pytest.raises(InstanceError, match="problem schedule"):
        RuntimeMeasure(load(ROOT / "instances" / "fifo" / "fig8a.json"), "mini")
    rt = RuntimeMeasure(inst, "mini", repeats=1)
    folder = rt.workdir
    rt.close()
    assert not folder.exists()
    with pytest.raises(DfoptError, match="closed"):
        rt.original()


def test_measurement_without_runs():
    m = Measurement("large", error="solve: x", stage="solve")
    assert (m.min, m.median, m.ok) == (None, None, False)
    assert m.to_json()["seconds"] == [] and m.to_json()["error"] == "solve: x"
