"""The Dato front end: recording, static checks, the mapping graph and its export."""

from __future__ import annotations

import inspect
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.dato import examples
from dfopt.dato.checks import check, check_or_raise, simulate
from dfopt.dato.frontend import (
    DatoError,
    Program,
    R,
    S,
    Stream,
    StreamArray,
    Tensor,
    allreduce,
    compute,
    instance,
    matmul,
    reduce_sum,
)
from dfopt.dato.graph import can_bundle, can_chain, mapping_graph, to_dataflow_graph, to_dict
from dfopt.errors import InstanceError
from dfopt.instance.convert import graph_from_dict, graph_to_dict
from dfopt.ir.analyses import find_cycle
from dfopt.sim import simulate as simulate_tokens


def marker(text: str, module=examples) -> int:
    """The line of ``module`` that carries the comment ``# dato: text``."""
    lines = inspect.getsource(module).splitlines()
    found = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(f"# dato: {text}")]
    assert len(found) == 1, text
    return found[0]


# == recording ================================================================================

@pytest.mark.parametrize("name, instances, streams, groups", [
    ("gemm", 96, 128, 16), ("ffn", 16, 8, 4), ("attention", 16, 20, 0)])
def test_accepted_examples_record_and_pass(name, instances, streams, groups):
    rec = examples.ACCEPTED[name]().record()
    assert (len(rec.instances), len(rec.streams), len(rec.groups)) == (instances, streams, groups)
    assert check(rec) == []
    assert all(sr.puts == sr.gets and sr.producer and sr.consumer for sr in rec.streams.values())


def test_gemm_instances_streams_and_groups():
    rec = examples.gemm_program().record()
    inst = rec.instances["gemm_1_2_3"]
    assert (inst.task, inst.index, inst.grid) == ("gemm", (1, 2, 3), (4, 4, 4))
    assert [op.kind for op in inst.ops] == ["get", "get", "compute", "allreduce", "store"]
    assert inst.work == 64 * 64 * 64 + 64 * 64 + 2  # matmul MACs, the allreduce, two stream tokens
    assert inst.local_bytes == 2 * 64 * 64 * 2 + 2 * 64 * 64 * 4  # a, b (bf16); c, its allreduce (f32)
    a = rec.streams["a_pipe[1,2,3]"]
    assert (a.producer, a.consumer, a.puts, a.gets, a.depth, a.bits) == ("load_a_1_3", "gemm_1_2_3", 1, 1, 2, 65536)
    assert rec.groups["gemm_1_2_*"].members == ("gemm_1_2_0", "gemm_1_2_1", "gemm_1_2_2", "gemm_1_2_3")
    assert rec.instances["load_a_1_3"].ops[1].line == rec.instances["load_a_0_0"].ops[1].line


def test_ops_carry_the_callers_source_line():
    p = Program("lines")
    s = Stream("s", Stream["f32", 2])

    @p.task(mapping=[2])
    def src(i):
        for _ in range(2):
            s_i = compute("gen", work=3, out="f32")  # dato: gen
            (s if i == 0 else t).put(s_i)  # dato: put

    t = Stream("t", Stream["f32", 2])

    @p.task()
    def dst():
        for _ in range(2):
            s.get()  # dato: get s
            t.get()

    rec = p.record()
    mod = inspect.getmodule(test_ops_carry_the_callers_source_line)
    ops = rec.instances["src_0"].ops
    assert [(op.kind, op.line) for op in ops[:2]] == [("compute", marker("gen", mod)), ("put", marker("put", mod))]
    assert ops[0].file == __file__
    assert rec.streams["s"].consumers == {"dst": [marker("get s", mod)] * 2}
    assert rec.instances["src_1"].work == 2 * 3 + 2
    assert check(rec) == []


def test_task_with_no_parameters_uses_instance():
    p = Program("pid")
    seen = []

    @p.task(mapping=[2, 3])
    def body():
        seen.append(instance())

    rec = p.record()
    assert seen == [(i, j) for i in range(2) for j in range(3)]
    assert list(rec.instances)[:2] == ["body_0_0", "body_0_1"]


