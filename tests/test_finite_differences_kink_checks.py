"""Kink checks of a rule's cotangents and tangents, as the testers run them."""

from __future__ import annotations

import numpy as np

from rruletest.finite_differences.kink_checks import (
    broadcast_jvp_kinks,
    broadcast_vjp_kinks,
    directional_kinks,
)
from rruletest.finite_differences.kinks import Kind
from rruletest.tangents import NoTangent, ZeroTangent


def relu(x):
    return np.maximum(x, 0.0)


def test_relu_pullback_conventions_are_accepted_with_a_note():
    x = np.array([-1.0, 0.0, 2.0])
    ybar = np.array([3.0, -2.0, 1.0])
    for derivative_at_zero in (0.0, 0.5, 1.0):
        xbar = ybar * np.where(x > 0, 1.0, np.where(x == 0, derivative_at_zero, 0.0))
        (report,) = broadcast_vjp_kinks(None, relu, ybar, (xbar,), x)
        assert report.accepted.tolist() == [False, True, False]
        assert not report.failed.any()
        assert report.lines == [
            f"args[0][1] = 0.0 is a kink: left derivative 0, right derivative 1; the rule gives "
            f"{derivative_at_zero:g} (its cotangent {-2 * derivative_at_zero:g} for ybar -2), "
            "between them (accepted)"
        ]


def test_wrong_cotangent_at_a_kink_fails_and_says_so():
    x = np.array([0.0, 0.0])
    ybar = np.array([1.0, 1.0])
    (report,) = broadcast_vjp_kinks(None, relu, ybar, (np.array([-1.0, 0.25]),), x)
    assert report.failed.tolist() == [True, False]
    assert report.lines[0].endswith(
        "the rule gives -1 (its cotangent -1 for ybar 1), outside them: no one-sided "
        "derivative supports it (fails)"
    )


def test_broadcast_scalar_argument_gets_a_summed_interval():
    # maximum(x, c), scalar c: ties at elements 0 and 2 (ybar 1 and 2) give [0, 3], element 3
    # (x < c) adds 1: the cotangent of c may be anything in [1, 4].
    x = np.array([1.0, 2.0, 1.0, 0.0])
    ybar = np.array([1.0, 1.0, 2.0, 1.0])
    ok = broadcast_vjp_kinks(None, np.maximum, ybar, (np.array([1.5, 1, 1, 0]), 1.5), x, 1.0)
    assert [r.kinds if r is not None else None for r in ok][1] is Kind.INSIDE
    bad = broadcast_vjp_kinks(None, np.maximum, ybar, (ZeroTangent(), 5.0), x, 1.0)
    assert bad[0] is None
    assert bad[1].failed
    assert bad[1].lines == [
        "args[1] = 1.0 feeds output elements at kinks: its cotangent may lie anywhere in "
        "[1, 4]; the rule gives 5, outside (fails)"
    ]


def test_nothing_checked_without_a_cotangent_or_differentiable_argument():
    x = np.array([0.0])
    assert broadcast_vjp_kinks(None, relu, ZeroTangent(), (np.ones(1),), x) == (None,)
    assert broadcast_vjp_kinks(None, np.add, np.ones(1), (NoTangent(), 1.0), 3, x)[0] is None


def test_floor_pullback_at_a_jump_is_not_compared():
    (report,) = broadcast_vjp_kinks(None, np.floor, np.ones(2), (np.zeros(2),), np.array([1, 1.5]))
    assert report.kinds.tolist() == [Kind.JUMP, Kind.SMOOTH]
    assert report.accepted.tolist() == [True, False]
    assert report.lines == [
        "args[0][0] = 1.0: f jumps there, so it has no derivative; the rule's 0 (its cotangent "
        "0 for ybar 1) was not compared"
    ]


def test_frule_of_maximum_at_a_tie_along_a_tangent():
    x, y = np.array([1.0, 3.0]), np.array([1.0, 0.0])
    pairs = ((x, np.array([2.0, 2.0])), (y, np.array([-1.0, -1.0])))
    # at the tie the directional derivative lies in [min(2, -1), max(2, -1)] = [-1, 2]
    good = broadcast_jvp_kinks(None, np.maximum, np.array([0.5, 2.0]), *pairs)
    assert good.kinds.tolist() == [Kind.INSIDE, Kind.SMOOTH]
    bad = broadcast_jvp_kinks(None, np.maximum, np.array([3.0, 2.0]), *pairs)
    assert bad.failed.tolist() == [True, False]
    assert bad.lines == [
        "output[0] is at a kink along the tangent: left derivative -1, right derivative 2; the "
        "rule gives 3, outside them: no one-sided derivative supports it (fails)"
    ]


def test_directional_pullback_of_a_norm_at_zero():
    # <xbar, xdot> of the 1-norm at 0 for xdot = (1, -1): any subgradient gives [-2, 2].
    x, xdot = np.zeros(2), np.array([1.0, -1.0])
    report = directional_kinks(None, lambda v: np.sum(np.abs(v)), 0.0, (x, xdot))
    assert report.kinds is Kind.INSIDE
    assert report.accepted
    wrong = directional_kinks(None, lambda v: np.sum(np.abs(v)), 2.5, (x, xdot))
    assert wrong.failed
    assert wrong.lines == [
        "output is at a kink along the tangent: left derivative -2, right derivative 2; the "
        "rule gives 2.5, outside them: no one-sided derivative supports it (fails)"
    ]


def test_many_findings_are_counted_after_the_first_ten_failing_first():
    x = np.zeros(30)
    xbar = np.where(np.arange(30) == 25, 3.0, 0.5)
    (report,) = broadcast_vjp_kinks(None, relu, np.ones(30), (xbar,), x)
    assert int(report.accepted.sum()) == 29
    assert len(report.lines) == 11
    assert report.lines[0].startswith("args[0][25] = 0.0 is a kink")
    assert report.lines[0].endswith("(fails)")
    assert report.lines[1].startswith("args[0][0] = 0.0 is a kink")
    assert report.lines[-1] == (
        "... and 20 more elements at kinks or jumps (in all: 1 outside, 29 inside, 0 at jumps)"
    )
