"""Scheduling time per kernel: dfopt's iterative ILP scheduler against isl's C scheduler, in one
process, side by side, on the shipped schedule instances.

What is timed (dependence analysis excluded from both; it is shared):

* ``isl`` — ``isl_schedule_constraints_compute_schedule`` alone (validity = proximity =
  coincidence = the memory-based dependences), in a fresh isl context;
* ``ours`` — everything after the dependences: the edges' Farkas cones (isl's coefficient sets),
  then the per-dimension ILPs, the satisfaction tests, cuts and refinements
  (:func:`dfopt.models.schedule.scheduler.schedule`), for a preset and a solver backend.

Each pair runs ``--repeat`` times (after one warm-up run each, so imports and solver start-up are
not counted) and keeps the median. Usage::

    python benchmarks/schedule_speed.py [--repeat 5] [--presets pluto,feautrier] [--solvers cpsat,highs]

writes ``benchmarks/results/schedule-speed/records.json`` and ``summary.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.summary_tools import gm  # noqa: E402

from dfopt.instance import load  # noqa: E402
from dfopt.io import write_text_atomic  # noqa: E402
from dfopt.models.schedule.baseline import isl_schedule  # noqa: E402
from dfopt.models.schedule.config import parse_config  # noqa: E402
from dfopt.models.schedule.problem import build_problem  # noqa: E402
from dfopt.models.schedule.scheduler import schedule  # noqa: E402
from dfopt.polyhedral.dependences import dependences  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "schedule-speed"


def _config(problem, strategy: str):
    return parse_config({"strategy": strategy}, [s.name for s in problem.stmts],
                        {s.name: s.iters for s in problem.stmts}, len(problem.params))


def time_ours(program, strategy: str, solver: str, deps) -> tuple[float, dict]:
    t = time.perf_counter()
    problem = build_problem(program, deps=deps)
    out = schedule(problem, _config(problem, strategy), solver=solver)
    total = time.perf_counter() - t
    return total, {"solves": out.solves, "ilp_solve_s": out.solve_time, "ilp_build_s": out.build_time,
                   "rows": len(out.rows), "cuts": out.cuts, "refinements": out.refinements}


def time_isl(program, strategy: str, deps) -> float:
    problem = build_problem(program, deps=deps, cones=False)
    return isl_schedule(problem, _config(problem, strategy))[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--presets", default="pluto,feautrier")
    ap.add_argument("--solvers", default="cpsat,highs")
    ap.add_argument("--kernels", default="")
    args = ap.parse_args(argv)
    files = sorted((ROOT / "instances" / "schedule").glob("*.json"))
    if args.kernels:
        files = [f for f in files if f.stem in args.kernels.split(",")]
    records = []
    for f in files:
        program = load(f).program
        deps = dependences(program)
        for strategy in args.presets.split(","):
            time_isl(program, strategy, deps)
            isl_t = statistics.median(time_isl(program, strategy, deps) for _ in range(args.repeat))
            for solver in args.solvers.split(","):
                time_ours(program, strategy, solver, deps)
                runs = [time_ours(program, strategy, solver, deps) for _ in range(args.repeat)]
                ours = statistics.median(r[0] for r in runs)
                rec = {"kernel": f.stem, "preset": strategy, "solver": solver, "ours_s": ours, "isl_s": isl_t,
                       "ratio": ours / isl_t, **runs[0][1]}
                records.append(rec)
                print(f"{f.stem:10s} {strategy:9s} {solver:6s} ours {ours * 1e3:8.1f} ms  isl {isl_t * 1e3:7.1f} ms  "
                      f"x{ours / isl_t:5.1f}  ({rec['solves']} ILPs, {rec['ilp_solve_s'] * 1e3:.0f} ms in solvers)",
                      flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "repeat": args.repeat,
            "date": time.strftime("%Y-%m-%d")}
    write_text_atomic(OUT / "records.json", json.dumps({"meta": meta, "records": records}, indent=1) + "\n")
    write_text_atomic(OUT / "summary.md", summary(records, meta))
    return 0


def summary(records: list, meta: dict) -> str:
    lines = ["# Scheduling time: dfopt's per-dimension ILPs vs isl's scheduler", "",
             f"Median of {meta['repeat']} warm runs per cell, one process, {meta['date']}; dependence analysis "
             "excluded from both (see `benchmarks/schedule_speed.py`).", ""]
    combos = sorted({(r["preset"], r["solver"]) for r in records})
    head = "| kernel | " + " | ".join(f"isl {p} (ms)" for p in sorted({c[0] for c in combos})) + " | " + \
        " | ".join(f"{p}/{s} (ms, x isl)" for p, s in combos) + " |"
    lines += [head, "|" + "---|" * (1 + len({c[0] for c in combos}) + len(combos))]
    for k in sorted({r["kernel"] for r in records}):
        rs = {(r["preset"], r["solver"]): r for r in records if r["kernel"] == k}
        isl_cells = [f"{next(r['isl_s'] for r in rs.values() if r['preset'] == p) * 1e3:.1f}"
                     for p in sorted({c[0] for c in combos})]
        ours = [f"{rs[c]['ours_s'] * 1e3:.1f} (x{rs[c]['ratio']:.1f})" if c in rs else "-" for c in combos]
        lines.append(f"| {k} | " + " | ".join(isl_cells) + " | " + " | ".join(ours) + " |")
    lines += ["", "| preset / solver | geomean ours / isl | max | kernels within 5x |", "|---|---|---|---|"]
    for c in combos:
        ratios = [r["ratio"] for r in records if (r["preset"], r["solver"]) == c]
        lines.append(f"| {c[0]} / {c[1]} | {gm(ratios):.2f} | {max(ratios):.1f} | "
                     f"{sum(x <= 5 for x in ratios)} of {len(ratios)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
