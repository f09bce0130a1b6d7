"""A fuzz battery for the command line: mutated instances through ``dfopt validate`` and ``dfopt
solve``, mutated solutions through ``dfopt check``, each run in process with its output captured.

A mutation takes one value of the JSON document (any depth) and deletes it, changes its type,
replaces a number with an extreme or non-finite one, wraps it in deep nesting, gives a name an
odd spelling (a lone surrogate, empty, 5,000 characters, a slash, a NUL) or points a reference at
nothing, or duplicates a list item. A run is classified by its exit code; the findings are:

- ``internal``: exit 1 (an internal error) or an exception that escaped ``main``;
- ``validate-miss``: ``validate`` accepted an instance that ``solve`` then refused as bad input;
- ``timeout``: the run did not end within its budget (a SIGALRM stops it);
- ``accepted-tamper``: ``check`` accepted a solution whose decision or claims were changed.

:func:`battery` returns the records and the totals per problem kind; ``benchmarks/fuzz_battery.py``
runs a long battery and commits the totals, the tests a short one.

>>> import random
>>> doc = {"a": [1, 2], "b": {"c": "x"}}
>>> [p for p in pointers(doc)]
[('a',), ('a', 0), ('a', 1), ('b',), ('b', 'c')]
>>> mutant, what = mutate(doc, random.Random(3))
>>> what
'extreme /a/0'
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("delete", "type", "extreme", "nonfinite", "deep", "name", "dangling", "duplicate")
EXTREMES = (-1, 0, 2 ** 31, 2 ** 63, 2 ** 64 + 1, 10 ** 30, 1e308, -1e308, 1e23, 0.5, -0.0)
NAMES = ("\ud800", "", "a" * 5000, "a/b", "x y", "\u00e9t\u00e9", "0abc", "a\x00b", "%arg0", "main")
#: the keys of a solution that carry no claim a checker can refute: run metadata, the recorded
#: check results (``check`` recomputes them), and the bound (a lower one is as true)
FREE = {"wall_time_s", "stats", "description", "notes", "time_s", "total_time_s", "progress", "checks",
        "formulation", "solver", "seed", "bound", "limit_reached", "rejected"}


def pointers(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into ``doc`` (keys and list indices), depth first, parents before children."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from pointers(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*prefix, i)
            yield from pointers(v, (*prefix, i))


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _text(path: tuple) -> str:
    return "/" + "/".join(str(p) for p in path)


def mutate(doc: Any, rng: random.Random, kind: str | None = None) -> tuple[Any, str]:
    """One mutation of a copy of ``doc``: ``(mutant, "kind /path")``."""
    out = copy.deepcopy(doc)
    paths = list(pointers(out))
    if not paths:
        return out, "none"
    path = rng.choice(paths)
    parent, key = _get(out, path[:-1]), path[-1]
    value = parent[key]
    kind = kind or rng.choice(KINDS)
    if kind == "delete":
        del parent[key]
    elif kind == "type":
        parent[key] = rng.choice([v for v in ("x", 7, 2.5, True, None, [], {}, [1], {"k": 1})
                                  if type(v) is not type(value)])
    elif kind == "extreme":
        parent[key] = rng.choice(EXTREMES)
    elif kind == "nonfinite":
        parent[key] = rng.choice((math.nan, math.inf, -math.inf))
    elif kind == "deep":
        x: Any = value
        for _ in range(rng.choice((60, 600))):
            x = [x]
        parent[key] = x
    elif kind == "name":
        parent[key] = rng.choice(NAMES)
    elif kind == "dangling":
        parent[key] = "no_such_name" if isinstance(value, str) else [["no_such_name"]]
    elif kind == "duplicate":
        if isinstance(parent, list):
            parent.insert(key, copy.deepcopy(value))
        else:
            parent[key] = [copy.deepcopy(value), copy.deepcopy(value)]
    return out, f"{kind} {_text(path)}"


class _Timeout(Exception):
    pass


@dataclass
class Run:
    argv: list
    rc: int
    seconds: float
    err: str = ""
    escaped: str = ""

    @property
    def internal(self) -> bool:
        return self.rc == 1 or bool(self.escaped)


def run(argv: list, budget: float = 60.0) -> Run:
    """``dfopt <argv>`` in this process, its output captured; stopped by SIGALRM after ``budget``
    seconds (``rc`` -1)."""
    from dfopt.cli import main

    def alarm(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    out, err = io.StringIO(), io.StringIO()
    t = time.perf_counter()
    escaped = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main([str(a) for a in argv])
    except _Timeout:
        rc = -1
    except BaseException as exc:  # noqa: BLE001 - the battery records what escaped main
        rc, escaped = 1, f"{type(exc).__name__}: {exc}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return Run(list(map(str, argv)), rc, time.perf_counter() - t, err.getvalue()[-400:], escaped)


@dataclass
class Totals:
    runs: int = 0
    exit_codes: Counter = field(default_factory=Counter)
    findings: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict:
        return {"runs": self.runs, "exit_codes": dict(sorted(self.exit_codes.items())),
                "findings": dict(sorted(self.findings.items()))}


def _write(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8", errors="surrogatepass")


def battery(instances: list[Path], work: Path, per_instance: int = 10, seed: int = 0, solve: bool = True,
            solutions: bool = True, time_limit: float = 2.0, budget: float = 60.0) -> tuple[list[dict], dict]:
    """Mutants of every instance through validate (and solve), of its solution through check.
    Returns ``(records, totals per problem kind)``; a record is one finding."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    findings: list[dict] = []
    totals: dict[str, Totals] = {}

    def note(problem: str, r: Run, finding: str | None, what: str) -> None:
        t = totals.setdefault(problem, Totals())
        t.runs += 1
        t.exit_codes[r.rc] += 1
        if finding:
            t.findings[finding] += 1
            findings.append({"problem": problem, "finding": finding, "mutation": what, "argv": r.argv[:1],
                             "rc": r.rc, "err": r.escaped or r.err.strip()[-300:]})

    for n, path in enumerate(instances):
        doc = json.loads(path.read_text())
        problem = str(doc.get("problem"))
        flags = ["--time-limit", str(time_limit), "--quiet"]
        sol_path = work / f"{n}.sol.json"
        base = run(["solve", path, *flags, "-o", sol_path], budget) if solutions else None
        solution = json.loads(sol_path.read_text()) if base is not None and base.rc == 0 else None
        for k in range(per_instance):
            mutant, what = mutate(doc, rng)
            mpath = work / f"{n}.{k}.json"
            _write(mpath, mutant)
            v = run(["validate", mpath], budget)
            note(problem, v, "internal" if v.internal else "timeout" if v.rc == -1 else None, f"validate {what}")
            if solve:
                s = run(["solve", mpath, *flags], budget)
                miss = v.rc == 0 and s.rc == 2
                note(problem, s, "internal" if s.internal else "timeout" if s.rc == -1 else
                     "validate-miss" if miss else None, f"solve {what}")
            if solution is not None:
                tampered, twhat = mutate(solution, rng)
                tpath = work / f"{n}.{k}.sol.json"
                _write(tpath, tampered)
                c = run(["check", path, tpath], budget)
                key = twhat.split(" ", 1)[1].strip("/").split("/") if " " in twhat else []
                claim = bool(key) and key[0] not in ("format", "instance") and not FREE & set(key)
                accepted = c.rc == 0 and claim and json.dumps(tampered, allow_nan=True) != json.dumps(solution)
                note(problem, c, "internal" if c.internal else "timeout" if c.rc == -1 else
                     "accepted-tamper" if accepted else None, f"check {twhat}")
    return findings, {p: t.to_dict() for p, t in sorted(totals.items())}
