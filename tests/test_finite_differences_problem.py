"""Tests for rruletest.finite_differences.problem: the fast spacing and the evaluations."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.finite_differences.problem import Problem, abs_spacing


def _reference(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        out: np.ndarray = np.abs(np.spacing(x))
    return out


def _fast(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):  # as the engine runs it (np.spacing warns at overflow)
        return abs_spacing(x)


def _specials(dtype: type) -> np.ndarray:
    fi = np.finfo(dtype)
    vals = [0.0, -0.0, fi.smallest_subnormal, fi.tiny, 2 * fi.tiny, 1.0, -1.0, 3.0, 0.1]
    vals += [fi.max, -fi.max, fi.max / 2, np.inf, -np.inf, np.nan]
    return np.array(vals, dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("repeat", [1, 100])  # a few elements (np.spacing) and many (the bits)
def test_abs_spacing_equals_numpy_on_special_values(dtype: type, repeat: int) -> None:
    x = np.tile(_specials(dtype), repeat)
    out = _fast(x)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, _reference(x))


@given(
    hnp.arrays(
        st.sampled_from([np.float64, np.float32]),
        st.integers(64, 300),
        elements={"allow_nan": True, "allow_infinity": True, "allow_subnormal": True},
    )
)
def test_abs_spacing_equals_numpy(x: np.ndarray) -> None:
    np.testing.assert_array_equal(_fast(x), _reference(x))
    # the same values one at a time (the small-array path) agree too
    np.testing.assert_array_equal(_fast(x[:5]), _reference(x[:5]))


def test_abs_spacing_keeps_shape_and_handles_0d() -> None:
    x = np.full((70, 2), -2.0)
    assert abs_spacing(x).shape == (70, 2)
    assert float(abs_spacing(np.float64(1.0))) == np.spacing(1.0)


@pytest.mark.parametrize("g", [-2, -1, 1, 2, 3])
def test_evaluation_points_are_t0_plus_g_h(g: int) -> None:
    t0 = np.array([0.1, -3.0, 7.5], dtype=np.float32)
    h = np.array([0.25, 0.5, 1.0], dtype=np.float32)
    seen: list[np.ndarray] = []

    def phi(t: np.ndarray) -> np.ndarray:
        seen.append(t.copy())
        return t

    Problem(phi, t0, centre=t0).at(g, h)
    expected = np.multiply(h, g, dtype=np.float32) + t0
    assert seen[-1].dtype == np.float32
    np.testing.assert_array_equal(seen[-1], expected)


def test_resolution_bounds_steps_and_sets_the_input_scale():
    from rruletest.finite_differences import central_fdm
    from rruletest.finite_differences.estimation import run

    # phi(t) = f(1 + t) rounded to float32: t = 0 stands for an input of size 1.
    def phi(t):
        return np.asarray(np.float32(1.0) + np.float32(t) - np.float32(1.0), dtype=np.float32)

    r = float(np.spacing(np.float32(1.0)))
    prob = Problem(phi, np.zeros(()), resolution=r)
    assert prob.input_scale == pytest.approx(r / np.finfo(np.float64).eps)
    assert Problem(phi, np.zeros(())).input_scale == 0.0
    est = run(central_fdm(5, 1), prob)
    assert est.step >= 4 * r
    # The rounding of the input itself is the caller's to add (jvp does): about
    # f_error_mult * |f'| * resolution / (2 h).
    position = 1.5 * abs(est.value) * r / (2 * est.step)
    assert abs(est.value - 1.0) <= est.error + position
