"""Level formats (TACO's format abstraction): a tensor is stored as a tree of levels, one per mode.

``levels[k]`` is the kind of storage level ``k`` and ``order[k]`` the tensor mode it stores; CSR is
``(dense, compressed)`` in order ``(0, 1)``, CSC the same levels in order ``(1, 0)``. A dense level
stores every coordinate of its mode under each parent position; a compressed level stores the
nonzero coordinates of each parent (``pos`` and ``crd`` arrays); a singleton level stores one
coordinate per parent position (``crd`` only), below a compressed level that then keeps one entry
per nonzero, duplicates included (TACO's COO).

>>> fmt = named("csc", 2)
>>> fmt.levels, fmt.order, fmt.mode_level(0)
(('dense', 'compressed'), (1, 0), 1)
>>> named("coo", 3).levels, named("coo", 3).unique(0)
(('compressed', 'singleton', 'singleton'), False)
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

LEVEL_KINDS = ("dense", "compressed", "singleton")

NAMED_FORMATS = ("dense", "csr", "csc", "dcsr", "dcsc", "coo", "csf", "sparse_vector")


def format_issues(levels: Sequence[str], order: Sequence[int], rank: int) -> list[str]:
    """Every fault of a level format for a tensor of ``rank`` modes; empty when it is well formed.

    >>> print(*format_issues(("dense", "compresed"), (0, 1), 2))
    level 1: unknown level kind 'compresed'; expected one of dense, compressed, singleton (did you mean 'compressed'?)
    >>> format_issues(("singleton", "dense"), (0, 0), 2)
    ['order (0, 0) is not a permutation of the modes 0..1', 'level 0: a singleton level cannot be the first level; \
it needs a compressed or singleton level above it']
    """
    out = []
    if len(levels) != rank:
        out.append(f"expected {rank} levels for a rank-{rank} tensor, got {len(levels)}")
    if len(order) != rank:
        out.append(f"expected {rank} order entries for a rank-{rank} tensor, got {len(order)}")
    for k, kind in enumerate(levels):
        if kind not in LEVEL_KINDS:
            close = difflib.get_close_matches(str(kind), LEVEL_KINDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            out.append(f"level {k}: unknown level kind {kind!r}; expected one of {', '.join(LEVEL_KINDS)}{hint}")
    if not all(isinstance(m, int) and not isinstance(m, bool) for m in order):
        out.append(f"order {tuple(order)} must hold integer mode numbers")
    elif sorted(order) != list(range(len(order))):
        out.append(f"order {tuple(order)} is not a permutation of the modes 0..{len(order) - 1}")
    for k, kind in enumerate(levels):
        if kind != "singleton":
            continue
        if k == 0:
            out.append(f"level {k}: a singleton level cannot be the first level; it needs a compressed or "
                       f"singleton level above it")
        elif levels[k - 1] == "dense":
            out.append(f"level {k}: a singleton level cannot follow a dense level; it needs a compressed or "
                       f"singleton level above it")
    return out


@dataclass(frozen=True)
class Format:
    """A level format: ``levels[k]`` is the kind of storage level ``k``, ``order[k]`` the mode it stores.

    >>> Format(("compressed", "compressed"), (1, 0)).mode_level(1)
    0
    """

    levels: tuple[str, ...]
    order: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "levels", tuple(self.levels))
        object.__setattr__(self, "order", tuple(self.order))
        issues = format_issues(self.levels, self.order, len(self.levels))
        if issues:
            raise ValueError("; ".join(issues))

    @property
    def rank(self) -> int:
        return len(self.levels)

    def unique(self, k: int) -> bool:
        """Whether level ``k`` stores each coordinate once per parent: false only for a compressed
        level followed by a singleton level, which keeps one entry per nonzero below it.

        >>> [named("coo", 2).unique(k) for k in range(2)]
        [False, True]
        """
        return not (self.levels[k] == "compressed" and k + 1 < self.rank and self.levels[k + 1] == "singleton")

    def mode_level(self, mode: int) -> int:
        """The storage level that stores tensor mode ``mode`` (the inverse of ``order``).

        >>> named("csc", 2).mode_level(1)
        0
        """
        return self.order.index(mode)

    def __str__(self) -> str:
        return f"({', '.join(self.levels)}) order {self.order}"


def named(name: str, rank: int) -> Format:
    """The format called ``name`` for a tensor of ``rank`` modes: ``dense``, ``coo`` and ``csf`` for
    any rank, ``csr``, ``csc``, ``dcsr`` and ``dcsc`` for matrices, ``sparse_vector`` for vectors.

    >>> named("dcsr", 2)
    Format(levels=('compressed', 'compressed'), order=(0, 1))
    >>> named("csr", 3)
    Traceback (most recent call last):
    ...
    ValueError: format 'csr' is for rank-2 tensors, not rank 3; for any rank use one of dense, coo, csf
    """
    identity = tuple(range(rank))
    if name == "dense":
        return Format(("dense",) * rank, identity)
    if name == "csf":
        return Format(("compressed",) * rank, identity)
    if name == "coo":
        return Format((("compressed",) + ("singleton",) * (rank - 1)) if rank else (), identity)
    fixed = {
        "csr": (2, ("dense", "compressed"), (0, 1)),
        "csc": (2, ("dense", "compressed"), (1, 0)),
        "dcsr": (2, ("compressed", "compressed"), (0, 1)),
        "dcsc": (2, ("compressed", "compressed"), (1, 0)),
        "sparse_vector": (1, ("compressed",), (0,)),
    }
    if name not in fixed:
        raise ValueError(f"unknown format {name!r}; expected one of: {', '.join(NAMED_FORMATS)}")
    want, levels, order = fixed[name]
    if rank != want:
        raise ValueError(f"format {name!r} is for rank-{want} tensors, not rank {rank}; for any rank use one of "
                         f"dense, coo, csf")
    return Format(levels, order)
