"""Compile and run the C files of :mod:`dfopt.codegen.poly.emit` with the system C compiler.

The compiler is ``$CC`` when set, else the first of ``gcc`` and ``cc`` on ``PATH``
(:func:`find_compiler`); without one, :class:`CompilerNotFoundError`. A failed compilation raises
:class:`CompileError` and a failed run :class:`RunError`, both with the tool's stderr.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from dfopt.errors import CodegenError
from dfopt.io import StrPath

COMPILERS = ("gcc", "cc")


class CompilerNotFoundError(CodegenError):
    """No C compiler found ($CC, gcc, cc)."""


class CompileError(CodegenError):
    """The C compiler rejected a source; ``stderr`` holds its messages."""

    def __init__(self, message: str, stderr: str = ""):
        self.stderr = stderr
        super().__init__(f"{message}\n{stderr}" if stderr else message)


class RunError(CodegenError):
    """A compiled program failed (non-zero exit, signal or timeout); ``stderr`` holds its output."""

    def __init__(self, message: str, stderr: str = "", returncode: int | None = None):
        self.stderr = stderr
        self.returncode = returncode
        super().__init__(f"{message}\n{stderr}" if stderr else message)


def find_compiler() -> str:
    """Path of the C compiler: ``$CC`` (its first word) when set, else gcc or cc on PATH."""
    env = os.environ.get("CC", "").strip()
    candidates = ([shlex.split(env)[0]] if env else []) + list(COMPILERS)
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    raise CompilerNotFoundError(f"no C compiler found (tried {', '.join(candidates)}); install gcc "
                                f"or set CC")


def compile_c(source: str, workdir: StrPath, *, flags: Iterable[str] = ("-O2",), openmp: bool = False,
              compiler: str | None = None, timeout: float = 120.0) -> Path:
    """Write ``source`` to ``workdir`` and compile it to an executable; returns its path.

    The file name is a hash of the source, compiler and flags, so calls with different sources
    can share one ``workdir``. ``openmp`` adds ``-fopenmp``; ``-lm`` is always linked.
    """
    cc = compiler or find_compiler()
    folder = Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    options = list(flags) + (["-fopenmp"] if openmp else [])
    key = hashlib.sha1("\0".join([cc, *options, source]).encode()).hexdigest()[:16]
    src = folder / f"poly_{key}.c"
    binary = folder / f"poly_{key}"
    src.write_text(source)
    cmd = [cc, *options, str(src), "-o", str(binary), "-lm"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise CompileError(f"{shlex.join(cmd)} timed out after {timeout} s") from err
    if res.returncode != 0:
        raise CompileError(f"{shlex.join(cmd)} failed with exit code {res.returncode}", res.stderr)
    return binary


def run(binary: StrPath, *, threads: int | None = None, timeout: float = 120.0, args: Iterable[object] = ()) -> bytes:
    """Run ``binary`` (with ``OMP_NUM_THREADS=threads`` when given) and return its stdout."""
    env = dict(os.environ)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(int(threads))
    cmd = [str(binary), *map(str, args)]
    try:
        res = subprocess.run(cmd, capture_output=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise RunError(f"{shlex.join(cmd)} timed out after {timeout} s") from err
    if res.returncode != 0:
        raise RunError(f"{shlex.join(cmd)} failed with exit code {res.returncode}",
                       res.stderr.decode(errors="replace"), res.returncode)
    return res.stdout
