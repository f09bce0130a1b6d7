"""The problem contract: a :class:`Problem` record per problem, a :class:`Formulation` per way of
solving it, a typed :class:`Decision`, and the :class:`Outcome` a formulation returns.

A problem package (``dfopt/models/<name>/``) defines ``PROBLEM = Problem(...)``: its registry
entry (:mod:`dfopt.models.registry`), its Options class, its decision type, ``prepare`` (the
problem data, built once from the instance and the options, with every semantic check that needs
them), its formulations, ``report`` (the solution section beside the decision), ``checks``
(written without a solver, taking every parameter from the instance and the options), a
summary, and optional ``emit`` and ``plot`` hooks. The driver (:mod:`dfopt.models.driver`) runs
them in order for every problem alike.

A formulation is an object with a ``name``, the ``solvers`` it accepts (the first is its
default; empty: it uses none), ``exact`` (it can prove optimality) and ``bound`` (it returns a
lower bound), and ``solve(data, options) -> Outcome``. Adding one is a module that defines it
and one line in its problem's ``formulations``.

>>> @dataclass(frozen=True)
... class Count(Decision):
...     section: ClassVar[str] = "count"
...     n: int
...     def to_json(self):
...         return {"n": self.n}
...     @classmethod
...     def from_json(cls, data, pointer="/count"):
...         return cls(require_int(data, "n", pointer, minimum=0))
>>> Count.from_sections({"count": {"n": 3}}).to_json()
{'n': 3}
>>> try:
...     Count.from_json({"n": -1})
... except InstanceError as err:
...     print(err)
/count/n: expected an integer >= 0, got -1
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from dfopt.errors import InstanceError, unknown_name_error
from dfopt.models.options import build_options, options_schema
from dfopt.models.registry import ProblemInfo
from dfopt.results import Termination

# -- decisions ----------------------------------------------------------------------------------

_D = TypeVar("_D", bound="Decision")


class Decision:
    """Base of the typed decisions: a frozen dataclass per problem with ``to_json`` and
    ``from_json``. ``section`` names the solution section the decision lives in; a decision that
    spans several sections (the pipeline's) overrides :meth:`sections` and :meth:`from_sections`."""

    section: ClassVar[str] = ""

    def to_json(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_json(cls: type[_D], data: dict, pointer: str = "") -> _D:
        raise NotImplementedError

    def sections(self) -> dict:
        """Solution section name -> the decision's keys in it."""
        return {self.section: self.to_json()}

    @classmethod
    def from_sections(cls: type[_D], sections: Mapping) -> _D:
        """The decision stored in a solution's sections; a missing or malformed one is an
        :class:`InstanceError` with the pointer of the fault."""
        data = sections.get(cls.section)
        if not isinstance(data, dict):
            raise InstanceError(f"the solution has no {cls.section} section", pointer=f"/{cls.section}")
        return cls.from_json(data, f"/{cls.section}")


class FrozenMap(Mapping[Any, Any]):
    """A read-only mapping (for decision fields) that pickles and copies like a dict.

    >>> m = FrozenMap({"a": 1})
    >>> m["a"], dict(m), m == {"a": 1}
    (1, {'a': 1}, True)
    """

    __slots__ = ("_data",)
    _data: dict

    def __init__(self, values: Mapping | None = None) -> None:
        object.__setattr__(self, "_data", dict(values or {}))

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        return dict(self._data) == (dict(other) if isinstance(other, Mapping) else other)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._data.items(), key=repr)))

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self) -> tuple:
        return (FrozenMap, (self._data,))


def frozen_map(values: Mapping | None) -> Mapping:
    """A read-only copy of a mapping (for decision fields)."""
    return FrozenMap(values)


def require(data: Mapping, key: str, pointer: str, kind: type | tuple, what: str) -> Any:
    """``data[key]`` when it is of ``kind``; else an InstanceError naming ``pointer/key``."""
    if not isinstance(data, Mapping) or key not in data:
        raise InstanceError(f"missing {what}", pointer=f"{pointer}/{key}")
    value = data[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise InstanceError(f"expected {what}, got {value!r}", pointer=f"{pointer}/{key}")
    if not isinstance(value, kind):
        raise InstanceError(f"expected {what}, got {_shown(value)}", pointer=f"{pointer}/{key}")
    return value


def require_int(data: Mapping, key: str, pointer: str, minimum: int | None = None,
                maximum: int = 2**62) -> int:
    """An integer field within bounds (an integral float such as 3.0 is accepted)."""
    value = data.get(key) if isinstance(data, Mapping) else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    bounds = " >= " + str(minimum) if minimum is not None else ""
    if (not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum)
            or value > maximum):
        raise InstanceError(f"expected an integer{bounds}, got {_shown(value)}", pointer=f"{pointer}/{key}")
    return value


def require_names(data: Mapping, key: str, pointer: str, what: str) -> dict:
    """A name -> string mapping (kernel -> slot, memory -> kind)."""
    value = require(data, key, pointer, dict, f"an object of {what}")
    for k, v in value.items():
        if not isinstance(v, str) or not v:
            raise InstanceError(f"expected a name, got {_shown(v)}", pointer=f"{pointer}/{key}/{k}")
    return dict(value)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- outcomes and formulations ------------------------------------------------------------------


