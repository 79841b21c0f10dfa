"""float16 references through float64 copies: 10%- and 1%-wrong rules caught, correct ones pass."""

from __future__ import annotations

import numpy as np
import pytest

from rruletest.finite_differences import broadcast_jvp, broadcast_vjp
from rruletest.finite_differences.half import (
    LIFTED_NOTE,
    half_broadcast_jvp,
    half_broadcast_vjp,
    half_jvp_estimate,
    half_vjp_estimate,
    has_half,
    lift,
)
from rruletest.tolerances import default_tolerances

ERROR_FACTOR = 10.0  # as the testers widen their tolerance by the engine's error estimate
F16 = np.dtype(np.float16)


def passes(actual, est, rtol=None, atol=None):
    """The testers' comparison: |actual - expected| <= atol + rtol |expected| + 10 error."""
    r, a = default_tolerances(F16)
    r, a = (r if rtol is None else rtol), (a if atol is None else atol)
    expected = np.asarray(est.value, dtype=np.float64)
    tol = a + r * np.abs(expected) + ERROR_FACTOR * np.asarray(est.error, dtype=np.float64)
    return bool(np.all(np.abs(np.asarray(actual, dtype=np.float64) - expected) <= tol))


def draw(seed, n=1000):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3.0, 3.0, n).astype(np.float16)
    ybar = rng.uniform(-9.0, 9.0, n).astype(np.float16)
    return x, ybar


def pullback(x, ybar, k=1.0):
    """A float16 rule for sin (``k`` times wrong), computed in float16 as a rule would."""
    return (ybar * np.cos(x) * np.float16(k)).astype(np.float16)


def test_the_float16_engine_alone_cannot_see_2_percent():
    x, ybar = draw(0)
    (est,) = broadcast_vjp(None, np.sin, ybar, x)
    # Issue 15 saw a 10% wrong rule pass; the engine's float16 steps now see that much, but a
    # 2% error still hides in float16 finite differences' own errors.
    assert not passes(pullback(x, ybar, 1.1), est)
    assert passes(pullback(x, ybar, 1.02), est)
    rel = np.asarray(est.error, np.float64) / np.maximum(np.abs(ybar * np.cos(x)), 1.0)
    assert np.median(rel) > 1e-3


@pytest.mark.parametrize("seed", range(20))
def test_broadcast_vjp_catches_wrong_rules_and_passes_correct_ones(seed):
    x, ybar = draw(seed)
    (est,), note = half_broadcast_vjp(None, np.sin, ybar, x)
    assert note == LIFTED_NOTE
    assert np.all(np.asarray(est.error) < 1e-8)
    assert passes(pullback(x, ybar), est)
    assert not passes(pullback(x, ybar, 1.1), est)
    assert not passes(pullback(x, ybar, 1.02), est)
    # 1% is within reach once the tolerance is tightened to what float16 rounding needs
    assert passes(pullback(x, ybar), est, rtol=3e-3, atol=3e-3)
    assert not passes(pullback(x, ybar, 1.01), est, rtol=3e-3, atol=3e-3)


@pytest.mark.parametrize("seed", range(20))
def test_broadcast_jvp_catches_wrong_rules_and_passes_correct_ones(seed):
    x, xdot = draw(seed)

    def g(a, b):
        return np.exp(a / 4) * b

    b = np.float16(1.5)
    est, note = half_broadcast_jvp(None, g, (x, xdot), (b, np.float16(0.0)))
    assert note == LIFTED_NOTE
    rule = (xdot * np.exp(x / np.float16(4)) / np.float16(4) * b).astype(np.float16)
    assert passes(rule, est)
    assert not passes(rule * np.float16(1.1), est)
    assert not passes(rule * np.float16(1.02), est)


def test_dense_vjp_and_jvp_of_a_non_elementwise_function():
    x, ybar = draw(3, n=6)

    def f(v):
        return np.cumsum(np.sin(v))

    (est,), note = half_vjp_estimate(None, f, ybar, x)
    assert note == LIFTED_NOTE
    exact = np.cos(x.astype(np.float64)) * np.cumsum(ybar[::-1].astype(np.float64))[::-1]
    np.testing.assert_allclose(est.value, exact, rtol=1e-8)
    jest, note = half_jvp_estimate(None, f, (x, ybar))
    assert note == LIFTED_NOTE
    exact_j = np.cumsum(np.cos(x.astype(np.float64)) * ybar)
    np.testing.assert_allclose(jest.value, exact_j, rtol=1e-8)


def test_not_lifted_when_f_refuses_float64():
    def only_half(v):
        if v.dtype != np.float16:
            raise TypeError("float16 only")
        return np.sin(v)

    x, ybar = draw(1, n=50)
    lifted = lift(only_half, x)
    assert not lifted.used
    assert lifted.note == "f does not accept float64 copies (TypeError: float16 only)"
    (est,), note = half_broadcast_vjp(None, only_half, ybar, x)
    assert est.value.dtype == np.float16
    assert note.startswith(
        "float16 reference (f does not accept float64 copies (TypeError: float16 only)): its "
        "error estimates reach "
    )
    assert note.endswith("; rule errors smaller than ten times that are not detected")


def test_not_lifted_when_f_works_in_float16_inside():
    def inside(v):
        return np.sin(v.astype(np.float16))

    assert lift(inside, np.ones(3, np.float16)).note == (
        "f returns float16 even for float64 inputs"
    )


def test_not_lifted_when_f_computes_another_function_in_float64():
    def other(v):
        return np.sin(v) if v.dtype == np.float16 else np.cos(v)

    lifted = lift(other, np.array([0.5, 1.0], np.float16))
    assert not lifted.used
    assert lifted.note.startswith("f of float64 copies is not f of the float16 inputs rounded")


def test_a_staircase_in_float64_keeps_the_float16_reference():
    # float64 in, float64 out, but float16 inside: the float64 differences see a staircase.
    def stairs(v):
        return np.sin(v.astype(np.float16)).astype(v.dtype)

    x, ybar = draw(2, n=200)
    (est,), note = half_broadcast_vjp(None, stairs, ybar, x)
    assert note != LIFTED_NOTE
    (coarse,) = broadcast_vjp(None, stairs, ybar, x)
    np.testing.assert_array_equal(est.value, coarse.value)


def test_structures_and_other_dtypes():
    assert has_half((1.0, {"a": np.float16(2.0)}))
    assert not has_half((1.0, np.zeros(2, np.float32)))
    lifted = lift(lambda a, b: a["w"] * b, {"w": np.ones(2, np.float16)}, 2.0)
    assert lifted.used
    assert lifted.xs[0]["w"].dtype == np.float64
    est, note = half_broadcast_jvp(None, np.sin, (np.zeros(2, np.float32), np.ones(2)))
    assert note == ""  # nothing to lift: one run, as broadcast_jvp
    direct = broadcast_jvp(None, np.sin, (np.zeros(2, np.float32), np.ones(2)))
    np.testing.assert_array_equal(est.value, direct.value)


def test_a_given_float16_output_is_not_used_for_the_float64_copies():
    x, ybar = draw(4, n=100)
    y = np.sin(x)
    (est,), note = half_broadcast_vjp(None, np.sin, ybar, x, y=y)
    assert note == LIFTED_NOTE
    assert np.all(np.asarray(est.error) < 1e-8)
    jest, note = half_broadcast_jvp(None, np.sin, (x, ybar), y=y)
    assert note == LIFTED_NOTE
    assert np.all(np.asarray(jest.error) < 1e-8)
