"""Trace files: the rows of a recorded run (``kernel, stream, token, cycle``, one per write or read)
read from a CSV or an NPZ into a :class:`Trace` (:func:`read_trace`), every number checked.
:mod:`dfopt.instance.traces` attaches a trace to a graph.

A CSV's header names the four columns, in any order; an NPZ holds four 1-D arrays of those names
(names as strings, tokens and cycles as integers, or floats with whole values). Row ``i`` in an
error's pointer (``/trace/row/<i>``) is the i-th data row, from 0, the header and empty lines not
counted. More than ``max_rows`` rows are refused before any row is parsed: a CSV's lines are
counted first, an NPZ's array headers read without the arrays. A CSV is parsed by numpy in
chunks of :data:`_CHUNK_ROWS` lines (about a million rows a second); only a chunk numpy refuses is
read again row by row, to say which row is at fault.
"""

from __future__ import annotations

import csv
import itertools
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dfopt.errors import InstanceError
from dfopt.io import StrPath
from dfopt.schema import did_you_mean

__all__ = ["Trace", "read_trace", "COLUMNS", "MAX_ROWS"]

#: The columns of a trace (the CSV header, the NPZ array names).
COLUMNS = ("kernel", "stream", "token", "cycle")
#: Rows read at most (a 16M-row trace takes about 10 s and 1 GiB).
MAX_ROWS = 2**24
_CHUNK_ROWS = 1 << 20          # CSV lines parsed per numpy call
_NPZ_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True, eq=False)
class Trace:
    """The rows of a trace: per row a kernel and a stream (codes into ``kernel_names`` and
    ``stream_names``), a token index and a cycle (int64 arrays of one length)."""

    kernel_names: tuple[str, ...]
    stream_names: tuple[str, ...]
    kernel: np.ndarray
    stream: np.ndarray
    token: np.ndarray
    cycle: np.ndarray

    @classmethod
    def from_rows(cls, kernel: Sequence[str], stream: Sequence[str], token: npt.ArrayLike,
                  cycle: npt.ArrayLike) -> Trace:
        """A trace from its four columns (names as strings, tokens and cycles as integers >= 0).

        >>> Trace.from_rows(["a", "b"], ["e", "e"], [0, 0], [5, 7]).first
        5
        """
        k_codes, k_names = _codes(list(kernel))
        s_codes, s_names = _codes(list(stream))
        tok, cyc = _integers(np.asarray(token), "token"), _integers(np.asarray(cycle), "cycle")
        if not len(k_codes) == len(s_codes) == len(tok) == len(cyc):
            raise InstanceError(f"expected four columns of one length, got {len(k_codes)} kernels, {len(s_codes)} "
                                f"streams, {len(tok)} tokens and {len(cyc)} cycles", pointer="/trace")
        return cls(tuple(k_names), tuple(s_names), k_codes, s_codes, tok, cyc)

    def __len__(self) -> int:
        return len(self.token)

    @property
    def first(self) -> int:
        """The design's first event (least cycle); 0 for an empty trace."""
        return int(self.cycle.min()) if len(self.cycle) else 0


def read_trace(path: StrPath, max_rows: int = MAX_ROWS) -> Trace:
    """The trace in ``path``: an NPZ (by its zip signature) with 1-D arrays ``kernel``, ``stream``
    (strings), ``token`` and ``cycle`` (integers), or else a CSV whose header names the columns
    ``kernel,stream,token,cycle`` (in any order). More than ``max_rows`` rows are refused before
    the rows are read (the CSV's lines are counted first, the NPZ's array headers read).

    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(p, "w").write("kernel,stream,token,cycle\\na,e,0,10\\nb,e,0,12\\n")
    >>> t = read_trace(p)
    >>> len(t), t.kernel_names, t.cycle.tolist()
    (2, ('a', 'b'), [10, 12])
    """
    shown = repr(os.fspath(path))
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
        if magic == _NPZ_MAGIC:
            return _read_npz(path, max_rows)
        return _read_csv(path, max_rows)
    except FileNotFoundError as err:
        raise InstanceError(f"cannot read trace file {shown}: no such file", pointer="/trace") from err
    except UnicodeDecodeError as err:
        raise InstanceError(f"trace file {shown} is not UTF-8 text ({err.reason}); expected a CSV or an NPZ",
                            pointer="/trace") from err
    except OSError as err:
        raise InstanceError(f"cannot read trace file {shown}: {err.strerror or err}", pointer="/trace") from err


