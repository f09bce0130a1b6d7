"""The ``witness-lp`` formulation: shifts of a witness schedule by one convex tension LP
(dfopt/models/fifo/shifts.py, witness_lp.py; docs/fifo.md)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from tests.fifo_graphs import as_instance, small_dags

from dfopt import progress
from dfopt.api import check_solution, solve_instance
from dfopt.ir import DataflowGraph, Kernel, Stream
from dfopt.lp.difference import DifferenceTimeLimit
from dfopt.models.fifo import Options
from dfopt.models.fifo import shifts as sh
from dfopt.models.fifo.data import FifoData
from dfopt.models.fifo.witness_lp import WitnessLP
from dfopt.results import Termination
from dfopt.sim.engine import occupancy
from dfopt.solution import Solution

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _data(graph, **options) -> FifoData:
    return FifoData(graph, Options(**options))


def _feasible_shifts(prog, win, limit=4000):
    """Every integer shift vector within the windows that keeps every read after its write
    (None when there are more than ``limit`` candidates to enumerate)."""
    ranges = [range(int(a), int(b) + 1) for a, b in zip(win.lo, win.hi)]
    if np.prod([len(r) for r in ranges], dtype=float) > limit:
        return None
    out = []
    for t in itertools.product(*ranges):
        t = np.array(t, dtype=np.int64)
        if (t[prog.dst] - t[prog.src] >= win.lower).all():
            out.append(t)
    return out


@SETTINGS
@given(small_dags(max_kernels=4, max_tokens=8))
def test_thresholds_give_the_exact_occupancy_of_every_shift(graph):
    """occ(tau) = 1 + #{N : tau >= theta_N} equals the occupancy counted on the shifted schedule."""
    data = _data(graph)
    fam, prog = data.family, data.family.prog
    beta = fam.schedule(1.0)
    win = sh.windows(prog, beta, fam.makespan)
    theta = np.stack([sh.thresholds(prog, beta, n) for n in range(1, int(prog.tokens.max()) + 1)], axis=1)
    rng = np.random.default_rng(0)
    for _ in range(5):
        t = rng.integers(win.lo, win.hi + 1)
        tau = t[prog.dst] - t[prog.src]
        from_curve = np.minimum(1 + (theta <= tau[:, None]).sum(axis=1), np.maximum(prog.tokens, 1))
        counted = np.maximum(occupancy(prog, sh.shifted(prog, beta, t)), 1)
        assert from_curve.tolist() == counted.tolist()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dags(max_kernels=3, max_tokens=6))
def test_bound_and_answer_against_every_integer_shift(graph):
    """Brute force over the integer shifts of the base: the family's bound is at most the best
    of them (and at most the answer), and the LP's shifts are feasible."""
    data = _data(graph)
    fam, prog = data.family, data.family.prog
    base = data.slack_candidate()
    beta, _ = fam.kernel_mix(base.witness)
    win = sh.windows(prog, beta, fam.makespan)
    feasible = _feasible_shifts(prog, win)
    assume(feasible)
    values = [data.value(np.maximum(occupancy(prog, sh.shifted(prog, beta, t)), 1)) for t in feasible]
    weights = np.ones(prog.n_streams)
    bound = sh.solve_shifts(prog, beta, fam.makespan, weights, right_end=True).bound
    assert bound <= min(values) + 1e-6
    answer = sh.solve_shifts(prog, beta, fam.makespan, weights, right_end=False).shift
    assert any((answer == t).all() for t in feasible)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dags(max_kernels=5, max_tokens=10))
def test_never_above_slack_and_proven(graph):
    """The answer passes every check, is never above ``slack``'s (its base), and the solution's
    bound (the problem's) is below both; the family's bound is below the answer."""
    inst = as_instance(graph)
    slack = solve_instance(inst, formulation="slack")
    ours = solve_instance(inst, formulation="witness-lp")
    assert ours.ok, [c for c in ours.checks if not c.ok]
    assert ours.objective <= slack.objective
    assert ours.bound is not None and ours.bound <= ours.objective
    rec = ours.sections["fifo"]["witness_lp"]
    assert rec["bound"] <= ours.objective


def _fork_join() -> DataflowGraph:
    """A fast producer feeding a slow consumer directly and through a delayed branch."""
    return DataflowGraph([Kernel("a"), Kernel("c", delay=6, ii=2), Kernel("b", ii=3)],
                         [Stream("ab", "a", "b", tokens=12), Stream("ac", "a", "c", tokens=12),
                          Stream("cb", "c", "b", tokens=12)])


