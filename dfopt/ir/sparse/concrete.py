"""The concrete index notation of an assignment: loop order, merge points and accumulators.

:func:`concretize` fixes what TACO's and Stardust's scheduling decide before any data is seen:

- the **loop order** — concordant with every tensor that is not all dense (a compressed level can
  only be walked in its storage order, so each such tensor's storage order is a subsequence of
  the loops);
- the **merge point** of every loop index — which tensors' levels iterate there and how they meet:
  a product intersects the operands that hold the index, a sum unites them; a merge of k sparse
  inputs is a chain of k - 1 binary joins, and a join of two sparse inputs needs a co-iteration
  method (``needs_method``); dense levels of a product are located, a dense level in a sum makes
  the sum iterate the whole dimension;
- the **accumulators**: a reduction placed above a free index cannot reduce in a stream, so it
  accumulates into a workspace over the free indices inside it (SAM's sparse accumulator,
  Stardust's workspace), and what is outside the reduction reads the workspace afterwards.

>>> from dfopt.ir.sparse.formats import named
>>> from dfopt.ir.sparse.notation import parse
>>> c = concretize(parse("y(i) = A(i,j) * x(j)"), {"A": named("dcsc", 2), "x": named("sparse_vector", 1),
...                "y": named("dense", 1)}, {"i": 3, "j": 4})
>>> c.loops, c.needs_method, [(a.name, a.holds) for a in c.accumulators]
(('j', 'i'), ('join_j_0',), [('w_j', ('i',))])
>>> c.merges["j"].joins[0].op, c.merges["i@w_j"].scans[0].tensor
('intersect', 'w_j')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from dfopt.ir.sparse.formats import Format
from dfopt.ir.sparse.notation import (
    Access,
    Assignment,
    Binary,
    Expr,
    Neg,
    Sum,
    accesses,
    index_vars,
    tensors,
    to_text,
    with_reductions,
)

WORKSPACE_FORMATS = ("dense", "sparse")


# --- the records --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Operand:
    """One access of the right-hand side (or the workspace an accumulator fills).

    ``name`` is the tensor's name, or ``"<tensor>#<n>"`` for its n-th access when it is read twice;
    ``storage[k]`` is the index stored at storage level ``k``; ``nest`` is ``"main"`` or the name
    of the accumulator whose consumer reads it.
    """

    name: str
    tensor: str
    indices: tuple[str, ...]
    storage: tuple[str, ...]
    levels: tuple[str, ...]
    nest: str = "main"

    def level_of(self, index: str) -> int:
        return self.storage.index(index)


@dataclass(frozen=True)
class Leaf:
    """A storage level of an operand at a merge point; ``kind`` is its level kind (a workspace's
    levels read as ``compressed``: its accumulator emits the touched coordinates only)."""

    operand: str
    tensor: str
    level: int
    kind: str
    unique: bool = True

    @property
    def name(self) -> str:
        return f"{self.operand}.{self.level}"

    @property
    def dense(self) -> bool:
        return self.kind == "dense"


@dataclass(frozen=True)
class Join:
    """A binary join of a merge point: ``op`` (``intersect`` | ``union``) of inputs ``left`` and
    ``right`` (leaf, join or range names); ``leaves`` are the operand levels whose references it
    carries. ``method`` is the default of a join with a dense input (``dense``); a join of two
    sparse inputs has none and needs one chosen."""

    name: str
    index: str
    op: str
    left: str
    right: str
    leaves: tuple[str, ...]
    method: str | None = None

    @property
    def needs_method(self) -> bool:
        return self.method is None


@dataclass(frozen=True)
class Locate:
    """A dense level found by address arithmetic at the coordinates of node ``on``; ``crd_index``
    is the index it stores (another loop's, for a dense tensor stored against the loop order)."""

    leaf: Leaf
    on: str
    crd_index: str


@dataclass(frozen=True)
class MergePoint:
    """How loop ``index`` iterates: ``scans`` are the levels walked by a level scanner, ``steps``
    the joins and locates in the order they apply, ``output`` the node whose coordinates the loop
    runs over (a ``range_*`` name: every coordinate of the dimension, no scanner), ``dense``
    whether that is the whole dimension. ``key`` is the index, or ``"<index>@<workspace>"`` in the
    consumer of an accumulator."""

    key: str
    index: str
    scans: tuple[Leaf, ...]
    steps: tuple[Join | Locate, ...]
    output: str
    dense: bool

    @property
    def joins(self) -> tuple[Join, ...]:
        return tuple(s for s in self.steps if isinstance(s, Join))

    @property
    def locates(self) -> tuple[Locate, ...]:
        return tuple(s for s in self.steps if isinstance(s, Locate))


@dataclass(frozen=True)
class Accumulator:
    """A reduction placed above free indices: ``index`` (the outermost reduction it sums, named
    ``w_<index>`` unless renamed), ``reduces`` (every index it sums over), ``holds`` (the free
    indices inside it, the workspace's levels), ``format`` (``dense`` | ``sparse``), ``expr`` (the
    reduction it computes), ``outer`` (the loops above it, shared with its consumer)."""

    name: str
    index: str
    reduces: tuple[str, ...]
    holds: tuple[str, ...]
    format: str
    expr: Expr
    outer: tuple[str, ...]

    @property
    def consumer_loops(self) -> tuple[str, ...]:
        """The loops of what reads the workspace: the outer loops, then the held indices."""
        return self.outer + self.holds


@dataclass(frozen=True, eq=False)
class Concrete:
    """The concrete index notation of an assignment (see the module docstring).

    ``rhs`` is the right-hand side with its reductions (nested reductions ordered as the loops),
    ``formats`` holds every tensor (the result and the workspaces too), ``merges`` every merge point
    by key, ``needs_method`` the joins of two sparse inputs in loop order, ``consumer`` the
    right-hand side with the accumulated reduction replaced by its workspace (None without one).
    """

    assignment: Assignment
    rhs: Expr
    loops: tuple[str, ...]
    dims: dict[str, int]
    formats: dict[str, Format]
    merges: dict[str, MergePoint]
    accumulators: tuple[Accumulator, ...]
    needs_method: tuple[str, ...]
    operands: tuple[Operand, ...]
    consumer: Expr | None = None

    @property
    def result(self) -> str:
        return self.assignment.lhs.tensor

    @property
    def joins(self) -> dict[str, Join]:
        """Every join by name, in merge-point order."""
        return {j.name: j for mp in self.merges.values() for j in mp.joins}

    def operand(self, name: str) -> Operand:
        return next(op for op in self.operands if op.name == name)


# --- expression helpers -------------------------------------------------------------------------

def _indices(e: Expr) -> set[str]:
    return {i for acc in accesses(e) for i in acc.indices}


def _free(e: Expr) -> set[str]:
    if isinstance(e, Access):
        return set(e.indices)
    if isinstance(e, Sum):
        return _free(e.arg) - {e.index}
    if isinstance(e, Neg):
        return _free(e.arg)
    if isinstance(e, Binary):
        return _free(e.left) | _free(e.right)
    return set()


def _chain(e: Sum) -> tuple[list[str], Expr]:
    """The indices of directly nested reductions and the expression they sum."""
    out: list[str] = []
    node: Expr = e
    while isinstance(node, Sum):
        out.append(node.index)
        node = node.arg
    return out, node


def _lift(e: Expr) -> Expr:
    """Reductions lifted over products and negations (``X * sum(r, Y) = sum(r, X * Y)``, r not in X),
    so that the reductions of one product term nest directly as the loops of a fused nest do."""
    if isinstance(e, Sum):
        return Sum(e.index, _lift(e.arg))
    if isinstance(e, Neg):
        arg = _lift(e.arg)
        return Sum(arg.index, _lift(Neg(arg.arg))) if isinstance(arg, Sum) else Neg(arg)
    if isinstance(e, Binary):
        left, right = _lift(e.left), _lift(e.right)
        if e.op == "*" and isinstance(left, Sum):
            return Sum(left.index, _lift(Binary("*", left.arg, right)))
        if e.op == "*" and isinstance(right, Sum):
            return Sum(right.index, _lift(Binary("*", left, right.arg)))
        return Binary(e.op, left, right)
    return e


def _order_sums(e: Expr, pos: dict[str, int]) -> Expr:
    """Directly nested reductions reordered as the loops (sums commute), outermost first."""
    if isinstance(e, Sum):
        idx, body = _chain(e)
        out = _order_sums(body, pos)
        for r in sorted(idx, key=pos.__getitem__, reverse=True):
            out = Sum(r, out)
        return out
    if isinstance(e, Neg):
        return Neg(_order_sums(e.arg, pos))
    if isinstance(e, Binary):
        return Binary(e.op, _order_sums(e.left, pos), _order_sums(e.right, pos))
    return e


def _chain_tops(e: Expr, inside: bool = False):
    """Every outermost reduction of a chain, pre-order."""
    if isinstance(e, Sum):
        if not inside:
            yield e
        yield from _chain_tops(e.arg, True)
    elif isinstance(e, Neg):
        yield from _chain_tops(e.arg)
    elif isinstance(e, Binary):
        yield from _chain_tops(e.left)
        yield from _chain_tops(e.right)


def _replace(e: Expr, old: Expr, new: Expr) -> Expr:
    if e is old:
        return new
    if isinstance(e, Sum):
        return Sum(e.index, _replace(e.arg, old, new))
    if isinstance(e, Neg):
        return Neg(_replace(e.arg, old, new))
    if isinstance(e, Binary):
        return Binary(e.op, _replace(e.left, old, new), _replace(e.right, old, new))
    return e


def _contains(e: Expr, node: Expr) -> bool:
    if e is node:
        return True
    if isinstance(e, Neg | Sum):
        return _contains(e.arg, node)
    if isinstance(e, Binary):
        return _contains(e.left, node) or _contains(e.right, node)
    return False


# --- formats, dims, operands ----------------------------------------------------------------------

def _formats(a: Assignment, formats: dict[str, Format]) -> dict[str, Format]:
    out = {}
    for name, rank in tensors(a).items():
        fmt = formats.get(name)
        if fmt is None and rank == 0:
            fmt = Format((), ())
        if fmt is None:
            raise ValueError(f"tensor {name!r} has no format; expected one for every tensor of the assignment "
                             f"(given: {', '.join(sorted(formats)) or 'none'})")
        if fmt.rank != rank:
            raise ValueError(f"tensor {name!r} is accessed with {rank} indices but its format {fmt} has "
                             f"{fmt.rank} levels")
        out[name] = fmt
    return out


def _check_dims(a: Assignment, dims: dict[str, int]) -> dict[str, int]:
    out = {}
    for v in index_vars(a):
        if v not in dims:
            raise ValueError(f"index {v!r} has no size; expected dims for every index ({', '.join(index_vars(a))})")
        size = dims[v]
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"index {v!r} has size {size!r}; expected a positive integer")
        out[v] = int(size)
    return out


