"""Identifier rules per backend (dfopt.instance.names): names the generated C takes as they are are
refused with their pointer; names the MLIR and HLS emitters rewrite come out as identifiers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.cli import main
from dfopt.codegen.hls.emit import ident
from dfopt.instance.names import c_name_fault

ROOT = Path(__file__).resolve().parent.parent
JACOBI = ROOT / "instances/schedule/jacobi-1d.json"


@pytest.mark.parametrize("old, new, pointer", [
    ("A", "int", "/program/arrays/int"),
    ("N", "double", "/program/params/1"),
    ("S0", "main", "/program/statements/0/name"),
    ("A", "printf", "/program/arrays/printf"),
    ("B", "dfopt_B", "/program/arrays/dfopt_B"),
    ("i", "for", "/program/statements/0/domain"),
])
def test_schedule_names_the_c_code_cannot_take_are_refused(tmp_path, capsys, old, new, pointer):
    text = re.sub(rf"\b{old}\b", new, JACOBI.read_text())
    path = tmp_path / "renamed.json"
    path.write_text(text)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert pointer in err and repr(new) in err


def test_the_shipped_programs_pass_the_rules():
    for path in sorted((ROOT / "instances/schedule").glob("*.json")):
        program = json.loads(path.read_text())["program"]
        names = list(program.get("params", [])) + list(program.get("arrays", {})) + \
            [s["name"] for s in program["statements"]]
        assert [n for n in names if c_name_fault(n)] == [], path.name


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=12))
def test_hls_identifiers_are_ascii_c_identifiers(name):
    out = ident(name)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", out) and c_name_fault(out) in (None, "a name the generated C "
                                                                                        "defines or calls",
                                                                                  "reserved for the generated code "
                                                                                  "(dfopt_...)")


def test_mlir_symbols_from_free_text_task_names(tmp_path, capsys):
    inst = json.loads((ROOT / "instances/mapping/ffn-2x4.json").read_text())
    for k in inst["graph"]["kernels"]:
        k["attrs"]["task"] = {"ffn1": "été 1", "ffn2": "%arg0"}[k["attrs"]["task"]]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(inst))
    assert main(["solve", str(path), "--quiet", "--emit-dir", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "ffn-2x4.mlir").read_text()
    symbols = set(re.findall(r"@([^\s(,:\]}]+)", text))
    assert symbols and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", s) for s in symbols), sorted(symbols)
    assert "@s_arg0" in text or "@_arg0" in text
