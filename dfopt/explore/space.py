"""The search space of an exploration, its objectives and its settings (``options.explore``).

An instance's ``options.explore`` section (or ``dfopt explore`` flags, or keywords of
:func:`dfopt.explore.explore`) declares what a study varies and what it minimises::

    "explore": {
      "space": {
        "default_tile_size": {"choices": [16, 32, 64, 128], "per": "kind"},
        "overall_unroll_size": {"choices": [256, 512, 1024, 2048, 4096]},
        "max_utilization": {"low": 0.6, "high": 0.9},
        "platform": {"choices": ["u280", "u55c"]}
      },
      "objectives": ["latency", "lut"],
      "sampler": "auto",
      "trial_time_limit": 30
    }

A parameter is one of the problem's options (a field of its Options class: ``dfopt solve
--help`` lists them) or ``platform`` (a preset name, for problems that take a platform), given as
``{"choices": [...]}`` (any JSON values the option accepts) or as a range ``{"low": a, "high": b}``
with ``"log": true`` and ``"step": s`` when wanted (integers for an integer option). For the
pipeline, ``"per": "kind"`` (or ``"op"``) on ``default_tile_size`` makes one tile-size parameter
per op kind (per operator) of the graph, ``tile_size:<kind or op>``, passed as ``tile_sizes``.
Every value is checked as the option itself checks it, before any trial runs; an error names the
field (``/options/explore/space/max_utilization/high``).

Objectives (all minimised) per problem are in :data:`OBJECTIVES`; one objective gives a
single-objective study (TPE by default), several a multi-objective one (NSGA-II by default).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dfopt.errors import InstanceError

if TYPE_CHECKING:
    from dfopt.instance.types import Instance

#: What each problem's trials can minimise: name -> what it is.
OBJECTIVES: dict[str, dict[str, str]] = {
    "pipeline": {
        "latency": "estimated latency of the design in cycles (the FIFO stage's makespan)",
        "utilization": "the largest share of any resource in any slot",
        "lut": "LUTs used over the platform's LUTs", "ff": "flip-flops used over the platform's",
        "dsp": "DSPs used over the platform's", "bram": "BRAM36 used over the platform's",
        "uram": "URAM used over the platform's",
        "fifo_bits": "bits of all FIFOs", "fifo_bram18": "BRAM18 blocks of the FIFOs",
        "dram_bytes": "bytes moved through DRAM",
    },
    "schedule": {
        "runtime": "measured run time in seconds of the generated C (min over the repeats)",
    },
}

#: The space a problem's study searches when the instance declares none.
DEFAULT_SPACES: dict[str, dict[str, dict]] = {
    "pipeline": {
        "default_tile_size": {"choices": [16, 32, 64, 128]},
        "overall_unroll_size": {"choices": [256, 512, 1024, 2048, 4096]},
        "max_utilization": {"choices": [None, 0.7, 0.9]},
    },
    "schedule": {
        "strategy": {"choices": ["pluto", "isl", "feautrier", "tensor"]},
        "tiling": {"choices": [None, 16, 32, 64]},
        "wavefront": {"choices": [False, True]},
        "fusion": {"choices": ["max", "min"]},
        "auto_vectorize": {"choices": [False, True]},
    },
}

SAMPLERS = ("auto", "tpe", "nsga2", "random")
PLATFORM = "platform"
TILE_PREFIX = "tile_size:"
#: Options no study varies: the run's own settings.
FIXED = frozenset({"formulation", "solver", "time_limit", "seed", "deterministic", "max_memory", "config"})
MAX_CHOICES = 256

_NUMBER = {"type": "number"}
#: The JSON Schema of ``options.explore`` (the shape; the values are checked by :func:`parse`).
SCHEMA: dict = {
    "type": "object", "additionalProperties": False,
    "description": "design-space exploration: the space, the objectives and the study's settings (docs/explore.md)",
    "properties": {
        "space": {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": False,
            "properties": {"choices": {"type": "array", "minItems": 1, "maxItems": MAX_CHOICES},
                           "low": _NUMBER, "high": _NUMBER, "log": {"type": "boolean"},
                           "step": {"type": "number", "exclusiveMinimum": 0},
                           "per": {"type": "string", "enum": ["kind", "op"]}}}},
        "objectives": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "string"}},
        "sampler": {"type": "string", "enum": list(SAMPLERS)},
        "trial_time_limit": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400},
        "prune": {"type": "boolean"},
        "dataset": {"type": "string", "enum": ["mini", "small", "medium", "large", "extralarge"]},
        "repeats": {"type": "integer", "minimum": 1, "maximum": 100},
        "threads": {"type": "integer", "minimum": 1, "maximum": 256},
    },
}


@dataclass(frozen=True)
class Param:
    """One parameter of the space: a categorical (``choices``) or a numeric range.

    ``option`` is the option the value goes to (``tile_sizes`` for a per-kind tile size, with
    ``key`` the kind or op). Categorical values that Optuna cannot hold (lists, objects, None
    beside numbers) are stored as their JSON text (``encoded``)."""

    name: str
    option: str
    kind: str                       # int | float | categorical
    choices: tuple = ()
    low: float = 0
    high: float = 0
    log: bool = False
    step: float | None = None
    key: str | None = None

    @property
    def encoded(self) -> bool:
        return self.kind == "categorical" and not all(isinstance(c, (bool, int, float, str)) for c in self.choices)

    def suggest(self, trial: Any) -> Any:
        """The trial's value (Optuna's ``suggest_*``), decoded."""
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log,
                                     step=int(self.step or 1))
        if self.kind == "float":
            return trial.suggest_float(self.name, self.low, self.high, log=self.log, step=self.step)
        if self.encoded:
            return json.loads(trial.suggest_categorical(self.name, [json.dumps(c) for c in self.choices]))
        return trial.suggest_categorical(self.name, list(self.choices))

    def decode(self, value: Any) -> Any:
        """A stored parameter value (``trial.params``) as the option takes it."""
        return json.loads(value) if self.encoded else value


@dataclass(frozen=True)
class Config:
    """A parsed ``options.explore``: the problem, its parameters, objectives and settings."""

    problem: str
    params: tuple
    objectives: tuple
    sampler: str = "auto"
    trial_time_limit: float = 60.0
    prune: bool = True
    dataset: str = "medium"
    repeats: int = 3
    threads: int = 2

    @property
    def multi(self) -> bool:
        return len(self.objectives) > 1

    def sampler_name(self) -> str:
        if self.sampler != "auto":
            return self.sampler
        return "nsga2" if self.multi else "tpe"

    def to_dict(self) -> dict:
        """The settings as JSON (what a study records, so that joining workers rebuild them)."""
        return {"problem": self.problem, "params": [dataclasses.asdict(p) for p in self.params],
                "objectives": list(self.objectives), "sampler": self.sampler,
                "trial_time_limit": self.trial_time_limit, "prune": self.prune, "dataset": self.dataset,
                "repeats": self.repeats, "threads": self.threads}

    @classmethod
    def from_dict(cls, d: dict) -> Config:
        params = tuple(Param(**{**p, "choices": tuple(p["choices"])}) for p in d["params"])
        return cls(d["problem"], params, tuple(d["objectives"]), d["sampler"], float(d["trial_time_limit"]),
                   bool(d["prune"]), d["dataset"], int(d["repeats"]), int(d["threads"]))

    def overrides(self, values: dict) -> tuple[dict, str | None]:
        """(option overrides, platform preset or None) for parameter values ``values``
        (decoded, by parameter name)."""
        out: dict = {}
        platform = None
        for p in self.params:
            if p.name not in values:
                continue
            v = values[p.name]
            if p.option == PLATFORM:
                platform = v
            elif p.key is not None:
                out.setdefault(p.option, {})[p.key] = v
            else:
                out[p.option] = v
        return out, platform


def parse(instance: Instance, section: dict | None = None, overrides: dict | None = None) -> Config:
    """The exploration settings of ``instance``: its ``options.explore`` with ``overrides`` (from
    flags or keywords) laid over it, every value checked; InstanceError naming the field."""
    from dfopt.models.registry import get_problem

    problem = instance.problem
    if problem not in OBJECTIVES:
        raise InstanceError(f"dfopt explore works on the problems {', '.join(OBJECTIVES)}, not {problem!r}",
                            pointer="/problem")
    raw = dict(instance.options.get("explore", {}) if section is None else section)
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    raw.update(given)
    base = "/options/explore"

    def at(key: str) -> str:
        """Where a field came from: the instance's section, or a flag / keyword."""
        return f"--{key.replace('_', '-')}" if key in given else f"{base}/{key}"

    unknown = sorted(set(raw) - set(SCHEMA["properties"]))
    if unknown:
        raise InstanceError(f"unknown field {unknown[0]!r} (expected one of: {', '.join(SCHEMA['properties'])})",
                            pointer=at(unknown[0]))
    space = raw.get("space", DEFAULT_SPACES[problem])
    if not isinstance(space, dict) or not space:
        raise InstanceError("the space must be an object with at least one parameter", pointer=at("space"))
    options_cls = get_problem(problem).options
    params: list[Param] = []
    for name, spec in space.items():
        params += _params(instance, options_cls, name, spec, f"{at('space')}/{_escape(name)}")
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InstanceError(f"parameter {twice[0]!r} is declared twice", pointer=at("space"))
    objectives = raw.get("objectives", [next(iter(OBJECTIVES[problem]))])
    if isinstance(objectives, str):
        objectives = [o.strip() for o in objectives.split(",") if o.strip()]
    if not isinstance(objectives, (list, tuple)) or not objectives or len(objectives) > 4:
        raise InstanceError("objectives: expected 1 to 4 names", pointer=at("objectives"))
    for i, o in enumerate(objectives):
        if o not in OBJECTIVES[problem]:
            raise InstanceError(f"unknown objective {o!r} for {problem} (expected one of: "
                                f"{', '.join(OBJECTIVES[problem])})", pointer=f"{at('objectives')}/{i}")
    if len(set(objectives)) != len(objectives):
        raise InstanceError("an objective is listed twice", pointer=at("objectives"))
    settings = {k: raw[k] for k in ("sampler", "trial_time_limit", "prune", "dataset", "repeats", "threads")
                if k in raw}
    _check_settings(settings, at)
    return Config(problem, tuple(params), tuple(objectives), **settings)


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _check_settings(settings: dict, at) -> None:
    props = SCHEMA["properties"]
    for key, value in settings.items():
        rule = props[key]
        if "enum" in rule and value not in rule["enum"]:
            raise InstanceError(f"{key}: {value!r} is not one of {', '.join(map(str, rule['enum']))}",
                                pointer=at(key))
        if rule["type"] == "boolean" and not isinstance(value, bool):
            raise InstanceError(f"{key}: expected true or false, got {value!r}", pointer=at(key))
        if rule["type"] in ("number", "integer"):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if rule["type"] == "integer":
                ok = ok and float(value).is_integer()
            low, high = rule.get("minimum", rule.get("exclusiveMinimum")), rule.get("maximum")
            if not ok or (low is not None and (value < low or ("exclusiveMinimum" in rule and value == low))) \
                    or (high is not None and value > high):
                raise InstanceError(f"{key}: expected a {rule['type']} in ({low}, {high}], got {value!r}",
                                    pointer=at(key))


