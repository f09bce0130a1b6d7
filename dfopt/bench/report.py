"""Benchmark reports from run records: a markdown table and Dolan–Moré performance profiles.

Definitions (the table's footnote repeats them):

- *solved*: status ``optimal`` or ``feasible`` and no failed check;
- *time*: a solved run's ``time_total_s``; an unsolved run counts as its time limit;
- *shifted geometric mean* with shift s: ``exp(mean(log(t + s))) - s`` (s = 1 s);
- *metric ratio*: a run's metric over the baseline's on the same instance and seed (both with a
  solution that passed its checks); 0/0 counts as 1, x/0 as infinity. Smaller is better.

>>> round(shifted_geomean([1.0, 3.0]), 4)    # exp((log 2 + log 4) / 2) - 1
1.8284
>>> ratio(3, 2), ratio(0, 0), ratio(1, 0)
(1.5, 1.0, inf)
"""

from __future__ import annotations

import io
import json
import logging
import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dfopt.io import StrPath, write_bytes_atomic

if TYPE_CHECKING:
    from dfopt.bench.suite import Suite

log = logging.getLogger(__name__)

TIME_SHIFT_S = 1.0
SOLVED_STATUSES = ("optimal", "feasible")
NO_RUN_STATUSES = ("timeout", "crash", "error")
SIZE_GROUPS = ("size", "n_kernels")


# -- per-record facts -------------------------------------------------------------------------

def is_solved(record: dict) -> bool:
    return record.get("status") in SOLVED_STATUSES and record.get("checks_ok") is not False


def has_solution(record: dict) -> bool:
    """A decoded solution that did not fail a check (it may stop at a time limit)."""
    return (record.get("objective") is not None and record.get("checks_ok") is not False
            and record.get("status") not in NO_RUN_STATUSES)


def run_time(record: dict) -> float:
    """Total time of a solved run; the time limit for an unsolved one."""
    if is_solved(record) and record.get("time_total_s") is not None:
        return float(record["time_total_s"])
    return float(record["parameters"]["time_limit"])


def metric_value(record: dict, metric: str) -> Any:
    """The metric of a run with a solution, else None."""
    if not has_solution(record):
        return None
    return (record.get("metrics") or {}).get(metric)


def label(record: dict) -> str:
    """``formulation/solver`` (``default`` for the model's default solver)."""
    return f"{record['formulation']}/{record.get('solver') or 'default'}"


def problem_key(record: dict) -> tuple:
    return record["instance"], record["seed"]


# -- numbers ----------------------------------------------------------------------------------

