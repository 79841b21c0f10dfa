"""Methods, step selection and error estimates of ``rruletest.finite_differences``."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest.finite_differences import (
    Estimate,
    FiniteDifferenceMethod,
    backward_fdm,
    central_fdm,
    default_fdm,
    extrapolate_fdm,
    forward_fdm,
)


class Counter:
    """Wraps ``f`` and counts its calls."""

    def __init__(self, f):
        self.f = f
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.f(*args)


# -- acceptance: at least as accurate as FiniteDifferences.jl's documented results -------------


def test_central_5_1_sin_beats_reference():
    assert abs(central_fdm(5, 1)(np.sin, 1.0) - math.cos(1.0)) < 2.2e-14


def test_central_5_2_sin_beats_reference():
    assert abs(central_fdm(5, 2)(np.sin, 1.0) + math.sin(1.0)) < 1e-10


def test_central_12_2_sin_beats_reference():
    assert abs(central_fdm(12, 2)(np.sin, 1.0) + math.sin(1.0)) < 5.2e-14


def test_forward_5_1_log_near_zero_beats_reference():
    assert abs(forward_fdm(5, 1)(np.log, 1e-3) - 1000.0) < 4e-7


def test_central_5_1_log_near_zero_does_not_fail():
    # FiniteDifferences.jl throws a DomainError here unless max_range is set.
    est = central_fdm(5, 1).estimate(np.log, 1e-3)
    assert abs(est.value / 1000.0 - 1.0) < 1e-6
    assert abs(est.value - 1000.0) <= est.error


def test_extrapolate_beats_reference():
    est = extrapolate_fdm(central_fdm(2, 1), np.sin, 1.0)
    assert abs(est.value - math.cos(1.0)) < 1.7e-14
    assert abs(est.value - math.cos(1.0)) <= est.error


def test_reference_step_for_sin():
    # FiniteDifferences.jl: estimate_step(central_fdm(5, 1), sin, 1.0) = (0.0010652..., 1.954e-13)
    est = central_fdm(5, 1).estimate(np.sin, 1.0)
    assert est.step == pytest.approx(0.001065235154086019, rel=1e-4)
    assert est.error == pytest.approx(1.9541865128909085e-13, rel=1e-4)


# -- construction --


def test_repr():
    assert repr(central_fdm(5, 1)) == (
        "FiniteDifferenceMethod(order=5, q=1, grid=(-2, -1, 0, 1, 2), adapt=1, max_range=inf)"
    )
    assert repr(forward_fdm(3, 2, adapt=0, max_range=0.5, factor=1e6)) == (
        "FiniteDifferenceMethod(order=3, q=2, grid=(0, 1, 2), adapt=0, factor=1e+06, max_range=0.5)"
    )


@pytest.mark.parametrize("builder", [central_fdm, forward_fdm, backward_fdm])
@pytest.mark.parametrize(("p", "q"), [(2, 2), (1, 3)])
def test_p_must_exceed_q(builder, p, q):
    with pytest.raises(ValueError, match=rf"p={p} <= q={q}"):
        builder(p, q)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        pytest.param(([-1, 1], 2), {}, r"p=2 <= q=2", id="p<=q"),
        pytest.param(([-1, 0, 1], -1), {}, r"q must be an integer >= 0, got q=-1", id="q<0"),
        pytest.param(([0, 0, 1], 1), {}, r"distinct", id="repeated-offset"),
        pytest.param(([0, 0.5, 1], 1), {}, r"integers", id="fractional-offset"),
        pytest.param(([-1, 0, 1], 1), {"adapt": -1}, r"adapt=-1", id="adapt"),
        pytest.param(([-1, 0, 1], 1), {"condition": 0}, r"condition=0", id="condition"),
        pytest.param(([-1, 0, 1], 1), {"max_range": -1.0}, r"max_range=-1.0", id="max_range"),
    ],
)
def test_bad_arguments_echo_values(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        FiniteDifferenceMethod(*args, **kwargs)


def test_grids_and_exact_coefficients():
    assert central_fdm(4, 1).grid == (-2, -1, 1, 2)
    assert forward_fdm(3, 1).grid == (0, 1, 2)
    assert backward_fdm(3, 1).grid == (-2, -1, 0)
    m = central_fdm(5, 1)
    assert m.coefficients == tuple(
        Fraction(*c) for c in [(1, 12), (-2, 3), (0, 1), (2, 3), (-1, 12)]
    )
    assert m.f_error_mult == pytest.approx(1.5)
    assert m.df_mult == pytest.approx(0.0556, abs=1e-4)
    assert FiniteDifferenceMethod([2, -2, 1, -1, 0], 1) == m
    assert hash(FiniteDifferenceMethod([2, -2, 1, -1, 0], 1)) == hash(m)


def test_zero_weight_points_cost_nothing():
    m = central_fdm(5, 1, adapt=0)
    assert m.points.tolist() == [-2, -1, 1, 2]
    f = Counter(np.sin)
    m(f, 1.0, step=1e-3)
    assert f.calls == 4 + 1  # the stencil, and the centre (checked for finiteness)


def test_default_method_cost():
    f = Counter(np.sin)
    central_fdm(5, 1)(f, 1.0)
    # centre + 6 points of the 7-point bound estimator + 4 points of the stencil
    # (FiniteDifferences.jl: 12)
    assert f.calls == 11


def test_default_fdm():
    assert default_fdm() == central_fdm(5, 1)
    assert default_fdm() is default_fdm()


# -- values and errors --

CASES = [
    pytest.param(np.sin, np.cos, 0.3, id="sin"),
    pytest.param(np.exp, np.exp, -2.0, id="exp"),
    pytest.param(np.log, lambda x: 1 / x, 1e-3, id="log-near-0"),
    pytest.param(lambda x: x**3, lambda x: 3 * x**2, 2.0, id="cube"),
    pytest.param(np.tanh, lambda x: 1 / np.cosh(x) ** 2, 0.7, id="tanh"),
    pytest.param(np.arctan, lambda x: 1 / (1 + x * x), 1e4, id="arctan-far"),
]


@pytest.mark.parametrize(("f", "df", "x"), CASES)
@pytest.mark.parametrize("method", [central_fdm(5, 1), forward_fdm(5, 1), backward_fdm(6, 1)])
def test_known_first_derivatives_within_error_estimate(f, df, x, method):
    est = method.estimate(f, x)
    assert isinstance(est, Estimate)
    assert isinstance(est.value, float)
    assert abs(est.value - df(x)) <= est.error
    assert est.error <= 1e-6 * abs(df(x))


@pytest.mark.parametrize(("f", "df", "x"), CASES[:-1])  # float32 cannot resolve arctan at 1e4
def test_float32_inputs_get_float32_steps(f, df, x):
    x32 = np.array([x], dtype=np.float32)
    est = central_fdm(5, 1).estimate(f, x32)
    assert est.step.dtype == np.float32
    assert est.step[0] > central_fdm(5, 1).estimate(f, np.array([x])).step[0]
    expected = df(np.float64(x32[0]))
    assert abs(est.value[0] - expected) <= est.error[0] <= 1e-2 * abs(expected)


def test_second_derivative_with_error():
    est = central_fdm(7, 2).estimate(np.exp, 0.5)
    assert abs(est.value - math.exp(0.5)) <= est.error < 1e-8


def test_complex_argument_steps_along_real_axis():
    z = 0.3 + 0.4j
    est = central_fdm(5, 1).estimate(np.exp, z)
    assert isinstance(est.value, complex)
    assert abs(est.value - np.exp(z)) <= est.error < 1e-12


def test_array_valued_function_of_a_scalar():
    est = central_fdm(5, 1).estimate(lambda t: np.array([np.sin(t), 1e8 * np.cos(t)]), 1.0)
    expected = np.array([np.cos(1.0), -1e8 * np.sin(1.0)])
    assert est.value.shape == est.error.shape == (2,)
    assert np.all(np.abs(est.value - expected) <= est.error)
    # per-component errors: the small component is not swamped by the large one
    assert est.error[0] < 1e-10


def test_fixed_step_is_used():
    h = 2.0**-10
    est = central_fdm(5, 1).estimate(np.sin, 1.0, step=h)
    assert est.step == h
    assert est.value == central_fdm(5, 1)(np.sin, 1.0, step=h)
    assert abs(est.value - math.cos(1.0)) <= est.error


def test_max_range_is_respected():
    seen = []

    def f(x):
        seen.append(x)
        return np.sin(x)

    central_fdm(5, 1, max_range=1e-3)(f, 1.0)
    assert max(abs(x - 1.0) for x in seen) <= 1e-3


# -- per-element steps --

MAGNITUDES = np.array([1e-8, 1e-3, 0.5, 1.0, 1e3, 1e8])


@pytest.mark.parametrize(
    ("f", "df"),
    [
        pytest.param(np.log, lambda x: 1 / x, id="log"),
        pytest.param(np.sqrt, lambda x: 0.5 / np.sqrt(x), id="sqrt"),
        pytest.param(lambda x: 1 / x, lambda x: -1 / x**2, id="reciprocal"),
        pytest.param(lambda x: x**3, lambda x: 3 * x**2, id="cube"),
        pytest.param(np.sin, np.cos, id="sin"),
    ],
)
def test_very_different_magnitudes_in_one_array(f, df):
    est = central_fdm(5, 1).estimate(f, MAGNITUDES)
    expected = df(MAGNITUDES)
    assert est.step.shape == MAGNITUDES.shape
    assert np.all(np.abs(est.value - expected) <= est.error)
    assert np.all(np.abs(est.value - expected) <= 1e-9 * np.abs(expected) + 1e-20)


def test_no_python_loop_over_elements():
    f = Counter(np.sin)
    x = np.linspace(0.5, 3, 10_000)
    est = central_fdm(5, 1).estimate(f, x)
    assert f.calls == 11
    assert np.max(np.abs(est.value - np.cos(x))) < 1e-12


def test_elementwise_shape_mismatch_is_reported():
    with pytest.raises(ValueError, match="elementwise"):
        central_fdm(5, 1)(np.sum, np.ones(3))


# -- domain safety --


def test_domain_edges_never_give_silently_wrong_numbers():
    x = np.array([0.0, -1.0, 1e-300, 2.0])
    est = central_fdm(5, 1).estimate(np.sqrt, x)
    finite = np.isfinite(est.error)
    # sqrt is not differentiable at 0 and undefined below: reported, not guessed
    assert not finite[0]
    assert not finite[1]
    assert np.isnan(est.value[1])
    expected = 0.5 / np.sqrt(x[finite])
    assert np.all(np.abs(est.value[finite] - expected) <= est.error[finite])


def test_edge_not_at_zero_falls_back():
    x = 1 - 1e-6
    est = central_fdm(5, 1).estimate(np.arcsin, x)
    expected = 1 / math.sqrt(1 - x * x)
    assert abs(est.value - expected) <= est.error
    assert abs(est.value - expected) < 1e-6 * expected


def test_singularity_inside_the_stencil_is_avoided():
    est = central_fdm(5, 1).estimate(lambda x: 1 / x, 1e-8)
    assert est.value == pytest.approx(-1e16, rel=1e-10)


def test_function_raising_domain_error_off_centre():
    def f(x):
        if x < 1.0:
            raise ValueError("math domain error")
        return math.log(x)

    est = central_fdm(5, 1).estimate(f, 1.5)
    assert abs(est.value - 1 / 1.5) <= est.error < 1e-9


def test_no_warnings_escape():
    with np.errstate(all="raise"):
        central_fdm(5, 1).estimate(np.log, np.array([-1.0, 0.0, 1.0]))


def test_inputs_are_not_mutated():
    x = np.array([1.0, 2.0])
    before = x.copy()

    def f(t):
        t += 0.0  # an in-place operation on what the method passed
        return np.sin(t)

    central_fdm(5, 1).estimate(f, x)
    assert np.array_equal(x, before)


# -- extrapolation --


def test_extrapolate_arrays_and_forward():
    x = np.array([0.5, 1.0])
    est = extrapolate_fdm(forward_fdm(2, 1), np.exp, x, 0.5)
    assert np.all(np.abs(est.value - np.exp(x)) <= est.error + 1e-13)
    assert np.all(np.abs(est.value - np.exp(x)) < 1e-9)


@pytest.mark.parametrize("method", [central_fdm(2, 1), forward_fdm(2, 1), central_fdm(5, 1)])
@pytest.mark.parametrize(
    ("f", "x", "truth", "rtol"),
    [
        pytest.param(np.sin, np.float32(1.0), math.cos(1.0), 1e-3, id="sin-float32"),
        pytest.param(
            np.sin,
            np.array([1.0, 2.0], dtype=np.float32),
            np.cos([1.0, 2.0]),
            1e-3,
            id="sin-float32-array",
        ),
        pytest.param(np.log, 1e8, 1e-8, 1e-6, id="log-1e8"),
    ],
)
def test_extrapolate_never_takes_steps_the_input_cannot_resolve(method, f, x, truth, rtol):
    # The steps contract until x + h == x, where every estimate is the same (0, or garbage of
    # 1e-100) and the Richardson difference is 0: float32 sin'(1) came back as 0.0 with an
    # error of 0.0, log'(1e8) as -6.5e-89 with an error of 1e-72.
    est = extrapolate_fdm(method, f, x)
    assert np.all(np.abs(est.value - truth) <= est.error)
    assert np.all(np.abs(est.value - truth) < rtol * np.abs(truth))


def test_extrapolate_error_includes_round_off():
    # Two equal forward differences of log at 1e8 (round-off alike) made an error of exactly 0.
    est = extrapolate_fdm(forward_fdm(2, 1), np.log, 1e8)
    assert est.error > 0
    assert abs(est.value - 1e-8) <= est.error


def test_estimate_argument_checks():
    m = central_fdm(5, 1)
    with pytest.raises(TypeError, match=r"^f must be callable, got f=1.0 \(float\)$"):
        m(1.0, np.sin)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^f must be callable, got f='sin' \(str\)$"):
        extrapolate_fdm(m, "sin", 1.0)  # type: ignore[arg-type]
    for step in (0.0, -1e-3, math.inf, math.nan, np.array([1e-3, 0.0])):
        with pytest.raises(ValueError, match=r"^step must be positive and finite, got step="):
            m(np.sin, np.array([1.0, 2.0]), step=step)
    with pytest.raises(TypeError, match=r"^step must be a positive number or array"):
        m(np.sin, 1.0, step="small")


def test_a_list_of_numbers_is_an_array():
    # It raised "only 0-dimensional arrays can be converted to Python scalars".
    m = central_fdm(5, 1)
    for x in ([1.0, 2.0], (1.0, 2.0)):
        est = m.estimate(np.sin, x)
        assert isinstance(est.value, np.ndarray)
        np.testing.assert_allclose(est.value, np.cos([1.0, 2.0]), rtol=1e-12)


def test_extrapolate_validates():
    with pytest.raises(ValueError, match="contract=2"):
        extrapolate_fdm(central_fdm(2, 1), np.sin, 1.0, contract=2)
    with pytest.raises(TypeError, match="fdm="):
        extrapolate_fdm("central", np.sin, 1.0)  # type: ignore[arg-type]


# -- property: the error estimate covers the actual error --

FUNCTIONS = {
    "sin": (np.sin, np.cos, None),
    "exp": (np.exp, np.exp, (-50.0, 50.0)),
    "log": (np.log, lambda x: 1 / x, (1e-12, None)),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), (1e-12, None)),
    "tanh": (np.tanh, lambda x: 1 / np.cosh(x) ** 2, (-20.0, 20.0)),
    "cube": (lambda x: x**3, lambda x: 3 * x**2, (-1e30, 1e30)),
    "reciprocal": (lambda x: 1 / x, lambda x: -1 / x**2, (1e-100, None)),
}


@given(
    name=st.sampled_from(sorted(FUNCTIONS)),
    data=st.data(),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_error_estimate_covers_actual_error(name, data, dtype):
    f, df, bounds = FUNCTIONS[name]
    lo, hi = bounds or (-1e12, 1e12)
    hi = 1e12 if hi is None else hi
    if dtype == np.float32:
        lo, hi = max(lo, -1e6), min(hi, 1e6)
    x = data.draw(
        st.lists(st.floats(min_value=lo, max_value=hi, allow_nan=False), min_size=1, max_size=5)
    )
    xs = np.array(x).astype(dtype)
    est = central_fdm(5, 1).estimate(f, xs)
    with np.errstate(all="ignore"):
        exact = df(xs.astype(np.float64))
    ok = np.isfinite(exact) & np.isfinite(est.error)
    assert np.all(np.abs(est.value[ok] - exact[ok]) <= est.error[ok])


def test_calling_a_method_gives_nan_where_the_estimate_is_unreliable() -> None:
    # forward_fdm(5, 1)(np.sqrt, 0.0) gave 962: its infinite error was not seen by the caller.
    from rruletest import forward_fdm

    m = forward_fdm(5, 1)
    assert math.isnan(m(np.sqrt, 0.0))
    assert math.isinf(m.estimate(np.sqrt, 0.0).error)
    out = m(np.sqrt, np.array([0.0, 1.0]))
    assert np.isnan(out[0])
    assert abs(out[1] - 0.5) < 1e-10
    assert type(m(np.sqrt, np.float32(0.0))) is np.float32
