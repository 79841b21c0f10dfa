"""The frule/rrule cross-check as the testers run it (on by default when both rules exist)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rruletest import (
    AbstractZero,
    NoTangent,
    RuleSet,
    RuleTestFailure,
    broadcasted,
    test_frule,
    test_rrule,
    test_scalar,
    unthunk,
)
from rruletest.testers._transpose import transposition


def _rules(frule_sign: float = 1.0, rrule_sign: float = 1.0, *, frule: bool = True) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(np.sin)
    def _r(x: Any) -> Any:
        return np.sin(x), lambda ybar: (NoTangent(), rrule_sign * ybar * np.cos(x))

    if frule:

        @rules.register_frule(np.sin)
        def _f(dargs: Any, x: Any) -> Any:
            return np.sin(x), frule_sign * dargs[1] * np.cos(x)

    return rules


def _failure(run: Any) -> RuleTestFailure:
    with pytest.raises(RuleTestFailure) as info:
        run()
    return info.value


X = np.linspace(0.1, 1.0, 5)


def test_test_rrule_finds_the_frule_of_its_ruleset_and_passes() -> None:
    report = test_rrule(np.sin, X, rrule_f=_rules().rrule, rng=0)
    assert any(n.startswith("frule/rrule cross-check with the frule: passed") for n in report.notes)


def test_test_rrule_catches_a_wrong_frule_and_names_it() -> None:
    err = _failure(lambda: test_rrule(np.sin, X, rrule_f=_rules(-1.0).rrule, rng=0))
    assert err.checks == ["transpose"]  # the rrule itself is right
    text = str(err)
    assert "[transpose] frule/rrule transposition (the frule called once more): " in text
    assert "the frule disagrees with finite differences; the rrule agrees" in text


def test_test_frule_catches_a_wrong_rrule_and_names_it() -> None:
    err = _failure(lambda: test_frule(np.sin, X, frule_f=_rules(1.0, -1.0).frule, rng=0))
    assert err.checks == ["transpose"]
    assert "the rrule (pullback) disagrees with finite differences; the frule agrees" in str(err)


def test_without_finite_differences_the_gap_is_still_caught() -> None:
    err = _failure(lambda: test_rrule(np.sin, X, rrule_f=_rules(-1.0).rrule, check_fd=False, rng=0))
    assert err.checks == ["transpose"]
    assert "finite differences give" not in str(err)  # check_fd=False: no jvp is taken
    # what to do next is said: the culprit needs finite differences
    assert (
        "hint: finite differences are off (check_fd=False): run with check_fd=True to learn "
        "which of the two rules is wrong"
    ) in str(err)


def test_a_million_elements_with_a_wrong_frule_and_no_finite_differences() -> None:
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))

    @rules.register_frule(broadcasted, np.sin)
    def _f(dargs: Any, f: Any, x: Any) -> Any:
        return np.sin(x), -np.cos(x) * dargs[2]

    x = np.linspace(-3, 3, 10**6)
    err = _failure(
        lambda: test_rrule(broadcasted, np.sin, x, rrule_f=rules.rrule, check_fd=False, rng=0)
    )
    assert err.checks == ["transpose"]


def test_check_transpose_true_requires_the_other_rule() -> None:
    err = _failure(
        lambda: test_rrule(
            np.sin, X, rrule_f=_rules(frule=False).rrule, check_transpose=True, rng=0
        )
    )
    assert err.checks == ["transpose"]
    assert "the cross-check was asked for, but there is no frule for f" in str(err)
    report = test_rrule(np.sin, X, rrule_f=_rules(frule=False).rrule, rng=0)  # auto: skipped
    assert "frule/rrule cross-check: not run (there is no frule for f)" in report.notes


def test_check_transpose_false_turns_it_off() -> None:
    report = test_rrule(np.sin, X, rrule_f=_rules(-1.0).rrule, check_transpose=False, rng=0)
    assert not any("cross-check" in n for n in report.notes)


def test_an_explicit_frule_f_is_used() -> None:
    err = _failure(
        lambda: test_rrule(np.sin, X, rrule_f=_rules().rrule, frule_f=_rules(-1.0).frule, rng=0)
    )
    assert err.checks == ["transpose"]


def test_test_scalar_cross_checks_once() -> None:
    rules = _rules(-1.0)
    err = _failure(lambda: test_scalar(np.sin, 0.5, rrule_f=rules.rrule, frule_f=rules.frule,
                                       check_complex=False, rng=0))  # fmt: skip
    assert "transpose" in err.checks
    assert str(err).count("[transpose]") == 1


def test_misuse_of_the_option() -> None:
    with pytest.raises(TypeError, match="check_transpose must be None, True or False"):
        test_rrule(np.sin, X, rrule_f=_rules().rrule, check_transpose="yes")  # type: ignore[arg-type]


def test_rules_from_one_scalar_rule_are_not_cross_checked() -> None:
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    note = (
        "frule/rrule cross-check: not run (both rules come from one scalar_rule: transposes "
        "by construction)"
    )
    assert note in test_rrule(np.sin, X, rrule_f=rules.rrule, rng=0).notes
    assert note in test_rrule(broadcasted, np.sin, X, rrule_f=rules.rrule, rng=0).notes
    # asked for explicitly, it runs (and passes)
    report = test_rrule(np.sin, X, rrule_f=rules.rrule, check_transpose=True, rng=0)
    assert any(n.startswith("frule/rrule cross-check with the frule: passed") for n in report.notes)


def _clamp(x: Any, y: Any) -> Any:
    return np.maximum(x, y)


def _clamp_rules() -> RuleSet:
    """Valid subgradients at a tie, but not the same one: the frule follows x, the rrule y."""
    rules = RuleSet()

    @rules.register_frule(_clamp)
    def _(dots: Any, x: Any, y: Any) -> Any:
        return _clamp(x, y), np.where(x >= y, dots[1], dots[2])

    @rules.register_rrule(_clamp)
    def _(x: Any, y: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return NoTangent(), ybar, ybar
            return NoTangent(), np.where(x > y, ybar, 0.0), np.where(x > y, 0.0, ybar)

        return _clamp(x, y), pullback

    return rules


def test_rules_picking_different_subgradients_at_a_kink_are_not_a_transposition_failure() -> None:
    # torch.clamp(x, min=y) at x == y: each rule's value was accepted at the kink, and then
    # the transposition check failed them for not being transposes of each other.
    x, y = np.array([0.25, 0.75, 0.9]), np.array([0.3, 0.75, 0.9])
    rules = _clamp_rules()
    report = test_frule(_clamp, x, y, frule_f=rules.frule, rng=0)
    assert any("each rule may pick its own" in n for n in report.notes)
    test_rrule(_clamp, x, y, rrule_f=rules.rrule, rng=0)


XNAN = np.array([0.1, np.nan, 0.3])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_point_with_a_nan_element_is_cross_checked_at_its_finite_elements() -> None:
    # sin is NaN at the NaN element and so is its derivative; the directions are zero there
    # (as the testers' own are), and a coordinate not moved contributes nothing: the finite
    # elements are cross-checked, a correct pair passes even when the check is required.
    for check in (None, True):
        report = test_rrule(np.sin, XNAN, rrule_f=_rules().rrule, check_transpose=check, rng=0)
        assert any(
            n.startswith("frule/rrule cross-check with the frule: passed") for n in report.notes
        )
        report = test_frule(np.sin, XNAN, frule_f=_rules().frule, check_transpose=check, rng=0)
        assert any(
            n.startswith("frule/rrule cross-check with the rrule: passed") for n in report.notes
        )
    # a wrong frule is still caught there, with finite differences off
    err = _failure(lambda: test_rrule(np.sin, XNAN, rrule_f=_rules(-1.0).rrule,
                                      check_fd=False, rng=0))  # fmt: skip
    assert "[transpose] frule/rrule transposition (the frule called once more): " in str(err)
    err = _failure(lambda: test_frule(np.sin, XNAN, frule_f=_rules(rrule_sign=-1.0).frule,
                                      check_fd=False, rng=0))  # fmt: skip
    assert "[transpose] frule/rrule transposition (the rrule called once more): " in str(err)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_point_where_every_element_is_nan_skips_the_cross_check() -> None:
    nan = np.full(2, np.nan)
    report = test_rrule(np.sin, nan, rrule_f=_rules().rrule, check_fd=False, rng=0)
    assert (
        "frule/rrule cross-check: not run (f's inputs or output are not finite there (NaN or "
        "infinite elements))"
    ) in report.notes
    text = str(_failure(lambda: test_rrule(np.sin, nan, rrule_f=_rules().rrule, check_fd=False,
                                           check_transpose=True, rng=0)))  # fmt: skip
    assert (
        "[transpose] check_transpose: the cross-check was asked for, but f's inputs or output "
        "are not finite there (NaN or infinite elements)"
    ) in text


def test_a_nan_tangent_at_a_finite_point_still_fails_the_cross_check() -> None:
    rules = _rules(frule=False)

    @rules.register_frule(np.sin)
    def _f(dargs: Any, x: Any) -> Any:
        return np.sin(x), np.full_like(x, np.nan)

    err = _failure(lambda: test_rrule(np.sin, X, rrule_f=rules.rrule, check_fd=False, rng=0))
    assert "[transpose] frule/rrule transposition (the frule called once more): " in str(err)


def test_float16_inner_products_do_not_overflow() -> None:
    """``<ybar, ydot>`` of ``x**3`` at float16 values near 30 sums terms near 2700 past
    float16's largest number: summed in float16 both sides were -inf, and ``-inf == -inf`` a
    failed transposition ("difference nan"); summed in float64 they agree."""
    rules = RuleSet()

    def cube(x: Any) -> Any:
        return x**3

    @rules.register_rrule(cube)
    def _r(x: Any) -> Any:
        return cube(x), lambda ybar: (NoTangent(), unthunk(ybar) * 3 * x**2)

    @rules.register_frule(cube)
    def _f(dargs: Any, x: Any) -> Any:
        return cube(x), dargs[1] * 3 * x**2

    x = np.linspace(28.0, 32.0, 40).astype(np.float16)
    xdot, ybar = np.ones(40, np.float16), np.ones(40, np.float16)
    t = transposition(cube, [x], [xdot], ybar, rrule_f=rules.rrule, frule_f=rules.frule)
    assert t.passed
    assert math.isfinite(t.forward)
    assert t.forward == pytest.approx(float(np.sum(3 * x.astype(np.float64) ** 2)), rel=1e-2)
