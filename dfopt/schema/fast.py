"""A fast pre-check for the large, flat arrays of an instance (kernels and streams).

jsonschema spends about a millisecond per kernel or stream; a 100k-kernel graph would take
minutes. Most entries are flat objects of strings and bounded integers, so :func:`plainly_valid`
checks those against the same schema definition directly and answers True only when the entry
certainly conforms. Anything it does not fully understand (a ``$ref`` property such as an
itensor type, a list) answers False, and jsonschema then checks that entry and words its errors.

>>> from dfopt.schema import _load
>>> d = _load("instance")["$defs"]
>>> plainly_valid({"name": "k0", "delay": 3, "ii": 1}, d["kernel"])
True
>>> plainly_valid({"name": "k0", "ii": 0}, d["kernel"]), plainly_valid({"name": "k0", "x": 1}, d["kernel"])
(False, False)
"""

from __future__ import annotations

_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}


def _plain_value(value, schema: dict) -> bool:
    kind = schema.get("type")
    if kind not in _TYPES or set(schema) - {"type", "minimum", "minLength", "description"}:
        return False
    if isinstance(value, bool) != (kind == "boolean") or not isinstance(value, _TYPES[kind]):
        return False
    if "minimum" in schema and value < schema["minimum"]:
        return False
    return "minLength" not in schema or len(value) >= schema["minLength"]


def plainly_valid(entry, schema: dict) -> bool:
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
