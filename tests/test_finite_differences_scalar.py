"""The scalar fast path of ``estimate``: it agrees with the general engine or steps aside."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest.finite_differences import central_fdm, default_fdm, forward_fdm
from rruletest.finite_differences.scalar import fast_estimate
from rruletest.tangents import ZeroTangent


def _general(m: Any, f: Any, x: Any) -> tuple[Any, float]:
    """The general engine's estimate (a 0-d array input never takes the fast path)."""
    est = m.estimate(lambda t: f(t[()]), np.asarray(x))
    return est.value[()], float(est.error)


FUNCTIONS = {
    "sin": np.sin,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "arcsin": np.arcsin,
    "recip": lambda t: 1.0 / t,
    "cube": lambda t: t**3,
    "cos": np.cos,
    "expi": lambda t: np.exp(1j * t),  # complex output of a real input
    "abs": np.abs,
    "flat": lambda t: t * 0.0 + 2.0,
}

POINTS = st.one_of(
    st.floats(-4.0, 4.0),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.9999, 1e-8, 1e-300, 1e8, 1e300, 5e-324]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)


def _agree(fast: Any, general: tuple[Any, float]) -> None:
    value, error = general
    assert math.isfinite(error), (fast, general)
    assert abs(fast.value - value) <= fast.error + error
    assert 0.5 * error <= fast.error <= 2.0 * error


@given(name=st.sampled_from(sorted(FUNCTIONS)), x=POINTS)
def test_real_points_agree_with_the_general_engine(name: str, x: float) -> None:
    f = FUNCTIONS[name]
    m = default_fdm()
    fast = fast_estimate(m, f, x)
    if fast is not None:
        assert isinstance(fast.value, complex if name == "expi" else float)
        _agree(fast, _general(m, f, x))


@given(
    name=st.sampled_from(["sin", "exp", "log", "sqrt", "recip", "tanh"]),
    re=POINTS,
    im=st.one_of(st.floats(-3.0, 3.0), st.just(0.5), st.just(0.0)),
)
def test_complex_points_agree_with_the_general_engine(name: str, re: float, im: float) -> None:
    f = FUNCTIONS[name]
    m = default_fdm()
    z = np.complex128(complex(re, im))
    fast = fast_estimate(m, f, z)
    if fast is not None:
        _agree(fast, _general(m, f, z))


@given(x=st.floats(-3.0, 3.0), p=st.integers(3, 7))
def test_other_methods_agree_or_step_aside(x: float, p: int) -> None:
    for m in (central_fdm(p, 1), forward_fdm(p, 1), central_fdm(p, 2), central_fdm(p, 1, adapt=0)):
        fast = fast_estimate(m, np.sin, x)
        if m.adapt != 1:
            assert fast is None
        elif fast is not None:
            _agree(fast, _general(m, np.sin, x))


def test_the_common_case_takes_the_fast_path_with_eleven_evaluations() -> None:
    calls = []

    def f(t: Any) -> Any:
        calls.append(t)
        return np.sin(t)

    est = default_fdm().estimate(f, 0.5)
    assert len(calls) == 11
    assert all(type(t) is np.float64 for t in calls)
    assert abs(est.value - math.cos(0.5)) <= est.error < 1e-12
    assert isinstance(est.value, float)
    assert isinstance(est.error, float)


@pytest.mark.parametrize(
    ("f", "x"),
    [
        (np.sin, np.float32(0.5)),  # float32: its own round-off model
        (lambda t: np.float32(np.sin(t)), 0.5),  # a float32 output
        (lambda t: 1, 0.5),  # an integer output
        (np.sqrt, 0.0),  # a domain edge
        (np.log, -1.0),  # nothing to estimate
        (np.log, 1e8),  # flat at the default scale: the step grows
        (lambda t: 1.0 / t, 1e-3),  # the stencil reaches across 0
        (np.sin, math.inf),
        (np.sin, 1),  # an int: the general engine converts it
    ],
)
def test_special_cases_are_left_to_the_general_engine(f: Any, x: Any) -> None:
    assert fast_estimate(default_fdm(), f, x) is None


def test_a_failing_function_fails_as_in_the_general_engine() -> None:
    def f(t: Any) -> Any:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        default_fdm().estimate(f, 0.5)


def test_float32_is_estimated_by_the_general_engine() -> None:
    est = default_fdm().estimate(np.sin, np.float32(0.5))
    assert abs(est.value - math.cos(0.5)) <= est.error < 1e-3


# ------------------------------------------------------------------------------------------------
# the testers' numerical reference for a function of one number
# ------------------------------------------------------------------------------------------------


