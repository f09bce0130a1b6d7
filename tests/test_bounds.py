"""Bounded input: every number bounded, non-finite numbers refused, memory estimated before
allocation. Each fuzz case found on the command line ends in exit 2 with a message that names the
field and the bound, never in exit 1 or a traceback."""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt.cli import main
from dfopt.errors import InstanceError, ResourceLimitError
from dfopt.instance import Instance, from_dict, load, load_solution, loads, solution_from_dict, validate_dict
from dfopt.instance.budget import DEFAULT_MAX_MEMORY, check_budget, estimate_memory
from dfopt.instance.semantics import OFFSET_LIMIT, makespan_limit
from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.ir.platform import load_preset
from dfopt.schema import _load, schema_issues
from dfopt.schema.fast import plainly_valid

ROOT = Path(__file__).resolve().parents[1]
INVALID = ROOT / "instances" / "invalid"
SHIPPED = sorted(p for p in (ROOT / "instances").rglob("*.json") if INVALID not in p.parents)
PLATFORMS = ROOT / "dfopt" / "ir" / "platforms"

P32, P40, I31 = 2**32, 2**40, 2**31 - 1
T_MAX = str(P40)           # tokens, depths, times
W_MAX = str(P32)           # widths, resource counts


# -- instances to break ----------------------------------------------------------------------------

ITYPE = {"dtype": "f32", "shape": [8, 8], "element": [4, 2], "tripcounts": [4, 2], "steps": [2, 4], "map": [1, 0]}


def graph_instance(problem: str = "fifo") -> dict:
    return {"format": "dfopt-instance/1", "name": "pair", "problem": problem,
            "graph": {"kernels": [{"name": "a", "delay": 2, "loops": [{"name": "i", "tripcount": 8}],
                                   "resources": {"lut": 100, "bytes": 64},
                                   "buffers": [{"name": "buf", "width": 32, "depth": 64}]},
                                  {"name": "b", "ii": 2}],
                      "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 16},
                                  {"name": "t", "src": "a", "dst": "b", "src_type": copy.deepcopy(ITYPE),
                                   "dst_type": copy.deepcopy(ITYPE)}]}}


def preset_dict(name: str) -> dict:
    return json.loads((PLATFORMS / f"{name}.json").read_text())


def placement_instance() -> dict:
    data = graph_instance("placement")
    data["platform"] = preset_dict("u55c")
    return data


def mapping_instance() -> dict:
    data = graph_instance("mapping")
    data["platform"] = preset_dict("npu1")
    return data


def shipped(rel: str) -> dict:
    return json.loads((ROOT / "instances" / rel).read_text())


BASES = {"graph": graph_instance, "placement": placement_instance, "mapping": mapping_instance,
         "schedule": lambda: shipped("schedule/gemm.json"), "pipeline": lambda: shipped("pipeline/ffn.json")}


def put(data: dict, path: tuple, value) -> dict:
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


