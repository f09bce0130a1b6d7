"""Does a per-kernel Optuna exploration find better schedules than the fixed 29-point list?

For each kernel of ``instances/schedule`` (PolyBench/C 4.2.1 + trsm-npu), in one run:

1. **explore** — :func:`dfopt.explore.explore` with ``--trials`` trials (default 25), objective
   ``runtime`` (the measured run time of the generated C, min of ``--repeats`` runs), TPE with a
   fixed seed, at ``--tune-dataset`` (default ``medium``), over :data:`SPACE`: strategy {pluto, isl,
   feautrier, tensor} x tiling {none, 8, 16, 32, 64, 128, [16, 128], [32, 32, 128]} x wavefront x
   fusion {smart, max, min} x auto_vectorize: 384 points, which contain every one of the 29 candidates of
   ``benchmarks/schedule_tuned.json`` (:func:`fixed_points_outside`; a list of sizes is applied
   member by member of each permutable band, reused cyclically, so every point is legal to
   express; wavefront without tiling changes nothing). Per kernel: the chosen options, the best
   time at the tune dataset, the trials by state, the infeasible ones by stage, the distinct codes
   and the wall time.
2. **measure** — at ``--dataset`` (default ``large``; a kernel whose original takes more than 60 s
   there, in its first run, is measured at ``medium`` instead and marked, as in
   ``benchmarks/schedule_runtime.py``) four variants in ONE interleaved
   :meth:`~dfopt.explore.runtime.RuntimeMeasure.measure_all` (round ``r`` runs every variant once,
   ``--repeat`` rounds, default 3; a variant stops after a run longer than 20 s):
   ``original`` (program order, sequential), ``pluto`` (strategy pluto, tiling 32: the
   ``pluto`` variant of ``schedule_runtime.py``), ``fixed`` (the configuration the fixed list chose
   per kernel at MEDIUM, read from ``--tuned``) and ``explore`` (the explore's best, solved with the
   trial's own time limit and seed). Every variant is checked byte for byte against the original
   at mini and small before it is timed (:class:`~dfopt.explore.runtime.RuntimeMeasure`); variants
   whose generated C is identical share one measurement (same ``code_sha1``, same seconds).

Verdict per kernel, explore against the fixed list at ``--dataset``: ``tie`` when both gave the same
code or their min times are within :data:`TIE` (5 %) of each other, else ``beat`` or ``lost``.

Caveats: the machine has 2 cores and other work runs on it at times (the load averages before and
after each kernel are recorded); the interleaving makes that noise hit all variants of a kernel
alike, but the explore's own trials at the tune dataset are timed one after another, so a busy
moment can favour or hurt one trial. Both the fixed list and the explore choose at MEDIUM, where
several kernels run in well under a millisecond (noise and fork/join dominate), and are judged at
LARGE.

Usage::

    python benchmarks/explore_schedules.py [--kernels gemm,lu] [--trials 25] [--tune-dataset medium]
                                           [--dataset large] [--repeats 3] [--repeat 3] [--seed 0]
                                           [--work DIR] [--out DIR] [--tuned FILE] [--measure-only]

``--measure-only`` explores nothing: it measures again the choices of the records in ``--out`` (on a
quieter machine, say) and keeps each record's earlier measurement under ``earlier_measurements``.

Results go to ``--out`` (default ``benchmarks/results/explore-schedules/``): ``records.jsonl`` (one
record per kernel; records of kernels not run this time are kept) and ``summary.md`` (made from all
records). The studies (journal, trials.csv, plots) go to ``--work`` (default a temporary folder,
removed at the end).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))      # (a site-packages ``benchmarks`` may shadow this folder)

from schedule_runtime import (  # noqa: E402
    FIXED_VARIANTS,
    LONG_RUN_S,
    THREADS,
    all_kernels,
    compiler_version,
    describe,
    fmt_s,
    geomean,
    measure_variants,
    shown,
    tune_candidates,
)

from dfopt.errors import DfoptError  # noqa: E402
from dfopt.explore import explore  # noqa: E402
from dfopt.explore.report import decoded  # noqa: E402
from dfopt.explore.runtime import CHECK_DATASETS, TIME_FLAGS, Measurement  # noqa: E402
from dfopt.instance import load  # noqa: E402
from dfopt.models.schedule.config import PRESETS  # noqa: E402
from dfopt.progress import make_reporter, reporting  # noqa: E402

INSTANCES = ROOT / "instances" / "schedule"
OUT = ROOT / "benchmarks" / "results" / "explore-schedules"
TUNED = ROOT / "benchmarks" / "schedule_tuned.json"

#: The explored space: the fixed list's axes, wider tiling (also per-member lists), fusion and
#: auto_vectorize for every strategy.
SPACE: dict[str, dict] = {
    "strategy": {"choices": ["pluto", "isl", "feautrier", "tensor"]},
    "tiling": {"choices": [None, 8, 16, 32, 64, 128, [16, 128], [32, 32, 128]]},
    "wavefront": {"choices": [False, True]},
    "fusion": {"choices": ["smart", "max", "min"]},
    "auto_vectorize": {"choices": [False, True]},
}
#: The option values a candidate leaves out (None: the strategy's preset decides).
DEFAULTS = {"tiling": None, "wavefront": False, "fusion": "smart", "auto_vectorize": None}
TIE = 0.05                # explore and fixed within 5 % of each other: a tie
VARIANTS = ("original", "pluto", "fixed", "explore")
PLUTO: dict = dict(FIXED_VARIANTS["pluto"] or {})
POLYTOPS_OVER_PLUTO = 1.8


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- the space

def full_point(options: dict, keys) -> dict:
    """``options`` (a fixed-list candidate) with every parameter of the space spelled out."""
    out = {**DEFAULTS, **options}
    if out["auto_vectorize"] is None:
        out["auto_vectorize"] = bool(PRESETS[out.get("strategy", "pluto")].get("auto_vectorize", False))
    return {k: out.get(k) for k in keys}


def fixed_points_outside(space: dict) -> list[dict]:
    """The fixed list's candidates that are not points of ``space`` (empty: the space contains them)."""
    outside = []
    for c in tune_candidates():
        if set(c) - set(space):
            outside.append(c)
            continue
        point = full_point(c, space)
        if any(point[k] not in space[k]["choices"] for k in space):
            outside.append(c)
    return outside


