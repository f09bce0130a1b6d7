"""Run time of the code generated for the ``problem: schedule`` instances (PolyBench/C 4.2.1 + trsm-npu).

For each kernel of ``instances/schedule`` five variants are compiled and timed:

* ``original`` — the program's own 2d+1 schedule (``program.schedule``), sequential C (no OpenMP pragma);
* ``isl``      — isl's own scheduler (``formulation: isl``), tiling 32;
* ``pluto``    — our scheduler, ``strategy: pluto``, tiling 32;
* ``tensor``   — our scheduler, ``strategy: tensor``, tiling 32;
* ``tuned``    — our scheduler with the per-kernel configuration of ``benchmarks/schedule_tuned.json``.

Method
------
* Correctness first: every variant is compiled with ``-O2 -ffp-contract=off -fopenmp`` in ``check``
  mode at the ``mini`` dataset, run with 2 threads, and its output (the raw bytes of every array) must
  equal the original's exactly. Because mini extents (20..30) are smaller than a 32 tile, the same is
  done at ``small`` (60..80: several and partial tiles) as an extra check. A mismatch is an error in
  the record and the variant is never timed. In ``time`` mode the program also prints a checksum of
  all arrays; it is compared with the original's (``checksum_ok``): without ``-ffast-math`` and
  without FMA (no ``-march=native``) gcc keeps the floating-point operation order, so a legal schedule
  gives the same checksum bit for bit.
* Timing: ``gcc -O3 -fopenmp`` (no ``-march=native``), ``OMP_NUM_THREADS=2``, ``time`` mode at
  ``--dataset`` (default ``large``): the program times ``kernel_body()`` alone (``omp_get_wtime``),
  not initialisation. Runs are interleaved (round ``r`` runs every variant once) so slow drifts of
  the machine hit all variants alike; ``--repeat`` rounds (default 3), but a variant stops after a run
  longer than ~20 s. min and median are kept; the tables use min. If the original takes more than
  60 s at the large dataset, that kernel is measured at ``medium`` instead and marked.
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

``--tune`` writes the tuning file and stops (run again without it to measure). Results go to
``benchmarks/results/schedule-runtime/``: ``records.jsonl`` (one record per kernel x variant; records of
kernels not measured in this run are kept) and ``summary.md`` (made from all records).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dfopt.api import solve_instance
from dfopt.codegen.poly import CompileError, RunError, compile_c, find_compiler, program_c, run
from dfopt.errors import DfoptError
from dfopt.instance import load

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances" / "schedule"
OUT = ROOT / "benchmarks" / "results" / "schedule-runtime"
TUNED = ROOT / "benchmarks" / "schedule_tuned.json"

THREADS = 2
TIME_FLAGS = ("-O3",)                       # + -fopenmp (compile_c openmp=True)
CHECK_FLAGS = ("-O2", "-ffp-contract=off")  # + -fopenmp
CHECK_DATASETS = ("mini", "small")
LONG_RUN_S = 20.0        # a variant stops repeating after a run longer than this
SLOW_ORIGINAL_S = 60.0   # original slower than this at --dataset: measure the kernel at medium
TUNE_DATASET = "medium"
TUNE_REPEAT = 3

FIXED_VARIANTS = {
    "original": None,
    "isl": {"formulation": "isl", "tiling": 32},
    "pluto": {"strategy": "pluto", "tiling": 32},
    "tensor": {"strategy": "tensor", "tiling": 32},
}
VARIANT_ORDER = ("original", "isl", "pluto", "tensor", "tuned")


def tune_candidates() -> list[dict]:
    out = []
    for strategy in ("pluto", "isl", "feautrier", "tensor"):
        for tiling in (None, 16, 32, 64):
            for wavefront in ((False,) if tiling is None else (False, True)):
                opts = {"strategy": strategy}
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


def compiler_version() -> str:
    cc = find_compiler()
    try:
        first = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        first = []
    return first[0] if first else cc


def all_kernels() -> list[str]:
    return sorted(p.stem for p in INSTANCES.glob("*.json"))


class Variant:
    """One schedule of one kernel: its options, maps, kernel C text, and what happened to it."""

    def __init__(self, name: str, options: dict | None):
        self.name, self.options = name, options
        self.map = self.tiled_map = self.code = None
        self.schedule_text = None
        self.solve_s = None
        self.error = None
        self.checks = {}
        self.seconds = []
        self.checksum = None
        self.done = False
        self.binary = None

    @property
    def key(self) -> str:
        """A hash of the generated C kernel (identical kernels share measurements when tuning)."""
        text = self.code if self.code is not None else "original:" + str(self.schedule_text)
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def make(self, inst) -> Variant:
        if self.options is None:
            self.schedule_text = self.map = inst.program.schedule
            return self
        t = time.perf_counter()
        try:
            sol = solve_instance(inst, **self.options)
        except DfoptError as err:
            self.error = f"schedule failed: {type(err).__name__}: {str(err)[:300]}"
            return self
        finally:
            self.solve_s = time.perf_counter() - t
        if not sol.ok:
            bad = [c for c in sol.checks if not getattr(c, "ok", True)]
            self.error = f"schedule checks failed: {str(bad)[:300]}"
            return self
        sec = sol.sections["schedule"]
        self.map, self.tiled_map, self.code = sec["map"], sec.get("tiled_map"), sec["code"]
        self.schedule_text = sec.get("tiled_map", sec["map"])
        return self

    def source(self, program, dataset: str, mode: str) -> str:
        return program_c(program, self.schedule_text, dataset, mode=mode, kernel=self.code)


def run_timed(binary, timeout: float) -> tuple[float, str]:
    """(kernel seconds, checksum text) of a ``time``-mode binary, OMP_NUM_THREADS=2.

    Like :func:`dfopt.codegen.poly.run` but also keeps stderr, where the program prints its checksum.
    """
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS))
    try:
        res = subprocess.run([str(binary)], capture_output=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise RunError(f"{binary} timed out after {timeout:.0f} s") from err
    if res.returncode != 0:
        raise RunError(f"{binary} failed with exit code {res.returncode}", res.stderr.decode(errors="replace"),
                       res.returncode)
    checksum = res.stderr.decode(errors="replace").strip().rsplit(" ", 1)[-1]
    return float(res.stdout.decode().split()[0]), checksum


def check_variants(program, variants: list[Variant], workdir: Path) -> None:
    """Compare every variant's ``check`` output with the original's (variants[0]) at mini and small."""
    reference = {}
    seen = {}
    for v in variants:
        if v.error:
            continue
        if v.key in seen:
            v.checks = dict(seen[v.key].checks)
            if seen[v.key].error:
                v.error = seen[v.key].error
            continue
        seen[v.key] = v
        for ds in CHECK_DATASETS:
            if ds not in program.sizes:
                continue
            try:
                binary = compile_c(v.source(program, ds, "check"), workdir, flags=CHECK_FLAGS, openmp=True,
                                   timeout=300)
                out = run(binary, threads=THREADS, timeout=300)
            except (CompileError, RunError) as err:
                v.checks[ds] = False
                v.error = f"check at {ds}: {type(err).__name__}: {str(err)[:300]}"
                break
            if v.options is None:
                reference[ds] = out
            ok = out == reference.get(ds)
            v.checks[ds] = ok
            if not ok:
                v.error = f"check at {ds}: output differs from the original's ({len(out)} vs " \
                          f"{len(reference.get(ds) or b'')} bytes)"
                break


def compile_time(program, variants: list[Variant], dataset: str, workdir: Path) -> None:
    for v in variants:
        if v.error:
            continue
        try:
            v.binary = compile_c(v.source(program, dataset, "time"), workdir, flags=TIME_FLAGS, openmp=True,
                                 timeout=600)
        except CompileError as err:
            v.error = f"compile ({dataset}): {str(err)[:300]}"


def measure(variants: list[Variant], repeat: int, timeout, log=print) -> None:
    """Interleaved rounds: each round runs every variant that is not done once."""
    for _ in range(repeat):
        for v in variants:
            if v.error or v.done or v.binary is None:
                continue
            try:
                sec, checksum = run_timed(v.binary, timeout(v))
            except RunError as err:
                v.error = f"run: {str(err)[:300]}"
                continue
            v.seconds.append(sec)
            v.checksum = checksum
            log(f"    {v.name:<10} {sec:10.4f} s")
            if len(v.seconds) >= repeat or sec > LONG_RUN_S:
                v.done = True


# ---------------------------------------------------------------------------------------------- tuning

def tune_kernel(name: str, workdir: Path) -> dict:
    inst = load(INSTANCES / f"{name}.json")
    program = inst.program
    t0 = time.perf_counter()
    variants = [Variant("original", None).make(inst)]
    for i, opts in enumerate(tune_candidates()):
        variants.append(Variant(f"c{i}", opts).make(inst))
    check_variants(program, variants, workdir)
    # identical kernels share one binary and one measurement
    first = {}
    for v in variants:
        if not v.error and v.key not in first:
            first[v.key] = v
    distinct = list(first.values())
    compile_time(program, distinct, TUNE_DATASET, workdir)
    measure(distinct, TUNE_REPEAT, lambda v: 300.0, log=lambda s: None)
    candidates = []
    for v in variants[1:]:
        owner = first.get(v.key) if not v.error else None
        rec = {"options": v.options, "solve_s": round(v.solve_s or 0.0, 3)}
        if owner is not None and owner is not v:
            rec["same_code_as"] = owner.options
        err = v.error or (owner.error if owner is not None else None)
        if err:
            rec["error"] = err
        else:
            rec["seconds"] = owner.seconds
            rec["min"] = min(owner.seconds)
        candidates.append(rec)
    valid = [c for c in candidates if "min" in c]
    orig = variants[0]
    entry = {"dataset": TUNE_DATASET, "original_min": min(orig.seconds) if orig.seconds else None,
             "original_error": orig.error, "distinct_codes": len(distinct) - 1, "candidates": candidates,
             "tune_time_s": round(time.perf_counter() - t0, 1)}
    if valid:
        best = min(valid, key=lambda c: c["min"])    # first fastest: ties keep the earlier (simpler) one
        entry["options"] = best["options"]
        entry["min"] = best["min"]
    else:
        entry["options"] = None
        entry["error"] = "no valid candidate"
    return entry


def tune(kernels: list[str]) -> None:
    data = json.loads(TUNED.read_text()) if TUNED.exists() else {}
    data["method"] = (f"per kernel, at the {TUNE_DATASET.upper()} dataset: every candidate is checked (bytes equal "
                      f"to the original's at {'/'.join(CHECK_DATASETS)}, gcc {' '.join(CHECK_FLAGS)} -fopenmp), "
                      f"compiled with gcc {' '.join(TIME_FLAGS)} -fopenmp, run {TUNE_REPEAT} times with "
                      f"{THREADS} threads; the candidate with the least min time is chosen. Candidates with "
                      f"identical generated C share one measurement. Tuned at MEDIUM, measured at LARGE.")
    data["compiler"] = compiler_version()
    data["date"] = datetime.datetime.now().isoformat(timespec="seconds")
    data.setdefault("kernels", {})
    with tempfile.TemporaryDirectory(prefix="dfopt-tune-") as tmp:
        for name in kernels:
            print(f"tuning {name} at {TUNE_DATASET} ...", flush=True)
            entry = tune_kernel(name, Path(tmp))
            data["kernels"][name] = entry
            ok = sum("min" in c for c in entry["candidates"])
            print(f"  {ok}/{len(entry['candidates'])} candidates ok ({entry['distinct_codes']} distinct codes), "
                  f"original {fmt_s(entry['original_min'])}, chosen {describe(entry['options'])} "
                  f"{fmt_s(entry.get('min'))} [{entry['tune_time_s']} s]", flush=True)
            TUNED.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {TUNED.relative_to(ROOT)} (tuned at {TUNE_DATASET.upper()}; the measurement runs at LARGE, so "
          f"the choice is not validated on the data it is reported on)")


# ---------------------------------------------------------------------------------------------- measurement

def measure_kernel(name: str, dataset: str, repeat: int, tuned: dict, workdir: Path, meta: dict) -> list[dict]:
    inst = load(INSTANCES / f"{name}.json")
    program = inst.program
    variants = [Variant(v, o).make(inst) for v, o in FIXED_VARIANTS.items()]
    tuned_opts = (tuned.get(name) or {}).get("options")
    tv = Variant("tuned", tuned_opts)
    if tuned_opts is None:
        tv.error = "no tuned configuration (run --tune)"
    else:
        tv.make(inst)
    variants.append(tv)
    check_variants(program, variants, workdir)
    orig = variants[0]
    note = None
    used = dataset
    compile_time(program, [orig], used, workdir)
    if orig.binary is not None:
        try:       # probe: is the original too slow at this dataset?
            sec, checksum = run_timed(orig.binary, 3 * SLOW_ORIGINAL_S)
        except RunError:
            sec, checksum = math.inf, None
        if sec > SLOW_ORIGINAL_S and dataset != "medium":
            note = f"original {'>' + fmt_s(3 * SLOW_ORIGINAL_S) if sec == math.inf else fmt_s(sec)} at {dataset}"
            used = "medium"
            print(f"  {note}: measuring {name} at medium", flush=True)
            orig.binary = None
            compile_time(program, [orig], used, workdir)
        else:
            orig.seconds.append(sec)
            orig.checksum = checksum
            print(f"    {'original':<10} {sec:10.4f} s (probe)", flush=True)
            if sec > LONG_RUN_S or repeat == 1:
                orig.done = True
    compile_time(program, variants[1:], used, workdir)

    def timeout(v):
        base = min(orig.seconds) if orig.seconds else SLOW_ORIGINAL_S
        return min(max(120.0, 5 * base), 900.0)

    measure(variants, repeat, timeout, log=lambda s: print(s, flush=True))
    records = []
    for v in variants:
        rec = {"kernel": name, "variant": v.name, "options": v.options, "dataset": used,
               "sizes": program.sizes[used], "dataset_note": note, "threads": THREADS,
               "flags": " ".join(TIME_FLAGS) + " -fopenmp", "seconds": v.seconds,
               "min": min(v.seconds) if v.seconds else None,
               "median": statistics.median(v.seconds) if v.seconds else None,
               "check": v.checks, "check_ok": bool(v.checks) and all(v.checks.values()),
               "checksum": v.checksum,
               "checksum_ok": (v.checksum == orig.checksum) if v.checksum and orig.checksum else None,
               "schedule": v.map, "tiled_schedule": v.tiled_map, "code_sha1": v.key,
               "solve_s": round(v.solve_s, 3) if v.solve_s is not None else None,
               "error": v.error, **meta}
        records.append(rec)
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
             f"interleaved runs (1 when a run exceeds {LONG_RUN_S:g} s); date {meta.get('date', '?')}. Variants: "
             "`original` = program order, sequential; `isl` = isl's scheduler, tiling 32; `pluto`, `tensor` = "
             "our scheduler with that strategy, tiling 32; `tuned` = per-kernel configuration from "
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
    pairs = [(v, "original") for v in VARIANT_ORDER[1:]] + [("pluto", "isl"), ("tuned", "pluto"), ("tuned", "isl"),
                                                            ("tensor", "isl")]
    for v, ref in pairs:
        s = speedups(v, ref)
        g = geomean(list(s.values()))
        if g is None:
            lines.append(f"| {v} over {ref} | - | 0 | - | - |")
            continue
        lo, hi = min(s, key=s.get), max(s, key=s.get)
        lines.append(f"| {v} over {ref} (t_{ref} / t_{v}) | {g:.3f}x | {len(s)} | {s[lo]:.2f}x ({lo}) | "
                     f"{s[hi]:.2f}x ({hi}) |")
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


def read_records() -> list[dict]:
    path = OUT / "records.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="large", choices=("mini", "small", "medium", "large"))
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: all)")
    ap.add_argument("--tune", action="store_true", help="build benchmarks/schedule_tuned.json at MEDIUM and stop")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    names = all_kernels()
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()] or names
    unknown = [k for k in kernels if k not in names]
    if unknown:
        ap.error(f"unknown kernels {unknown}; known: {names}")
    t0 = time.perf_counter()
    if args.tune:
        tune(kernels)
        print(f"total {time.perf_counter() - t0:.0f} s")
        return 0
    tuned = json.loads(TUNED.read_text()).get("kernels", {}) if TUNED.exists() else {}
    meta = {"compiler": compiler_version(), "date": datetime.datetime.now().isoformat(timespec="seconds")}
    OUT.mkdir(parents=True, exist_ok=True)
    old = [r for r in read_records() if r["kernel"] not in kernels]
    new = []
    with tempfile.TemporaryDirectory(prefix="dfopt-runtime-") as tmp:
        for name in kernels:
            print(f"{name} ({args.dataset}) ...", flush=True)
            t = time.perf_counter()
            recs = measure_kernel(name, args.dataset, max(1, args.repeat), tuned, Path(tmp), meta)
            for r in recs:
                if r["error"]:
                    print(f"  ERROR {r['variant']}: {r['error']}", flush=True)
            new += recs
            (OUT / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old + new))
            print(f"  [{time.perf_counter() - t:.0f} s]", flush=True)
    wall = time.perf_counter() - t0
    records = sorted(old + new, key=lambda r: (r["kernel"], VARIANT_ORDER.index(r["variant"])))
    (OUT / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = summary(records, tuned, wall if not old else None)
    (OUT / "summary.md").write_text(text)
    print(text)
    print(f"total {wall:.0f} s; wrote {(OUT / 'records.jsonl').relative_to(ROOT)} and "
          f"{(OUT / 'summary.md').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
