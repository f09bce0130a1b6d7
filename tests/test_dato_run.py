"""dfopt.dato.run: recorded Dato programs run on data, against NumPy written independently."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.dato.examples import attention_program, ffn_program, gemm_program
from dfopt.dato.frontend import Program, R, S, Stream, StreamArray, Tensor, allreduce, compute, reduce_sum
from dfopt.dato.run import RunError, run
from dfopt.reference import to_bf16


def _bf16(x):
    return to_bf16(x).astype(np.float64)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from([4, 8, 16]), st.booleans(), st.integers(0, 2**16))
def test_gemm_computes_a_times_b_in_both_forms(grid, tile, loaders, seed):
    size = grid * tile
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    out = run(gemm_program(size, grid, loaders=loaders), {"A": A, "B": B})
    ref = _bf16(A) @ _bf16(B)
    assert out.written["C"].all()
    assert np.abs(out.tensors["C"] - ref).max() <= 1e-5 * np.abs(ref).max() * size


def _gelu(h):
    return 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))


def test_ffn_computes_gelu_of_x_w1_times_w2_with_bf16_between_the_ops():
    rng = np.random.default_rng(1)
    X, W1, W2 = rng.standard_normal((64, 32)), rng.standard_normal((32, 64)) * 0.3, rng.standard_normal((64, 32)) * 0.2
    out = run(ffn_program(tokens=64, d=32, hidden=64, chunks=2), {"X": X, "W1": W1, "W2": W2})
    assert out.written["Y"].all()
    # the program's rounding points: the bf16 product, gelu, each half's product, the chain's sum
    g = _bf16(_gelu(_bf16(_bf16(X) @ _bf16(W1))))
    halves = [_bf16(g[:, 32 * j:32 * (j + 1)] @ _bf16(W2)[32 * j:32 * (j + 1)]) for j in range(2)]
    ref = _bf16(halves[0] + halves[1])
    assert np.abs(out.tensors["Y"] - ref).max() <= 2 ** -7 * np.abs(ref).max()
    # and within bf16's reach of the exact function
    exact = _gelu(X @ W1) @ W2
    assert np.abs(out.tensors["Y"] - exact).max() <= 0.03 * np.abs(exact).max()
    # every stream carried what the recording says was put on it
    rec = ffn_program(tokens=64, d=32, hidden=64, chunks=2).record()
    assert out.tokens == {name: s.puts for name, s in rec.streams.items()}


def _row_sums(shards: int) -> Program:
    p = Program("row_sums")
    X = Tensor("X", ("f32", (8, 16)), layout=[R, S(0)])
    Y = Tensor("Y", ("f32", (8,)))

    @p.task(mapping=[shards])
    def part(i):
        s = allreduce(reduce_sum(X.load(), axis=1), op="sum", axis=0)
        if i == shards - 1:
            Y.store(s)

    return p


@pytest.mark.parametrize("shards", [1, 2, 4])
def test_an_allreduce_chain_leaves_the_whole_sum_on_its_last_member(shards):
    X = np.arange(128, dtype=np.float64).reshape(8, 16)
    out = run(_row_sums(shards), {"X": X})
    assert out.tensors["Y"].tolist() == X.sum(axis=1).tolist()


@pytest.mark.parametrize("shards", [2, 4])
def test_an_allreduce_result_carries_the_largest_term_of_its_chain_as_its_scale(shards):
    """Terms that cancel: the stored sum is small, its scale is the sum of its terms' magnitudes
    (through reduce_sum and the chain); a tensor stored from a nonlinear compute has none."""
    rng = np.random.default_rng(shards)
    X = rng.standard_normal((8, 16)) * 10
    X[:, 8:] = -X[:, :8]                         # every row sums to zero
    out = run(_row_sums(shards), {"X": X})
    assert set(out.scale) == {"Y"}
    np.testing.assert_allclose(out.scale["Y"], np.abs(X).sum(axis=1), rtol=1e-5)
    assert (out.scale["Y"] >= np.abs(out.tensors["Y"])).all()
    plain = Program("plain")
    Z = Tensor("Z", ("f32", (4, 4)))

    @plain.task()
    def only():
        Z.store(compute("relu", reads=[Z.load()]))

    assert run(plain, {"Z": np.ones((4, 4))}).scale == {}


def test_the_scale_of_a_product_is_the_product_of_the_magnitudes():
    """GEMM's C: |A| @ |B| per element, through the chain of partial products."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    out = run(gemm_program(64, 2), {"A": A, "B": B})
    want = np.abs(to_bf16(A)).astype(np.float32) @ np.abs(to_bf16(B)).astype(np.float32)
    np.testing.assert_allclose(out.scale["C"], want, rtol=1e-4)
    assert (out.scale["C"] >= np.abs(out.tensors["C"])).all()


