"""One-sided estimates of a central method: stencils across 0 are checked against the side of
0 the point is on, where kinks such as relu's live."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import RuleSet, broadcasted, test_frule, test_rrule
from rruletest.finite_differences import central_fdm
from rruletest.finite_differences.dense import dense_vjp

POINTS = np.array([-1e-300, -1e-200, -1e-100, -1e-6, 1e-6, 1e-100, 1e-300, -5e-324, 1.0])


def _relu(x: Any) -> Any:
    return np.maximum(x, 0.0)


def test_a_kink_at_zero_inside_the_stencil_is_not_averaged() -> None:
    # Every step reaching across 0 gave 0.5, consistent at half the step, with an error of 1e-12.
    est = central_fdm(5, 1).estimate(_relu, POINTS)
    np.testing.assert_allclose(est.value, np.where(POINTS > 0, 1.0, 0.0), rtol=0, atol=1e-12)
    assert np.all(est.error < 1e-12)


def test_smooth_functions_across_zero_keep_their_central_estimate() -> None:
    x = np.array([-1e-300, 1e-6, -1e-6, 1e-100, 3e-4])
    for f, df in (
        (np.sin, np.cos),
        (np.exp, np.exp),
        (lambda t: t * np.abs(t), lambda t: 2 * np.abs(t)),
    ):
        est = central_fdm(5, 1).estimate(f, x)
        assert np.all(np.abs(est.value - df(x)) <= est.error + 1e-15)
        assert np.all(est.error < 1e-10)


def test_a_dense_row_across_a_kink_at_zero() -> None:
    x = np.array([-1e-100, 2.0, 1e-300, -3.0])
    (est,) = dense_vjp(None, lambda v: np.cumsum(_relu(v)), np.ones(4), x)
    np.testing.assert_allclose(est.value, [0.0, 3.0, 2.0, 0.0], rtol=0, atol=1e-9)


def _rules(partial: Any) -> RuleSet:
    rules = RuleSet()
    rules.scalar_rule(_relu, lambda x, y: (partial(x),))
    return rules


@pytest.mark.parametrize("x0", [-1e-300, -1e-100, -5e-324, 1e-300])
def test_a_right_relu_rule_passes_next_to_zero_and_a_wrong_one_fails(x0: float) -> None:
    """Hypothesis shrinks inputs towards 0: at -1e-300 a right relu rule failed with 'expected
    3.16' (the averaged slope 1/2 of the stencil across 0, times ybar)."""
    x = np.array([x0, 1.0])
    right = _rules(lambda x: np.where(x > 0, 1.0, 0.0))
    test_rrule(broadcasted, _relu, x, rrule_f=right.rrule, rng=0)
    test_frule(broadcasted, _relu, x, frule_f=right.frule, rng=0)
    wrong = _rules(lambda x: np.where(x > 0, 1.0, 0.0) + (np.sign(x) == np.sign(x0)) * 0.5)
    with pytest.raises(AssertionError, match=r"args\[1\]: 1 of 2 elements differ"):
        test_rrule(broadcasted, _relu, x, rrule_f=wrong.rrule, rng=0)


def test_a_problem_whose_elements_broadcast_against_the_output_from_the_right() -> None:
    # matmul of (2, 1, 2, 3) and (4, 3, 2), declared "(m,k),(k,n)->(m,n)" (the gate's draw,
    # b[3, 2, 1] = 0.01 within its step of 0): the batched problem's t of shape (4, 1, 1)
    # meets outputs of shape (2, 4, 2, 2), and the one-sided values were signed as if t were
    # aligned on the left ("operands could not be broadcast", an internal error).
    from rruletest.finite_differences.batched import batched_vjp

    a = np.array([[[[1.28, 0.49, -0.51], [0.46, 0.21, -0.46]]],
                  [[[0.47, -1.0, 0.21], [1.39, 1.2, -1.2]]]])  # fmt: skip
    b = np.array([[[-1.098, 0.56], [-0.47, -0.85], [-1.296, -1.35]],
                  [[-0.28, -0.26], [-0.31, 0.13], [1.133, 1.364]],
                  [[-0.31, -0.54], [-1.17, 1.617], [0.73, 1.364]],
                  [[-0.78, -0.963], [-0.38, -0.66], [0.25, 0.01]]])  # fmt: skip
    ybar = np.random.default_rng(0).standard_normal((2, 4, 2, 2))
    ea, eb = batched_vjp(None, "(m,k),(k,n)->(m,n)", np.matmul, ybar, a, b)
    expected_a = (ybar @ np.swapaxes(b, -1, -2)).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ea.value, expected_a, atol=1e-8)
    np.testing.assert_allclose(eb.value, (np.swapaxes(a, -1, -2) @ ybar).sum(axis=0), atol=1e-8)
