"""Instance and solution files: schema, semantic checks, messages, round trips (dfopt.instance)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

import dfopt.instance as instance_module
from dfopt.errors import InstanceError
from dfopt.instance import (
    PROBLEMS,
    Instance,
    dump,
    from_dict,
    graph_from_dict,
    graph_to_dict,
    load,
    load_solution,
    loads,
    solution_from_dict,
    to_dict,
    validate_dict,
)
from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.ir.platform import PRESET_NAMES, load_preset
from dfopt.models.registry import section_names
from dfopt.schema import SCHEMA_KINDS, get_schema
from dfopt.solution import Check, Solution

SECTION_NAMES = section_names()

ROOT = Path(__file__).resolve().parents[1]
INVALID = ROOT / "instances" / "invalid"
INVALID_FILES = sorted(INVALID.glob("*.json"))
VALID_FILES = sorted(p for p in (ROOT / "instances").rglob("*.json") if INVALID not in p.parents)

T = {"dtype": "f32", "shape": [8, 8], "element": [4, 2], "tripcounts": [4, 2], "steps": [2, 4], "map": [1, 0]}
U = {"dtype": "f32", "shape": [8, 8], "element": [4, 2], "tripcounts": [4, 2, 2], "steps": [2, 1, 4],
     "map": [2, 0]}


def chain(problem: str = "fifo") -> dict:
    return {"format": "dfopt-instance/1", "name": "chain3", "problem": problem,
            "graph": {"kernels": [{"name": "load", "delay": 2}, {"name": "conv1", "delay": 5, "ii": 2},
                                  {"name": "store", "delay": 1}],
                      "streams": [{"name": "e0", "src": "load", "dst": "conv1", "tokens": 16},
                                  {"name": "e1", "src": "conv1", "dst": "store", "tokens": 16}]}}


def full() -> dict:
    """A valid instance that uses every section and most optional fields (already canonical)."""
    return {
        "format": "dfopt-instance/1", "name": "full", "problem": "pipeline", "description": "all fields",
        "platform": "u55c",
        "graph": {
            "kernels": [
                {"name": "a", "op": "matmul", "loops": [{"name": "i", "tripcount": 4},
                                                        {"name": "k", "tripcount": 8, "step": 2, "kind": "reduction"}],
                 "delay": 3, "latency": 50, "resources": {"lut": 100, "bytes": 1024.5},
                 "attrs": {"x": [1, {"y": None}]}},
                {"name": "b", "ii": 2}],
            "streams": [
                {"name": "e", "src": "a", "dst": "b", "produce_ii": 2, "src_type": T, "dst_type": U,
                 "converter_bytes": 128, "depth": 4},
                {"name": "f", "src": "a", "dst": "b", "tokens": 3, "width": 64, "consume_ii": 3}]},
        "program": {
            "params": ["N"], "context": "[N] -> { : N >= 1 }",
            "arrays": {"A": {"dtype": "f32", "shape": ["N", 4]}},
            "statements": [{"name": "S0", "domain": "[N] -> { S0[i] : 0 <= i < N }",
                            "reads": ["[N] -> { S0[i] -> A[i, 0] }"], "writes": ["[N] -> { S0[i] -> A[i, 1] }"],
                            "body": "A[i][1] = A[i][0];", "schedule": "[N] -> { S0[i] -> [i] }"}],
            "schedule": "[N] -> { S0[i] -> [i, 0] }"},
        "operators": {"tensors": {"x": {"shape": [4, 8], "dtype": "f32"}},
                      "ops": [{"name": "r", "op": "relu", "inputs": ["x"], "output": "y"}], "outputs": ["y"]},
        "options": {"fifo": {"strategy": "conservative", "objective": "bram18", "time_limit": 2.5, "seed": 1,
                             "deterministic": True, "solver": "highs", "formulation": "potentials"},
                    "fusion": {"c_max": 1024},
                    "placement": {"pins": {"a": "SLR0"}, "max_utilization": 1, "balance_weight": 0.5},
                    "schedule": {"strategy": "isl", "tiling": [32]}, "mapping": {"region": {"columns": [0, 1]}, "first": 2}},
    }


def messages(data) -> list[str]:
    return [str(p) for p in validate_dict(data)]


# -- the invalid corpus ---------------------------------------------------------------------------

def test_invalid_corpus_is_large_enough():
    assert len(INVALID_FILES) >= 15
    for path in INVALID_FILES:
        assert path.with_suffix(".expected").exists(), f"{path.name} has no .expected file"


@pytest.mark.parametrize("path", INVALID_FILES, ids=lambda p: p.stem)
def test_invalid_file_gives_expected_error(path: Path):
    with pytest.raises(InstanceError) as info:
        load(path)
    assert str(info.value) + "\n" == path.with_suffix(".expected").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", INVALID_FILES, ids=lambda p: p.stem)
def test_every_problem_points_into_the_document(path: Path):
    with pytest.raises(InstanceError) as info:
        load(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        data = None
    for problem in info.value.problems:
        assert problem.pointer == "" or problem.pointer.startswith("/")
        assert problem.message and str(problem).startswith("/")
        if data is not None and problem.pointer:
            parent = problem.pointer.rsplit("/", 1)[0]
            assert _resolve(data, parent) is not _MISSING, problem


_MISSING = object()


def _resolve(data, pointer: str):
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return _MISSING
    return data


# -- collecting problems --------------------------------------------------------------------------

def test_three_faults_are_all_reported():
    data = chain()
    data["colour"] = "red"                                  # schema: unknown field
    data["graph"]["streams"][0]["tokens"] = -1              # schema: out of range
    data["graph"]["streams"][1]["dst"] = "stor"             # meaning: unknown kernel
    with pytest.raises(InstanceError) as info:
        from_dict(data)
    assert [p.pointer for p in info.value.problems] == [
        "/colour", "/graph/streams/0/tokens", "/graph/streams/1/dst"]
    assert "did you mean 'store'" in str(info.value)


def test_problems_sorted_with_numeric_indices():
    data = chain()
    data["graph"]["kernels"] = [{"name": f"k{i}", "ii": 1} for i in range(12)]
    data["graph"]["kernels"][2]["ii"] = 0
    data["graph"]["kernels"][10]["ii"] = 0
    data["graph"]["streams"] = []
    assert [p.split(":")[0] for p in messages(data)] == ["/graph/kernels/2/ii", "/graph/kernels/10/ii"]


@pytest.mark.parametrize("bad", [[], 3, None, "x", {}, {"graph": 3},
                                 {"format": "dfopt-instance/1", "name": "x", "problem": "placement", "platform": ""}])
def test_non_objects_are_instance_errors(bad):
    with pytest.raises(InstanceError):
        from_dict(bad)


def test_broken_structure_never_crashes():
    data = chain()
    data["graph"]["kernels"].append("k9")
    data["graph"]["streams"] += [3, None, {"src": 1, "dst": ["x"]}, {"name": "q", "src_type": {"dtype": 1}}]
    data["platform"] = {"kind": "fpga", "slots": [1], "links": [{"a": 2}]}
    data["program"] = {"params": [1], "statements": [{"domain": 3, "reads": "x"}]}
    data["options"] = {"placement": {"pins": {"zz": 3}}}
    problems = validate_dict(data)
    assert len(problems) > 10
    assert all(p.pointer.startswith("/") for p in problems)


# -- semantic checks -------------------------------------------------------------------------------

def test_cycle_is_named_by_kernels_and_streams():
    data = chain("fusion")
    data["graph"]["streams"].append({"name": "back", "src": "store", "dst": "conv1", "tokens": 1})
    assert messages(data) == ["/graph/streams/1: problem 'fusion' needs an acyclic graph, but the kernels form "
                              "the cycle conv1 -> store -> conv1 (streams e1, back); remove one of these streams"]
    data["problem"] = "placement"
    data["platform"] = "u55c"
    assert messages(data) == []     # placement accepts cycles


def test_self_loop_is_a_cycle():
    data = chain()
    data["graph"]["streams"].append({"name": "self", "src": "conv1", "dst": "conv1", "tokens": 1})
    assert "cycle conv1 -> conv1 (streams self)" in messages(data)[0]


@pytest.mark.parametrize("problem, missing", [("fifo", "/graph"), ("memory", "/graph"),
                                              ("schedule", "/program"), ("placement", "/platform")])
def test_required_sections(problem, missing):
    data = chain(problem)
    data.pop(missing[1:], None)
    assert any(m.startswith(f"{missing}: problem '{problem}' needs") for m in messages(data))


def test_placement_needs_slots():
    data = chain("placement")
    data["platform"] = "npu1"
    assert messages(data) == ["/platform: problem 'placement' needs a platform with slots, "
                              "but platform 'npu1' has none"]


def test_types_give_tokens_and_width():
    data = chain()
    del data["graph"]["streams"][0]["tokens"]
    data["graph"]["streams"][0]["src_type"] = T
    stream = from_dict(data).graph.streams["e0"]
    assert (stream.tokens, stream.width) == (8, 4 * 2 * 32)
    data["graph"]["streams"][0]["tokens"] = 8
    data["graph"]["streams"][0]["width"] = 32
    stream = from_dict(data).graph.streams["e0"]
    assert (stream.tokens, stream.width) == (8, 32)


def test_dtype_mismatch_between_ends():
    data = chain("converter")
    data["graph"]["streams"][0].update(src_type=T, dst_type=dict(U, dtype="bf16"))
    del data["graph"]["streams"][0]["tokens"]
    assert messages(data) == ["/graph/streams/0/dst_type/dtype: stream 'e0': dst_type dtype 'bf16' differs from "
                              "src_type dtype 'f32'; both ends view one tensor (a converter changes only its tiling)"]


def test_unknown_dtype_points_at_dtype():
    data = chain()
    data["graph"]["streams"][0]["src_type"] = dict(T, dtype="f13")
    assert messages(data)[0].startswith("/graph/streams/0/src_type/dtype: stream 'e0': src_type unknown dtype 'f13'")


def test_options_unknown_problem_and_closed_problems():
    data = chain()
    data["options"] = {"fifoo": {}, "routing": {"anything": 1}, "schedule": {"levels": []}}
    found = messages(data)
    assert found[0] == ("/options/fifoo: unknown field 'fifoo', did you mean 'fifo'? (expected one of: "
                        "converter, explore, fifo, fusion, mapping, memory, pipeline, placement, schedule, sparse)")
    assert found[1].startswith("/options/routing: unknown field 'routing'")
    assert found[2].startswith("/options/schedule/levels: unknown field 'levels' (expected one of: auto_vectorize,")


def test_options_types():
    data = chain()
    data["options"] = {"fifo": {"time_limit": 0, "seed": -1, "deterministic": "yes", "strategy": "fast"},
                       "fusion": {"c_max": 0}}
    assert messages(data) == [
        "/options/fifo/deterministic: expected true or false, got 'yes'",
        "/options/fifo/seed: expected integer >= 0 and <= 2147483647, got -1",
        "/options/fifo/strategy: unknown strategy 'fast' (expected one of: normal, conservative)",
        "/options/fifo/time_limit: expected number > 0 and <= 10000000, got 0",
        "/options/fusion/c_max: expected integer > 0 and <= 1125899906842624 or null, got 0",
    ]


def test_isl_checks_accept_a_valid_program():
    assert messages(full()) == []


def test_isl_access_must_name_a_known_array():
    data = full()
    data["program"]["statements"][0]["writes"] = ["[N] -> { S0[i] -> B[i] }"]
    assert messages(data) == ["/program/statements/0/writes/0: statement 'S0': the access names unknown "
                              "array 'B' (known arrays: A)"]


# -- round trips -----------------------------------------------------------------------------------

def test_full_instance_round_trips():
    data = full()
    inst = from_dict(data)
    assert to_dict(inst) == data
    assert from_dict(to_dict(inst)) == inst
    assert inst.platform_name == "u55c" and inst.platform == load_preset("u55c")
    assert inst.graph.streams["e"].tokens == 8 and inst.graph.streams["e"].width == 256
    assert inst.options_for() == {} and inst.options_for("fifo")["strategy"] == "conservative"


@pytest.mark.parametrize("path", VALID_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_valid_instance_files_round_trip(path: Path):
    inst = load(path)
    assert inst.path == str(path)
    assert from_dict(to_dict(inst)) == inst


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_presets_round_trip_by_name_and_inline(name: str):
    inst = Instance("p", "converter", graph=DataflowGraph(), platform=load_preset(name))
    assert isinstance(to_dict(inst)["platform"], dict)      # no preset name: written inline
    assert from_dict(to_dict(inst)) == inst
    inst.platform_name = name
    assert to_dict(inst)["platform"] == name
    assert from_dict(to_dict(inst)) == inst
    inst.platform.onchip_bytes = 1                             # changed: written inline again
    assert isinstance(to_dict(inst)["platform"], dict)


def test_dump_and_load(tmp_path: Path):
    inst = from_dict(full())
    target = tmp_path / "sub" / "x.json"
    dump(inst, target)
    assert load(target) == inst
    assert loads(target.read_text()) == inst


def test_graph_helpers():
    g = DataflowGraph([Kernel("a", ii=2), Kernel("b")], [Stream("e", "a", "b", tokens=4, depth=2)])
    d = graph_to_dict(g)
    assert d == {"kernels": [{"name": "a", "ii": 2}, {"name": "b"}],
                 "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 4, "depth": 2}]}
    assert graph_to_dict(graph_from_dict(d)) == d
    with pytest.raises(InstanceError) as info:
        graph_from_dict({"kernels": [{"name": "a"}, {"name": "a"}], "streams": []})
    assert str(info.value) == ("/kernels/1/name: duplicate kernel name 'a' (first at /kernels/0); "
                               "kernel names must be unique")


# -- reading files ---------------------------------------------------------------------------------

def test_missing_file_names_the_path(tmp_path: Path):
    path = tmp_path / "nope.json"
    with pytest.raises(InstanceError) as info:
        load(path)
    assert str(path) in str(info.value) and "no such file" in str(info.value)


def test_json_syntax_error_has_line_and_column():
    with pytest.raises(InstanceError) as info:
        loads('{\n  "name": "x",\n  "problem": }')
    assert str(info.value) == "/: invalid JSON at line 3, column 14: Expecting value"


# -- schemas ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_schemas_are_valid_and_closed(kind: str):
    schema = get_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    open_objects = {"/$defs/kernel/properties/attrs", "/properties/stats", "/$defs/check/properties/details",
                    "/$defs/fifo"}
    open_objects |= {f"/properties/{p}" for p in SECTION_NAMES if p != "fifo"}
    open_objects.add("/$defs/operators/properties/ops/items")   # closed per op kind by its if/then rules
    for where, sub in _subschemas(schema, ""):
        if sub.get("type") == "object" and where not in open_objects:
            assert "additionalProperties" in sub, f"{kind} schema {where} is open"


def _subschemas(node, where):
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from _subschemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _subschemas(value, f"{where}/{i}")


def test_schema_lists_match_the_registry():
    from dfopt.models.registry import names

    assert tuple(get_schema("instance")["$defs"]["problem"]["enum"]) == PROBLEMS == names()
    assert tuple(get_schema("solution")["properties"]["problem"]["enum"]) == PROBLEMS
    assert set(SECTION_NAMES) <= set(get_schema("solution")["properties"])
    assert "routing" not in get_schema("solution")["properties"] and "routing" not in PROBLEMS


def test_unknown_schema_kind_lists_valid_ones():
    with pytest.raises(InstanceError, match="expected one of: instance, solution"):
        get_schema("instances")


# -- solutions -------------------------------------------------------------------------------------

def _solution() -> Solution:
    from dfopt.models.fifo import FifoDepths

    s = Solution("chain3", "fifo", "optimal", objective=3, bound=3, formulation="potentials", solver="highs",
                 wall_time_s=0.01, checks=[Check("simulated", True)], stats={"vars": 3},
                 decision=FifoDepths({"e0": 2, "e1": 1}))
    s.sections["fifo"] = {"depths": {"e0": 2, "e1": 1}, "start": {"load": 0}, "makespan": 40,
                          "total_depth": 3, "safe": True, "latency_preserving": True, "note": "extra ok"}
    return s


def test_solution_round_trip(tmp_path: Path):
    sol = _solution()
    assert solution_from_dict(sol.to_dict()) == sol
    path = tmp_path / "s.json"
    instance_module.dump_solution(sol, path)
    assert load_solution(path) == sol


def test_bad_solution_lists_every_problem():
    d = _solution().to_dict()
    d["status"] = "solved"
    d["fifo"]["depths"]["e0"] = 0
    d["checks"][0]["ok"] = "yes"
    d["colour"] = 1
    with pytest.raises(InstanceError) as info:
        solution_from_dict(d)
    assert str(info.value).splitlines() == [
        "/checks/0/ok: expected true or false, got 'yes'",
        "/colour: unknown field 'colour' (expected one of: bound, checks, converter, fifo, format, formulation, "
        "fusion, instance, limit_reached, mapping, memory, objective, pipeline, placement, problem, rejected, "
        "schedule, seed, solver, sparse, stats, status, wall_time_s)",
        "/fifo/depths/e0: expected integer >= 1 and <= 1099511627776, got 0",
        "/status: unknown status 'solved' (expected one of: optimal, feasible, time_limit, infeasible, error)",
    ]


def test_missing_solution_file(tmp_path: Path):
    with pytest.raises(InstanceError, match="cannot read solution file"):
        load_solution(tmp_path / "none.json")


# -- docs ------------------------------------------------------------------------------------------

def test_validate_dict_does_not_mutate():
    data = full()
    before = copy.deepcopy(data)
    validate_dict(data)
    from_dict(data)
    assert data == before