def run(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def assert_refused(capsys, path: Path, *fragments: str) -> None:
    """Both ``dfopt validate`` and ``dfopt solve`` exit 2 with every fragment in their message."""
    for command in ("validate", "solve"):
        code, err = run(capsys, command, path)
        assert code == 2, (command, err)
        assert "Traceback" not in err and "internal error" not in err, err
        for fragment in fragments:
            assert fragment in err, (command, fragment, err)


# -- the fuzz cases --------------------------------------------------------------------------------

FUZZ = [
    ("tokens_2_62", ("graph", "streams", 0, "tokens"), 2**62, "/graph/streams/0/tokens", f"<= {T_MAX}"),
    ("ii_1e308", ("graph", "kernels", 1, "ii"), 1e308, "/graph/kernels/1/ii", f"<= {T_MAX}, got 1e+308"),
    ("width_10_40", ("graph", "streams", 0, "width"), 10**40, "/graph/streams/0/width", f"<= {W_MAX}"),
    ("width_2_64_plus_1", ("graph", "streams", 0, "width"), 2**64 + 1, "/graph/streams/0/width",
     f"<= {W_MAX}, got 18446744073709551617"),
    ("tokens_1e40", ("graph", "streams", 0, "tokens"), 1e40, "/graph/streams/0/tokens", f"<= {T_MAX}, got 1e+40"),
    ("ii_1e18", ("graph", "kernels", 1, "ii"), 10**18, "/graph/kernels/1/ii", f"<= {T_MAX}"),
]


@pytest.mark.parametrize("name, path, value, pointer, bound", FUZZ, ids=[f[0] for f in FUZZ])
def test_fuzz_number_exits_2_naming_field_and_bound(tmp_path, capsys, name, path, value, pointer, bound):
    file = tmp_path / f"{name}.json"
    file.write_text(json.dumps(put(graph_instance(), path, value)))
    assert_refused(capsys, file, pointer, bound)


RAW = [
    ("infinity_bytes", '"bytes": 64', '"bytes": Infinity',
     "/graph/kernels/0/resources/bytes: expected a finite number, got Infinity"),
    ("nan_tokens", '"tokens": 16', '"tokens": NaN', "/graph/streams/0/tokens: expected a finite number, got NaN"),
    ("minus_infinity_delay", '"delay": 2', '"delay": -Infinity',
     "/graph/kernels/0/delay: expected a finite number, got -Infinity"),
    ("float_overflow", '"lut": 100', '"lut": 1e400', "/graph/kernels/0/resources/lut: expected a finite number, got 1e400"),
    ("too_many_digits", '"tokens": 16', '"tokens": ' + "9" * 5000,
     "/graph/streams/0/tokens: expected a number, got an integer of 5000 digits"),
]


@pytest.mark.parametrize("name, old, new, message", RAW, ids=[r[0] for r in RAW])
def test_non_finite_literal_exits_2_with_its_pointer(tmp_path, capsys, name, old, new, message):
    text = json.dumps(graph_instance())
    assert old in text
    file = tmp_path / f"{name}.json"
    file.write_text(text.replace(old, new, 1))
    assert_refused(capsys, file, message)


def test_every_non_finite_number_is_reported_at_once():
    text = (json.dumps(graph_instance()).replace('"bytes": 64', '"bytes": Infinity')
            .replace('"tokens": 16', '"tokens": NaN').replace('"ii": 2', '"ii": -Infinity'))
    with pytest.raises(InstanceError) as info:
        loads(text)
    assert [str(p) for p in info.value.problems] == [
        "/graph/kernels/0/resources/bytes: expected a finite number, got Infinity",
        "/graph/kernels/1/ii: expected a finite number, got -Infinity",
        "/graph/streams/0/tokens: expected a finite number, got NaN",
    ]


def test_from_dict_refuses_nan_and_infinity_with_pointers():
    data = put(put(graph_instance(), ("graph", "kernels", 0, "resources", "bytes"), float("inf")),
               ("graph", "kernels", 1, "ii"), float("nan"))
    with pytest.raises(InstanceError) as info:
        from_dict(data)
    assert [str(p) for p in info.value.problems] == [
        "/graph/kernels/0/resources/bytes: expected a finite number, got Infinity",
        "/graph/kernels/1/ii: expected a finite number, got NaN",
    ]
    assert [p.pointer for p in validate_dict(data)] == ["/graph/kernels/0/resources/bytes", "/graph/kernels/1/ii"]


# -- products and horizons -------------------------------------------------------------------------

def test_stream_end_offset_beyond_the_limit_names_stream_value_and_bound(tmp_path, capsys):
    data = put(put(graph_instance(), ("graph", "kernels", 1, "ii"), P40), ("graph", "streams", 0, "tokens"), 2**20)
    file = tmp_path / "offset.json"
    file.write_text(json.dumps(data))
    assert_refused(capsys, file, "/graph/streams/0: stream 'e'", f"= {(2**20 - 1) * P40} cycles", "2^50")


def test_write_end_offset_counts_the_delay():
    data = put(put(graph_instance(), ("graph", "kernels", 0, "delay"), P40), ("graph", "kernels", 0, "ii"), P40)
    data["graph"]["streams"][0]["tokens"] = 1025
    msgs = [str(p) for p in validate_dict(data)]
    assert len(msgs) == 1 and msgs[0].startswith("/graph/streams/0: stream 'e': its last write comes delay + "
                                                 "(tokens - 1) x produce_ii")
    assert str(P40 + 1024 * P40) in msgs[0]


def test_fifo_bits_beyond_2_53(tmp_path, capsys):
    data = put(put(graph_instance(), ("graph", "streams", 0, "width"), P32), ("graph", "streams", 0, "tokens"), 2**30)
    file = tmp_path / "bits.json"
    file.write_text(json.dumps(data))
    assert_refused(capsys, file, "/graph/streams/0/tokens: stream 'e': tokens x width", "2^53")


def test_depth_and_buffer_bits_beyond_2_53():
    data = put(put(graph_instance(), ("graph", "streams", 0, "width"), P32), ("graph", "streams", 0, "depth"), 2**30)
    put(data, ("graph", "kernels", 0, "buffers", 0), {"name": "huge", "width": P32, "depth": P40})
    msgs = [str(p) for p in validate_dict(data)]
    assert msgs[0].startswith("/graph/kernels/0/buffers/0: kernel 'a': buffer 'huge' holds width x depth")
    assert msgs[1].startswith("/graph/streams/0/depth: stream 'e': depth x width")
    assert all("2^53" in m for m in msgs)


def test_makespan_bound_sums_the_kernels():
    """Each stream is within 2^50, but the sum over the kernels is not."""
    n, ii, tokens = 8, 2**38, 2**10
    kernels = [{"name": f"k{i}", "ii": ii} for i in range(n)]
    streams = [{"name": f"e{i}", "src": f"k{i}", "dst": f"k{i + 1}", "tokens": tokens} for i in range(n - 1)]
    data = {"format": "dfopt-instance/1", "name": "long", "problem": "fifo",
            "graph": {"kernels": kernels, "streams": streams}}
    msgs = [str(p) for p in validate_dict(data)]
    assert len(msgs) == 1 and msgs[0].startswith("/graph: the graph's makespan bound is ")
    assert "2^50" in msgs[0] and "for 8 kernels" in msgs[0]
    data["graph"]["streams"] = streams[:3]
    assert validate_dict(data) == []


def test_makespan_limit_shrinks_with_the_kernel_count():
    assert makespan_limit(1) == OFFSET_LIMIT
    assert makespan_limit(10**5) * (10**5 + 1) <= 2**61 < (makespan_limit(10**5) + 1) * (10**5 + 1)


def test_itensor_products_are_bounded():
    big = {"dtype": "f64", "shape": [2**31 - 1, 2**20], "element": [2**31 - 1, 1], "tripcounts": [1, 2**20],
           "steps": [2**31 - 1, 1], "map": [0, 1]}
    data = graph_instance()
    data["graph"]["streams"][1]["src_type"] = big
    data["graph"]["streams"][1]["dst_type"] = copy.deepcopy(big)
    msgs = [str(p) for p in validate_dict(data)]
    assert any(m.startswith("/graph/streams/1/src_type/element: stream 't': src_type tokens are ") and "2^32" in m
               for m in msgs), msgs
    many = dict(ITYPE, shape=[2**21, 2**21], element=[1, 1], tripcounts=[2**21, 2**21], steps=[1, 1], map=[0, 1])
    data["graph"]["streams"][1]["src_type"] = many
    data["graph"]["streams"][1]["dst_type"] = copy.deepcopy(many)
    msgs = [str(p) for p in validate_dict(data)]
    assert any(m.startswith("/graph/streams/1/src_type/tripcounts: stream 't': src_type streams 4398046511104 "
                            "tokens") and "2^40" in m for m in msgs), msgs


def test_operator_tensor_elements_are_bounded():
    data = shipped("pipeline/ffn.json")
    data["operators"]["tensors"]["x"]["shape"] = [2**21, 2**20]
    msgs = [str(p) for p in validate_dict(data)]
    assert any(m.startswith("/operators/tensors/x/shape: tensor 'x' has 2199023255552 elements") for m in msgs), msgs


@pytest.mark.slow  # two million kernels
def test_resource_sums_are_bounded():
    kernels = [{"name": f"k{i}", "resources": {"lut": P32}} for i in range(2**21 + 1)]
    data = {"format": "dfopt-instance/1", "name": "wide", "problem": "fusion", "graph": {"kernels": kernels}}
    from dfopt.instance.common import _Faulty
    from dfopt.instance.semantics import _resource_sum_issues

    issues = _resource_sum_issues(list(enumerate(data["graph"]["kernels"])), ("graph",), _Faulty([]))
    assert issues and issues[0][0] == ("graph", "kernels") and "lut" in issues[0][1] and "2^53" in issues[0][1]


def test_near_the_bounds_a_fifo_instance_solves_and_passes_its_checks(tmp_path, capsys):
    """ii 2^40 (the schema's bound) with offsets close to 2^50: the depths pass their own checks."""
    data = {"format": "dfopt-instance/1", "name": "near", "problem": "fifo",
            "graph": {"kernels": [{"name": "a", "delay": P40}, {"name": "b", "ii": P40 // 4, "delay": 3},
                                  {"name": "c", "ii": 3 * (P40 // 4) + 7}],
                      "streams": [{"name": "e1", "src": "a", "dst": "b", "tokens": 900},
                                  {"name": "e2", "src": "b", "dst": "c", "tokens": 800, "width": 2**30},
                                  {"name": "e3", "src": "a", "dst": "c", "tokens": 700, "width": 8}]}}
    file, out = tmp_path / "near.json", tmp_path / "sol.json"
    file.write_text(json.dumps(data))
    code, err = run(capsys, "solve", file, "-o", out)
    assert code == 0, err
    sol = json.loads(out.read_text())
    assert sol["fifo"]["depths"]["e2"] >= 1 and sol["fifo"]["makespan"] < OFFSET_LIMIT
    code, err = run(capsys, "check", file, out)
    assert code == 0, err


# -- one case per bounded field family -------------------------------------------------------------

FAMILIES = [
    # (id, base, path, value, pointer, bound)
    ("kernel_delay", "graph", ("graph", "kernels", 0, "delay"), P40 + 1, "/graph/kernels/0/delay", f">= 0 and <= {T_MAX}"),
    ("kernel_ii", "graph", ("graph", "kernels", 1, "ii"), P40 + 1, "/graph/kernels/1/ii", f">= 1 and <= {T_MAX}"),
    ("kernel_latency", "graph", ("graph", "kernels", 0, "latency"), 10**13, "/graph/kernels/0/latency", f"<= {T_MAX}"),
    ("resources_lut", "graph", ("graph", "kernels", 0, "resources", "lut"), 1e12, "/graph/kernels/0/resources/lut",
     f"number >= 0 and <= {W_MAX}"),
    ("resources_bytes", "graph", ("graph", "kernels", 0, "resources", "bytes"), 2**41, "/graph/kernels/0/resources/bytes",
     f"number >= 0 and <= {T_MAX}"),
    ("loop_tripcount", "graph", ("graph", "kernels", 0, "loops", 0, "tripcount"), 2**31,
     "/graph/kernels/0/loops/0/tripcount", f"<= {I31}"),
    ("loop_step", "graph", ("graph", "kernels", 0, "loops", 0, "step"), 2**31, "/graph/kernels/0/loops/0/step", f"<= {I31}"),
    ("buffer_width", "graph", ("graph", "kernels", 0, "buffers", 0, "width"), P32 + 1,
     "/graph/kernels/0/buffers/0/width", f"<= {W_MAX}"),
    ("buffer_depth", "graph", ("graph", "kernels", 0, "buffers", 0, "depth"), P40 + 1,
     "/graph/kernels/0/buffers/0/depth", f"<= {T_MAX}"),
    ("stream_tokens", "graph", ("graph", "streams", 0, "tokens"), P40 + 1, "/graph/streams/0/tokens", f"<= {T_MAX}"),
    ("stream_width", "graph", ("graph", "streams", 0, "width"), P32 + 1, "/graph/streams/0/width", f"<= {W_MAX}"),
    ("stream_produce_ii", "graph", ("graph", "streams", 0, "produce_ii"), P40 + 1, "/graph/streams/0/produce_ii",
     f"<= {T_MAX}"),
    ("stream_consume_ii", "graph", ("graph", "streams", 0, "consume_ii"), 0, "/graph/streams/0/consume_ii",
     f">= 1 and <= {T_MAX}, got 0"),
    ("stream_depth", "graph", ("graph", "streams", 0, "depth"), P40 + 1, "/graph/streams/0/depth", f"<= {T_MAX}"),
    ("stream_converter_bytes", "graph", ("graph", "streams", 0, "converter_bytes"), P40 + 1,
     "/graph/streams/0/converter_bytes", f"<= {T_MAX}"),
    ("itensor_shape", "graph", ("graph", "streams", 1, "src_type", "shape", 0), 2**31,
     "/graph/streams/1/src_type/shape/0", f"<= {I31}"),
    ("itensor_element", "graph", ("graph", "streams", 1, "dst_type", "element", 1), 2**31,
     "/graph/streams/1/dst_type/element/1", f"<= {I31}"),
    ("itensor_tripcounts", "graph", ("graph", "streams", 1, "src_type", "tripcounts", 0), 2**40,
     "/graph/streams/1/src_type/tripcounts/0", f"<= {I31}"),
    ("itensor_steps", "graph", ("graph", "streams", 1, "src_type", "steps", 1), 2**31,
     "/graph/streams/1/src_type/steps/1", f"<= {I31}"),
    ("itensor_map", "graph", ("graph", "streams", 1, "src_type", "map", 0), 32, "/graph/streams/1/src_type/map/0",
     "<= 31"),
    ("slot_resources", "placement", ("platform", "slots", 0, "resources", "dsp"), 2**33,
     "/platform/slots/0/resources/dsp", f"<= {W_MAX}"),
    ("slot_x", "placement", ("platform", "slots", 1, "x"), 2000, "/platform/slots/1/x", ">= -1024 and <= 1024"),
    ("link_wires", "placement", ("platform", "links", 0, "wires"), P32 + 1, "/platform/links/0/wires", f"<= {W_MAX}"),
    ("onchip_bytes", "placement", ("platform", "onchip_bytes"), 2**41, "/platform/onchip_bytes", f"<= {T_MAX}"),
    ("memory_bits", "placement", ("platform", "memory", "uram", "bits"), P32 + 1, "/platform/memory/uram/bits",
     f"<= {W_MAX}"),
    ("memory_shapes", "placement", ("platform", "memory", "bram18", "shapes", 0, 0), P32 + 1,
     "/platform/memory/bram18/shapes/0/0", f"<= {W_MAX}"),
    ("npu_columns", "mapping", ("platform", "npu", "columns"), 5000, "/platform/npu/columns", "<= 1024"),
    ("npu_compute_rows", "mapping", ("platform", "npu", "rows", "compute", 0), 4096, "/platform/npu/rows/compute/0",
     "<= 1023"),
    ("npu_tile_memory", "mapping", ("platform", "npu", "compute_tile", "memory_bytes"), P32 + 1,
     "/platform/npu/compute_tile/memory_bytes", f"<= {W_MAX}"),
    ("npu_tile_dma", "mapping", ("platform", "npu", "mem_tile", "dma_in"), 2**17, "/platform/npu/mem_tile/dma_in",
     "<= 65536"),
    ("program_sizes", "schedule", ("program", "sizes", "large", "NI"), 2**31, "/program/sizes/large/NI", f"<= {I31}"),
    ("program_array_shape", "schedule", ("program", "arrays", "C", "shape", 0), 2**31, "/program/arrays/C/shape/0",
     f"<= {I31}"),
    ("operator_dims", "pipeline", ("operators", "tensors", "x", "shape", 0), 2**31, "/operators/tensors/x/shape/0",
     f"<= {I31}"),
    ("operator_scale", "pipeline", ("operators", "ops", 0, "scale"), 1e30, "/operators/ops/0/scale", "<= 16777216"),
]


@pytest.mark.parametrize("name, base, path, value, pointer, bound", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_field_family_is_bounded(tmp_path, capsys, name, base, path, value, pointer, bound):
    file = tmp_path / f"{name}.json"
    file.write_text(json.dumps(put(BASES[base](), path, value)))
    assert_refused(capsys, file, pointer, bound)


@pytest.mark.parametrize("base", sorted(BASES))
def test_the_family_bases_are_valid(base):
    assert validate_dict(BASES[base]()) == []


def test_scalar_values_are_bounded_by_their_dtype():
    data = shipped("schedule/gemm.json")
    data["program"]["scalars"]["alpha"] = {"dtype": "i32", "value": 2**31}
    data["program"]["scalars"]["beta"] = {"dtype": "f64", "value": 10**400}
    msgs = [str(p) for p in validate_dict(data)]
    assert "/program/scalars/alpha/value: expected integer >= -2147483648 and <= 2147483647, got 2147483648" in msgs
    assert any(m.startswith("/program/scalars/beta/value: expected number >= -1.7976931348623157e+308") for m in msgs)


def test_every_number_in_the_schemas_is_bounded():
    """Every integer and number (outside the options, generated from the models) has both bounds."""
    def walk(node, path, out):
        if isinstance(node, dict):
            kinds = node.get("type")
            kinds = [kinds] if isinstance(kinds, str) else (kinds or [])
            if {"integer", "number"} & set(kinds):
                if "maximum" not in node or not {"minimum", "exclusiveMinimum"} & set(node):
                    out.append("/".join(map(str, path)))
            for key, value in node.items():
                if path == ("$defs",) and key == "options":
                    continue
                walk(value, path + (key,), out)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, path + (i,), out)
        return out

    assert walk(_load("instance"), (), []) == []
    assert walk(_load("solution"), (), []) == []


def test_schema_messages_print_the_bound():
    issues = schema_issues({"kernels": [{"name": "a", "ii": 0}]}, "instance", "graph")
    assert issues == [(("kernels", 0, "ii"), f"expected integer >= 1 and <= {T_MAX}, got 0")]


# -- the fast pre-check agrees with the schema -----------------------------------------------------

def _maxima(definition: str) -> list:
    props = _load("instance")["$defs"][definition]["properties"]
    return [(k, v) for k, v in props.items() if "maximum" in v]


@pytest.mark.parametrize("definition", ["kernel", "stream"])
def test_fast_check_never_vouches_for_an_out_of_bound_entry(definition):
    base = {"kernel": {"name": "k"}, "stream": {"name": "e", "src": "a", "dst": "b", "tokens": 1}}[definition]
    schema = _load("instance")["$defs"][definition]
    for key, prop in _maxima(definition):
        at_max = dict(base, **{key: prop["maximum"]})
        assert plainly_valid(at_max, schema), key
        for bad in (prop["maximum"] + 1, float(prop["maximum"]) * 2, float("inf"), float("nan"), float(prop["minimum"])):
            assert not plainly_valid(dict(base, **{key: bad}), schema), (key, bad)


ENTRY_VALUES = st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=True),
                         st.text(max_size=3), st.booleans(), st.none())


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["name", "delay", "ii", "latency", "op"]), ENTRY_VALUES, max_size=5))
def test_fast_check_implies_schema_validity_for_kernels(entry):
    entry.setdefault("name", "k")
    if plainly_valid(entry, _load("instance")["$defs"]["kernel"]):
        assert schema_issues({"kernels": [entry]}, "instance", "graph") == []


