"""Benchmark suite files: which instances, formulations, solvers and seeds to run, and how.

A suite is a JSON object (see ``benchmarks/suites/``)::

    {"name": "fifo-small", "problem": "fifo",
     "instances": ["instances/fifo/*.json", "gen:fifo_random:n=10,seed=0"],
     "formulations": ["occupancy", "potentials"],
     "solvers": {"potentials": ["highs", "clarabel"], "*": [null]},
     "options": {"objective": "depth"}, "seeds": [0],
     "time_limit": {"search": 10, "*": 60}, "timeout": 180,
     "baseline": "occupancy",
     "metrics": {"total_depth": "fifo.total_depth"},
     "skip": [{"formulation": "paths", "min_kernels": 200}],
     "group_by": "size", "profile_metric": "total_depth"}

Instance entries are globs relative to the suite's root (the ``root`` field, relative to the suite
file; by default the nearest folder above the suite holding ``pyproject.toml`` or ``.git``) or
``gen:`` generator specs (:func:`dfopt.bench.generators.generate`). ``solvers`` maps a formulation
(or ``*``) to the solvers to try, null meaning the model's default. ``time_limit`` and ``timeout``
(the outer, process-level limit) are seconds, or objects keyed by formulation with a ``*``
default. A ``skip`` rule leaves out the runs that match all of its fields (``formulation``,
``solver``, ``instance`` glob, ``min_kernels``, ``max_kernels``). ``baseline`` is
``formulation`` or ``formulation:solver``.

>>> s = suite_from_dict({"problem": "fifo", "instances": ["gen:fifo_random:n=5,seed=0"],
...                      "formulations": ["flow"]}, name="demo")
>>> s.solvers_for("flow"), s.time_limit_for("flow"), s.baseline
([None], 60.0, 'flow')
"""

from __future__ import annotations

import fnmatch
import glob
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from dfopt.errors import InstanceError
from dfopt.io import StrPath

log = logging.getLogger(__name__)

SUITE_FIELDS = ("name", "description", "problem", "instances", "formulations", "solvers",
                "options", "seeds", "time_limit", "timeout", "baseline", "metrics", "skip",
                "group_by", "profile_metric", "root")
SKIP_FIELDS = ("formulation", "solver", "instance", "min_kernels", "max_kernels")
RUN_FIELDS = ("formulation", "solver", "seed", "time_limit")    # set per run, not in "options"
GEN_PREFIX = "gen:"
DEFAULT_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class InstanceRef:
    """Where one instance comes from: a file path, or a ``gen:`` spec."""

    kind: str               # "file" | "gen"
    ref: str                # absolute path, or the generator spec (without "gen:")

    def __str__(self) -> str:
        return self.ref if self.kind == "file" else GEN_PREFIX + self.ref


@dataclass(frozen=True)
class SkipRule:
    """Skip a run when every given field matches (None = any)."""

    formulation: str | None = None
    solver: str | None = None
    instance: str | None = None
    min_kernels: int | None = None
    max_kernels: int | None = None

    def matches(self, instance: str, n_kernels: int, formulation: str, solver: str | None) -> bool:
        """
        >>> SkipRule(formulation="paths", min_kernels=200).matches("x", 1000, "paths", None)
        True
        """
        return ((self.formulation is None or self.formulation == formulation)
                and (self.solver is None or self.solver == solver)
                and (self.instance is None or fnmatch.fnmatchcase(instance, self.instance))
                and (self.min_kernels is None or n_kernels >= self.min_kernels)
                and (self.max_kernels is None or n_kernels <= self.max_kernels))


@dataclass(frozen=True)
class Suite:
    """A validated suite; ``root`` is the folder instance globs are relative to."""

    name: str
    problem: str
    instances: tuple
    formulations: tuple
    root: Path
    solvers: dict = field(default_factory=lambda: {"*": [None]})
    options: dict = field(default_factory=dict)
    seeds: tuple = (0,)
    time_limit: float | dict = DEFAULT_TIME_LIMIT
    timeout: float | dict | None = None
    baseline: str = ""
    metrics: dict = field(default_factory=dict)
    skip: tuple = ()
    group_by: str | None = None
    profile_metric: str | None = None
    description: str = ""
    path: Path | None = None

    def solvers_for(self, formulation: str) -> list:
        return list(self.solvers.get(formulation, self.solvers.get("*", [None])))

    def time_limit_for(self, formulation: str) -> float:
        return float(_per_formulation(self.time_limit, formulation, DEFAULT_TIME_LIMIT))

    def timeout_for(self, formulation: str) -> float:
        """The outer limit; by default twice the time limit plus 30 s (start-up, checks)."""
        default = 2 * self.time_limit_for(formulation) + 30
        return float(_per_formulation(self.timeout, formulation, default))

    def skipped(self, instance: str, n_kernels: int, formulation: str, solver: str | None) -> bool:
        return any(r.matches(instance, n_kernels, formulation, solver) for r in self.skip)

    def instance_refs(self) -> list[InstanceRef]:
        """Expand the globs (sorted) and ``gen:`` specs; a glob without a match is logged."""
        refs: list[InstanceRef] = []
        for entry in self.instances:
            if entry.startswith(GEN_PREFIX):
                refs.append(InstanceRef("gen", entry[len(GEN_PREFIX):].strip()))
                continue
            pattern = entry if os.path.isabs(entry) else str(self.root / entry)
            matches = sorted(Path(p) for p in glob.glob(pattern, recursive=True))
            if not matches:
                log.warning("suite %s: instance pattern %r matches no file under %s",
                            self.name, entry, self.root)
            refs.extend(InstanceRef("file", str(p)) for p in matches if p.is_file())
        return refs


