"""The SAM primitives on whole streams: each takes its input streams and returns its output
streams and its work (cycles of a one-lane unit).

Work: one per token handled — a scanner its output tokens (or its inputs, if more), a locate or
array reader its inputs, a repeater or ALU its outputs, a reducer, crd-drop or writer its inputs;
a merge joiner one per two-finger step plus a stop token per fibre and done; a dense joiner the
whole dimension per fibre; the bit-vector units one per word of their bit-vector streams (plus
stop tokens); an accumulator one per value it adds plus its drain (dense workspace: a scan of
its touched-bit words; sparse: sorting its touched coordinates) and the coordinates it emits.

Arrays are read only here (scanners read ``pos`` and ``crd``, array readers ``vals``), and every
access is logged with the iteration that made it (:mod:`dfopt.sim.sparse.facts`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dfopt.ir.sparse.sam import SamNode
from dfopt.ir.sparse.tensor import Level, SparseTensor
from dfopt.sim.sparse.facts import AccessLog
from dfopt.sim.sparse.joins import Joined, JoinStats, bv_gen, bv_join, bv_scan, join, words_per_fibre
from dfopt.sim.sparse.streams import EMPTY, BitStream, Stream, ancestors, fibre_of, offsets_of, ragged_arange

_ROOT = Stream("ref", np.zeros(1, dtype=np.int64))


@dataclass
class Context:
    """What the primitives share: the operands, the index sizes, the access logs, the join
    statistics, the workspaces' contents and the written result."""

    tensors: dict[str, SparseTensor]
    dims: dict[str, int]
    logs: dict[str, AccessLog] = field(default_factory=dict)
    joins: dict[str, JoinStats] = field(default_factory=dict)
    workspaces: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    written: dict = field(default_factory=dict)

    def log(self, name: str, tensor: str, kind: str, role: str, loop: str | None, length: int) -> AccessLog:
        if name not in self.logs:
            self.logs[name] = AccessLog(tensor, kind, role, loop, length)
        return self.logs[name]


Result = tuple[dict[str, Stream], int]


def _tokens(*streams: Stream | None) -> int:
    return sum(s.tokens for s in streams if s is not None)


# --- scanning -----------------------------------------------------------------------------------

