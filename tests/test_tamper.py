"""A tamper battery: every problem's shipped solution, altered one way at a time, must fail
``dfopt check`` (exit 3 naming a failed check, or exit 2 for a file that does not load), and the
untouched one must pass.

Each problem's instance is solved once (module-scoped fixture) through ``dfopt solve -o``; each
case edits the JSON of that solution file as a hand edit would, writes it and runs ``dfopt check``
in-process. Cases are grouped as the decision altered, a recorded parameter altered, a reported
figure altered, and the record itself (objective, bound, status) altered.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from dfopt.cli import main

ROOT = Path(__file__).resolve().parent.parent

#: key -> (instance, flags of both ``dfopt solve`` and ``dfopt check``)
SOLVED = {
    "fifo": ("instances/fifo/fig8f.json", ()),
    "converter": ("instances/converter/fig5.json", ()),
    "fusion": ("instances/fusion/diamond.json", ()),
    "placement": ("instances/placement/chain-u55c.json", ()),
    "placement-memory": ("instances/placement/random-n10.json", ()),     # kernels with buffers
    "memory": ("instances/memory/tight.json", ()),
    "schedule": ("instances/schedule/jacobi-1d.json", ()),
    "schedule-tiled": ("instances/schedule/gemm.json", ("--tiling", "32")),
    "mapping": ("instances/mapping/ffn-2x4.json", ()),
    "pipeline": ("instances/pipeline/ffn.json", ()),
    "pipeline-llama": ("instances/pipeline/llama-block.json", ()),  # FIFOs deeper than 1 (ffn's are all 1)
}
TIME_LIMIT = "5"



@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """key -> the JSON of its solution file (solved on first use, once per module)."""
    cache: dict = {}

    def get(key: str) -> dict:
        if key not in cache:
            instance, flags = SOLVED[key]
            path = tmp_path_factory.mktemp(key) / "solution.json"
            code = main(["solve", str(ROOT / instance), "-o", str(path), "--quiet", "--time-limit", TIME_LIMIT,
                         *flags])
            assert code == 0, f"dfopt solve {instance} exited {code}"
            cache[key] = json.loads(path.read_text())
        return copy.deepcopy(cache[key])

    return get


def dfopt_check(key: str, solution: dict, tmp_path, capsys, flags=None) -> tuple[int, str, set]:
    """(exit code, output, names of the failed checks) of ``dfopt check`` on ``solution``."""
    instance, solve_flags = SOLVED[key]
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(solution))
    capsys.readouterr()
    code = main(["check", str(ROOT / instance), str(path), *(solve_flags if flags is None else flags)])
    out = capsys.readouterr()
    failed = {line.split()[1] for line in out.out.splitlines() if line.startswith("FAIL ")}
    return code, out.out + out.err, failed


# -- editing helpers ------------------------------------------------------------------------------


def at(d: dict, path: str):
    """The node at a path of keys joined by ``/`` (``fifo/depths``, ``mapping/routes/0``; memory
    keys hold dots)."""
    for part in path.split("/") if path else ():
        d = d[_key(d, part)]
    return d


def _key(node, part: str):
    return int(part) if isinstance(node, list) else part


def put(path: str, value):
    """A change setting ``path`` (keys joined by ``/``) to ``value``."""
    head, _, last = path.rpartition("/")

    def change(d):
        node = at(d, head)
        node[_key(node, last)] = copy.deepcopy(value)
    return change


def drop(path: str):
    head, _, last = path.rpartition("/")

    def change(d):
        node = at(d, head)
        del node[_key(node, last)]
    return change


def both(*changes):
    def change(d):
        for c in changes:
            c(d)
    return change


def deepest(depths: dict) -> str:
    return max(sorted(depths), key=lambda n: depths[n])


# -- the cases ------------------------------------------------------------------------------------

CASES: list = []


def case(key: str, name: str, change, fails=(), exit=3, xfail: str | None = None):
    """One alteration of ``key``'s solution. ``fails``: check names of which at least one must
    fail (empty: any); ``exit``: 3 (a check fails) or 2 (the file is refused at load)."""
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    CASES.append(pytest.param(key, change, tuple(fails), exit, id=f"{key}-{name}", marks=marks))


def record_cases(key: str, xfail: dict | None = None) -> None:
    """The record itself altered: objective, bound, status; and the file's identity."""
    xfail = xfail or {}
    rec = f"{key.split('-')[0]}-record"

    def bump(d):
        d["objective"] = 5.0 if d["objective"] is None else d["objective"] + max(1.0, abs(d["objective"]))

    def bound_above(d):
        obj = d["objective"]
        d["bound"] = 7.0 if obj is None else obj + max(1.0, abs(obj))

    def status_optimal(d):
        d["status"], d["bound"] = "optimal", None

    for name, change, fails, code in [
        ("objective-changed", bump, (), 3),
        ("objective-nan", put("objective", math.nan), (), 2),       # the reader refuses NaN
        ("objective-1e30", put("objective", 1e30), (), 2),      # beyond the schema's int64 range
        ("objective-negative", put("objective", -1), (), 3),
        ("bound-above-objective", bound_above, (), 3),
        ("optimal-without-bound", status_optimal, (rec,), 3),
        ("status-infeasible", put("status", "infeasible"), (rec,), 3),
        ("status-unknown", put("status", "solved"), (), 2),
        ("instance-renamed", put("instance", "another"), (), 2),
        ("format-changed", put("format", "dfopt-solution/0"), (), 2),
    ]:
        case(key, f"record-{name}", change, fails, code, xfail=xfail.get(name))


