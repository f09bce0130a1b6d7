"""Tensor data of sparse instances (dfopt.ir.sparse.data): the file readers, the seeded random
generator, networkx's bundled graphs, every fault with its message and pointer, the shipped
matrices of instances/sparse/data, and the Capstan platform preset."""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.errors import InstanceError
from dfopt.instance import Instance, from_dict, to_dict
from dfopt.ir.graph import DataflowGraph
from dfopt.ir.platform import PRESET_NAMES, Platform, load_preset
from dfopt.ir.sparse import data
from dfopt.ir.sparse.data import GRAPHS, load, random_coo
from dfopt.ir.sparse.tensor import Coo
from dfopt.schema import schema_issues

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "instances" / "sparse" / "data"
P = "/tensors/A/data"


def fault(spec, tmp_path: Path, rank: int = 2, shape=None) -> InstanceError:
    with pytest.raises(InstanceError) as info:
        load(spec, tmp_path, rank, shape, P)
    return info.value


def write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return name


def is_canonical(coo: Coo) -> bool:
    keys = [tuple(row) for row in coo.coords.tolist()]
    return keys == sorted(set(keys)) and bool(np.all(coo.values != 0))


# -- Matrix Market ------------------------------------------------------------------------------

def test_mtx_general_real_sums_duplicates_and_drops_zeros(tmp_path):
    name = write(tmp_path, "a.mtx", "%%MatrixMarket matrix coordinate real general\n% note\n2 3 4\n"
                 "1 3 1.5\n2 1 0.0\n1 3 0.25\n2 2 -2\n")
    coo = load(name, tmp_path, 2, (2, 3), P)
    assert coo.shape == (2, 3) and coo.coords.tolist() == [[0, 2], [1, 1]]
    assert coo.values.dtype == np.float64 and coo.values.tolist() == [1.75, -2.0]


def test_mtx_integer_pattern_symmetric_skew_and_array(tmp_path):
    ints = load(write(tmp_path, "i.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n2 1 7\n"),
                tmp_path, 2, None, P)
    assert ints.values.dtype == np.int64 and ints.values.tolist() == [7]
    pattern = load(write(tmp_path, "p.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n"),
                   tmp_path, 2, None, P)
    assert pattern.coords.tolist() == [[0, 1], [1, 0], [2, 2]] and pattern.values.tolist() == [1, 1, 1]
    assert pattern.values.dtype == np.int64
    skew = load(write(tmp_path, "s.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n"),
                tmp_path, 2, None, P)
    assert skew.to_dense().tolist() == [[0.0, -3.0], [3.0, 0.0]]
    dense = load(write(tmp_path, "d.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n0\n0\n4\n"),
                 tmp_path, 2, None, P)
    assert dense.coords.tolist() == [[0, 0], [1, 1]] and dense.values.tolist() == [1.0, 4.0]


def test_mtx_written_by_scipy_round_trips(tmp_path):
    m = sp.random_array((30, 20), density=0.2, rng=np.random.default_rng(4), format="coo")
    scipy.io.mmwrite(tmp_path / "r.mtx", m)
    coo = load("r.mtx", tmp_path, 2, None, P)
    assert coo.equals(Coo.from_scipy(m), 0, 0) and is_canonical(coo)


# -- FROSTT .tns --------------------------------------------------------------------------------

def test_tns_rank_three_with_comments_and_inferred_shape(tmp_path):
    name = write(tmp_path, "t.tns", "# a comment\n1 1 3 2.5\n\n2 2 1 -1   # trailing\n1 1 3 0.5\n")
    coo = load(name, tmp_path, 3, None, P)
    assert coo.shape == (2, 2, 3) and coo.coords.tolist() == [[0, 0, 2], [1, 1, 0]]
    assert coo.values.tolist() == [3.0, -1.0]


def test_tns_integer_values_rank_one_four_and_declared_shape(tmp_path):
    vec = load(write(tmp_path, "v.tns", "3 4\n1 2\n"), tmp_path, 1, (10,), P)
    assert vec.shape == (10,) and vec.values.dtype == np.int64 and vec.values.tolist() == [2, 4]
    t4 = load(write(tmp_path, "q.tns", "1 2 3 4 1.0\n4 3 2 1 2.0\n"), tmp_path, 4, None, P)
    assert t4.shape == (4, 3, 3, 4) and t4.nnz == 2