def _per_formulation(value, formulation: str, default):
    if value is None:
        return default
    if isinstance(value, dict):
        return value.get(formulation, value.get("*", default))
    return value


def load_suite(path: StrPath) -> Suite:
    """Read and validate a suite file; faults are :class:`InstanceError` with the field's pointer.

    >>> import tempfile, json, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "s.json")
    >>> _ = open(p, "w").write(json.dumps({"problem": "fifo", "root": ".",
    ...     "instances": ["gen:fifo_random:n=5,seed=0"], "formulations": ["flow"]}))
    >>> load_suite(p).name
    's'
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InstanceError(f"cannot read suite file {str(path)!r}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise InstanceError(f"suite {str(path)!r} is not JSON: {err.msg} at line {err.lineno}, "
                            f"column {err.colno}") from err
    return suite_from_dict(data, name=path.stem, path=path)


def suite_from_dict(data: object, name: str = "suite", path: Path | None = None) -> Suite:
    """Validate a suite object (see the module docstring); ``path`` anchors a relative root."""
    if not isinstance(data, dict):
        raise InstanceError(f"a suite is a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(SUITE_FIELDS))
    if unknown:
        raise InstanceError(f"unknown suite field {unknown[0]!r}; expected some of: "
                            f"{', '.join(SUITE_FIELDS)}", pointer=f"/{unknown[0]}")
    formulations = tuple(_str_list(data, "formulations", required=True))
    metrics = _metrics(data.get("metrics", {}))
    suite = Suite(
        name=_string(data, "name", default=name),
        description=_string(data, "description", default="", allow_empty=True),
        problem=_string(data, "problem"),
        instances=tuple(_str_list(data, "instances", required=True)),
        formulations=formulations,
        root=_root(data.get("root"), path),
        solvers=_solvers(data.get("solvers", {"*": [None]})),
        options=_object(data, "options"),
        seeds=tuple(_int_list(data.get("seeds", [0]), "/seeds")),
        time_limit=_seconds(data.get("time_limit", DEFAULT_TIME_LIMIT), "/time_limit"),
        timeout=_seconds(data["timeout"], "/timeout") if data.get("timeout") is not None else None,
        baseline=_string(data, "baseline", default=formulations[0]),
        metrics=metrics,
        skip=tuple(_skip_rule(r, i) for i, r in enumerate(_list(data, "skip"))),
        group_by=data.get("group_by"),
        profile_metric=data.get("profile_metric"),
        path=path,
    )
    _check_cross_refs(suite)
    return suite


def check_formulations(suite: Suite) -> None:
    """Compare the suite's formulations with the problem's (when its package can be imported).

    An unknown ``problem`` is an :class:`InstanceError` listing the known ones.
    """
    from dfopt.models.registry import get_problem

    try:
        valid = get_problem(suite.problem).formulation_names()
    except ImportError as err:
        log.warning("suite %s: cannot import the %s model to check formulations: %s",
                    suite.name, suite.problem, err)
        return
    if not valid:
        return
    for i, f in enumerate(suite.formulations):
        if f not in valid:
            raise InstanceError(f"unknown {suite.problem} formulation {f!r}; expected one of: "
                                f"{', '.join(sorted(valid))}", pointer=f"/formulations/{i}")


# -- field validators -------------------------------------------------------------------------

def _string(data: dict, key: str, default: str | None = None, allow_empty: bool = False) -> str:
    value = data.get(key, default)
    if value is None:
        raise InstanceError(f"suite field {key!r} is required", pointer=f"/{key}")
    if not isinstance(value, str) or not (value or allow_empty):
        raise InstanceError(f"expected a non-empty string, got {value!r}", pointer=f"/{key}")
    return value


def _list(data: dict, key: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise InstanceError(f"expected a list, got {type(value).__name__}", pointer=f"/{key}")
    return value


def _object(data: dict, key: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InstanceError(f"expected an object, got {type(value).__name__}", pointer=f"/{key}")
    return dict(value)


def _str_list(data: dict, key: str, required: bool = False) -> list[str]:
    if required and key not in data:
        raise InstanceError(f"suite field {key!r} is required", pointer=f"/{key}")
    values = _list(data, key)
    if required and not values:
        raise InstanceError("expected at least one entry, got an empty list", pointer=f"/{key}")
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v:
            raise InstanceError(f"expected a non-empty string, got {v!r}", pointer=f"/{key}/{i}")
    return values


def _int_list(values, pointer: str) -> list[int]:
    if not isinstance(values, list) or not values:
        raise InstanceError(f"expected a non-empty list of integers, got {values!r}", pointer=pointer)
    for i, v in enumerate(values):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InstanceError(f"expected an integer, got {v!r}", pointer=f"{pointer}/{i}")
    return values


def _positive(value, pointer: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InstanceError(f"expected a number of seconds > 0, got {value!r}", pointer=pointer)
    return float(value)


def _seconds(value, pointer: str):
    if isinstance(value, dict):
        return {k: _positive(v, f"{pointer}/{k}") for k, v in value.items()}
    return _positive(value, pointer)


def _solvers(value) -> dict:
    if not isinstance(value, dict):
        raise InstanceError(f"expected an object formulation -> [solver or null], got {value!r}",
                            pointer="/solvers")
    out = {}
    for key, solvers in value.items():
        if not isinstance(solvers, list) or not solvers:
            raise InstanceError(f"expected a non-empty list of solver names or null, got {solvers!r}",
                                pointer=f"/solvers/{key}")
        for i, s in enumerate(solvers):
            if s is not None and (not isinstance(s, str) or not s):
                raise InstanceError(f"expected a solver name or null, got {s!r}",
                                    pointer=f"/solvers/{key}/{i}")
        out[key] = list(solvers)
    return out


def _metrics(value) -> dict:
    if not isinstance(value, dict):
        raise InstanceError(f"expected an object name -> dotted path, got {value!r}", pointer="/metrics")
    for key, p in value.items():
        if not isinstance(p, str) or not p:
            raise InstanceError(f"expected a dotted path like 'fifo.total_depth', got {p!r}",
                                pointer=f"/metrics/{key}")
    return dict(value)


def _skip_rule(rule, index: int) -> SkipRule:
    pointer = f"/skip/{index}"
    if not isinstance(rule, dict) or not rule:
        raise InstanceError(f"expected an object with some of {', '.join(SKIP_FIELDS)}, got {rule!r}",
                            pointer=pointer)
    for key, value in rule.items():
        if key not in SKIP_FIELDS:
            raise InstanceError(f"unknown skip field {key!r}; expected some of: {', '.join(SKIP_FIELDS)}",
                                pointer=f"{pointer}/{key}")
        expect_int = key.endswith("_kernels")
        ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) if expect_int \
            else (isinstance(value, str) and bool(value))
        if not ok:
            kind = "an integer >= 0" if expect_int else "a non-empty string"
            raise InstanceError(f"expected {kind}, got {value!r}", pointer=f"{pointer}/{key}")
    return SkipRule(**rule)


def _root(value, path: Path | None) -> Path:
    base = path.resolve().parent if path is not None else Path.cwd()
    if value is not None:
        if not isinstance(value, str):
            raise InstanceError(f"expected a folder path, got {value!r}", pointer="/root")
        return (base / value).resolve()
    for folder in (base, *base.parents):
        if (folder / "pyproject.toml").exists() or (folder / ".git").exists():
            return folder
    return base


def _check_cross_refs(suite: Suite) -> None:
    base_formulation = suite.baseline.partition(":")[0]
    if base_formulation not in suite.formulations:
        raise InstanceError(f"baseline {suite.baseline!r} is not one of the suite's formulations: "
                            f"{', '.join(suite.formulations)}", pointer="/baseline")
    for key in suite.solvers:
        if key != "*" and key not in suite.formulations:
            raise InstanceError(f"solvers given for {key!r}, which is not one of the suite's "
                                f"formulations: {', '.join(suite.formulations)}", pointer=f"/solvers/{key}")
    if suite.profile_metric is not None and suite.profile_metric not in suite.metrics:
        raise InstanceError(f"profile_metric {suite.profile_metric!r} is not one of the metrics: "
                            f"{', '.join(suite.metrics) or 'none'}", pointer="/profile_metric")
    for key in suite.options:
        if key in RUN_FIELDS:
            raise InstanceError(f"option {key!r} is set per run by the suite's own fields; "
                                f"remove it from options", pointer=f"/options/{key}")
    if suite.group_by is not None and not isinstance(suite.group_by, str):
        raise InstanceError(f"expected 'size' or a record field name, got {suite.group_by!r}",
                            pointer="/group_by")
