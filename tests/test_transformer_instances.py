"""Transformer-block fusion instances (dfopt.bench.transformer) and the files in instances/fusion/."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from dfopt.bench.transformer import MODELS, block_costs, tile_for, transformer_block
from dfopt.errors import InstanceError
from dfopt.instance import load
from dfopt.instance.reading import from_dict
from dfopt.ir.converter import converter_buffer
from dfopt.ir.itensor import ITensorType
from dfopt.sim.converter import simulable, simulate_converter

ROOT = Path(__file__).resolve().parents[1]
FUSION = ROOT / "instances" / "fusion"
SHIPPED = {"gpt2-block": ("gpt2", 0.3), "llama-block": ("llama", 0.3), "qwen-block": ("qwen", 0.3),
           "gpt2-block-tight": ("gpt2", 0.1)}
ATTENTION = {"q_proj", "k_proj", "v_proj", "qk", "softmax", "av", "o_proj"}


def _types(stream: dict) -> tuple[ITensorType, ITensorType]:
    return ITensorType.from_dict(stream["src_type"]), ITensorType.from_dict(stream["dst_type"])


def _converted(inst: dict) -> list[str]:
    return [s["name"] for s in inst["graph"]["streams"] if converter_buffer(*_types(s)).needed]


@pytest.mark.parametrize("path", sorted(FUSION.glob("*.json")), ids=lambda p: p.stem)
def test_every_shipped_fusion_instance_loads(path):
    inst = load(path)
    assert inst.problem == "fusion" and inst.name == path.stem


def test_the_generated_files_are_shipped():
    assert set(SHIPPED) <= {p.stem for p in FUSION.glob("*.json")}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_files_match_the_generator(name):
    model, fraction = SHIPPED[name]
    expected = transformer_block(model, seq_len=128, tile=64, dtype="f32", c_max_fraction=fraction)
    expected["name"] = name
    assert json.loads((FUSION / f"{name}.json").read_text()) == expected


def test_the_script_builds_the_shipped_instances():
    spec = importlib.util.spec_from_file_location("make_fusion", ROOT / "benchmarks" / "make_fusion_instances.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.INSTANCES == SHIPPED
    assert module.build("gpt2-block", "gpt2", 0.3) == json.loads((FUSION / "gpt2-block.json").read_text())


def test_deterministic():
    for model in MODELS:
        assert transformer_block(model, c_max_fraction=0.3) == transformer_block(model, c_max_fraction=0.3)
    assert json.dumps(transformer_block("gpt2"))  # plain JSON types only


@pytest.mark.parametrize("model", sorted(MODELS))
def test_preset_streams_view_one_tensor_and_need_converters(model):
    inst = transformer_block(model, c_max_fraction=0.3)
    from_dict(inst)                                               # validates
    for stream in inst["graph"]["streams"]:
        src, dst = _types(stream)
        assert (src.dtype, src.shape) == (dst.dtype, dst.shape), stream["name"]
        assert not src.problems() and not dst.problems()
    converted = _converted(inst)
    assert len(converted) >= 8
    # the converters the loop nests force: row blocks into matmuls, K transposed, whole rows
    assert {"ln1_q", "k", "scores", "probs", "attn", "act_out"} <= set(converted)
    # residual adds and elementwise consumers read in the producer's order
    assert not {"x_res", "o", "h1", "h1_res", "up_out", "down_out", "y"} & set(converted)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_kernels_and_capacity(model):
    inst = transformer_block(model, c_max_fraction=0.3)
    kernels = {k["name"]: k for k in inst["graph"]["kernels"]}
    assert ATTENTION | {"x_in", "y_out", "ln1", "ln2", "res1", "res2", "up", "act", "down"} <= set(kernels)
    assert ("gate" in kernels) == (model != "gpt2")
    assert kernels["x_in"]["op"] == "dma_in" and kernels["y_out"]["op"] == "dma_out"
    assert {kernels[n]["op"] for n in ("qk", "av", "q_proj", "down")} == {"matmul"}
    for k in kernels.values():
        res = k["resources"]
        assert set(res) == {"bytes", "lut", "ff", "dsp", "bram"}
        assert res["bram"] == -(-res["bytes"] // 4608)
        assert k["ii"] >= 1 and k["delay"] >= k["ii"]
    c_max = inst["options"]["fusion"]["c_max"]
    assert c_max == round(0.3 * sum(block_costs(inst)))
    assert max(k["resources"]["bytes"] for k in kernels.values()) <= c_max


def test_gqa_projections_are_narrower():
    inst = transformer_block("llama")
    streams = {s["name"]: s for s in inst["graph"]["streams"]}
    assert streams["q"]["src_type"]["shape"] == [8, 4, 128, 128]       # kv heads x group x seq x dim
    assert streams["k"]["src_type"]["shape"] == [8, 128, 128]
    assert streams["v"]["src_type"]["shape"] == [8, 128, 128]
    assert "options" not in inst                                        # platform on-chip bytes


def test_unknown_model_names_the_choices():
    with pytest.raises(InstanceError, match="unknown model 'gpt3'.*gpt2, llama, qwen"):
        transformer_block("gpt3")


@pytest.mark.parametrize("kwargs, message", [
    ({"seq_len": 0}, "seq_len: expected a positive integer"),
    ({"tile": -4}, "tile: expected a positive integer"),
    ({"tile": 2.5}, "tile: expected a positive integer"),
    ({"dtype": "f7"}, "unknown dtype 'f7'"),
    ({"c_max_fraction": 0}, "c_max_fraction: expected a positive number"),
    ({"c_max_fraction": 0.001}, "alone needs"),
    ({"problem": "schedule"}, "unknown problem 'schedule'"),
    ({"problem": "fifo", "c_max_fraction": 0.3}, "does not use"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(InstanceError, match=message):
        transformer_block("gpt2", **kwargs)


def test_tiles_fall_back_to_divisors():
    assert tile_for(3584, 64) == 64 and tile_for(100, 64) == 50 and tile_for(7, 64) == 7
    inst = transformer_block("gpt2", seq_len=100, tile=48)           # 100 -> 25, 768 -> 48, 64 -> 32
    from_dict(inst)
    streams = {s["name"]: s for s in inst["graph"]["streams"]}
    assert streams["x"]["src_type"]["element"] == [25, 48]
    assert streams["q"]["src_type"]["element"] == [1, 1, 25, 32]


def test_gpt2_converters_are_correct_element_by_element():
    inst = transformer_block("gpt2", seq_len=64, tile=32)
    checked = 0
    for stream in inst["graph"]["streams"]:
        src, dst = _types(stream)
        buf = converter_buffer(src, dst)
        if not buf.needed or not simulable(src, dst):
            continue
        run = simulate_converter(src, dst, buf.shape, buf.shared_loops)
        assert run.ok, (stream["name"], run.first)
        checked += 1
    assert checked >= 6