# fifo (fig8f: three streams) ------------------------------------------------------------------


def _fifo_lowered(consistent: bool):
    def change(d):
        sec = d["fifo"]
        sec["depths"][deepest(sec["depths"])] = 1
        if consistent:       # the objective and totals follow, so only the safety proof can object
            d["objective"] = sum(sec["depths"].values())
            for k in ("total_depth", "total_bits", "bram18"):
                sec.pop(k, None)
    return change


case("fifo", "deepest-to-1", _fifo_lowered(True), ("witness", "simulated"))
case("fifo", "deepest-to-1-objective-kept", _fifo_lowered(False))
case("fifo", "depth-removed", lambda d: d["fifo"]["depths"].pop(deepest(d["fifo"]["depths"])), ("depths-complete",))
case("fifo", "unknown-stream", lambda d: d["fifo"]["depths"].update(nowhere=4), ("depths-complete",))
case("fifo", "depth-0", lambda d: d["fifo"]["depths"].update(e01=0), exit=2)
case("fifo", "depth-1e40", lambda d: d["fifo"]["depths"].update(e01=1e40), exit=2)
case("fifo", "depth-text", lambda d: d["fifo"]["depths"].update(e01="x"), exit=2)
case("fifo", "depth-fraction", lambda d: d["fifo"]["depths"].update(e01=2.5), exit=2)
case("fifo", "depth-bool", lambda d: d["fifo"]["depths"].update(e01=True), exit=2)
case("fifo", "depths-list", put("fifo/depths", [2, 2, 6]), exit=2)
case("fifo", "witness-unknown-kernel", put("fifo/witness", {"lam": 1.0, "kernels": {"nowhere": 0.5}}), ("witness",))
case("fifo", "witness-out-of-range", put("fifo/witness", {"lam": 2.0, "kernels": {}}), ("witness",))
case("fifo", "param-objective", put("fifo/objective", "bits"), ("fifo-record",))
case("fifo", "param-strategy", put("fifo/strategy", "conservative"), ("fifo-record",))
case("fifo", "figure-total-depth", lambda d: d["fifo"].update(total_depth=d["fifo"]["total_depth"] + 1),
     ("objective-recounted",))
case("fifo", "figure-total-bits", lambda d: d["fifo"].update(total_bits=d["fifo"]["total_bits"] - 1),
     ("objective-recounted",))
case("fifo", "figure-makespan", lambda d: d["fifo"].update(makespan=d["fifo"]["makespan"] - 1),
     ("objective-recounted",))
case("fifo", "figure-reference-makespan", lambda d: d["fifo"].update(reference_makespan=1), ("objective-recounted",))
# the report recount and the search record (found by the fuzz battery)
case("fifo", "makespan-deleted", drop("fifo/makespan"), ("fifo-report",))
case("fifo", "safe-deleted", drop("fifo/safe"), ("fifo-report",))
case("fifo", "baseline-total-bits", put("fifo/occupancy_baseline/total_bits", 2 ** 31), ("fifo-report",))
case("fifo", "baseline-doubled", lambda d: d["fifo"].update(occupancy_baseline=[d["fifo"]["occupancy_baseline"]] * 2),
     ("fifo-report",))
case("fifo", "candidate-bram18", put("fifo/candidates/slack/bram18", 10 ** 30), ("search-record",))
case("fifo", "candidate-safe-deleted", drop("fifo/candidates/slack/safe"), ("search-record",))
case("fifo", "candidate-dangling", put("fifo/candidates/slack", "no_such_name"), ("search-record",))
case("fifo", "candidate-unsafe", put("fifo/candidates/slack/safe", False), ("search-record",))
case("fifo", "candidate-cheaper", put("fifo/candidates/other", {"safe": True, "proof": "simulated", "total_depth": 1,
                                                                 "total_bits": 1, "bram18": 0}), ("search-record",))
