"""Per-token schedules (docs/design.md, the token timing model): the blocks, the simulator on
them against the per-event reference, the steady schedule as a special case, and FIFO sizing
that never lengthens the exact schedule."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.test_sim_property import FEWER, SETTINGS, check_against_reference, depth_maps, graphs

from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.ir.tokens import Block, TokenSchedule, monotone_fault
from dfopt.sim import simulate


@st.composite
def offsets(draw, tokens):
    """Non-decreasing cycles with bursts: runs of small steps separated by long gaps."""
    out, t = [], draw(st.integers(0, 20))
    for _ in range(tokens):
        out.append(t)
        t += draw(st.sampled_from([0, 1, 1, 2, 7, 30]))
    return out


@st.composite
def scheduled_graphs(draw, dag=True, **kw):
    g = draw(graphs(dag=dag, **kw))
    for name, s in list(g.streams.items()):
        src = TokenSchedule.from_offsets(draw(offsets(s.tokens))) if draw(st.booleans()) else None
        dst = TokenSchedule.from_offsets(draw(offsets(s.tokens))) if draw(st.booleans()) else None
        g.streams[name] = dataclasses.replace(s, src_schedule=src, dst_schedule=dst)
    return g


@SETTINGS
@given(st.lists(st.integers(0, 50), max_size=40))
def test_blocks_round_trip_any_sorted_list(values):
    n = sorted(values)
    s = TokenSchedule.from_offsets(n)
    assert s.offsets().tolist() == n
    assert s.count == len(n)
    assert monotone_fault(s.blocks) is None
    assert TokenSchedule.from_json(s.to_json()) == s
    assert TokenSchedule.from_json(n) == s


@SETTINGS
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 9)), min_size=1, max_size=3), st.integers(0, 30))
def test_monotone_fault_agrees_with_the_expansion(loops, offset):
    b = Block(offset, tuple(loops))
    n = b.offsets()
    assert len(n) == b.tokens and n[-1] == b.last
    assert (monotone_fault([b]) is None) == bool((np.diff(n) >= 0).all())


@SETTINGS
@given(st.data(), scheduled_graphs(dag=True))
def test_scheduled_dags_match_reference(data, g):
    check_against_reference(g, unbounded=True)
    check_against_reference(g, data.draw(depth_maps(g)))


@FEWER
@given(st.data(), scheduled_graphs(dag=False))
def test_scheduled_cyclic_graphs_match_reference(data, g):
    check_against_reference(g, data.draw(depth_maps(g)))


@FEWER
@given(st.data(), scheduled_graphs(dag=False, max_kernels=5, max_streams=8, max_tokens=10))
def test_scheduled_tiny_chunks_match_reference(data, g):
    import dfopt.sim.events as events
    saved = events.CHUNK_EVENTS
    events.CHUNK_EVENTS = data.draw(st.integers(1, 12))
    try:
        check_against_reference(g, data.draw(depth_maps(g)))
    finally:
        events.CHUNK_EVENTS = saved


@SETTINGS
@given(st.data(), graphs(dag=False))
def test_steady_schedules_spelled_out_change_nothing(data, g):
    """Writing every end's steady schedule as blocks gives today's simulation, event by event."""
    spelled = DataflowGraph(list(g.kernels.values()),
                            [dataclasses.replace(s, src_schedule=g.write_schedule(n), dst_schedule=g.read_schedule(n))
                             for n, s in g.streams.items()])
    depths = data.draw(depth_maps(g))
    a, b = simulate(g, depths, record=True), simulate(spelled, depths, record=True)
    assert (a.deadlock, a.makespan, a.max_occupancy, a.write_stall_cycles) == \
        (b.deadlock, b.makespan, b.max_occupancy, b.write_stall_cycles)
    assert np.array_equal(a._tt, b._tt)


def test_burst_at_the_last_reduction_step():
    """A matmul writing a 4-token tile in the last of 3 reduction steps of 10 cycles, twice; the
    consumer reads steadily every 2 cycles: the burst needs 4 slots."""
    tile = TokenSchedule((Block(27, ((2, 30), (4, 1))),))
    g = DataflowGraph([Kernel("mm"), Kernel("out", ii=2)],
                      [Stream("c", "mm", "out", tokens=8, src_schedule=tile)])
    free = simulate(g, unbounded=True, record=True)
    w, r = free.times("c")
    assert w.tolist() == [27, 28, 29, 30, 57, 58, 59, 60]
    assert r.tolist() == [28, 30, 32, 34, 58, 60, 62, 64]
    assert free.max_occupancy["c"] == 3
    assert simulate(g, {"c": 2}).makespan > free.makespan == simulate(g, {"c": 3}).makespan


def test_schedule_count_must_match_the_stream():
    g = DataflowGraph([Kernel("a"), Kernel("b")],
                      [Stream("e", "a", "b", tokens=3, src_schedule=TokenSchedule.steady(0, 1, 2))])
    with pytest.raises(Exception, match="2 tokens, the stream 3"):
        simulate(g, unbounded=True)


_ANY_INT = st.one_of(st.integers(-3, 12), st.sampled_from([2**40, 2**40 + 1, 2**50, 2**50 + 1]))
_SCHEDULE_VALUES = st.one_of(
    st.lists(_ANY_INT, max_size=6),
    st.lists(st.fixed_dictionaries({"offset": _ANY_INT}, optional={
        "loops": st.lists(st.lists(_ANY_INT, min_size=1, max_size=3), max_size=3),
        "extra": st.just(1)}), max_size=4),
    st.just("x"), st.just([1.5]), st.just([True]))


@SETTINGS
@given(_SCHEDULE_VALUES)
def test_fast_schedule_check_never_passes_what_the_schema_refuses(value):
    """The fast pre-check of a stream's schedules (dfopt/schema/fast.py) answers True only for a
    value jsonschema accepts too."""
    from dfopt.schema import _load, schema_issues
    from dfopt.schema.fast import plainly_valid

    stream = {"name": "e", "src": "a", "dst": "b", "tokens": 3, "src_schedule": value}
    if plainly_valid(stream, _load("instance")["$defs"]["stream"]):
        assert schema_issues(stream, "instance", "stream") == []


def test_fast_schedule_check_passes_ordinary_schedules():
    from dfopt.schema import _load
    from dfopt.schema.fast import plainly_valid

    definition = _load("instance")["$defs"]["stream"]
    for value in ([0, 1, 5], [{"offset": 27, "loops": [[2, 30], [4, 1]]}, {"offset": 99}]):
        assert plainly_valid({"name": "e", "src": "a", "dst": "b", "tokens": 3, "dst_schedule": value}, definition)
