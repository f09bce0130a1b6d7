"""The checker of a fifo solution, written without the solver: recount and prove or simulate.

Safety and latency are established in one of two independent ways:

* ``witness`` — a schedule of the mixed ASAP/ALAP family (:mod:`.witness`) satisfies every
  constraint of the timing model with the given depths, which proves the design neither
  deadlocks nor runs past the unbounded makespan (cheap: no bounded simulation);
* ``simulated`` — the bounded simulation itself (:mod:`dfopt.sim`).

``simulate="auto"`` simulates when the graph has at most ``SIMULATE_EVENTS`` events or when no
witness is found; ``"always"`` and ``"never"`` force the choice.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from dfopt import limits
from dfopt.models.fifo.edges import objective_value, stream_arrays, totals
from dfopt.models.fifo.witness import check_mix, schedule_family
from dfopt.sim import compile_events, reference_run, simulate
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.fifo import Options
    from dfopt.sim.result import SimResult

SIMULATE_EVENTS = 8_000_000
SIMULATE_MODES = ("auto", "always", "never")


def makespan_limit(reference: int, slack: float) -> int:
    """The makespan a safe answer may take: ``floor((1 + slack) x reference)``, exactly the
    unbounded reference at slack 0 (latency-preserving).

    >>> makespan_limit(1000, 0.0), makespan_limit(1000, 0.05), makespan_limit(999, 0.001)
    (1000, 1050, 999)
    """
    return int(reference) + math.floor(float(slack) * int(reference))


def blocked_text(res: SimResult) -> str:
    return "; ".join(f"{b.kernel} waits on {b.stream} ({b.kind}, token {b.token})" for b in res.blocked[:8])


def _depth_faults(graph, depths) -> list[str]:
    bad = [f"stream {n}: missing depth" for n in graph.streams if n not in depths]
    bad += [f"stream {n}: depth {d!r} is not an integer >= 1" for n, d in depths.items()
            if isinstance(d, bool) or not isinstance(d, int) or d < 1]
    bad += [f"depth given for unknown stream {n!r}" for n in depths if n not in graph.streams]
    return bad


#: what the bounded simulation takes per event (measured: ~3.3 us on a 1M-event chain), to decide
#: whether it fits in what is left of a solve's time limit
SIM_SECONDS_PER_EVENT = 4e-6


def _simulated_check(graph, depths, reference, limit: int) -> tuple[Check, SimResult]:
    res = simulate(graph, depths)
    bad = []
    if res.deadlock:
        bad.append("deadlock: " + blocked_text(res))
    elif res.makespan is not None and res.makespan > limit:
        bad.append(f"makespan {res.makespan} exceeds the unbounded reference {reference.makespan}" if
                   limit == reference.makespan else
                   f"makespan {res.makespan} exceeds the limit {limit} (the reference {reference.makespan} "
                   "with the latency slack)")
    return Check("simulated", not bad, bad), res


def checks(instance: Instance, options: Options, solution: Solution) -> list[Check]:
    """Named checks: complete depths; witness and/or simulation; recounted totals. The objective
    kind and the simulation mode are the options' (``objective``, ``simulate``), never the
    solution's."""
    graph = instance.graph
    assert graph is not None  # the driver checks the parts a problem needs
    sec = solution.sections.get("fifo") or {}
    depths = dict(solution.decision.depths)
    bad = _depth_faults(graph, depths)
    out = [Check("depths-complete", not bad, bad)]
    if bad:
        return out
    simulate_mode = options.simulate
    reference = reference_run(graph)
    assert reference.makespan is not None  # a graph that deadlocks unbounded has no solution to check
    limit = makespan_limit(reference.makespan, options.latency_slack)
    arrays = stream_arrays(graph)
    vec = np.array([depths[n] for n in arrays.names], dtype=np.int64)
    lam = None
    family = schedule_family(graph, reference, makespan=limit)
    if simulate_mode != "always":
        if "witness" in sec:
            faults = _stored_witness_faults(family, sec["witness"], vec)
            lam = None if faults else 1.0
            out.append(Check("witness", not faults, faults))
        else:
            lam = family.safe(vec)
            if lam is not None:
                out.append(Check("witness", True, []))
    events = compile_events(graph).n_events
    small = events <= SIMULATE_EVENTS
    left = limits.remaining()
    if simulate_mode == "auto" and lam is not None and left is not None and events * SIM_SECONDS_PER_EVENT > left:
        out.append(Check("simulation-skipped", True, [
            f"the witness schedule proves the depths; the bounded simulation (~{events * SIM_SECONDS_PER_EVENT:.1f} s "
            f"for {events} events) would run past the time limit ({left:.1f} s left); dfopt check runs it"]))
    run = None
    if not any(c.name == "simulation-skipped" for c in out) and (
            simulate_mode == "always" or (simulate_mode == "auto" and (small or lam is None))):
        check_, run = _simulated_check(graph, depths, reference, limit)
        out.append(check_)
    recount = totals(arrays, vec)
    tot_bad = [f"{k}: reported {sec.get(k)}, recounted {v}" for k, v in recount.items()
               if k in sec and sec[k] != v]
    objective = objective_value(arrays, vec, options.objective)
    if solution.objective is None or solution.objective != objective:
        tot_bad.append(f"objective: reported {solution.objective}, recounted {objective} "
                       f"({options.objective})")
    tot_bad += _makespan_faults(sec, reference.makespan, limit, options.latency_slack, run)
    out.append(Check("objective-recounted", not tot_bad, tot_bad))
    if solution.bound is not None:
        bound = objective_value(arrays, family.lower_bound(), options.objective)
        bad_bound = ([f"bound {solution.bound} is above the recomputed bound {bound} (the depths below which no "
                      "safe assignment within the makespan limit goes)"] if solution.bound > bound + 1e-9 else [])
        out.append(Check("bound", not bad_bound, bad_bound))
    if "frontier" in sec:
        faults = frontier_faults(graph, arrays, sec["frontier"], reference.makespan, options)
        out.append(Check("frontier", not faults, faults))
    record = search_record_faults(sec, recount, options.objective)
    out.append(Check("search-record", not record, record))
    if not any(c.name in ("witness", "simulated") for c in out):
        out.append(Check("latency-preserving", False,
                         ["no witness schedule dominates these depths and simulation was not run"]))
    return out