# -- hypothesis: out-of-bound numbers --------------------------------------------------------------

def out_of_bounds(lo: int, hi: int):
    """Integers and floats above ``hi`` or below ``lo`` (integral floats too: JSON counts them as
    integers)."""
    return st.one_of(st.integers(min_value=hi + 1, max_value=2**200), st.integers(min_value=-2**80, max_value=lo - 1),
                     st.floats(min_value=float(hi) * 1.000001, max_value=1e308),
                     st.floats(min_value=-1e308, max_value=float(lo) - 1),
                     st.integers(min_value=hi + 1, max_value=2**70).map(float))


FIELDS = {"kernel ii": (("graph", "kernels", 1, "ii"), 1, P40),
          "stream tokens": (("graph", "streams", 0, "tokens"), 0, P40),
          "stream width": (("graph", "streams", 0, "width"), 1, P32),
          "resources bytes": (("graph", "kernels", 0, "resources", "bytes"), 0, P40)}


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_random_out_of_bound_numbers_are_refused_with_pointer_and_bound(field):
    path, lo, hi = FIELDS[field]
    pointer = "/" + "/".join(map(str, path))

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(out_of_bounds(lo, hi))
    def check(value):
        problems = validate_dict(put(graph_instance(), path, value))
        assert problems and problems[0].pointer == pointer, problems
        assert f"<= {hi}" in problems[0].message

    check()


