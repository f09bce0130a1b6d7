"""Run a suite: every (instance x formulation x solver x seed) in a fresh worker process.

Each run is a new Python process (a fresh solver object, a clean heap for the peak-memory
figure) under an outer wall-clock ``timeout``: on expiry its whole process group is killed and the
run is recorded with status ``timeout``. Runs are sequential by default so that timings are not
disturbed; ``jobs`` > 1 runs workers side by side (for quality-only suites).

Each run gives one record (a flat dict, :func:`empty_record` lists the keys) appended to
``out_dir/records.jsonl`` as soon as it is known; at the end ``summary.md`` and ``profile.png``
are written. A run that raises a :class:`~dfopt.errors.DfoptError` (or dies) is recorded, never
raised.

The worker receives its task as JSON on stdin and writes its result to a file (solvers may print
on stdout); it re-registers the parent's problem modules (``dfopt.models.registry.REGISTRY``), so models registered at
run time (plug-ins, tests) are seen by the workers too.

>>> from dfopt.bench.suite import suite_from_dict
>>> s = suite_from_dict({"problem": "fifo", "instances": ["gen:fifo_random:n=5,seed=0"],
...                      "formulations": ["flow", "paths"], "seeds": [0, 1]})
>>> [r.key for r in plan_runs(s).runs][:2]
['rand-n5-s0/flow/default/s0', 'rand-n5-s0/flow/default/s1']
"""

from __future__ import annotations

import dataclasses
import datetime
import fnmatch
import importlib.metadata
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dfopt.bench.generators import generate
from dfopt.bench.report import primal_integral, write_report
from dfopt.bench.suite import InstanceRef, Suite, check_formulations
from dfopt.errors import EXIT_CODES, DfoptError, InfeasibleError, InstanceError, NoSolutionError
from dfopt.io import StrPath, write_json_atomic
from dfopt.results import relative_gap

if TYPE_CHECKING:
    from dfopt.solution import Solution

log = logging.getLogger(__name__)

RECORD_FORMAT = "dfopt-bench-record/1"
RECORDS_FILE = "records.jsonl"
VERSIONED_PACKAGES = ("dfopt", "numpy", "networkx", "ortools", "cvxpy", "highspy", "clarabel",
                      "scipy", "islpy")
_WORKER_CMD = "from dfopt.bench.runner import worker_main; raise SystemExit(worker_main())"
_STDERR_TAIL = 2000


@dataclass(frozen=True)
class RunSpec:
    """One run of a suite: an instance, a formulation, a solver (None = default), a seed."""

    suite: str
    instance: str
    source: InstanceRef
    n_kernels: int | None
    n_streams: int | None
    formulation: str
    solver: str | None
    seed: int
    time_limit: float
    timeout: float
    options: dict
    metrics: dict

    @property
    def key(self) -> str:
        """``instance/formulation/solver/s<seed>``, what ``only`` patterns match."""
        return f"{self.instance}/{self.formulation}/{self.solver or 'default'}/s{self.seed}"


@dataclass
class Plan:
    """The runs to do, and the keys of the runs the suite's ``skip`` rules left out."""

    runs: list
    skipped: list


# -- planning ---------------------------------------------------------------------------------

def plan_runs(suite: Suite, only: str | None = None) -> Plan:
    """All runs of a suite in order (instance, formulation, solver, seed).

    ``only`` keeps the runs whose key (``instance/formulation/solver/s<seed>``) contains it (a
    glob; an InstanceError when none does). Instance names and sizes are read here (generating
    ``gen:`` instances).
    """
    runs, skipped, keys = [], [], []
    for source, name, n_kernels, n_streams in _describe_instances(suite):
        for formulation in suite.formulations:
            for solver in suite.solvers_for(formulation):
                for seed in suite.seeds:
                    run = RunSpec(suite.name, name, source, n_kernels, n_streams, formulation, solver,
                                  seed, suite.time_limit_for(formulation), suite.timeout_for(formulation),
                                  dict(suite.options), dict(suite.metrics))
                    keys.append(run.key)
                    if only is not None and not _matches(run.key, only):
                        continue
                    if n_kernels is not None and suite.skipped(name, n_kernels, formulation, solver):
                        skipped.append(run.key)
                        continue
                    runs.append(run)
    if only is not None and not runs and not skipped:
        raise InstanceError(f"no run of suite {suite.name!r} matches {only!r}; run keys look like "
                            f"{keys[0]!r} (instance/formulation/solver/s<seed>)")
    return Plan(runs, skipped)


