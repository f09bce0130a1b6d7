"""Property tests: random valid instances round-trip; random damage never escapes as a traceback."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt.errors import InstanceError
from dfopt.instance import from_dict, loads, to_dict, validate_dict

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TYPES = [  # valid itensor types with their token counts
    ({"dtype": "f32", "shape": [8, 8], "element": [4, 2], "tripcounts": [4, 2], "steps": [2, 4], "map": [1, 0]}, 8),
    ({"dtype": "i8", "shape": [16], "element": [4], "tripcounts": [4], "steps": [4], "map": [0]}, 4),
    ({"dtype": "bf16", "shape": [4, 6], "element": [4, 3], "tripcounts": [2, 3], "steps": [3, 1], "map": [None, 0]}, 6),
]


@st.composite
def kernels(draw) -> list[dict]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        k = {"name": f"k{i}"}
        if draw(st.booleans()):
            k["op"] = draw(st.sampled_from(["matmul", "dma_in", "softmax"]))
        for key, lo in (("delay", 1), ("ii", 2), ("latency", 0)):
            if draw(st.booleans()):
                k[key] = draw(st.integers(lo, 20))
        if draw(st.booleans()):
            k["resources"] = draw(st.dictionaries(st.sampled_from(["lut", "dsp", "bytes"]),
                                                  st.integers(0, 10**6), min_size=1))
        out.append(k)
    return out


@st.composite
def streams(draw, n: int) -> list[dict]:
    out = []
    if n < 2:
        return out
    for j in range(draw(st.integers(0, 8))):
        src = draw(st.integers(0, n - 2))
        s = {"name": f"e{j}", "src": f"k{src}", "dst": f"k{draw(st.integers(src + 1, n - 1))}"}
        typed = draw(st.sampled_from([None, *range(len(TYPES))]))
        if typed is None:
            s["tokens"] = draw(st.integers(0, 64))
        if draw(st.booleans()):
            s["width"] = draw(st.sampled_from([8, 64, 512]))
        for key in ("produce_ii", "consume_ii", "depth"):
            if draw(st.booleans()):
                s[key] = draw(st.integers(1, 9))
        if typed is not None:
            s["src_type"] = TYPES[typed][0]
            if draw(st.booleans()):
                s["dst_type"] = TYPES[typed][0]
        out.append(s)
    return out


@st.composite
def instances(draw) -> dict:
    ks = draw(kernels())
    data = {"format": "dfopt-instance/1", "name": draw(st.text("abcxyz_", min_size=1, max_size=8)),
            "problem": draw(st.sampled_from(["fifo", "fusion", "converter"])),
            "graph": {"kernels": ks, "streams": draw(streams(len(ks)))}}
    if draw(st.booleans()):
        data["platform"] = draw(st.sampled_from(["u55c", "u280", "npu1"]))
    if draw(st.booleans()):
        data["options"] = {"fifo": {"strategy": draw(st.sampled_from(["normal", "conservative"])),
                                    "seed": draw(st.integers(0, 9))}}
    return data


@SETTINGS
@given(instances())
def test_random_valid_instances_round_trip(data):
    inst = from_dict(data)
    assert to_dict(inst) == data
    assert from_dict(json.loads(json.dumps(to_dict(inst)))) == inst


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, path + (i,))


RICH = {  # a schedule instance with a program and an inline platform, to damage as well
    "format": "dfopt-instance/1", "name": "rich", "problem": "schedule",
    "platform": {"kind": "fpga", "slots": [{"name": "A", "resources": {"lut": 10}}, {"name": "B", "x": 1}],
                 "links": [{"a": "A", "b": "B", "wires": 5}], "memory": {"bram18": {"bits": 18432,
                                                                                    "shapes": [[1024, 18]]}}},
    "graph": {"kernels": [{"name": "k0"}, {"name": "k1"}], "streams": [{"name": "e", "src": "k0", "dst": "k1",
                                                                        "tokens": 2}]},
    "program": {"params": ["N"], "context": "[N] -> { : N > 0 }", "arrays": {"A": {"dtype": "f32", "shape": ["N"]}},
                "statements": [{"name": "S0", "domain": "[N] -> { S0[i] : 0 <= i < N }",
                                "reads": ["[N] -> { S0[i] -> A[i] }"], "schedule": "[N] -> { S0[i] -> [i] }"}],
                "schedule": "[N] -> { S0[i] -> [i] }"},
    "options": {"placement": {"pins": {"k0": "A"}}},
}


@st.composite
def damaged(draw) -> dict:
    data = copy.deepcopy(draw(st.one_of(instances(), st.just(RICH))))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    return data


@pytest.mark.slow
@SETTINGS
@given(damaged())
def test_damaged_instances_fail_cleanly(data):
    problems = validate_dict(data)
    try:
        from_dict(data)
    except InstanceError as err:
        assert problems and err.problems == problems
        assert all(p.pointer == "" or p.pointer.startswith("/") for p in problems)
    else:
        assert problems == []


@SETTINGS
@given(st.text(max_size=40))
def test_random_text_fails_cleanly(text):
    try:
        loads(text)
    except InstanceError:
        pass
