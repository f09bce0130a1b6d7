"""Versioned JSON Schemas (draft 2020-12) for instance and solution files, and readable errors.

The schema files are versioned by name (``instance-1.json`` reads ``dfopt-instance/1``). Every
object of an instance is closed (``additionalProperties: false``) except kernel ``attrs``; of a
solution, the ``fifo``, ``mapping``, ``pipeline`` and ``stats`` objects admit extra fields. The
parts the problem registry defines — the problem names, each problem's ``options`` object (from
its Options fields), the solution's sections — are filled in from :mod:`dfopt.models.registry`
when a schema is first read. :func:`schema_issues` turns jsonschema's errors into ``(path,
message)`` pairs that say what was expected and what was found.

>>> sorted(get_schema("instance")["properties"])[:3]
['description', 'format', 'graph']
>>> for p in problems({"format": "dfopt-instance/1", "name": "x", "problem": "fifo", "colour": 1},
...                   "instance"):
...     print(p)  # doctest: +NORMALIZE_WHITESPACE
/colour: unknown field 'colour' (expected one of: description, format, graph, name, operators, options,
platform, problem, program, sparse)
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Callable, Iterable
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from dfopt.errors import Problem, unknown_name_error
from dfopt.schema.fast import plainly_valid

SCHEMA_KINDS = ("instance", "solution")
_FILES = {"instance": "instance-1.json", "solution": "solution-1.json"}
_TYPE_NAMES = {"integer": "integer", "number": "number", "string": "string", "boolean": "true or false",
               "object": "object", "array": "array", "null": "null"}
_SAME_AS_TYPE = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "const")

Path = tuple
Issue = tuple  # (path, message): path is a tuple of keys (str) and list indices (int)
Labeler = Callable[[Path], "str | None"]


def get_schema(kind: str) -> dict:
    """A fresh copy of the schema of ``kind`` (one of :data:`SCHEMA_KINDS`).

    >>> get_schema("solution")["properties"]["format"]
    {'const': 'dfopt-solution/1'}
    """
    if kind not in _FILES:
        raise unknown_name_error("schema kind", kind, SCHEMA_KINDS)
    return copy.deepcopy(_load(kind))


@cache
def _load(kind: str) -> dict:
    schema = _read(_FILES[kind])
    if kind == "instance":      # the operator-graph schema lives in its own file
        fragment = {k: v for k, v in _read("operators-1.json").items() if k not in ("$schema", "$id")}
        schema["$defs"]["operators"] = fragment
        schema["properties"]["operators"] = {"$ref": "#/$defs/operators"}
        fragment = {k: v for k, v in _read("sparse-1.json").items() if k not in ("$schema", "$id")}
        schema["$defs"]["sparse"] = fragment
        schema["properties"]["sparse"] = {"$ref": "#/$defs/sparse"}
    _from_registry(kind, schema)
    return schema


def _from_registry(kind: str, schema: dict) -> None:
    """The parts of a schema that the problem registry defines: the problem names and (instance)
    each problem's ``options`` object, from its Options fields."""
    from dfopt.models import registry

    names = list(registry.names())
    if kind == "instance":
        schema["$defs"]["problem"] = {"type": "string", "enum": names}
        props = {}
        for name in names:
            problem = registry.get_problem(name)
            props[name] = problem.options_schema()
        from dfopt.explore.space import SCHEMA as explore_schema

        props["explore"] = explore_schema
        schema["$defs"]["options"] = {"type": "object", "description": "options per problem name",
                                      "properties": props, "additionalProperties": False}
    else:
        schema["properties"]["problem"] = {"type": "string", "enum": names}


def _read(name: str) -> dict:
    return json.loads(resources.files("dfopt.schema").joinpath(name).read_text(encoding="utf-8"))


@cache
def _validator(kind: str, definition: str | None) -> Draft202012Validator:
    schema = _load(kind)
    if definition is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"],
                  "$ref": f"#/$defs/{definition}"}
    return Draft202012Validator(schema)


