"""Helpers shared by the instance checks: entity names and labels, list entries, messages, and
the numbers JSON text may hold but dfopt refuses (NaN, infinities, unreadable literals)."""

from __future__ import annotations

import math
import re
import sys
from typing import Any

from dfopt.ir.itensor import ITensorType
from dfopt.schema import did_you_mean, found, pointer


class _Faulty:
    """The paths that already have schema faults; checks skip values under them."""

    def __init__(self, issues):
        self.paths = [path for path, _ in issues]

    def clean(self, path: tuple) -> bool:
        return not any(p[:len(path)] == path for p in self.paths)


def _label(root, entities: dict, path: tuple) -> str | None:
    """``"stream 'e2'"`` for a path inside the stream named e2 (see ``entities``), else None."""
    for prefix, kind in entities.items():
        n = len(prefix)
        if path[:n] != prefix or len(path) <= n:
            continue
        if kind == "array":
            return f"array {path[n]!r}"
        entry = _at(root, path[:n + 1])
        name = entry.get("name") if isinstance(entry, dict) else None
        return f"{kind} {name!r}" if isinstance(name, str) and name else None
    return None


def _at(root, path: tuple):
    """The value at ``path`` in nested dicts and lists, or None."""
    for key in path:
        if isinstance(root, dict) and key in root:
            root = root[key]
        elif isinstance(root, list) and isinstance(key, int) and 0 <= key < len(root):
            root = root[key]
        else:
            return None
    return root


def _entries(value) -> list[tuple[int, dict]]:
    """(index, entry) of the object entries of a JSON list (anything else: none)."""
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


def _name(entry: dict) -> str | None:
    name = entry.get("name")
    return name if isinstance(name, str) and name else None


def _who(kind: str, entry: dict, index: int) -> str:
    name = _name(entry)
    return f"{kind} {name!r}" if name else f"{kind} #{index}"


def _unknown(kind: str, name: str, known) -> str:
    """``"unknown kernel 'kk1', did you mean 'k1'?"`` or with the known names listed."""
    known = list(known)
    hint = did_you_mean(name, known)
    if hint:
        return f"unknown {kind} {name!r}{hint}"
    shown = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
    return f"unknown {kind} {name!r} (known {kind}s: {shown or 'none'})"


def _duplicate_names(entries, base: tuple, kind: str) -> tuple[list, dict]:
    """Issues for repeated names, and the index of each name's first entry."""
    first: dict[str, int] = {}
    issues: list[tuple[tuple, str]] = []
    for i, entry in entries:
        name = _name(entry)
        if name is None:
            continue
        if name in first:
            issues.append((base + (i, "name"), f"duplicate {kind} name {name!r} (first at "
                                               f"{pointer(base + (first[name],))}); {kind} names must be unique"))
        else:
            first[name] = i
    return issues, first


def _itensor_from_dict(d: dict) -> ITensorType:
    ints = lambda key: tuple(int(v) for v in d[key])  # noqa: E731
    return ITensorType(d["dtype"], ints("shape"), ints("element"), ints("tripcounts"), ints("steps"),
                       tuple(None if m is None else int(m) for m in d["map"]))


# == numbers JSON cannot hold exactly =========================================================

class _Unreadable:
    """Stands in for a number the reader keeps out of the data: NaN, Infinity, -Infinity, a
    literal beyond the float64 range (``1e400``) or an integer with too many digits."""

    __slots__ = ("text", "message")

    def __init__(self, text: str, message: str):
        self.text, self.message = text, message


def _constant(name: str) -> _Unreadable:
    """``parse_constant`` hook of :func:`json.loads` (NaN, Infinity, -Infinity)."""
    return _Unreadable(name, f"expected a finite number, got {name}")


def _float(text: str):
    """``parse_float`` hook: the float, or an :class:`_Unreadable` when it overflows float64."""
    value = float(text)
    if math.isinf(value):
        return _Unreadable(text, f"expected a finite number, got {text} (beyond the float64 range, "
                                 "about 1.8e308)")
    return value


def _int(text: str):
    """``parse_int`` hook: the int, or an :class:`_Unreadable` when Python refuses its digits."""
    try:
        return int(text)
    except ValueError:
        return _Unreadable(text, f"expected a number, got an integer of {len(text.lstrip('-'))} digits "
                                 f"(at most {sys.get_int_max_str_digits()} are read)")


#: the deepest nesting of lists and objects a document may have (dfopt's deepest is about 8)
MAX_DEPTH = 64
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


def _non_finite_issues(data) -> list[tuple[tuple, str]]:
    """Every NaN, infinity or unreadable number in parsed JSON (or a Python dict), every string
    (value or key) with a NUL or a lone surrogate (no UTF-8 encoding holds it, no backend takes
    it), and lists or objects nested deeper than :data:`MAX_DEPTH`, as ``(path, message)`` in
    document order.

    >>> _non_finite_issues({"a": [1.0, float("nan")], "b": {"c": float("-inf")}})
    [(('a', 1), 'expected a finite number, got NaN'), (('b', 'c'), 'expected a finite number, got -Infinity')]
    >>> _non_finite_issues({"n": "a" + chr(0xD800), "x": [[[1]]]})
    [(('n',), 'expected text without NUL characters or lone surrogates')]
    """
    if not _has_unreadable(data):
        return []
    issues: list[tuple[tuple, str]] = []
    stack: list[tuple[tuple, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, (dict, list)) and len(path) >= MAX_DEPTH:
            issues.append((path, f"nested more than {MAX_DEPTH} levels deep"))
        elif isinstance(value, dict):
            for k in value:
                if isinstance(k, str) and _BAD_TEXT.search(k):
                    issues.append((path, f"the key {ascii(k)[:40]} has NUL characters or lone surrogates"))
            stack.extend((path + (k,), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, float) and not math.isfinite(value):
            issues.append((path, f"expected a finite number, got {found(value)}"))
        elif isinstance(value, _Unreadable):
            issues.append((path, value.message))
        elif isinstance(value, str) and _BAD_TEXT.search(value):
            issues.append((path, "expected text without NUL characters or lone surrogates"))
    return issues


def _has_unreadable(data) -> bool:
    """Whether parsed JSON holds a NaN, an infinity, an :class:`_Unreadable`, a string with a NUL
    or a lone surrogate, or nesting deeper than :data:`MAX_DEPTH` (a quick scan without paths:
    about 0.1 s for a 100k-kernel graph)."""
    stack: list[tuple[Any, int]] = [([data], 0)]
    bad = _BAD_TEXT.search
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if type(node) is dict:
            if any(type(k) is str and bad(k) for k in node):
                return True
            values = node.values()
        else:
            values = node
        for value in values:
            kind = type(value)
            if kind is dict or kind is list:
                stack.append((value, depth + 1))
            elif kind is str:
                if bad(value):
                    return True
            elif (kind is float and value - value != 0.0) or kind is _Unreadable:
                return True
            elif isinstance(value, (dict, list)):          # subclasses: the slow, general walk
                stack.append((value, depth + 1))
            elif isinstance(value, float) and not math.isfinite(value):
                return True
    return False
