"""Token order of an itensor type, in Python and as C++ loop nests (the one rule every generated
loop follows, so that producer, consumer and converter agree by construction).

A type's tokens come from the loop nest ``tripcounts`` (outermost first); the tile of a token
starts, along data dimension ``d``, at ``index[map[d]] * steps[map[d]]`` (0 when ``map[d]`` is
None: the tile spans the whole dimension). Loops that drive no data dimension re-send the same
tiles (reuse).

>>> from dfopt.ir.itensor import ITensorType
>>> t = ITensorType("f32", (4, 4), (2, 4), (2, 3), (2, 1), (0, None))   # 3x reuse, whole dim 1
>>> list(tile_order(t))
[(0, 0), (0, 0), (0, 0), (2, 0), (2, 0), (2, 0)]
>>> print("\\n".join(loop_nest(t, "i", ["emit(o0, o1);"])))
for (int i0 = 0; i0 < 2; ++i0) {
  for (int i1 = 0; i1 < 3; ++i1) {
    const int o0 = i0 * 2;
    const int o1 = 0;
    emit(o0, o1);
  }
}
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

from dfopt.ir.itensor import ITensorType

INDENT = "  "


def tile_order(t: ITensorType) -> Iterator[tuple[int, ...]]:
    """For each token of ``t`` in stream order, the offsets of its tile in the tensor."""
    for index in itertools.product(*(range(int(n)) for n in t.tripcounts)):
        yield tuple(0 if m is None else index[m] * int(t.steps[m]) for m in t.map)


def offset_exprs(t: ITensorType, var: str, loops: dict | None = None) -> list[str]:
    """C++ expressions of the tile offsets, one per data dimension; ``loops`` maps an iteration
    dimension to the name of its loop variable (default ``<var><dim>``)."""
    names = loops or {}
    out = []
    for m in t.map:
        if m is None:
            out.append("0")
        else:
            out.append(f"{names.get(m, f'{var}{m}')} * {int(t.steps[m])}")
    return out


def loop_nest(t: ITensorType, var: str, body: list[str], offsets: str = "o",
              skip: set | None = None) -> list[str]:
    """C++ lines: the loop nest of ``t`` (loop variables ``<var>0``, ``<var>1``, ...), defining
    ``const int <offsets><d>`` per data dimension around ``body``. Iteration dimensions in
    ``skip`` get no loop (their variable must be defined by an enclosing loop)."""
    skip = skip or set()
    lines, depth = [], 0
    for i, n in enumerate(t.tripcounts):
        if i in skip:
            continue
        lines.append(INDENT * depth + f"for (int {var}{i} = 0; {var}{i} < {int(n)}; ++{var}{i}) {{")
        depth += 1
    pad = INDENT * depth
    for d, expr in enumerate(offset_exprs(t, var)):
        lines.append(f"{pad}const int {offsets}{d} = {expr};")
    lines += [pad + line for line in body]
    for level in range(depth - 1, -1, -1):
        lines.append(INDENT * level + "}")
    return lines


def element_loops(shape: Sequence[int], var: str, body: list[str], pipeline: bool = True) -> list[str]:
    """C++ lines: nested loops over a tile's ``shape`` (variables ``<var>0``, ...) around
    ``body``, with ``#pragma HLS pipeline II=1`` on the innermost loop."""
    lines, depth = [], 0
    for d, n in enumerate(shape):
        lines.append(INDENT * depth + f"for (int {var}{d} = 0; {var}{d} < {int(n)}; ++{var}{d}) {{")
        depth += 1
        if pipeline and d == len(shape) - 1:
            lines.append(INDENT * depth + "#pragma HLS pipeline II=1")
    lines += [INDENT * depth + line for line in body]
    for level in range(depth - 1, -1, -1):
        lines.append(INDENT * level + "}")
    return lines


def flat_index(coords: list[str], shape: Sequence[int]) -> str:
    """The row-major flat index expression of ``coords`` in an array of ``shape``."""
    terms = []
    for d, c in enumerate(coords):
        stride = math.prod(int(s) for s in shape[d + 1:])
        terms.append(c if stride == 1 else f"({c}) * {stride}")
    return " + ".join(terms) if terms else "0"


def indent(lines: list[str], levels: int = 1) -> list[str]:
    """``lines`` indented by ``levels`` steps."""
    return [INDENT * levels + line for line in lines]
