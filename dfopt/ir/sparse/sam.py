"""The SAM primitive graph of a concrete statement (the sparse abstract machine, Hsu et al., ASPLOS
2023): :func:`lower` builds it as SAM's compiler does, :meth:`SamGraph.to_dot` draws it.

Per loop index, outermost first: a **level scanner** for every operand level walked there (its
input references come from the operand's previous level, or the root), **repeaters** for
references that must reach a deeper loop, the **joiners** of the merge point by the chosen method,
and **locates** for the dense levels of a product. After the loops: **array** readers of the
values, **ALUs** for ``* + -``, a **reducer** per reduction that is innermost among what is
left, the **accumulator** of a reduction above free indices (then the loops of what reads its
workspace), **crd-drops** where a compressed result level must lose coordinates whose inner
fibres came out empty, a **level writer** per result level and a **vals writer**.

Streams carry SAM's tokens: coordinates (``crd``), references (``ref``), values (``val``) and
bit-vector words (``bv``), with stop tokens closing fibres. Co-iteration methods of a join:

- ``merge``: one two-finger joiner (intersect or union) of the two coordinate streams;
- ``bitvector``: per input a ``bv_gen`` packing the fibre's coordinates into words, a ``bv_join``
  (AND for an intersection, OR for a union) and a ``bv_scan`` emitting the coordinates and each
  input's references by popcount;
- ``dense``: one joiner iterating every coordinate of the dimension, each input found by a scan.

>>> from dfopt.ir.sparse.concrete import concretize
>>> from dfopt.ir.sparse.formats import named
>>> from dfopt.ir.sparse.notation import parse
>>> c = concretize(parse("y(i) = A(i,j) * x(j)"), {"A": named("csr", 2), "x": named("sparse_vector", 1),
...                "y": named("dense", 1)}, {"i": 3, "j": 4})
>>> g = lower(c, {"join_j_0": "merge"})
>>> [n.kind for n in g.nodes.values()]  # doctest: +NORMALIZE_WHITESPACE
['scanner', 'scanner', 'repeater', 'scanner', 'joiner', 'array', 'array', 'alu', 'reducer', 'writer', 'writer']
>>> g.to_dot().splitlines()[0]
'digraph SAM {'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, overload

import networkx as nx

from dfopt.ir.sparse.concrete import Concrete, Join, Leaf, Locate, MergePoint
from dfopt.ir.sparse.notation import Access, Binary, Expr, Literal, Neg, Sum, accesses

METHODS = ("merge", "bitvector", "dense")
STREAM_KINDS = ("crd", "ref", "val", "bv")
UNIT_KINDS = ("scanner", "locate", "repeater", "joiner", "bv_gen", "bv_join", "bv_scan", "array", "alu", "reducer",
              "accumulator", "crd_drop", "writer")
WORD_BITS = 64          # bits of one bit-vector word


@dataclass(frozen=True)
class SamNode:
    """A primitive: ``kind`` in :data:`UNIT_KINDS`, ``loop`` the index it runs at (None: the root)."""

    name: str
    kind: str
    loop: str | None
    attrs: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class SamStream:
    """A stream from output ``src_port`` of ``src`` to input ``dst_port`` of ``dst``; ``kind`` in
    :data:`STREAM_KINDS`, ``depth`` the nesting of its fibres (the loops above its tokens)."""

    name: str
    src: str
    dst: str
    kind: str
    src_port: str = ""
    dst_port: str = ""
    depth: int = 0


class SamGraph:
    """The primitive graph: ``nodes`` by name (producers first), ``streams``,
    the ``concrete`` statement it computes and the ``methods`` of its joins."""

    def __init__(self, concrete: Concrete, methods: dict[str, str], nodes: dict[str, SamNode],
                 streams: list[SamStream]):
        self.concrete, self.methods, self.nodes, self.streams = concrete, methods, nodes, streams
        self._in: dict[str, list[SamStream]] = {n: [] for n in nodes}
        for s in streams:
            self._in[s.dst].append(s)
        order = list(nx.topological_sort(self.to_networkx()))
        if len(order) != len(nodes):
            raise ValueError("the primitive graph has a cycle")

    def inputs(self, node: str) -> list[SamStream]:
        return self._in[node]

    def to_networkx(self) -> nx.MultiDiGraph:
        """The graph as a networkx MultiDiGraph (node attrs: kind, loop; edge attrs: the stream)."""
        g = nx.MultiDiGraph()
        for n in self.nodes.values():
            g.add_node(n.name, kind=n.kind, loop=n.loop)
        for s in self.streams:
            g.add_edge(s.src, s.dst, key=s.name, kind=s.kind, stream=s)
        if not nx.is_directed_acyclic_graph(g):
            raise ValueError("the primitive graph has a cycle")
        return g

    def topological_order(self) -> list[str]:
        """Node names, producers before consumers (ties in creation order)."""
        g = self.to_networkx()
        rank = {n: k for k, n in enumerate(self.nodes)}
        return list(nx.lexicographical_topological_sort(g, key=rank.__getitem__))

    def to_dot(self) -> str:
        """DOT text in SAM's style: node labels and colours by primitive, edges styled by stream kind.

        >>> from dfopt.ir.sparse.concrete import concretize
        >>> from dfopt.ir.sparse.formats import named
        >>> from dfopt.ir.sparse.notation import parse
        >>> c = concretize(parse("y(i) = A(i,j) * x(j)"), {"A": named("csr", 2), "x": named("dense", 1),
        ...                "y": named("dense", 1)}, {"i": 3, "j": 4})
        >>> print(lower(c, {}).to_dot().splitlines()[2])
            "scan_A.0" [label="FiberLookup i: A0\\ndense" color=green4 shape=box style=filled type="fiberlookup"]
        """
        c = self.concrete
        comment = ",".join(f"{t}={''.join(k[0] for k in f.levels)}{''.join(map(str, f.order))}"
                           for t, f in c.formats.items())
        lines = ["digraph SAM {", f'    comment="{comment}"']
        for n in self.nodes.values():
            label, color, kind = _dot_label(n)
            lines.append(f'    "{n.name}" [label="{label}" color={color} shape=box style=filled type="{kind}"]')
        for s in self.streams:
            style = {"crd": " style=dashed", "ref": " style=bold", "bv": " style=dotted"}.get(s.kind, "")
            lines.append(f'    "{s.src}" -> "{s.dst}" [label="{s.kind}"{style} type="{s.kind}" '
                         f'comment="{s.dst_port}"]')
        lines.append("}")
        return "\n".join(lines) + "\n"


def _dot_label(n: SamNode) -> tuple[str, str, str]:
    """(label, colour, SAM type) of a node."""
    a, loop = n.attrs, n.loop
    if n.kind == "scanner":
        if a.get("tensor") is None:
            return f"Range {loop}\\n{a['size']}", "green4", "fiberlookup"
        return f"FiberLookup {loop}: {a['tensor']}{a['level']}\\n{a['format']}", "green4", "fiberlookup"
    if n.kind == "locate":
        return f"Locate {loop}: {a['tensor']}{a['level']}", "green4", "locate"
    if n.kind == "repeater":
        return f"Repeat {loop}: {a['tensor']}", "cyan2", "repeat"
    if n.kind == "joiner":
        return f"{a['op']} {loop}\\n{a['method']}", "purple", a["op"]
    if n.kind == "bv_gen":
        return f"BVGen {loop}: {a['side']}", "purple", "bvgen"
    if n.kind == "bv_join":
        return f"BV{a['op'].upper()} {loop}", "purple", "bvjoin"
    if n.kind == "bv_scan":
        return f"BVScan {loop}", "purple", "bvscan"
    if n.kind == "array":
        return f"Array Vals: {a['tensor']}", "green2", "arrayvals"
    if n.kind == "alu":
        const = f" {a['const']}" if a.get("const") is not None else ""
        return f"{a['op'].capitalize()}{const}", "brown", a["op"]
    if n.kind == "reducer":
        return f"Reduce {loop}", "brown", "reduce"
    if n.kind == "accumulator":
        return f"SparseAccumulator {len(a['holds'])}\\n{','.join(a['holds'])}", "brown", "spaccumulator"
    if n.kind == "crd_drop":
        return f"CrdDrop {a['outer']},{a['inner']}", "orange", "crddrop"
    if a.get("level") == "vals":
        return f"FiberWrite Vals: {a['tensor']}", "green3", "fiberwrite"
    return f"FiberWrite {loop}: {a['tensor']}{a['level']}\\n{a['format']}", "green3", "fiberwrite"


# --- lowering -----------------------------------------------------------------------------------

class _Out(NamedTuple):
    """An output port: node, port name, stream kind, depth."""

    node: str
    port: str
    kind: str
    depth: int


class _Nest:
    """One loop nest being lowered: merged coordinates per loop, references per operand level."""

    def __init__(self, loops: tuple[str, ...], tag: str = ""):
        self.loops, self.tag = loops, tag
        self.crd: dict[str, _Out] = {}
        self.refs: dict[tuple[str, int], _Out] = {}

    def depth(self, v: str) -> int:
        return self.loops.index(v) + 1


class _Lowering:
    def __init__(self, c: Concrete, methods: dict[str, str], word_bits: int):
        self.c, self.methods, self.word_bits = c, methods, word_bits
        self.nodes: dict[str, SamNode] = {}
        self.streams: list[SamStream] = []
        self.cache: dict[tuple, _Out] = {}
        self.count = 0
        self.opname = {id(e): op.name for e, op in zip(accesses(c.rhs), c.operands)}
        self.acc_out: dict[str, list[tuple[_Out, _Out]]] = {}
        self.tag = ""
        if c.consumer is not None:
            acc = c.accumulators[0]
            self.opname.update({id(e): acc.name for e in accesses(c.consumer) if e.tensor == acc.name})

    # -- graph building
    def add(self, name: str, kind: str, loop: str | None, **attrs) -> str:
        base, n = name, 1
        while name in self.nodes:
            n += 1
            name = f"{base}#{n}"
        self.nodes[name] = SamNode(name, kind, loop, {**attrs, "nest": self.tag})
        return name

    def wire(self, out: _Out, dst: str, port: str) -> None:
        name = f"{out.node}.{out.port}->{dst}.{port}"
        self.streams.append(SamStream(name, out.node, dst, out.kind, out.port, port, out.depth))

    @overload
    def repeat(self, nest: _Nest, src: _Out, to: int, label: str) -> _Out: ...

    @overload
    def repeat(self, nest: _Nest, src: _Out | None, to: int, label: str) -> _Out | None: ...

    def repeat(self, nest: _Nest, src: _Out | None, to: int, label: str) -> _Out | None:
        """``src`` (None: the root reference) repeated down to depth ``to`` by a chain of repeaters."""
        cur, depth = src, (0 if src is None else src.depth)
        while depth < to:
            key = ("repeat", cur if cur is not None else label, depth, nest.tag)
            if key not in self.cache:
                v = nest.loops[depth]
                node = self.add(f"repeat_{label}_{v}{nest.tag}", "repeater", v, tensor=label, root=cur is None)
                if cur is not None:
                    self.wire(cur, node, "in")
                self.wire(nest.crd[v], node, "repsig")
                self.cache[key] = _Out(node, "out", cur.kind if cur is not None else "ref", depth + 1)
            cur, depth = self.cache[key], depth + 1
        return cur

    # -- loops
    def parent_ref(self, nest: _Nest, leaf: Leaf, depth: int) -> _Out | None:
        src = None if leaf.level == 0 else nest.refs[leaf.operand, leaf.level - 1]
        return self.repeat(nest, src, depth, leaf.operand)

    def point(self, nest: _Nest, mp: MergePoint) -> None:
        v = mp.index
        k = nest.depth(v) - 1
        size = self.c.dims[v]
        lanes: dict[str, tuple[_Out, dict[str, _Out]]] = {}
        for leaf in mp.scans:
            if leaf.operand in self.acc_out:
                crd, ref = self.acc_out[leaf.operand][leaf.level]
                lanes[leaf.name] = (crd, {leaf.name: ref})
                continue
            parent = self.parent_ref(nest, leaf, k)
            node = self.add(f"scan_{leaf.name}{nest.tag}", "scanner", v, tensor=leaf.tensor, operand=leaf.operand,
                            level=leaf.level, format=leaf.kind, size=size, root=leaf.level == 0,
                            above=nest.loops[k - 1] if k else None)
            if parent is not None:
                self.wire(parent, node, "ref")
            lanes[leaf.name] = (_Out(node, "crd", "crd", k + 1), {leaf.name: _Out(node, "ref", "ref", k + 1)})
        rng = f"range_{mp.key}"
        if mp.output == rng or any(rng in (j.left, j.right) for j in mp.joins):
            node = self.add(f"range_{v}{nest.tag}", "scanner", v, tensor=None, format="dense", size=size, root=k == 0)
            if k > 0:
                self.wire(nest.crd[nest.loops[k - 1]], node, "shape")
            lanes[rng] = (_Out(node, "crd", "crd", k + 1), {})
        deferred = []
        for step in mp.steps:
            if isinstance(step, Join):
                lanes[step.name] = self.join(step, lanes, k)
            elif step.crd_index != v:
                deferred.append(step)
            else:
                lanes[step.on][1][step.leaf.name] = self.locate(nest, step, lanes[step.on][0], k, k)
        crd, refs = lanes[mp.output]
        nest.crd[v] = crd
        for name, ref in refs.items():
            operand, level = name.rsplit(".", 1)
            nest.refs[operand, int(level)] = ref
        for step in deferred:
            at = self.repeat(nest, nest.crd[step.crd_index], k + 1, step.crd_index)
            nest.refs[step.leaf.operand, step.leaf.level] = self.locate(nest, step, at, k, k + 1)

    def locate(self, nest: _Nest, step: Locate, crd: _Out, k: int, parent_depth: int) -> _Out:
        """A locate at loop ``k``: its parent reference at ``parent_depth`` (``k``: one per fibre of
        ``crd``; ``k + 1``, a level stored against the loops: one per coordinate)."""
        leaf = step.leaf
        parent = self.parent_ref(nest, leaf, parent_depth)
        node = self.add(f"locate_{leaf.name}{nest.tag}", "locate", nest.loops[k], tensor=leaf.tensor,
                        operand=leaf.operand, level=leaf.level, size=self.c.dims[step.crd_index])
        if parent is not None:
            self.wire(parent, node, "ref")
        self.wire(crd, node, "crd")
        return _Out(node, "ref", "ref", k + 1)

    def method_of(self, j: Join) -> str:
        method = self.methods.get(j.name, self.methods.get(j.index) if j.needs_method else None) or j.method
        if method is None:
            raise ValueError(f"join {j.name!r} ({j.op} of {j.left} and {j.right} at index {j.index!r}) needs a "
                             f"co-iteration method; expected methods[{j.name!r}] in {', '.join(METHODS)}")
        if method not in METHODS:
            raise ValueError(f"join {j.name!r}: unknown co-iteration method {method!r}; expected one of "
                             f"{', '.join(METHODS)}")
        return method

    def join(self, j: Join, lanes, k: int) -> tuple[_Out, dict[str, _Out]]:
        method = self.method_of(j)
        (crd_a, refs_a), (crd_b, refs_b) = lanes[j.left], lanes[j.right]
        dim = self.c.dims[j.index]
        attrs = dict(join=j.name, op=j.op, method=method, dim=dim, left=j.left, right=j.right)
        if method == "bitvector":
            gens = []
            for side, crd in (("a", crd_a), ("b", crd_b)):
                g = self.add(f"{j.name}.bv_{side}", "bv_gen", j.index, join=j.name, side=side, dim=dim,
                             width=self.word_bits)
                self.wire(crd, g, "crd")
                gens.append(_Out(g, "bv", "bv", k + 1))
            bj = self.add(f"{j.name}.bv_join", "bv_join", j.index, join=j.name,
                          op="and" if j.op == "intersect" else "or", dim=dim, width=self.word_bits)
            self.wire(gens[0], bj, "bv_a")
            self.wire(gens[1], bj, "bv_b")
            node = self.add(f"{j.name}.bv_scan", "bv_scan", j.index, width=self.word_bits, **attrs)
            self.wire(_Out(bj, "bv", "bv", k + 1), node, "bv")
            self.wire(gens[0], node, "bv_a")
            self.wire(gens[1], node, "bv_b")
        else:
            node = self.add(j.name, "joiner", j.index, **attrs)
            self.wire(crd_a, node, "crd_a")
            self.wire(crd_b, node, "crd_b")
        for side, refs in (("a", refs_a), ("b", refs_b)):
            for leaf, ref in refs.items():
                self.wire(ref, node, f"ref_{side}.{leaf}")
        self.nodes[node].attrs["lanes"] = (tuple(refs_a), tuple(refs_b))
        out = {leaf: _Out(node, f"ref.{leaf}", "ref", k + 1) for leaf in (*refs_a, *refs_b)}
        return _Out(node, "crd", "crd", k + 1), out

    # -- values
    def natural(self, nest: _Nest, e: Expr) -> int:
        if isinstance(e, Access):
            return max((nest.depth(i) for i in e.indices), default=0)
        if isinstance(e, Neg):
            return self.natural(nest, e.arg)
        if isinstance(e, Binary):
            return max(self.natural(nest, e.left), self.natural(nest, e.right))
        if isinstance(e, Sum):
            return nest.depth(e.index) - 1
        return 0

    def value(self, nest: _Nest, e: Expr, at: int) -> _Out | int | float:
        """The value stream of ``e`` at depth ``at`` (a number when ``e`` is constant)."""
        if isinstance(e, Literal):
            return e.value
        if isinstance(e, Access):
            return self.array(nest, e, at)
        if isinstance(e, Neg):
            x = self.value(nest, e.arg, at)
            return -x if isinstance(x, int | float) else self.alu(nest, "neg", x, None, at)
        if isinstance(e, Binary):
            left, right = self.value(nest, e.left, at), self.value(nest, e.right, at)
            if isinstance(left, int | float) and isinstance(right, int | float):
                return {"*": left * right, "+": left + right, "-": left - right}[e.op]
            return self.alu(nest, {"*": "mul", "+": "add", "-": "sub"}[e.op], left, right, at)
        r = nest.depth(e.index)
        x = self.value(nest, e.arg, r)
        if isinstance(x, int | float):
            raise ValueError(f"the reduction {e.index!r} sums a constant; it would scale by the dimension")
        node = self.add(f"reduce_{e.index}{nest.tag}", "reducer", e.index)
        self.wire(x, node, "val")
        out = _Out(node, "val", "val", r - 1)
        return self.repeat(nest, out, at, f"reduce_{e.index}") if at > r - 1 else out

    def array(self, nest: _Nest, e: Access, at: int) -> _Out:
        name = self.opname[id(e)]
        key = ("array", name, at, nest.tag)
        if key not in self.cache:
            fmt = self.c.formats[e.tensor]
            ref = nest.refs[name, fmt.rank - 1] if fmt.rank else None
            ref = self.repeat(nest, ref, at, name)
            node = self.add(f"array_{name}{nest.tag}", "array", nest.loops[at - 1] if at else None,
                            tensor=e.tensor, operand=name)
            if ref is not None:
                self.wire(ref, node, "ref")
            self.cache[key] = _Out(node, "val", "val", at)
        return self.cache[key]

    def alu(self, nest: _Nest, op: str, a, b, at: int) -> _Out:
        const, side = None, None
        if isinstance(a, int | float):
            const, side, a, b = a, "a", b, None
        elif isinstance(b, int | float):
            const, side, b = b, "b", None
        self.count += 1
        node = self.add(f"alu_{op}_{self.count}{nest.tag}", "alu", nest.loops[at - 1] if at else None, op=op,
                        const=const, const_side=side)
        self.wire(a, node, "a")
        if b is not None:
            self.wire(b, node, "b")
        return _Out(node, "val", "val", at)

    # -- the accumulator
    def accumulate(self, main: _Nest) -> _Nest:
        acc = self.c.accumulators[0]
        e = acc.expr
        depth = main.depth(acc.holds[-1])
        while isinstance(e, Sum) and main.depth(e.index) < depth:
            e = e.arg
        val = self.value(main, e, depth)
        if isinstance(val, int | float):
            raise ValueError(f"the accumulated reduction {acc.index!r} sums a constant")
        node = self.add(f"acc_{acc.name}", "accumulator", acc.index, workspace=acc.name, holds=acc.holds,
                        reduces=acc.reduces, format=acc.format, dims=tuple(self.c.dims[f] for f in acc.holds),
                        outer=len(acc.outer), consumer=f"@{acc.name}")
        self.wire(val, node, "val")
        for f in acc.holds:
            self.wire(main.crd[f], node, f"crd.{f}")
        base = len(acc.outer)
        self.acc_out[acc.name] = [(_Out(node, f"crd.{f}", "crd", base + n + 1), _Out(node, f"ref.{f}", "ref",
                                                                                       base + n + 1))
                                  for n, f in enumerate(acc.holds)]
        nest = _Nest(acc.consumer_loops, f"@{acc.name}")
        self.tag = nest.tag
        nest.crd.update({o: main.crd[o] for o in acc.outer})
        nest.refs.update({key: ref for key, ref in main.refs.items() if ref.depth <= base})
        for f in acc.holds:
            self.point(nest, self.c.merges[f"{f}@{acc.name}"])
        return nest

    # -- the result
    def write(self, nest: _Nest, root: Expr) -> None:
        c = self.c
        lhs = c.assignment.lhs
        fmt = c.formats[lhs.tensor]
        storage = [lhs.indices[m] for m in fmt.order]
        final = self.natural(nest, root)
        val = self.value(nest, root, final)
        if isinstance(val, int | float):
            raise ValueError("the right-hand side is a constant")
        cur = {k: nest.crd[v] for k, v in enumerate(storage)}
        last = fmt.rank - 1
        for k in range(last, -1, -1):
            if fmt.levels[k] != "compressed" or not fmt.unique(k):
                continue
            if k == last:
                r = _reduced_below(root, nest, final)
                if r is None:
                    continue
                node = self.add(f"crddrop_{storage[k]}_{r}{nest.tag}", "crd_drop", storage[k], outer=storage[k],
                                inner=r)
                self.wire(cur[k], node, "outer")
                self.wire(nest.crd[r], node, "inner")
                self.wire(val, node, "val")
                cur[k] = _Out(node, "outer", "crd", cur[k].depth)
                val = _Out(node, "val", "val", val.depth)
            elif fmt.levels[k + 1] == "compressed":
                node = self.add(f"crddrop_{storage[k]}_{storage[k + 1]}{nest.tag}", "crd_drop", storage[k],
                                outer=storage[k], inner=storage[k + 1])
                self.wire(cur[k], node, "outer")
                self.wire(cur[k + 1], node, "inner")
                cur[k] = _Out(node, "outer", "crd", cur[k].depth)
                cur[k + 1] = _Out(node, "inner", "crd", cur[k + 1].depth)
                if val.depth == cur[k + 1].depth:
                    self.wire(val, node, "val")
                    val = _Out(node, "val", "val", val.depth)
        dense = all(kind == "dense" for kind in fmt.levels)
        for k, v in enumerate(storage):
            node = self.add(f"write_{lhs.tensor}.{k}", "writer", v, tensor=lhs.tensor, level=k,
                            format=fmt.levels[k], unique=fmt.unique(k), size=c.dims[v], levels=fmt.levels,
                            sizes=tuple(c.dims[u] for u in storage), above=storage[k - 1] if k else None)
            self.wire(cur[k], node, "crd")
            for m in _writer_needs(fmt, k):
                self.wire(cur[m], node, f"crd.{m}")
        node = self.add(f"write_{lhs.tensor}.vals", "writer", storage[-1] if storage else None, tensor=lhs.tensor,
                        level="vals", dense=dense, sizes=tuple(c.dims[v] for v in storage), levels=fmt.levels)
        self.wire(val, node, "val")
        for m in (range(fmt.rank) if dense else _dense_run(fmt, last)):
            self.wire(cur[m], node, f"crd.{m}")


def _dense_run(fmt, k: int) -> list[int]:
    """Levels ``k, k-1, ...`` while dense: those whose coordinates give level k's positions."""
    out = []
    while k >= 0 and fmt.levels[k] == "dense":
        out.append(k)
        k -= 1
    return out


