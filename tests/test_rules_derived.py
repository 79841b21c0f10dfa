"""PullbackOf / PushforwardOf: the functions first-order rules compute, as registry keys."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, RuleSet, test_frule, unthunk
from rruletest.rules.derived import PullbackOf, PushforwardOf, pullback_of, pushforward_of


def _rules() -> RuleSet:
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    return rules


def test_pullback_of_evaluates_the_first_order_rule() -> None:
    g = PullbackOf(np.sin, _rules().rrule)
    (xbar,) = g(np.array([0.0, 1.0]), np.array([2.0, 3.0]))
    np.testing.assert_allclose(xbar, [2.0, 3.0 * np.cos(1.0)])


def test_pushforward_of_evaluates_the_frule() -> None:
    h = PushforwardOf(np.sin, _rules().frule)
    np.testing.assert_allclose(h(np.array([1.0]), np.array([2.0])), [2.0 * np.cos(1.0)])
    with pytest.raises(TypeError, match="one tangent for each"):
        h(1.0, 2.0, 3.0)


def test_keys_compare_by_function_only() -> None:
    rules = _rules()
    assert PullbackOf(np.sin, rules.rrule) == pullback_of(np.sin)
    assert hash(PullbackOf(np.sin, rules.rrule)) == hash(pullback_of(np.sin))
    assert pullback_of(np.sin) != pushforward_of(np.sin)
    assert pullback_of(np.sin) != pullback_of(np.cos)
    assert repr(pushforward_of(np.cos)) == "pushforward_of(np.cos)"


def test_missing_first_order_rule() -> None:
    with pytest.raises(LookupError, match=r"no rrule for np\.cos"):
        PullbackOf(np.cos, RuleSet().rrule)(1.0, 1.0)
    with pytest.raises(TypeError, match="needs a function"):
        pullback_of(3.0)


def _second_order(rules: RuleSet, wrong: float = 1.0) -> None:
    @rules.register_frule(pullback_of(np.sin))
    def _pb2(dargs: Any, x: Any, ybar: Any) -> Any:
        _, dx, dybar = dargs
        ybar, dybar = unthunk(ybar), unthunk(dybar)
        return (ybar * np.cos(x),), (dybar * np.cos(x) - wrong * ybar * np.sin(x) * dx,)


def test_a_registered_second_order_rule_is_checked_like_any_rule() -> None:
    rules = _rules()
    _second_order(rules)
    g = PullbackOf(np.sin, rules.rrule)
    x, ybar = np.array([0.3, 1.0]), np.array([1.0, 2.0])
    report = test_frule(g, x, ybar, frule_f=rules.frule, rng=0)
    assert report.worst_rel_err < 1e-9


def test_a_wrong_second_order_rule_is_caught() -> None:
    rules = _rules()
    _second_order(rules, wrong=-1.0)
    g = PullbackOf(np.sin, rules.rrule)
    with pytest.raises(AssertionError, match=r"test_frule\(pullback_of\(np.sin\)"):
        test_frule(g, np.array([0.3, 1.0]), np.array([1.0, 2.0]), frule_f=rules.frule, rng=0)


def test_no_tangent_for_integer_arguments_passes_through() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.power)
    def _r(x: Any, n: int) -> Any:
        return x**n, lambda ybar: (NoTangent(), ybar * n * x ** (n - 1), NoTangent())

    assert PullbackOf(np.power, rules.rrule)(2.0, 3, 1.0) == (12.0, NoTangent())
