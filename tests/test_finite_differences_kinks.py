"""Kinks: one-sided derivatives, their classification, and the findings' text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rruletest.finite_differences import central_fdm
from rruletest.finite_differences.kink_checks import describe
from rruletest.finite_differences.kinks import Kind, Sides, classify, one_sided
from rruletest.tangents import NoTangent, ZeroTangent


def relu(x):
    return np.maximum(x, 0.0)


class Counter:
    def __init__(self, f):
        self.f = f
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.f(*args)


def elementwise(g, *xs, tangent=0):
    """One-sided partial derivatives of ``g`` in argument ``tangent``, per element."""
    pairs = [(x, np.ones_like(x) if i == tangent else ZeroTangent()) for i, x in enumerate(xs)]
    return one_sided(None, g, *pairs, elementwise=True)


def kinds(rule, sides, **kw):
    return [Kind(k).name for k in np.atleast_1d(classify(rule, sides, **kw))]


# -- the one-sided values -----------------------------------------------------------------------


def test_relu_sides_per_element():
    x = np.array([-2.0, 0.0, 3.0])
    s = elementwise(relu, x)
    np.testing.assert_allclose(s.left, [0.0, 0.0, 1.0], atol=1e-10)
    np.testing.assert_allclose(s.right, [0.0, 1.0, 1.0], atol=1e-10)
    assert np.all(s.left_error < 1e-9)
    assert np.all(s.right_error < 1e-9)
    assert not np.any(s.jump)


def test_abs_at_zero_is_a_kink_and_sign_is_a_subgradient():
    x = np.array([-1.5, 0.0, 0.25])
    s = elementwise(np.abs, x)
    np.testing.assert_allclose(s.left, [-1.0, -1.0, 1.0], atol=1e-10)
    np.testing.assert_allclose(s.right, [-1.0, 1.0, 1.0], atol=1e-10)
    assert kinds(np.sign(x), s) == ["SMOOTH", "INSIDE", "SMOOTH"]
    assert kinds(np.array([-1.0, 1.5, 1.0]), s) == ["SMOOTH", "OUTSIDE", "SMOOTH"]


def test_maximum_at_ties_in_either_argument():
    x = np.array([1.0, 2.0, -3.0])
    y = np.array([1.0, 0.0, -3.0])
    sx = elementwise(np.maximum, x, y, tangent=0)
    sy = elementwise(np.maximum, x, y, tangent=1)
    assert kinds(np.array([1.0, 1.0, 0.5]), sx) == ["INSIDE", "SMOOTH", "INSIDE"]
    assert kinds(np.array([0.0, 0.0, 0.5]), sy) == ["INSIDE", "SMOOTH", "INSIDE"]
    assert kinds(np.array([2.0, 1.0, 0.5]), sx)[0] == "OUTSIDE"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_floor_jumps_at_integers_only(dtype):
    x = np.array([-1.0, 0.0, 0.5, 2.0, 2.75], dtype=dtype)
    s = elementwise(np.floor, x)
    assert s.jump.tolist() == [True, True, False, True, False]
    assert kinds(np.zeros(5), s) == ["JUMP", "JUMP", "SMOOTH", "JUMP", "SMOOTH"]


def test_a_small_step_in_float32_is_a_jump_and_a_steep_slope_is_not():
    x = np.array([100.0, 100.0], dtype=np.float32)
    steps = one_sided(None, lambda v: np.where(v >= 100, 1e-3, 0.0).astype(v.dtype), (x, 1.0))
    assert np.all(steps.jump)
    steep = one_sided(None, lambda v: 1e3 * v, (x, np.ones(2, np.float32)), elementwise=True)
    assert not np.any(steep.jump)


@pytest.mark.parametrize("name", ["relu", "sin"])
def test_cost_does_not_depend_on_size(name):
    calls = []
    for n in (12_000, 120_000):  # the engine may retry a few elements, a bounded cost
        g = Counter(relu if name == "relu" else np.sin)
        x = np.resize([-1.0, 0.0, 0.5], n) if name == "relu" else np.linspace(-3.0, 3.0, n)
        one_sided(None, g, (x, np.ones(n)), elementwise=True)
        calls.append(g.calls)
    assert calls[0] == calls[1]


def test_directional_max_at_a_tie():
    v = np.array([1.0, 1.0, 0.0])
    d = np.array([1.0, -1.0, 0.5])
    s = one_sided(None, np.max, (v, d))
    assert isinstance(s.left, float)
    assert isinstance(s.jump, bool)
    assert s.left == pytest.approx(-1.0, abs=1e-9)
    assert s.right == pytest.approx(1.0, abs=1e-9)
    # the gradient (1, 0, 0) gives <g, d> = 1, (0.5, 0.5, 0) gives 0: both subgradients
    assert classify(1.0, s) is Kind.INSIDE
    assert classify(0.0, s) is Kind.INSIDE
    assert classify(2.0, s) is Kind.OUTSIDE


def test_directional_vector_output_and_no_tangent():
    def f(a, n):
        return 2.0 * np.abs(a) * n

    s = one_sided(central_fdm(5, 1), f, (np.array([0.0, 1.0]), np.ones(2)), (3.0, NoTangent()))
    np.testing.assert_allclose(s.left, [-6.0, 6.0], atol=1e-9)
    np.testing.assert_allclose(s.right, [6.0, 6.0], atol=1e-9)
    assert kinds(np.array([0.0, 6.0]), s) == ["INSIDE", "SMOOTH"]


def test_directional_jump():
    s = one_sided(None, lambda v: np.floor(v) + v, (np.array([2.0]), np.array([1.0])))
    assert s.jump.tolist() == [True]
    assert kinds(np.array([1.0]), s) == ["JUMP"]


def test_a_small_argument_next_to_a_large_one_is_probed_at_its_own_scale():
    # x / y at y = 1e-6 is smooth, but a probe sized by x = 1e6 moved y by 6e-3 and across
    # the pole at t = -4e-7: a jump reported where there is none.
    s = one_sided(None, lambda x, y: x / y, (1e6, 6.32), (1e-6, 2.47))
    assert s.jump is False
    exact = 6.32 / 1e-6 - 1e6 * 2.47 / 1e-12
    assert s.left == pytest.approx(exact, rel=1e-4)
    assert s.right == pytest.approx(exact, rel=1e-4)
    assert classify(2 * exact, s) is Kind.SMOOTH


def test_complex_output_is_refused():
    with pytest.raises(TypeError, match="needs a real output"):
        one_sided(None, lambda z: z * 1j, (np.array([1.0]), np.ones(1)), elementwise=True)


# -- classification -----------------------------------------------------------------------------


def test_a_kink_smaller_than_the_tolerance_is_no_kink():
    s = Sides(1.0, 1e-12, 1.0 + 1e-6, 1e-12, False)
    assert classify(1.0, s) is Kind.INSIDE
    assert classify(1.0, s, rtol=1e-5) is Kind.SMOOTH
    assert classify(1.0, s, atol=2e-6) is Kind.SMOOTH


def test_errors_widen_both_the_kink_test_and_the_interval():
    s = Sides(0.0, 0.01, 1.0, 0.01, False)
    assert classify(1.1, s) is Kind.INSIDE  # within 10 * 0.02 of the upper side
    assert classify(1.3, s) is Kind.OUTSIDE
    assert classify(0.5, Sides(0.0, 0.1, 1.0, 0.1, False)) is Kind.SMOOTH


def test_unknown_where_a_side_failed():
    s = Sides(np.array([np.nan, 0.0]), np.array([np.inf, 0.0]), np.zeros(2), np.zeros(2), False)
    assert kinds(np.zeros(2), s) == ["UNKNOWN", "SMOOTH"]


# -- findings' text -----------------------------------------------------------------------------


def test_describe_names_the_element_and_the_verdict():
    x = np.array([[-1.0, 0.0], [2.0, 0.0]])
    s = one_sided(None, relu, (x, np.ones_like(x)), elementwise=True)
    lines = describe("args[0]", x, s, np.array([[0.0, 0.0], [1.0, 1.5]]))
    assert lines == [
        "args[0][1, 1] = 0.0 is a kink: left derivative 0, right derivative 1; the rule gives "
        "1.5, outside them: no one-sided derivative supports it (fails)",
        "args[0][0, 1] = 0.0 is a kink: left derivative 0, right derivative 1; the rule gives 0,"
        " between them (accepted)",
    ]


def test_describe_a_jump_and_a_scalar():
    s = one_sided(None, np.floor, (1.0, 1.0))
    assert describe("args[0]", 1.0, s, 0.0) == [
        "args[0] = 1.0: f jumps there, so it has no derivative; the rule's 0 was not compared"
    ]
    assert describe("args[0]", 1.5, one_sided(None, np.floor, (1.5, 1.0)), 0.0) == []


# -- no false kinks -----------------------------------------------------------------------------

SMOOTH = {
    "sin": np.sin,
    "exp": np.exp,
    "tanh": np.tanh,
    "cube": lambda a: a**3 - 2 * a,
    "arctan": np.arctan,
    "softplus": lambda a: np.logaddexp(a, 0.0),
    "rational": lambda a: a / (1 + a * a),
}


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(SMOOTH)),
    dtype=st.sampled_from([np.float32, np.float64]),
    xs=st.lists(st.floats(-4.0, 4.0, allow_subnormal=False), min_size=1, max_size=20),
)
def test_no_false_kinks_on_smooth_functions(name, dtype, xs):
    g = SMOOTH[name]
    x = np.array(xs, dtype=dtype)
    s = one_sided(None, g, (x, np.ones_like(x)), elementwise=True)
    assert not np.any(s.jump)
    # The central estimate (what a correct rule returns) is accepted everywhere as smooth.
    central = 0.5 * (np.asarray(s.left) + np.asarray(s.right))
    assert set(kinds(central, s)) <= {"SMOOTH"}


@settings(max_examples=30, deadline=None)
@given(
    dtype=st.sampled_from([np.float32, np.float64]),
    x=st.lists(st.floats(-3.0, 3.0, allow_subnormal=False), min_size=2, max_size=6),
    d=st.lists(st.floats(-2.0, 2.0, allow_subnormal=False), min_size=2, max_size=6),
)
def test_no_false_kinks_along_directions(dtype, x, d):
    n = min(len(x), len(d))
    xv, dv = np.array(x[:n], dtype=dtype), np.array(d[:n], dtype=dtype)

    def f(v):
        return np.array([np.sum(np.sin(v) * v), np.prod(np.cos(v))])

    s = one_sided(None, f, (xv, dv))
    assert not np.any(s.jump)
    assert set(kinds(0.5 * (s.left + s.right), s)) <= {"SMOOTH"}


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 30),
)
def test_no_false_kinks_with_several_moving_arguments(dtype, seed, n):
    rng = np.random.default_rng(seed)
    a, b, da, db = (rng.uniform(-3.0, 3.0, n).astype(dtype) for _ in range(4))

    def g(u, v):
        return np.sin(u) * v + np.exp(v / 3) - u * u

    s = one_sided(None, g, (a, da), (b, db), elementwise=True)
    assert not np.any(s.jump)
    assert set(kinds(0.5 * (s.left + s.right), s)) <= {"SMOOTH"}
    exact = da * (np.cos(a) * b - 2 * a) + db * (np.sin(a) + np.exp(b / 3) / 3)
    tol = 1e-4 if dtype == np.float32 else 1e-9
    for side, err in ((s.left, s.left_error), (s.right, s.right_error)):
        assert np.all(np.abs(side - exact) <= err + tol * (1 + np.abs(exact)))


def test_a_probe_outside_the_domain_is_no_jump_and_no_error():
    def strict_sqrt(v):
        if np.any(np.asarray(v) < 0):
            raise ValueError("math domain error")
        return np.sqrt(v)

    s = one_sided(None, strict_sqrt, (np.array([0.0, 4.0]), np.ones(2)), elementwise=True)
    assert not np.any(s.jump)
    assert s.right[1] == pytest.approx(0.25, abs=1e-9)
    d = one_sided(None, strict_sqrt, (np.array([4.0]), np.ones(1)))
    assert d.left[0] == pytest.approx(0.25, abs=1e-9)
