"""The token simulator of SAM graphs: results against the reference evaluator and against
NumPy / scipy.sparse for every kernel and co-iteration method, random inputs (hypothesis), exact
two-finger counts, token counts recounted by decoding, and hand-checked access facts.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.ir.sparse.concrete import concretize
from dfopt.ir.sparse.formats import Format, named
from dfopt.ir.sparse.notation import accesses, index_vars, parse, tensors
from dfopt.ir.sparse.reference import evaluate
from dfopt.ir.sparse.sam import METHODS, lower
from dfopt.ir.sparse.tensor import Coo, SparseTensor
from dfopt.sim.sparse import run_streams, simulate
from dfopt.sim.sparse.streams import BitStream, decode, encode

# name: (expression, formats, loop order, workspaces, NumPy of the dense operands)
KERNELS = {
    "spmv_csr": ("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "dense", "y": "dense"}, None, None,
                 lambda d: d["A"] @ d["x"]),
    "spmv_csr_sparse_x": ("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "sparse_vector", "y": "sparse_vector"}, None,
                          None, lambda d: d["A"] @ d["x"]),
    "spmv_csc": ("y(i) = A(i,j) * x(j)", {"A": "csc", "x": "dense", "y": "dense"}, None, None,
                 lambda d: d["A"] @ d["x"]),
    "spmv_csc_sparse": ("y(i) = A(i,j) * x(j)", {"A": "dcsc", "x": "sparse_vector", "y": "sparse_vector"}, None,
                        {"j": "sparse"}, lambda d: d["A"] @ d["x"]),
    "plus2": ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, None, None,
              lambda d: d["A"] + d["B"]),
    "plus3": ("C(i,j) = A(i,j) + B(i,j) + D(i,j)", {"A": "csr", "B": "csr", "D": "csr", "C": "csr"}, None, None,
              lambda d: d["A"] + d["B"] + d["D"]),
    "mul_csr": ("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, None, None,
                lambda d: d["A"] * d["B"]),
    "mul_dcsr": ("C(i,j) = A(i,j) * B(i,j)", {"A": "dcsr", "B": "csr", "C": "dcsr"}, None, None,
                 lambda d: d["A"] * d["B"]),
    "residual": ("y(i) = b(i) - A(i,j) * x(j)", {"A": "csr", "x": "dense", "b": "sparse_vector",
                                                "y": "sparse_vector"}, None, None,
                 lambda d: d["b"] - d["A"] @ d["x"]),
    "mattransmul_csr": ("y(i) = 2 * A(j,i) * x(j) + 3 * z(i)", {"A": "csr", "x": "sparse_vector",
                                                               "z": "sparse_vector", "y": "sparse_vector"},
                        None, None, lambda d: 2 * d["A"].T @ d["x"] + 3 * d["z"]),
    "mattransmul_csc": ("y(i) = 2 * A(j,i) * x(j) + 3 * z(i)", {"A": "csc", "x": "sparse_vector",
                                                               "z": "sparse_vector", "y": "sparse_vector"},
                        None, None, lambda d: 2 * d["A"].T @ d["x"] + 3 * d["z"]),
    "sddmm": ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "C": "dense", "D": "dense", "A": "csr"}, None, None,
              lambda d: d["B"] * (d["C"] @ d["D"])),
    "ttv": ("A(i,j) = B(i,j,k) * c(k)", {"B": "csf", "c": "dense", "A": "csf"}, None, None,
            lambda d: np.einsum("ijk,k->ij", d["B"], d["c"])),
    "ttm": ("A(i,j,k) = B(i,j,l) * C(k,l)", {"B": "csf", "C": "dense", "A": "csf"}, None, None,
            lambda d: np.einsum("ijl,kl->ijk", d["B"], d["C"])),
    "mttkrp": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "csf", "C": "dense", "D": "dense", "A": "dense"}, None,
               None, lambda d: np.einsum("ikl,kj,lj->ij", d["B"], d["C"], d["D"])),
    "innerprod": ("a = B(i,j,k) * C(i,j,k)", {"B": "csf", "C": "csf"}, None, None,
                  lambda d: np.sum(d["B"] * d["C"])),
    "spgemm": ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"}, ["i", "k", "j"], None,
               lambda d: (sp.csr_array(d["A"]) @ sp.csr_array(d["B"])).toarray()),
    "spgemm_sparse_ws": ("C(i,j) = A(i,k) * B(k,j)", {"A": "dcsr", "B": "dcsr", "C": "dcsr"}, ["i", "k", "j"],
                         {"k": {"name": "row", "format": "sparse"}},
                         lambda d: (sp.csr_array(d["A"]) @ sp.csr_array(d["B"])).toarray()),
}
SIZES = [5, 4, 6, 3]


def setup(name, data=None, seed=0, density=0.4, workspaces=None):
    text, formats, order, ws, _ = KERNELS[name]
    a = parse(text)
    ranks = tensors(a)
    fmts = {t: named(f, ranks[t]) for t, f in formats.items()}
    dims = dict(zip(index_vars(a), SIZES))
    if data is not None:
        dims = {i: n for acc in accesses(a.rhs) for i, n in zip(acc.indices, np.shape(data[acc.tensor]))}
    c = concretize(a, fmts, dims, order, workspaces if workspaces is not None else ws)
    if data is None:
        rng = np.random.default_rng(seed)
        data = {}
        for acc in accesses(a.rhs):
            shape = tuple(dims[i] for i in acc.indices)
            data[acc.tensor] = (rng.random(shape) < density) * rng.integers(1, 9, shape)
    coos = {t: Coo.from_dense(v) for t, v in data.items()}
    stored = {t: SparseTensor.from_coo(t, coo, fmts[t]) for t, coo in coos.items()}
    return a, c, dims, data, coos, stored


def choices(c):
    return [dict(zip(c.needs_method, combo)) for combo in itertools.product(METHODS, repeat=len(c.needs_method))]


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_kernel_and_method_matches_reference_and_numpy(name):
    a, c, dims, data, coos, stored = setup(name)
    ref = evaluate(a, coos, dims)
    expect = KERNELS[name][4](data)
    for methods in choices(c):
        res = simulate(lower(c, methods), stored)
        assert res.result.equals(ref), (name, methods)
        assert np.array_equal(res.result.to_dense(), np.asarray(expect)), (name, methods)
        assert set(res.joiners) == set(c.joins)
        assert all(res.joiners[j].method == m for j, m in methods.items())


@pytest.mark.parametrize("name", ["mul_dcsr", "mul_csr", "spgemm", "spgemm_sparse_ws", "spmv_csr_sparse_x"])
def test_written_arrays_are_the_canonical_storage(name):
    """Products of sparse operands (positive values) write no explicit zeros: the crd-drops remove
    what came out empty."""
    a, c, dims, data, coos, stored = setup(name, seed=3)
    res = simulate(lower(c, {j: "merge" for j in c.needs_method}), stored)
    want = SparseTensor.from_coo("out", evaluate(a, coos, dims), c.formats[a.lhs.tensor])
    got = res.output.arrays()
    assert sorted(got) == sorted(want.arrays())
    for key, arr in want.arrays().items():
        assert np.array_equal(got[key], arr), key


def test_forced_dense_joins_take_any_method():
    a, c, dims, data, coos, stored = setup("residual", seed=2)
    (join,) = c.joins.values()
    assert join.method == "dense" and not join.needs_method
    for m in METHODS:
        res = simulate(lower(c, {join.name: m}), stored)
        assert res.result.equals(evaluate(a, coos, dims))
        assert res.joiners[join.name].method == m


def test_scalar_result():
    a, c, dims, data, coos, stored = setup("innerprod", seed=5)
    res = simulate(lower(c, {"i": "merge", "j": "bitvector", "k": "dense"}), stored)
    assert res.result.shape == () and res.output.vals.shape == (1,)
    assert res.output.vals[0] == np.sum(data["B"] * data["C"])


def test_operand_faults():
    a, c, dims, data, coos, stored = setup("spmv_csr")
    g = lower(c, {})
    with pytest.raises(ValueError, match="no data for tensor 'x'"):
        simulate(g, {"A": stored["A"]})
    with pytest.raises(ValueError, match="tensor 'A' is stored as"):
        simulate(g, {"A": SparseTensor.from_coo("A", coos["A"], "dcsr"), "x": stored["x"]})
    with pytest.raises(ValueError, match="tensor 'x' has shape"):
        simulate(g, {"A": stored["A"], "x": SparseTensor.from_coo("x", Coo((9,), [[1]], [1]), "dense")})


# --- random inputs --------------------------------------------------------------------------------

@st.composite
def matrices(draw, shape):
    """A sparse integer matrix with empty rows and columns, possibly all zero or one nonzero."""
    kind = draw(st.sampled_from(["random", "empty", "one", "row"]))
    dense = np.zeros(shape, dtype=np.int64)
    if kind == "one":
        dense[draw(st.integers(0, shape[0] - 1)), draw(st.integers(0, shape[1] - 1))] = draw(st.integers(1, 9))
    elif kind == "row":
        dense[draw(st.integers(0, shape[0] - 1)), :] = draw(st.integers(-3, 3))
    elif kind == "random":
        cells = draw(st.sets(st.tuples(st.integers(0, shape[0] - 1), st.integers(0, shape[1] - 1)),
                             max_size=shape[0] * shape[1]))
        for r, col in cells:
            dense[r, col] = draw(st.integers(-4, 9).filter(bool))
    return dense


def vectors(n):
    return st.lists(st.integers(-2, 5), min_size=n, max_size=n).map(np.array)


def _check(name, data, workspaces=None):
    a, c, dims, data, coos, stored = setup(name, data=data, workspaces=workspaces)
    ref = evaluate(a, coos, dims)
    for m in choices(c):
        res = simulate(lower(c, m), stored)
        assert res.result.equals(ref), m
        assert np.array_equal(res.result.to_dense(), np.asarray(KERNELS[name][4](data))), m


@st.composite
def spmv_inputs(draw):
    rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return draw(matrices((rows, cols))), draw(vectors(cols))


@settings(max_examples=60, deadline=None)
@given(spmv_inputs(), st.sampled_from(["spmv_csr_sparse_x", "spmv_csc_sparse", "residual"]))
def test_random_spmv_shapes(inputs, name):
    A, x = inputs
    data = {"A": A, "x": x}
    if name == "residual":
        data["b"] = (np.arange(A.shape[0]) % 3 == 0) * 7
    _check(name, data)


@settings(max_examples=50, deadline=None)
@given(matrices((5, 4)), matrices((5, 4)))
def test_random_plus2(A, B):
    _check("plus2", {"A": A, "B": B})


@settings(max_examples=40, deadline=None)
@given(matrices((5, 6)), matrices((6, 4)), st.sampled_from(["dense", "sparse"]))
def test_random_gustavson(A, B, ws):
    _check("spgemm", {"A": A, "B": B}, workspaces={"k": ws})


@settings(max_examples=40, deadline=None)
@given(matrices((4, 5)), vectors(4), vectors(5))
def test_random_mattransmul_with_a_workspace(A, x, z):
    _check("mattransmul_csr", {"A": A, "x": x, "z": z})


@settings(max_examples=40, deadline=None)
@given(matrices((5, 4)), matrices((5, 4)))
def test_random_elementwise_product_dcsr(A, B):
    _check("mul_dcsr", {"A": A, "B": B})


@settings(max_examples=30, deadline=None)
@given(st.lists(matrices((3, 4)), min_size=2, max_size=2), st.lists(matrices((3, 4)), min_size=2, max_size=2))
def test_random_innerprod(B, C):
    _check("innerprod", {"B": np.stack(B), "C": np.stack(C)})


def test_a_range_union_with_a_column_major_dense_operand():
    rng = np.random.default_rng(8)
    A = (rng.random((4, 3)) < 0.4) * rng.integers(1, 5, (4, 3))
    D = (rng.random((4, 3)) < 0.5) * rng.integers(1, 5, (4, 3))
    cm = Format(("dense", "dense"), (1, 0))
    c = concretize(parse("C(i,j) = A(i,j) + D(i,j)"), {"A": named("dcsr", 2), "D": cm, "C": named("dcsr", 2)},
                   {"i": 4, "j": 3})
    stored = {"A": SparseTensor.from_coo("A", Coo.from_dense(A), "dcsr"),
              "D": SparseTensor.from_coo("D", Coo.from_dense(D), cm)}
    for m in METHODS:
        res = simulate(lower(c, {j: m for j in c.joins}), stored)
        assert np.array_equal(res.result.to_dense(), A + D)
        assert res.joiners["join_i_0"].operands == ("range_i", "A.0")


def test_rank_four_with_a_scalar_operand():
    rng = np.random.default_rng(9)
    B = (rng.random((2, 3, 2, 3)) < 0.5) * rng.integers(1, 5, (2, 3, 2, 3))
    C = (rng.random((2, 3, 2, 3)) < 0.5) * rng.integers(1, 5, (2, 3, 2, 3))
    a = parse("a = s * B(i,j,k,l) * C(i,j,k,l)")
    fmts = {"s": named("dense", 0), "B": named("csf", 4), "C": named("dense", 4)}
    c = concretize(a, fmts, dict(i=2, j=3, k=2, l=3))
    stored = {"s": SparseTensor.from_coo("s", Coo.from_dense(np.array(3)), fmts["s"]),
              "B": SparseTensor.from_coo("B", Coo.from_dense(B), fmts["B"]),
              "C": SparseTensor.from_coo("C", Coo.from_dense(C), fmts["C"])}
    res = simulate(lower(c, {}), stored)
    assert res.output.vals.tolist() == [3 * int(np.sum(B * C))]


# --- join statistics ------------------------------------------------------------------------------

def brute_steps(a, b, op):
    """Two fingers over two sorted lists, one step per loop turn."""
    i = j = n = 0
    while True:
        if op == "intersect" and (i == len(a) or j == len(b)):
            return n
        if op == "union" and i == len(a) and j == len(b):
            return n
        n += 1
        if j == len(b) or (i < len(a) and a[i] < b[j]):
            i += 1
        elif i == len(a) or b[j] < a[i]:
            j += 1
        else:
            i += 1
            j += 1


def rows(dense):
    return [list(np.flatnonzero(r)) for r in dense]


@pytest.mark.parametrize("name,op", [("plus2", "union"), ("mul_csr", "intersect")])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_merge_steps_and_fibre_statistics(name, op, method, seed):
    a, c, dims, data, coos, stored = setup(name, seed=seed, density=0.5)
    js = simulate(lower(c, {"join_j_0": method}), stored).joiners["join_j_0"]
    ra, rb = rows(data["A"]), rows(data["B"])
    assert (js.index, js.op, js.operands, js.method) == ("j", op, ("A.1", "B.1"), method)
    assert js.fibers == len(ra) and js.dim == dims["j"]
    assert js.sizes == (int((data["A"] != 0).sum()), int((data["B"] != 0).sum()))
    assert js.inter == sum(len(set(x) & set(y)) for x, y in zip(ra, rb))
    assert js.union == sum(len(set(x) | set(y)) for x, y in zip(ra, rb))
    assert js.merge_steps == sum(brute_steps(x, y, op) for x, y in zip(ra, rb))


def test_chained_join_counts_its_left_input_as_the_first_join():
    a, c, dims, data, coos, stored = setup("plus3", seed=4, density=0.5)
    res = simulate(lower(c, {"j": "merge"}), stored)
    left = [sorted(set(x) | set(y)) for x, y in zip(rows(data["A"]), rows(data["B"]))]
    js = res.joiners["join_j_1"]
    assert js.operands == ("join_j_0", "D.1")
    assert js.merge_steps == sum(brute_steps(x, y, "union") for x, y in zip(left, rows(data["D"])))
    unit = res.units["join_j_1"]
    assert unit.work == js.merge_steps + js.fibers + 1


def test_work_of_the_methods():
    a, c, dims, data, coos, stored = setup("mul_csr", seed=1, density=0.5)
    dense = simulate(lower(c, {"join_j_0": "dense"}), stored)
    js = dense.joiners["join_j_0"]
    assert dense.units["join_j_0"].work == js.fibers * js.dim + js.fibers + 1
    bv = simulate(lower(c, {"join_j_0": "bitvector"}), stored)
    words = js.fibers * 1                               # dim 4 fits one 64-bit word per fibre
    for unit in ("join_j_0.bv_a", "join_j_0.bv_b", "join_j_0.bv_join", "join_j_0.bv_scan"):
        assert bv.units[unit].work == words + js.fibers + 1
    assert bv.units["join_j_0.bv_a"].kind == "bv_gen"


# --- tokens ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["spmv_csr", "plus3", "spgemm", "mattransmul_csr", "innerprod", "ttm", "mul_dcsr"])
def test_stream_tokens_recounted_by_decoding(name):
    a, c, dims, data, coos, stored = setup(name, seed=2)
    methods = {j: METHODS[n % 3] for n, j in enumerate(c.needs_method)}
    g = lower(c, methods)
    res = simulate(g, stored)
    streams = run_streams(g, stored)
    assert set(streams) == set(res.streams)
    for sname, stream in streams.items():
        tokens = encode(stream)
        leaves, offsets, stops = decode(tokens, stream.depth)
        empties = sum(1 for t in tokens if isinstance(t, str) and "E" in t)
        assert empties == stream.empty_above
        assert len(tokens) == res.streams[sname] == \
            len(leaves) + (len(offsets) - 1 if stream.depth else 0) + empties + 1
        if not isinstance(stream, BitStream):
            assert np.array_equal(leaves.astype(stream.data.dtype), stream.data) if len(leaves) else \
                stream.leaves == 0
            if stream.depth:
                assert np.array_equal(offsets, stream.segs[-1])
        assert all(0 <= s < max(stream.depth, 1) for s in stops)
    for uname, unit in res.units.items():
        assert unit.tokens_in == sum(res.streams[s.name] for s in g.inputs(uname))


def test_stop_tokens_follow_sam():
    a, c, dims, data, coos, stored = setup("spmv_csr", data={"A": np.array([[1, 0, 2], [0, 0, 0], [0, 3, 0]]),
                                                            "x": np.array([1, 1, 1])})
    streams = run_streams(lower(c, {}), stored)
    assert encode(streams["scan_A.1.crd->locate_x.0.crd"]) == [0, 2, "S0", "S0", 1, "S1", "D"]
    assert encode(streams["scan_A.0.crd->write_y.0.crd"]) == [0, 1, 2, "S0", "D"]
    assert encode(streams["reduce_j.val->write_y.vals.val"]) == [3, 0, 3, "S0", "D"]


# --- access facts ---------------------------------------------------------------------------------

def test_access_facts_of_a_hand_checked_spmv():
    A = np.array([[1, 0, 2, 0], [0, 0, 0, 0], [0, 3, 0, 4], [5, 0, 0, 6]])
    a, c, dims, data, coos, stored = setup("spmv_csr", data={"A": A, "x": np.array([1, 2, 3, 4])})
    res = simulate(lower(c, {}), stored)
    f = res.arrays
    assert sorted(f) == ["A.1.crd", "A.1.pos", "A.vals", "x.vals", "y.vals"]
    crd = f["A.1.crd"]
    assert (crd.tensor, crd.kind, crd.role, crd.loop, crd.length, crd.accesses) == ("A", "crd", "read", "j", 6, 6)
    assert crd.in_order and not crd.gather
    # depth 0: the whole array; depth 1 (per row): the longest row, every row once; depth 2: one word each
    assert crd.segments == ((6, 6), (2, 6), (1, 6))
    pos = f["A.1.pos"]
    assert (pos.loop, pos.in_order, pos.addresses.tolist()) == ("i", True, [0, 1, 2, 3, 4])
    x = f["x.vals"]
    assert x.addresses.tolist() == [0, 2, 1, 3, 0, 3]
    assert x.gather and not x.in_order and x.loop == "j"
    assert x.segments == ((4, 4), (4, 10), (1, 6))     # rows touch columns 0..2, 1..3, 0..3
    assert x.bank_conflicts(banks=2, lanes=2) == 2      # (0, 2) and (1, 3) each share a bank
    assert x.bank_conflicts(banks=4, lanes=2) == 0
    assert x.bank_conflicts(banks=2, lanes=1) == 0
    y = f["y.vals"]
    assert (y.role, y.loop, y.in_order, y.length) == ("write", "i", True, 4)
    assert res.result.to_dense().tolist() == [7, 0, 22, 29]


def test_workspace_facts():
    a, c, dims, data, coos, stored = setup("spgemm_sparse_ws", seed=6, density=0.5)
    res = simulate(lower(c, {j: "merge" for j in c.needs_method}), stored)
    vals, crd = res.arrays["row.vals"], res.arrays["row.crd"]
    assert (vals.tensor, vals.role, vals.kind, crd.kind) == ("row", "accumulate", "vals", "crd")
    per_row = [np.count_nonzero(r) for r in KERNELS["spgemm"][4](data)]
    assert vals.length == max(per_row) and vals.segments[1][0] <= max(per_row)
    dense = setup("spgemm", seed=6, density=0.5)
    res = simulate(lower(dense[1], {}), dense[5])
    assert res.arrays["w_k.vals"].length == dims["j"] and "w_k.crd" not in res.arrays


def test_large_spmv_is_fast():
    rng = np.random.default_rng(0)
    n, nnz = 20000, 100000
    m = sp.coo_array((rng.integers(1, 9, nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    A = Coo.from_scipy(m)
    x = rng.integers(0, 5, n)
    a = parse("y(i) = A(i,j) * x(j)")
    c = concretize(a, {"A": named("csr", 2), "x": named("dense", 1), "y": named("dense", 1)}, {"i": n, "j": n})
    stored = {"A": SparseTensor.from_coo("A", A, "csr"), "x": SparseTensor.from_coo("x", Coo.from_dense(x), "dense")}
    start = time.perf_counter()
    res = simulate(lower(c, {}), stored)
    assert time.perf_counter() - start < 10
    assert res.tokens > 5 * A.nnz
    assert np.array_equal(res.result.to_dense(), m.tocsr() @ x)