def scanner(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """Level scanner (SAM's fiber lookup): each input reference opens one fibre of the level."""
    a = node.attrs
    parent = ins.get("ref", _ROOT)
    if a["tensor"] is None:                                    # a range: every coordinate
        shape = ins.get("shape")
        count = 1 if shape is None else shape.leaves
        lens = np.full(count, a["size"], dtype=np.int64)
        crd = ragged_arange(np.zeros(count, dtype=np.int64), lens)
        segs = (() if shape is None else shape.segs) + (offsets_of(lens),)
        out = Stream("crd", crd, segs)
        return {"crd": out}, max(_tokens(shape), out.tokens)
    t = ctx.tensors[a["tensor"]]
    level = t.levels[a["level"]]
    refs = parent.data
    valid = refs != EMPTY
    if level.kind == "dense":
        lens = np.where(valid, level.size, 0)
        crd = ragged_arange(np.zeros(len(refs), dtype=np.int64), lens)
        child = np.repeat(refs * level.size, lens) + crd
    elif level.kind == "compressed":
        r = refs[valid]
        lo = np.zeros(len(refs), dtype=np.int64)
        hi = np.zeros(len(refs), dtype=np.int64)
        lo[valid], hi[valid] = level.pos[r], level.pos[r + 1]
        lens = hi - lo
        child = ragged_arange(lo, lens)
        crd = level.crd[child]
        _log_pos(node, ctx, t, level, r, np.flatnonzero(valid), parent)
    else:
        lens = valid.astype(np.int64)
        child = refs[valid]
        crd = level.crd[child]
    segs = parent.segs + (offsets_of(lens),)
    if level.crd is not None:
        name = f"{t.name}.{a['level']}.crd"
        ctx.log(name, t.name, "crd", "read", node.loop, len(level.crd)).add(
            child, np.arange(len(child)), segs, a.get("nest", ""))
    out = Stream("crd", crd.astype(np.int64), segs)
    return {"crd": out, "ref": out.like("ref", child.astype(np.int64))}, max(parent.tokens, out.tokens)


def _log_pos(node: SamNode, ctx: Context, t: SparseTensor, level: Level, r: np.ndarray, ids: np.ndarray,
             parent: Stream) -> None:
    """``pos[r]`` and ``pos[r + 1]`` per reference; a run of consecutive references reads each once."""
    first = np.ones(len(r), dtype=bool)
    first[1:] = r[1:] != r[:-1] + 1
    positions = np.stack([r, r + 1], axis=1).reshape(-1)
    keep = np.stack([first, np.ones(len(r), dtype=bool)], axis=1).reshape(-1)
    point = np.repeat(ids, 2)[keep] if parent.segs else np.zeros(int(keep.sum()), dtype=np.int64)
    name = f"{t.name}.{node.attrs['level']}.pos"
    ctx.log(name, t.name, "pos", "read", node.attrs.get("above"), len(level.pos_array())).add(
        positions[keep], point, parent.segs, node.attrs.get("nest", ""))


def locate(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """A dense level's positions at given coordinates: ``parent * size + crd``."""
    parent, crd = ins.get("ref", _ROOT), ins["crd"]
    if parent.depth == crd.depth:                      # one parent per coordinate
        rep = parent.data
    else:
        lens = crd.lengths()
        if len(lens) != parent.leaves:
            raise ValueError(f"{node.name}: {parent.leaves} parent references for {len(lens)} coordinate fibres")
        rep = np.repeat(parent.data, lens)
    out = np.where(rep != EMPTY, rep * node.attrs["size"] + crd.data, EMPTY)
    return {"ref": crd.like("ref", out)}, crd.tokens


def repeater(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """Each token of ``in`` repeated once per coordinate of the matching fibre of ``repsig``."""
    src, sig = ins.get("in", _ROOT), ins["repsig"]
    lens = sig.lengths()
    if len(lens) != src.leaves:
        raise ValueError(f"{node.name}: {src.leaves} tokens to repeat over {len(lens)} fibres")
    out = Stream(src.kind, np.repeat(src.data, lens), sig.segs)
    return {"out": out}, out.tokens


# --- joining ------------------------------------------------------------------------------------

def _lanes(node: SamNode, ins: dict[str, Stream], joined: Joined) -> dict[str, Stream]:
    left, right = node.attrs["lanes"]
    out = {"crd": joined.crd}
    for side, names, index in (("a", left, joined.index_a), ("b", right, joined.index_b)):
        for leaf in names:
            lane = ins[f"ref_{side}.{leaf}"].data
            ref = np.full(len(index), EMPTY, dtype=np.int64)
            hit = index >= 0
            ref[hit] = lane[index[hit]]
            out[f"ref.{leaf}"] = joined.crd.like("ref", ref)
    return out


def _stats(node: SamNode, ctx: Context, joined: Joined) -> None:
    a, s = node.attrs, joined.stats
    if node.loop is None:
        raise ValueError(f"{node.name}: a {node.kind} node joins at a loop index, but this one has no loop")
    ctx.joins[a["join"]] = JoinStats(node.loop, a["op"], (a["left"], a["right"]), s.fibers, a["dim"], s.sizes,
                                     s.inter, s.union, s.merge_steps, a["method"])


def joiner(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """Two-finger (``merge``) or whole-dimension (``dense``) intersect / union of two fibre streams."""
    a = node.attrs
    joined = join(ins["crd_a"], ins["crd_b"], a["op"], a["dim"])
    _stats(node, ctx, joined)
    s = joined.stats
    work = (s.merge_steps if a["method"] == "merge" else s.fibers * a["dim"]) + s.fibers + 1
    return _lanes(node, ins, joined), work


def _bits(node: SamNode, ins: dict[str, Stream], port: str) -> BitStream:
    """Input ``port``, which must be a bit-vector stream (the output of a ``bv_gen`` or ``bv_join``)."""
    s = ins[port]
    if not isinstance(s, BitStream):
        raise ValueError(f"{node.name}: input {port!r} is a {s.kind} stream, not a bit-vector stream")
    return s


def bitvector_gen(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    out = bv_gen(ins["crd"], node.attrs["dim"], node.attrs["width"])
    return {"bv": out}, out.tokens


def bitvector_join(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    out = bv_join(_bits(node, ins, "bv_a"), _bits(node, ins, "bv_b"), node.attrs["op"])
    return {"bv": out}, out.tokens


def bitvector_scan(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    a = node.attrs
    joined = bv_scan(_bits(node, ins, "bv"), _bits(node, ins, "bv_a"), _bits(node, ins, "bv_b"), a["op"], a["dim"],
                     a["width"])
    _stats(node, ctx, joined)
    return _lanes(node, ins, joined), ins["bv"].tokens


# --- values -------------------------------------------------------------------------------------

def array(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """Values at references (0 at an empty reference)."""
    a = node.attrs
    ref = ins.get("ref", _ROOT)
    r = ref.data
    valid = r != EMPTY
    if a["tensor"] in ctx.workspaces:
        vals, local = ctx.workspaces[a["tensor"]]
        positions = local[r[valid]]
        length = ctx.logs[f"{a['tensor']}.vals"].length
    else:
        vals = ctx.tensors[a["tensor"]].vals
        positions = r[valid]
        length = len(vals)
    out = np.zeros(len(r), dtype=vals.dtype)
    out[valid] = vals[r[valid]]
    role = "accumulate" if a["tensor"] in ctx.workspaces else "read"
    ctx.log(f"{a['tensor']}.vals", a["tensor"], "vals", role, node.loop, length).add(
        positions, np.flatnonzero(valid), ref.segs, a.get("nest", ""))
    return {"val": ref.like("val", out)}, ref.tokens


def alu(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    a = node.attrs
    x = ins["a"]
    y = ins["b"].data if "b" in ins else a["const"]
    if "b" in ins and ins["b"].leaves != x.leaves:
        raise ValueError(f"{node.name}: operands of {x.leaves} and {ins['b'].leaves} values")
    lhs, rhs = (y, x.data) if a.get("const_side") == "a" else (x.data, y)
    op = a["op"]
    data = -x.data if op == "neg" else lhs * rhs if op == "mul" else lhs + rhs if op == "add" else lhs - rhs
    out = x.like("val", np.asarray(data))
    return {"val": out}, out.tokens


def reducer(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """The sum of each innermost fibre (0 for an empty one): one level up."""
    v = ins["val"]
    lens = v.lengths()
    sums = np.zeros(len(lens), dtype=v.data.dtype)
    nz = lens > 0
    if nz.any():
        sums[nz] = np.add.reduceat(v.data, v.segs[-1][:-1][nz])
    return {"val": Stream("val", sums, v.segs[:-1])}, v.tokens


def accumulator(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """SAM's sparse accumulator / Stardust's workspace: adds each value at its held coordinates,
    then, per iteration of the outer loops, emits the touched coordinates in order (one level
    per held index, with references into the workspace)."""
    a = node.attrs
    v, holds, base, dims = ins["val"], a["holds"], a["outer"], a["dims"]
    n = v.leaves
    ids = np.arange(n, dtype=np.int64)
    outer = ancestors(v.segs, ids, base) if base else np.zeros(n, dtype=np.int64)
    n_outer = 1 if base == 0 else len(v.segs[base]) - 1
    size = math.prod(dims)
    strides = [math.prod(dims[m + 1:]) for m in range(len(dims))]
    lin = np.zeros(n, dtype=np.int64)
    for f, stride in zip(holds, strides):
        c = ins[f"crd.{f}"]
        lin += c.data[ancestors(v.segs, ids, c.depth)] * stride
    if n_outer * size >= 2**62:
        raise ValueError(f"{node.name}: workspace keys of {n_outer} x {size} entries overflow")
    keys = outer * size + lin
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.flatnonzero(np.concatenate(([True], np.diff(inverse[order]) != 0))) if n else np.zeros(0, int)
    sums = np.add.reduceat(v.data[order], starts) if n else np.zeros(0, dtype=v.data.dtype)
    u_outer, u_lin = uniq // size, uniq % size
    slot = _slots(u_outer, first) if a["format"] == "sparse" else u_lin
    ctx.workspaces[a["workspace"]] = (sums, slot)
    length = size if a["format"] == "dense" else int(np.bincount(u_outer).max(initial=0)) if len(uniq) else 0
    nest = a.get("consumer", "")
    loop = holds[-1]                                   # each value is added in an iteration of the last held loop
    ctx.log(f"{a['workspace']}.vals", a["workspace"], "vals", "accumulate", loop, length).add(
        slot[inverse], ids, v.segs, a.get("nest", ""))
    out, segs, parent, n_parent = {}, v.segs[:base], u_outer, n_outer
    prev_flags = None
    for m, f in enumerate(holds):
        prefix = u_outer * math.prod(dims[:m + 1]) + u_lin // strides[m]
        flags = np.concatenate(([True], prefix[1:] != prefix[:-1])) if len(prefix) else np.zeros(0, bool)
        if prev_flags is not None:
            parent = (np.cumsum(prev_flags) - 1)[flags]
            n_parent = int(prev_flags.sum())
        else:
            parent = u_outer[flags]
        segs = segs + (offsets_of(np.bincount(parent, minlength=n_parent)),)
        crd = (u_lin // strides[m]) % dims[m]
        out[f"crd.{f}"] = Stream("crd", crd[flags], segs)
        ref = np.arange(len(uniq), dtype=np.int64) if m == len(holds) - 1 else np.arange(int(flags.sum()))
        out[f"ref.{f}"] = Stream("ref", ref, segs)
        prev_flags = flags
    if a["format"] == "sparse":
        crd_log = ctx.log(f"{a['workspace']}.crd", a["workspace"], "crd", "accumulate", loop, length)
        touch = np.argsort(first, kind="stable")
        crd_log.add(slot[touch], first[touch], v.segs, a.get("nest", ""))
        crd_log.add(slot, np.arange(len(uniq)), segs, nest)
        per = np.bincount(u_outer, minlength=n_outer)
        drain = int(sum(int(t) * math.ceil(math.log2(t + 1)) for t in per[per > 0]))
    else:
        drain = n_outer * words_per_fibre(size, 64)
    last = out[f"crd.{holds[-1]}"]
    return out, v.tokens + drain + last.tokens


def _slots(outer: np.ndarray, first: np.ndarray) -> np.ndarray:
    """A sparse workspace's slot of each entry: its rank in first-touch order within its outer
    iteration (entries sorted by outer iteration, then coordinates)."""
    order = np.lexsort((first, outer))
    group_start = np.searchsorted(outer[order], outer[order], side="left")
    slot = np.empty(len(order), dtype=np.int64)
    slot[order] = np.arange(len(order)) - group_start
    return slot


def crd_drop(node: SamNode, ins: dict[str, Stream], ctx: Context) -> Result:
    """Drops the outer coordinates whose inner fibre is empty (and the values that go with them)."""
    outer, inner = ins["outer"], ins["inner"]
    keep = inner.lengths() > 0
    if len(keep) != outer.leaves:
        raise ValueError(f"{node.name}: {outer.leaves} outer coordinates for {len(keep)} inner fibres")
    fib = fibre_of(outer.segs[-1])
    osegs = outer.segs[:-1] + (offsets_of(np.bincount(fib[keep], minlength=outer.fibers)),)
    out = {"outer": Stream("crd", outer.data[keep], osegs)}
    isegs = osegs + (np.concatenate(([0], inner.segs[-1][1:][keep])),)
    out["inner"] = Stream("crd", inner.data, isegs)
    if "val" in ins:
        val = ins["val"]
        out["val"] = Stream("val", val.data[keep], osegs) if val.depth == outer.depth else \
            Stream("val", val.data, isegs)
    return out, _tokens(outer, inner)