def test_stream_types():
    t = Stream[("bf16", (32, 32)), 4, 2]
    assert (str(t.elem), t.depth, t.packing, t.elem.bits) == ("bf16[32x32]", 4, 2, 32 * 32 * 16)
    assert Stream["f32"].depth == 2 and Stream[("f32", (8,))].elem.shape == (8,)
    assert StreamArray("pipe", Stream["f32", 2, 1], shape=(4, 4))[3, 1].name == "pipe[3,1]"
    for bad in (lambda: Stream["f33", 2], lambda: Stream["f32", 0], lambda: Stream["f32", 2, 1, 1]):
        with pytest.raises(DatoError):
            bad()


def _record_error(body, mapping=(2,)) -> DatoError:
    p = Program("bad")
    p.add_task(body, mapping=list(mapping), name="t")
    with pytest.raises(DatoError) as err:
        p.record()
    return err.value


def test_recording_errors_name_the_line():
    A = Tensor("A", ("f32", (6, 8)), layout=[S(0), R])
    pipe = StreamArray("pipe", Stream["f32", 2], shape=(2,))

    def branch(i):
        if compute("x", out="f32"):
            pass

    def out_of_range(i):
        pipe[i + 1].put(1.0)

    def bad_shard(i):
        Tensor("B", ("f32", (4, 4)), layout=[S(1), R]).load()

    def uneven(i):
        A.load()

    err = _record_error(branch)
    assert err.diagnostics[0].kind == "control" and err.diagnostics[0].instance == "t_0"
    assert err.diagnostics[0].line == inspect.getsourcelines(branch)[1] + 1
    assert "index [2] is out of range" in str(_record_error(out_of_range))
    assert "has the 1-axis grid [2]" in str(_record_error(bad_shard))
    assert "extent 6 does not split into 4" in str(_record_error(uneven, mapping=(4,)))
    with pytest.raises(DatoError, match="only meaningful inside a task body"):
        Stream("s", Stream["f32"]).put(1.0)


def test_value_from_another_instance_is_rejected():
    box = []

    def leak(i):
        v = compute("x", out="f32")
        if box:
            compute("y", reads=[box[0]])
        box.append(v)

    assert "pass data between instances through a stream" in str(_record_error(leak))


# == rejected programs: exactly their diagnostic ==============================================

REJECTED_EXPECT = {
    "producer": ("right", "right", "out", "second producer", ()),
    "balance": ("producer", "producer", "x", "unbalanced put", ("unbalanced get",)),
    "deadlock": ("ping", "ping", "b", "ping blocks", ("pong blocks",)),
    "partial": ("row_sum", "row_sum_0", "sums[0]", "use without allreduce", ("reduction",)),
    "chain": ("row_sum", "row_sum_0", "sums[0]", "use off the chain's end", ("allreduce",)),
    "layout": ("unpack", "unpack_0", "tiles[0]", "consumer view", ("producer view",)),
}


@pytest.mark.parametrize("kind", sorted(REJECTED_EXPECT))
def test_rejected_program_gives_exactly_its_diagnostic(kind):
    task, inst, stream, line_marker, other_markers = REJECTED_EXPECT[kind]
    found = check(examples.REJECTED[kind]())
    assert len(found) == 1, [str(d) for d in found]
    d = found[0]
    line = marker(line_marker)
    assert (d.kind, d.task, d.instance, d.stream, d.line) == (kind, task, inst, stream, line)
    assert f"line {line}" in d.message and f"'{stream}'" in d.message
    for other in other_markers:
        assert marker(other) in d.lines and f"line {marker(other)}" in d.message
    assert d.file == examples.__file__
    with pytest.raises(DatoError) as err:
        check_or_raise(examples.REJECTED[kind]())
    assert isinstance(err.value, InstanceError) and err.value.exit_code == 2
    assert err.value.diagnostics == found


def test_rejected_messages_say_what_and_where():
    texts = {k: str(check(f())[0]) for k, f in examples.REJECTED.items()}
    assert "has 2 producers, expected exactly one: left puts at line" in texts["producer"]
    assert "puts 8 token(s)" in texts["balance"] and "gets 7" in texts["balance"]
    assert "ping -> pong -> ping" in texts["deadlock"] and "(empty; producer pong)" in texts["deadlock"]
    assert 'add allreduce(x, op="sum", axis=0)' in texts["partial"] and "in 4 instances" in texts["partial"]
    assert "only its last member holds the sum" in texts["chain"] and "in 3 instances" in texts["chain"]
    assert "[S(0), R] (axis 0 block 0 of 2, axis 1 whole)" in texts["layout"]
    assert "[R, S(0)] (axis 0 whole, axis 1 block 0 of 2)" in texts["layout"]


