"""Token curves: the exact closed form against the simulator; the paper's forms off by at most one."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.ir import DataflowGraph, Kernel, Stream
from dfopt.models.fifo.curves import exact_max_tokens, exact_max_tokens_array, paper_max_tokens, paper_max_tokens_array
from dfopt.sim import simulate


def pair_with_start_delay(T, D, ii_src, ii_dst, delay):
    """Producer -> consumer, the consumer held until cycle ``delay`` by a one-token timer stream."""
    kernels = [Kernel("timer", delay=max(delay - 1, 0)), Kernel("src", delay=D, ii=ii_src), Kernel("dst", ii=ii_dst)]
    streams = [Stream("t", "timer", "dst", 1), Stream("e", "src", "dst", T)]
    return DataflowGraph(kernels, streams)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 6), st.integers(1, 4), st.integers(1, 4), st.integers(1, 60))
def test_exact_curve_matches_simulation(T, D, a, b, delay):
    res = simulate(pair_with_start_delay(T, D, a, b, delay), unbounded=True)
    assert exact_max_tokens(T, D, a, b, delay) == res.max_occupancy["e"]


def test_vectorised_forms_match_scalar_forms():
    rows = list(itertools.product([1, 2, 7, 32], [0, 3], [1, 2, 4], [1, 2, 4], range(-1, 30, 3)))
    cols = np.array(rows).T
    assert exact_max_tokens_array(*cols).tolist() == [exact_max_tokens(*r) for r in rows]
    assert paper_max_tokens_array(*cols).tolist() == [paper_max_tokens(*r) for r in rows]


def test_paper_forms_differ_from_exact_by_at_most_one_when_delay_covers_d():
    for T, D, a, b in itertools.product([1, 5, 16, 33], [0, 2, 5], [1, 2, 4], [1, 2, 4]):
        for delay in range(D, D + 40):
            assert abs(paper_max_tokens(T, D, a, b, delay) - exact_max_tokens(T, D, a, b, delay)) <= 1
