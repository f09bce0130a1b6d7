"""HiGHS backend through highspy directly (MIP and LP), plus small highspy helpers.

Status map (``HighsModelStatus`` -> Termination / SolutionStatus):

==========================  ============================================================
kOptimal, kModelEmpty       optimal / optimal
kInfeasible                 infeasible / none
kUnbounded                  unbounded / none
kUnboundedOrInfeasible      re-solved with a zero objective: infeasible, or unbounded
kTimeLimit                  time_limit / feasible if HiGHS holds a feasible point, else none
kIterationLimit,            feasible / feasible with a point, else error / none
kSolutionLimit, kInterrupt,
kObjectiveBound/Target
anything else               error / none
==========================  ============================================================

>>> from dfopt.ilp import LinearModel, solve
>>> m = LinearModel()
>>> x = m.num_var(0, 3, "x")
>>> m.maximize(2 * x)
>>> solve(m, "highs").objective
6.0
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

import numpy as np

from dfopt import progress
from dfopt.ilp.backends import Backend, Capabilities, RawResult, SolveOptions, importable
from dfopt.ilp.model import ModelData
from dfopt.results import SolutionStatus, Termination

if TYPE_CHECKING:
    import highspy

logger = logging.getLogger(__name__)

_BANNER_DONE = False
_BANNER_LOCK = threading.Lock()


def new_highs(log: bool = False) -> highspy.Highs:
    """A quiet ``highspy.Highs``; with ``log`` its log goes to :mod:`logging`, never to stdout.

    HiGHS prints a banner to the C stdout the first time one is built; that one construction
    runs with file descriptor 1 pointed at /dev/null.
    """
    import highspy

    global _BANNER_DONE
    if _BANNER_DONE:
        h = highspy.Highs()
    else:
        with _BANNER_LOCK:          # two threads building their first ones at once
            if _BANNER_DONE:
                h = highspy.Highs()
            else:
                with _quiet_fd1():
                    h = highspy.Highs()
                _BANNER_DONE = True
    h.setOptionValue("output_flag", bool(log))
    h.setOptionValue("log_to_console", False)
    if log:
        h.cbLogging.subscribe(lambda e: logger.info("%s", str(e.message).rstrip()))
    return h


def absorb_banner() -> None:
    """Make sure the once-per-process HiGHS banner has been printed to /dev/null (call before
    code that builds ``highspy.Highs`` itself, such as cvxpy)."""
    if not _BANNER_DONE:
        new_highs()


@contextlib.contextmanager
def _quiet_fd1():
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no real fd 1 (embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def highs_lp(data: ModelData, names: bool = False) -> highspy.HighsLp:
    """A ``highspy.HighsLp`` from model arrays (row-wise matrix, the model's own sense)."""
    import highspy

    lp = highspy.HighsLp()
    n, m = data.num_vars, data.num_rows
    lp.num_col_, lp.num_row_ = n, m
    lp.sense_ = highspy.ObjSense.kMaximize if data.maximize else highspy.ObjSense.kMinimize
    lp.col_cost_ = data.obj
    lp.offset_ = data.obj_offset
    lp.col_lower_, lp.col_upper_ = data.var_lb, data.var_ub
    lp.row_lower_, lp.row_upper_ = data.row_lb, data.row_ub
    mat = lp.a_matrix_
    mat.format_ = highspy.MatrixFormat.kRowwise
    mat.num_col_, mat.num_row_ = n, m
    mat.start_, mat.index_, mat.value_ = data.A.indptr, data.A.indices, data.A.data
    if data.integer.any():
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[int(b)] for b in data.integer]
    if names:
        lp.col_names_ = list(data.var_names)
        lp.row_names_ = list(data.row_names)
    return lp


def _map_status(h, status_name: str):
    feasible = int(h.getInfo().primal_solution_status) == 2
    sol = SolutionStatus.FEASIBLE if feasible else SolutionStatus.NONE
    if status_name in ("kOptimal", "kModelEmpty"):
        return Termination.OPTIMAL, SolutionStatus.OPTIMAL, ""
    if status_name == "kInfeasible":
        return Termination.INFEASIBLE, SolutionStatus.NONE, ""
    if status_name == "kUnbounded":
        return Termination.UNBOUNDED, SolutionStatus.NONE, ""
    if status_name == "kTimeLimit":
        return Termination.TIME_LIMIT, sol, ""
    if status_name in ("kIterationLimit", "kSolutionLimit", "kInterrupt", "kHighsInterrupt",
                       "kObjectiveBound", "kObjectiveTarget"):
        if feasible:
            return Termination.FEASIBLE, sol, f"HiGHS stopped: {status_name}"
        return Termination.ERROR, sol, f"HiGHS stopped without a solution: {status_name}"
    return Termination.ERROR, SolutionStatus.NONE, f"HiGHS status {status_name}"


def _disambiguate(h, lp) -> str:
    """``kUnboundedOrInfeasible``: solve with a zero objective to tell the two apart."""
    h.changeColsCost(lp.num_col_, np.arange(lp.num_col_, dtype=np.int32), np.zeros(lp.num_col_))
    h.setOptionValue("presolve", "off")
    h.run()
    name = h.getModelStatus().name
    return "kUnbounded" if name in ("kOptimal", "kModelEmpty") else "kInfeasible"


