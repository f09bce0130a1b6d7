"""dfopt.sim against a tiny per-event reference simulator on random small graphs (hypothesis).

The reference is written to be obviously correct, not fast: every kernel walks its events in
nominal order and performs the next one as soon as its dependency has happened, with the time
``max(previous + (n_i - n_{i-1}), ready)``, until nothing moves.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.sim import compile_events, simulate
from dfopt.sim.advance import run
from dfopt.sim.engine import _room


# -- the reference ------------------------------------------------------------------------
def nominal_events(graph, kernel):
    """A kernel's events as (offset, is_write, stream order, token, stream), sorted."""
    order = {name: i for i, name in enumerate(graph.streams)}
    events = []
    for s in graph.streams.values():
        if s.dst == kernel:
            cii = graph.consume_ii(s.name)
            reads = ([k * cii for k in range(s.tokens)] if s.dst_schedule is None
                     else s.dst_schedule.offsets().tolist())
            events += [(n, 0, order[s.name], k, s.name) for k, n in enumerate(reads)]
        if s.src == kernel:
            pii, delay = graph.produce_ii(s.name), graph.kernels[kernel].delay
            writes = ([delay + k * pii for k in range(s.tokens)] if s.src_schedule is None
                      else s.src_schedule.offsets().tolist())
            events += [(n, 1, order[s.name], k, s.name) for k, n in enumerate(writes)]
    return sorted(events)


def reference(graph, depths=None, unbounded=False):
    """Per-event simulation of the timing model (docs/design.md); returns a dict of plain values."""
    depths = dict(depths or {})
    depth = {e: (None if unbounded else depths.get(e, s.depth)) for e, s in graph.streams.items()}
    seqs = {k: nominal_events(graph, k) for k in graph.kernels}
    ptr = {k: 0 for k in graph.kernels}
    last = {k: None for k in graph.kernels}          # (time, offset) of the previous event
    W, R, stall = {}, {}, {e: 0 for e in graph.streams}
    times = {k: [] for k in graph.kernels}
    moved = True
    while moved:
        moved = False
        for k, seq in seqs.items():
            while ptr[k] < len(seq):
                n, is_write, _, tok, e = seq[ptr[k]]
                if not is_write:
                    if (e, tok) not in W:
                        break
                    ready = W[e, tok] + 1
                elif depth[e] is not None and tok >= depth[e]:
                    if (e, tok - depth[e]) not in R:
                        break
                    ready = R[e, tok - depth[e]] + 1
                else:
                    ready = None
                pace = n if last[k] is None else last[k][0] + (n - last[k][1])
                t = pace if ready is None else max(pace, ready)
                if is_write:
                    W[e, tok] = t
                    stall[e] += t - pace
                else:
                    R[e, tok] = t
                times[k].append(t)
                last[k] = (t, n)
                ptr[k] += 1
                moved = True
    deadlock = any(ptr[k] < len(seq) for k, seq in seqs.items())
    blocked = set()
    for k, seq in seqs.items():
        if ptr[k] < len(seq):
            _, is_write, _, tok, e = seq[ptr[k]]
            blocked.add((k, e, "full" if is_write else "empty", tok))
    occ = {}
    for e, s in graph.streams.items():
        reads = [R[e, m] for m in range(s.tokens) if (e, m) in R]
        occ[e] = max([k + 1 - sum(r < W[e, k] for r in reads) for k in range(s.tokens) if (e, k) in W],
                     default=0)
    all_times = [t for ts in times.values() for t in ts]
    return {
        "deadlock": deadlock,
        "makespan": None if deadlock else max(all_times, default=-1) + 1,
        "start": {k: ts[0] for k, ts in times.items() if ts},
        "end": {k: ts[-1] + 1 for k, ts in times.items() if ts and ptr[k] == len(seqs[k])},
        "W": W, "R": R, "occ": occ, "stall": stall, "blocked": blocked,
        "events": len(all_times),
    }


# -- random graphs ------------------------------------------------------------------------
_DELAYS = st.integers(0, 6)


@st.composite
def graphs(draw, dag=True, max_kernels=5, max_streams=7, max_tokens=6, delays=_DELAYS):
    n = draw(st.integers(1, max_kernels))
    g = DataflowGraph()
    for i in range(n):
        g.add_kernel(Kernel(f"k{i}", delay=draw(delays), ii=draw(st.sampled_from([1, 1, 2, 3, 4]))))
    ii_override = st.one_of(st.none(), st.sampled_from([0, 1, 2, 3]))
    for j in range(draw(st.integers(0, max_streams))):
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if dag:
            if a == b:
                continue
            a, b = min(a, b), max(a, b)
        g.add_stream(Stream(f"s{j}", f"k{a}", f"k{b}", tokens=draw(st.integers(0, max_tokens)),
                            produce_ii=draw(ii_override), consume_ii=draw(ii_override),
                            depth=draw(st.one_of(st.none(), st.integers(1, 4)))))
    return g


def depth_maps(graph):
    depth = st.one_of(st.integers(1, 2), st.integers(1, 8))
    return st.fixed_dictionaries({}, optional={e: depth for e in graph.streams})


def check_against_reference(g, depths=None, unbounded=False):
    ref = reference(g, depths, unbounded)
    res = simulate(g, depths, unbounded=unbounded, record=True)
    assert res.deadlock == ref["deadlock"]
    assert res.makespan == ref["makespan"]
    assert res.start == ref["start"]
    assert res.end == ref["end"]
    assert res.events == ref["events"]
    assert res.max_occupancy == ref["occ"]
    assert res.write_stall_cycles == ref["stall"]
    assert {tuple(b) for b in res.blocked} == ref["blocked"]
    for e, s in g.streams.items():
        w, r = res.times(e)
        assert w.tolist() == [ref["W"].get((e, k), -1) for k in range(s.tokens)]
        assert r.tolist() == [ref["R"].get((e, k), -1) for k in range(s.tokens)]
    return res


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEWER = settings(SETTINGS, max_examples=80)


