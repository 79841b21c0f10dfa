"""Tests for rruletest.finite_differences.steps: the blockwise kernels agree with their plain
formulas (the fast ways of computing them change no bit)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest import RuleSet, RuleTestFailure, test_scalar
from rruletest.finite_differences import central_fdm
from rruletest.finite_differences.estimation import run
from rruletest.finite_differences.kernels import (
    absmax,
    accuracy,
    combine_kernel,
    mag_kernel,
    restricted,
    scaled,
    scatter,
)
from rruletest.finite_differences.problem import Problem

BOUND = central_fdm(5, 1).bound_estimator
FLOATS = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@given(
    hnp.arrays(np.float64, (7, 20), elements=FLOATS),
    hnp.arrays(np.float64, 20, elements=st.floats(1e-50, 1e3)),
)
def test_magnitudes_scaled_once_equal_the_largest_scaled_sum(rows, h):
    assert BOUND is not None
    kw = {"weights": BOUND.neighbourhood_weights(), "q": BOUND.q, "anchor": 3}
    mag, fm, good = mag_kernel(list(rows), h, **kw)
    est, fm2, _ = combine_kernel(list(rows), h, **kw)  # scaled sums, then the largest
    np.testing.assert_array_equal(mag, absmax(est))
    np.testing.assert_array_equal(fm, fm2)
    np.testing.assert_array_equal(good, np.isfinite(rows).all(axis=0))


def test_finiteness_follows_every_value():
    rows = [np.array([1.0, 1.0, np.nan, 2.0]), np.array([1.0, np.inf, 0.0, -np.inf])]
    _, _, good = combine_kernel(rows, np.ones(4), weights=np.array([-1.0, 1.0]), q=1, anchor=0)
    assert good.tolist() == [True, False, False, False]
    complex_rows = [np.array([1e308 + 1e308j]), np.array([1.0 + 0j])]  # |z| overflows
    _, _, good = combine_kernel(
        complex_rows, np.ones(1), weights=np.array([-1.0, 1.0]), q=1, anchor=0
    )
    assert good.tolist() == [True]


# ------------------------------------------------------------------------------------------------
# re-work on a subset: only the flagged elements are evaluated again, with the same result
# ------------------------------------------------------------------------------------------------


class _Counted:
    """``np.log``, counting the elements its calls computed."""

    def __init__(self) -> None:
        self.elements = 0

    def __call__(self, t: np.ndarray) -> np.ndarray:
        self.elements += np.size(t)
        out: np.ndarray = np.log(t)
        return out


def _with_special(n: int) -> np.ndarray:
    """``n`` ordinary points of ``log``, with a few where it looks flat at the default scale
    (``1e8``: the step grows) and a few near its domain edge (``1e-6``: the step shrinks)."""
    x = np.random.default_rng(0).uniform(0.5, 2.0, n)
    x[[3, n // 2, n - 2]] = [1e8, 3e9, 7e7]
    x[[5, n // 3]] = [1e-6, 2e-7]
    return x


def _elements(x: np.ndarray) -> int:
    f = _Counted()
    central_fdm(5, 1).estimate(f, x)
    return f.elements


def test_a_few_flagged_elements_cost_no_full_size_evaluations():
    # Chunked (above 2 * CHUNK elements) and not: growing and shrinking steps of a few
    # elements re-evaluate those elements only, so the work is that of ordinary points.
    extra = []
    for n in (200, 40_000):
        ordinary = _elements(np.random.default_rng(0).uniform(0.5, 2.0, n))
        assert ordinary == 11 * n  # the centre, 6 bound points, 4 stencil points
        extra.append(_elements(_with_special(n)) - ordinary)
    # The same few elements are re-worked whatever n (full-size passes would add 18 * n).
    assert extra[0] == extra[1] < 200


def test_subset_re_work_matches_full_re_runs():
    fdm = central_fdm(5, 1)
    for n in (200, 40_000):
        x = _with_special(n)
        sub = run(fdm, Problem(np.log, x, restrict=lambda i, x=x: (np.log, x[i], np.log(x)[i])))
        full = run(fdm, Problem(np.log, x))  # no subsets: every re-run is full-size
        for a, b in zip(sub, full, strict=True):
            # BLAS may round a weighted sum over a subset differently: an ulp or two at most.
            np.testing.assert_array_max_ulp(a, b, maxulp=4)
        assert sub.step[3] > 1e3
        assert sub.step[5] < 1e-7
        assert np.all(np.abs(sub.value - 1 / x) <= sub.error)


def test_subset_re_work_matches_element_by_element():
    fdm = central_fdm(5, 1)
    n = 40_000
    x = _with_special(n)
    whole = fdm.estimate(np.log, x)
    for i in [3, 5, 7, n // 3, n // 2, n - 2]:
        alone = fdm.estimate(np.log, x[i : i + 1])  # one element: no subset, full passes
        assert whole.step[i] == alone.step[0], i
        assert whole.error[i] == alone.error[0], i
        # The weighted sums go through BLAS, whose summation for one element may round
        # differently from that for many (as it did before subsets): within an ulp or two.
        np.testing.assert_array_max_ulp(whole.value[i], alone.value[0], maxulp=2)


def test_restricted_and_scatter():
    t0 = np.array([1.0, 2.0, 3.0])
    prob = Problem(np.log, t0, restrict=lambda i: (np.log, t0[i], np.log(t0)[i]))
    mask = np.array([False, True, True])
    part = restricted(prob, mask)
    assert part is not None
    index, sub = part
    assert index.tolist() == [1, 2]
    assert sub.t0.tolist() == [2.0, 3.0]
    assert restricted(prob, np.ones(3, dtype=bool)) is None  # everything: the whole problem
    assert restricted(Problem(np.log, np.ones(3)), mask) is None  # no subsets
    assert scatter(index, np.array([5.0, 6.0]), (3,), np.inf).tolist() == [np.inf, 5.0, 6.0]


@given(st.floats(1e7, 1e12), st.floats(0.5, 8.0), st.sampled_from([1.0, -1.0]))
def test_a_straight_line_far_from_zero_is_exact(t0, slope, sign):
    # Its p-th derivative is measured exactly 0: no truncation, the widest step is best (the
    # default one was round-off of t0's size: 3 * t at 1e12 gave 2.56, error 1.0).
    est = central_fdm(5, 1).estimate(lambda t: slope * t, sign * t0)
    assert abs(est.value - slope) <= 1e-9 * slope
    assert est.error <= 1e-8 * slope
    assert abs(est.value - slope) <= est.error


def _triple(x):
    return 3.0 * x


@pytest.mark.parametrize("x", [1e9, 1e12])
def test_a_wrong_linear_rule_far_from_zero_is_caught(x):
    right, wrong = RuleSet(), RuleSet()
    right.scalar_rule(_triple, lambda x, y: 3.0)
    wrong.scalar_rule(_triple, lambda x, y: 3.009)  # 0.3% off: passed at 1e9 and 1e12 before
    test_scalar(_triple, x, rrule_f=right.rrule, frule_f=right.frule, rng=0)
    with pytest.raises(RuleTestFailure) as info:
        test_scalar(_triple, x, rrule_f=wrong.rrule, frule_f=wrong.frule, rng=0)
    assert "rel diff 0.003" in str(info.value)


def test_powers_that_overflow_are_taken_through_logarithms():
    m = central_fdm(5, 1)  # error c1 / h + c2 * h**4: h**4 overflows at h = 1e85
    h = np.array([1e85, 1e85, 2.0])
    c1 = np.array([1e-16, 0.0, 1e-16])
    c2 = np.array([1e-300, 0.0, 1e-300])
    bound = accuracy(m, h, c1, c2)
    assert np.all(np.isfinite(bound))
    np.testing.assert_allclose(bound, [1e-101 + 1e40, 0.0, 5e-17 + 16e-300], rtol=1e-12)
    assert scaled(np.array([0.0, np.nan]), np.array([np.inf, 1e300]), 2).tolist()[0] == 0.0
    assert np.isnan(scaled(np.array([np.nan]), np.array([1e300]), 2)).all()


@pytest.mark.parametrize(
    ("f", "df", "x"),
    [
        (np.log, lambda x, y: 1.0 / x, 1e100),
        (np.log, lambda x, y: 1.0 / x, 1e150),
        (_triple, lambda x, y: 3.0, 1e150),
        (np.sqrt, lambda x, y: 0.5 / y, 1e100),
        (np.reciprocal, lambda x, y: -y * y, 1e100),
    ],
)
def test_right_rules_pass_at_huge_magnitudes(f, df, x):
    # Steps of 1e85 and more: their powers overflowed and the error bounds came out NaN
    # (4 problems found for a right rule of log at 1e100).
    rules = RuleSet()
    rules.scalar_rule(f, df)
    test_scalar(f, x, rrule_f=rules.rrule, frule_f=rules.frule, rng=0, check_complex=False)
    est = central_fdm(5, 1).estimate(f, x)
    exact = df(x, f(x))
    assert abs(est.value - exact) <= est.error <= 1e-5 * abs(exact)  # (it was 1e-2 of log's)


def test_a_wrong_rule_at_a_huge_magnitude_is_caught():
    wrong = RuleSet()
    wrong.scalar_rule(np.log, lambda x, y: 1.01 / x)
    with pytest.raises(RuleTestFailure) as info:  # (the default atol passes a slope of 1e-100)
        test_scalar(np.log, 1e100, rrule_f=wrong.rrule, frule_f=wrong.frule, rng=0, atol=0.0)
    assert str(info.value).count("abs diff 6.32e-102, rel diff 0.01") == 1