# == the simulation-based check ===============================================================

def _pipeline(first: list, second: list, depths: dict) -> Program:
    """Two single-instance tasks a and b running the given (op, stream) sequences."""
    p = Program("two")
    streams = {n: Stream(n, Stream["f32", d]) for n, d in depths.items()}

    def body(seq):
        def run():
            for kind, name in seq:
                if kind == "put":
                    streams[name].put(1.0)
                else:
                    streams[name].get()
        return run

    p.add_task(body(first), name="a")
    p.add_task(body(second), name="b")
    return p


def test_producer_may_run_ahead_of_depth_when_the_consumer_progresses():
    p = _pipeline([("put", "s")] * 10, [("get", "s")] * 10, {"s": 2})
    assert check(p) == [] and simulate(p).max_occupancy == {"s": 2}


def test_fork_join_depth_decides_deadlock():
    a = [("put", "s1")] * 3 + [("put", "s2")]
    b = [("get", "s2")] + [("get", "s1")] * 3
    assert check(_pipeline(a, b, {"s1": 3, "s2": 1})) == []
    (d,) = check(_pipeline(a, b, {"s1": 2, "s2": 1}))
    assert (d.kind, d.instance, d.stream) == ("deadlock", "a", "s1")
    assert "a waits at line" in d.message and "to put to 's1' (full at depth 2; consumer b)" in d.message
    assert "b waits at line" in d.message and "to get from 's2' (empty; producer a)" in d.message


def test_self_stream_underflow_and_overflow():
    (d,) = check(_pipeline([("get", "s"), ("put", "s")], [], {"s": 1}))
    assert (d.kind, d.instance, d.stream) == ("underflow", "a", "s")
    (d,) = check(_pipeline([("put", "s"), ("put", "s"), ("get", "s"), ("get", "s")], [], {"s": 1}))
    assert (d.kind, d.instance, d.stream) == ("overflow", "a", "s")


def test_deadlock_through_an_allreduce():
    p = Program("barrier")
    s = Stream("s", Stream["f32", 2])

    @p.task(mapping=[2])
    def t(i):
        v = compute("x", out="f32")
        if i == 0:
            allreduce(v, axis=0)
            s.put(compute("y", out="f32"))
        else:
            s.get()
            allreduce(v, axis=0)

    (d,) = check(p)
    assert d.kind == "deadlock" and "t_0 -> t_1 -> t_0" in d.message
    assert "t_0 waits at line" in d.message and "in allreduce of group 't_*' for t_1" in d.message


def test_collective_call_mismatch():
    p = Program("collective")

    @p.task(mapping=[2])
    def t(i):
        v = compute("x", out="f32")
        for _ in range(i + 1):
            v = allreduce(v, axis=0)

    (d,) = check(p)
    assert d.kind == "collective" and d.instance == "t_0" and "t_1 calls allreduce 2 time(s)" in d.message


@st.composite
def two_task_programs(draw):
    """Balanced random put/get sequences of tasks a and b over 1-3 streams (self streams too)."""
    depths, seqs = {}, {"a": [], "b": []}
    for k in range(draw(st.integers(1, 3))):
        src, dst = draw(st.sampled_from(["ab", "ba", "aa", "bb"]))
        count, name = draw(st.integers(1, 4)), f"s{k}"
        depths[name] = draw(st.integers(1, 3))
        seqs[src] += [("put", name)] * count
        seqs[dst] += [("get", name)] * count
    return draw(st.permutations(seqs["a"])), draw(st.permutations(seqs["b"])), depths


def brute_force_deadlock(a: list, b: list, depths: dict) -> bool:
    """Explore every interleaving of a and b: is a stuck, unfinished state reachable?"""
    seqs = (a, b)
    stack, seen = [(0, 0)], {(0, 0)}
    while stack:
        pcs = stack.pop()
        occ = dict.fromkeys(depths, 0)
        for seq, pc in zip(seqs, pcs):
            for kind, name in seq[:pc]:
                occ[name] += 1 if kind == "put" else -1
        moves = []
        for t, (seq, pc) in enumerate(zip(seqs, pcs)):
            if pc < len(seq):
                kind, name = seq[pc]
                if (kind == "put" and occ[name] < depths[name]) or (kind == "get" and occ[name] > 0):
                    moves.append(tuple(p + (i == t) for i, p in enumerate(pcs)))
        if not moves and pcs != (len(a), len(b)):
            return True
        for m in moves:
            if m not in seen:
                seen.add(m)
                stack.append(m)
    return False


