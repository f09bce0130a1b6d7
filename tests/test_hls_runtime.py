"""dfopt's HLS simulation runtime: generated-style C++ built with g++ and run.

The C++ lives in tests/hls_runtime/: ``scenarios.cpp`` (one binary, the scenario chosen by its
first argument, a FIFO depth by its second) and ``vitis_pipeline.cpp`` (a top that uses only
what Vitis's own ``hls::stream`` has, built against dfopt's threaded runtime and against AMD's csim
model of ``hls_stream.h`` from the tools folder). The binaries are built once per module, in
parallel.
Exit codes: 3 deadlock, 4 leftover tokens, 5 misuse (dfopt.codegen.hls.EXIT_*).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from dfopt.codegen.hls import (
    EXIT_DEADLOCK,
    EXIT_LEFTOVER,
    EXIT_MISUSE,
    SIM_CXXFLAGS,
    VITIS_CXXFLAGS,
    include_dir,
)
from tools import tool

CXX = shutil.which("g++")
pytestmark = [pytest.mark.skipif(CXX is None, reason="g++ not found: the HLS runtime tests "
                                                     "compile C++ with g++"),
              pytest.mark.slow]  # the module's binaries take seconds of g++

SRC = Path(__file__).parent / "hls_runtime"
STRICT = (*SIM_CXXFLAGS, "-Wextra", "-Werror")
RUN_TIMEOUT = 20  # seconds; a hang is a failure, never a pass


def _compile(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> Iterator[dict[str, tuple[Path, Future]]]:
    """Every binary of the module, compiling in the background: name -> (path, future)."""
    tmp = tmp_path_factory.mktemp("hls_runtime")
    inc = str(include_dir())
    jobs = {
        "scenarios": [CXX, *STRICT, "-I", inc, str(SRC / "scenarios.cpp")],
        "pipeline_sim": [CXX, *STRICT, "-I", inc, str(SRC / "vitis_pipeline.cpp")],
    }
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)
    out = {name: (tmp / name, pool.submit(_compile, [*cmd, "-o", str(tmp / name)]))
           for name, cmd in jobs.items()}
    yield out
    pool.shutdown(wait=True)


def binary(builds, name: str) -> Path:
    path, fut = builds[name]
    res = fut.result()
    if res.returncode != 0:
        pytest.fail(f"g++ failed for {name}:\n{res.stderr}")
    return path


def run(builds, name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary(builds, name)), *map(str, args)], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, check=False)


def scenario(builds, *args) -> subprocess.CompletedProcess:
    return run(builds, "scenarios", *args)


def fork_tokens() -> int:
    return int(re.search(r"FORK_N = (\d+);", (SRC / "scenarios.cpp").read_text()).group(1))


# -- 1. a 3-stage pipeline over depth-2 FIFOs ---------------------------------------------------
def test_pipeline_with_depth_two_completes(builds):
    res = scenario(builds, "pipeline")
    assert res.returncode == 0, res.stderr
    # s1 has no depth: declared inside the region it gets the Vitis default; the testbench's
    # stream is unbounded
    assert "depths s0=2 s1=2 unused=5 in=0" in res.stdout
    assert "pipeline bad=0 left=0" in res.stdout


def test_function_api_pipeline_completes(builds):
    res = scenario(builds, "pipeline_api")
    assert (res.returncode, res.stderr) == (0, "")
    assert "pipeline bad=0 left=0" in res.stdout


# -- 2. fork-join: the exact depth that avoids the deadlock --------------------------------------
def test_fork_join_needs_exactly_the_depth_the_token_counts_give(builds):
    n = fork_tokens()
    # while D drains C's branch, B's branch holds all n tokens: s_ab + one in B + s_bd
    need = math.ceil((n - 1) / 2)
    ok = scenario(builds, "fork", need)
    assert ok.returncode == 0, ok.stderr
    assert f"fork sum_b={sum(2 * i for i in range(n))} " \
           f"sum_c={sum(101 + i for i in range(n))}" in ok.stdout

    bad = scenario(builds, "fork", need - 1)
    assert bad.returncode == EXIT_DEADLOCK
    d, held = need - 1, 2 * (need - 1) + 1  # tokens A got into B's branch before it stopped
    first = bad.stderr.splitlines()[0]
    assert first == (
        f"DEADLOCK in dataflow fork_top: "
        f"process fork_a blocked writing s_ab (full, depth {d}) at token {held}, "
        f"process fork_b blocked writing s_bd (full, depth {d}) at token {d}, "
        f"process fork_c blocked reading s_ac (empty) at token {held}, "
        f"process fork_d blocked reading s_cd (empty) at token {held}")
    assert "hint: raise the depth of a stream reported full" in bad.stderr
    assert bad.stdout == ""


@pytest.mark.parametrize("depth", [1, 2])
def test_fork_join_smaller_depths_deadlock_too(builds, depth):
    res = scenario(builds, "fork", depth)
    assert res.returncode == EXIT_DEADLOCK
    assert f"blocked writing s_bd (full, depth {depth})" in res.stderr


# -- 3. leftover tokens and a starved consumer ---------------------------------------------------
def test_leftover_tokens_exit_four(builds):
    res = scenario(builds, "leftover", 8)
    assert res.returncode == EXIT_LEFTOVER
    assert ("ERROR in dataflow leftover_top: leftover tokens in stream s: 5 "
            "(written by write8, read by read3)") in res.stderr
    assert "leftover not detected" not in res.stdout


def test_leftover_program_with_small_fifo_is_a_deadlock(builds):
    # the producer cannot even write its tokens once the consumer has gone
    res = scenario(builds, "leftover", 2)
    assert res.returncode == EXIT_DEADLOCK
    assert "process write8 blocked writing s (full, depth 2) at token 5" in res.stderr
    assert "finished processes: read3" in res.stderr


def test_consumer_reading_more_than_written_deadlocks(builds):
    res = scenario(builds, "starved")
    assert res.returncode == EXIT_DEADLOCK
    assert ("DEADLOCK in dataflow starved_top: process read8 blocked reading s (empty) "
            "at token 3") in res.stderr
    assert "finished processes: write3" in res.stderr


def test_tokens_left_in_a_process_local_stream(builds):
    res = scenario(builds, "local_leftover")
    assert res.returncode == EXIT_LEFTOVER
    assert ("ERROR in dataflow local_top: leftover tokens in stream local: 2 (written by "
            "local_fifo, read by local_fifo) when it went out of scope") in res.stderr


def test_non_blocking_calls(builds):
    res = scenario(builds, "nonblocking")
    assert (res.returncode, res.stderr) == (0, "")
    assert res.stdout == "nb 110 full=1 size=2 read 110 v=1,2 empty=1\n"


# -- 4. regions one after the other, and nested --------------------------------------------------
def test_sequential_and_nested_regions_complete(builds):
    res = scenario(builds, "sequential", 16)
    assert (res.returncode, res.stderr) == (0, "")
    assert "sequential bad=0" in res.stdout


def test_stream_between_sequential_regions_must_hold_every_token(builds):
    res = scenario(builds, "sequential", 15)
    assert res.returncode == EXIT_DEADLOCK
    assert ("DEADLOCK in dataflow stage1: process seq_add blocked writing mid (full, depth 15) "
            "at token 15") in res.stderr


def test_deadlock_inside_a_nested_region(builds):
    res = scenario(builds, "nested_deadlock")
    assert res.returncode == EXIT_DEADLOCK
    assert "DEADLOCK in dataflow outer, outer/inner_bad:" in res.stderr
    assert "process inner_pair blocked writing p (full, depth 2) at token 2" in res.stderr
    assert "process inner_swapped blocked reading q (empty) at token 0" in res.stderr
    assert "waiting for a nested dataflow: nested_bad (waits for outer/inner_bad)" in res.stderr


# -- misuse ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "code", "message"), [
    ("two_writers", EXIT_MISUSE, (r"ERROR in dataflow two_writers: stream s is written by two "
                                  r"processes, (seq_src and seq_src#2|seq_src#2 and seq_src) ")),
    ("throw", EXIT_MISUSE, r"ERROR in dataflow throw_top: process thrower threw: kernel failed"),
    ("testbench_empty", EXIT_DEADLOCK, (r"DEADLOCK outside any dataflow region: thread outside "
                                        r"dataflow \(testbench\) blocked reading out \(empty\)")),
])
def test_misuse_is_reported(builds, name, code, message):
    res = scenario(builds, name)
    assert res.returncode == code
    assert re.search(message, res.stderr), res.stderr


# -- 5. one source for g++ simulation and for Vitis ----------------------------------------------
def test_same_source_runs_concurrently_with_dfopt_headers(builds):
    res = run(builds, "pipeline_sim")
    assert (res.returncode, res.stdout, res.stderr) == (0, "bad=0\n", "")


def test_same_source_runs_sequentially_with_amds_hls_stream(tmp_path):
    # Vitis csim: AMD's model of hls_stream.h on the include path, no -DDFOPT_THREADED_CSIM
    vitis = tool("vitis-stream")
    exe = tmp_path / "pipeline_vitis"
    res = _compile([CXX, *VITIS_CXXFLAGS, "-Wextra", "-Werror", "-isystem", str(vitis), "-I", str(include_dir()),
                    str(SRC / "vitis_pipeline.cpp"), "-o", str(exe)])
    assert res.returncode == 0, res.stderr
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert (res.returncode, res.stdout.splitlines()[0]) == (0, "bad=0")
    assert "read while empty" not in res.stdout + res.stderr
    assert "maximum depth reached by any hls::stream() instance in the design is 64" in res.stdout


def test_the_threaded_header_does_not_shadow_vitis():
    assert not (include_dir() / "hls_stream.h").exists()
    text = (include_dir() / "dfopt_stream.h").read_text()
    assert "include_next" not in text


def test_synthesis_view_is_the_canonical_dataflow_form():
    # preprocessing only (no synthesis): with __SYNTHESIS__ the macros leave the plain calls
    vitis = tool("vitis-stream")
    res = subprocess.run([CXX, "-std=c++14", "-E", "-P", "-D__SYNTHESIS__", "-I", str(vitis), "-I",
                          str(include_dir()), str(SRC / "vitis_pipeline.cpp")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    top = res.stdout[res.stdout.index("void top("):]
    body = [ln.strip() for ln in top.splitlines() if ln.strip() not in ("", ";")]
    assert body[-4:] == ["load(in, s0);", "square(s0, s1);", "store(s1, out);", "}"]
    assert "dfopt" not in res.stdout
    assert "#pragma HLS stream variable=s1 depth=3" in body
