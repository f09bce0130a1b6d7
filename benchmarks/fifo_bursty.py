"""FIFO sizing on bursty per-token schedules: what steady rates miss, and what each formulation
reaches on the exact schedule. One run, every figure side by side:

1. **Steady fit**: each stream end's schedule replaced by the steady rate that spans the same
   cycles (the producer's ``delay`` = its earliest first write, ``produce_ii`` / ``consume_ii`` =
   the end's cycles per token, at least 1) — what a flow that knows only rates would model. The
   fitted graph is sized by ``slack``, ``flow`` and ``occupancy``, and the depths are then run on
   the *exact* schedule: makespan ratio against the exact unbounded reference (1.0 = no loss).
2. **Exact**: every formulation sizes the exact graph (all proven latency-preserving); total depth
   and BRAM18 relative to the exact occupancy baseline, the lower bound, the time.
3. **Frontier**: ``search`` with ``--frontier 6`` up to 50 % slack: points and time.

    python benchmarks/fifo_bursty.py                                # shipped + generated instances
    python benchmarks/fifo_bursty.py instances/fifo/matmul-chain-bursty.json --time-limit 30
    python benchmarks/fifo_bursty.py --objective bram18 --no-frontier -o benchmarks/results/fifo-bursty-bram18.json

Results: ``benchmarks/results/fifo-bursty.json`` (summarised in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path

import numpy as np

import dfopt
from dfopt.io import write_json_atomic
from dfopt.ir.graph import DataflowGraph
from dfopt.sim import simulate

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "fifo-bursty.json"
FORMULATIONS = ("slack", "flow", "search", "occupancy")


def default_instances() -> list[Path]:
    shipped = sorted((ROOT / "instances" / "fifo").glob("*.json"))
    generated = sorted((Path(__file__).parent / "instances" / "bursty").glob("*.json"))
    return [p for p in shipped + generated if _has_schedules(p)]


def _has_schedules(path: Path) -> bool:
    graph = dfopt.load(path).graph
    return graph is not None and graph.has_token_schedules


def steady_fit(graph: DataflowGraph) -> DataflowGraph:
    """The same graph with every per-token schedule replaced by the steady rate over its span."""
    delay = {k: None for k in graph.kernels}
    streams = []
    for name, s in graph.streams.items():
        w, r = graph.write_schedule(name), graph.read_schedule(name)
        per = max(s.tokens - 1, 1)
        streams.append(dataclasses.replace(
            s, src_schedule=None, dst_schedule=None,
            produce_ii=max(1, math.ceil((w.last - w.first) / per)),
            consume_ii=max(1, math.ceil((r.last - r.first) / per))))
        if s.tokens:
            delay[s.src] = w.first if delay[s.src] is None else min(delay[s.src], w.first)
    kernels = [dataclasses.replace(k, delay=delay[k.name] if delay[k.name] is not None else k.delay, latency=None)
               for k in graph.kernels.values()]
    return DataflowGraph(kernels, streams)


def run_instance(path: Path, time_limit: float, objective: str = "depth", frontier: bool = True) -> dict:
    inst = dfopt.load(path)
    graph = inst.graph
    ref = simulate(graph, unbounded=True)
    fitted = steady_fit(graph)
    row: dict = {"instance": inst.name, "kernels": len(graph.kernels), "streams": len(graph.streams),
                 "events": ref.events, "reference_makespan": ref.makespan, "steady_fit": {}, "exact": {}}
    for f in ("slack", "flow", "occupancy"):
        sol = dfopt.fifo.size(fitted, formulation=f, time_limit=time_limit)
        run = simulate(graph, dict(sol.decision.depths))
        row["steady_fit"][f] = {"total_depth": sol.sections["fifo"]["total_depth"],
                                "makespan_on_exact": run.makespan, "deadlock": run.deadlock,
                                "latency_ratio": None if run.deadlock else run.makespan / ref.makespan}
    for f in FORMULATIONS:
        t = time.perf_counter()
        sol = dfopt.solve(inst, formulation=f, time_limit=time_limit, objective=objective)
        sec = sol.sections["fifo"]
        row["exact"][f] = {"ok": sol.ok, "total_depth": sec["total_depth"], "total_bits": sec["total_bits"],
                           "bram18": sec["bram18"], "bound": sol.bound, "objective": sol.objective,
                           "makespan": sec["makespan"], "time_s": time.perf_counter() - t,
                           "status": sol.status.value}
    base = row["exact"]["occupancy"]
    for f in FORMULATIONS:
        e = row["exact"][f]
        e["depth_vs_occupancy"] = e["total_depth"] / max(base["total_depth"], 1)
        e["bram18_vs_occupancy"] = e["bram18"] / base["bram18"] if base["bram18"] else None
    if frontier:
        t = time.perf_counter()
        sol = dfopt.solve(inst, formulation="search", frontier=6, frontier_slack=0.5, time_limit=time_limit)
        row["frontier"] = {"points": [(p["makespan"], p["total_depth"]) for p in sol.sections["fifo"]["frontier"]],
                           "time_s": time.perf_counter() - t, "ok": sol.ok}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instances", nargs="*", type=Path)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--objective", choices=("depth", "bits", "bram18"), default="depth",
                    help="what the exact formulations minimise (the steady fit always sizes depth)")
    ap.add_argument("--no-frontier", action="store_true", help="skip the frontier runs")
    ap.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = ap.parse_args()
    rows = []
    for path in args.instances or default_instances():
        row = run_instance(path, args.time_limit, args.objective, not args.no_frontier)
        rows.append(row)
        fit = ", ".join(f"{f} {v['latency_ratio'] if v['latency_ratio'] is None else round(v['latency_ratio'], 3)}"
                        for f, v in row["steady_fit"].items())
        ex = ", ".join(f"{f} {v['depth_vs_occupancy']:.3f}" for f, v in row["exact"].items())
        ex += "; BRAM18 / occupancy's: " + ", ".join(
            f"{f} {v['bram18_vs_occupancy']:.3f}" if v["bram18_vs_occupancy"] is not None else f"{f} -"
            for f, v in row["exact"].items())
        front = (f"; frontier {len(row['frontier']['points'])} points in {row['frontier']['time_s']:.1f} s"
                 if "frontier" in row else "")
        print(f"{row['instance']}: {row['kernels']} kernels, {row['events']} events; steady-fit depths on the exact "
              f"schedule, latency x: {fit}; exact depth / occupancy: {ex}{front}", flush=True)
    lengthened = {f: sum(1 for r in rows if (r["steady_fit"][f]["latency_ratio"] or np.inf) > 1) for f in
                  ("slack", "flow", "occupancy")}
    geo = {f: float(np.exp(np.mean([np.log(r["exact"][f]["depth_vs_occupancy"]) for r in rows])))
           for f in FORMULATIONS} if rows else {}
    worst = {f: max([r["steady_fit"][f]["latency_ratio"] for r in rows if r["steady_fit"][f]["latency_ratio"]],
                    default=None) for f in ("slack", "flow", "occupancy")}
    deadlocks = {f: sum(1 for r in rows if r["steady_fit"][f]["deadlock"]) for f in ("slack", "flow", "occupancy")}
    bram = {f: float(np.exp(np.mean([np.log(r["exact"][f]["bram18_vs_occupancy"]) for r in rows
                                     if r["exact"][f]["bram18_vs_occupancy"]])))
            for f in FORMULATIONS} if rows else {}
    summary = {"instances": len(rows), "objective": args.objective, "exact_bram18_vs_occupancy_geomean": bram,
               "steady_fit_lengthened_or_deadlocked": lengthened,
               "steady_fit_deadlocked": deadlocks, "steady_fit_worst_latency_ratio": worst,
               "exact_depth_vs_occupancy_geomean": geo}
    print(summary)
    write_json_atomic(args.output, {"rows": rows, "summary": summary})


if __name__ == "__main__":
    main()
