"""Verdicts backed by evidence: unchecked elements are neither passed nor failed, a tester that
compared nothing fails, every report counts what it compared; misuse of ``fdm=`` is misuse;
the zero-cotangent call can be turned off; a pullback's exception shows the user's frames."""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from testers_helpers import NT, failure

from rruletest import Evidence, NoTangent, RuleSet, unthunk
from rruletest.finite_differences import central_fdm
from rruletest.tangents import AbstractZero
from rruletest.testers import test_frule, test_rrule

pytest_plugins = ["pytester"]


def _elementwise(f: Any, df: Any) -> RuleSet:
    rules = RuleSet("e")

    @rules.register_rrule(f)
    def _rule(x: Any) -> Any:
        return f(x), lambda ybar: (NT, unthunk(ybar) * df(x))

    return rules


def _nan_everywhere(x: Any) -> Any:
    return x * np.nan


# -- unchecked elements ------------------------------------------------------------------------


def test_sqrt_at_zero_passes_and_counts_the_unchecked_elements() -> None:
    rules = _elementwise(np.sqrt, lambda x: 0.5 / np.sqrt(x))
    with np.errstate(divide="ignore"):
        report = test_rrule(np.sqrt, np.array([0.0, 1.0, 4.0, 0.0]), rrule_f=rules.rrule, rng=1)
    assert report.evidence == (Evidence("args[0]", 2, 2),)
    assert (
        "args[0]: 2 of 4 elements compared numerically, 2 unchecked (the engine could not "
        "estimate them: their stencils left f's domain, f gave NaN there, or f's rounding or "
        "a singularity hides the derivative)"
    ) in report.notes


def test_arcsin_at_its_edges_is_not_failed_as_nan_in_expected() -> None:
    rules = _elementwise(np.arcsin, lambda x: 1 / np.sqrt(1 - x**2))
    with np.errstate(divide="ignore"):
        report = test_rrule(np.arcsin, np.array([-1.0, 0.25, 1.0]), rrule_f=rules.rrule, rng=2)
    assert report.evidence == (Evidence("args[0]", 1, 2),)


def test_a_nan_aware_std_at_an_input_with_nan_compares_the_other_elements() -> None:
    rules = RuleSet("s")

    @rules.register_rrule(np.nanstd)
    def _nanstd(x: Any) -> Any:
        y, n = np.nanstd(x), np.sum(~np.isnan(x))
        grad = np.where(np.isnan(x), np.nan, (x - np.nanmean(x)) / (n * y))
        return y, lambda ybar: (NT, unthunk(ybar) * grad)

    x = np.array([1.0, np.nan, 3.0, 4.0])
    report = test_rrule(np.nanstd, x, rrule_f=rules.rrule, rng=0)
    assert report.evidence == (Evidence("args[0]", 3, 1),)


def test_a_wrong_value_next_to_unchecked_elements_still_fails() -> None:
    rules = _elementwise(np.sqrt, lambda x: 0.6 / np.sqrt(x))  # wrong: 0.5
    with np.errstate(divide="ignore"):
        err = failure(
            lambda: test_rrule(np.sqrt, np.array([0.0, 1.0, 4.0]), rrule_f=rules.rrule, rng=1)
        )
    assert err.checks == ["numeric"]
    assert "NaN in expected only" not in str(err)
    # the unchecked element is shown with the rule's own value, and does not differ
    assert "args[0]: 2 of 3 elements differ\n    actual:   array([ -inf, 0.132, 1.38 ])\n" in (
        str(err)
    )
    assert "args[0]: 2 of 3 elements compared numerically, 1 unchecked" in str(err)


