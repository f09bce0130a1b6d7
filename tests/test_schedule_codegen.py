"""Differential test of the scheduler's code (issue: original order vs scheduled and tiled):
each kernel's solution code, built with gcc -O2 -fopenmp and run on 2 threads at the ``mini``
dataset on pseudo-random inputs, writes exactly the bytes the original order writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from dfopt.api import solve_instance
from dfopt.codegen.poly import compile_c, find_compiler, program_c, run
from dfopt.codegen.poly.run import CompilerNotFoundError
from dfopt.instance import load

ROOT = Path(__file__).resolve().parent.parent
NAMES = sorted(p.stem for p in (ROOT / "instances" / "schedule").glob("*.json"))
FLAGS = ("-O2", "-ffp-contract=off")
VARIANTS = {
    "pluto-tiled": {"strategy": "pluto", "tiling": 4},
    "feautrier": {"strategy": "feautrier"},
    "tensor-tiled-wavefront": {"strategy": "tensor", "tiling": [4, 8], "wavefront": True},
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    try:
        find_compiler()
    except CompilerNotFoundError as err:
        pytest.skip(str(err))
    return tmp_path_factory.mktemp("schedule-diff")


_ORIGINAL: dict = {}


def output(program, schedule, workdir, kernel=None, threads=2) -> bytes:
    src = program_c(program, schedule, "mini", kernel=kernel)
    return run(compile_c(src, workdir, flags=FLAGS, openmp=True), threads=threads)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "adi" else n for n in NAMES])
def test_scheduled_code_matches_original(name, variant, workdir):
    inst = load(ROOT / "instances" / "schedule" / f"{name}.json")
    program = inst.program
    if name not in _ORIGINAL:
        _ORIGINAL[name] = output(program, program.schedule, workdir, threads=1)
    sol = solve_instance(inst, **VARIANTS[variant])
    assert sol.ok
    sec = sol.sections["schedule"]
    got = output(program, sec.get("tiled_map", sec["map"]), workdir, kernel=sec["code"])
    assert got == _ORIGINAL[name]


def test_an_illegal_order_changes_the_output(workdir):
    """The comparison can fail: jacobi-1d's sweep over i fused with the wrong order of the two
    statements reads values not yet written."""
    inst = load(ROOT / "instances" / "schedule" / "jacobi-1d.json")
    program = inst.program
    wrong = "[TSTEPS, N] -> { S0[t, i] -> [t, i, 1]; S1[t, i] -> [t, i, 0] }"
    assert output(program, wrong, workdir) != output(program, program.schedule, workdir, threads=1)