def shifted_geomean(values: Iterable[float], shift: float = TIME_SHIFT_S) -> float | None:
    """``exp(mean(log(v + shift))) - shift``; None for no values."""
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        return None
    return float(np.exp(np.mean(np.log(arr + shift))) - shift)


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of non-negative ratios: inf if one is inf, 0 if one is 0 (nan if both).

    >>> geomean([1.0, 4.0]), geomean([2.0, math.inf]), geomean([])
    (2.0, inf, None)
    """
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        return None
    has_inf, has_zero = bool(np.isinf(arr).any()), bool((arr == 0).any())
    if has_inf or has_zero:
        return math.nan if has_inf and has_zero else (math.inf if has_inf else 0.0)
    return float(np.exp(np.mean(np.log(arr))))


def ratio(value: float, best: float) -> float:
    """``value / best`` with 0/0 = 1 and x/0 = inf."""
    if best == 0:
        return 1.0 if value == 0 else math.inf
    return value / best


def primal_integral(incumbents: Iterable[Sequence[float]], best: float | None, horizon: float | None = None) -> float:
    """Berthold's primal integral of an incumbent trace ``[[t, objective], ...]`` over [0, horizon].

    The primal gap of an incumbent x against the best known value b is 0 when both are 0, 1 when
    their signs differ, else ``|x - b| / max(|x|, |b|)``; it is 1 before the first incumbent.
    ``best`` None takes the trace's smallest objective (minimisation); ``horizon`` None its last time.

    >>> primal_integral([[1.0, 20.0], [3.0, 10.0]], 10.0, horizon=5.0)   # 1*1 + 0.5*2 + 0*2
    2.0
    """
    trace = sorted((float(t), float(v)) for t, v in incumbents)
    if not trace:
        return float(horizon or 0.0)
    if best is None:
        best = min(v for _, v in trace)
    end = trace[-1][0] if horizon is None else float(horizon)
    total, t_prev, gap_prev = 0.0, 0.0, 1.0
    for t, v in trace:
        t = min(max(t, 0.0), end)
        total += gap_prev * (t - t_prev)
        t_prev, gap_prev = t, _primal_gap(v, best)
    return total + gap_prev * max(end - t_prev, 0.0)


def _primal_gap(value: float, best: float) -> float:
    if value == 0 and best == 0:
        return 0.0
    if value * best < 0:
        return 1.0
    return abs(value - best) / max(abs(value), abs(best))


def size_bucket(n_kernels: int | None) -> str:
    """Decade bucket of a kernel count.

    >>> size_bucket(10), size_bucket(11), size_bucket(1000), size_bucket(100_000)
    ('<=10', '<=100', '<=1k', '<=100k')
    """
    if n_kernels is None:
        return "?"
    exponent = max(1, math.ceil(math.log10(max(n_kernels, 1))))
    names = {1: "10", 2: "100", 3: "1k", 4: "10k", 5: "100k", 6: "1M"}
    return f"<={names[exponent]}" if exponent in names else ">1M"


def _split_groups(records: list, group_by: str | None) -> list[tuple]:
    """[(group text, records)] in group order; one group of all records when ``group_by`` is None."""
    if not group_by:
        return [(None, records)]
    groups: defaultdict[str, list] = defaultdict(list)
    order: dict[str, tuple] = {}
    for r in records:
        key: tuple
        if group_by in SIZE_GROUPS:
            n = r.get("n_kernels")
            key, text = (n is None, math.ceil(math.log10(max(n or 1, 1)))), size_bucket(n)
        else:
            key, text = (r.get(group_by) is None, str(r.get(group_by))), str(r.get(group_by))
        groups[text].append(r)
        order[text] = key
    return [(text, groups[text]) for text in sorted(groups, key=order.__getitem__)]


# -- the table --------------------------------------------------------------------------------

def baseline_values(records: list, baseline: str, metric: str) -> dict:
    """(instance, seed) -> the baseline's metric value (first matching record with one).

    ``baseline`` is ``formulation`` or ``formulation:solver``.
    """
    formulation, _, solver = baseline.partition(":")
    values: dict = {}
    for r in records:
        if r["formulation"] != formulation or (solver and (r.get("solver") or "default") != solver):
            continue
        value = metric_value(r, metric)
        if value is not None:
            values.setdefault(problem_key(r), value)
    return values


def summary_rows(records: list, baseline: str, metrics: Collection[str]) -> list[dict]:
    """One row per (formulation, solver) in first-seen order, with counts, times and ratios."""
    groups = defaultdict(list)
    for r in records:
        groups[(r["formulation"], r.get("solver") or "default")].append(r)
    bases = {m: baseline_values(records, baseline, m) for m in metrics}
    rows = []
    for (formulation, solver), runs in groups.items():
        row = {"formulation": formulation, "solver": solver, "runs": len(runs),
               "solved": sum(map(is_solved, runs)),
               "checks_failed": sum(r.get("checks_ok") is False for r in runs),
               "timeouts": sum(r.get("status") == "timeout" for r in runs),
               "errors": sum(r.get("status") in ("error", "crash") for r in runs),
               "time_sgm": shifted_geomean(run_time(r) for r in runs)}
        for m in metrics:
            ratios = [ratio(metric_value(r, m), bases[m][problem_key(r)]) for r in runs
                      if metric_value(r, m) is not None and problem_key(r) in bases[m]]
            row[m] = {"geomean": geomean(ratios), "worst": max(ratios, default=None), "n": len(ratios)}
        rows.append(row)
    best = min((r["time_sgm"] for r in rows if r["time_sgm"] is not None), default=None)
    for row in rows:
        row["time_scaled"] = row["time_sgm"] / best if best else None
    return rows


def render_markdown(records: list, baseline: str, metrics: Collection[str], group_by: str | None = None) -> str:
    """A markdown table: per (formulation, solver) solved counts, the shifted geometric mean of
    time (1 s shift) and the same scaled by the fastest (1.00), and per metric the geometric mean
    and the worst of the ratios to ``baseline`` on the same instance and seed.

    ``metrics`` is a list of metric names (or a dict keyed by them). ``group_by`` = ``"size"``
    (kernel-count decades) or a record field adds a leading column; times are then scaled
    within each group.

    >>> recs = [{"instance": "a", "seed": 0, "formulation": "f", "solver": None, "status": "optimal",
    ...          "checks_ok": True, "objective": 1, "time_total_s": 1.0, "parameters": {"time_limit": 9},
    ...          "metrics": {"depth": 4}}]
    >>> print(render_markdown(recs, "f", ["depth"]).splitlines()[2])
    | f | default | 1 | 1 | 0 | 0 | 0 | 1 | 1.00 | 1.000 | 1.000 |
    """
    metrics = list(metrics)
    header = ["formulation", "solver", "runs", "solved", "checks failed", "timeouts", "errors",
              "time sgm (s)", "time scaled"]
    header += [h for m in metrics for h in (f"{m} ratio gm", f"{m} ratio worst")]
    if group_by:
        header.insert(0, "size" if group_by in SIZE_GROUPS else group_by)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for text, subset in _split_groups(records, group_by):
        prefix = [text] if group_by else []
        for row in summary_rows(subset, baseline, metrics):
            lines.append("| " + " | ".join(prefix + _row_cells(row, metrics)) + " |")
    return "\n".join(lines) + "\n"


def _row_cells(row: dict, metrics: list) -> list[str]:
    cells = [row["formulation"], row["solver"], str(row["runs"]), str(row["solved"]),
             str(row["checks_failed"]), str(row["timeouts"]), str(row["errors"]),
             _num(row["time_sgm"], "{:.3g}"), _num(row["time_scaled"], "{:.2f}")]
    for m in metrics:
        cells += [_num(row[m]["geomean"], "{:.3f}"), _num(row[m]["worst"], "{:.3f}")]
    return cells


def _num(value, fmt: str) -> str:
    if value is None:
        return "-"
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf"
    return fmt.format(value)


# -- performance profiles ---------------------------------------------------------------------

def performance_ratios(records: list, measure: str = "time") -> tuple[list, list, np.ndarray]:
    """Problems (instance, seed), labels and the matrix r[p, s] = cost / best cost on p.

    The cost is the total time of a solved run (``measure="time"``) or the metric of a run with a
    solution; a missing or failed run costs inf (so its ratio is inf).
    """
    problems = sorted({problem_key(r) for r in records}, key=str)
    labels = list(dict.fromkeys(label(r) for r in records))
    cost = np.full((len(problems), len(labels)), math.inf)
    p_index = {p: i for i, p in enumerate(problems)}
    s_index = {s: j for j, s in enumerate(labels)}
    for r in records:
        value = r.get("time_total_s") if is_solved(r) else None
        if measure != "time":
            value = metric_value(r, measure)
        if value is not None:
            i, j = p_index[problem_key(r)], s_index[label(r)]
            cost[i, j] = min(cost[i, j], float(value))
    ratios = np.full_like(cost, math.inf)
    for i, row in enumerate(cost):
        best = row.min()
        if math.isfinite(best):
            ratios[i] = [ratio(c, best) if math.isfinite(c) else math.inf for c in row]
    return problems, labels, ratios


def performance_profile(records: list, measure: str = "time",
                        taus: npt.ArrayLike | None = None) -> tuple[np.ndarray, dict]:
    """Dolan–Moré profile: rho_s(tau) = share of problems with ratio r[p, s] <= tau.

    ``taus`` defaults to 1 and every finite ratio, sorted. Returns ``(taus, {label: rho})``.

    >>> recs = [{"instance": i, "seed": 0, "formulation": f, "solver": None, "status": "optimal",
    ...          "checks_ok": True, "objective": 1, "time_total_s": t, "parameters": {}}
    ...         for i, f, t in [("a", "x", 1.0), ("a", "y", 2.0), ("b", "x", 3.0), ("b", "y", 1.0)]]
    >>> taus, rho = performance_profile(recs)
    >>> taus.tolist(), rho["x/default"].tolist(), rho["y/default"].tolist()
    ([1.0, 2.0, 3.0], [0.5, 0.5, 1.0], [0.5, 1.0, 1.0])
    """
    _, labels, ratios = performance_ratios(records, measure)
    if taus is None:
        finite = ratios[np.isfinite(ratios)]
        taus = np.unique(np.concatenate([[1.0], finite]))
    taus = np.asarray(taus, dtype=float)
    n = max(ratios.shape[0], 1)
    rho = {s: np.array([(ratios[:, j] <= t).sum() / n for t in taus]) for j, s in enumerate(labels)}
    return taus, rho


def write_profile_png(records: list, path: StrPath, metric: str | None = None) -> Path | None:
    """Draw the time profile (and the ``metric`` profile beside it) to a PNG, atomically.

    Without matplotlib the plot is skipped with a logged warning and None is returned.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        log.warning("matplotlib is not installed: no performance profile plot (pip install dfopt[plot])")
        return None
    measures = ["time"] + ([metric] if metric else [])
    fig = Figure(figsize=(6.0 * len(measures), 4.2))
    FigureCanvasAgg(fig)
    for k, measure in enumerate(measures):
        _draw_profile(fig.add_subplot(1, len(measures), k + 1), records, measure)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    write_bytes_atomic(path, buffer.getvalue())
    return Path(path)


