"""Placement with the three memory-binding modes side by side, in one run.

For each instance and per-slot limit: the exact ILP (HiGHS, 30 s) with every memory in BRAM18
(``bram``), bound first by the size-ordered heuristic (``heuristic``), or chosen inside the model
(``joint``). Records status, objective (width x distance), the largest per-slot BRAM and URAM
utilisation and the kinds chosen; every solution passes the placement checker (which recounts
the memories' blocks from their geometry).

    python benchmarks/placement_memory_modes.py [OUT_DIR]   # default benchmarks/results/placement-memory
"""

from __future__ import annotations

import collections
import json
import sys
import time
from pathlib import Path

from dfopt.api import solve_instance
from dfopt.errors import DfoptError
from dfopt.instance import load
from dfopt.io import write_json_atomic

ROOT = Path(__file__).resolve().parents[1]
CASES = [(name, limit) for name in ("systolic-13x2", "systolic-13x4", "stencil-8", "stencil-16", "pagerank-8",
                                    "random-n30", "random-n50-tight")
         for limit in (0.7, 0.6)]
MODES = ("bram", "heuristic", "joint")


def run(name: str, limit: float, mode: str) -> dict:
    inst = load(ROOT / "instances" / "placement" / f"{name}.json")
    t = time.perf_counter()
    try:
        sol = solve_instance(inst, formulation="mip", time_limit=30, memory_binding=mode, max_utilization=limit)
    except DfoptError as err:
        return {"instance": name, "limit": limit, "mode": mode, "status": type(err).__name__,
                "error": str(err)[:200], "time_s": time.perf_counter() - t}
    sec = sol.sections["placement"]
    peak = {r: max(s["utilization"].get(r, 0.0) for s in sec["slots"].values()) for r in ("bram", "uram", "lut")}
    kinds = collections.Counter(sec["memory"]["binding"].values())
    return {"instance": name, "limit": limit, "mode": mode, "status": sol.status, "objective": sol.objective,
            "bound": sol.bound, "checks_ok": sol.ok, "peak": peak, "kinds": dict(kinds),
            "time_s": time.perf_counter() - t}


def main(out: Path) -> None:
    rows = []
    for name, limit in CASES:
        for mode in MODES:
            rows.append(run(name, limit, mode))
            print(json.dumps(rows[-1]), flush=True)
    write_json_atomic(out / "results.json", rows)
    lines = ["| instance | limit | mode | status | width x distance | peak BRAM | peak URAM | peak LUT | kinds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "peak" in r:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["kinds"].items()))
            lines.append(f"| {r['instance']} | {r['limit']} | {r['mode']} | {r['status']} | {r['objective']:g} | "
                         f"{r['peak']['bram']:.2f} | {r['peak']['uram']:.2f} | {r['peak']['lut']:.2f} | {kinds} |")
        else:
            lines.append(f"| {r['instance']} | {r['limit']} | {r['mode']} | {r['status']} | - | - | - | - | - |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "results" / "placement-memory"
    target.mkdir(parents=True, exist_ok=True)
    main(target)
