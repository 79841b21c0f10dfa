"""Subgradients accepted one coordinate at a time, checked together (``testers._joint``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from rruletest import RuleSet, RuleTestFailure, broadcasted, test_rrule

A = np.array([1.0, 2.0, -1.0])
B = np.array([1.0, 0.0, -1.0])  # ties at [0] and [2]
Z = np.array([0.0, 1.0, 0.0])
W = np.array([0.0, -1.0, 2.0])


def _relu_sum(a: Any, b: Any) -> Any:
    return np.maximum(a, 0) + np.maximum(b, 0)


def _relu_diff(a: Any, b: Any) -> Any:
    return np.maximum(a, 0) - np.maximum(b, 0)


def _abs_diff(a: Any, b: Any) -> Any:
    return np.abs(a - b)


def _clip(x: Any, lo: Any, hi: Any) -> Any:
    return np.clip(x, lo, hi)


X, LO, HI = np.array([0.0, 0.5, 1.0]), np.zeros(3), np.ones(3)  # x at lo, then at hi

RIGHT: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = [
    ("max half each", np.maximum,
     lambda a, b, y: (np.where(a == b, 0.5, a > b), np.where(a == b, 0.5, b > a)), (A, B)),
    ("max to the first", np.maximum, lambda a, b, y: (1.0 * (a >= b), 1.0 * (b > a)), (A, B)),
    ("relu(a) + relu(b), 1 each", _relu_sum,
     lambda a, b, y: (1.0 * (a >= 0), 1.0 * (b >= 0)), (Z, W)),
    ("relu(a) - relu(b), 1 and -1", _relu_diff,
     lambda a, b, y: (1.0 * (a >= 0), -1.0 * (b >= 0)), (Z, W)),
    ("|a - b|, 1 and -1", _abs_diff,
     lambda a, b, y: (np.where(a >= b, 1.0, -1.0), np.where(a >= b, -1.0, 1.0)), (A, B)),
    ("|a - b|, 0 at the tie", _abs_diff,
     lambda a, b, y: (np.sign(a - b), -np.sign(a - b)), (A, B)),
    ("clip, to the bound", _clip,
     lambda x, lo, hi, y: (1.0 * ((x > lo) & (x < hi)), 1.0 * (x <= lo), 1.0 * (x >= hi)),
     (X, LO, HI)),
]  # fmt: skip

WRONG: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[Any, ...], str]] = [
    ("max to both", np.maximum, lambda a, b, y: (1.0 * (a >= b), 1.0 * (b >= a)), (A, B),
     "args[1][0] and args[2][0]: each lies between its one-sided derivatives, but not "
     "together: moving them all at once, the pullback's partials add up to 2 where the "
     "one-sided derivatives are 1 and 1, so they are no subgradient (fails)"),
    ("min to both", np.minimum, lambda a, b, y: (1.0 * (a <= b), 1.0 * (b <= a)), (A, B),
     "args[1][2] and args[2][2]: each lies between"),
    ("|a - b|, 1 and 1", _abs_diff,
     lambda a, b, y: (np.where(a >= b, 1.0, -1.0), np.where(a > b, -1.0, 1.0)), (A, B),
     "the pullback's partials add up to 2 where the one-sided derivatives are 0 and 0"),
    ("clip, to x and the bound", _clip,
     lambda x, lo, hi, y: (1.0 * ((x >= lo) & (x <= hi)), 1.0 * (x <= lo), 1.0 * (x >= hi)),
     (X, LO, HI), "args[1][0] and args[2][0]: each lies between"),
]  # fmt: skip


def _rules(f: Any, partials: Any) -> RuleSet:
    rules = RuleSet()
    rules.scalar_rule(f, partials)
    return rules


@pytest.mark.parametrize(("name", "f", "partials", "args"), RIGHT, ids=[r[0] for r in RIGHT])
def test_subgradients_together_pass(name: str, f: Any, partials: Any, args: Any) -> None:
    test_rrule(broadcasted, f, *args, rrule_f=_rules(f, partials).rrule, rng=0)


@pytest.mark.parametrize(
    ("name", "f", "partials", "args", "line"), WRONG, ids=[w[0] for w in WRONG]
)
def test_no_subgradient_together_fails(
    name: str, f: Any, partials: Any, args: Any, line: str
) -> None:
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(broadcasted, f, *args, rrule_f=_rules(f, partials).rrule, rng=0)
    assert info.value.checks == ["numeric"]
    assert line in str(info.value)


def test_a_reduced_argument_keeps_the_interval_of_sums() -> None:
    # b is broadcast over a: its cotangent sums the output elements, whose partials it no
    # longer tells apart, so only each argument's own check applies.
    f, partials = np.maximum, lambda a, b, y: (1.0 * (a >= b), 1.0 * (b >= a))
    a, b = np.array([1.0, 2.0, 0.0]), np.array([1.0])
    test_rrule(broadcasted, f, a, b, rrule_f=_rules(f, partials).rrule, rng=0)
