"""order=2: the derivative of a rule (pullback_of / pushforward_of) checked like any rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import RuleSet, RuleTestFailure, test_frule, test_rrule, unthunk
from rruletest.rules.derived import pullback_of, pushforward_of

X = np.array([0.3, 1.0])


def _rules(sign: float = 1.0, *, second: bool = True) -> RuleSet:
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    if second:

        @rules.register_frule(pullback_of(np.sin))
        def _pb2(dargs: Any, x: Any, ybar: Any) -> Any:
            _, dx, dybar = dargs
            ybar, dybar = unthunk(ybar), unthunk(dybar)
            # d/dx [ybar cos x] = -ybar sin x  (sign=-1 makes it wrong)
            return (ybar * np.cos(x),), (dybar * np.cos(x) - sign * ybar * np.sin(x) * dx,)

    return rules


def _failure(run: Any) -> RuleTestFailure:
    with pytest.raises(RuleTestFailure) as info:
        run()
    return info.value


def test_a_correct_second_order_rule_passes_and_is_reported() -> None:
    report = test_rrule(np.sin, X, rrule_f=_rules().rrule, order=2, rng=0)
    assert [(p.tester, p.function) for p in report.parts] == [("test_frule", "pullback_of(np.sin)")]
    assert report.parts[0].worst_rel_err < 1e-8


def test_a_wrong_second_order_rule_is_caught_with_the_point_and_both_values() -> None:
    err = _failure(lambda: test_rrule(np.sin, X, rrule_f=_rules(-1.0).rrule, order=2, rng=0))
    text = str(err)
    assert text.startswith(
        "test_rrule(np.sin, ..., order=2) failed: the derivative of np.sin's pullback "
        "(pullback_of(np.sin)) is wrong\ntest_frule(pullback_of(np.sin), array([0.3, 1.0]), "
    )
    assert "[numeric] ydot: the output tangent differs from the numerical jvp" in text
    assert "actual:" in text
    assert "expected:" in text
    assert err.reproduce == "test_rrule(np.sin, array([0.3, 1.0]), order=2, rng=0)"


def test_nothing_of_second_order_is_a_failure_that_says_so() -> None:
    err = _failure(lambda: test_rrule(np.sin, X, rrule_f=_rules(second=False).rrule, order=2))
    assert err.checks == ["order2"]
    assert (
        "[order2] order=2: nothing of second order to check: no rule for pullback_of(np.sin) "
        "(the function np.sin's pullback computes); register one with "
        "register_frule(pullback_of(np.sin)) or register_rrule(pullback_of(np.sin))"
    ) in str(err)


def test_the_first_order_failure_comes_first() -> None:
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (-np.cos(x),))
    err = _failure(lambda: test_rrule(np.sin, X, rrule_f=rules.rrule, order=2, rng=0))
    assert "order=2" not in err.header
    assert "numeric" in err.checks


def test_frule_order_2_checks_the_pushforwards_derivative() -> None:
    rules = _rules(second=False)

    @rules.register_frule(pushforward_of(np.sin))
    def _pf2(dargs: Any, x: Any, xdot: Any) -> Any:
        _, dx, dxdot = dargs
        return np.cos(x) * xdot, -np.sin(x) * xdot * dx + np.cos(x) * dxdot

    report = test_frule(np.sin, X, frule_f=rules.frule, order=2, rng=0)
    assert [p.function for p in report.parts] == ["pushforward_of(np.sin)"]


def test_order_is_validated() -> None:
    with pytest.raises(ValueError, match="order must be 1 or 2, got order=3"):
        test_rrule(np.sin, X, rrule_f=_rules().rrule, order=3)


def test_scalar_order_2() -> None:
    from rruletest import test_scalar

    rules = _rules(-1.0)
    err = _failure(lambda: test_scalar(np.sin, 0.5, rrule_f=rules.rrule, frule_f=rules.frule,
                                       order=2, rng=0))  # fmt: skip
    assert err.reproduce == "test_scalar(np.sin, 0.5, order=2, rng=0)"
    good = _rules()
    report = test_scalar(np.sin, 0.5, rrule_f=good.rrule, frule_f=good.frule, order=2, rng=0)
    assert report.parts[-1].function == "pullback_of(np.sin)"