@dataclass
class Outcome:
    """What a formulation returns.

    ``termination``: :attr:`~Termination.OPTIMAL` when the formulation proved its answer optimal,
    :attr:`~Termination.FEASIBLE` for an answer with no proof sought, or
    :attr:`~Termination.TIME_LIMIT` when its limit stopped it before it could return its own
    answer (the answer is then a fallback). ``limit_reached``: the time limit (or another budget)
    stopped the search, whatever the answer. ``bound``: a proven lower bound of the objective.
    ``report``: extra keys for the solution section (figures the formulation alone knows).
    """

    decision: Any
    termination: Termination = Termination.FEASIBLE
    bound: float | None = None
    solver: str = "none"
    stats: dict = field(default_factory=dict)
    limit_reached: bool = False
    report: dict = field(default_factory=dict)


@runtime_checkable
class Formulation(Protocol):
    """One way to solve a problem (see the module docstring)."""

    name: str
    solvers: tuple
    exact: bool
    bound: bool

    def solve(self, data: Any, options: Any) -> Outcome: ...


@dataclass(frozen=True)
class Unbounded:
    """The fields of a formulation that proves nothing (no bound, not exact): a subclass sets
    ``name`` (and ``solvers`` when it calls one) and defines ``solve``."""

    name: str = ""
    solvers: tuple = ()
    exact: bool = False
    bound: bool = False


@dataclass(frozen=True)
class Bounded:
    """The fields of an exact model on solver backends, with a bound: ``solvers`` (the first is
    the default, :meth:`backend`); a subclass defines ``solve``."""

    name: str
    solvers: tuple
    exact: bool = True
    bound: bool = True

    def backend(self, options: Any) -> str:
        """The backend the options ask for, else the formulation's first."""
        return options.solver or self.solvers[0]


def incumbent_stats(incumbents: list, baseline: float | None) -> dict:
    """``incumbents`` (``(seconds, objective)`` as the solver found them) rounded for the stats,
    and when the first of them beat ``baseline`` (the greedy answer's objective; omitted when
    there is none)."""
    out: dict[str, Any] = {"incumbents": [(round(t, 4), v) for t, v in incumbents]}
    if baseline is not None:
        better = [t for t, v in incumbents if v < baseline - 1e-9]
        out["first_better_than_greedy_s"] = better[0] if better else None
    return out


@dataclass(frozen=True)
class Simple:
    """A formulation made of a function: ``Simple("greedy", fn)`` with ``fn(data, options)``."""

    name: str
    fn: Callable[[Any, Any], Outcome]
    solvers: tuple = ()
    exact: bool = False
    bound: bool = False
    description: str = ""

    def solve(self, data: Any, options: Any) -> Outcome:
        return self.fn(data, options)


# -- the problem record -------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """Everything the driver, the loader, the schema, the summary and the CLI know of a problem.

    Hooks (all take the instance's IR or the prepared data, never JSON):

    * ``prepare(instance, options) -> data`` — the problem data, built once; semantic faults of
      the instance and options are :class:`InstanceError` / :class:`InfeasibleError` here;
    * ``objective(data, decision) -> float | None`` — recomputed from the decision;
    * ``lower_bound(data) -> float | None`` — a bound every answer respects (optional);
    * ``report(data, outcome, options) -> dict`` — the solution section's keys beside the
      decision's (a multi-section decision returns section -> keys);
    * ``checks(instance, options, solution) -> list[Check]`` — the checker (the driver adds the
      record check and, with ``recount``, a recount of the report from the decision);
    * ``summary(instance, solution) -> list[str]`` — the lines of ``dfopt solve``'s summary;
    * ``emit(instance, solution, out_dir, options=None) -> dict`` (``options``: the problem's
      :class:`Options` of the solve, for emission choices) and ``plot(instance, solution, path, **kw)``.
    """

    info: ProblemInfo
    options: type
    decision: type[Decision]
    prepare: Callable[[Any, Any], Any]
    formulations: tuple
    default: str
    objective: Callable[[Any, Any], float | None]
    report: Callable[[Any, Outcome, Any], dict]
    checks: Callable[[Any, Any, Any], list]
    summary: Callable[[Any, Any], list]
    lower_bound: Callable[[Any], float | None] | None = None
    emit: Callable[..., dict] | None = None
    emit_help: str = ""
    plot: Callable[..., None] | None = None
    recorded: Mapping = field(default_factory=dict)
    #: the checker recomputes the report from the decision and compares every key
    #: (``<problem>-report``) but the ``process_keys`` (what only the search knows: candidates,
    #: proofs, repair steps)
    recount: bool = False
    process_keys: frozenset = frozenset()

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def title(self) -> str:
        return self.info.title

    def formulation_names(self) -> tuple:
        return tuple(f.name for f in self.formulations)

    def formulation(self, name: str | None, pointer: str = "") -> Formulation:
        """The formulation called ``name`` (None: the default); an unknown name lists the valid ones."""
        name = name or self.default
        for f in self.formulations:
            if f.name == name:
                return f
        raise unknown_name_error(f"{self.name} formulation", name, self.formulation_names(),
                                 pointer=pointer or f"/options/{self.name}/formulation")

    def make_options(self, instance_values: dict | None = None, overrides: dict | None = None,
                     origin: str = "argument") -> Any:
        """The problem's Options: the instance's values merged with overrides, every field checked."""
        return build_options(self.options, self.name, instance_values, overrides, origin,
                             formulations=self.formulation_names())

    def options_schema(self) -> dict:
        """The JSON Schema of this problem's ``options`` object (from the Options fields)."""
        return options_schema(self.options, self.title, self.formulation_names())
