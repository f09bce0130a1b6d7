"""The window ops ``conv2d`` and ``pool`` through the whole pipeline: the operator graph's checks,
the NumPy reference against ``onnx.reference`` (through the ONNX import of Conv, BatchNormalization
folded or not, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool at opsets 13, 17 and 21),
the refusals naming the node and attribute, the tiling and cost model (the compute loops of the
emitted C++ recounted), the port schedules against the emitted code's stream operations, and CNN
designs, the shipped ResNet basic block among them, in both C simulation models."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import hls_parse as P
from csim import assert_stream_order, both_csims
from dfopt.errors import InstanceError
from dfopt.frontend import import_onnx
from dfopt.ir.opgraph import OpGraph
from dfopt.models.tiling import conv
from dfopt.models.tiling.tiler import tile_graph
from test_onnx_frontend import check, kinds, models
from test_port_schedules import check_kernel

F = TensorProto.FLOAT
OPSETS = (13, 17, 21)
ROOT = Path(__file__).resolve().parents[1]
RESNET = ROOT / "instances" / "onnx" / "resnet-block.onnx"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("make") is None,
                               reason="g++ and make are needed to build the generated C++")


def _graph(ops: list, x=(1, 4, 6, 6), weights: dict | None = None, outputs=None) -> dict:
    tensors = {"x": {"shape": list(x), "dtype": "f32"}}
    tensors.update({k: {"shape": list(v), "dtype": "f32", "kind": "weight"} for k, v in (weights or {}).items()})
    return {"tensors": tensors, "ops": ops, "outputs": outputs or [ops[-1]["output"]]}


def _conv(name, x, w, out, b=None, **attrs) -> dict:
    return {"name": name, "op": "conv2d", "inputs": [x, w] + ([b] if b else []), "output": out, **attrs}


def _pool(name, x, out, mode, kernel, **attrs) -> dict:
    return {"name": name, "op": "pool", "inputs": [x], "output": out, "mode": mode, "kernel": kernel, **attrs}


#: a small CNN with every window form: a grouped strided conv with bias and asymmetric pads, a
#: depthwise conv without bias, a max pool, an average pool of each divisor, a residual add
CNN = _graph([_conv("c1", "x", "w1", "y1", "b1", strides=[2, 1], pads=[1, 0, 2, 1], groups=2),
              {"name": "r1", "op": "relu", "inputs": ["y1"], "output": "a1"},
              _conv("dw", "a1", "w2", "y2", pads=[1, 1, 1, 1], groups=6),
              {"name": "res", "op": "add", "inputs": ["y2", "a1"], "output": "s"},
              _pool("mp", "s", "z1", "max", [2, 2], strides=[2, 2], pads=[1, 0, 0, 1]),
              _pool("ap", "s", "z2", "avg", [3, 2], strides=[1, 2], pads=[1, 1, 1, 0]),
              _pool("ap2", "z2", "z3", "avg", [3, 3], pads=[1, 1, 1, 1], count_include_pad=True)],
             x=(2, 4, 7, 6), weights={"w1": (6, 2, 3, 2), "b1": (6,), "w2": (6, 1, 3, 3)}, outputs=["z1", "z3"])


# == the operator graph ==========================================================================

def test_shapes_flops_and_round_trip():
    g = OpGraph.from_dict(CNN)
    assert g.tensors["y1"].shape == (2, 6, 4, 6)          # (7 + 3 - 3) // 2 + 1, (6 + 1 - 2) + 1
    assert g.tensors["z1"].shape == (2, 6, 2, 3) and g.tensors["z3"].shape == (2, 6, 4, 3)
    assert g.flops("c1") == 2 * (2 * 6 * 4 * 6) * (2 * 3 * 2) and g.flops("mp") == 2 * 6 * 2 * 3 * 4
    assert OpGraph.from_dict(g.to_dict()) == g
    assert g.to_dict()["ops"][2] == {"name": "dw", "op": "conv2d", "inputs": ["a1", "w2"], "output": "y2",
                                     "pads": [1, 1, 1, 1], "groups": 6}


@pytest.mark.parametrize("op,weights,where,words", [
    (_conv("c", "x", "w", "y", groups=3), {"w": (8, 1, 3, 3)}, "/operators/ops/0/groups", "groups 3 divides"),
    (_conv("c", "x", "w", "y", groups=2), {"w": (8, 4, 3, 3)}, "/operators/ops/0/inputs/1",
     "C / groups = 2"),
    (_conv("c", "x", "w", "y", "b"), {"w": (8, 4, 3, 3), "b": (4,)}, "/operators/ops/0/inputs/2",
     "expected the bias vector [8]"),
    (_conv("c", "x", "w", "y", pads=[1, 1]), {"w": (8, 4, 3, 3)}, "/operators/ops/0/pads", "four non-negative"),
    (_conv("c", "x", "w", "y", strides=[0, 1]), {"w": (8, 4, 3, 3)}, "/operators/ops/0/strides", "two integers"),
    (_conv("c", "x", "w", "y"), {"w": (8, 4, 7, 3)}, "/operators/ops/0/pads", "exceeds input"),
    ({**_conv("c", "x", "w", "y"), "inputs": ["x", "w", "w", "w"]}, {"w": (8, 4, 3, 3)},
     "/operators/ops/0/inputs/3", "expected 2 or 3 inputs (X, W, optional B)"),
    (_conv("c", "x", "x", "y"), {}, "/operators/ops/0/inputs/1", "X and W are one tensor 'x'"),
    (_pool("p", "x", "y", "min", [2, 2]), {}, "/operators/ops/0/mode", "expected one of max, avg"),
    (_pool("p", "x", "y", "max", [2, 2], pads=[2, 0, 0, 0]), {}, "/operators/ops/0/pads", "below the kernel"),
    ({"name": "p", "op": "pool", "inputs": ["x"], "output": "y", "mode": "avg"}, {}, "/operators/ops/0",
     "missing attribute 'kernel'"),
])
def test_faults_name_the_field(op, weights, where, words):
    with pytest.raises(InstanceError) as err:
        OpGraph.from_dict(_graph([op], weights=weights))
    assert str(err.value).startswith(where + ":") and words in str(err.value), str(err.value)


def test_a_conv_needs_an_nchw_input():
    with pytest.raises(InstanceError, match=r"X 'x' is \[4, 6\]: expected an NCHW feature map"):
        OpGraph.from_dict(_graph([_conv("c", "x", "w", "y")], x=(4, 6), weights={"w": (8, 4, 3, 3)}))


# == ONNX: every form against onnx.reference =====================================================

def _cnn_model(opset, build, x_shape=(1, 4, 8, 8), out_shape=None):
    """x (a graph input) -> build(nodes, inits, x) -> the output (its shape inferred by onnx
    unless given)."""
    nodes, inits = [], {}
    y = build(nodes, inits, "x")
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, list(x_shape))],
                              [helper.make_tensor_value_info(y, F, out_shape)],
                              initializer=[numpy_helper.from_array(np.asarray(v, np.float32), k)
                                           for k, v in inits.items()])
    return onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))


def _rand(*shape, seed=0, mean=0.0, std=0.5):
    return mean + std * np.random.default_rng(seed).standard_normal(shape)


def _conv_node(out_ch=6, group=1, bias=True, name="/conv/Conv", **attrs):
    def build(nodes, inits, x, cin=4, k=(3, 3)):
        inits[f"{name}.w"] = _rand(out_ch, cin // group, *k, seed=1)
        ins = [x, f"{name}.w"]
        if bias:
            inits[f"{name}.b"] = _rand(out_ch, seed=2, std=0.1)
            ins.append(f"{name}.b")
        nodes.append(helper.make_node("Conv", ins, [f"{name}_out"], name=name, group=group, **attrs))
        return f"{name}_out"
    return build


def _bn(name="/bn/BatchNormalization", c=6, **attrs):
    def build(nodes, inits, x):
        inits.update({f"{name}.scale": _rand(c, seed=3, mean=1.0, std=0.1), f"{name}.bias": _rand(c, seed=4, std=0.1),
                      f"{name}.mean": _rand(c, seed=5, std=0.1),
                      f"{name}.var": np.random.default_rng(6).uniform(0.5, 1.5, c)})
        stats = [f"{name}_mean", f"{name}_var"] if attrs.get("training_mode") else []   # its outputs in training
        nodes.append(helper.make_node("BatchNormalization", [x] + [f"{name}.{p}" for p in ("scale", "bias", "mean",
                                      "var")], [f"{name}_out", *stats], name=name, epsilon=1e-3, **attrs))
        return f"{name}_out"
    return build


def _chain(*builds):
    def build(nodes, inits, x):
        for b in builds:
            x = b(nodes, inits, x)
        return x
    return build


def _node(op, name=None, **attrs):
    def build(nodes, inits, x):
        nodes.append(helper.make_node(op, [x], [f"/{op}_out"], name=name or f"/{op}", **attrs))
        return f"/{op}_out"
    return build


CONVS = {
    "plain": dict(),
    "strided-padded": dict(strides=[2, 1], pads=[1, 0, 2, 1]),
    "no-bias": dict(bias=False, pads=[1, 1, 1, 1]),
    "grouped": dict(group=2),
    "depthwise": dict(out_ch=4, group=4, pads=[1, 1, 1, 1]),
    "valid": dict(auto_pad="VALID", strides=[2, 2]),
    "same-upper": dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    "same-lower": dict(auto_pad="SAME_LOWER", strides=[1, 1], kernel_shape=[3, 3]),
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("form", CONVS)
def test_conv(opset, form):
    imported = check(_cnn_model(opset, _conv_node(**CONVS[form]), (1, 4, 7, 8)))
    assert kinds(imported) == ["conv2d"]


@pytest.mark.parametrize("opset", OPSETS)
def test_same_lower_puts_the_odd_pad_first(opset):
    model = _cnn_model(opset, _conv_node(auto_pad="SAME_LOWER", strides=[2, 2]), (1, 4, 8, 8))
    op = check(model).graph.ops[0]
    assert op.attrs["pads"] == (1, 1, 0, 0) and op.attrs["strides"] == (2, 2)


def _bn_reference(opset, build):
    """The model ``onnx.reference`` runs for a BatchNormalization: its BatchNormalization_9 (opsets
    9 to 13) normalises by the input's own statistics whenever ``momentum`` is set, which its
    default always is; from opset 14 ``training_mode`` says which, so compare with opset 14."""
    return _cnn_model(max(opset, 14), build)


@pytest.mark.parametrize("opset", OPSETS)
def test_batchnorm_folds_into_the_conv_before_it(opset):
    build = _chain(_conv_node(bias=False, pads=[1, 1, 1, 1]), _bn(), _node("Relu"))
    imported = check(_cnn_model(opset, build), reference=_bn_reference(opset, build))
    assert kinds(imported) == ["conv2d", "relu"] and len(imported.graph.ops[0].inputs) == 3
    assert any("folded into Conv" in note for note in imported.notes)


@pytest.mark.parametrize("opset", OPSETS)
def test_batchnorm_alone_is_a_depthwise_conv(opset):
    build = _chain(_bn(c=4), _node("Relu"))
    imported = check(_cnn_model(opset, build), reference=_bn_reference(opset, build))
    assert kinds(imported) == ["conv2d", "relu"] and imported.graph.ops[0].attrs["groups"] == 4


def test_batchnorm_after_a_conv_with_two_uses_stays_apart():
    def build(nodes, inits, x):
        c = _conv_node()(nodes, inits, x)
        y = _bn()(nodes, inits, c)
        nodes.append(helper.make_node("Add", [y, c], ["sum"], name="/Add"))
        return "sum"
    assert kinds(check(_cnn_model(17, build))) == ["conv2d", "conv2d", "add"]


POOLS = {
    "max": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "max-asymmetric": ("MaxPool", dict(kernel_shape=[2, 3], strides=[1, 2], pads=[1, 0, 0, 2])),
    "max-same": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    "max-ceil-same-shape": ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    "avg": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    "avg-include-pad": ("AveragePool", dict(kernel_shape=[3, 2], pads=[1, 1, 1, 0], count_include_pad=1)),
    "avg-valid": ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="VALID")),
    "global-avg": ("GlobalAveragePool", {}),
    "global-max": ("GlobalMaxPool", {}),
}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("form", POOLS)
def test_pool(opset, form):
    op, attrs = POOLS[form]
    model = _cnn_model(opset, _node(op, **attrs), (2, 3, 8, 8))
    imported = check(model, reference=_max_pool_reference(model, opset, (2, 3, 8, 8)))
    assert kinds(imported) == ["pool"]
    if op.startswith("Global"):
        assert imported.graph.ops[0].attrs["kernel"] == (8, 8)


def _max_pool_reference(model, opset, x_shape):
    """The model ``onnx.reference`` runs for a MaxPool with explicit ``pads``: an explicit Pad of
    -inf, then the MaxPool without pads. onnx.reference 1.23's MaxPool of unit strides reads
    asymmetric pads in the wrong order (or fails); its strided path and AveragePool are right.
    None (the model itself) for anything else."""
    node = model.graph.node[-1]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type != "MaxPool" or not any(attrs.get("pads", [])):
        return None
    top, left, bottom, right = attrs.pop("pads")

    def build(nodes, inits, x):
        nodes += [helper.make_node("Constant", [], ["pads"], value=numpy_helper.from_array(
                      np.array([0, 0, top, left, 0, 0, bottom, right], np.int64))),
                  helper.make_node("Constant", [], ["fill"], value=numpy_helper.from_array(np.array(-np.inf, np.float32))),
                  helper.make_node("Pad", [x, "pads", "fill"], ["padded"], mode="constant"),
                  helper.make_node("MaxPool", ["padded"], ["pooled"], **attrs)]
        return "pooled"
    return _cnn_model(opset, build, x_shape)


FAULTS = {
    "conv dilations": (_conv_node(dilations=[2, 2]), "Conv", "dilations=[2, 2]: only dilation 1"),
    "maxpool dilations": (_node("MaxPool", kernel_shape=[2, 2], dilations=[2, 2]), "MaxPool",
                          "dilations=[2, 2]: only dilation 1"),
    "ceil mode": (_node("MaxPool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), "MaxPool",
                  "(ceil_mode=1 rounds up)"),
    "pad of the kernel": (_node("AveragePool", kernel_shape=[2, 2], pads=[2, 0, 0, 0]), "AveragePool",
                          "pads=[2, 0, 0, 0] with kernel_shape=[2, 2]: each pad must be below"),
    "training bn": (_chain(_conv_node(), _bn(training_mode=1)), "BatchNormalization", "training_mode=1"),
}
SHAPES = {"training bn": [1, 6, 6, 6]}


@pytest.mark.parametrize("fault", FAULTS)
def test_refusals_name_the_node_and_attribute(fault):
    build, op, words = FAULTS[fault]
    with pytest.raises(InstanceError) as err:
        import_onnx(_cnn_model(17, build, out_shape=SHAPES.get(fault)))
    msg = str(err.value)
    assert re.match(rf"/graph/node/\d+: node '[^']+' \({op}, opset 17\): ", msg) and words in msg, msg


def test_a_conv_of_rank_3_is_refused():
    def build(nodes, inits, x):
        inits["w"] = _rand(6, 4, 3, seed=1)
        nodes.append(helper.make_node("Conv", [x, "w"], ["y"], name="/Conv"))
        return "y"
    model = _cnn_model(17, build, (1, 4, 8), [1, 6, 6])
    with pytest.raises(InstanceError, match=r"\(Conv, opset 17\): input 'x' is \[1, 4, 8\]: only 2-D Conv"):
        import_onnx(model)


def test_a_batchnorm_of_rank_2_without_a_conv_is_refused():
    model = _cnn_model(17, _bn(c=4), (2, 4), [2, 4])
    with pytest.raises(InstanceError, match=r"\(BatchNormalization, opset 17\): input 'x' is \[2, 4\]: a "
                                            "BatchNormalization that does not fold into a Conv imports as a depthwise"):
        import_onnx(model)


def test_maxpool_indices_used_are_refused():
    def build(nodes, inits, x):
        nodes.append(helper.make_node("MaxPool", [x], ["y", "idx"], name="/MaxPool", kernel_shape=[2, 2]))
        nodes.append(helper.make_node("Cast", ["idx"], ["fidx"], to=F, name="/Cast"))
        nodes.append(helper.make_node("Add", ["y", "fidx"], ["out"], name="/Add"))
        return "out"
    with pytest.raises(InstanceError, match=r"\(MaxPool, opset 17\): the Indices output is used"):
        import_onnx(_cnn_model(17, build))


@st.composite
def windows(draw) -> tuple:
    """A random Conv (groups, strides, pads, with or without bias) or pool over a small NCHW input:
    (the model's builder, the input shape)."""
    n, c = draw(st.integers(1, 2)), draw(st.sampled_from([1, 2, 3, 4, 6]))
    h, w = draw(st.integers(3, 9)), draw(st.integers(3, 9))
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    pads = [draw(st.integers(0, k[0] - 1)), draw(st.integers(0, k[1] - 1)), draw(st.integers(0, k[0] - 1)),
            draw(st.integers(0, k[1] - 1))]
    strides = [draw(st.integers(1, 3)), draw(st.integers(1, 3))]
    op = draw(st.sampled_from(["Conv", "MaxPool", "AveragePool"]))
    if op != "Conv":
        extra = {"count_include_pad": draw(st.integers(0, 1))} if op == "AveragePool" else {}
        return _node(op, kernel_shape=list(k), strides=strides, pads=pads, **extra), (n, c, h, w)
    group = draw(st.sampled_from([g for g in (1, 2, 3, c) if c % g == 0]))
    conv_node = _conv_node(group * draw(st.integers(1, 2)), group, draw(st.booleans()), strides=strides, pads=pads)

    def build(nodes, inits, x):
        return conv_node(nodes, inits, x, c, k)
    return build, (n, c, h, w)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(windows(), st.sampled_from([1, 2, 3, 64]), st.sampled_from([1, 4, 32, 512]))
def test_random_windows_match_onnx_and_their_cost(tmp_path_factory, window, tile, budget):
    """Random windows: the import against onnx.reference, and the emitted compute loops recounted
    against the cost model's II at random tile sizes and lane budgets."""
    from dfopt.codegen.hls.emit import emit_design

    build, shape = window
    model = _cnn_model(17, build, shape)
    imported = check(model, reference=_max_pool_reference(model, 17, shape))
    tiled = tile_graph(imported.graph, tile, budget)
    out = tmp_path_factory.mktemp("window") / "d"
    emit_design(imported.graph, tiled, {}, out, seed=0)
    assert _compute_loops_match(tiled, out) == 1


# == tiling, cost, schedules =====================================================================

def test_conv_tiles_its_output_reads_its_input_whole_and_streams_weights():
    g = OpGraph.from_dict(CNN)
    tiled = tile_graph(g, default_tile_size=3, overall_unroll_size=64)
    k = tiled.kernels["c1"]
    assert [(lp.name, lp.tripcount, lp.step) for lp in k.loops] == [("n", 1, 2), ("o", 2, 3), ("h", 2, 2),
                                                                     ("w", 2, 3)]
    x, w, b = (tiled.streams[f"{t}__c1"] for t in ("x", "w1", "b1"))
    assert x.dst_type.tripcounts == (1, 2, 7, 2) and x.dst_type.element == (2, 2, 1, 3)   # x's own tiles
    assert w.dst_type.element == (3, 2, 3, 2) and w.tokens == 8 and b.dst_type.element == (3,) and b.tokens == 8
    # the cost model, recounted: R = 2 x 3 x 2 window elements, E = 2 x 3 x 2 x 3 outputs per tile
    ur, ue = conv.window_unroll(12, 36, k.attrs["lanes"])
    best = max(a * b for a in range(1, 13) for b in range(1, 37) if 12 % a == 0 and 36 % b == 0
               and a * b <= k.attrs["lanes"])
    assert 12 % ur == 0 and 36 % ue == 0 and ur * ue == best
    read = 28 * -(-12 // min(k.attrs["lanes"], 16))         # x: 28 tokens of 12 elements, one beat per cycle
    assert k.ii == (12 // ur) * (36 // ue) and k.delay == read + k.ii + 12
    assert k.resources["dsp"] == 3 * ur * ue and tiled.kernels["mp"].resources["dsp"] == 0


def test_unrolling_gives_the_slowest_conv_lanes():
    tiled = tile_graph(OpGraph.from_dict(CNN), default_tile_size=64, overall_unroll_size=256)
    lanes = {k.name: k.attrs["lanes"] for k in tiled.kernels.values() if k.op in conv.WINDOW_OPS}
    assert lanes["c1"] >= 16 and lanes["dw"] >= 8 and sum(lanes.values()) <= 256


def test_window_kernels_read_the_whole_input_before_the_first_tile():
    tiled = tile_graph(OpGraph.from_dict(CNN), default_tile_size=3, overall_unroll_size=64)
    for name in ("c1", "dw", "mp", "ap", "ap2"):
        k = tiled.kernels[name]
        ins, outs = tiled.in_streams(name), tiled.out_streams(name)
        x = next(s for s in ins if s.name == f"{k.attrs['inputs'][0]}__{name}")
        writes = tiled.write_schedule(outs[0].name).offsets()
        tiles = len(writes)
        assert (writes == k.delay + k.ii * np.arange(tiles)).all()
        first = tiled.read_schedule(x.name).offsets()
        assert first[-1] < writes[0] - k.ii and len(first) == x.tokens
        for s in ins:
            if s is not x:                    # W and B: one token per tile, the tile's start
                r = tiled.read_schedule(s.name).offsets()
                assert len(r) == tiles and r[0] > first[-1] and (r[1:] == writes[:-1] + 1).all()
        assert k.latency == writes[-1] + 1


# == emitted code: compute loops, stream order, both C simulation models ==========================

def _compute_loops_match(tiled, out: Path) -> int:
    bodies = P.functions((out / "kernels.cpp").read_text())
    checked = 0
    for k in tiled.kernels.values():
        if k.op in conv.WINDOW_OPS:
            stream = next(s for s in tiled.streams.values() if s.src == k.name)
            assert P.compute_cycles(bodies["k_" + re.sub(r"\W", "_", k.name)]) == k.ii * stream.src_type.tokens, k.name
            checked += 1
    return checked


@needs_gxx
@pytest.mark.parametrize("tile,budget", [(3, 5), (2, 1024), (64, 64)])
def test_cnn_on_odd_tiles_passes_both_csim_models(tmp_path, tile, budget):
    from dfopt.codegen.hls.emit import emit_design

    g = OpGraph.from_dict(CNN)
    tiled = tile_graph(g, tile, budget)
    out = tmp_path / "d"
    # a window kernel reads its whole input before it writes: the skip of the residual holds all of a1
    emit_design(g, tiled, {s.name: s.tokens for s in tiled.streams.values()}, out, seed=0)
    assert _compute_loops_match(tiled, out) == 5
    both_csims(out)


@needs_gxx
@pytest.mark.parametrize("c_max,tiles", [(None, None), (3000, None), (None, {"dw": 2, "ap": 1})],
                         ids=["one-group", "cut", "converters"])
def test_event_order_is_the_emitted_codes_order(tmp_path, c_max, tiles):
    from dfopt.api import solve_instance
    from dfopt.instance import from_dict
    from dfopt.models.fusion import fused_design
    from dfopt.models.pipeline import emit

    opts = {"default_tile_size": 3, "overall_unroll_size": 64, **({"c_max": c_max} if c_max else {}),
            **({"tile_sizes": tiles} if tiles else {})}
    inst = from_dict({"format": "dfopt-instance/1", "name": "cnn", "problem": "pipeline", "platform": "u280",
                      "operators": CNN, "options": {"pipeline": opts}})
    sol = solve_instance(inst, time_limit=20)
    assert sol.ok
    if c_max is not None:
        assert len(sol.decision.fusion.groups) > 1
    design = tmp_path / "design"
    emit(inst, sol, design)
    fused = fused_design(tile_graph(inst.operators, 3, 64, tiles), sol.decision.fusion)
    if tiles:                  # other tiles on the window kernels' ports: converters in front of them
        assert any(k.op == "converter" and k.name.endswith(("__dw", "__ap", "__res")) for k in fused.kernels.values())
    for stream in fused.streams.values():       # every end of the fused design carries its schedule
        assert stream.src_schedule is not None and stream.dst_schedule is not None, stream.name
    for name in fused.kernels:
        check_kernel(fused, name)
    assert_stream_order(design, fused, tmp_path)
    csim = subprocess.run(["make", "-s", "-C", str(design), "csim"], capture_output=True, text=True, timeout=300)
    assert csim.returncode == 0 and "PASS" in csim.stdout, csim.stdout[-2000:] + csim.stderr[-2000:]


# == the shipped ResNet basic block ==============================================================

def test_resnet_block_imports_as_conv_relu_conv_add_relu(tmp_path):
    from dfopt.cli import main
    from dfopt.instance import load

    assert onnx.load(RESNET) == models.MODELS["resnet-block"](), "regenerate: python benchmarks/make_onnx_models.py"
    imported = check(onnx.load(RESNET))
    assert kinds(imported) == ["conv2d", "relu", "conv2d", "add", "relu"]
    assert all(len(op.inputs) == 3 for op in imported.graph.ops if op.op == "conv2d")   # BN folded: a bias
    out = tmp_path / "resnet-block.json"
    assert main(["import", str(RESNET), "-o", str(out)]) == 0 and main(["validate", str(out)]) == 0
    assert load(out).operators == imported.graph


@needs_gxx
def test_resnet_block_solves_emits_and_passes_both_csim_models(tmp_path):
    from dfopt.api import solve_instance
    from dfopt.frontend import onnx_instance
    from dfopt.instance import from_dict
    from dfopt.models.pipeline import emit

    data, _ = onnx_instance(str(RESNET))
    inst = from_dict(data)
    sol = solve_instance(inst, time_limit=30)
    assert sol.ok
    out = tmp_path / "design"
    emit(inst, sol, out)
    opts = sol.sections["pipeline"]["options"]
    assert _compute_loops_match(tile_graph(inst.operators, opts["default_tile_size"], opts["overall_unroll_size"]),
                                out) == 2
    both_csims(out)
