"""Write random FIFO-sizing instances (``dfopt.bench.generators.random_fifo_dag``) as JSON files.

    python benchmarks/gen_fifo.py --sizes 10 100 1000 10000 100000 --count 5 --seed 0 \\
        --out benchmarks/data/fifo

writes ``rand-n<size>-s<seed>.json`` (compact JSON) for seeds ``seed .. seed+count-1`` of every
size: the same instances as the suites' ``gen:fifo_random:n=<size>,seed=<seed>`` entries, so a
suite can name them by glob (``benchmarks/data/fifo/rand-n1000-*.json``) instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from dfopt.bench.generators import random_fifo_dag
from dfopt.io import write_text_atomic


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="kernel counts")
    p.add_argument("--count", type=int, default=5, help="instances per size")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--max-fan-in", type=int, default=8)
    p.add_argument("--out", default=os.path.join("benchmarks", "data", "fifo"), help="output folder")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.count < 1 or any(n < 1 for n in args.sizes):
        sys.stderr.write("gen_fifo: --count and every --sizes value must be >= 1\n")
        return 2
    for n in args.sizes:
        for seed in range(args.seed, args.seed + args.count):
            t0 = time.perf_counter()
            inst = random_fifo_dag(n, seed, max_fan_in=args.max_fan_in)
            path = os.path.join(args.out, inst["name"] + ".json")
            write_text_atomic(path, json.dumps(inst, separators=(",", ":")) + "\n")
            sys.stdout.write(f"{path}: {n} kernels, {len(inst['graph']['streams'])} streams "
                             f"({time.perf_counter() - t0:.2f} s)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
