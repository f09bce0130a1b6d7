"""Every shipped sparse kernel (``instances/sparse/*.json``) with both formulations side by side,
in one run: the estimated cycles and DRAM words of ``cpsat`` and of Stardust's fixed rules
(``stardust``) and their ratios (geomean over the kernels), the co-iteration method the model
picks at every join against the baseline's bit vectors, the memories it binds, solve and check
times, and the token-level simulator's speed (tokens per second of the run made while preparing).

**The matrix sweep**: the 2-D kernels SpMV, Plus2, element-wise multiply and SpGEMM on every
shipped matrix (``instances/sparse/data/*.mtx``; Plus2 and the element-wise multiply against a
random matrix of the same shape and nonzero count, SpGEMM as ``A A``), the same figures per
kernel and matrix: which co-iteration the model picks where, and by how much it wins.

Usage::

    python benchmarks/sparse_kernels.py [--time-limit 30] [--kernels spmv-bar,plus2-bar] [--no-sweep]

Results: ``benchmarks/results/sparse-kernels.json``; summarised in docs/sparse.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dfopt  # noqa: E402
from dfopt.io import write_json_atomic  # noqa: E402

SWEEP = {"spmv": "spmv-bar", "plus2": "plus2-bar", "elemmul": "elemmul-knot", "spgemm": "spgemm-knot"}


def sweep_instances(folder: Path) -> list:
    """The sweep's instances, written into ``folder`` (data paths absolute)."""
    out = []
    for matrix in sorted((ROOT / "instances" / "sparse" / "data").glob("*.mtx")):
        import scipy.io

        nnz = int(scipy.io.mmread(matrix).tocoo().nnz)
        for kernel, template in SWEEP.items():
            d = json.loads((ROOT / "instances" / "sparse" / f"{template}.json").read_text())
            tensors = d["sparse"]["tensors"]
            tensors["A"]["data"] = str(matrix)
            if kernel in ("plus2", "elemmul"):
                tensors["B"]["data"] = {"random": {"seed": 1, "nnz": nnz}}
            if kernel == "spgemm":
                tensors["B"]["data"] = str(matrix)
            d["name"] = f"{kernel}-{matrix.stem}"
            path = folder / f"{d['name']}.json"
            path.write_text(json.dumps(d))
            out.append(path)
    return out


def run_kernel(path: Path, time_limit: float) -> dict:
    inst = dfopt.load(str(path))
    start = time.perf_counter()
    sol = dfopt.solve(str(path), formulation="cpsat", time_limit=time_limit)
    wall = time.perf_counter() - start
    sec = sol.sections["sparse"]
    base = sec["baseline"]
    return {
        "kernel": path.stem, "expression": inst.sparse.expression, "status": sol.status.value,
        "checks_ok": all(c.ok for c in sol.checks), "solve_s": round(wall, 3),
        "cycles": sec["cycles"], "dram_words": sec["dram_words"], "pmus": sec["pmus"],
        "baseline_cycles": base["cycles"], "baseline_dram_words": base["dram_words"], "baseline_pmus": base["pmus"],
        "cycles_ratio": sec["cycles"] / base["cycles"], "dram_ratio": (sec["dram_words"] / base["dram_words"])
        if base["dram_words"] else None,
        "par": [sol.decision.inner_par, sol.decision.outer_par],
        "baseline_par": [base["par"]["inner"], base["par"]["outer"]],
        "joins": {j: {"method": v["method"], "work": v["work"], "op": v["op"], "index": v["index"]}
                  for j, v in sec["joins"].items()},
        "memories": dict(Counter(b.memory for b in sol.decision.binding.values())),
        "baseline_memories": dict(Counter(b["memory"] for b in base["binding"].values())),
        "bottleneck": sec["bottleneck"], "tokens": sec["tokens"],
        "tokens_per_second": sol.stats.get("tokens_per_second"), "result_nnz": sec["result"]["nnz"],
    }


def _methods(row: dict) -> str:
    return ", ".join(f"{j}:{v['method']}" for j, v in row["joins"].items())


def geomean(values: list) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--kernels", default="")
    ap.add_argument("--no-sweep", action="store_true", help="only the shipped kernels")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sparse-kernels.json"))
    args = ap.parse_args(argv)
    paths = sorted((ROOT / "instances" / "sparse").glob("*.json"))
    if args.kernels:
        wanted = set(args.kernels.split(","))
        paths = [p for p in paths if p.stem in wanted]
    rows = _run(paths, args.time_limit)
    sweep = []
    if not args.no_sweep:
        with tempfile.TemporaryDirectory() as folder:
            sweep = _run(sweep_instances(Path(folder)), args.time_limit)
    summary = {"kernels": len(rows), "geomean_cycles_ratio": geomean([r["cycles_ratio"] for r in rows]),
               "geomean_dram_ratio": geomean([r["dram_ratio"] for r in rows]),
               "all_checks_ok": all(r["checks_ok"] for r in rows + sweep),
               "methods": dict(Counter(v["method"] for r in rows for v in r["joins"].values())),
               "sweep": {"runs": len(sweep), "geomean_cycles_ratio": geomean([r["cycles_ratio"] for r in sweep]),
                         "methods": dict(Counter(v["method"] for r in sweep for v in r["joins"].values()))}}
    print(f"geomean cycles cpsat/stardust {summary['geomean_cycles_ratio']:.3f}, DRAM words "
          f"{summary['geomean_dram_ratio'] or float('nan'):.3f}; methods {summary['methods']}; sweep "
          f"{summary['sweep']}")
    write_json_atomic(args.out, {"benchmark": "sparse-kernels", "date": datetime.date.today().isoformat(),
                                 "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                                 "time_limit": args.time_limit, "summary": summary, "rows": rows,
                                 "sweep": sweep})
    return 0


def _run(paths: list, time_limit: float) -> list:
    rows = []
    for path in paths:
        row = run_kernel(path, time_limit)
        rows.append(row)
        print(f"{row['kernel']:22} cycles {row['cycles']:>10,} vs {row['baseline_cycles']:>10,} "
              f"({row['cycles_ratio']:.3f})  DRAM {row['dram_words']:>9,} vs {row['baseline_dram_words']:>9,}  "
              f"par {row['par']}  {_methods(row) or '-'}  "
              f"{row['solve_s']:.1f} s", flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
