"""Tests for rruletest.finite_differences.steps: the blockwise kernels agree with their plain
formulas (the fast ways of computing them change no bit)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.finite_differences import central_fdm
from rruletest.finite_differences.steps import _absmax, _combine_kernel, _mag_kernel

BOUND = central_fdm(5, 1).bound_estimator
FLOATS = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@given(
    hnp.arrays(np.float64, (7, 20), elements=FLOATS),
    hnp.arrays(np.float64, 20, elements=st.floats(1e-50, 1e3)),
)
def test_magnitudes_scaled_once_equal_the_largest_scaled_sum(rows, h):
    assert BOUND is not None
    kw = {"weights": BOUND.neighbourhood_weights(), "q": BOUND.q, "anchor": 3}
    mag, fm, good = _mag_kernel(list(rows), h, **kw)
    est, fm2, _ = _combine_kernel(list(rows), h, **kw)  # scaled sums, then the largest
    np.testing.assert_array_equal(mag, _absmax(est))
    np.testing.assert_array_equal(fm, fm2)
    np.testing.assert_array_equal(good, np.isfinite(rows).all(axis=0))


def test_finiteness_follows_every_value():
    rows = [np.array([1.0, 1.0, np.nan, 2.0]), np.array([1.0, np.inf, 0.0, -np.inf])]
    _, _, good = _combine_kernel(rows, np.ones(4), weights=np.array([-1.0, 1.0]), q=1, anchor=0)
    assert good.tolist() == [True, False, False, False]
    complex_rows = [np.array([1e308 + 1e308j]), np.array([1.0 + 0j])]  # |z| overflows
    _, _, good = _combine_kernel(
        complex_rows, np.ones(1), weights=np.array([-1.0, 1.0]), q=1, anchor=0
    )
    assert good.tolist() == [True]
