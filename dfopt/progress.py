"""Progress of long solves: a current reporter, phases, and two stream reporters.

Solver code wraps a long solve in :func:`phase` and reports numbers with :meth:`Phase.update`
(or the module-level :func:`update`). What happens to them depends on the *current reporter*
(a context variable): by default a :class:`NullReporter`, so library users see nothing. A front
end installs a reporter with :func:`reporting`; :func:`make_reporter` picks one for a stream:

* :class:`TerminalReporter` (a terminal): one line rewritten in place, with the label, elapsed /
  limit seconds, incumbent, bound and relative gap, refreshed a few times a second by a daemon
  ticker thread and erased when the phase ends;
* :class:`LogReporter` (a file or pipe): nothing for phases shorter than a few seconds, then a
  plain line every 15 s or so (at most one a second) and a final line at the end.

Phases nest. Only the outermost open phase reaches the reporter; an inner phase (such as the one
:func:`dfopt.ilp.solve` opens around every solve) hands its numbers to its parent, converted by
its ``scale`` (reported value = raw value x scale; the parent applies its own scale in turn), or
drops them when the parent was opened with ``numbers=False`` (a phase that reports its own
numbers, such as a search that solves many small models). Reporters get the phase objects
themselves from whatever thread reports (a CP-SAT solution callback runs on a solver thread), so
every reporter here is thread-safe.

>>> import io
>>> rec = RecordingReporter()
>>> with reporting(rec):
...     with phase("fusion exact", time_limit=60, scale=0.5) as ph:
...         ph.update(incumbent=40, bound=30)
>>> [(e.kind, e.label, e.incumbent, e.bound) for e in rec.events]
[('start', 'fusion exact', None, None), ('update', 'fusion exact', 20.0, 15.0), ('end', 'fusion exact', 20.0, 15.0)]
>>> with phase("quiet", time_limit=1) as ph:      # no reporter installed: nothing happens
...     ph.update(incumbent=1.0)
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from dfopt.results import relative_gap

__all__ = ["Reporter", "NullReporter", "RecordingReporter", "TerminalReporter", "LogReporter",
           "Phase", "Event", "current", "reporting", "phase", "update", "current_phase",
           "make_reporter", "format_phase"]

Clock = Callable[[], float]


# ------------------------------------------------------------------------------- reporters
class Reporter:
    """Receives the start, updates and end of every outermost phase; the methods do nothing.

    ``active`` False tells solver code that nobody listens (so it can skip costly hooks such as
    a CP-SAT solution callback). ``clock`` times the phases (seconds, monotonic).
    """

    active: bool = True

    def __init__(self, clock: Clock | None = None):
        self.clock: Clock = clock or time.monotonic

    def phase_started(self, ph: Phase) -> None:
        """A phase opened (called in the thread that opened it)."""

    def phase_updated(self, ph: Phase) -> None:
        """New numbers arrived (called from any thread)."""

    def phase_ended(self, ph: Phase) -> None:
        """The phase closed (called in the thread that opened it)."""


class NullReporter(Reporter):
    """The default: reports nothing, and says so (``active`` is False)."""

    active = False


@dataclass(frozen=True)
class Event:
    """One call a :class:`RecordingReporter` saw: kind is start | update | end."""

    kind: str
    label: str
    elapsed: float
    incumbent: float | None
    bound: float | None
    detail: str


class RecordingReporter(Reporter):
    """Keeps every event in ``events`` (for tests and programmatic monitoring).

    >>> rec = RecordingReporter()
    >>> with reporting(rec), phase("demo") as ph:
    ...     ph.update(incumbent=3, detail="2 states")
    >>> rec.events[1].incumbent, rec.events[1].detail, rec.incumbents("demo")
    (3.0, '2 states', [3.0])
    """

    def __init__(self, clock: Clock | None = None):
        super().__init__(clock)
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def _add(self, kind: str, ph: Phase) -> None:
        inc, bound, detail = ph.snapshot()
        with self._lock:
            self.events.append(Event(kind, ph.label, ph.elapsed(), inc, bound, detail))

    def phase_started(self, ph: Phase) -> None:
        self._add("start", ph)

    def phase_updated(self, ph: Phase) -> None:
        self._add("update", ph)

    def phase_ended(self, ph: Phase) -> None:
        self._add("end", ph)

    def incumbents(self, label: str | None = None) -> list[float]:
        """The incumbents reported by updates (of the phase ``label``, or of all)."""
        with self._lock:
            return [e.incumbent for e in self.events
                    if e.kind == "update" and e.incumbent is not None and label in (None, e.label)]

    def bounds(self, label: str | None = None) -> list[float]:
        """The bounds reported by updates (of the phase ``label``, or of all)."""
        with self._lock:
            return [e.bound for e in self.events
                    if e.kind == "update" and e.bound is not None and label in (None, e.label)]


NULL = NullReporter()
_REPORTER: contextvars.ContextVar[Reporter] = contextvars.ContextVar("dfopt_reporter", default=NULL)
_PHASE: contextvars.ContextVar[Phase | None] = contextvars.ContextVar("dfopt_phase", default=None)


def current() -> Reporter:
    """The reporter of this context (a :class:`NullReporter` unless :func:`reporting` set one).

    >>> current().active
    False
    """
    return _REPORTER.get()


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Make ``reporter`` the current reporter inside the ``with`` block (this thread / task).

    >>> rec = RecordingReporter()
    >>> with reporting(rec):
    ...     current() is rec
    True
    >>> current() is rec
    False
    """
    if not isinstance(reporter, Reporter):
        from dfopt.errors import InstanceError

        raise InstanceError(f"reporting: expected a dfopt.progress.Reporter, got {type(reporter).__name__}; "
                            "subclass Reporter or use make_reporter(stream)")
    token = _REPORTER.set(reporter)
    try:
        yield reporter
    finally:
        _REPORTER.reset(token)


