"""Reading instance files: text, JSON, schema and semantic validation, then the IR."""

from __future__ import annotations

import json
import logging
import os
from functools import partial

from dfopt.errors import InstanceError, Problem
from dfopt.instance.convert import _build
from dfopt.instance.common import _Faulty, _label
from dfopt.instance.semantics import _semantic_issues
from dfopt.instance.types import _INSTANCE_ENTITIES, Instance
from dfopt.schema import schema_issues, to_problems

log = logging.getLogger(__name__)

# == loading ==================================================================================

def load(path) -> Instance:
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
    return from_dict(_parse_json(text), source=source)


def from_dict(data: dict, source: str = "<dict>") -> Instance:
    """Validate ``data`` (parsed JSON) and build the instance; raises one InstanceError with
    every problem found."""
    found_problems = validate_dict(data)
    if found_problems:
        log.debug("instance from %s has %d problem(s)", source, len(found_problems))
        raise InstanceError(problems=found_problems)
    return _build(data)


def validate_dict(data: dict) -> list[Problem]:
    """Every problem of an instance (schema, then meaning), sorted by JSON pointer; never raises.

    >>> [str(p) for p in validate_dict({"format": "dfopt-instance/1", "name": "x",
    ...                                 "problem": "fifo", "graph": {"kernels": [{"name": 3}]}})]
    ['/graph/kernels/0/name: expected non-empty string, got 3']
    """
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
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InstanceError(f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from err
    except RecursionError as err:
        raise InstanceError("invalid JSON: nested too deeply") from err
