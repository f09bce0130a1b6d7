"""itensor types (StreamTensor): how a tensor streams as a sequence of equal tiles.

The iteration space is the loop nest ``tripcounts`` x ``steps`` (outermost first); ``map[i]`` is
the iteration dimension that drives data dimension ``i`` (``None``: the element spans the whole
dimension). Iteration dimensions that drive no data dimension re-iterate (reuse) the data. One
token is one element (tile).

>>> t = ITensorType("f32", (8, 8), (4, 2), (4, 2), (2, 4), (1, 0))
>>> t.tokens, t.token_bits
(8, 256)
>>> str(t)
'itensor<4x2xf32, [4,2]*[2,4], (d0,d1)->(d1,d0)>'
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

DTYPE_BITS = {
    "i1": 1, "i4": 4, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64,
    "f8": 8, "bf16": 16, "f16": 16, "f32": 32, "f64": 64,
}


@dataclass(frozen=True)
class ITensorType:
    """A streamed tensor type; see the module docstring."""

    dtype: str
    shape: tuple
    element: tuple
    tripcounts: tuple
    steps: tuple
    map: tuple

    @property
    def tokens(self) -> int:
        """Tokens in the stream: the product of the tripcounts."""
        return math.prod(self.tripcounts)

    @property
    def element_count(self) -> int:
        return math.prod(self.element)

    @property
    def token_bits(self) -> int:
        """Bits of one token (one element tile)."""
        return self.element_count * DTYPE_BITS[self.dtype]

    def problems(self) -> list[tuple[str, str]]:
        """Structural faults as (field, message) pairs; empty when the type is well formed."""
        out = []
        rank, depth = len(self.shape), len(self.tripcounts)
        if self.dtype not in DTYPE_BITS:
            out.append(("dtype", f"unknown dtype {self.dtype!r}; expected one of {sorted(DTYPE_BITS)}"))
        if len(self.element) != rank or len(self.map) != rank:
            out.append(("element", f"shape, element and map must have the same rank {rank}"))
            return out
        if len(self.steps) != depth:
            out.append(("steps", f"expected {depth} steps (one per tripcount), got {len(self.steps)}"))
            return out
        for name, seq in (("shape", self.shape), ("element", self.element), ("tripcounts", self.tripcounts)):
            if any(int(v) < 1 for v in seq):
                out.append((name, f"entries must be positive, got {list(seq)}"))
        if out:
            return out
        used = [m for m in self.map if m is not None]
        if len(set(used)) != len(used):
            out.append(("map", f"an iteration dimension drives two data dimensions: {list(self.map)}"))
        for i, m in enumerate(self.map):
            if m is not None and not 0 <= m < depth:
                out.append(("map", f"map[{i}] = {m} is outside the {depth} iteration dimensions"))
            elif self.shape[i] % self.element[i]:
                out.append(("element",
                            f"element {self.element[i]} does not divide shape {self.shape[i]} in dimension {i}"))
            elif m is None and self.element[i] != self.shape[i]:
                out.append(("map",
                            f"data dimension {i} is not iterated, so its element must span the shape {self.shape[i]}"))
            elif m is not None and self.tripcounts[m] * self.steps[m] != self.shape[i]:
                out.append(("tripcounts", f"dimension {i}: tripcount {self.tripcounts[m]} x step {self.steps[m]} "
                                          f"does not cover shape {self.shape[i]}"))
            elif m is not None and self.steps[m] != self.element[i]:
                out.append(("steps", f"dimension {i}: step {self.steps[m]} differs from element {self.element[i]} "
                                     "(tiles must not overlap or leave gaps)"))
        return out

    def __str__(self) -> str:
        elem = "x".join(str(e) for e in self.element)
        trips = ",".join(str(t) for t in self.tripcounts)
        steps = ",".join(str(s) for s in self.steps)
        dims = ",".join(f"d{i}" for i in range(len(self.tripcounts)))
        res = ",".join("0" if m is None else f"d{m}" for m in self.map)
        return f"itensor<{elem}x{self.dtype}, [{trips}]*[{steps}], ({dims})->({res})>"

    def to_dict(self) -> dict:
        return {"dtype": self.dtype, "shape": list(self.shape), "element": list(self.element),
                "tripcounts": list(self.tripcounts), "steps": list(self.steps), "map": list(self.map)}

    @classmethod
    def from_dict(cls, d: dict) -> ITensorType:
        return cls(d["dtype"], tuple(d["shape"]), tuple(d["element"]), tuple(d["tripcounts"]),
                   tuple(d["steps"]), tuple(d["map"]))


def loop_nest_type(dtype: str, shape: Iterable[int], loops: Sequence[Any], indices: Iterable[str | None], *,
                   output: bool = False) -> ITensorType:
    """The itensor type of one tensor port of a tiled loop nest (Linalg-to-dataflow conversion).

    ``loops`` are the kernel's tiled loops, outermost first: objects or dicts with ``name``,
    ``tripcount``, ``step`` and ``kind`` (``parallel`` | ``reduction``). ``indices[d]`` names the
    loop whose induction variable offsets data dimension ``d`` (the slice offset ``i * step``), or
    is ``None`` when the port reads the whole dimension. The element is the slice (the loop's step,
    or the whole dimension); loops that index no dimension re-iterate the tile. For an ``output``
    port the reduction loops that index none of its dimensions are dropped: the tile is written
    once, after its reduction.

    Matmul ``C[i, j] += A[i, k] * B[k, j]`` tiled 4x4x8 over 16x16x32, loops (i, j, k):

    >>> L = [{"name": "i", "tripcount": 4, "step": 4}, {"name": "j", "tripcount": 4, "step": 4},
    ...      {"name": "k", "tripcount": 4, "step": 8, "kind": "reduction"}]
    >>> str(loop_nest_type("f32", (16, 32), L, ["i", "k"]))
    'itensor<4x8xf32, [4,4,4]*[4,4,8], (d0,d1,d2)->(d0,d2)>'
    >>> c = loop_nest_type("f32", (16, 16), L, ["i", "j"], output=True)
    >>> str(c), c.tokens
    ('itensor<4x4xf32, [4,4]*[4,4], (d0,d1)->(d0,d1)>', 16)
    """
    def get(loop, key, default=None):
        return loop.get(key, default) if isinstance(loop, dict) else getattr(loop, key, default)

    shape, indices = tuple(int(s) for s in shape), list(indices)
    if len(indices) != len(shape):
        raise ValueError(f"indices {indices} must name one loop (or None) per dimension of shape {list(shape)}")
    names = [get(lp, "name") for lp in loops]
    used = {n for n in indices if n is not None}
    unknown = used - set(names)
    if unknown:
        raise ValueError(f"indices name unknown loops {sorted(unknown)}; the nest has {names}")
    kept = [lp for lp in loops
            if not (output and get(lp, "kind", "parallel") == "reduction" and get(lp, "name") not in used)]
    position = {get(lp, "name"): i for i, lp in enumerate(kept)}
    element = tuple(shape[d] if n is None else int(get(kept[position[n]], "step", 1))
                    for d, n in enumerate(indices))
    return ITensorType(dtype, shape, element,
                       tuple(int(get(lp, "tripcount")) for lp in kept),
                       tuple(int(get(lp, "step", 1)) for lp in kept),
                       tuple(None if n is None else position[n] for n in indices))
