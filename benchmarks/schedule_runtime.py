"""Run time of the code generated for the ``problem: schedule`` instances (PolyBench/C 4.2.1 + trsm-npu).

For each kernel of ``instances/schedule`` these variants are compiled and timed (``--variants`` picks some):

* ``original``  — the program's own 2d+1 schedule (``program.schedule``), sequential C (no OpenMP pragma);
* ``isl``       — isl's own scheduler (``formulation: isl``), tiling 32;
* ``pluto``     — our scheduler, ``strategy: pluto``, tiling 32: the default preset (``fusion: smart``);
* ``pluto-max`` — the same with ``fusion: max`` (the default before smart fusion);
* ``tensor``    — our scheduler, ``strategy: tensor``, tiling 32;
* ``tuned``     — our scheduler with the per-kernel configuration of ``benchmarks/schedule_tuned.json``;
* ``polly``     — LLVM Polly on the original order: its sequential C compiled with ``clang -O3 -mllvm -polly
  -mllvm -polly-parallel -fopenmp`` (Debian's clang and libomp packages; Polly comes with clang's LLVM),
  the polyhedral optimiser a user would pick instead; left out when there is no clang.

Method
------
The solve, check and timing of every variant are :class:`dfopt.explore.runtime.RuntimeMeasure`'s (its
docstring has the details); this script chooses the variants, the dataset and the run limits, and writes
the records and the summary.

* Correctness first: every variant is compiled with ``-O2 -ffp-contract=off -fopenmp`` in ``check``
  mode at the ``mini`` dataset, run with 2 threads, and its output (the raw bytes of every array) must
  equal the original's exactly. Because mini extents (20..30) are smaller than a 32 tile, the same is
  done at ``small`` (60..80: several and partial tiles) as an extra check. A mismatch is an error in
  the record (named by its stage: ``solve``, ``check mini``, ``check small``, ``compile``, ``run``) and
  the variant is never timed. In ``time`` mode the program also prints a checksum of all arrays; it is
  compared with the original's (``checksum_ok``): without ``-ffast-math`` and without FMA (no
  ``-march=native``) gcc keeps the floating-point operation order, so a legal schedule gives the same
  checksum bit for bit.
* Timing: ``gcc -O3 -fopenmp`` (no ``-march=native``), ``OMP_NUM_THREADS=2``, ``time`` mode at
  ``--dataset`` (default ``large``): the program times ``kernel_body()`` alone (``omp_get_wtime``),
  not initialisation. Runs are interleaved (round ``r`` runs every variant once) so slow drifts of
  the machine hit all variants alike; ``--repeat`` rounds (default 3), at least 15 for a kernel
  whose original runs in under 0.1 s (on the shared machine two runs of the same milliseconds-long
  code differed up to 3.7x), but a variant stops after a run longer than ~20 s. min and median are
  kept; the tables use min. Variants whose generated C is identical share one measurement (the same
  ``code_sha1``, the same seconds). If the original takes more than 60 s at the large dataset (its
  first run, the probe), that kernel is measured at ``medium`` instead and marked.
* ``--tune`` builds ``benchmarks/schedule_tuned.json``: per kernel, at the MEDIUM dataset, the candidates
  strategy in {pluto, isl, feautrier, tensor} x tiling in {none, 16, 32, 64} x wavefront in {false,
  true} (wavefront only when tiled), plus ``fusion: min`` with pluto / tiling 32; every candidate is
  checked like above, timed (min of 3 runs) and the fastest is chosen. Candidates whose generated C
  is identical share one measurement (``same_code_as``). All times are recorded in the JSON. Tuning
  at MEDIUM and measuring at LARGE keeps the choice honest (the measurement is not the selection run)
  but also means the tuned choice can be suboptimal at LARGE.

Caveats
-------
* The machine has 2 cores: the parallel speedup over the sequential original is at most ~2x from
  threads; the rest is locality / vectorisation. Other load on the machine shows as noise; min of
  few runs is a noisy estimate (a few percent; more for kernels that run in milliseconds).
* At MEDIUM several kernels (atax, bicg, mvt, gemver) run in well under a millisecond, so tuning
  there mostly measures noise and OpenMP's fork/join cost (the generated program starts its thread
  team before the timer, so the team's creation is not counted).
* The speedups of ``original`` include both the schedule and the OpenMP pragmas of the generated code.

Usage::

    python benchmarks/schedule_runtime.py [--dataset large] [--kernels gemm,lu] [--tune] [--repeat 3]
                                          [--out DIR] [--tuned FILE] [--variants original,isl,pluto,polly]

``--tune`` writes the tuning file (``--tuned``, default ``benchmarks/schedule_tuned.json``) and stops (run
again without it to measure, which reads that file). Results go to ``--out`` (default
``benchmarks/results/schedule-runtime/``): ``records.jsonl`` (one record per kernel x variant; records of
kernels not measured in this run are kept), ``summary.md`` (made from all records) and ``summary.json``
(per comparison the geomean and the per-kernel ratios ``t_ref / t_variant``; the kernels where ``pluto``
takes more than 1.10x ``polly``'s time).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

from dfopt.codegen.poly import find_compiler
from dfopt.explore.runtime import CHECK_DATASETS, CHECK_FLAGS, TIME_FLAGS, Measurement, OriginalBuild, RuntimeMeasure
from dfopt.instance import load

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances" / "schedule"
OUT = ROOT / "benchmarks" / "results" / "schedule-runtime"
TUNED = ROOT / "benchmarks" / "schedule_tuned.json"

THREADS = 2
LONG_RUN_S = 20.0        # a variant stops repeating after a run longer than this
SLOW_ORIGINAL_S = 60.0   # original slower than this at --dataset: measure the kernel at medium
SHORT_RUN_S = 0.1        # original faster than this: at least SHORT_REPEAT rounds (milliseconds are noisy)
SHORT_REPEAT = 15
TUNE_DATASET = "medium"
TUNE_REPEAT = 3
TUNE_TIMEOUT_S = 300.0   # per run while tuning

FIXED_VARIANTS = {
    "original": None,
    "isl": {"formulation": "isl", "tiling": 32},
    "pluto": {"strategy": "pluto", "tiling": 32},
    "pluto-max": {"strategy": "pluto", "tiling": 32, "fusion": "max"},
    "tensor": {"strategy": "tensor", "tiling": 32},
}
POLLY = OriginalBuild("clang", ("-mllvm", "-polly", "-mllvm", "-polly-parallel"))
VARIANT_ORDER = ("original", "isl", "pluto", "pluto-max", "tensor", "tuned", "polly")
SLOWER_THAN_POLLY = 1.10   # the goal: the default never more than 10% slower than Polly


def tune_candidates() -> list[dict]:
    out = []
    for strategy in ("pluto", "isl", "feautrier", "tensor"):
        for tiling in (None, 16, 32, 64):
            for wavefront in ((False,) if tiling is None else (False, True)):
                opts: dict = {"strategy": strategy}
                if tiling is not None:
                    opts["tiling"] = tiling
                if wavefront:
                    opts["wavefront"] = True
                out.append(opts)
    out.append({"strategy": "pluto", "tiling": 32, "fusion": "min"})
    return out


def describe(options: dict | None) -> str:
    if options is None:
        return "original schedule"
    return ", ".join(f"{k}={v}" for k, v in options.items())


def polly_options() -> dict:
    """The ``polly`` variant as its record shows it."""
    return {"compiler": POLLY.compiler, "flags": " ".join(TIME_FLAGS + POLLY.flags) + " -fopenmp"}


def has_clang() -> bool:
    return shutil.which(POLLY.compiler) is not None


def compiler_version() -> str:
    cc = find_compiler()
    try:
        first = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        first = []
    return first[0] if first else cc


def all_kernels() -> list[str]:
    return sorted(p.stem for p in INSTANCES.glob("*.json"))


def shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------- tuning

def tune_kernel(name: str) -> dict:
    inst = load(INSTANCES / f"{name}.json")
    t0 = time.perf_counter()
    options = tune_candidates()
    with RuntimeMeasure(inst, TUNE_DATASET, TUNE_REPEAT, threads=THREADS, max_run_s=LONG_RUN_S,
                        timeout_s=TUNE_TIMEOUT_S) as rt:
        orig, *results = rt.measure_all([None, *options])
    first: dict = {}           # code hash -> the first candidate (options) with that code that passed the checks
    for opts, m in zip(options, results):
        if m.checked and m.code_hash not in first:
            first[m.code_hash] = opts
    candidates = []
    for opts, m in zip(options, results):
        rec: dict = {"options": opts, "solve_s": round(m.solve_s or 0.0, 3)}
        owner = first.get(m.code_hash) if m.checked else None
        if owner is not None and owner is not opts:
            rec["same_code_as"] = owner
        if m.error:
            rec["error"] = m.error
        else:
            rec["seconds"] = list(m.seconds)
            rec["min"] = m.min
        candidates.append(rec)
    valid = [c for c in candidates if c.get("min") is not None]
    entry = {"dataset": TUNE_DATASET, "original_min": orig.min, "original_error": orig.error,
             "distinct_codes": len(first), "candidates": candidates,
             "tune_time_s": round(time.perf_counter() - t0, 1)}
    if valid:
        best = min(valid, key=lambda c: c["min"])    # first fastest: ties keep the earlier (simpler) one
        entry["options"] = best["options"]
        entry["min"] = best["min"]
    else:
        entry["options"] = None
        entry["error"] = "no valid candidate"
    return entry


def tune(kernels: list[str], tuned_path: Path) -> None:
    data = json.loads(tuned_path.read_text()) if tuned_path.exists() else {}
    data["method"] = (f"per kernel, at the {TUNE_DATASET.upper()} dataset: every candidate is checked (bytes equal "
                      f"to the original's at {'/'.join(CHECK_DATASETS)}, gcc {' '.join(CHECK_FLAGS)} -fopenmp), "
                      f"compiled with gcc {' '.join(TIME_FLAGS)} -fopenmp, run {TUNE_REPEAT} times with "
                      f"{THREADS} threads; the candidate with the least min time is chosen. Candidates with "
                      f"identical generated C share one measurement. Tuned at MEDIUM, measured at LARGE.")
    data["compiler"] = compiler_version()
    data["date"] = datetime.datetime.now().isoformat(timespec="seconds")
    data.setdefault("kernels", {})
    tuned_path.parent.mkdir(parents=True, exist_ok=True)
    for name in kernels:
        print(f"tuning {name} at {TUNE_DATASET} ...", flush=True)
        entry = tune_kernel(name)
        data["kernels"][name] = entry
        ok = sum("min" in c for c in entry["candidates"])
        print(f"  {ok}/{len(entry['candidates'])} candidates ok ({entry['distinct_codes']} distinct codes), "
              f"original {fmt_s(entry['original_min'])}, chosen {describe(entry['options'])} "
              f"{fmt_s(entry.get('min'))} [{entry['tune_time_s']} s]", flush=True)
        tuned_path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {shown(tuned_path)} (tuned at {TUNE_DATASET.upper()}; the measurement runs at LARGE, so "
          f"the choice is not validated on the data it is reported on)")


# ---------------------------------------------------------------------------------------------- measurement

def _say(text: str) -> None:
    print(text, flush=True)


def open_measure(inst, name: str, dataset: str, repeat: int, log=_say, width: int = 10, short_repeat: int = 0
                 ) -> tuple[RuntimeMeasure, str | None, float | None]:
    """The measure at ``dataset``, or at medium when the original's first run (the probe) there takes
    more than SLOW_ORIGINAL_S; with the dataset note and the probe's seconds. With ``short_repeat``,
    a kernel whose probe runs under SHORT_RUN_S gets at least that many rounds."""
    rt = RuntimeMeasure(inst, dataset, repeat, threads=THREADS, max_run_s=LONG_RUN_S)
    first = rt.probe(3 * SLOW_ORIGINAL_S)
    note = None
    if first is not None and first > SLOW_ORIGINAL_S and dataset != "medium":
        note = f"original {'>' + fmt_s(3 * SLOW_ORIGINAL_S) if first == math.inf else fmt_s(first)} at {dataset}"
        log(f"  {note}: measuring {name} at medium")
        rt.close()
        rt = RuntimeMeasure(inst, "medium", repeat, threads=THREADS, max_run_s=LONG_RUN_S)
        first = rt.probe(3 * SLOW_ORIGINAL_S)
    if first is not None and math.isfinite(first):
        log(f"    {'original':<{width}} {first:10.4f} s (probe)")
        if first < SHORT_RUN_S:
            rt.repeats = max(rt.repeats, short_repeat)
    return rt, note, first


def measure_variants(inst, name: str, dataset: str, repeat: int, variants: dict, log=_say, width: int = 10,
                     short_repeat: int = 0):
    """``variants`` (name -> options, None for the original) of one kernel in one interleaved run
    at ``dataset`` (or medium, :func:`open_measure`): (the measure, closed; its dataset note;
    the Measurements in ``variants``' order)."""
    names = list(variants)
    rt, note, first = open_measure(inst, name, dataset, repeat, log, width, short_repeat)
    with rt:
        base = first if first is not None and math.isfinite(first) else SLOW_ORIGINAL_S
        results = rt.measure_all(list(variants.values()), timeout_s=min(max(120.0, 5 * base), 900.0),
                                 on_run=lambda at, sec: log(f"    {'='.join(names[i] for i in at):<{width}} "
                                                            f"{sec:10.4f} s"))
    return rt, note, results


def record(kernel: str, variant: str, options: dict | None, m: Measurement, orig: Measurement, sizes: dict,
           note: str | None, meta: dict) -> dict:
    flags = options["flags"] if variant == "polly" and options else " ".join(TIME_FLAGS) + " -fopenmp"
    return {"kernel": kernel, "variant": variant, "options": options, "dataset": m.dataset,
            "sizes": sizes, "dataset_note": note, "threads": THREADS,
            "flags": flags, "seconds": list(m.seconds),
            "min": m.min, "median": m.median, "check": dict(m.checks), "check_ok": m.checked,
            "checksum": m.checksum,
            "checksum_ok": (m.checksum == orig.checksum) if m.checksum and orig.checksum else None,
            "schedule": m.schedule, "tiled_schedule": m.tiled_schedule, "code_sha1": m.code_hash,
            "solve_s": round(m.solve_s, 3) if m.solve_s is not None else None,
            "error": m.error, **meta}


def measure_kernel(name: str, dataset: str, repeat: int, tuned: dict, meta: dict, chosen: tuple) -> list[dict]:
    inst = load(INSTANCES / f"{name}.json")
    variants: dict = {v: o for v, o in FIXED_VARIANTS.items() if v in chosen}
    tuned_opts = (tuned.get(name) or {}).get("options")
    if tuned_opts is not None and "tuned" in chosen:
        variants["tuned"] = tuned_opts
    if "polly" in chosen:
        variants["polly"] = POLLY
    names = list(variants)
    rt, note, results = measure_variants(inst, name, dataset, repeat, variants, short_repeat=SHORT_REPEAT)
    sizes = rt.program.sizes[rt.dataset]
    orig = results[0]
    shown_opts = {v: polly_options() if v == "polly" else variants[v] for v in names}
    records = [record(name, v, shown_opts[v], m, orig, sizes, note, meta) for v, m in zip(names, results)]
    if tuned_opts is None and "tuned" in chosen:
        missing = Measurement(rt.dataset, error="no tuned configuration (run --tune)")
        records.append(record(name, "tuned", None, missing, orig, sizes, note, meta))
    return records


def fmt_s(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3g} s" if x >= 0.01 else f"{x * 1e3:.3g} ms"


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(records: list[dict], tuned: dict, wall_s: float | None) -> str:
    by = {}
    for r in records:
        by.setdefault(r["kernel"], {})[r["variant"]] = r
    kernels = sorted(by)

    def good(r):
        return r is not None and r.get("min") is not None and not r.get("error")

    meta = records[0] if records else {}
    lines = ["# Run time of the generated code (schedule instances)", "",
             f"gcc `{' '.join(TIME_FLAGS)} -fopenmp` ({meta.get('compiler', '?')}), {THREADS} threads "
             f"(`OMP_NUM_THREADS`), min of up to {max((len(r['seconds']) for r in records), default=0)} "
             f"interleaved runs (at least {SHORT_REPEAT} when the original runs under {SHORT_RUN_S:g} s, 1 when a "
             f"run exceeds {LONG_RUN_S:g} s); date {meta.get('date', '?')}. Variants: "
             "`original` = program order, sequential; `isl` = isl's scheduler, tiling 32; `pluto`, `tensor` = "
             "our scheduler with that strategy, tiling 32 (`pluto` is the default preset, `fusion: smart`); "
             "`pluto-max` = `pluto` with `fusion: max`; `polly` = the original order compiled with clang "
             f"`{polly_options()['flags']}` (LLVM Polly); `tuned` = per-kernel configuration from "
             "`benchmarks/schedule_tuned.json`, chosen at the MEDIUM dataset (so the choice is not made on the "
             "data it is reported on). Every variant was first checked byte-for-byte against the original at "
             f"{' and '.join(CHECK_DATASETS)} (`{' '.join(CHECK_FLAGS)} -fopenmp`); the time-mode checksum "
             "is compared too. Each cell: min seconds (speedup over original).", ""]
    if wall_s is not None:
        lines += [f"Total wall time of the measuring run: {wall_s / 60:.1f} min.", ""]
    lines += ["| kernel | dataset | " + " | ".join(VARIANT_ORDER) + " |",
              "|---|---|" + "---|" * len(VARIANT_ORDER)]
    flagged = []
    for k in kernels:
        row = by[k]
        orig = row.get("original")
        ds = (orig or next(iter(row.values())))["dataset"]
        if (orig or {}).get("dataset_note"):
            ds += f" ({orig['dataset_note']})"
        cells = []
        for v in VARIANT_ORDER:
            r = row.get(v)
            if r is None:
                cells.append("-")
            elif not good(r):
                cells.append("**error**")
                flagged.append(f"{k} / {v}: {r.get('error')}")
            else:
                txt = fmt_s(r["min"])
                if v != "original" and good(orig):
                    sp = orig["min"] / r["min"]
                    txt += f" ({sp:.2f}x)"
                    if sp < 1:
                        txt = f"*{txt}*"
                if r.get("checksum_ok") is False:
                    txt += " †"
                    flagged.append(f"{k} / {v}: time-mode checksum {r['checksum']} differs from the original's")
                cells.append(txt)
        lines.append(f"| {k} | {ds} | " + " | ".join(cells) + " |")
    lines += ["", "*italic*: slower than the original; †: checksum differs from the original's.", ""]

    def speedups(v, ref="original"):
        out = {}
        for k in kernels:
            a, b = by[k].get(ref), by[k].get(v)
            if good(a) and good(b):
                out[k] = a["min"] / b["min"]
        return out

    lines += ["## Geometric-mean speedups", "", "| comparison | geomean | kernels | min | max |",
              "|---|---|---|---|---|"]
    for v, ref in PAIRS:
        s = speedups(v, ref)
        g = geomean(list(s.values()))
        if g is None:
            lines.append(f"| {v} over {ref} | - | 0 | - | - |")
            continue
        lo, hi = min(s, key=s.get), max(s, key=s.get)
        lines.append(f"| {v} over {ref} (t_{ref} / t_{v}) | {g:.3f}x | {len(s)} | {s[lo]:.2f}x ({lo}) | "
                     f"{s[hi]:.2f}x ({hi}) |")
    lines += polly_lines(kernels, speedups)
    lines += ["", "## Tuned configuration per kernel (chosen at MEDIUM)", "",
              "| kernel | options | tuned min at MEDIUM | original at MEDIUM | candidates ok / distinct codes |",
              "|---|---|---|---|---|"]
    for k in kernels:
        t = tuned.get(k) or {}
        ok = sum("min" in c for c in t.get("candidates", []))
        lines.append(f"| {k} | {describe(t.get('options')) if t else '-'} | {fmt_s(t.get('min'))} | "
                     f"{fmt_s(t.get('original_min'))} | {ok}/{len(t.get('candidates', []))} / "
                     f"{t.get('distinct_codes', '-')} |")
    lines += ["", "## Failures and flags", ""]
    lines += [f"- {f}" for f in flagged] or ["- none"]
    slow = [(k, v, speedups(v)[k]) for v in VARIANT_ORDER[1:] for k in kernels if speedups(v).get(k, 1) < 1]
    if slow:
        lines += ["", "## Variants slower than the original", ""]
        for k, v, sp in sorted(slow, key=lambda x: x[2]):
            r = by[k][v]
            lines.append(f"- {k} / {v} ({describe(r['options'])}): {sp:.2f}x; schedule before tiling "
                         f"`{r['schedule']}`")
    return "\n".join(lines) + "\n"


PAIRS = [(v, "original") for v in VARIANT_ORDER[1:]] + [
    ("pluto", "isl"), ("pluto", "pluto-max"), ("pluto", "polly"), ("isl", "polly"), ("tuned", "pluto"),
    ("tuned", "isl"), ("tensor", "isl")]


def polly_lines(kernels: list[str], speedups) -> list[str]:
    """The per-kernel table of the default (``pluto``) against Polly and isl, with the kernels
    where the default takes more than SLOWER_THAN_POLLY times Polly's time flagged."""
    over_polly, over_isl, over_orig = speedups("pluto", "polly"), speedups("pluto", "isl"), speedups("pluto")
    if not over_polly:
        return []
    lines = ["", "## The default against Polly", "",
             "t_ref / t_pluto per kernel (above 1: the default is faster); **bold**: the default takes more than "
             f"{SLOWER_THAN_POLLY:.2f}x Polly's time.", "",
             "| kernel | over original | over isl | over polly |", "|---|---|---|---|"]
    for k in kernels:
        o, i, p = (f"{d[k]:.2f}x" if k in d else "-" for d in (over_orig, over_isl, over_polly))
        if k in over_polly and 1 / over_polly[k] > SLOWER_THAN_POLLY:
            p = f"**{p}**"
        lines.append(f"| {k} | {o} | {i} | {p} |")
    return lines


def summary_json(records: list[dict]) -> dict:
    """Per comparison of PAIRS: the geomean and the per-kernel ratios t_ref / t_variant; the
    kernels where the default is more than SLOWER_THAN_POLLY times slower than Polly."""
    by: dict = {}
    for r in records:
        if r.get("min") is not None and not r.get("error"):
            by.setdefault(r["kernel"], {})[r["variant"]] = r["min"]
    out: dict = {"dataset": sorted({r["dataset"] for r in records}), "threads": THREADS, "comparisons": {}}
    for v, ref in PAIRS:
        ratios = {k: t[ref] / t[v] for k, t in sorted(by.items()) if v in t and ref in t}
        if ratios:
            out["comparisons"][f"{v} over {ref}"] = {"geomean": geomean(list(ratios.values())), "kernels": ratios}
    polly = out["comparisons"].get("pluto over polly", {}).get("kernels", {})
    out["slower_than_polly"] = {k: 1 / x for k, x in polly.items() if 1 / x > SLOWER_THAN_POLLY}
    return out


def read_records(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="large", choices=("mini", "small", "medium", "large"))
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    ap.add_argument("--tune", action="store_true", help="build the tuning file (--tuned) at MEDIUM and stop")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT, metavar="DIR",
                    help=f"folder of records.jsonl and summary.md (default {shown(OUT)})")
    ap.add_argument("--tuned", type=Path, default=TUNED, metavar="FILE",
                    help=f"the tuning file --tune writes and a measurement reads (default {shown(TUNED)})")
    ap.add_argument("--variants", default=",".join(VARIANT_ORDER),
                    help="comma-separated variants to measure (original always; default: all)")
    args = ap.parse_args(argv)
    chosen = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    if any(v not in VARIANT_ORDER for v in chosen):
        ap.error(f"unknown variants {[v for v in chosen if v not in VARIANT_ORDER]}; known: {list(VARIANT_ORDER)}")
    chosen = ("original",) + tuple(v for v in chosen if v != "original")
    if "polly" in chosen and not has_clang():
        print(f"no {POLLY.compiler} on PATH: the polly variant is left out (apt-get install clang libomp-dev)")
        chosen = tuple(v for v in chosen if v != "polly")
    names = all_kernels()
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()] or names
    unknown = [k for k in kernels if k not in names]
    if unknown:
        ap.error(f"unknown kernels {unknown}; known: {names}")
    t0 = time.perf_counter()
    if args.tune:
        tune(kernels, args.tuned)
        print(f"total {time.perf_counter() - t0:.0f} s")
        return 0
    out: Path = args.out
    tuned = json.loads(args.tuned.read_text()).get("kernels", {}) if args.tuned.exists() else {}
    meta = {"compiler": compiler_version(), "date": datetime.datetime.now().isoformat(timespec="seconds")}
    out.mkdir(parents=True, exist_ok=True)
    old = [r for r in read_records(out) if r["kernel"] not in kernels]
    new: list[dict] = []
    for name in kernels:
        print(f"{name} ({args.dataset}) ...", flush=True)
        t = time.perf_counter()
        recs = measure_kernel(name, args.dataset, max(1, args.repeat), tuned, meta, chosen)
        for r in recs:
            if r["error"]:
                print(f"  ERROR {r['variant']}: {r['error']}", flush=True)
        new += recs
        (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old + new))
        print(f"  [{time.perf_counter() - t:.0f} s]", flush=True)
    wall = time.perf_counter() - t0
    records = sorted(old + new, key=lambda r: (r["kernel"], VARIANT_ORDER.index(r["variant"])))
    (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = summary(records, tuned, wall if not old else None)
    (out / "summary.md").write_text(text)
    (out / "summary.json").write_text(json.dumps(summary_json(records), indent=1) + "\n")
    print(text)
    print(f"total {wall:.0f} s; wrote {shown(out / 'records.jsonl')}, {shown(out / 'summary.md')} and "
          f"{shown(out / 'summary.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
