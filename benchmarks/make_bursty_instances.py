"""Writes the random bursty FIFO instances of benchmarks/instances/bursty/ (deterministic), the
``fifo-bursty`` suite's generated half (``dfopt.bench.bursty_gen``: tiled matmuls writing each tile
in one burst, steady elementwise kernels, skip connections as fork-joins).

    python benchmarks/make_bursty_instances.py [--out benchmarks/instances/bursty]

Each file is ``bursty-n<kernels>-s<seed>.json``, the same instance as the suite spec
``gen:bursty:n=<kernels>,seed=<seed>``.
"""

from __future__ import annotations

import argparse
import os
import sys

from dfopt.bench.bursty_gen import bursty_dag
from dfopt.io import write_json_atomic

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "instances", "bursty")
#: (kernels, seed): 8 designs from 8 to 200 kernels, one seed each.
SIZES = ((8, 0), (12, 1), (20, 2), (32, 3), (50, 4), (80, 5), (125, 6), (200, 7))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=OUT, help="output folder")
    args = p.parse_args(argv)
    for n, seed in SIZES:
        inst = bursty_dag(n, seed)
        path = os.path.join(args.out, inst["name"] + ".json")
        write_json_atomic(path, inst, indent=1)
        sys.stdout.write(f"{os.path.relpath(path)}: {n} kernels, {len(inst['graph']['streams'])} streams\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
