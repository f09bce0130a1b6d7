"""The long fuzz battery: every shipped instance mutated N times through validate and solve, its
solution mutated through check (dfopt.bench.fuzz). Writes totals per problem kind and every
finding to OUT (default benchmarks/results/fuzz/): totals.json, findings.json.

    python benchmarks/fuzz_battery.py [--per-instance 20] [--seed 0] [-o OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from dfopt.bench.fuzz import battery

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-instance", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("-o", "--output", default=str(ROOT / "benchmarks" / "results" / "fuzz"))
    args = ap.parse_args()
    paths = [p for p in sorted((ROOT / "instances").glob("*/*.json")) if p.parent.name != "invalid"]
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        findings, totals = battery(paths, Path(work), per_instance=args.per_instance, seed=args.seed,
                                   time_limit=args.time_limit)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    summary = {"instances": len(paths), "per_instance": args.per_instance, "seed": args.seed,
               "time_limit": args.time_limit, "wall_s": round(time.perf_counter() - t, 1),
               "runs": sum(v["runs"] for v in totals.values()),
               "findings": {k: sum(v["findings"].get(k, 0) for v in totals.values())
                            for k in ("internal", "validate-miss", "timeout", "accepted-tamper")},
               "per_problem": totals}
    (out / "totals.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "findings.json").write_text(json.dumps(findings, indent=1, ensure_ascii=True) + "\n")
    print(json.dumps(summary["findings"]), f"{summary['runs']} runs in {summary['wall_s']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
