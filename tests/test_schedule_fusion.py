"""The ``smart`` fusion policy of the scheduler (issue 23, "Scheduler fusion that keeps
parallelism"): the default preset keeps at least the parallel loop dimensions isl's scheduler
finds on every shipped kernel, and the kernels maximal fusion hurt (3mm, durbin, atax, bicg)
get their parallel loops back. Legality is the checker's (isl, ``sol.ok``); the generated C
against the original order is tests/test_schedule_codegen.py's."""

from __future__ import annotations

from pathlib import Path

import islpy as isl
import pytest

from dfopt.api import solve_instance
from dfopt.instance import load
from dfopt.models.schedule.fusion import Group, smart_groups
from dfopt.polyhedral.analysis import dimension_coefficients

ROOT = Path(__file__).resolve().parent.parent
NAMES = sorted(p.stem for p in (ROOT / "instances" / "schedule").glob("*.json"))


def solve(name: str, **options):
    sol = solve_instance(load(ROOT / "instances" / "schedule" / f"{name}.json"), **options)
    assert sol.ok, [(c.name, c.details) for c in sol.failed_checks]
    return sol


def parallel_loops(sol) -> int:
    """Loop dimensions (not scalar) that carry no dependence."""
    sec = sol.sections["schedule"]
    return sum(p and not s for p, s in zip(sec["parallel"], sec["scalar"]))


def loop_dims(sol, statement: str) -> list[int]:
    """The dimensions where ``statement``'s row is not constant (its loops, outermost first)."""
    rows = dimension_coefficients(isl.UnionMap(sol.decision.map))[statement]
    return [d for d, r in enumerate(rows) if r is not None and any(r)]


def apart(sol, a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are distributed: after the loops they share (equal rows), a scalar
    dimension gives them different values before either has a loop of its own."""
    rows = dimension_coefficients(isl.UnionMap(sol.decision.map))
    ca, cb = _constants(sol.decision.map, a), _constants(sol.decision.map, b)
    for d, (ra, rb) in enumerate(zip(rows[a], rows[b])):
        if ca[d] is not None and cb[d] is not None:
            if ca[d] != cb[d]:
                return True
        elif ra != rb:
            return False
    return False


def _constants(text: str, statement: str) -> list:
    """Per dimension, the statement's value when its row is constant (None otherwise)."""
    m = next(x for x in _maps(text) if x.get_tuple_name(isl.dim_type.in_) == statement)
    out = []
    for d in range(m.dim(isl.dim_type.out)):
        v = m.plain_get_val_if_fixed(isl.dim_type.out, d)
        out.append(None if v.is_nan() else v.to_python())
    return out


def _maps(text: str) -> list:
    found: list = []
    isl.UnionMap(text).foreach_map(found.append)
    return found


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "adi" else n for n in NAMES])
def test_default_keeps_isls_parallel_loops(name):
    """Never fewer parallel loop dimensions than isl's scheduler (both legal: the checker)."""
    default = solve(name)
    assert default.sections["schedule"]["config"]["fusion"] == "smart"
    assert parallel_loops(default) >= parallel_loops(solve(name, formulation="isl"))


def test_3mm_keeps_a_parallel_loop():
    """Maximal fusion puts the three products into one band with no parallel loop; smart fusion
    distributes G = E*F from the products it reads, and every statement's outer loop is parallel."""
    assert parallel_loops(solve("3mm", fusion="max")) == 0
    sol = solve("3mm")
    par = sol.sections["schedule"]["parallel"]
    assert apart(sol, "S1", "S5") and apart(sol, "S3", "S5")
    assert all(par[loop_dims(sol, s)[0]] for s in ("S0", "S1", "S2", "S3", "S4", "S5"))


