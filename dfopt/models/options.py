"""Options: one frozen dataclass per problem, the single source of its settings.

Each field is declared with :func:`option`, which keeps its help text, its choices and its
numeric range in the field's metadata. From there come the instance schema's
``options.<problem>`` object (:func:`options_schema`), the command-line flags and their
``--help`` (``dfopt.cli``), and the checks of :func:`build_options`, which merges the
instance's values with overrides from the command line or from Python and names the field in
every error: its JSON pointer when the instance set it, its flag (``--time-limit``) when the
command line did, or ``option time_limit`` from Python.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Opts(CommonOptions):
...     strategy: str = option("normal", "which IIs the curves assume", choices=("normal", "slow"))
>>> build_options(Opts, "fifo", {"strategy": "slow"}, {"seed": 3}).seed
3
>>> try:
...     build_options(Opts, "fifo", {}, {"strategy": "fast"}, origin="flag")
... except InstanceError as err:
...     print(err)
--strategy: unknown strategy 'fast' (expected one of: normal, slow)
>>> options_schema(Opts)["properties"]["strategy"]
{'type': 'string', 'enum': ['normal', 'slow'], 'description': 'which IIs the curves assume (default normal)'}
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from dfopt.errors import InstanceError, Problem
from dfopt.instance.budget import DEFAULT_MAX_MEMORY
from dfopt.schema import did_you_mean

#: Origins of an option value.
ORIGINS = ("instance", "flag", "argument")

MAX_TIME_LIMIT = 10_000_000          # seconds (about 115 days): any larger value is a typo
MAX_SEED = 2**31 - 1
MAX_WORKERS = 256


def option(default: Any = None, help: str = "", *, choices: tuple | None = None,
           minimum: float | None = None, maximum: float | None = None,
           exclusive_minimum: float | None = None, schema: dict | None = None,
           default_factory: Any = None, metavar: str | None = None, flag: bool = True) -> Any:
    """A dataclass field that carries its help, choices and range.

    ``schema`` is the JSON Schema of a structured value (objects and lists), given on the
    command line as JSON text; ``flag=False`` keeps the field off the command line.
    """
    meta = {"help": help, "choices": tuple(choices) if choices else None, "minimum": minimum,
            "maximum": maximum, "exclusive_minimum": exclusive_minimum, "schema": schema,
            "metavar": metavar, "flag": flag}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class CommonOptions:
    """Fields every problem accepts. ``solver`` and ``formulation`` None mean the model's default."""

    formulation: str | None = option(None, "formulation name (default: the problem's)", metavar="NAME")
    solver: str | None = option(None, "solver backend name (default: the formulation's)", metavar="NAME")
    time_limit: float = option(60.0, "seconds the solver may spend", exclusive_minimum=0,
                               maximum=MAX_TIME_LIMIT, metavar="S")
    seed: int = option(0, "random seed", minimum=0, maximum=MAX_SEED, metavar="N")
    deterministic: bool = option(True, "the same seed gives the same answer (CP-SAT: one worker or "
                                       "interleaved search)")
    max_memory: int = option(DEFAULT_MAX_MEMORY, "bytes the simulation and the models may allocate; "
                                                 "larger instances are refused before they start",
                             minimum=1 << 20, maximum=1 << 50, metavar="BYTES")


# -- fields and their types ---------------------------------------------------------------------

@dataclass(frozen=True)
class FieldInfo:
    """A field of an Options class with its resolved type (``base``: bool, int, float, str,
    or ``json`` for dicts and lists) and its metadata."""

    name: str
    base: str
    optional: bool
    default: Any
    help: str
    choices: tuple | None
    minimum: float | None
    maximum: float | None
    exclusive_minimum: float | None
    schema: dict | None
    metavar: str | None
    flag: bool

    @property
    def flag_name(self) -> str:
        return "--" + self.name.replace("_", "-")

    def default_text(self) -> str:
        if self.default is None:
            return "none"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        if self.base == "json":
            return _json_text(self.default)
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)


def _json_text(value) -> str:
    import json

    return json.dumps(value if not isinstance(value, tuple) else list(value))