def _draw_profile(ax, records: list, measure: str) -> None:
    taus, rho = performance_profile(records, measure)
    right = max(float(taus.max()) * 1.25, 2.0) if taus.size else 2.0
    for name, values in rho.items():
        ax.step(np.append(taus, right), np.append(values, values[-1] if values.size else 0.0),
                where="post", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlim(1.0, right)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("tau (ratio to the best)")
    ax.set_ylabel("share of problems within tau")
    ax.set_title(f"performance profile: {measure}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")


# -- suite summary ----------------------------------------------------------------------------

def summary_markdown(suite: Suite, records: list, skipped: int = 0) -> str:
    """The ``summary.md`` of a suite run: counts, versions, the table (and per size if asked)."""
    statuses: defaultdict[object, int] = defaultdict(int)
    for r in records:
        statuses[r.get("status")] += 1
    versions = records[0]["versions"] if records else {}
    lines = [f"# Benchmark {suite.name}", ""]
    if suite.description:
        lines += [suite.description, ""]
    lines += [f"{len(records)} runs ({', '.join(f'{v} {k}' for k, v in sorted(statuses.items(), key=str))})"
              f", {skipped} skipped by the suite's rules; baseline `{suite.baseline}`.", "",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()), "",
              render_markdown(records, suite.baseline, suite.metrics)]
    if suite.group_by:
        lines += [f"## By {suite.group_by}", "",
                  render_markdown(records, suite.baseline, suite.metrics, group_by=suite.group_by)]
    lines += ["Solved: status optimal or feasible with every check passed. Time: shifted geometric "
              f"mean of the total solve time ({TIME_SHIFT_S:g} s shift; unsolved runs count as their "
              "time limit), scaled by the fastest row. Metric ratios: to the baseline on the same "
              "instance and seed (smaller is better; worst = largest)."]
    return "\n".join(lines) + "\n"


def write_report(suite: Suite, records: list, out_dir: StrPath, skipped: int = 0) -> str:
    """Write ``summary.md`` and ``profile.png`` into ``out_dir``; returns the markdown."""
    from dfopt.io import write_text_atomic

    text = summary_markdown(suite, records, skipped)
    write_text_atomic(Path(out_dir) / "summary.md", text)
    if records:
        metric = suite.profile_metric or next(iter(suite.metrics), None)
        write_profile_png(records, Path(out_dir) / "profile.png", metric)
    return text


def load_records(path: StrPath) -> list[dict]:
    """The records of a ``records.jsonl`` file (blank lines skipped)."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
