"""Seeded instance generators (dfopt.bench.generators) and benchmarks/gen_fifo.py."""

from __future__ import annotations

import importlib.util
import json
from collections import defaultdict
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.bench.generators import GENERATORS, generate, random_fifo_dag
from dfopt.errors import InstanceError

ROOT = Path(__file__).resolve().parents[1]


def _digraph(inst: dict) -> nx.MultiDiGraph:
    g = nx.MultiDiGraph()
    g.add_nodes_from(k["name"] for k in inst["graph"]["kernels"])
    g.add_edges_from((s["src"], s["dst"]) for s in inst["graph"]["streams"])
    return g


def test_same_seed_same_instance_and_other_seed_differs():
    assert random_fifo_dag(300, 7) == random_fifo_dag(300, 7)
    assert random_fifo_dag(300, 7)["graph"] != random_fifo_dag(300, 8)["graph"]


def test_shape_of_the_instance_dict():
    inst = random_fifo_dag(20, 2)
    assert set(inst) == {"format", "name", "problem", "graph"}
    assert (inst["format"], inst["name"], inst["problem"]) == ("dfopt-instance/1", "rand-n20-s2", "fifo")
    assert set(inst["graph"]) == {"kernels", "streams"}
    assert all(set(k) == {"name", "delay", "ii"} for k in inst["graph"]["kernels"])
    assert all(set(s) == {"name", "src", "dst", "tokens", "width"} for s in inst["graph"]["streams"])
    json.dumps(inst)  # plain JSON types only (no numpy scalars)


def test_instances_pass_the_instance_validator():
    from dfopt.instance import from_dict

    inst = from_dict(random_fifo_dag(200, 5))
    assert len(inst.graph.kernels) == 200 and inst.problem == "fifo"


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 120), seed=st.integers(0, 2**32 - 1), fan=st.integers(1, 8))
def test_connected_dag_with_bounded_fan_in(n, seed, fan):
    inst = random_fifo_dag(n, seed, max_fan_in=fan)
    g = _digraph(inst)
    assert g.number_of_nodes() == n
    assert nx.is_directed_acyclic_graph(g)
    assert nx.is_weakly_connected(g)
    assert [k for k in g if g.in_degree(k) == 0] == ["k0"]
    assert max((g.in_degree(k) for k in g), default=0) <= fan
    pairs = [(s["src"], s["dst"]) for s in inst["graph"]["streams"]]
    assert len(pairs) == len(set(pairs))
    assert len({s["name"] for s in inst["graph"]["streams"]}) == len(pairs)


def test_values_stay_in_their_ranges():
    inst = random_fifo_dag(2000, 1, iis=(1, 3), tokens=(16, 64), delay=(2, 5), width=(16, 64))
    kernels, streams = inst["graph"]["kernels"], inst["graph"]["streams"]
    assert {k["ii"] for k in kernels} == {1, 3}
    assert all(2 <= k["delay"] <= 5 for k in kernels)
    assert all(16 <= s["tokens"] <= 64 for s in streams)
    assert {s["width"] for s in streams} == {16, 32, 64}


def test_size_long_paths_and_few_inputs():
    inst = random_fifo_dag(1000, 4)
    g = nx.DiGraph(_digraph(inst))
    per_kernel = len(inst["graph"]["streams"]) / 1000
    assert 1.8 <= per_kernel <= 3.0
    assert nx.dag_longest_path_length(g) >= 200          # mostly local predecessors: long chains
    fan_in = [g.in_degree(k) for k in g if k != "k0"]
    assert sum(f <= 2 for f in fan_in) > len(fan_in) / 2    # skewed towards few inputs


def test_a_kernel_reads_and_writes_tokens_of_one_order():
    inst = random_fifo_dag(3000, 9)
    seen = defaultdict(list)
    for s in inst["graph"]["streams"]:
        seen[s["src"]].append(s["tokens"])
        seen[s["dst"]].append(s["tokens"])
    spread = [max(t) / min(t) for t in seen.values()]
    assert sum(r <= 2 for r in spread) >= 0.9 * len(spread)
    assert all(len(set(t)) == 1 for k, t in _inputs(inst).items())   # all inputs equal


