"""The tiling stage: operator graphs to tiled, costed dataflow graphs that the later stages take."""

from __future__ import annotations

import math

import pytest

from dfopt.api import solve_instance
from dfopt.instance.types import Instance
from dfopt.ir.converter import converter_buffer
from dfopt.ir.opgraph import OpGraph
from dfopt.ir.platform import load_preset
from dfopt.models.tiling import costs
from dfopt.models.tiling.tiler import latency, tile_for, tile_graph

FFN = {
    "tensors": {"x": {"shape": [512, 128], "dtype": "f32"},
                "w1": {"shape": [128, 256], "dtype": "f32", "kind": "weight"},
                "w2": {"shape": [256, 128], "dtype": "f32", "kind": "weight"}},
    "ops": [{"name": "fc1", "op": "matmul", "inputs": ["x", "w1"], "output": "h"},
            {"name": "act", "op": "gelu", "inputs": ["h"], "output": "g"},
            {"name": "fc2", "op": "matmul", "inputs": ["g", "w2"], "output": "y"}],
    "outputs": ["y"],
}

ATTN = {
    "tensors": {"q": {"shape": [4, 32, 16], "dtype": "f32"}, "k": {"shape": [4, 32, 16], "dtype": "f32"},
                "v": {"shape": [4, 32, 16], "dtype": "f32"}},
    "ops": [{"name": "scores", "op": "matmul", "inputs": ["q", "k"], "output": "s", "transpose_b": True, "scale": 0.25},
            {"name": "prob", "op": "softmax", "inputs": ["s"], "output": "p"},
            {"name": "ctx", "op": "matmul", "inputs": ["p", "v"], "output": "c"},
            {"name": "heads", "op": "transpose", "inputs": ["c"], "output": "t", "perm": [1, 0, 2]},
            {"name": "merge", "op": "reshape", "inputs": ["t"], "output": "o", "shape": [32, 64]}],
    "outputs": ["o"],
}


def test_tile_sizes_are_the_largest_divisors():
    assert [tile_for(s, 64) for s in (512, 768, 688, 100, 1)] == [64, 64, 43, 50, 1]


def test_ffn_kernels_streams_and_costs():
    g = tile_graph(OpGraph.from_dict(FFN), default_tile_size=64, overall_unroll_size=512)
    assert sorted(g.kernels) == ["act", "fc1", "fc2", "w1_in", "w2_in", "x_in", "y_out"]
    assert sorted(g.streams) == ["g__fc2", "h__act", "w1__fc1", "w2__fc2", "x__fc1", "y__y_out"]
    fc1 = g.kernels["fc1"]
    assert [(lp.name, lp.tripcount, lp.step, lp.kind) for lp in fc1.loops] == [
        ("m", 8, 64, "parallel"), ("n", 4, 64, "parallel"), ("k", 2, 64, "reduction")]
    lanes = fc1.attrs["lanes"]
    assert fc1.ii == 2 * math.ceil(64 ** 3 / lanes)                   # two k steps per output tile
    assert fc1.resources["dsp"] == math.ceil(lanes * costs.DSP_PER_MAC["f32"])
    compute = [k for k in g.kernels.values() if not k.op.startswith("dma")]
    assert sum(k.attrs["lanes"] for k in compute) <= 512
    assert all(k.attrs["lanes"] & (k.attrs["lanes"] - 1) == 0 for k in compute)
    for s in g.streams.values():
        assert s.src_type.shape == s.dst_type.shape and s.tokens == s.src_type.tokens
    # fc1's output tiles are gelu's input tiles; fc2 re-reads its A tiles once per n tile
    assert not converter_buffer(g.streams["h__act"].src_type, g.streams["h__act"].dst_type).needed
    assert g.streams["g__fc2"].dst_type.tokens == 2 * g.streams["g__fc2"].src_type.tokens


def test_unrolling_stops_only_when_the_slowest_kernel_cannot_grow():
    from dfopt.models.tiling.tiler import PLANNERS, unroll

    graph = OpGraph.from_dict(FFN)
    plans = [PLANNERS[op.op](op, graph, 64) for op in graph.ops]
    unroll(plans, graph, 300)
    left = 300 - sum(p.lanes for p in plans)
    slowest = max(plans, key=lambda p: latency(p, graph))
    assert slowest.lanes * 2 > slowest.max_lanes or slowest.lanes > left
    more = [PLANNERS[op.op](op, graph, 64) for op in graph.ops]
    unroll(more, graph, 3000)
    assert max(latency(p, graph) for p in more) < max(latency(p, graph) for p in plans)


