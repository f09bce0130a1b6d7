"""The Optuna study behind an exploration: storage, creation once, workers joining, the trial loop.

**Storage.** By default a journal file in the output folder (``DIR/study.journal``, Optuna's
``JournalFileBackend``): no server, safe for several processes of one machine, and *resumable*:
the same command again loads the study and runs the trials still missing. ``--storage`` takes a
journal file path or any SQLAlchemy URL (``postgresql+psycopg2://user@host/db``, ``sqlite:///f.db``)
for workers on several machines. Relational storages run with heartbeats: a worker that dies
mid-trial leaves a RUNNING trial that the next worker marks FAIL after the grace period, and
:class:`optuna.storages.RetryFailedTrialCallback` enqueues its parameters once more.

**One creation.** The command that starts a study creates it (``create_study`` with
``load_if_exists``) and records in the study's user attributes the instance and the parsed
settings; every worker — the local ``--workers`` processes and ``dfopt explore --join STUDY
--storage URL`` on other machines — only loads it (``load_study``: no two processes race to create
it) and rebuilds the instance and the space from those attributes. A study name made from the
instance's name and a hash of the instance and the settings means the same command finds the same
study, and a changed space starts another one.

**The loop.** A worker runs one trial at a time until the study holds ``trials`` trials (counting
complete, pruned, failed and running ones, but not a point proposed again, whose earlier result is
reused, nor a failed trial that was queued again; with several workers a few more may start at
the end, at most one per other worker), or the deadline passes, or the space is *exhausted*: every
point of a finite space was run, or the sampler proposed only points already run
:data:`REPEATS_IN_A_ROW` times in a row. Every trial records its parameters, its
outcome (:class:`~dfopt.explore.evaluate.TrialOutcome`: ``feasible``, ``stage``, ``reason``,
figures, ``constraint``), the worker and, for a feasible one, the path of its solution under
``DIR/trials/``. Samplers: TPE (one objective) or NSGA-II (several); both read the trial's
constraint (``Trial.set_constraint``: the violation, <= 0 feasible) and prefer feasible designs,
seeded with ``seed + worker`` (one worker:
the same seed gives the same trials).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dfopt.errors import InstanceError

if TYPE_CHECKING:
    import optuna

    from dfopt.explore.space import Config
    from dfopt.instance.types import Instance

log = logging.getLogger(__name__)

JOURNAL = "study.journal"
ATTR = "dfopt"
#: Heartbeat of relational storages (seconds); a running trial silent for three beats is stale.
HEARTBEAT_S = 10
#: The study's one constraint (Optuna's ``Trial.set_constraint``, <= 0 feasible): the trial's violation.
CONSTRAINT = "violation"


def _optuna():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


def is_url(storage: str) -> bool:
    return "://" in storage


def open_storage(storage: str | None, out_dir: str | Path | None, heartbeat: int = HEARTBEAT_S) -> Any:
    """The storage a study lives in: a journal file (``storage`` a path, or None: ``out_dir/study.journal``)
    or a relational database (``storage`` an SQLAlchemy URL), with a heartbeat every ``heartbeat``
    seconds (a running trial silent for three beats is stale)."""
    _optuna()
    if storage is None:
        if out_dir is None:
            raise InstanceError("an exploration needs an output folder (-o) or a --storage", pointer="-o")
        storage = str(Path(out_dir) / JOURNAL)
    if is_url(storage):
        from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

        try:
            return RDBStorage(storage, heartbeat_interval=heartbeat, grace_period=3 * heartbeat,
                              heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=1),
                              engine_kwargs={"pool_pre_ping": True})
        except Exception as err:    # SQLAlchemy / driver errors: a missing driver, a refused connection
            raise InstanceError(f"cannot open the storage {_redact(storage)}: {type(err).__name__}: "
                                f"{str(err).splitlines()[0] if str(err) else ''}", pointer="--storage") from None
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    Path(storage).parent.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(storage))


def _redact(url: str) -> str:
    """A URL without its password."""
    head, sep, tail = url.partition("://")
    if "@" in tail and ":" in tail.split("@", 1)[0]:
        user = tail.split("@", 1)[0].split(":", 1)[0]
        tail = f"{user}:***@{tail.split('@', 1)[1]}"
    return head + sep + tail


def study_name(instance: Instance, config: Config) -> str:
    """``<instance name>-<hash of the instance and the settings>``."""
    from dfopt.instance.convert import to_dict

    text = json.dumps({"instance": to_dict(instance), "config": config.to_dict()}, sort_keys=True, default=str)
    return f"{instance.name}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def make_sampler(config: Config, seed: int | None) -> Any:
    optuna = _optuna()
    name = config.sampler_name()
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(4, min(50, 2 * len(config.params) + 4)))
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(3, min(10, 2 * len(config.params))))


def create(instance: Instance, config: Config, storage: Any, name: str | None, seed: int) -> optuna.Study:
    """Create the study (or load it when it exists with the same settings), recording the
    instance and the settings; the default options enqueued as the first trial when the space
    holds them."""
    from dfopt.instance.convert import to_dict

    optuna = _optuna()
    name = name or study_name(instance, config)
    directions = ["minimize"] * len(config.objectives)
    study = optuna.create_study(study_name=name, storage=storage, directions=directions,
                                sampler=make_sampler(config, seed), load_if_exists=True)
    recorded = study.user_attrs.get(ATTR)
    mine = {"instance": to_dict(instance), "config": config.to_dict()}
    if recorded is None:
        study.set_user_attr(ATTR, mine)
        defaults = default_params(instance, config)
        if defaults is not None and not study.trials:
            study.enqueue_trial(defaults, user_attrs={"origin": "default options"}, skip_if_exists=True)
    elif json.loads(json.dumps(recorded["config"])) != json.loads(json.dumps(mine["config"])):
        raise InstanceError(f"the study {name!r} exists with other settings (space, objectives); give another "
                            "--study name or output folder", pointer="--study")
    return study


def join(storage: Any, name: str, seed: int) -> tuple[optuna.Study, Instance, Config]:
    """Load the study ``name`` and rebuild its instance and settings (a worker joining)."""
    from dfopt.explore.space import Config
    from dfopt.instance import from_dict

    optuna = _optuna()
    try:
        summaries = optuna.get_all_study_summaries(storage, include_best_trial=False)
    except Exception as err:
        raise InstanceError(f"cannot read the studies of the storage: {err}", pointer="--storage") from None
    if name not in {s.study_name for s in summaries}:
        known = ", ".join(sorted(s.study_name for s in summaries)[:8]) or "none"
        raise InstanceError(f"no study {name!r} in the storage (studies: {known})", pointer="--join")
    probe = optuna.load_study(study_name=name, storage=storage)
    recorded = probe.user_attrs.get(ATTR)
    if not recorded:
        raise InstanceError(f"the study {name!r} was not made by dfopt explore (no {ATTR!r} attribute)",
                            pointer="--join")
    config = Config.from_dict(recorded["config"])
    instance = from_dict(recorded["instance"], source=f"study {name}")
    study = optuna.load_study(study_name=name, storage=storage, sampler=make_sampler(config, seed))
    return study, instance, config


def default_params(instance: Instance, config: Config) -> dict | None:
    """The parameter values of the problem's default options (as Optuna stores them), when
    every one lies in the space; else None."""
    from dfopt.models import driver

    options = driver.make_options(instance)
    out: dict = {}
    for p in config.params:
        if p.option == "platform":
            value: Any = instance.platform_name
        elif p.key is not None:
            value = (getattr(options, p.option) or {}).get(p.key, getattr(options, "default_tile_size", None))
        else:
            value = getattr(options, p.option)
        if p.kind == "categorical":
            if value not in p.choices:
                return None
            out[p.name] = json.dumps(value) if p.encoded else value
        else:
            if value is None or not p.low <= value <= p.high:
                return None
            out[p.name] = value
    return out


_COUNTED = ("COMPLETE", "PRUNED", "FAIL", "RUNNING")


def counted(study: Any) -> int:
    """Trials that use the budget: complete, pruned, running and failed ones, but for a failed
    trial that was queued again (its retry counts instead) and a trial that repeated an earlier
    point (``same_as``: nothing was solved)."""
    optuna = _optuna()
    states = tuple(getattr(optuna.trial.TrialState, s) for s in _COUNTED)
    trials = study.get_trials(deepcopy=False)
    retried = {t.system_attrs.get("failed_trial") for t in trials} | {t.user_attrs.get("retry_of") for t in trials}
    return sum(1 for t in trials if t.state in states and "same_as" not in t.user_attrs
               and not (t.state.name == "FAIL" and t.number in retried))


#: Proposals in a row of points already run after which a worker stops: the sampler keeps
#: returning to what it knows, the space looks exhausted.
REPEATS_IN_A_ROW = 25


def space_size(config: Any) -> int | None:
    """The number of points of a finite space (categoricals, stepped or integer ranges), else None."""
    n = 1
    for p in config.params:
        if p.kind == "categorical":
            n *= len(p.choices)
        elif p.kind == "int" and not p.log:
            n *= int((p.high - p.low) // (p.step or 1)) + 1
        elif p.kind == "float" and p.step and not p.log:
            n *= int(round((p.high - p.low) / p.step)) + 1
        else:
            return None
    return n


def _distinct(study: Any) -> int:
    optuna = _optuna()
    return len({tuple(sorted(t.params.items()))
                for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,
                                                                  optuna.trial.TrialState.PRUNED))})


def _worker_tag(worker: int) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{worker}"


def reap_dead(study: Any) -> list[int]:
    """Running trials of workers of this machine whose process is gone (a journal storage has no
    heartbeat): each is marked FAIL and its parameters queued once more. Returns their numbers."""
    optuna = _optuna()
    host = socket.gethostname()
    reaped = []
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        tag = str(t.user_attrs.get("worker", "")).split(":")
        if len(tag) != 3 or tag[0] != host or not tag[1].isdigit() or _alive(int(tag[1])):
            continue
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        study.set_user_attr(f"reaped_{t.number}", f"worker {':'.join(tag)} died during the trial")
        if "retry_of" not in t.user_attrs:
            study.enqueue_trial(dict(t.params), user_attrs={"retry_of": t.number})
        reaped.append(t.number)
    return reaped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def best_feasible(study: Any) -> float | None:
    """The least objective of the study's feasible complete trials (one objective)."""
    optuna = _optuna()
    values = [t.values[0] for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
              if t.user_attrs.get("feasible") and t.values and math.isfinite(t.values[0])]
    return min(values) if values else None


