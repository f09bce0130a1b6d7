"""Programs written with the Dato DSL: three designs that pass every check, and one program per
class of static-check failure that must be rejected (``REJECTED`` maps each to its diagnostic kind).

Lines the rejected programs are rejected at carry a ``# dato:`` marker, so tests can find them.

>>> from dfopt.dato.checks import check
>>> [len(check(f())) for f in ACCEPTED.values()]
[0, 0, 0]
>>> {kind: [d.kind for d in check(f())] for kind, f in REJECTED.items()}["deadlock"]
['deadlock']
"""

from __future__ import annotations

from collections.abc import Callable

from dfopt.dato.frontend import (
    Program,
    R,
    S,
    Stream,
    StreamArray,
    Tensor,
    Value,
    allreduce,
    compute,
    matmul,
    reduce_sum,
)

# == accepted designs =========================================================================


def gemm_program(size: int = 256, grid: int = 4, loaders: bool = True) -> Program:
    """C = A @ B on a grid x grid x grid virtual grid (m, n, k).

    With ``loaders=False`` (the Dato paper's form, the mapping instance) each ``gemm[m, n, k]``
    loads its A block (m, k) and B block (k, n) itself, and only the k = grid - 1 instance stores
    the reduced C block: 64 instances, 48 reduction streams. Otherwise ``load_a[m, k]`` sends its
    A block to the ``gemm`` instances of row m, ``load_b[k, n]`` its B block to column n;
    ``gemm[m, n, k]`` multiplies its blocks, which contracts K, sharded over grid axis 2, so each
    holds a partial sum until ``allreduce(..., axis=2)`` combines the k instances; the last of each
    chain (k = grid - 1) stores C.
    96 instances, 128 streams, 16 collective groups for the default 4x4x4 grid.
    """
    p = Program("gemm")
    t = size // grid
    A = Tensor("A", ("bf16", (size, size)), layout=[S(0), S(1)])  # blocks of load_a's (m, k) grid
    B = Tensor("B", ("bf16", (size, size)), layout=[S(0), S(1)])  # blocks of load_b's (k, n) grid
    C = Tensor("C", ("f32", (size, size)), layout=[S(0), S(1)])  # blocks of gemm's (m, n) axes
    if not loaders:
        @p.task(mapping=[grid, grid, grid])
        def gemm(m, n, k):
            a = A.load(layout=[S(0), S(2)])
            b = B.load(layout=[S(2), S(1)])
            c = allreduce(matmul(a, b, out_dtype="f32"), op="sum", axis=2)
            if k == grid - 1:
                C.store(c)

        return p
    a_pipe = StreamArray("a_pipe", Stream[("bf16", (t, t)), 2, 1], shape=(grid, grid, grid))
    b_pipe = StreamArray("b_pipe", Stream[("bf16", (t, t)), 2, 1], shape=(grid, grid, grid))

    @p.task(mapping=[grid, grid])
    def load_a(m, k):
        a = A.load()
        for n in range(grid):
            a_pipe[m, n, k].put(a)

    @p.task(mapping=[grid, grid])
    def load_b(k, n):
        b = B.load()
        for m in range(grid):
            b_pipe[m, n, k].put(b)

    @p.task(mapping=[grid, grid, grid])  # type: ignore[no-redef]  # the other form's gemm returned above
    def gemm(m, n, k):
        a = a_pipe[m, n, k].get(layout=[S(0), S(2)])
        b = b_pipe[m, n, k].get(layout=[S(2), S(1)])
        c = matmul(a, b, out_dtype="f32")  # K is sharded on grid axis 2: a partial sum
        c = allreduce(c, op="sum", axis=2)
        if k == grid - 1:                  # the chain's last member holds the sum
            C.store(c)

    return p