def _matches(key: str, pattern: str) -> bool:
    """A glob matched anywhere in the key: ``fig8*/flow`` matches ``fig8a/flow/default/s0``."""
    return fnmatch.fnmatchcase(key, f"*{pattern}*")


def _describe_instances(suite: Suite) -> list[tuple]:
    """(source, name, n_kernels, n_streams) per instance; names must be unique."""
    described: list[tuple] = []
    seen: dict[str, InstanceRef] = {}
    for source in suite.instance_refs():
        name, n_kernels, n_streams = _describe(source)
        if name in seen:
            raise InstanceError(f"two instances are named {name!r}: {seen[name]} and {source}; "
                                "benchmark records are keyed by instance name", pointer="/instances")
        seen[name] = source
        described.append((source, name, n_kernels, n_streams))
    if not described:
        raise InstanceError(f"suite {suite.name!r} has no instance (no pattern matched under "
                            f"{suite.root})", pointer="/instances")
    return described


def _describe(source: InstanceRef) -> tuple[str, int | None, int | None]:
    """Name and size of an instance; an unreadable file keeps its stem (its runs record the error)."""
    if source.kind == "gen":
        try:
            data = generate(source.ref)
        except InstanceError as err:
            raise InstanceError(f"bad generator entry {str(source)!r}: {err}", pointer="/instances") from err
    else:
        try:
            data = json.loads(Path(source.ref).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Path(source.ref).stem, None, None
    if not isinstance(data, dict):
        return Path(source.ref).stem, None, None
    graph = data.get("graph")
    if not isinstance(graph, dict):
        graph = {}
    name = data.get("name")
    if not isinstance(name, str):
        name = Path(source.ref).stem
    return name, _count(graph.get("kernels")), _count(graph.get("streams"))


def _count(items) -> int | None:
    return len(items) if isinstance(items, list) else None


# -- running ----------------------------------------------------------------------------------

def run_suite(suite: Suite, out_dir: StrPath, *, jobs: int = 1, only: str | None = None) -> list[dict]:
    """Run every planned run of ``suite``; records go to ``out_dir`` (see the module docstring).

    Returns the records of this invocation in plan order.
    """
    return run_and_report(suite, out_dir, jobs=jobs, only=only)[0]


def run_and_report(suite: Suite, out_dir: StrPath, *, jobs: int = 1, only: str | None = None) -> tuple[list, str]:
    """Like :func:`run_suite`, and also return the summary markdown it wrote."""
    check_formulations(suite)
    if jobs < 1:
        raise InstanceError(f"jobs must be >= 1, got {jobs}")
    plan = plan_runs(suite, only)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if jobs > 1:
        log.warning("running %d workers side by side: times are disturbed; use jobs > 1 for "
                    "quality-only suites", jobs)
    log.info("suite %s: %d runs (%d skipped) -> %s", suite.name, len(plan.runs), len(plan.skipped), out)
    records = _execute_all(plan.runs, out / RECORDS_FILE, jobs)
    summary = write_report(suite, records, out, skipped=len(plan.skipped))
    return records, summary


def _execute_all(runs: list, records_path: Path, jobs: int) -> list[dict]:
    versions, models = package_versions(), _model_registry()
    lock = threading.Lock()
    done = [0]

    def one(run: RunSpec) -> dict:
        record = execute_run(run, versions=versions, models=models, jobs=jobs)
        with lock:
            append_record(records_path, record)
            done[0] += 1
            log.info("[%d/%d] %s: %s (%.2f s)", done[0], len(runs), run.key, record["status"],
                     record["wall_time_s"] or 0.0)
        return record

    if jobs == 1:
        return [one(r) for r in runs]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, runs))