def space_size(space: dict) -> int:
    return math.prod(len(spec["choices"]) for spec in space.values())


def is_fixed_point(values: dict, space: dict) -> bool:
    return any(full_point(c, space) == values for c in tune_candidates())


# ---------------------------------------------------------------------------------------------- explore

def explore_kernel(name: str, work: Path, trials: int, dataset: str, repeats: int, seed: int,
                   space: dict) -> dict:
    """The study of one kernel: its best configuration, counts by state and stage, its trials."""
    inst = load(INSTANCES / f"{name}.json")
    t0 = time.perf_counter()
    try:
        with reporting(make_reporter(sys.stderr)):
            result = explore(inst, trials=trials, out_dir=work / name, space=space, dataset=dataset,
                             repeats=repeats, seed=seed)
    except DfoptError as err:
        return {"dataset": dataset, "error": f"{type(err).__name__}: {err}",
                "wall_s": round(time.perf_counter() - t0, 1)}
    config, s = result.config, result.summary
    rows = []
    for t in sorted(result.study.get_trials(deepcopy=False), key=lambda t: t.number):
        fig = t.user_attrs.get("figures", {})
        values = decoded(config, t)
        rows.append({"number": t.number, "values": values, "state": t.state.name,
                     "feasible": t.user_attrs.get("feasible"), "stage": t.user_attrs.get("stage"),
                     "reason": (t.user_attrs.get("reason") or "")[:200] or None,
                     "runtime": fig.get("runtime"), "code_hash": fig.get("code_hash"),
                     "same_as": t.user_attrs.get("same_as"), "fixed_point": is_fixed_point(values, space)})
    entry: dict = {"dataset": dataset, "trials": s.get("trials"), "states": s.get("states"),
                   "feasible": s.get("feasible"), "infeasible_by_stage": s.get("infeasible_by_stage", {}),
                   "distinct_points": len({json.dumps(r["values"], sort_keys=True) for r in rows}),
                   "distinct_codes": len({r["code_hash"] for r in rows if r["code_hash"]}),
                   "fixed_points_tried": len({json.dumps(r["values"], sort_keys=True) for r in rows
                                              if r["fixed_point"]}),
                   "trial_time_limit": config.trial_time_limit, "seed": seed, "repeats": repeats,
                   "wall_s": round(time.perf_counter() - t0, 1), "trials_table": rows}
    if not result.best:
        entry["error"] = "no feasible trial"
        return entry
    best = result.best[0]
    values = decoded(config, best)
    overrides, _ = config.overrides(values)
    fig = best.user_attrs.get("figures", {})
    entry.update(best_trial=best.number, values=values, options=overrides, min=best.values[0],
                 original_min=fig.get("original_s"), code_hash=fig.get("code_hash"))
    return entry