def fields_of(cls: type) -> list[FieldInfo]:
    """The option fields of ``cls`` (an Options dataclass) with their types and metadata."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        base, optional = _base_type(hints[f.name])
        m = f.metadata
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out.append(FieldInfo(f.name, base, optional, default, m.get("help", ""), m.get("choices"),
                             m.get("minimum"), m.get("maximum"), m.get("exclusive_minimum"),
                             m.get("schema"), m.get("metavar"), m.get("flag", True)))
    return out


def _base_type(hint) -> tuple[str, bool]:
    args = typing.get_args(hint)
    optional = type(None) in args
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in args if a is not type(None))
    origin = typing.get_origin(hint) or hint
    if origin is bool:
        return "bool", optional
    if origin is int:
        return "int", optional
    if origin is float:
        return "float", optional
    if origin is str:
        return "str", optional
    return "json", optional


# -- building and checking options --------------------------------------------------------------

def where(options: object, name: str, *path: str | int) -> str:
    """Where option ``name`` (and the sub-path ``path`` inside it) came from, for error pointers:
    ``/options/<problem>/<name>/...`` from the instance, ``--name`` from the command line,
    ``option name`` from Python."""
    origins = getattr(options, "_origins", {}) or {}
    problem = getattr(options, "_problem", "")
    origin = origins.get(name, "instance" if problem else "argument")
    if origin == "flag":
        return "--" + name.replace("_", "-")
    if origin == "argument":
        return "option " + name + "".join(f"[{p!r}]" for p in path)
    return "/options/" + problem + "".join("/" + str(p) for p in (name,) + path)


def build_options(cls: type, problem: str, from_instance: dict | None = None, overrides: dict | None = None,
                  origin: str = "argument", formulations: tuple | None = None) -> Any:
    """Merge the instance's option values with overrides (overrides win; None is ignored) and
    check every value against its field: type, choices, range, finite numbers; ``formulation``
    against ``formulations`` when given. One :class:`InstanceError` lists every fault."""
    infos = {f.name: f for f in fields_of(cls)}
    merged: dict = {}
    origins: dict = {}
    faults: list[Problem] = []
    for source, values in (("instance", from_instance or {}), (origin, overrides or {})):
        for key, value in values.items():
            here = _pointer(problem, key, source)
            if key not in infos:
                known = sorted(infos)
                faults.append(Problem(here, f"unknown {problem} option {key!r}{did_you_mean(key, known)}; "
                                            f"expected one of: {', '.join(known)}"))
                continue
            if value is None:
                continue
            structured = [Problem(_pointer(problem, key, source, path), message)
                          for path, message in _json_faults(infos[key], value)]
            if structured:
                faults += structured
                continue
            fault = _value_fault(infos[key], value, formulations, problem)
            if fault:
                faults.append(Problem(here, fault))
                continue
            merged[key] = _normalised(infos[key], value)
            origins[key] = source
    if faults:
        raise InstanceError(problems=faults)
    opts = cls(**merged)
    object.__setattr__(opts, "_origins", origins)
    object.__setattr__(opts, "_problem", problem)
    return opts


def _pointer(problem: str, key: str, source: str, path: tuple = ()) -> str:
    if source == "instance":
        return f"/options/{problem}/{key}" + "".join(f"/{p}" for p in path)
    inner = "".join(f"[{p!r}]" for p in path)
    if source == "flag":
        return "--" + key.replace("_", "-") + (f" {inner}" if inner else "")
    return f"option {key}{inner}"


def _normalised(info: FieldInfo, value):
    if info.base == "float" and not isinstance(value, bool):
        return float(value)
    if info.base == "int" and isinstance(value, float):
        return int(value)
    if info.base == "json" and isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if info.base == "json" and isinstance(value, dict):
        return copy.deepcopy(value)
    return value


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


def _value_fault(info: FieldInfo, value, formulations: tuple | None, problem: str = "") -> str | None:
    kind = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string"}
    if info.base == "bool" and not isinstance(value, bool):
        return f"expected {kind['bool']}, got {value!r}"
    if info.base in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected {kind[info.base]}, got {value!r}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"expected a finite number, got {value!r}"
        if info.base == "int" and isinstance(value, float) and not value.is_integer():
            return f"expected an integer, got {value!r}"
        return _range_fault(info, value)
    if info.base == "str":
        if not isinstance(value, str) or not value:
            return f"expected a non-empty string, got {value!r}"
        choices = info.choices or (formulations if info.name == "formulation" else None)
        if choices and value not in choices:
            what = info.name.replace("_", " ") if info.name != "formulation" else f"{problem} formulation".strip()
            return (f"unknown {what} {value!r}{did_you_mean(value, choices)} "
                    f"(expected one of: {', '.join(choices)})")
        return None
    return None


def _range_fault(info: FieldInfo, value) -> str | None:
    lo, hi, xlo = info.minimum, info.maximum, info.exclusive_minimum
    if lo is not None and value < lo:
        return f"expected a value >= {lo:g}, got {value:g}"
    if xlo is not None and value <= xlo:
        return f"expected a value > {xlo:g}, got {value:g}"
    if hi is not None and value > hi:
        return f"expected a value <= {hi:g}, got {value:g}"
    return None


def _json_faults(info: FieldInfo, value) -> list:
    """(path inside the value, message) of every fault against the field's schema."""
    if info.schema is None:
        return []
    from dfopt.schema import schema_issues_for

    return schema_issues_for(value, info.schema)


# -- the schema fragment -------------------------------------------------------------------------

def options_schema(cls: type, description: str = "", formulations: tuple | None = None) -> dict:
    """The JSON Schema of ``options.<problem>`` for the Options class ``cls``."""
    props = {}
    for f in fields_of(cls):
        props[f.name] = _field_schema(f, formulations)
    return {"type": "object", "description": description, "properties": props, "additionalProperties": False}


def _field_schema(f: FieldInfo, formulations: tuple | None) -> dict:
    if f.base == "json":
        out = copy.deepcopy(f.schema) if f.schema is not None else {}
    else:
        out = {"type": {"bool": "boolean", "int": "integer", "float": "number", "str": "string"}[f.base]}
    if f.base == "str":
        choices = f.choices or (formulations if f.name == "formulation" else None)
        if choices:
            out["enum"] = list(choices)
        else:
            out["minLength"] = 1
    for key, value in (("minimum", f.minimum), ("exclusiveMinimum", f.exclusive_minimum),
                       ("maximum", f.maximum)):
        if value is not None:
            out[key] = value
    if f.optional and f.base != "json" and f.default is None:
        out["type"] = [out["type"], "null"]
    out["description"] = f"{f.help} (default {f.default_text()})" if f.help else f"default {f.default_text()}"
    return out