def _shifted_case() -> DataflowGraph:
    """A 5-kernel DAG (``random_fifo_dag(5, 14, tokens=(4, 16))``) where delaying k3 by 3 cycles
    saves a slot over ``slack``'s witness."""
    k = [Kernel("k0", delay=4, ii=4), Kernel("k1", delay=17, ii=2), Kernel("k2", delay=14, ii=4),
         Kernel("k3", delay=8, ii=2), Kernel("k4", delay=2, ii=2)]
    s = [Stream("e0", "k0", "k1", 12, 512), Stream("e1", "k1", "k2", 12, 16), Stream("e2", "k0", "k3", 12, 8),
         Stream("e3", "k0", "k4", 14, 256), Stream("e4", "k1", "k4", 14, 8), Stream("e5", "k3", "k4", 14, 128)]
    return DataflowGraph(k, s)


def test_a_shift_beats_slack_and_is_proven_without_simulation():
    inst = as_instance(_shifted_case(), simulate="never")
    slack = solve_instance(inst, formulation="slack")
    ours = solve_instance(inst, formulation="witness-lp")
    assert ours.ok and [c.name for c in ours.checks if c.name == "simulated"] == []
    assert ours.objective == 22 < slack.objective == 23
    assert ours.sections["fifo"]["witness"]["shift"] == {"k3": 3}
    assert ours.sections["fifo"]["witness_lp"]["bound"] <= 22


def test_a_tampered_shift_is_caught():
    """A stored shift that moves a kernel past the makespan, is not an integer, or names an
    unknown kernel fails the witness check."""
    inst = as_instance(_fork_join(), simulate="never")
    sol = solve_instance(inst, formulation="witness-lp")
    assert sol.ok
    for shift in ({"b": 10_000}, {"b": 1.5}, {"nobody": 1}):
        data = sol.to_dict()
        data["fifo"]["witness"]["shift"] = shift
        failed = [c.name for c in check_solution(inst, Solution.from_dict(data)) if not c.ok]
        assert "witness" in failed, shift


def test_the_time_limit_stops_it_with_a_safe_answer():
    """A deadline already past returns the base witness, with status time_limit and where it
    stopped."""
    data = _data(_fork_join())
    data.deadline = 0.0
    out = WitnessLP().solve(data, data.options)
    assert out.termination is Termination.TIME_LIMIT and out.limit_reached
    assert out.report["witness_lp"]["stopped_by"] == "time limit before the answer LP"
    assert out.report["best"].safe and out.report["best"].proof.startswith("witness")


@pytest.mark.parametrize("stop_at", ["answer", "bound"])
def test_a_time_limit_inside_an_lp_keeps_the_best_so_far(monkeypatch, stop_at):
    """When the LP solver reaches the deadline inside the answer LP the base witness stands;
    inside the bound LP the shifted answer stands without a bound. Both say where they stopped."""
    real = sh.solve_shifts

    def stopping(*args, right_end, **kwargs):
        if right_end == (stop_at == "bound"):
            raise DifferenceTimeLimit("HiGHS stopped at the time limit")
        return real(*args, right_end=right_end, **kwargs)

    monkeypatch.setattr(sh, "solve_shifts", stopping)
    data = _data(_shifted_case())
    out = WitnessLP().solve(data, data.options)
    record = out.report["witness_lp"]
    assert out.termination is Termination.TIME_LIMIT and out.limit_reached
    assert record["stopped_by"] == f"time limit during the {stop_at} LP" and "bound" not in record
    assert out.report["best"].safe
    if stop_at == "answer":
        assert out.report["best"].shift is None and out.report["best"].value == 23
    else:
        assert out.report["best"].value == 22 and record["answer_lp_time_s"] >= 0


def test_progress_reports_incumbent_and_bound():
    rec = progress.RecordingReporter()
    with progress.reporting(rec):
        solve_instance(as_instance(_fork_join()), formulation="witness-lp")
    steps = [e.detail for e in rec.events if e.kind == "update"]
    assert "answer LP" in steps and "bound LP" in steps
    assert rec.events[-1].incumbent is not None and rec.events[-1].bound is not None


def test_levels_and_hull():
    assert sh.levels(3).tolist() == [1, 2]
    xs, ys, ptr = sh.lower_hull(np.array([0, 1, 2, 3, 0, 5]), np.array([1, 3, 3, 4, 2, 9]), np.array([0, 4, 6]))
    # (1, 3) lies above the chord from (0, 1) to (2, 3), and (2, 3) on the chord to (3, 4)
    assert xs.tolist() == [0, 3, 0, 5] and ys.tolist() == [1, 4, 2, 9] and ptr.tolist() == [0, 2, 4]