case("fifo", "chosen-deleted", drop("fifo/chosen"), ("search-record",))
case("fifo", "chosen-unknown", put("fifo/chosen", "lp-flow"), ("search-record",))
case("fifo", "proof-renamed", put("fifo/proof", "x y"), ("search-record",))
case("fifo", "repaired-flipped", put("fifo/repaired", True), ("search-record",))
record_cases("fifo")

# converter (fig5: one stream, buffer [8, 2] of f32, shared loops 1) -------------------------------


def _shape(shape, nbytes=None, objective=True):
    def change(d):
        e = d["converter"]["converters"]["e"]
        e["shape"] = list(shape)
        if nbytes is not None:
            e["bytes"] = nbytes
            if objective:
                d["objective"] = nbytes
                d["converter"]["total_bytes"] = nbytes
    return change


case("converter", "shape-shrunk", _shape([4, 2], 64), ("converter-delivery",))
case("converter", "figure-tokens-per-phase", put("converter/converters/e/src_tokens_per_phase", 7), ("converter-bytes",))
case("converter", "figure-tokens-type", put("converter/converters/e/dst_tokens_per_phase", "x"), ("converter-bytes",))
case("converter", "figure-reuse", put("converter/converters/e/reuse", 1), ("converter-bytes",))
case("converter", "figure-needed", put("converter/converters/e/needed", False), ("converter-bytes",))
case("converter", "shape-enlarged", _shape([8, 4], 256), ("converter-minimal",))
case("converter", "shape-beyond-tensor", _shape([8, 64], 4096), ("converter-bytes",))
case("converter", "shape-wrong-rank", _shape([8, 2, 1]), ("converter-bytes",))
case("converter", "shape-element-0", _shape([8, 0]), exit=2)
case("converter", "shape-text", put("converter/converters/e/shape", "8x2"), exit=2)
case("converter", "shape-removed", drop("converter/converters/e/shape"), exit=2)
case("converter", "bytes-changed", put("converter/converters/e/bytes", 64), ("converter-bytes",))
case("converter", "bytes-negative", put("converter/converters/e/bytes", -1), exit=2)
case("converter", "shared-loops-changed", put("converter/converters/e/shared_loops", 0),
     ("converter-delivery", "converter-minimal"))
case("converter", "source-explicit", lambda d: d["converter"]["converters"].update(e={"bytes": 128,
                                                                                     "source": "explicit"}),
     ("converter-bytes",))
case("converter", "source-unknown", put("converter/converters/e/source", "magic"), exit=2)
case("converter", "removed", both(put("converter/converters", {}), put("objective", 0), put("bound", 0),
                                  put("converter/total_bytes", 0)), ("converter-bytes",))
case("converter", "unknown-stream", lambda d: d["converter"]["converters"].update(
    nowhere=copy.deepcopy(d["converter"]["converters"]["e"])), ("converter-bytes",))
case("converter", "figure-total-bytes", put("converter/total_bytes", 1), ("converter-bytes",))
case("converter", "figure-needed", put("converter/needed", 0), ("converter-bytes",))
case("converter", "figure-streams", put("converter/streams", 7), ("converter-bytes",))
record_cases("converter")

# fusion (diamond: a -> b, c -> d; C_max 128, 40 bytes a kernel; answer [a], [b, c, d]) -----------


def _groups(groups, objective=None):
    def change(d):
        d["fusion"]["groups"] = groups
        if objective is not None:
            d["objective"] = d["bound"] = objective
            for k in ("group_costs", "cut_streams", "dram_bytes"):
                d["fusion"].pop(k, None)
    return change


case("fusion", "merged", _groups([["a", "b", "c", "d"]], 0.0), ("fusion-capacity",))
case("fusion", "split", _groups([["a"], ["b"], ["c", "d"]]), ("fusion-objective", "fusion-capacity"))
case("fusion", "non-convex", _groups([["a", "d"], ["b", "c"]], 160.0), ("fusion-convex",))
case("fusion", "kernel-dropped", _groups([["a"], ["b", "c"]]), ("fusion-partition",))
case("fusion", "kernel-duplicated", _groups([["a", "d"], ["b", "c", "d"]]), ("fusion-partition",))
case("fusion", "unknown-kernel", _groups([["a"], ["b", "c", "d", "zz"]]), ("fusion-partition",))
case("fusion", "groups-out-of-order", both(_groups([["b", "c", "d"], ["a"]]), drop("fusion/group_costs")),
     ("fusion-convex",))