# ---------------------------------------------------------------------------------------------- measure

def variant_record(options: dict | None, m: Measurement, orig: Measurement) -> dict:
    return {"options": options, "seconds": list(m.seconds), "min": m.min, "median": m.median,
            "check": dict(m.checks), "check_ok": m.checked, "checksum": m.checksum,
            "checksum_ok": (m.checksum == orig.checksum) if m.checksum and orig.checksum else None,
            "code_sha1": m.code_hash, "solve_s": round(m.solve_s, 3) if m.solve_s is not None else None,
            "schedule": m.schedule, "tiled_schedule": m.tiled_schedule, "error": m.error}


def measure_kernel(name: str, dataset: str, repeat: int, fixed: dict | None, explored: dict | None,
                   solve_settings: dict) -> dict:
    """The four variants of one kernel in one interleaved run (a missing one is an error)."""
    inst = load(INSTANCES / f"{name}.json")
    variants: dict = {"original": None, "pluto": PLUTO}
    if fixed is not None:
        variants["fixed"] = fixed
    if explored is not None:
        variants["explore"] = {**explored, **solve_settings}
    names = list(variants)
    rt, note, results = measure_variants(inst, name, dataset, repeat, variants, log=log, width=16)
    orig = results[0]
    out = {v: variant_record(variants[v], m, orig) for v, m in zip(names, results)}
    if "explore" in out:
        out["explore"]["options"] = explored
    for v, why in (("fixed", "no fixed-list configuration for this kernel (schedule_runtime.py --tune)"),
                   ("explore", "the exploration found no feasible configuration")):
        if v not in out:
            out[v] = variant_record(None, Measurement(rt.dataset, error=why), orig)
    return {"dataset": rt.dataset, "dataset_note": note, "sizes": rt.program.sizes[rt.dataset],
            "variants": {v: out[v] for v in VARIANTS}}


def good(v: dict | None) -> bool:
    return v is not None and v.get("min") is not None and not v.get("error")


def speedup(variants: dict, v: str, ref: str) -> float | None:
    a, b = variants.get(ref), variants.get(v)
    return a["min"] / b["min"] if good(a) and good(b) and a is not None and b is not None else None


def verdict(variants: dict) -> str | None:
    """explore against the fixed list: beat, tie (same code, or within TIE) or lost; None: no comparison."""
    f, e = variants.get("fixed"), variants.get("explore")
    if not (good(f) and good(e)) or f is None or e is None:
        return None
    if f["code_sha1"] == e["code_sha1"]:
        return "tie"
    r = f["min"] / e["min"]
    return "beat" if r > 1 + TIE else "lost" if r < 1 / (1 + TIE) else "tie"


