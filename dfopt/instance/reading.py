"""Reading instance files: text, JSON, schema and semantic validation, then the IR."""

from __future__ import annotations

import json
import logging
import os
from functools import partial
from typing import Any

from dfopt.errors import InstanceError, Problem
from dfopt.instance.common import _constant, _Faulty, _float, _int, _label, _non_finite_issues, _Unreadable
from dfopt.instance.convert import _build
from dfopt.instance.semantics import _semantic_issues
from dfopt.instance.types import _INSTANCE_ENTITIES, Instance
from dfopt.io import StrPath
from dfopt.schema import schema_issues, to_problems

log = logging.getLogger(__name__)

# == loading ==================================================================================

def load(path: StrPath) -> Instance:
    """Read, validate and build the instance in the JSON file ``path``.

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "missing.json")
    >>> try:
    ...     load(p)
    ... except InstanceError as err:
    ...     "no such file" in str(err)
    True
    """
    instance = loads(_read_text(path, "instance"), source=os.fspath(path))
    instance.path = os.fspath(path)
    return instance


def loads(text: str, source: str = "<string>") -> Instance:
    """Parse JSON text and build the instance; ``source`` names the input in the log.

    >>> try:
    ...     loads('{"name": "x"\\n "problem": "fifo"}')
    ... except InstanceError as err:
    ...     print(err)
    /: invalid JSON at line 2, column 2: Expecting ',' delimiter
    """
    return _from_data(_parse_json(text), source, finite_checked=True)


def from_dict(data: dict, source: str = "<dict>") -> Instance:
    """Validate ``data`` (parsed JSON) and build the instance; raises one InstanceError with
    every problem found. NaN and infinite floats are refused, each with its JSON pointer.

    >>> try:
    ...     from_dict({"format": "dfopt-instance/1", "name": "x", "problem": "fifo", "graph": {
    ...         "kernels": [{"name": "a", "resources": {"bytes": float("inf"), "lut": float("nan")}}]}})
    ... except InstanceError as err:
    ...     print(err)
    /graph/kernels/0/resources/bytes: expected a finite number, got Infinity
    /graph/kernels/0/resources/lut: expected a finite number, got NaN
    """
    return _from_data(data, source, finite_checked=False)


def _from_data(data, source: str, finite_checked: bool) -> Instance:
    found_problems = _validate(data, finite_checked)
    if found_problems:
        log.debug("instance from %s has %d problem(s)", source, len(found_problems))
        raise InstanceError(problems=found_problems)
    return _build(data)


def validate_dict(data: dict) -> list[Problem]:
    """Every problem of an instance (non-finite numbers; else schema, then meaning), sorted by
    JSON pointer; never raises.

    >>> [str(p) for p in validate_dict({"format": "dfopt-instance/1", "name": "x",
    ...                                 "problem": "fifo", "graph": {"kernels": [{"name": 3}]}})]
    ['/graph/kernels/0/name: expected non-empty string, got 3']
    """
    return _validate(data, finite_checked=False)


def _validate(data, finite_checked: bool) -> list[Problem]:
    """:func:`validate_dict`; ``finite_checked`` skips the walk for NaN and infinities (text the
    reader parsed has none left)."""
    bad = _non_finite_issues(data)      # the reader refused unreadable numbers; not deep nesting or bad text
    if bad:
        return to_problems(bad)
    issues = schema_issues(data, "instance", label=partial(_label, data, _INSTANCE_ENTITIES))
    if isinstance(data, dict):
        issues += _semantic_issues(data, _Faulty(issues))
    return to_problems(issues)


def _read_text(path, what: str) -> str:
    shown = repr(os.fspath(path))
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError as err:
        raise InstanceError(f"cannot read {what} file {shown}: no such file") from err
    except UnicodeDecodeError as err:
        raise InstanceError(f"{what} file {shown} is not UTF-8 text ({err.reason})") from err
    except OSError as err:
        raise InstanceError(f"cannot read {what} file {shown}: {err.strerror or err}") from err


def _parse_json(text: str):
    """The JSON value of ``text``. Raises :class:`InstanceError` for a syntax error, and for
    numbers dfopt cannot hold (NaN, Infinity, -Infinity, literals beyond the float64 range,
    integers with more digits than Python reads), listing every one with its JSON pointer.

    >>> try:
    ...     _parse_json('{"a": [1, NaN], "b": {"c": -Infinity, "d": 1e999}}')
    ... except InstanceError as err:
    ...     print(err)
    /a/1: expected a finite number, got NaN
    /b/c: expected a finite number, got -Infinity
    /b/d: expected a finite number, got 1e999 (beyond the float64 range, about 1.8e308)
    """
    unreadable: list = []

    def keep(value):
        if isinstance(value, _Unreadable):
            unreadable.append(value)
        return value

    try:
        data = _loads(text, keep)
    except json.JSONDecodeError as err:
        raise InstanceError(f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from err
    except RecursionError as err:
        raise InstanceError("invalid JSON: nested too deeply") from err
    if unreadable:
        raise InstanceError(problems=to_problems(_non_finite_issues(data)))
    return data


def _loads(text: str, keep):
    """:func:`json.loads` with every unreadable number passed through ``keep`` as an
    :class:`_Unreadable`; integers are hooked only when one exceeds Python's digit limit (the
    hook slows parsing by a third)."""
    hooks: dict[str, Any] = {"parse_constant": lambda t: keep(_constant(t)), "parse_float": lambda t: keep(_float(t))}
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError:
        raise
    except ValueError:
        return json.loads(text, parse_int=lambda t: keep(_int(t)), **hooks)