def test_nothing_compared_fails_the_rrule_tester() -> None:
    rules = RuleSet("n")
    rules.register_rrule(_nan_everywhere)(lambda x: (x * np.nan, lambda ybar: (NT, 0 * x)))
    err = failure(lambda: test_rrule(_nan_everywhere, np.ones(3), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["numeric"]
    assert (
        "[numeric] args[0]: nothing was compared: none of the 3 elements of its cotangent could "
        "be estimated numerically, so the rule's values there are unchecked\n  hint: test at an "
        "input where f is finite and differentiable around every element; pass check_fd=False "
        "if only the structural checks are meant"
    ) in str(err)


def test_nothing_compared_fails_the_frule_tester() -> None:
    rules = RuleSet("n")
    rules.register_frule(_nan_everywhere)(lambda dots, x: (x * np.nan, 0 * dots[1]))
    err = failure(lambda: test_frule(_nan_everywhere, np.ones(4), frule_f=rules.frule, rng=0))
    assert "[numeric] ydot: nothing was compared: none of the 4 elements of the output tangent" in (
        str(err)
    )


def test_nothing_compared_by_the_adjoint_identity_fails() -> None:
    rules = RuleSet("n")
    rules.register_rrule(_nan_everywhere)(lambda x: (x * np.nan, lambda ybar: (NT, 0 * x)))
    err = failure(
        lambda: test_rrule(
            _nan_everywhere, np.ones(3), rrule_f=rules.rrule, rng=0, vjp_mode="adjoint"
        )
    )
    assert "adjoint identity fails" not in str(err)
    assert re.search(
        r"\[numeric\] args: nothing was compared: none of the \d+ random directions of the "
        r"adjoint identity could be estimated numerically",
        str(err),
    )
    assert err.checks == ["numeric"]
    assert len(err.mismatches) == 1
    report = test_rrule(np.sin, np.ones(3), rrule_f=_elementwise(np.sin, np.cos).rrule, rng=0,
                        vjp_mode="adjoint")  # fmt: skip
    assert report.evidence == (Evidence("args", report.evidence[0].compared, 0),)
    assert report.evidence[0].compared >= 3


def test_check_fd_false_stays_an_explicit_pass_without_evidence() -> None:
    rules = RuleSet("n")
    rules.register_rrule(_nan_everywhere)(lambda x: (x * np.nan, lambda ybar: (NT, 0 * x)))
    report = test_rrule(_nan_everywhere, np.ones(3), rrule_f=rules.rrule, rng=0, check_fd=False)
    assert report.evidence == ()
    assert "numerical check: off (check_fd=False): structural checks only" in report.notes


def test_every_report_counts_what_each_argument_compared() -> None:
    rules = RuleSet("m")

    @rules.register_rrule(np.multiply)
    def _mul(a: Any, b: Any) -> Any:
        return a * b, lambda ybar: (NT, unthunk(ybar) * b, np.sum(unthunk(ybar) * a))

    report = test_rrule(np.multiply, np.arange(1.0, 4.0), 2.0, rrule_f=rules.rrule, rng=0)
    assert report.evidence == (Evidence("args[0]", 3, 0), Evidence("args[1]", 1, 0))
    assert "args[1]: 1 of 1 elements compared numerically" in report.notes


def test_values_all_within_the_tolerance_of_zero_are_noted() -> None:
    # log's slope at 1e100 is 1e-100, far below atol = 1e-9: a rule twice as large passes, and
    # the report says that the comparison only bounded the rule's size.
    wrong = _elementwise(np.log, lambda x: 2.0 / x)
    report = test_rrule(np.log, np.array([1e100, 2e100]), rrule_f=wrong.rrule, rng=0)
    (line,) = [n for n in report.notes if "within its tolerance of 0" in n]
    assert line.startswith("args[0]: every value compared is within its tolerance of 0 (the")
    assert "a rule twice as large, or 0, passes too; pass a smaller atol" in line
    with pytest.raises(AssertionError, match="actual is 2 times expected everywhere"):
        test_rrule(np.log, np.array([1e100, 2e100]), rrule_f=wrong.rrule, rng=0, atol=0.0)
    # Values of their own size, and exact zeros, are no such case.
    right = _elementwise(np.sin, np.cos)
    report = test_rrule(np.sin, np.array([0.5, 1.0]), rrule_f=right.rrule, rng=0)
    assert not [n for n in report.notes if "within its tolerance of 0" in n]
    flat = _elementwise(np.floor, lambda x: 0.0 * x)
    report = test_rrule(np.floor, np.array([0.5, 1.5]), rrule_f=flat.rrule, rng=0)
    assert not [n for n in report.notes if "within its tolerance of 0" in n]


# -- misuse ------------------------------------------------------------------------------------


def test_a_second_derivative_fdm_is_misuse_naming_fdm() -> None:
    rules = _elementwise(np.sin, np.cos)
    with pytest.raises(ValueError, match="first-derivative") as info:
        test_rrule(np.sin, 0.5, rrule_f=rules.rrule, fdm=central_fdm(3, 2))
    assert str(info.value) == (
        "test_rrule: fdm must be a first-derivative method (q=1, e.g. central_fdm(5, 1)): the "
        "testers compare first derivatives, got fdm=FiniteDifferenceMethod(order=3, q=2, "
        "grid=(-1, 0, 1), adapt=1, max_range=inf) (q=2)"
    )


# -- the zero cotangent and the user's frames --------------------------------------------------


def _zero_hating_rules() -> RuleSet:
    rules = RuleSet("z")

    @rules.register_rrule(np.sin)
    def _sin(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                raise TypeError("this pullback never expects a zero")
            return NT, ybar * np.cos(x)

        return np.sin(x), pullback

    return rules


def test_check_zero_output_tangent_false_skips_the_zero_call() -> None:
    rules = _zero_hating_rules()
    err = failure(lambda: test_rrule(np.sin, np.ones(2), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["exception"]
    report = test_rrule(
        np.sin, np.ones(2), rrule_f=rules.rrule, rng=0, check_zero_output_tangent=False
    )
    assert report.pullback_calls == 3
    assert "ZeroTangent() check: off (check_zero_output_tangent=False)" in report.notes
    with pytest.raises(TypeError, match="check_zero_output_tangent must be True or False"):
        test_rrule(np.sin, 1.0, rrule_f=rules.rrule, check_zero_output_tangent="no")


def test_the_ini_key_turns_the_zero_call_off(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nrruletest_check_zero_output_tangent = false\n")
    pytester.makepyfile(
        test_zero="""
        import numpy as np
        from rruletest import NoTangent, RuleSet, unthunk
        from rruletest.tangents import AbstractZero

        rules = RuleSet()

        @rules.register_rrule(np.sin)
        def _sin(x):
            def pullback(ybar):
                ybar = unthunk(ybar)
                assert not isinstance(ybar, AbstractZero)
                return NoTangent(), ybar * np.cos(x)
            return np.sin(x), pullback

        def test_sin(rruletest_config):
            report = rruletest_config.test_rrule(np.sin, np.ones(2), rrule_f=rules.rrule)
            assert report.pullback_calls == 3
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)


def test_a_pullback_exception_shows_the_users_frames_only() -> None:
    rules = RuleSet("s")

    @rules.register_rrule(np.sin)
    def _sin(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            return NT, np.linalg.solve(np.zeros((2, 2)), np.ones(2))  # singular

        return np.sin(x), pullback

    err = failure(lambda: test_rrule(np.sin, np.ones(2), rrule_f=rules.rrule, rng=0))
    assert isinstance(err.__cause__, np.linalg.LinAlgError)
    frames = traceback.extract_tb(err.__cause__.__traceback__)
    assert [Path(fr.filename).name for fr in frames] == [Path(__file__).name]
    assert frames[0].name == "pullback"


def test_one_nan_in_an_unrelated_argument_spoils_no_other_estimate() -> None:
    def h(x: Any, y: Any) -> Any:
        return 2 * x + 0 * np.nansum(y)

    rules = RuleSet("nan")
    rules.register_rrule(h)(
        lambda x, y: (h(x, y), lambda ybar: (NT, 2 * unthunk(ybar), np.zeros_like(y)))
    )
    x, y = np.array([1.0, 2.0]), np.array([np.nan, 3.0])
    report = test_rrule(h, x, y, rrule_f=rules.rrule, rng=0)
    assert report.evidence[0] == Evidence("args[0]", 2, 0)  # every element of x compared
    assert report.evidence[1] == Evidence("args[1]", 1, 1)  # only y's NaN is unchecked


def test_an_element_near_a_domain_edge_limits_its_own_steps_only() -> None:
    """``gammaln`` at ``[1e-6, 1.0]``: the element at 1e-6 bounded every element's steps to
    9e-7, and at 1.0 (a root of ``gammaln``, computed to an absolute, not a relative,
    rounding) those steps gave a derivative 3.4e-9 off, a false failure with a 'kink' note
    that named two equal one-sided derivatives. Each element now keeps its own room; a rule
    1e-7 off at 1.0 is still caught."""
    from rruletest import broadcasted

    special = pytest.importorskip("scipy.special")
    x = np.array([1e-6, 1.0])
    for scale, passes in ((1.0, True), (1 + 1e-7, False)):
        rules = RuleSet()
        rules.scalar_rule(
            special.gammaln, lambda x, y, c=scale: (c * special.digamma(x),), domain="(0, inf)"
        )
        for seed in (6107215405, 1, 2):
            try:
                test_rrule(broadcasted, special.gammaln, x, rrule_f=rules.rrule, rng=seed)
                test_frule(broadcasted, special.gammaln, x, frule_f=rules.frule, rng=seed)
            except AssertionError:
                assert not passes, (scale, seed)
            else:
                assert passes, (scale, seed)


def _empty_of(x: Any) -> Any:
    """An empty output from a scalar or an array (``pdist`` of one point)."""
    return np.zeros((0,)) * np.sum(x)


@pytest.mark.parametrize("x", [np.float64(0.5), 0.5, np.array([[0.5]])], ids=["np", "float", "1x1"])
def test_an_empty_output_is_checked_without_an_engine_error(x: Any) -> None:
    # from a scalar input the step search reduced an empty array with np.max and raised
    # "zero-size array to reduction operation maximum" as a bug of rruletest's engine.
    rules = RuleSet()

    @rules.register_rrule(_empty_of)
    def _(x: Any) -> Any:
        return _empty_of(x), lambda ybar: (NoTangent(), 0.0 * x)

    @rules.register_frule(_empty_of)
    def _(tangents: Any, x: Any) -> Any:
        return _empty_of(x), np.zeros((0,))

    test_rrule(_empty_of, x, rrule_f=rules.rrule, rng=0)
    test_frule(_empty_of, x, frule_f=rules.frule, rng=0)


def test_a_zero_tangent_given_says_the_check_shows_only_zero_to_zero() -> None:
    """A zero output tangent (or input tangent) makes every numerical cotangent 0, so a rule
    1.5x off passed with "2 of 2 elements compared numerically" and nothing else said."""
    from rruletest import RuleSet, ZeroTangent, test_frule, test_rrule, unthunk, with_tangent

    rules = RuleSet()

    @rules.register_rrule(np.sin)
    def _sin_rrule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            return NoTangent(), ybar if isinstance(ybar, ZeroTangent) else 1.5 * ybar * np.cos(x)

        return np.sin(x), pullback

    @rules.register_frule(np.sin)
    def _sin_frule(dots: Any, x: Any) -> Any:
        return np.sin(x), 1.5 * dots[1] * np.cos(x)

    x = np.array([0.3, 0.7])
    for ybar in (np.zeros(2), ZeroTangent()):
        report = test_rrule(np.sin, x, output_tangent=ybar, rrule_f=rules.rrule)
        assert report.notes[0] == (
            "the output tangent is zero everywhere: the numerical check shows only that the "
            "pullback maps it to zero, not the rule's derivatives (give a nonzero output tangent "
            "to check them)"
        )
    report = test_frule(np.sin, with_tangent(x, np.zeros(2)), frule_f=rules.frule)
    assert report.notes[0].startswith("the input tangent is zero everywhere: the numerical check")
    with pytest.raises(AssertionError, match="the cotangent differs"):
        test_rrule(np.sin, x, rrule_f=rules.rrule, rng=0)  # a random tangent: caught
