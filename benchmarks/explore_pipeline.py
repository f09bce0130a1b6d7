"""Design-space exploration of the shipped pipeline designs: what 50 trials find against the
default options, the Pareto fronts of latency against utilisation, and one worker against two
on a PostgreSQL study.

Per design of ``instances/pipeline/`` (ffn, mha, gpt2-block, llama-block), in one run:

* **default** — ``dfopt solve`` with the default options (tile 64, 1024 lanes): latency and the
  peak slot utilisation;
* **latency** — ``dfopt explore`` with ``--trials`` trials (default 50), objective ``latency``, TPE,
  over :data:`SPACE` (one tile size, the unroll budget, the placement utilisation limit); the best
  latency found, and the best among the designs whose peak utilisation is at most the default's
  (the fair comparison: a faster design that fills more of the chip is not free);
* **per_kind** — the same over :data:`PER_KIND` (a tile size per op kind);
* **pareto** — the same budget with objectives ``latency`` and ``utilization`` (NSGA-II): the size
  of the feasible Pareto set and its points.

Per study: trials per minute (trial wall time only), the share refused by the precheck, the
infeasible trials by stage and the pruned ones. Every counted design passed every check of
``dfopt solve`` (the trials run it).

``--workers`` compares, on ``--workers-design`` (default llama-block), one worker on a journal
file with two worker processes on one PostgreSQL study (a throwaway server started like the
tests' ``tests/pgserver.py``, or ``--postgres URL``), same budget and seed, without pruning (a
pruned or prechecked trial takes milliseconds, and a study of those measures the workers' start,
not their work): wall time and best latency. ``--workers-only`` runs just that and updates the
``workers`` entry of the output file.

Usage::

    python benchmarks/explore_pipeline.py [--trials 50] [--designs ffn,mha] [--workers]

Results: ``benchmarks/results/explore-pipeline.json`` (and the study folders under ``--work``,
a temporary folder by default).
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
from pathlib import Path

from dfopt.api import solve_instance
from dfopt.explore import explore
from dfopt.explore.evaluate import pipeline_figures
from dfopt.instance import load

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "explore-pipeline.json"
DESIGNS = ("ffn", "mha", "gpt2-block", "llama-block")
#: One tile size for every op, the unroll budget on a log scale (so the sampler can find the largest
#: budget that still fits), and the placement limit (null: the stages' defaults).
SPACE = {
    "default_tile_size": {"choices": [16, 32, 64, 128]},
    "overall_unroll_size": {"low": 256, "high": 8192, "log": True},
    "max_utilization": {"choices": [None, 0.9, 0.95]},
}
#: The same with a tile size per op kind (``tile_size:<kind>``): a larger space.
PER_KIND = {**SPACE, "default_tile_size": {"choices": [16, 32, 64, 128], "per": "kind"}}
TRIAL_TIME_LIMIT = 60.0


def _study(summary: dict, trials: list) -> dict:
    done = [t for t in trials if t.state.name in ("COMPLETE", "PRUNED") and "seconds" in t.user_attrs]
    busy = sum(float(t.user_attrs["seconds"]) for t in done)
    return {"trials": summary["trials"], "states": summary["states"], "feasible": summary["feasible"],
            "precheck_share": summary["precheck_share"], "infeasible_by_stage": summary["infeasible_by_stage"],
            "pruned": summary["states"].get("PRUNED", 0),
            "reused": sum(1 for t in trials if "same_as" in t.user_attrs),
            "trials_per_minute": round(60 * len(done) / busy, 2) if busy else None,
            "wall_s": summary["wall_s"]}


def _single(r, default_latency: float, default_utilization: float) -> dict:
    """The best latency of a single-objective study, and the best at the default's utilisation."""
    feasible = [t for t in r.study.trials if t.user_attrs.get("feasible") and t.values and math.isfinite(t.values[0])]
    fair = [t for t in feasible if t.user_attrs["figures"]["utilization"] <= default_utilization + 1e-12]
    out = _study(r.summary, r.study.trials)
    for key, pool in (("best", feasible), ("best_at_default_utilization", fair)):
        t = min(pool, key=lambda t: (t.values[0], t.number)) if pool else None
        out[key] = None if t is None else {"number": t.number, "latency": t.values[0],
                                           "utilization": t.user_attrs["figures"]["utilization"], "params": t.params}
    if out["best"]:
        out["speedup"] = round(default_latency / out["best"]["latency"], 4)
    if out["best_at_default_utilization"]:
        fair_best = out["best_at_default_utilization"]["latency"]
        out["speedup_at_default_utilization"] = round(default_latency / fair_best, 4)
    return out