@settings(max_examples=60, deadline=None)
@given(out_of_bounds(1, P40))
def test_random_out_of_bound_solution_depths_are_refused(value):
    sol = {"format": "dfopt-solution/1", "instance": "pair", "problem": "fifo", "status": "feasible",
           "fifo": {"depths": {"e": value}}}
    with pytest.raises(InstanceError) as info:
        solution_from_dict(sol)
    assert info.value.problems[0].pointer == "/fifo/depths/e" and f"<= {P40}" in info.value.problems[0].message


# -- solutions ---------------------------------------------------------------------------------------

def test_check_with_a_solution_depth_of_1e40_exits_2(tmp_path, capsys):
    inst, sol = tmp_path / "pair.json", tmp_path / "sol.json"
    inst.write_text(json.dumps(graph_instance()))
    sol.write_text(json.dumps({"format": "dfopt-solution/1", "instance": "pair", "problem": "fifo",
                               "status": "feasible", "fifo": {"depths": {"e": 1e40, "t": 2}}}))
    code, err = run(capsys, "check", inst, sol)
    assert code == 2 and "/fifo/depths/e" in err and f"<= {T_MAX}" in err and "Traceback" not in err


def test_solution_reader_refuses_non_finite_numbers_with_pointers(tmp_path):
    sol = tmp_path / "sol.json"
    sol.write_text('{"format": "dfopt-solution/1", "instance": "pair", "problem": "fifo", "status": "feasible", '
                   '"objective": NaN, "bound": -Infinity, "wall_time_s": 1e999}')
    with pytest.raises(InstanceError) as info:
        load_solution(sol)
    assert [str(p) for p in info.value.problems] == [
        "/bound: expected a finite number, got -Infinity",
        "/objective: expected a finite number, got NaN",
        "/wall_time_s: expected a finite number, got 1e999 (beyond the float64 range, about 1.8e308)",
    ]
    with pytest.raises(InstanceError, match="/objective: expected a finite number, got Infinity"):
        solution_from_dict({"format": "dfopt-solution/1", "instance": "pair", "problem": "fifo",
                            "status": "feasible", "objective": math.inf})