def test_a_compute_with_no_numbers_is_named_with_its_line():
    p = Program("unknown")
    X = Tensor("X", ("f32", (4, 4)))

    @p.task()
    def only():
        X.store(compute("row_max", reads=[X.load()]))

    with pytest.raises(RunError, match=r"instance only line \d+: compute 'row_max' has no numbers here"):
        run(p, {"X": np.zeros((4, 4))})


def _attention(q, k, v):
    s = q @ k.T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) @ v


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from([4, 16]), st.sampled_from([8, 32]), st.floats(0.1, 3.0),
       st.integers(0, 2**16))
def test_attention_in_the_kernels_ops_is_softmax_of_q_kt_times_v(blocks, rows, dim, spread, seed):
    """The online softmax over key blocks equals the whole-row softmax (within bf16: P and O are
    stored in bf16), whatever the number of blocks and the scores' spread."""
    seq = blocks * rows
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((seq, dim)) * spread for _ in range(3))
    out = run(attention_program(seq, dim, blocks), {"Q": Q, "K": K, "V": V})
    ref = _attention(_bf16(Q), _bf16(K), _bf16(V))
    assert out.written["O"].all()
    assert np.abs(out.tensors["O"] - ref).max() <= 2 ** -6 * np.abs(_bf16(V)).max()


def test_attention_runs_the_kernel_steps_in_order():
    """Per query block: the running state after block j is the softmax state of the first j + 1 key
    blocks, so gemm1's accumulator rescales what came before (checked on the shipped shape by
    replaying the kernels' steps in NumPy: one softmax_block per key block, rescale, matmul_acc)."""
    from dfopt.dato.run import FUNCTIONS

    rng = np.random.default_rng(3)
    Q, K, V = (_bf16(rng.standard_normal((256, 64)) * 0.5) for _ in range(3))
    out = run(attention_program(), {"Q": Q, "K": K, "V": V})
    softmax_block, b = FUNCTIONS["softmax_block"].fn, 64
    for i in range(4):
        q, state, acc = Q[i * b:(i + 1) * b], [], None
        for j in range(4):
            s = (q.astype(np.float32) @ K[j * b:(j + 1) * b].astype(np.float32).T).astype(np.float32)
            m, total, probs, alpha = softmax_block(s, *state, dtypes=("f32", "f32", "bf16", "f32"))
            state = [m, total]
            pv = probs.astype(np.float32) @ V[j * b:(j + 1) * b].astype(np.float32)
            acc = pv if acc is None else acc * alpha[:, None] + pv
        assert np.array_equal(out.tensors["O"][i * b:(i + 1) * b], to_bf16(acc / state[1][:, None]))


