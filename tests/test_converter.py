"""Algorithm 1 (converter buffers) against the paper's examples and the element-by-element run."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.api import solve_instance
from dfopt.instance import load
from dfopt.ir.converter import converter_buffer
from dfopt.ir.itensor import ITensorType, loop_nest_type
from dfopt.sim.converter import simulate_converter
from tamper import failed, tampered

FIG5_SRC = ITensorType("f32", (8, 8), (4, 2), (4, 2), (2, 4), (1, 0))
FIG5_DST = ITensorType("f32", (8, 8), (4, 2), (4, 2, 2), (2, 1, 4), (2, 0))


def test_fig5_buffer_is_8x2_ping_pong():
    c = converter_buffer(FIG5_SRC, FIG5_DST)
    assert c.needed and c.shape == (8, 2) and c.bytes == 2 * 8 * 2 * 4
    assert c.shared_loops == 1 and c.reuse == 4


def test_fig7a_buffer_is_16x64_reused_4_times():
    sol = solve_instance(load("instances/converter/fig7a.json"))
    conv = sol.sections["converter"]["converters"]["e"]
    assert conv["shape"] == [16, 64] and conv["reuse"] == 4 and conv["bytes"] == 2 * 16 * 64 * 4
    assert sol.ok


def test_equal_types_and_trivial_loops_need_no_converter():
    assert not converter_buffer(FIG5_SRC, FIG5_SRC).needed
    padded = ITensorType("f32", (8, 8), (4, 2), (1, 4, 2), (8, 2, 4), (2, 1))
    assert not converter_buffer(FIG5_SRC, padded).needed


def test_different_tensors_cannot_be_converted():
    other = ITensorType("f32", (8, 4), (4, 2), (2, 2), (2, 4), (1, 0))
    with pytest.raises(ValueError, match="same tensor"):
        converter_buffer(FIG5_SRC, other)


def test_loop_nest_type_of_a_tiled_matmul():
    loops = [{"name": "i", "tripcount": 4, "step": 16}, {"name": "j", "tripcount": 2, "step": 32},
             {"name": "k", "tripcount": 8, "step": 8, "kind": "reduction"}]
    a = loop_nest_type("bf16", (64, 64), loops, ["i", "k"])
    assert a.element == (16, 8) and a.tokens == 64 and a.map == (0, 2) and not a.problems()
    c = loop_nest_type("bf16", (64, 64), loops, ["i", "j"], output=True)
    assert c.tokens == 8 and c.tripcounts == (4, 2) and not c.problems()
    whole = loop_nest_type("f32", (64, 10), loops, ["i", None])
    assert whole.element == (16, 10) and whole.map == (0, None)
    with pytest.raises(ValueError, match="unknown loops"):
        loop_nest_type("f32", (64, 64), loops, ["i", "z"])


@st.composite
def type_pairs(draw):
    """Two random tilings and loop orders of one small tensor, with optional reuse loops."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from([2, 4, 6, 8])) for _ in range(rank))

    def one():
        elem = tuple(draw(st.sampled_from([e for e in (1, 2, 3, 4, 8) if s % e == 0])) for s in shape)
        loops = [(s // e, e, d) for d, (s, e) in enumerate(zip(shape, elem))]
        loops = draw(st.permutations(loops))
        for _ in range(draw(st.integers(0, 2))):              # reuse loops drive no dimension
            loops.insert(draw(st.integers(0, len(loops))), (draw(st.integers(1, 3)), 1, None))
        drive = {d: i for i, (_, _, d) in enumerate(loops) if d is not None}
        return ITensorType("i8", shape, elem, tuple(t for t, _, _ in loops), tuple(s for _, s, _ in loops),
                           tuple(drive[d] for d in range(rank)))

    a = one()
    return a, (a if draw(st.booleans()) else one())


@settings(max_examples=150, deadline=None)
@given(type_pairs())
def test_algorithm1_buffer_delivers_and_is_minimal(pair):
    src, dst = pair
    assert not src.problems() and not dst.problems()
    c = converter_buffer(src, dst)
    if not c.needed:  # the same token sequence: a FIFO of one element's buffer suffices per token
        assert src.element == dst.element and src.tokens == dst.tokens
        assert simulate_converter(src, dst, src.shape, 0).ok
        return
    assert c.reuse * c.src_tokens_per_phase == src.tokens
    assert simulate_converter(src, dst, c.shape, c.shared_loops).ok
    for d, size in enumerate(c.shape):
        if size > 1:
            smaller = c.shape[:d] + (size - 1,) + c.shape[d + 1:]
            assert not simulate_converter(src, dst, smaller, c.shared_loops).ok
    assert c.bytes == 2 * math.prod(c.shape)


def test_checker_rejects_a_wrong_buffer():
    inst = load("instances/converter/fig5.json")
    sol = solve_instance(inst)
    small = tampered(sol, lambda d: d["converter"]["converters"]["e"].update(shape=[4, 2]))
    assert set(failed(inst, small)) == {"converter-delivery", "converter-bytes"}

    def larger(d):
        d["converter"]["converters"]["e"].update(shape=[8, 4], bytes=256)
        d["converter"]["total_bytes"] = 256
        d.update(objective=256, bound=256)
    assert set(failed(inst, tampered(sol, larger))) == {"converter-minimal"}


def test_checker_requires_a_converter_where_types_differ():
    inst = load("instances/converter/fig5.json")
    sol = solve_instance(inst)
    bad = failed(inst, tampered(sol, lambda d: d["converter"].update(converters={})))
    assert "no converter" in bad["converter-bytes"][0]