# ---------------------------------------------------------------------------------- phases
class Phase:
    """One open solve: label, time limit, scale, and the latest incumbent / bound / detail.

    Made by :func:`phase`; solver code calls :meth:`update`, possibly from another thread.
    """

    def __init__(self, label: str, time_limit: float | None, scale: float, numbers: bool,
                 parent: Phase | None, reporter: Reporter):
        self.label = label
        self.time_limit = time_limit
        self.scale = float(scale)
        self.numbers = numbers
        self.parent = parent
        self.reporter = reporter
        self.clock = reporter.clock
        self.started = self.clock()
        self.ended: float | None = None
        self.incumbent: float | None = None
        self.bound: float | None = None
        self.detail = ""
        self._lock = threading.Lock()
        self._live = self._compute_live()

    def _compute_live(self) -> bool:
        if not self.reporter.active:
            return False
        p = self.parent
        while p is not None:
            if not p.numbers:
                return False
            p = p.parent
        return True

    @property
    def live(self) -> bool:
        """True when the numbers of this phase reach an active reporter (hooks are worth it)."""
        return self._live and self.ended is None

    @property
    def top(self) -> bool:
        """True for an outermost phase (the one the reporter sees)."""
        return self.parent is None

    def elapsed(self, now: float | None = None) -> float:
        """Seconds since the phase opened (until it closed, once closed)."""
        end = self.ended if self.ended is not None else (self.clock() if now is None else now)
        return max(0.0, end - self.started)

    @property
    def gap(self) -> float | None:
        """Relative gap of the latest incumbent and bound (see :func:`dfopt.results.relative_gap`)."""
        inc, bound, _ = self.snapshot()
        return relative_gap(inc, bound)

    def snapshot(self) -> tuple[float | None, float | None, str]:
        """(incumbent, bound, detail), read together."""
        with self._lock:
            return self.incumbent, self.bound, self.detail

    def update(self, incumbent: float | None = None, bound: float | None = None,
               detail: str | None = None) -> None:
        """Report the latest incumbent and / or bound (in this phase's raw units: they are
        multiplied by ``scale``) and / or a short free-text ``detail`` (``"120 states"``).
        Non-finite numbers are ignored; so is everything once the phase closed."""
        if not self._live or self.ended is not None:
            return
        inc = _scaled(incumbent, self.scale)
        bnd = _scaled(bound, self.scale)
        if self.parent is not None:
            if inc is not None or bnd is not None or detail is not None:
                self.parent.update(inc, bnd, detail)
            return
        with self._lock:
            if inc is not None:
                self.incumbent = inc
            if bnd is not None:
                self.bound = bnd
            if detail is not None:
                self.detail = detail
        self.reporter.phase_updated(self)

    def limit_reached(self) -> bool:
        """Whether the phase ran (about) as long as its time limit."""
        if self.time_limit is None:
            return False
        return self.elapsed() >= 0.95 * self.time_limit - 0.01

    def __repr__(self) -> str:
        return f"Phase({self.label!r}, {format_phase(self)!r})"