def _inputs(inst):
    out = defaultdict(list)
    for s in inst["graph"]["streams"]:
        out[s["dst"]].append(s["tokens"])
    return out


def test_hundred_thousand_kernels():
    inst = random_fifo_dag(100_000, 0)
    assert len(inst["graph"]["kernels"]) == 100_000
    assert inst["graph"]["streams"][-1]["dst"] == "k99999"


def test_generate_parses_specs():
    assert generate("fifo_random:n=30,seed=3") == random_fifo_dag(30, 3)
    inst = generate("fifo_random: n_kernels=30, seed=3, iis=2|4, max_fan_in=2")
    assert inst == random_fifo_dag(30, 3, iis=(2, 4), max_fan_in=2)
    assert inst["name"].startswith("rand-n30-s3-h")      # non-default parameters change the name
    assert set(GENERATORS) >= {"fifo_random"}


@pytest.mark.parametrize("spec, needle", [
    ("nope:n=3,seed=0", "unknown generator 'nope'; expected one of: bursty, fifo_random"),
    ("fifo_random:n=3", "lacks seed"),
    ("fifo_random:n=3,seed=0,colour=2", "no parameter 'colour'"),
    ("fifo_random:n=3,seed", "expected key=value"),
    ("fifo_random:n=three,seed=0", "expected a number"),
    ("fifo_random:n=0,seed=0", "n_kernels: expected an integer >= 1"),
    ("fifo_random:n=3,seed=0,tokens=9|4", "tokens: expected an integer range"),
])
def test_bad_specs_are_instance_errors(spec, needle):
    with pytest.raises(InstanceError) as info:
        generate(spec)
    assert needle in str(info.value)


def test_gen_fifo_script_writes_compact_files(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_fifo", ROOT / "benchmarks" / "gen_fifo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--sizes", "5", "12", "--count", "2", "--seed", "3", "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["rand-n12-s3.json", "rand-n12-s4.json", "rand-n5-s3.json", "rand-n5-s4.json"]
    text = (tmp_path / "rand-n12-s4.json").read_text()
    assert "\n" not in text.strip() and ", " not in text
    assert json.loads(text) == random_fifo_dag(12, 4)


# -- bursty designs (dfopt.bench.bursty_gen) ----------------------------------------------------

def _schedules(inst):
    from dfopt.ir.tokens import TokenSchedule

    for s in inst["graph"]["streams"]:
        for key in ("src_schedule", "dst_schedule"):
            if key in s:
                yield s, key, TokenSchedule.from_json(s[key])


def test_bursty_same_seed_same_design_and_other_seed_differs():
    from dfopt.bench.bursty_gen import bursty_dag

    assert bursty_dag(120, 3) == bursty_dag(120, 3)
    assert bursty_dag(120, 3)["graph"] != bursty_dag(120, 4)["graph"]
    assert generate("bursty:n=20,seed=1") == bursty_dag(20, 1)
    inst = generate("bursty:n=20,seed=1,k_steps=2|3,iis=2,fork_probability=0.5")
    assert inst == bursty_dag(20, 1, k_steps=(2, 3), iis=(2,), fork_probability=0.5)
    assert inst["name"].startswith("bursty-n20-s1-h")
    json.dumps(inst)  # plain JSON types only (no numpy scalars)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 60), seed=st.integers(0, 2**32 - 1), tile=st.integers(1, 24), tiles=st.integers(1, 6),
       k_lo=st.integers(1, 4), k_span=st.integers(0, 4), iis=st.lists(st.integers(1, 7), min_size=1, max_size=3),
       fork=st.sampled_from([0.0, 0.3, 1.0]))
