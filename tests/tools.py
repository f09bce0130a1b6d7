"""The real tools beside the repository (``../shared/tools``): AMD's csim model of ``hls_stream.h``
and mlir-aie's checker. Tests that need one call :func:`tool`; outside this repository's CI the
folder may be missing and the test is skipped with the reason, while ``.ci/run`` sets
``DFOPT_REQUIRE_TOOLS=1`` so that a missing tool fails the run instead. ``DFOPT_TOOLS`` points
elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tools_dir() -> Path:
    return Path(os.environ.get("DFOPT_TOOLS", ROOT.parent / "shared" / "tools"))


def tool(name: str) -> Path:
    """The folder of tool ``name``; skips the test (fails it under DFOPT_REQUIRE_TOOLS=1) when
    the folder is not there."""
    path = tools_dir() / name
    if not path.is_dir():
        why = (f"{path} not found: this test runs {name} from the tools folder beside the "
               "repository (set DFOPT_TOOLS to its location)")
        if os.environ.get("DFOPT_REQUIRE_TOOLS") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return path