def _operand(name: str, acc: Access, fmt: Format, nest: str = "main") -> Operand:
    return Operand(name, acc.tensor, acc.indices, tuple(acc.indices[m] for m in fmt.order), fmt.levels, nest)


def _operands(a: Assignment, fmts: dict[str, Format]) -> list[tuple[Access, Operand]]:
    seen: dict[str, int] = {}
    out = []
    for acc in accesses(a.rhs):
        seen[acc.tensor] = seen.get(acc.tensor, 0) + 1
        name = acc.tensor if seen[acc.tensor] == 1 else f"{acc.tensor}#{seen[acc.tensor]}"
        out.append((acc, _operand(name, acc, fmts[acc.tensor])))
    return out


# --- the loop order -----------------------------------------------------------------------------

def _constrained(a: Assignment, fmts: dict[str, Format]) -> list[tuple[str, tuple[str, ...], Format]]:
    """(tensor, storage order, format) of every tensor that is not all dense, the result first."""
    out, seen = [], set()
    for acc in accesses(a):
        fmt = fmts[acc.tensor]
        if acc.tensor in seen or all(k == "dense" for k in fmt.levels):
            continue
        seen.add(acc.tensor)
        out.append((acc.tensor, tuple(acc.indices[m] for m in fmt.order), fmt))
    return out