def test_tns_empty_file_with_declared_shape(tmp_path):
    coo = load(write(tmp_path, "e.tns", "# nothing\n"), tmp_path, 2, (3, 3), P)
    assert coo.shape == (3, 3) and coo.nnz == 0


# -- .npz ---------------------------------------------------------------------------------------

def test_npz_from_scipy_save_npz(tmp_path):
    m = sp.csr_array(np.array([[0, 2, 0], [3, 0, 0]], dtype=np.int64))
    sp.save_npz(tmp_path / "m.npz", m)
    coo = load("m.npz", tmp_path, 2, (2, 3), P)
    assert coo.coords.tolist() == [[0, 1], [1, 0]] and coo.values.tolist() == [2, 3]


def test_npz_coords_values_shape_and_inferred_shape(tmp_path):
    np.savez(tmp_path / "a.npz", coords=np.array([[1, 0, 2], [0, 0, 0]]), values=np.array([5, 6]),
             shape=np.array([2, 2, 3]))
    coo = load("a.npz", tmp_path, 3, None, P)
    assert coo.shape == (2, 2, 3) and coo.coords.tolist() == [[0, 0, 0], [1, 0, 2]] and coo.values.tolist() == [6, 5]
    np.savez(tmp_path / "b.npz", coords=np.array([[4], [1]]), values=np.array([1.0, 2.0]))
    assert load("b.npz", tmp_path, 1, None, P).shape == (5,)
    assert load("b.npz", tmp_path, 1, (9,), P).shape == (9,)


# -- graphs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", GRAPHS)
def test_every_graph_is_its_networkx_adjacency(name):
    graph = getattr(nx, f"{name}_graph")()
    coo = load({"graph": name}, Path("."), 2, None, P)
    n = graph.number_of_nodes()
    assert coo.shape == (n, n) and coo.nnz == 2 * graph.number_of_edges() and is_canonical(coo)
    weighted = any("weight" in d for _, _, d in graph.edges(data=True))
    expected = nx.to_numpy_array(graph, nodelist=list(graph), weight="weight" if weighted else None, dtype=np.int64)
    assert np.array_equal(coo.to_dense(), expected) and coo.values.dtype == np.int64


def test_graph_weights_and_suffix():
    karate = load({"graph": "karate_club_graph"}, Path("."), 2, (34, 34), P)
    assert int(karate.values.sum()) == 2 * sum(d["weight"] for _, _, d in nx.karate_club_graph().edges(data=True))
    assert set(load({"graph": "florentine_families"}, Path("."), 2, None, P).values.tolist()) == {1}


# -- random -------------------------------------------------------------------------------------

def test_random_uniform_exact_nnz_values_and_determinism():
    spec = {"seed": 7, "shape": [40, 30], "nnz": 123, "values": "int"}
    a, b = random_coo(spec, 2, None, "/r"), random_coo(dict(spec), 2, None, "/r")
    assert a.nnz == 123 and is_canonical(a) and a.equals(b, 0, 0) and np.array_equal(a.coords, b.coords)
    assert a.values.dtype == np.int64 and a.values.min() >= 1 and a.values.max() <= 9
    c = random_coo({**spec, "seed": 8}, 2, None, "/r")
    assert not np.array_equal(a.coords, c.coords)


def test_random_float_values_are_multiples_of_1_1024():
    coo = random_coo({"seed": 1, "shape": [64, 64], "density": 0.5, "values": "float"}, 2, None, "/r")
    assert coo.nnz == 2048 and coo.values.dtype == np.float64
    assert np.all(coo.values > 0) and np.all(coo.values <= 1) and np.all(coo.values * 1024 % 1 == 0)


def test_random_power_law_rows_are_skewed_and_capped():
    coo = random_coo({"seed": 3, "shape": [200, 50], "nnz": 2000, "rows": "power_law", "alpha": 1.5}, 2, None, "/r")
    lengths = np.bincount(coo.coords[:, 0], minlength=200)
    assert coo.nnz == 2000 and is_canonical(coo) and lengths.max() == 50            # the heaviest rows are full
    assert np.median(lengths) <= 5 and (lengths == 50).sum() < 20                   # and most are short
    full = random_coo({"seed": 3, "shape": [20, 5], "nnz": 100, "rows": "power_law"}, 2, None, "/r")
    assert full.nnz == 100 and np.all(np.bincount(full.coords[:, 0]) == 5)


