"""The measured run time of a schedule's generated C (``problem: schedule``), as an objective.

One :class:`RuntimeMeasure` holds one schedule instance (a PolyBench kernel of
``instances/schedule/``) and measures option sets of the scheduler: each set is solved
(:func:`dfopt.api.solve_instance`, any option of :class:`dfopt.models.schedule.Options`:
``strategy``, ``tiling``, ``wavefront``, ``fusion``, ``auto_vectorize``, ``formulation``, ...), its
C generated (:func:`dfopt.codegen.poly.program_c` around the solution's ``schedule.code``), checked
and timed. ``benchmarks/schedule_runtime.py`` measures its tables with it.

Method
------
* **Original**: the program's own 2d+1 order (``program.schedule``) as sequential C (no OpenMP
  pragma); its outputs are the reference.
* **Check** first: the C is compiled with ``gcc -O2 -ffp-contract=off -fopenmp`` in ``check``
  mode at the ``mini`` dataset, run with ``threads`` threads (default 2), and the raw bytes of
  every array must equal the original's exactly; the same again at ``small`` (PolyBench's mini
  extents, 16 to 60, are about one tile of 32; the small ones, 40 to 180, make several tiles and
  partial ones). A dataset the program does not define is skipped. A mismatch is an error at
  stage ``check mini`` / ``check small`` and the code is never timed.
* **Time**: ``gcc -O3 -fopenmp`` (no ``-march=native``, no ``-ffast-math``), ``time`` mode at
  ``dataset``, ``OMP_NUM_THREADS=threads``: the program prints the wall time of
  ``kernel_body()`` alone (``omp_get_wtime``, after the thread team is started), and a checksum
  of all arrays (kept as ``checksum``: a legal schedule gives the original's bit for bit, since
  without FMA and fast-math gcc keeps the operation order). ``repeats`` runs (default 3), fewer
  when one run takes more than ``max_run_s`` (default 20 s): that run is recorded and no more are
  made. A run is killed after ``timeout_s`` (default 300 s), an error at stage ``run``.
  :meth:`RuntimeMeasure.measure_all` interleaves its codes' runs (round ``r`` runs every code once)
  so slow drifts of the machine hit them alike. ``min`` and ``median`` of the runs are kept.
* **Another compiler on the original**: an :class:`OriginalBuild` in place of an option set is
  the original order compiled by another compiler with extra flags (LLVM Polly: ``clang -O3
  -mllvm -polly -mllvm -polly-parallel -fopenmp``, the polyhedral optimiser a user would run
  instead); it is checked against the (default compiler's) original like any code.
* **One measurement per code**: option sets whose generated kernel C is identical (same SHA-1,
  ``code_hash``; the rest of the C file follows from the program and the dataset) share one check
  and one timing; each set is still solved (its own ``solve_s``).
  The same option set asked again is neither solved nor measured again.

Nothing raises for a bad option set: a :class:`~dfopt.errors.DfoptError` of the solver, a failed
solution check, a compile or run failure and a wrong output become the ``error`` of the
:class:`Measurement`, named by its ``stage`` (one of :data:`STAGES`). Only a missing compiler, a
bad argument of the constructor and a measure after :meth:`~RuntimeMeasure.close` raise.

Caveats: on a 2-core machine the parallel speedup is at most ~2x from threads; other load shows
as noise (min of a few runs is a few percent off, more for kernels that run in milliseconds).

>>> from dfopt.instance import load
>>> with RuntimeMeasure(load("instances/schedule/jacobi-1d.json"), "mini", repeats=1) as rt:
...     m = rt.measure({"strategy": "pluto", "tiling": 16})
...     rt.original().checked, m.checked, m.error, len(m.seconds)
(True, True, None, 1)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dfopt.api import solve_instance
from dfopt.codegen.poly import CompilerNotFoundError, RunError, compile_c, find_compiler, program_c, run
from dfopt.errors import DfoptError, InstanceError

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution

__all__ = ["RuntimeMeasure", "Measurement", "OriginalBuild", "STAGES", "CHECK_FLAGS", "TIME_FLAGS", "CHECK_DATASETS"]

CHECK_FLAGS = ("-O2", "-ffp-contract=off")   # + -fopenmp
TIME_FLAGS = ("-O3",)                        # + -fopenmp
CHECK_DATASETS = ("mini", "small")
STAGES = ("solve", "check mini", "check small", "compile", "run")
CHECK_TIMEOUT_S = 300.0      # compile and run of one check binary
COMPILE_TIMEOUT_S = 600.0    # compile of one timing binary
_DETAIL = 300                # characters of an error message kept


@dataclass(frozen=True)
class Measurement:
    """What became of one option set (or of the original order).

    ``seconds``: the kernel time of every timed run; ``checked``: every check dataset passed;
    ``error``: None, or the failure, prefixed by its ``stage`` (``"solve"``, ``"check mini"``,
    ``"check small"``, ``"compile"``, ``"run"``); ``checks``: ``(dataset, ok)`` pairs in check
    order; ``code_hash``: 12 hex digits of the SHA-1 of the kernel C (of ``"original:" +
    schedule`` for the original; None when the solve failed); ``solve_s``: wall time of the
    solve (None for the original); ``checksum``: the time-mode checksum of the last run;
    ``schedule`` / ``tiled_schedule``: the solution's maps; ``solution``: the checked
    :class:`~dfopt.solution.Solution` of this option set (None for the original and when the solve
    raised; not compared, not in :meth:`to_json`). A run error after some runs keeps the runs.
    """

    dataset: str
    seconds: tuple[float, ...] = ()
    checked: bool = False
    error: str | None = None
    stage: str | None = None
    checks: tuple[tuple[str, bool], ...] = ()
    code_hash: str | None = None
    solve_s: float | None = None
    checksum: str | None = None
    schedule: str | None = None
    tiled_schedule: str | None = None
    solution: Solution | None = field(default=None, compare=False, repr=False)

    @property
    def min(self) -> float | None:
        """The least run time, or None without runs."""
        return min(self.seconds) if self.seconds else None

    @property
    def median(self) -> float | None:
        """The median run time, or None without runs."""
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def ok(self) -> bool:
        """Checked, timed, and no error."""
        return self.error is None and self.checked and bool(self.seconds)

    def to_json(self) -> dict:
        """A JSON object of every field and of ``min`` and ``median``."""
        return {"dataset": self.dataset, "seconds": list(self.seconds), "min": self.min, "median": self.median,
                "checked": self.checked, "checks": dict(self.checks), "error": self.error, "stage": self.stage,
                "code_hash": self.code_hash, "solve_s": self.solve_s, "checksum": self.checksum,
                "schedule": self.schedule, "tiled_schedule": self.tiled_schedule}


@dataclass(frozen=True)
class OriginalBuild:
    """The original order built by ``compiler`` with ``flags`` added to the check and time flags
    (a measure of another tool on the same C, e.g. LLVM Polly)."""

    compiler: str
    flags: tuple[str, ...] = ()


@dataclass
class _Code:
    """One distinct generated C: its check results, timing binary and runs (shared by option sets)."""

    key: str
    schedule: str
    kernel: str | None                     # the solution's kernel C; None: the original, sequential
    build: OriginalBuild | None = None     # another compiler and flags than the measure's
    checks: dict[str, bool] = field(default_factory=dict)
    checked: bool = False                  # the check stage ran (passed or not)
    error: str | None = None
    stage: str | None = None
    binary: Path | None = None
    seconds: list[float] = field(default_factory=list)
    checksum: str | None = None
    done: bool = False

    def fail(self, stage: str, detail: str) -> None:
        self.stage, self.error = stage, f"{stage}: {detail}"

    @property
    def pending(self) -> bool:
        return self.error is None and self.binary is not None and not self.done


@dataclass
class _Trial:
    """One option set after its solve: the code it gave, or the solve's error."""

    solve_s: float | None = None
    schedule: str | None = None
    tiled_schedule: str | None = None
    code: _Code | None = None
    error: str | None = None
    solution: Solution | None = None


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _detail(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err)[:_DETAIL]}"


