"""C code generation from schedules (dfopt.codegen.poly), checked by running the code.

The differential tests compile, for each shipped schedule instance, the program in its original
order and in other legal orders (isl's own scheduler, with OpenMP on the coincident dimensions;
the same schedule tiled by hand), run them on the ``mini`` dataset and compare every array's
bytes. All orders respect the memory-based dependences, so every statement instance reads the
same values: the results must be identical bit for bit (``-ffp-contract=off`` keeps the compiler
from fusing a multiply-add differently in two variants). An illegal order must give other bytes.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import islpy as isl
import pytest

from dfopt.codegen.poly import (
    CompileError,
    CompilerNotFoundError,
    RunError,
    compile_c,
    emit,
    find_compiler,
    kernel_c,
    loop_dims,
    parallel_dims,
    program_c,
    run,
)
from dfopt.errors import CodegenError
from dfopt.instance import load
from dfopt.ir.program import Program, Statement
from dfopt.polyhedral.dependences import dependences, is_legal

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "instances" / "schedule").glob("*.json"))
NAMES = [p.stem for p in FILES]
FLAGS = ("-O2", "-ffp-contract=off")
DATASETS = ("mini", "small", "medium", "large")


def program(name: str) -> Program:
    return load(ROOT / "instances" / "schedule" / f"{name}.json").program


@pytest.fixture(scope="module")
def cc():
    try:
        return find_compiler()
    except CompilerNotFoundError as err:
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("poly")


def execute(prog: Program, schedule, workdir, *, parallel=None, vector=(), threads=2, dataset="mini") -> bytes:
    src = program_c(prog, schedule, dataset, parallel=parallel, vector=vector, mode="check")
    return run(compile_c(src, workdir, flags=FLAGS, openmp=True), threads=threads)


_ORIGINAL: dict = {}


def original_output(name: str, workdir) -> bytes:
    if name not in _ORIGINAL:
        prog = program(name)
        _ORIGINAL[name] = execute(prog, prog.schedule, workdir, threads=1)
    return _ORIGINAL[name]


# == isl's scheduler and its schedule tree =======================================================

def all_deps(prog: Program) -> isl.UnionMap:
    deps = dependences(prog)
    return deps["raw"].union(deps["war"]).union(deps["waw"])


def domains(prog: Program) -> isl.UnionSet:
    out = None
    for s in prog.statements:
        d = isl.UnionSet.from_set(isl.Set(s.domain))
        out = d if out is None else out.union(d)
    return out.intersect_params(isl.Set(prog.context))


def maps(umap: isl.UnionMap) -> list:
    ml = umap.get_map_list()
    return [ml.get_at(i) for i in range(ml.n_map())]


def pad(umap: isl.UnionMap) -> isl.UnionMap:
    """Every statement's time vector padded with zeros to the longest length."""
    n = max(m.dim(isl.dim_type.out) for m in maps(umap))
    out = None
    for m in maps(umap):
        k = m.dim(isl.dim_type.out)
        if k < n:
            m = m.add_dims(isl.dim_type.out, n - k)
            for d in range(k, n):
                m = m.fix_si(isl.dim_type.out, d, 0)
        u = isl.UnionMap.from_map(m)
        out = u if out is None else out.union(u)
    return out


def isl_schedule(prog: Program) -> isl.Schedule:
    deps = all_deps(prog)
    sc = (isl.ScheduleConstraints.on_domain(domains(prog)).set_validity(deps).set_proximity(deps)
          .set_coincidence(deps))
    return sc.compute_schedule()