def _scaled(value, scale: float) -> float | None:
    if value is None:
        return None
    v = float(value) * scale
    return v if math.isfinite(v) else None


@contextlib.contextmanager
def phase(label: str, time_limit: float | None = None, scale: float = 1.0,
          numbers: bool = True) -> Iterator[Phase]:
    """Open a phase around a solve; yields the :class:`Phase` to :meth:`~Phase.update`.

    ``time_limit`` (seconds) is shown next to the elapsed time; ``scale`` converts the reported
    numbers into the problem's units (value x scale); ``numbers=False`` drops the numbers of the
    phases opened inside this one (it reports its own). Inside another phase, the new phase is
    not shown: its numbers go to the parent.

    >>> rec = RecordingReporter()
    >>> with reporting(rec), phase("search", 10, numbers=False) as outer:
    ...     with phase("leaf model", 1) as leaf:
    ...         leaf.update(incumbent=99)          # dropped: the search reports its own numbers
    ...     outer.update(incumbent=7)
    >>> rec.incumbents(), [e.kind for e in rec.events]
    ([7.0], ['start', 'update', 'end'])
    """
    parent = _PHASE.get()
    reporter = parent.reporter if parent is not None else current()
    ph = Phase(str(label), None if time_limit is None else float(time_limit), scale, numbers, parent, reporter)
    token = _PHASE.set(ph)
    if ph.top:
        reporter.phase_started(ph)
    try:
        yield ph
    finally:
        _PHASE.reset(token)
        ph.ended = ph.clock()
        if ph.top:
            reporter.phase_ended(ph)


def current_phase() -> Phase | None:
    """The innermost open phase of this context, if any."""
    return _PHASE.get()


def update(incumbent: float | None = None, bound: float | None = None, detail: str | None = None) -> None:
    """Report to the innermost open phase (nothing happens without one)."""
    ph = _PHASE.get()
    if ph is not None:
        ph.update(incumbent, bound, detail)


# ------------------------------------------------------------------------------ formatting
def format_number(value: float | None) -> str:
    """Short text of a number: integers (and anything from 1000 up) without decimals.

    >>> format_number(544776.06), format_number(0.81234), format_number(None)
    ('544776', '0.8123', '-')
    """
    if value is None:
        return "-"
    if float(value).is_integer() or abs(value) >= 1000:
        return f"{round(value):d}"
    return f"{value:.4g}"


def format_phase(ph: Phase, now: float | None = None) -> str:
    """``label  12.3/60 s  incumbent 10  bound 8  gap 20.00%  detail`` (missing parts left out)."""
    limit = f"/{ph.time_limit:g}" if ph.time_limit is not None else ""
    return "  ".join([ph.label, f"{ph.elapsed(now):.1f}{limit} s", *_numbers(ph)])


