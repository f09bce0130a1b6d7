"""Sparse tensor algebra on a reconfigurable dataflow array (``problem: sparse``; Stardust, CGO 2025;
docs/sparse.md).

One statement in TACO's index notation over tensors in level formats (dense, compressed,
singleton; CSR, CSC, DCSR, COO, CSF), lowered to a graph of SAM-style primitives and run token by
token on its data. Decided per kernel: the memory of every array (DRAM, SRAM, sparse SRAM, FIFO,
register; the loop depth of an SRAM copy and its PMUs), the co-iteration of every join of two
compressed levels (two-finger merge, bit vectors, dense iteration) and the inner and outer
parallelisation, within the machine's PMUs, PCUs and lanes. Objective: the estimated cycles
(:mod:`.cost`), then DRAM words and PMUs. Formulations: ``cpsat`` (default) and ``stardust``, the
fixed rules of Stardust's public code, which every solution reports as its ``baseline``.

>>> import dfopt
>>> sol = dfopt.solve("instances/sparse/spmv-karate.json", time_limit=20)
>>> sec = sol.sections["sparse"]
>>> sol.status.value, all(c.ok for c in sol.checks), sec["cycles"] <= sec["baseline"]["cycles"]
('optimal', True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.options import CommonOptions, option
from dfopt.models.sparse.checks import checks
from dfopt.models.sparse.cost import estimate, join_work
from dfopt.models.sparse.decision import METHODS, SparseDesign
from dfopt.models.sparse.formulations import formulations
from dfopt.models.sparse.problem import SparseData, build
from dfopt.models.sparse.stardust import stardust_design
from dfopt.models.sparse.summary import summary

if TYPE_CHECKING:
    from dfopt.instance.types import Instance

__all__ = ["PROBLEM", "Options", "SparseData", "SparseDesign", "checks", "compile_kernel", "prepare"]


@dataclass(frozen=True)
class Options(CommonOptions):
    """Sparse-kernel options (``options.sparse``, ``dfopt solve`` flags, keywords)."""

    workers: int = option(1, "CP-SAT workers (with --no-deterministic more than one is not reproducible)",
                          minimum=1, maximum=64, metavar="N")
    target: str = option("all", "--emit-dir: what to write beside the result, the binding table and the "
                                "primitive graph (spatial: the Spatial program; hls: the HLS C++ project "
                                "in DIR/hls; all: every target)",
                         choices=("tensor", "spatial", "hls", "all"))
    hls_depths: str = option("iteration", "--emit-dir, target hls: FIFO depths (iteration: the most tokens "
                                          "of a stream in P + 1 consecutive iterations of the outermost "
                                          "loop, P the processes, + 2; stream: every token of the "
                                          "stream, no write ever blocks)",
                             choices=("iteration", "stream"))


def _base_dir(instance: Instance) -> Path:
    return Path(instance.path).resolve().parent if instance.path else Path.cwd()


def prepare(instance: Instance, options: Options, methods: dict | None = None) -> SparseData:
    assert instance.sparse is not None  # the driver checks the parts a problem needs
    data = build(instance.sparse, _base_dir(instance), instance.platform, methods)
    data.baseline = stardust_design(data)
    data.baseline_estimate = estimate(data.sim, data.vloop, data.baseline, data.machine, data.regions)
    return data


def prepare_for_check(instance: Instance, options: Options, methods: dict) -> SparseData:
    """The data rebuilt for the checker, the graph lowered with the solution's methods."""
    return prepare(instance, options, methods or None)


def objective(data: SparseData, decision: SparseDesign) -> float:
    return float(estimate(data.sim, data.vloop, decision, data.machine, data.regions).cycles)


def _joins(data: SparseData, decision: SparseDesign) -> dict:
    out = {}
    for name, js in data.sim.joiners.items():
        out[name] = {"index": js.index, "op": js.op, "operands": list(js.operands), "fibers": js.fibers,
                     "dim": js.dim, "inter": js.inter, "union": js.union,
                     "work": {k: join_work(js, k, data.machine.word_bits) for k in METHODS},
                     "method": decision.coiteration.get(name)}
    return out


def _arrays(data: SparseData) -> dict:
    return {name: {"tensor": f.tensor, "kind": f.kind, "role": f.role, "loop": f.loop, "length": int(f.length),
                   "accesses": int(f.accesses), "in_order": bool(f.in_order), "gather": bool(f.gather),
                   "region": data.regions[name]}
            for name, f in data.sim.arrays.items()}