case("fusion", "groups-text", put("fusion/groups", "a,b,c,d"), exit=2)
case("fusion", "group-of-numbers", put("fusion/groups", [["a"], [1, 2]]), exit=2)
case("fusion", "param-c-max", lambda d: d["fusion"].update(c_max=d["fusion"]["c_max"] * 2), ("fusion-record",))
case("fusion", "param-c-max-removed", drop("fusion/c_max"), exit=2)
case("fusion", "figure-group-costs", put("fusion/group_costs", [40, 100]), ("fusion-capacity",))
case("fusion", "figure-cut-streams", put("fusion/cut_streams", ["ab"]), ("fusion-objective",))
case("fusion", "figure-dram-bytes", put("fusion/dram_bytes", 1.0), ("fusion-objective",))
case("fusion", "figure-unfused-dram-bytes", put("fusion/unfused_dram_bytes", 1.0), ("fusion-objective",))
case("fusion", "figure-dram-ratio", put("fusion/dram_ratio", 0.01), ("fusion-objective",))
case("fusion", "figure-combinatorial-bound", lambda d: d["fusion"].update(combinatorial_bound=d["objective"] * 2),
     ("fusion-objective",))
case("fusion", "figure-converters", put("fusion/converters", {"bd": {"bytes": 64, "source": "explicit"}}),
     ("fusion-capacity",))
record_cases("fusion")

# placement (chain-u55c: load pinned to SLR0; random-n10: two kernels with buffers) --------------


def _slot(kernel, where):
    return lambda d: d["placement"]["slot"].update({kernel: where})


def _moved(d):      # a kernel moved to another slot, the objective left as it was
    slot = d["placement"]["slot"]
    k = sorted(k for k in slot if k != "load")[0]
    slot[k] = "SLR2" if slot[k] != "SLR2" else "SLR0"


case("placement", "kernel-moved", _moved, ("placement-objective", "placement-capacity"))
case("placement", "kernels-crowded", lambda d: d["placement"].update(slot=dict.fromkeys(d["placement"]["slot"],
                                                                                         "SLR0")),
     ("placement-capacity",))
case("placement", "unknown-slot", _slot("conv2", "SLR9"), ("placement-assignment",))
case("placement", "pinned-moved", _slot("load", "SLR1"), ("placement-assignment",))
case("placement", "kernel-removed", lambda d: d["placement"]["slot"].pop("store"), ("placement-assignment",))
case("placement", "unknown-kernel", _slot("ghost", "SLR0"), ("placement-assignment",))
case("placement", "slot-number", _slot("conv2", 1), exit=2)
case("placement", "slots-list", put("placement/slot", ["SLR0", "SLR0", "SLR1", "SLR1"]), exit=2)
case("placement", "param-max-utilization", put("placement/max_utilization", 0.9), ("placement-record",))
case("placement", "param-balance-weight", put("placement/balance_weight", 1.0), ("placement-record",))
case("placement", "param-pins", put("placement/pins", {"load": "SLR1"}), ("placement-record",))
case("placement", "param-pins-emptied", put("placement/pins", {}), ("placement-record",))
case("placement", "param-same-slot", put("placement/same_slot", [["conv1", "conv2"]]), ("placement-record",))
case("placement", "param-memory-mode", put("placement/memory/mode", "joint"), ("placement-record",))
case("placement", "figure-distance", lambda d: d["placement"].update(distance=d["placement"]["distance"] + 64),
     ("placement-objective",))
case("placement", "figure-crossing-streams", put("placement/crossing_streams", 0), ("placement-objective",))
case("placement", "figure-slot-usage", lambda d: d["placement"]["slots"]["SLR0"]["used"].update(lut=1.0),
     ("placement-capacity",))
case("placement", "figure-slot-kernels", put("placement/slots/SLR2/kernels", 3), ("placement-capacity",))
case("placement", "figure-cut-wires-used", put("placement/cuts/0/wires_used", 0.0), ("placement-wires",))
case("placement", "figure-cut-wire-limit", put("placement/cuts/0/wires", 1 << 20), ("placement-wires",))
case("placement", "figure-imbalance", put("placement/imbalance/lut", 0.0), ("placement-objective",))
case("placement-memory", "binding-geometry-forbids", put("placement/memory/binding/k5.buf", "register"),
     ("placement-memory",))
case("placement-memory", "binding-overfills", put("placement/memory/binding/k5.buf", "lutram"),
     ("placement-capacity",))
case("placement-memory", "binding-not-the-mode", put("placement/memory/binding/k5.buf", "uram"),
     ("placement-memory",))
case("placement-memory", "binding-removed", lambda d: d["placement"]["memory"]["binding"].pop("k5.buf"),
     ("placement-memory",))
case("placement-memory", "binding-unknown-key", put("placement/memory/binding/k3.buf", "bram18"),
     ("placement-memory",))
