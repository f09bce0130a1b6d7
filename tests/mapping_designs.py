"""The shipped mapping instances solved once per test session (search or exact model), shared by
the AIE design tests."""

from __future__ import annotations

from pathlib import Path

from dfopt.api import solve_instance
from dfopt.instance import load

ROOT = Path(__file__).resolve().parent.parent
DESIGNS = ["gemm-4x4x4", "gemm-npu2", "ffn-4x4", "ffn-2x4", "attention-4x4", "attention-2x4"]
_SOLVED: dict = {}


def solved(name: str, formulation: str = "search"):
    """(instance, solution) of ``instances/mapping/<name>.json`` (30 s limit), cached."""
    key = (name, formulation)
    if key not in _SOLVED:
        inst = load(ROOT / "instances" / "mapping" / f"{name}.json")
        _SOLVED[key] = (inst, solve_instance(inst, formulation=formulation, time_limit=30))
    return _SOLVED[key]
