"""Running an emitted HLS design in the tests: both C-simulation models (dfopt's threaded runtime
and AMD's ``hls_stream.h`` model from the tools folder, :mod:`tools`), and a build against a
stream header that logs every stream operation, for comparing each process's order with its
kernel's port schedules (``tests/test_port_schedules.py``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

CXX, MAKE = shutil.which("g++"), shutil.which("make")
needs_gxx = pytest.mark.skipif(CXX is None or MAKE is None, reason="g++ and make are needed to build the C++")


def skip_without_gxx() -> None:
    if CXX is None or MAKE is None:
        pytest.skip("g++ and make are needed to build the generated C++")


def both_csims(design: Path, via_make: bool = False) -> None:
    """``make csim`` and the Vitis model (its own ``csim-vitis.sh``, or ``make csim-vitis`` with
    ``via_make``) both PASS on ``design``."""
    from tools import tool

    skip_without_gxx()
    vitis = tool("vitis-stream")
    res = subprocess.run(["make", "-s", "-C", str(design), "csim"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "PASS" in res.stdout.splitlines(), res.stdout[-2000:] + res.stderr[-2000:]
    if via_make:
        res = subprocess.run(["make", "-s", "-C", str(design), "csim-vitis", f"VITIS_STREAM={vitis}"],
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0 and "PASS" in res.stdout.splitlines(), res.stdout[-2000:] + res.stderr[-2000:]
    else:
        res = subprocess.run([str(vitis / "csim-vitis.sh"), str(design)], capture_output=True, text=True, timeout=600)
        assert res.returncode == 0 and res.stdout.startswith("PASS "), res.stdout[-2000:] + res.stderr[-2000:]


def logged_run(design: Path, work: Path) -> tuple[str, dict]:
    """Build ``design`` against the logging ``hls_stream.h`` (one line ``R|W <stream>`` per beat,
    to ``ops.log``), run it, and return the log and the manifest (``design.json``)."""
    from test_port_schedules import LOGGING_STREAM

    skip_without_gxx()
    logging = work / "logging"
    logging.mkdir(exist_ok=True)
    (logging / "hls_stream.h").write_text(LOGGING_STREAM)
    make = subprocess.run([MAKE, "-s", "-C", str(design), "build-vitis", f"VITIS_STREAM={logging}"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert make.returncode == 0, make.stderr[-3000:]
    run = subprocess.run(["./csim_vitis", "data"], cwd=design, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0 and "PASS" in run.stdout, run.stdout + run.stderr
    return (design / "ops.log").read_text(), json.loads((design / "design.json").read_text())


def assert_stream_order(design: Path, fused, work: Path) -> None:
    """Every process of ``design`` (emitted from the fused design ``fused``) does its stream
    operations, token by token, in the order of its kernel's events."""
    from test_port_schedules import model_order, run_order

    log, manifest = logged_run(design, work)
    want, got = model_order(fused, manifest), run_order(log, manifest)
    assert set(want) == set(got) == {p["name"] for p in manifest["processes"]}
    for process in want:
        assert got[process] == want[process], process
