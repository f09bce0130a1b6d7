"""Concrete index notation and SAM lowering: loop orders, merge points, accumulators, the
primitive graph of every co-iteration method, and its DOT text.

Every expectation is read off the kernel by hand: which tensor stores which index at which level,
which operands a product intersects and a sum unites, where a reduction must accumulate.
"""

from __future__ import annotations

import re

import networkx as nx
import pytest

from dfopt.ir.sparse.concrete import Join, Locate, concretize
from dfopt.ir.sparse.formats import Format, named
from dfopt.ir.sparse.notation import index_vars, parse, tensors
from dfopt.ir.sparse.sam import METHODS, lower

KERNELS = {
    "spmv_csr": ("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "dense", "y": "dense"}, None),
    "spmv_csc": ("y(i) = A(i,j) * x(j)", {"A": "csc", "x": "dense", "y": "dense"}, None),
    "plus2": ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, None),
    "plus3": ("C(i,j) = A(i,j) + B(i,j) + D(i,j)", {"A": "csr", "B": "csr", "D": "csr", "C": "csr"}, None),
    "mul_dcsr": ("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "B": "csr", "C": "dcsr"}, None),
    "residual": ("y(i) = b(i) - A(i,j) * x(j)", {"A": "csr", "x": "dense", "b": "sparse_vector",
                                                "y": "sparse_vector"}, None),
    "mattransmul": ("y(i) = 2 * A(j,i) * x(j) + 3 * z(i)", {"A": "csr", "x": "sparse_vector",
                                                           "z": "sparse_vector", "y": "sparse_vector"}, None),
    "sddmm": ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "C": "dense", "D": "dense", "A": "csr"}, None),
    "ttv": ("A(i,j) = B(i,j,k) * c(k)", {"B": "csf", "c": "dense", "A": "csf"}, None),
    "ttm": ("A(i,j,k) = B(i,j,l) * C(k,l)", {"B": "csf", "C": "dense", "A": "csf"}, None),
    "mttkrp": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "csf", "C": "dense", "D": "dense", "A": "dense"}, None),
    "innerprod": ("a = B(i,j,k) * C(i,j,k)", {"B": "csf", "C": "csf"}, None),
    "spgemm": ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"}, ["i", "k", "j"]),
}


def build(name, dims=None, workspaces=None, **fmt):
    text, formats, order = KERNELS[name]
    a = parse(text)
    ranks = tensors(a)
    fmts = {t: named(f, ranks[t]) for t, f in {**formats, **fmt}.items()}
    dims = dims or {v: 4 + n for n, v in enumerate(index_vars(a))}
    return concretize(a, fmts, dims, order, workspaces)


def steps(mp):
    return [(s.name, s.op, s.left, s.right, s.method) if isinstance(s, Join) else ("locate", s.leaf.name, s.on)
            for s in mp.steps]


# --- loop orders ----------------------------------------------------------------------------------

def test_default_order_is_the_first_concordant_topological_order():
    assert build("spmv_csr").loops == ("i", "j")
    assert build("spmv_csc").loops == ("j", "i")            # A stores j above i
    assert build("mattransmul").loops == ("j", "i")         # A(j,i) in CSR stores j first
    assert build("mattransmul", A="csc").loops == ("i", "j")
    assert build("ttm").loops == ("i", "j", "k", "l")        # C is dense: no constraint


def test_reorder_must_be_a_permutation():
    f = {"A": named("csr", 2), "x": named("dense", 1), "y": named("dense", 1)}
    with pytest.raises(ValueError, match=r"not a permutation .*missing j"):
        concretize(parse("y(i) = A(i,j) * x(j)"), f, {"i": 2, "j": 2}, ["i"])
    with pytest.raises(ValueError, match=r"repeated i"):
        concretize(parse("y(i) = A(i,j) * x(j)"), f, {"i": 2, "j": 2}, ["i", "i"])


def test_discordant_reorder_names_the_tensor_the_indices_and_the_order():
    a = parse("C(i,j) = A(i,k) * B(k,j)")
    f = {"A": named("csr", 2), "B": named("csr", 2), "C": named("csr", 2)}
    with pytest.raises(ValueError) as err:
        concretize(a, f, {"i": 2, "j": 2, "k": 2}, ["j", "i", "k"])
    msg = str(err.value)
    assert "'C'" in msg and "'i'" in msg and "'j'" in msg and "(i, j)" in msg


def test_conflicting_storage_orders_have_no_default_order():
    a = parse("C(i,j) = A(i,j) * B(i,j)")
    f = {"A": named("csr", 2), "B": named("dcsc", 2), "C": named("dense", 2)}
    with pytest.raises(ValueError, match=r"no loop order is concordant.*'A' needs \(i, j\).*'B' needs \(j, i\)"):
        concretize(a, f, {"i": 2, "j": 2})