def _params(instance: Instance, options_cls, name: str, spec: Any, at: str) -> list[Param]:
    """The parameters one entry of the space declares (several for a per-kind tile size)."""
    if not isinstance(spec, dict):
        raise InstanceError(f"parameter {name!r}: expected an object with choices or low/high", pointer=at)
    allowed = {"choices", "low", "high", "log", "step", "per"}
    extra = sorted(set(spec) - allowed)
    if extra:
        raise InstanceError(f"parameter {name!r}: unknown field {extra[0]!r} (expected one of: "
                            f"{', '.join(sorted(allowed))})", pointer=f"{at}/{extra[0]}")
    fields = {f.name: f for f in dataclasses.fields(options_cls) if f.name not in FIXED}
    if name == PLATFORM:
        if instance.platform is None:
            raise InstanceError(f"parameter 'platform': a {instance.problem} instance has no platform", pointer=at)
        return [_platform_param(spec, at)]
    if name.startswith(TILE_PREFIX) and "tile_sizes" in fields:
        key = name[len(TILE_PREFIX):]
        _tile_key(instance, key, at)
        return [_one(options_cls, name, "tile_sizes", spec, at, int_field=True, key=key)]
    if name not in fields:
        from dfopt.schema import did_you_mean

        known = sorted(fields) + ([PLATFORM] if instance.platform is not None else [])
        raise InstanceError(f"unknown parameter {name!r}: not an option of {instance.problem}"
                            f"{did_you_mean(name, known)} (options: {', '.join(known)})", pointer=at)
    if "per" in spec:
        if name != "default_tile_size" or "tile_sizes" not in fields:
            raise InstanceError(f"parameter {name!r}: 'per' applies to the pipeline's default_tile_size only",
                                pointer=f"{at}/per")
        assert instance.operators is not None
        keys = dict.fromkeys(op.op if spec["per"] == "kind" else op.name for op in instance.operators.ops)
        body = {k: v for k, v in spec.items() if k != "per"}
        return [_one(options_cls, f"{TILE_PREFIX}{k}", "tile_sizes", body, at, int_field=True, key=k) for k in keys]
    from dfopt.models.options import fields_of

    base = next(fi.base for fi in fields_of(options_cls) if fi.name == name)
    if "choices" not in spec and base not in ("int", "float"):
        raise InstanceError(f"parameter {name!r}: a {base} option takes choices, not a range", pointer=at)
    return [_one(options_cls, name, name, spec, at, int_field=base == "int")]