@settings(max_examples=300, deadline=None)
@given(two_task_programs())
def test_simulation_check_matches_brute_force(case):
    a, b, depths = case
    found = check(_pipeline(a, b, depths))
    assert all(d.kind in ("deadlock", "underflow", "overflow") for d in found)
    expected = brute_force_deadlock(a, b, depths)
    assert bool(found) == expected
    assert simulate(_pipeline(a, b, depths)).deadlock == expected


# == layouts, types and pending partial sums ==================================================

def test_partial_sum_discharged_only_over_its_axis():
    X = Tensor("X", ("f32", (8, 64)), layout=[S(1), S(0)])
    Y = Tensor("Y", ("f32", (8,)), layout=[S(1)])

    def program(axes):
        p = Program("partial")

        @p.task(mapping=[2, 2])
        def t(i, j):
            s = reduce_sum(X.load(), axis=1)  # sharded on grid axis 0
            for axis in axes:
                s = allreduce(s, axis=axis)
            if all(c == 1 for axis, c in enumerate((i, j)) if axis in axes):    # the chains' last members
                Y.store(compute("scale", reads=[s]))

        return p

    assert check(program([0])) == []
    (d,) = check(program([1]))
    assert d.kind == "partial" and "read by compute 'scale'" in d.message and "in 2 instances" in d.message
    assert "grid axis 0" in d.message


def test_store_layout_and_put_type_mismatch():
    C = Tensor("C", ("f32", (8, 8)), layout=[S(0), R])
    s = Stream("s", Stream["f32", 2])
    p = Program("mismatch")

    @p.task(mapping=[2, 2])
    def t(i, j):
        C.store(C.load(layout=[S(1), R]))  # row block j stored as row block i

    @p.task()
    def u():
        s.put(compute("x", out="bf16"))

    @p.task()
    def v():
        s.get()

    kinds = {d.kind: d for d in check(p)}
    assert sorted(kinds) == ["layout", "type"]
    assert "t_0_1 stores a tile with layout [S(1), R] (axis 0 block 1 of 2" in kinds["layout"].message
    assert "in 2 instances" in kinds["layout"].message
    assert kinds["type"].stream == "s" and "puts a value of type bf16" in kinds["type"].message


def test_matmul_of_sharded_contraction_needs_allreduce():
    A = Tensor("A", ("bf16", (8, 16)), layout=[R, S(0)])
    B = Tensor("B", ("bf16", (16, 8)), layout=[S(0), R])
    C = Tensor("C", ("bf16", (8, 8)))
    p = Program("mm")

    @p.task(mapping=[2])
    def t(i):
        C.store(matmul(A.load(), B.load()))

    (d,) = check(p)
    assert d.kind == "partial" and "stored into tensor 'C'" in d.message


# == the mapping graph: bundle and chain ======================================================

def test_bundle_legality_on_gemm():
    g = mapping_graph(examples.gemm_program())
    assert can_bundle(g, ["gemm_0_0_0", "gemm_0_1_0", "gemm_3_2_0"])
    assert can_bundle(g, ["load_a_0_0", "load_a_1_2"])
    v = can_bundle(g, ["gemm_0_0_0", "gemm_0_0_1"])
    assert not v and "gemm_0_0_0 reaches gemm_0_0_1 through gemm_0_0_0 -> gemm_0_0_1 ('gemm_0_0_*#0')" in v.reason
    v = can_bundle(g, ["gemm_0_0_0", "load_a_0_0"])
    assert not v and "not isomorphic: op 0 is get from 'a_pipe[0,0,0]'" in v.reason
    assert "listed twice" in can_bundle(g, ["gemm_0_0_0", "gemm_0_0_0"]).reason
    assert "unknown task instance 'nope'" in can_bundle(g, ["nope"]).reason


