"""The arithmetic op kinds beyond the transformer core: ``sub`` and ``div`` (and a column operand,
one value per row, of the binary ops), ``unary`` (exp, tanh, erf, sigmoid, sqrt, rsqrt, reciprocal,
neg, abs, square, pow), ``reduce`` (sum, mean, max, min over the last axis) and ``rope`` (the
rotary embedding): their NumPy semantics against independent
formulas, their faults, their tiling, and one graph of all of them solved, emitted and run in both
C simulation models, the compute loops recounted against the cost model and each process's stream
operations compared with its kernel's port schedules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf

import hls_parse as P
from csim import assert_stream_order, both_csims
from dfopt.errors import InstanceError
from dfopt.ir.opgraph import UNARY_FNS, OpGraph
from dfopt.reference import compare, evaluate, random_inputs

NUMPY = {"exp": np.exp, "tanh": np.tanh, "erf": erf, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
         "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": lambda x: 1 / x, "neg": lambda x: -x,
         "abs": np.abs, "square": lambda x: x ** 2, "pow": lambda x: x ** 1.5}


def _one(op: dict, shapes: dict, dtype: str = "f64") -> OpGraph:
    """A graph of one op with output ``z``."""
    return OpGraph.from_dict({"tensors": {k: {"shape": v, "dtype": dtype} for k, v in shapes.items()},
                              "ops": [{"name": "o", "output": "z", **op}], "outputs": ["z"]})


@pytest.mark.parametrize("fn", list(UNARY_FNS))
def test_unary_functions_match_their_formulas(fn):
    op = {"op": "unary", "inputs": ["x"], "fn": fn, **({"exponent": 1.5} if fn == "pow" else {})}
    g = _one(op, {"x": [3, 5]})
    x = np.random.default_rng(1).uniform(0.1, 2.0, size=(3, 5))
    assert np.allclose(evaluate(g, {"x": x})["z"], NUMPY[fn](x), rtol=1e-12)


def test_sub_and_div_take_a_tensor_or_a_trailing_vector():
    x, y, v = np.arange(1, 13.0).reshape(3, 4), np.full((3, 4), 2.0), np.array([1.0, 2, 4, 8])
    assert (evaluate(_one({"op": "sub", "inputs": ["x", "y"]}, {"x": [3, 4], "y": [3, 4]}), {"x": x, "y": y})["z"]
            == x - y).all()
    assert (evaluate(_one({"op": "div", "inputs": ["x", "v"]}, {"x": [3, 4], "v": [4]}), {"x": x, "v": v})["z"]
            == x / v).all()


@pytest.mark.parametrize("how,numpy", [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_reduces_the_last_axis(how, numpy, keepdims):
    g = _one({"op": "reduce", "inputs": ["x"], "reduction": how, "keepdims": keepdims}, {"x": [2, 3, 5]})
    x = np.random.default_rng(2).standard_normal((2, 3, 5))
    y = evaluate(g, {"x": x})["z"]
    assert g.tensors["z"].shape == ((2, 3, 1) if keepdims else (2, 3))
    assert np.allclose(y, numpy(x, axis=-1, keepdims=keepdims))


def test_integer_sum_wraps_around_like_the_other_integer_ops():
    g = _one({"op": "reduce", "inputs": ["x"], "reduction": "sum"}, {"x": [1, 4]}, dtype="i8")
    assert evaluate(g, {"x": np.array([[100, 100, 100, -1]])})["z"].tolist() == [43]     # 299 mod 256


def test_rope_rotates_each_pair_of_halves_by_its_position_angle():
    """The rotate-half form: element i pairs with i + d/2, rotated by the angle of its position."""
    heads, pos, d = 2, 5, 6
    theta = 10000.0 ** (-np.arange(d // 2) * 2 / d)
    angles = np.arange(pos)[:, None] * theta[None, :]
    cos, sin = np.cos(np.tile(angles, 2)), np.sin(np.tile(angles, 2))
    g = _one({"op": "rope", "inputs": ["x", "cos", "sin"]}, {"x": [heads, pos, d], "cos": [pos, d], "sin": [pos, d]})
    x = np.random.default_rng(3).standard_normal((heads, pos, d))
    y = evaluate(g, {"x": x, "cos": cos, "sin": sin})["z"]
    z = x[..., : d // 2] + 1j * x[..., d // 2:]                  # the pair as a complex number
    rotated = z * np.exp(1j * angles)
    assert np.allclose(y, np.concatenate([rotated.real, rotated.imag], axis=-1))
    assert np.allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1))   # a rotation


@pytest.mark.parametrize("op,shapes,where,what", [
    ({"op": "unary", "inputs": ["x"], "fn": "log"}, {"x": [4]}, "/operators/ops/0/fn", "expected one of exp"),
    ({"op": "unary", "inputs": ["x"]}, {"x": [4]}, "/operators/ops/0", "missing attribute 'fn'"),
    ({"op": "unary", "inputs": ["x"], "fn": "exp", "exponent": 2}, {"x": [4]}, "/operators/ops/0/exponent",
     "applies to fn pow only"),
    ({"op": "reduce", "inputs": ["x"], "reduction": "prod"}, {"x": [2, 4]}, "/operators/ops/0/reduction",
     "expected one of sum, mean, max, min"),
    ({"op": "reduce", "inputs": ["x"], "reduction": "sum"}, {"x": [4]}, "/operators/ops/0/keepdims",
     "leaves a scalar"),
    ({"op": "rope", "inputs": ["x", "c", "s"]}, {"x": [2, 4, 5], "c": [4, 5], "s": [4, 5]}, "/operators/ops/0/inputs/0",
     "even last dimension"),
    ({"op": "rope", "inputs": ["x", "c", "s"]}, {"x": [2, 4, 6], "c": [6], "s": [4, 6]}, "/operators/ops/0/inputs/1",
     "expected cos of shape [4, 6]"),
    ({"op": "div", "inputs": ["x", "y"]}, {"x": [2, 4], "y": [2]}, "/operators/ops/0/inputs/1", "such as a vector [4]"),
], ids=["unknown-fn", "no-fn", "exponent", "reduction", "scalar", "rope-odd", "rope-table", "div-broadcast"])
def test_faults_name_the_attribute_or_input(op, shapes, where, what):
    with pytest.raises(InstanceError) as err:
        _one(op, shapes)
    assert err.value.pointer == where and what in str(err.value), str(err.value)


def test_mean_of_integers_is_refused():
    with pytest.raises(InstanceError, match="a mean needs a float dtype"):
        _one({"op": "reduce", "inputs": ["x"], "reduction": "mean"}, {"x": [2, 4]}, dtype="i32")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=4), st.sampled_from(["sum", "mean", "max", "min"]),
       st.booleans(), st.sampled_from(["f32", "f16", "bf16"]))
def test_reduce_in_each_float_dtype_stays_within_its_tolerance(shape, how, keepdims, dtype):
    d = {"tensors": {"x": {"shape": shape, "dtype": "f64"}},
         "ops": [{"name": "r", "op": "reduce", "inputs": ["x"], "output": "y", "reduction": how, "keepdims": keepdims}],
         "outputs": ["y"]}
    exact = evaluate(OpGraph.from_dict(d), random_inputs(OpGraph.from_dict(d), 0))
    d["tensors"]["x"]["dtype"] = dtype
    low = evaluate(OpGraph.from_dict(d), {"x": exact["x"]})
    tol = math.sqrt(shape[-1])                    # a sum of n rounded values: about sqrt(n) roundings
    ok, err, _ = compare(exact["y"] / tol, low["y"] / tol, dtype)
    assert ok, (err, dtype)


# -- tiling ----------------------------------------------------------------------------------------

def test_reduce_writes_one_value_per_row_and_rope_reads_its_tables_by_position():
    from dfopt.models.tiling import costs
    from dfopt.models.tiling.tiler import tile_graph

    g = OpGraph.from_dict(ALL_OPS)
    tiled = tile_graph(g, 2, 32)
    k = tiled.kernels["total"]
    src, dst = tiled.streams["f__total"], tiled.streams["r1__r1_out"]
    assert src.dst_type.element == (2, 2, 8) and dst.src_type.element == (2, 2, 1) and src.tokens == dst.tokens
    ur, uc = costs.row_unroll(4, 8, k.attrs["lanes"])
    assert k.ii == (4 // ur) * (8 // uc) + 4 // ur          # one pass, one fold
    cos = tiled.streams["cos__rot"]
    assert cos.dst_type.element == (2, 8) and cos.dst_type.tokens == tiled.streams["e__rot"].dst_type.tokens == 2


# -- the pipeline, emitted and simulated ----------------------------------------------------------

UNARY_CHAIN = [("t1", "tanh"), ("t2", "erf"), ("t3", "square"), ("t4", "sqrt"), ("t5", "exp"), ("t6", "rsqrt"),
               ("t7", "reciprocal"), ("t8", "neg"), ("t9", "abs"), ("t10", "pow"), ("e", "sigmoid")]
ALL_OPS = {
    "tensors": {"x": {"shape": [2, 4, 8], "dtype": "f32"}, "y": {"shape": [2, 4, 8], "dtype": "f32"},
                "v": {"shape": [8], "dtype": "f32", "kind": "weight"},
                "cos": {"shape": [4, 8], "dtype": "f32", "kind": "weight"},
                "sin": {"shape": [4, 8], "dtype": "f32", "kind": "weight"}},
    "ops": [{"name": "a", "op": "sub", "inputs": ["x", "y"], "output": "a"},
            {"name": "b", "op": "div", "inputs": ["a", "v"], "output": "t0"},
            *[{"name": n, "op": "unary", "inputs": [f"t{i}"], "output": n, "fn": fn,
               **({"exponent": 1.5} if fn == "pow" else {})} for i, (n, fn) in enumerate(UNARY_CHAIN)],
            {"name": "rot", "op": "rope", "inputs": ["e", "cos", "sin"], "output": "f"},
            {"name": "total", "op": "reduce", "inputs": ["f"], "output": "r1", "reduction": "sum", "keepdims": True},
            {"name": "top", "op": "reduce", "inputs": ["f"], "output": "r2", "reduction": "max"},
            {"name": "avg", "op": "reduce", "inputs": ["x"], "output": "r3", "reduction": "mean"},
            {"name": "low", "op": "reduce", "inputs": ["a"], "output": "r4", "reduction": "min"},
            {"name": "peak", "op": "reduce", "inputs": ["t5"], "output": "r5", "reduction": "max", "keepdims": True},
            {"name": "centre", "op": "sub", "inputs": ["f", "r1"], "output": "g"},      # columns: one value per row
            {"name": "scaled", "op": "div", "inputs": ["g", "r5"], "output": "h"}],
    "outputs": ["f", "r1", "r2", "r3", "r4", "h"]}


def _instance(tile: int, budget: int) -> dict:
    return {"format": "dfopt-instance/1", "name": "math-ops", "problem": "pipeline", "platform": "u280",
            "options": {"pipeline": {"default_tile_size": tile, "overall_unroll_size": budget}}, "operators": ALL_OPS}


def _recount(tiled, bodies) -> None:
    from dfopt.codegen.hls.emit import ident

    for k in tiled.kernels.values():              # the compute loops take the cost model's II
        if k.op not in ("dma_in", "dma_out"):
            stream = next(s for s in tiled.streams.values() if s.src == k.name)
            assert P.compute_cycles(bodies["k_" + ident(k.name)]) == k.ii * stream.src_type.tokens, k.name


@pytest.mark.parametrize("tile,budget", [(2, 64), (3, 7), (8, 256)], ids=["small-tiles", "odd", "whole"])
def test_every_math_op_solves_emits_and_passes_both_csim_models(tmp_path, tile, budget):
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit
    from dfopt.models.tiling.tiler import tile_graph

    inst = from_dict(_instance(tile, budget))
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    out = tmp_path / "design"
    emit(inst, sol, out)
    _recount(tile_graph(inst.operators, tile, budget), P.functions((out / "kernels.cpp").read_text()))
    both_csims(out)


@pytest.mark.slow
def test_the_math_ops_stream_in_the_order_of_their_port_schedules(tmp_path):
    """The emitted processes' stream operations, logged by a stream header that prints each one,
    against the order of each kernel's events (as tests/test_port_schedules.py does for the
    transformer ops)."""
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.fusion import fused_design
    from dfopt.models.pipeline import emit
    from dfopt.models.tiling.tiler import tile_graph

    inst = from_dict(_instance(2, 64))
    sol = solve_instance(inst, time_limit=20)
    design = tmp_path / "design"
    emit(inst, sol, design)
    assert_stream_order(design, fused_design(tile_graph(inst.operators, 2, 64), sol.decision.fusion), tmp_path)


BROADCASTS = {
    "tensors": {"x": {"shape": [2, 3, 4, 5], "dtype": "f32"},
                "scale": {"shape": [3, 1, 1], "dtype": "f32", "kind": "weight"},
                "shift": {"shape": [1, 3, 1, 1], "dtype": "f32", "kind": "weight"},
                "row": {"shape": [1, 5], "dtype": "f32", "kind": "weight"},
                "bias": {"shape": [4, 5], "dtype": "f32", "kind": "weight"}},
    "ops": [{"name": "per_channel", "op": "mul", "inputs": ["x", "scale"], "output": "a"},
            {"name": "shifted", "op": "add", "inputs": ["a", "shift"], "output": "b"},
            {"name": "rows", "op": "sub", "inputs": ["b", "row"], "output": "c"},
            {"name": "biased", "op": "add", "inputs": ["c", "bias"], "output": "d"},
            {"name": "peak", "op": "reduce", "inputs": ["d"], "output": "m", "reduction": "max", "keepdims": True},
            {"name": "norm", "op": "div", "inputs": ["d", "m"], "output": "y"}],
    "outputs": ["y"]}


@pytest.mark.parametrize("tile,budget", [(2, 16), (3, 5), (8, 64)])
def test_numpy_broadcasts_of_the_binary_ops_pass_both_csim_models(tmp_path, tile, budget):
    """Per-channel ``[C, 1, 1]`` and ``[1, C, 1, 1]``, a row ``[1, W]``, a trailing ``[H, W]`` and a
    column ``[..., 1]``: each element reads its operand at its own coordinates, 0 on the size-1 axes."""
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit
    from dfopt.models.tiling.tiler import tile_graph

    inst = from_dict({**_instance(tile, budget), "operators": BROADCASTS})
    tiled = tile_graph(inst.operators, tile, budget)
    assert tiled.streams["scale__per_channel"].dst_type.element[-2:] == (1, 1)
    sol = solve_instance(inst, time_limit=20)           # the reduce's reconvergent path needs sized FIFOs
    assert sol.ok
    out = tmp_path / "d"
    emit(inst, sol, out)
    _recount(tiled, P.functions((out / "kernels.cpp").read_text()))
    both_csims(out, via_make=True)