def test_attention_ports_batch_transpose_row_and_movers():
    g = tile_graph(OpGraph.from_dict(ATTN), default_tile_size=16, overall_unroll_size=256)
    scores = g.streams["k__scores"].dst_type
    assert scores.shape == (4, 32, 16) and scores.element == (1, 16, 16)
    prob_in = g.streams["s__prob"].dst_type
    assert prob_in.element[-1] == 32                                   # a row stays whole
    assert g.kernels["heads"].op == "transpose" and g.kernels["merge"].resources["bytes"] == 32 * 64 * 4
    for s in g.streams.values():
        assert s.src_type.shape == s.dst_type.shape


def test_the_tiled_graph_feeds_fusion_and_fifo_sizing():
    g = tile_graph(OpGraph.from_dict(FFN), default_tile_size=64, overall_unroll_size=512)
    platform = load_preset("u280")
    fused = solve_instance(Instance("ffn", "fusion", graph=g, platform=platform), formulation="greedy")
    assert fused.ok
    sized = solve_instance(Instance("ffn", "fifo", graph=g))
    assert sized.ok and sized.sections["fifo"]["makespan"] > 0


@pytest.mark.parametrize("budget", [8, 64, 4096])
def test_lane_budget_is_respected(budget):
    g = tile_graph(OpGraph.from_dict(ATTN), default_tile_size=16, overall_unroll_size=budget)
    assert sum(k.attrs["lanes"] for k in g.kernels.values() if "lanes" in k.attrs) <= max(budget, 5)


def test_cost_model_formulas():
    mm = costs.matmul_cost("f32", 32, 32, 16, k_steps=4, lanes=64)
    assert mm.ii == 4 * (32 * 32 * 16 // 64) and mm.delay == mm.ii + costs.PIPELINE_DEPTH
    assert mm.resources["dsp"] == 64 * costs.DSP_PER_MAC["f32"]
    held = 32 * 32 * 4 + (16 * 32 + 32 * 16) * 4                      # accumulator + one A and one B tile
    assert mm.resources["bytes"] == held and mm.resources["bram"] == -(-held // costs.BRAM36_BYTES)
    assert costs.matmul_cost("i8", 8, 8, 8, 1, 64).resources["dsp"] == 32   # two 8-bit MACs per DSP
    assert costs.matmul_cost("f32", 4, 4, 4, 1, 4096).ii == 1          # lanes capped by the tile's work
    sm = costs.row_cost("softmax", "f32", row_elems=512, tile_elems=512, lanes=16)
    # 3 passes over one row of 512 in steps of 16, plus one fold per reduction (max, sum)
    assert sm.ii == costs.ROW_PASSES["softmax"] * 32 + 2 and sm.delay == sm.ii + costs.PIPELINE_DEPTH
    rows = costs.row_cost("layernorm", "f32", row_elems=8 * 64, tile_elems=8 * 64, lanes=16, row=64)
    assert costs.row_unroll(8, 64, 16) == (8, 2) and rows.ii == 3 * (1 * 32) + 2 * 1
    # sizes that are not powers of two: the lanes are a divisor of each dimension
    assert costs.matmul_unroll(43, 64, 64, 128) == (1, 64, 2)
    assert costs.matmul_cost("f32", 43, 64, 64, 1, 128).ii == 43 * 1 * 32
    assert costs.elementwise_unroll(96, 16, period=24) == 12 and costs.mover_lanes("f64", 64) == 8
    ew = costs.elementwise_cost("add", "f32", 256, inputs=2, lanes=8)
    assert ew.ii == 32 and ew.resources["bytes"] == 2 * 256 * 4
    mask = costs.elementwise_cost("mask", "f32", 256, inputs=1, lanes=8)    # a compare and a select: no DSP
    assert mask.ii == 32 and mask.resources["dsp"] == 0 and mask.resources["bytes"] == 256 * 4
    dma = costs.dma_cost("f32", 1024)
    assert dma.ii == 4096 // costs.DMA_BYTES_PER_CYCLE and dma.resources["dsp"] == 0
    move = costs.mover_cost("transpose", "f32", [(16, 256, "f32")], tile_elems=256, lanes=16)
    assert move.resources["bytes"] == 4096 * 4 and move.delay > 16 * move.ii   # waits for the whole tensor
    # a reshape reads its input's own tiles (64 of 64 values, 4 beats each) before its first write
    move = costs.mover_cost("reshape", "f32", [(64, 64, "f32")], tile_elems=256, lanes=16)
    assert move.delay == 64 * costs.mover_read_ii("f32", 64, 16) + move.ii + costs.PIPELINE_DEPTH == 256 + 16 + 12