def _makespan_faults(sec: dict, reference: int, limit: int, slack: float, run) -> list[str]:
    """The section's makespans: the reference is the unbounded run's; without a slack the
    depths' makespan is the reference; with one it is the bounded run's (when simulated) and
    within the limit, and the limit and slack are the options'."""
    bad = []
    if sec.get("reference_makespan") not in (None, reference):
        bad.append(f"reference_makespan: reported {sec['reference_makespan']}, simulated unbounded {reference}")
    made = sec.get("makespan")
    if slack == 0 and made not in (None, reference):
        bad.append(f"makespan: reported {made}, simulated unbounded {reference}")
    if slack > 0:
        if run is not None and not run.deadlock and made != run.makespan:
            bad.append(f"makespan: reported {made}, the bounded run takes {run.makespan}")
        elif made is not None and (isinstance(made, bool) or not isinstance(made, int) or made > limit):
            bad.append(f"makespan: reported {made!r}, above the limit {limit}")
        if sec.get("makespan_limit") not in (None, limit):
            bad.append(f"makespan_limit: reported {sec['makespan_limit']}, the options give {limit}")
        if made is not None and sec.get("latency_preserving") is not (made == reference):
            bad.append(f"latency_preserving {sec.get('latency_preserving')!r} but the makespan is {made} against "
                       f"the reference {reference}")
    return bad


def frontier_faults(graph, arrays, points, reference: int, options: Options) -> list[str]:
    """Every frontier point proven again: complete depths, the bounded run's makespan as
    reported and within the point's limit, figures recounted, slacks within the options' range,
    and no point dominated by another."""
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        return ["frontier must be a list of points"]
    bad: list[str] = []
    key = _OBJECTIVE_KEY.get(options.objective, "total_depth")
    for i, p in enumerate(points):
        slack, depths = p.get("latency_slack"), p.get("depths")
        if isinstance(slack, bool) or not isinstance(slack, (int, float)) or not 0 <= slack <= options.frontier_slack:
            bad.append(f"frontier[{i}]: latency_slack {slack!r} outside [0, {options.frontier_slack}]")
            continue
        if not isinstance(depths, dict) or _depth_faults(graph, depths):
            bad.append(f"frontier[{i}]: " + ("; ".join(_depth_faults(graph, depths)[:3]) if isinstance(depths, dict)
                                             else "depths missing"))
            continue
        limit = makespan_limit(reference, slack)
        res = simulate(graph, depths)
        if res.deadlock:
            bad.append(f"frontier[{i}]: deadlock: " + blocked_text(res))
            continue
        if res.makespan != p.get("makespan") or (res.makespan or 0) > limit or p.get("makespan_limit") != limit:
            bad.append(f"frontier[{i}]: makespan reported {p.get('makespan')} (limit {p.get('makespan_limit')}), "
                       f"simulated {res.makespan} (limit {limit})")
        vec = np.array([depths[n] for n in arrays.names], dtype=np.int64)
        bad += [f"frontier[{i}]/{k}: reported {p.get(k)}, recounted {v}" for k, v in totals(arrays, vec).items()
                if p.get(k) != v]
    if not bad:
        for i, p in enumerate(points):
            if any(q is not p and q["makespan"] <= p["makespan"] and q[key] <= p[key]
                   and (q["makespan"], q[key]) != (p["makespan"], p[key]) for q in points):
                bad.append(f"frontier[{i}] is dominated (makespan {p['makespan']}, {key} {p[key]})")
    return bad