def ffn_program(tokens: int = 256, d: int = 512, hidden: int = 1024, chunks: int = 4) -> Program:
    """Y = gelu(X @ W1) @ W2 with each GEMM on its own 4x2 half of the fabric.

    ``ffn1[i, j]`` computes rows block i and hidden half j and streams it in ``chunks`` row chunks
    to ``ffn2[i, j]``, which contracts its hidden half (sharded on grid axis 1) and combines the two
    halves with ``allreduce(..., axis=1)``; ``ffn2[i, 1]``, the last of each chain, stores the
    rows. 16 instances, 8 streams, 4 collective groups.
    """
    p = Program("ffn")
    X = Tensor("X", ("bf16", (tokens, d)), layout=[S(0), R])
    W1 = Tensor("W1", ("bf16", (d, hidden)), layout=[R, S(1)])
    W2 = Tensor("W2", ("bf16", (hidden, d)), layout=[S(1), R])
    Y = Tensor("Y", ("bf16", (tokens, d)), layout=[S(0), R])
    rows = tokens // 4 // chunks
    h_pipe = StreamArray("h_pipe", Stream[("bf16", (rows, hidden // 2)), 2, 1], shape=(4, 2))

    @p.task(mapping=[4, 2])
    def ffn1(i, j):
        h = matmul(X.load(), W1.load())  # hidden is sharded, K = d is not: no partial sum
        h = compute("gelu", reads=[h])
        for part in h.split(axis=0, parts=chunks):
            h_pipe[i, j].put(part)

    @p.task(mapping=[4, 2])
    def ffn2(i, j):
        w2 = W2.load()
        for t in range(chunks):
            h = h_pipe[i, j].get(layout=[S(0), S(1)], chunk=(0, t, chunks))
            y = allreduce(matmul(h, w2), op="sum", axis=1)
            if j == 1:                     # the chain's last member holds the sum
                Y.store(y, chunk=(0, t, chunks))

    return p


def attention_program(seq: int = 256, dim: int = 64, blocks: int = 4) -> Program:
    """FlashAttention-style pipeline per query block: send_q -> gemm0 -> online softmax -> gemm1,
    in the ops of the AIE kernels (:mod:`dfopt.codegen.aie.kernels`).

    O = softmax(Q K^T) V row by row, with Q taken already scaled by 1/sqrt(dim) (a scale folded into
    the Q projection). ``gemm0[i]`` computes the scores of query block i against each key block
    (``matmul_bt``, float), ``softmax[i]`` runs the online softmax over them (``softmax_block``:
    the running row max and sum, the block's probabilities in bf16 and the factor ``alpha`` that
    rescales what came before) and sends the probabilities, every factor after the first block and
    finally the row sums; ``gemm1[i]`` accumulates P @ V in float (``rescale`` then
    ``matmul_acc``) and normalises by the row sums. 16 instances, 20 streams, no collectives.
    """
    p = Program("attention")
    b = seq // blocks
    Q = Tensor("Q", ("bf16", (seq, dim)), layout=[S(0), R])
    K = Tensor("K", ("bf16", (seq, dim)))
    V = Tensor("V", ("bf16", (seq, dim)))
    Out = Tensor("O", ("bf16", (seq, dim)), layout=[S(0), R])
    q_pipe = StreamArray("q_pipe", Stream[("bf16", (b, dim)), 2], shape=(blocks,))
    s_pipe = StreamArray("s_pipe", Stream[("f32", (b, b)), 2], shape=(blocks,))
    p_pipe = StreamArray("p_pipe", Stream[("bf16", (b, b)), 2], shape=(blocks,))
    a_pipe = StreamArray("a_pipe", Stream[("f32", (b,)), 2], shape=(blocks,))
    l_pipe = StreamArray("l_pipe", Stream[("f32", (b,)), 1], shape=(blocks,))
    row = ("f32", (b,))

    @p.task(mapping=[blocks])
    def send_q(i):
        q_pipe[i].put(Q.load())

    @p.task(mapping=[blocks])
    def gemm0(i):
        q = q_pipe[i].get(layout=[S(0), R])
        for j in range(blocks):
            k = K.load(chunk=(0, j, blocks))
            s_pipe[i].put(compute("matmul_bt", work=b * dim * b, reads=[q, k], out=("f32", (b, b))))

    @p.task(mapping=[blocks])
    def softmax(i):
        state: list[Value] = []
        for j in range(blocks):
            s = s_pipe[i].get()
            m, total, probs, alpha = compute("softmax_block", work=3 * b * b, reads=[s, *state],
                                             out=[row, row, ("bf16", (b, b)), row])
            state = [m, total]
            p_pipe[i].put(probs)
            if j:                          # the first block has nothing to rescale
                a_pipe[i].put(alpha)
        l_pipe[i].put(state[1])

    @p.task(mapping=[blocks])
    def gemm1(i):
        acc = None
        for j in range(blocks):
            probs = p_pipe[i].get()
            v = V.load(chunk=(0, j, blocks))
            if acc is None:
                acc = matmul(probs, v, out_dtype="f32")
            else:
                acc = compute("rescale", reads=[acc, a_pipe[i].get()], inplace=0)
                acc = compute("matmul_acc", work=b * b * dim, reads=[probs, v, acc], inplace=2)
        Out.store(compute("normalize", reads=[acc, l_pipe[i].get()], out=("bf16", (b, dim))))

    return p


# == rejected programs (one per failure class) ================================================


def two_producers_program() -> Program:
    """Two tasks put on one stream."""
    p = Program("two_producers")
    out = Stream("out", Stream["f32", 2])

    @p.task()
    def left():
        for _ in range(4):
            out.put(compute("gen", out="f32"))

    @p.task()
    def right():
        for _ in range(4):
            out.put(compute("gen", out="f32"))  # dato: second producer

    @p.task()
    def sink():
        for _ in range(8):
            compute("use", reads=[out.get()])

    return p


def unbalanced_program() -> Program:
    """The producer's loop puts 8 tokens, the consumer's gets 7."""
    p = Program("unbalanced")
    x = Stream("x", Stream[("f32", (16,)), 2])

    @p.task()
    def producer():
        for _ in range(8):
            x.put(compute("gen", out=("f32", (16,))))  # dato: unbalanced put

    @p.task()
    def consumer():
        for _ in range(7):
            compute("use", reads=[x.get()])  # dato: unbalanced get

    return p


def deadlock_program() -> Program:
    """ping and pong both get before they put: each waits on the other's stream."""
    p = Program("deadlock")
    a = Stream("a", Stream["f32", 2])
    b = Stream("b", Stream["f32", 2])

    @p.task()
    def ping():
        for _ in range(4):
            v = b.get()  # dato: ping blocks
            a.put(compute("inc", reads=[v]))

    @p.task()
    def pong():
        for _ in range(4):
            v = a.get()  # dato: pong blocks
            b.put(compute("inc", reads=[v]))

    return p


def missing_allreduce_program() -> Program:
    """Row sums over an axis sharded on grid axis 0 are sent on without an allreduce."""
    p = Program("missing_allreduce")
    X = Tensor("X", ("f32", (8, 64)), layout=[R, S(0)])
    sums = StreamArray("sums", Stream[("f32", (8,)), 2], shape=(4,))

    @p.task(mapping=[4])
    def row_sum(i):
        s = reduce_sum(X.load(), axis=1)  # dato: reduction
        sums[i].put(s)  # dato: use without allreduce

    @p.task(mapping=[4])
    def drain(i):
        compute("use", reads=[sums[i].get()])

    return p


def chain_use_program() -> Program:
    """Every member of an allreduce group sends the reduced row sums on; only the last holds them."""
    p = Program("chain_use")
    X = Tensor("X", ("f32", (8, 64)), layout=[R, S(0)])
    sums = StreamArray("sums", Stream[("f32", (8,)), 2], shape=(4,))

    @p.task(mapping=[4])
    def row_sum(i):
        s = allreduce(reduce_sum(X.load(), axis=1), op="sum", axis=0)  # dato: allreduce
        sums[i].put(s)  # dato: use off the chain's end

    @p.task(mapping=[4])
    def drain(i):
        compute("use", reads=[sums[i].get()])

    return p


def layout_mismatch_program() -> Program:
    """The producer sends row blocks of A, the consumer reads them as column blocks."""
    p = Program("layout_mismatch")
    A = Tensor("A", ("bf16", (64, 64)), layout=[S(0), R])
    tiles = StreamArray("tiles", Stream[("bf16", (32, 64)), 2], shape=(2,))

    @p.task(mapping=[2])
    def pack(i):
        tiles[i].put(A.load())  # dato: producer view

    @p.task(mapping=[2])
    def unpack(i):
        compute("use", reads=[tiles[i].get(layout=[R, S(0)])])  # dato: consumer view

    return p


ACCEPTED: dict[str, Callable[..., Program]] = {"gemm": gemm_program, "ffn": ffn_program, "attention": attention_program}
REJECTED = {
    "producer": two_producers_program,
    "balance": unbalanced_program,
    "deadlock": deadlock_program,
    "partial": missing_allreduce_program,
    "chain": chain_use_program,
    "layout": layout_mismatch_program,
}


# == programs named by instances ==============================================================

#: the largest extent a program named in an instance may take, and the most task instances, loop
#: steps and tensor elements it may make (refused before anything is built)
MAX_EXTENT = 1 << 16
MAX_INSTANCES = 4096
MAX_ELEMENTS = 1 << 24


def _sizes(name: str, args: dict) -> tuple[int, int]:
    """(task instances and loop steps, largest tensor's elements) of an example at ``args``."""
    import inspect

    full = {k: p.default for k, p in inspect.signature(ACCEPTED[name]).parameters.items()}
    full.update(args)
    if name == "gemm":
        g = full["grid"]
        return g ** 3 + (2 * g * g if full["loaders"] else 0), full["size"] ** 2
    if name == "ffn":
        return 16 * full["chunks"], max(full["tokens"] * full["d"], full["d"] * full["hidden"])
    return 4 * full["blocks"] * full["blocks"], full["seq"] * full["dim"]


def program_from_spec(spec: dict, where: str = "options.mapping.program") -> Program:
    """The accepted example a mapping instance names: ``{"example": "ffn", "args": {"tokens": 128}}``
    (``args``: keyword arguments of the example's function, integers in 1..65536 or booleans).

    >>> program_from_spec({"example": "gemm", "args": {"size": 64, "grid": 2}}).name
    'gemm'
    >>> program_from_spec({"example": "conv"})
    Traceback (most recent call last):
    ...
    dfopt.errors.InstanceError: options.mapping.program.example: unknown example 'conv'; the shipped programs: ...
    """
    import inspect

    from dfopt.errors import InstanceError

    def at(*parts: str) -> str:
        sep = "/" if where.startswith("/") else "."
        return sep.join((where, *parts))

    if not isinstance(spec, dict) or set(spec) - {"example", "args"}:
        raise InstanceError(f"expected {{\"example\": name, \"args\": {{...}}}}, got {spec!r}", pointer=where)
    name = spec.get("example")
    if name not in ACCEPTED:
        raise InstanceError(f"unknown example {name!r}; the shipped programs: "
                            f"{', '.join(sorted(ACCEPTED))}", pointer=at("example"))
    fn = ACCEPTED[name]
    args = spec.get("args") or {}
    params = inspect.signature(fn).parameters
    if not isinstance(args, dict):
        raise InstanceError("expected an object of keyword arguments", pointer=at("args"))
    for key, value in args.items():
        here = at("args", key)
        if key not in params:
            raise InstanceError(f"{name}_program takes no argument {key!r} (it takes {', '.join(params)})",
                                pointer=here)
        if isinstance(params[key].default, bool):
            if not isinstance(value, bool):
                raise InstanceError(f"expected true or false, got {value!r}", pointer=here)
        elif isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_EXTENT:
            raise InstanceError(f"expected an integer in 1..{MAX_EXTENT}, got {value!r}", pointer=here)
    steps, elements = _sizes(name, args)
    if steps > MAX_INSTANCES or elements > MAX_ELEMENTS:
        raise InstanceError(f"{name}_program({', '.join(f'{k}={v}' for k, v in args.items())}) makes {steps} task "
                            f"instances and loop steps and tensors of {elements} elements; at most {MAX_INSTANCES} "
                            f"and {MAX_ELEMENTS}", pointer=at("args"))
    from dfopt.errors import DfoptError

    try:
        return fn(**args)
    except (DfoptError, ValueError, ZeroDivisionError) as err:
        raise InstanceError(f"{name}_program({', '.join(f'{k}={v}' for k, v in args.items())}) cannot be built: "
                            f"{err}", pointer=at("args")) from err


def program_of(instance) -> Program:
    """The program a mapping instance names in ``options.mapping.program``; a CodegenError saying so
    when it names none."""
    from dfopt.errors import CodegenError

    spec = (instance.options or {}).get("mapping", {}).get("program")
    if spec is None:
        raise CodegenError(f"instance {instance.name!r} does not name the Dato program it was made from "
                           "(options.mapping.program: {\"example\": ..., \"args\": {...}}); the numeric model "
                           "needs it (from Python: pass program=)")
    return program_from_spec(spec)


def check_program(instance, program=None, where: str = "options.mapping.program") -> None:
    """InstanceError (at ``where``) unless the program's task instances are the instance's virtual
    nodes; ``program`` defaults to the one the instance names (nothing to check without one)."""
    from dfopt.errors import InstanceError

    if program is None:
        spec = (instance.options or {}).get("mapping", {}).get("program")
        if spec is None:
            return
        program = program_from_spec(spec, where)
    from dfopt.dato.graph import to_dataflow_graph

    graph = to_dataflow_graph(program)
    mine = _signature(graph)
    theirs = _signature(instance.graph) if instance.graph is not None else set()
    if mine != theirs:
        odd = sorted(str(x[1]) for x in mine ^ theirs)
        raise InstanceError(f"the program is not the one the instance was made from: {len(mine ^ theirs)} virtual "
                            f"nodes or streams differ (e.g. {', '.join(odd[:4])})",
                            pointer=where)


def _signature(graph) -> set:
    """What a mapping instance takes from a program: the virtual nodes with their host traffic, the
    streams with their ends, tokens and widths."""
    import json

    nodes = {("node", k.name, json.dumps(k.attrs.get("io", []), sort_keys=True)) for k in graph.kernels.values()}
    return nodes | {("stream", s.name, s.src, s.dst, s.tokens, s.width) for s in graph.streams.values()}
