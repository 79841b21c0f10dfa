"""Fixtures the framework adapter tests share."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="module")
def testers() -> Any:
    """``rruletest.testers``, imported when a test first asks for it (not at collection)."""
    import rruletest.testers

    return rruletest.testers
