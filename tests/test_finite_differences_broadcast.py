"""The structured vjp/jvp of elementwise (broadcast) functions."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest.finite_differences import (
    broadcast_jvp,
    broadcast_vjp,
    central_fdm,
    jvp,
    vjp,
    vjp_estimate,
)
from rruletest.tangents import NoTangent, Thunk, ZeroTangent

FDM = central_fdm(5, 1)


class Counter:
    def __init__(self, f):
        self.f = f
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.f(*args)


def dense_vjp(g, ybar, *xs):
    """The reference: vjp through the full Jacobian of ``g`` (broadcast done by numpy)."""
    return vjp(FDM, lambda *a: np.asarray(g(*a)), ybar, *xs)


@pytest.mark.parametrize("n", [10, 10_000])
def test_evaluation_count_does_not_depend_on_size(n):
    g = Counter(np.sin)
    x = np.linspace(0.5, 3.0, n)
    (est,) = broadcast_vjp(FDM, g, np.ones(n), x)
    assert g.calls == 11
    assert np.all(np.abs(est.value - np.cos(x)) <= est.error)
    assert np.max(np.abs(est.value - np.cos(x))) < 1e-12


def test_primal_given_saves_an_evaluation():
    g = Counter(np.sin)
    x = np.linspace(0.5, 3.0, 5)
    broadcast_vjp(FDM, g, np.ones(5), x, y=np.sin(x))
    assert g.calls == 10


CASES = [
    pytest.param(np.multiply, (np.array([[1.0], [2.0]]), np.array([0.5, 1.5, 2.5])), id="outer"),
    pytest.param(np.add, (np.array([1.0, 2.0], np.float32), 3.0), id="float32-and-python-scalar"),
    pytest.param(np.power, (np.array([1.5, 2.0]), np.array([2, 3])), id="integer-exponent"),
    pytest.param(np.exp, (np.array([0.3 - 0.2j, 1.0 + 1.0j]),), id="complex-holomorphic"),
    pytest.param(np.abs, (np.array([0.3 - 0.2j, -1.0 + 2.0j]),), id="complex-to-real"),
    pytest.param(
        np.multiply, (np.array([1.0 + 2.0j, 0.5j]), np.array([[2.0], [-1.0]])), id="mixed"
    ),
    pytest.param(np.arctan2, (np.float64(0.5), np.array([1.0, -2.0, 3.0])), id="numpy-scalar"),
]


@pytest.mark.parametrize(("g", "xs"), CASES)
def test_structured_vjp_equals_dense_vjp(g, xs):
    rng = np.random.default_rng(0)
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    y = g(*xs)
    ybar = rng.normal(size=shape)
    if np.iscomplexobj(y):
        ybar = ybar + 1j * rng.normal(size=shape)
    structured = broadcast_vjp(FDM, g, ybar, *xs)
    dense = dense_vjp(g, ybar, *xs)
    for x, est, ref in zip(xs, structured, dense, strict=True):
        if isinstance(ref, NoTangent):
            assert est.value == NoTangent()
            continue
        assert type(est.value) is type(ref)
        assert np.shape(est.value) == np.shape(x)
        assert np.result_type(est.value) == np.result_type(x)
        tol = 1e-4 if np.float32 in (np.result_type(x), np.result_type(y)) else 1e-9
        np.testing.assert_allclose(est.value, ref, rtol=tol, atol=tol)
        assert np.shape(est.error) == np.shape(x)


@pytest.mark.parametrize(("g", "xs"), CASES)
def test_structured_jvp_equals_dense_jvp(g, xs):
    rng = np.random.default_rng(1)
    dxs = []
    for x in xs:
        dx = rng.normal(size=np.shape(x))
        if np.iscomplexobj(x):
            dx = dx + 1j * rng.normal(size=np.shape(x))
        dxs.append(NoTangent() if np.result_type(x).kind in "iub" else dx)
    pairs = list(zip(xs, dxs, strict=True))
    est = broadcast_jvp(FDM, g, *pairs)
    dense_pairs = [(x, ZeroTangent() if isinstance(d, NoTangent) else d) for x, d in pairs]
    ref = jvp(FDM, lambda *a: np.asarray(g(*a)), *dense_pairs)
    y = g(*xs)
    assert np.shape(est.value) == np.shape(y)
    assert np.result_type(est.value) == np.result_type(y)
    tol = 1e-4 if np.result_type(y) == np.float32 else 1e-9
    np.testing.assert_allclose(est.value, ref, rtol=tol, atol=tol)


def test_holomorphic_convention():
    z = np.array([0.3 - 0.2j, 1.0 + 1.0j])
    ybar = np.array([1.0 + 0.5j, -2.0j])
    (est,) = broadcast_vjp(FDM, np.exp, ybar, z)
    expected = ybar * np.conj(np.exp(z))
    assert np.all(np.abs(est.value - expected) <= est.error)
    assert np.max(np.abs(est.value - expected)) < 1e-11


def test_real_cotangent_of_real_input_with_complex_output():
    x = np.array([0.5, 2.0])
    ybar = np.array([1.0 + 1.0j, 2.0 - 1.0j])
    (est,) = broadcast_vjp(FDM, lambda x: np.exp(1j * x), ybar, x)
    assert est.value.dtype == np.float64
    expected = np.real(np.conj(ybar) * 1j * np.exp(1j * x))
    np.testing.assert_allclose(est.value, expected, rtol=1e-10)


def test_integer_and_bool_arguments_get_no_tangent():
    est = broadcast_vjp(FDM, np.where, np.ones(2), np.array([True, False]), 1.0, np.zeros(2))
    assert est[0] == (NoTangent(), NoTangent(), None)
    assert est[1].value == pytest.approx(1.0, rel=1e-12)
    assert isinstance(est[1].value, float)
    np.testing.assert_allclose(est[2].value, [0.0, 1.0], atol=1e-12)


def test_zero_and_thunked_cotangents():
    x = np.array([1.0, 2.0], np.float32)
    (zero,) = broadcast_vjp(FDM, np.sin, ZeroTangent(), x)
    assert zero.value.dtype == np.float32
    assert np.all(zero.value == 0)
    (thunked,) = broadcast_vjp(FDM, np.sin, Thunk(lambda: np.ones(2)), x)
    np.testing.assert_allclose(thunked.value, np.cos(x), rtol=1e-4)


def test_inputs_of_very_different_magnitude():
    x = np.array([1e-8, 1e-3, 1.0, 1e3, 1e8])
    (est,) = broadcast_vjp(FDM, np.log, np.ones(5), x)
    assert np.all(np.abs(est.value - 1 / x) <= est.error)
    np.testing.assert_allclose(est.value, 1 / x, rtol=1e-9)


def test_elements_outside_the_domain_are_marked():
    x = np.array([-1.0, 0.0, 1e-12, 2.0])
    g = Counter(np.log)
    (est,) = broadcast_vjp(FDM, g, np.ones(4), x)
    assert np.all(np.isinf(est.error[:2]))
    np.testing.assert_allclose(est.value[2:], 1 / x[2:], rtol=1e-9)
    assert np.all(np.abs(est.value[2:] - 1 / x[2:]) <= est.error[2:])


def test_error_estimates_add_up_over_broadcast_dimensions():
    a = np.array([[1.0], [2.0]])
    b = np.linspace(0.1, 1.0, 4)
    ybar = np.ones((2, 4))
    est_a, est_b = broadcast_vjp(FDM, lambda a, b: np.sin(a * b), ybar, a, b)
    ref_a, ref_b = dense_vjp(lambda a, b: np.sin(a * b), ybar, a, b)
    assert np.all(np.abs(est_a.value - ref_a) <= est_a.error + 1e-12)
    assert np.all(np.abs(est_b.value - ref_b) <= est_b.error + 1e-12)


def test_inputs_not_mutated():
    x = np.array([1.0, 2.0])
    before = x.copy()

    def g(x):
        x *= 2
        return x

    (est,) = broadcast_vjp(FDM, g, np.ones(2), x)
    assert np.array_equal(x, before)
    np.testing.assert_allclose(est.value, [2.0, 2.0], rtol=1e-12)


def test_partial_of_vectorized_scalar_function():
    def scalar(f, a, b):
        return f(a, b)

    g = functools.partial(np.vectorize(scalar, otypes=[float]), lambda a, b: a * b + np.sin(a))
    x = np.array([0.1, 0.2, 0.3])
    ex, ey = broadcast_vjp(FDM, g, np.ones(3), x, 2.0)
    np.testing.assert_allclose(ex.value, 2.0 + np.cos(x), rtol=1e-10)
    assert ey.value == pytest.approx(x.sum(), rel=1e-10)


def test_matches_dense_estimate_with_errors():
    x = np.array([0.2, 0.7])
    ybar = np.array([1.0, -3.0])
    (s,) = broadcast_vjp(FDM, np.tanh, ybar, x)
    (d,) = vjp_estimate(FDM, np.tanh, ybar, x)
    assert np.all(np.abs(s.value - d.value) <= s.error + d.error)


def test_misuse():
    with pytest.raises(ValueError, match="do not broadcast"):
        broadcast_vjp(FDM, np.add, 1.0, np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="elementwise"):
        broadcast_vjp(FDM, np.sum, 1.0, np.ones(3))
    with pytest.raises(ValueError, match=r"ybar of shape \(3,\)"):
        broadcast_vjp(FDM, np.sin, np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match=r"args\[0\] is complex"):
        broadcast_jvp(FDM, np.sin, (np.ones(2), np.ones(2) * 1j))
    with pytest.raises(TypeError, match=r"pairs\[0\]"):
        broadcast_jvp(FDM, np.sin, np.ones(2))


@pytest.mark.parametrize(
    ("x", "kind"),
    [
        pytest.param(0.5, float, id="python-float"),
        pytest.param(np.float32(0.5), np.float32, id="numpy-float32"),
        pytest.param(0.5 + 0.25j, complex, id="python-complex"),
        pytest.param(np.array(0.5), np.ndarray, id="0-d-array"),
    ],
)
def test_scalar_arguments(x, kind):
    (est,) = broadcast_vjp(FDM, np.sin, 1.0, x)
    assert type(est.value) is kind
    expected = np.conj(np.cos(x))
    tol = 1e-4 if kind is np.float32 else 1e-11
    assert abs(est.value - expected) < tol
    jv = broadcast_jvp(FDM, np.sin, (x, 1.0))
    assert abs(jv.value - np.cos(x)) < tol


ELEMENTWISE = {
    "sin": (np.sin, np.cos, (-1e6, 1e6)),
    "exp": (np.exp, np.exp, (-30.0, 30.0)),
    "log": (np.log, lambda x: 1 / x, (1e-30, 1e30)),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), (1e-30, 1e30)),
    "arctan": (np.arctan, lambda x: 1 / (1 + x * x), (-1e8, 1e8)),
    "square": (np.square, lambda x: 2 * x, (-1e10, 1e10)),
}


@given(
    name=st.sampled_from(sorted(ELEMENTWISE)),
    data=st.data(),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_structured_vjp_error_covers_actual_error(name, data, dtype):
    f, df, (lo, hi) = ELEMENTWISE[name]
    if dtype == np.float32:
        lo, hi = max(lo, -1e4), min(hi, 1e4)
    x = np.array(
        data.draw(st.lists(st.floats(lo, hi), min_size=1, max_size=6)), dtype=np.float64
    ).astype(dtype)
    ybar = np.array(
        data.draw(st.lists(st.floats(-9, 9), min_size=x.size, max_size=x.size)), dtype=dtype
    )
    (est,) = broadcast_vjp(FDM, f, ybar, x)
    exact = ybar.astype(np.float64) * df(x.astype(np.float64))
    ok = np.isfinite(est.error)
    assert np.all(np.abs(est.value[ok].astype(np.float64) - exact[ok]) <= est.error[ok])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [7, 70_000])  # one block, and several (and a reused input buffer)
def test_real_fast_path_agrees_with_the_general_path(dtype, n):
    # a real ybar takes the fast path; the same ybar as complex numbers the general one (same
    # numbers): values and errors must agree exactly, NaN and zero ybar included
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 3.0, n).astype(dtype)
    x[:3] = [-0.5, 0.0, 2.0]  # sqrt: NaN outside its domain, unreliable at its edge
    ybar = rng.normal(size=n)
    ybar[2] = 0.0
    (fast,) = broadcast_vjp(FDM, np.sqrt, ybar, x)
    (general,) = broadcast_vjp(FDM, np.sqrt, ybar.astype(complex), x)
    assert isinstance(fast.value, np.ndarray)
    assert fast.value.dtype == dtype
    np.testing.assert_array_equal(fast.value, general.value)
    np.testing.assert_array_equal(fast.error, general.error)
    assert fast.error[0] == np.inf
    assert fast.value[2] == 0.0
    assert fast.error[2] == 0.0


@pytest.mark.parametrize("g", [lambda t: t, lambda t: t[::1], lambda t: 2.0 * t])
def test_output_aliasing_the_input_is_kept_apart(g):
    # a function returning its input (or a view of it) must not see that memory reused for
    # the next evaluation point: every row of the stencil stays what it was
    x = np.linspace(-2.0, 2.0, 100_000)
    (est,) = broadcast_vjp(FDM, g, np.ones_like(x), x)
    slope = 2.0 if g(np.ones(1))[0] == 2.0 else 1.0
    np.testing.assert_allclose(est.value, slope, rtol=1e-12)
    assert np.all(np.abs(est.value - slope) <= est.error)


class _CountedHypot:
    """``np.hypot``, counting the output elements its calls computed."""

    def __init__(self) -> None:
        self.elements = 0

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self.elements += np.broadcast(a, b).size
        out: np.ndarray = np.hypot(a, b)
        return out


def test_a_few_flat_elements_are_re_worked_alone():
    # hypot(1e8, 1) looks flat at the default step: those elements' steps grow, on a subset of
    # three elements, not in full-size passes.
    fdm = central_fdm(5, 1)
    for n in (200, 40_000):
        rng = np.random.default_rng(0)
        a, b, ybar = rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, n), rng.standard_normal(n)
        plain = _CountedHypot()
        broadcast_vjp(fdm, plain, ybar, a, b)
        assert plain.elements == 21 * n  # the primal, then 10 per argument
        a[[3, n // 2]] = [1e8, 3e9]
        b[7] = 1e9
        flat = _CountedHypot()
        abar, bbar = broadcast_vjp(fdm, flat, ybar, a, b)
        # Some re-work, on the flagged elements only: full-size passes would add 24 * n.
        assert 0 < flat.elements - plain.elements < 200
        assert np.all(np.abs(abar.value - ybar * a / np.hypot(a, b)) <= abar.error)
        assert np.all(np.abs(bbar.value - ybar * b / np.hypot(a, b)) <= bbar.error)


# -- functions of several outputs ---------------------------------------------------------------


def _sincos(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.sin(x), np.cos(x)


def test_vjp_of_several_outputs_sums_over_them() -> None:
    x = np.array([0.2, 1.0, 2.5])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 2.0])
    (xbar,) = broadcast_vjp(central_fdm(5, 1), _sincos, (a, b), x)
    np.testing.assert_allclose(xbar.value, a * np.cos(x) - b * np.sin(x), rtol=1e-10)
    assert np.all(np.abs(xbar.value - (a * np.cos(x) - b * np.sin(x))) <= xbar.error + 1e-15)
    (only,) = broadcast_vjp(central_fdm(5, 1), _sincos, (ZeroTangent(), b), x)
    np.testing.assert_allclose(only.value, -b * np.sin(x), rtol=1e-10)
    (none,) = broadcast_vjp(central_fdm(5, 1), _sincos, ZeroTangent(), x)
    np.testing.assert_array_equal(none.value, 0.0)


def test_vjp_and_jvp_skip_an_integer_output() -> None:
    x = np.array([0.3, 5.0, 70.0])
    (xbar,) = broadcast_vjp(central_fdm(5, 1), np.frexp, (np.ones(3), NoTangent()), x)
    np.testing.assert_allclose(xbar.value, np.ldexp(1.0, -np.frexp(x)[1]), rtol=1e-10)
    est = broadcast_jvp(central_fdm(5, 1), np.frexp, (x, np.full(3, 2.0)))
    mdot, edot = est.value
    np.testing.assert_allclose(mdot, 2.0 * np.ldexp(1.0, -np.frexp(x)[1]), rtol=1e-10)
    assert edot is NoTangent()
    assert len(est.error) == 2


def test_jvp_of_several_outputs_is_one_per_output() -> None:
    x = np.linspace(-1.0, 1.0, 4)
    est = broadcast_jvp(central_fdm(5, 1), _sincos, (x, np.ones(4)))
    np.testing.assert_allclose(est.value[0], np.cos(x), rtol=1e-10)
    np.testing.assert_allclose(est.value[1], -np.sin(x), rtol=1e-10, atol=1e-14)
    assert est.error[0].shape == (4,)


def test_rooms_limit_each_elements_steps_alone() -> None:
    """``rooms=``: an element next to a domain edge takes steps inside its own room, the
    others keep theirs (one ``max_range`` for all made ``x = 1`` take the steps of its
    neighbour at ``1e-6``)."""
    from rruletest.finite_differences.broadcast import broadcast_vjp

    x = np.array([1e-6, 1.0])
    (est,) = broadcast_vjp(None, np.log, np.ones(2), x, rooms=[0.9 * x])
    assert 2 * est.step[0] <= 0.9e-6
    assert est.step[1] > 1e-4
    np.testing.assert_allclose(est.value, 1 / x, rtol=1e-9)