# -- the memory budget -------------------------------------------------------------------------------

def pair_instance(tokens: int) -> Instance:
    return from_dict(put(graph_instance(), ("graph", "streams", 0, "tokens"), tokens))


def test_tokens_at_the_schema_bound_are_refused_by_the_budget():
    inst = pair_instance(P40)                     # valid: the schema and the products allow it
    with pytest.raises(ResourceLimitError) as info:
        check_budget(inst, DEFAULT_MAX_MEMORY)
    err = info.value
    assert isinstance(err, InstanceError) and err.exit_code == 2
    text = str(err)
    assert text.startswith("/graph/streams: the witness schedules")
    assert "TiB" in text and "above the memory budget of 8.00 GiB" in text
    assert "raise the budget with --max-memory BYTES, or shrink the instance" in text
    assert err.part == "witness schedules" and err.budget == DEFAULT_MAX_MEMORY and err.estimate > 2**47
    check_budget(inst, 2**50)                     # a larger budget lets it through


def test_the_budget_names_the_largest_part_and_the_total():
    inst = pair_instance(10**7)
    parts = dict((what.split(" (")[0], size) for what, size in estimate_memory(inst))
    assert set(parts) == {"graph objects", "compiled event arrays", "simulated event times", "witness schedules"}
    assert parts["witness schedules"] == 72 * 2 * (10**7 + 8)
    with pytest.raises(ResourceLimitError, match=r"about 1\.34 GiB \(\d\.\d\d GiB for the whole solve\), above "
                                                 r"the memory budget of 1\.00 GiB"):
        check_budget(inst, 2**30)


