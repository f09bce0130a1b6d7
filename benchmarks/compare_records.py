"""Compare two runs of one benchmark suite, record by record: the objective (every problem
minimises), the status and the checks, as a table and counts.

    python benchmarks/compare_records.py OLD/records.jsonl NEW/records.jsonl [--tol 1e-9] [--md OUT]

A run is *worse* when its objective is higher than the old one by more than the relative
tolerance, when it lost a solution the old run had, or when its checks failed; *better* when the
objective is lower or it found a solution the old run did not. Runs present in one file only are
listed apart. Exits 1 when any run is worse.
"""

from __future__ import annotations

import argparse
import json
import sys


def read(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return {r["run"]: r for r in map(json.loads, fh) if r.get("run")}


def verdict(old: dict, new: dict, tol: float) -> str:
    if new.get("checks_ok") is False:
        return "worse"
    a, b = old.get("objective"), new.get("objective")
    if a is None and b is None:
        return "same"
    if b is None:
        return "worse"
    if a is None:
        return "better"
    scale = max(1.0, abs(a))
    if b > a + tol * scale:
        return "worse"
    if b < a - tol * scale:
        return "better"
    return "same"


def compare(old: dict, new: dict, tol: float) -> tuple[list, dict]:
    rows, counts = [], {"same": 0, "better": 0, "worse": 0}
    for run in sorted(set(old) & set(new)):
        v = verdict(old[run], new[run], tol)
        counts[v] += 1
        rows.append((run, old[run].get("status"), old[run].get("objective"), new[run].get("status"),
                     new[run].get("objective"), v))
    return rows, counts


def markdown(rows: list, counts: dict, only_old: list, only_new: list) -> str:
    lines = ["| run | old status | old objective | new status | new objective | verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {r} | {a} | {b:.6g} | {c} | {d:.6g} | {v} |" if isinstance(b, (int, float)) and
              isinstance(d, (int, float)) else f"| {r} | {a} | {b} | {c} | {d} | {v} |" for r, a, b, c, d, v in rows]
    lines.append("")
    lines.append(f"same {counts['same']}, better {counts['better']}, worse {counts['worse']}"
                 + (f"; only in the old run: {', '.join(only_old)}" if only_old else "")
                 + (f"; only in the new run: {', '.join(only_new)}" if only_new else ""))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--tol", type=float, default=1e-9, help="relative tolerance on the objective")
    p.add_argument("--md", help="write the table to this markdown file")
    args = p.parse_args(argv)
    old, new = read(args.old), read(args.new)
    rows, counts = compare(old, new, args.tol)
    text = markdown(rows, counts, sorted(set(old) - set(new)), sorted(set(new) - set(old)))
    if args.md:
        with open(args.md, "w", encoding="utf-8") as fh:
            fh.write(text)
    sys.stdout.write(text.splitlines()[-1] + "\n")
    for r in rows:
        if r[-1] != "same":
            sys.stdout.write(f"  {r[-1]}: {r[0]} {r[2]} -> {r[4]} ({r[1]} -> {r[3]})\n")
    return 1 if counts["worse"] else 0


if __name__ == "__main__":
    sys.exit(main())
