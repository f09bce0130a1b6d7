"""Test-wide settings. Hypothesis draws new random examples on every local run (that is how it
finds bugs); CI sets ``DFOPT_HYPOTHESIS_PROFILE=ci`` (``.ci/run``), which derandomizes it, so a
clean clone's run is the same every time and a failure reproduces."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("DFOPT_HYPOTHESIS_PROFILE", "dev"))