def _too_many(rows: int, max_rows: int) -> InstanceError:
    return InstanceError(f"the trace has {rows} rows, above the limit of {max_rows} (max_rows); record fewer "
                         "iterations or split the design", pointer="/trace")


def _read_csv(path: StrPath, max_rows: int) -> Trace:
    with open(path, "rb") as fh:
        newlines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 22), b""))
    if newlines - 1 > max_rows:
        raise _too_many(newlines - 1, max_rows)
    with open(path, encoding="utf-8-sig", newline="") as fh:
        order = _header(fh.readline())
        kernels: dict[str, int] = {}
        streams: dict[str, int] = {}
        parts, rows = [], 0
        while True:
            lines = list(itertools.islice(fh, _CHUNK_ROWS))
            if not lines:
                break
            k, s, tok, cyc = _parse_chunk(lines, order, rows)
            rows += len(tok)
            if rows > max_rows:
                raise _too_many(rows, max_rows)
            parts.append((_merge_codes(k, kernels), _merge_codes(s, streams), tok, cyc))
    cols = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int64) for i in range(4)]
    return Trace(tuple(kernels), tuple(streams), *cols)


def _header(line: str) -> list[int]:
    """The position of each of :data:`COLUMNS` in the header line."""
    names = [n.strip() for n in next(csv.reader([line]), [])]
    expected = ",".join(COLUMNS)
    if not line.strip():
        raise InstanceError(f"the trace is empty; expected a CSV whose first line is the header {expected}",
                            pointer="/trace")
    unknown = [n for n in names if n not in COLUMNS]
    if unknown or sorted(names) != sorted(COLUMNS):
        what = (f"unknown column {unknown[0]!r}{did_you_mean(unknown[0], COLUMNS)}" if unknown
                else f"the columns {','.join(names)}")
        raise InstanceError(f"expected the header {expected} (one row per write or read), got {what}",
                            pointer="/trace/header")
    return [names.index(c) for c in COLUMNS]


def _parse_chunk(lines: list[str], order: list[int], first_row: int) -> tuple:
    """The four columns of some CSV lines, by one numpy parse (names as objects, numbers as int64);
    a chunk that does not parse is re-read with the csv module to say which row is at fault."""
    dtype = [(f"f{i}", "i8" if COLUMNS[order.index(i)] in ("token", "cycle") else object) for i in range(4)]
    try:
        table = np.loadtxt(lines, delimiter=",", dtype=dtype, quotechar='"', comments=None, ndmin=1)
    except ValueError:
        raise _chunk_fault(lines, order, first_row) from None
    cols = [table[f"f{order[i]}"] for i in range(4)]
    return cols[0].tolist(), cols[1].tolist(), _integers(cols[2], "token", first_row), \
        _integers(cols[3], "cycle", first_row)


def _chunk_fault(lines: list[str], order: list[int], first_row: int) -> InstanceError:
    """The error of a chunk numpy could not parse: a row of another width, or a number that is not
    a non-negative integer (this path reads the chunk row by row; it runs only on bad input)."""
    rows = [r for r in csv.reader(lines) if r]
    for i, row in enumerate(rows):
        if len(row) != len(COLUMNS):
            return InstanceError(f"expected {len(COLUMNS)} fields ({','.join(COLUMNS)}), got {len(row)}: {row!r}",
                                 pointer=f"/trace/row/{first_row + i}")
    for column in ("token", "cycle"):
        values = np.array([r[order[COLUMNS.index(column)]] for r in rows], dtype=str)
        text = np.char.strip(values)
        digits = np.char.isdecimal(np.char.lstrip(text, "+"))
        long = np.char.str_len(text) > 18
        bad = np.flatnonzero(~digits | long)
        if len(bad):
            i = int(bad[0])
            why = ("is negative" if text[i].startswith("-") and text[i][1:].isdecimal()
                   else "is too large" if digits[i] else "is not an integer")
            return InstanceError(f"{column} {str(values[i])!r} {why}; expected an integer from 0 to 10^18",
                                 pointer=f"/trace/row/{first_row + i}")
    return InstanceError("the CSV does not parse (a quoted field across lines?); expected one event per line",
                         pointer=f"/trace/row/{first_row}")


