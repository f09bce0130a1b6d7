"""The ``sparse`` object of an instance: parsing, faults with their pointers, the decision file
format and Stardust's rules as functions of an array's access facts."""

from __future__ import annotations

import pytest

from dfopt.errors import InstanceError
from dfopt.ir.sparse.statement import SparseStatement, statement_issues
from dfopt.models.sparse.decision import ArrayBinding, SparseDesign
from dfopt.models.sparse.rules import binding_issues, min_pmus, rule_reason

SPMV = {"expression": "y(i) = A(i,j) * x(j)",
        "tensors": {"A": {"format": "csr", "data": "a.mtx"}, "x": {"format": "dense", "data": "x.npz"},
                    "y": {"format": "dense"}}}


def _with(**changes):
    d = {"expression": SPMV["expression"], "tensors": {k: dict(v) for k, v in SPMV["tensors"].items()}}
    d.update(changes)
    return d


def test_a_statement_parses_with_its_schedule():
    st = SparseStatement.from_dict(_with(schedule=[
        {"command": "reorder", "order": ["i", "j"]}, {"command": "accelerate", "index": "j", "pattern": "reduce"},
        {"command": "environment", "inner_par": 8, "outer_par": 2, "nnz_accel_max": 1024}]))
    assert st.reorder == ("i", "j") and st.patterns == {"j": "reduce"}
    assert (st.inner_par, st.outer_par, st.nnz_accel_max) == (8, 2, 1024)
    assert st.tensors["A"].format.order == (0, 1) and st.to_dict()["expression"] == SPMV["expression"]


@pytest.mark.parametrize("change, pointer, text", [
    ({"expression": "y(i) = A(i,i) * x(j)"}, "/sparse/expression", "index 'i' is repeated"),
    ({"tensors": {"A": {"format": "csr", "data": "a"}, "y": {}}}, "/sparse/tensors",
     "uses tensor 'x' that /sparse/tensors does not declare"),
    ({"tensors": {**SPMV["tensors"], "z": {"data": "z"}}}, "/sparse/tensors/z", "not used by the expression"),
    ({"tensors": {**SPMV["tensors"], "A": {"format": "csq", "data": "a"}}}, "/sparse/tensors/A/format",
     "did you mean 'csr'"),
    ({"tensors": {**SPMV["tensors"], "A": {"format": ["dense"], "data": "a"}}}, "/sparse/tensors/A/format",
     "tensor 'A'"),
    ({"tensors": {**SPMV["tensors"], "A": {"format": "csr", "order": [1, 0], "data": "a"}}},
     "/sparse/tensors/A/format", "give 'order' only with a list"),
    ({"tensors": {**SPMV["tensors"], "y": {"format": "dense", "data": "y"}}}, "/sparse/tensors/y/data",
     "is the result"),
    ({"tensors": {**SPMV["tensors"], "x": {"format": "dense"}}}, "/sparse/tensors/x", "needs 'data'"),
    ({"tensors": {**SPMV["tensors"], "x": {"format": "dense", "shape": [3, 3], "data": "x"}}},
     "/sparse/tensors/x/shape", "a shape of 2 extents"),
    ({"schedule": [{"command": "reorder", "order": ["i"]}]}, "/sparse/schedule/0/order", "every index once"),
    ({"schedule": [{"command": "precompute", "index": "i", "workspace": "w"}]}, "/sparse/schedule/0/index",
     "not one"),
    ({"schedule": [{"command": "precompute", "index": "j", "workspace": "A"}]}, "/sparse/schedule/0/workspace",
     "already a tensor"),
    ({"schedule": [{"command": "accelerate", "index": "i", "pattern": "reduce"}]}, "/sparse/schedule/0/pattern",
     "needs a reduction index"),
    ({"schedule": [{"command": "map", "index": "j", "pattern": "foreach"}]}, "/sparse/schedule/0/pattern",
     "use 'reduce'"),
    ({"schedule": [{"command": "accelerate", "index": "q", "pattern": "reduce"}]}, "/sparse/schedule/0/index",
     "the indices are"),
    ({"schedule": [{"command": "reorder", "order": ["i", "j"], "inner_par": 2}]}, "/sparse/schedule/0/inner_par",
     "takes no field"),
])
def test_every_fault_names_its_field(change, pointer, text):
    with pytest.raises(InstanceError) as err:
        SparseStatement.from_dict(_with(**change))
    assert any(p.pointer == pointer and text in p.message for p in err.value.problems), err.value.problems


