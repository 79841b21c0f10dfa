"""``jvp``, ``vjp`` and ``jacobian`` on structured values."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest.finite_differences import (
    central_fdm,
    forward_fdm,
    jacobian,
    jacobian_estimate,
    jvp,
    jvp_estimate,
    vjp,
    vjp_estimate,
)
from rruletest.tangents import NoTangent, Tangent, ZeroTangent

FDM = central_fdm(5, 1)
Params = namedtuple("Params", "w b")


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    n: int


def test_jvp_scalar():
    est = jvp_estimate(FDM, np.sin, (1.0, 2.0))
    assert abs(est.value - 2 * np.cos(1.0)) <= est.error < 1e-12


def test_jvp_several_arguments_and_structured_output():
    def f(x, p):
        return {"y": p.w * x, "s": np.sum(x) + p.b, "k": 3}

    x = np.array([1.0, 2.0])
    p = Params(np.array([3.0, 4.0]), 0.5)
    xdot = np.array([0.1, -0.2])
    pdot = Tangent(Params, w=np.array([1.0, 1.0]))
    est = jvp_estimate(FDM, f, (x, xdot), (p, pdot))
    np.testing.assert_allclose(est.value["y"], p.w * xdot + x, rtol=1e-12)
    assert est.value["s"] == pytest.approx(-0.1, abs=1e-12)
    assert est.value["k"] == NoTangent()
    assert est.error["y"].shape == (2,)
    assert np.all(np.abs(est.value["y"] - (p.w * xdot + x)) <= est.error["y"])


def test_jvp_zero_tangent_costs_nothing():
    calls = []

    def f(x):
        calls.append(x)
        return x * 2

    assert jvp(FDM, f, (np.ones(2), ZeroTangent())).tolist() == [0.0, 0.0]
    assert len(calls) == 1


def test_complex_convention():
    # holomorphic f: xbar = ybar * conj(f'(z))
    z = 0.3 - 0.7j
    ybar = 1.5 + 0.5j
    (xbar,) = vjp(FDM, np.exp, ybar, z)
    assert abs(xbar - ybar * np.conj(np.exp(z))) < 1e-11
    # jvp along a complex tangent: f'(z) * zdot
    assert abs(jvp(FDM, np.exp, (z, 2j)) - np.exp(z) * 2j) < 1e-11


def test_non_holomorphic_adjoint_matches_inner_product():
    rng = np.random.default_rng(0)
    z = rng.normal(size=3) + 1j * rng.normal(size=3)
    zdot = rng.normal(size=3) + 1j * rng.normal(size=3)
    ybar = rng.normal(size=3)

    def f(z):
        return np.abs(z) ** 2 + np.real(z)

    ydot = jvp(FDM, f, (z, zdot))
    (zbar,) = vjp(FDM, f, ybar, z)
    lhs = np.real(np.sum(np.conj(ybar) * ydot))
    rhs = np.real(np.sum(np.conj(zbar) * zdot))
    assert lhs == pytest.approx(rhs, rel=1e-10)


def test_vjp_structured_inputs():
    def f(layer, p):
        return layer.w * p.w + p.b

    layer = Layer(np.array([1.0, 2.0], np.float32), 7)
    p = Params(np.array([3.0, 4.0]), 0.5)
    ybar = np.array([1.0, -1.0])
    est_layer, est_p = vjp_estimate(FDM, f, ybar, layer, p)
    assert isinstance(est_layer.value, Tangent)
    assert est_layer.value.n == NoTangent()
    assert est_layer.value.w.dtype == np.float32
    np.testing.assert_allclose(est_layer.value.w, ybar * p.w, rtol=1e-6)
    np.testing.assert_allclose(est_p.value.w, ybar * layer.w, rtol=1e-10)
    assert est_p.value.b == pytest.approx(0.0, abs=1e-10)
    assert np.all(est_p.error.w >= 0)


def test_vjp_integer_argument_gets_no_tangent():
    est_x, est_n = vjp_estimate(FDM, lambda x, n: x**n, 1.0, 2.0, 3)
    assert est_x.value == pytest.approx(12.0, rel=1e-10)
    assert est_n.value == NoTangent()


def test_vjp_integer_output():
    (xbar,) = vjp(FDM, lambda x: (np.sin(x), 3), (1.0, NoTangent()), 0.5)
    assert xbar == pytest.approx(np.cos(0.5), rel=1e-12)


def test_jacobian_known():
    def f(x, y):
        return np.array([x[0] * y, x[1] ** 2])

    jx, jy = jacobian(FDM, f, np.array([2.0, 3.0]), 5.0)
    np.testing.assert_allclose(jx, [[5.0, 0.0], [0.0, 6.0]], atol=1e-10)
    np.testing.assert_allclose(jy, [[2.0], [0.0]], atol=1e-10)
    (est,) = jacobian_estimate(FDM, lambda x: np.exp(x), np.array([0.0, 1.0]))
    assert np.all(np.abs(est.value - np.diag(np.exp([0.0, 1.0]))) <= est.error)


def test_vjp_equals_jacobian_transpose():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 2))

    def f(x):
        return np.tanh(a @ x)

    x = rng.normal(size=2)
    ybar = rng.normal(size=3)
    (j,) = jacobian(FDM, f, x)
    (xbar,) = vjp(FDM, f, ybar, x)
    np.testing.assert_allclose(xbar, j.T @ ybar, rtol=1e-12)


def test_per_coordinate_steps_for_different_scales():
    x = np.array([1e-8, 1e8])
    (est,) = vjp_estimate(FDM, np.log, np.ones(2), x)
    np.testing.assert_allclose(est.value, 1 / x, rtol=1e-9)
    assert est.step[0] < 1e-8 < est.step[1]


def test_inputs_never_mutated_even_when_f_raises():
    x = {"a": np.array([1.0, 2.0])}
    before = x["a"].copy()

    def f(d):
        d["a"] *= 3
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        vjp(FDM, f, 1.0, x)
    with pytest.raises(RuntimeError, match="boom"):
        jvp(FDM, f, (x, {"a": np.ones(2)}))
    assert np.array_equal(x["a"], before)


def test_f_mutating_its_input_does_not_corrupt_the_estimate():
    def f(x):
        x *= 2
        return x

    (xbar,) = vjp(FDM, f, np.ones(2), np.array([1.0, 2.0]))
    np.testing.assert_allclose(xbar, [2.0, 2.0], rtol=1e-12)


def test_domain_edges_in_vjp():
    (est,) = vjp_estimate(FDM, lambda x: np.sqrt(x), np.ones(2), np.array([0.0, 4.0]))
    assert np.isinf(est.error[0])
    assert est.value[1] == pytest.approx(0.25, rel=1e-12)


def test_output_size_must_not_change():
    def f(x):
        return np.ones(2) if x == 1.0 else np.ones(3)

    with pytest.raises(ValueError, match="changed size"):
        vjp(FDM, f, np.ones(2), 1.0)


def test_argument_checks():
    with pytest.raises(TypeError, match=r"pairs\[0\]"):
        jvp(FDM, np.sin, 1.0)
    with pytest.raises(ValueError, match="first-derivative"):
        vjp(central_fdm(5, 2), np.sin, 1.0, 1.0)
    with pytest.raises(TypeError, match="fdm="):
        vjp("central", np.sin, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"tangents\[0\] is complex"):
        jvp(FDM, np.sin, (1.0, 1j))


def test_default_and_forward_methods():
    assert vjp(None, np.sin, 1.0, 0.5)[0] == pytest.approx(np.cos(0.5), rel=1e-12)
    assert vjp(forward_fdm(5, 1), np.sin, 1.0, 0.5)[0] == pytest.approx(np.cos(0.5), rel=1e-9)


@pytest.mark.parametrize(
    ("f", "x", "dfdx"),
    [
        pytest.param(lambda x: (x + 1e8) - 1e8, np.array([1.0, 2.0]), 1.0, id="absorbed"),
        pytest.param(
            lambda x: np.log(x).sum(), np.array([1e-8, 1e8]), 1 / np.array([1e-8, 1e8]), id="sum"
        ),
    ],
)
def test_cancellation_inside_f_is_not_hidden(f, x, dfdx):
    # |f| is small, but its round-off is that of the large intermediates: the error estimate
    # must still cover the actual error.
    (est,) = vjp_estimate(FDM, f, np.ones(np.shape(f(x))), x)
    assert np.all(np.abs(est.value - dfdx) <= est.error)
    assert np.all(np.abs(est.value - dfdx) <= 1e-5 * np.abs(dfdx))


def test_jvp_cost_is_one_checked_stencil_run():
    calls = []

    def f(x):
        calls.append(1)
        return np.sin(x)

    jvp(FDM, f, (np.array([0.5, 1.0, 2.0]), np.ones(3)))
    # primal + 6 bound points + 4 stencil points + 4 for the check at half the step
    assert len(calls) == 15


@given(
    data=st.data(),
    n=st.integers(1, 4),
    m=st.integers(1, 3),
    scale=st.sampled_from([1e-6, 1.0, 1e6]),
)
def test_vjp_and_jvp_errors_cover_actual_errors(data, n, m, scale):
    floats = st.floats(-3, 3)
    a = np.array(data.draw(st.lists(floats, min_size=n * m, max_size=n * m))).reshape(m, n)
    x = np.array(data.draw(st.lists(floats, min_size=n, max_size=n))) * scale
    ybar = np.array(data.draw(st.lists(floats, min_size=m, max_size=m)))
    xdot = np.array(data.draw(st.lists(floats, min_size=n, max_size=n)))

    def f(x):
        return np.tanh(a @ (x / scale))

    inner = 1 - np.tanh(a @ (x / scale)) ** 2
    jac = inner[:, None] * a / scale
    # ``a @ x`` cancels inside f, so its round-off exceeds what |f| suggests; the half-step
    # check widens the error from what it sees, which bounds the actual error up to a small
    # factor, and up to round-off relative to the size of the Jacobian (when the computed f
    # itself has a slope of round-off size, or its rounding pattern repeats at half the step,
    # no difference quotient can tell): below the 1e-9 a tester uses for float64.
    (xbar,) = vjp_estimate(FDM, f, ybar, x)
    slack = 1e-9 * (np.abs(jac).T @ np.abs(ybar))
    assert np.all(np.abs(xbar.value - jac.T @ ybar) <= 2 * xbar.error + slack)
    ydot = jvp_estimate(FDM, f, (x, xdot))
    slack = 1e-9 * (np.abs(jac) @ np.abs(xdot))
    assert np.all(np.abs(ydot.value - jac @ xdot) <= 2 * ydot.error + slack)


def test_f_returning_a_view_of_its_input_gets_the_perturbed_values():
    (est,) = vjp_estimate(FDM, lambda x: x.reshape(2, 1), np.ones((2, 1)), np.array([1.0, 2.0]))
    np.testing.assert_allclose(est.value, [1.0, 1.0], rtol=1e-12)


def test_a_jvp_with_outputs_not_finite_at_x_estimates_the_others() -> None:
    # log of a negative element is NaN there: the other outputs keep their estimates (one NaN
    # output used to void the step, and so the estimate, of every output).
    x = np.array([0.5, -1.0, 2.0, 3.0])
    with np.errstate(invalid="ignore"):
        est = jvp_estimate(None, np.log, (x, np.ones(4)))
    finite = np.array([True, False, True, True])
    np.testing.assert_allclose(est.value[finite], 1 / x[finite], rtol=1e-10)
    assert np.all(est.error[finite] < 1e-9)
    assert np.isnan(est.value[1])
    assert np.isinf(est.error[1])


def test_a_function_that_is_not_callable_is_named():
    # The arguments swapped (f and x) raised "'float' object is not callable" from deep inside.
    fdm = central_fdm(5, 1)
    msg = r"^f must be callable, got f=1.0 \(float\)$"
    with pytest.raises(TypeError, match=msg):
        jvp(fdm, 1.0, (1.0, 1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=msg):
        vjp(fdm, 1.0, 1.0, 1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=msg):
        jacobian(fdm, 1.0, 1.0)  # type: ignore[arg-type]
