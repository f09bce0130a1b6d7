"""dfopt.progress: the current reporter, phases, the terminal and log reporters, and the solver
hooks. Clocks are fake (no sleeps, no timing assertions)."""

from __future__ import annotations

import io
import threading

import pytest

from dfopt.errors import InstanceError
from dfopt.ilp import LinearModel, lin_sum, new_cp_model, solve, solve_cp_model
from dfopt.progress import (
    LogReporter,
    NullReporter,
    RecordingReporter,
    TerminalReporter,
    current,
    make_reporter,
    phase,
    reporting,
)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class FakeClock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def _knapsack(n: int = 12) -> LinearModel:
    m = LinearModel("knap")
    x = [m.bool_var(f"x[{i}]") for i in range(n)]
    m.add(lin_sum(x, [3 + (7 * i) % 11 for i in range(n)]) <= 4 * n)
    m.maximize(lin_sum(x, [5 + (5 * i) % 13 for i in range(n)]))
    return m


def test_make_reporter_picks_by_stream():
    assert isinstance(make_reporter(FakeTerminal()), TerminalReporter)
    assert isinstance(make_reporter(io.StringIO()), LogReporter)
    assert isinstance(make_reporter(FakeTerminal(), quiet=True), NullReporter)
    assert not make_reporter(io.StringIO(), quiet=True).active


def test_terminal_shows_one_line_with_numbers_and_erases_it():
    out, clock = FakeTerminal(), FakeClock()
    rep = TerminalReporter(out, clock=clock, ticker=False, width=120)
    with reporting(rep), phase("fusion: exact model", time_limit=60) as ph:
        clock.now += 5
        ph.update(incumbent=120, bound=100)
        rep.tick()
        shown = out.getvalue()
        line = shown.split("\r")[-1]
        assert line.startswith("\x1b[Kfusion: exact model")
        assert "5.0/60 s" in line and "incumbent 120" in line and "bound 100" in line
        assert "gap 16.67%" in line
        clock.now += 1
        ph.update(incumbent=110)
        rep.tick()
    text = out.getvalue()
    assert "\n" not in text                                      # one line, rewritten in place
    assert text.count("\r\x1b[K") >= 3 and "incumbent 110" in text.split("\r")[-2]
    assert text.endswith("\r\x1b[K")                             # erased at the end
    assert rep._thread is None


def test_terminal_line_is_cut_to_the_width():
    out = FakeTerminal()
    rep = TerminalReporter(out, clock=FakeClock(), ticker=False, width=30)
    with reporting(rep), phase("a very long label " * 5, time_limit=9):
        rep.tick()
    assert max(len(part) for part in out.getvalue().split("\r")) <= 3 + 29


def test_terminal_ticker_thread_starts_and_stops():
    out = FakeTerminal()
    rep = TerminalReporter(out, interval=0.01)
    with reporting(rep), phase("ticking", time_limit=1):
        thread = rep._thread
        assert thread is not None and thread.daemon
    assert rep._thread is None and not thread.is_alive()
    assert out.getvalue().endswith("\r\x1b[K")


def test_log_reporter_is_silent_for_a_short_phase():
    out, clock = io.StringIO(), FakeClock()
    rep = LogReporter(out, clock=clock, ticker=False)
    with reporting(rep), phase("quick", time_limit=60) as ph:
        for _ in range(5):
            clock.now += 0.5
            ph.update(incumbent=3, bound=1)
            rep.tick()
    assert out.getvalue() == ""


def test_log_reporter_prints_periodic_lines_and_a_final_one():
    out, clock = io.StringIO(), FakeClock()
    rep = LogReporter(out, clock=clock, ticker=False)
    with reporting(rep), phase("placement: exact model (cpsat)", time_limit=60) as ph:
        for step in range(1, 121):          # 60 s in half-second ticks
            clock.now += 0.5
            ph.update(incumbent=1000 - step, bound=500)
            rep.tick()
    lines = out.getvalue().splitlines()
    assert len(lines) == 5                  # at 3, 18, 33, 48 s, and the final line
    assert all(line.startswith("[progress] placement: exact model (cpsat)") for line in lines)
    assert "3.0/60 s" in lines[0] and "18.0/60 s" in lines[1] and "48.0/60 s" in lines[3]
    assert "time limit reached after 60.0 s" in lines[-1] and "incumbent 880" in lines[-1]


