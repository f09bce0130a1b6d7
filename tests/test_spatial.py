"""The Spatial program of a bound, scheduled sparse statement (``dfopt.codegen.spatial``): its
structure on the shipped kernels — memories per kind and where they are declared, the loop nest
with its par factors, the co-iteration pattern of every join — for both the solved design and
Stardust's rules, the checker clean on every shipped instance, and the checker catching a
tampered program and a tampered design."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

import dfopt
from dfopt.api import make_options
from dfopt.codegen.spatial import check_program, spatial_program, write_spatial
from dfopt.codegen.spatial.check import parse
from dfopt.models.sparse import prepare
from dfopt.models.sparse.decision import ArrayBinding, SparseDesign

ROOT = Path(__file__).resolve().parent.parent
KERNELS = sorted((ROOT / "instances" / "sparse").glob("*.json"))
DECL = re.compile(r"^val (\w+) = (SRAM|SparseSRAM|FIFO|Reg)\[\w+\]\(([^)]*)\)")


@cache
def _kernel(stem: str):
    path = ROOT / "instances" / "sparse" / f"{stem}.json"
    inst = dfopt.load(str(path))
    data = prepare(inst, make_options(inst))
    return data, dfopt.solve(str(path), time_limit=20).decision


def _designs(stem: str):
    data, sol = _kernel(stem)
    return data, {"solved": sol, "stardust": data.baseline}


def _structure(text: str) -> dict:
    """Declarations (identifier -> (memory, loop path, size)) inside Accel and the loops (key ->
    list of (parent path, construct, par)) of a program."""
    decls, loops = {}, {}
    for ln in parse(text):
        m = DECL.match(ln.code)
        if m and ln.accel:
            decls[m.group(1)] = (m.group(2), ln.path, m.group(3))
        if ln.key is not None:
            construct = ln.code.split("(")[0].split(" = ")[-1]
            par = re.search(r"Scan\((\d+),", ln.code) or re.search(r" par (\d+)\)", ln.code)
            loops.setdefault(ln.key, []).append((ln.path, construct, int(par.group(1)) if par else None, ln.note))
    return {"decls": decls, "loops": loops}


def _lines_in(text: str, path: tuple) -> list[str]:
    return [ln.code for ln in parse(text) if ln.accel and ln.path == path]


# --- golden structures -----------------------------------------------------------------------------

def test_spmv_stardust_rules_structure():
    data, _ = _kernel("spmv-karate")
    text = spatial_program(data, data.baseline, "spmv-karate")
    s = _structure(text)
    assert {k: v for k, v in s["decls"].items() if not k.endswith("_at")} == {
        "A_1_pos": ("SRAM", ("i",), "2"),          # pos in SRAM at the loop that reads it
        "A_1_crd": ("FIFO", ("i",), "16"),         # crd and vals streamed through FIFOs of 16
        "A_vals": ("FIFO", ("i",), "16"),
        "x_vals": ("SRAM", (), "34"),              # the gathered vector copied whole
        "y_vals": ("FIFO", (), "16"),
    }
    assert s["loops"] == {"i": [((), "Foreach", 4, "dense A.0")], "j": [(("i",), "Reduce", 16, "walk A.1")]}
    assert "@spatial object SpmvKarate extends SpatialApp {" in text
    assert "x_vals load x_vals_dram(0 :: 34 par 16)" in _lines_in(text, ())
    assert "A_1_crd_dram stream_load_vec(A_1_lo, A_1_hi - A_1_lo, A_1_crd)" in _lines_in(text, ("i",))
    assert "y_vals_dram stream_store_vec(0, y_vals, 34)" in _lines_in(text, ())
    assert 'writeCSV1D(getMem(y_vals_dram), data + "/y_vals.out.csv", "\\n")' in text


def test_spmv_solved_design_structure():
    data, sol = _kernel("spmv-karate")
    text = spatial_program(data, sol, "spmv-karate")
    s = _structure(text)
    for name, b in sol.binding.items():
        ident = name.replace(".", "_")
        want = {"sram": "SRAM", "fifo": "FIFO", "reg": "Reg", "sparse_sram": "SparseSRAM"}.get(b.memory)
        assert (s["decls"].get(ident, (None,))[0]) == want, name
    assert s["loops"]["i"][0][2] == sol.outer_par and s["loops"]["j"][0][2] == sol.inner_par
    assert [ln for ln in _lines_in(text, ("i", "j")) if "x_vals(" in ln]        # the gather inside loop j
    assert check_program(text, data, sol) == []


def test_spmv_csc_workspace_structure():
    data, sol = _kernel("spmv-csc-airfoil")
    text = spatial_program(data, data.baseline, "spmv-csc")
    s = _structure(text)
    # the dense workspace is bound at depth 2 but the consumer reads it too: allocated at the root
    assert data.baseline.binding["yw.vals"].depth == 2 and s["decls"]["yw_vals"] == ("SRAM", (), "260")
    assert [(k, [(p, c) for p, c, _, _ in v]) for k, v in s["loops"].items()] == [
        ("j", [((), "Foreach")]), ("i", [(("j",), "Foreach")]), ("i@yw", [((), "Foreach")])]
    assert s["loops"]["i"][0][2] == 16 and s["loops"]["i@yw"][0][2] == 64     # inner x outer: top-level consumer
    assert "yw_vals(i) = yw_vals(i) + yw_v" in _lines_in(text, ("j", "i"))     # accumulated by the producer
    assert "val y_v = yw_vals(yw_0_p)" in _lines_in(text, ("i@yw",))            # read back by the consumer
    assert "yw_vals_dram" not in text                                          # an on-chip workspace: no DRAM
    assert check_program(spatial_program(data, sol, "spmv-csc"), data, sol) == []


@pytest.mark.parametrize("stem, method", [("plus2-minnesota", "merge"), ("plus2-bar", "bitvector")])
def test_plus2_coiteration_follows_the_solved_design(stem, method):
    data, sol = _kernel(stem)
    assert sol.coiteration["join_j_0"] == method           # docs/sparse.md: merge only on the Minnesota graph
    text = spatial_program(data, sol, stem)
    loops = _structure(text)["loops"]["j"]
    if method == "merge":
        assert [(c, par, note) for _, c, par, note in loops] == [("FSM", None, "join_j_0 merge")]
        assert "val j = min(join_j_0_ja, join_j_0_jb)" in _lines_in(text, ("i", "j"))
        assert "A_1_crd.deq(join_j_0_ha)" in _lines_in(text, ("i", "j"))     # each finger advances on a match
    else:
        assert [(c, note) for _, c, _, note in loops] == [
            ("Foreach", "join_j_0 bit vector of A.1"), ("Foreach", "join_j_0 bit vector of B.1"),
            ("Foreach", "join_j_0 bitvector")]
        scope = _lines_in(text, ("i",))
        assert "gen_bitvector(0, 600, A_1_hi - A_1_lo, join_j_0_crd_a, join_j_0_bv_a)" in scope
        assert "gen_bitvector(0, 600, B_1_hi - B_1_lo, join_j_0_crd_b, join_j_0_bv_b)" in scope
        assert 'Scan(16, 19, "or", join_j_0_bv_a, join_j_0_bv_b)' in text   # ceil(600 / 32) words, OR
    assert check_program(text, data, sol) == []


def test_spgemm_sparse_accumulator_structure():
    data, sol = _kernel("spgemm-knot")
    for design in (sol, data.baseline):
        text = spatial_program(data, design, "spgemm")
        s = _structure(text)
        assert [(k, v[0][0]) for k, v in s["loops"].items()] == [
            ("i", ()), ("k", ("i",)), ("j", ("i", "k")), ("j@row", ("i",))]
        assert s["decls"]["row_vals"][0] == s["decls"]["row_crd"][0] == "SparseSRAM"
        assert s["decls"]["row_crd"][1] == ("i",)           # shared by producer and consumer: inside loop i
        producer = _lines_in(text, ("i", "k", "j"))
        assert 'val row_slot = row_crd.RMW(j, j, "insert", "TSO")' in producer
        assert 'row_vals.RMW(row_slot, row_v, "add", "TSO")' in producer
        consumer = _lines_in(text, ("i", "j@row"))
        assert "val j = row_crd(j_q)" in consumer and "C_1_crd.enq(j)" in consumer
        pos_end = {"fifo": "C_1_pos.enq(C_1_n.value)", "sram": "C_1_pos(C_0_p + 1 - C_1_pos_win) = C_1_n.value"}
        assert pos_end[design.binding["C.1.pos"].memory] in _lines_in(text, ("i",))   # after the row
        assert check_program(text, data, design) == []


def test_innerprod_reductions_and_joins():
    data, sol = _kernel("innerprod-random")
    base = spatial_program(data, data.baseline, "innerprod")
    s = _structure(base)
    assert s["decls"]["a_vals"] == ("Reg", (), "0")                     # the scalar result in a register
    assert [(k, c) for k, v in s["loops"].items() for _, c, _, n in v if "bit vector of" not in n] == [
        ("i", "Reduce"), ("j", "Reduce"), ("k", "Reduce")]
    assert base.count('"and"') == 3 and base.count("gen_bitvector(") == 6
    assert [ln for ln in _lines_in(base, ()) if ln.startswith("Reduce(a_vals)(Scan(")]
    assert sol.coiteration["join_i_0"] == "merge"
    text = spatial_program(data, sol, "innerprod")
    assert _structure(text)["loops"]["i"][0][1] == "FSM"
    assert "a_vals := i_sum_0.value" in _lines_in(text, ())               # the merge's sum set at the root
    assert check_program(text, data, sol) == []


# --- the checker -----------------------------------------------------------------------------------

@pytest.mark.parametrize("stem", [p.stem for p in KERNELS])
def test_every_shipped_kernel_checks_clean_for_both_designs(stem):
    data, designs = _designs(stem)
    for label, design in designs.items():
        text = spatial_program(data, design, stem)
        assert check_program(text, data, design) == [], label
        assert text.count("Accel {") == 1 and text.count("// loop ") >= len(data.concrete.loops)


def _move_line(text: str, line: str, after: str) -> str:
    lines = text.splitlines()
    at = next(n for n, s in enumerate(lines) if s.strip() == line)
    moved = lines.pop(at)
    to = next(n for n, s in enumerate(lines) if s.strip() == after)
    lines.insert(to + 1, moved)
    return "\n".join(lines) + "\n"


def test_checker_catches_a_tampered_program():
    data, sol = _kernel("spmv-karate")
    text = spatial_program(data, sol, "spmv-karate")
    moved = _move_line(text, "val A_1_crd = FIFO[Int](16)", "Accel {")       # out of loop i, to the root
    assert any("'A.1.crd': declared in loops ()" in f for f in check_program(moved, data, sol))
    dropped = text.replace("      val x_vals = SRAM[T](34)\n", "")
    assert "array 'x.vals': declared 0 times on chip, expected once as SRAM (binding sram)" in \
        check_program(dropped, data, sol)
    nopar = text.replace("par 8)", "par 2)")
    assert any("loop 'j'" in f and "par 2, the design gives 8" in f for f in check_program(nopar, data, sol))
    noload = text.replace("x_vals load x_vals_dram(0 :: 34 par 8)", "")
    assert any("'x.vals': expected one load transfer" in f for f in check_program(noload, data, sol))


def test_checker_catches_a_tampered_design():
    data, sol = _kernel("plus2-bar")
    text = spatial_program(data, sol, "plus2-bar")
    binding = dict(sol.binding)
    binding["A.vals"] = ArrayBinding("sram", 0, 1)
    wrong_memory = SparseDesign(binding, sol.coiteration, sol.inner_par, sol.outer_par)
    faults = check_program(text, data, wrong_memory)
    assert any("'A.vals': declared as FIFO, its binding is sram" in f for f in faults)
    wrong_method = SparseDesign(sol.binding, {"join_j_0": "merge"}, sol.inner_par, sol.outer_par)
    assert any("join 'join_j_0'" in f and "by bitvector, the design says merge" in f
               for f in check_program(text, data, wrong_method))
    wrong_par = SparseDesign(sol.binding, sol.coiteration, sol.inner_par // 2, sol.outer_par)
    assert any("par 16, the design gives 8" in f for f in check_program(text, data, wrong_par))
    # the program of one design is not the program of another
    other = spatial_program(data, data.baseline, "plus2-bar")
    assert check_program(other, data, sol) != []


def test_write_spatial_to_a_folder_and_to_a_file(tmp_path):
    data, sol = _kernel("spmv-bar")
    out = write_spatial(data, sol, tmp_path, "spmv-bar")
    assert out["path"] == str(tmp_path / "spmv-bar.scala") and out["faults"] == []
    assert (tmp_path / "spmv-bar.scala").read_text() == spatial_program(data, sol, "spmv-bar")
    assert out["memories"] == {"DRAM": 5, "SRAM": 1, "FIFO": 4, "Reg": 1} and out["loops"] == 2
    again = write_spatial(data, sol, tmp_path / "other.scala", "spmv-bar")
    assert again["path"] == str(tmp_path / "other.scala") and (tmp_path / "other.scala").is_file()