_FIGURES = ("total_depth", "total_bits", "bram18")
_OBJECTIVE_KEY = {"depth": "total_depth", "bits": "total_bits", "bram18": "bram18"}


def search_record_faults(sec: dict, recount: dict, objective: str) -> list[str]:
    """Faults of the search's record in a fifo section (what no recount reaches): the chosen
    candidate is listed, safe, with the section's proof and the decision's figures; every
    candidate is ``{safe, proof, figures}`` with non-negative integer figures; no safe candidate
    is cheaper than the chosen one (the rule that chose it); ``repaired`` and ``lp`` agree."""
    bad = []
    chosen, proof, cands = sec.get("chosen"), sec.get("proof"), sec.get("candidates")
    if not isinstance(chosen, str) or not isinstance(proof, str) or not isinstance(cands, dict):
        return ["chosen, proof and candidates must be given (a name, a text and an object)"]
    for name, c in cands.items():
        ok = (isinstance(c, dict) and isinstance(c.get("safe"), bool) and isinstance(c.get("proof"), str)
              and all(isinstance(c.get(k), int) and not isinstance(c.get(k), bool) and c[k] >= 0 for k in _FIGURES))
        if not ok:
            bad.append(f"candidates/{name}: expected {{safe: bool, proof: text, {', '.join(_FIGURES)}: "
                       "integers >= 0}}")
    if bad:
        return bad
    if chosen not in cands:
        return [f"chosen {chosen!r} is not among the candidates ({', '.join(sorted(cands))})"]
    best = cands[chosen]
    if best["safe"] is not True:
        bad.append(f"the chosen candidate {chosen!r} is recorded unsafe")
    if best["proof"] != proof:
        bad.append(f"proof {proof!r} differs from the chosen candidate's {best['proof']!r}")
    bad += [f"candidates/{chosen}/{k}: reported {best[k]}, recounted {recount[k]}"
            for k in _FIGURES if best[k] != recount[k]]
    key = _OBJECTIVE_KEY.get(objective, "total_depth")
    cheaper = sorted(n for n, c in cands.items() if c["safe"] and c[key] < best[key])
    if cheaper:
        bad.append(f"safe candidates {', '.join(cheaper)} have a lower {key} than the chosen {chosen!r}: "
                   "the cheapest safe candidate is chosen")
    if sec.get("repaired") is not chosen.endswith("-repaired"):
        bad.append(f"repaired {sec.get('repaired')!r} disagrees with the chosen candidate {chosen!r}")
    steps = sec.get("repair_steps")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        bad.append(f"repair_steps {steps!r} is not an integer >= 0")
    lp = sec.get("lp")
    if lp is not None:
        c = cands.get(lp.get("candidate")) if isinstance(lp, dict) else None
        if c is None or lp.get("safe") is not c["safe"] or any(lp.get(k) != c[k] for k in _FIGURES):
            bad.append("lp must repeat one candidate's name, safety and figures")
    return bad


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    """Violations of a fifo solution (empty when it is valid); ``options`` default to the instance's."""
    if options is None:
        from dfopt.models.driver import make_options

        options = make_options(instance, problem="fifo")
    return [msg for c in checks(instance, options, solution) for msg in c.details]


def _stored_witness_faults(family, witness, depths) -> list[str]:
    """Rebuild the schedule of a stored per-kernel mix and verify it covers ``depths``."""
    names = family.prog.kernel_names
    if not isinstance(witness, dict) or not isinstance(witness.get("kernels", {}), dict):
        return [f"witness {witness!r} is not an object {{lam, kernels}}"]
    values = [witness.get("lam", 1.0), *witness.get("kernels", {}).values()]
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
        return ["witness mixes must be numbers in [0, 1]"]
    unknown = [k for k in witness.get("kernels", {}) if k not in names]
    if unknown:
        return [f"witness names unknown kernels: {', '.join(unknown[:5])}"]
    lam = np.full(len(names), float(witness.get("lam", 1.0)))
    index = {k: i for i, k in enumerate(names)}
    for k, v in witness.get("kernels", {}).items():
        lam[index[k]] = float(v)
    if ((lam < 0) | (lam > 1)).any():
        return ["witness mixes must lie in [0, 1]"]
    shift, faults = _stored_shifts(witness.get("shift"), index)
    return faults or check_mix(family, lam, depths, shift)


def _stored_shifts(shift, index: dict) -> tuple[np.ndarray | None, list[str]]:
    """The per-kernel shifts of a stored witness (``witness-lp``: kernel -> cycles, absent 0)."""
    if shift is None:
        return None, []
    if not isinstance(shift, dict) or any(isinstance(v, bool) or not isinstance(v, int) for v in shift.values()):
        return None, ["witness shift must map kernels to integers (cycles)"]
    unknown = [k for k in shift if k not in index]
    if unknown:
        return None, [f"witness shift names unknown kernels: {', '.join(unknown[:5])}"]
    out = np.zeros(len(index), dtype=np.int64)
    for k, v in shift.items():
        out[index[k]] = v
    return out, []
