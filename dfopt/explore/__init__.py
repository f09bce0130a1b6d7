"""Design-space exploration with Optuna (``dfopt explore``; docs/explore.md).

:func:`explore` runs a study over the space an instance declares (``options.explore``, or the
problem's default space; :mod:`.space`): each trial solves and checks one design
(:mod:`.evaluate`), the study lives in a journal file or a database (:mod:`.study`), and the output
folder gets the trials table, the best design or the Pareto set, plots and a summary
(:mod:`.report`).

>>> from dfopt.instance import load
>>> import tempfile
>>> with tempfile.TemporaryDirectory() as out:
...     result = explore(load("instances/pipeline/ffn.json"), trials=2, out_dir=out, trial_time_limit=10,
...                      space={"default_tile_size": {"choices": [32, 64, 128]}})
>>> result.summary["trials"] - result.summary["repeated"], result.summary["feasible"] >= 1
(2, True)

The package itself is callable, so ``import dfopt; dfopt.explore(instance, ...)`` is
:func:`explore`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dfopt.errors import InstanceError

if TYPE_CHECKING:
    from dfopt.instance.types import Instance

__all__ = ["explore", "ExploreResult"]

MAX_WORKERS = 64
MAX_TRIALS = 1_000_000


class _CallableModule(types.ModuleType):
    """``dfopt.explore(...)`` calls :func:`explore` (the package keeps its modules)."""

    def __call__(self, *args: Any, **kwargs: Any) -> ExploreResult:
        return explore(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


@dataclass
class ExploreResult:
    """The study, its parsed settings, the best trials (one, or the Pareto set) and the summary."""

    study: Any
    config: Any
    best: list = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    out_dir: str | None = None


def explore(instance: Instance | str, *, trials: int = 50, timeout: float | None = None, seed: int = 0,
            storage: str | None = None, workers: int = 1, out_dir: str | os.PathLike | None = None,
            study: str | None = None, emit_dir: str | None = None, heartbeat: int = 10,
            **settings: Any) -> ExploreResult:
    """Run (or continue) the study of ``instance`` until it holds ``trials`` trials or ``timeout``
    seconds pass; ``settings`` are the fields of ``options.explore`` (``space``, ``objectives``,
    ``sampler``, ``trial_time_limit``, ``prune``, ``dataset``, ``repeats``, ``threads``), laid over
    the instance's. ``workers`` > 1 starts that many worker processes in all (this one included).
    ``heartbeat``: seconds between a worker's signs of life in a relational storage.
    Writes the output folder (:mod:`.report`) and, with ``emit_dir``, the best design's code."""
    from dfopt.explore import study as st
    from dfopt.explore.evaluate import Evaluator
    from dfopt.explore.report import best_trials, write_outputs
    from dfopt.explore.space import parse
    from dfopt.instance import load
    from dfopt.progress import phase

    inst = load(instance) if isinstance(instance, (str, os.PathLike)) else instance
    out_dir = None if out_dir is None else os.fspath(out_dir)
    _check_counts(trials, workers, timeout)
    config = parse(inst, overrides=settings)
    if out_dir is None and storage is None:
        raise InstanceError("explore needs an output folder (out_dir / -o)", pointer="-o")
    storage_obj = st.open_storage(storage, out_dir, heartbeat)
    s = st.create(inst, config, storage_obj, study, seed)
    t0 = time.time()
    deadline = None if timeout is None else t0 + timeout
    procs = _start_workers(storage if storage is not None else str(Path(out_dir or ".") / st.JOURNAL),
                           s.study_name, workers - 1, trials, deadline, seed, out_dir, heartbeat)
    evaluator = Evaluator(inst, config, seed)
    stopped = "budget"
    try:
        evaluator.prepare()
        with phase(f"explore {inst.name}", timeout, numbers=False) as ph:
            def on_trial(trial) -> None:
                _progress(ph, s, config, trials, t0)

            _progress(ph, s, config, trials, t0)
            stats = st.run_worker(s, evaluator, trials, deadline, out_dir, worker=0, on_trial=on_trial,
                                  reap=storage is None or not st.is_url(storage))
            stopped = stats.stopped
            for p in procs:
                _wait(p, deadline)
        if stopped == "budget" and st.counted(s) < trials:
            stopped = "timeout" if deadline is not None and time.time() >= deadline else stopped
        summary: dict = {}
        if out_dir is not None:
            summary = write_outputs(s, config, out_dir, evaluator, stopped, time.time() - t0)
        result = ExploreResult(s, config, best_trials(s, config), summary, None if out_dir is None else str(out_dir))
        if emit_dir is not None and result.best:
            _emit_best(inst, config, evaluator, result, emit_dir)
        return result
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        evaluator.close()