def _check_order(order: Sequence[str], a: Assignment, constrained) -> tuple[str, ...]:
    order = tuple(order)
    want = index_vars(a)
    if sorted(order) != sorted(want) or len(set(order)) != len(order):
        missing = [v for v in want if v not in order]
        extra = [v for v in order if v not in want]
        dup = sorted({v for v in order if order.count(v) > 1})
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + \
                ([f"unknown {', '.join(extra)}"] if extra else []) + ([f"repeated {', '.join(dup)}"] if dup else [])
        raise ValueError(f"loop order ({', '.join(order)}) is not a permutation of the index variables "
                         f"({', '.join(want)}): {'; '.join(parts)}")
    pos = {v: k for k, v in enumerate(order)}
    for name, storage, fmt in constrained:
        for a_, b_ in zip(storage, storage[1:]):
            if pos[a_] > pos[b_]:
                raise ValueError(f"loop order ({', '.join(order)}) puts {b_!r} before {a_!r}, but tensor {name!r} "
                                 f"stores {a_!r} above {b_!r} (format {fmt}); its levels can only be walked in "
                                 f"the order ({', '.join(storage)}): put {a_!r} before {b_!r} or store {name!r} "
                                 f"in another mode order")
    return order


def _default_order(a: Assignment, constrained) -> tuple[str, ...]:
    """The first topological order of the tensors' storage orders, ties by first appearance."""
    want = index_vars(a)
    preds: dict[str, set[str]] = {v: set() for v in want}
    for _, storage, _ in constrained:
        for a_, b_ in zip(storage, storage[1:]):
            preds[b_].add(a_)
    order: list[str] = []
    while len(order) < len(want):
        ready = [v for v in want if v not in order and preds[v] <= set(order)]
        if not ready:
            left = {v for v in want if v not in order}
            culprits = [(n, s) for n, s, _ in constrained if len(set(s) & left) > 1]
            needs = "; ".join(f"{n!r} needs ({', '.join(s)})" for n, s in culprits)
            raise ValueError(f"no loop order is concordant with every sparse tensor: {needs}; store one of them in "
                             f"another mode order (csc instead of csr, dcsc instead of dcsr) or make it dense")
        order.append(ready[0])
    return tuple(order)


