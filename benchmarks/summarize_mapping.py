"""Summarise the mapping benchmark records as the table of docs/benchmarks.md.

Per instance: virtual nodes and region tiles; for the search, the exact model hinted with it
and the exact model alone: estimated makespan, tiles used, streams over DMA, compute DMA
channels in / out, proven bound and total time; then the search's ratio to the best makespan
found and to the proven bound (how far the search is from the exact optimum).

    python benchmarks/summarize_mapping.py benchmarks/results/mapping benchmarks/results/mapping-nohint
"""

from __future__ import annotations

import sys

from summary_tools import fmt, gm, load


def cycles(x) -> str:
    return "-" if x is None else f"{int(round(x)):,}"


def main(folders) -> int:
    runs = {}
    for folder in folders:
        for r in load(folder):
            key = r["formulation"] if r["suite"] == "mapping" else f"{r['formulation']} (no hint)"
            runs.setdefault(r["instance"], {})[key] = r
    print("| instance | virtual nodes | formulation | makespan (cycles) | tiles used | DMA streams | "
          "channels in / out | bound | status | time (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    gaps, bound_gaps = [], []
    for inst in sorted(runs):
        rows = runs[inst]
        for name in ("search", "cpsat", "cpsat (no hint)"):
            r = rows.get(name)
            if r is None:
                continue
            m = {k: ("-" if v is None else v) for k, v in (r["metrics"] or {}).items()}
            ok = r["checks_ok"] and r["objective"] is not None
            print(f"| {inst} | {r['n_kernels']} | {name} | {cycles(r['objective']) if ok else r['exit_class']} | "
                  f"{m.get('tiles_used', '-')} | {m.get('dma_streams', '-')} | "
                  f"{m.get('compute_in_channels', '-')} / {m.get('compute_out_channels', '-')} | "
                  f"{cycles(r['bound'])} | {r['status']} | {r['time_total_s'] or r['wall_time_s']:.2f} |")
        found = [r["objective"] for r in rows.values() if r["checks_ok"] and r["objective"] is not None]
        bounds = [r["bound"] for r in rows.values() if r["bound"] is not None]
        search = rows.get("search")
        if search and search["checks_ok"]:
            gaps.append(search["objective"] / min(found))
            if bounds:
                bound_gaps.append(search["objective"] / max(bounds))
    print()
    print(f"Search makespan over the best found: geomean {fmt(gm(gaps))}, worst {fmt(max(gaps))}; "
          f"over the best proven bound: geomean {fmt(gm(bound_gaps))}, worst {fmt(max(bound_gaps))}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
