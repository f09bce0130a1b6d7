"""The throwaway PostgreSQL server (``tests/pgserver.py``) with Optuna the way ``dfopt explore``
uses it: worker processes on one study. Also what a worker killed mid-trial leaves behind: with
the RDB storage's heartbeat the stale trial is failed and retried by the next worker; the journal
file storage has no heartbeat (Optuna 5.0), so the trial stays RUNNING until someone fails it."""

from __future__ import annotations

import inspect
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from optuna.storages import JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from pgserver import postgres_url as postgres_url  # a fixture: `as` tells ruff it is used

pytestmark = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")

DEADLINE = 60.0      # seconds to wait for anything; generous, as the machine may be busy

# A worker process: load the study, run trials of a trivial objective. Its arguments: the storage
# ("url": the URL string; "heartbeat": RDBStorage with a 1 s heartbeat; "journal": a journal file),
# the URL or file, the study's name, the number of trials, the seconds each objective sleeps.
WORKER = """
import sys, time
import optuna
storage_kind, where, study_name, n_trials, sleep = sys.argv[1:]
optuna.logging.set_verbosity(optuna.logging.WARNING)
if storage_kind == "journal":
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(where))
elif storage_kind == "heartbeat":
    storage = optuna.storages.RDBStorage(where, heartbeat_interval=1, grace_period=2)
else:
    storage = where
study = optuna.load_study(study_name=study_name, storage=storage)

def objective(trial):
    x = trial.suggest_float("x", -1.0, 1.0)
    time.sleep(float(sleep))
    return x * x

study.optimize(objective, n_trials=int(n_trials))
"""


def start_worker(storage_kind: str, where: str, study_name: str, n_trials: int, sleep: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WORKER, storage_kind, where, study_name, str(n_trials), str(sleep)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(worker: subprocess.Popen[str]) -> None:
    out, err = worker.communicate(timeout=DEADLINE)
    assert worker.returncode == 0, f"worker exited with {worker.returncode}:\n{out}{err}"


def objective(trial: optuna.Trial, sleep: float = 0.0) -> float:
    x = trial.suggest_float("x", -1.0, 1.0)
    time.sleep(sleep)
    return x * x


def running_trial(study: optuna.Study, worker: subprocess.Popen[str]) -> optuna.trial.FrozenTrial:
    """The trial the worker is running, once the storage shows it RUNNING with its parameter
    (the objective has started)."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            out, err = worker.communicate()
            pytest.fail(f"worker exited with {worker.returncode} before running a trial:\n{out}{err}")
        running = [t for t in study.get_trials(states=(TrialState.RUNNING,)) if "x" in t.params]
        if running:
            return running[0]
        time.sleep(0.05)
    pytest.fail(f"no trial RUNNING with its parameter after {DEADLINE} s")


def kill(worker: subprocess.Popen[str]) -> None:
    worker.kill()          # SIGKILL: no handler runs, nothing is written to the storage
    worker.communicate(timeout=DEADLINE)


def test_two_workers_share_a_study(postgres_url):
    optuna.create_study(storage=postgres_url, study_name="two-workers")
    workers = [start_worker("url", postgres_url, "two-workers", 3, 0.0) for _ in range(2)]
    for worker in workers:
        finish(worker)
    trials = optuna.load_study(study_name="two-workers", storage=postgres_url).get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 6
    assert sorted(t.number for t in trials) == list(range(6))


def has_heartbeat(url: str, trial_id: int) -> bool:
    """Whether the trial's heartbeat is recorded: only then can it go stale (Optuna skips the
    RUNNING trials without one, so a worker killed before its first beat leaves its trial RUNNING)."""
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as connection:
            query = sqlalchemy.text("SELECT count(*) FROM trial_heartbeats WHERE trial_id = :id")
            return connection.execute(query, {"id": trial_id}).scalar_one() > 0
    finally:
        engine.dispose()


def test_killed_worker_rdb_heartbeat_fails_and_retries(postgres_url):
    storage = RDBStorage(postgres_url, heartbeat_interval=1, grace_period=2,
                         heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback())
    study = optuna.create_study(storage=storage, study_name="killed-rdb")
    worker = start_worker("heartbeat", postgres_url, "killed-rdb", 1, 600.0)
    try:
        killed = running_trial(study, worker)
        deadline = time.monotonic() + DEADLINE
        while not has_heartbeat(postgres_url, killed._trial_id):
            assert time.monotonic() < deadline, f"no heartbeat for trial {killed.number} after {DEADLINE} s"
            time.sleep(0.05)
    finally:
        kill(worker)

    # Another worker (this process) runs trials; at the start of each, Optuna fails the trials whose
    # heartbeat is older than the grace period (optuna.storages.fail_stale_trials) and the callback
    # queues a WAITING copy of each, which the next ask() takes first.
    def retried(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
        return [t for t in study.get_trials()
                if RetryHeartbeatStaleTrialCallback.retried_trial_number(t) == killed.number]

    def stop_once_retried(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if any(t.state == TrialState.COMPLETE for t in retried(study)):
            study.stop()

    study.optimize(lambda trial: objective(trial, sleep=0.2), timeout=DEADLINE, callbacks=[stop_once_retried])
    assert study.trials[killed.number].state == TrialState.FAIL
    [retry] = retried(study)
    assert retry.state == TrialState.COMPLETE and retry.params == killed.params
    assert RetryHeartbeatStaleTrialCallback.retry_history(retry) == [killed.number]
    assert not study.get_trials(states=(TrialState.RUNNING, TrialState.WAITING))


def test_killed_worker_journal_stays_running(tmp_path: Path):
    assert "heartbeat_interval" not in inspect.signature(JournalStorage).parameters, \
        "JournalStorage has a heartbeat now: use it here and in dfopt explore"
    path = str(tmp_path / "journal.log")
    study = optuna.create_study(storage=JournalStorage(JournalFileBackend(path)), study_name="killed-journal")
    worker = start_worker("journal", path, "killed-journal", 1, 600.0)
    try:
        killed = running_trial(study, worker)
    finally:
        kill(worker)

    # No heartbeat: fail_stale_trials does nothing and the trial stays RUNNING, but the study
    # goes on (the worker died sleeping, not holding the journal's lock file).
    optuna.storages.fail_stale_trials(study)
    study.optimize(objective, n_trials=2)
    states = [t.state for t in study.trials]
    assert states == [TrialState.RUNNING, TrialState.COMPLETE, TrialState.COMPLETE]

    # Whoever knows the worker is gone fails its trial; any process may, and may requeue it.
    study.tell(killed.number, state=TrialState.FAIL)
    study.enqueue_trial(killed.params)
    study.optimize(objective, n_trials=1)
    assert study.trials[killed.number].state == TrialState.FAIL
    assert study.trials[-1].state == TrialState.COMPLETE and study.trials[-1].params == killed.params