def schema_issues(data: Any, kind: str, definition: str | None = None,
                  label: Labeler | None = None) -> list[Issue]:
    """Every schema fault of ``data`` as ``(path, message)``, in document path order.

    ``definition`` validates against one ``$defs`` entry instead (e.g. ``"graph"``); ``label``
    maps a path to the name of the entity it sits in (``"stream 'e2'"``), used as a prefix.

    >>> schema_issues({"kernels": [{"name": "a", "ii": 0}]}, "instance", "graph")
    [(('kernels', 0, 'ii'), 'expected integer >= 1 and <= 1099511627776, got 0')]
    """
    if kind not in _FILES:
        raise unknown_name_error("schema kind", kind, SCHEMA_KINDS)
    data, deferred = _split_large_arrays(data, kind, definition)
    errors = [((), e) for e in _keep_best(_validator(kind, definition).iter_errors(data))]
    for prefix, entry, entry_definition in deferred:
        errors += [(prefix, e) for e in _keep_best(_validator(kind, entry_definition).iter_errors(entry))]
    issues = []
    for prefix, err in errors:
        for path, message in _messages(err):
            path = prefix + path
            who = label(path) if label else None
            issues.append((path, f"{who}: {message}" if who else message))
    return sorted_issues(issues)


_LARGE_ARRAYS = {"kernels": "kernel", "streams": "stream"}


def _split_large_arrays(data, kind: str, definition: str | None):
    """Take the graph's kernel and stream arrays out of ``data`` for the fast pre-check.

    Returns the document without them and the entries jsonschema must still check, each as
    (path prefix, entry, definition name). Entries the pre-check passes are not re-checked.
    """
    if kind != "instance" or definition not in (None, "graph") or not isinstance(data, dict):
        return data, []
    graph = data.get("graph") if definition is None else data
    if not isinstance(graph, dict):
        return data, []
    base = ("graph",) if definition is None else ()
    defs = _load("instance")["$defs"]
    slim, deferred = dict(graph), []
    for key, entry_def in _LARGE_ARRAYS.items():
        entries = graph.get(key)
        if not isinstance(entries, list):
            continue
        slim[key] = []
        deferred += [(base + (key, i), e, entry_def) for i, e in enumerate(entries)
                     if not plainly_valid(e, defs[entry_def])]
    if definition is None:
        data = dict(data)
        data["graph"] = slim
        return data, deferred
    return slim, deferred


def schema_issues_for(value: Any, fragment: dict) -> list[Issue]:
    """The faults of ``value`` against a schema fragment (e.g. an option's), as ``(path, message)``.

    >>> schema_issues_for([1, "x"], {"type": "array", "items": {"type": "integer"}})
    [((1,), "expected integer, got 'x'")]
    """
    validator = _fragment_validator(json.dumps(fragment, sort_keys=True))
    issues = []
    for err in _keep_best(validator.iter_errors(value)):
        issues += _messages(err)
    return sorted_issues(issues)


@lru_cache(maxsize=256)
def _fragment_validator(text: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(text))


def problems(data: Any, kind: str, definition: str | None = None,
             label: Labeler | None = None) -> list[Problem]:
    """:func:`schema_issues` as :class:`~dfopt.errors.Problem` entries (JSON pointers)."""
    return to_problems(schema_issues(data, kind, definition, label))


# -- paths and ordering -----------------------------------------------------------------------

