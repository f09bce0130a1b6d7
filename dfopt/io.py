"""Atomic file output: write to a temporary file in the same folder, then rename.

A temporary name carries the writer's process id (``.dfopt-<pid>-XXXX.tmp``; a folder being
built, ``.<name>.tmp-<pid>-XXXX``), so a write killed before its rename leaves a file that the
next write into the same folder removes (:func:`sweep_stale`: the process is gone). The CLI
checks its output paths before it solves (:func:`check_output_file`, :func:`check_output_dir`):
a folder where a file is asked for, a missing or read-only parent, an existing file or non-empty
folder where a design folder is asked for (unless ``--force``) are refused with the flag named.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "x.json")
>>> write_text_atomic(p, "{}"); open(p).read()
'{}'
>>> try:
...     check_output_file(d, "--output")
... except InstanceError as err:
...     print(str(err).replace(d, "D"))
--output: D is a folder; expected a file path
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias

from dfopt.errors import InstanceError

StrPath: TypeAlias = "str | os.PathLike[str]"


def write_text_atomic(path: StrPath, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_STALE = re.compile(r"^(?:\.dfopt-(\d+)-.*\.tmp|\..+\.(?:tmp|old)-(\d+)-.*)$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def sweep_stale(folder: StrPath) -> list[str]:
    """Remove the temporary files and folders that writes killed before their rename left in
    ``folder`` (their process is gone); returns their names."""
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = _STALE.match(name)
        if not m or _alive(int(m.group(1) or m.group(2))):
            continue
        full = os.path.join(folder, name)
        try:
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            else:
                os.unlink(full)
            removed.append(name)
        except OSError:      # another process removed it first, or it is not ours to remove
            continue
    return removed


def temp_prefix(name: str = "") -> str:
    """The prefix of a temporary name next to ``name`` (``.dfopt-<pid>-`` for a file, else
    ``.<name>.tmp-<pid>-``)."""
    return f".{name}.tmp-{os.getpid()}-" if name else f".dfopt-{os.getpid()}-"


def _fresh(folder: StrPath, prefix: str, suffix: str = "") -> str:
    """A name in ``folder`` that nothing has yet. The caller holds it *before* creating the file
    or folder (``os.open`` with ``O_EXCL``, ``os.mkdir``), so that a signal between the creation
    and the assignment cannot leave a temporary its cleanup does not know of (``mkstemp`` returns
    the name only after creating it)."""
    while True:
        path = os.path.join(os.fspath(folder), f"{prefix}{secrets.token_hex(4)}{suffix}")
        if not os.path.lexists(path):
            return path


def _parent(path: str, flag: str) -> str:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        raise InstanceError(f"{path}: the folder {parent} does not exist", pointer=flag)
    if not os.path.isdir(parent):
        raise InstanceError(f"{path}: {parent} is not a folder", pointer=flag)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InstanceError(f"{path}: the folder {parent} is not writable", pointer=flag)
    return parent


def check_output_file(path: StrPath, flag: str) -> None:
    """:class:`InstanceError` (the flag as its pointer) unless ``path`` can be written as a file:
    not a folder, its folder present and writable, an existing file writable."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InstanceError(f"{path} is a folder; expected a file path", pointer=flag)
    _parent(path, flag)
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise InstanceError(f"{path} is not writable", pointer=flag)


def check_output_dir(path: StrPath, flag: str, force: bool = False) -> None:
    """:class:`InstanceError` unless ``path`` can become a design folder: not an existing file,
    not an existing non-empty folder unless ``force`` (it is replaced), its parent writable."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise InstanceError(f"{path} exists and is not a folder", pointer=flag)
    if os.path.isdir(path) and os.listdir(path) and not force:
        raise InstanceError(f"{path} exists and is not empty (--force replaces it)", pointer=flag)
    _parent(path, flag)


_SWEPT: set[str] = set()      # folders this process has swept (once each: a bench writes thousands of files)


def write_bytes_atomic(path: StrPath, data: bytes) -> None:
    """Bytes version of :func:`write_text_atomic`; the file gets the usual 0666 & ~umask mode."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if folder not in _SWEPT:
        sweep_stale(folder)
        _SWEPT.add(folder)
    tmp = None
    try:
        while True:
            tmp = _fresh(folder, temp_prefix(), ".tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                break
            except FileExistsError:     # taken since _fresh looked: another name
                tmp = None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: StrPath, data: Any, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=False) + "\n")


def write_folder_atomic(out_dir: StrPath, files: dict) -> list[str]:
    """Write ``files`` (relative path -> str or bytes) as the folder ``out_dir``: built in a
    temporary sibling and renamed at the end, replacing an existing folder. Returns the paths.

    >>> d = tempfile.mkdtemp()
    >>> write_folder_atomic(os.path.join(d, "out"), {"a.txt": "x", "sub/b.bin": b"y"})
    ['a.txt', 'sub/b.bin']
    """
    with folder_atomic(out_dir) as tmp:
        for rel, content in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode() if isinstance(content, str) else content)
    return sorted(files)


@contextlib.contextmanager
def folder_atomic(out_dir: StrPath) -> Iterator[Path]:
    """A temporary sibling of ``out_dir`` to fill: renamed to ``out_dir`` when the block ends
    (replacing an existing folder), removed when it raises.

    >>> d = tempfile.mkdtemp()
    >>> with folder_atomic(os.path.join(d, "out")) as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> os.listdir(d), os.listdir(os.path.join(d, "out"))
    (['out'], ['a.txt'])
    """
    out = Path(os.path.abspath(os.fspath(out_dir)))
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(out.parent)
    tmp = Path(_fresh(out.parent, temp_prefix(out.name)))
    try:
        tmp.mkdir(mode=0o700)
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{os.getpid()}-", dir=out.parent))
            old.rmdir()
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        raise