def _tile_key(instance: Instance, key: str, at: str) -> None:
    assert instance.operators is not None
    known = {op.name for op in instance.operators.ops} | {op.op for op in instance.operators.ops}
    if key not in known:
        from dfopt.schema import did_you_mean

        raise InstanceError(f"parameter {TILE_PREFIX}{key}: {key!r} is neither an operator nor an op kind of the "
                            f"graph{did_you_mean(key, known)}", pointer=at)


def _platform_param(spec: dict, at: str) -> Param:
    from dfopt.ir.platform import load_preset

    choices = spec.get("choices")
    if not isinstance(choices, list) or not choices or set(spec) - {"choices"}:
        raise InstanceError("parameter 'platform': expected {\"choices\": [preset names]}", pointer=at)
    for i, c in enumerate(choices):
        try:
            if not isinstance(c, str):
                raise KeyError(c)
            load_preset(c)
        except (KeyError, InstanceError, OSError) as err:
            raise InstanceError(f"platform {c!r} is not a preset ({err})", pointer=f"{at}/choices/{i}") from None
    return Param(PLATFORM, PLATFORM, "categorical", tuple(choices))


def _one(options_cls, name: str, option: str, spec: dict, at: str, int_field: bool, key: str | None = None) -> Param:
    """One parameter, its values checked by the option's own rules (``build_options``)."""
    if "choices" in spec:
        if set(spec) - {"choices"}:
            raise InstanceError(f"parameter {name!r}: give either choices or low/high", pointer=at)
        choices = spec["choices"]
        if not isinstance(choices, list) or not 1 <= len(choices) <= MAX_CHOICES:
            raise InstanceError(f"parameter {name!r}: choices must be a list of 1 to {MAX_CHOICES} values",
                                pointer=f"{at}/choices")
        for i, c in enumerate(choices):
            _check_value(options_cls, option, c, key, f"{at}/choices/{i}")
        if len({json.dumps(c, sort_keys=True) for c in choices}) != len(choices):
            raise InstanceError(f"parameter {name!r}: a choice is listed twice", pointer=f"{at}/choices")
        return Param(name, option, "categorical", tuple(choices), key=key)
    if "low" not in spec or "high" not in spec:
        raise InstanceError(f"parameter {name!r}: expected choices, or low and high", pointer=at)
    low, high = spec["low"], spec["high"]
    for field_name, v in (("low", low), ("high", high)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise InstanceError(f"parameter {name!r}: {field_name} must be a number, got {v!r}",
                                pointer=f"{at}/{field_name}")
        if int_field and not float(v).is_integer():
            raise InstanceError(f"parameter {name!r}: {field_name} must be an integer (the option is), got {v!r}",
                                pointer=f"{at}/{field_name}")
        _check_value(options_cls, option, int(v) if int_field else float(v), key, f"{at}/{field_name}")
    if low > high:
        raise InstanceError(f"parameter {name!r}: low {low} is above high {high}", pointer=f"{at}/low")
    log, step = spec.get("log", False), spec.get("step")
    if log and low <= 0:
        raise InstanceError(f"parameter {name!r}: a log range needs low > 0, got {low}", pointer=f"{at}/low")
    if log and step is not None:
        raise InstanceError(f"parameter {name!r}: a log range takes no step", pointer=f"{at}/step")
    if step is not None and int_field and not float(step).is_integer():
        raise InstanceError(f"parameter {name!r}: step must be an integer, got {step!r}", pointer=f"{at}/step")
    kind = "int" if int_field else "float"
    return Param(name, option, kind, (), float(low), float(high), bool(log),
                 None if step is None else float(step), key)


def _check_value(options_cls, option: str, value: Any, key: str | None, at: str) -> None:
    """``value`` passes the option's own checks (range, choices, schema)."""
    from dfopt.models.options import build_options

    given = {option: {key: value}} if key is not None else {option: value}
    try:
        build_options(options_cls, "explore", {}, given)
    except InstanceError as err:
        text = str(err).split(": ", 1)[-1]
        raise InstanceError(f"{option}{'/' + key if key else ''}: {text}", pointer=at) from None
