"""Measuring a function's own noise: float32 kernels, truncated series, solvers, and np.sin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rruletest.finite_differences import broadcast_jvp, central_fdm
from rruletest.finite_differences.noise import NOISY, NoiseLevel, measure_noise

EPS64 = float(np.finfo(np.float64).eps)


def float32_kernel(v):
    """A float64 function computing in float32 inside."""
    return np.sin(v.astype(np.float32)).astype(np.float64)


def log_series(x):
    """-log(1 - x) as sum x**k / k, truncated at the first term below 1e-8."""
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    k = np.arange(1, 4000)
    terms = x[:, None] ** k / k
    return np.sum(np.where(terms >= 1e-8, terms, 0.0), axis=1)


def cube_root_solver(x):
    """The root of r**3 + r = x by bisection, stopped at an interval of 1e-8."""
    lo, hi = np.zeros_like(x), np.full_like(x, 10.0)
    while np.max(hi - lo) > 1e-8:
        mid = (lo + hi) / 2
        below = mid**3 + mid - x < 0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


@pytest.mark.parametrize("x", [np.array([1.0]), np.linspace(-3.0, 3.0, 50)])
def test_float32_kernel_inside_float64(x):
    level = measure_noise(float32_kernel, x)
    assert level.noisy
    assert level.eps == EPS64
    eps32 = float(np.finfo(np.float32).eps)
    assert eps32 / 100 < level.relative < eps32


@pytest.mark.parametrize("x0", [0.7, 0.9, 0.99])
def test_series_truncated_at_1e_8(x0):
    level = measure_noise(log_series, np.array([x0]))
    assert level.noisy
    assert 1e-12 < level.relative < 1e-8
    assert measure_noise(log_series, np.array([0.3])).noisy is False  # few terms: no jumps


def test_iterative_solver_noise_explains_the_mismatch_and_factor_fixes_it():
    x = np.array([2.0, 3.0, 5.0])
    r = cube_root_solver(x)
    exact = 1 / (3 * r**2 + 1)
    est = broadcast_jvp(None, cube_root_solver, (x, np.ones(3)))
    mismatch = est.value - exact
    assert np.any(np.abs(mismatch) > 100 * est.error)  # the error estimate does not see it
    level = measure_noise(cube_root_solver, x)
    assert level.noisy
    assert 1e-10 < level.relative < 1e-8
    assert level.explains(mismatch, est.step[0])
    better = broadcast_jvp(central_fdm(5, 1, factor=level.factor()), cube_root_solver, (x, 1.0))
    assert np.all(np.abs(better.value - exact) <= better.error)
    assert np.all(np.abs(better.value - exact) < level.rtol() * np.abs(exact))


def test_note_says_what_to_pass():
    level = NoiseLevel(3e-9, 2e-9, 2.0**-10, EPS64)
    assert level.rtol() == 1e-5
    assert level.factor() == 1e7
    assert level.note() == (
        "f is noisy: its values scatter by 2.0e-09 of |f| + |x f'| (measured at relative "
        "perturbations of 9.8e-04; rounding alone would be 2.2e-16), so finite differences of "
        "it are good to about 1e-05: pass rtol=1e-05, or fdm=central_fdm(5, 1, factor=1e+07) "
        "so the steps allow for the noise"
    )
    quiet = NoiseLevel(1e-17, 5e-17, 2.0**-18, EPS64)
    assert not quiet.noisy
    assert quiet.note() == (
        "f's own noise is at rounding level (5.0e-17 of |f| + |x f'|, eps 2.2e-16): it does "
        "not explain a mismatch"
    )
    assert not quiet.explains(1.0, 1e-3)


def test_sin_noise_is_eps_including_at_zeros():
    for x in (np.array([0.5, 1.0, 2.0]), np.array([0.0, np.pi]), 3.0):
        level = measure_noise(np.sin, x)
        assert not level.noisy
        assert level.relative < 4 * EPS64


def test_structured_arguments_and_direction():
    def f(p):
        return p["a"] * np.sin(p["b"])

    level = measure_noise(f, {"a": 2.0, "b": np.array([0.5, 1.5])})
    assert not level.noisy
    level = measure_noise(float32_kernel, np.ones(2), direction=[1.0, 0.0])
    assert level.noisy


SMOOTH = [np.sin, np.exp, np.tanh, np.arctan, np.cos, lambda a: a**3 - 2 * a]


@settings(max_examples=40, deadline=None)
@given(
    i=st.integers(0, len(SMOOTH) - 1),
    dtype=st.sampled_from([np.float32, np.float64]),
    xs=st.lists(st.floats(-4.0, 4.0, allow_subnormal=False), min_size=1, max_size=12),
)
def test_smooth_functions_are_not_noisy(i, dtype, xs):
    level = measure_noise(SMOOTH[i], np.array(xs, dtype=dtype))
    assert level.relative <= NOISY * level.eps


def test_scales_outside_the_domain_are_skipped():
    def strict_log(v):
        if np.any(v <= 0):
            raise ValueError("math domain error")
        return np.log(v)

    level = measure_noise(strict_log, np.array([0.05]), direction=[-1.0])
    assert not level.noisy


def test_noise_of_huge_values_is_measured() -> None:
    # Differences of values of 1e200 squared to infinity: the level was inf, or no order passed.
    kernel32 = lambda v: np.sin(v.astype(np.float32)).astype(np.float64)  # noqa: E731
    x = np.array([0.5, 1.0])
    small = measure_noise(kernel32, x)
    huge = measure_noise(lambda v: 1e200 * kernel32(v), x)
    assert huge.noisy
    assert huge.relative == pytest.approx(small.relative, rel=1e-6)
