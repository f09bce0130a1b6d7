"""Helpers shared by the benchmark summary scripts (run them from the repository root:
``python benchmarks/summarize_*.py FOLDER...``)."""

from __future__ import annotations

import json
import math
from pathlib import Path


def load(folder) -> list[dict]:
    """The records of one ``dfopt bench`` output folder."""
    return [json.loads(line) for line in (Path(folder) / "records.jsonl").read_text().splitlines() if line]


def gm(values):
    """Geometric mean of the values that are not None (None when there are none)."""
    values = [v for v in values if v is not None]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def fmt(x, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"
