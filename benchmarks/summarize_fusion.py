"""Summarise fusion benchmark records as the tables of docs/benchmarks.md.

Per size group and formulation/solver: runs, proven optimal, checks, DRAM traffic over greedy
(Algorithm 2) and over no fusion (geomean and worst), gap at the limit (median and worst), time
to the first solution better than greedy, median time. Ratios use (x + 1) / (y + 1) bytes so a
zero-traffic optimum (everything fused) stays finite.

    python benchmarks/summarize_fusion.py benchmarks/results/fusion-small benchmarks/results/fusion-scale

``--lns FOLDER`` prints the side-by-side table of ``fusion-lns`` instead (one row per instance:
Algorithm 2's traffic, the traffic / Algorithm 2 of cpsat and lns, each run's bound / Algorithm 2
and gap) and writes it as ``FOLDER/side-by-side.json``.
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
from pathlib import Path

from summary_tools import fmt, gm, load


def size_of(r):
    return f"random {r['n_kernels']}" if r["instance"].startswith("fusion-n") else "shipped"


def table(records):
    greedy = {r["instance"]: r["objective"] for r in records if r["formulation"] == "greedy" and r.get("checks_ok")}
    groups = collections.defaultdict(list)
    for r in records:
        groups[(size_of(r), r["formulation"], r.get("solver") or "default")].append(r)
    lines = ["| instances | formulation | solver | runs | optimal | checks ok | DRAM / greedy (geomean, worst) | "
             "DRAM / no fusion | gap at limit (median, worst) | first better than greedy (s, median) | "
             "median time (s) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = sorted(groups, key=lambda k: (k[0] != "shipped", int(k[0].split()[-1]) if k[0] != "shipped" else 0,
                                          k[1], k[2]))
    for key in order:
        rs = groups[key]
        ok = [r for r in rs if r.get("checks_ok") and r.get("objective") is not None]
        vs_greedy = [(r["objective"] + 1) / (greedy[r["instance"]] + 1) for r in ok if r["instance"] in greedy]
        vs_none = [(r["objective"] + 1) / (r["metrics"]["unfused_dram_bytes"] + 1) for r in ok]
        gaps = [r["gap"] for r in ok if r.get("gap") is not None]
        firsts = [r["metrics"].get("first_better_than_greedy_s") for r in ok]
        firsts = [f for f in firsts if f is not None]
        times = [r["time_total_s"] for r in ok if r.get("time_total_s") is not None]
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {len(rs)} | {sum(r['status'] == 'optimal' for r in rs)} | "
            f"{len(ok)} | {fmt(gm(vs_greedy))}, {fmt(max(vs_greedy) if vs_greedy else None)} | {fmt(gm(vs_none))} | "
            f"{fmt(statistics.median(gaps) if gaps else None)}, {fmt(max(gaps) if gaps else None)} | "
            f"{fmt(statistics.median(firsts) if firsts else None, 2)} ({len(firsts)}) | "
            f"{fmt(statistics.median(times) if times else None, 2)} |")
    return "\n".join(lines)


def largest_optimal(records):
    best = {}
    for r in records:
        if r["status"] == "optimal" and r["formulation"] != "greedy" and r["instance"].startswith("fusion-n"):
            key = (r["formulation"], r.get("solver") or "default")
            best[key] = max(best.get(key, 0), r["n_kernels"])
    return ", ".join(f"{f}/{s}: {n} kernels" for (f, s), n in sorted(best.items()))


def onchip(records):
    rows = ["| instance | formulation | DRAM / no fusion | on-chip / buffered whole |", "|---|---|---|---|"]
    for r in records:
        if not r["instance"].startswith("fusion-n") and r["formulation"] in ("greedy", "cpsat") and r.get("checks_ok"):
            m = r["metrics"]
            rows.append(f"| {r['instance']} | {r['formulation']} | {fmt(m['dram_ratio'])} | {fmt(m['onchip_ratio'])} |")
    return "\n".join(rows)


def side_by_side(records) -> list[dict]:
    """Per instance: Algorithm 2's traffic and, per formulation, traffic / Algorithm 2, the run's
    bound / Algorithm 2, gap, status and sub-solves (lns)."""
    rows: dict[str, dict] = {}
    for r in sorted(records, key=lambda r: (r["n_kernels"], r["instance"])):
        m = r.get("metrics") or {}
        row = rows.setdefault(r["instance"], {"instance": r["instance"], "kernels": r["n_kernels"],
                                              "greedy_bytes": m.get("greedy_dram_bytes")})
        g = row["greedy_bytes"]
        ok = r.get("checks_ok") and r.get("objective") is not None and g
        row[r["formulation"]] = {
            "status": r["status"], "checks_ok": r.get("checks_ok"), "dram_bytes": r.get("objective"),
            "vs_greedy": r["objective"] / g if ok else None,
            "bound_vs_greedy": r["bound"] / g if ok and r.get("bound") is not None else None,
            "gap": r.get("gap"), "time_s": r.get("time_total_s"),
            "sub_solves": m.get("lns_sub_solves"), "improved": m.get("lns_improved")}
    return list(rows.values())


def side_by_side_table(rows) -> str:
    lines = ["| instance | kernels | Algorithm 2 (MB) | cpsat / Alg. 2 | lns / Alg. 2 | bound / Alg. 2 | "
             "gap cpsat | gap lns | lns sub-solves (improved) |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        c, s = row.get("cpsat", {}), row.get("lns", {})
        bound = max((b for b in (c.get("bound_vs_greedy"), s.get("bound_vs_greedy")) if b is not None), default=None)
        lines.append(f"| {row['instance']} | {row['kernels']} | {fmt((row['greedy_bytes'] or 0) / 1e6, 2)} | "
                     f"{fmt(c.get('vs_greedy'))} | {fmt(s.get('vs_greedy'))} | {fmt(bound)} | {fmt(c.get('gap'))} | "
                     f"{fmt(s.get('gap'))} | {s.get('sub_solves', '-')} ({s.get('improved', '-')}) |")
    lines.append("")
    for f in ("cpsat", "lns"):
        ratios = [row[f]["vs_greedy"] for row in rows if row.get(f, {}).get("vs_greedy") is not None]
        lines.append(f"{f}: traffic / Algorithm 2 geomean {fmt(gm(ratios))} over {len(ratios)} instances")
    return "\n".join(lines)


def main(folders):
    if folders and folders[0] == "--lns":
        for folder in folders[1:]:
            rows = side_by_side(load(folder))
            (Path(folder) / "side-by-side.json").write_text(json.dumps(rows, indent=1) + "\n")
            print(f"### {Path(folder).name}\n\n{side_by_side_table(rows)}\n")
        return
    for folder in folders:
        records = load(folder)
        print(f"### {Path(folder).name}\n")
        print(table(records) + "\n")
        print(f"Largest random instance proven optimal: {largest_optimal(records) or 'none'}\n")
        if any(not r["instance"].startswith("fusion-n") for r in records):
            print(onchip(records) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