def _writer_needs(fmt, k: int) -> list[int]:
    """Other levels a level writer reads: the dense levels above a compressed level (its parents'
    positions), or the singleton levels below a non-unique one (one entry per nonzero)."""
    if fmt.levels[k] == "singleton" or fmt.levels[k] == "compressed" and not fmt.unique(k):
        out = []
        m = k + 1
        while m < fmt.rank and fmt.levels[m] == "singleton":
            out.append(m)
            m += 1
        return out
    if fmt.levels[k] == "compressed":
        return _dense_run(fmt, k - 1)
    return []


def _reduced_below(root: Expr, nest: _Nest, final: int) -> str | None:
    """The reduction whose empty fibres make the result's last level structurally zero: one reached
    from the root through products and negations only, reducing the loop just below the result."""
    stack = [root]
    while stack:
        e = stack.pop()
        if isinstance(e, Sum):
            if nest.depth(e.index) == final + 1:
                return e.index
        elif isinstance(e, Neg):
            stack.append(e.arg)
        elif isinstance(e, Binary) and e.op == "*":
            stack.extend((e.right, e.left))
    return None


def lower(concrete: Concrete, methods: dict[str, str], *, word_bits: int = WORD_BITS) -> SamGraph:
    """The SAM primitive graph of ``concrete`` (see the module docstring).

    ``methods`` maps a join name (``concrete.needs_method``; also a join with a dense input, whose
    default is ``dense``) or a loop index (all of its joins) to ``merge``, ``bitvector`` or
    ``dense``; ``word_bits`` is the width of a bit-vector word. A join of two sparse inputs without
    a method raises ``ValueError``.

    >>> from dfopt.ir.sparse.concrete import concretize
    >>> from dfopt.ir.sparse.formats import named
    >>> from dfopt.ir.sparse.notation import parse
    >>> c = concretize(parse("C(i,j) = A(i,j) + B(i,j)"), {t: named("csr", 2) for t in "ABC"}, {"i": 2, "j": 2})
    >>> sorted(n.kind for n in lower(c, {"join_j_0": "bitvector"}).nodes.values() if n.loop == "j")
    ['alu', 'array', 'array', 'bv_gen', 'bv_gen', 'bv_join', 'bv_scan', 'scanner', 'scanner', 'writer', 'writer']
    """
    if not 1 <= word_bits <= 64:
        raise ValueError(f"word_bits is {word_bits}; a bit-vector word holds 1 to 64 bits")
    joins = concrete.joins
    for key in methods:
        if key not in joins and key not in concrete.loops:
            raise ValueError(f"methods names {key!r}, which is neither a join ({', '.join(joins) or 'none'}) nor a "
                             f"loop index ({', '.join(concrete.loops)})")
    low = _Lowering(concrete, dict(methods), word_bits)
    main = _Nest(concrete.loops)
    for v in concrete.loops:
        low.point(main, concrete.merges[v])
    if concrete.accumulators:
        if concrete.consumer is None:
            raise ValueError(f"the concrete statement has accumulator {concrete.accumulators[0].name!r} but no "
                             "consumer: the right-hand side that reads its workspace")
        nest, root = low.accumulate(main), concrete.consumer
    else:
        nest, root = main, concrete.rhs
    low.write(nest, root)
    used = {j: low.method_of(joins[j]) for j in joins}
    return SamGraph(concrete, used, low.nodes, low.streams)
