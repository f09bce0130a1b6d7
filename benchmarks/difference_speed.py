"""Time the three difference-LP methods (flow, highs, cvxpy) on random DAGs.

Three families, ~2.5 arcs per node:

- ``uniform``: each arc joins two random nodes, oriented along a hidden random order; nodes
  labelled randomly; lower 0..20, cost 0..5 (shallow in hops: long arcs everywhere);
- ``local``: each arc joins nodes at most 50 apart in the hidden order, labelled randomly;
  lower 0..20, cost 0..5 (deep);
- ``pipeline``: FIFO-sizing-like: nodes in topological (kernel) order, each arc reads from a
  node a geometric number of steps back (10% from anywhere earlier); lower 1..200 cycles,
  cost = stream width 8..512 bits (deep, large weights).

Each run is a fresh process with an outer timeout (solver time limits are not always honoured).
Prints a markdown table; ``--json FILE`` also writes one record per run.

    python benchmarks/difference_speed.py                      # 1k, 10k, 100k; all families
    python benchmarks/difference_speed.py --sizes 1000 10000 --families uniform --timeout 60
"""

import argparse
import json
import multiprocessing as mp
import platform
import sys
import time

import numpy as np

METHODS = ("flow", "highs", "cvxpy")
FAMILIES = ("uniform", "local", "pipeline")


def random_dag(n: int, family: str, seed: int = 0, arcs_per_node: float = 2.5):
    """``(src, dst, lower, cost)`` of a random DAG of ``family`` on ``n`` nodes."""
    rng = np.random.default_rng(seed)
    m = int(arcs_per_node * n)
    if family == "pipeline":
        return _pipeline(rng, n, m)
    if family == "uniform":
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        a, b = np.minimum(a, b), np.maximum(a, b)
    else:
        a = rng.integers(0, n, m)
        b = a + rng.integers(1, 51, m)
    keep = (a != b) & (b < n)
    perm = rng.permutation(n)
    src, dst = perm[a[keep]], perm[b[keep]]
    lower = rng.integers(0, 21, len(src)).astype(np.float64)
    cost = rng.integers(0, 6, len(src)).astype(np.float64)
    return src, dst, lower, cost


def _pipeline(rng: np.random.Generator, n: int, m: int):
    dst = rng.integers(1, max(n, 2), m)
    near = rng.geometric(0.5, m)
    far = 1 + np.floor(rng.random(m) * dst).astype(np.int64)
    src = np.maximum(dst - np.where(rng.random(m) < 0.9, near, far), 0)
    keep = (src != dst) & (dst < n)
    src, dst = src[keep], dst[keep]
    lower = rng.integers(1, 201, len(src)).astype(np.float64)
    cost = (2.0 ** rng.integers(3, 10, len(src)))
    return src, dst, lower, cost


def _child(queue, n: int, family: str, method: str, seed: int) -> None:
    from dfopt.lp import solve_difference_lp

    src, dst, lower, cost = random_dag(n, family, seed)
    start = time.perf_counter()
    result = solve_difference_lp(n, src, dst, lower, cost, method=method, time_limit=3600.0)
    total = time.perf_counter() - start
    queue.put({"objective": result.objective, "time_s": total,
               "stats": {k: v for k, v in result.stats.items() if isinstance(v, (int, float, str))}})


def run_one(n: int, family: str, method: str, seed: int, timeout: float) -> dict:
    """One timed run in a fresh process; ``status`` is ok, timeout or error."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, n, family, method, seed))
    start = time.perf_counter()
    proc.start()
    proc.join(timeout)
    record = {"n": n, "family": family, "method": method, "seed": seed}
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return dict(record, status="timeout", time_s=time.perf_counter() - start)
    if queue.empty():
        return dict(record, status="error", exitcode=proc.exitcode)
    return dict(record, status="ok", **queue.get())


def table(records: list[dict], timeout: float) -> str:
    """A markdown table: one row per (family, n), one column per method."""
    lines = ["| family | nodes | arcs | " + " | ".join(f"{m} (s)" for m in METHODS) + " | objectives agree |",
             "|---|---:|---:|" + "---:|" * len(METHODS) + "---|"]
    keys = sorted({(r["family"], r["n"]) for r in records}, key=lambda k: (FAMILIES.index(k[0]), k[1]))
    for family, n in keys:
        rows = {r["method"]: r for r in records if (r["family"], r["n"]) == (family, n)}
        cells = [_cell(rows.get(m), timeout) for m in METHODS]
        objs = [r["objective"] for r in rows.values() if r["status"] == "ok"]
        agree = "n/a" if len(objs) < 2 else (
            "yes" if max(objs) - min(objs) <= 1e-6 * max(1.0, abs(objs[0])) else "NO")
        arcs = len(random_dag(n, family)[0])
        lines.append(f"| {family} | {n} | {arcs} | " + " | ".join(cells) + f" | {agree} |")
    return "\n".join(lines)


def _cell(record: dict | None, timeout: float) -> str:
    if record is None:
        return "-"
    if record["status"] == "timeout":
        return f"> {timeout:g}"
    if record["status"] != "ok":
        return "error"
    return f"{record['time_s']:.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run (outer, process level)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the records to this file")
    args = parser.parse_args(argv)
    records = []
    for family in args.families:
        for n in args.sizes:
            for method in args.methods:
                rec = run_one(n, family, method, args.seed, args.timeout)
                records.append(rec)
                print(f"{family:8s} n={n:<7d} {method:6s} {rec['status']:8s} "
                      f"{rec.get('time_s', float('nan')):8.2f}s", file=sys.stderr, flush=True)
    print(f"\nDifference-LP methods, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, timeout {args.timeout:g} s per run\n")
    print(table(records, args.timeout))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
