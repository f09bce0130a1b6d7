"""Write a :class:`~dfopt.ilp.model.LinearModel` to a file: MPS, LP or a CP-SAT text proto.

MPS and LP go through HiGHS (``Highs.writeModel``); ``cpsat-proto`` is the text format of the
CP-SAT model that the ``cpsat`` backend would solve (after integer scaling). Files are written
atomically (a temporary file in the same folder, then a rename). Names that the format cannot
hold are rewritten: LP names keep ``[A-Za-z0-9_]`` only, MPS names lose whitespace; a clash gets
the column index appended.

>>> import tempfile, os
>>> from dfopt.ilp import LinearModel
>>> m = LinearModel("tiny")
>>> x = m.int_var(0, 3, "x[a]")
>>> m.maximize(x)
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.mps")
>>> export(m, path, "mps") == path
True
"""

from __future__ import annotations

import os
import re
import tempfile

from dfopt.errors import SolverError, unknown_name_error
from dfopt.ilp.model import LinearModel, ModelData

__all__ = ["export", "EXPORT_FORMATS"]

EXPORT_FORMATS = ("mps", "lp", "cpsat-proto")


def export(model: LinearModel, path: str | os.PathLike, fmt: str | None = None) -> str:
    """Write ``model`` to ``path`` in ``fmt`` (``mps``, ``lp``, ``cpsat-proto``; default: from the
    file extension). Returns the path."""
    path = os.fspath(path)
    fmt = fmt or _format_from_extension(path)
    if fmt not in EXPORT_FORMATS:
        raise unknown_name_error("export format", fmt, EXPORT_FORMATS)
    data = model.data()
    if fmt == "cpsat-proto":
        _atomic_write_text(path, _cpsat_text(data))
    else:
        _write_highs(data, path, fmt)
    return path


def _format_from_extension(path: str) -> str:
    ext = path.lower().rsplit(".", 1)[-1]
    return {"mps": "mps", "lp": "lp", "pbtxt": "cpsat-proto", "txt": "cpsat-proto"}.get(ext, ext)


def _cpsat_text(data: ModelData) -> str:
    from dfopt.ilp.cpsat import build_cp_model

    model, _, _ = build_cp_model(data)
    return str(model.proto)


def _write_highs(data: ModelData, path: str, fmt: str) -> None:
    from dfopt.ilp.highs import highs_lp, new_highs

    pattern = re.compile(r"[^A-Za-z0-9_]" if fmt == "lp" else r"\s")
    lp = highs_lp(_renamed(data, pattern), names=True)
    h = new_highs()
    h.passModel(lp)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(suffix=f".{fmt}", dir=folder)
    os.close(fd)
    try:
        status = h.writeModel(tmp)
        if str(status).endswith("kError"):
            raise SolverError(f"HiGHS could not write {fmt} to {path}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _renamed(data: ModelData, pattern: re.Pattern) -> ModelData:
    from dataclasses import replace

    return replace(data, var_names=_clean(data.var_names, pattern, "x"),
                   row_names=_clean(data.row_names, pattern, "r"))


def _clean(names, pattern: re.Pattern, prefix: str) -> list[str]:
    out, seen = [], set()
    for i, name in enumerate(names):
        fixed = pattern.sub("_", name) or f"{prefix}{i}"
        if fixed[0].isdigit() or fixed[0] == ".":
            fixed = f"{prefix}_{fixed}"
        if fixed in seen:
            fixed = f"{fixed}_{i}"
        seen.add(fixed)
        out.append(fixed)
    return out


def _atomic_write_text(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