def run_design(name: str, trials: int, work: Path, seed: int) -> dict:
    inst = load(ROOT / "instances" / "pipeline" / f"{name}.json")
    t0 = time.perf_counter()
    default = solve_instance(inst, time_limit=TRIAL_TIME_LIMIT, seed=seed)
    figures = pipeline_figures(default)
    rec: dict = {"design": name, "default": {"latency": default.objective, "utilization": figures["utilization"],
                                             "lut": figures["lut"], "ok": default.ok,
                                             "wall_s": round(time.perf_counter() - t0, 2)}}
    sys.stderr.write(f"{name}: default latency {default.objective:.0f}, peak utilisation "
                     f"{figures['utilization']:.3f}\n")

    for label, space in (("latency", SPACE), ("per_kind", PER_KIND)):
        single = explore(inst, trials=trials, out_dir=work / f"{name}-{label}", seed=seed, space=space,
                         objectives=["latency"], trial_time_limit=TRIAL_TIME_LIMIT)
        rec[label] = _single(single, default.objective, figures["utilization"])
        sys.stderr.write(f"{name}: {label} study best {rec[label].get('speedup')}x, at the default's utilisation "
                         f"{rec[label].get('speedup_at_default_utilization')}x\n")

    multi = explore(inst, trials=trials, out_dir=work / f"{name}-pareto", seed=seed, space=SPACE,
                    objectives=["latency", "utilization"], trial_time_limit=TRIAL_TIME_LIMIT)
    rec["pareto"] = {**_study(multi.summary, multi.study.trials), "size": len(multi.best),
                     "points": sorted([list(t.values) for t in multi.best])}
    dominated = any(all(a <= b for a, b in zip(p, (default.objective, figures["utilization"])))
                    and list(p) != [default.objective, figures["utilization"]] for p in rec["pareto"]["points"])
    rec["pareto"]["dominates_default"] = dominated
    sys.stderr.write(f"{name}: Pareto set of {len(multi.best)} designs; one dominates the default: {dominated}\n")
    return rec


def run_workers(name: str, trials: int, work: Path, seed: int, url: str | None) -> dict:
    """One worker on a journal file against two on one PostgreSQL study, same budget."""
    inst = load(ROOT / "instances" / "pipeline" / f"{name}.json")
    out: dict = {"design": name, "trials": trials}
    for label, workers in (("one_journal", 1), ("two_postgresql", 2)):
        t0 = time.perf_counter()
        kwargs = {} if workers == 1 else {"storage": url, "study": f"bench-{name}-{int(time.time())}"}
        r = explore(inst, trials=trials, out_dir=work / f"{name}-{label}", seed=seed, space=SPACE, workers=workers,
                    objectives=["latency"], trial_time_limit=TRIAL_TIME_LIMIT, prune=False, **kwargs)
        wall = time.perf_counter() - t0
        best = r.best[0].values[0] if r.best else None
        out[label] = {"wall_s": round(wall, 2), "best_latency": best, "trials": len(r.study.trials),
                      "workers": sorted({t.user_attrs.get("worker", "").split(":")[-1] for t in r.study.trials})}
        sys.stderr.write(f"{name} {label}: {wall:.1f} s, best {best}\n")
    out["wall_ratio"] = round(out["two_postgresql"]["wall_s"] / out["one_journal"]["wall_s"], 3)
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]    # other work on the machine
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--designs", default=",".join(DESIGNS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default=None, help="folder for the studies (default: a temporary one)")
    p.add_argument("--workers", action="store_true", help="also one worker vs two on PostgreSQL")
    p.add_argument("--workers-design", default="llama-block")
    p.add_argument("--workers-trials", type=int, default=30)
    p.add_argument("--postgres", default=None, help="an SQLAlchemy URL (default: start a throwaway server)")
    p.add_argument("--workers-only", action="store_true", help="only the workers comparison, into the existing output")
    p.add_argument("-o", "--output", default=str(OUT))
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        if args.workers_only:
            doc = json.loads(Path(args.output).read_text())
            args.workers = True
        records = [] if args.workers_only else [run_design(d, args.trials, work, args.seed)
                                               for d in args.designs.split(",") if d]
        if not args.workers_only:
            doc = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": platform.node(),
                   "python": platform.python_version(), "trials": args.trials, "seed": args.seed, "space": SPACE,
                   "per_kind": PER_KIND, "trial_time_limit": TRIAL_TIME_LIMIT, "designs": records}
        if args.workers:
            if args.postgres:
                doc["workers"] = run_workers(args.workers_design, args.workers_trials, work, args.seed, args.postgres)
            else:
                sys.path.insert(0, str(ROOT / "tests"))
                from pgserver import postgres_server

                with postgres_server() as url:
                    doc["workers"] = run_workers(args.workers_design, args.workers_trials, work, args.seed, url)
    from dfopt.io import write_json_atomic

    write_json_atomic(args.output, doc)
    sys.stderr.write(f"written {args.output}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