def test_durbin_gets_parallel_inner_loops():
    """Under the sequential k loop, maximal fusion skews the three inner loops into one band; smart
    fusion distributes them: the two element-wise loops (z = y + alpha*y reversed, y = z) are
    parallel, the reduction into sum is not."""
    assert parallel_loops(solve("durbin", fusion="max")) == 0
    sol = solve("durbin")
    par = sol.sections["schedule"]["parallel"]
    inner = {s: loop_dims(sol, s)[-1] for s in ("S3", "S5", "S6")}
    assert par[inner["S5"]] and par[inner["S6"]] and not par[inner["S3"]]
    assert apart(sol, "S5", "S6")


def test_atax_avoids_the_skewed_fusion():
    """Maximal fusion fuses tmp = A x with y = A^T tmp by skewing y's loop (i + j, no parallel
    loop; 4x slower than the original order at LARGE); smart fusion distributes them, each with
    a parallel outer loop (tmp's over i, y's over j)."""
    bad = solve("atax", fusion="max")
    assert parallel_loops(bad) == 0 and not apart(bad, "S2", "S3")
    sol = solve("atax")
    par = sol.sections["schedule"]["parallel"]
    assert apart(sol, "S2", "S3")
    assert par[loop_dims(sol, "S2")[0]] and par[loop_dims(sol, "S3")[0]]


def test_bicg_distributes_what_shares_no_dependence():
    """bicg's two products (s = A^T r, q = A p) share no dependence: maximal fusion ties them to
    one loop order (s's transposed); smart fusion distributes them, as isl does, each with a
    parallel outer loop."""
    assert not apart(solve("bicg", fusion="max"), "S2", "S3")
    sol = solve("bicg")
    par = sol.sections["schedule"]["parallel"]
    assert apart(sol, "S2", "S3")
    assert par[loop_dims(sol, "S2")[0]] and par[loop_dims(sol, "S3")[0]]


@pytest.mark.parametrize("name", ["jacobi-1d", "jacobi-2d", "fdtd-2d", "gemm"])
def test_bands_that_carry_nothing_to_cut_stay_fused(name):
    """Smart fusion cuts only at a band's start: a stencil's time-tiled band (its rows after the
    time loop carry nothing new) and gemm's (i, j, k) band are what maximal fusion finds."""
    assert solve(name).decision.map == solve(name, fusion="max").decision.map


def test_smart_groups_cut_only_where_parallelism_is_lost():
    """Two parts without a parallel row fuse; a part with one is not fused into a part without."""
    never = smart_groups([["A"], ["B"], ["C"]], lambda names: False)
    assert never == [Group(("A", "B", "C"), False)]
    alone = smart_groups([["A"], ["B"]], lambda names: len(names) == 1)
    assert [g.statements for g in alone] == [("A",), ("B",)]
    mixed = smart_groups([["A"], ["B"]], lambda names: names == ("B",))
    assert [g.statements for g in mixed] == [("A",), ("B",)]


def test_fusion_option_names_the_choices():
    with pytest.raises(Exception, match="smart"):
        solve("gemm", fusion="typed")


def test_another_compiler_on_the_original_is_checked():
    """The runtime benchmark's Polly variant is the original order under another compiler and
    flags (an OriginalBuild), checked byte for byte against the default compiler's original
    before it is timed; gcc with other flags stands in for clang here."""
    from dfopt.codegen.poly import find_compiler
    from dfopt.codegen.poly.run import CompilerNotFoundError
    from dfopt.explore.runtime import OriginalBuild, RuntimeMeasure

    try:
        cc = find_compiler()
    except CompilerNotFoundError as err:
        pytest.skip(str(err))
    with RuntimeMeasure(load(ROOT / "instances" / "schedule" / "3mm.json"), "mini", repeats=1) as rt:
        orig, other = rt.measure_all([None, OriginalBuild(cc, ("-fno-tree-vectorize",))])
    assert other.checked and other.error is None and len(other.seconds) == 1
    assert other.code_hash != orig.code_hash and other.schedule == orig.schedule
