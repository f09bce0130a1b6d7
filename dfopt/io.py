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


def write_text_atomic(path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".dfopt-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path, data, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=False) + "\n")
