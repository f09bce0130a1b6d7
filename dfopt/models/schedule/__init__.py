"""Polyhedral scheduling (``problem: schedule``; PolyTOPS; docs/schedule.md).

Given a program (statements with isl domains, accesses, C bodies and the original order), find
a new execution order: one affine row per dimension and statement, legal for every memory-based
dependence, built outermost first by one integer program per row (:mod:`.scheduler`), configured
by a preset and overrides (:mod:`.config`). The formulations (``polytops``, ``isl``) are in
:mod:`.formulations`.

The decision is the schedule ``map`` (isl union map, one time length for all statements) and,
with ``tiling``, the ``tiled_map``. The section also has ``parallel`` (per dimension, no
dependence carried), ``scalar``, ``bands`` (permutable runs of loop dimensions),
``tiled_parallel``, ``vector`` and ``sequential`` dimensions from directives, ``code`` (C through
isl's AST builder with OpenMP pragmas), the directives dropped with warnings, and the
configuration used. The checker (:mod:`.checks`) re-derives legality, every flag and the code.

>>> import dfopt
>>> sol = dfopt.solve("instances/schedule/jacobi-1d.json")
>>> sol.decision.map
'[TSTEPS, N] -> { S0[t, i] -> [t, 2t + i, 0]; S1[t, i] -> [t, 1 + 2t + i, 1] }'
>>> sol.sections["schedule"]["parallel"], [b["dims"] for b in sol.sections["schedule"]["bands"]]
([False, False, False], [[0, 1]])
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import islpy as isl

from dfopt.errors import InstanceError
from dfopt.errors import Problem as Fault
from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.options import CommonOptions, option, where
from dfopt.models.schedule.checks import _configuration, check, checks
from dfopt.models.schedule.config import BASE, COSTS, FIELDS, FUSIONS, PRESETS, parse_config
from dfopt.models.schedule.decision import Schedule
from dfopt.models.schedule.formulations import ScheduleData, formulations, intra_band_order
from dfopt.models.schedule.problem import build_problem
from dfopt.models.schedule.summary import summary

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.program import Program
    from dfopt.solution import Solution

__all__ = ["PROBLEM", "Options", "Schedule", "schedule", "intra_band_order", "check", "checks"]

_JSON = "JSON"
_INT = {"type": "integer", "minimum": 0, "maximum": 1 << 20}
_DIMENSION = {"type": "object", "additionalProperties": False,
              "properties": {"costs": {"type": "array", "items": {"type": "string", "enum": list(COSTS)}},
                             "constraints": {"type": "array", "items": {"type": "string"}},
                             "fusion": {"oneOf": [{"type": "string", "enum": list(FUSIONS)},
                                                  {"type": "array", "items": {"type": "array",
                                                                              "items": {"type": "string"}}}]},
                             "coincidence": {"type": "boolean"}}}
_DIRECTIVE = {"type": "object", "additionalProperties": False, "required": ["statement", "loop", "kind"],
              "properties": {"statement": {"type": "string", "minLength": 1},
                             "loop": {"oneOf": [_INT, {"type": "string", "minLength": 1}]},
                             "kind": {"type": "string", "enum": ["vectorize", "parallel", "sequential"]}}}
_BOUNDS = {"type": "object", "additionalProperties": False,
           "properties": {"iterators": _INT, "parameters": _INT, "constants": _INT,
                          "negative": {"oneOf": [{"type": "boolean"}, {"const": "auto"}]}}}


@dataclass(frozen=True)
class Options(CommonOptions):
    """Scheduler options: the configuration fields of :mod:`.config` (``options.schedule``, flags
    with lists and objects as JSON, keywords) and ``config``, a JSON file with more of them (these
    options win). None means the preset's value."""

    config: str | None = option(None, "a JSON file with configuration fields", metavar="FILE")
    strategy: str | None = option(None, "preset: pluto, isl, feautrier or tensor (default pluto)",
                                  choices=tuple(PRESETS))
    costs: tuple | None = option(None, f"cost functions in lexicographic order ({', '.join(COSTS)})",
                                 schema={"type": "array", "items": {"type": "string", "enum": list(COSTS)}},
                                 metavar=_JSON)
    dimensions: tuple | None = option(None, "per loop dimension: costs, constraints, fusion, coincidence",
                                      schema={"type": "array", "items": _DIMENSION}, metavar=_JSON)
    constraints: tuple | None = option(None, "linear constraints on the coefficients, in PolyTOPS syntax "
                                             "(\"S0_it_0 = 0\")",
                                       schema={"type": "array", "items": {"type": "string"}}, metavar=_JSON)
    directives: tuple | None = option(None, "[{statement, loop, kind: vectorize|parallel|sequential}]",
                                      schema={"type": "array", "items": _DIRECTIVE}, metavar=_JSON)
    auto_vectorize: bool | None = option(None, "vectorise each statement's most stride-1 loop")
    bounds: dict | None = option(None, "coefficient bounds: iterators, parameters, constants, negative",
                                 schema=_BOUNDS, metavar=_JSON)
    fusion: str | None = option(None, "smart (default): fuse components only where a parallel row stays; "
                                      "max: fuse, distribute only when no row exists; min: distribute every SCC",
                                choices=FUSIONS)
    band: str | None = option(None, "permutable (tilable bands, Pluto) or dimension",
                              choices=("permutable", "dimension"))
    coincidence: str | None = option(None, "outer: first try a row that carries no dependence",
                                     choices=("outer", "none"))
    progression: str | None = option(None, "all: every statement gets an independent row per loop dimension; any",
                                     choices=("all", "any"))
    rar: bool | None = option(None, "bound read-after-read distances in the proximity cost")
    reorder: str | None = option(None, "contiguity: move the most stride-1 band member innermost; none",
                                 choices=("contiguity", "none"))
    tiling: object = option(None, "a tile size for every band member, or a list of sizes",
                            schema={"type": ["integer", "array"], "minimum": 1, "maximum": 1 << 20, "minItems": 1,
                                    "items": {"type": "integer", "minimum": 1, "maximum": 1 << 20}},
                            metavar=_JSON)
    wavefront: bool | None = option(None, "skew the outermost tile loop of each tiled band by the next one")


