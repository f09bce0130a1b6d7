"""A worker joining a study: ``python -m dfopt.explore.worker --storage S --join STUDY`` (what
``dfopt explore --workers N`` starts N - 1 times, and what ``dfopt explore --join`` runs on
another machine). It loads the study, rebuilds the instance and the space from the study's
attributes, and runs trials until the study holds ``--trials`` or ``--deadline`` passes."""

from __future__ import annotations

import argparse
import sys
import time


def run(storage: str, name: str, trials: int, seed: int = 0, worker: int = 0, deadline: float | None = None,
        out_dir: str | None = None, on_trial=None, heartbeat: int = 10):
    """Join ``name`` in ``storage`` and run trials; returns (study, config, WorkerStats)."""
    from dfopt.explore import study as st
    from dfopt.explore.evaluate import Evaluator

    storage_obj = st.open_storage(storage, out_dir, heartbeat)
    study, instance, config = st.join(storage_obj, name, seed + worker)
    evaluator = Evaluator(instance, config, seed)
    try:
        evaluator.prepare()
        stats = st.run_worker(study, evaluator, trials, deadline, out_dir, worker=worker, on_trial=on_trial,
                              reap=not st.is_url(storage))
    finally:
        evaluator.close()
    return study, config, stats


def main(argv: list[str] | None = None) -> int:
    from dfopt.errors import DfoptError

    p = argparse.ArgumentParser(prog="python -m dfopt.explore.worker")
    p.add_argument("--storage", required=True)
    p.add_argument("--join", required=True, metavar="STUDY")
    p.add_argument("--trials", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--worker", type=int, default=1)
    p.add_argument("--deadline", type=float, default=None, help="time.time() at which to stop")
    p.add_argument("-o", "--output", default=None)
    p.add_argument("--heartbeat", type=int, default=10)
    args = p.parse_args(argv)
    try:
        _, _, stats = run(args.storage, args.join, args.trials, args.seed, args.worker, args.deadline, args.output,
                          heartbeat=args.heartbeat)
    except DfoptError as err:
        sys.stderr.write(f"dfopt explore worker {args.worker}: {err}\n")
        return getattr(err, "exit_code", 1)
    except KeyboardInterrupt:
        return 130
    sys.stderr.write(f"dfopt explore worker {args.worker}: {stats.trials} trials, stopped by the {stats.stopped} "
                     f"at {time.strftime('%H:%M:%S')}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
