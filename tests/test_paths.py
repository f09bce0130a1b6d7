"""Output paths and interrupted writes: every output path of ``dfopt solve`` / ``plot`` checked before
anything is solved (exit 2 naming the flag), ``--emit-dir`` never replaces a file or a non-empty
folder without ``--force``, temporary files of killed writes swept, SIGTERM cleans up."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from dfopt.cli import _exit_on_sigterm, main
from dfopt.io import sweep_stale, write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
FIFO = str(ROOT / "instances" / "fifo" / "fig8a.json")
FFN = str(ROOT / "instances" / "pipeline" / "ffn.json")
DEAD = 2 ** 22 + 12345          # above Linux's default pid_max: no such process


def _solve(*args) -> int:
    return main(["solve", *map(str, args), "--quiet"])


@pytest.mark.parametrize("where, words", [
    ("folder", "is a folder; expected a file path"),
    ("under-file", "is not a folder"),
    ("missing", "does not exist"),
])
def test_bad_output_paths_are_refused_before_solving(tmp_path, capsys, where, words):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    path = {"folder": tmp_path / "folder", "under-file": tmp_path / "file" / "x.json",
            "missing": tmp_path / "nope" / "x.json"}[where]
    assert _solve(FIFO, "-o", path) == 2
    out = capsys.readouterr()
    assert f"--output: {path}" in out.err and words in out.err
    assert "objective" not in out.out          # nothing was solved
    assert (tmp_path / "file").read_text() == "x"


def test_plot_path_is_checked_too(tmp_path, capsys):
    assert _solve(FIFO, "--plot", tmp_path / "nope" / "x.png") == 2
    assert "--plot:" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert _solve(FIFO, "-o", ro / "x.json") == 2
        assert "is not writable" in capsys.readouterr().err
    finally:
        ro.chmod(0o700)


def test_a_failing_write_is_bad_input_not_an_internal_error(tmp_path, capsys):
    # /proc takes no new files, even for root: the write fails after the checks pass
    assert _solve(FIFO, "-o", "/proc/dfopt-x.json") == 2
    err = capsys.readouterr().err
    assert "--output: cannot write" in err and "internal error" not in err


def test_emit_dir_refuses_a_file_and_a_non_empty_folder_without_force(tmp_path, capsys):
    afile = tmp_path / "design"
    afile.write_text("keep me")
    assert _solve(FFN, "--emit-dir", afile) == 2
    assert "exists and is not a folder" in capsys.readouterr().err and afile.read_text() == "keep me"
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "mine.txt").write_text("mine")
    assert _solve(FFN, "--emit-dir", folder) == 2
    assert "exists and is not empty (--force replaces it)" in capsys.readouterr().err
    assert (folder / "mine.txt").is_file()
    assert _solve(FFN, "--emit-dir", folder, "--force") == 0
    assert (folder / "top.cpp").is_file() and not (folder / "mine.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["design", "out"]   # no temporary left
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _solve(FFN, "--emit-dir", empty) == 0


def test_stale_temporaries_of_dead_writers_are_swept(tmp_path):
    (tmp_path / f".dfopt-{DEAD}-abc.tmp").write_text("half")
    (tmp_path / f".design.tmp-{DEAD}-xyz").mkdir()
    (tmp_path / f".dfopt-{os.getpid()}-mine.tmp").write_text("in progress")   # a live writer's
    (tmp_path / ".dfopt-notes.txt").write_text("not ours")
    write_text_atomic(tmp_path / "x.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([".dfopt-notes.txt", f".dfopt-{os.getpid()}-mine.tmp",
                                                                 "x.json"])
    assert sweep_stale(tmp_path) == []


def test_sigterm_ends_the_command_as_an_exception(tmp_path):
    old = signal.getsignal(signal.SIGTERM)
    try:
        _exit_on_sigterm()
        with pytest.raises(SystemExit) as done:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10 ** 6):      # the handler runs between bytecodes
                pass
        assert done.value.code == 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, old)
