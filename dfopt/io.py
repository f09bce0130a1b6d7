"""Atomic file output: write to a temporary file in the same folder, then rename.

>>> import tempfile, os
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "x.json")
>>> write_text_atomic(p, "{}"); open(p).read()
'{}'
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, TypeAlias

StrPath: TypeAlias = "str | os.PathLike[str]"


def write_text_atomic(path: StrPath, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: StrPath, data: bytes) -> None:
    """Bytes version of :func:`write_text_atomic`; the file gets the usual 0666 & ~umask mode."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".dfopt-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: StrPath, data: Any, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=False) + "\n")