def test_a_compute_with_several_results():
    """``compute(..., out=[...])`` makes one value per type; its local buffer holds them all."""
    p = Program("multi")
    S_ = Tensor("S", ("f32", (4, 8)))
    P_ = Tensor("P", ("bf16", (4, 8)))
    L_ = Tensor("L", ("f32", (4,)))

    @p.task()
    def only():
        m, total, probs, alpha = compute("softmax_block", reads=[S_.load()],
                                         out=[("f32", (4,)), ("f32", (4,)), ("bf16", (4, 8)), ("f32", (4,))])
        P_.store(probs)
        L_.store(total)

    rec = p.record()
    op = next(o for o in rec.instances["only"].ops if o.kind == "compute")
    assert len(op.outs) == 4 and op.out == op.outs[0] and op.work == 4 * 3 + 32
    assert rec.instances["only"].local_bytes >= 3 * 16 + 64
    s = np.linspace(-2, 2, 32).reshape(4, 8)
    out = run(p, {"S": s})
    e = np.exp(s - s.max(axis=1, keepdims=True))
    assert np.allclose(out.tensors["P"], e, rtol=2 ** -8)
    assert np.allclose(out.tensors["L"], out.tensors["P"].sum(axis=1), rtol=1e-6)


def test_missing_or_misshapen_data_is_refused():
    with pytest.raises(RunError, match="no data for tensor\\(s\\) B"):
        run(gemm_program(8, 2), {"A": np.zeros((8, 8))})
    with pytest.raises(RunError, match="tensor 'A': expected shape \\(8, 8\\), got \\(4, 8\\)"):
        run(gemm_program(8, 2), {"A": np.zeros((4, 8)), "B": np.zeros((8, 8))})


def test_a_deadlock_names_every_waiting_instance():
    p = Program("ring")
    a = Stream("a", Stream[("f32", (4,)), 2])
    b = Stream("b", Stream[("f32", (4,)), 2])
    T = Tensor("T", ("f32", (4,)))

    @p.task()
    def ping():
        a.put(compute("relu", reads=[b.get()]))

    @p.task()
    def pong():
        b.put(compute("relu", reads=[a.get()]))
        T.store(T.load())

    with pytest.raises(RunError) as err:
        run(p, {"T": np.zeros(4)})
    text = str(err.value)
    assert "ping (line" in text and "stream 'b'" in text and "pong (line" in text and "stream 'a'" in text


def test_split_chunks_travel_as_their_rows():
    p = Program("chunks")
    X = Tensor("X", ("f32", (8, 4)))
    Y = Tensor("Y", ("f32", (8, 4)))
    pipe = StreamArray("pipe", Stream[("f32", (2, 4)), 2], shape=(1,))

    @p.task()
    def send():
        for part in compute("exp", reads=[X.load()]).split(axis=0, parts=4):
            pipe[0].put(part)

    @p.task()
    def recv():
        for t in range(4):
            Y.store(compute("relu", reads=[pipe[0].get()]), chunk=(0, t, 4))

    X_data = np.linspace(-1, 1, 32).reshape(8, 4)
    out = run(p, {"X": X_data})
    assert np.allclose(out.tensors["Y"], np.exp(X_data), rtol=1e-6)


def test_an_in_place_compute_takes_no_buffer_and_its_input_is_gone():
    """``inplace=i``: the result has read i's type and buffer; reading the overwritten value again
    is refused with both lines named (on hardware it no longer holds what it held)."""
    from dfopt.dato.dsl_types import DatoError

    def program(reuse: bool) -> Program:
        p = Program("acc")
        X = Tensor("X", ("f32", (4, 8)))
        A = Tensor("A", ("f32", (4,)))

        @p.task()
        def only():
            x = X.load()
            y = compute("rescale", reads=[x, A.load()], inplace=0)
            X.store(compute("relu", reads=[x if reuse else y]))

        return p

    rec = program(False).record()
    ops = rec.instances["only"].ops
    assert rec.instances["only"].local_bytes == 128 + 16 + 128       # x, the row factors, relu's result
    out = run(program(False), {"X": np.ones((4, 8)) * -1, "A": np.array([1.0, -2.0, 3.0, -4.0])})
    assert out.tensors["X"][:, 0].tolist() == [0.0, 2.0, 0.0, 4.0] and len(ops) == 5
    with pytest.raises(DatoError, match=r"used after line \d+ overwrote it in place"):
        program(True).record()