@dataclass
class WorkerStats:
    trials: int = 0
    stopped: str = "budget"          # budget | timeout | interrupted | exhausted


def run_worker(study: Any, evaluator: Any, trials: int, deadline: float | None, out_dir: str | Path | None,
               worker: int = 0, on_trial: Callable[[Any], None] | None = None, reap: bool = True) -> WorkerStats:
    """Run trials of ``study`` until it holds ``trials`` or ``deadline`` (``time.time()``) passes;
    Before each trial, the trials of dead workers are failed and queued again: with ``reap``
    those of this machine's workers whose process is gone (:func:`reap_dead`; a journal file has
    no heartbeat), else those whose heartbeat went silent (a relational storage's)."""
    optuna = _optuna()
    config = evaluator.config
    stats = WorkerStats()
    trial_dir = None if out_dir is None else Path(out_dir) / "trials"

    def objective(trial: Any):
        trial.set_user_attr("worker", _worker_tag(worker))
        values = {p.name: p.suggest(trial) for p in config.params}
        same = _same_params(study, trial)
        if same is not None:                 # a sampler may propose a point again: reuse its result
            for k in ("feasible", "stage", "reason", "figures", "solution"):
                if k in same.user_attrs:
                    trial.set_user_attr(k, same.user_attrs[k])
            trial.set_user_attr("same_as", same.number)
            trial.set_constraint(CONSTRAINT, same.constraints.get(CONSTRAINT, 0.0))
            return list(same.values) if config.multi else same.values[0]
        best = None if config.multi else best_feasible(study)
        t0 = time.perf_counter()
        outcome = evaluator.evaluate(values, best)
        trial.set_user_attr("feasible", outcome.feasible and not outcome.pruned)
        trial.set_user_attr("stage", outcome.stage)
        trial.set_user_attr("reason", outcome.reason)
        trial.set_constraint(CONSTRAINT, 0.0 if outcome.feasible else outcome.violation)
        trial.set_user_attr("figures", {k: v for k, v in outcome.figures.items() if _jsonable(v)})
        trial.set_user_attr("seconds", round(time.perf_counter() - t0, 3))
        if outcome.pruned:
            raise optuna.TrialPruned(outcome.reason)
        if outcome.feasible and outcome.solution is not None and trial_dir is not None:
            from dfopt.io import write_json_atomic

            trial_dir.mkdir(parents=True, exist_ok=True)
            path = trial_dir / f"{trial.number:05d}.sol.json"
            write_json_atomic(path, outcome.solution.to_dict())
            trial.set_user_attr("solution", str(path.resolve()))
        assert outcome.values is not None
        return outcome.values if config.multi else outcome.values[0]

    callbacks = [] if on_trial is None else [lambda s, t: on_trial(t)]
    size = space_size(config)
    repeats = 0
    while True:
        if reap:
            reap_dead(study)
        else:
            optuna.storages.fail_stale_trials(study)
        if deadline is not None and time.time() >= deadline:
            stats.stopped = "timeout"
            break
        if counted(study) >= trials:
            break
        if repeats >= REPEATS_IN_A_ROW or (size is not None and _distinct(study) >= size):
            stats.stopped = "exhausted"
            break
        left = None if deadline is None else max(1.0, deadline - time.time())
        try:
            study.optimize(objective, n_trials=1, timeout=left, catch=(Exception,), callbacks=callbacks,
                           gc_after_trial=False, show_progress_bar=False)
        except KeyboardInterrupt:
            stats.stopped = "interrupted"
            break
        stats.trials += 1
        last = study.get_trials(deepcopy=False)[-1] if study.trials else None
        repeats = repeats + 1 if last is not None and "same_as" in last.user_attrs else 0
    return stats


def _same_params(study: Any, trial: Any) -> Any:
    """An earlier complete trial with the same parameter values, if any."""
    optuna = _optuna()
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        if t.number != trial.number and t.params == trial.params and t.values:
            return t
    return None


def _jsonable(v: Any) -> bool:
    try:
        json.dumps(v)
    except (TypeError, ValueError):
        return False
    return True
