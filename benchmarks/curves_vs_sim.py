"""The paper's closed-form token curves against exact simulation (docs/fifo.md, token curves).

For a producer -> consumer pair whose consumer starts ``delay`` cycles after the producer, compares
StreamTensor's closed forms (``paper_max_tokens``) with the no-stall depth measured by the token
simulator (the consumer held back by a one-token timer stream). Writes
``benchmarks/results/curves_vs_sim.json`` and prints a markdown summary.

    python benchmarks/curves_vs_sim.py
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import time

from dfopt.ir import DataflowGraph, Kernel, Stream
from dfopt.models.fifo.curves import exact_max_tokens, paper_max_tokens
from dfopt.sim import simulate

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "curves_vs_sim.json")


def simulated_depth(T, D, a, b, delay):
    kernels = [Kernel("timer", delay=max(delay - 1, 0)), Kernel("src", delay=D, ii=a), Kernel("dst", ii=b)]
    g = DataflowGraph(kernels, [Stream("t", "timer", "dst", 1), Stream("e", "src", "dst", T)])
    return simulate(g, unbounded=True).max_occupancy["e"]


def main():
    t0 = time.perf_counter()
    cases = collections.Counter()
    diffs = collections.defaultdict(collections.Counter)
    exact_mismatch = 0
    rows = 0
    for T, D, a, b in itertools.product((8, 32, 64, 256), (0, 3, 10), (1, 2, 4), (1, 2, 4)):
        regime = "source faster" if a < b else ("equal rates" if a == b else "source slower")
        for delay in range(D, D + 2 * T * max(a, b) // 4 + 2, max(1, T // 16)):
            sim = simulated_depth(T, D, a, b, delay)
            exact_mismatch += exact_max_tokens(T, D, a, b, delay) != sim
            diffs[regime][paper_max_tokens(T, D, a, b, delay) - sim] += 1
            cases[regime] += 1
            rows += 1
    summary = {
        "cases": rows, "exact_closed_form_mismatches": exact_mismatch,
        "paper_minus_simulated": {r: dict(sorted(c.items())) for r, c in diffs.items()},
        "wall_time_s": round(time.perf_counter() - t0, 2),
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as fh:
        json.dump(summary, fh, indent=1)
    print(f"{rows} (T, D, II_src, II_dst, delay) cases; exact closed form vs simulation: {exact_mismatch} mismatches\n")
    print("| regime | cases | paper = sim | paper = sim - 1 | paper = sim + 1 | other |")
    print("|---|---|---|---|---|---|")
    for regime, c in diffs.items():
        other = sum(v for k, v in c.items() if k not in (-1, 0, 1))
        print(f"| {regime} | {cases[regime]} | {c[0]} | {c[-1]} | {c[1]} | {other} |")


if __name__ == "__main__":
    main()
