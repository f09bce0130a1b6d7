"""Helpers shared by the instance checks: entity names and labels, list entries, messages."""

from __future__ import annotations

from dfopt.ir.itensor import ITensorType
from dfopt.schema import did_you_mean, pointer

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
    first, issues = {}, []
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
