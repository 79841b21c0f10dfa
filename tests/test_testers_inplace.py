"""``test_rrule`` runs the in-place path of an ``InplaceableThunk`` a pullback returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest import NoTangent, RuleSet, test_rrule, unthunk
from rruletest.tangents import InplaceableThunk
from tests.testers_helpers import failure

NT = NoTangent()
X = np.array([0.5, 1.0, 2.0])


def scaled(x: Any) -> Any:
    return 3.0 * x


def rules_with(add: Callable[[Any, Any], Any]) -> RuleSet:
    """An rrule for ``scaled`` whose cotangent is ``InplaceableThunk(b -> add(b, value))``."""
    rules = RuleSet("inplace")

    @rules.register_rrule(scaled)
    def _rrule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            yb = unthunk(ybar)
            value = np.zeros_like(x) if isinstance(yb, NoTangent | type(None)) else 3.0 * yb

            def add_fn(b: Any) -> Any:
                return add(b, value)

            return NT, InplaceableThunk(add_fn, lambda: np.asarray(3.0 * np.zeros_like(x) + value))

        return scaled(x), pullback

    return rules


def _iadd(b: Any, v: Any) -> Any:
    b += v
    return b


def test_a_right_inplace_path_passes() -> None:
    test_rrule(scaled, X, rrule_f=rules_with(_iadd).rrule, rng=0)


def test_an_inplace_path_adding_200_times_fails() -> None:
    def wrong(b: Any, v: Any) -> Any:
        b += 200 * v
        return b

    err = failure(lambda: test_rrule(scaled, X, rrule_f=rules_with(wrong).rrule, rng=0))
    text = str(err)
    assert (
        "[inplace] args[0]: InplaceableThunk.add_fn(buffer) differs from buffer + "
        "unthunk(thunk) (the in-place and out-of-place paths disagree)"
    ) in text
    assert err.checks == ["inplace"]


def test_an_inplace_path_that_is_not_in_place_fails() -> None:
    text = str(failure(lambda: test_rrule(scaled, X, rrule_f=rules_with(np.add).rrule, rng=0)))
    assert "args[0]: InplaceableThunk.add_fn(buffer) did not add into the buffer in place" in text


def test_an_inplace_path_that_raises_is_reported() -> None:
    def broken(b: Any, v: Any) -> Any:
        raise RuntimeError("no buffer today")

    text = str(failure(lambda: test_rrule(scaled, X, rrule_f=rules_with(broken).rrule, rng=0)))
    assert "args[0]: InplaceableThunk.add_fn(buffer) raised RuntimeError: no buffer today" in text
    assert "add_fn(x) must add the tangent into x and return x" in text


def test_an_inplace_path_that_adds_but_returns_none_fails() -> None:
    def returns_none(b: Any, v: Any) -> Any:
        b += v

    err = failure(lambda: test_rrule(scaled, X, rrule_f=rules_with(returns_none).rrule, rng=0))
    assert err.checks == ["inplace"]
    assert (
        "[inplace] args[0]: InplaceableThunk.add_fn(buffer) added into the buffer but returned "
        "None, not the buffer (add_fn(x) must return x: accumulating code keeps what it returns)"
    ) in str(err)
