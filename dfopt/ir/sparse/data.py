"""Tensor data for sparse instances: files, seeded random tensors and networkx's bundled graphs.

A tensor's ``data`` field is one of

- a path, relative to the instance's folder: ``.mtx`` (Matrix Market, read by ``scipy.io.mmread``;
  a pattern matrix gets values 1, a symmetric one is expanded), ``.tns`` (FROSTT: per line the
  1-based coordinates and then the value; ``#`` starts a comment) or ``.npz`` (written by
  ``scipy.sparse.save_npz``, or holding the arrays ``coords`` (nnz x rank), ``values`` and
  ``shape``);
- ``{"random": {...}}``: a seeded random tensor (:func:`random_coo`);
- ``{"graph": name}``: the adjacency matrix of a graph that ships with networkx
  (:data:`GRAPHS`), with the edge weights as values where the graph has them.

:func:`load` returns the tensor as a canonical :class:`~dfopt.ir.sparse.tensor.Coo`. Sizes are
checked before anything is allocated: at most :data:`MAX_NNZ` nonzeros, each dimension at most
:data:`MAX_DIM`, and a dense Matrix Market array at most :data:`MAX_DENSE` entries. Every fault is
an :class:`~dfopt.errors.InstanceError` at the tensor's JSON pointer (a field inside the ``random``
object gets its own pointer, ``.../data/random/density``).

>>> coo = load({"random": {"seed": 1, "shape": [4, 5], "nnz": 6}}, Path("."), 2, None, "/tensors/A/data")
>>> coo.shape, coo.nnz
((4, 5), 6)
>>> load({"graph": "karate_club"}, Path("."), 2, None, "/tensors/A/data").shape
(34, 34)
"""

from __future__ import annotations

import difflib
import math
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from dfopt.errors import InstanceError
from dfopt.ir.sparse.tensor import Coo

__all__ = ["load", "random_coo", "graph_coo", "read_mtx", "read_tns", "read_npz", "GRAPHS", "EXTENSIONS",
           "MAX_NNZ", "MAX_DIM", "MAX_DENSE", "MAX_RANK"]

#: Nonzeros of one tensor at most (stored entries of a file; a symmetric file's count doubled).
MAX_NNZ = 2**24
#: Largest size of one dimension.
MAX_DIM = 2**31
#: Entries of a dense array (a Matrix Market ``array`` file) at most.
MAX_DENSE = 2**26
#: Largest rank of a tensor.
MAX_RANK = 4
#: The file types :func:`load` reads, by extension.
EXTENSIONS = (".mtx", ".tns", ".npz")

RANDOM_FIELDS = ("seed", "shape", "density", "nnz", "rows", "alpha", "values")
ROW_KINDS = ("uniform", "power_law")
VALUE_KINDS = ("int", "float")
_FLOAT_STEPS = 1024             # random float values are multiples of 1/1024 in (0, 1]
_CHOICE_SPACE = 2**22           # flat spaces up to this size (or 4 x nnz) are sampled by rng.choice

#: The graph names ``{"graph": name}`` accepts: networkx's bundled social networks (karate club and
#: les misérables carry integer edge weights) and some classic small graphs, none needing a download.
GRAPHS = ("karate_club", "les_miserables", "florentine_families", "davis_southern_women", "krackhardt_kite",
          "petersen", "tutte", "dodecahedral", "heawood", "frucht", "pappus", "desargues", "moebius_kantor",
          "chvatal", "sedgewick_maze")