class HighsBackend(Backend):
    """HiGHS (MIP by branch and cut, LP by dual simplex) through highspy."""

    name = "highs"
    display = "HiGHS"
    capabilities = Capabilities(
        integer_vars=True, continuous_vars=True, infinite_bounds=True,
        fractional_coefficients=True, hints=True, incumbents=True,
        uses_seed=True, deterministic_seed=True, multithreaded=False,
        export_formats=("mps", "lp"),
    )

    def is_available(self) -> bool:
        return importable("highspy")

    def solve(self, data: ModelData, options: SolveOptions) -> RawResult:
        h = new_highs(options.log)
        lp = highs_lp(data)
        _set_options(h, options)
        incumbents: list = []
        ph = progress.current_phase()
        if options.record_incumbents or (ph is not None and ph.live):
            h.cbMipImprovingSolution.subscribe(_on_improving(incumbents, ph))
        h.passModel(lp)
        if len(data.hint_idx):
            h.setSolution(len(data.hint_idx), data.hint_idx.astype(np.int32), data.hint_val)
        start = time.perf_counter()
        h.run()
        elapsed = time.perf_counter() - start
        status_name = h.getModelStatus().name
        if "presolve" not in options.params and (
                status_name == "kSolveError" or (status_name == "kOptimal" and _inconsistent(h, data))):
            # highspy 1.16's presolve fails on some small MIPs: kSolveError in milliseconds on a
            # 7-kernel fusion model, or "optimal" 12 with columns worth 36 on a 6-kernel one (both
            # found by the fusion brute-force property test); solve once more without it in the time left
            logger.debug("highs on %r: %s with presolve; solving again without presolve", data.name, status_name)
            left = max(1e-3, float(options.time_limit) - elapsed)
            return self.solve(data, dataclasses.replace(options, time_limit=left,
                                                        params={**options.params, "presolve": "off"}))
        if status_name == "kUnboundedOrInfeasible":
            status_name = _disambiguate(h, lp)
        return _collect(h, status_name, data, options, elapsed, incumbents)


def _inconsistent(h, data: ModelData) -> bool:
    """A MIP whose returned columns do not give the objective HiGHS reports for them."""
    if not data.integer.any():
        return False
    x = np.asarray(h.getSolution().col_value, dtype=np.float64)
    if x.size != data.obj.size:
        return True
    claimed = float(h.getInfo().objective_function_value)
    got = float(data.obj @ x + data.obj_offset)
    return abs(got - claimed) > 1e-6 * max(1.0, abs(claimed))


def _on_improving(incumbents: list, ph: progress.Phase | None):
    """The HiGHS improving-solution callback: record ``(seconds, objective)`` and report the
    incumbent and the MIP dual bound to the progress phase."""
    def callback(e) -> None:
        out = e.data_out
        value = float(out.objective_function_value)
        incumbents.append((float(out.running_time), value))
        if ph is not None:
            bound = float(out.mip_dual_bound)
            ph.update(incumbent=value, bound=bound if np.isfinite(bound) else None)

    return callback


_SCHEDULER_THREADS: int | None = None   # the thread count HiGHS's global scheduler was last reset to


def set_threads(h: highspy.Highs, threads: int) -> None:
    """Set HiGHS's ``threads`` option to ``threads``.

    HiGHS keeps one thread pool per process, sized by the first run; a later run whose
    ``threads`` differs from it fails before it starts (status ``kNotset``) unless the pool is
    reset. The pool is reset here whenever ``threads`` differs from the size it was last given
    (runs that leave ``threads`` at its default, 0, accept any pool). Solver runs in one
    process are sequential (benchmarks run theirs in worker processes), so no run is in flight.
    """
    global _SCHEDULER_THREADS
    if threads != _SCHEDULER_THREADS:
        h.resetGlobalScheduler(True)
        _SCHEDULER_THREADS = threads
    h.setOptionValue("threads", threads)


def _set_options(h, options: SolveOptions) -> None:
    h.setOptionValue("time_limit", float(options.time_limit))
    h.setOptionValue("random_seed", int(options.seed) % 2147483647)
    h.setOptionValue("mip_rel_gap", 0.0)
    if options.workers is not None:
        set_threads(h, int(options.workers))
    for key, value in options.params.items():
        if str(h.setOptionValue(key, value)).endswith("kError"):
            from dfopt.errors import InstanceError

            raise InstanceError(f"HiGHS rejected option {key}={value!r}; see the HiGHS options list")


def _collect(h, status_name, data: ModelData, options, elapsed, incumbents) -> RawResult:
    is_mip = bool(data.integer.any())
    term, sol, msg = _map_status(h, status_name)
    info = h.getInfo()
    x = None
    if sol is not SolutionStatus.NONE:
        x = np.asarray(h.getSolution().col_value, dtype=np.float64)
    objective = float(info.objective_function_value) if x is not None else None
    if is_mip:
        bound = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else None
    else:
        bound = objective if term is Termination.OPTIMAL else None
    stats = {"status": status_name, "solve_time_s": elapsed, "nodes": int(info.mip_node_count),
             "simplex_iterations": int(info.simplex_iteration_count)}
    if options.record_incumbents:
        stats["incumbents"] = incumbents
    return RawResult(term, sol, objective, bound, x, msg, stats)