def test_number_reference_real():
    from rruletest.finite_differences.scalar import number_jvp, number_partials, number_vjp

    m = central_fdm(5, 1)
    (part,) = number_partials(m, np.sin, 0.5)
    assert abs(part.value - math.cos(0.5)) <= part.error < 1e-12
    jv = number_jvp(m, np.sin, 0.5, 3.0, [part])
    assert abs(jv.value - 3 * math.cos(0.5)) <= jv.error
    vj = number_vjp(m, lambda x: np.array([np.sin(x), 2 * x]), 0.5, np.array([1.0, -1.0]))
    assert abs(vj.value - (math.cos(0.5) - 2.0)) <= vj.error < 1e-11
    assert number_jvp(m, np.sin, 0.5, ZeroTangent()).value == 0.0


def test_number_reference_complex_keeps_the_type():
    from rruletest.finite_differences.scalar import number_jvp, number_vjp

    m = central_fdm(5, 1)
    seen = set()

    def f(z):
        seen.add(type(z))
        return z * z

    z = np.complex128(1.0 + 2.0j)
    jv = number_jvp(m, f, z, 0.5 - 1.0j)
    assert abs(jv.value - 2 * z * (0.5 - 1.0j)) <= jv.error + 1e-12
    ybar = 1.0 + 1.0j
    vj = number_vjp(m, f, z, ybar)
    expected = complex((np.conj(ybar) * 2 * z).real, (np.conj(ybar) * 2j * z).real)
    assert abs(vj.value - expected) <= vj.error + 1e-12
    assert seen == {np.complex128}


def test_takes_a_number():
    from rruletest.finite_differences.scalar import takes_a_number

    assert takes_a_number([0.5], 1.0)
    assert takes_a_number([np.float32(0.5)], np.zeros(3))
    assert not takes_a_number([0.5, 1.0], 1.0)
    assert not takes_a_number([np.zeros(1)], 1.0)
    assert not takes_a_number([0.5], np.zeros(3, dtype=int))


# -- vjp and jvp at one number: Python floats where numpy would give the same ------------------


def _numpy_vjp(parts: Any, ybar: Any) -> tuple[Any, Any]:
    """``number_vjp``'s numpy expressions, as written before its float shortcut."""
    yb = np.asarray(ybar)
    e = parts[0]
    value = float(np.sum((np.conj(yb) * np.asarray(e.value)).real))
    error = float(np.sum(np.abs(yb) * np.abs(np.asarray(e.error))))
    return value, error


@pytest.mark.parametrize("c", [0.37, -2.5, 0.0, -0.0, 1e-310, np.float64(0.25), 1e300])
@pytest.mark.parametrize("x", [0.5, -3.0, 2.0**-1022])
def test_vjp_and_jvp_at_a_real_number_equal_numpys(x: float, c: Any) -> None:
    import math

    from rruletest.finite_differences.scalar import number_jvp, number_partials, number_vjp

    m = default_fdm()
    parts = number_partials(m, np.sin, x)
    with np.errstate(all="ignore"):
        want_v, want_e = _numpy_vjp(parts, c)
        jvp_v = 0.0 + np.asarray(parts[0].value) * c
        jvp_e = 0.0 + np.abs(np.asarray(parts[0].error)) * abs(c)
        vjp = number_vjp(m, np.sin, x, c, parts)
        jvp = number_jvp(m, np.sin, x, c, parts)
    for got, want in ((vjp.value, want_v), (vjp.error, want_e), (jvp.value, jvp_v),
                      (jvp.error, jvp_e)):  # fmt: skip
        assert type(got) is type(want)
        assert got == want or (math.isnan(got) and math.isnan(want))
        assert math.copysign(1.0, got) == math.copysign(1.0, want)  # -0.0 as numpy gives it


def test_vjp_at_a_complex_number_sums_as_numpy_does() -> None:
    from rruletest.finite_differences.scalar import number_partials, number_vjp

    m, z = default_fdm(), complex(0.5, -0.25)
    parts = number_partials(m, np.sin, z)
    for ybar in (0.3 - 0.7j, complex(-0.0, 1.0), -0.0, 2.0):
        est = number_vjp(m, np.sin, z, ybar, parts)
        yb = np.asarray(ybar)
        re, im = (float(np.sum((np.conj(yb) * np.asarray(e.value)).real)) for e in parts)
        errs = [float(np.sum(np.abs(yb) * np.abs(np.asarray(e.error)))) for e in parts]
        assert est.value == complex(re, im)
        assert est.error == float(np.hypot(*errs))