def test_dense_tensors_need_no_concordance():
    a = parse("C(i,j) = A(i,j) * B(j,i)")
    c = concretize(a, {"A": named("csr", 2), "B": named("dense", 2), "C": named("dense", 2)}, {"i": 3, "j": 3})
    assert c.loops == ("i", "j")
    # B stores j above i: its level 1 (i) is located at loop j, after its level 0
    assert ("locate", "B.1", "A.1") in steps(c.merges["j"])


def test_missing_format_and_size_are_named():
    a = parse("y(i) = A(i,j) * x(j)")
    with pytest.raises(ValueError, match="tensor 'x' has no format"):
        concretize(a, {"A": named("csr", 2), "y": named("dense", 1)}, {"i": 2, "j": 2})
    with pytest.raises(ValueError, match="index 'j' has no size"):
        concretize(a, {"A": named("csr", 2), "x": named("dense", 1), "y": named("dense", 1)}, {"i": 2})


# --- merge points ---------------------------------------------------------------------------------

def test_spmv_csr_locates_the_dense_vector():
    c = build("spmv_csr")
    assert [leaf.name for leaf in c.merges["j"].scans] == ["A.1"]
    assert steps(c.merges["j"]) == [("locate", "x.0", "A.1")]
    assert c.needs_method == ()
    assert c.merges["i"].dense and not c.merges["j"].dense


def test_sparse_operands_of_a_product_intersect_and_need_a_method():
    c = build("spmv_csr", x="sparse_vector")
    assert steps(c.merges["j"]) == [("join_j_0", "intersect", "A.1", "x.0", None)]
    assert c.needs_method == ("join_j_0",)


def test_plus3_is_a_left_deep_chain_of_unions():
    c = build("plus3")
    assert steps(c.merges["j"]) == [("join_j_0", "union", "A.1", "B.1", None),
                                    ("join_j_1", "union", "join_j_0", "D.1", None)]
    # the dense row levels: one scanned, the others located
    assert steps(c.merges["i"]) == [("locate", "B.0", "A.0"), ("locate", "D.0", "A.0")]
    assert c.needs_method == ("join_j_0", "join_j_1")
    assert c.joins["join_j_1"].leaves == ("A.1", "B.1", "D.1")


def test_a_dense_leaf_in_a_union_makes_it_dense():
    c = build("residual")
    (join,) = c.merges["i"].joins
    assert (join.op, join.left, join.right, join.method) == ("union", "A.0", "b.0", "dense")
    assert c.merges["i"].dense and not join.needs_method
    assert c.needs_method == ()


def test_mixed_products_and_sums():
    a = parse("C(i,j) = A(i,j) * B(i,j) + D(i,j) * E(i,j)")
    c = concretize(a, {t: named("dcsr", 2) for t in "ABCDE"}, {"i": 3, "j": 3})
    assert steps(c.merges["j"]) == [("join_j_0", "intersect", "A.1", "B.1", None),
                                    ("join_j_1", "intersect", "D.1", "E.1", None),
                                    ("join_j_2", "union", "join_j_0", "join_j_1", None)]


def test_a_dimension_nobody_stores_sparsely_is_a_range():
    c = build("mttkrp")
    assert c.merges["j"].output == "range_j" and c.merges["j"].scans == ()
    # C(k,j) and D(l,j) are dense and stored k and l first: their j levels are located later
    assert ("locate", "C.1", "B.1") in steps(c.merges["k"])
    assert ("locate", "D.1", "B.2") in steps(c.merges["l"])
    assert all(isinstance(s, Locate) and s.crd_index == "j" for s in c.merges["k"].steps if s.leaf.level == 1)


def test_a_dense_level_stored_against_the_loops_makes_a_range_union():
    c = concretize(parse("C(i,j) = A(i,j) + D(i,j)"), {"A": named("dcsr", 2), "D": Format(("dense", "dense"), (1, 0)),
                                                      "C": named("dcsr", 2)}, {"i": 4, "j": 3})
    assert steps(c.merges["i"]) == [("join_i_0", "union", "range_i", "A.0", "dense")]
    assert steps(c.merges["j"]) == [("join_j_0", "union", "D.0", "A.1", "dense"), ("locate", "D.1", "join_j_0")]
    g = lower(c, {})
    assert g.nodes["range_i"].kind == "scanner" and g.nodes["range_i"].attrs["tensor"] is None


