"""FIFO sizing at scale, side by side: ``slack`` (the default) and ``witness-lp`` on the
generator's random DAGs (``gen:fifo_random``, the instances of the ``fifo-scale`` suite), one
process, one instance at a time. Per run: total depth (or the chosen objective) over the occupancy
baseline, the solution's bound (the problem's, over every safe assignment), ``witness-lp``'s bound
over the shifts of its base and the headroom (answer / that bound), the time of each step, and
whether every check passed.

    python benchmarks/fifo_witness_lp.py                                  # 1k, 10k, 100k kernels, seed 0
    python benchmarks/fifo_witness_lp.py --sizes 1000 10000 --seeds 0 1 2
    python benchmarks/fifo_witness_lp.py --formulations slack witness-lp flow --time-limit 1200

Results: ``benchmarks/results/fifo-witness-lp.json`` (one record per instance and formulation,
rewritten after every run, so a long run can be stopped and keeps what it finished).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import dfopt
from dfopt.bench.generators import random_fifo_dag
from dfopt.instance import from_dict
from dfopt.io import write_json_atomic

RESULTS = Path(__file__).parent / "results" / "fifo-witness-lp.json"
KEY = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000], help="kernel counts")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="generator seeds")
    p.add_argument("--formulations", nargs="+", default=["slack", "witness-lp"])
    p.add_argument("--objective", default="depth", choices=sorted(KEY))
    p.add_argument("--time-limit", type=float, default=600.0, help="seconds per solve")
    p.add_argument("-o", "--output", type=Path, default=RESULTS)
    return p


def run_one(inst, formulation: str, objective: str, time_limit: float) -> dict:
    """Solve and check one instance with one formulation; the figures of the record."""
    t0 = time.perf_counter()
    sol = dfopt.solve(inst, formulation=formulation, objective=objective, time_limit=time_limit)
    wall = time.perf_counter() - t0
    sec = sol.sections["fifo"]
    key = KEY[objective]
    base = sec["occupancy_baseline"][key]
    rec = {"formulation": formulation, "status": sol.status.value, "checks_ok": sol.ok,
           "failed_checks": [c.name for c in sol.checks if not c.ok], "objective": sol.objective,
           "occupancy_baseline": base, "ratio": sol.objective / base if base else None,
           "bound": sol.bound, "wall_time_s": round(wall, 3),
           "time_prepare_s": sol.stats.get("time_prepare_s"), "time_solve_s": sol.stats.get("time_solve_s"),
           "time_check_s": sol.stats.get("time_check_s"), "refine_evaluations": sol.stats.get("refine_evaluations"),
           "refine_stopped_by": sol.stats.get("refine_stopped_by")}
    lp = sec.get("witness_lp")
    if lp is not None:
        rec["witness_lp"] = lp
        rec["family_bound"] = lp.get("bound")
        rec["headroom"] = lp.get("headroom")
    return rec


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    out = {"suite": "fifo-witness-lp", "objective": args.objective, "time_limit": args.time_limit,
           "python": platform.python_version(), "runs": []}
    for n in args.sizes:
        for seed in args.seeds:
            t0 = time.perf_counter()
            raw = random_fifo_dag(n, seed)
            inst = from_dict(raw)
            meta = {"instance": raw["name"], "kernels": n, "streams": len(raw["graph"]["streams"]),
                    "time_instance_s": round(time.perf_counter() - t0, 3)}
            for form in args.formulations:
                rec = {**meta, **run_one(inst, form, args.objective, args.time_limit)}
                out["runs"].append(rec)
                write_json_atomic(args.output, out)
                sys.stdout.write(f"{rec['instance']} {form}: {rec['objective']} ({_fmt(rec['ratio'])} x occupancy), "
                                 f"bound {rec['bound']}, family bound {rec.get('family_bound', '-')}, headroom "
                                 f"{_fmt(rec.get('headroom'))}, {rec['wall_time_s']:.1f} s, checks "
                                 f"{'ok' if rec['checks_ok'] else rec['failed_checks']}\n")
                sys.stdout.flush()
    return 0


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.4f}"


if __name__ == "__main__":
    raise SystemExit(main())