def band_members(node: isl.ScheduleNode, offset: int = 0, out=None) -> list:
    """(instances, output dimension, coincident, partial schedule of the member) of every band
    member of the tree below ``node``, as ``Schedule.get_map`` flattens it: a band's members are
    consecutive dimensions; a sequence or set adds one dimension (the child's position)."""
    out = [] if out is None else out
    t = node.get_type()
    if t == isl.schedule_node_type.band:
        n = node.band_n_member()
        partial = node.band_get_partial_schedule()
        for m in range(n):
            out.append((node.get_domain(), offset + m, bool(node.band_member_get_coincident(m)),
                        partial.get_union_pw_aff(m)))
        offset += n
    elif t in (isl.schedule_node_type.sequence, isl.schedule_node_type.set):
        offset += 1
    for i in range(node.n_children()):
        band_members(node.child(i), offset, out)
    return out


def project(umap: isl.UnionMap, d: int) -> isl.UnionMap:
    out = None
    for m in maps(umap):
        n = m.dim(isl.dim_type.out)
        u = isl.UnionMap.from_map(m.project_out(isl.dim_type.out, d + 1, n - d - 1)
                                  .project_out(isl.dim_type.out, 0, d))
        out = u if out is None else out.union(u)
    return out


def coincidence_flags(sched: isl.Schedule, smap: isl.UnionMap) -> list[bool]:
    """Parallel flags per output dimension of ``smap`` (= ``sched.get_map()``, padded) from the
    tree's coincident band members; dimensions that no band member produces are False. Checks
    on the way that each member really is that dimension of the map."""
    n = maps(smap)[0].dim(isl.dim_type.out)
    flags: list = [None] * n
    for inst, d, coincident, upa in band_members(sched.get_root()):
        member = isl.UnionMap.from_union_pw_aff(upa).intersect_domain(inst)
        assert project(smap.intersect_domain(inst), d).is_equal(member), (d, upa)
        flags[d] = coincident if flags[d] is None else (flags[d] and coincident)
    return [bool(f) for f in flags]


def tile(smap: isl.UnionMap, dims, size: int = 4) -> isl.UnionMap:
    """``smap`` with the dimensions ``dims`` tiled by ``size``: [.., floor(d/size) for d in dims, all dims]."""
    n = maps(smap)[0].dim(isl.dim_type.out)
    ins = [f"d{i}" for i in range(n)]
    outs = [f"floor(d{i}/{size})" for i in dims] + ins
    return smap.apply_range(isl.Map("{ [" + ", ".join(ins) + "] -> [" + ", ".join(outs) + "] }"))


# == the instances ===============================================================================

@pytest.mark.parametrize("name", NAMES)
def test_instance_has_datasets_and_declarations(name):
    prog = program(name)
    assert list(prog.sizes) == list(DATASETS)
    for values in prog.sizes.values():
        assert set(values) == set(prog.params)
    # growing datasets
    for p in prog.params:
        assert [prog.sizes[d][p] for d in DATASETS] == sorted(prog.sizes[d][p] for d in DATASETS)
    # every identifier a body uses is an iterator, parameter, array, scalar, prelude name or libm
    known = set(prog.params) | set(prog.arrays) | set(prog.scalars) | {"sqrt"}
    known |= set(emit._IDENT.findall(prog.prelude))
    for s in prog.statements:
        dom = isl.Set(s.domain)
        iters = {dom.get_dim_name(isl.dim_type.set, i) for i in range(dom.dim(isl.dim_type.set))}
        used = set(emit._IDENT.findall(s.body))
        assert used <= known | iters, (s.name, used - known - iters)


@pytest.mark.parametrize("name", NAMES)
def test_original_schedule_compiles_and_runs(name, cc, workdir):
    prog = program(name)
    src = program_c(prog, prog.schedule, "mini")
    out = run(compile_c(src, workdir, flags=("-O2",), openmp=True), threads=2)
    sizes = prog.sizes["mini"]
    width = {"f64": 8, "f32": 4, "i64": 8, "i32": 4, "i16": 2, "i8": 1}
    expected = sum(width[a["dtype"]] * math.prod(sizes.get(e, e) for e in a["shape"]) for a in prog.arrays.values())
    assert len(out) == expected
    if all(a["dtype"] == "f64" for a in prog.arrays.values()):
        assert all(math.isfinite(v) for v in struct.unpack(f"{len(out) // 8}d", out))


