"""Sparse tensors: coordinate lists (:class:`Coo`) and fibertree storage in a level format
(:class:`SparseTensor`, TACO's construction), both built with vectorised NumPy.

A fibertree level ``k`` holds positions; each position of level ``k - 1`` (the root for ``k = 0``)
owns one fiber of level ``k``: the coordinates of mode ``format.order[k]`` stored under it and
their child positions. ``vals`` holds one value per position of the last level.

>>> coo = Coo((3, 4), np.array([[0, 1], [2, 0], [2, 3]]), np.array([5, 6, 7]))
>>> t = SparseTensor.from_coo("A", coo, named("csr", 2))
>>> {name: arr.tolist() for name, arr in t.arrays().items()}
{'1.pos': [0, 1, 1, 3], '1.crd': [1, 0, 3], 'vals': [5, 6, 7]}
>>> t.to_coo().equals(coo)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dfopt.ir.sparse.formats import Format, named

MAX_POSITIONS = 2**26          # positions of one level that a dense expansion may create
_INT64_KEYS = 2**62            # linear keys up to this product of sizes fit in int64


# --- rows of coordinates as sortable keys -------------------------------------------------------

def _row_keys(coords: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """One int64 key per row of ``coords`` whose order is the rows' lexicographic order (column 0
    most significant): the row-major linear index when it fits, otherwise the rank of the row."""
    n, m = coords.shape
    if m == 0:
        return np.zeros(n, dtype=np.int64)
    if math.prod(max(int(s), 1) for s in sizes) < _INT64_KEYS:
        keys = coords[:, 0].astype(np.int64, copy=True)
        for col in range(1, m):
            keys *= max(int(sizes[col]), 1)
            keys += coords[:, col]
        return keys
    _, inverse = np.unique(coords, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def _sum_rows(coords: np.ndarray, values: np.ndarray, sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted lexicographically, duplicates summed, zeros dropped."""
    if len(values) == 0:
        return coords.reshape(0, coords.shape[1]), values
    keys = _row_keys(coords, sizes)
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        perm = np.argsort(keys)
        keys, coords, values = keys[perm], coords[perm], values[perm]
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        if len(starts) < len(keys):
            coords, values = coords[starts], np.add.reduceat(values, starts)
    keep = values != 0
    if not bool(keep.all()):
        coords, values = coords[keep], values[keep]
    return coords, values


def _as_values(values) -> np.ndarray:
    """Values as int64 (integer and boolean data) or float64."""
    arr = np.asarray(values).reshape(-1)
    if arr.dtype.kind in "biu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        return arr.astype(np.float64, copy=False)
    raise ValueError(f"expected integer or floating-point values, got dtype {arr.dtype}")


