"""The frule/rrule transposition cross-check: no finite differences unless it fails."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest import NoTangent, RuleSet, Tangent, broadcasted
from rruletest.testers._transpose import TranspositionError, transposition


def _sin_rules(frule_sign: float = 1.0, rrule_sign: float = 1.0) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(np.sin)
    def _r(x: Any) -> Any:
        return np.sin(x), lambda ybar: (NoTangent(), rrule_sign * ybar * np.cos(x))

    @rules.register_frule(np.sin)
    def _f(dargs: Any, x: Any) -> Any:
        return np.sin(x), frule_sign * dargs[1] * np.cos(x)

    return rules


def _check(rules: RuleSet, f: Any, *xs: Any, xdots: Any, ybar: Any) -> Any:
    return transposition(f, xs, xdots, ybar, rrule_f=rules.rrule, frule_f=rules.frule)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_correct_rules_are_transposes(dtype: Any) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=50).astype(dtype)
    t = _check(_sin_rules(), np.sin, x, xdots=(rng.normal(size=50).astype(dtype),), ybar=x * 2)
    assert t.passed
    assert t.numeric is None  # no finite difference was needed
    assert t.gap <= t.tolerance


@pytest.mark.parametrize(
    ("frule_sign", "rrule_sign", "culprit"),
    [(-1.0, 1.0, "frule"), (1.0, -1.0, "rrule"), (2.0, -1.0, "both")],
)
def test_a_wrong_rule_is_named(frule_sign: float, rrule_sign: float, culprit: str) -> None:
    x = np.linspace(0.1, 1.0, 7)
    rules = _sin_rules(frule_sign, rrule_sign)
    t = _check(rules, np.sin, x, xdots=(np.ones(7),), ybar=np.linspace(1, 2, 7))
    assert not t.passed
    assert t.culprit == culprit
    expected = float(np.dot(np.linspace(1, 2, 7), np.cos(x)))
    assert t.numeric == pytest.approx(expected, rel=1e-8)
    m = t.mismatch()
    assert m.check == "transpose"
    assert m.path == culprit
    assert "finite differences give <ybar, J xdot> = " in m.message
    assert m.message.startswith("frule/rrule transposition: <ybar, frule ydot> = ")


def test_the_message_names_both_sides() -> None:
    x = np.array([0.5])
    t = _check(_sin_rules(-1.0), np.sin, x, xdots=(np.array([1.0]),), ybar=np.array([1.0]))
    c = float(np.cos(0.5))
    assert t.mismatch().message.splitlines()[0] == (
        f"frule/rrule transposition: <ybar, frule ydot> = {-c:.10g} but "
        f"<pullback(ybar), xdot> = {c:.10g} (difference {2 * c:.3g}, allowed "
        f"{t.tolerance:.3g})"
    )
    assert t.mismatch().message.splitlines()[-1] == (
        "  the frule disagrees with finite differences; the rrule agrees"
    )


def test_broadcast_rules_at_a_million_elements() -> None:
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    x = np.linspace(-3, 3, 10**6)
    xdots = (NoTangent(), np.ones_like(x))
    t = transposition(
        broadcasted, (np.sin, x), xdots, np.cos(x), rrule_f=rules.rrule, frule_f=rules.frule
    )
    assert t.passed


def test_structured_arguments_and_outputs() -> None:
    rules = RuleSet()

    def polar(p: Any) -> dict[str, Any]:
        return {"re": p[0] * np.cos(p[1]), "im": p[0] * np.sin(p[1])}

    @rules.register_rrule(polar)
    def _r(p: Any) -> Any:
        r, th = p

        def pullback(ybar: Any) -> Any:
            a, b = ybar["re"], ybar["im"]
            return NoTangent(), Tangent(
                tuple, a * np.cos(th) + b * np.sin(th), -a * r * np.sin(th) + b * r * np.cos(th)
            )

        return polar(p), pullback

    @rules.register_frule(polar)
    def _f(dargs: Any, p: Any) -> Any:
        (r, th), (dr, dth) = p, dargs[1]
        return polar(p), {
            "re": dr * np.cos(th) - r * np.sin(th) * dth,
            "im": dr * np.sin(th) + r * np.cos(th) * dth,
        }

    t = transposition(
        polar,
        ((2.0, 0.3),),
        ((0.5, -1.5),),
        {"re": 1.0, "im": 2.0},
        rrule_f=rules.rrule,
        frule_f=rules.frule,
    )
    assert t.passed


def test_complex_holomorphic_scalar_rule() -> None:
    rules = RuleSet()
    rules.scalar_rule(np.exp, lambda x, y: (y,), complex=True)
    z = np.array([0.5 + 1j, -1 - 0.25j])
    t = _check(rules, np.exp, z, xdots=(np.array([1 - 1j, 2j]),), ybar=np.array([1j, 1 + 0j]))
    assert t.passed


def test_an_argument_without_a_tangent_is_skipped() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.power)
    def _r(x: Any, n: int) -> Any:
        return x**n, lambda ybar: (NoTangent(), ybar * n * x ** (n - 1), NoTangent())

    @rules.register_frule(np.power)
    def _f(dargs: Any, x: Any, n: int) -> Any:
        return x**n, dargs[1] * n * x ** (n - 1)

    t = _check(
        rules, np.power, np.array([1.5, 2.0]), 3, xdots=(np.ones(2), NoTangent()), ybar=np.ones(2)
    )
    assert t.passed


def test_a_missing_rule_is_an_error() -> None:
    with pytest.raises(TranspositionError, match="no rrule"):
        _check(RuleSet(), np.sin, 1.0, xdots=(1.0,), ybar=1.0)


@settings(max_examples=30, deadline=None)
@given(
    hnp.arrays(
        np.float64, st.tuples(st.integers(1, 6), st.integers(1, 6)), elements=st.floats(-10, 10)
    ),
    st.integers(0, 2**32 - 1),
)
def test_any_linear_map_and_its_transpose_agree(a: np.ndarray, seed: int) -> None:
    rules = RuleSet()

    def apply(x: Any) -> Any:
        return a @ x

    rules.register_rrule(apply)(lambda x: (a @ x, lambda ybar: (NoTangent(), a.T @ ybar)))
    rules.register_frule(apply)(lambda dargs, x: (a @ x, a @ dargs[1]))
    rng = np.random.default_rng(seed)
    m, n = a.shape
    t = _check(
        rules, apply, rng.normal(size=n), xdots=(rng.normal(size=n),), ybar=rng.normal(size=m)
    )
    assert t.passed