@SETTINGS
@given(graphs(dag=True))
def test_unbounded_dag_matches_reference(g):
    res = check_against_reference(g, unbounded=True)
    assert not res.deadlock


@SETTINGS
@given(st.data(), graphs(dag=True))
def test_bounded_dag_matches_reference(data, g):
    check_against_reference(g, data.draw(depth_maps(g)))


@SETTINGS
@given(st.data(), graphs(dag=False))
def test_cyclic_graphs_match_reference(data, g):
    check_against_reference(g, data.draw(depth_maps(g)))
    check_against_reference(g, unbounded=True)


@FEWER
@given(st.data(), graphs(dag=False, max_kernels=6, max_streams=10, max_tokens=12))
def test_tiny_vector_chunks_match_reference(data, g):
    """Splitting compile, rounds and occupancy into many small chunks changes nothing."""
    import dfopt.sim.events as events
    depths = data.draw(depth_maps(g))
    saved = events.CHUNK_EVENTS
    events.CHUNK_EVENTS = data.draw(st.integers(1, 12))
    try:
        check_against_reference(g, depths)
        check_against_reference(g, unbounded=True)
    finally:
        events.CHUNK_EVENTS = saved


@FEWER
@given(st.data(), graphs(dag=False, delays=st.sampled_from([0, 3, 2 ** 40, 2 ** 58])))
def test_huge_offsets_match_reference(data, g):
    """Offsets that overflow the packed keys take the exact fallbacks."""
    check_against_reference(g, data.draw(depth_maps(g)))


@SETTINGS
@given(st.data(), graphs(dag=False, max_tokens=8))
def test_deeper_fifos_never_hurt(data, g):
    """More room is fewer constraints: no new deadlock, no later event."""
    depths = data.draw(depth_maps(g))
    bounded = sorted(e for e in g.streams if depths.get(e, g.streams[e].depth) is not None)
    if not bounded:
        return
    name = data.draw(st.sampled_from(bounded))
    tight = simulate(g, depths, record=True)
    roomier = simulate(g, {**depths, name: depths.get(name, g.streams[name].depth) + 1}, record=True)
    assert roomier.deadlock <= tight.deadlock
    if not tight.deadlock:
        assert roomier.makespan <= tight.makespan
        assert (roomier._tt <= tight._tt).all()


@FEWER
@given(graphs(dag=True, max_kernels=6, max_streams=10, max_tokens=12))
def test_no_stall_depths_preserve_the_unbounded_run(g):
    free = simulate(g, unbounded=True, record=True)
    occ = {e: max(1, o) for e, o in free.max_occupancy.items()}
    tight = simulate(g, occ, record=True)
    assert tight.makespan == free.makespan
    assert sum(tight.write_stall_cycles.values()) == 0
    for e in g.streams:
        assert all((a == b).all() for a, b in zip(tight.times(e), free.times(e)))
    # one slot less on a stream that holds more than one token stalls its writes (or deadlocks)
    for e, o in occ.items():
        if o > 1:
            less = simulate(g, {**occ, e: o - 1})
            assert less.deadlock or less.write_stall_cycles[e] > 0


@SETTINGS
@given(st.data(), graphs(dag=False, max_tokens=8))
def test_bounded_advance_alone_matches_fast_path(data, g):
    """The exact bounded advance gives the same times as the unbounded fast path when it fits."""
    prog = compile_events(g)
    depths = data.draw(depth_maps(g))
    room, _ = _room(prog, depths, False)
    res = simulate(prog, depths, record=True)
    direct = run(prog, room)
    assert bool((direct.done < prog.ev_lo[1:]).any()) == res.deadlock
    if not res.deadlock:
        assert np.array_equal(direct.tt, res._tt)


@SETTINGS
@given(st.data(), graphs(dag=True, max_tokens=8))
def test_critical_path_steps_are_binding(data, g):
    """Each step of the path holds with equality, from the last event down to a nominal start."""
    res = simulate(g, data.draw(depth_maps(g)), record=True)
    if res.deadlock or not res.end:
        return
    prog = res._prog
    time = res._time
    event = int(prog.ev_lo[prog.kernel_index(max(res.end, key=res.end.get)) + 1]) - 1
    assert time(event) == res.makespan - 1
    path = res.critical_path()
    for step in path[:-1]:
        stream, j, token, is_write = prog.decode(event)
        if step.kind == "chain":
            for _ in range(step.index):
                assert time(event) == time(event - 1) + int(prog.ev_n[event] - prog.ev_n[event - 1])
                event -= 1
        elif step.kind == "raw":
            assert (step.name, step.index, is_write) == (stream, token, False)
            event = int(prog.ev_pos[int(prog.ev_code[event]) + 1])
            assert res.times(stream)[1][token] == time(event) + 1
        else:
            assert step.kind == "space" and (step.name, step.index, is_write) == (stream, token, True)
            depth = res.depths[stream]
            event = int(prog.ev_pos[int(prog.ev_code[event]) - 1 - 2 * depth])
            assert res.times(stream)[0][token] == time(event) + 1
    assert path[-1].kind == "start"
    assert event == prog.ev_lo[np.searchsorted(prog.ev_lo, event, side="right") - 1]
    assert time(event) == int(prog.ev_n[event]) == path[-1].index