def load(spec: Any, base_dir: Path, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    """The tensor that a ``data`` field describes, as a canonical Coo.

    ``rank`` is the number of indices the tensor is used with and ``shape``, when not None, its
    declared shape; the data must agree with both. Paths are relative to ``base_dir``.

    >>> coo = load({"random": {"seed": 0, "shape": [3, 3], "density": 0.5, "values": "int"}}, Path("."), 2,
    ...            (3, 3), "/d")
    >>> coo.nnz, bool(coo.values.min() >= 1 and coo.values.max() <= 9)
    (4, True)
    >>> load("nope.mtx", Path("/tmp"), 2, None, "/tensors/A/data")
    Traceback (most recent call last):
    ...
    dfopt.errors.InstanceError: /tensors/A/data: cannot read 'nope.mtx': no such file in /tmp
    """
    if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_RANK:
        raise InstanceError(f"tensor data needs a rank from 1 to {MAX_RANK}, got {rank!r}", pointer=pointer)
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if len(shape) != rank:
            raise InstanceError(f"the declared shape {list(shape)} has {len(shape)} dimensions but the tensor has "
                                f"{rank} indices", pointer=pointer)
        _check_dims(shape, pointer, "the declared shape")
    if isinstance(spec, str):
        coo = _load_file(spec, Path(base_dir), rank, shape, pointer)
    elif isinstance(spec, dict) and set(spec) == {"random"}:
        coo = random_coo(spec["random"], rank, shape, pointer + "/random")
    elif isinstance(spec, dict) and set(spec) == {"graph"}:
        coo = graph_coo(spec["graph"], rank, shape, pointer + "/graph")
    else:
        got = (f"an object with the fields {', '.join(sorted(map(str, spec)))}" if isinstance(spec, dict)
               else f"{type(spec).__name__} {spec!r}")
        raise InstanceError("expected a file path (.mtx, .tns, .npz), {\"random\": {...}} or {\"graph\": name}, "
                            f"got {got}", pointer=pointer)
    return coo


# -- checks -------------------------------------------------------------------------------------

def _check_dims(shape: tuple[int, ...], pointer: str, what: str) -> None:
    for mode, size in enumerate(shape):
        if size < 1:
            raise InstanceError(f"{what} has dimension {size} in mode {mode}; expected sizes >= 1", pointer=pointer)
        if size > MAX_DIM:
            raise InstanceError(f"{what} has dimension {size} in mode {mode}, above the limit {MAX_DIM} (2^31)",
                                pointer=pointer)


def _check_nnz(nnz: int, pointer: str, what: str = "the data") -> None:
    if nnz > MAX_NNZ:
        raise InstanceError(f"{what} has {nnz} nonzeros, above the limit {MAX_NNZ} (2^24)", pointer=pointer)


def _check_rank(found: int, rank: int, pointer: str, what: str) -> None:
    if found != rank:
        raise InstanceError(f"{what} has rank {found} but the tensor has {rank} indices", pointer=pointer)


def _check_shape(found: tuple[int, ...], declared: tuple[int, ...] | None, pointer: str, what: str) -> None:
    if declared is not None and tuple(found) != tuple(declared):
        raise InstanceError(f"{what} has shape {list(found)} but the tensor's declared shape is {list(declared)}",
                            pointer=pointer)


def _check_values(values: np.ndarray, pointer: str, what: str) -> np.ndarray:
    """``values`` as int64 (integers, booleans) or float64; NaN and infinity refused."""
    if values.dtype.kind in "biu":
        if values.dtype.kind == "u" and len(values) and int(values.max()) >= 2**63:
            raise InstanceError(f"{what} has a value above 2^63 - 1", pointer=pointer)
        return values.astype(np.int64)
    if values.dtype.kind != "f":
        raise InstanceError(f"{what} has values of numpy type {values.dtype}; expected integers or reals",
                            pointer=pointer)
    values = values.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise InstanceError(f"{what} has the value {values[bad[0]]} at entry {int(bad[0])}; expected finite values",
                            pointer=pointer)
    return values


def _check_coords(coords: np.ndarray, shape: tuple[int, ...], pointer: str, what: str, base: int = 0,
                  lines: np.ndarray | None = None) -> None:
    """Every coordinate within ``[base, base + shape)``; the error names the entry (or line)."""
    for mode, size in enumerate(shape):
        col = coords[:, mode]
        bad = np.flatnonzero((col < base) | (col >= size + base))
        if len(bad):
            i = int(bad[0])
            where = f"line {int(lines[i])}" if lines is not None else f"entry {i}"
            raise InstanceError(f"{what}: {where} has coordinate {int(col[i])} in mode {mode}, outside "
                                f"{base}..{size + base - 1}", pointer=pointer)


def _coo(shape: tuple[int, ...], coords: np.ndarray, values: np.ndarray) -> Coo:
    return Coo(tuple(int(s) for s in shape), np.ascontiguousarray(coords, dtype=np.int64).reshape(-1, len(shape)),
               values).canonical()


def _choice_note(name: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return f", did you mean {close[0]!r}?" if close else ""


# -- files --------------------------------------------------------------------------------------

def _load_file(text: str, base_dir: Path, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    path = base_dir / text
    ext = path.suffix.lower()
    if ext not in EXTENSIONS:
        raise InstanceError(f"cannot read {text!r}: unknown extension {ext or '(none)'!r}"
                            f"{_choice_note(ext, EXTENSIONS)} (expected one of: {', '.join(EXTENSIONS)})",
                            pointer=pointer)
    if not path.is_file():
        where = "is not a file" if path.exists() else f"no such file in {path.parent}"
        raise InstanceError(f"cannot read {text!r}: {where}", pointer=pointer)
    readers = {".mtx": read_mtx, ".tns": read_tns, ".npz": read_npz}
    try:
        return readers[ext](path, rank, shape, pointer)
    except OSError as err:
        raise InstanceError(f"cannot read {text!r}: {err.strerror or err}", pointer=pointer) from err


def read_mtx(path: Path, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    """A Matrix Market file: coordinate (sparse) or array (dense), integer, real or pattern
    (values 1); a symmetric or skew-symmetric matrix is expanded to both triangles.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "m.mtx"
    >>> _ = p.write_text("%%MatrixMarket matrix coordinate pattern symmetric\\n3 3 2\\n2 1\\n3 3\\n")
    >>> coo = read_mtx(p, 2, None, "/d")
    >>> coo.coords.tolist(), coo.values.tolist()
    ([[0, 1], [1, 0], [2, 2]], [1, 1, 1])
    """
    import scipy.io

    name = path.name
    _check_rank(2, rank, pointer, f"{name!r} (a Matrix Market matrix)")
    try:
        rows, cols, entries, layout, field, symmetry = scipy.io.mminfo(str(path))
    except (ValueError, UnicodeDecodeError) as err:
        raise InstanceError(f"{name!r} does not parse as Matrix Market: {err}", pointer=pointer) from err
    _check_dims((rows, cols), pointer, repr(name))
    if field == "complex":
        raise InstanceError(f"{name!r} holds complex values; expected integer, real or pattern", pointer=pointer)
    if layout == "array":
        if rows * cols > MAX_DENSE:
            raise InstanceError(f"{name!r} is a dense {rows} x {cols} array ({rows * cols} entries), above the "
                                f"limit {MAX_DENSE} (2^26)", pointer=pointer)
    else:
        _check_nnz(entries * (1 if symmetry == "general" else 2), pointer,
                   f"{name!r} ({entries} stored entries, {symmetry})")
    _check_shape((rows, cols), shape, pointer, repr(name))
    try:
        matrix = scipy.io.mmread(str(path), spmatrix=False)
    except (ValueError, UnicodeDecodeError) as err:
        raise InstanceError(f"{name!r} does not parse as Matrix Market: {err}", pointer=pointer) from err
    if isinstance(matrix, np.ndarray):
        coords = np.argwhere(matrix != 0)
        values = matrix[matrix != 0]
    else:
        matrix = matrix.tocoo()
        coords = np.stack([np.asarray(c, dtype=np.int64) for c in matrix.coords], axis=1)
        values = np.asarray(matrix.data)
    values = (np.ones(len(values), np.int64) if field == "pattern"
              else _check_values(values.astype(np.int64) if field == "integer" else values, pointer, repr(name)))
    return _coo((rows, cols), coords, values)


def read_tns(path: Path, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    """A FROSTT ``.tns`` file: one nonzero per line, its 1-based coordinates and its value;
    ``#`` starts a comment. The shape is the declared one, else the largest coordinate of each
    mode. Values are integers when every value is a whole number, else reals.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "t.tns"
    >>> _ = p.write_text("# a 2 x 2 x 3 tensor\\n1 1 3 2.5\\n2 2 1 -1\\n")
    >>> coo = read_tns(p, 3, None, "/d")
    >>> coo.shape, coo.coords.tolist(), coo.values.tolist()
    ((2, 2, 3), [[0, 0, 2], [1, 1, 0]], [2.5, -1.0])
    """
    name = path.name
    with open(path, "rb") as fh:
        newlines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 22), b""))
    _check_nnz(newlines, pointer, f"{name!r} ({newlines} lines)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InstanceError(f"{name!r} is not UTF-8 text ({err.reason}); expected a FROSTT .tns file",
                            pointer=pointer) from err
    numbers, lines = [], []
    width = None
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if width is None:
            width = len(fields)
            _check_rank(width - 1, rank, pointer, f"{name!r} (line {number} has {width - 1} coordinates)")
        if len(fields) != width:
            raise InstanceError(f"{name!r} line {number}: expected {width} fields ({rank} coordinates and a value), "
                                f"got {len(fields)}", pointer=pointer)
        numbers.append(fields)
        lines.append(number)
    if width is None:
        if shape is None:
            raise InstanceError(f"{name!r} has no nonzeros and the tensor declares no shape; declare one",
                                pointer=pointer)
        return _coo(shape, np.zeros((0, rank), np.int64), np.zeros(0, np.int64))
    line_of = np.asarray(lines)
    coords = _tns_coords(numbers, rank, line_of, name, pointer)
    values = _tns_values([f[-1] for f in numbers], line_of, name, pointer)
    found = tuple(int(c) for c in coords.max(axis=0))
    _check_dims(found, pointer, f"{name!r}")
    if shape is None:
        shape = found
    _check_coords(coords, shape, pointer, repr(name), base=1, lines=line_of)
    return _coo(shape, coords - 1, values)


def _tns_coords(rows: list[list[str]], rank: int, lines: np.ndarray, name: str, pointer: str) -> np.ndarray:
    table = np.array([r[:rank] for r in rows], dtype=str)
    digits = np.char.isdecimal(table) & (np.char.str_len(table) <= 12)
    if not digits.all():
        i, mode = (int(v) for v in np.argwhere(~digits)[0])
        text = str(table[i, mode])
        raise InstanceError(f"{name!r} line {int(lines[i])}: coordinate {text!r} in mode {mode} is not a positive "
                            "integer (coordinates are 1-based)", pointer=pointer)
    coords = table.astype(np.int64)
    bad = np.argwhere(coords < 1)
    if len(bad):
        i, mode = (int(v) for v in bad[0])
        raise InstanceError(f"{name!r} line {int(lines[i])}: coordinate 0 in mode {mode}; FROSTT coordinates are "
                            "1-based", pointer=pointer)
    return coords


def _tns_values(texts: list[str], lines: np.ndarray, name: str, pointer: str) -> np.ndarray:
    try:
        return np.array([int(t) for t in texts], dtype=np.int64)
    except (ValueError, OverflowError):
        pass
    values = np.empty(len(texts), np.float64)
    for i, t in enumerate(texts):
        try:
            values[i] = float(t)
        except ValueError:
            raise InstanceError(f"{name!r} line {int(lines[i])}: value {t!r} is not a number",
                                pointer=pointer) from None
        if not math.isfinite(values[i]):
            raise InstanceError(f"{name!r} line {int(lines[i])}: value {t!r} is not finite", pointer=pointer)
    return values


def read_npz(path: Path, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    """An ``.npz`` file: a sparse matrix or array saved by ``scipy.sparse.save_npz``, or the
    arrays ``coords`` (nnz x rank, 0-based integers), ``values`` (nnz) and, optionally, ``shape``
    (else the declared shape, else the largest coordinate of each mode plus one).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "t.npz"
    >>> np.savez(p, coords=np.array([[0, 1], [2, 0]]), values=np.array([1.5, 2.0]), shape=np.array([3, 2]))
    >>> read_npz(p, 2, None, "/d").to_dense().tolist()
    [[0.0, 1.5], [0.0, 0.0], [2.0, 0.0]]
    """
    name = path.name
    try:
        with zipfile.ZipFile(path) as zf:
            headers = _npz_headers(zf)
    except (zipfile.BadZipFile, EOFError, ValueError) as err:
        raise InstanceError(f"{name!r} does not read as an .npz archive: {err}", pointer=pointer) from err
    if "format" in headers:
        return _read_scipy_npz(path, headers, rank, shape, pointer)
    missing = [k for k in ("coords", "values") if k not in headers]
    if missing:
        raise InstanceError(f"{name!r} holds the arrays {', '.join(sorted(headers)) or '(none)'}; expected a "
                            "scipy.sparse.save_npz file or the arrays coords, values and shape", pointer=pointer)
    (cshape, ckind), (vshape, _) = headers["coords"], headers["values"]
    if len(cshape) != 2 or len(vshape) != 1 or cshape[0] != vshape[0]:
        raise InstanceError(f"{name!r}: expected coords of shape (nnz, rank) and values of shape (nnz,), got "
                            f"{list(cshape)} and {list(vshape)}", pointer=pointer)
    _check_rank(cshape[1], rank, pointer, f"{name!r} (coords with {cshape[1]} columns)")
    _check_nnz(cshape[0], pointer, repr(name))
    if ckind not in "iu":
        raise InstanceError(f"{name!r}: coords must be integers, got numpy kind {ckind!r}", pointer=pointer)
    with np.load(path, allow_pickle=False) as z:
        coords, values = z["coords"].astype(np.int64), z["values"]
        stored = tuple(int(s) for s in z["shape"].ravel()) if "shape" in headers else None
    values = _check_values(values, pointer, repr(name))
    if stored is not None:
        _check_rank(len(stored), rank, pointer, f"{name!r} (its shape {list(stored)})")
        _check_dims(stored, pointer, repr(name))
        _check_shape(stored, shape, pointer, repr(name))
    if np.any(coords < 0):
        i, mode = (int(v) for v in np.argwhere(coords < 0)[0])
        raise InstanceError(f"{name!r}: entry {i} has the negative coordinate {int(coords[i, mode])} in mode {mode}",
                            pointer=pointer)
    if stored is None and shape is None:
        if not len(coords):
            raise InstanceError(f"{name!r} has no nonzeros, no shape array and the tensor declares no shape",
                                pointer=pointer)
        stored = tuple(int(c) + 1 for c in coords.max(axis=0))
        _check_dims(stored, pointer, repr(name))
    full = stored or shape or ()
    _check_coords(coords, full, pointer, repr(name))
    return _coo(full, coords, values)


def _read_scipy_npz(path: Path, headers: dict, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    import scipy.sparse

    name = path.name
    entries = headers.get("data", ((0,), "f"))[0]
    _check_nnz(int(entries[0]) if entries else 0, pointer, repr(name))
    try:
        matrix = scipy.sparse.load_npz(path)
    except (ValueError, KeyError, TypeError) as err:
        raise InstanceError(f"{name!r} does not read as a scipy.sparse .npz: {err}", pointer=pointer) from err
    stored = tuple(int(s) for s in matrix.shape)
    _check_rank(len(stored), rank, pointer, f"{name!r} (a scipy sparse {'x'.join(map(str, stored))})")
    _check_dims(stored, pointer, repr(name))
    _check_shape(stored, shape, pointer, repr(name))
    coo = matrix.tocoo()
    coords = np.stack([np.asarray(c, dtype=np.int64) for c in coo.coords], axis=1)
    return _coo(stored, coords, _check_values(np.asarray(coo.data), pointer, repr(name)))


def _npz_headers(zf: zipfile.ZipFile) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each array's shape and dtype kind, from its ``.npy`` header alone (nothing is loaded)."""
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    for member in zf.namelist():
        if not member.endswith(".npy"):
            continue
        with zf.open(member) as fh:
            version = np.lib.format.read_magic(fh)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            array_shape, _, dtype = read(fh)
        out[os.path.splitext(member)[0]] = (tuple(array_shape), dtype.kind)
    return out


# -- random tensors -----------------------------------------------------------------------------

def random_coo(spec: Any, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    """A seeded random tensor, from ``{"seed", "shape", "density" | "nnz", "rows", "alpha",
    "values"}`` (``pointer`` is the ``random`` object's).

    - ``seed`` (default 0) seeds a ``numpy.random.Generator`` (PCG64): one spec gives one tensor.
    - ``shape`` (else the declared shape); ``nnz`` exact, or ``density`` giving
      ``nnz = round(density x size)``. The positions are distinct: a uniform sample without
      replacement, by ``rng.choice`` over a small flat index space and otherwise by drawing
      coordinates and rejecting repeats until exactly ``nnz`` distinct positions are drawn.
    - ``rows``: ``"uniform"`` (default; every position equally likely) or ``"power_law"``: mode-0
      fibers (rows) of Zipf-like lengths, the row of rank ``r`` (rows ranked in a random order)
      weighted ``(r + 1) ** -alpha`` (``alpha`` default 1.5), lengths apportioned exactly to
      ``nnz`` and capped by the size of a row; positions uniform within each row.
    - ``values``: ``"int"`` (default; uniform over 1..9) or ``"float"``: uniform over the
      multiples of 1/1024 in (0, 1], rounded so that arithmetic on them is exact in float64: a
      product of two is a multiple of 2^-20 below 1, so sums of up to 2^33 such products carry no
      rounding error and a result compares exactly with a reference. No value is zero, so the
      tensor has exactly ``nnz`` nonzeros.

    >>> a = random_coo({"seed": 3, "shape": [50, 40], "nnz": 100, "rows": "power_law"}, 2, None, "/r")
    >>> b = random_coo({"seed": 3, "shape": [50, 40], "nnz": 100, "rows": "power_law"}, 2, None, "/r")
    >>> a.nnz, a.equals(b, 0, 0), int(np.bincount(a.coords[:, 0]).max()) > 10
    (100, True, True)
    >>> random_coo({"seed": 1, "shape": [4], "nnz": 2, "values": "float"}, 1, None, "/r").values * 1024 % 1
    array([0., 0.])
    """
    if not isinstance(spec, dict):
        raise InstanceError(f"expected an object with the fields {', '.join(RANDOM_FIELDS)}, got "
                            f"{type(spec).__name__}", pointer=pointer)
    for key in spec:
        if key not in RANDOM_FIELDS:
            raise InstanceError(f"unknown field {key!r}{_choice_note(str(key), RANDOM_FIELDS)} (expected one of: "
                                f"{', '.join(RANDOM_FIELDS)})", pointer=f"{pointer}/{key}")
    seed = _integer(spec.get("seed", 0), f"{pointer}/seed", "seed", 0, 2**63 - 1)
    full = _random_shape(spec, rank, shape, pointer)
    size = math.prod(full)
    nnz = _random_nnz(spec, size, pointer)
    rows = spec.get("rows", "uniform")
    if rows not in ROW_KINDS:
        raise InstanceError(f"rows {rows!r}{_choice_note(str(rows), ROW_KINDS)}: expected one of "
                            f"{', '.join(ROW_KINDS)}", pointer=f"{pointer}/rows")
    if "alpha" in spec and rows != "power_law":
        raise InstanceError("alpha sets the power law of row lengths; it needs rows 'power_law'",
                            pointer=f"{pointer}/alpha")
    alpha = spec.get("alpha", 1.5)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha <= 10:
        raise InstanceError(f"alpha must be a number in (0, 10], got {alpha!r}", pointer=f"{pointer}/alpha")
    kind = spec.get("values", "int")
    if kind not in VALUE_KINDS:
        raise InstanceError(f"values {kind!r}{_choice_note(str(kind), VALUE_KINDS)}: expected one of "
                            f"{', '.join(VALUE_KINDS)}", pointer=f"{pointer}/values")
    if rows == "power_law" and rank < 2:
        raise InstanceError("rows 'power_law' sets the lengths of the rows of a matrix or higher-order tensor; a "
                            "vector has no rows (use 'uniform')", pointer=f"{pointer}/rows")
    rng = np.random.default_rng(seed)
    if rows == "uniform":
        coords = _uniform_positions(rng, full, nnz)
    else:
        coords = _power_law_positions(rng, full, nnz, float(alpha))
    values: np.ndarray
    if kind == "int":
        values = rng.integers(1, 10, size=nnz, dtype=np.int64)
    else:
        values = rng.integers(1, _FLOAT_STEPS + 1, size=nnz, dtype=np.int64) / _FLOAT_STEPS
    return _coo(full, coords, values)


def _integer(value: Any, pointer: str, what: str, low: int, high: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InstanceError(f"{what} must be an integer, got {value!r}", pointer=pointer)
    if not low <= value <= high:
        raise InstanceError(f"{what} must be from {low} to {high}, got {value}", pointer=pointer)
    return value


def _random_shape(spec: dict, rank: int, shape: tuple[int, ...] | None, pointer: str) -> tuple[int, ...]:
    if "shape" not in spec:
        if shape is None:
            raise InstanceError("random data needs a shape: give random.shape or declare the tensor's shape",
                                pointer=pointer)
        return shape
    given = spec["shape"]
    at = f"{pointer}/shape"
    if not isinstance(given, list) or not given:
        raise InstanceError(f"shape must be a list of positive integers, got {given!r}", pointer=at)
    full = tuple(_integer(s, f"{at}/{i}", f"dimension {i}", 1, MAX_DIM) for i, s in enumerate(given))
    _check_rank(len(full), rank, at, f"the random shape {list(full)}")
    _check_shape(full, shape, at, "the random data")
    return full


def _random_nnz(spec: dict, size: int, pointer: str) -> int:
    if ("nnz" in spec) == ("density" in spec):
        raise InstanceError("random data needs exactly one of nnz and density, got "
                            f"{'both' if 'nnz' in spec else 'neither'}", pointer=pointer)
    if "nnz" in spec:
        nnz = _integer(spec["nnz"], f"{pointer}/nnz", "nnz", 0, 2**63 - 1)
        _check_nnz(nnz, f"{pointer}/nnz", "the random data")
        if nnz > size:
            raise InstanceError(f"nnz {nnz} is more than the {size} positions of the shape", pointer=f"{pointer}/nnz")
        return nnz
    density = spec["density"]
    if isinstance(density, bool) or not isinstance(density, int | float) or not 0 <= density <= 1:
        raise InstanceError(f"density must be a number from 0 to 1, got {density!r}", pointer=f"{pointer}/density")
    nnz = min(size, round(density * size))
    _check_nnz(nnz, f"{pointer}/density", f"density {density} of {size} positions")
    return nnz


def _uniform_positions(rng: np.random.Generator, shape: tuple[int, ...], nnz: int) -> np.ndarray:
    """``nnz`` distinct coordinates, every subset of that size equally likely."""
    size = math.prod(shape)
    if size <= max(_CHOICE_SPACE, 4 * nnz):
        flat = rng.choice(size, size=nnz, replace=False)
        return np.stack(np.unravel_index(flat, shape), axis=1).astype(np.int64)
    kept = _encode(np.zeros((0, len(shape)), np.int64), shape)
    while len(kept) < nnz:
        draw = np.stack([rng.integers(0, s, size=nnz - len(kept), dtype=np.int64) for s in shape], axis=1)
        kept = _merge(kept, _encode(draw, shape))
    return _decode(kept, shape)


def _encode(coords: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A sortable key per coordinate row: the flat index when the space fits in int64, else the
    rows themselves as a structured view."""
    if math.prod(shape) < 2**62:
        key = np.zeros(len(coords), np.int64)
        for mode, size in enumerate(shape):
            key = key * size + coords[:, mode]
        return key
    return np.ascontiguousarray(coords, dtype=np.int64).view([(f"m{i}", np.int64) for i in range(len(shape))]).ravel()


def _decode(keys: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if keys.dtype.names is None:
        return np.stack(np.unravel_index(keys, shape), axis=1).astype(np.int64).reshape(-1, len(shape))
    return keys.view(np.int64).reshape(-1, len(shape))


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct keys, sorted (a sort and a neighbour comparison: faster here than np.unique)."""
    keys = np.sort(keys)
    if len(keys) < 2:
        return keys
    return keys[np.concatenate([[True], keys[1:] != keys[:-1]])]


def _merge(kept: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The sorted distinct union of ``kept`` (sorted, distinct) and ``keys``. Drawing coordinates
    and keeping the distinct ones until there are exactly as many as wanted (each round draws only
    the shortfall, so it never overshoots) gives a uniform sample without replacement."""
    if keys.dtype.names is not None:
        return _distinct(np.concatenate([kept, keys]))
    new = _distinct(keys)
    if len(kept):
        at = np.minimum(np.searchsorted(kept, new), len(kept) - 1)
        new = new[kept[at] != new]
    return np.sort(np.concatenate([kept, new]), kind="stable")


def _power_law_positions(rng: np.random.Generator, shape: tuple[int, ...], nnz: int, alpha: float) -> np.ndarray:
    """``nnz`` distinct coordinates whose rows (mode 0) have Zipf-like lengths."""
    inner = shape[1:]
    width = math.prod(inner)
    rows, lengths = _row_lengths(rng, shape[0], width, nnz, alpha)
    dense = lengths * 4 > width                     # rows dense enough to sample by shuffling their cells
    parts = [np.zeros((0, len(shape)), np.int64)]
    if dense.any():
        parts.append(_full_rows(rng, inner, rows[dense], lengths[dense]))
    if (~dense).any():
        parts.append(_sparse_rows(rng, inner, rows[~dense], lengths[~dense]))
    return np.concatenate(parts)


def _row_lengths(rng: np.random.Generator, n_rows: int, width: int, nnz: int,
                 alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty rows (ascending) and their lengths: lengths summing to ``nnz``, each at most
    ``width``, proportional to ``(r + 1) ** -alpha`` for the row of rank ``r`` in a random order of
    the rows. Water-filling (the heaviest rows are capped first), then largest remainders for the
    integer parts."""
    active = min(n_rows, nnz)                       # only the heaviest nnz rows can be non-empty
    cap = min(width, nnz)
    weights = np.arange(1, active + 1, dtype=np.float64) ** -alpha
    by_rank = np.zeros(active, np.int64)
    capped, left = 0, nnz
    tail = np.cumsum(weights[::-1])[::-1]           # tail[k] = sum of weights[k:]
    while capped < active and left * weights[capped] >= cap * tail[capped]:
        by_rank[capped] = cap
        capped, left = capped + 1, left - cap
    if capped < active and left > 0:
        share = left * weights[capped:] / tail[capped]
        base = np.minimum(np.floor(share).astype(np.int64), cap)
        order = np.argsort(-(share - base), kind="stable")
        extra = left - int(base.sum())
        if extra > 0:
            base[order[base[order] < cap][:extra]] += 1
        by_rank[capped:] = base
    slack = nnz - int(by_rank.sum())               # float rounding only: fix a few rows, heaviest first
    for r in range(active) if slack > 0 else range(active - 1, -1, -1):
        if slack == 0:
            break
        step = min(slack, cap - int(by_rank[r])) if slack > 0 else -min(-slack, int(by_rank[r]))
        by_rank[r] += step
        slack -= step
    ranked = rng.permutation(_uniform_positions(rng, (n_rows,), active)[:, 0])   # random rows, heaviest first
    keep = by_rank > 0
    order = np.argsort(ranked[keep])
    return ranked[keep][order], by_rank[keep][order]


def _full_rows(rng: np.random.Generator, inner: tuple[int, ...], rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per row, the ``length`` cells of least random key among its ``width`` cells (the rows here
    have ``4 x length > width``, so the cells number less than ``4 x nnz``)."""
    width = math.prod(inner)
    cell_row = np.repeat(np.arange(len(rows), dtype=np.int64), width)
    keys = (cell_row << 32) | rng.integers(0, 2**32, size=len(cell_row), dtype=np.int64)
    order = np.argsort(keys)                        # grouped by row, cells in a random order within a row
    rank_in_row = np.arange(len(order)) - cell_row * width
    pick = order[rank_in_row < lengths[cell_row]]
    which, cell = pick // width, pick % width
    return np.stack([rows[which], *np.unravel_index(cell, inner)], axis=1).astype(np.int64)


def _sparse_rows(rng: np.random.Generator, inner: tuple[int, ...], rows: np.ndarray,
                 lengths: np.ndarray) -> np.ndarray:
    """Per row, ``length`` distinct inner coordinates, drawn per mode with repeats rejected (each
    row has ``4 x length <= width``, so a round rejects at most a quarter of its draws)."""
    shape = (int(rows.max()) + 1, *inner)
    kept = _encode(np.zeros((0, len(shape)), np.int64), shape)
    have = np.zeros(len(rows), np.int64)
    while True:
        deficit = lengths - have
        if not deficit.any():
            return _decode(kept, shape)
        draw_rows = np.repeat(rows, deficit)
        draw = [rng.integers(0, size, size=len(draw_rows), dtype=np.int64) for size in inner]
        kept = _merge(kept, _encode(np.stack([draw_rows, *draw], axis=1), shape))
        have = np.bincount(np.searchsorted(rows, _decode(kept, shape)[:, 0]), minlength=len(rows))


# -- graphs -------------------------------------------------------------------------------------

def graph_coo(name: Any, rank: int, shape: tuple[int, ...] | None, pointer: str) -> Coo:
    """The adjacency matrix of one of networkx's bundled graphs (:data:`GRAPHS`; a trailing
    ``_graph`` is accepted): rows and columns in networkx's node order, each undirected edge in
    both directions, values the integer edge weights where the graph has them (karate club,
    les misérables), else 1.

    >>> coo = graph_coo("les_miserables", 2, None, "/g")
    >>> coo.shape, coo.nnz, int(coo.values.max())
    ((77, 77), 508, 31)
    """
    import networkx as nx

    if not isinstance(name, str):
        raise InstanceError(f"expected a graph name (one of: {', '.join(GRAPHS)}), got {name!r}", pointer=pointer)
    key = name.removesuffix("_graph")
    if key not in GRAPHS:
        raise InstanceError(f"unknown graph {name!r}{_choice_note(key, GRAPHS)} (expected one of: "
                            f"{', '.join(GRAPHS)})", pointer=pointer)
    _check_rank(2, rank, pointer, f"graph {key!r} (an adjacency matrix)")
    graph = getattr(nx, f"{key}_graph")()
    n = graph.number_of_nodes()
    _check_shape((n, n), shape, pointer, f"graph {key!r}")
    weighted = any("weight" in d for _, _, d in graph.edges(data=True))
    matrix = nx.to_scipy_sparse_array(graph, nodelist=list(graph), weight="weight" if weighted else None,
                                      dtype=np.int64, format="coo")
    coords = np.stack([np.asarray(matrix.row, np.int64), np.asarray(matrix.col, np.int64)], axis=1)
    return _coo((n, n), coords, np.asarray(matrix.data, np.int64))