def test_random_rank_four_on_a_huge_space_and_declared_shape():
    coo = random_coo({"seed": 0, "shape": [2**31] * 4, "nnz": 500}, 4, None, "/r")
    assert coo.nnz == 500 and coo.shape == (2**31,) * 4 and is_canonical(coo)
    hyper = random_coo({"seed": 0, "nnz": 300, "rows": "power_law"}, 3, (10**6, 10**6, 10**6), "/r")
    assert hyper.nnz == 300 and is_canonical(hyper)


@st.composite
def random_specs(draw):
    rank = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 12), min_size=rank, max_size=rank))
    size = int(np.prod(shape))
    spec = {"seed": draw(st.integers(0, 2**32)), "shape": shape,
            "values": draw(st.sampled_from(["int", "float"]))}
    if draw(st.booleans()):
        spec["nnz"] = draw(st.integers(0, size))
    else:
        spec["density"] = draw(st.floats(0, 1))
    if rank >= 2 and draw(st.booleans()):
        spec["rows"] = "power_law"
        spec["alpha"] = draw(st.floats(0.2, 4))
    return rank, spec


@settings(max_examples=150, deadline=None)
@given(random_specs())
def test_random_specs_give_exactly_the_requested_nnz_deterministically(case):
    rank, spec = case
    coo = load({"random": spec}, Path("."), rank, None, P)
    size = int(np.prod(spec["shape"]))
    want = spec["nnz"] if "nnz" in spec else min(size, round(spec["density"] * size))
    assert coo.nnz == want and coo.shape == tuple(spec["shape"]) and is_canonical(coo)
    again = load({"random": dict(spec)}, Path("."), rank, tuple(spec["shape"]), P)
    assert np.array_equal(coo.coords, again.coords) and np.array_equal(coo.values, again.values)


# -- faults -------------------------------------------------------------------------------------

def test_fault_missing_file(tmp_path):
    err = fault("nope.mtx", tmp_path)
    assert err.pointer == P and str(err) == f"{P}: cannot read 'nope.mtx': no such file in {tmp_path}"


def test_fault_unknown_extension(tmp_path):
    write(tmp_path, "a.mtz", "")
    assert str(fault("a.mtz", tmp_path)) == (f"{P}: cannot read 'a.mtz': unknown extension '.mtz', did you mean "
                                             "'.mtx'? (expected one of: .mtx, .tns, .npz)")


def test_fault_mtx_parse_error_names_the_line(tmp_path):
    name = write(tmp_path, "bad.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 x 2\n")
    assert str(fault(name, tmp_path)) == f"{P}: 'bad.mtx' does not parse as Matrix Market: Line 4: Invalid integer value."


def test_fault_mtx_rank_mismatch(tmp_path):
    name = write(tmp_path, "a.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n")
    assert str(fault(name, tmp_path, rank=3)) == f"{P}: 'a.mtx' (a Matrix Market matrix) has rank 2 but the tensor has 3 indices"


def test_fault_mtx_shape_differs_from_declared(tmp_path):
    name = write(tmp_path, "a.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n")
    assert str(fault(name, tmp_path, shape=(2, 3))) == (f"{P}: 'a.mtx' has shape [2, 2] but the tensor's declared "
                                                        "shape is [2, 3]")


def test_fault_mtx_complex(tmp_path):
    name = write(tmp_path, "c.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n")
    assert "holds complex values; expected integer, real or pattern" in str(fault(name, tmp_path))


def test_fault_mtx_dense_array_above_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "MAX_DENSE", 3)
    name = write(tmp_path, "d.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n0\n0\n4\n")
    assert str(fault(name, tmp_path)) == f"{P}: 'd.mtx' is a dense 2 x 2 array (4 entries), above the limit 3 (2^26)"


