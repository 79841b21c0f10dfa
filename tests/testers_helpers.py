"""Rules and helpers shared by the tester tests (a module, not a test file)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, RuleSet, RuleTestFailure, ZeroTangent, unthunk
from rruletest.tangents import AbstractZero

NT = NoTangent()


def failure(call: Any) -> RuleTestFailure:
    with pytest.raises(RuleTestFailure) as info:
        call()
    return info.value


def sin_rules() -> RuleSet:
    rules = RuleSet("sin")

    @rules.register_rrule(np.sin)
    def _sin_rrule(x: Any) -> Any:
        c = np.cos(x)
        return np.sin(x), lambda ybar: (NT, unthunk(ybar) * c)

    @rules.register_frule(np.sin)
    def _sin_frule(dots: Any, x: Any) -> Any:
        return np.sin(x), np.cos(x) * dots[1]

    return rules


def rrule_of(f: Any, pullback_of: Any, primal: Any = None, handle_zero: bool = True) -> RuleSet:
    """A RuleSet whose rrule for ``f`` returns ``primal(*args)`` (default ``f``) and
    ``pullback_of(*args)`` (answering ``ZeroTangent()`` with zeros when ``handle_zero``)."""
    rules = RuleSet("t")

    @rules.register_rrule(f)
    def _rule(*args: Any) -> Any:
        y = (primal or f)(*args)
        pullback = pullback_of(*args)

        def wrapped(ybar: Any) -> Any:
            if handle_zero and isinstance(ybar, AbstractZero):
                return (NT, *(ZeroTangent() for _ in args))
            return pullback(ybar)

        return y, wrapped

    return rules
