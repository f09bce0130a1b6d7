"""The scheduler's configuration: presets, cost functions, constraints in PolyTOPS syntax,
per-dimension overrides, directives, bounds and tiling (docs/schedule.md, configuration).

A configuration is a JSON object (``options.schedule`` of an instance, a file named by the
``config`` option, or keyword arguments); :func:`parse_config` validates it and every error
names the field (a JSON pointer under ``/options/schedule``).

Fields:

* ``strategy`` — a preset (:data:`PRESETS`): ``pluto`` (proximity, permutable bands, Pluto's
  ``u.N + w`` bounding; contiguity breaks ties, as Pluto's intra-tile reordering puts stride-1
  loops inside), ``isl`` (the same with outer coincidence first, as isl's scheduler),
  ``feautrier`` (the most dependences satisfied at each dimension, dropped at once), ``tensor``
  (outer coincidence, big loops first and stride-1 loops inside, auto-vectorisation);
* ``costs`` — cost functions in lexicographic order, from :data:`COSTS`;
* ``dimensions`` — per loop dimension (0 = outermost loop row): ``costs``, ``constraints``,
  ``fusion`` (a list of statement groups, in execution order: the groups are distributed by a
  scalar dimension before this loop dimension and the statements of one group stay fused; or a
  policy for this dimension alone: ``"min"``, ``"max"``, ``"smart"``), ``coincidence`` (true:
  the row must carry no dependence);
* ``constraints`` — linear constraints on the schedule coefficients of every loop row, in
  PolyTOPS syntax: ``S1_it_0 = 0`` (coefficient of statement S1's first iterator),
  ``S3_it_i <= 1`` (``i``: the sum over the iterators), ``S0_par_1`` (a parameter's
  coefficient), ``S0_cst`` (the constant), with integer multipliers: ``2*S0_it_0 - S0_it_1 >= 0``;
* ``directives`` — ``{"statement", "loop", "kind": vectorize|parallel|sequential}``: ``loop``
  is the statement's iterator (index or name). ``vectorize`` keeps that iterator out of every row
  until it is the last one left (innermost loop); ``parallel`` makes it the statement's first loop
  row with no dependence carried there; ``sequential`` keeps OpenMP off its loop. A directive
  that would make a row impossible (it would break legality) is dropped with a warning;
* ``auto_vectorize`` — for each statement, a ``vectorize`` directive on the iterator with the
  most stride-1 accesses, and a distribution before that innermost loop (not fused);
* ``bounds`` — ``iterators`` (|coefficient| bound, default 4), ``parameters`` (default 0: no
  parametric shifts), ``constants`` (default 8), ``negative`` (allow negative iterator
  coefficients, as Pluto+: ``true``, ``false``, or ``"auto"``, the default: non-negative until no
  row exists, then negative from that dimension on);
* ``fusion`` — ``smart`` (default: before each loop row, fuse the strongly connected components
  of the live dependences only where the fused row can still carry nothing, :mod:`.fusion`),
  ``max`` (fuse, distribute only when no row exists) or ``min`` (distribute every strongly
  connected component first);
* ``band`` — ``permutable`` (validity on every dependence live at the band's start, so bands
  are tilable: Pluto) or ``dimension`` (a dependence satisfied at a row is dropped for the next);
* ``coincidence`` — ``outer`` (first try a row that carries no dependence) or ``none``;
* ``progression`` — ``all`` (every statement whose rows do not span its iterators yet gets a
  linearly independent row at every loop dimension: Pluto) or ``any`` (at least one does, the
  others may take a constant: Feautrier);
* ``rar`` — also bound read-after-read distances in the proximity cost;
* ``reorder`` — ``contiguity`` (default): after scheduling, in each permutable band the member
  with the most stride-1 accesses moves innermost (legal: the band is permutable; Pluto's
  intra-tile reordering), unless a ``vectorize`` directive fixes the innermost loop; when tiled,
  the point loops of each group of statements tied by a dependence live at the band then trade
  an innermost loop with strided accesses for a stride-1 one, the tile loops keeping the band's
  order (when every statement of the group spans the band, the result is legal and no directive
  is given), and a group whose statements each run at most one loop of a band stays untiled
  there; ``none``
  (the ``feautrier`` preset's default: its rows stay as found);
* ``tiling`` — a tile size for every member of every permutable band of two or more loops, or a
  list of sizes member by member; ``wavefront`` — skew the outermost tile loop of each tiled band
  by the next one (pipelined parallelism).

>>> c = parse_config({"strategy": "feautrier"}, ["S0", "S1"], {"S0": ["i", "j"], "S1": ["i"]}, 1)
>>> c.costs, c.band, c.coincidence
(('feautrier', 'proximity'), 'dimension', 'none')
>>> k = parse_constraint("2*S0_it_1 - S1_it_i <= 1", ["S0", "S1"], "/c")
>>> k.terms, k.op, k.rhs
(((-2, 'S0', 'it', 1), (1, 'S1', 'it', 'i')), '>=', -1)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from dfopt.errors import InstanceError

COSTS = ("proximity", "feautrier", "contiguity", "bigLoopsFirst")
KINDS = ("vectorize", "parallel", "sequential")
FUSIONS = ("smart", "max", "min")
BASE = "/options/schedule"

PRESETS: dict[str, dict[str, Any]] = {
    "pluto": {"costs": ("proximity", "contiguity"), "band": "permutable", "coincidence": "none"},
    "isl": {"costs": ("proximity", "contiguity"), "band": "permutable", "coincidence": "outer"},
    "feautrier": {"costs": ("feautrier", "proximity"), "band": "dimension", "coincidence": "none",
                  "progression": "any", "reorder": "none"},
    "tensor": {"costs": ("proximity", "bigLoopsFirst", "contiguity"), "band": "permutable",
               "coincidence": "outer", "auto_vectorize": True},
}

FIELDS = ("strategy", "costs", "dimensions", "constraints", "directives", "auto_vectorize", "bounds",
          "fusion", "band", "coincidence", "progression", "rar", "reorder", "tiling", "wavefront")


@dataclass(frozen=True)
class Constraint:
    terms: tuple          # (multiplier, statement, kind it|par|cst, index int | "i" | None)
    op: str               # ">=" | "==" ("<=" is stored negated)
    rhs: int
    text: str
    pointer: str


@dataclass(frozen=True)
class Directive:
    statement: str
    loop: int
    kind: str
    pointer: str
    auto: bool = False

    def describe(self) -> str:
        return f"{self.kind} on {self.statement} loop {self.loop}" + (" (auto_vectorize)" if self.auto else "")


@dataclass(frozen=True)
class Dimension:
    costs: tuple | None = None
    constraints: tuple = ()
    fusion: str | tuple[tuple[str, ...], ...] | None = None   # a policy of FUSIONS | groups of statement names
    coincidence: bool | None = None


@dataclass(frozen=True)
class Bounds:
    iterators: int = 4
    parameters: int = 0
    constants: int = 8
    negative: bool | str = "auto"     # False | True | "auto"


@dataclass(frozen=True)
class Config:
    strategy: str = "pluto"
    costs: tuple = ("proximity",)
    dimensions: tuple = ()
    constraints: tuple = ()
    directives: tuple = ()
    auto_vectorize: bool = False
    bounds: Bounds = field(default_factory=Bounds)
    fusion: str = "smart"
    band: str = "permutable"
    coincidence: str = "none"
    progression: str = "all"
    rar: bool = False
    reorder: str = "contiguity"
    tiling: int | tuple[int, ...] | None = None
    wavefront: bool = False

    def dimension(self, k: int) -> Dimension:
        return self.dimensions[k] if k < len(self.dimensions) else Dimension()

    def to_dict(self) -> dict:
        return {"strategy": self.strategy, "costs": list(self.costs), "band": self.band,
                "coincidence": self.coincidence, "progression": self.progression, "fusion": self.fusion,
                "auto_vectorize": self.auto_vectorize,
                "bounds": vars(self.bounds).copy(), "rar": self.rar, "reorder": self.reorder,
                "tiling": list(self.tiling) if isinstance(self.tiling, tuple) else self.tiling,
                "wavefront": self.wavefront,
                "constraints": [c.text for c in self.constraints],
                "directives": [{"statement": d.statement, "loop": d.loop, "kind": d.kind} for d in self.directives
                               if not d.auto],
                "dimensions": [_dimension_dict(d) for d in self.dimensions]}


def _dimension_dict(d: Dimension) -> dict:
    out: dict = {}
    if d.costs is not None:
        out["costs"] = list(d.costs)
    if d.constraints:
        out["constraints"] = [c.text for c in d.constraints]
    if d.fusion is not None:
        out["fusion"] = d.fusion if isinstance(d.fusion, str) else [list(g) for g in d.fusion]
    if d.coincidence is not None:
        out["coincidence"] = d.coincidence
    return out


def _fail(pointer: str, message: str) -> NoReturn:
    raise InstanceError(message, pointer=pointer)


def _choice(value, allowed, pointer: str, what: str) -> str:
    if value not in allowed:
        _fail(pointer, f"{what} {value!r} is not one of {', '.join(map(str, allowed))}")
    return value


def _object(value, pointer: str, fields: tuple, what: str) -> None:
    """``value`` is an object whose keys are among ``fields``."""
    if not isinstance(value, dict):
        _fail(pointer, f"expected an object with {', '.join(fields)}")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        _fail(f"{pointer}/{unknown[0]}", f"unknown {what} {unknown[0]!r}; expected {', '.join(fields)}")


def _bool(value, pointer: str) -> bool:
    if not isinstance(value, bool):
        _fail(pointer, f"expected true or false, got {value!r}")
    return value


def _int(value, pointer: str, low: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        _fail(pointer, f"expected an integer >= {low}, got {value!r}")
    return value


def _costs(value, pointer: str) -> tuple:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        _fail(pointer, f"expected a non-empty list of cost functions from {', '.join(COSTS)}")
    for i, c in enumerate(value):
        _choice(c, COSTS, f"{pointer}/{i}", "cost function")
    if len(set(value)) != len(value):
        _fail(pointer, f"cost functions repeat: {list(value)}")
    return tuple(value)


_TERM = re.compile(r"\s*([+-]?)\s*(?:(\d+)\s*\*?\s*)?([A-Za-z_][A-Za-z0-9_]*|\d+)\s*")


def _parse_side(text: str, statements, pointer: str, full: str):
    """Linear terms and a constant of one side of a constraint."""
    terms, const, pos = [], 0, 0
    text = text.strip()
    if not text:
        _fail(pointer, f"constraint {full!r}: a side is empty")
    while pos < len(text):
        m = _TERM.match(text, pos)
        if not m or m.end() == pos:
            _fail(pointer, f"constraint {full!r}: cannot read {text[pos:]!r}")
        sign = -1 if m.group(1) == "-" else 1
        if pos > 0 and not m.group(1):
            _fail(pointer, f"constraint {full!r}: expected + or - before {m.group(0).strip()!r}")
        mult = int(m.group(2)) if m.group(2) else 1
        name = m.group(3)
        if name.isdigit():
            const += sign * mult * int(name)
        else:
            terms.append((sign * mult,) + _parse_name(name, statements, pointer, full))
        pos = m.end()
    return terms, const


def _parse_name(name: str, statements, pointer: str, full: str) -> tuple:
    for s in sorted(statements, key=len, reverse=True):
        if not name.startswith(s + "_"):
            continue
        rest = name[len(s) + 1:]
        if rest == "cst":
            return (s, "cst", None)
        kind, _, index = rest.partition("_")
        if kind in ("it", "par") and (index == "i" or index.isdigit()):
            return (s, kind, "i" if index == "i" else int(index))
        _fail(pointer, f"constraint {full!r}: {name!r} is not <statement>_it_<k|i>, <statement>_par_<k|i> "
                       f"or <statement>_cst")
    _fail(pointer, f"constraint {full!r}: {name!r} names no statement (statements: {', '.join(statements)})")


def parse_constraint(text: object, statements: Sequence[str], pointer: str) -> Constraint:
    """One PolyTOPS constraint ``lhs OP rhs`` with OP among = == <= >= < >."""
    if not isinstance(text, str):
        _fail(pointer, f"expected a constraint string such as 'S0_it_0 = 0', got {text!r}")
    m = re.fullmatch(r"(.*?)(==|<=|>=|=|<|>)(.*)", text)
    if not m or re.search(r"(==|<=|>=|=|<|>)", m.group(3)):
        _fail(pointer, f"constraint {text!r}: expected one comparison (=, <=, >=, <, >) between two sides")
    lt, lc = _parse_side(m.group(1), statements, pointer, text)
    rt, rc = _parse_side(m.group(3), statements, pointer, text)
    terms = lt + [(-k, *rest) for k, *rest in rt]
    rhs = rc - lc
    op = m.group(2)
    if not terms:
        _fail(pointer, f"constraint {text!r} has no schedule coefficient in it")
    if op in ("<=", "<"):
        terms = [(-k, *rest) for k, *rest in terms]
        rhs = -rhs
        op = ">=" if op == "<=" else ">"
    if op == ">":
        op, rhs = ">=", rhs + 1
    if op in ("=", "=="):
        op = "=="
    return Constraint(tuple(tuple(t) for t in terms), op, rhs, text, pointer)


def _constraints(value, statements, pointer: str) -> tuple:
    if not isinstance(value, (list, tuple)):
        _fail(pointer, "expected a list of constraint strings")
    return tuple(parse_constraint(t, statements, f"{pointer}/{i}") for i, t in enumerate(value))


def _fusion(value, statements, pointer: str):
    if value in FUSIONS:
        return value
    if not isinstance(value, (list, tuple)) or not all(isinstance(g, (list, tuple)) for g in value):
        _fail(pointer, "expected \"smart\", \"min\", \"max\" or a list of statement groups such as "
                       "[[\"S0\", \"S1\"], [\"S2\"]]")
    seen = []
    for i, g in enumerate(value):
        for j, s in enumerate(g):
            if s not in statements:
                _fail(f"{pointer}/{i}/{j}", f"unknown statement {s!r} (statements: {', '.join(statements)})")
            if s in seen:
                _fail(f"{pointer}/{i}/{j}", f"statement {s!r} is in two groups")
            seen.append(s)
    missing = [s for s in statements if s not in seen]
    if missing:
        _fail(pointer, f"the groups leave out statement(s) {missing}; every statement belongs to one group")
    return tuple(tuple(g) for g in value)


def _dimensions(value, statements, pointer: str) -> tuple:
    if not isinstance(value, (list, tuple)):
        _fail(pointer, "expected a list with one object per loop dimension")
    out = []
    for i, d in enumerate(value):
        p = f"{pointer}/{i}"
        if d is None:
            out.append(Dimension())
            continue
        _object(d, p, ("costs", "constraints", "fusion", "coincidence"), "dimension field")
        out.append(Dimension(
            costs=_costs(d["costs"], f"{p}/costs") if "costs" in d else None,
            constraints=_constraints(d.get("constraints", []), statements, f"{p}/constraints"),
            fusion=_fusion(d["fusion"], statements, f"{p}/fusion") if "fusion" in d else None,
            coincidence=_bool(d["coincidence"], f"{p}/coincidence") if "coincidence" in d else None))
    return tuple(out)


def _directives(value, statements, iterators, pointer: str) -> tuple:
    if not isinstance(value, (list, tuple)):
        _fail(pointer, "expected a list of {statement, loop, kind} objects")
    out = []
    for i, d in enumerate(value):
        p = f"{pointer}/{i}"
        _object(d, p, ("statement", "loop", "kind"), "directive field")
        for key in ("statement", "loop", "kind"):
            if key not in d:
                _fail(p, f"the directive has no {key!r}")
        s = d["statement"]
        if s not in statements:
            _fail(f"{p}/statement", f"unknown statement {s!r} (statements: {', '.join(statements)})")
        its = iterators[s]
        loop = d["loop"]
        if isinstance(loop, str) and loop in its:
            loop = its.index(loop)
        if not isinstance(loop, int) or isinstance(loop, bool) or not 0 <= loop < len(its):
            _fail(f"{p}/loop", f"statement {s} has loops {list(range(len(its)))} (iterators {its}); "
                               f"got {d['loop']!r}")
        out.append(Directive(s, loop, _choice(d["kind"], KINDS, f"{p}/kind", "directive kind"), p))
    return tuple(out)


def _bounds(value, pointer: str) -> Bounds:
    _object(value, pointer, ("iterators", "parameters", "constants", "negative"), "bound")
    b = Bounds()
    return Bounds(iterators=_int(value.get("iterators", b.iterators), f"{pointer}/iterators", 1),
                  parameters=_int(value.get("parameters", b.parameters), f"{pointer}/parameters"),
                  constants=_int(value.get("constants", b.constants), f"{pointer}/constants"),
                  negative=_negative(value.get("negative", b.negative), f"{pointer}/negative"))


def _negative(value, pointer: str):
    if value not in (True, False, "auto"):
        _fail(pointer, f"expected true, false or \"auto\", got {value!r}")
    return value


def _tiling(value, pointer: str):
    if value is None or value is False:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return _int(value, pointer, 1)
    if isinstance(value, (list, tuple)) and value:
        return tuple(_int(v, f"{pointer}/{i}", 1) for i, v in enumerate(value))
    _fail(pointer, f"expected a tile size (integer >= 1) or a list of sizes, got {value!r}")


def parse_config(raw: dict | None, statements: Iterable[str], iterators: dict, n_params: int,
                 base: str = BASE) -> Config:
    """Validate a configuration object against the program's statements (names, iterators)."""
    raw = dict(raw or {})
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        _fail(f"{base}/{unknown[0]}", f"unknown schedule option {unknown[0]!r}; expected one of {', '.join(FIELDS)}")
    strategy = _choice(raw.get("strategy", "pluto"), tuple(PRESETS), f"{base}/strategy", "strategy")
    preset = PRESETS[strategy]
    c = Config(strategy=strategy, costs=preset["costs"], band=preset["band"], coincidence=preset["coincidence"],
               auto_vectorize=preset.get("auto_vectorize", False), progression=preset.get("progression", "all"),
               reorder=preset.get("reorder", "contiguity"))
    statements = list(statements)
    updates: dict = {}
    if raw.get("costs") is not None:
        updates["costs"] = _costs(raw["costs"], f"{base}/costs")
    if raw.get("dimensions") is not None:
        updates["dimensions"] = _dimensions(raw["dimensions"], statements, f"{base}/dimensions")
    if raw.get("constraints") is not None:
        updates["constraints"] = _constraints(raw["constraints"], statements, f"{base}/constraints")
    if raw.get("directives") is not None:
        updates["directives"] = _directives(raw["directives"], statements, iterators, f"{base}/directives")
    if raw.get("auto_vectorize") is not None:
        updates["auto_vectorize"] = _bool(raw["auto_vectorize"], f"{base}/auto_vectorize")
    if raw.get("bounds") is not None:
        updates["bounds"] = _bounds(raw["bounds"], f"{base}/bounds")
    if raw.get("fusion") is not None:
        updates["fusion"] = _choice(raw["fusion"], FUSIONS, f"{base}/fusion", "fusion")
    if raw.get("band") is not None:
        updates["band"] = _choice(raw["band"], ("permutable", "dimension"), f"{base}/band", "band")
    if raw.get("coincidence") is not None:
        updates["coincidence"] = _choice(raw["coincidence"], ("outer", "none"), f"{base}/coincidence", "coincidence")
    if raw.get("progression") is not None:
        updates["progression"] = _choice(raw["progression"], ("all", "any"), f"{base}/progression", "progression")
    if raw.get("reorder") is not None:
        updates["reorder"] = _choice(raw["reorder"], ("contiguity", "none"), f"{base}/reorder", "reorder")
    if raw.get("rar") is not None:
        updates["rar"] = _bool(raw["rar"], f"{base}/rar")
    if "tiling" in raw:
        updates["tiling"] = _tiling(raw["tiling"], f"{base}/tiling")
    if raw.get("wavefront") is not None:
        updates["wavefront"] = _bool(raw["wavefront"], f"{base}/wavefront")
    c = replace(c, **updates)
    _check_indices(c, iterators, n_params)
    return c


def _check_indices(c: Config, iterators: dict, n_params: int) -> None:
    """Iterator and parameter indices in constraints exist."""
    every = list(c.constraints) + [k for d in c.dimensions for k in d.constraints]
    for con in every:
        for _, s, kind, index in con.terms:
            if kind == "it" and index != "i" and index >= len(iterators[s]):
                _fail(con.pointer, f"constraint {con.text!r}: statement {s} has {len(iterators[s])} iterator(s) "
                                   f"{iterators[s]}, no index {index}")
            if kind == "par" and index != "i" and index >= n_params:
                _fail(con.pointer, f"constraint {con.text!r}: the program has {n_params} parameter(s), "
                                   f"no index {index}")
