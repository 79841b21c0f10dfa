"""Test-suite configuration shared by every test module.

Hypothesis runs derandomized, so the suite is deterministic: a property that fails, fails on
every run and every machine. Doctests in the package run with numpy as ``np``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "rruletest",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("rruletest")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict[str, object]) -> None:
    doctest_namespace["np"] = np
