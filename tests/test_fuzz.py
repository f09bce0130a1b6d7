"""The fuzz battery (dfopt.bench.fuzz), bounded for the test run: hypothesis-drawn mutations of
every shipped instance through ``dfopt validate``, and a seeded battery through ``validate``,
``solve`` and ``check`` (tampered solutions). No run may end in an internal error or overrun its
budget, and ``validate`` must refuse what ``solve`` refuses as bad input. The long battery is
``benchmarks/fuzz_battery.py`` (its totals are committed in ``benchmarks/results/fuzz/``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dfopt.bench.fuzz import KINDS, battery, mutate, run

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [p for p in sorted((ROOT / "instances").glob("*/*.json")) if p.parent.name != "invalid"]
DOCS = {p: json.loads(p.read_text()) for p in SHIPPED}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SHIPPED), st.sampled_from(KINDS), st.integers(0, 2 ** 32))
def test_validate_never_fails_inside(tmp_path, path, kind, seed):
    mutant, what = mutate(DOCS[path], random.Random(seed), kind)
    target = tmp_path / "m.json"
    target.write_text(json.dumps(mutant, allow_nan=True), encoding="utf-8", errors="surrogatepass")
    r = run(["validate", target], budget=60)
    assert r.rc in (0, 2), (path.name, what, r.rc, r.escaped or r.err)


@pytest.mark.slow
def test_a_seeded_battery_finds_no_internal_error_and_no_validate_miss(tmp_path):
    findings, totals = battery(SHIPPED, tmp_path, per_instance=2, seed=7, time_limit=1.0, budget=120)
    bad = [f for f in findings if f["finding"] in ("internal", "validate-miss", "timeout")]
    assert not bad, bad[:5]
    runs = sum(t["runs"] for t in totals.values())
    assert runs >= 5 * len(SHIPPED) and set(totals) >= {"fifo", "fusion", "placement", "schedule", "mapping"}


def test_mutations_cover_every_kind():
    doc = {"graph": {"kernels": [{"name": "a", "resources": {"bytes": 4}}], "streams": []}}
    seen = {mutate(doc, random.Random(s))[1].split(" ")[0] for s in range(400)}
    assert seen == set(KINDS)
    deep, _ = mutate(doc, random.Random(1), "deep")
    assert json.dumps(deep).count("[") > 60
