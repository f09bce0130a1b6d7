"""Write the shipped matrices of ``instances/sparse/data/`` from packages that bundle them.

Run from the repository root: ``python benchmarks/make_sparse_data.py``. It needs pyamg and pygsp
besides dfopt's own dependencies (``pip install pyamg pygsp``; neither is a dependency of dfopt:
only this script reads them). Every matrix is written by ``scipy.io.mmwrite`` with a comment naming
the package, its license and the call that produced it; a symmetric matrix is stored as one
triangle (Matrix Market ``symmetric``), which :func:`dfopt.ir.sparse.data.load` expands again. A
matrix that would take the folder over :data:`BUDGET` bytes is skipped and reported. The folder's
``README.md`` lists every file with its source, license, shape and nonzeros.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

OUT = Path(__file__).resolve().parent.parent / "instances" / "sparse" / "data"
BUDGET = 3 * 2**20       # bytes for all the .mtx files together


def _pyamg(name: str) -> sp.coo_array:
    from pyamg.gallery import load_example

    return sp.coo_array(load_example(name)["A"])


def _pygsp(name: str) -> sp.coo_array:
    import pygsp

    graph = getattr(pygsp.graphs, name)()
    return sp.coo_array(graph.W).astype(np.int64 if graph.W.dtype == bool else np.float64)


def _networkx(name: str) -> sp.coo_array:
    import networkx as nx

    graph = getattr(nx, f"{name}_graph")()
    return nx.to_scipy_sparse_array(graph, nodelist=list(graph), weight="weight", dtype=np.int64, format="coo")


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


#: (file stem, package, license, producing call, loader, Matrix Market field (None: the data's own))
MATRICES: list[tuple[str, str, str, str, Callable[[], sp.coo_array], str | None]] = [
    ("pyamg_bar", "pyamg", "MIT", "pyamg.gallery.load_example('bar')['A']", lambda: _pyamg("bar"), None),
    ("pyamg_airfoil", "pyamg", "MIT", "pyamg.gallery.load_example('airfoil')['A']", lambda: _pyamg("airfoil"),
     None),
    ("pyamg_knot", "pyamg", "MIT", "pyamg.gallery.load_example('knot')['A']", lambda: _pyamg("knot"), None),
    ("pyamg_unit_square", "pyamg", "MIT", "pyamg.gallery.load_example('unit_square')['A']",
     lambda: _pyamg("unit_square"), None),
    ("pygsp_minnesota", "pygsp", "BSD-3-Clause", "pygsp.graphs.Minnesota().W (road network; boolean weights)",
     lambda: _pygsp("Minnesota"), "pattern"),
    ("pygsp_bunny", "pygsp", "BSD-3-Clause", "pygsp.graphs.Bunny().W (Stanford bunny point cloud, Gaussian kernel "
     "weights)", lambda: _pygsp("Bunny"), None),
    ("networkx_karate_club", "networkx", "BSD-3-Clause", "networkx.karate_club_graph() adjacency, integer weights "
     "(networkx.to_scipy_sparse_array, node order list(G))", lambda: _networkx("karate_club"), None),
    ("networkx_les_miserables", "networkx", "BSD-3-Clause", "networkx.les_miserables_graph() adjacency, integer "
     "weights (networkx.to_scipy_sparse_array, node order list(G))", lambda: _networkx("les_miserables"), None),
]


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rows, used = [], 0
    for stem, package, license_, call, make, field in MATRICES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            matrix = make()
        matrix.sum_duplicates()
        path = OUT / f"{stem}.mtx"
        comment = (f" {stem}: {call}\n source package: {package} {_version(package)} ({license_} license); "
                   "written by dfopt benchmarks/make_sparse_data.py with scipy.io.mmwrite")
        symmetric = matrix.shape[0] == matrix.shape[1] and (matrix != matrix.T).nnz == 0
        scipy.io.mmwrite(path, matrix, comment=comment, field=field, symmetry="symmetric" if symmetric else "general")
        size = path.stat().st_size
        if used + size > BUDGET:
            path.unlink()
            print(f"{stem}: skipped, {size} bytes would take the folder over {BUDGET} bytes")
            continue
        used += size
        shape = "x".join(map(str, matrix.shape))
        rows.append(f"| `{stem}.mtx` | `{call}` | {package} {_version(package)} | {license_} | {shape} | "
                    f"{matrix.nnz} | {size} |")
        print(f"{stem}: {shape}, {matrix.nnz} nonzeros, {size} bytes")
    (OUT / "README.md").write_text(
        "# Shipped sparse matrices\n\n"
        "Written by `python benchmarks/make_sparse_data.py` from packages that bundle the data (no download). "
        "Symmetric matrices are stored as one triangle; nonzeros are counted after expansion, as "
        "`dfopt.ir.sparse.data.load` reads them. Each file's comment names its source.\n\n"
        "| file | source | package | license | shape | nonzeros | bytes |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n")
    print(f"total {used} bytes in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
