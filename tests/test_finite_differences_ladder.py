"""The ladder: the last fallback, for elements every check and retry left unreliable although
their derivative is well defined (``inv`` near its pole); noise and singularities stay
unreliable."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, RuleSet, RuleTestFailure
from rruletest.finite_differences import central_fdm
from rruletest.finite_differences.attempt import attempt
from rruletest.finite_differences.dense import DenseJacobian
from rruletest.finite_differences.ladder import ladder
from rruletest.finite_differences.problem import Problem
from rruletest.testers import test_frule, test_rrule

M = central_fdm(5, 1)


def test_a_smooth_element_gets_an_estimate_within_its_error() -> None:
    x = np.array([0.5, 2.0])
    prob = Problem(np.exp, x)
    est = ladder(M, prob, attempt(M, prob, None), np.array([True, True]))
    assert est.done.all()
    assert np.all(np.abs(est.value - np.exp(x)) <= est.error)
    assert np.all(est.error < 1e-8 * np.exp(x))


def test_elements_not_asked_for_keep_their_estimate_and_have_none() -> None:
    prob = Problem(np.exp, np.array([0.5, 2.0]))
    first = attempt(M, prob, None)
    est = ladder(M, prob, first, np.array([True, False]))
    assert est.done.tolist() == [True, False]
    assert est.value[1] == first.value[1]


def test_noise_is_not_taken_for_a_derivative() -> None:
    rng = np.random.default_rng(0)

    def noisy(t: Any) -> Any:
        return np.sin(t) + 1e-6 * rng.standard_normal(np.shape(t))

    prob = Problem(noisy, np.array([1.0]))
    est = ladder(M, prob, attempt(M, prob, np.array([1e-4])), np.array([True]))
    assert not est.done[0]


def test_a_singularity_inside_the_stencil_is_not_taken_for_a_derivative() -> None:
    prob = Problem(lambda t: 1.0 / t, np.array([1e-6]))
    est = ladder(M, prob, attempt(M, prob, np.array([1e-5])), np.array([True]))
    assert not est.done[0]


def _ill_conditioned(seed: int, cond: float, n: int = 4) -> Any:
    """A matrix of condition number ``cond`` (random singular vectors)."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((n, n)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (u * np.geomspace(1.0, 1.0 / cond, n)) @ v.T


@pytest.mark.parametrize("seed", range(4))
def test_every_row_of_an_ill_conditioned_inverse_is_estimated(seed: int) -> None:
    # Condition 1e3: inv's rounding is far beyond the round-off model, and the bound
    # estimator's step reaches towards the pole; before the ladder, whole rows of the Jacobian
    # were left without an estimate (a frule test then compared nothing).
    a = _ill_conditioned(seed, 1e3)
    y = np.linalg.inv(a)
    exact = np.stack([(-y @ e.reshape(4, 4) @ y).ravel() for e in np.eye(16)])
    (block,) = DenseJacobian(None, np.linalg.inv, (a,)).blocks()
    assert np.all(np.isfinite(block.error))
    assert np.max(np.abs(block.value - exact)) < 1e-9 * np.max(np.abs(exact))


def _inv_rules(wrong: bool) -> RuleSet:
    rules = RuleSet("inv")

    def ydot(d: Any, y: Any) -> Any:
        out = -y @ d @ y
        if wrong:
            out[1, 2] *= 1.001
        return out

    @rules.register_frule(np.linalg.inv)
    def _frule(dots: Any, a: Any) -> Any:
        y = np.linalg.inv(a)
        return y, ydot(dots[1], y)

    @rules.register_rrule(np.linalg.inv)
    def _rrule(a: Any) -> Any:
        y = np.linalg.inv(a)
        return y, lambda ybar: (NoTangent(), -y.T @ ybar @ y.T)

    return rules


@pytest.mark.parametrize("cond", [1e3, 1e4])
@pytest.mark.parametrize("seed", range(3))
def test_inverse_rules_near_the_pole_pass_when_right_and_fail_when_off(
    seed: int, cond: float
) -> None:
    a = _ill_conditioned(seed, cond)
    right = _inv_rules(wrong=False)
    test_frule(np.linalg.inv, a, frule_f=right.frule, rng=seed)
    test_rrule(np.linalg.inv, a, rrule_f=right.rrule, rng=seed)
    with pytest.raises(RuleTestFailure, match=r"ydot: 1 of 16 elements differ"):
        test_frule(np.linalg.inv, a, frule_f=_inv_rules(wrong=True).frule, rng=seed)


def test_rungs_below_what_the_input_resolves_are_not_taken() -> None:
    # The lower rungs round every point to t = 0: their estimates (0) agree, a spread of 0,
    # and 0 was taken with an error of 0.
    r = 1e-3
    prob = Problem(lambda t: np.sin(1.0 + np.round(t / r) * r), np.array([0.0]), resolution=r)
    first = attempt(M, prob, np.array([r]))
    est = ladder(M, prob, first, np.array([True]))
    assert not (est.done[0] and abs(est.value[0] - np.cos(1.0)) > est.error[0])