# --- accumulators and the placement of reductions -----------------------------------------------

def _check_chain(top: Sum, loops: tuple[str, ...], where: str) -> None:
    """A reduction must enclose every loop below its outermost index."""
    idx, body = _chain(top)
    first = min(loops.index(r) for r in idx)
    used = _indices(body)
    for v in loops[first + 1:]:
        if v not in used:
            raise ValueError(f"loop {v!r} lies inside the reduction over {loops[first]!r} ({to_text(top)}) but that "
                             f"reduction does not use it{where}; put {v!r} above {loops[first]!r} in the loop order")


def _needs_accumulator(top: Sum, loops: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(held free indices, reductions it accumulates) of a chain; no held index: a stream reduction."""
    idx, body = _chain(top)
    pos = {v: k for k, v in enumerate(loops)}
    first = min(pos[r] for r in idx)
    free = _free(body) - set(idx)
    holds = sorted((f for f in free if pos[f] > first), key=pos.__getitem__)
    if not holds:
        return [], []
    deepest = pos[holds[-1]]
    return holds, sorted((r for r in idx if pos[r] < deepest), key=pos.__getitem__)


def _workspace(workspaces: dict, top: Sum, index: str, used: set) -> tuple[str, str]:
    """The name and format the caller gives the accumulator of ``top`` (keyed by its text or index)."""
    keys = [to_text(top), to_text(_chain(top)[1]), index]
    spec = None
    for key in keys:
        if key in workspaces:
            spec = workspaces[key]
            used.add(key)
            break
    name, fmt = f"w_{index}", "dense"
    if isinstance(spec, str):
        if spec in WORKSPACE_FORMATS:
            fmt = spec
        else:
            name = spec
    elif isinstance(spec, tuple | list) and len(spec) == 2:
        name, fmt = spec
    elif isinstance(spec, dict):
        name, fmt = spec.get("name") or name, spec.get("format") or fmt
    elif spec is not None:
        raise ValueError(f"workspace for reduction {index!r}: expected a name, a format, (name, format) or "
                         f"{{'name': ..., 'format': ...}}, got {spec!r}")
    if fmt not in WORKSPACE_FORMATS:
        raise ValueError(f"workspace {name!r}: unknown format {fmt!r}; expected one of {', '.join(WORKSPACE_FORMATS)}")
    return name, fmt


def _accumulator(a: Assignment, rhs: Expr, loops: tuple[str, ...], fmts: dict, workspaces: dict | None):
    tops = list(_chain_tops(rhs))
    found = []
    for top in tops:
        holds, reduces = _needs_accumulator(top, loops)
        if holds:
            found.append((top, holds, reduces))
    used: set = set()
    if len(found) > 1:
        names = " and ".join(to_text(t) for t, _, _ in found)
        raise ValueError(f"the loop order ({', '.join(loops)}) needs two accumulators ({names}); one workspace per "
                         f"statement is supported: move the reduction indices below the free indices")
    if not found:
        for top in tops:
            _check_chain(top, loops, "")
        if workspaces:
            raise ValueError(f"workspaces {', '.join(map(repr, workspaces))} name no accumulator: with the loop order "
                             f"({', '.join(loops)}) every reduction is innermost and reduces in the stream")
        return None, None
    top, holds, reduces = found[0]
    idx, _ = _chain(top)
    first = min(idx, key=loops.index)
    for inner in _chain_tops(_chain(top)[1]):
        if _needs_accumulator(inner, loops)[0]:
            raise ValueError(f"the reduction {to_text(inner)} needs an accumulator inside the accumulator of "
                             f"{to_text(top)}; nested workspaces are not supported")
        _check_chain(inner, loops, "")
    _check_chain(top, loops, "")
    name, fmt = _workspace(workspaces or {}, top, first, used)
    unused = [k for k in (workspaces or {}) if k not in used]
    if unused:
        raise ValueError(f"workspaces {', '.join(map(repr, unused))} name no accumulator; the accumulator is the "
                         f"reduction over {first!r} ({to_text(top)})")
    if name in fmts:
        raise ValueError(f"workspace name {name!r} is already a tensor of the assignment; choose another")
    acc = Accumulator(name, first, tuple(sorted(idx, key=loops.index)), tuple(holds), fmt, top,
                      loops[:loops.index(first)])
    consumer = _replace(rhs, top, Access(name, acc.holds))
    cloops = acc.consumer_loops
    missing = sorted(_indices(consumer) - set(cloops))
    if missing:
        raise ValueError(f"the expression outside the accumulated reduction {to_text(top)} uses "
                         f"{', '.join(missing)}, which its consumer loops ({', '.join(cloops)}) do not run")
    for t in _chain_tops(consumer):
        if _needs_accumulator(t, cloops)[0]:
            raise ValueError(f"the reduction {to_text(t)} needs a second accumulator; one workspace per statement "
                             f"is supported")
        _check_chain(t, cloops, f" (in what reads workspace {name!r})")
    return acc, consumer


# --- merge points -------------------------------------------------------------------------------

# a join tree node: ('leaf', Leaf, state) with state 'sparse' | 'dense' | 'deferred', or ('and' | 'or', children)
_LeafNode: TypeAlias = tuple[Literal["leaf"], Leaf, Literal["sparse", "dense", "deferred"]]
_Tree: TypeAlias = _LeafNode | tuple[Literal["and", "or"], list["_Tree"]]


class _Merges:
    """Builds every merge point: the join trees of each loop index over the expression it runs."""

    def __init__(self):
        self.count: dict[str, int] = {}
        self.points: dict[str, MergePoint] = {}
        self.deferred: dict[str, list[Locate]] = {}

    # build a tree of ('leaf', Leaf, state) / ('and' | 'or', [children]); state: sparse, dense, deferred
    def tree(self, e: Expr, v: str, ops: dict[int, Operand], nests: dict[str, tuple[str, ...]]) -> _Tree | None:
        if isinstance(e, Access):
            if v not in e.indices:
                return None
            op = ops[id(e)]
            level = op.level_of(v)
            kind = op.levels[level]
            leaf = Leaf(op.name, op.tensor, level, kind, _unique(op, level))
            if kind != "dense":
                return ("leaf", leaf, "sparse")
            n = nests[op.nest]
            return ("leaf", leaf, "dense" if _locate_depth(op, level, n) == n.index(v) else "deferred")
        if isinstance(e, Neg | Sum):
            return self.tree(e.arg, v, ops, nests)
        if isinstance(e, Binary):
            merge: Literal["and", "or"] = "and" if e.op == "*" else "or"
            kids: list[_Tree] = []
            for side in (e.left, e.right):
                t = self.tree(side, v, ops, nests)
                if t is None:
                    continue
                if t[0] != "leaf" and t[0] == merge:
                    kids.extend(t[1])
                else:
                    kids.append(t)
            if not kids:
                return None
            return kids[0] if len(kids) == 1 else (merge, kids)
        return None

    def point(self, key: str, v: str, e: Expr, ops: dict[int, Operand], nests: dict[str, tuple[str, ...]]) \
            -> MergePoint:
        t = self.tree(e, v, ops, nests)
        scans: list[Leaf] = []
        steps: list[Join | Locate] = []
        leaves: dict[str, tuple[str, ...]] = {}

        def join(op: str, left: str, right: str, method: str | None) -> str:
            n = self.count.get(v, 0)
            self.count[v] = n + 1
            name = f"join_{v}_{n}"
            leaves[name] = leaves[left] + leaves[right]
            steps.append(Join(name, v, op, left, right, leaves[name], method))
            return name

        def locate(leaf: Leaf, on: str) -> None:
            steps.append(Locate(leaf, on, v))
            leaves[on] = leaves[on] + (leaf.name,)

        def scan(leaf: Leaf) -> str:
            scans.append(leaf)
            leaves[leaf.name] = (leaf.name,)
            return leaf.name

        def emit(node: _Tree) -> tuple[str | None, bool]:
            """(name of the node giving the coordinates or None, dense)."""
            if node[0] == "leaf":
                _, leaf, state = node
                if state == "deferred":
                    return None, True
                return scan(leaf), state == "dense"
            kind, kids = node
            if kind == "and":
                sparse = [k for k in kids if not _dense_node(k)]
                dleaves = [k[1] for k in kids if k[0] == "leaf" and k[2] == "dense"]
                dtrees = [k for k in kids if k[0] != "leaf" and _dense_node(k)]
                names = [emit_sparse(k) for k in sparse]
                dense = not names
                names += [n for n in (emit(k)[0] for k in dtrees) if n is not None]
                if not names and dleaves:
                    names.append(scan(dleaves.pop(0)))
                if not names:
                    return None, True
                out = names[0]
                for n, other in enumerate(names[1:], start=1):
                    both_sparse = n < len(sparse)
                    out = join("intersect", out, other, None if both_sparse else "dense")
                for leaf in dleaves:
                    locate(leaf, out)
                return out, dense
            dleaves = [k[1] for k in kids if k[0] == "leaf" and k[2] == "dense"]
            emitted = [emit(k) for k in kids if k[0] != "leaf" or k[2] == "sparse"]
            if dleaves or any(d for _, d in emitted) or len(emitted) < len(kids):
                if dleaves:
                    base = scan(dleaves.pop(0))
                else:
                    base = next((n for n, d in emitted if d and n is not None), f"range_{key}")
                    leaves.setdefault(base, ())
                for leaf in dleaves:
                    locate(leaf, base)
                out = base
                for name, _ in emitted:
                    if name is not None and name != base:
                        out = join("union", out, name, "dense")
                return out, True
            names = [name for name, _ in emitted if name is not None]
            assert len(names) == len(emitted), "a merge tree that is not dense emits the node of its coordinates"
            out = names[0]
            for name in names[1:]:
                out = join("union", out, name, None)
            return out, False

        def emit_sparse(node: _Tree) -> str:
            """The name of the node giving the coordinates of a tree that is not dense (it always has one)."""
            name, _ = emit(node)
            assert name is not None, "a merge tree that is not dense emits the node of its coordinates"
            return name

        out, dense = emit(t) if t is not None else (None, True)
        if out is None:
            out = f"range_{key}"
            leaves[out] = ()
        steps.extend(self.deferred.pop(key, []))
        _check_unique(key, steps, scans)
        mp = MergePoint(key, v, tuple(scans), tuple(steps), out, dense)
        self.points[key] = mp
        return mp


def _unique(op: Operand, level: int) -> bool:
    return not (op.levels[level] == "compressed" and level + 1 < len(op.levels) and op.levels[level + 1] == "singleton")


def _dense_node(node: _Tree) -> bool:
    if node[0] == "leaf":
        return node[2] != "sparse"
    kind, kids = node
    return all(_dense_node(k) for k in kids) if kind == "and" else any(_dense_node(k) for k in kids)


def _locate_depth(op: Operand, level: int, nest: tuple[str, ...]) -> int:
    """The loop position where a dense level can be located: after its own index and its parent."""
    at = -1
    for k in range(level + 1):
        at = max(at, nest.index(op.storage[k]))
    return at


def _check_unique(key: str, steps: Sequence[Join | Locate], scans: Sequence[Leaf]) -> None:
    for s in steps:
        if isinstance(s, Join):
            for leaf in scans:
                if not leaf.unique and leaf.name in s.leaves:
                    raise ValueError(f"level {leaf.level} of tensor {leaf.tensor!r} stores one entry per nonzero "
                                     f"(non-unique, COO) and cannot be co-iterated with another operand at index "
                                     f"{key!r}; store it as csr or csf")


def _merge_points(m: _Merges, e: Expr, loops: Sequence[str], key_of, ops: dict[int, Operand],
                  nests: dict[str, tuple[str, ...]], nest: str) -> None:
    """Merge points of ``loops`` over expression ``e`` run in loop nest ``nest``; ``key_of(nest,
    index)`` names a merge point. A dense level stored against the loop order is located at the
    later loop where its parent level is known (a deferred locate)."""
    for acc in accesses(e):
        op = ops[id(acc)]
        order = nests[op.nest]
        for level, kind in enumerate(op.levels):
            v = op.storage[level]
            if kind != "dense" or v not in loops:
                continue
            at = _locate_depth(op, level, order)
            if at != order.index(v):
                leaf = Leaf(op.name, op.tensor, level, kind)
                m.deferred.setdefault(key_of(op.nest, order[at]), []).append(Locate(leaf, "", v))
    for v in loops:
        m.point(key_of(nest, v), v, e, ops, nests)


def _resolve(mp: MergePoint) -> MergePoint:
    """Deferred locates apply at the loop's merged coordinates."""
    steps = tuple(Locate(s.leaf, mp.output, s.crd_index) if isinstance(s, Locate) and not s.on else s
                  for s in mp.steps)
    return MergePoint(mp.key, mp.index, mp.scans, steps, mp.output, mp.dense)


# --- the entry point ----------------------------------------------------------------------------

def concretize(assignment: Assignment, formats: dict[str, Format], dims: dict[str, int],
               reorder: list[str] | None = None, workspaces: dict | None = None) -> Concrete:
    """The concrete index notation of ``assignment`` (see the module docstring).

    ``formats`` gives every tensor's format (a scalar result may be left out), ``dims`` every
    index's size, ``reorder`` an explicit loop order, ``workspaces`` the name and format of the
    accumulator: keyed by the reduction index or the reduction's text, valued ``{"name": ...,
    "format": "dense" | "sparse"}``, ``(name, format)``, a name or a format. Every fault raises
    ``ValueError`` naming the tensor and indices at fault.

    >>> from dfopt.ir.sparse.formats import named
    >>> from dfopt.ir.sparse.notation import parse
    >>> a = parse("C(i,j) = A(i,k) * B(k,j)")
    >>> f = {"A": named("csr", 2), "B": named("csr", 2), "C": named("csr", 2)}
    >>> c = concretize(a, f, {"i": 4, "j": 4, "k": 4}, reorder=["i", "k", "j"], workspaces={"k": "sparse"})
    >>> c.accumulators[0].name, c.accumulators[0].format, c.formats["w_k"].levels
    ('w_k', 'sparse', ('compressed',))
    >>> concretize(a, f, {"i": 4, "j": 4, "k": 4}, reorder=["i", "j", "k"])
    Traceback (most recent call last):
    ...
    ValueError: loop order (i, j, k) puts 'j' before 'k', but tensor 'B' stores 'k' above 'j' (format (dense, \
compressed) order (0, 1)); its levels can only be walked in the order (k, j): put 'k' before 'j' or store 'B' in \
another mode order
    """
    fmts = _formats(assignment, formats)
    dims = _check_dims(assignment, dims)
    constrained = _constrained(assignment, fmts)
    loops = _check_order(reorder, assignment, constrained) if reorder is not None \
        else _default_order(assignment, constrained)
    pos = {v: k for k, v in enumerate(loops)}
    rhs = _order_sums(_lift(with_reductions(assignment)), pos)
    pairs = _operands(Assignment(assignment.lhs, rhs), fmts)
    acc, consumer = _accumulator(assignment, rhs, loops, fmts, workspaces)
    m = _Merges()
    if acc is None:
        ops = {id(e): op for e, op in pairs}
        _merge_points(m, rhs, loops, lambda nest, v: v, ops, {"main": loops}, "main")
        operands = [op for _, op in pairs]
    else:
        operands, ops = [], {}
        for e, op in pairs:
            if not _contains(acc.expr, e):
                op = Operand(op.name, op.tensor, op.indices, op.storage, op.levels, acc.name)
            ops[id(e)] = op
            operands.append(op)
        wfmt = Format(("dense" if acc.format == "dense" else "compressed",) * len(acc.holds),
                      tuple(range(len(acc.holds))))
        fmts[acc.name] = wfmt
        waccess = next(e for e in accesses(consumer) if e.tensor == acc.name)
        wop = Operand(acc.name, acc.name, acc.holds, acc.holds, ("compressed",) * len(acc.holds), acc.name)
        ops[id(waccess)] = wop
        operands.append(wop)
        cut = pos[acc.index]
        nests = {"main": loops, acc.name: acc.consumer_loops}

        def key_of(nest: str, v: str) -> str:
            return f"{v}@{nest}" if nest != "main" and v in acc.holds else v

        _merge_points(m, rhs, loops[:cut], key_of, ops, nests, "main")
        _merge_points(m, acc.expr, loops[cut:], key_of, ops, nests, "main")
        _merge_points(m, consumer, acc.holds, key_of, ops, nests, acc.name)
        _check_workspace_levels(acc, m.points)
    merges = {k: _resolve(mp) for k, mp in m.points.items()}
    needs = tuple(j.name for mp in merges.values() for j in mp.joins if j.needs_method)
    _check_output(assignment, fmts, merges)
    return Concrete(assignment, rhs, loops, dims, fmts, merges, (acc,) if acc else (), needs, tuple(operands),
                    consumer)


def _check_workspace_levels(acc: Accumulator, points: dict[str, MergePoint]) -> None:
    """A workspace's deeper levels follow its own upper levels: those must not meet other operands."""
    for f in acc.holds[:-1]:
        mp = points[f"{f}@{acc.name}"]
        if mp.joins or mp.output != f"{acc.name}.{acc.holds.index(f)}":
            raise ValueError(f"workspace {acc.name!r} holds ({', '.join(acc.holds)}); at its upper level {f!r} the "
                             f"expression outside the reduction meets other operands, which is supported only at "
                             f"its last level {acc.holds[-1]!r}; reorder so that one index is held")


def _check_output(a: Assignment, fmts: dict[str, Format], merges: dict[str, MergePoint]) -> None:
    """A sparse result level cannot be written from an iteration that repeats coordinates."""
    fmt = fmts[a.lhs.tensor]
    sparse = {a.lhs.indices[m]: kind for m, kind in zip(fmt.order, fmt.levels) if kind != "dense"}
    for mp in merges.values():
        if mp.index in sparse and any(leaf.name == mp.output and not leaf.unique for leaf in mp.scans):
            raise ValueError(f"result {a.lhs.tensor!r} stores index {mp.index!r} in a {sparse[mp.index]} level, but "
                             f"{mp.index!r} iterates a non-unique (COO) level that repeats coordinates; give the "
                             f"result a dense level there or store the operand as csr or csf")
