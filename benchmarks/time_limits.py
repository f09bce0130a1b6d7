"""How far ``dfopt solve --time-limit T`` runs past T on large instances (the whole command's wall
time, process start to exit, against the limit).

    python benchmarks/time_limits.py [--limit 10] [--out benchmarks/results/time-limits.json]

Cases: a 2,000-kernel chain for fifo and placement, an 800-kernel fusion chain (at 2,000 the exact
model's estimate, 13 GiB, is refused before anything is built), a 100,000-kernel fifo chain and a
5,000-kernel mapping fan (one source task streaming to 4,999 leaves on the 4x4 npu1 region).
Each runs ``dfopt solve CASE --time-limit T -o OUT --quiet`` in a fresh process; the record is
the exit code, the wall time and the overrun (wall - T).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dfopt.io import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent


def chain(problem: str, n: int) -> dict:
    """A chain of ``n`` kernels ``k0 -> k1 -> ...`` for ``problem``."""
    kernels = []
    for i in range(n):
        k: dict = {"name": f"k{i}", "delay": 4 + i % 3, "ii": 1 + i % 2}
        if problem == "placement":
            k["resources"] = {"lut": 200 + 17 * (i % 11), "ff": 300, "bram": i % 2, "dsp": i % 4}
        if problem == "fusion":
            k["resources"] = {"bytes": 1024 * (1 + i % 7)}
        kernels.append(k)
    streams = [{"name": f"e{i}", "src": f"k{i}", "dst": f"k{i + 1}", "tokens": 256, "width": 32}
               for i in range(n - 1)]
    inst: dict = {"format": "dfopt-instance/1", "name": f"{problem}-chain-{n}", "problem": problem,
                  "graph": {"kernels": kernels, "streams": streams}}
    if problem == "placement":
        inst["platform"] = "u280"
    if problem == "fusion":
        inst["options"] = {"fusion": {"c_max": 16 * 1024}}
    return inst


def mapping_fan(leaves: int) -> dict:
    """One source task streaming a token to each of ``leaves`` leaf instances."""
    from dfopt.dato.frontend import Program, Stream, StreamArray, compute
    from dfopt.dato.graph import to_instance
    from dfopt.instance.convert import to_dict

    p = Program("fan")
    pipe = StreamArray("pipe", Stream[("i32", (16,)), 2], shape=(leaves,))

    @p.task()
    def src():
        for j in range(leaves):
            pipe[j].put(compute("gen", out=("i32", (16,))))

    @p.task(mapping=[leaves])
    def leaf(i):
        compute("use", reads=[pipe[i].get()])

    inst = to_instance(p, f"mapping-fan-{leaves + 1}", "npu1", {"columns": [0, 3], "rows": [2, 5]})
    return to_dict(inst)


CASES = {
    "fifo-chain-2000": lambda: chain("fifo", 2000),
    "fusion-chain-800": lambda: chain("fusion", 800),       # 2,000 is refused by the memory budget (13 GiB)
    "placement-chain-2000": lambda: chain("placement", 2000),
    "fifo-chain-100000": lambda: chain("fifo", 100_000),
    "mapping-fan-5000": lambda: mapping_fan(4999),
}


def run(name: str, inst: dict, limit: float, folder: Path) -> dict:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(inst))
    out = folder / f"{name}.sol.json"
    argv = [sys.executable, "-m", "dfopt.cli", "solve", str(path), "--time-limit", str(limit), "-o", str(out),
            "--quiet"]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=folder)
    wall = time.perf_counter() - t0
    status = None
    if out.exists():
        status = json.loads(out.read_text()).get("status")
    last = (proc.stderr.strip().splitlines() or [""])[-1][:200]
    return {"case": name, "limit_s": limit, "rc": proc.returncode, "wall_s": round(wall, 2),
            "overrun_s": round(wall - limit, 2), "status": status, "stderr_tail": last}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "time-limits.json"))
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases:
            row = run(name, CASES[name](), args.limit, Path(tmp))
            print(json.dumps(row), flush=True)
            rows.append(row)
    record = {"limit_s": args.limit, "cpus": os.cpu_count(), "cases": rows,
              "longest_overrun_s": max(r["overrun_s"] for r in rows)}
    write_text_atomic(args.out, json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