def test_bursty_designs_are_valid_connected_dags_with_monotone_schedules(n, seed, tile, tiles, k_lo, k_span, iis,
                                                                         fork):
    from dfopt.bench.bursty_gen import bursty_dag
    from dfopt.instance import from_dict
    from dfopt.ir.tokens import monotone_fault

    inst = bursty_dag(n, seed, tile_tokens=tile, tiles=tiles, k_steps=(k_lo, k_lo + k_span), iis=iis,
                      fork_probability=fork)
    graph = from_dict(inst).graph                       # the instance loader accepts it
    g = _digraph(inst)
    assert nx.is_directed_acyclic_graph(g) and nx.is_weakly_connected(g)
    assert [k for k in g if g.in_degree(k) == 0] == ["k0"] and [k for k in g if g.out_degree(k) == 0] == [f"k{n - 1}"]
    for s, _, sched in _schedules(inst):
        assert sched.count == s["tokens"] == tiles * tile     # every token has its cycle
        assert monotone_fault(sched.blocks) is None           # and the cycles never decrease
    ops = {k["name"]: k["op"] for k in inst["graph"]["kernels"]}
    for name, op in ops.items():
        assert (g.in_degree(name) == 2) == (op == "add")       # joins are elementwise adds
        if op == "matmul":
            k_steps = next(lp["tripcount"] for lp in inst["graph"]["kernels"][int(name[1:])]["loops"] if lp["name"] == "k")
            assert k_lo <= k_steps <= k_lo + k_span
    if fork == 0:
        assert len(inst["graph"]["streams"]) == n - 1
    assert not simulate_unbounded(graph).deadlock


def simulate_unbounded(graph):
    from dfopt.sim import simulate

    return simulate(graph, unbounded=True)


def test_a_bursty_matmul_reads_its_tile_then_bursts_it_out_after_the_last_step():
    from dfopt.bench.bursty_gen import bursty_dag

    inst = bursty_dag(40, 5, tile_tokens=8, tiles=3, k_steps=(3, 3), iis=(2,), fork_probability=0.0,
                      matmul_probability=1.0)
    streams = {s["dst"]: s for s in inst["graph"]["streams"]}
    outputs = {s["src"]: s for s in inst["graph"]["streams"]}
    step, period = 8 * 2, 3 * 8 * 2 + 8                 # 8 tokens at II 2 per step; 3 steps, then the burst
    reads = streams["k1"]["dst_schedule"]
    writes = outputs["k1"]["src_schedule"]
    assert reads == [{"offset": 0, "loops": [[3, period], [8, 2]]}]
    first = writes[0]["offset"]
    assert writes[0]["loops"] == [[3, period], [8, 1]] and 3 * step + 8 <= first < 3 * step + 32


@pytest.mark.parametrize("kwargs, needle", [
    ({"n_kernels": 1}, "n_kernels: expected an integer >= 2"),
    ({"tile_tokens": 0}, "tile_tokens: expected an integer >= 1"),
    ({"k_steps": (5, 2)}, "k_steps: expected an integer range"),
    ({"iis": ()}, "iis: expected a non-empty list"),
    ({"fork_probability": 1.5}, "fork_probability: expected a probability in [0, 1]"),
])
def test_bad_bursty_arguments_are_instance_errors(kwargs, needle):
    from dfopt.bench.bursty_gen import bursty_dag

    with pytest.raises(InstanceError) as info:
        bursty_dag(**{"n_kernels": 5, "seed": 0, **kwargs})
    assert needle in str(info.value)


def test_make_bursty_instances_writes_the_generators_designs(tmp_path):
    from dfopt.bench.bursty_gen import bursty_dag

    spec = importlib.util.spec_from_file_location("make_bursty", ROOT / "benchmarks" / "make_bursty_instances.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--out", str(tmp_path)]) == 0
    files = sorted(tmp_path.iterdir())
    assert len(files) == 8 and {len(json.loads(p.read_text())["graph"]["kernels"]) for p in files} >= {8, 200}
    for n, seed in module.SIZES:
        assert json.loads((tmp_path / f"bursty-n{n}-s{seed}.json").read_text()) == bursty_dag(n, seed)
        shipped = ROOT / "benchmarks" / "instances" / "bursty" / f"bursty-n{n}-s{seed}.json"
        assert json.loads(shipped.read_text()) == bursty_dag(n, seed)       # the committed files are current
