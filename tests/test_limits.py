"""--time-limit bounds the whole command (dfopt.limits): the budget arithmetic, the nesting of
solves, the formulation's share after the time already spent, the stops at a deadline, and the
checks that make way for the deadline. No assertion depends on how fast this machine is: the
elapsed time is set by moving the command's start into the past."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dfopt import limits
from dfopt.cli import main
from dfopt.instance import load
from dfopt.instance.types import Instance
from dfopt.ir import DataflowGraph, Kernel, Stream
from dfopt.models import driver
from dfopt.models.fifo.witness import refine, schedule_family
from dfopt.sim import reference_run

ROOT = Path(__file__).resolve().parent.parent


def chain(n: int) -> DataflowGraph:
    return DataflowGraph([Kernel(f"k{i}", ii=1 + i % 2) for i in range(n)],
                         [Stream(f"e{i}", f"k{i}", f"k{i + 1}", tokens=16) for i in range(n - 1)])


def test_the_outermost_solve_counts_from_the_command_start_once():
    limits.start_command(time.perf_counter() - 3.0)          # 3 s went on loading
    with limits.budget(10.0) as outer:
        assert 6.5 < outer.remaining() <= 7.0
        with limits.budget(60.0) as inner:                   # a stage's own limit, capped by the outer deadline
            assert inner.deadline == pytest.approx(outer.deadline)
        with limits.budget(1.0) as short:
            assert short.deadline < outer.deadline
        assert limits.remaining() == pytest.approx(outer.remaining(), abs=0.1)
    assert limits.active() is None and limits.command_start() is None
    with limits.budget(5.0) as later:                          # the start was used: the next one counts from now
        assert later.remaining() > 4.5


def test_the_formulation_gets_what_the_load_left_after_the_reserve():
    inst = load(ROOT / "instances/fusion/greedy-trap.json")
    options = driver.make_options(inst, {"time_limit": 10})
    limits.start_command(time.perf_counter() - 6.0)
    sol = driver.solve(inst, options)
    assert sol.ok
    budget = sol.stats["time_solve_budget_s"]
    assert budget <= 10 - 6 - limits.reserve(10) + 1e-6 and sol.stats["time_load_s"] >= 6.0
    assert sol.stats["time_limit_s"] == 10                     # the recorded limit is the user's
    unhurried = driver.solve(inst, options)                      # no command start: the full limit
    assert 5 < unhurried.stats["time_solve_budget_s"] <= 10 - limits.reserve(10)


def test_a_past_command_start_still_gives_the_formulation_a_slice():
    inst = load(ROOT / "instances/fifo/fig8f.json")
    limits.start_command(time.perf_counter() - 100.0)
    sol = driver.solve(inst, driver.make_options(inst, {"time_limit": 5}))
    assert sol.ok and sol.stats["time_solve_budget_s"] == limits.MIN_SOLVE_S


def test_refine_stops_at_its_deadline():
    g = chain(30)
    fam = schedule_family(g, reference_run(g))
    _, _, spent = refine(fam, lambda d: int(d.sum()), 1.0, budget=10_000, deadline=time.perf_counter() - 1)
    assert spent == 1
    _, _, free = refine(fam, lambda d: int(d.sum()), 1.0, budget=10_000)
    assert free > 1


def test_the_fifo_check_skips_the_redundant_simulation_only_when_a_witness_proves_and_time_is_short(monkeypatch):
    g = chain(12)
    inst_opts = {"formulation": "slack"}
    inst = Instance("c", "fifo", graph=g)
    options = driver.make_options(inst, inst_opts)
    sol = driver.solve(inst, options)
    names = lambda cs: [c.name for c in cs]                                  # noqa: E731
    assert "simulated" in names(driver.check(inst, sol, options))            # no deadline: it runs
    monkeypatch.setattr(sys.modules["dfopt.models.fifo.checks"], "SIM_SECONDS_PER_EVENT", 1e3)
    with limits.budget(1.0):
        got = driver.check(inst, sol, options)
    assert "simulation-skipped" in names(got) and "simulated" not in names(got) and all(c.ok for c in got)
    with limits.budget(1.0):                                                 # always: the option is obeyed
        got = driver.check(inst, sol, driver.make_options(inst, {**inst_opts, "simulate": "always"}))
    assert "simulated" in names(got)


def test_the_mapping_search_stops_pairing_at_its_deadline():
    from dfopt.models.mapping import prepare
    from dfopt.models.mapping.search import Search

    inst = load(ROOT / "instances/mapping/gemm-4x4x4.json")
    d = prepare(inst, driver.make_options(inst))
    nodes = [frozenset([v]) for v in d.nodes if d.task[v] == "gemm"]
    s = Search(d, first=1, branch=2, max_states=10, time_limit=10, seed=0)
    assert s._affinity_pairs(nodes)
    s.deadline = time.perf_counter() - 1
    assert s._affinity_pairs(nodes) == []


def test_a_command_past_its_limit_says_where_the_time_went(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(limits, "STATED_OVERHEAD_S", -1000.0)      # every command counts as late
    code = main(["solve", str(ROOT / "instances/fifo/fig8a.json"), "--quiet", "--time-limit", "1"])
    err = capsys.readouterr().err
    assert code == 0 and "past --time-limit 1 s" in err and "load" in err and "check" in err


def test_budget_arithmetic():
    b = limits.Budget(start=0.0, limit=2.0)
    assert b.remaining(now=0.5) == 1.5 and b.remaining(now=3.0) == 0.0 and b.elapsed(now=1.0) == 1.0
    assert all(limits.reserve(t) <= t / 2 + 1e-12 for t in np.geomspace(0.01, 1e4, 30))
