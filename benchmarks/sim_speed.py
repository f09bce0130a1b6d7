"""Speed of dfopt.sim on random DAGs of 1k, 10k and 100k kernels; prints a table per shape.

Shapes (kernel IIs drawn from 1/2/4, delays 1-20, 32-256 tokens per stream, about 150 on
average; a stream goes from a kernel to one of the next ``--window`` kernels):

- ``dag``: every non-source kernel has a fan-in of 1-8 (mean about 2.5 streams per kernel),
  predecessors drawn uniformly from the previous ``--window`` kernels. Paths reconverge, so
  depth 2 everywhere deadlocks: that column times finding the deadlock.
- ``tree``: every kernel but the last feeds one later kernel (an in-tree, fan-in unbounded but
  about 1 on average). Nothing reconverges, so no depth deadlocks and depth 2 everywhere times
  the full bounded advance with stalls everywhere.

Measured, each in its own phase: compiling the event order (``compile_events``, shared by all
runs of one graph), the unbounded simulation, a bounded simulation with the no-stall depths
(the fast path: the unbounded times already fit) and a bounded one with depth 2 everywhere.

    python benchmarks/sim_speed.py                 # both shapes, 1k, 10k, 100k
    python benchmarks/sim_speed.py --shapes dag --sizes 1000 10000 --window 200 --seed 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.sim import compile_events, simulate


def random_dag(n_kernels: int, window: int = 1000, seed: int = 0) -> DataflowGraph:
    """A random DAG with mixed IIs, delays 1-20, fan-in up to 8 and 32-256 tokens per stream."""
    rng = np.random.default_rng(seed)
    iis = rng.choice([1, 2, 4], size=n_kernels)
    delays = rng.integers(1, 21, size=n_kernels)
    g = DataflowGraph([Kernel(f"k{i}", delay=int(delays[i]), ii=int(iis[i])) for i in range(n_kernels)])
    fan_in = 1 + rng.binomial(7, 0.21, size=n_kernels)
    streams = []
    for i in range(1, n_kernels):
        lo = max(0, i - window)
        for p in rng.integers(lo, i, size=min(int(fan_in[i]), i)).tolist():
            streams.append(Stream(f"e{len(streams)}", f"k{p}", f"k{i}", tokens=int(rng.integers(32, 257))))
    for s in streams:
        g.add_stream(s)
    return g


def random_tree(n_kernels: int, window: int = 1000, seed: int = 0) -> DataflowGraph:
    """An in-tree: every kernel but the last feeds one of the next ``window`` kernels."""
    rng = np.random.default_rng(seed)
    iis = rng.choice([1, 2, 4], size=n_kernels)
    delays = rng.integers(1, 21, size=n_kernels)
    g = DataflowGraph([Kernel(f"k{i}", delay=int(delays[i]), ii=int(iis[i])) for i in range(n_kernels)])
    for i in range(n_kernels - 1):
        c = int(rng.integers(i + 1, min(n_kernels, i + 1 + window)))
        g.add_stream(Stream(f"e{i}", f"k{i}", f"k{c}", tokens=int(rng.integers(32, 257))))
    return g


SHAPES = {"dag": random_dag, "tree": random_tree}


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench(shape: str, n_kernels: int, window: int, seed: int) -> dict:
    g, t_build = _timed(lambda: SHAPES[shape](n_kernels, window, seed))
    prog, t_compile = _timed(lambda: compile_events(g))
    free, t_free = _timed(lambda: simulate(prog, unbounded=True))
    nostall = {e: max(1, o) for e, o in free.max_occupancy.items()}
    fit, t_fit = _timed(lambda: simulate(prog, nostall))
    two, t_two = _timed(lambda: simulate(prog, {e: 2 for e in g.streams}))
    return {
        "kernels": n_kernels, "streams": len(g.streams), "events": prog.n_events,
        "build_s": t_build, "compile_s": t_compile,
        "unbounded_s": t_free, "rounds_free": free.stats["rounds"], "makespan": free.makespan,
        "nostall_s": t_fit, "nostall_method": fit.stats["method"],
        "nostall_same": fit.makespan == free.makespan,
        "depth2_s": t_two, "depth2_method": two.stats["method"], "rounds_two": two.stats["rounds"],
        "depth2": "deadlock" if two.deadlock else f"makespan {two.makespan}",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["dag", "tree"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--window", type=int, default=1000, help="predecessors come from the last W kernels")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    head = (f"{'kernels':>8} {'streams':>8} {'events':>11} {'graph':>7} {'compile':>8} {'unbounded':>10} "
            f"{'rounds':>6} {'no-stall':>9} {'depth 2':>8} {'rounds':>6}  depth-2 outcome")
    for shape in args.shapes:
        print(f"\nshape {shape}, window {args.window}, seed {args.seed}")
        print(head)
        print("-" * len(head))
        for n in args.sizes:
            _row(bench(shape, n, args.window, args.seed))
    return 0


def _row(r: dict) -> None:
    print(f"{r['kernels']:>8} {r['streams']:>8} {r['events']:>11} {r['build_s']:>6.2f}s "
          f"{r['compile_s']:>7.2f}s {r['unbounded_s']:>9.2f}s {r['rounds_free']:>6} "
          f"{r['nostall_s']:>8.2f}s {r['depth2_s']:>7.2f}s {r['rounds_two']:>6}  "
          f"{r['depth2']} ({r['depth2_method']}; no-stall run: {r['nostall_method']}, "
          f"same makespan {r['nostall_same']})", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