def _check_counts(trials: int, workers: int, timeout: float | None) -> None:
    if not isinstance(trials, int) or isinstance(trials, bool) or not 1 <= trials <= MAX_TRIALS:
        raise InstanceError(f"trials: expected an integer from 1 to {MAX_TRIALS}, got {trials!r}", pointer="--trials")
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise InstanceError(f"workers: expected an integer from 1 to {MAX_WORKERS}, got {workers!r}",
                            pointer="--workers")
    if timeout is not None and not (isinstance(timeout, (int, float)) and 0 < timeout <= 10_000_000):
        raise InstanceError(f"timeout: expected seconds above 0, got {timeout!r}", pointer="--timeout")


def _progress(ph, study, config, trials: int, t0: float) -> None:
    """``trial n/N, k feasible, ETA``; the best value as the phase's incumbent."""
    from dfopt.explore.study import best_feasible, counted

    done = counted(study)
    feasible = sum(1 for t in study.get_trials(deepcopy=False) if t.user_attrs.get("feasible"))
    elapsed = time.time() - t0
    eta = ""
    if 0 < done < trials and elapsed > 0:
        eta = f", ETA {_duration(elapsed / done * (trials - done))}"
    best = None if config.multi else best_feasible(study)
    ph.update(incumbent=best, detail=f"trial {min(done, trials)}/{trials}, {feasible} feasible{eta}")


def _duration(s: float) -> str:
    return f"{s:.0f}s" if s < 90 else f"{s / 60:.0f}m" if s < 5400 else f"{s / 3600:.1f}h"


def _start_workers(storage: str, name: str, n: int, trials: int, deadline: float | None, seed: int,
                   out_dir, heartbeat: int) -> list:
    """``n`` worker processes joining the study (``python -m dfopt.explore.worker``)."""
    procs = []
    for k in range(1, n + 1):
        cmd = [sys.executable, "-m", "dfopt.explore.worker", "--storage", storage, "--join", name,
               "--trials", str(trials), "--seed", str(seed), "--worker", str(k), "--heartbeat", str(heartbeat)]
        if deadline is not None:
            cmd += ["--deadline", repr(deadline)]
        log = None
        if out_dir is not None:
            cmd += ["-o", str(out_dir)]
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            log = Path(out_dir) / f"worker-{k}.log"           # a file, so a chatty worker never blocks on a pipe
        with open(log or os.devnull, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)
        proc.log = log  # type: ignore[attr-defined]
        procs.append(proc)
    return procs


def _wait(proc, deadline: float | None) -> None:
    left = None if deadline is None else max(5.0, deadline - time.time() + 60)
    try:
        proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
        proc.terminate()
        return
    log = getattr(proc, "log", None)
    if proc.returncode not in (0, None):
        last = ""
        if log is not None and log.is_file():
            lines = log.read_text(errors="replace").strip().splitlines()
            last = f": {lines[-1]}" if lines else ""
        sys.stderr.write(f"dfopt explore: a worker ended with code {proc.returncode}{last}\n")


def _emit_best(inst, config, evaluator, result: ExploreResult, emit_dir: str) -> None:
    """The code of the best design (the first of a Pareto set) into ``emit_dir``."""
    from dfopt.explore.report import decoded
    from dfopt.instance import solution_from_dict
    from dfopt.models.registry import get_problem

    best = result.best[0]
    src = best.user_attrs.get("solution")
    values = decoded(config, best)
    overrides, platform = config.overrides(values)
    target = evaluator.variant(platform)
    if src and Path(src).is_file():
        import json

        sol = solution_from_dict(json.loads(Path(src).read_text()))
    else:
        sol = evaluator.solve(values)
    problem = get_problem(inst.problem)
    if problem.emit is None:
        raise InstanceError(f"{inst.problem} designs have no code to emit", pointer="--emit-dir")
    from dfopt.models import driver

    problem.emit(target, sol, emit_dir, options=driver.make_options(target, overrides))
