"""C code of a polyhedral :class:`~dfopt.ir.program.Program` executed in the order of a schedule.

The scheme
----------
1. The schedule (an isl union map ``statement instance -> time vector``; every statement maps to
   the same number ``n`` of time dimensions; floor divisions, i.e. tiling, are fine) is restricted
   to the statement domains and to the program's ``context``.
2. isl's AST builder (``isl.AstBuild.from_context(context).node_from_schedule_map(schedule)``)
   turns it into an AST of ``for`` / ``if`` / block / user (statement call) / mark nodes that
   visits every statement instance once, in lexicographic order of the time vectors.
3. A small printer here walks that AST and prints C, one ``for (int cK = ...)`` per loop (the
   iterators are declared in the loop, so inner iterators are private to OpenMP threads), and
   adds ``#pragma omp parallel for`` / ``#pragma omp simd`` (see below). Expressions are printed
   with isl's own ``AstExpr.to_C_str()``; the macros that text needs (``floord``, ``min``,
   ``max``) are defined at the top (:data:`ISL_MACROS`).
4. A user node is a call ``S1(c1, c5, c3)`` of the statement name with the values of the
   statement's domain iterators. Each statement becomes a macro
   ``#define S1(i, k, j) do { <body> } while (0)`` whose parameters are the domain's iterator
   names, so the call expands to the statement's C body; the printer puts every argument that
   is not a plain identifier or a non-negative literal in parentheses (``S0((-c1), c3)``), so that
   a body's ``2*i`` or ``A[i-1]`` stays right whatever expression replaces ``i``. The macros are
   ``#undef``-ed after the function.

Loops and schedule dimensions
-----------------------------
The builder is given its iterator names explicitly (``AstBuild.set_iterators``): ``c0 .. c{n-1}``,
one per output dimension of the schedule, in order. isl names the iterator of the loop that scans
schedule dimension ``d`` with the ``d``-th name, so a loop's iterator ``cK`` *is* the number of
its schedule dimension. Dimensions that take a single value where they are scanned (the constant
"scalar" dimensions of a 2d+1 schedule, or a dimension fixed by outer ones) produce no loop; they
are skipped, not renumbered: in ``[0, i, 1, k, 0, j, 0]`` the loops are ``c1``, ``c3``, ``c5``, and
in ``[i, i, j]`` they are ``c0`` and ``c2``. ``ast(..., verify=True)`` / ``loop_dims(...,
verify=True)`` check this against the builder's own view: a ``before_each_for`` callback takes the
values of the loop being built on the instances it encloses (``AstBuild.get_schedule()``, last
dimension) and compares them with schedule dimension ``K`` of the same instances; the tests run
it on every instance's original, isl-computed and tiled schedule. If a name ever clashes with an
identifier of the program, the prefix changes (``c_0``, ...); :func:`loop_dims` returns the map
either way.

Parallel loops and vectors
--------------------------
``parallel`` is a list of booleans, one per schedule dimension (:func:`parallel_dims` computes
it from the dependences: dimension ``d`` is parallel when no dependence pair whose two ends have
equal values on dimensions ``< d`` has different values at ``d``). A loop of a parallel dimension
gets ``#pragma omp parallel for`` when no enclosing loop has one already (the outermost parallel
loop of each nest; never nested parallel regions) and at most one sequential loop encloses it
(:data:`MAX_LOOPS_AROUND_PARALLEL`: a wavefront's ``for t { parallel for }`` forks once per
wavefront; a parallel loop deep inside sequential ones would fork a team per inner iteration,
which costs more than it gains, so it stays sequential with a comment); under one sequential loop
it is forked only when one execution of it runs enough statement instances at the program's
largest listed size (:mod:`dfopt.codegen.poly.forks`: durbin's ``for k { parallel for i < k }``
stays sequential, a wavefront of tiles is forked); and ``#pragma omp simd`` when its dimension
is also in ``vector`` (both: ``#pragma omp parallel for simd``). A loop whose condition is not in
OpenMP's canonical form (``c <= e`` / ``c < e``) stays sequential (with a comment). Flags of
dimensions that produce no loop have no effect.

>>> from dfopt.ir.program import Program, Statement
>>> p = Program(params=("N",), context="[N] -> { : N >= 1 }", arrays={"A": {"dtype": "f64", "shape": ["N"]}},
...     statements=(Statement("S0", "[N] -> { S0[i] : 0 <= i < N }", body="A[i] = 2 * A[i];"),))
>>> print(kernel_c(p, "[N] -> { S0[i] -> [0, N - 1 - i] }", parallel=[True, True], vector=(1,)))
... # doctest: +NORMALIZE_WHITESPACE
#ifndef floord
#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))
#endif
#ifndef min
#define min(x, y) ((x) < (y) ? (x) : (y))
#endif
#ifndef max
#define max(x, y) ((x) > (y) ? (x) : (y))
#endif
<BLANKLINE>
#define S0(i) do { A[i] = 2 * A[i]; } while (0)
<BLANKLINE>
static void kernel_body(void)
{
  #pragma omp parallel for simd
  for (int c1 = 0; c1 < N; c1 += 1) {
    S0((N - c1 - 1));
  }
}
<BLANKLINE>
#undef S0
<BLANKLINE>
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import islpy as isl

from dfopt.codegen.poly.forks import ForkModel
from dfopt.errors import CodegenError
from dfopt.ir.program import Program
from dfopt.polyhedral.analysis import MapLike, maps, parallel_flags
from dfopt.polyhedral.dependences import domains

#: The macros isl's C text of AST expressions relies on (same meaning as isl's own).
ISL_MACROS = """\
#ifndef floord
#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) : (n) / (d))
#endif
#ifndef min
#define min(x, y) ((x) < (y) ? (x) : (y))
#endif
#ifndef max
#define max(x, y) ((x) > (y) ? (x) : (y))
#endif
"""

#: C type of each array / scalar dtype.
CTYPES = {"f64": "double", "f32": "float", "i64": "int64_t", "i32": "int32_t", "i16": "int16_t",
          "i8": "int8_t", "u64": "uint64_t", "u32": "uint32_t", "u16": "uint16_t", "u8": "uint8_t"}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


# == isl helpers ==================================================================================

def _context(program: Program) -> isl.Set:
    if program.context:
        return isl.Set(program.context)
    return isl.Set("[" + ", ".join(program.params) + "] -> { : }")


def _domains(program: Program) -> isl.UnionSet:
    if not program.statements:
        raise CodegenError("the program has no statements")
    return domains(program)


def _schedule(program: Program, schedule) -> tuple[isl.UnionMap, int]:
    """(schedule restricted to the domains and context, number of time dimensions)."""
    sched = isl.UnionMap(schedule) if isinstance(schedule, str) else schedule
    domains = _domains(program)
    sched = sched.intersect_domain(domains).intersect_params(_context(program)).coalesce()
    missing = domains.subtract(sched.domain())
    if not missing.is_empty():
        raise CodegenError(f"the schedule does not cover the statement instances {missing}")
    dims = {m.dim(isl.dim_type.out) for m in maps(sched)}
    if len(dims) != 1:
        raise CodegenError(f"every statement must map to the same number of schedule dimensions; "
                           f"found {sorted(dims)} (pad with zeros)")
    return sched, dims.pop()


def parallel_dims(deps: MapLike | Program, schedule: str | isl.UnionMap) -> list[bool]:
    """One flag per output dimension of ``schedule``: True when the dimension carries no
    dependence, i.e. no pair (source -> sink) of ``deps`` has equal schedule values on the
    dimensions before it and different values at it (pairs that differ earlier are ordered by an
    outer dimension; :func:`dfopt.polyhedral.analysis.parallel_flags`). ``deps`` is a dict of union maps (as
    :func:`dfopt.polyhedral.dependences.dependences` returns), one union map, or a
    :class:`~dfopt.ir.program.Program` (its memory-based dependences are computed).

    >>> parallel_dims(isl.UnionMap("[N] -> { S[t, i] -> S[t + 1, i] }"),
    ...               "[N] -> { S[t, i] -> [t, i] }")
    [False, True]
    >>> parallel_dims(isl.UnionMap("[N] -> { S[t, i] -> S[t + 1, i] }"),
    ...               "[N] -> { S[t, i] -> [i, t] }")
    [True, False]
    """
    if isinstance(deps, Program):
        from dfopt.polyhedral.dependences import dependences
        return parallel_flags(dependences(deps), isl.UnionMap(schedule) if isinstance(schedule, str) else schedule)
    return parallel_flags(deps, isl.UnionMap(schedule) if isinstance(schedule, str) else schedule)


# == names =======================================================================================

def _program_names(program: Program) -> set:
    names = set(program.params) | set(program.arrays) | set(program.scalars)
    names |= {s.name for s in program.statements}
    for s in program.statements:
        names |= set(_IDENT.findall(s.body))
    names |= set(_IDENT.findall(program.prelude or ""))
    return names


def _iterator_names(program: Program, n: int) -> list[str]:
    taken = _program_names(program)
    for prefix in ("c", "c_", "dfopt_c"):
        names = [f"{prefix}{d}" for d in range(n)]
        if not taken.intersection(names):
            return names
    raise CodegenError("cannot find loop iterator names that do not clash with the program's identifiers")


def _domain_iterators(stmt) -> list[str]:
    dom = isl.Set(stmt.domain)
    names = [dom.get_dim_name(isl.dim_type.set, i) for i in range(dom.dim(isl.dim_type.set))]
    if any(not n for n in names):
        raise CodegenError(f"statement {stmt.name}: every domain dimension needs a name to be used in the "
                           f"body, got {dom}")
    return [n for n in names if n]


def statement_macros(program: Program) -> tuple[str, str]:
    """(``#define`` lines, ``#undef`` lines) of the statement macros: ``S(i, j)`` -> body."""
    defs, undefs = [], []
    for s in program.statements:
        if "//" in s.body:
            raise CodegenError(f"statement {s.name}: the body becomes a macro, use /* */ comments, not //")
        body = " \\\n    ".join(line.strip() for line in s.body.strip().splitlines() if line.strip())
        params = ", ".join(_domain_iterators(s))
        defs.append(f"#define {s.name}({params}) do {{ {body} }} while (0)")
        undefs.append(f"#undef {s.name}")
    return "\n".join(defs) + "\n", "\n".join(undefs) + "\n"


# == the AST printer =============================================================================

def _project(umap: isl.UnionMap, d: int) -> isl.UnionMap:
    """``umap`` with only output dimension ``d`` kept."""
    parts = []
    for m in maps(umap):
        n = m.dim(isl.dim_type.out)
        m = m.project_out(isl.dim_type.out, d + 1, n - d - 1).project_out(isl.dim_type.out, 0, d)
        parts.append(isl.UnionMap.from_map(m))
    out = parts[0]          # a schedule has a map
    for u in parts[1:]:
        out = out.union(u)
    return out


def _build(program: Program, sched: isl.UnionMap, n: int, verify: bool = False) -> tuple[isl.AstNode, list[str]]:
    names = _iterator_names(program, n)
    dim_of = {name: d for d, name in enumerate(names)}
    ids = isl.IdList.alloc(sched.get_ctx(), n)
    for name in names:
        ids = ids.add(isl.Id(name))
    build = isl.AstBuild.from_context(_context(program)).set_iterators(ids)
    if not verify:
        return build.node_from_schedule_map(sched), names
    faults = []

    def before_each_for(b: isl.AstBuild) -> isl.Id:
        # b.get_schedule(): instance -> values of the loops built so far, this one last
        try:
            space = b.get_schedule_space()
            last = space.dim(isl.dim_type.set) - 1
            name = space.get_dim_name(isl.dim_type.set, last)
            current = b.get_schedule()
            here = _project(current, last)
            d = dim_of.get(name) if name is not None else None
            if d is None:
                faults.append(f"loop {name} is not named after a schedule dimension")
            elif not here.is_equal(_project(sched.intersect_domain(current.domain()), d)):
                faults.append(f"loop {name} does not scan schedule dimension {d}")
        except Exception as err:  # an exception must not cross isl's C callback
            faults.append(f"check failed: {err!r}")
        return isl.Id("dfopt_for")

    build, handle = build.set_before_each_for(before_each_for)
    node = build.node_from_schedule_map(sched)
    del handle
    if faults:
        raise CodegenError("; ".join(faults))
    return node, names


def ast(program: Program, schedule: str | isl.UnionMap, *, verify: bool = False) -> tuple[isl.AstNode, dict]:
    """isl's AST of ``schedule`` and ``{iterator name: schedule dimension}``. With ``verify``, a
    ``before_each_for`` callback of the builder checks that each loop ``cK`` takes exactly the
    values of schedule dimension ``K`` on the instances it encloses (CodegenError otherwise)."""
    sched, n = _schedule(program, schedule)
    node, names = _build(program, sched, n, verify)
    return node, {name: d for d, name in enumerate(names)}


def loop_dims(program: Program, schedule: str | isl.UnionMap, *,
              verify: bool = False) -> list[tuple[str, int, int]]:
    """(iterator, schedule dimension, nesting depth) of every non-degenerate loop of the AST, in
    print order (outer before inner); ``verify`` as in :func:`ast`."""
    node, dim_of = ast(program, schedule, verify=verify)
    out: list[tuple[str, int, int]] = []

    def visit(nd: isl.AstNode, depth: int) -> None:
        t = nd.get_type()
        if t == isl.ast_node_type.for_:  # type: ignore[attr-defined]  # not in islpy's stubs
            it = nd.for_get_iterator().get_id().get_name()
            if not nd.for_is_degenerate():
                out.append((it, dim_of[it], depth))
            visit(nd.for_get_body(), depth + (0 if nd.for_is_degenerate() else 1))
        elif t == isl.ast_node_type.block:
            children = nd.block_get_children()
            for i in range(children.n_ast_node()):
                visit(children.get_at(i), depth)
        elif t == isl.ast_node_type.if_:  # type: ignore[attr-defined]  # not in islpy's stubs
            visit(nd.if_get_then_node(), depth)
            if nd.if_has_else_node():
                visit(nd.if_get_else_node(), depth)
        elif t == isl.ast_node_type.mark:
            visit(nd.mark_get_node(), depth)

    visit(node, 0)
    return out


def _arg_text(expr: isl.AstExpr) -> str:
    text = expr.to_C_str()
    t = expr.get_type()
    if t == isl.ast_expr_type.id or (t == isl.ast_expr_type.int and not text.startswith("-")):
        return text
    return f"({text})"


def _canonical(node: isl.AstNode, iterator: str) -> bool:
    """The loop test is ``iterator <= e`` or ``iterator < e`` (OpenMP's canonical loop form)."""
    cond = node.for_get_cond()
    if cond.get_type() != isl.ast_expr_type.op:
        return False
    if cond.get_op_type() not in (isl.ast_expr_op_type.le, isl.ast_expr_op_type.lt):
        return False
    lhs = cond.get_op_arg(0)
    return lhs.get_type() == isl.ast_expr_type.id and lhs.get_id().get_name() == iterator


MAX_LOOPS_AROUND_PARALLEL = 1   # sequential loops allowed around a `parallel for` (wavefronts)


class _Printer:
    def __init__(self, dim_of: dict, parallel, vector, forks: ForkModel | None = None):
        self.dim_of = dim_of
        self.parallel = parallel
        self.vector = set(vector)
        self.forks = forks
        self.lines: list[str] = []
        self.loops_around = 0

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def node(self, nd: isl.AstNode, depth: int, in_parallel: bool) -> None:
        t = nd.get_type()
        if t == isl.ast_node_type.for_:  # type: ignore[attr-defined]  # not in islpy's stubs
            self.for_(nd, depth, in_parallel)
        elif t == isl.ast_node_type.block:
            children = nd.block_get_children()
            for i in range(children.n_ast_node()):
                self.node(children.get_at(i), depth, in_parallel)
        elif t == isl.ast_node_type.if_:  # type: ignore[attr-defined]  # not in islpy's stubs
            self.if_(nd, depth, in_parallel)
        elif t == isl.ast_node_type.user:
            expr = nd.user_get_expr()
            if expr.get_type() != isl.ast_expr_type.op or expr.get_op_type() != isl.ast_expr_op_type.call:
                raise CodegenError(f"unexpected user node {expr.to_C_str()}")
            name = expr.get_op_arg(0).to_C_str()
            args = ", ".join(_arg_text(expr.get_op_arg(i)) for i in range(1, expr.get_op_n_arg()))
            self.emit(depth, f"{name}({args});")
        elif t == isl.ast_node_type.mark:
            self.emit(depth, f"/* mark: {nd.mark_get_id().get_name()} */")
            self.node(nd.mark_get_node(), depth, in_parallel)
        else:
            raise CodegenError(f"unexpected AST node type {t}")

    def if_(self, nd: isl.AstNode, depth: int, in_parallel: bool) -> None:
        self.emit(depth, f"if ({nd.if_get_cond().to_C_str()}) {{")
        self.node(nd.if_get_then_node(), depth + 1, in_parallel)
        if nd.if_has_else_node():
            self.emit(depth, "} else {")
            self.node(nd.if_get_else_node(), depth + 1, in_parallel)
        self.emit(depth, "}")

    def for_(self, nd: isl.AstNode, depth: int, in_parallel: bool) -> None:
        it = nd.for_get_iterator().get_id().get_name()
        init = nd.for_get_init().to_C_str()
        if nd.for_is_degenerate():
            self.emit(depth, "{")
            self.emit(depth + 1, f"const int {it} = {init};")
            self.node(nd.for_get_body(), depth + 1, in_parallel)
            self.emit(depth, "}")
            return
        dim = self.dim_of.get(it)
        par = self.parallel is not None and dim is not None and bool(self.parallel[dim])
        omp_for = par and not in_parallel and self.loops_around <= MAX_LOOPS_AROUND_PARALLEL
        simd = par and dim in self.vector
        if par and not in_parallel and not omp_for:
            self.emit(depth, f"/* dimension {dim} is parallel; not forked this deep ({self.loops_around} loops "
                             f"around) */")
        if omp_for and self.loops_around and self.forks is not None:
            omp_for, work = self.forks.worth_forking(nd, self.dim_of)
            if not omp_for:
                at = ", ".join(f"{p} = {v}" for p, v in self.forks.sizes.items())
                self.emit(depth, f"/* dimension {dim} is parallel; not forked: about {work} statement instances "
                                 f"per fork at {at} */")
        if (omp_for or simd) and not _canonical(nd, it):
            self.emit(depth, f"/* dimension {dim} is parallel, but the loop test is not in OpenMP form */")
            omp_for = simd = False
        if omp_for and simd:
            self.emit(depth, "#pragma omp parallel for simd")
        elif omp_for:
            self.emit(depth, "#pragma omp parallel for")
        elif simd:
            self.emit(depth, "#pragma omp simd")
        cond = nd.for_get_cond().to_C_str()
        inc = nd.for_get_inc().to_C_str()
        self.emit(depth, f"for (int {it} = {init}; {cond}; {it} += {inc}) {{")
        self.loops_around += 1
        self.node(nd.for_get_body(), depth + 1, in_parallel or omp_for)
        self.loops_around -= 1
        self.emit(depth, "}")


def kernel_c(program: Program, schedule: str | isl.UnionMap, *, parallel: Sequence[bool] | None = None,
             vector: Sequence[int] = (), name: str = "kernel_body") -> str:
    """C text of ``static void <name>(void)`` that runs every statement instance of ``program``
    in the order of ``schedule`` (isl union map text, or an ``isl.UnionMap``), preceded by the
    isl helper macros and the statement macros (``#undef``-ed after the function).

    ``parallel``: None (no pragmas) or one boolean per schedule dimension; ``vector``: dimension
    indices to mark ``omp simd`` (only if parallel). The arrays, scalars and parameters the
    bodies use must be declared before this text (:func:`program_c` does).
    """
    sched, n = _schedule(program, schedule)
    if parallel is not None:
        parallel = [bool(x) for x in parallel]
        if len(parallel) != n:
            raise CodegenError(f"parallel has {len(parallel)} flags but the schedule has {n} dimensions")
    bad = [v for v in vector if not (isinstance(v, int) and 0 <= v < n)]
    if bad:
        raise CodegenError(f"vector dimensions {bad} are not schedule dimensions 0..{n - 1}")
    node, names = _build(program, sched, n)
    sizes = _largest_sizes(program) if parallel is not None and any(parallel) else None
    forks = ForkModel(sched, n, sizes, _fixed_context(program, sizes)) if sizes is not None else None
    printer = _Printer({nm: d for d, nm in enumerate(names)}, parallel, vector, forks)
    printer.node(node, 1, False)
    defs, undefs = statement_macros(program)
    return (ISL_MACROS + "\n" + defs + "\n" + f"static void {name}(void)\n{{\n"
            + "\n".join(printer.lines) + "\n}\n\n" + undefs + "\n")


# == the whole program ===========================================================================

def _ctype(dtype: str, what: str) -> str:
    try:
        return CTYPES[dtype]
    except KeyError:
        raise CodegenError(f"{what}: dtype {dtype!r} has no C type; expected one of {sorted(CTYPES)}") from None


def _literal(value, dtype: str, what: str) -> str:
    if dtype.startswith("f"):
        v = float(value)
        if not math.isfinite(v):
            raise CodegenError(f"{what}: value {value!r} is not finite")
        text = repr(v)
        return text + "f" if dtype == "f32" else text
    if float(value) != int(value):
        raise CodegenError(f"{what}: value {value!r} is not an integer but dtype is {dtype}")
    text = str(int(value))
    return text + "LL" if dtype in ("i64", "u64") else text


def _sizes(program: Program, sizes) -> dict:
    if isinstance(sizes, str):
        if sizes not in program.sizes:
            raise CodegenError(f"no dataset {sizes!r}; the program has {sorted(program.sizes)}")
        sizes = program.sizes[sizes]
    sizes = dict(sizes)
    missing = [p for p in program.params if p not in sizes]
    unknown = [p for p in sizes if p not in program.params]
    if missing or unknown:
        raise CodegenError(f"sizes must give a value to exactly the parameters {list(program.params)}; "
                           f"missing {missing}, unknown {unknown}")
    for p, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise CodegenError(f"size {p}={v!r} is not an integer")
    if _fixed_context(program, sizes).is_empty():
        raise CodegenError(f"sizes {sizes} do not satisfy the program context {program.context}")
    return sizes


def _fixed_context(program: Program, sizes: Mapping[str, int]) -> isl.Set:
    """The program's context with every parameter fixed at its value in ``sizes``."""
    ctx = _context(program)
    for p, v in sizes.items():
        pos = ctx.find_dim_by_name(isl.dim_type.param, p)
        if pos >= 0:
            ctx = ctx.fix_val(isl.dim_type.param, pos, isl.Val.int_from_si(ctx.get_ctx(), v))
    return ctx


def _largest_sizes(program: Program) -> dict | None:
    """The valid dataset of ``program.sizes`` with the largest sum of values (None without one)."""
    best: dict | None = None
    for name in program.sizes or {}:
        try:
            values = _sizes(program, name)
        except CodegenError:
            continue
        if best is None or sum(values.values()) > sum(best.values()):
            best = values
    return best


def _shape(program: Program, name: str, spec: dict) -> list:
    shape = list(spec.get("shape", []))
    for e in shape:
        if isinstance(e, str) and e not in program.params:
            raise CodegenError(f"array {name}: extent {e!r} is not a parameter {list(program.params)}")
    return shape


_PRELUDE_HEAD = """\
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
"""

_RUNTIME = """\
static uint64_t dfopt_rng_state;

/* 64-bit LCG (Knuth's MMIX constants); the top 53 bits give a double in [0, 1). */
static double dfopt_rand(void)
{
  dfopt_rng_state = dfopt_rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(dfopt_rng_state >> 11) * (1.0 / 9007199254740992.0);
}
"""

_TIMER = """\
static volatile int dfopt_warm;
static void dfopt_warm_up(void) { dfopt_warm = 1; }

static double dfopt_now(void)
{
#ifdef _OPENMP
  return omp_get_wtime();
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}
"""


def program_c(program: Program, schedule: str | isl.UnionMap, sizes: Mapping[str, int] | str, *,
              parallel: Sequence[bool] | None = None, vector: Sequence[int] = (), mode: str = "check",
              seed: int = 0, kernel: str | None = None) -> str:
    """A whole C file running ``program`` in the order of ``schedule`` at the parameter values
    ``sizes`` (``{param: int}``, or the name of one of ``program.sizes``' datasets).

    Layout: includes; ``#define`` of each parameter; ``program.prelude``; the scalars as
    ``static const``; each array as a zero-based static global (``static double A[NI][NK];``);
    a 64-bit LCG seeded by ``seed``; ``dfopt_init()`` that fills every array (declared order,
    row-major) with values in [0, 1) (integer dtypes: 0..3) and adds the first extent to the
    diagonal of square 2-D arrays (so lu / cholesky stay finite); the kernel
    (:func:`kernel_c`); ``main``.

    ``mode="check"``: ``main`` runs the kernel once and writes every array's raw bytes, in
    declared order, to stdout. ``mode="time"``: it prints the kernel's wall time in seconds
    (``omp_get_wtime`` under OpenMP, else ``clock_gettime``) to stdout and a checksum of all
    arrays to stderr, so the compiler cannot drop the work. ``kernel``: the kernel's C text as
    :func:`kernel_c` made it (e.g. a solution's ``schedule.code``) instead of generating it.
    """
    if mode not in ("check", "time"):
        raise CodegenError(f"mode must be 'check' or 'time', got {mode!r}")
    sizes = _sizes(program, sizes)
    if kernel is None:
        kernel = kernel_c(program, schedule, parallel=parallel, vector=vector, name="kernel_body")
    out = [f"/* generated by dfopt.codegen.poly: {len(program.statements)} statement(s), mode {mode} */",
           _PRELUDE_HEAD]
    out += [f"#define {p} {sizes[p]}" for p in program.params]
    out.append("")
    if program.prelude:
        out += [program.prelude.rstrip("\n"), ""]
    for name, spec in program.scalars.items():
        dtype = spec.get("dtype", "f64")
        out.append(f"static const {_ctype(dtype, 'scalar ' + name)} {name} = "
                   f"{_literal(spec['value'], dtype, 'scalar ' + name)};")
    arrays = []
    for name, spec in program.arrays.items():
        ctype = _ctype(spec.get("dtype", "f64"), "array " + name)
        shape = _shape(program, name, spec)
        arrays.append((name, ctype, shape, spec.get("dtype", "f64")))
        out.append(f"static {ctype} {name}" + "".join(f"[{e}]" for e in shape) + ";")
    out += ["", _RUNTIME]
    if mode == "time":
        out.append(_TIMER)
    out += ["static void dfopt_init(void)", "{", f"  dfopt_rng_state = {int(seed) & (2**64 - 1)}ULL;"]
    for name, ctype, shape, dtype in arrays:
        value = "dfopt_rand()" if dtype.startswith("f") else f"({ctype})(4.0 * dfopt_rand())"
        out += ["  {",
                f"    {ctype} *dfopt_p = ({ctype} *)&{name};",
                f"    for (size_t dfopt_n = 0; dfopt_n < sizeof({name}) / sizeof({ctype}); dfopt_n++)",
                f"      dfopt_p[dfopt_n] = {value};"]
        if len(shape) == 2 and shape[0] == shape[1]:
            out += [f"    for (int dfopt_i = 0; dfopt_i < {shape[0]}; dfopt_i++)",
                    f"      {name}[dfopt_i][dfopt_i] += {shape[0]};"]
        out.append("  }")
    out += ["}", ""]
    if mode == "time":
        out += ["static double dfopt_checksum(void)", "{", "  double dfopt_s = 0.0;"]
        for name, ctype, _, _ in arrays:
            out += ["  {",
                    f"    const {ctype} *dfopt_p = (const {ctype} *)&{name};",
                    f"    for (size_t dfopt_n = 0; dfopt_n < sizeof({name}) / sizeof({ctype}); dfopt_n++)",
                    "      dfopt_s += (double)dfopt_p[dfopt_n];",
                    "  }"]
        out += ["  return dfopt_s;", "}", ""]
    out += [kernel, "int main(void)", "{", "  dfopt_init();"]
    if mode == "check":
        out.append("  kernel_body();")
        for name, _, _, _ in arrays:
            out.append(f"  if (fwrite((const void *)&{name}, sizeof({name}), 1, stdout) != 1) return 1;")
    else:
        out += ["#ifdef _OPENMP",
                "  #pragma omp parallel",   # start the thread team before the clock starts
                "  { dfopt_warm_up(); }",
                "#endif",
                "  double dfopt_t0 = dfopt_now();",
                "  kernel_body();",
                "  double dfopt_t1 = dfopt_now();",
                '  printf("%.9f\\n", dfopt_t1 - dfopt_t0);',
                '  fprintf(stderr, "checksum %.17g\\n", dfopt_checksum());']
    out += ["  return 0;", "}", ""]
    return "\n".join(out)
