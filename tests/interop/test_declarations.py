"""``rruletest.interop._declarations``: what the rule and the test say about each argument is
said once, framework-free (the framework tests show it with real rules)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, with_tangent
from rruletest.interop import InteropError, NoRuleError
from rruletest.interop._base import Adapted
from rruletest.interop._declarations import declared, is_marked_nondiff, primal_of

X = np.array([0.5, 1.5])


class Scale(Adapted):
    """``x * s`` whose 'framework' has no rule for ``s`` when ``no_rule_for_s``, and records
    which arguments it was asked to differentiate."""

    framework = "numpy"
    mode = "test"

    def __init__(self, *, no_rule_for: tuple[int, ...] = (), **options: Any) -> None:
        self.no_rule_for = no_rule_for
        self.asked: list[tuple[int, ...]] = []
        super().__init__(np.multiply, **options)

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        return {} if forward else dict.fromkeys(self.no_rule_for, "NotImplementedError: no VJP")

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[0] * args[1]

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        x, s = args
        diff = tuple(i for i in (0, 1) if i not in self.nondiff_argnums)
        self.asked.append(diff)

        def pullback(ybar: Any) -> Any:
            for i in diff:
                if i in self.no_rule_for:
                    raise NoRuleError(f"args[{i}]", "multiply", "NotImplementedError: no VJP")
            xbar = ybar * s if 0 in diff else NoTangent()
            sbar = np.sum(ybar * x) if 1 in diff else NoTangent()
            return NoTangent(), xbar, sbar

        return x * s, pullback


def test_tester_arguments_are_read_through_with_tangent() -> None:
    marked = with_tangent(2.0, NoTangent())
    assert (primal_of(marked), primal_of(3.0)) == (2.0, 3.0)
    assert (is_marked_nondiff(marked), is_marked_nondiff(with_tangent(2.0, 1.0))) == (True, False)


def test_the_rules_declarations_by_position() -> None:
    assert declared(Scale(nondiff_argnums=[1]), (X, 2.0), {}) == {
        1: "in the adapter's nondiff_argnums"
    }
    assert declared(Scale(no_rule_for=(1,)), (X, 2.0), {}) == {
        1: "the framework has no rule for it (NotImplementedError: no VJP)"
    }
    # no rule for any differentiable argument: nothing is declared, so the test fails loudly
    assert declared(Scale(no_rule_for=(0, 1)), (X, 2.0), {}) == {}
    # the forward rule is asked about its own arguments
    assert declared(Scale(no_rule_for=(1,)), (X, 2.0), {}, reverse=False) == {}


def test_a_rules_nondiff_argument_is_told_to_the_tester(testers: Any) -> None:
    f = Scale(no_rule_for=(1,))
    with pytest.raises(AssertionError, match=r"raised NoRuleError: no rule for args\[1\]"):
        testers.test_rrule(f, X, 2.0, rrule_f=f.rrule, rng=0)
    report = f.test_rrule(X, 2.0, rng=0)
    assert report.not_checked == ("args[1]",)
    assert report.notes[-1] == (
        "args[1]: not differentiated by the rule (the framework has no rule for it "
        "(NotImplementedError: no VJP))"
    )
    assert f.asked[-1] == (0,)
    with pytest.raises(AssertionError, match=r"no rule for args\[0\]"):
        Scale(no_rule_for=(0, 1)).test_rrule(X, 2.0, rng=0)


def test_a_tests_notangent_is_told_to_the_rule(testers: Any) -> None:
    # Through a plain tester call too: the rule reads the running tester's declaration
    # (rruletest._marked), so the framework is asked for args[0] only, and nothing fails.
    f = Scale(no_rule_for=(1,))
    report = testers.test_rrule(f, X, with_tangent(2.0, NoTangent()), rrule_f=f.rrule, rng=0)
    assert report.not_checked == ("args[1]",)
    assert set(f.asked) == {(0,)}
    f.asked.clear()  # the list is shared with the copy the method tests
    # outside a tester, every argument is differentiated again
    f.rrule(f, X, 2.0)
    assert f.asked == [(0, 1)]
    f.asked.clear()
    report = f.test_rrule(X, with_tangent(2.0, NoTangent()), rng=0)
    assert report.not_checked == ("args[1]",)
    assert f.asked
    assert set(f.asked) == {(0,)}
    assert f.nondiff_argnums == ()  # the adapter itself is unchanged
    assert f.with_nondiff([]) is f


def test_a_tangent_for_an_argument_the_rule_does_not_differentiate_is_an_error() -> None:
    with pytest.raises(InteropError) as info:
        Scale(nondiff_argnums=[1]).test_rrule(X, with_tangent(2.0, 1.0), rng=0)
    assert str(info.value) == (
        "test_rrule(multiply, ...): args[1] is given a tangent, but the rule does not "
        "differentiate it (in the adapter's nondiff_argnums); pass it bare or "
        "with_tangent(x, NoTangent())"
    )