def machine() -> dict:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version()}


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def run_kernel(name: str, args, work: Path, tuned: dict, meta: dict, previous: dict | None = None) -> dict:
    """Explore (or, with ``previous``, take that record's exploration) and measure one kernel."""
    load_before = load_average()
    if previous is None:
        log(f"{name}: explore, {args.trials} trials at {args.tune_dataset} ...")
        ex = explore_kernel(name, work, args.trials, args.tune_dataset, args.repeats, args.seed, SPACE)
        explore_date = meta["date"]
    else:
        log(f"{name}: the exploration of {previous.get('explore_date', previous.get('date'))} ...")
        ex = previous["explore"]
        explore_date = previous.get("explore_date", previous.get("date"))
    stages = ", ".join(f"{k} {v}" for k, v in ex.get("infeasible_by_stage", {}).items()) or "none"
    chosen = describe(ex["options"]) if ex.get("options") else "-"
    log(f"  {ex.get('feasible', 0)}/{ex.get('trials', 0)} feasible (infeasible by stage: {stages}), "
        f"{ex.get('distinct_codes', 0)} distinct codes; best {chosen}"
        f" {fmt_s(ex.get('min'))} (original {fmt_s(ex.get('original_min'))}) [{ex['wall_s']:.0f} s]"
        + (f"; ERROR {ex['error']}" if ex.get("error") else ""))
    fixed_entry = tuned.get(name) or {}
    fixed = fixed_entry.get("options")
    log(f"{name}: measuring original, pluto, fixed ({describe(fixed) if fixed else '-'}), explore at "
        f"{args.dataset} ...")
    t = time.perf_counter()
    settings = {"time_limit": ex.get("trial_time_limit"), "seed": ex.get("seed", args.seed)}
    measured = measure_kernel(name, args.dataset, args.repeat, fixed, ex.get("options"), settings)
    variants = measured["variants"]
    for v, r in variants.items():
        if r["error"]:
            log(f"  ERROR {v}: {r['error']}")
    rec = {"kernel": name, **measured,
           "explore": ex, "fixed": {"options": fixed, "dataset": fixed_entry.get("dataset"),
                                    "min": fixed_entry.get("min"), "original_min": fixed_entry.get("original_min"),
                                    "candidates": len(fixed_entry.get("candidates", [])),
                                    "distinct_codes": fixed_entry.get("distinct_codes"),
                                    "tune_time_s": fixed_entry.get("tune_time_s")},
           "speedups": {"explore_over_original": speedup(variants, "explore", "original"),
                        "explore_over_pluto": speedup(variants, "explore", "pluto"),
                        "explore_over_fixed": speedup(variants, "explore", "fixed"),
                        "fixed_over_original": speedup(variants, "fixed", "original"),
                        "fixed_over_pluto": speedup(variants, "fixed", "pluto"),
                        "pluto_over_original": speedup(variants, "pluto", "original")},
           "verdict": verdict(variants),
           "explore_same_code_as_trial": (variants["explore"]["code_sha1"] == ex.get("code_hash")
                                          if ex.get("code_hash") else None),
           "measure_wall_s": round(time.perf_counter() - t, 1), "load_before": load_before,
           "load_after": load_average(), "threads": THREADS, "flags": " ".join(TIME_FLAGS) + " -fopenmp",
           "repeat": args.repeat, **meta, "explore_date": explore_date,
           "explore_repeats": ex.get("repeats", meta["explore_repeats"])}
    if previous is not None:
        rec["earlier_measurements"] = [*previous.get("earlier_measurements", []), earlier(previous)]
    sp = rec["speedups"]
    log(f"  explore {_x(sp['explore_over_original'])} over original, {_x(sp['explore_over_pluto'])} over pluto, "
        f"{_x(sp['explore_over_fixed'])} over fixed: {rec['verdict'] or '-'} [{rec['measure_wall_s']:.0f} s]")
    return rec


def earlier(rec: dict) -> dict:
    """What a record's measurement gave, kept when the same choices are measured again."""
    return {"date": rec.get("date"), "dataset": rec.get("dataset"), "load_before": rec.get("load_before"),
            "load_after": rec.get("load_after"), "min": {v: x.get("min") for v, x in rec["variants"].items()},
            "speedups": rec.get("speedups"), "verdict": rec.get("verdict"),
            "measure_wall_s": rec.get("measure_wall_s")}


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


# ---------------------------------------------------------------------------------------------- summary

def _cell(variants: dict, v: str) -> str:
    r = variants.get(v)
    if r is None:
        return "-"
    if not good(r):
        return "**error**"
    txt = fmt_s(r["min"])
    return txt + " †" if r.get("checksum_ok") is False else txt


def _choices(name: str) -> str:
    return "{" + ", ".join("none" if c is None else str(c) for c in SPACE[name]["choices"]) + "}"


