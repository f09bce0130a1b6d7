"""How a FIFO is implemented (dfopt.ir.memory.fifo_storage): the Vitis thresholds at their
boundaries, the block-RAM packing against a brute force, the vectorised count against the scalar
rule, monotonicity, and the memory stage costing FIFOs with the same function."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.ir.memory import (
    BRAM18_SDP_SHAPES,
    FIFO_IMPLS,
    SRL_MAX_BITS,
    SRL_MAX_DEPTH,
    FifoStorage,
    fifo_bram18_count,
    fifo_bram18_counts,
    fifo_storage,
    memory_cost,
    memory_options,
)
from dfopt.models.memory import graph_buffers

DEPTHS = sorted({*range(1, 70), *(2 ** e + o for e in range(6, 18) for o in (-1, 0, 1)), 1500, 3000, 40960})


def pow2(depth: int) -> int:
    return 1 << (depth - 1).bit_length()


def brute_force_packing(max_width: int, depth: int) -> list[int]:
    """Least BRAM18 count of side-by-side columns (any ratios, any mix) covering 0..max_width bits
    of a ``depth``-entry RAM at its power-of-two depth: an unbounded covering knapsack."""
    cols = [(w, max(1, pow2(depth) // d)) for d, w in BRAM18_SDP_SHAPES]
    best = [0] + [10 ** 9] * max_width
    for x in range(1, max_width + 1):
        best[x] = min(c + best[max(0, x - w)] for w, c in cols)
    return best


def best_single_ratio(width: int, depth: int) -> int:
    p = pow2(depth)
    return min(-(-p // d) * -(-width // w) for d, w in BRAM18_SDP_SHAPES)


# == the Vitis thresholds =========================================================================

def test_defaults_are_the_documented_config_storage_defaults():
    assert (SRL_MAX_DEPTH, SRL_MAX_BITS) == (2, 1024)      # UG1399 config_storage


@pytest.mark.parametrize("width, depth, kind", [
    # the generated modules of Xilinx/RecoNIC (Vitis 2021.2): _S shift registers, _A RAMs
    (1024, 2, "register"), (1024, 4, "bram18"), (145, 4, "lutram"), (145, 8, "bram18"),
    (128, 3, "lutram"), (128, 16, "bram18"), (50, 32, "bram18"), (16, 2000, "bram18"), (256, 4, "lutram"),
    (32, 16, "lutram"), (32, 32, "lutram"), (64, 16, "lutram"), (64, 32, "bram18"), (32, 256, "bram18"),
])
def test_the_auto_rule_matches_the_generated_modules(width, depth, kind):
    assert fifo_storage(width, depth).kind == kind


def test_thresholds_at_their_boundaries():
    assert fifo_storage(4096, 2) == FifoStorage("register", "srl", 8192)     # depth 2: any width
    assert fifo_storage(4096, 3).kind == "bram18"
    assert fifo_storage(32, 32) == FifoStorage("lutram", "srl", 32)          # 1024 bits: SRL
    assert fifo_storage(32, 33).kind == fifo_storage(33, 32).kind == "bram18"   # 1056 bits: RAM
    assert fifo_storage(1, 1024) == FifoStorage("lutram", "srl", 32)         # 32 SRLC32E deep
    assert fifo_storage(1, 1025).kind == "bram18"
    assert fifo_storage(4096, 3, srl_max_depth=3).kind == "lutram"           # raised thresholds
    assert fifo_storage(4096, 4, srl_max_depth=3).kind == "bram18"
    assert fifo_storage(32, 33, srl_max_bits=1056).kind == "lutram"
    assert fifo_storage(32, 3, srl_max_bits=0).kind == "bram18"
    assert fifo_storage(32, 2, srl_max_depth=1, srl_max_bits=0).kind == "bram18"   # no longer SRL


def test_srl_counts_one_lut_per_bit_and_32_entries():
    assert [fifo_storage(10, d, "srl").amount for d in (2, 3, 32, 33, 64, 65)] == [20, 10, 10, 20, 20, 30]


def test_explicit_implementations():
    assert fifo_storage(32, 1024, "bram") == FifoStorage("bram18", "bram", 1.0)
    assert fifo_storage(32, 1024, "memory") == FifoStorage("bram18", "memory", 1.0)
    assert fifo_storage(32, 2, "bram").bram18 == 1                            # bound: a block even at depth 2
    assert fifo_storage(72, 4096, "uram") == FifoStorage("uram", "uram", 1)   # 4Kx72
    assert fifo_storage(73, 4097, "uram").amount == 4
    assert fifo_storage(32, 1024, "lutram") == FifoStorage("lutram", "lutram", 512)
    with pytest.raises(ValueError, match="unknown FIFO implementation 'block'.*auto, srl, lutram, bram, memory, uram"):
        fifo_storage(32, 16, "block")
    assert set(FIFO_IMPLS) == {"auto", "srl", "lutram", "bram", "memory", "uram"}


# == block-RAM packing ============================================================================

def test_cited_packings():
    assert fifo_bram18_count(36, 512) == 1          # SDP 512x36
    assert fifo_bram18_count(72, 512) == 2          # a RAMB36 in 512x72
    assert fifo_bram18_count(27, 1024) == 2         # 1Kx18 + a 1K-deep 2Kx9 column (or two 1Kx18)
    assert fifo_bram18_count(27, 2048) == 3         # a 2Kx18 RAMB36 + a 2Kx9, not four 1Kx18
    assert fifo_bram18_count(13, 3000) == 3         # 4096 deep: a 4Kx9 RAMB36 + a 4Kx4
    assert best_single_ratio(13, 3000) == 4
    assert fifo_bram18_count(32, 1500) == 4         # 1500 entries take the 2048-entry address space
    assert fifo_bram18_count(36, 40960) == 128      # UG906's 40K x 36 (Vivado's default: 72 RAMB36)


def test_packing_is_the_least_mix_of_columns():
    for depth in DEPTHS:
        best = brute_force_packing(160, depth)
        assert [fifo_bram18_count(w, depth) for w in range(1, 161)] == best[1:], depth


def test_vectorised_packing_is_the_least_mix_up_to_2000_bits():
    # the table's claim (dfopt.ir.memory._remainder_table): beyond 36 bits, one 36-bit column per 36 bits
    for e in range(0, 17):
        depth = 1 << e
        got = fifo_bram18_counts(np.arange(1, 2001), depth, srl_max_depth=0, srl_max_bits=0)
        assert got.tolist() == brute_force_packing(2000, depth)[1:], depth


def test_mixed_columns_never_cost_more_than_the_best_single_ratio():
    for depth, width in itertools.product(DEPTHS, range(1, 200)):
        assert fifo_bram18_count(width, depth) <= best_single_ratio(width, depth)


def test_packing_is_monotone_in_depth_and_width():
    grid = np.array([[fifo_bram18_count(w, d) for d in DEPTHS] for w in range(1, 150)])
    assert (np.diff(grid, axis=0) >= 0).all() and (np.diff(grid, axis=1) >= 0).all()
    auto = fifo_bram18_counts(np.arange(1, 150)[:, None], np.array(DEPTHS)[None, :])
    assert (np.diff(auto, axis=0) >= 0).all() and (np.diff(auto, axis=1) >= 0).all()


# == the vectorised count =========================================================================

def test_vectorised_count_agrees_with_the_scalar_rule():
    widths, depths = np.meshgrid(np.arange(0, 130), np.array([0, *DEPTHS]), indexing="ij")
    got = fifo_bram18_counts(widths, depths)
    want = [[fifo_storage(int(w), int(d)).bram18 for w, d in zip(rw, rd)] for rw, rd in zip(widths, depths)]
    assert got.dtype == np.int64 and got.tolist() == want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 300000)), min_size=1, max_size=20),
       st.integers(0, 8), st.integers(0, 4096))
def test_vectorised_count_agrees_on_random_fifos(fifos, max_depth, max_bits):
    widths, depths = (np.array(v) for v in zip(*fifos))
    got = fifo_bram18_counts(widths, depths, srl_max_depth=max_depth, srl_max_bits=max_bits)
    assert got.tolist() == [fifo_storage(w, d, srl_max_depth=max_depth, srl_max_bits=max_bits).bram18
                            for w, d in fifos]


def test_vectorised_count_broadcasts_and_takes_plain_lists():
    assert fifo_bram18_counts([27, 27], 2048).tolist() == [3, 3]
    assert fifo_bram18_counts([], []).shape == (0,)


# == one function for the FIFO objective and the memory stage =====================================

def test_the_memory_stage_costs_fifos_like_the_fifo_objective():
    for width, depth in itertools.product((1, 8, 27, 32, 64, 145, 512, 1024), DEPTHS):
        storage = fifo_storage(width, depth)
        options = memory_options(width, depth, fifo=True)
        count = int(fifo_bram18_counts([width], [depth])[0])
        if storage.kind == "register":
            assert options == {"register": width * depth} and count == 0
        else:
            assert options["bram18"] == fifo_bram18_count(width, depth) / 2 == memory_cost("bram18", width, depth, True)
            assert count == (2 * options["bram18"] if storage.kind == "bram18" else 0)


def test_graph_buffers_cost_fifos_with_the_fifo_geometry():
    g = DataflowGraph([Kernel("a"), Kernel("b")],
                      [Stream("e", "a", "b", tokens=4096, width=36, depth=512),
                       Stream("f", "a", "b", tokens=4096, width=27, depth=2048),
                       Stream("g", "a", "b", tokens=4096, width=512, depth=2)])
    options = {b.key: b.options for b in graph_buffers(g)}
    assert options["fifo.e"]["bram18"] == 0.5 and options["fifo.f"]["bram18"] == 1.5
    assert options["fifo.g"] == {"register": 1024}
    assert fifo_bram18_counts([36, 27, 512], [512, 2048, 2]).tolist() == [1, 3, 0]