def test_fusion_of_100k_kernels_is_refused_cheaply():
    graph = DataflowGraph([Kernel(f"k{i}", resources={"bytes": 10}) for i in range(100_000)],
                          [Stream(f"e{i}", f"k{i}", f"k{i + 1}", tokens=4) for i in range(99_999)])
    inst = Instance("wide", "fusion", graph=graph, options={"fusion": {"c_max": 10**6}})
    t = time.perf_counter()
    parts = estimate_memory(inst)
    assert time.perf_counter() - t < 1.0
    assert dict((w.split(" (")[0], b) for w, b in parts)["fusion ancestor matrix"] == 10**10
    with pytest.raises(ResourceLimitError, match="the fusion ancestor matrix .* 9.31 GiB"):
        check_budget(inst)


def test_a_100k_kernel_fifo_graph_is_estimated_cheaply_and_fits():
    graph = DataflowGraph([Kernel(f"k{i}") for i in range(100_000)],
                          [Stream(f"e{i}", f"k{i}", f"k{i + 1}", tokens=16) for i in range(99_999)])
    inst = Instance("chain", "fifo", graph=graph)
    t = time.perf_counter()
    check_budget(inst)
    assert time.perf_counter() - t < 1.0


def test_exact_placement_model_is_counted_and_a_heuristic_is_not():
    graph = DataflowGraph([Kernel(f"k{i}") for i in range(50_000)],
                          [Stream(f"e{i}", f"k{i}", f"k{i + 1}", tokens=4) for i in range(49_999)])
    inst = Instance("wide", "placement", graph=graph, platform=load_preset("u55c"), platform_name="u55c")
    with pytest.raises(ResourceLimitError) as info:
        check_budget(inst, 2**30)
    assert info.value.part == "placement exact model" and "--formulation greedy" in str(info.value)
    check_budget(inst, 2**30, formulation="greedy")
    inst.options = {"placement": {"formulation": "greedy"}}
    check_budget(inst, 2**30)


