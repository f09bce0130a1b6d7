"""Every shipped sparse kernel (``instances/sparse/*.json``) as HLS C++ (``dfopt.codegen.sam_hls``),
built and run under both C-simulation models side by side, in one run.

Per kernel: the processes and FIFOs of the emitted design, the total FIFO depth of the two depth
policies (``iteration``, the default, against ``stream``), the tokens the token-level run counts
against the tokens the processes counted in each C simulation (they must agree on every stream),
the model's estimated cycles, and the wall time of the build and of each run (dfopt's threaded
runtime: concurrent processes over bounded FIFOs; AMD's ``hls_stream.h`` model: processes one
after another in call order).

Usage::

    python benchmarks/sparse_hls.py [--time-limit 30] [--kernels spmv-bar,plus2-bar] [--vitis DIR]

``--vitis`` is the folder with AMD's ``hls_stream.h`` (default ``../shared/tools/vitis-stream``
beside the repository, or ``$DFOPT_TOOLS/vitis-stream``). Results:
``benchmarks/results/sparse-hls.json``; summarised in docs/sparse.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dfopt  # noqa: E402
from dfopt.api import make_options  # noqa: E402
from dfopt.codegen.sam_hls import write_hls  # noqa: E402
from dfopt.codegen.sam_hls.emit import hls_files  # noqa: E402
from dfopt.io import write_json_atomic  # noqa: E402
from dfopt.models.sparse import prepare  # noqa: E402

TOKENS = re.compile(r"^tokens (\S+) (\d+)$", re.M)


def _timed(cmd: list, cwd: Path, timeout: float) -> tuple[int, str, float]:
    start = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return res.returncode, res.stdout + res.stderr, time.perf_counter() - start


def run_kernel(path: Path, folder: Path, vitis: Path, time_limit: float) -> dict:
    inst = dfopt.load(str(path))
    sol = dfopt.solve(str(path), formulation="cpsat", time_limit=time_limit)
    prep = prepare(inst, make_options(inst))
    out = folder / path.stem
    start = time.perf_counter()
    summary = write_hls(prep, sol.decision, out, path.stem.replace("-", "_"))
    emit_s = time.perf_counter() - start
    whole = hls_files(prep, sol.decision, path.stem.replace("-", "_"), depths="stream")
    row: dict = {
        "kernel": path.stem, "expression": inst.sparse.expression, "methods": summary["methods"],
        "processes": len(summary["processes"]), "fifos": len(summary["streams"]),
        "depth_total": sum(summary["streams"].values()), "depth_total_stream": sum(whole["streams"].values()),
        "depth_max": max(summary["streams"].values()), "tokens": sum(summary["tokens"].values()),
        "cycles": sol.sections["sparse"]["cycles"], "emit_s": round(emit_s, 3)}
    for target, build, exe in (("csim", "build", "./csim"), ("csim-vitis", "build-vitis", "./csim_vitis")):
        code, text, build_s = _timed(["make", "-s", build, f"VITIS_STREAM={vitis}"], out, 900)
        if code:
            row[target] = {"ok": False, "build_s": round(build_s, 2), "output": text[-1000:]}
            continue
        code, text, run_s = _timed([exe, "data"], out, 900)
        counts = {name: int(n) for name, n in TOKENS.findall(text)}
        agree = all(counts.get(s) == n for s, n in summary["tokens"].items())
        row[target] = {"ok": code == 0 and "PASS" in text.splitlines(), "exit": code, "build_s": round(build_s, 2),
                       "run_s": round(run_s, 3), "tokens_agree": agree,
                       "tokens_per_second": round(sum(counts.values()) / run_s) if run_s else None}
    return row


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--kernels", default="")
    ap.add_argument("--vitis", default=str(Path(os.environ.get("DFOPT_TOOLS", ROOT.parent / "shared" / "tools"))
                                           / "vitis-stream"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sparse-hls.json"))
    args = ap.parse_args(argv)
    vitis = Path(args.vitis)
    if not (vitis / "hls_stream.h").is_file():
        print(f"sparse_hls: no hls_stream.h in {vitis} (--vitis DIR)", file=sys.stderr)
        return 2
    paths = sorted((ROOT / "instances" / "sparse").glob("*.json"))
    if args.kernels:
        wanted = set(args.kernels.split(","))
        paths = [p for p in paths if p.stem in wanted]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for path in paths:
            row = run_kernel(path, Path(folder), vitis, args.time_limit)
            rows.append(row)
            both = " ".join(f"{t} {'PASS' if row[t]['ok'] else 'FAIL'} {row[t].get('run_s', 0):.2f} s"
                            f"{'' if row[t].get('tokens_agree') else ' (tokens differ)'}"
                            for t in ("csim", "csim-vitis"))
            print(f"{row['kernel']:22} {row['processes']:3} processes {row['fifos']:3} FIFOs  depth "
                  f"{row['depth_total']:>9,} (whole streams {row['depth_total_stream']:>10,})  tokens "
                  f"{row['tokens']:>11,}  {both}", flush=True)
    ok = all(r[t]["ok"] and r[t]["tokens_agree"] for r in rows for t in ("csim", "csim-vitis"))
    summary = {"kernels": len(rows), "all_pass_and_agree": ok,
               "depth_ratio_iteration_over_stream": sum(r["depth_total"] for r in rows)
               / max(1, sum(r["depth_total_stream"] for r in rows)),
               "tokens": sum(r["tokens"] for r in rows)}
    print(f"all PASS with the run's tokens on every stream: {ok}; FIFO depth iteration/stream "
          f"{summary['depth_ratio_iteration_over_stream']:.4f}")
    write_json_atomic(args.out, {"benchmark": "sparse-hls", "date": datetime.date.today().isoformat(),
                                 "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                                 "time_limit": args.time_limit, "summary": summary, "rows": rows})
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
