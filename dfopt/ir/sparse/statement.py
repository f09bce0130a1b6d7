"""The ``sparse`` object of a ``problem: sparse`` instance: one statement in TACO's index notation,
the formats, regions and data of its tensors, and Stardust's scheduling commands.

```json
{"expression": "y(i) = A(i,j) * x(j)",
 "tensors": {"A": {"format": "csr", "data": "bar.mtx"},
             "x": {"format": "dense", "data": {"random": {"seed": 1}}},
             "y": {"format": "dense"}},
 "schedule": [{"command": "environment", "inner_par": 16}]}
```

Commands: ``reorder`` (the loop order), ``precompute`` (names the workspace that accumulates a
reduction placed outside free indices, its format and region), ``accelerate`` / ``map`` (a loop
onto a backend pattern: ``reduce``, ``foreach``, ``vector_mul``, ``bulk_load``, ``bulk_store``),
``environment`` (the largest inner and outer parallelisation, Stardust's ``nnz_accel_max``).
:func:`statement_issues` reports every fault with its path; :meth:`SparseStatement.from_dict`
raises them together.

>>> st = SparseStatement.from_dict({"expression": "y(i) = A(i,j) * x(j)",
...     "tensors": {"A": {"format": "csr", "data": "a.mtx"}, "x": {"format": "dense", "data": "x.npz"},
...                 "y": {"format": "dense"}}})
>>> st.result, st.operands, st.tensors["A"].format.levels
('y', ('A', 'x'), ('dense', 'compressed'))
>>> statement_issues({"expression": "y(i) = A(i,j) * x(j)", "tensors": {"A": {"format": "csr"}}})[0][1]
"the expression uses tensor 'y' that /sparse/tensors does not declare"
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from dfopt.errors import InstanceError, Problem
from dfopt.ir.sparse.formats import LEVEL_KINDS, NAMED_FORMATS, Format, format_issues, named
from dfopt.ir.sparse.notation import Assignment, NotationError, index_vars, parse, reduction_indices, tensors

PATTERNS = ("reduce", "foreach", "vector_mul", "bulk_load", "bulk_store")
REGIONS = ("off_chip", "on_chip")

Path = tuple
Issue = tuple  # (path, message)


@dataclass(frozen=True)
class TensorDecl:
    """One tensor: its level format, region, declared shape (or None) and data spec (operands)."""

    name: str
    format: Format
    region: str = "off_chip"
    shape: tuple | None = None
    data: Any = None


@dataclass(frozen=True)
class Workspace:
    """A ``precompute`` command: the workspace accumulating reduction ``index``."""

    name: str
    index: str
    expr: str | None = None
    format: str = "dense"
    region: str = "on_chip"


@dataclass(frozen=True)
class SparseStatement:
    """A parsed, checked ``sparse`` object (see the module docstring)."""

    expression: str
    assignment: Assignment
    tensors: dict
    reorder: tuple | None = None
    workspaces: tuple = ()
    patterns: dict = field(default_factory=dict)
    inner_par: int | None = None
    outer_par: int | None = None
    nnz_accel_max: int = 4096
    raw: dict = field(default_factory=dict, compare=False)

    @property
    def result(self) -> str:
        return self.assignment.lhs.tensor

    @property
    def operands(self) -> tuple:
        """The tensors read, in declaration order."""
        return tuple(n for n in self.tensors if n != self.result)

    @property
    def indices(self) -> tuple:
        return index_vars(self.assignment)

    @classmethod
    def from_dict(cls, d: Any, base: tuple = ("sparse",)) -> SparseStatement:
        issues = statement_issues(d, base)
        if issues:
            raise InstanceError(problems=[Problem(_pointer(p), m) for p, m in issues])
        return _build(d)

    def to_dict(self) -> dict:
        return dict(self.raw)


def _pointer(path: Path) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def parse_format(spec: Any, order: Any, rank: int) -> tuple[Format | None, list[str]]:
    """The :class:`Format` of a tensor's ``format`` and ``order`` fields, or the faults.

    >>> parse_format("csc", None, 2)[0].order
    (1, 0)
    >>> parse_format(["dense", "compresed"], None, 2)[1]  # doctest: +NORMALIZE_WHITESPACE
    ["level 1: unknown level kind 'compresed'; expected one of dense, compressed, singleton
      (did you mean 'compressed'?)"]
    """
    if isinstance(spec, str):
        if spec not in NAMED_FORMATS:
            close = difflib.get_close_matches(spec, NAMED_FORMATS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return None, [f"unknown format {spec!r} (expected one of {', '.join(NAMED_FORMATS)}, or a list of "
                          f"level kinds){hint}"]
        try:
            fmt = named(spec, rank)
        except ValueError as err:
            return None, [str(err)]
        if order is not None and tuple(order) != fmt.order:
            return None, [f"format {spec!r} stores modes in order {list(fmt.order)}; give 'order' only with a "
                          "list of level kinds"]
        return fmt, []
    if not isinstance(spec, (list, tuple)) or not all(isinstance(k, str) for k in spec):
        return None, ["a format is a name or a list of level kinds (dense, compressed, singleton)"]
    if order is not None and (not isinstance(order, (list, tuple)) or
                              not all(isinstance(k, int) and not isinstance(k, bool) for k in order)):
        return None, ["'order' lists the mode stored at each level, as integers"]
    levels = tuple(spec)
    order_t = tuple(order) if order is not None else tuple(range(len(levels)))
    faults = format_issues(levels, order_t, rank)
    return (None, faults) if faults else (Format(levels, order_t), [])


def statement_issues(d: Any, base: tuple = ("sparse",)) -> list[Issue]:
    """Every fault of a ``sparse`` object as ``(path, message)`` (the schema's structure assumed)."""
    if not isinstance(d, dict) or not isinstance(d.get("expression"), str) or not isinstance(d.get("tensors"), dict):
        return [(base, "a sparse statement needs 'expression' (index notation) and 'tensors'")]
    try:
        assignment = parse(d["expression"])
    except NotationError as err:
        return [(base + ("expression",), str(err))]
    issues = _tensor_issues(d["tensors"], assignment, base + ("tensors",))
    schedule = d.get("schedule", [])
    if isinstance(schedule, list):
        issues += _schedule_issues([c for c in schedule], assignment, d["tensors"], base + ("schedule",))
    return issues


def _tensor_issues(decls: dict, assignment: Assignment, base: tuple) -> list[Issue]:
    used = tensors(assignment)
    where = "/" + "/".join(map(str, base))
    issues: list[Issue] = [(base, f"the expression uses tensor {name!r} that {where} does not declare")
                           for name in used if name not in decls]
    result = assignment.lhs.tensor
    for name, decl in decls.items():
        at = base + (name,)
        if name not in used:
            close = difflib.get_close_matches(name, list(used), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            issues.append((at, f"tensor {name!r} is not used by the expression{hint}"))
            continue
        if not isinstance(decl, dict):
            continue
        rank = used[name]
        fmt_spec = decl.get("format", "dense")
        fmt, faults = parse_format(fmt_spec, decl.get("order"), rank)
        issues += [(at + ("format",), f"tensor {name!r}: {m}") for m in faults]
        shape = decl.get("shape")
        if isinstance(shape, list) and len(shape) != rank:
            issues.append((at + ("shape",), f"tensor {name!r} has {rank} indices in the expression but a shape of "
                                            f"{len(shape)} extents"))
        if name == result and "data" in decl:
            issues.append((at + ("data",), f"tensor {name!r} is the result: it has no data"))
        if name != result and "data" not in decl:
            issues.append((at, f"operand {name!r} needs 'data' (a .mtx, .tns or .npz file, random or graph)"))
    return issues


def _schedule_issues(commands: list, assignment: Assignment, decls: dict, base: tuple) -> list[Issue]:
    issues: list[Issue] = []
    indices = index_vars(assignment)
    reductions = reduction_indices(assignment)
    allowed = {"reorder": {"order"}, "precompute": {"expr", "index", "workspace", "format", "region"},
               "accelerate": {"index", "pattern"}, "map": {"index", "pattern"},
               "environment": {"inner_par", "outer_par", "nnz_accel_max"}}
    seen_ws: set[str] = set()
    seen_index: set[str] = set()
    for n, cmd in enumerate(commands):
        at = base + (n,)
        if not isinstance(cmd, dict):
            continue            # the schema says what a command must be
        kind = cmd.get("command")
        if not isinstance(kind, str):
            continue            # the schema names the missing or mistyped command
        extra = sorted(set(cmd) - {"command"} - allowed.get(kind, set()))
        if extra:
            issues.append((at + (extra[0],), f"command {kind!r} takes no field {extra[0]!r} (it takes "
                                              f"{', '.join(sorted(allowed.get(kind, ())))})"))
            continue
        if kind == "reorder":
            order = cmd.get("order")
            if not isinstance(order, list) or not all(isinstance(i, str) for i in order) \
                    or sorted(order) != sorted(indices):
                issues.append((at + ("order",), f"reorder needs every index once: {list(indices)}, got {order}"))
        elif kind == "precompute":
            index = cmd.get("index")
            if not isinstance(index, str) or index not in reductions:
                issues.append((at + ("index",), f"precompute accumulates a reduction index; {index!r} is not one "
                                                f"(reduction indices: {list(reductions) or 'none'})"))
            elif index in seen_index:
                issues.append((at + ("index",), f"reduction index {index!r} already has a workspace"))
            else:
                seen_index.add(index)
            ws = cmd.get("workspace")
            if isinstance(ws, str) and (ws in decls or ws in seen_ws):
                issues.append((at + ("workspace",), f"workspace name {ws!r} is already a tensor or workspace"))
            if isinstance(ws, str):
                seen_ws.add(ws)
            if isinstance(cmd.get("expr"), str):
                try:
                    parse(f"_ws = {cmd['expr']}")
                except NotationError as err:
                    issues.append((at + ("expr",), f"precompute expr: {err.reason}"))
        elif kind in ("accelerate", "map"):
            index = cmd.get("index")
            if not isinstance(index, str) or index not in indices:
                issues.append((at + ("index",), f"{kind} names index {index!r}; the indices are {list(indices)}"))
            elif cmd.get("pattern") == "reduce" and index not in reductions:
                issues.append((at + ("pattern",), f"pattern 'reduce' needs a reduction index; {index!r} is free"))
            elif cmd.get("pattern") in ("foreach", "vector_mul") and index in reductions:
                issues.append((at + ("pattern",), f"pattern {cmd.get('pattern')!r} runs a free index; {index!r} is "
                                                  "summed (use 'reduce')"))
            if "pattern" not in cmd:
                issues.append((at, f"{kind} needs a 'pattern' ({', '.join(PATTERNS)})"))
    return issues


def _build(d: dict) -> SparseStatement:
    assignment = parse(d["expression"])
    used = tensors(assignment)
    decls = {}
    for name, decl in d["tensors"].items():
        fmt, _ = parse_format(decl.get("format", "dense"), decl.get("order"), used[name])
        assert fmt is not None  # statement_issues ran
        shape = tuple(decl["shape"]) if "shape" in decl else None
        decls[name] = TensorDecl(name, fmt, decl.get("region", "off_chip"), shape, decl.get("data"))
    reorder, workspaces, patterns = None, [], {}
    env: dict = {}
    for cmd in d.get("schedule", []):
        kind = cmd["command"]
        if kind == "reorder":
            reorder = tuple(cmd["order"])
        elif kind == "precompute":
            workspaces.append(Workspace(cmd.get("workspace") or f"w_{cmd['index']}", cmd["index"], cmd.get("expr"),
                                        cmd.get("format", "dense"), cmd.get("region", "on_chip")))
        elif kind in ("accelerate", "map"):
            patterns[cmd["index"]] = cmd["pattern"]
        else:
            env.update({k: v for k, v in cmd.items() if k != "command"})
    return SparseStatement(d["expression"], assignment, decls, reorder, tuple(workspaces), patterns,
                           env.get("inner_par"), env.get("outer_par"), env.get("nnz_accel_max", 4096), raw=d)


__all__ = ["LEVEL_KINDS", "NAMED_FORMATS", "PATTERNS", "REGIONS", "SparseStatement", "TensorDecl", "Workspace",
           "parse_format", "statement_issues"]