def _numbers(ph: Phase) -> list[str]:
    inc, bound, detail = ph.snapshot()
    parts = []
    if inc is not None:
        parts.append(f"incumbent {format_number(inc)}")
    if bound is not None:
        parts.append(f"bound {format_number(bound)}")
    gap = relative_gap(inc, bound)
    if gap is not None:
        parts.append(f"gap {gap:.2%}")
    if detail:
        parts.append(detail)
    return parts


# --------------------------------------------------------------------------- stream output
class _StreamReporter(Reporter):
    """Shared machinery: the open phases, a lock, and a daemon ticker thread that calls
    :meth:`tick` every ``interval`` seconds while a phase is open (``ticker=False``: the caller
    calls :meth:`tick`, as tests do with a fake clock)."""

    interval = 0.25

    def __init__(self, stream: TextIO | None = None, clock: Clock | None = None, ticker: bool = True,
                 interval: float | None = None):
        super().__init__(clock)
        self.stream = stream if stream is not None else sys.stderr
        self.ticker = ticker
        if interval is not None:
            self.interval = float(interval)
        self._lock = threading.RLock()
        self._open: list[Phase] = []
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def phase_started(self, ph: Phase) -> None:
        with self._lock:
            self._open.append(ph)
            self._on_start(ph)
            if self.ticker and self._thread is None:
                self._stop = threading.Event()
                self._thread = threading.Thread(target=self._run, args=(self._stop,),
                                                name="dfopt-progress", daemon=True)
                self._thread.start()

    def phase_updated(self, ph: Phase) -> None:
        with self._lock:
            if ph in self._open:
                self._on_update(ph)

    def phase_ended(self, ph: Phase) -> None:
        thread = None
        with self._lock:
            if ph in self._open:
                self._open.remove(ph)
            if not self._open and self._thread is not None:
                thread, self._thread = self._thread, None
                assert self._stop is not None  # made with the thread
                self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)
        with self._lock:
            self._on_end(ph)

    def tick(self) -> None:
        """Refresh the output for the current time (the ticker thread calls this)."""
        with self._lock:
            if self._open:
                self._on_tick(self.clock())

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            try:
                self.tick()
            except (OSError, ValueError):   # the stream closed under us: stop quietly
                return

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):    # the terminal went away (closed pipe or stream): progress is optional
            return

    def _on_start(self, ph: Phase) -> None: ...
    def _on_update(self, ph: Phase) -> None: ...
    def _on_tick(self, now: float) -> None: ...
    def _on_end(self, ph: Phase) -> None: ...


class TerminalReporter(_StreamReporter):
    """One status line on a terminal, rewritten in place (``\\r`` + clear to end of line) and
    erased when the phase ends. Shows the most recently opened phase; cut to ``width`` columns
    (default: the terminal's width) so that it never wraps.

    >>> import io
    >>> out = io.StringIO()
    >>> t = [0.0]
    >>> rep = TerminalReporter(out, clock=lambda: t[0], ticker=False, width=80)
    >>> with reporting(rep), phase("placement exact", 60) as ph:
    ...     t[0] = 2.0
    ...     ph.update(incumbent=10, bound=8)
    ...     rep.tick()
    ...     out.getvalue().split("\\r")[-1]
    '\\x1b[Kplacement exact  2.0/60 s  incumbent 10  bound 8  gap 20.00%'
    >>> out.getvalue().endswith("\\r\\x1b[K")
    True
    """

    CLEAR = "\r\x1b[K"

    def __init__(self, stream: TextIO | None = None, clock: Clock | None = None, ticker: bool = True,
                 interval: float | None = None, width: int | None = None):
        super().__init__(stream, clock, ticker, interval)
        self.width = width
        self._shown = False
        self._last_draw = -math.inf

    def _columns(self) -> int:
        if self.width is not None:
            return max(10, int(self.width))
        return max(10, shutil.get_terminal_size((100, 24)).columns)

    def _draw(self, now: float) -> None:
        ph = self._open[-1]
        line = format_phase(ph, now)[: self._columns() - 1]
        self._write(self.CLEAR + line)
        self._shown = True
        self._last_draw = now

    def _on_start(self, ph: Phase) -> None:
        self._draw(self.clock())

    def _on_update(self, ph: Phase) -> None:
        now = self.clock()
        if now - self._last_draw >= self.interval:   # many incumbents a second: draw a few
            self._draw(now)

    def _on_tick(self, now: float) -> None:
        self._draw(now)

    def _on_end(self, ph: Phase) -> None:
        if self._open:
            self._draw(self.clock())
        elif self._shown:
            self._write(self.CLEAR)
            self._shown = False