def test_log_reporter_never_prints_two_lines_within_a_second():
    out, clock = io.StringIO(), FakeClock()
    rep = LogReporter(out, clock=clock, ticker=False, quiet=0.0, every=0.25)
    with reporting(rep), phase("busy") as ph:
        for step in range(20):              # 5 s in quarters
            clock.now += 0.25
            ph.update(incumbent=step)
            rep.tick()
        clock.now += 0.25
    lines = out.getvalue().splitlines()
    times = [float(line.split("  ")[1].split()[0]) for line in lines[:-1]]
    assert times == [0.2, 1.2, 2.2, 3.2, 4.2]          # 0.25, 1.25, ...: one a second, though due more often
    assert "busy: done in 5.2 s" in lines[-1]


def test_default_reporter_prints_nothing(capsys):
    assert isinstance(current(), NullReporter) and not current().active
    with phase("silent", time_limit=5) as ph:
        ph.update(incumbent=1, bound=0)
        assert not ph.live
    r = solve(_knapsack(), "cpsat", time_limit=5)
    assert r.termination.value == "optimal"
    assert "incumbents" not in r.stats            # no callback attached for nobody
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_nested_phases_scale_and_drop():
    rec = RecordingReporter()
    with reporting(rec):
        with phase("outer", 10, scale=2.0) as outer:
            with phase("inner", 5, scale=0.5) as inner:
                inner.update(incumbent=8, bound=4)       # x 0.5, then x 2
            assert outer.incumbent == 8.0 and outer.bound == 4.0
        with phase("search", 10, numbers=False):
            with phase("leaf", 1) as leaf:
                assert not leaf.live
                leaf.update(incumbent=99)
    assert [e.label for e in rec.events if e.kind == "start"] == ["outer", "search"]
    assert rec.incumbents() == [8.0]


def test_reporting_rejects_other_objects():
    with pytest.raises(InstanceError, match="expected a dfopt.progress.Reporter"):
        with reporting(io.StringIO()):
            pass


def test_updates_from_many_threads():
    out = FakeTerminal()
    rep = TerminalReporter(out, clock=FakeClock(), ticker=False)
    with reporting(rep), phase("threads", time_limit=10) as ph:
        def work(k):
            for i in range(200):
                ph.update(incumbent=k * 1000 + i, bound=k)
                rep.tick()

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert out.getvalue().endswith("\r\x1b[K") and "\n" not in out.getvalue()


def test_cpsat_solve_reports_incumbents_and_bound():
    rec = RecordingReporter()
    with reporting(rec):
        r = solve(_knapsack(16), "cpsat", time_limit=10)
    assert r.termination.value == "optimal"
    starts = [e for e in rec.events if e.kind == "start"]
    assert [e.label for e in starts] == ["CP-SAT knap"]
    assert rec.incumbents() and rec.bounds()
    assert rec.incumbents()[-1] == pytest.approx(r.objective)
    assert rec.events[-1].kind == "end" and rec.events[-1].bound == pytest.approx(r.bound)


def test_native_cp_model_reports_in_the_callers_phase():
    m = new_cp_model("pairs")
    xs = [m.new_int_var(0, 9, f"x[{i}]") for i in range(5)]
    m.add_all_different(xs)
    m.minimize(sum((i + 1) * x for i, x in enumerate(xs)))
    rec = RecordingReporter()
    with reporting(rec), phase("mapping: exact model", 10, scale=0.5):
        result, _ = solve_cp_model(m, time_limit=10)
    assert [e.label for e in rec.events if e.kind == "start"] == ["mapping: exact model"]
    assert rec.incumbents()[-1] == pytest.approx(0.5 * result.objective)
    assert "incumbents" not in result.stats


def test_highs_solve_reports_start_and_end():
    rec = RecordingReporter()
    with reporting(rec):
        r = solve(_knapsack(), "highs", time_limit=10)
    kinds = [e.kind for e in rec.events]
    assert kinds[0] == "start" and kinds[-1] == "end" and rec.events[0].label == "HiGHS knap"
    assert rec.events[-1].incumbent == pytest.approx(r.objective)