def test_fault_nnz_limit_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "MAX_NNZ", 2)
    mtx = write(tmp_path, "s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n2 1 1\n")
    assert str(fault(mtx, tmp_path)) == (f"{P}: 's.mtx' (2 stored entries, symmetric) has 4 nonzeros, above the limit "
                                         "2 (2^24)")
    tns = write(tmp_path, "t.tns", "1 1\n2 1\n3 1\n")
    assert "'t.tns' (3 lines) has 3 nonzeros, above the limit 2" in str(fault(tns, tmp_path, rank=1))
    np.savez(tmp_path / "n.npz", coords=np.zeros((3, 1), np.int64), values=np.ones(3))
    assert "'n.npz' has 3 nonzeros, above the limit 2" in str(fault("n.npz", tmp_path, rank=1))
    err = fault({"random": {"shape": [4, 4], "nnz": 3}}, tmp_path)
    assert err.pointer == P + "/random/nnz" and "the random data has 3 nonzeros, above the limit 2" in str(err)


def test_fault_dimension_limit(tmp_path):
    name = write(tmp_path, "h.mtx", "%%MatrixMarket matrix coordinate real general\n3000000000 2 1\n1 1 1\n")
    assert str(fault(name, tmp_path)) == (f"{P}: 'h.mtx' has dimension 3000000000 in mode 0, above the limit "
                                          "2147483648 (2^31)")
    assert "the declared shape has dimension 2147483649 in mode 1" in str(fault({"graph": "petersen"}, tmp_path,
                                                                                shape=(1, 2**31 + 1)))
    err = fault({"random": {"shape": [2, 2**31 + 1], "nnz": 1}}, tmp_path)
    assert err.pointer == P + "/random/shape/1" and "dimension 1 must be from 1 to 2147483648" in str(err)


def test_fault_tns_lines(tmp_path):
    cases = {
        "1 1 2\n1 2\n": "'x.tns' line 2: expected 3 fields (2 coordinates and a value), got 2",
        "1 a 2\n": "'x.tns' line 1: coordinate 'a' in mode 1 is not a positive integer (coordinates are 1-based)",
        "# c\n0 1 2\n": "'x.tns' line 2: coordinate 0 in mode 0; FROSTT coordinates are 1-based",
        "1 1 two\n": "'x.tns' line 1: value 'two' is not a number",
        "1 1 1\n2 2 nan\n": "'x.tns' line 2: value 'nan' is not finite",
        "1 1 1 1\n": "'x.tns' (line 1 has 3 coordinates) has rank 3 but the tensor has 2 indices",
        "1 1 1\n5 1 1\n": "'x.tns': line 2 has coordinate 5 in mode 0, outside 1..4",
        "# empty\n": "'x.tns' has no nonzeros and the tensor declares no shape; declare one",
    }
    for text, message in cases.items():
        write(tmp_path, "x.tns", text)
        shape = (4, 4) if "5 1 1" in text else None
        assert str(fault("x.tns", tmp_path, shape=shape)) == f"{P}: {message}", text


def test_fault_npz_contents(tmp_path):
    (tmp_path / "z.npz").write_bytes(b"not a zip")
    assert "'z.npz' does not read as an .npz archive" in str(fault("z.npz", tmp_path))
    cases = [
        (dict(x=np.ones(2)), "'c.npz' holds the arrays x; expected a scipy.sparse.save_npz file or the arrays coords, "
                             "values and shape"),
        (dict(coords=np.zeros((2, 2), np.int64), values=np.ones(3)),
         "'c.npz': expected coords of shape (nnz, rank) and values of shape (nnz,), got [2, 2] and [3]"),
        (dict(coords=np.zeros((1, 3), np.int64), values=np.ones(1)),
         "'c.npz' (coords with 3 columns) has rank 3 but the tensor has 2 indices"),
        (dict(coords=np.zeros((1, 2)), values=np.ones(1)), "'c.npz': coords must be integers, got numpy kind 'f'"),
        (dict(coords=np.array([[0, -1]]), values=np.ones(1)),
         "'c.npz': entry 0 has the negative coordinate -1 in mode 1"),
        (dict(coords=np.array([[0, 3]]), values=np.ones(1), shape=np.array([2, 3])),
         "'c.npz': entry 0 has coordinate 3 in mode 1, outside 0..2"),
        (dict(coords=np.array([[0, 0]]), values=np.array([np.inf])),
         "'c.npz' has the value inf at entry 0; expected finite values"),
        (dict(coords=np.array([[0, 0]]), values=np.ones(1), shape=np.array([2, 2])),
         "'c.npz' has shape [2, 2] but the tensor's declared shape is [3, 3]"),
    ]
    for arrays, message in cases:
        np.savez(tmp_path / "c.npz", **arrays)
        shape = (3, 3) if "declared" in message else None
        assert str(fault("c.npz", tmp_path, shape=shape)) == f"{P}: {message}", message