case("placement-memory", "binding-unknown-kind", put("placement/memory/binding/k5.buf", "dram"), exit=2)
case("placement-memory", "binding-list", put("placement/memory/binding", ["bram18", "bram18"]), exit=2)
case("placement-memory", "figure-memory-resources", put("placement/memory/resources/k5", {"bram": 1.0}),
     ("placement-memory",))
record_cases("placement")

# memory (tight: k.a 16x2048, k.b 32x2048, k.c 64x512 on 1000 LUT, 6 BRAM36, 1 URAM) ---------------

case("memory", "binding-illegal-kind", put("memory/binding/k.a", "register"), ("memory-binding",))
case("memory", "binding-overfills", both(put("memory/binding/k.b", "lutram"), drop("memory/cost")),
     ("memory-capacity",))
case("memory", "binding-key-removed", lambda d: d["memory"]["binding"].pop("k.c"), ("memory-binding",))
case("memory", "binding-unknown-key", put("memory/binding/k.z", "bram18"), ("memory-binding",))
case("memory", "binding-unknown-kind", put("memory/binding/k.a", "dram"), exit=2)
case("memory", "binding-list", put("memory/binding", ["bram18"]), exit=2)
case("memory", "binding-moved-objective-kept", both(put("memory/binding/k.a", "uram"), drop("memory/cost")),
     ("memory-objective", "memory-capacity"))
case("memory", "param-max-utilization", put("memory/max_utilization", 0.9), ("memory-record",))
case("memory", "param-weights", put("memory/weights/lut", 2.0), ("memory-record",))
case("memory", "param-placement", put("memory/placement", {"k": "device"}), ("memory-record",))
case("memory", "figure-cost", put("memory/cost/k.a", 5.0), ("memory-binding",))
case("memory", "figure-owner", put("memory/owner/k.a", "other"), ("memory-binding",))
case("memory", "figure-usage", put("memory/slots/PL/bram/used", 1.0), ("memory-capacity",))
case("memory", "figure-peak", put("memory/peak", 0.1), ("memory-objective",))
case("memory", "figure-sum", put("memory/sum", 0.1), ("memory-objective",))
case("memory", "figure-counts", put("memory/counts/uram", 3), ("memory-objective",))
record_cases("memory")

# schedule (jacobi-1d; gemm tiled by 32) ------------------------------------------------------------

JACOBI_REVERSED = "[TSTEPS, N] -> { S0[t, i] -> [-t, i, 0]; S1[t, i] -> [-t, i, 1] }"
JACOBI_SHARED = "[TSTEPS, N] -> { S0[t, i] -> [2t, 0, 0]; S1[t, i] -> [1 + 2t, 0, 1] }"   # legal, not injective
JACOBI_S0_ONLY = "[TSTEPS, N] -> { S0[t, i] -> [t, 2t + i, 0] }"


def _flip(key: str, index: int = 0):
    def change(d):
        flags = d["schedule"][key]
        flags[index] = not flags[index]
    return change


def _tile_size(size: int, regenerate: bool):
    """The tiled map with another tile size (and, with ``regenerate``, the code written for it)."""
    def change(d):
        sec = d["schedule"]
        sec["tiled_map"] = sec["tiled_map"].replace("-31 +", f"-{size - 1} +").replace("32o", f"{size}o")
        if regenerate:
            sec["code"] = _code(sec["tiled_map"], sec["tiled_parallel"])
    return change


def _code(text, flags):
    from dfopt.instance import load
    from dfopt.models.schedule.formulations import code_of

    return code_of(load(ROOT / SOLVED["schedule-tiled"][0]).program, text, flags, [], [])


def _untiled(d):          # the tiled map dropped, the code written for the untiled map
    sec = d["schedule"]
    del sec["tiled_map"], sec["tiled_parallel"]
    sec["code"] = _code(d["schedule"]["map"], sec["parallel"])


case("schedule", "map-illegal", put("schedule/map", JACOBI_REVERSED), ("schedule-legal",))
case("schedule", "map-not-injective", put("schedule/map", JACOBI_SHARED), ("schedule-injective",))
case("schedule", "map-statement-missing", put("schedule/map", JACOBI_S0_ONLY), ("schedule-legal",))
case("schedule", "map-not-isl", put("schedule/map", "{ S0[t] -> "), ("schedule-legal",))
case("schedule", "map-number", put("schedule/map", 3), exit=2)
case("schedule", "map-removed", drop("schedule/map"), exit=2)
case("schedule", "parallel-flipped", _flip("parallel", 0), ("schedule-parallel",))
case("schedule", "parallel-wrong-length", put("schedule/parallel", [False, False]), ("schedule-parallel",))
case("schedule", "band-claimed-permutable", put("schedule/bands", [{"dims": [0, 1, 2], "permutable": True}]),
     ("schedule-bands",))