def test_rank_four_and_scalar_operands():
    c = concretize(parse("a = s * B(i,j,k,l) * C(i,j,k,l)"), {"s": named("dense", 0), "B": named("csf", 4),
                                                              "C": named("csf", 4)}, dict(i=2, j=2, k=2, l=2))
    assert c.needs_method == ("join_i_0", "join_j_0", "join_k_0", "join_l_0")
    g = lower(c, {v: "merge" for v in "ijkl"})
    assert [n.loop for n in g.nodes.values() if n.kind == "reducer"] == ["l", "k", "j", "i"]


def test_innerprod_intersects_at_every_level():
    c = build("innerprod")
    assert c.needs_method == ("join_i_0", "join_j_0", "join_k_0")
    assert c.accumulators == ()


def test_coo_levels_are_not_co_iterated():
    a = parse("C(i,j) = A(i,j) * B(i,j)")
    # the non-unique level alone drives i (B's dense level is located); its singleton level may join
    c = concretize(a, {"A": named("coo", 2), "B": named("csr", 2), "C": named("dense", 2)}, {"i": 2, "j": 2})
    assert c.needs_method == ("join_j_0",)
    with pytest.raises(ValueError, match="non-unique.*index 'i'"):
        concretize(parse("C(i,j) = A(i,j) + B(i,j)"), {"A": named("coo", 2), "B": named("dcsr", 2),
                                                      "C": named("dense", 2)}, {"i": 2, "j": 2})


# --- accumulators ---------------------------------------------------------------------------------

def test_spmv_csc_accumulates_over_i():
    c = build("spmv_csc")
    (acc,) = c.accumulators
    assert (acc.name, acc.index, acc.reduces, acc.holds, acc.format, acc.outer) == \
        ("w_j", "j", ("j",), ("i",), "dense", ())
    assert c.formats["w_j"] == Format(("dense",), (0,))
    assert [leaf.tensor for leaf in c.merges["i@w_j"].scans] == ["w_j"]


def test_gustavson_spgemm_accumulates_rows():
    c = build("spgemm", workspaces={"k": {"name": "row", "format": "sparse"}})
    (acc,) = c.accumulators
    assert (acc.name, acc.holds, acc.outer, acc.format) == ("row", ("j",), ("i",), "sparse")
    assert c.formats["row"].levels == ("compressed",)
    assert list(c.merges) == ["i", "k", "j", "j@row"]


def test_mattransmul_csr_unites_the_workspace_with_z():
    c = build("mattransmul")
    assert [a.name for a in c.accumulators] == ["w_j"]
    assert steps(c.merges["i@w_j"]) == [("join_i_0", "union", "w_j.0", "z.0", None)]
    assert c.needs_method == ("join_i_0",)


def test_workspace_named_by_its_expression():
    c = build("spmv_csc", workspaces={"sum(j, A(i,j) * x(j))": ("t", "sparse")})
    assert (c.accumulators[0].name, c.accumulators[0].format) == ("t", "sparse")


def test_workspace_faults():
    with pytest.raises(ValueError, match="name no accumulator"):
        build("spmv_csc", workspaces={"k": "sparse"})
    with pytest.raises(ValueError, match="unknown format 'hashed'"):
        build("spmv_csc", workspaces={"j": {"format": "hashed"}})
    with pytest.raises(ValueError, match="name no accumulator"):
        build("spmv_csr", workspaces={"j": "dense"})


def test_reduction_must_enclose_the_loops_below_it():
    a = parse("a = 2 * b(i) + c(j)")
    f = {"b": named("sparse_vector", 1), "c": named("sparse_vector", 1)}
    with pytest.raises(ValueError, match="loop 'j' lies inside the reduction over 'i'"):
        concretize(a, f, {"i": 2, "j": 2})


def test_a_workspace_joins_only_at_its_last_level():
    a = parse("C(i,j) = A(i,j) * B(i,j) + D(i,k) * E(k,j)")
    f = {t: named("dense", 2) for t in "ABCDE"}
    with pytest.raises(ValueError, match="workspace 'w_k' holds \\(i, j\\); at its upper level 'i'"):
        concretize(a, f, {"i": 2, "j": 2, "k": 2}, ["k", "i", "j"])


# --- lowering -------------------------------------------------------------------------------------

def kinds(g, loop=None):
    return sorted(n.kind for n in g.nodes.values() if loop is None or n.loop == loop)


@pytest.mark.parametrize("method,expect", [
    ("merge", ["joiner"]),
    ("dense", ["joiner"]),
    ("bitvector", ["bv_gen", "bv_gen", "bv_join", "bv_scan"]),
])
def test_each_method_builds_its_primitives(method, expect):
    c = build("plus2")
    g = lower(c, {"join_j_0": method})
    join_kinds = [k for k in kinds(g, "j") if k in ("joiner", "bv_gen", "bv_join", "bv_scan")]
    assert join_kinds == expect
    assert g.methods == {"join_j_0": method}
    assert nx.is_directed_acyclic_graph(g.to_networkx())