def _raw_config(options: Options) -> dict:
    raw: dict = {}
    if options.config:
        try:
            with open(options.config, encoding="utf-8") as f:
                raw = json.load(f)
        except OSError as exc:
            raise InstanceError(f"cannot read the schedule configuration {options.config}: {exc.strerror}",
                                pointer=where(options, "config")) from None
        except json.JSONDecodeError as exc:
            raise InstanceError(f"schedule configuration {options.config}: not JSON ({exc.msg} at line "
                                f"{exc.lineno})", pointer=where(options, "config")) from None
        if not isinstance(raw, dict):
            raise InstanceError(f"schedule configuration {options.config}: expected a JSON object",
                                pointer=where(options, "config"))
    for name in FIELDS:
        value = getattr(options, name)
        if value is not None:
            raw[name] = _thawed(value)
    return raw


def _thawed(value):
    return [_thawed(v) for v in value] if isinstance(value, tuple) else value


def _repointed(err: InstanceError, options: Options) -> InstanceError:
    """The configuration's errors, pointing at the flag or argument each field came from."""
    out = []
    for p in err.problems:
        if p.pointer.startswith(BASE + "/"):
            name, *parts = p.pointer[len(BASE) + 1:].split("/")
            p = Fault(where(options, name, *parts), p.message)
        out.append(p)
    return InstanceError(problems=out)


def prepare(instance: Instance, options: Options) -> ScheduleData:
    program = instance.program
    assert program is not None  # the driver checks the parts a problem needs
    if not program.statements:
        raise InstanceError("problem schedule needs a program with statements", pointer="/program/statements")
    iters = {}
    for s in program.statements:
        dom = isl.Set(s.domain)
        iters[s.name] = [dom.get_dim_name(isl.dim_type.set, j) for j in range(dom.dim(isl.dim_type.set))]
    try:
        config = parse_config(_raw_config(options), [s.name for s in program.statements], iters, len(program.params))
    except InstanceError as err:
        raise _repointed(err, options) from None
    t0 = time.perf_counter()
    problem = build_problem(program, rar=config.rar)
    return ScheduleData(program, config, problem, time.perf_counter() - t0)


def report(data: ScheduleData, outcome: Outcome, options: Options) -> dict:
    return outcome.report


PROBLEM = Problem(
    info=registry.info("schedule"), options=Options, decision=Schedule, prepare=prepare,
    formulations=formulations(), default="polytops", objective=lambda data, decision: None, report=report,
    checks=checks, summary=summary, recorded={"config": lambda inst, o: _configuration(inst, o).to_dict()})


def schedule(program: Program, **options: Any) -> Solution:
    """Schedule a polyhedral ``program`` (:class:`~dfopt.ir.program.Program`); returns the checked
    :class:`~dfopt.solution.Solution` (``.decision.map``, the section's ``code``).

    Examples
    --------
    >>> import dfopt
    >>> program = dfopt.load("instances/schedule/jacobi-1d.json").program
    >>> schedule(program, strategy="feautrier").decision.map
    '[TSTEPS, N] -> { S0[t, i] -> [2t, i]; S1[t, i] -> [1 + 2t, i] }'
    """
    from dfopt.api import solve_graph

    return solve_graph("schedule", program=program, **options)
