"""The benchmarking harness behind ``dfopt bench``: suites, isolated runs, records and reports.

A suite (JSON, :mod:`dfopt.bench.suite`) names instances (files or ``gen:`` specs of
:mod:`dfopt.bench.generators`), formulations, solvers and seeds. :func:`run_suite` runs each
combination in a fresh worker process under an outer timeout and appends one record per run to
``records.jsonl``; :mod:`dfopt.bench.report` turns records into a markdown table and a
Dolan–Moré performance profile. :func:`main_bench` does all of it for one suite file
(``main_bench("benchmarks/suites/fifo-small.json", "bench-out/fifo-small")``); planning alone
runs nothing (paths are from the repository root):

>>> from dfopt.bench import load_suite, plan_runs
>>> [run.key for run in plan_runs(load_suite("benchmarks/suites/fifo-small.json"), only="fig8a/flow").runs]
['fig8a/flow/default/s0']
"""

from __future__ import annotations

from dfopt.bench.generators import GENERATORS, generate, random_fifo_dag
from dfopt.bench.report import (
    load_records,
    performance_profile,
    primal_integral,
    render_markdown,
    shifted_geomean,
    summary_rows,
    write_profile_png,
)
from dfopt.bench.runner import Plan, RunSpec, execute_run, plan_runs, run_and_report, run_suite
from dfopt.bench.suite import Suite, load_suite, suite_from_dict
from dfopt.io import StrPath

__all__ = [
    "main_bench", "load_suite", "suite_from_dict", "Suite", "plan_runs", "Plan", "RunSpec",
    "run_suite", "run_and_report", "execute_run", "render_markdown", "summary_rows", "shifted_geomean",
    "performance_profile", "write_profile_png", "primal_integral", "load_records",
    "GENERATORS", "generate", "random_fifo_dag",
]


def main_bench(suite_path: StrPath, out_dir: StrPath, jobs: int = 1, only: str | None = None) -> tuple[list, str]:
    """Load a suite file, run it into ``out_dir`` and return ``(records, summary_markdown)``.

    The entry of ``dfopt bench SUITE [-o OUT] [--jobs N] [--only PATTERN]``.
    """
    return run_and_report(load_suite(suite_path), out_dir, jobs=jobs, only=only)