@pytest.mark.parametrize("name,openmp", [("gemm", True), ("nussinov", False)])
def test_time_mode(name, openmp, cc, workdir):
    """Seconds on stdout (omp_get_wtime with OpenMP, clock_gettime without)."""
    prog = program(name)
    src = program_c(prog, prog.schedule, "mini", mode="time")
    assert "dfopt_checksum()" in src and "fwrite" not in src
    seconds = float(run(compile_c(src, workdir, openmp=openmp), threads=1).decode())
    assert 0 <= seconds < 10


# == differential tests ==========================================================================

@pytest.mark.parametrize("name", NAMES)
def test_isl_schedule_gives_the_same_bytes(name, cc, workdir):
    prog = program(name)
    sched = isl_schedule(prog)
    smap = pad(sched.get_map())
    assert is_legal(dependences(prog), smap)
    flags = coincidence_flags(sched, smap)
    exact = parallel_dims(dependences(prog), smap)
    loops = {d for _, d, _ in loop_dims(prog, smap, verify=True)}
    assert all(exact[d] for d in loops if flags[d]), "a coincident member carries a dependence"
    vector = [max(d for d in loops if flags[d])] if any(flags[d] for d in loops) else []
    code = kernel_c(prog, smap, parallel=flags, vector=vector)
    if any(flags[d] for d in loops):      # forked, or kept sequential by the work-per-fork rule (forks.py)
        assert "#pragma omp parallel for" in code or "not forked: about" in code
    assert execute(prog, smap, workdir, parallel=flags, vector=vector) == original_output(name, workdir)


TILED = ["gemm", "syrk", "lu", "cholesky", "jacobi-1d", "jacobi-2d", "seidel-2d", "fdtd-2d", "nussinov",
         "trsm-npu"]


@pytest.mark.parametrize("name", TILED)
def test_tiled_isl_schedule_gives_the_same_bytes(name, cc, workdir):
    """The outermost band of isl's schedule (permutable, so tiling is legal) tiled 4 x 4 (x 4)."""
    prog = program(name)
    sched = isl_schedule(prog)
    band = sched.get_root().child(0)
    assert band.get_type() == isl.schedule_node_type.band and band.band_get_permutable()
    n = band.band_n_member()
    smap = pad(sched.get_map())
    tiled = tile(smap, range(n))
    deps = dependences(prog)
    assert is_legal(deps, tiled)
    flags = parallel_dims(deps, tiled)
    loop_dims(prog, tiled, verify=True)
    code = kernel_c(prog, tiled, parallel=flags)
    assert "min(" in code or "max(" in code
    assert execute(prog, tiled, workdir, parallel=flags) == original_output(name, workdir)


def test_gemm_tiles_offset_grid(cc, workdir):
    """gemm's band tiled 4 x 4 x 4 with the tile grid shifted (tile origins at -1, -2, -3)."""
    prog = program("gemm")
    smap = pad(isl_schedule(prog).get_map())
    n = maps(smap)[0].dim(isl.dim_type.out)
    ins = [f"d{i}" for i in range(n)]
    tiled = smap.apply_range(isl.Map("{ [" + ", ".join(ins) + "] -> [floor((d0 + 1)/4), floor((d1 + 2)/4), "
                                     "floor((d2 + 3)/4), " + ", ".join(ins) + "] }"))
    deps = dependences(prog)
    assert is_legal(deps, tiled)
    flags = parallel_dims(deps, tiled)
    assert flags[:2] == [True, True] and not flags[2]
    code = kernel_c(prog, tiled, parallel=flags, vector=(4,))
    assert code.count("#pragma omp parallel for") == 1 and "#pragma omp simd" in code
    assert execute(prog, tiled, workdir, parallel=flags, vector=(4,)) == original_output("gemm", workdir)