case("schedule", "code-replaced", put("schedule/code", "int main(){return 1;}"), ("schedule-code",))
case("schedule", "figure-dims", put("schedule/dims", 2), ("schedule-parallel",))
case("schedule", "figure-scalar", _flip("scalar", 0), ("schedule-parallel",))
case("schedule", "param-config", put("schedule/config/strategy", "feautrier"), ("schedule-record",))
case("schedule-tiled", "parallel-flipped", _flip("parallel", 0), ("schedule-parallel",))
case("schedule-tiled", "tiled-parallel-flipped", _flip("tiled_parallel", 0), ("schedule-tiled",))
case("schedule-tiled", "tiled-map-illegal", lambda d: d["schedule"].update(
    tiled_map=d["schedule"]["tiled_map"].replace("S1[i, k, j] -> [o0, o1, o2, i, k, j, 1]",
                                                 "S1[i, k, j] -> [o0, o1, o2, i, k, j, -1]")), ("schedule-tiled",))
case("schedule-tiled", "tiled-map-not-isl", put("schedule/tiled_map", "{ S0[i, j] -> "), ("schedule-tiled",))
case("schedule-tiled", "tiled-map-number", put("schedule/tiled_map", 7), exit=2)
case("schedule-tiled", "tiled-map-other-size", _tile_size(16, False), ("schedule-code", "schedule-tiled"))
case("schedule-tiled", "tiled-map-other-size-with-its-code", _tile_size(16, True), ("schedule-tiled",))
case("schedule-tiled", "tiled-map-dropped", _untiled, ("schedule-tiled",))
case("schedule-tiled", "param-tiling", put("schedule/config/tiling", 16), ("schedule-record",))
record_cases("schedule")

# mapping (ffn-2x4: 16 virtual nodes in 8 bundles filling columns 1-2, rows 2-5) --------------------


def _node_to(tile: str, pick=0):
    def change(d):
        phys = d["mapping"]["physical"]
        v = sorted(phys)[pick]
        phys[v] = tile
    return change


def _onto_occupied(d):
    phys = d["mapping"]["physical"]
    names = sorted(phys)
    other = next(t for t in sorted(set(phys.values())) if t != phys[names[0]])
    phys[names[0]] = other


def _swap_nodes(d):
    """Two physical nodes swap tiles, nodes listed accordingly: the routes no longer match."""
    sec = d["mapping"]
    a, b = sec["nodes"][0], sec["nodes"][1]
    ta, tb = a["tile"], b["tile"]
    a["tile"], b["tile"] = tb, ta
    for v in a["members"]:
        sec["physical"][v] = f"tile({tb[0]},{tb[1]})"
    for v in b["members"]:
        sec["physical"][v] = f"tile({ta[0]},{ta[1]})"


case("mapping", "node-moved-outside-region", _node_to("tile(3,2)"), ("mapping-assignment",))
case("mapping", "node-moved-to-shim-row", _node_to("tile(1,0)"), ("mapping-assignment",))
case("mapping", "node-onto-occupied-tile", _onto_occupied, ("mapping-assignment", "mapping-legality"))
case("mapping", "nodes-swapped", _swap_nodes, ("mapping-routes",))
case("mapping", "node-removed", lambda d: d["mapping"]["physical"].pop(sorted(d["mapping"]["physical"])[0]),
     ("mapping-assignment",))
case("mapping", "unknown-node", put("mapping/physical/ghost", "tile(1,2)"), ("mapping-assignment",))
case("mapping", "physical-list", lambda d: d["mapping"].update(physical=list(d["mapping"]["physical"].values())),
     exit=2)
case("mapping", "tile-malformed", _node_to("tile 1 2"), exit=2)
case("mapping", "route-removed", lambda d: d["mapping"]["routes"].pop(0), ("mapping-routes",))
case("mapping", "route-to-compute-tile", put("mapping/routes/0/mem", [1, 3]), ("mapping-routes",))
case("mapping", "route-outside-region", put("mapping/routes/0/mem", [5, 1]), ("mapping-routes",))
case("mapping", "route-shim-changed", put("mapping/routes/0/shim", [7, 0]), ("mapping-routes",))
case("mapping", "route-blocks-changed", put("mapping/routes/0/blocks", []), ("mapping-routes",))
case("mapping", "route-block-bytes-understated", put("mapping/routes/0/block_bytes", 0), ("mapping-routes",))
case("mapping", "routes-object", put("mapping/routes", {}), exit=2)
case("mapping", "route-mem-text", put("mapping/routes/0/mem", "1,1"), exit=2)
case("mapping", "route-blocks-malformed", put("mapping/routes/0/blocks", [[1]]), exit=2)
case("mapping", "param-region", put("mapping/region", {"columns": [0, 1], "rows": [2, 5]}), ("mapping-record",))
case("mapping", "figure-makespan-1", put("mapping/makespan", 1), ("mapping-objective",))
case("mapping", "record-makespan-1", both(put("mapping/makespan", 1), put("objective", 1)), ("mapping-objective",))
case("mapping", "figure-node-members", lambda d: d["mapping"]["nodes"][0]["members"].reverse(),
     ("mapping-assignment",))
