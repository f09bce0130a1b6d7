"""Every shipped mapping instance (``instances/mapping/*.json``) through the whole AIE flow, the
search's and the exact model's design side by side, in one run.

Per design: tiles, FIFOs and cores; the core programs (one loop body, or steps in the members' op
order: cores, calls, kernel symbols); the shim transfers (``dma_memcpy_nd``) and, recounted, how
many are outside the buffer-descriptor limits (must be none), beside the transfers as the design
planned them before legalising (how many of those were outside the limits, how many were split);
mlir-aie's checker on both MLIR forms (when the tools folder is at hand); the functional model
(element identities: faults, objects moved, wall time); the numeric model (the program's ops on the
host-compiled kernels: faults, error per output, wall time); the core kernels emitted (sources, the
largest arena a core keeps beside its FIFO buffers and stack, cores over their tile's data memory);
and ``make sim`` (the emitted kernels compiled with g++ and run inside the data movement: result and
wall time, compile included).

Usage::

    python benchmarks/aie_designs.py [--time-limit 20] [--designs ffn-2x4,gemm-4x4x4] [--tools DIR]

Results: ``benchmarks/results/aie-designs.json``; summarised in docs/aie.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dfopt  # noqa: E402
from dfopt.api import solve_instance  # noqa: E402
from dfopt.codegen.aie.bd import limits_of, pattern_faults  # noqa: E402
from dfopt.codegen.aie.design import DmaTransfer, memory_bytes  # noqa: E402
from dfopt.codegen.aie.mapping import design_from_mapping  # noqa: E402
from dfopt.codegen.aie.mapping.folder import write_design_folder  # noqa: E402
from dfopt.codegen.aie.mapping.functional import functional_check  # noqa: E402
from dfopt.codegen.aie.mapping.glue import Memory  # noqa: E402
from dfopt.codegen.aie.mapping.numeric import numeric_check  # noqa: E402
from dfopt.instance import load  # noqa: E402
from dfopt.io import write_json_atomic  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "aie-designs.json"


def _tools(arg: str | None) -> Path | None:
    for cand in (arg, os.environ.get("DFOPT_TOOLS"), ROOT.parent / "shared" / "tools"):
        if cand and (Path(cand) / "aie-check" / "check.sh").exists():
            return Path(cand)
    return None


def _design_row(name: str, formulation: str, limit: float, tools: Path | None, work: Path) -> dict:
    inst = load(ROOT / "instances" / "mapping" / f"{name}.json")
    t0 = time.perf_counter()
    sol = solve_instance(inst, formulation=formulation, time_limit=limit)
    row: dict = {"design": name, "formulation": formulation, "status": sol.status,
                 "solve_s": round(time.perf_counter() - t0, 2)}
    if not sol.ok:
        return row
    design = design_from_mapping(inst, sol)
    transfers = [op for op in design.runtime.ops if isinstance(op, DmaTransfer)]
    lim = limits_of(inst.platform)
    bits = {f.name: 32 if f.dtype == "i32" else 8 for f in design.fifos}
    planned = design.runtime.planned
    row.update(tiles=len(design.tiles), fifos=len(design.fifos), cores=len(design.cores), transfers=len(transfers),
               transfers_outside_limits=sum(1 for t in transfers
                                            if pattern_faults(t.sizes, t.strides, t.offsets, bits[t.fifo], lim)),
               transfers_planned=len(planned),
               planned_outside_limits=sum(1 for t, _ in planned
                                          if pattern_faults(t.sizes, t.strides, t.offsets, bits[t.fifo], lim)),
               planned_split=sum(1 for _, n in planned if n > 1))
    stepped = [c for c in design.cores if c.steps]
    row["program"] = {"cores_in_op_order": len(stepped), "calls": sum(c.calls() for c in design.cores),
                      "symbols": len({call.kernel for c in design.cores for call, _ in c.schedule()}),
                      "note": next((n for n in design.notes if "op order" in n), "")[:300]}
    fc = functional_check(inst, sol, design)
    row["functional"] = {"faults": len(fc.faults), "objects": fc.summary["objects"], "wall_s": fc.summary["wall_s"]}
    t0 = time.perf_counter()
    nc = numeric_check(inst, sol)
    row["numeric"] = {"faults": nc.faults[:1], "errors": {k: float(f"{v:.3g}") for k, v in nc.errors.items()},
                      "kernel_calls": nc.summary.get("kernel_calls", 0), "kernels": len(nc.kernels),
                      "wall_s": round(time.perf_counter() - t0, 3)}
    folder = work / f"{name}-{formulation}"
    write_design_folder(inst, sol, folder, name, mlir_aie_version="2025-11-17")
    meta = json.loads((folder / "design.json").read_text())
    used = memory_bytes(design)
    limit_bytes = inst.platform.npu["compute_tile"]["memory_bytes"]
    if nc.traces and not nc.faults:
        arenas = {t.tile: Memory(t).arena_bytes for t in nc.traces}
        row["kernels"] = {"sources": len(meta["cores"]), "max_arena_bytes": max(arenas.values()),
                          "max_fifo_and_stack_bytes": max(used[t] for t in arenas),
                          "cores_over_memory": sum(1 for t, a in arenas.items() if a + used[t] > limit_bytes),
                          "memory_bytes": limit_bytes}
        t0 = time.perf_counter()
        done = subprocess.run(["make", "-s", "-C", str(folder), "sim"], capture_output=True, text=True)
        row["make_sim"] = {"rc": done.returncode, "pass": done.stdout.count("PASS"),
                           "wall_s": round(time.perf_counter() - t0, 2)}
    else:
        row["kernels"] = {"sources": 0, "reason": meta["kernels"]["reason"][:200]}
    if tools is not None:
        files = [folder / f"{name}.mlir", folder / f"{name}.generic.mlir"]
        done = subprocess.run([str(tools / "aie-check" / "check.sh"), f"--keep={work / 'keep' / folder.name}",
                               *map(str, files)], capture_output=True, text=True, timeout=1800)
        row["aie_check"] = {"rc": done.returncode, "ok": done.stdout.count("OK ")}
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=20.0, help="the exact model's limit per design (s)")
    ap.add_argument("--designs", default="", help="comma-separated instance names (default all)")
    ap.add_argument("--tools", default=None, help="the tools folder with aie-check/ (default ../shared/tools)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    names = [n for n in args.designs.split(",") if n] or sorted(p.stem for p in (ROOT / "instances" / "mapping")
                                                                 .glob("*.json"))
    tools = _tools(args.tools)
    rows = []
    with tempfile.TemporaryDirectory(prefix="dfopt-aie-bench-") as tmp:
        for name in names:
            for formulation, limit in (("search", 60.0), ("cpsat", args.time_limit)):
                row = _design_row(name, formulation, limit, tools, Path(tmp))
                rows.append(row)
                print(f"{name:15s} {formulation:7s} {row['status']}: numeric "
                      f"{'PASS' if row.get('numeric', {}).get('faults') == [] else 'FAIL'}, "
                      f"kernels {row.get('kernels', {}).get('sources', 0)}, make sim {row.get('make_sim', {})}, "
                      f"aie-check {row.get('aie_check', 'not run')}", flush=True)
    write_json_atomic(args.out, {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                                 "dfopt": dfopt.__version__, "machine": platform.platform(), "cpus": os.cpu_count(),
                                 "aie_check": tools is not None, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
