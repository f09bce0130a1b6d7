"""The reference evaluator (dfopt.ir.sparse.reference) against scipy.sparse and numpy.einsum on the
usual sparse kernels, on random data with duplicates and empty fibers, exactly for integers."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.ir.sparse.formats import named
from dfopt.ir.sparse.notation import accesses, index_vars, parse
from dfopt.ir.sparse.reference import evaluate
from dfopt.ir.sparse.tensor import Coo, SparseTensor

# name -> (assignment, the same computation in NumPy over dense operands)
KERNELS = {
    "spmv": ("y(i) = A(i,j) * x(j)", lambda o: o["A"] @ o["x"]),
    "spmv_transposed": ("y(j) = A(i,j) * x(i)", lambda o: o["A"].T @ o["x"]),
    "plus2": ("C(i,j) = A(i,j) + B(i,j)", lambda o: o["A"] + o["B"]),
    "plus3": ("C(i,j) = A(i,j) + B(i,j) + D(i,j)", lambda o: o["A"] + o["B"] + o["D"]),
    "elementwise": ("C(i,j) = A(i,j) * B(i,j)", lambda o: o["A"] * o["B"]),
    "residual": ("y(i) = b(i) - A(i,j) * x(j)", lambda o: o["b"] - o["A"] @ o["x"]),
    "mattransmul": ("y(i) = 2 * A(j,i) * x(j) + 3 * z(i)", lambda o: 2 * o["A"].T @ o["x"] + 3 * o["z"]),
    "mattransmul_scalars": ("y(i) = alpha * A(j,i) * x(j) + beta * z(i)",
                            lambda o: o["alpha"] * (o["A"].T @ o["x"]) + o["beta"] * o["z"]),
    "sddmm": ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", lambda o: o["B"] * (o["C"] @ o["D"])),
    "ttv": ("A(i,j) = B(i,j,k) * c(k)", lambda o: np.einsum("ijk,k->ij", o["B"], o["c"])),
    "ttm": ("A(i,j,l) = B(i,j,k) * C(k,l)", lambda o: np.einsum("ijk,kl->ijl", o["B"], o["C"])),
    "mttkrp": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", lambda o: np.einsum("ikl,kj,lj->ij", o["B"], o["C"], o["D"])),
    "innerprod": ("a = B(i,j,k) * C(i,j,k)", lambda o: np.einsum("ijk,ijk->", o["B"], o["C"])),
    "spgemm": ("C(i,j) = A(i,k) * B(k,j)", lambda o: o["A"] @ o["B"]),
    "negated_sum": ("C(i,j) = -(A(i,j) - B(i,j)) * 4", lambda o: -(o["A"] - o["B"]) * 4),
    "row_sums_plus": ("y(i) = A(i,j) + B(i,k)", lambda o: o["A"].sum(axis=1) + o["B"].sum(axis=1)),
}


def _shapes(text, dims):
    a = parse(text)
    return a, {acc.tensor: tuple(dims[i] for i in acc.indices) for acc in accesses(a.rhs)}


def _random_coo(rng, shape, density, integer=False):
    """A random tensor given with duplicate entries (they add up)."""
    size = int(np.prod(shape))
    n = int(density * size) + 1
    coords = np.stack([rng.integers(0, s, n) for s in shape], axis=1) if shape else np.zeros((n, 0), dtype=np.int64)
    values = rng.integers(-5, 6, n) if integer else rng.standard_normal(n)
    return Coo(shape, coords, values)


# --- against scipy.sparse -----------------------------------------------------------------------


def _scipy(rows, cols, density, seed):
    """A random CSR matrix (positions drawn with repeats, which scipy adds up)."""
    rng = np.random.default_rng(seed)
    n = int(rows * cols * density)
    coords = (rng.integers(0, rows, n), rng.integers(0, cols, n))
    return sp.csr_array((rng.standard_normal(n), coords), shape=(rows, cols))


def test_spmv_against_scipy():
    A = _scipy(300, 200, 0.05, 1)
    x = np.random.default_rng(2).standard_normal(200)
    y = evaluate(parse("y(i) = A(i,j) * x(j)"), {"A": Coo.from_scipy(A), "x": Coo.from_dense(x)}, {"i": 300, "j": 200})
    assert y.shape == (300,) and y.values.dtype == np.float64
    assert np.allclose(y.to_dense(), A @ x)


def test_spmv_with_a_csc_matrix_against_scipy():
    A = _scipy(150, 250, 0.04, 3)
    x = np.random.default_rng(4).standard_normal(250)
    csc = SparseTensor.from_coo("A", Coo.from_scipy(A), named("csc", 2))      # through CSC storage and back
    y = evaluate(parse("y(i) = A(i,j) * x(j)"), {"A": csc.to_coo(), "x": Coo.from_dense(x)}, {})
    assert np.allclose(y.to_dense(), A.tocsc() @ x)


@pytest.mark.parametrize("name", ["plus2", "plus3", "elementwise", "spgemm"])
def test_matrix_kernels_against_scipy(name):
    text, _ = KERNELS[name]
    mats = {t: _scipy(60, 60, 0.08, seed) for seed, t in enumerate("ABD")}
    expected = {"plus2": mats["A"] + mats["B"], "plus3": mats["A"] + mats["B"] + mats["D"],
                "elementwise": mats["A"].multiply(mats["B"]), "spgemm": mats["A"] @ mats["B"]}[name]
    out = evaluate(parse(text), {t: Coo.from_scipy(m) for t, m in mats.items()}, {})
    assert out.equals(Coo.from_scipy(sp.csr_array(expected)))


def test_residual_and_mattransmul_against_scipy():
    rng = np.random.default_rng(5)
    A = _scipy(80, 80, 0.1, 6)
    b, x, z = (rng.standard_normal(80) for _ in range(3))
    vecs = {"b": Coo.from_dense(b), "x": Coo.from_dense(x), "z": Coo.from_dense(z), "A": Coo.from_scipy(A)}
    r = evaluate(parse("y(i) = b(i) - A(i,j) * x(j)"), vecs, {})
    assert np.allclose(r.to_dense(), b - A @ x)
    m = evaluate(parse("y(i) = 1.5 * A(j,i) * x(j) + -0.5 * z(i)"), vecs, {})
    assert np.allclose(m.to_dense(), 1.5 * A.T @ x - 0.5 * z)
    scalars = {"alpha": Coo.from_dense(np.array(1.5)), "beta": Coo.from_dense(np.array(-0.5))}
    m2 = evaluate(parse("y(i) = alpha * A(j,i) * x(j) + beta * z(i)"), vecs | scalars, {})
    assert m2.equals(m)


def test_sddmm_against_numpy():
    rng = np.random.default_rng(7)
    B = _scipy(40, 30, 0.1, 8)
    C, D = rng.standard_normal((40, 16)), rng.standard_normal((16, 30))
    out = evaluate(parse("A(i,j) = B(i,j) * C(i,k) * D(k,j)"),
                   {"B": Coo.from_scipy(B), "C": Coo.from_dense(C), "D": Coo.from_dense(D)}, {})
    assert np.allclose(out.to_dense(), B.toarray() * (C @ D))
    assert out.nnz <= B.nnz


@pytest.mark.parametrize("name", ["ttv", "ttm", "mttkrp", "innerprod"])
def test_tensor_kernels_against_einsum(name):
    rng = np.random.default_rng(9)
    dims = {"i": 7, "j": 6, "k": 5, "l": 4}
    a, shapes = _shapes(KERNELS[name][0], dims)
    ops = {t: _random_coo(rng, s, 0.3 if len(s) == 3 else 0.8) for t, s in shapes.items()}
    out = evaluate(a, ops, dims)
    expected = KERNELS[name][1]({t: c.to_dense() for t, c in ops.items()})
    assert out.shape == tuple(dims[i] for i in a.lhs.indices)
    assert np.allclose(out.to_dense(), expected)


def test_a_scalar_result_has_shape_empty_and_one_or_no_row():
    B = Coo((2, 2), [[0, 0], [1, 1]], [1, 2])
    C = Coo((2, 2), [[0, 1], [1, 1]], [3, 4])
    a = evaluate(parse("a = B(i,j) * C(i,j)"), {"B": B, "C": C}, {})
    assert a.shape == () and a.coords.shape == (1, 0) and a.values.tolist() == [8]
    none = evaluate(parse("a = B(i,j) * C(i,j)"), {"B": B, "C": Coo((2, 2), [[0, 1]], [3])}, {})
    assert none.shape == () and none.coords.shape == (0, 0)


# --- exactness and dtypes -----------------------------------------------------------------------


def test_integer_data_is_exact_in_int64():
    big = 2**30 + 1
    A = Coo((2, 2), [[0, 0], [0, 1]], [big, big])
    x = Coo((2,), [[0], [1]], [big, big + 2])
    y = evaluate(parse("y(i) = A(i,j) * x(j)"), {"A": A, "x": x}, {})
    assert y.values.dtype == np.int64
    assert int(y.values[0]) == big * big + big * (big + 2)         # 2**61 + ...: beyond float64's 53 bits
    assert evaluate(parse("y(i) = 3 * A(i,j) * x(j)"), {"A": A, "x": x}, {}).values.dtype == np.int64


def test_a_fractional_literal_or_float_data_computes_in_float64():
    A = Coo((2, 2), [[0, 0]], [3])
    x = Coo((2,), [[0]], [2])
    assert evaluate(parse("y(i) = 0.5 * A(i,j) * x(j)"), {"A": A, "x": x}, {}).values.tolist() == [3.0]
    xf = Coo((2,), [[0]], [2.0])
    assert evaluate(parse("y(i) = A(i,j) * x(j)"), {"A": A, "x": xf}, {}).values.dtype == np.float64


def test_cancellation_drops_the_entry():
    A = Coo((2,), [[0], [1]], [1, 2])
    out = evaluate(parse("y(i) = A(i) - B(i)"), {"A": A, "B": Coo((2,), [[0]], [1])}, {})
    assert out.coords.tolist() == [[1]] and out.values.tolist() == [2]


def test_operand_faults():
    a = parse("y(i) = A(i,j) * x(j)")
    A, x = Coo((2, 3), [[0, 0]], [1]), Coo((3,), [[0]], [1])
    with pytest.raises(ValueError, match="no data for tensor 'x'; operands given: A"):
        evaluate(a, {"A": A}, {})
    with pytest.raises(ValueError, match="mode 0 of tensor 'x' has size 4 but index 'j' has size 3"):
        evaluate(a, {"A": A, "x": Coo((4,), [[0]], [1])}, {})
    with pytest.raises(ValueError, match="mode 1 of tensor 'A' has size 3 but index 'j' has size 5"):
        evaluate(a, {"A": A, "x": x}, {"j": 5})
    with pytest.raises(ValueError, match="tensor 'A' is accessed with 2 indices but its data has rank 1"):
        evaluate(a, {"A": x, "x": x}, {})


# --- size and speed -----------------------------------------------------------------------------


def test_large_spmv_and_spgemm_are_fast():
    A = _scipy(5000, 5000, 0.004, 10)            # 100k nonzeros
    x = np.random.default_rng(11).standard_normal(5000)
    start = time.perf_counter()
    y = evaluate(parse("y(i) = A(i,j) * x(j)"), {"A": Coo.from_scipy(A), "x": Coo.from_dense(x)}, {})
    G, H = _scipy(3000, 3000, 0.0011, 12), _scipy(3000, 3000, 0.0011, 13)      # ~10k nonzeros each
    C = evaluate(parse("C(i,j) = A(i,k) * B(k,j)"), {"A": Coo.from_scipy(G), "B": Coo.from_scipy(H)}, {})
    assert time.perf_counter() - start < 5.0        # about a second even on a busy machine
    assert np.allclose(y.to_dense(), A @ x)
    assert C.equals(Coo.from_scipy(sp.csr_array(G @ H)))


# --- random data against dense NumPy ------------------------------------------------------------


@st.composite
def kernel_cases(draw):
    name = draw(st.sampled_from(sorted(KERNELS)))
    text, _ = KERNELS[name]
    a = parse(text)
    dims = {i: draw(st.integers(1, 4)) for i in index_vars(a)}
    ops = {}
    for acc in accesses(a.rhs):
        shape = tuple(dims[i] for i in acc.indices)
        n = draw(st.integers(0, 12))          # empty, one entry, duplicates, empty rows
        coords = [draw(st.tuples(*[st.integers(0, s - 1) for s in shape])) for _ in range(n)]
        values = draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n))
        ops[acc.tensor] = Coo(shape, np.array(coords, dtype=np.int64).reshape(n, len(shape)), np.array(values, dtype=np.int64))
    return name, a, dims, ops


@settings(max_examples=300, deadline=None)
@given(kernel_cases())
def test_random_kernels_match_dense_numpy_exactly(case):
    name, a, dims, ops = case
    out = evaluate(a, ops, dims)
    expected = np.asarray(KERNELS[name][1]({t: c.to_dense() for t, c in ops.items()}))
    assert out.values.dtype == np.int64
    assert out.shape == expected.shape
    assert np.array_equal(out.to_dense(), expected)
    assert np.all(out.values != 0)
    assert out.equals(out.canonical(), rtol=0, atol=0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["csr", "csc", "dcsr", "dcsc", "coo", "dense"]))
def test_operands_read_back_from_any_format_give_the_same_result(seed, fmt):
    rng = np.random.default_rng(seed)
    A, B = _random_coo(rng, (6, 5), 0.3, integer=True), _random_coo(rng, (5, 4), 0.3, integer=True)
    a = parse("C(i,j) = A(i,k) * B(k,j)")
    direct = evaluate(a, {"A": A, "B": B}, {})
    stored = {t: SparseTensor.from_coo(t, c, fmt).to_coo() for t, c in {"A": A, "B": B}.items()}
    assert evaluate(a, stored, {}).equals(direct, rtol=0, atol=0)
    assert np.array_equal(direct.to_dense(), A.to_dense() @ B.to_dense())
