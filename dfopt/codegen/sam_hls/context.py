"""What a process generator works with: the primitive's :class:`Context` (its input streams, output
:class:`Port` s, arrays and the kernel's data), the :class:`Code` it writes, the :class:`Fifo` s.

One process per primitive (``p_<node>``), one FIFO per stream of the graph (``s_<stream>``), and one
per workspace read (``w_<workspace>``: the values an accumulator drains, in the order of the
references it emits, to the array reader of the workspace). An output port that feeds several
streams writes each token to every one of them; its tokens are counted once per port
(:class:`Port`), which is each of its streams' count.

A FIFO's depth comes from the tokens the token-level run counts on its stream (it counts what the
processes write, :mod:`dfopt.sim.sparse.streams`), by the policy of :data:`DEPTHS`: the graph forks
and joins again (repeaters, joiners, writers reading the coordinates of outer loops), so a FIFO
must hold what one branch writes while the other is still behind. An output port holds its last
stop token back until it knows whether the next closing merges into it (SAM's ``S1`` closes two
fibres in one token), so every port on a path can keep its consumers one iteration of the outermost
loop behind: the ``iteration`` policy sizes each FIFO for as many consecutive iterations as the
graph has processes, plus one.

>>> ident_of_stream("scan_A.0.ref->scan_A.1.ref")
's_scan_A_0_ref__scan_A_1_ref'
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dfopt.codegen.hls.emit import ident
from dfopt.codegen.sam_hls.arrays import ArraySpec
from dfopt.errors import CodegenError

#: C token type of each stream kind
TOKEN = {"crd": "tok_t", "ref": "tok_t", "val": "vtok_t", "bv": "bvtok_t"}


def ident_of_stream(name: str) -> str:
    return "s_" + ident(name.replace("->", "__"))


class Code:
    """C++ lines at an indentation (two spaces a level; preprocessor lines at the margin).

    >>> c = Code()
    >>> with c.block("for (;;) {"):
    ...     c("break;")
    >>> c.lines
    ['  for (;;) {', '    break;', '  }']
    """

    def __init__(self, level: int = 1):
        self.lines: list[str] = []
        self.level = level

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.lines.append(line if line.startswith("#") else "  " * self.level + line)

    @contextmanager
    def block(self, head: str, tail: str = "}") -> Iterator[None]:
        self(head)
        self.level += 1
        yield
        self.level -= 1
        self(tail)


@dataclass
class Fifo:
    """One ``hls::stream``: C variable, name (the graph stream's), token type, depth, tokens the run
    counted (None for a workspace FIFO), the port that writes it and the process that reads it."""

    var: str
    name: str
    ctype: str
    depth: int
    tokens: int | None
    port: int
    src: str
    dst: str


@dataclass
class Port:
    """An output port of a process: its streams' parameters in the process, nesting depth, counter."""

    name: str
    params: list[str]
    depth: int
    id: int
    ctype: str


@dataclass
class Context:
    """What a process generator sees: the node, its inputs (port -> (parameter, stream depth,
    kind)), its output ports, the arrays it touches (binding name -> ArraySpec) and the kernel's
    data (:class:`~dfopt.models.sparse.problem.SparseData`), machine word bits and value type."""

    node: Any
    fn: str
    inputs: dict[str, tuple[str, int, str]]
    outputs: dict[str, Port]
    arrays: dict[str, ArraySpec]
    data: Any
    params: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def attrs(self) -> dict:
        return self.node.attrs

    def has(self, port: str) -> bool:
        return port in self.inputs

    def inp(self, port: str) -> str:
        if port not in self.inputs:
            raise CodegenError(f"primitive {self.node.name} ({self.node.kind}): no input stream on port {port!r}")
        return self.inputs[port][0]

    def depth(self, port: str) -> int:
        return self.inputs[port][1]

    def out_depth(self, port: str) -> int | None:
        return self.outputs[port].depth if port in self.outputs else None

    def code(self) -> Code:
        """A body that starts with the declarations of the output ports' states."""
        c = Code()
        c(*(f"sam::Port P_{ident(p.name)}({p.depth}, {p.id});" for p in self.outputs.values()))
        return c

    def _call(self, fn: str, port: str, *args: str) -> list[str]:
        p = self.outputs.get(port)
        if p is None:
            return []
        return [f"sam::{fn}(P_{ident(port)}, {', '.join([*args, *p.params])});"]

    def leaf(self, port: str, value: str) -> list[str]:
        return self._call("leaf", port, value)

    def close(self, port: str, level: str) -> list[str]:
        return self._call("close", port, level)

    def follow(self, port: str, token: str, shift: int = 0) -> list[str]:
        return self._call("follow", port, token, str(shift))

    def finish_all(self) -> list[str]:
        return [line for p in self.outputs for line in self._call("finish", p)]

    def array(self, name: str) -> ArraySpec:
        if name not in self.arrays:
            raise CodegenError(f"primitive {self.node.name} ({self.node.kind}) reads array {name!r}, which the "
                               f"design does not bind")
        return self.arrays[name]

    def refuse(self, why: str) -> CodegenError:
        return CodegenError(f"primitive {self.node.name} ({self.node.kind}) cannot be emitted: {why}")


def token_type(kind: str) -> str:
    return TOKEN[kind]


#: FIFO depth policies: ``iteration`` (the default: the most tokens of the stream in a window of
#: consecutive iterations of the outermost loop, one more than the graph has processes, + 2) and
#: ``stream`` (the whole stream: no write ever blocks)
DEPTHS = ("iteration", "stream")


def iteration_tokens(stream: Any) -> np.ndarray:
    """The tokens of a run's stream (a :class:`~dfopt.sim.sparse.streams.Stream`) inside each
    coordinate of the outermost loop: its leaves, innermost fibres and empty fibres there (a stream of
    depth 1: one token each; of depth 0: its one leaf).

    >>> from dfopt.sim.sparse.streams import Stream
    >>> s = Stream("crd", np.array([1, 2, 3, 4]), (np.array([0, 3]), np.array([0, 1, 1, 3]), np.array([0, 1, 3, 4])))
    >>> iteration_tokens(s).tolist()    # the third outermost point: two fibres below it, three leaves
    [2, 1, 5]
    """
    segs, depth = stream.segs, len(stream.segs)
    if depth < 2:
        return np.ones(max(1, stream.leaves) if depth else 1, dtype=np.int64)
    lo = np.arange(len(segs[1]) - 1, dtype=np.int64)       # fibres at nesting 1: one per outermost point
    hi = lo + 1
    tokens = np.zeros(len(lo), dtype=np.int64)
    for level in range(1, depth - 1):                      # empty fibres above the innermost
        empty = np.concatenate([[0], np.cumsum(segs[level][1:] == segs[level][:-1])])
        tokens += empty[hi] - empty[lo]
        lo, hi = segs[level][lo], segs[level][hi]
    tokens += hi - lo                                      # innermost fibres: a stop token each
    width = getattr(stream, "width", None)
    tokens += (hi - lo) * width if width is not None else segs[-1][hi] - segs[-1][lo]
    return tokens


def window_tokens(per_iteration: np.ndarray, window: int) -> int:
    """The most tokens in ``window`` consecutive iterations of the outermost loop.

    >>> window_tokens(np.array([2, 1, 5, 0, 1]), 2), window_tokens(np.array([2, 1]), 5)
    (6, 3)
    """
    if not len(per_iteration):
        return 0
    cum = np.concatenate([[0], np.cumsum(per_iteration)])
    w = min(max(1, window), len(per_iteration))
    return int((cum[w:] - cum[:-w]).max())


def stream_depth(tokens: int, window: int | None = None) -> int:
    """The depth of a FIFO that carries ``tokens`` in all, or (policy ``iteration``) at most
    ``window`` tokens in the window of outermost iterations in flight (see the module docstring)."""
    return max(2, int(tokens) if window is None else min(int(tokens), int(window) + 2))
