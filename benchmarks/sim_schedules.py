"""Speed of dfopt.sim on per-token schedules against the same graphs with steady rates.

Each random DAG of ``benchmarks/sim_speed.py`` is run twice: as generated (every end steady,
``delay + k * ii``) and with every write end made bursty the way a tiled kernel writes — its T
tokens in bursts of ``b`` back-to-back cycles (b divides T, 4 to 32), one burst per "output tile"
after ``k`` reduction steps of ``b * ii`` cycles each (k from 1 to 8) — and every read end in
blocks of the same shape at the consumer's II. Same events, same kernels; only the nominal
offsets differ. Measured per graph: compile (the event sort; the schedules are expanded from
their blocks here), the unbounded run, the bounded run at the no-stall depths, and the event
rate of compile + unbounded run. Results: ``benchmarks/results/sim-schedules.json``.

    python benchmarks/sim_schedules.py                    # 1k and 10k kernels
    python benchmarks/sim_schedules.py --sizes 1000 --repeats 3
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time
from pathlib import Path

import numpy as np
from sim_speed import random_dag

from dfopt.io import write_json_atomic
from dfopt.ir.graph import DataflowGraph
from dfopt.ir.tokens import Block, TokenSchedule
from dfopt.sim import compile_events, no_stall_depths, simulate

RESULTS = Path(__file__).parent / "results" / "sim-schedules.json"


def _burst(tokens: int, first: int, ii: int, rng) -> TokenSchedule:
    """``tokens`` in bursts of b (the largest of 4..32 dividing them) after k steps of b * ii cycles."""
    b = next((c for c in (32, 16, 8, 4, 2, 1) if tokens % c == 0), 1)
    k = int(rng.integers(1, 9))
    step = b * max(ii, 1)
    return TokenSchedule((Block(first + (k - 1) * step, ((tokens // b, k * step), (b, max(ii, 1) if b > 1 else 0))),))


def bursty(graph: DataflowGraph, seed: int = 0) -> DataflowGraph:
    rng = np.random.default_rng(seed)
    streams = []
    for s in graph.streams.values():
        src = _burst(s.tokens, graph.kernels[s.src].delay, 1, rng)
        dst = _burst(s.tokens, 0, graph.consume_ii(s.name), rng)
        streams.append(dataclasses.replace(s, src_schedule=src, dst_schedule=dst))
    return DataflowGraph(list(graph.kernels.values()), streams)


def measure(graph: DataflowGraph) -> dict:
    t = time.perf_counter()
    prog = compile_events(graph, cache=False)
    t_compile = time.perf_counter() - t
    t = time.perf_counter()
    free = simulate(prog, unbounded=True)
    t_free = time.perf_counter() - t
    depths = no_stall_depths(prog)
    t = time.perf_counter()
    tight = simulate(prog, depths)
    t_tight = time.perf_counter() - t
    assert tight.makespan == free.makespan
    return {"events": prog.n_events, "compile_s": t_compile, "unbounded_s": t_free, "no_stall_s": t_tight,
            "makespan": free.makespan,
            "events_per_s": prog.n_events / (t_compile + t_free)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        steady = random_dag(n, seed=args.seed)
        burst = bursty(steady, seed=args.seed)
        for rep in range(args.repeats):          # paired: steady then bursty, alternating
            for kind, g in (("steady", steady), ("bursty", burst)):
                r = measure(g)
                rows.append({"kernels": n, "kind": kind, "repeat": rep, **r})
                print(f"{n:>6} kernels {kind:>6}: {r['events']:>9} events, compile {r['compile_s']:.2f} s, "
                      f"unbounded {r['unbounded_s']:.2f} s, no-stall {r['no_stall_s']:.2f} s, "
                      f"{r['events_per_s'] / 1e6:.2f} M events/s", flush=True)
    summary = {}
    for n in args.sizes:
        med = {kind: {k: float(np.median([r[k] for r in rows if r["kernels"] == n and r["kind"] == kind]))
                      for k in ("events", "compile_s", "unbounded_s", "no_stall_s", "events_per_s")}
               for kind in ("steady", "bursty")}
        ratio = med["bursty"]["events_per_s"] / med["steady"]["events_per_s"]
        summary[str(n)] = {**med, "rate_ratio_bursty_over_steady": ratio}
        print(f"{n} kernels: bursty / steady event rate {ratio:.2f} (medians of {args.repeats})")
    write_json_atomic(args.output, {"machine": platform.machine(), "python": platform.python_version(),
                                    "rows": rows, "summary": summary})


if __name__ == "__main__":
    main()