# --- coordinate lists ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Coo:
    """A coordinate list: ``coords`` is ``(nnz, rank)`` int64, ``values`` int64 or float64.

    Entries may be unsorted, repeated (they add up) or zero until :meth:`canonical`.

    >>> Coo((2, 2), [[1, 0], [0, 1], [1, 0]], [1, 2, 3]).canonical().coords.tolist()
    [[0, 1], [1, 0]]
    """

    shape: tuple[int, ...]
    coords: np.ndarray
    values: np.ndarray

    def __post_init__(self):
        shape = tuple(int(s) for s in self.shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"expected a shape of non-negative sizes, got {shape}")
        values = _as_values(self.values)
        coords = np.asarray(self.coords, dtype=np.int64)
        if coords.size != len(values) * len(shape) or (coords.ndim == 2 and coords.shape[1] != len(shape)):
            raise ValueError(f"expected coords of shape ({len(values)}, {len(shape)}) for {len(values)} values of a "
                             f"rank-{len(shape)} tensor, got {coords.shape}")
        coords = coords.reshape(len(values), len(shape))
        if len(values):
            low, high = coords.min(axis=0, initial=0), coords.max(axis=0, initial=0)
            for mode, size in enumerate(shape):
                if low[mode] < 0 or high[mode] >= size:
                    bad = low[mode] if low[mode] < 0 else high[mode]
                    raise ValueError(f"coordinate {bad} of mode {mode} is outside 0..{size - 1} (shape {shape})")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "coords", coords)
        object.__setattr__(self, "values", values)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def nnz(self) -> int:
        """Stored entries (after :meth:`canonical`: the nonzeros)."""
        return len(self.values)

    def canonical(self) -> Coo:
        """Sorted lexicographically by mode 0, 1, ..., duplicates summed, explicit zeros dropped.

        >>> Coo((3,), [[2], [0], [2]], [1.5, 0.0, 2.5]).canonical().values.tolist()
        [4.0]
        """
        coords, values = _sum_rows(self.coords, self.values, self.shape)
        return Coo(self.shape, coords, values)

    def to_dense(self) -> np.ndarray:
        """The dense array (duplicates added).

        >>> Coo((2, 2), [[1, 0]], [3]).to_dense().tolist()
        [[0, 0], [3, 0]]
        """
        out = np.zeros(self.shape, dtype=self.values.dtype)
        if self.rank == 0:
            out[()] = self.values.sum()
        else:
            np.add.at(out, tuple(self.coords.T), self.values)
        return out

    @classmethod
    def from_dense(cls, array) -> Coo:
        """The nonzeros of a dense array.

        >>> Coo.from_dense(np.array([[0, 2], [0, 0]])).coords.tolist()
        [[0, 1]]
        """
        arr = np.asarray(array)
        if arr.ndim == 0:
            nonzero = arr.reshape(1)[arr.reshape(1) != 0]
            return cls((), np.zeros((len(nonzero), 0), dtype=np.int64), nonzero)
        idx = np.nonzero(arr)
        return cls(arr.shape, np.stack(idx, axis=1), arr[idx])

    @classmethod
    def from_scipy(cls, matrix) -> Coo:
        """A scipy.sparse matrix or array as a canonical Coo.

        >>> import scipy.sparse as sp
        >>> Coo.from_scipy(sp.eye(2, format="csr")).values.tolist()
        [1.0, 1.0]
        """
        m = matrix.tocoo()
        coords = np.stack([np.asarray(m.row, dtype=np.int64), np.asarray(m.col, dtype=np.int64)], axis=1)
        return cls(tuple(m.shape), coords, np.asarray(m.data)).canonical()

    def to_scipy(self):
        """A matrix as ``scipy.sparse.coo_array``.

        >>> Coo((2, 3), [[0, 2]], [1.0]).to_scipy().toarray().tolist()
        [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
        """
        import scipy.sparse as sp

        if self.rank != 2:
            raise ValueError(f"to_scipy needs a matrix (rank 2), got rank {self.rank}")
        return sp.coo_array((self.values, (self.coords[:, 0], self.coords[:, 1])), shape=self.shape)

    def equals(self, other: Coo, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
        """Same shape and, entry by entry, ``|a - b| <= atol + rtol * |b|`` (missing entries are 0).

        >>> Coo((2,), [[0]], [1.0]).equals(Coo((2,), [[0], [1]], [1.0 + 1e-12, 0.0]))
        True
        """
        if self.shape != other.shape:
            return False
        a, b = self.canonical(), other.canonical()
        coords = np.concatenate([a.coords, b.coords])
        keys = _row_keys(coords, self.shape)
        union, inverse = np.unique(keys, return_inverse=True)
        inverse = inverse.reshape(-1)
        dtype = np.result_type(a.values, b.values)
        va, vb = np.zeros(len(union), dtype=dtype), np.zeros(len(union), dtype=dtype)
        va[inverse[:a.nnz]] = a.values
        vb[inverse[a.nnz:]] = b.values
        if dtype.kind == "i":
            return bool(np.array_equal(va, vb))      # integer data is exact
        return bool(np.all(np.abs(va - vb) <= atol + rtol * np.abs(vb)))


# --- fibertree storage --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Level:
    """One storage level: ``kind`` in ``LEVEL_KINDS``, ``size`` the dimension of the mode it stores;
    compressed levels have ``pos`` (parent positions + 1 entries) and ``crd``, singleton levels ``crd``."""

    kind: str
    size: int
    pos: np.ndarray | None = None
    crd: np.ndarray | None = None
    unique: bool = True

    def pos_array(self) -> np.ndarray:
        """``pos``; a ValueError if the level has none (a compressed level must)."""
        if self.pos is None:
            raise ValueError(f"this {self.kind} level (size {self.size}) has no pos array; a compressed level "
                             "needs one")
        return self.pos

    def crd_array(self) -> np.ndarray:
        """``crd``; a ValueError if the level has none (a compressed or singleton level must)."""
        if self.crd is None:
            raise ValueError(f"this {self.kind} level (size {self.size}) has no crd array; a compressed or singleton "
                             "level needs one")
        return self.crd


@dataclass(frozen=True, eq=False)
class SparseTensor:
    """A tensor stored in a level format; see the module docstring.

    >>> t = SparseTensor.from_coo("x", Coo((5,), [[1], [3]], [2.0, 4.0]), named("dense", 1))
    >>> t.vals.tolist(), t.fiber(0, 0)[0].tolist()
    ([0.0, 2.0, 0.0, 4.0, 0.0], [0, 1, 2, 3, 4])
    """

    name: str
    shape: tuple[int, ...]
    format: Format
    levels: list[Level]
    vals: np.ndarray

    @property
    def rank(self) -> int:
        return len(self.shape)

    @classmethod
    def from_coo(cls, name: str, coo: Coo, fmt: Format | str) -> SparseTensor:
        """Store ``coo`` (any order, duplicates add up) in format ``fmt`` (a :class:`Format` or a
        name for :func:`~dfopt.ir.sparse.formats.named`).

        >>> t = SparseTensor.from_coo("B", Coo((2, 3), [[1, 2], [0, 0], [1, 0]], [1, 2, 3]), "coo")
        >>> [t.levels[0].pos.tolist(), t.levels[0].crd.tolist(), t.levels[1].crd.tolist(), t.vals.tolist()]
        [[0, 3], [0, 1, 1], [0, 0, 2], [2, 3, 1]]
        """
        fmt = named(fmt, coo.rank) if isinstance(fmt, str) else fmt
        if fmt.rank != coo.rank:
            raise ValueError(f"tensor {name!r}: format {fmt} has {fmt.rank} levels but the data has rank {coo.rank}")
        sizes = tuple(coo.shape[m] for m in fmt.order)
        crds, values = _sum_rows(coo.coords[:, list(fmt.order)], coo.values, sizes)   # canonical in storage order
        levels, parent, count = _build_levels(name, fmt, sizes, crds)
        vals = np.zeros(count, dtype=values.dtype)
        vals[parent] = values
        return cls(name, coo.shape, fmt, levels, vals)

    def positions(self, k: int) -> int:
        """Number of positions of level ``k`` (``k = -1``: the root, one position).

        >>> SparseTensor.from_coo("A", Coo((3, 4), [[0, 1]], [1]), "csr").positions(0)
        3
        """
        if not -1 <= k < self.rank:
            raise IndexError(f"tensor {self.name!r} has levels 0..{self.rank - 1}, not {k}")
        count = 1
        for level in self.levels[:k + 1]:
            count = count * level.size if level.kind == "dense" else len(level.crd_array())
        return count

    def fiber(self, k: int, parent: int) -> tuple[np.ndarray, np.ndarray]:
        """The coordinates and child positions of level ``k`` under position ``parent`` of level
        ``k - 1`` (for ``k = 0`` the parent is the root, 0).

        >>> t = SparseTensor.from_coo("A", Coo((3, 4), [[0, 1], [2, 0], [2, 3]], [5, 6, 7]), "csr")
        >>> [a.tolist() for a in t.fiber(1, 2)]
        [[0, 3], [1, 2]]
        """
        if not 0 <= k < self.rank:
            raise IndexError(f"tensor {self.name!r} has levels 0..{self.rank - 1}, not {k}")
        if not 0 <= parent < self.positions(k - 1):
            raise IndexError(f"tensor {self.name!r}: level {k - 1} has positions 0..{self.positions(k - 1) - 1}, "
                             f"not {parent}")
        level = self.levels[k]
        if level.kind == "dense":
            crds = np.arange(level.size, dtype=np.int64)
            return crds, parent * level.size + crds
        if level.kind == "compressed":
            pos = level.pos_array()
            lo, hi = int(pos[parent]), int(pos[parent + 1])
            return level.crd_array()[lo:hi], np.arange(lo, hi, dtype=np.int64)
        return level.crd_array()[parent:parent + 1], np.array([parent], dtype=np.int64)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every stored array: ``"<level>.pos"``, ``"<level>.crd"`` (0-based storage levels) and ``"vals"``.

        >>> sorted(SparseTensor.from_coo("A", Coo((2, 2), [[0, 1]], [1]), "coo").arrays())
        ['0.crd', '0.pos', '1.crd', 'vals']
        """
        out = {}
        for k, level in enumerate(self.levels):
            if level.pos is not None:
                out[f"{k}.pos"] = level.pos
            if level.crd is not None:
                out[f"{k}.crd"] = level.crd
        out["vals"] = self.vals
        return out

    def to_coo(self) -> Coo:
        """The nonzeros as a canonical Coo (stored zeros dropped).

        >>> SparseTensor.from_coo("A", Coo((2, 2), [[1, 1]], [4]), "dense").to_coo().coords.tolist()
        [[1, 1]]
        """
        q = np.flatnonzero(self.vals)
        if self.rank == 0:
            return Coo((), np.zeros((len(q), 0), dtype=np.int64), self.vals[q])
        coords = np.empty((len(q), self.rank), dtype=np.int64)
        values = self.vals[q]
        for k in range(self.rank - 1, -1, -1):
            level = self.levels[k]
            if level.kind == "dense":
                coords[:, self.format.order[k]] = q % level.size
                q = q // level.size
            elif level.kind == "compressed":
                coords[:, self.format.order[k]] = level.crd_array()[q]
                q = np.searchsorted(level.pos_array(), q, side="right") - 1
            else:
                coords[:, self.format.order[k]] = level.crd_array()[q]
        return Coo(self.shape, coords, values).canonical()


def _build_levels(name: str, fmt: Format, sizes: tuple[int, ...], crds: np.ndarray):
    """Levels of the nonzeros ``crds`` (storage-order columns, rows sorted, unique); returns the
    levels, each nonzero's position in the last level and the number of last-level positions."""
    nnz = len(crds)
    parent = np.zeros(nnz, dtype=np.int64)      # each nonzero's position in the level above
    count = 1                                    # positions of the level above
    levels: list[Level] = []
    for k, kind in enumerate(fmt.levels):
        size, col = sizes[k], crds[:, k]
        if kind == "dense":
            if count * size > MAX_POSITIONS:
                raise ValueError(f"tensor {name!r}: dense level {k} (mode {fmt.order[k]}, size {size}) would hold "
                                 f"{count * size} positions, more than the limit of {MAX_POSITIONS}; use a "
                                 f"compressed level")
            parent, count = parent * size + col, count * size
            levels.append(Level("dense", size))
        elif kind == "compressed":
            last = k
            while last + 1 < fmt.rank and fmt.levels[last + 1] == "singleton":
                last += 1        # a non-unique level keys its positions by the singleton coordinates below it
            new = np.ones(nnz, dtype=bool)
            if nnz > 1:
                new[1:] = (parent[1:] != parent[:-1]) | np.any(crds[1:, k:last + 1] != crds[:-1, k:last + 1], axis=1)
            starts = np.flatnonzero(new)
            pos = np.zeros(count + 1, dtype=np.int64)
            np.cumsum(np.bincount(parent[starts], minlength=count), out=pos[1:])
            levels.append(Level("compressed", size, pos, col[starts], fmt.unique(k)))
            parent, count = np.cumsum(new) - 1, len(starts)
        else:
            crd = np.zeros(count, dtype=np.int64)
            crd[parent] = col
            levels.append(Level("singleton", size, None, crd, fmt.unique(k)))
    return levels, parent, count