def wedge() -> Program:
    """A small program whose loop bounds need floord: j <= floor(i / 2) with i of either sign."""
    return Program(
        params=("N",), context="[N] -> { : N >= 1 }",
        arrays={"A": {"dtype": "f64", "shape": [41]}, "B": {"dtype": "f64", "shape": [41, 41]}},
        statements=(Statement("S0", "[N] -> { S0[i, j] : -N <= i <= N and -N <= j and 2j <= i }",
                              reads=("[N] -> { S0[i, j] -> A[i + N] }",), writes=("[N] -> { S0[i, j] -> A[i + N] }",),
                              body="A[i + N] = 0.5 * A[i + N] + (j + N) * B[i + N][j + N];"),),
        schedule="[N] -> { S0[i, j] -> [i, j] }",
        sizes={"mini": {"N": 13}})


def test_floord_bounds(cc, workdir):
    prog = wedge()
    deps = dependences(prog)
    original = execute(prog, prog.schedule, workdir, threads=1)
    for sched in ("[N] -> { S0[i, j] -> [floor(i/4), i, floor(j/3), j] }",
                  "[N] -> { S0[i, j] -> [i, floor(j/3), j] }",
                  "[N] -> { S0[i, j] -> [floor((i + 7)/5), floor(j/3), i, j] }"):
        assert is_legal(deps, sched)
        flags = parallel_dims(deps, sched)
        assert "floord(" in kernel_c(prog, sched, parallel=flags), sched
        assert execute(prog, sched, workdir, parallel=flags) == original, sched
    illegal = "[N] -> { S0[i, j] -> [i, -j] }"
    assert not is_legal(deps, illegal)
    assert execute(prog, illegal, workdir) != original


def test_illegal_schedule_gives_other_bytes(cc, workdir):
    """jacobi-1d with its two sweeps fused into one i loop (S1 updates A[i] before S0 reads it
    for B[i+1]) or with t and i interchanged violates dependences: the bytes differ, so the
    differential test can fail."""
    prog = program("jacobi-1d")
    deps = dependences(prog)
    original = original_output("jacobi-1d", workdir)
    for wrong in ("[TSTEPS, N] -> { S0[t, i] -> [0, t, 0, i, 0]; S1[t, i] -> [0, t, 0, i, 1] }",
                  "[TSTEPS, N] -> { S0[t, i] -> [0, i, 0, t, 0]; S1[t, i] -> [0, i, 0, t, 1] }"):
        assert not is_legal(deps, wrong)
        assert execute(prog, wrong, workdir) != original, wrong


def test_reversed_time_is_illegal_but_gives_the_same_bytes(cc, workdir):
    """Reversing jacobi-1d's time loop violates memory-based dependences, yet each time step
    applies the same map A -> B -> A (the bodies do not use t), so the result is the same: a
    changed output proves a wrong order, an unchanged one does not prove a right one."""
    prog = program("jacobi-1d")
    reversed_time = "[TSTEPS, N] -> { S0[t, i] -> [0, -t, 0, i, 0]; S1[t, i] -> [0, -t, 1, i, 0] }"
    assert not is_legal(dependences(prog), reversed_time)
    assert execute(prog, reversed_time, workdir) == original_output("jacobi-1d", workdir)


def test_parallel_dims_of_jacobi_1d():
    """The time loop carries dependences; the space loops of one sweep do not."""
    prog = program("jacobi-1d")
    flags = parallel_dims(dependences(prog), prog.schedule)
    assert flags[1] is False and flags[3] is True


# == the printer ==================================================================================

def test_loops_are_named_after_their_schedule_dimension():
    prog = program("gemm")
    assert loop_dims(prog, prog.schedule, verify=True) == [("c1", 1, 0), ("c3", 3, 1), ("c3", 3, 1), ("c5", 5, 2)]
    # scalar dimensions in front, between and at the end; a dimension fixed by an outer one
    sched = "[NI, NJ, NK] -> { S0[i, j] -> [7, i, i, 0, j, 0, 0]; S1[i, k, j] -> [7, i, i, 1, j, k, 3] }"
    assert [d for _, d, _ in loop_dims(prog, sched, verify=True)] == [1, 4, 4, 5]