def execute_run(run: RunSpec, *, versions: dict | None = None, models: dict | None = None,
                jobs: int = 1) -> dict:
    """Run one :class:`RunSpec` in a fresh worker process and return its record."""
    record = empty_record(run, versions if versions is not None else package_versions(), jobs)
    with tempfile.TemporaryDirectory(prefix="dfopt-bench-") as tmp:
        result_path, log_path = Path(tmp) / "result.json", Path(tmp) / "worker.log"
        task = {"run": _run_to_dict(run), "models": models if models is not None else _model_registry(),
                "result_path": str(result_path)}
        t0 = time.perf_counter()
        returncode = _spawn_worker(task, log_path, run.timeout)
        record["wall_time_s"] = round(time.perf_counter() - t0, 6)
        if result_path.exists():
            record.update(json.loads(result_path.read_text(encoding="utf-8")))
        elif returncode is None:
            record.update(status="timeout", exit_class="timeout",
                          error=f"killed after the outer timeout of {run.timeout:g} s")
        else:
            record.update(status="crash", exit_class="crash", error=f"worker exited with code "
                          f"{returncode} without a result: {_tail(log_path)}")
    return record


def _spawn_worker(task: dict, log_path: Path, timeout: float) -> int | None:
    """Run the worker; its exit code, or None when it was killed at ``timeout``."""
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen([sys.executable, "-c", _WORKER_CMD], stdin=subprocess.PIPE,
                                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.communicate(json.dumps(task).encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return None
        except BaseException:  # interrupted: the worker has its own session, so stop it here
            _kill_group(proc)
            raise
    return proc.returncode


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the worker and whatever it started (its own session), then reap it."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return text[-_STDERR_TAIL:].strip() or "(no output)"


def append_record(path: StrPath, record: dict) -> None:
    """Append one JSON line with a single ``write`` on an ``O_APPEND`` descriptor."""
    line = (json.dumps(record, sort_keys=False) + "\n").encode("utf-8")
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def empty_record(run: RunSpec, versions: dict, jobs: int = 1) -> dict:
    """A record with every key: the run's identity and parameters, and empty results."""
    return {
        "format": RECORD_FORMAT, "suite": run.suite, "run": run.key, "instance": run.instance,
        "n_kernels": run.n_kernels, "n_streams": run.n_streams, "formulation": run.formulation,
        "solver": run.solver, "seed": run.seed,
        "parameters": {"time_limit": run.time_limit, "timeout": run.timeout, "options": run.options,
                       "source": str(run.source), "jobs": jobs},
        "versions": versions,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "status": None, "solver_used": None, "objective": None, "bound": None, "gap": None,
        "primal_integral": None, "incumbents": None,
        "time_build_s": None, "time_solve_s": None, "time_check_s": None, "time_total_s": None,
        "wall_time_s": None, "peak_memory_mb": None,
        "checks_ok": None, "checks_failed": [], "metrics": {m: None for m in run.metrics},
        "error_type": None, "error": None, "exit_class": None,
    }


def package_versions() -> dict:
    """Python's version and those of the installed packages that matter to timings."""
    versions = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _model_registry() -> dict:
    """Problem name -> the module of its package (the parent's registry, passed to the workers)."""
    from dfopt.models.registry import REGISTRY

    return {name: info.module for name, info in REGISTRY.items()}


def _run_to_dict(run: RunSpec) -> dict:
    d = dataclasses.asdict(run)
    d["source"] = {"kind": run.source.kind, "ref": run.source.ref}
    return d


# -- the worker (runs in the child process) ---------------------------------------------------

def worker_main() -> int:
    """Entry of a worker process: read the task from stdin, write the result file."""
    task = json.loads(sys.stdin.read())
    import dataclasses

    from dfopt.models.registry import REGISTRY

    for name, module in task["models"].items():
        if name in REGISTRY:
            REGISTRY[name] = dataclasses.replace(REGISTRY[name], module=module)
    result = solve_task(task["run"])
    write_json_atomic(task["result_path"], result, indent=None)
    return 0


def solve_task(run: dict) -> dict:
    """Load (or generate) the instance, solve it and describe the outcome; never raises."""
    try:
        instance = _load_instance(run["source"])
        solution = _solve(instance, run)
        result = solution_result(solution, run["metrics"])
    except DfoptError as err:
        result = error_result(err)
    except Exception as err:  # an internal bug: record it with the traceback instead of dying
        result = error_result(err, internal=True)
    result["peak_memory_mb"] = peak_memory_mb()
    return result


def _solve(instance, run: dict):
    from dfopt.api import solve

    return solve(instance, formulation=run["formulation"], solver=run["solver"],
                 seed=run["seed"], time_limit=run["time_limit"], **run["options"])


def _load_instance(source: dict):
    from dfopt import instance as instance_io

    if source["kind"] == "gen":
        return instance_io.from_dict(generate(source["ref"]))
    return instance_io.load(source["ref"])


def solution_result(solution: Solution, metrics: dict) -> dict:
    """The result fields of a record from a :class:`~dfopt.solution.Solution`."""
    stats = solution.stats or {}
    failed = [c.name for c in solution.checks if not c.ok]
    incumbents = stats.get("incumbents")
    horizon = stats.get("time_solve_s", solution.wall_time_s)
    return {
        "status": getattr(solution.status, "value", solution.status), "solver_used": solution.solver or None,
        "objective": solution.objective, "bound": solution.bound,
        "gap": relative_gap(solution.objective, solution.bound),
        "primal_integral": primal_integral(incumbents, solution.objective, horizon) if incumbents else None,
        "incumbents": incumbents,
        "time_build_s": stats.get("time_build_s"), "time_solve_s": stats.get("time_solve_s"),
        "time_check_s": stats.get("time_check_s"), "time_total_s": round(solution.wall_time_s, 6),
        "checks_ok": (not failed) if solution.checks else None, "checks_failed": failed,
        "metrics": {name: extract(solution.to_dict(), path) for name, path in metrics.items()},
        "exit_class": "ok",
    }


_ERROR_STATUS = {InfeasibleError: "infeasible", NoSolutionError: "time_limit"}
_EXIT_CLASS = {code: name for name, code in EXIT_CODES.items()}


def error_result(err: BaseException, internal: bool = False) -> dict:
    """The result fields of a run that raised; internal errors keep the traceback's tail."""
    message = str(err)
    if internal:
        message = f"{message}\n{traceback.format_exc()[-_STDERR_TAIL:]}"
    exit_code = 1 if internal else getattr(err, "exit_code", 1)
    return {"status": _ERROR_STATUS.get(type(err), "error"), "error_type": type(err).__name__,
            "error": message, "exit_class": "internal" if internal else _EXIT_CLASS.get(exit_code, "internal")}


def extract(data: dict, dotted: str) -> Any:
    """The value at a dotted path, or None (:func:`dfopt.solution.lookup`).

    >>> extract({"fifo": {"total_depth": 7}}, "fifo.total_depth"), extract({}, "fifo.x")
    (7, None)
    """
    from dfopt.solution import lookup

    return lookup(data, dotted)


def peak_memory_mb() -> float | None:
    """Peak resident memory of this process in MiB (``ru_maxrss`` is KiB on Linux, bytes on macOS);
    None where the ``resource`` module does not exist (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)
