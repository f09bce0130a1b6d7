"""FIFO sizing of the shipped pipeline designs on exact per-token port schedules against the
steady ``delay + k * ii`` model (the pipeline option ``fifo_timing``; docs/pipeline.md, exact port
schedules).

    python benchmarks/pipeline_schedules.py [--time-limit 20] [--no-csim] [--no-grid]
                                            [--out benchmarks/results/pipeline-schedules.json]

Per instance of ``instances/pipeline/`` and timing (``exact``, ``steady``): the FIFO stage's total
depth, bits and BRAM18 and its simulated makespan (proven equal to the unbounded one); each
timing's depths simulated under the other timing (the steady depths on the real, exact port
order: a deadlock or a slower run is what they would do to the design); the same fused design
sized by the ``search`` formulation under each timing (the default ``slack`` is a heuristic, so
this separates the timing's effect from the formulation's); then both designs
emitted (``--emit-dir``) and run through ``make csim`` (dfopt's threaded runtime: concurrent
processes, bounded FIFOs of the emitted depths; it reports PASS and no cycle count) and AMD's
csim model (``../shared/tools/vitis-stream/csim-vitis.sh``), each with its wall time.

Beside them (:func:`grid`), 729 small fork-join graphs of the shapes a transformer block has,
sized both ways: how often the steady depths deadlock or slow down the design under exact timing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dfopt.api import solve_instance
from dfopt.instance import from_dict, load
from dfopt.io import write_text_atomic
from dfopt.ir.channel import stream_channel
from dfopt.ir.opgraph import OpGraph
from dfopt.models.fusion import fused_design
from dfopt.models.fusion.fused import fused_graph
from dfopt.models.pipeline import emit, fifo_stage
from dfopt.models.tiling.schedules import TIMINGS, port_timing, steady_graph
from dfopt.models.tiling.tiler import tile_graph
from dfopt.sim import simulate

ROOT = Path(__file__).resolve().parent.parent
VITIS_TOOL = ROOT.parent / "shared" / "tools" / "vitis-stream" / "csim-vitis.sh"


def _fifo_figures(sol) -> dict:
    f = sol.sections["fifo"]
    stage = next(s for s in sol.sections["pipeline"]["stages"] if s["name"] == "fifo")
    return {"ok": sol.ok, "chosen": f.get("chosen"), "proof": f.get("proof"),
            "total_depth": f["total_depth"], "total_bits": f["total_bits"], "bram18": f["bram18"],
            "makespan": f["makespan"], "reference_makespan": f["reference_makespan"],
            "fifo_stage_s": round(stage["time_s"], 3), "streams": len(f["depths"])}


def _cross(fused, depths: dict, timing: str) -> dict:
    """The depths of one timing simulated on the design timed the other way."""
    graph = port_timing(fused, timing)
    run = simulate(graph, depths)
    ref = simulate(graph, unbounded=True)
    return {"timing": timing, "deadlock": bool(run.deadlock), "makespan": run.makespan,
            "reference_makespan": ref.makespan,
            "slowdown": None if run.makespan is None else round(run.makespan / ref.makespan, 4)}


def _run(cmd: list[str], cwd: Path | None = None, timeout: int = 1800) -> dict:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    out = (res.stdout + res.stderr).strip().splitlines()
    return {"rc": res.returncode, "pass": res.returncode == 0 and any(ln.startswith("PASS") for ln in out),
            "wall_s": round(time.perf_counter() - t0, 2), "tail": out[-1][:200] if out else ""}


def measure(path: Path, time_limit: float, csim: bool, folder: Path, search_limit: float = 60.0) -> dict:
    inst = load(path)
    assert inst.operators is not None
    row: dict = {"instance": path.stem}
    sols = {}
    for timing in TIMINGS:
        sols[timing] = solve_instance(inst, time_limit=time_limit, fifo_timing=timing)
        row[timing] = _fifo_figures(sols[timing])
    opts = sols["exact"].sections["pipeline"]["options"]
    tiled = tile_graph(inst.operators, opts["default_tile_size"], opts["overall_unroll_size"])
    fused = fused_design(tiled, sols["exact"].decision.fusion)
    row["same_fusion"] = sols["exact"].decision.fusion.groups == sols["steady"].decision.fusion.groups
    for timing in TIMINGS:        # the same design sized by the simulation-driven search (FIFOAdvisor style)
        t0 = time.perf_counter()
        _, r = fifo_stage(port_timing(fused, timing), formulation="search", time_limit=search_limit)
        row[timing]["search"] = {**r.details, "status": r.status, "wall_s": round(time.perf_counter() - t0, 2)}
    row["steady_depths_on_exact_timing"] = _cross(fused, dict(sols["steady"].decision.fifo.depths), "exact")
    row["exact_depths_on_steady_timing"] = _cross(fused, dict(sols["exact"].decision.fifo.depths), "steady")
    ex, st = row["exact"], row["steady"]
    row["bits_ratio"] = round(ex["total_bits"] / st["total_bits"], 4) if st["total_bits"] else None
    row["makespan_ratio"] = round(ex["makespan"] / st["makespan"], 4)
    if csim:
        for timing, sol in sols.items():
            out = folder / f"{path.stem}-{timing}"
            emit(inst, sol, out)
            row[timing]["csim"] = _run(["make", "-s", "-C", str(out), "csim"])
            row[timing]["csim"]["latency_cycles"] = None     # the threaded runtime counts no cycles
            if VITIS_TOOL.exists():
                row[timing]["csim_vitis_tool"] = _run([str(VITIS_TOOL), str(out)])
            shutil.rmtree(out, ignore_errors=True)
    return row


def _families():
    """Small operator graphs of the three fork-join shapes of a transformer block: a residual
    matmul (x -> x @ W -> x + .), a SwiGLU (silu(x @ Wg) * (x @ Wu)), an attention head with its
    residual (q + softmax(q k^T) v)."""
    f32 = "f32"
    for m, n, p in itertools.product([4, 8, 16], repeat=3):
        yield "residual", (m, n, p), {
            "tensors": {"x": {"shape": [m, n], "dtype": f32}, "w": {"shape": [n, n], "dtype": f32, "kind": "weight"}},
            "ops": [{"name": "fc", "op": "matmul", "inputs": ["x", "w"], "output": "y"},
                    {"name": "res", "op": "add", "inputs": ["x", "y"], "output": "z"}], "outputs": ["z"]}
        yield "swiglu", (m, n, p), {
            "tensors": {"x": {"shape": [m, n], "dtype": f32}, "w": {"shape": [n, p], "dtype": f32, "kind": "weight"},
                        "u": {"shape": [n, p], "dtype": f32, "kind": "weight"}},
            "ops": [{"name": "g", "op": "matmul", "inputs": ["x", "w"], "output": "gg"},
                    {"name": "s", "op": "silu", "inputs": ["gg"], "output": "sg"},
                    {"name": "up", "op": "matmul", "inputs": ["x", "u"], "output": "uu"},
                    {"name": "m", "op": "mul", "inputs": ["sg", "uu"], "output": "z"}], "outputs": ["z"]}
        yield "attention", (m, n, p), {
            "tensors": {"q": {"shape": [m, n], "dtype": f32}, "k": {"shape": [p, n], "dtype": f32},
                        "v": {"shape": [p, n], "dtype": f32}},
            "ops": [{"name": "s", "op": "matmul", "inputs": ["q", "k"], "output": "ss", "transpose_b": True},
                    {"name": "p", "op": "softmax", "inputs": ["ss"], "output": "pp"},
                    {"name": "c", "op": "matmul", "inputs": ["pp", "v"], "output": "cc"},
                    {"name": "r", "op": "add", "inputs": ["q", "cc"], "output": "z"}], "outputs": ["z"]}


def _emitted_tokens(graph, depths: dict) -> dict:
    """The emitted FIFOs' capacity in tokens: ``max(2, depth x beats)`` beats (docs/hls.md)."""
    out = {}
    for name, d in depths.items():
        beats = stream_channel(graph, graph.streams[name]).beats
        out[name] = -(-max(2, d * beats) // beats)
    return out


def _csim_case(ops: dict, tile: int, lanes: int, timing: str, folder: Path) -> dict:
    """A grid case through the pipeline (``fifo_timing``), emitted and run by ``make csim``."""
    inst = from_dict({"format": "dfopt-instance/1", "name": "grid", "problem": "pipeline", "platform": "u280",
                      "operators": ops,
                      "options": {"pipeline": {"default_tile_size": tile, "overall_unroll_size": lanes}}})
    sol = solve_instance(inst, time_limit=20, fifo_timing=timing)
    out = folder / f"grid-{timing}"
    shutil.rmtree(out, ignore_errors=True)
    emit(inst, sol, out)
    res = _run(["make", "-s", "-C", str(out), "csim"])
    shutil.rmtree(out, ignore_errors=True)
    return res


def grid(csim: bool = False, folder: Path | None = None) -> dict:
    """The families at tiles 2, 4, 8 and 8, 64, 1,024 lanes, one fused group each: FIFO depths on
    exact and steady timing, and the steady depths run on exact timing (as the FIFO stage gives
    them, and at the emitted capacity); with ``csim``, every case whose steady depths deadlock
    there is solved by the pipeline both ways, emitted and run by ``make csim``."""
    rows = []
    for (family, shape, ops), tile, lanes in itertools.product(list(_families()), [2, 4, 8], [8, 64, 1024]):
        tiled = tile_graph(OpGraph.from_dict(ops), tile, lanes)
        fused = fused_graph(tiled, dict.fromkeys(tiled.kernels, 0))
        exact, r_exact = fifo_stage(fused)
        steady, r_steady = fifo_stage(steady_graph(fused))
        depths = {k: s.depth for k, s in steady.streams.items()}
        ref = simulate(fused, unbounded=True).makespan
        run = simulate(fused, depths)
        emitted = simulate(fused, _emitted_tokens(fused, depths))
        row = {"family": family, "shape": shape, "tile": tile, "lanes": lanes,
                     "exact_bits": r_exact.details["total_bits"], "steady_bits": r_steady.details["total_bits"],
                     "exact_makespan": ref, "deadlock": bool(run.deadlock),
                     "slowdown": None if run.deadlock else run.makespan / ref,
                     "deadlock_emitted": bool(emitted.deadlock),
                     "deadlock_emitted_without_converter": bool(emitted.deadlock) and not any(
                         fused.kernels[b.kernel].op == "converter" for b in emitted.blocked)}
        if csim and folder is not None and run.deadlock:     # what the code does with these depths
            row["csim"] = {t: _csim_case(ops, tile, lanes, t, folder)["pass"] for t in TIMINGS}
        rows.append(row)
    slow = [r["slowdown"] for r in rows if r["slowdown"] is not None and r["slowdown"] > 1]
    return {"cases": len(rows),
            "steady_depths_deadlock_on_exact_timing": sum(r["deadlock"] for r in rows),
            "of_which_at_emitted_capacity": sum(r["deadlock_emitted"] for r in rows),
            "of_which_no_converter_blocked": sum(r["deadlock_emitted_without_converter"] for r in rows),
            "of_which_pass_make_csim": sum(r["csim"]["steady"] for r in rows if "csim" in r) if csim else None,
            "exact_depths_pass_make_csim_there": sum(r["csim"]["exact"] for r in rows if "csim" in r) if csim else None,
            "steady_depths_slower_on_exact_timing": len(slow),
            "largest_slowdown": round(max(slow), 4) if slow else None,
            "exact_bits_smaller": sum(r["exact_bits"] < r["steady_bits"] for r in rows),
            "exact_bits_larger": sum(r["exact_bits"] > r["steady_bits"] for r in rows),
            "exact_bits_total": sum(r["exact_bits"] for r in rows),
            "steady_bits_total": sum(r["steady_bits"] for r in rows),
            "by_family": {f: {"cases": sum(r["family"] == f for r in rows),
                              "deadlock": sum(r["deadlock"] for r in rows if r["family"] == f),
                              "slower": sum(1 for r in rows if r["family"] == f and (r["slowdown"] or 1) > 1)}
                          for f in ("residual", "swiglu", "attention")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=20.0)
    shipped = sorted(p.stem for p in (ROOT / "instances" / "pipeline").glob("*.json"))
    ap.add_argument("--instances", nargs="*", default=shipped)
    ap.add_argument("--search-limit", type=float, default=60.0, help="seconds of the search formulation per design")
    ap.add_argument("--no-csim", action="store_true", help="skip emitting and running the C++")
    ap.add_argument("--no-grid", action="store_true", help="skip the small fork-join graphs")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pipeline-schedules.json"))
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.instances:
            path = ROOT / "instances" / "pipeline" / f"{name}.json"
            row = measure(path, args.time_limit, not args.no_csim, Path(tmp), args.search_limit)
            print(json.dumps(row), flush=True)
            rows.append(row)
    record: dict = {"time_limit_s": args.time_limit, "search_limit_s": args.search_limit, "cpus": os.cpu_count(),
                    "instances": rows}
    if not args.no_grid:
        with tempfile.TemporaryDirectory() as tmp:
            record["grid"] = grid(not args.no_csim, Path(tmp))
        print(json.dumps(record["grid"]), flush=True)
    write_text_atomic(args.out, json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