def test_every_fault_is_reported_at_once():
    issues = statement_issues(_with(tensors={"A": {"format": "csq"}, "x": {}, "y": {"data": "y"}}))
    assert len(issues) == 4


def test_a_decision_round_trips_and_refuses_unknown_names():
    d = SparseDesign({"A.1.crd": ArrayBinding("fifo", 2), "x.vals": ArrayBinding("sram", 0, 1)},
                     {"join_j_0": "merge"}, 16, 2)
    assert SparseDesign.from_json(d.to_json()) == d
    bad = d.to_json()
    bad["coiteration"]["join_j_0"] = "zipper"
    with pytest.raises(InstanceError, match="/sparse/coiteration/join_j_0: unknown co-iteration method 'zipper'"):
        SparseDesign.from_json(bad)
    bad = d.to_json()
    bad["par"]["inner"] = 0
    with pytest.raises(InstanceError, match="/sparse/par/inner"):
        SparseDesign.from_json(bad)


class _Facts:
    def __init__(self, role="read", in_order=True, gather=False, length=100, loop="j", segments=((100, 100),) * 3):
        self.role, self.in_order, self.gather, self.length, self.loop = role, in_order, gather, length, loop
        self.segments = segments


@pytest.mark.parametrize("memory, facts, region, ws, ok", [
    ("reg", _Facts(length=1), "off_chip", None, True),
    ("reg", _Facts(length=2), "off_chip", None, False),
    ("fifo", _Facts(), "off_chip", None, True),
    ("fifo", _Facts(in_order=False, gather=True), "off_chip", None, False),
    ("fifo", _Facts(role="accumulate"), "on_chip", "dense", False),
    ("dram", _Facts(), "on_chip", None, False),
    ("dram", _Facts(role="accumulate"), "off_chip", "dense", False),
    ("sram", _Facts(role="accumulate"), "on_chip", "dense", True),
    ("sram", _Facts(role="accumulate"), "on_chip", "sparse", False),
    ("sparse_sram", _Facts(role="accumulate"), "on_chip", "sparse", True),
])
def test_stardusts_memory_rules(memory, facts, region, ws, ok):
    reason = rule_reason(memory, role=facts.role, in_order=facts.in_order, length=facts.length, region=region,
                         ws_format=ws)
    assert (reason is None) == ok, reason


def test_a_gathered_copy_needs_banks_for_its_lanes_and_words_for_its_segment():
    loops = ("i", "j")
    f = _Facts(in_order=False, gather=True, segments=((70_000, 70_000), (70_000, 140_000), (5, 9)))
    assert min_pmus(70_000, True, 16, 65536, 16) == 2 and min_pmus(10, True, 64, 65536, 16) == 4
    assert binding_issues("x.vals", ArrayBinding("sram", 0, 2), f, loops, "off_chip", None, 16, 65536, 16) == []
    faults = binding_issues("x.vals", ArrayBinding("sram", 0, 1), f, loops, "off_chip", None, 16, 65536, 16)
    assert faults and "needs 2" in faults[0]
    faults = binding_issues("x.vals", ArrayBinding("sram", 3, 1), f, loops, "off_chip", None, 16, 65536, 16)
    assert "outside 0..2" in faults[0]
    faults = binding_issues("x.vals", ArrayBinding("fifo", 2, 1), f, loops, "off_chip", None, 16, 65536, 16)
    assert any("takes no PMUs" in m for m in faults) and any("FIFO" in m for m in faults)
