"""Seeded instance generators for benchmarks.

Each generator returns a complete instance dict (``dfopt-instance/1``) and is deterministic for
its seed. :func:`generate` parses the ``name:key=value,...`` specs that suites write after
``gen:``.

>>> inst = generate("fifo_random:n=5,seed=1")
>>> inst["name"], inst["problem"], len(inst["graph"]["kernels"])
('rand-n5-s1', 'fifo', 5)
>>> inst == random_fifo_dag(5, 1)
True
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence

import numpy as np

from dfopt.errors import InstanceError, unknown_name_error

INSTANCE_FORMAT = "dfopt-instance/1"

# Shape of the random DAG (tuned so that an average kernel has about 2.3 input streams, most of
# them from the few kernels just before it: long paths and many reconvergent fork-joins).
_P_FAN_IN = 0.33          # fan-in ~ geometric(p), capped at max_fan_in: few inputs are likely
_P_LONG_RANGE = 0.1       # share of edges whose source is uniform over all earlier kernels
_P_STEP = 0.4             # distance back of a local edge ~ geometric(p)
_TOKEN_DRIFT = 0.08       # std. dev. of the per-kernel step of log2(tokens)


def random_fifo_dag(n_kernels: int, seed: int, *, iis: Sequence[int] = (1, 2, 4),
                    tokens: Sequence[int] = (32, 256), max_fan_in: int = 8, delay: Sequence[int] = (1, 20),
                    width: Sequence[int] = (8, 512)) -> dict:
    """A random connected DAG instance of the ``fifo`` problem.

    Kernels ``k0 .. k{n-1}`` are in topological order; ``k0`` is the only source and every other
    kernel reads from 1..``max_fan_in`` distinct earlier kernels. Kernel ``delay`` and ``ii`` are
    drawn from the ranges; the token count drifts slowly along the kernel order (log-space random
    walk within ``tokens``) and every stream carries its consumer's count, so a kernel reads and
    writes token counts of the same order. Widths are powers of two within ``width``.
    Ranges are inclusive ``(low, high)`` pairs.

    >>> inst = random_fifo_dag(4, 0)
    >>> [k["name"] for k in inst["graph"]["kernels"]]
    ['k0', 'k1', 'k2', 'k3']
    >>> all(int(s["src"][1:]) < int(s["dst"][1:]) for s in inst["graph"]["streams"])
    True
    """
    _check_generator_args(n_kernels, iis, tokens, max_fan_in, delay, width)
    rng = np.random.default_rng(seed)
    delays = rng.integers(delay[0], delay[1] + 1, size=n_kernels)
    kernel_iis = rng.choice(np.asarray(iis, dtype=np.int64), size=n_kernels)
    src, dst = _draw_edges(rng, n_kernels, max_fan_in)
    kernel_tokens = _token_walk(rng, n_kernels, tokens)
    widths = _draw_widths(rng, len(src), width)
    defaults = _defaults(random_fifo_dag)
    given = {"iis": iis, "tokens": tokens, "max_fan_in": max_fan_in, "delay": delay, "width": width}
    name = f"rand-n{n_kernels}-s{seed}" + _params_suffix(given, defaults)
    kernels = [{"name": f"k{i}", "delay": d, "ii": ii}
               for i, (d, ii) in enumerate(zip(delays.tolist(), kernel_iis.tolist()))]
    streams = [{"name": f"e{j}", "src": f"k{s}", "dst": f"k{t}", "tokens": tok, "width": w}
               for j, (s, t, tok, w) in enumerate(zip(src.tolist(), dst.tolist(),
                                                      kernel_tokens[dst].tolist(), widths.tolist()))]
    return {"format": INSTANCE_FORMAT, "name": name, "problem": "fifo",
            "graph": {"kernels": kernels, "streams": streams}}


def _draw_edges(rng: np.random.Generator, n: int, max_fan_in: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (src, dst) pairs with src < dst, sorted by dst then src; every dst > 0 has one."""
    if n < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    targets = np.arange(1, n, dtype=np.int64)
    fan_in = np.minimum(np.minimum(rng.geometric(_P_FAN_IN, size=n - 1), max_fan_in), targets)
    dst = np.repeat(targets, fan_in)
    local = rng.random(dst.size) >= _P_LONG_RANGE
    far = 1 + np.floor(rng.random(dst.size) * dst).astype(np.int64)       # uniform in 1..dst
    near = rng.geometric(_P_STEP, size=dst.size)
    src = dst - np.minimum(np.where(local, near, far), dst)
    pairs = np.unique(dst * n + src)                     # dedupe; sorted by (dst, src)
    return pairs % n, pairs // n


def _token_walk(rng: np.random.Generator, n: int, tokens) -> np.ndarray:
    """Per-kernel token counts: a log2-space random walk folded into ``tokens``, 3 significant bits."""
    lo, hi = np.log2(tokens[0]), np.log2(tokens[1])
    span = hi - lo
    if span == 0:
        return np.full(n, tokens[0], dtype=np.int64)
    walk = rng.uniform(0, span) + np.cumsum(rng.normal(0.0, _TOKEN_DRIFT, size=n))
    folded = span - np.abs(np.mod(walk, 2 * span) - span)          # reflect into [0, span]
    raw = np.exp2(lo + folded)
    quantum = np.exp2(np.maximum(np.floor(np.log2(raw)) - 2, 0))
    return np.clip(np.round(raw / quantum) * quantum, tokens[0], tokens[1]).astype(np.int64)