def test_fault_random_fields(tmp_path):
    r = P + "/random"
    cases = [
        ({"shape": [2, 2], "nnz": 1, "density": 0.1}, r, "random data needs exactly one of nnz and density, got both"),
        ({"shape": [2, 2]}, r, "random data needs exactly one of nnz and density, got neither"),
        ({"nnz": 1}, r, "random data needs a shape: give random.shape or declare the tensor's shape"),
        ({"shape": [2, 2], "nnz": 5}, r + "/nnz", "nnz 5 is more than the 4 positions of the shape"),
        ({"shape": [2, 2], "density": 1.5}, r + "/density", "density must be a number from 0 to 1, got 1.5"),
        ({"shape": [2, 2], "nnz": 1, "seed": "x"}, r + "/seed", "seed must be an integer, got 'x'"),
        ({"shape": [2, 2], "nnz": 1, "rows": "zipf"}, r + "/rows", "rows 'zipf': expected one of uniform, power_law"),
        ({"shape": [2, 2], "nnz": 1, "values": "ints"}, r + "/values",
         "values 'ints', did you mean 'int'?: expected one of int, float"),
        ({"shape": [2, 2], "nnz": 1, "alpha": 2}, r + "/alpha",
         "alpha sets the power law of row lengths; it needs rows 'power_law'"),
        ({"shape": [2, 2], "nnz": 1, "rows": "power_law", "alpha": 0}, r + "/alpha",
         "alpha must be a number in (0, 10], got 0"),
        ({"shape": [2, 2], "nnz": 1, "dnesity": 1}, r + "/dnesity",
         "unknown field 'dnesity', did you mean 'density'? (expected one of: seed, shape, density, nnz, rows, alpha, "
         "values)"),
        ({"shape": [2, 2, 2], "nnz": 1}, r + "/shape", "the random shape [2, 2, 2] has rank 3 but the tensor has 2 "
                                                       "indices"),
        ({"shape": [], "nnz": 1}, r + "/shape", "shape must be a list of positive integers, got []"),
    ]
    for spec, pointer, message in cases:
        err = fault({"random": spec}, tmp_path)
        assert (err.pointer, err.problems[0].message) == (pointer, message), spec
    err = fault({"random": {"shape": [3, 3], "nnz": 1}}, tmp_path, shape=(3, 4))
    assert str(err) == f"{r}/shape: the random data has shape [3, 3] but the tensor's declared shape is [3, 4]"
    err = fault({"random": {"shape": [5], "nnz": 1, "rows": "power_law"}}, tmp_path, rank=1)
    assert err.pointer == r + "/rows" and "a vector has no rows" in str(err)


def test_fault_graph(tmp_path):
    err = fault({"graph": "karate"}, tmp_path)
    assert err.pointer == P + "/graph"
    assert str(err).startswith(f"{P}/graph: unknown graph 'karate', did you mean 'karate_club'? (expected one of: "
                               "karate_club, les_miserables, florentine_families, davis_southern_women")
    assert "graph 'petersen' (an adjacency matrix) has rank 2 but the tensor has 1 indices" in str(
        fault({"graph": "petersen"}, tmp_path, rank=1))
    assert "graph 'petersen' has shape [10, 10] but the tensor's declared shape is [10, 11]" in str(
        fault({"graph": "petersen"}, tmp_path, shape=(10, 11)))
    assert "expected a graph name" in str(fault({"graph": 3}, tmp_path))


