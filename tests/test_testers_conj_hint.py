"""The hint for a complex pullback that forgot the conjugate, with a complex ``ybar``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testers_helpers import NT, failure, rrule_of

from rruletest import broadcasted, test_rrule, unthunk
from rruletest.rules import RuleSet
from rruletest.testers._conj_hint import conj_hint

Z = np.array([1 + 2j, 0.5 - 1j])
HINT = (
    "args[0]: xbar / ybar is the complex conjugate of the numerical xbar / ybar at every "
    "element: the pullback multiplies ybar by f'(z) where the convention needs conj(f'(z)) "
    "(xbar = ybar * conj(f'(z)))"
)


def _exp_rules(conj: bool) -> RuleSet:
    def pullback_of(z: Any) -> Any:
        d = np.conj(np.exp(z)) if conj else np.exp(z)
        return lambda ybar: (NT, unthunk(ybar) * d)

    return rrule_of(np.exp, pullback_of)


@pytest.mark.parametrize("z", [Z, complex(Z[0])])
def test_a_forgotten_conj_is_named_with_a_complex_ybar(z: Any) -> None:
    text = str(failure(lambda: test_rrule(np.exp, z, rrule_f=_exp_rules(False).rrule, rng=0)))
    assert HINT in text
    test_rrule(np.exp, z, rrule_f=_exp_rules(True).rrule, rng=0)


def test_a_forgotten_conj_in_a_broadcast_rule_is_named() -> None:
    rules = RuleSet()

    @rules.register_rrule(broadcasted, np.exp)
    def _rule(f: Any, z: Any) -> Any:
        y = np.exp(z)
        return y, lambda ybar: (NT, NT, unthunk(ybar) * y)

    text = str(failure(lambda: test_rrule(broadcasted, np.exp, Z, rrule_f=rules.rrule, rng=0)))
    assert HINT.replace("args[0]", "args[1]") in text


def test_other_mistakes_get_no_conj_hint() -> None:
    ybar = np.array([0.3 - 1j, 2 + 0.5j])
    right = ybar * np.conj(np.exp(Z))
    assert conj_hint("args[0]", Z, 2 * right, right, ybar) is None  # a factor
    assert conj_hint("args[0]", Z, right, right, ybar) is None  # no mistake
    assert conj_hint("args[0]", Z.real, np.conj(right), right, ybar) is None  # a real argument
    # a real ybar: the comparison's own hint (actual is conj(expected)) says it
    assert conj_hint("args[0]", Z, np.exp(Z), np.conj(np.exp(Z)), np.ones(2)) is None
    assert conj_hint("args[0]", Z, np.conj(right)[:1], right, ybar) is None  # another shape
