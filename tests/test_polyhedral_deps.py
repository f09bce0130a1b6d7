"""Dependences of the hand-written PolyBench schedule instances (dfopt.polyhedral)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import islpy as isl
import pytest

from dfopt.errors import InstanceError
from dfopt.instance import load
from dfopt.ir.program import Program, Statement
from dfopt.polyhedral.dependences import (
    access_relations,
    dependences,
    is_legal,
    original_schedule,
    violated,
)

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "instances" / "schedule").glob("*.json"))
PRIORITY = ["gemm", "2mm", "atax", "bicg", "mvt", "syrk", "gemver", "jacobi-1d", "jacobi-2d", "seidel-2d",
            "fdtd-2d", "lu", "cholesky", "adi", "nussinov", "trsm-npu", "3mm", "durbin"]


def program(name: str) -> Program:
    return load(ROOT / "instances" / "schedule" / f"{name}.json").program


def test_all_kernels_present():
    assert sorted(p.stem for p in FILES) == sorted(PRIORITY)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_loads_and_original_schedule_is_legal(path: Path):
    inst = load(path)
    assert inst.problem == "schedule" and inst.description
    prog = inst.program
    reads, writes = access_relations(prog)
    assert not writes.is_empty() and not reads.is_empty()
    deps = dependences(prog)
    assert set(deps) == {"raw", "war", "waw"}
    sched = original_schedule(prog)
    assert all(v.is_empty() for v in violated(deps, sched).values())
    assert is_legal(deps, prog.schedule)
    # the schedule maps every statement
    names = {s.name for s in prog.statements}
    assert {sched.get_map_list().get_at(i).get_tuple_name(isl.dim_type.in_)
            for i in range(sched.get_map_list().n_map())} == names


# -- illegal and legal transformed schedules ------------------------------------------------------

def test_gemm_reversed_k_is_illegal():
    deps = dependences(program("gemm"))
    bad = violated(deps, "[NI, NJ, NK] -> { S0[i, j] -> [0, i, 0, j, 0, 0, 0]; "
                         "S1[i, k, j] -> [0, i, 1, -k, 0, j, 0] }")
    assert not bad["raw"].is_empty() and not bad["waw"].is_empty() and not bad["war"].is_empty()
    # only the S1 -> S1 accumulation is broken
    assert bad["raw"].domain().get_set_list().get_at(0).get_tuple_name() == "S1"


def test_gemm_scaling_after_update_is_illegal():
    deps = dependences(program("gemm"))
    bad = violated(deps, "[NI, NJ, NK] -> { S0[i, j] -> [0, i, 2, j, 0, 0, 0]; "
                         "S1[i, k, j] -> [0, i, 1, k, 0, j, 0] }")
    assert not bad["raw"].is_empty()


def test_gemm_interchange_kj_is_legal():
    deps = dependences(program("gemm"))
    assert is_legal(deps, "[NI, NJ, NK] -> { S0[i, j] -> [0, i, 0, j, 0, 0, 0]; "
                          "S1[i, k, j] -> [0, i, 1, j, 0, k, 0] }")


def test_jacobi_1d_time_innermost_is_illegal():
    deps = dependences(program("jacobi-1d"))
    bad = violated(deps, "[TSTEPS, N] -> { S0[t, i] -> [0, i, 0, t, 0]; S1[t, i] -> [0, i, 1, t, 0] }")
    assert not bad["raw"].is_empty()


def test_violated_reports_unscheduled_statements():
    deps = dependences(program("gemm"))
    bad = violated(deps, "[NI, NJ, NK] -> { S1[i, k, j] -> [0, i, 1, k, 0, j, 0] }")
    assert not bad["raw"].is_empty()   # S0 -> S1 pairs are not ordered


def test_mixed_time_dimensions_are_rejected():
    deps = dependences(program("gemm"))
    with pytest.raises(ValueError, match="different dimensions"):
        violated(deps, "[NI, NJ, NK] -> { S0[i, j] -> [0, i, 0, j, 0]; S1[i, k, j] -> [0, i, 1, k, 0, j, 0] }")


# -- sanity of who depends on whom -----------------------------------------------------------------

def pairs_of(umap: isl.UnionMap) -> set:
    maps = umap.get_map_list()
    return {(maps.get_at(i).get_tuple_name(isl.dim_type.in_), maps.get_at(i).get_tuple_name(isl.dim_type.out))
            for i in range(maps.n_map()) if not maps.get_at(i).is_empty()}


def test_jacobi_1d_raw_links_both_statements():
    raw = pairs_of(dependences(program("jacobi-1d"))["raw"])
    assert {("S0", "S1"), ("S1", "S0")} <= raw


def test_gemm_scaling_precedes_update():
    deps = dependences(program("gemm"))
    assert ("S0", "S1") in pairs_of(deps["raw"]) and ("S0", "S1") in pairs_of(deps["waw"])
    assert all(src != "S1" or dst != "S0" for kind in deps for src, dst in pairs_of(deps[kind]))


def test_kinds_argument():
    deps = dependences(program("atax"), kinds=("raw",))
    assert set(deps) == {"raw"}
    with pytest.raises(ValueError):
        dependences(program("atax"), kinds=("rar",))


def test_program_without_schedule_uses_statement_schedules():
    p = Program(params=("N",), context="[N] -> { : N >= 2 }", statements=(
        Statement("S0", "[N] -> { S0[i] : 0 <= i < N }", writes=("[N] -> { S0[i] -> A[i] }",),
                  schedule="[N] -> { S0[i] -> [0, i] }"),
        Statement("S1", "[N] -> { S1[i] : 0 <= i < N }", reads=("[N] -> { S1[i] -> A[N - 1 - i] }",),
                  schedule="[N] -> { S1[i] -> [1, i] }")))
    assert pairs_of(dependences(p)["raw"]) == {("S0", "S1")}
    with pytest.raises(InstanceError, match="have none of their own"):
        original_schedule(Program(params=("N",), statements=(Statement("S0", "[N] -> { S0[i] : 0 <= i < N }"),)))


# -- brute force: the original loop nests in Python, every dependence pair enumerated ----------------

def brute_gemm(NI, NJ, NK):
    for i in range(NI):
        for j in range(NJ):
            yield "S0", (i, j), [("C", i, j)], [("C", i, j)]
        for k in range(NK):
            for j in range(NJ):
                yield "S1", (i, k, j), [("C", i, j), ("A", i, k), ("B", k, j)], [("C", i, j)]


def brute_2mm(NI, NJ, NK, NL):
    for i in range(NI):
        for j in range(NJ):
            yield "S0", (i, j), [], [("tmp", i, j)]
            for k in range(NK):
                yield "S1", (i, j, k), [("tmp", i, j), ("A", i, k), ("B", k, j)], [("tmp", i, j)]
    for i in range(NI):
        for j in range(NL):
            yield "S2", (i, j), [("D", i, j)], [("D", i, j)]
            for k in range(NJ):
                yield "S3", (i, j, k), [("D", i, j), ("tmp", i, k), ("C", k, j)], [("D", i, j)]


def brute_3mm(NI, NJ, NK, NL, NM):
    for (out, lhs, rhs, rows, cols, inner) in (("E", "A", "B", NI, NJ, NK), ("F", "C", "D", NJ, NL, NM),
                                               ("G", "E", "F", NI, NL, NJ)):
        init, acc = {"E": ("S0", "S1"), "F": ("S2", "S3"), "G": ("S4", "S5")}[out]
        for i in range(rows):
            for j in range(cols):
                yield init, (i, j), [], [(out, i, j)]
                for k in range(inner):
                    yield acc, (i, j, k), [(out, i, j), (lhs, i, k), (rhs, k, j)], [(out, i, j)]


def brute_durbin(N):
    yield "S0", (0,), [("r", 0)], [("y", 0), ("beta", 0), ("alpha", 0)]
    for k in range(1, N):
        yield "S1", (k,), [("alpha", 0), ("beta", 0)], [("beta", 0)]
        yield "S2", (k,), [], [("sum", 0)]
        for i in range(k):
            yield "S3", (k, i), [("sum", 0), ("r", k - i - 1), ("y", i)], [("sum", 0)]
        yield "S4", (k,), [("r", k), ("sum", 0), ("beta", 0)], [("alpha", 0)]
        for i in range(k):
            yield "S5", (k, i), [("y", i), ("alpha", 0), ("y", k - i - 1)], [("z", i)]
        for i in range(k):
            yield "S6", (k, i), [("z", i)], [("y", i)]
        yield "S7", (k,), [("alpha", 0)], [("y", k)]


def brute_atax(M, N):
    for i in range(N):
        yield "S0", (i,), [], [("y", i)]
    for i in range(M):
        yield "S1", (i,), [], [("tmp", i)]
        for j in range(N):
            yield "S2", (i, j), [("tmp", i), ("A", i, j), ("x", j)], [("tmp", i)]
        for j in range(N):
            yield "S3", (i, j), [("y", j), ("A", i, j), ("tmp", i)], [("y", j)]


def brute_bicg(M, N):
    for i in range(M):
        yield "S0", (i,), [], [("s", i)]
    for i in range(N):
        yield "S1", (i,), [], [("q", i)]
        for j in range(M):
            yield "S2", (i, j), [("s", j), ("r", i), ("A", i, j)], [("s", j)]
            yield "S3", (i, j), [("q", i), ("A", i, j), ("p", j)], [("q", i)]


def brute_mvt(N):
    for i in range(N):
        for j in range(N):
            yield "S0", (i, j), [("x1", i), ("A", i, j), ("y_1", j)], [("x1", i)]
    for i in range(N):
        for j in range(N):
            yield "S1", (i, j), [("x2", i), ("A", j, i), ("y_2", j)], [("x2", i)]


def brute_syrk(M, N):
    for i in range(N):
        for j in range(i + 1):
            yield "S0", (i, j), [("C", i, j)], [("C", i, j)]
        for k in range(M):
            for j in range(i + 1):
                yield "S1", (i, k, j), [("C", i, j), ("A", i, k), ("A", j, k)], [("C", i, j)]


def brute_gemver(N):
    for i in range(N):
        for j in range(N):
            yield "S0", (i, j), [("A", i, j), ("u1", i), ("v1", j), ("u2", i), ("v2", j)], [("A", i, j)]
    for i in range(N):
        for j in range(N):
            yield "S1", (i, j), [("x", i), ("A", j, i), ("y", j)], [("x", i)]
    for i in range(N):
        yield "S2", (i,), [("x", i), ("z", i)], [("x", i)]
    for i in range(N):
        for j in range(N):
            yield "S3", (i, j), [("w", i), ("A", i, j), ("x", j)], [("w", i)]


def brute_jacobi_1d(TSTEPS, N):
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            yield "S0", (t, i), [("A", i - 1), ("A", i), ("A", i + 1)], [("B", i)]
        for i in range(1, N - 1):
            yield "S1", (t, i), [("B", i - 1), ("B", i), ("B", i + 1)], [("A", i)]


def _five(X, i, j):
    return [(X, i, j), (X, i, j - 1), (X, i, j + 1), (X, i + 1, j), (X, i - 1, j)]


def brute_jacobi_2d(TSTEPS, N):
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                yield "S0", (t, i, j), _five("A", i, j), [("B", i, j)]
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                yield "S1", (t, i, j), _five("B", i, j), [("A", i, j)]


def brute_seidel_2d(TSTEPS, N):
    for t in range(TSTEPS):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                yield "S0", (t, i, j), [("A", i + a, j + b) for a in (-1, 0, 1) for b in (-1, 0, 1)], [("A", i, j)]


def brute_fdtd_2d(TMAX, NX, NY):
    for t in range(TMAX):
        for j in range(NY):
            yield "S0", (t, j), [("_fict_", t)], [("ey", 0, j)]
        for i in range(1, NX):
            for j in range(NY):
                yield "S1", (t, i, j), [("ey", i, j), ("hz", i, j), ("hz", i - 1, j)], [("ey", i, j)]
        for i in range(NX):
            for j in range(1, NY):
                yield "S2", (t, i, j), [("ex", i, j), ("hz", i, j), ("hz", i, j - 1)], [("ex", i, j)]
        for i in range(NX - 1):
            for j in range(NY - 1):
                yield "S3", (t, i, j), [("hz", i, j), ("ex", i, j + 1), ("ex", i, j), ("ey", i + 1, j),
                                        ("ey", i, j)], [("hz", i, j)]


def brute_lu(N):
    for i in range(N):
        for j in range(i):
            for k in range(j):
                yield "S0", (i, j, k), [("A", i, j), ("A", i, k), ("A", k, j)], [("A", i, j)]
            yield "S1", (i, j), [("A", i, j), ("A", j, j)], [("A", i, j)]
        for j in range(i, N):
            for k in range(i):
                yield "S2", (i, j, k), [("A", i, j), ("A", i, k), ("A", k, j)], [("A", i, j)]


def brute_cholesky(N):
    for i in range(N):
        for j in range(i):
            for k in range(j):
                yield "S0", (i, j, k), [("A", i, j), ("A", i, k), ("A", j, k)], [("A", i, j)]
            yield "S1", (i, j), [("A", i, j), ("A", j, j)], [("A", i, j)]
        for k in range(i):
            yield "S2", (i, k), [("A", i, i), ("A", i, k)], [("A", i, i)]
        yield "S3", (i,), [("A", i, i)], [("A", i, i)]


def brute_adi(TSTEPS, N):
    for t in range(1, TSTEPS + 1):
        for i in range(1, N - 1):
            yield "S0", (t, i), [], [("v", 0, i)]
            yield "S1", (t, i), [], [("p", i, 0)]
            yield "S2", (t, i), [("v", 0, i)], [("q", i, 0)]
            for j in range(1, N - 1):
                yield "S3", (t, i, j), [("p", i, j - 1)], [("p", i, j)]
                yield "S4", (t, i, j), [("u", j, i - 1), ("u", j, i), ("u", j, i + 1), ("q", i, j - 1),
                                        ("p", i, j - 1)], [("q", i, j)]
            yield "S5", (t, i), [], [("v", N - 1, i)]
            for j in range(N - 2, 0, -1):
                yield "S6", (t, i, j), [("p", i, j), ("v", j + 1, i), ("q", i, j)], [("v", j, i)]
        for i in range(1, N - 1):
            yield "S7", (t, i), [], [("u", i, 0)]
            yield "S8", (t, i), [], [("p", i, 0)]
            yield "S9", (t, i), [("u", i, 0)], [("q", i, 0)]
            for j in range(1, N - 1):
                yield "S10", (t, i, j), [("p", i, j - 1)], [("p", i, j)]
                yield "S11", (t, i, j), [("v", i - 1, j), ("v", i, j), ("v", i + 1, j), ("q", i, j - 1),
                                         ("p", i, j - 1)], [("q", i, j)]
            yield "S12", (t, i), [], [("u", i, N - 1)]
            for j in range(N - 2, 0, -1):
                yield "S13", (t, i, j), [("p", i, j), ("u", i, j + 1), ("q", i, j)], [("u", i, j)]


def brute_nussinov(N):
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            if j - 1 >= 0:
                yield "S0", (i, j), [("table", i, j), ("table", i, j - 1)], [("table", i, j)]
            if i + 1 < N:
                yield "S1", (i, j), [("table", i, j), ("table", i + 1, j)], [("table", i, j)]
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    yield "S2", (i, j), [("table", i, j), ("table", i + 1, j - 1), ("seq", i), ("seq", j)], \
                        [("table", i, j)]
                else:
                    yield "S3", (i, j), [("table", i, j), ("table", i + 1, j - 1)], [("table", i, j)]
            for k in range(i + 1, j):
                yield "S4", (i, j, k), [("table", i, j), ("table", i, k), ("table", k + 1, j)], [("table", i, j)]


def brute_trsm_npu(N, M):
    for i in range(N):
        for k in range(i):
            for l_ in range(M):
                yield "S0", (i, k, l_), [("B", i, l_), ("A", i, k), ("X", k, l_)], [("B", i, l_)]
        for l_ in range(M):
            yield "S1", (i, l_), [("B", i, l_), ("A", i, i)], [("X", i, l_)]


def brute_deps(events) -> dict:
    """Memory-based dependence pairs {kind: {(src instance, sink instance)}} of an execution trace."""
    history = defaultdict(list)   # element -> [(instance, 'r' | 'w')] in execution order
    deps = {"raw": set(), "war": set(), "waw": set()}
    kind_of = {("w", "r"): "raw", ("r", "w"): "war", ("w", "w"): "waw"}
    for name, iters, reads, writes in events:
        inst = (name, tuple(iters))
        mine = [(e, "r") for e in reads] + [(e, "w") for e in writes]
        for element, mode in mine:
            for other, other_mode in history[element]:
                kind = kind_of.get((other_mode, mode))
                if kind and other != inst:
                    deps[kind].add((other, inst))
        for element, mode in mine:
            history[element].append((inst, mode))
    return deps


def isl_pairs(umap: isl.UnionMap, values: dict) -> set:
    fixed = isl.Set("[" + ", ".join(values) + "] -> { : " +
                    " and ".join(f"{k} = {v}" for k, v in values.items()) + " }")
    out = set()
    maps = umap.intersect_params(fixed).get_map_list()
    for m_i in range(maps.n_map()):
        m = maps.get_at(m_i)
        src, dst = m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out)
        n_in, n_out = m.dim(isl.dim_type.in_), m.dim(isl.dim_type.out)
        m = m.project_out(isl.dim_type.param, 0, m.dim(isl.dim_type.param))

        def add(point, src=src, dst=dst, n_in=n_in, n_out=n_out):
            xs = [point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n_in + n_out)]
            out.add(((src, tuple(xs[:n_in])), (dst, tuple(xs[n_in:]))))
        m.wrap().foreach_point(add)
    return out


BRUTE = [
    ("gemm", brute_gemm, {"NI": 3, "NJ": 2, "NK": 4}),
    ("2mm", brute_2mm, {"NI": 2, "NJ": 3, "NK": 2, "NL": 3}),
    ("atax", brute_atax, {"M": 3, "N": 4}),
    ("bicg", brute_bicg, {"M": 4, "N": 3}),
    ("mvt", brute_mvt, {"N": 4}),
    ("syrk", brute_syrk, {"M": 3, "N": 4}),
    ("gemver", brute_gemver, {"N": 4}),
    ("jacobi-1d", brute_jacobi_1d, {"TSTEPS": 3, "N": 6}),
    ("jacobi-2d", brute_jacobi_2d, {"TSTEPS": 2, "N": 5}),
    ("seidel-2d", brute_seidel_2d, {"TSTEPS": 2, "N": 5}),
    ("fdtd-2d", brute_fdtd_2d, {"TMAX": 2, "NX": 3, "NY": 4}),
    ("lu", brute_lu, {"N": 5}),
    ("cholesky", brute_cholesky, {"N": 5}),
    ("adi", brute_adi, {"TSTEPS": 2, "N": 5}),
    ("nussinov", brute_nussinov, {"N": 6}),
    ("trsm-npu", brute_trsm_npu, {"N": 4, "M": 3}),
    ("3mm", brute_3mm, {"NI": 2, "NJ": 3, "NK": 2, "NL": 3, "NM": 2}),
    ("durbin", brute_durbin, {"N": 5}),
]


@pytest.mark.parametrize("name, brute, values", BRUTE, ids=[b[0] for b in BRUTE])
def test_dependences_match_brute_force(name, brute, values):
    prog = program(name)
    assert list(values) == list(prog.params)
    expected = brute_deps(brute(*values.values()))
    deps = dependences(prog)
    for kind in ("raw", "war", "waw"):
        got = isl_pairs(deps[kind], values)
        assert len(got) == len(expected[kind]), kind
        assert got == expected[kind], kind
    assert sum(len(v) for v in expected.values()) > 0


def test_brute_force_covers_every_kernel():
    assert sorted(b[0] for b in BRUTE) == sorted(PRIORITY)