def summary(records: list[dict], wall_s: float | None) -> str:
    meta = records[0] if records else {}
    ex0, cpu = meta.get("explore", {}), meta.get("machine", {})
    trials = "/".join(map(str, sorted({r["explore"].get("trials") or 0 for r in records})))
    tune = "/".join(sorted({r["explore"].get("dataset", "?") for r in records})).upper()
    lines = ["# Per-kernel Optuna exploration against the fixed 29-point list (schedule instances)", "",
             f"Per kernel, `dfopt explore` ran {trials} trials (TPE, seed {ex0.get('seed', '?')}) over "
             f"{space_size(SPACE)} configurations (strategy {_choices('strategy')} x tiling {_choices('tiling')} x "
             f"wavefront x fusion {_choices('fusion')} x auto_vectorize; the space contains all 29 points of the "
             f"fixed list), objective the measured run time at {tune} (min of "
             f"{ex0.get('repeats', meta.get('explore_repeats', '?'))} runs). "
             "Then, at the dataset shown, one interleaved run per kernel measured `original` (program order, "
             "sequential), `pluto` (strategy pluto, tiling 32), `fixed` (the configuration the fixed list of "
             "`benchmarks/schedule_tuned.json` chose at MEDIUM) and `explore` (the study's best). "
             f"gcc `{' '.join(TIME_FLAGS)} -fopenmp` ({meta.get('compiler', '?')}), {THREADS} threads, min of up to "
             f"{meta.get('repeat', '?')} interleaved runs (1 when a run exceeds {LONG_RUN_S:g} s); every variant "
             f"checked byte for byte against the original at {' and '.join(CHECK_DATASETS)} first. Machine: "
             f"{cpu.get('cpu', '?')}, {cpu.get('cpus', '?')} CPUs; date {meta.get('date', '?')}.", ""]
    again = sorted({r["explore_date"] for r in records if r.get("explore_date") not in (None, r.get("date"))})
    if again:
        lines += [f"The explorations ran on {', '.join(again)}; the measurement of the table was made again "
                  f"(`--measure-only`) on {', '.join(sorted({r['date'] for r in records}))}.", ""]
    if wall_s is not None:
        lines += [f"Total wall time of the run: {wall_s / 60:.1f} min ({'the earlier ' if again else ''}explorations "
                  f"{sum(r['explore'].get('wall_s') or 0 for r in records) / 60:.1f} min, measurements "
                  f"{sum(r.get('measure_wall_s') or 0 for r in records) / 60:.1f} min)." + _first_run(records), ""]
    lines += _kernel_table(records) + _geomeans(records) + _verdicts(records) + _studies(records)
    lines += _config_table(records)
    lines += _earlier(records) + _failures(records) + _caveats(records)
    return "\n".join(lines) + "\n"


def _load_range(pairs) -> str:
    loads = [x[0] for pair in pairs for x in pair if x]
    return f"{min(loads):.1f} to {max(loads):.1f}" if loads else "?"


def _caveats(records: list[dict]) -> list[str]:
    meta = records[0] if records else {}
    tune = "/".join(sorted({r["explore"].get("dataset", "?") for r in records})).upper()
    final = "/".join(sorted({r["dataset"] for r in records})).upper()
    now = _load_range((r.get("load_before"), r.get("load_after")) for r in records)
    first = [(r.get("earlier_measurements") or [r])[0] for r in records]
    during = _load_range((e.get("load_before"), e.get("load_after")) for e in first)
    return [
        "## Caveats", "",
        f"- The machine has 2 cores and other work runs on it at times: the 1-minute load average was {now} "
        f"around the kernels of the table's measurement and {during} around the explorations (and their first "
        "measurement). The interleaved rounds make that noise hit the four variants of a kernel alike, but not "
        "equally: a busy core costs a 2-thread OpenMP code (its barriers wait for a descheduled thread) more than "
        f"the sequential original. The explore's trials at {tune} were timed one after another and a point's "
        "first result is kept (a point proposed again is not measured again), so a busy or a lucky moment can "
        f"decide the choice. Min of {meta.get('repeat', '?')} runs is a few percent off, more for kernels that "
        "run in milliseconds.",
        f"- Both the fixed list and the exploration choose at {tune} and are judged at {final}: a choice can be "
        "right at MEDIUM and wrong at LARGE, and at MEDIUM atax, bicg, mvt, gemver and jacobi-1d run in well under "
        "a millisecond (fork/join and noise dominate).",
        f"- The fixed list measured 29 points per kernel; the exploration ran its trial budget over a space of "
        f"{space_size(SPACE)}, its first trials random (TPE's startup; with one seed for all kernels, trial 0 is "
        "the same point everywhere).",
        "- Speedups over `original` include both the schedule and the OpenMP pragmas (2 threads: at most ~2x "
        "from threads).", ""]