def test_fault_spec_kind_and_rank(tmp_path):
    assert str(fault(3, tmp_path)) == (f"{P}: expected a file path (.mtx, .tns, .npz), {{\"random\": {{...}}}} or "
                                       "{\"graph\": name}, got int 3")
    assert "got an object with the fields graph, random" in str(fault({"graph": "x", "random": {}}, tmp_path))
    assert str(fault({"graph": "petersen"}, tmp_path, rank=5)) == f"{P}: tensor data needs a rank from 1 to 4, got 5"
    assert "the declared shape [3] has 1 dimensions but the tensor has 2 indices" in str(
        fault({"graph": "petersen"}, tmp_path, shape=(3,)))


# -- shipped matrices ---------------------------------------------------------------------------

def _readme_rows():
    rows = []
    for line in (SHIPPED / "README.md").read_text().splitlines():
        m = re.match(r"\| `(\w+\.mtx)` \|.*\| (\d+)x(\d+) \| (\d+) \| (\d+) \|$", line)
        if m:
            rows.append((m[1], (int(m[2]), int(m[3])), int(m[4]), int(m[5])))
    return rows


def test_shipped_folder_is_small_and_fully_listed():
    rows = _readme_rows()
    assert {r[0] for r in rows} == {p.name for p in SHIPPED.glob("*.mtx")} and len(rows) >= 7
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) < 3 * 2**20
    for name, _, _, size in rows:
        assert (SHIPPED / name).stat().st_size == size
        head = (SHIPPED / name).read_text().splitlines()[1:3]
        assert "source package:" in head[1] and "license" in head[1] and head[0].startswith(f"% {name[:-4]}:")


@pytest.mark.parametrize("row", _readme_rows(), ids=lambda r: r[0])
def test_shipped_matrices_load_with_the_stated_shape_and_nnz(row):
    name, shape, nnz, _ = row
    coo = load(name, SHIPPED, 2, shape, P)
    assert coo.shape == shape and coo.nnz == nnz and is_canonical(coo)


def test_shipped_graphs_match_the_graph_loader():
    for name in ("karate_club", "les_miserables"):
        shipped = load(f"networkx_{name}.mtx", SHIPPED, 2, None, P)
        assert shipped.equals(load({"graph": name}, SHIPPED, 2, None, P), 0, 0)


# -- the Capstan preset -------------------------------------------------------------------------

def test_capstan_preset_figures():
    assert "capstan" in PRESET_NAMES
    p = load_preset("capstan")
    assert p.kind == "rda" and p.name == "capstan" and not p.slots and not p.npu
    assert p.rda["lanes"] == 16 and p.rda["word_bits"] == 32 and p.rda["banks"] == 16
    assert p.rda["pmu_words"] * p.rda["word_bits"] // 8 == 256 * 1024
    assert p.onchip_bytes == p.rda["pmus"] * p.rda["pmu_words"] * 4
    assert p.rda["dram_words_per_cycle"] == 900_000 // p.rda["clock_mhz"] // 4
    for cite in ("MICRO 2021", "ISCA 2017", "CGO 2025", "Assumptions"):
        assert cite in p.source


def test_capstan_schema_and_round_trips():
    p = load_preset("capstan")
    assert schema_issues(p.to_dict(), "instance", "platform") == []
    assert Platform.from_dict(p.to_dict(), "capstan") == p
    inst = Instance("p", "converter", graph=DataflowGraph(), platform=p, platform_name="capstan")
    assert to_dict(inst)["platform"] == "capstan" and from_dict(to_dict(inst)) == inst
    inst.platform_name = None
    assert to_dict(inst)["platform"]["rda"] == p.rda and from_dict(to_dict(inst)) == inst


def test_rda_schema_refuses_unknown_fields_and_bad_bounds():
    d = load_preset("capstan").to_dict()
    d["rda"] = {**d["rda"], "lanez": 16, "banks": 0, "word_bits": 12, "shuffle_network": 1}
    issues = dict(schema_issues(d, "instance", "platform"))
    assert issues[("rda", "lanez")].startswith("unknown field 'lanez'")
    assert issues[("rda", "banks")] == "expected integer >= 1 and <= 1024, got 0"
    assert ("rda", "word_bits") in issues and ("rda", "shuffle_network") in issues
    assert schema_issues({"kind": "gpu"}, "instance", "platform")[0][0] == ("kind",)
