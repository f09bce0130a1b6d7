"""Hypothesis strategies and builders of small dataflow graphs for the FIFO tests."""

from __future__ import annotations

from hypothesis import strategies as st

from dfopt.instance import Instance
from dfopt.ir import DataflowGraph, Kernel, Stream


@st.composite
def small_dags(draw, max_kernels=6, max_tokens=12, iis=(1, 2, 3, 4)):
    """Random connected DAGs with mixed IIs, parallel streams and fork-joins."""
    n = draw(st.integers(2, max_kernels))
    kernels = [Kernel(f"k{i}", delay=draw(st.integers(0, 6)), ii=draw(st.sampled_from(iis))) for i in range(n)]
    streams = []
    for v in range(1, n):
        preds = draw(st.lists(st.integers(0, v - 1), min_size=1, max_size=min(3, v)))
        for u in preds:
            streams.append((u, v))
    for _ in range(draw(st.integers(0, 2))):
        u = draw(st.integers(0, n - 2))
        streams.append((u, draw(st.integers(u + 1, n - 1))))
    out = []
    for i, (u, v) in enumerate(streams):
        out.append(Stream(f"e{i}", f"k{u}", f"k{v}", tokens=draw(st.integers(1, max_tokens)),
                          width=draw(st.sampled_from((8, 32, 64))),
                          produce_ii=draw(st.sampled_from((None, None, 1, 2))),
                          consume_ii=draw(st.sampled_from((None, None, 1, 3)))))
    return DataflowGraph(kernels, out)


def as_instance(graph, name="t", **options) -> Instance:
    return Instance(name=name, problem="fifo", graph=graph, options={"fifo": options} if options else {})


def chain(*specs, tokens=16, width=32):
    """A chain of kernels given as (delay, ii) pairs."""
    ks = [Kernel(f"k{i}", delay=d, ii=ii) for i, (d, ii) in enumerate(specs)]
    ss = [Stream(f"e{i}{i+1}", f"k{i}", f"k{i+1}", tokens, width) for i in range(len(specs) - 1)]
    return DataflowGraph(ks, ss)