case("mapping", "figure-node-kind", put("mapping/nodes/0/kind", "chain"), ("mapping-assignment",))
case("mapping", "figure-node-estimate", put("mapping/nodes/0/estimate", 1), ("mapping-assignment",))
case("mapping", "figure-node-memory", put("mapping/nodes/0/memory_bytes", 1), ("mapping-assignment",))
case("mapping", "figure-node-work", put("mapping/nodes/0/work", 1), ("mapping-assignment",))
case("mapping", "figure-tiles-used", put("mapping/tiles_used", 1), ("mapping-assignment",))
case("mapping", "figure-nodes-not-a-list", put("mapping/nodes", 1), ("mapping-assignment",))
case("mapping", "figure-node-not-an-object", put("mapping/nodes/0", "p0"), ("mapping-assignment",))
case("mapping", "figure-node-tile-number", put("mapping/nodes/0/tile", 5), ("mapping-assignment",))
record_cases("mapping")

# pipeline (ffn: one fused group, FIFO depths, memory binding, placement on the U55C) ---------------


def _pipeline_split(d):
    groups = d["fusion"]["groups"]
    groups.append([groups[0].pop()])


def _pipeline_all_ones(d):
    """Every FIFO one slot deep: below llama-block's FIFO lower bound (55 slots for 54 streams, a
    proof that one stream needs two), so unsafe whatever depths the time-limited solve found."""
    depths = d["fifo"]["depths"]
    depths.update({k: 1 for k in depths})


def _pipeline_binding(d):
    binding = d["memory"]["binding"]
    binding[sorted(binding)[0]] = "register"      # none of its FIFOs is <= 2 deep


def _pipeline_slot(d):
    slot = d["placement"]["slot"]
    slot[sorted(slot)[0]] = "SLR9"


def _pipeline_crowd(d):
    slot = d["placement"]["slot"]
    for k in slot:
        slot[k] = "SLR0"


def _stage(stage: str, **values):
    def change(d):
        for s in d["pipeline"]["stages"]:
            if s["name"] == stage:
                s.update(values)
    return change


case("pipeline", "stage-checks-ok", _stage("memory", checks_ok=False), ("pipeline-stages",))
case("pipeline", "stage-checks-ok-deep", _stage("memory", checks_ok=[[True]]), ("pipeline-stages",))
case("pipeline", "stage-figure", _stage("fifo", total_depth=1), ("pipeline-stages",))
case("pipeline", "stage-tiling-lanes", _stage("tiling", lanes=1), ("pipeline-stages",))
case("pipeline", "stage-dropped", lambda d: d["pipeline"]["stages"].pop(), ("pipeline-stages",))
case("pipeline", "stage-status-deep", _stage("memory", status=[[["optimal"]]]), ("pipeline-stages",))
case("pipeline", "fifo-proof", put("fifo/proof", "%arg0"), ("fifo:search-record",))
case("pipeline", "fifo-chosen-deleted", drop("fifo/chosen"), ("fifo:search-record",))
case("pipeline", "fusion-group-split", _pipeline_split, ("fusion:fusion-objective", "fifo:depths-complete"))
case("pipeline", "fusion-kernel-dropped", lambda d: d["fusion"]["groups"][0].pop(), ("fusion:fusion-partition",))
case("pipeline-llama", "fifo-all-to-1", _pipeline_all_ones, ("fifo:witness", "fifo:simulated"))
case("pipeline", "fifo-depth-removed", lambda d: d["fifo"]["depths"].pop(deepest(d["fifo"]["depths"])),
     ("fifo:depths-complete",))
case("pipeline", "memory-binding-illegal", _pipeline_binding, ("memory:memory-binding",))
case("pipeline", "placement-unknown-slot", _pipeline_slot, ("placement:placement-assignment",))
case("pipeline", "placement-crowded", _pipeline_crowd, ("placement:placement-capacity",))
case("pipeline", "placement-binding-illegal", lambda d: _pipeline_binding({"memory": d["placement"]["memory"]}),
     ("placement:placement-memory",))
case("pipeline", "section-removed", drop("memory"), exit=2)
case("pipeline", "figure-latency", lambda d: d["pipeline"].update(latency_cycles=d["pipeline"]["latency_cycles"] - 1),
     ("pipeline-figures",))
