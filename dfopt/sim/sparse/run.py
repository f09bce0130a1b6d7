"""The functional token simulator: runs a SAM primitive graph on the operands' data, primitive by
primitive in topological order, each on its whole input streams.

>>> from dfopt.ir.sparse.concrete import concretize
>>> from dfopt.ir.sparse.formats import named
>>> from dfopt.ir.sparse.notation import parse
>>> from dfopt.ir.sparse.sam import lower
>>> from dfopt.ir.sparse.tensor import Coo, SparseTensor
>>> c = concretize(parse("y(i) = A(i,j) * x(j)"), {"A": named("csr", 2), "x": named("dense", 1),
...                "y": named("dense", 1)}, {"i": 2, "j": 3})
>>> A = SparseTensor.from_coo("A", Coo((2, 3), [[0, 0], [0, 2], [1, 1]], [1, 2, 3]), "csr")
>>> x = SparseTensor.from_coo("x", Coo((3,), [[0], [1], [2]], [10, 20, 30]), "dense")
>>> res = simulate(lower(c, {}), {"A": A, "x": x})
>>> res.result.values.tolist(), res.units["scan_A.1"].tokens_out, res.arrays["x.vals"].gather
([70, 60], 12, True)
"""

from __future__ import annotations

from dfopt.ir.sparse.concrete import Concrete
from dfopt.ir.sparse.sam import SamGraph, SamNode
from dfopt.ir.sparse.tensor import SparseTensor
from dfopt.sim.sparse.primitives import (
    Context,
    accumulator,
    alu,
    array,
    bitvector_gen,
    bitvector_join,
    bitvector_scan,
    crd_drop,
    joiner,
    locate,
    reducer,
    repeater,
    scanner,
)
from dfopt.sim.sparse.result import SimResult, UnitCount
from dfopt.sim.sparse.streams import Stream
from dfopt.sim.sparse.writers import level_writer, vals_writer


def _writer(node: SamNode, ins, ctx):
    return (vals_writer if node.attrs["level"] == "vals" else level_writer)(node, ins, ctx)


PRIMITIVES = {"scanner": scanner, "locate": locate, "repeater": repeater, "joiner": joiner, "bv_gen": bitvector_gen,
              "bv_join": bitvector_join, "bv_scan": bitvector_scan, "array": array, "alu": alu, "reducer": reducer,
              "accumulator": accumulator, "crd_drop": crd_drop, "writer": _writer}


def _check_tensors(c: Concrete, tensors: dict[str, SparseTensor]) -> None:
    workspaces = {a.name for a in c.accumulators}
    for op in c.operands:
        if op.tensor in workspaces:
            continue
        t = tensors.get(op.tensor)
        if t is None:
            raise ValueError(f"no data for tensor {op.tensor!r}; given: {', '.join(sorted(tensors)) or 'none'}")
        fmt = c.formats[op.tensor]
        if (t.format.levels, t.format.order) != (fmt.levels, fmt.order):
            raise ValueError(f"tensor {op.tensor!r} is stored as {t.format} but the graph reads it as {fmt}")
        want = tuple(c.dims[i] for i in op.indices)
        if tuple(t.shape) != want:
            raise ValueError(f"tensor {op.tensor!r} has shape {tuple(t.shape)} but its indices "
                             f"({', '.join(op.indices)}) have sizes {want}")


def _register(c: Concrete, tensors: dict[str, SparseTensor], ctx: Context) -> None:
    """Every array of every operand that no primitive touched, so that it still has facts."""
    for op in c.operands:
        t = tensors.get(op.tensor)
        if t is None or op.name != op.tensor:
            continue
        for k, level in enumerate(t.levels):
            above = op.storage[k - 1] if k else None
            if level.pos is not None:
                ctx.log(f"{t.name}.{k}.pos", t.name, "pos", "read", above, len(level.pos))
            if level.crd is not None:
                ctx.log(f"{t.name}.{k}.crd", t.name, "crd", "read", op.storage[k], len(level.crd))
        ctx.log(f"{t.name}.vals", t.name, "vals", "read", op.storage[-1] if op.storage else None, len(t.vals))


def _run(graph: SamGraph, tensors: dict[str, SparseTensor]):
    c = graph.concrete
    _check_tensors(c, tensors)
    ctx = Context(tensors, c.dims)
    outs: dict[str, dict] = {}
    units: dict[str, UnitCount] = {}
    for name in graph.topological_order():
        node = graph.nodes[name]
        ins = {s.dst_port: outs[s.src][s.src_port] for s in graph.inputs(name)}
        produced, work = PRIMITIVES[node.kind](node, ins, ctx)
        outs[name] = produced
        units[name] = UnitCount(node.kind, node.loop, sum(s.tokens for s in ins.values()),
                                sum(s.tokens for s in produced.values()), int(work))
    _register(c, tensors, ctx)
    return ctx, outs, units


def run_streams(graph: SamGraph, tensors: dict[str, SparseTensor]) -> dict[str, Stream]:
    """Every stream of ``graph`` run on ``tensors``, by stream name (for inspecting the tokens).

    >>> from dfopt.ir.sparse.concrete import concretize
    >>> from dfopt.ir.sparse.formats import named
    >>> from dfopt.ir.sparse.notation import parse
    >>> from dfopt.ir.sparse.sam import lower
    >>> from dfopt.ir.sparse.tensor import Coo, SparseTensor
    >>> from dfopt.sim.sparse.streams import encode
    >>> c = concretize(parse("y(i) = A(i,j) * x(j)"), {"A": named("csr", 2), "x": named("dense", 1),
    ...                "y": named("dense", 1)}, {"i": 2, "j": 3})
    >>> A = SparseTensor.from_coo("A", Coo((2, 3), [[0, 0], [0, 2], [1, 1]], [1, 2, 3]), "csr")
    >>> x = SparseTensor.from_coo("x", Coo((3,), [[0], [1], [2]], [10, 20, 30]), "dense")
    >>> encode(run_streams(lower(c, {}), {"A": A, "x": x})["scan_A.1.crd->locate_x.0.crd"])
    [0, 2, 'S0', 1, 'S1', 'D']
    """
    _, outs, _ = _run(graph, tensors)
    return {s.name: outs[s.src][s.src_port] for s in graph.streams}


def simulate(graph: SamGraph, tensors: dict[str, SparseTensor]) -> SimResult:
    """Run ``graph`` on ``tensors`` (every operand, stored in the format the graph reads): the
    result assembled from the writers' streams, the tokens of every stream and primitive, the
    statistics of every join and the access facts of every array. Operands that are missing, or
    stored in another format or shape than the graph reads, raise ``ValueError``.
    """
    c = graph.concrete
    ctx, outs, units = _run(graph, tensors)
    runs = {s.name: outs[s.src][s.src_port] for s in graph.streams}
    streams = {name: s.tokens for name, s in runs.items()}
    nests = {f"@{a.name}": (len(a.outer), tuple(c.loops.index(f) + 1 for f in a.holds)) for a in c.accumulators}
    arrays = {name: log.facts(c.loops, nests) for name, log in ctx.logs.items()}
    lhs = c.assignment.lhs
    fmt = c.formats[lhs.tensor]
    output = SparseTensor(lhs.tensor, tuple(c.dims[i] for i in lhs.indices), fmt,
                          [ctx.written[k] for k in range(fmt.rank)], ctx.written["vals"])
    return SimResult(output.to_coo(), streams, units, dict(ctx.joins), arrays, output, runs)
