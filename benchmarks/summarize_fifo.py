"""Summarise FIFO benchmark records as the tables of docs/benchmarks.md.

Ratios are to the occupancy baseline on the same instance, geometric means over instances;
BRAM18 ratios use (x + 1) / (baseline + 1) since small designs often need no block at all.
``lp only`` is the LP formulation's own depths after repair, before the best-of step.

    python benchmarks/summarize_fifo.py benchmarks/results/fifo-small benchmarks/results/fifo-scale
"""

from __future__ import annotations

import collections
import json
import math
import sys
from pathlib import Path


def load(folder):
    return [json.loads(line) for line in (Path(folder) / "records.jsonl").read_text().splitlines() if line]


def gm(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def table(records):
    base = {(r["instance"], r["seed"]): r["metrics"] for r in records
            if r["formulation"] == "occupancy" and r.get("checks_ok")}
    groups = collections.defaultdict(list)
    for r in records:
        key = (r["n_kernels"] if r["instance"].startswith("rand") else 0, r["formulation"],
               r.get("solver") or "default")
        groups[key].append(r)

    def ratios(ok, metric, shift=0):
        out = []
        for r in ok:
            b = base.get((r["instance"], r["seed"]))
            if b and r["metrics"].get(metric) is not None:
                ref = b["total_depth"] if metric == "lp_total_depth" else b[metric]
                out.append((r["metrics"][metric] + shift) / (ref + shift))
        return out

    lines = ["| graphs | formulation | solver | runs | proven safe | depth / occupancy | lp only / occupancy | "
             "BRAM18 / occupancy | worst depth ratio | median time (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (n, form, solver), runs in sorted(groups.items()):
        ok = [r for r in runs if r.get("checks_ok") and r.get("metrics")]
        depth = ratios(ok, "total_depth")
        times = sorted(r.get("time_total_s") or r.get("wall_time_s") or 0 for r in runs)
        graphs = "shipped (fig8a, fig8f, transformer)" if n == 0 else f"random, {n:,} kernels"
        lines.append(f"| {graphs} | {form} | {solver} | "
                     f"{len(runs)} | {len(ok)} | {fmt(gm(depth))} | {fmt(gm(ratios(ok, 'lp_total_depth')))} | "
                     f"{fmt(gm(ratios(ok, 'bram18', 1)))} | {fmt(max(depth, default=None))} | "
                     f"{fmt(times[len(times) // 2], 2)} |")
    return "\n".join(lines)


def main(folders):
    out = []
    for folder in folders:
        out += [f"### {Path(folder).name}", "", table(load(folder)), ""]
    text = "\n".join(out)
    Path("benchmarks/results/fifo-summary.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:] or ["benchmarks/results/fifo-small"])