def _options_key(options: dict) -> str:
    return json.dumps(options, sort_keys=True, default=repr)


class RuntimeMeasure:
    """Solve, check and time option sets of one schedule ``instance`` (see the module docstring).

    ``dataset``: the timing dataset, one of the program's ``sizes`` (PolyBench's mini, small,
    medium, large); ``repeats``: timed runs per code; ``threads``: ``OMP_NUM_THREADS`` of every
    run (checks too); ``max_run_s``: after a run longer than this no more runs of that code;
    ``timeout_s``: a run is killed after this; ``compiler``: the C compiler (default
    :func:`~dfopt.codegen.poly.find_compiler`; :class:`~dfopt.codegen.poly.CompilerNotFoundError`
    when there is none). The binaries go to a temporary folder this object owns, removed by
    :meth:`close` (or at the end of a ``with`` block).

    >>> from dfopt.instance import load
    >>> rt = RuntimeMeasure(load("instances/schedule/atax.json"), "mini", repeats=1)
    >>> a, b = rt.measure_all([{"strategy": "pluto"}, {"strategy": "pluto", "reorder": "contiguity"}])
    >>> a.code_hash == b.code_hash, a.seconds == b.seconds, a.solve_s is not None, b.solve_s is not None
    (True, True, True, True)
    >>> rt.close()
    """

    def __init__(self, instance: Instance, dataset: str = "large", repeats: int = 3, *, threads: int = 2,
                 max_run_s: float = 20.0, timeout_s: float = 300.0, compiler: str | None = None):
        program = instance.program
        if instance.problem != "schedule" or program is None:
            raise InstanceError(f"expected an instance of problem schedule with a program, got problem "
                                f"{instance.problem!r}", pointer="/problem")
        if not program.schedule:
            raise InstanceError("expected the program's original order, the reference of every check",
                                pointer="/program/schedule")
        if dataset not in program.sizes:
            raise InstanceError(f"expected a dataset of the program, one of {', '.join(program.sizes) or 'none'}; "
                                f"got {dataset!r}", pointer="/program/sizes")
        for name, value in (("repeats", repeats), ("threads", threads)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InstanceError(f"expected an integer >= 1, got {value!r}", pointer=f"argument {name}")
        for name, limit in (("max_run_s", max_run_s), ("timeout_s", timeout_s)):
            if not limit > 0:
                raise InstanceError(f"expected a positive number of seconds, got {limit!r}",
                                    pointer=f"argument {name}")
        self.compiler = _compiler(compiler)
        self.instance, self.program, self.dataset = instance, program, dataset
        self.repeats, self.threads = repeats, threads
        self.max_run_s, self.timeout_s = float(max_run_s), float(timeout_s)
        self._tmp: tempfile.TemporaryDirectory | None = tempfile.TemporaryDirectory(prefix="dfopt-runtime-")
        self.workdir = Path(self._tmp.name)
        self._codes: dict[str, _Code] = {}
        self._trials: dict[str, _Trial] = {}
        self._reference: dict[str, bytes] = {}
        schedule = program.schedule
        self._original = _Trial(schedule=schedule, code=self._code(_hash("original:" + schedule), schedule, None))

    # -- the public steps ------------------------------------------------------------------------

    def original(self) -> Measurement:
        """The program's own order, sequential: checked (the reference) and timed; cached."""
        return self.measure_all([None])[0]

    def measure(self, options: dict) -> Measurement:
        """Solve with the schedule ``options`` (keywords of :func:`dfopt.api.solve_instance`), check
        the generated C against the original and time it; never raises for a bad option set."""
        return self.measure_all([options])[0]

    def measure_all(self, option_sets: Sequence[dict | OriginalBuild | None], *, timeout_s: float | None = None,
                    on_run: Callable[[tuple[int, ...], float], None] | None = None) -> list[Measurement]:
        """:meth:`measure` for every option set (None: the original; an :class:`OriginalBuild`:
        the original by another compiler), their runs interleaved.

        All sets are solved and checked first, then each distinct code is compiled and the codes
        are run in rounds (each round runs every code not done once). ``timeout_s`` overrides the
        constructor's per-run kill limit; ``on_run(indices, seconds)`` is called after every run
        with the positions in ``option_sets`` of the sets that share that code.
        """
        self._open()
        trials = [self._original if o is None else self._built(o) if isinstance(o, OriginalBuild) else self._trial(o)
                  for o in option_sets]
        codes: list[_Code] = []
        for t in trials:
            if t.code is not None and t.code not in codes:
                codes.append(t.code)
        for c in codes:
            self._check(c)
        for c in codes:
            self._compile(c)
        limit = self.timeout_s if timeout_s is None else float(timeout_s)
        while any(c.pending for c in codes):
            for c in codes:
                if c.pending and self._run(c, limit) and on_run is not None:
                    on_run(tuple(i for i, t in enumerate(trials) if t.code is c), c.seconds[-1])
        return [self._measurement(t) for t in trials]

    def probe(self, timeout_s: float) -> float | None:
        """One timed run of the original (checked and compiled first) with its own kill limit,
        counted as the first of its ``repeats``: whether ``dataset`` is affordable.

        Returns its seconds (the first run's when the original was timed already); ``math.inf``
        when the run failed or timed out (the original's measurement then has the error); None when
        the original failed before running (its check or compile).
        """
        self._open()
        code = self._original.code
        assert code is not None   # set in __init__
        self._check(code)
        self._compile(code)
        if code.seconds:
            return code.seconds[0]
        if code.binary is None or code.error is not None:
            return None
        return code.seconds[-1] if self._run(code, float(timeout_s)) else math.inf

    def close(self) -> None:
        """Remove the working folder (binaries and C files)."""
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        for c in self._codes.values():
            c.binary = None

    def __enter__(self) -> RuntimeMeasure:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- solve, check, compile, run --------------------------------------------------------------

    def _open(self) -> None:
        if self._tmp is None:
            raise DfoptError("this RuntimeMeasure is closed (its binaries are removed); make a new one")

    def _code(self, key: str, schedule: str, kernel: str | None) -> _Code:
        if key not in self._codes:
            self._codes[key] = _Code(key, schedule, kernel)
        return self._codes[key]

    def _built(self, build: OriginalBuild) -> _Trial:
        """The original order under another compiler (its binary is checked like any code)."""
        key = _options_key({"build": [build.compiler, *build.flags]})
        if key not in self._trials:
            reference = self._original.code
            assert reference is not None   # set in __init__
            schedule, compiler = reference.schedule, _compiler(build.compiler)
            code = self._code(_hash(f"original:{compiler}:{build.flags}:{schedule}"), schedule, None)
            code.build = OriginalBuild(compiler, tuple(build.flags))
            self._trials[key] = _Trial(schedule=schedule, code=code)
        return self._trials[key]

    def _flags(self, code: _Code, flags: tuple) -> tuple[str, tuple]:
        """(compiler, flags) of ``code``'s binaries."""
        if code.build is None:
            return self.compiler, flags
        return code.build.compiler, flags + code.build.flags

    def _trial(self, options: dict) -> _Trial:
        key = _options_key(options)
        if key not in self._trials:
            self._trials[key] = self._solve(options)
        return self._trials[key]

    def _solve(self, options: dict) -> _Trial:
        t0 = time.perf_counter()
        try:
            sol = solve_instance(self.instance, **options)
        except DfoptError as err:
            return _Trial(solve_s=time.perf_counter() - t0, error=f"solve: {_detail(err)}")
        trial = _Trial(solve_s=time.perf_counter() - t0, solution=sol)
        if not sol.ok:
            bad = "; ".join(f"{c.name} {c.details}" for c in sol.failed_checks)
            trial.error = f"solve: checks failed: {bad[:_DETAIL]}"
            return trial
        sec = sol.sections["schedule"]
        trial.schedule, trial.tiled_schedule = sec["map"], sec.get("tiled_map")
        text = trial.tiled_schedule or trial.schedule
        trial.code = self._code(_hash(sec["code"]), text, sec["code"])
        return trial

    def _source(self, code: _Code, dataset: str, mode: str) -> str:
        return program_c(self.program, code.schedule, dataset, mode=mode, kernel=code.kernel)

    def _check(self, code: _Code) -> None:
        """Compare ``code``'s check-mode output with the original's at each check dataset."""
        if code.checked:
            return
        reference = self._original.code
        assert reference is not None   # set in __init__
        if code is not reference:
            self._check(reference)
        code.checked = True
        for ds in CHECK_DATASETS:
            if ds not in self.program.sizes:
                continue
            stage = f"check {ds}"
            if code is not reference and ds not in self._reference:
                code.checks[ds] = False
                code.fail(stage, f"no reference: the original program failed ({reference.error})")
                return
            compiler, flags = self._flags(code, CHECK_FLAGS)
            try:
                binary = compile_c(self._source(code, ds, "check"), self.workdir, flags=flags, openmp=True,
                                   compiler=compiler, timeout=CHECK_TIMEOUT_S)
                out = run(binary, threads=self.threads, timeout=CHECK_TIMEOUT_S)
            except DfoptError as err:
                code.checks[ds] = False
                code.fail(stage, _detail(err))
                return
            if code is reference:
                self._reference[ds] = out
            ok = code.checks[ds] = out == self._reference[ds]
            if not ok:
                code.fail(stage, f"output differs from the original's ({len(out)} vs "
                                 f"{len(self._reference[ds])} bytes)")
                return

    def _compile(self, code: _Code) -> None:
        """The ``time``-mode binary of a code that passed its checks."""
        if code.error is not None or code.binary is not None or not code.checked:
            return
        compiler, flags = self._flags(code, TIME_FLAGS)
        try:
            code.binary = compile_c(self._source(code, self.dataset, "time"), self.workdir, flags=flags,
                                    openmp=True, compiler=compiler, timeout=COMPILE_TIMEOUT_S)
        except DfoptError as err:
            code.fail("compile", _detail(err))

    def _run(self, code: _Code, timeout_s: float) -> bool:
        """One timed run; False (and the code's error set) when it failed."""
        assert code.binary is not None   # only pending codes run
        try:
            seconds, code.checksum = _run_timed(code.binary, self.threads, timeout_s)
        except RunError as err:
            code.fail("run", _detail(err))
            return False
        code.seconds.append(seconds)
        code.done = len(code.seconds) >= self.repeats or seconds > self.max_run_s
        return True

    def _measurement(self, trial: _Trial) -> Measurement:
        code = trial.code
        if code is None:
            return Measurement(self.dataset, error=trial.error, stage="solve", solve_s=trial.solve_s,
                               solution=trial.solution)
        return Measurement(self.dataset, seconds=tuple(code.seconds),
                           checked=bool(code.checks) and all(code.checks.values()), error=code.error,
                           stage=code.stage, checks=tuple(code.checks.items()), code_hash=code.key,
                           solve_s=trial.solve_s, checksum=code.checksum,
                           schedule=trial.schedule, tiled_schedule=trial.tiled_schedule, solution=trial.solution)


def _compiler(compiler: str | None) -> str:
    """The compiler's path: ``compiler`` if it is found, else :func:`find_compiler`."""
    if compiler is None:
        return find_compiler()
    path = shutil.which(compiler)
    if path is None:
        raise CompilerNotFoundError(f"C compiler {compiler!r} not found (not an executable on PATH or a path); "
                                    f"install gcc, or pass compiler=None to use $CC, gcc or cc")
    return path


def _run_timed(binary: Path, threads: int, timeout_s: float) -> tuple[float, str]:
    """(kernel seconds, checksum text) of one run of a ``time``-mode binary.

    Like :func:`dfopt.codegen.poly.run` but also keeps stderr, where the program prints its checksum.
    """
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        res = subprocess.run([str(binary)], capture_output=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired as err:
        raise RunError(f"{binary} timed out after {timeout_s:.0f} s") from err
    stderr = res.stderr.decode(errors="replace")
    if res.returncode != 0:
        raise RunError(f"{binary} failed with exit code {res.returncode}", stderr, res.returncode)
    try:
        seconds = float(res.stdout.decode().split()[0])
    except (IndexError, ValueError) as err:
        raise RunError(f"{binary} printed no time: {res.stdout[:80]!r}", stderr) from err
    return seconds, stderr.strip().rsplit(" ", 1)[-1]