case("pipeline", "figure-latency-and-objective",
     both(lambda d: d["pipeline"].update(latency_cycles=1), put("objective", 1), put("fifo/makespan", 1)),
     ("pipeline-figures", "fifo:objective-recounted"))
case("pipeline", "figure-dram", lambda d: d["pipeline"]["dram"].update(total=d["pipeline"]["dram"]["total"] / 2),
     ("pipeline-figures",))
case("pipeline", "figure-dram-bytes", put("pipeline/dram_bytes", 1.0), ("pipeline-figures",))
case("pipeline", "figure-fifo-bits", put("pipeline/fifo_bits", 1), ("pipeline-figures",))
case("pipeline", "stage-objective", _stage("fusion", objective=1.0), ("fusion:fusion-objective",))
case("pipeline", "stage-status", _stage("placement", status="infeasible"), ("placement:placement-record",))
case("pipeline", "stages-not-a-list", put("pipeline/stages", 1))
case("pipeline", "stage-name-a-list", _stage("fusion", name=["fusion"]))
for _name, _value in [("default_tile_size", 32), ("overall_unroll_size", 512), ("c_max", 1 << 20)]:
    case("pipeline", f"param-{_name.replace('_', '-')}", put(f"pipeline/options/{_name}", _value),
         ("pipeline-record",))
for _path, _value, _check in [
    ("fusion/c_max", 1 << 20, "fusion:fusion-record"),
    ("fifo/objective", "bits", "fifo:fifo-record"),
    ("fifo/strategy", "conservative", "fifo:fifo-record"),
    ("memory/max_utilization", 0.5, "memory:memory-record"),
    ("memory/weights/lut", 3.0, "memory:memory-record"),
    ("memory/placement/fc1", "SLR0", "memory:memory-record"),
    ("placement/max_utilization", 0.9, "placement:placement-record"),
    ("placement/balance_weight", 2.0, "placement:placement-record"),
    ("placement/pins", {"fc1": "SLR0"}, "placement:placement-record"),
    ("placement/same_slot", [["fc1", "fc2"]], "placement:placement-record"),
    ("placement/memory/mode", "bram", "placement:placement-record"),
]:
    case("pipeline", f"param-{_path.replace('/', '-').replace('_', '-')}", put(_path, _value), (_check,))
record_cases("pipeline")


# -- the tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(SOLVED))
def test_untouched_solution_checks(key, solved, tmp_path, capsys):
    code, out, failed = dfopt_check(key, solved(key), tmp_path, capsys)
    assert code == 0 and not failed, out


@pytest.mark.parametrize("key, change, fails, exit", CASES)
def test_tampered_solution_fails_its_check(key, change, fails, exit, solved, tmp_path, capsys):
    d = solved(key)
    change(d)
    code, out, failed = dfopt_check(key, d, tmp_path, capsys)
    assert code in (2, 3), f"exit {code}:\n{out}"
    assert code == exit, f"exit {code}, expected {exit}:\n{out}"
    if code == 3:
        assert failed, f"exit 3 without a FAIL line:\n{out}"
        if fails:
            assert failed & set(fails), f"expected one of {fails} to fail, failed {sorted(failed)}:\n{out}"


def test_tiled_schedule_checked_without_its_tiling(solved, tmp_path, capsys):
    """A solution tiled by 32, checked under options that ask for no tiling: its recorded
    configuration (tiling 32) differs from the options'."""
    code, out, failed = dfopt_check("schedule-tiled", solved("schedule-tiled"), tmp_path, capsys, flags=())
    assert code == 3 and failed, out


def test_failed_check_on_solve_exits_3_and_writes_only_with_keep_failed(tmp_path, capsys, monkeypatch):
    from dfopt.models import driver
    from dfopt.solution import Check

    real = driver.run_checks

    def run_checks(*args, **kwargs):
        return real(*args, **kwargs) + [Check("tamper-injected", False, ["an injected failure"])]

    monkeypatch.setattr(driver, "run_checks", run_checks)
    instance = str(ROOT / SOLVED["fifo"][0])
    out_file = tmp_path / "sol.json"
    capsys.readouterr()
    code = main(["solve", instance, "-o", str(out_file), "--quiet"])
    out = capsys.readouterr()
    assert code == 3
    assert "tamper-injected" in out.err and "no solution file written" in out.err
    assert "tamper-injected" in out.out         # the summary lists the failed check
    assert not out_file.exists() and list(tmp_path.iterdir()) == []

    code = main(["solve", instance, "-o", str(out_file), "--quiet", "--keep-failed"])
    out = capsys.readouterr()
    assert code == 3 and "marked rejected" in out.err
    written = json.loads(out_file.read_text())
    assert written["rejected"] is True
    assert {"name": "tamper-injected", "ok": False, "details": ["an injected failure"]} in written["checks"]
