"""What an exploration leaves in its output folder: the trials table, the best design (or the
Pareto set), the plots and a summary.

* ``trials.csv`` — one row per trial: number, state, worker, seconds, every parameter, every
  objective, feasible, the stage and reason that decided it, and the figures of the design;
* ``best.sol.json`` — one objective: the feasible trial with the least value (ties: the earliest);
  several objectives: ``pareto/<trial>.sol.json`` for every feasible trial no other feasible trial
  dominates. Each is the solution the trial's worker wrote and checked; when that worker ran
  elsewhere the design is solved (and checked) again from the trial's parameters. Beside each,
  ``best.instance.json`` (``pareto/<trial>.instance.json``): the instance with the trial's options
  and platform, so ``dfopt check best.instance.json best.sol.json`` re-checks the design and
  ``dfopt solve best.instance.json`` rebuilds it;
* ``history.png`` (Optuna's optimisation history, first objective), ``pareto.png`` (several
  objectives, the first two; infeasible trials shown apart), ``importances.png`` (fANOVA parameter
  importances; needs two parameters and a few complete trials — else a note says why not);
* ``summary.json`` — counts by state, feasible and refused by the precheck, the best values, the
  default options' trial, trials per minute.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dfopt.explore.study import _optuna

if TYPE_CHECKING:
    from dfopt.explore.space import Config


def _complete(study: Any) -> list:
    optuna = _optuna()
    return study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))


def feasible_trials(study: Any) -> list:
    return [t for t in _complete(study) if t.user_attrs.get("feasible") and t.values
            and all(math.isfinite(v) for v in t.values)]


def best_trials(study: Any, config: Config) -> list:
    """The best feasible trial (one objective) or the feasible Pareto set (several), by number."""
    trials = feasible_trials(study)
    if not trials:
        return []
    if not config.multi:
        return [min(trials, key=lambda t: (t.values[0], t.number))]
    front = []
    for t in trials:
        dominated = any(all(a <= b for a, b in zip(o.values, t.values)) and o.values != t.values for o in trials)
        if not dominated:
            front.append(t)
    seen: dict = {}
    for t in sorted(front, key=lambda t: t.number):          # equal points: the earliest trial
        seen.setdefault(tuple(t.values), t)
    return sorted(seen.values(), key=lambda t: t.number)


def trials_csv(study: Any, config: Config) -> str:
    params = [p.name for p in config.params]
    figures: list[str] = []
    for t in study.get_trials(deepcopy=False):
        for k in t.user_attrs.get("figures", {}):
            if k not in figures and k not in config.objectives:
                figures.append(k)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["number", "state", "worker", "seconds", *params, *config.objectives, "feasible", "stage", "reason",
                "same_as", *figures])
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        values = list(t.values) if t.values else [""] * len(config.objectives)
        reason = t.user_attrs.get("reason") or t.system_attrs.get("fail_reason") or ""
        w.writerow([t.number, t.state.name, t.user_attrs.get("worker", ""), t.user_attrs.get("seconds", ""),
                    *[_cell(t.params.get(p, "")) for p in params], *[_cell(v) for v in values],
                    t.user_attrs.get("feasible", ""), t.user_attrs.get("stage") or "", str(reason).splitlines()[0]
                    if reason else "", t.user_attrs.get("same_as", ""),
                    *[_cell(t.user_attrs.get("figures", {}).get(k, "")) for k in figures]])
    return out.getvalue()


def _cell(v: Any) -> Any:
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:.10g}"
    return v


def decoded(config: Config, trial: Any) -> dict:
    """A trial's parameter values as the options take them."""
    return {p.name: p.decode(trial.params[p.name]) for p in config.params if p.name in trial.params}


def write_outputs(study: Any, config: Config, out_dir: str | Path, evaluator: Any, stopped: str,
                  wall_s: float) -> dict:
    """Write the folder's files (see the module docstring); returns the summary."""
    from dfopt.io import write_json_atomic, write_text_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "trials.csv", trials_csv(study, config))
    best = best_trials(study, config)
    written = []
    pareto = out / "pareto"
    if config.multi and pareto.exists():
        shutil.rmtree(pareto)
    from dfopt.instance.convert import to_dict

    for t in best:
        path = out / "best.sol.json" if not config.multi else pareto / f"{t.number:05d}.sol.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path.with_name(path.name.replace(".sol.json", ".instance.json")),
                          to_dict(evaluator.instance_for(decoded(config, t))))
        src = t.user_attrs.get("solution")
        if src and Path(src).is_file():
            write_text_atomic(path, Path(src).read_text())
        else:
            write_json_atomic(path, evaluator.solve(decoded(config, t)).to_dict())
        written.append(str(path))
    notes = plots(study, config, out)
    summary = summarize(study, config, best, stopped, wall_s)
    summary["files"] = written
    summary["plot_notes"] = notes
    write_json_atomic(out / "summary.json", summary)
    return summary


