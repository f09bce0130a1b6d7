"""Summarise placement benchmark records as the tables of docs/benchmarks.md.

Per instance group and formulation/solver: runs, proven optimal, checks, cost over greedy and
over bipartition (geomean and worst, as (x + 1) / (y + 1) so a zero-cost optimum stays finite),
gap at the limit, time to the first solution better than greedy, median time. Then the largest
instance each formulation proved optimal, and CP-SAT against HiGHS on the same model: time to
optimal on the instances both proved, and who was faster.

    python benchmarks/summarize_placement.py benchmarks/results/placement-small benchmarks/results/placement-scale
"""

from __future__ import annotations

import collections
import statistics
import sys
from pathlib import Path

from summary_tools import fmt, gm, load


def group_of(r):
    name = Path(r["instance"]).stem
    if name.startswith("placement-n"):
        return f"random {r['n_kernels']}"
    return "shipped"


def label(r):
    return f"{r['formulation']}/{r.get('solver') or 'default'}"


def _order(key):
    group = key[0]
    return (group != "shipped", int(group.split()[-1]) if group != "shipped" else 0, key[1])


def table(records):
    ok = [r for r in records if r.get("checks_ok") and r.get("objective") is not None]
    by = {(r["instance"], label(r)): r for r in ok}
    groups = collections.defaultdict(list)
    for r in records:
        groups[(group_of(r), label(r))].append(r)
    lines = ["| instances | formulation/solver | runs | optimal | checks ok | cost / greedy (geomean, worst) | "
             "cost / bipartition (geomean) | gap at limit (median, worst) | first better than greedy (s, median) | "
             "median time (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(groups, key=_order):
        rs = groups[key]
        good = [r for r in rs if r.get("checks_ok") and r.get("objective") is not None]
        vs_greedy = [(r["objective"] + 1) / (by[r["instance"], "greedy/default"]["objective"] + 1)
                     for r in good if (r["instance"], "greedy/default") in by]
        vs_bip = [(r["objective"] + 1) / (by[r["instance"], "bipartition/default"]["objective"] + 1)
                  for r in good if (r["instance"], "bipartition/default") in by]
        gaps = [r["gap"] for r in good if r.get("gap") is not None]
        firsts = [f for r in good if (f := (r.get("metrics") or {}).get("first_better_than_greedy_s")) is not None]
        times = [r["time_total_s"] for r in good if r.get("time_total_s") is not None]
        lines.append(
            f"| {key[0]} | {key[1]} | {len(rs)} | {sum(r['status'] == 'optimal' for r in rs)} | {len(good)} | "
            f"{fmt(gm(vs_greedy))}, {fmt(max(vs_greedy) if vs_greedy else None)} | {fmt(gm(vs_bip))} | "
            f"{fmt(statistics.median(gaps) if gaps else None)}, {fmt(max(gaps) if gaps else None)} | "
            f"{fmt(statistics.median(firsts) if firsts else None, 2)} ({len(firsts)}) | "
            f"{fmt(statistics.median(times) if times else None, 2)} |")
    return "\n".join(lines)


def overall(records):
    """Geomean cost of each formulation over greedy and over bipartition, on every instance."""
    ok = [r for r in records if r.get("checks_ok") and r.get("objective") is not None]
    by = {(r["instance"], label(r)): r for r in ok}
    out = ["| formulation/solver | instances | cost / greedy (geomean) | cost / bipartition (geomean) |",
           "|---|---|---|---|"]
    for name in sorted({label(r) for r in ok}):
        rs = [r for r in ok if label(r) == name]
        g = [(r["objective"] + 1) / (by[r["instance"], "greedy/default"]["objective"] + 1)
             for r in rs if (r["instance"], "greedy/default") in by]
        b = [(r["objective"] + 1) / (by[r["instance"], "bipartition/default"]["objective"] + 1)
             for r in rs if (r["instance"], "bipartition/default") in by]
        out.append(f"| {name} | {len(rs)} | {fmt(gm(g))} | {fmt(gm(b))} |")
    return "\n".join(out)


def largest_optimal(records):
    out = []
    for name in sorted({label(r) for r in records}):
        proved = [r for r in records if label(r) == name and r["status"] == "optimal" and r.get("checks_ok")]
        if proved:
            top = max(proved, key=lambda r: r["n_kernels"])
            out.append(f"- {name}: {top['n_kernels']} kernels ({Path(top['instance']).stem}, "
                       f"{top['time_total_s']:.1f} s); proved {len(proved)} of "
                       f"{sum(label(r) == name for r in records)} runs")
    return "\n".join(out)


def cpsat_vs_mip(records):
    cp = {r["instance"]: r for r in records if label(r) == "cpsat/default"}
    mip = {r["instance"]: r for r in records if r["formulation"] == "mip"}
    both = [i for i in cp if i in mip and cp[i]["status"] == "optimal" and mip[i]["status"] == "optimal"]
    only_cp = [i for i in cp if i in mip and cp[i]["status"] == "optimal" and mip[i]["status"] != "optimal"]
    only_mip = [i for i in cp if i in mip and mip[i]["status"] == "optimal" and cp[i]["status"] != "optimal"]
    ratios = [cp[i]["time_total_s"] / mip[i]["time_total_s"] for i in both]
    faster = sum(r < 1 for r in ratios)
    return (f"- both proved optimal: {len(both)} instances; CP-SAT faster on {faster}, HiGHS on "
            f"{len(both) - faster}; time CP-SAT / HiGHS geomean {fmt(gm(ratios))} "
            f"(min {fmt(min(ratios) if ratios else None)}, max {fmt(max(ratios) if ratios else None)})\n"
            f"- only CP-SAT proved: {len(only_cp)}; only HiGHS proved: {len(only_mip)}")


def main(folders):
    for folder in folders:
        everything = load(folder)
        records = [r for r in everything if r["status"] != "infeasible"]
        refused = sorted({Path(r["instance"]).stem for r in everything if r["status"] == "infeasible"})
        print(f"## {Path(folder).name} ({len(records)} runs)\n")
        if refused:
            print(f"Refused as infeasible by every formulation (not counted below): {', '.join(refused)}\n")
        print(table(records), "\n")
        print(overall(records), "\n")
        print("Largest instance proven optimal:\n")
        print(largest_optimal(records), "\n")
        print("CP-SAT vs HiGHS on the same model:\n")
        print(cpsat_vs_mip(records), "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