def test_mapping_reachability_grows_with_the_square_of_the_nodes():
    graph = DataflowGraph([Kernel(f"n{i}") for i in range(20_000)],
                          [Stream(f"e{i}", f"n{i}", f"n{i + 1}", tokens=1) for i in range(19_999)])
    inst = Instance("chain", "mapping", graph=graph, platform=load_preset("npu1"), platform_name="npu1")
    with pytest.raises(ResourceLimitError, match="mapping reachability"):
        check_budget(inst)


def test_pipeline_budget_tiles_the_operators():
    inst = load(ROOT / "instances" / "pipeline" / "gpt2-block.json")
    names = [what.split(" (")[0] for what, _ in estimate_memory(inst)]
    assert "pipeline tiled graph" in names and "pipeline witness schedules" in names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT / "instances")))
def test_every_shipped_instance_validates_and_fits_the_default_budget(path):
    inst = load(path)
    check_budget(inst, DEFAULT_MAX_MEMORY)
    assert sum(size for _, size in estimate_memory(inst)) < DEFAULT_MAX_MEMORY // 64


def test_integral_floats_count_as_integers_and_reach_the_models_as_ints():
    data = mapping_instance()
    data["platform"]["npu"]["columns"] = 5.0
    data["platform"]["npu"]["rows"]["compute"] = [2.0, 3.0, 4.0, 5.0]
    data["graph"]["kernels"][1]["ii"] = 2.0
    inst = from_dict(data)
    assert type(inst.platform.npu["columns"]) is int and inst.platform.npu["rows"]["compute"] == [2, 3, 4, 5]
    assert type(inst.graph.kernels["b"].ii) is int