def test_methods_by_index_and_faults():
    c = build("plus3")
    assert set(lower(c, {"j": "merge"}).methods.values()) == {"merge"}
    with pytest.raises(ValueError, match="needs a co-iteration method"):
        lower(c, {"join_j_0": "merge"})
    with pytest.raises(ValueError, match="unknown co-iteration method 'zip'"):
        lower(c, {"j": "zip"})
    with pytest.raises(ValueError, match="neither a join"):
        lower(c, {"join_q_0": "merge"})


def test_spmv_csr_graph_matches_sam():
    g = lower(build("spmv_csr"), {})
    assert kinds(g) == ["alu", "array", "array", "locate", "reducer", "repeater", "scanner", "scanner",
                        "writer", "writer"]
    # x is not indexed by i: its root reference is repeated over i
    rep = g.nodes["repeat_x_i"]
    assert rep.attrs["root"] and rep.loop == "i"


def test_compressed_result_gets_crd_drops():
    g = lower(build("mul_dcsr"), {"join_j_0": "merge"})
    drops = [n.attrs for n in g.nodes.values() if n.kind == "crd_drop"]
    assert [(d["outer"], d["inner"]) for d in drops] == [("i", "j")]
    g = lower(build("spmv_csr", y="sparse_vector"), {})
    assert [(n.attrs["outer"], n.attrs["inner"]) for n in g.nodes.values() if n.kind == "crd_drop"] == [("i", "j")]
    assert not [n for n in lower(build("plus2"), {"j": "merge"}).nodes.values() if n.kind == "crd_drop"]


def test_accumulator_feeds_the_writers():
    g = lower(build("spgemm"), {})
    (acc,) = [n for n in g.nodes.values() if n.kind == "accumulator"]
    assert acc.attrs["holds"] == ("j",) and acc.attrs["outer"] == 1
    consumers = {s.dst for s in g.streams if s.src == acc.name}
    assert "array_w_k@w_k" in consumers and "write_C.1" in consumers


def test_reductions_innermost_become_reducers():
    g = lower(build("innerprod"), {"i": "merge", "j": "merge", "k": "merge"})
    assert [n.loop for n in g.nodes.values() if n.kind == "reducer"] == ["k", "j", "i"]


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("method", METHODS)
def test_every_kernel_lowers_to_an_acyclic_graph(name, method):
    c = build(name)
    g = lower(c, {j: method for j in c.needs_method})
    order = g.topological_order()
    assert len(order) == len(g.nodes)
    seen = set()
    for n in order:
        assert all(s.src in seen for s in g.inputs(n))
        seen.add(n)
    assert {s.kind for s in g.streams} <= {"crd", "ref", "val", "bv"}


# --- DOT ------------------------------------------------------------------------------------------

NODE = re.compile(r'^    "([^"]+)" \[label="([^"]*)" color=\w+ shape=box style=filled type="(\w+)"\]$')
EDGE = re.compile(r'^    "([^"]+)" -> "([^"]+)" \[label="(\w+)"( style=(\w+))? type="(\w+)" comment="([^"]*)"\]$')


@pytest.mark.parametrize("method", METHODS)
def test_dot_lines(method):
    c = build("plus2")
    g = lower(c, {"join_j_0": method})
    lines = g.to_dot().splitlines()
    assert lines[0] == "digraph SAM {" and lines[-1] == "}" and lines[1].startswith("    comment=")
    nodes = [NODE.match(x) for x in lines[2:2 + len(g.nodes)]]
    edges = [EDGE.match(x) for x in lines[2 + len(g.nodes):-1]]
    assert all(nodes) and all(edges), [x for x in lines if not (NODE.match(x) or EDGE.match(x))]
    assert len(edges) == len(g.streams)
    dg = nx.MultiDiGraph()
    dg.add_nodes_from(m.group(1) for m in nodes)
    for m in edges:
        assert m.group(1) in dg and m.group(2) in dg
        dg.add_edge(m.group(1), m.group(2))
        style = {"crd": "dashed", "ref": "bold", "bv": "dotted"}.get(m.group(3))
        assert m.group(5) == style
    assert nx.is_directed_acyclic_graph(dg)
    labels = {m.group(1): m.group(2) for m in nodes}
    assert labels["scan_A.1"] == "FiberLookup j: A1\\ncompressed"
    assert labels["write_C.vals"] == "FiberWrite Vals: C"