def report(data: SparseData, outcome: Outcome, options: Options) -> dict:
    """The ``sparse`` section beside the decision: the estimate and its parts, the baseline, the
    joins with each method's work, the arrays' access facts, the run's counts."""
    est = estimate(data.sim, data.vloop, outcome.decision, data.machine, data.regions)
    base = data.baseline_estimate
    tokens = int(sum(data.sim.streams.values()))
    outcome.stats.update(simulation_s=round(data.sim_seconds, 4),
                         tokens_per_second=tokens / data.sim_seconds if data.sim_seconds > 0 else None)
    result = data.sim.result
    return {
        **est.to_json(),
        "baseline": {**base.to_json(), **data.baseline.to_json()},
        "speedup": base.cycles / est.cycles if est.cycles else None,
        "loops": list(data.concrete.loops),
        "vector_loop": data.vloop,
        "dims": dict(data.dims),
        "joins": _joins(data, outcome.decision),
        "arrays": _arrays(data),
        "primitives": len(data.sim.units),
        "streams": len(data.sim.streams),
        "tokens": tokens,
        "result": {"tensor": data.statement.result, "shape": list(result.shape), "nnz": int(result.nnz)},
    }


def _emit(instance: Instance, solution: Any, out_dir: Any, options: Options | None = None) -> dict:
    from dfopt.models.sparse.emit import emit

    return emit(instance, solution, out_dir, options)


def compile_kernel(expression: str, tensors: dict, platform: Any = "capstan", schedule: list | None = None,
            **options: Any) -> Any:
    """Solve one sparse statement given in Python: ``tensors`` maps each tensor to its fields as in
    an instance (``format``, ``region``, ``shape``) with ``data`` a file spec or an in-memory
    array — a ``scipy.sparse`` matrix, a NumPy array or a :class:`~dfopt.ir.sparse.tensor.Coo`,
    written to a temporary ``.npz`` for the run. Returns the checked solution.

    >>> import numpy as np, scipy.sparse as sp
    >>> a = sp.random(40, 30, density=0.1, random_state=1, format="csr")
    >>> sol = compile_kernel("y(i) = A(i,j) * x(j)", {"A": {"format": "csr", "data": a},
    ...     "x": {"format": "dense", "data": np.ones(30)}, "y": {"format": "dense"}}, time_limit=10)
    >>> all(c.ok for c in sol.checks), sol.sections["sparse"]["result"]["shape"]
    (True, [40])
    """
    import tempfile

    import numpy as np

    from dfopt.api import make_options
    from dfopt.instance.types import Instance
    from dfopt.ir.platform import Platform, load_preset
    from dfopt.ir.sparse.statement import SparseStatement
    from dfopt.ir.sparse.tensor import Coo
    from dfopt.models import driver

    with tempfile.TemporaryDirectory(prefix="dfopt-sparse-") as folder:
        decls = {}
        for name, fields in tensors.items():
            fields = dict(fields)
            data = fields.get("data")
            if data is not None and not isinstance(data, (str, dict)):
                coo = data if isinstance(data, Coo) else (Coo.from_scipy(data) if hasattr(data, "tocoo")
                                                          else Coo.from_dense(np.asarray(data)))
                np.savez(Path(folder) / f"{name}.npz", coords=coo.coords, values=coo.values,
                         shape=np.asarray(coo.shape, dtype=np.int64))
                fields["data"] = f"{name}.npz"
            decls[name] = fields
        raw = {"expression": expression, "tensors": decls, **({"schedule": list(schedule)} if schedule else {})}
        plat = load_preset(platform) if isinstance(platform, str) else platform
        if isinstance(plat, dict):
            plat = Platform.from_dict(plat)
        instance = Instance("sparse", "sparse", platform=plat, sparse=SparseStatement.from_dict(raw),
                            platform_name=platform if isinstance(platform, str) else None,
                            path=str(Path(folder) / "instance.json"))
        return driver.solve(instance, make_options(instance, **options))


PROBLEM = Problem(
    recount=True,
    info=registry.info("sparse"), options=Options, decision=SparseDesign, prepare=prepare,
    formulations=formulations(), default="cpsat", objective=objective, report=report, checks=checks,
    summary=summary, emit=_emit,
    emit_help="write the result tensor (DIR/<result>.mtx or .npy), the binding table (DIR/binding.md), the "
              "primitive graph (DIR/graph.dot) and, with --target spatial or all, the Spatial program "
              "(DIR/<name>.scala); with --target hls or all, the HLS C++ project (DIR/hls: make csim, "
              "make csim-vitis)")