def _integers(values: np.ndarray, column: str, first_row: int = 0) -> np.ndarray:
    """``values`` as int64, every one a whole number >= 0; else the error names the first row."""
    values = np.asarray(values).ravel()
    if values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values) | (values != np.floor(values)) | (np.abs(values) > 2**53))
        if len(bad):
            i = int(bad[0])
            raise InstanceError(f"{column} {float(values[i])!r} is not a whole number; expected an integer >= 0",
                                pointer=f"/trace/row/{first_row + i}")
    elif values.dtype.kind not in "iu" and len(values):
        raise InstanceError(f"expected integers for {column}, got values of numpy type {values.dtype}",
                            pointer=f"/trace/{column}")
    if values.dtype.kind == "u" and len(values) and int(values.max()) >= 2**63:
        i = int(np.argmax(values >= 2**63))
        raise InstanceError(f"{column} {int(values[i])} is too large; expected at most 2^63 - 1",
                            pointer=f"/trace/row/{first_row + i}")
    out = values.astype(np.int64)
    negative = np.flatnonzero(out < 0)
    if len(negative):
        i = int(negative[0])
        raise InstanceError(f"{column} {int(out[i])} is negative; expected an integer >= 0 (token index, or cycle "
                            "of the event)", pointer=f"/trace/row/{first_row + i}")
    return out


def _codes(names: list) -> tuple[np.ndarray, list[str]]:
    """Per row the index of its name among the distinct names (in order of first appearance)."""
    table: dict[str, int] = {}
    return _merge_codes(names, table), list(table)


def _merge_codes(names: list, table: dict) -> np.ndarray:
    """:func:`_codes` against a table shared by the chunks of one file (a dict look-up per row, in C)."""
    for name in dict.fromkeys(names):
        if not isinstance(name, str):
            raise InstanceError(f"expected names as strings, got {name!r}", pointer="/trace")
        table.setdefault(name, len(table))
    return np.fromiter(map(table.__getitem__, names), dtype=np.int64, count=len(names))


def _read_npz(path: StrPath, max_rows: int) -> Trace:
    try:
        with zipfile.ZipFile(path) as zf:
            lengths = _npz_lengths(zf, max_rows)
        with np.load(path, allow_pickle=False) as z:
            arrays = {name: z[name] for name in COLUMNS}
    except (zipfile.BadZipFile, EOFError) as err:
        raise InstanceError(f"the NPZ does not read: {err}", pointer="/trace") from err
    except ValueError as err:          # an object array: numpy refuses it without pickle
        raise InstanceError(f"the NPZ does not read without pickle ({err}); save names as a unicode array "
                            "(np.array(names, dtype=str))", pointer="/trace") from err
    if len(set(lengths.values())) > 1:
        text = ", ".join(f"{n} {v}" for n, v in lengths.items())
        raise InstanceError(f"expected four arrays of one length, got {text}", pointer="/trace")
    names = {}
    for column in ("kernel", "stream"):
        a = arrays[column]
        if a.dtype.kind == "S":
            try:
                a = np.char.decode(a, "utf-8")
            except UnicodeDecodeError as err:
                raise InstanceError(f"{column} names are not UTF-8 ({err.reason})", pointer=f"/trace/{column}") \
                    from err
        if a.dtype.kind != "U":
            raise InstanceError(f"expected {column} names as strings, got numpy type {a.dtype}",
                                pointer=f"/trace/{column}")
        names[column] = a.tolist()
    return Trace.from_rows(names["kernel"], names["stream"], arrays["token"], arrays["cycle"])


def _npz_lengths(zf: zipfile.ZipFile, max_rows: int) -> dict[str, int]:
    """Each array's length, from its ``.npy`` header alone: the rows are counted before they are
    loaded."""
    members = {os.path.splitext(n)[0]: n for n in zf.namelist()}
    missing = [c for c in COLUMNS if c not in members]
    extra = sorted(set(members) - set(COLUMNS))
    if missing or extra:
        what = f"no array {missing[0]!r}" if missing else f"an unknown array {extra[0]!r}"
        raise InstanceError(f"expected the arrays {', '.join(COLUMNS)}, got {what}", pointer="/trace")
    out = {}
    for column in COLUMNS:
        with zf.open(members[column]) as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, _ = read(fh)
        if len(shape) != 1:
            raise InstanceError(f"expected a 1-D array, got shape {list(shape)}", pointer=f"/trace/{column}")
        if shape[0] > max_rows:
            raise _too_many(shape[0], max_rows)
        out[column] = int(shape[0])
    return out
