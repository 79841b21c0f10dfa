"""A float32 broadcast rule that differs from its float32 reference is checked against the
reference at float64 copies, whose steps resolve ties the float32 steps reach across."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import RuleSet, RuleTestFailure, broadcasted, test_frule, test_rrule

# a[0] and b[0] are 0.0057 apart: the float32 step near -1.7 (about 0.04) reaches across.
A = np.array([[-1.742513656616211], [-2.0282576084136963], [0.7486985325813293]], np.float32)
B = np.array([-1.7368555068969727, 0.4470572769641876, 0.6707091331481934, 0.8068993091583252],
             np.float32)  # fmt: skip


def _rules(off: float = 0.0) -> RuleSet:
    rules = RuleSet()

    def partials(a: Any, b: Any, y: Any) -> Any:
        left = np.where(a <= b, 1.0, 0.0).astype(y.dtype)
        left = left * (1 + off) if np.ndim(left) else left
        return left, (1 - np.where(a <= b, 1.0, 0.0)).astype(y.dtype)

    rules.scalar_rule(np.minimum, partials)
    return rules


@pytest.mark.parametrize("seed", range(3))
def test_a_near_tie_of_minimum_in_float32_is_resolved_in_float64(seed: int) -> None:
    # The float32 reference averaged the two sides' slopes there: a right rule failed.
    report = test_rrule(broadcasted, np.minimum, A, B, rrule_f=_rules().rrule, rng=seed)
    assert "args[1]: 1 element(s) where the rule differs from the float32 structured " in "\n".join(
        report.notes
    )
    report = test_frule(broadcasted, np.minimum, A, B, frule_f=_rules().frule, rng=seed)
    assert any(n.startswith("ydot: 1 element(s) where the rule differs") for n in report.notes)


def test_a_wrong_float32_rule_still_fails() -> None:
    with pytest.raises(RuleTestFailure, match=r"args\[1\]: the cotangent differs"):
        test_rrule(broadcasted, np.minimum, A, B, rrule_f=_rules(0.01).rrule, rng=0)
    with pytest.raises(RuleTestFailure, match=r"ydot: the output tangent differs"):
        test_frule(broadcasted, np.minimum, A, B, frule_f=_rules(0.01).frule, rng=0)


def test_float64_inputs_are_not_estimated_again() -> None:
    a, b = A.astype(np.float64), B.astype(np.float64)
    report = test_rrule(broadcasted, np.minimum, a, b, rrule_f=_rules().rrule, rng=0)
    assert not [n for n in report.notes if "float64 copies" in n]
