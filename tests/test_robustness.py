"""Kills during a write and determinism pairs (the hostile-input battery's two process-level classes).

* A writer replacing a large JSON file over and over is killed (SIGKILL and SIGTERM in turn) at
  random moments, 20 times: the file is always absent or one whole version, never a truncated
  one; a SIGTERM leaves no temporary behind (the handler ends the command as an exception, the
  write cleans up), a SIGKILL's orphan is swept by the next write into the folder.
* ``dfopt solve`` twice on each shipped instance of every problem gives the same solution but the
  run metadata (timings, the recorded checks' order is part of the comparison).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dfopt.bench.fuzz import FREE
from dfopt.cli import main
from dfopt.io import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent

WRITER = r"""
import json, sys
from dfopt.cli import _exit_on_sigterm
from dfopt.io import write_json_atomic
_exit_on_sigterm()
target, size = sys.argv[1], int(sys.argv[2])
print("ready", flush=True)
for version in range(10 ** 6):
    write_json_atomic(target, {"version": version, "payload": list(range(size))})
"""


def _kill_once(tmp_path: Path, sig: int, delay: float) -> int:
    target = tmp_path / "out.json"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target), "200000"], stdout=subprocess.PIPE,
                            text=True, cwd=tmp_path)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(delay)
    proc.send_signal(sig)
    proc.wait(timeout=60)
    if target.exists():
        doc = json.loads(target.read_text())           # whole, or this raises
        assert len(doc["payload"]) == 200000
    return proc.pid


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".dfopt-"))


def test_kills_during_writes_leave_the_old_file_or_the_new_one(tmp_path):
    rng = random.Random(7)
    for i in range(20):
        sig = signal.SIGKILL if i % 2 else signal.SIGTERM
        pid = _kill_once(tmp_path, sig, rng.uniform(0.0, 0.4))
        if sig == signal.SIGTERM:    # its own temporary is gone (an earlier SIGKILL's may wait for a sweep)
            mine = [n for n in _temporaries(tmp_path) if n.startswith(f".dfopt-{pid}-")]
            assert mine == [], f"kill {i} (SIGTERM) left {mine}"
    write_text_atomic(tmp_path / "later.json", "{}")       # the next write sweeps what SIGKILLs left
    assert _temporaries(tmp_path) == []


SHIPPED = [
    "fifo/fig8f.json", "fifo/transformer-block.json", "converter/fig5.json", "fusion/diamond.json",
    "fusion/greedy-trap.json", "placement/chain-u55c.json", "placement/random-n10.json", "memory/tight.json",
    "schedule/jacobi-1d.json", "schedule/gemm.json", "mapping/ffn-2x4.json", "mapping/attention-2x4.json",
    "pipeline/ffn.json",
]


def _claims(doc):
    """The solution without its run metadata (the battery's FREE keys: timings, the solver's
    name, progress), recursively."""
    if isinstance(doc, dict):
        return {k: _claims(v) for k, v in doc.items() if k not in FREE}
    if isinstance(doc, list):
        return [_claims(v) for v in doc]
    return doc


@pytest.mark.parametrize("name", SHIPPED)
def test_two_solves_give_the_same_answer(name, tmp_path, capsys):
    docs = []
    for run in range(2):
        out = tmp_path / f"run{run}.json"
        assert main(["solve", str(ROOT / "instances" / name), "-o", str(out), "--quiet"]) == 0
        docs.append(json.loads(out.read_text()))
    capsys.readouterr()
    assert _claims(docs[0]) == _claims(docs[1])
    assert [c["name"] for c in docs[0]["checks"]] == [c["name"] for c in docs[1]["checks"]]