def _draw_widths(rng: np.random.Generator, count: int, width) -> np.ndarray:
    """Powers of two within ``width`` (uniform over them); plain integers when there is none."""
    lo, hi = width
    powers = [1 << b for b in range(31) if lo <= (1 << b) <= hi]
    if powers:
        return rng.choice(np.asarray(powers, dtype=np.int64), size=count)
    return rng.integers(lo, hi + 1, size=count)


def _check_generator_args(n_kernels, iis, tokens, max_fan_in, delay, width) -> None:
    """Raise :class:`InstanceError` naming the first bad argument."""
    def bad(arg, expected, got):
        raise InstanceError(f"generator argument {arg}: expected {expected}, got {got!r}")

    if not isinstance(n_kernels, (int, np.integer)) or n_kernels < 1:
        bad("n_kernels", "an integer >= 1", n_kernels)
    if not isinstance(max_fan_in, (int, np.integer)) or max_fan_in < 1:
        bad("max_fan_in", "an integer >= 1", max_fan_in)
    if len(iis) == 0 or any(int(v) != v or v < 1 for v in iis):
        bad("iis", "a non-empty list of integers >= 1", iis)
    for arg, rng_, low in (("tokens", tokens, 1), ("delay", delay, 0), ("width", width, 1)):
        if len(rng_) != 2 or any(int(v) != v for v in rng_) or not low <= rng_[0] <= rng_[1]:
            bad(arg, f"an integer range (low, high) with {low} <= low <= high", rng_)


def _defaults(fn) -> dict:
    return {p.name: p.default for p in inspect.signature(fn).parameters.values()
            if p.default is not inspect.Parameter.empty}


def _params_suffix(given: dict, defaults: dict) -> str:
    """``-h<hash>`` of the non-default keyword arguments ('' when all are defaults)."""
    changed = {k: tuple(v) if isinstance(v, (list, tuple)) else v
               for k, v in given.items() if _as_tuple(v) != _as_tuple(defaults[k])}
    if not changed:
        return ""
    digest = hashlib.sha1(repr(sorted(changed.items())).encode()).hexdigest()[:6]
    return f"-h{digest}"


def _as_tuple(v):
    return tuple(v) if isinstance(v, (list, tuple)) else v


# more generators are registered at the end of the module
GENERATORS: dict[str, Callable[..., dict]] = {"fifo_random": random_fifo_dag}
_ALIASES = {"n": "n_kernels"}


def generate(spec: str) -> dict:
    """The instance dict of a spec ``name:key=value,...`` (``n`` is short for ``n_kernels``).

    Values are integers, floats, or ``|``-separated tuples (``iis=1|2``, ``tokens=16|64``).
    Unknown generators or parameters are an :class:`InstanceError` listing the valid ones.

    >>> len(generate("fifo_random:n=3,seed=0,iis=1|2")["graph"]["kernels"])
    3
    """
    name, _, params_text = spec.partition(":")
    name = name.strip()
    if name not in GENERATORS:
        raise unknown_name_error("generator", name, GENERATORS)
    fn = GENERATORS[name]
    params = _parse_params(params_text, spec)
    valid = list(inspect.signature(fn).parameters)
    for key in params:
        if key not in valid:
            raise InstanceError(f"generator {name!r} has no parameter {key!r} (in {spec!r}); "
                                f"expected some of: {', '.join(valid)} (n = n_kernels)")
    missing = [p for p in valid if p not in params and p not in _defaults(fn)]
    if missing:
        raise InstanceError(f"generator spec {spec!r} lacks {', '.join(missing)}; "
                            f"write it like 'fifo_random:n=100,seed=0'")
    return fn(**params)


def _parse_params(text: str, spec: str) -> dict:
    params = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InstanceError(f"generator spec {spec!r}: expected key=value, got {item!r}")
        key = _ALIASES.get(key.strip(), key.strip())
        params[key] = _parse_value(value.strip(), spec)
    return params


def _parse_value(text: str, spec: str):
    if "|" in text:
        return tuple(_parse_value(part, spec) for part in text.split("|"))
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    raise InstanceError(f"generator spec {spec!r}: expected a number or a|b|c, got {text!r}")


def _register_problem_generators() -> None:
    # generators of other problems build on the helpers above, so they register after them
    from dfopt.bench.bursty_gen import bursty_dag
    from dfopt.bench.fusion_gen import random_fusion_dag
    from dfopt.bench.placement_gen import (
        pagerank,
        random_placement_dag,
        stencil_chain,
        systolic_array,
    )

    GENERATORS["bursty"] = bursty_dag
    GENERATORS["fusion_random"] = random_fusion_dag
    GENERATORS["placement_random"] = random_placement_dag
    GENERATORS["systolic"] = systolic_array
    GENERATORS["stencil"] = stencil_chain
    GENERATORS["pagerank"] = pagerank


_register_problem_generators()
