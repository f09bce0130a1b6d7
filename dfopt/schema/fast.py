"""A fast pre-check for the large, flat arrays of an instance (kernels and streams).

jsonschema spends about a millisecond per kernel or stream; a 100k-kernel graph would take
minutes. Most entries are flat objects of strings and bounded integers, so :func:`plainly_valid`
checks those against the same schema definition directly and answers True only when the entry
certainly conforms: every value of the right type and within the definition's ``minimum`` and
``maximum`` (a finite number; integers must be Python ints, so an integral float such as ``1e308``
is left to jsonschema). Anything it does not fully understand (a ``$ref`` property such as an
itensor type, a list, a keyword it does not know) answers False, and jsonschema then checks that
entry and words its errors.

>>> from dfopt.schema import _load
>>> d = _load("instance")["$defs"]
>>> plainly_valid({"name": "k0", "delay": 3, "ii": 1}, d["kernel"])
True
>>> plainly_valid({"name": "k0", "ii": 0}, d["kernel"]), plainly_valid({"name": "k0", "x": 1}, d["kernel"])
(False, False)
>>> plainly_valid({"name": "k0", "ii": 2**62}, d["kernel"]), plainly_valid({"name": "k0", "ii": 4.0}, d["kernel"])
(False, False)
"""

from __future__ import annotations

import math

_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}
_KNOWN = frozenset({"type", "minimum", "maximum", "minLength", "description"})
_RULES: dict = {}   # id(property schema) -> (schema, rule); the schemas live as long as the process


def _rule(schema: dict):
    """``(python types, is boolean, minimum, maximum, min length)`` of a flat property schema, or
    None when the schema has a keyword this pre-check does not evaluate."""
    hit = _RULES.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    kind = schema.get("type")
    rule = None
    if kind in _TYPES and _KNOWN.issuperset(schema):
        rule = (_TYPES[kind], kind == "boolean", schema.get("minimum"), schema.get("maximum"),
                schema.get("minLength"))
    _RULES[id(schema)] = (schema, rule)
    return rule


#: bounds of a per-token schedule (``$defs/token_schedule``): cycles, trips; checked here directly
#: because a traced schedule may have a million blocks (jsonschema: minutes)
_CYCLE_MAX = 2**50
_TRIP_MAX = 2**40
_SCHEDULE_REF = "#/$defs/token_schedule"


def _plain_int(v, lo: int, hi: int) -> bool:
    return type(v) is int and lo <= v <= hi


def _plain_schedule(value) -> bool:
    """True when ``value`` is certainly a valid token schedule: a list of cycles, or of blocks
    ``{"offset", "loops": [[trip, stride], ...]}`` within the definition's bounds."""
    if not isinstance(value, list):
        return False
    if all(type(v) is int for v in value):
        return len(value) <= 4194304 and all(0 <= v <= _CYCLE_MAX for v in value)
    if len(value) > 1048576:
        return False
    for b in value:
        if type(b) is not dict or not _plain_int(b.get("offset"), 0, _CYCLE_MAX) or not set(b) <= {"offset", "loops"}:
            return False
        loops = b.get("loops", [[1, 0]])
        if type(loops) is not list or not 1 <= len(loops) <= 8:
            return False
        for lp in loops:
            if (type(lp) is not list or len(lp) != 2 or not _plain_int(lp[0], 1, _TRIP_MAX)
                    or not _plain_int(lp[1], 0, _CYCLE_MAX)):
                return False
    return True


def _plain_value(value, schema: dict) -> bool:
    """True when ``value`` certainly satisfies the flat ``schema`` of one property."""
    if schema.get("$ref") == _SCHEDULE_REF:
        return _plain_schedule(value)
    rule = _rule(schema)
    if rule is None:
        return False
    types, boolean, lo, hi, min_length = rule
    if isinstance(value, bool) != boolean or not isinstance(value, types):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if (lo is not None and not value >= lo) or (hi is not None and not value <= hi):
        return False
    return min_length is None or len(value) >= min_length


def plainly_valid(entry: object, schema: dict) -> bool:
    """True when ``entry`` certainly satisfies the object ``schema`` (False: ask jsonschema)."""
    if not isinstance(entry, dict) or schema.get("additionalProperties") is not False:
        return False
    props = schema.get("properties", {})
    if any(key not in entry for key in schema.get("required", ())):
        return False
    condition = schema.get("if", {}).get("not", {}).get("required")
    if condition is not None and not any(k in entry for k in condition):
        if any(k not in entry for k in schema.get("then", {}).get("required", ())):
            return False
    elif "if" in schema and condition is None:
        return False
    return all(key in props and _plain_value(value, props[key]) for key, value in entry.items())
