"""Level formats and fibertree storage (dfopt.ir.sparse.formats, dfopt.ir.sparse.tensor): the named
formats, the format checks, coordinate lists, TACO's construction compared with scipy.sparse, and
random tensors through every format and back."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.ir.sparse.formats import LEVEL_KINDS, NAMED_FORMATS, Format, format_issues, named
from dfopt.ir.sparse.tensor import MAX_POSITIONS, Coo, Level, SparseTensor

# --- formats ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, rank, levels, order", [
    ("dense", 3, ("dense", "dense", "dense"), (0, 1, 2)),
    ("csr", 2, ("dense", "compressed"), (0, 1)),
    ("csc", 2, ("dense", "compressed"), (1, 0)),
    ("dcsr", 2, ("compressed", "compressed"), (0, 1)),
    ("dcsc", 2, ("compressed", "compressed"), (1, 0)),
    ("coo", 1, ("compressed",), (0,)),
    ("coo", 3, ("compressed", "singleton", "singleton"), (0, 1, 2)),
    ("csf", 4, ("compressed",) * 4, (0, 1, 2, 3)),
    ("sparse_vector", 1, ("compressed",), (0,)),
    ("dense", 0, (), ()),
])
def test_named_formats(name, rank, levels, order):
    fmt = named(name, rank)
    assert (fmt.levels, fmt.order, fmt.rank) == (levels, order, rank)


def test_uniqueness_and_mode_levels():
    coo = named("coo", 3)
    assert [coo.unique(k) for k in range(3)] == [False, True, True]
    assert all(named("csf", 3).unique(k) for k in range(3))
    assert [named("csc", 2).mode_level(m) for m in (0, 1)] == [1, 0]
    assert LEVEL_KINDS == ("dense", "compressed", "singleton")
    assert set(NAMED_FORMATS) == {"dense", "csr", "csc", "dcsr", "dcsc", "coo", "csf", "sparse_vector"}


def test_named_refuses_unknown_names_and_wrong_ranks():
    with pytest.raises(ValueError, match="unknown format 'crs'; expected one of: dense, csr, csc"):
        named("crs", 2)
    with pytest.raises(ValueError, match="format 'csr' is for rank-2 tensors, not rank 3"):
        named("csr", 3)
    with pytest.raises(ValueError, match="format 'sparse_vector' is for rank-1 tensors, not rank 2"):
        named("sparse_vector", 2)


@pytest.mark.parametrize("levels, order, rank, message", [
    (("dense",), (0, 1), 2, "expected 2 levels for a rank-2 tensor, got 1"),
    (("dense", "dense"), (0,), 2, "expected 2 order entries for a rank-2 tensor, got 1"),
    (("dense", "compresed"), (0, 1), 2, "level 1: unknown level kind 'compresed'; expected one of dense, compressed, singleton (did you mean 'compressed'?)"),
    (("dense", "hashed"), (0, 1), 2, "level 1: unknown level kind 'hashed'; expected one of dense, compressed, singleton"),
    (("dense", "dense"), (1, 1), 2, "order (1, 1) is not a permutation of the modes 0..1"),
    (("dense", "dense"), (0, 2), 2, "order (0, 2) is not a permutation of the modes 0..1"),
    (("dense", "dense"), ("a", 1), 2, "order ('a', 1) must hold integer mode numbers"),
    (("singleton", "compressed"), (0, 1), 2, "level 0: a singleton level cannot be the first level; it needs a compressed or singleton level above it"),
    (("dense", "singleton"), (0, 1), 2, "level 1: a singleton level cannot follow a dense level; it needs a compressed or singleton level above it"),
])
def test_format_issues(levels, order, rank, message):
    issues = format_issues(levels, order, rank)
    assert len(issues) == 1 and issues[0] == message


def test_a_well_formed_format_has_no_issues_and_a_bad_one_cannot_be_built():
    assert format_issues(("compressed", "singleton", "dense"), (2, 0, 1), 3) == []
    with pytest.raises(ValueError, match="not a permutation"):
        Format(("dense", "dense"), (0, 0))


# --- coordinate lists ---------------------------------------------------------------------------


def test_canonical_sorts_sums_duplicates_and_drops_zeros():
    coo = Coo((3, 3), [[2, 1], [0, 2], [2, 1], [1, 1], [0, 0]], [1, 2, 3, 0, -1])
    canon = coo.canonical()
    assert canon.coords.tolist() == [[0, 0], [0, 2], [2, 1]]
    assert canon.values.tolist() == [-1, 2, 4]
    assert canon.nnz == 3 and coo.nnz == 5
    assert Coo((2,), [[0], [0]], [1.5, -1.5]).canonical().nnz == 0


def test_values_are_int64_or_float64_and_coordinates_in_range():
    assert Coo((2,), [[0]], np.array([1], dtype=np.int8)).values.dtype == np.int64
    assert Coo((2,), [[0]], np.array([True])).values.dtype == np.int64
    assert Coo((2,), [[0]], np.array([1], dtype=np.float32)).values.dtype == np.float64
    with pytest.raises(ValueError, match=r"coordinate 2 of mode 1 is outside 0..1 \(shape \(3, 2\)\)"):
        Coo((3, 2), [[0, 2]], [1])
    with pytest.raises(ValueError, match=r"coordinate -1 of mode 0 is outside 0..2"):
        Coo((3, 2), [[-1, 0]], [1])
    with pytest.raises(ValueError, match=r"expected coords of shape \(2, 2\)"):
        Coo((3, 2), [[0, 0, 0]], [1, 2])
    with pytest.raises(ValueError, match="expected integer or floating-point values"):
        Coo((2,), [[0]], np.array([1j]))


def test_dense_and_scipy_conversions():
    dense = np.array([[0, 2, 0], [3, 0, 0]])
    coo = Coo.from_dense(dense)
    assert coo.coords.tolist() == [[0, 1], [1, 0]] and coo.values.tolist() == [2, 3]
    assert np.array_equal(coo.to_dense(), dense)
    assert np.array_equal(Coo((2,), [[1], [1]], [2, 3]).to_dense(), [0, 5])
    m = sp.random(7, 5, density=0.3, format="csr", random_state=3)
    back = Coo.from_scipy(m)
    assert back.equals(Coo.from_dense(m.toarray()))
    assert (back.to_scipy() != m).nnz == 0
    with pytest.raises(ValueError, match="to_scipy needs a matrix"):
        Coo((2,), [[0]], [1]).to_scipy()


def test_scalars():
    s = Coo.from_dense(np.array(4.0))
    assert s.shape == () and s.coords.shape == (1, 0) and s.values.tolist() == [4.0]
    assert Coo.from_dense(np.array(0)).nnz == 0
    assert float(Coo((), np.zeros((2, 0)), [1.0, 2.0]).to_dense()) == 3.0
    assert Coo((), np.zeros((2, 0)), [1.0, 2.0]).canonical().values.tolist() == [3.0]


def test_equals_compares_values_with_a_tolerance():
    a = Coo((3,), [[0], [2]], [1.0, 2.0])
    assert a.equals(Coo((3,), [[2], [0]], [2.0, 1.0 + 1e-13]))
    assert not a.equals(Coo((3,), [[0], [2]], [1.0, 2.1]))
    assert not a.equals(Coo((3,), [[0]], [1.0]))
    assert a.equals(Coo((3,), [[0], [2], [1]], [1.0, 2.0, 1e-15]))
    assert not a.equals(Coo((4,), [[0], [2]], [1.0, 2.0]))
    assert not Coo((2,), [[0]], [2**60]).equals(Coo((2,), [[0]], [2**60 + 1]))      # integers are exact


# --- fibertree storage --------------------------------------------------------------------------


def _matrix():
    return sp.random(9, 7, density=0.3, format="csr", random_state=11, data_rvs=lambda n: np.arange(1, n + 1))


def test_csr_and_csc_arrays_are_scipy_s():
    m = _matrix()
    coo = Coo.from_scipy(m)
    csr = SparseTensor.from_coo("A", coo, named("csr", 2))
    assert np.array_equal(csr.levels[1].pos, m.indptr) and np.array_equal(csr.levels[1].crd, m.indices)
    assert np.array_equal(csr.vals, m.data)
    csc = SparseTensor.from_coo("A", coo, "csc")
    mc = m.tocsc()
    mc.sort_indices()
    assert np.array_equal(csc.levels[1].pos, mc.indptr) and np.array_equal(csc.levels[1].crd, mc.indices)
    assert np.array_equal(csc.vals, mc.data)
    assert csc.levels[0].size == 7 and csc.levels[1].size == 9
    assert sorted(csr.arrays()) == ["1.crd", "1.pos", "vals"]


def test_dcsr_stores_only_the_nonempty_rows():
    coo = Coo((5, 4), [[3, 1], [0, 2], [3, 0]], [1, 2, 3])
    t = SparseTensor.from_coo("A", coo, "dcsr")
    assert t.levels[0].pos.tolist() == [0, 2] and t.levels[0].crd.tolist() == [0, 3]
    assert t.levels[1].pos.tolist() == [0, 1, 3] and t.levels[1].crd.tolist() == [2, 0, 1]
    assert t.vals.tolist() == [2, 3, 1]
    assert [t.positions(k) for k in (-1, 0, 1)] == [1, 2, 3]


def test_coo_keeps_one_entry_per_nonzero():
    coo = Coo((3, 3, 2), [[1, 0, 1], [1, 0, 0], [0, 2, 1]], [1, 2, 3])
    t = SparseTensor.from_coo("B", coo, "coo")
    assert [lv.kind for lv in t.levels] == ["compressed", "singleton", "singleton"]
    assert [lv.unique for lv in t.levels] == [False, True, True]
    assert t.levels[0].pos.tolist() == [0, 3] and t.levels[0].crd.tolist() == [0, 1, 1]
    assert t.levels[1].pos is None and t.levels[1].crd.tolist() == [2, 0, 0]
    assert t.levels[2].crd.tolist() == [1, 0, 1] and t.vals.tolist() == [3, 2, 1]
    assert sorted(t.arrays()) == ["0.crd", "0.pos", "1.crd", "2.crd", "vals"]


def test_dense_levels_store_zeros_and_may_sit_below_compressed_ones():
    coo = Coo((3, 4), [[2, 1], [0, 3]], [5.0, 6.0])
    dense = SparseTensor.from_coo("D", coo, "dense")
    assert dense.vals.tolist() == [0, 0, 0, 6, 0, 0, 0, 0, 0, 5, 0, 0]
    assert dense.arrays().keys() == {"vals"}
    rows = SparseTensor.from_coo("R", coo, Format(("compressed", "dense"), (0, 1)))
    assert rows.levels[0].crd.tolist() == [0, 2] and rows.vals.tolist() == [0, 0, 0, 6, 0, 5, 0, 0]
    assert rows.to_coo().equals(coo)
    under = SparseTensor.from_coo("U", coo, Format(("dense", "compressed"), (1, 0)))
    assert under.to_coo().equals(coo)


def test_fibers_of_every_level_kind():
    coo = Coo((3, 4), [[0, 1], [2, 0], [2, 3]], [5, 6, 7])
    csr = SparseTensor.from_coo("A", coo, "csr")
    assert [a.tolist() for a in csr.fiber(0, 0)] == [[0, 1, 2], [0, 1, 2]]
    assert [a.tolist() for a in csr.fiber(1, 0)] == [[1], [0]]
    assert [a.tolist() for a in csr.fiber(1, 1)] == [[], []]
    assert [a.tolist() for a in csr.fiber(1, 2)] == [[0, 3], [1, 2]]
    c = SparseTensor.from_coo("A", coo, "coo")
    assert [a.tolist() for a in c.fiber(0, 0)] == [[0, 2, 2], [0, 1, 2]]
    assert [a.tolist() for a in c.fiber(1, 2)] == [[3], [2]]
    d = SparseTensor.from_coo("A", coo, "dense")
    assert [a.tolist() for a in d.fiber(1, 2)] == [[0, 1, 2, 3], [8, 9, 10, 11]]
    with pytest.raises(IndexError, match="level 0 has positions 0..2, not 3"):
        csr.fiber(1, 3)
    with pytest.raises(IndexError, match="tensor 'A' has levels 0..1, not 2"):
        csr.fiber(2, 0)


def test_a_scalar_has_no_levels_and_one_value():
    s = SparseTensor.from_coo("a", Coo((), np.zeros((1, 0)), [2.5]), named("dense", 0))
    assert s.levels == [] and s.vals.tolist() == [2.5] and s.arrays().keys() == {"vals"}
    assert s.to_coo().values.tolist() == [2.5]
    zero = SparseTensor.from_coo("a", Coo((), np.zeros((0, 0)), np.zeros(0)), named("csf", 0))
    assert zero.vals.tolist() == [0.0] and zero.to_coo().nnz == 0


def test_a_dense_expansion_beyond_the_limit_is_refused_before_allocating():
    big = Coo((2**14, 2**13), [[1, 1]], [1.0])
    with pytest.raises(ValueError, match=r"tensor 'W': dense level 1 \(mode 1, size 8192\) would hold 134217728 "
                                         r"positions, more than the limit of 67108864"):
        SparseTensor.from_coo("W", big, "dense")
    assert 2**14 * 2**13 > MAX_POSITIONS
    SparseTensor.from_coo("W", big, "csr")         # 2**14 row positions are fine


def test_huge_shapes_sort_without_linear_keys():
    n = 2**31
    coo = Coo((n, n, n), [[n - 1, 0, 5], [3, n - 1, 0], [n - 1, 0, 5], [3, 2, 1]], [1, 2, 3, 4])
    canon = coo.canonical()
    assert canon.coords.tolist() == [[3, 2, 1], [3, n - 1, 0], [n - 1, 0, 5]] and canon.values.tolist() == [4, 2, 4]
    t = SparseTensor.from_coo("H", coo, Format(("compressed", "compressed", "compressed"), (2, 0, 1)))
    assert t.levels[0].crd.tolist() == [0, 1, 5]
    assert t.to_coo().equals(canon, rtol=0, atol=0)


def test_the_format_must_match_the_rank():
    with pytest.raises(ValueError, match="tensor 'x': format .* has 2 levels but the data has rank 1"):
        SparseTensor.from_coo("x", Coo((3,), [[0]], [1]), named("csr", 2))


def test_a_tensor_built_by_hand_reads_back():
    t = SparseTensor("x", (5,), named("sparse_vector", 1),
                     [Level("compressed", 5, np.array([0, 2]), np.array([1, 4]))], np.array([3.0, 0.0]))
    assert t.to_coo().coords.tolist() == [[1]] and t.positions(0) == 2


def test_a_million_nonzeros_build_fast():
    rng = np.random.default_rng(0)
    n = 1_000_000
    coo = Coo((50_000, 40_000), rng.integers(0, [50_000, 40_000], size=(n, 2)), rng.random(n))
    start = time.perf_counter()
    t = SparseTensor.from_coo("A", coo, "csc")
    assert time.perf_counter() - start < 3.0       # well under a second on an idle core
    assert len(t.vals) == coo.canonical().nnz


# --- random tensors through every format --------------------------------------------------------


@st.composite
def coos(draw, max_rank=4, max_dim=5, max_nnz=25):
    rank = draw(st.integers(1, max_rank))
    shape = tuple(draw(st.lists(st.integers(0, max_dim), min_size=rank, max_size=rank)))
    n = 0 if 0 in shape else draw(st.integers(0, max_nnz))
    coords = [draw(st.tuples(*[st.integers(0, s - 1) for s in shape])) for _ in range(n)]
    values = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    return Coo(shape, np.array(coords, dtype=np.int64).reshape(n, rank), np.array(values, dtype=np.int64))


def _formats(rank):
    out = ["dense", "coo", "csf"] + (["csr", "csc", "dcsr", "dcsc"] if rank == 2 else []) + \
        (["sparse_vector"] if rank == 1 else [])
    return [named(name, rank) for name in out]


@st.composite
def formats(draw, rank):
    """Any well-formed format of ``rank`` levels."""
    order = tuple(draw(st.permutations(range(rank))))
    levels = []
    for k in range(rank):
        kinds = ["dense", "compressed"] + (["singleton"] if k and levels[-1] != "dense" else [])
        levels.append(draw(st.sampled_from(kinds)))
    return Format(tuple(levels), order)


def _walk(t: SparseTensor) -> np.ndarray:
    """The dense array rebuilt from fibers alone."""
    out = np.zeros(t.shape, dtype=t.vals.dtype)

    def visit(k, parent, point):
        if k == t.rank:
            out[tuple(point)] += t.vals[parent]
            return
        crds, children = t.fiber(k, parent)
        for c, child in zip(crds.tolist(), children.tolist()):
            point[t.format.order[k]] = c
            visit(k + 1, child, point)

    visit(0, 0, [0] * t.rank)
    return out


def _check_structure(t: SparseTensor) -> None:
    count = 1
    for k, level in enumerate(t.levels):
        if level.kind == "compressed":
            assert len(level.pos) == count + 1 and level.pos[0] == 0 and level.pos[-1] == len(level.crd)
            assert np.all(np.diff(level.pos) >= 0)
            for p in range(count):
                fiber = level.crd[level.pos[p]:level.pos[p + 1]]
                assert np.all(np.diff(fiber) > 0) if level.unique else np.all(np.diff(fiber) >= 0)
        elif level.kind == "singleton":
            assert len(level.crd) == count and level.pos is None
        else:
            assert level.pos is None and level.crd is None
        count = t.positions(k)
    assert len(t.vals) == count


@settings(max_examples=150, deadline=None)
@given(coos())
def test_random_tensors_round_trip_through_every_named_format(coo):
    dense = coo.to_dense()
    for fmt in _formats(coo.rank):
        t = SparseTensor.from_coo("T", coo, fmt)
        _check_structure(t)
        back = t.to_coo()
        assert back.equals(coo.canonical(), rtol=0, atol=0)
        assert np.array_equal(back.coords, coo.canonical().coords)
        assert np.array_equal(_walk(t), dense)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_tensors_round_trip_through_any_format(data):
    coo = data.draw(coos(max_rank=4, max_dim=4))
    fmt = data.draw(formats(coo.rank))
    t = SparseTensor.from_coo("T", coo, fmt)
    _check_structure(t)
    assert t.to_coo().equals(coo)
    assert np.array_equal(_walk(t), coo.to_dense())