def test_bundle_needs_the_same_pattern_of_peers():
    p = Program("peers")
    y = StreamArray("y", Stream["f32", 2], shape=(3,))
    z = StreamArray("z", Stream["f32", 2], shape=(3,))

    @p.task(mapping=[3])
    def src(i):
        y[i].put(1.0)
        z[i].put(1.0)

    @p.task(mapping=[3])
    def dst(i):
        a, b = [(0, 0), (1, 2), (2, 1)][i]
        y[a].get()
        z[b].get()  # dst_0 gets both from src_0, dst_1 and dst_2 from two sources

    g = mapping_graph(p)
    v = can_bundle(g, ["dst_0", "dst_1"])
    assert not v and "op 1 is get from 'z[0]' (Stream[f32, 2, 1], peer src_0, line" in v.reason
    assert can_bundle(g, ["dst_1", "dst_2"]) and can_bundle(g, ["src_1", "src_2"])
    assert not can_bundle(g, ["src_0", "src_1"])


def test_chain_legality():
    att = mapping_graph(examples.attention_program())
    assert can_chain(att, "send_q_0", "gemm0_0") and can_chain(att, "softmax_2", "gemm1_2")
    assert "no stream from gemm0_0 to gemm1_0" in can_chain(att, "gemm0_0", "gemm1_0").reason
    v = can_chain(examples.deadlock_program(), "ping", "pong")
    assert not v and "pong reaches ping through pong -> ping ('b')" in v.reason

    tri = Program("triangle")
    e = {n: Stream(n, Stream["f32", 2]) for n in ("pc", "cx", "xp")}
    tri.add_task(lambda: (e["xp"].get(), e["pc"].put(1.0)), name="p")
    tri.add_task(lambda: (e["pc"].get(), e["cx"].put(1.0)), name="c")
    tri.add_task(lambda: (e["cx"].get(), e["xp"].put(1.0)), name="x")
    v = can_chain(tri, "p", "c")
    assert not v and "c -> x ('cx'), x -> p ('xp')" in v.reason
    assert "cannot be chained with itself" in can_chain(tri, "p", "p").reason


# == export ===================================================================================

@pytest.mark.parametrize("name", sorted(examples.ACCEPTED))
def test_exported_dataflow_graph_validates(name):
    rec = examples.ACCEPTED[name]().record()
    g = to_dataflow_graph(rec)
    again = graph_from_dict(graph_to_dict(g))  # schema and semantic checks of the instance format
    assert list(again.kernels) == list(rec.instances)
    for inst in rec.instances.values():
        k = g.kernels[inst.name]
        assert (k.latency, k.resources, k.attrs["task"], k.attrs["index"]) == (
            inst.work, {"bytes": inst.local_bytes}, inst.task, list(inst.index))
    for sr in rec.streams.values():
        s = g.streams[sr.name]
        assert (s.src, s.dst, s.tokens, s.width, s.depth) == (sr.producer, sr.consumer, sr.puts, sr.bits, sr.depth)
    reductions = sum(len(gr.members) - 1 for gr in rec.groups.values())
    assert len(g.streams) == len(rec.streams) + reductions
    assert find_cycle(g) is None
    assert not simulate_tokens(g, unbounded=True).deadlock


def test_export_kernel_ops_and_dict_form():
    g = to_dataflow_graph(examples.gemm_program())
    assert {g.kernels[n].op for n in ("load_a_0_0", "gemm_0_0_0")} == {"dma_in", "gemm"}
    assert g.streams["gemm_0_0_*#2"].src == "gemm_0_0_2" and g.streams["gemm_0_0_*#2"].width == 64 * 64 * 32
    d = to_dict(examples.attention_program())
    assert json.loads(json.dumps(d)) == d
    assert len(d["instances"]) == 16 and len(d["streams"]) == 20 and len(d["edges"]) == 20
    assert d["streams"][0] == {"name": "q_pipe[0]", "dtype": "bf16", "shape": [64, 64], "bits": 65536, "depth": 2,
                               "packing": 1, "producers": ["send_q_0"], "consumers": ["gemm0_0"],
                               "puts": 1, "gets": 1}


def test_export_refuses_a_stream_with_two_producers():
    with pytest.raises(DatoError, match="has 2 producers"):
        to_dataflow_graph(examples.two_producers_program())