def test_verify_catches_misnamed_loops(monkeypatch):
    """If isl named loops otherwise than by schedule dimension, verify would say so."""
    prog = program("gemm")
    real = isl.AstBuild.set_iterators

    def rotated(self, ids):
        names = [ids.get_at(i) for i in range(len(ids))]
        names = names[1:] + names[:1]
        out = isl.IdList.alloc(self.get_ctx(), len(names))
        for n in names:
            out = out.add(n)
        return real(self, out)

    monkeypatch.setattr(isl.AstBuild, "set_iterators", rotated)
    with pytest.raises(CodegenError, match="does not scan schedule dimension"):
        loop_dims(prog, prog.schedule, verify=True)


def test_pragmas_outermost_parallel_only():
    prog = program("gemm")
    sched = "[NI, NJ, NK] -> { S0[i, j] -> [i, j, 0, 0]; S1[i, k, j] -> [i, j, k, 1] }"
    code = kernel_c(prog, sched, parallel=[True, True, False, False], vector=(1,))
    lines = [ln.strip() for ln in code.splitlines()]
    assert lines.count("#pragma omp parallel for") == 1
    assert lines.count("#pragma omp simd") == 1
    first = lines.index("#pragma omp parallel for")
    assert lines[first + 1].startswith("for (int c0 = ")
    assert lines[lines.index("#pragma omp simd") + 1].startswith("for (int c1 = ")
    # no flags, no pragmas; simd only where parallel
    assert "#pragma" not in kernel_c(prog, sched)
    assert "#pragma" not in kernel_c(prog, sched, parallel=[False] * 4, vector=(0, 1))
    with pytest.raises(CodegenError):
        kernel_c(prog, sched, parallel=[True])


def test_macros_parenthesise_arguments():
    prog = program("nussinov")
    code = kernel_c(prog, prog.schedule)
    assert "#define S4(i, j, k) do { table[i][j] = max_score(" in code
    assert "S0((-c1), c3);" in code
    assert code.rstrip().endswith("#undef S4")


def test_program_c_checks_sizes():
    prog = program("jacobi-1d")
    with pytest.raises(CodegenError, match="missing"):
        program_c(prog, prog.schedule, {"N": 10})
    with pytest.raises(CodegenError, match="context"):
        program_c(prog, prog.schedule, {"TSTEPS": 2, "N": 2})
    with pytest.raises(CodegenError, match="no dataset"):
        program_c(prog, prog.schedule, "huge")
    with pytest.raises(CodegenError, match="cover"):
        program_c(prog, "[TSTEPS, N] -> { S0[t, i] -> [t, i] }", "mini")
    src = program_c(prog, prog.schedule, "small", seed=3)
    assert "#define TSTEPS 40" in src and "#define N 120" in src and "dfopt_rng_state = 3ULL" in src


def test_seed_changes_data(cc, workdir):
    prog = program("gemm")
    a = run(compile_c(program_c(prog, prog.schedule, "mini", seed=1), workdir))
    b = run(compile_c(program_c(prog, prog.schedule, "mini", seed=2), workdir))
    assert a != b and len(a) == len(b)


def test_compile_error_has_stderr(cc, workdir):
    with pytest.raises(CompileError) as info:
        compile_c("int main(void) { return undefined_name; }\n", workdir)
    assert "undefined_name" in info.value.stderr


def test_run_error(cc, workdir):
    binary = compile_c("int main(void) { return 3; }\n", workdir)
    with pytest.raises(RunError) as info:
        run(binary)
    assert info.value.returncode == 3


def test_no_compiler(monkeypatch):
    monkeypatch.setenv("CC", "")
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(CompilerNotFoundError, match="no C compiler"):
        find_compiler()
