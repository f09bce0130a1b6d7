"""dfopt.sim on tiny hand-checked graphs: event times, deadlocks, occupancy, stalls, paths.

Every expected number here was worked out by hand from the token timing model (docs/design.md);
the random comparison against a per-event reference lives in test_sim_property.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from dfopt.errors import InfeasibleError, InstanceError
from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.sim import Blocked, SimResult, Step, compile_events, no_stall_depths, simulate


def times(res: SimResult, stream: str) -> tuple[list, list]:
    w, r = res.times(stream)
    return w.tolist(), r.tolist()


# -- a two-kernel chain ---------------------------------------------------------------------
@pytest.fixture
def chain() -> DataflowGraph:
    """src: delay 2, ii 1, writes 4 tokens; snk: ii 2, reads them."""
    return DataflowGraph([Kernel("src", delay=2, ii=1), Kernel("snk", ii=2)],
                         [Stream("e", "src", "snk", tokens=4)])


def test_chain_unbounded_by_hand(chain):
    res = simulate(chain, unbounded=True, record=True)
    # writes at delay + k; read k at nominal 2k, but read 0 waits for write 0 (2 + 1 = 3),
    # which delays every later read by 3: 3, 5, 7, 9
    assert times(res, "e") == ([2, 3, 4, 5], [3, 5, 7, 9])
    assert (res.makespan, res.deadlock, res.events) == (10, False, 8)
    assert res.start == {"src": 2, "snk": 3}
    assert res.end == {"src": 6, "snk": 10}
    # write 3 (t=5) finds only read 0 (t=3) done: 4 - 1 = 3 tokens inside
    assert res.max_occupancy == {"e": 3}
    assert res.write_stall_cycles == {"e": 0}
    assert res.depths == {"e": None} and res.stats["method"] == "unbounded"


def test_chain_depth_one_by_hand(chain):
    res = simulate(chain, {"e": 1}, record=True)
    # write k needs read k-1 done before it: 2, then 3+1, 5+1, 7+1; reads are unchanged
    assert times(res, "e") == ([2, 4, 6, 8], [3, 5, 7, 9])
    assert res.makespan == 10
    assert res.write_stall_cycles == {"e": 3}
    assert res.max_occupancy == {"e": 1}
    assert res.depths == {"e": 1} and res.stats["method"] == "bounded"


def test_chain_depth_two_by_hand(chain):
    res = simulate(chain, {"e": 2}, record=True)
    # only write 3 waits: read 1 is at 5, so write 3 goes at 6 instead of 5
    assert times(res, "e") == ([2, 3, 4, 6], [3, 5, 7, 9])
    assert res.write_stall_cycles == {"e": 1}
    assert res.max_occupancy == {"e": 2}


def test_no_stall_depth_of_the_chain_keeps_the_unbounded_times(chain):
    assert no_stall_depths(chain) == {"e": 3}
    res = simulate(chain, {"e": 3}, record=True)
    assert res.stats["method"] == "unbounded-fits"
    assert times(res, "e") == ([2, 3, 4, 5], [3, 5, 7, 9])


# -- fork-join ------------------------------------------------------------------------------
@pytest.fixture
def fork_join() -> DataflowGraph:
    """A feeds C twice: through B (which writes its first token after reading 11) and directly."""
    return DataflowGraph([Kernel("A"), Kernel("B", delay=10), Kernel("C")],
                         [Stream("x", "A", "B", 16), Stream("b", "B", "C", 16), Stream("y", "A", "C", 16)])


def test_fork_join_reference_run(fork_join):
    res = simulate(fork_join, unbounded=True, record=True)
    # A writes x_k, y_k at k; B reads x_k at k+1, writes b_k at 11+k; C reads b_k, y_k at 12+k
    assert times(res, "b") == ([11 + k for k in range(16)], [12 + k for k in range(16)])
    assert times(res, "y") == (list(range(16)), [12 + k for k in range(16)])
    assert res.makespan == 28
    # y: write 12 (t=12) finds no read done yet -> 13 tokens; x and b: a read in the cycle of
    # the next write does not free its slot in time -> 2
    assert no_stall_depths(fork_join) == {"x": 2, "b": 2, "y": 13}


def test_fork_join_deadlocks_on_a_shallow_short_branch(fork_join):
    res = simulate(fork_join, {"y": 1})
    assert res.deadlock and res.makespan is None
    # A wrote x0, y0, x1 and waits to write y1; B read x0, x1; C waits for b0 first
    assert res.blocked == [Blocked("A", "y", "full", 1), Blocked("B", "x", "empty", 2),
                           Blocked("C", "b", "empty", 0)]
    assert res.events == 3 + 2
    assert "A" in res.start and "A" not in res.end
    assert "DEADLOCK" in res.summary()


def test_fork_join_smallest_safe_depth_is_ten(fork_join):
    # B writes b0 only after reading x10, which A writes after y9; y9 needs a free slot unless
    # the depth is at least 10 (C reads y0 only after b0)
    assert simulate(fork_join, {"y": 9}).deadlock
    deep = simulate(fork_join, {"y": 10})
    assert not deep.deadlock and deep.makespan > 28 and deep.write_stall_cycles["y"] > 0
    assert simulate(fork_join, {"y": 13}).makespan == 28


def test_critical_path_names_the_full_fifo(fork_join):
    res = simulate(fork_join, {"y": 12}, record=True)
    path = res.critical_path()
    assert ("space", "y", 12) in path
    assert path[0] == Step("chain", "C", 25)
    assert path[-1] == Step("start", "A", 0)
    free = simulate(fork_join, unbounded=True, record=True).critical_path()
    assert all(step.kind != "space" for step in free)
    assert free == [Step("chain", "C", 31), Step("raw", "b", 0), Step("chain", "B", 11),
                    Step("raw", "x", 0), Step("start", "A", 0)]


# -- occupancy ------------------------------------------------------------------------------
def test_fast_producer_into_slow_consumer():
    g = DataflowGraph([Kernel("p", ii=1), Kernel("c", ii=4)], [Stream("e", "p", "c", tokens=8)])
    res = simulate(g, unbounded=True, record=True)
    # writes at 0..7, reads at 1, 5, 9, ..., 29: write 7 (t=7) finds reads 0 and 1 done
    assert times(res, "e") == (list(range(8)), [1 + 4 * k for k in range(8)])
    assert res.max_occupancy == {"e": 6}
    assert res.makespan == 30
    assert simulate(g, {"e": 6}).write_stall_cycles == {"e": 0}
    five = simulate(g, {"e": 5}, record=True)
    # write 7 waits for read 2 (t=9): 10 instead of 7
    assert times(five, "e")[0] == [0, 1, 2, 3, 4, 5, 6, 10]
    assert five.write_stall_cycles == {"e": 3} and five.makespan == 30


def test_equal_offsets_share_a_cycle_and_stall_together():
    g = DataflowGraph([Kernel("a"), Kernel("b"), Kernel("c", ii=3)],
                      [Stream("x", "a", "b", 3), Stream("y", "a", "c", 3, depth=1)])
    assert [e[:3] for e in compile_events(g).kernel_events("a")] == [
        ("write", "x", 0), ("write", "y", 0), ("write", "x", 1), ("write", "y", 1),
        ("write", "x", 2), ("write", "y", 2)]
    res = simulate(g, record=True)
    # x0 and y0 in cycle 0; y1 waits for c's read of y0 (t=1): 2; x2 follows one cycle after
    # y1's offset-1 slot, at 3; y2 waits for read 1 (t=4): 5
    assert times(res, "x") == ([0, 1, 3], [1, 2, 4])
    assert times(res, "y") == ([0, 2, 5], [1, 4, 7])
    assert res.write_stall_cycles == {"x": 0, "y": 3}
    assert res.makespan == 8


def test_reads_before_writes_and_token_order_with_zero_ii():
    g = DataflowGraph([Kernel("a"), Kernel("m", delay=0), Kernel("z")],
                      [Stream("in", "a", "m", 2), Stream("out", "m", "z", 2, produce_ii=0)])
    assert [e[:3] for e in compile_events(g).kernel_events("m")] == [
        ("read", "in", 0), ("write", "out", 0), ("write", "out", 1), ("read", "in", 1)]
    res = simulate(g, record=True)
    assert times(res, "out")[0] == [1, 1]


# -- cycles ---------------------------------------------------------------------------------
def test_cycle_deadlocks_even_unbounded():
    g = DataflowGraph([Kernel("a"), Kernel("b")], [Stream("x", "a", "b", 4), Stream("y", "b", "a", 4)])
    res = simulate(g, unbounded=True)
    assert res.deadlock and res.events == 0
    assert res.blocked == [Blocked("a", "y", "empty", 0), Blocked("b", "x", "empty", 0)]
    with pytest.raises(InfeasibleError, match="deadlocks even with unbounded"):
        no_stall_depths(g)


def test_self_loop_reads_before_its_own_write():
    g = DataflowGraph([Kernel("a", delay=1)], [Stream("acc", "a", "a", 3)])
    res = simulate(g, unbounded=True)
    assert res.deadlock and res.blocked == [Blocked("a", "acc", "empty", 0)]


def test_cycle_without_tokens_on_the_back_edge_runs():
    g = DataflowGraph([Kernel("a"), Kernel("b")], [Stream("x", "a", "b", 3), Stream("y", "b", "a", 0)])
    res = simulate(g, {"x": 1})
    # x1 waits for read 0 (t=1): 2; read 1 at 3; x2 waits for it: 4; read 2 at 5
    assert not res.deadlock and res.makespan == 6 and res.max_occupancy == {"x": 1, "y": 0}


# -- edges of the API -----------------------------------------------------------------------
def test_empty_graph_and_idle_kernels():
    assert simulate(DataflowGraph()).makespan == 0
    g = DataflowGraph([Kernel("idle"), Kernel("a"), Kernel("b")], [Stream("e", "a", "b", 0)])
    res = simulate(g, {"e": 1})
    assert (res.makespan, res.deadlock, res.events, res.start, res.end) == (0, False, 0, {}, {})
    assert no_stall_depths(g) == {"e": 1}


def test_depth_sources(chain):
    chain.streams["e"].depth = 1
    assert simulate(chain).write_stall_cycles == {"e": 3}
    assert simulate(chain, {"e": 4}).write_stall_cycles == {"e": 0}
    res = simulate(chain, {"e": 1}, unbounded=True)
    assert res.depths == {"e": None} and res.write_stall_cycles == {"e": 0}


@pytest.mark.parametrize("depths", [{"nope": 2}, {"e": 0}, {"e": -1}, {"e": 1.5}, {"e": True}])
def test_bad_depths_are_instance_errors(chain, depths):
    with pytest.raises(InstanceError):
        simulate(chain, depths)


def test_bad_graphs_are_instance_errors():
    with pytest.raises(InstanceError, match="delay"):
        simulate(DataflowGraph([Kernel("a", delay=-1)]))
    g = DataflowGraph([Kernel("a"), Kernel("b")], [Stream("e", "a", "b", 2, consume_ii=-2)])
    with pytest.raises(InstanceError, match="consume_ii"):
        simulate(g)


def test_times_need_record(chain):
    res = simulate(chain)
    with pytest.raises(ValueError, match="record=True"):
        res.times("e")
    with pytest.raises(ValueError, match="record=True"):
        res.critical_path()


def test_compiled_program_is_reusable(fork_join):
    prog = compile_events(fork_join)
    for depths in ({"y": 12}, {"y": 1}, None):
        a, b = simulate(prog, depths, record=True), simulate(fork_join, depths, record=True)
        assert (a.makespan, a.deadlock, a.max_occupancy, a.blocked) == (b.makespan, b.deadlock,
                                                                        b.max_occupancy, b.blocked)
        for e in fork_join.streams:
            assert all(np.array_equal(u, v) for u, v in zip(a.times(e), b.times(e)))


def test_summary_lists_stalled_streams(fork_join):
    text = simulate(fork_join, {"y": 12}).summary()
    assert text.startswith("ok: makespan=29") and "y: writes stalled 2 cycles" in text


def test_astronomical_offsets_stay_exact():
    """Offsets near 2**58 overflow the packed sort key and the packed occupancy key: the
    fallbacks (lexsort, per-stream search, int64 times) give the hand-computed answer."""
    big = 2 ** 58
    g = DataflowGraph([Kernel("a", delay=big), Kernel("b"), Kernel("c", ii=big)],
                      [Stream("x", "a", "b", 3), Stream("y", "b", "c", 2), Stream("z", "a", "c", 2)])
    res = simulate(g, unbounded=True, record=True)
    assert times(res, "x") == ([big, big + 1, big + 2], [big + 1, big + 2, big + 3])
    # b writes y_k with its read of x_k: big + 1 + k; c reads y0 then z0 at offset 0 (y first),
    # both once y0 is there (big + 2), then y1, z1 one ii (big) later
    assert times(res, "y") == ([big + 1, big + 2], [big + 2, 2 * big + 2])
    assert times(res, "z") == ([big, big + 1], [big + 2, 2 * big + 2])
    assert res.makespan == 2 * big + 3
    assert res.max_occupancy == {"x": 2, "y": 2, "z": 2}


def test_cached_program_follows_graph_edits(chain):
    assert simulate(chain, unbounded=True).makespan == 10
    chain.kernels["src"].delay = 5                  # shifts every write by 3
    assert simulate(chain, unbounded=True).makespan == 13
    chain.streams["e"].depth = 1                    # depths are read afresh on every call
    assert simulate(chain).write_stall_cycles == {"e": 3}
    chain.add_kernel(Kernel("late", delay=50))      # a delay only moves writes: it reads
    chain.add_stream(Stream("f", "src", "late", 1))
    res = simulate(chain, unbounded=True)           # src writes e0 then f0 at 5; late reads at 6
    assert res.makespan == 13 and res.end["late"] == 7
    assert compile_events(chain, cache=False).n_events == 10
