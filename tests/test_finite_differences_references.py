"""Values, error estimates and steps agree with those saved from main before the engine rework
(``tests/fd_reference_cases.py``), within a few ulps, wherever the method did not change."""

from __future__ import annotations

import numpy as np
import pytest
from fd_reference_cases import PATH, cases, compute

SAVED = dict(np.load(PATH))
NOW = compute()


def test_every_saved_case_is_recomputed():
    assert sorted(SAVED) == sorted(cases())


@pytest.mark.parametrize("name", sorted(cases()))
def test_unchanged_within_a_few_ulps(name):
    saved, now = SAVED[name], NOW[name]
    for what, a, b in zip(("value", "error", "step"), saved, now, strict=True):
        finite = np.isfinite(a)
        np.testing.assert_array_equal(finite, np.isfinite(b), err_msg=f"{name} {what}")
        np.testing.assert_array_max_ulp(a[finite], b[finite], maxulp=4)