class LogReporter(_StreamReporter):
    """Plain lines for logs and pipes: nothing for a phase shorter than ``quiet`` seconds, then
    a line at ``quiet`` and every ``every`` seconds (never two within ``min_gap`` seconds), and a
    final line when a phase that printed anything ends (it says when the time limit was reached).

    >>> import io
    >>> out, t = io.StringIO(), [0.0]
    >>> rep = LogReporter(out, clock=lambda: t[0], ticker=False)
    >>> with reporting(rep), phase("mapping exact", 60) as ph:
    ...     for t[0] in (1.0, 4.0, 10.0, 19.5, 60.0):
    ...         ph.update(incumbent=100 - t[0], bound=50)
    ...         rep.tick()
    >>> print(out.getvalue(), end="")
    [progress] mapping exact  4.0/60 s  incumbent 96  bound 50  gap 47.92%
    [progress] mapping exact  19.5/60 s  incumbent 80.5  bound 50  gap 37.89%
    [progress] mapping exact  60.0/60 s  incumbent 40  bound 50  gap 25.00%
    [progress] mapping exact: time limit reached after 60.0 s  incumbent 40  bound 50  gap 25.00%
    """

    interval = 0.5
    PREFIX = "[progress] "

    def __init__(self, stream: TextIO | None = None, clock: Clock | None = None, ticker: bool = True,
                 interval: float | None = None, quiet: float = 3.0, every: float = 15.0, min_gap: float = 1.0):
        super().__init__(stream, clock, ticker, interval)
        self.quiet, self.every, self.min_gap = float(quiet), float(every), float(min_gap)
        self._printed: dict[int, float] = {}     # id(phase) -> when its last line was printed
        self._last_line = -math.inf

    def _due(self, ph: Phase, now: float) -> bool:
        if ph.elapsed(now) < self.quiet or now - self._last_line < self.min_gap:
            return False
        last = self._printed.get(id(ph))
        return last is None or now - last >= self.every

    def _line(self, ph: Phase, now: float) -> None:
        self._write(self.PREFIX + format_phase(ph, now) + "\n")
        self._printed[id(ph)] = self._last_line = now

    def _on_update(self, ph: Phase) -> None:
        self._on_tick(self.clock())

    def _on_tick(self, now: float) -> None:
        for ph in list(self._open):
            if self._due(ph, now):
                self._line(ph, now)

    def _on_end(self, ph: Phase) -> None:
        if self._printed.pop(id(ph), None) is None:
            return
        how = "time limit reached after" if ph.limit_reached() else "done in"
        self._write(self.PREFIX + "  ".join([f"{ph.label}: {how} {ph.elapsed():.1f} s", *_numbers(ph)]) + "\n")
        self._last_line = self.clock()


def make_reporter(stream: TextIO | None = None, quiet: bool = False) -> Reporter:
    """The reporter for ``stream`` (default: stderr): none when ``quiet``, a
    :class:`TerminalReporter` on a terminal, else a :class:`LogReporter`.

    >>> import io
    >>> type(make_reporter(io.StringIO())).__name__, make_reporter(quiet=True).active
    ('LogReporter', False)
    """
    if quiet:
        return NullReporter()
    stream = stream if stream is not None else sys.stderr
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        tty = False
    return TerminalReporter(stream) if tty else LogReporter(stream)