def pointer(path: Path) -> str:
    """The JSON pointer (RFC 6901) of a path.

    >>> pointer(("graph", "streams", 2, "a/b"))
    '/graph/streams/2/a~1b'
    """
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def path_key(path: Path) -> tuple:
    """Sort key that orders list indices numerically (``/2`` before ``/10``)."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)


def sorted_issues(issues: Iterable[Issue]) -> list[Issue]:
    """Issues sorted by path (stable), without exact duplicates."""
    seen, out = set(), []
    for issue in sorted(issues, key=lambda i: path_key(i[0])):
        if issue not in seen:
            seen.add(issue)
            out.append(issue)
    return out


def to_problems(issues: Iterable[Issue]) -> list[Problem]:
    return [Problem(pointer(path), message) for path, message in sorted_issues(issues)]


# -- jsonschema errors to messages ------------------------------------------------------------

def _keep_best(errors) -> list:
    """Per path, a type error hides the other errors there (they would only repeat it)."""
    errors = list(errors)
    typed: dict = {}
    for err in errors:
        if err.validator == "type":
            path = tuple(err.absolute_path)
            best = typed.get(path)
            if best is None or len(err.relative_schema_path) < len(best.relative_schema_path):
                typed[path] = err
    return [e for e in errors if tuple(e.absolute_path) not in typed or typed[tuple(e.absolute_path)] is e]


def _messages(err) -> list[Issue]:
    path = tuple(err.absolute_path)
    kind = err.validator
    if kind in _SAME_AS_TYPE:
        return [(path, f"expected {describe(err.schema)}, got {found(err.instance)}")]
    if kind == "additionalProperties":
        return _unknown_field_messages(err, path)
    if kind == "required":
        conditional = "then" in err.relative_schema_path and "description" in err.schema
        hint = f" ({err.schema['description']})" if conditional else ""
        missing = [repr(f) for f in err.validator_value if isinstance(err.instance, dict) and f not in err.instance]
        plural = "s" if len(missing) > 1 else ""
        return [(path, f"missing required field{plural} {', '.join(missing)}{hint}")] if missing else []
    if kind == "enum":
        return [(path, _enum_message(err, path))]
    if kind in ("minItems", "maxItems"):
        bound = "at least" if kind == "minItems" else "at most"
        return [(path, f"expected {bound} {err.validator_value} items, got {found(err.instance)}")]
    if kind in ("anyOf", "oneOf") and err.context:
        return _messages(_closest_branch(err))
    return [(path, err.message)]


def _closest_branch(err):
    """Of the alternatives of an ``anyOf``, the fault of the one the value came closest to: the
    deepest error, so that a list of blocks with one bad field names that field."""
    from jsonschema.exceptions import relevance

    return max(err.context, key=lambda e: (len(e.absolute_path), e.validator != "type", relevance(e)))


def _unknown_field_messages(err, path: Path) -> list[Issue]:
    known = sorted(err.schema.get("properties", {}))
    out = []
    for extra in sorted(set(err.instance) - set(known), key=str):
        hint = did_you_mean(str(extra), known)
        listing = ", ".join(known) or "none"
        out.append((path + (extra,), f"unknown field {str(extra)!r}{hint} (expected one of: {listing})"))
    return out


def _enum_message(err, path: Path) -> str:
    choices = [str(c) for c in err.validator_value]
    listing = ", ".join(choices)
    field = next((p for p in reversed(path) if isinstance(p, str)), "value")
    if isinstance(err.instance, str):
        return f"unknown {field} {err.instance!r}{did_you_mean(err.instance, choices)} (expected one of: {listing})"
    return f"expected one of: {listing}; got {found(err.instance)}"


def did_you_mean(name: str, choices: Iterable[object]) -> str:
    """``", did you mean 'x'?"`` for the closest choices, or an empty string.

    >>> did_you_mean("tokns", ["tokens", "width"])
    ", did you mean 'tokens'?"
    """
    close = difflib.get_close_matches(name, [str(c) for c in choices], n=2, cutoff=0.6)
    if not close:
        return ""
    return ", did you mean " + " or ".join(repr(c) for c in close) + "?"


def describe(schema: dict) -> str:
    """A short phrase for what a (sub)schema accepts.

    >>> describe({"type": "number", "exclusiveMinimum": 0, "maximum": 1})
    'number > 0 and <= 1'
    >>> describe({"type": ["integer", "null"], "minimum": 0})
    'integer >= 0 or null'
    """
    if "const" in schema:
        return found(schema["const"])
    if "enum" in schema:
        return "one of: " + ", ".join(str(c) for c in schema["enum"])
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    main = [t for t in types if t != "null"]
    text = " or ".join(_describe_type(t, schema) for t in main) or "a value"
    return text + (" or null" if "null" in types else "")


def _describe_type(name: str, schema: dict) -> str:
    if name == "string" and schema.get("minLength") == 1:
        return "non-empty string"
    if name in ("integer", "number"):
        bounds = [f"{op} {schema[key]}" for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"),
                                                        ("maximum", "<="), ("exclusiveMaximum", "<"))
                  if key in schema]
        return " ".join([name, " and ".join(bounds)]) if bounds else name
    if name == "array" and isinstance(schema.get("items"), dict) and "type" in schema["items"]:
        return f"array of {describe(schema['items'])}"
    return _TYPE_NAMES.get(name, name)


def found(value: object) -> str:
    """How a found JSON value is shown in a message.

    >>> found("abc"), found(None), found(True), found([1, 2]), found({"a": 1})
    ("'abc'", 'null', 'true', '[1, 2]', 'an object')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            text = ""
        return text if text and len(text) <= 40 else f"an array of {len(value)} items"
    return f"a Python {type(value).__name__}"