def _first_run(records: list[dict]) -> str:
    """The wall time of the run that explored, when the table's measurement was made again."""
    firsts = [(r.get("earlier_measurements") or [{}])[0].get("measure_wall_s") for r in records]
    if not all(firsts) or not any(r.get("earlier_measurements") for r in records):
        return ""
    explored = sum(r["explore"].get("wall_s") or 0 for r in records) + sum(firsts)
    return f" The run that explored and first measured took {explored / 60:.1f} min."


def _kernel_table(records: list[dict]) -> list[str]:
    lines = ["## Times and speedups", "",
             "| kernel | dataset | original | pluto | fixed | explore | explore / original | explore / pluto | "
             "explore / fixed | verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        v, sp = r["variants"], r["speedups"]
        ds = r["dataset"] + (f" ({r['dataset_note']})" if r.get("dataset_note") else "")
        same = " (same code)" if good(v["fixed"]) and v["fixed"]["code_sha1"] == v["explore"]["code_sha1"] else ""
        lines.append(f"| {r['kernel']} | {ds} | " + " | ".join(_cell(v, x) for x in VARIANTS) +
                     f" | {_x(sp['explore_over_original'])} | {_x(sp['explore_over_pluto'])} | "
                     f"{_x(sp['explore_over_fixed'])} | {(r['verdict'] or '-') + same} |")
    return lines + ["", f"Speedup = t_reference / t_explore (min times); verdict: explore against the fixed list, a "
                        f"tie within {TIE:.0%} or with the same generated code; †: time-mode checksum differs "
                        "from the original's.", ""]


def _geomeans(records: list[dict]) -> list[str]:
    lines = ["## Geometric-mean speedups (same run)", "", "| comparison | geomean | kernels | min | max |",
             "|---|---|---|---|---|"]
    for key, label in (("explore_over_original", "explore over original"),
                       ("fixed_over_original", "fixed list over original"),
                       ("explore_over_pluto", "explore over pluto"),
                       ("fixed_over_pluto", "fixed list over pluto"),
                       ("explore_over_fixed", "explore over fixed list"),
                       ("pluto_over_original", "pluto over original")):
        s = {r["kernel"]: r["speedups"][key] for r in records if r["speedups"].get(key)}
        g = geomean(list(s.values()))
        if g is None:
            lines.append(f"| {label} | - | 0 | - | - |")
            continue
        lo, hi = min(s, key=lambda k: s[k]), max(s, key=lambda k: s[k])
        lines.append(f"| {label} | {g:.3f}x | {len(s)} | {s[lo]:.2f}x ({lo}) | {s[hi]:.2f}x ({hi}) |")
    return lines + [""]


def _verdicts(records: list[dict]) -> list[str]:
    counts = {k: [r["kernel"] for r in records if r["verdict"] == k] for k in ("beat", "tie", "lost")}
    n = sum(len(v) for v in counts.values())
    lines = ["## Explore against the fixed list", ""]
    for k, what in (("beat", "explore faster"), ("tie", "tied"), ("lost", "explore slower")):
        share = f"{len(counts[k]) / n:.0%}" if n else "-"
        lines.append(f"- {what}: {len(counts[k])} of {n} ({share}){': ' + ', '.join(counts[k]) if counts[k] else ''}")
    g_ep = geomean([r["speedups"]["explore_over_pluto"] for r in records if r["speedups"].get("explore_over_pluto")])
    g_fp = geomean([r["speedups"]["fixed_over_pluto"] for r in records if r["speedups"].get("fixed_over_pluto")])
    if g_ep is not None and g_fp is not None:
        where = "reaches" if g_ep >= POLYTOPS_OVER_PLUTO else "stays below"
        lines += ["", f"Against PolyTOPS: the paper reports {POLYTOPS_OVER_PLUTO}x over Pluto with per-kernel "
                      f"configurations. Here the exploration gives {g_ep:.2f}x over our `pluto` variant (the fixed "
                      f"list {g_fp:.2f}x in the same run), so dfopt {where} that figure. Not like for like: our "
                      "`pluto` is dfopt's pluto preset tiled by 32 (not the Pluto tool), on 2 cores (the paper used "
                      "more), over these 16 kernels."]
    return lines + [""]


def _studies(records: list[dict]) -> list[str]:
    """What the studies did: how many points and codes they saw, where the best came from."""
    exs = [r["explore"] for r in records if r["explore"].get("trials_table")]
    if not exs:
        return []
    first = [r["kernel"] for r in records if r["explore"].get("best_trial") == 0]
    points = [_points(ex) for ex in exs]
    codes = [ex.get("distinct_codes") or 0 for ex in exs]
    again = sum(1 for ex in exs for t in ex["trials_table"] if t.get("same_as") is not None)
    trials = sum(len(ex["trials_table"]) for ex in exs)
    bad = sum(sum(ex.get("infeasible_by_stage", {}).values()) for ex in exs)
    return ["## What the studies did", "",
            f"- {trials} trials over {len(exs)} kernels, {bad} infeasible; per kernel {min(points)} to {max(points)} "
            f"distinct points and {min(codes)} to {max(codes)} distinct generated codes (many points give one "
            f"code: wavefront without tiling, tile sizes or auto_vectorize that change nothing for a kernel); "
            f"{again} trials were a point proposed again (its result reused).",
            f"- The best was trial 0 (the first random point, the same for every kernel) on {len(first)} kernels"
            f"{': ' + ', '.join(first) if first else ''}.", ""]


def _config_table(records: list[dict]) -> list[str]:
    lines = ["## Chosen configurations", "",
             "| kernel | fixed list (MEDIUM) | explore | explore best | fixed at MEDIUM (earlier run) | "
             "feasible / trials | infeasible by stage | distinct points / codes | fixed points tried | explore wall |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        ex, fx = r["explore"], r["fixed"]
        stages = ", ".join(f"{k} {v}" for k, v in ex.get("infeasible_by_stage", {}).items()) or "-"
        lines.append(f"| {r['kernel']} | {describe(fx.get('options')) if fx.get('options') else '-'} | "
                     f"{describe(ex.get('options')) if ex.get('options') else '-'} | {fmt_s(ex.get('min'))} | "
                     f"{fmt_s(fx.get('min'))} | {ex.get('feasible', 0)} / {ex.get('trials', 0)} | {stages} | "
                     f"{_points(ex)} / {ex.get('distinct_codes', '-')} | {ex.get('fixed_points_tried', '-')} | "
                     f"{ex.get('wall_s', 0):.0f} s |")
    return lines + ["", "The explore's best and the fixed list's time at MEDIUM come from different runs (the "
                        "fixed list's from `schedule_tuned.json`), so they compare only roughly; the table above is "
                        "the measurement. Distinct points: the parameter points the trials ran (the sampler may "
                        "propose a point again; its earlier result is reused, not measured again); distinct codes: "
                        "the generated C they gave (points with one code share one measurement).", ""]


def _points(ex: dict) -> int | str:
    rows = ex.get("trials_table")
    return len({json.dumps(t["values"], sort_keys=True) for t in rows}) if rows else "-"


def _earlier(records: list[dict]) -> list[str]:
    """The geomeans of the earlier measurements of the same choices (``--measure-only``)."""
    runs: dict = {}
    for r in records:
        for k, e in enumerate(r.get("earlier_measurements", [])):
            runs.setdefault(k, []).append(e)
    lines: list[str] = []
    for _, runs_k in sorted(runs.items()):
        if not lines:
            lines = ["## Earlier measurements of the same choices", "",
                     "| measured | kernels | explore / original | fixed / original | explore / pluto | fixed / pluto | "
                     "explore / fixed | beat / tie / lost | 1-min load |", "|---|---|---|---|---|---|---|---|---|"]
        g = {key: geomean([e["speedups"][key] for e in runs_k if (e.get("speedups") or {}).get(key)])
             for key in ("explore_over_original", "fixed_over_original", "explore_over_pluto", "fixed_over_pluto",
                         "explore_over_fixed")}
        v = [e.get("verdict") for e in runs_k]
        loads = [x[0] for e in runs_k for x in (e.get("load_before"), e.get("load_after")) if x]
        lines.append(f"| {min(str(e.get('date')) for e in runs_k)} | {len(runs_k)} | " +
                     " | ".join(_x(g[key]) for key in g) +
                     f" | {v.count('beat')} / {v.count('tie')} / {v.count('lost')} | "
                     f"{min(loads, default=0):.1f} to {max(loads, default=0):.1f} |")
    if lines:
        changed = [r["kernel"] for r in records if r.get("earlier_measurements")
                   and r["earlier_measurements"][0].get("verdict") != r.get("verdict")]
        lines += ["", f"Between the first measurement and the table's, the verdict changed on {len(changed)} of "
                      f"{len(records)} kernels{': ' + ', '.join(changed) if changed else ''}."]
    return lines + [""] if lines else []


def _failures(records: list[dict]) -> list[str]:
    flagged = []
    for r in records:
        if r["explore"].get("error"):
            flagged.append(f"{r['kernel']} / explore study: {r['explore']['error']}")
        for v, x in r["variants"].items():
            if x.get("error"):
                flagged.append(f"{r['kernel']} / {v}: {x['error']}")
            elif x.get("checksum_ok") is False:
                flagged.append(f"{r['kernel']} / {v}: time-mode checksum {x['checksum']} differs from the original's")
        if r.get("explore_same_code_as_trial") is False:
            flagged.append(f"{r['kernel']} / explore: solved again, it gave another code than its trial")
        for row in r["explore"].get("trials_table", []):
            if row["feasible"] is False:
                flagged.append(f"{r['kernel']} / trial {row['number']} ({describe(row['values'])}): "
                               f"{row['stage']}: {row['reason']}")
    loads = [x for r in records for x in (r.get("load_before"), r.get("load_after")) if x]
    lines = ["## Failures and flags", ""] + ([f"- {f}" for f in flagged] or ["- none"]) + [""]
    if loads:
        lines += [f"1-minute load average around the kernels: {min(x[0] for x in loads):.2f} to "
                  f"{max(x[0] for x in loads):.2f} on {records[0].get('machine', {}).get('cpus', '?')} CPUs.", ""]
    return lines


# ---------------------------------------------------------------------------------------------- main

def read_records(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_records(out: Path, records: list[dict]) -> None:
    ordered = sorted(records, key=lambda r: r["kernel"])
    (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ordered))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    ap.add_argument("--trials", type=int, default=25, help="trials per kernel (default 25)")
    ap.add_argument("--tune-dataset", default="medium", choices=("mini", "small", "medium", "large"))
    ap.add_argument("--dataset", default="large", choices=("mini", "small", "medium", "large"))
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per trial (default 3)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds of the measurement (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=None, metavar="DIR",
                    help="folder of the studies (default: a temporary folder, removed)")
    ap.add_argument("--out", type=Path, default=OUT, metavar="DIR",
                    help=f"folder of records.jsonl and summary.md (default {shown(OUT)})")
    ap.add_argument("--tuned", type=Path, default=TUNED, metavar="FILE",
                    help=f"the fixed list's choices (default {shown(TUNED)})")
    ap.add_argument("--measure-only", action="store_true",
                    help="no exploration: measure again the configurations the records in --out chose")
    args = ap.parse_args(argv)
    names = all_kernels()
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()] or names
    unknown = [k for k in kernels if k not in names]
    if unknown:
        ap.error(f"unknown kernels {unknown}; known: {names}")
    outside = fixed_points_outside(SPACE)
    if outside:
        ap.error(f"the space misses fixed-list points: {outside}")
    t0 = time.perf_counter()
    tuned = json.loads(args.tuned.read_text()).get("kernels", {}) if args.tuned.exists() else {}
    meta = {"compiler": compiler_version(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": machine(), "explore_repeats": args.repeats, "space": SPACE}
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    earlier = {r["kernel"]: r for r in read_records(out)}
    if args.measure_only:
        missing = [k for k in kernels if k not in earlier]
        if missing:
            ap.error(f"--measure-only: no record of {missing} in {shown(out / 'records.jsonl')}")
    old = [r for k, r in earlier.items() if k not in kernels]
    new: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="explore-schedules-") as tmp:
        work = args.work if args.work is not None else Path(tmp)
        for name in kernels:
            new.append(run_kernel(name, args, work, tuned, meta, earlier[name] if args.measure_only else None))
            write_records(out, old + new)
            log(f"  [{(time.perf_counter() - t0) / 60:.1f} min so far]")
    wall = time.perf_counter() - t0
    records = sorted(old + new, key=lambda r: r["kernel"])
    write_records(out, records)
    (out / "summary.md").write_text(summary(records, wall if not old else None))
    log(f"total {wall:.0f} s; wrote {shown(out / 'records.jsonl')} and {shown(out / 'summary.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