def summarize(study: Any, config: Config, best: list, stopped: str, wall_s: float) -> dict:
    trials = study.get_trials(deepcopy=False)
    states: dict = {}
    for t in trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    feasible = [t for t in complete if t.user_attrs.get("feasible")]
    prechecked = [t for t in complete if t.user_attrs.get("stage") == "precheck"]
    default = next((t for t in trials if t.user_attrs.get("origin") == "default options" or
                    t.system_attrs.get("fixed_params") and t.number == 0), None)
    finished = [t for t in trials if t.datetime_start and t.datetime_complete]
    span = 0.0
    if finished:
        span = (max(t.datetime_complete for t in finished) - min(t.datetime_start for t in finished)).total_seconds()
    return {
        "study": study.study_name, "objectives": list(config.objectives), "trials": len(trials), "states": states,
        "feasible": len(feasible), "refused_by_precheck": len(prechecked),
        "repeated": sum(1 for t in trials if "same_as" in t.user_attrs),
        "precheck_share": round(len(prechecked) / len(complete), 4) if complete else 0.0,
        "infeasible_by_stage": _by_stage(complete),
        "best": [{"number": t.number, "values": list(t.values), "params": dict(t.params),
                  "figures": t.user_attrs.get("figures", {})} for t in best],
        "default": None if default is None else {"number": default.number, "state": default.state.name,
                                                 "values": list(default.values) if default.values else None,
                                                 "feasible": default.user_attrs.get("feasible")},
        "trials_per_minute": round(60 * len(finished) / span, 3) if span > 0 else None,
        "stopped": stopped, "wall_s": round(wall_s, 3),
    }


def _by_stage(trials: list) -> dict:
    out: dict = {}
    for t in trials:
        if not t.user_attrs.get("feasible"):
            stage = t.user_attrs.get("stage") or "unknown"
            out[stage] = out.get(stage, 0) + 1
    return out


def plots(study: Any, config: Config, out: Path) -> list[str]:
    """history.png, pareto.png (several objectives), importances.png; notes for the ones not drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import logging
    import warnings

    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as vis

    from dfopt.io import write_bytes_atomic

    notes = []
    feasible = feasible_trials(study)
    logging.getLogger("optuna").setLevel(logging.ERROR)   # "trial N omitted: its value is inf" for infeasible ones
    warnings.filterwarnings("ignore", category=UserWarning, module="optuna")

    def save(name: str, draw) -> None:
        try:
            ax = draw()
        except (ValueError, RuntimeError, ZeroDivisionError, IndexError) as err:
            notes.append(f"{name}: not drawn ({err})")
            plt.close("all")
            return
        fig = getattr(ax, "figure", None) or plt.gcf()
        buf = io.BytesIO()
        fig.set_size_inches(8, 5)
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=100)
        plt.close("all")
        write_bytes_atomic(out / name, buf.getvalue())

    first = config.objectives[0]
    if not feasible:
        notes.append("history.png: not drawn (no feasible trial)")
    else:
        save("history.png", lambda: vis.plot_optimization_history(
            study, target=lambda t: t.values[0] if t.user_attrs.get("feasible") else math.nan, target_name=first))
    if config.multi:
        if len(feasible) < 1:
            notes.append("pareto.png: not drawn (no feasible trial)")
        else:
            save("pareto.png", lambda: vis.plot_pareto_front(
                study, targets=lambda t: tuple(t.values[:2]), target_names=list(config.objectives[:2])))
    if len(config.params) < 2 or len(feasible) < 4:
        notes.append("importances.png: not drawn (needs 2 parameters and 4 feasible trials)")
    else:
        save("importances.png", lambda: vis.plot_param_importances(
            study, target=lambda t: t.values[0] if t.user_attrs.get("feasible") else math.nan, target_name=first))
    return notes


def summary_text(summary: dict, config: Config, out_dir: str | Path) -> str:
    """The lines ``dfopt explore`` prints at the end."""
    s = summary
    states = ", ".join(f"{k.lower()} {v}" for k, v in s["states"].items())
    repeated = f", {s['repeated']} repeating an earlier point" if s.get("repeated") else ""
    lines = [f"study {s['study']}: {s['trials']} trials ({states}), {s['feasible']} feasible, "
             f"{s['refused_by_precheck']} refused by the precheck{repeated}"]
    if s["infeasible_by_stage"]:
        by_stage = sorted(s["infeasible_by_stage"].items())
        lines.append("  infeasible by stage: " + ", ".join(f"{k} {v}" for k, v in by_stage))
    if s["default"] and s["default"]["values"]:
        lines.append(f"  default options (trial {s['default']['number']}): "
                     + ", ".join(f"{o} {_fmt(v)}" for o, v in zip(config.objectives, s["default"]["values"])))
    if not s["best"]:
        lines.append("  no feasible design found")
    for b in s["best"][:10]:
        params = ", ".join(f"{k}={v}" for k, v in b["params"].items())
        lines.append(f"  {'best' if not config.multi else 'pareto'} trial {b['number']}: "
                     + ", ".join(f"{o} {_fmt(v)}" for o, v in zip(config.objectives, b["values"])) + f" ({params})")
    speedups = [b["figures"].get("speedup") for b in s["best"] if b["figures"].get("speedup")]
    if speedups:
        original = s["best"][0]["figures"].get("original_s")
        lines.append(f"  original order: {_fmt(original)} s; the best trial runs {speedups[0]:.3g}x "
                     + ("faster" if speedups[0] >= 1 else "slower: keep the original order"))
    if len(s["best"]) > 10:
        lines.append(f"  ... {len(s['best']) - 10} more Pareto designs in {Path(out_dir) / 'pareto'}")
    if s["stopped"] == "exhausted":
        lines.append("  stopped before the trial budget: every point of the space was run, or the sampler kept "
                     "proposing points already run")
    elif s["stopped"] != "budget":
        lines.append(f"  stopped by the {s['stopped']} before the trial budget was used; run the same command again "
                     "to continue the study")
    lines.append(f"  written: {Path(out_dir) / 'trials.csv'}, {Path(out_dir) / 'summary.json'}"
                 + (f", {len(s['files'])} solution(s)" if s["files"] else ""))
    lines += [f"  note: {n}" for n in s["plot_notes"]]
    return "\n".join(lines) + "\n"


def _fmt(v: float) -> str:
    return "inf" if math.isinf(v) else f"{v:.6g}"


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)
