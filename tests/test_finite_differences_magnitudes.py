"""The bound estimator's magnitudes are those near ``t0``: a stencil reaching far beyond the
input's scale over values far larger than ``|f(t0)|`` is brought within that scale."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rruletest import NoTangent, RuleSet
from rruletest.errors import RuleTestFailure
from rruletest.finite_differences import central_fdm, default_fdm
from rruletest.finite_differences.dense import dense_vjp
from rruletest.finite_differences.magnitudes import LOCAL_REACH, magnitudes
from rruletest.finite_differences.problem import Problem
from rruletest.finite_differences.steps import choose_step
from rruletest.testers import test_frule, test_rrule

BOUND = central_fdm(5, 1).bound_estimator


def _mags(f: Any, t0: float) -> Any:
    prob = Problem(f, np.array([t0]))
    return magnitudes(BOUND, prob, np.inf, choose_step(BOUND, prob, np.inf))


def test_a_stencil_far_wider_than_the_input_is_brought_within_its_scale() -> None:
    c = 4.4e-6
    mags = _mags(lambda t: np.sqrt(t**2 + c**2), 1e-6)
    assert mags.h[0] * BOUND.max_offset == pytest.approx(LOCAL_REACH * 1e-6, rel=1e-6)
    assert mags.fmag[0] < 1.1 * np.sqrt(1.5e-6**2 + c**2)


@pytest.mark.parametrize("f", [np.exp, np.cos, lambda t: 1.0 / (1.0 + t)])
def test_a_function_nearly_constant_over_the_stencil_keeps_its_magnitudes(f: Any) -> None:
    # (its values stay near |f(t0)|: the input's scale says nothing of f's own)
    prob = Problem(f, np.array([1e-6]))
    first = choose_step(BOUND, prob, np.inf)
    assert magnitudes(BOUND, prob, np.inf, first).h[0] == first.h[0] > 1e-3


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1e-9, 1e-7, 1e-6, 1e-5, 1e-3, 1.0, 1e3]), st.floats(0.2, 5.0))
def test_a_homogeneous_function_is_estimated_alike_at_every_scale(s: float, c: float) -> None:
    # sqrt(t**2 + (c s)**2) at t = s: the same derivative, the same relative error at any s
    (est,) = dense_vjp(None, lambda t: np.sqrt(t[0] ** 2 + (c * s) ** 2), 1.0, np.array([s]))
    true = 1.0 / np.sqrt(1.0 + c**2)
    assert abs(est.value[0] - true) <= est.error[0] < 1e-10


def _norm_rules(factor: float) -> RuleSet:
    rules = RuleSet("norm")

    @rules.register_rrule(np.linalg.norm)
    def _rrule(x: Any) -> Any:
        y = np.linalg.norm(x)
        return y, lambda g: (NoTangent(), factor * g * x / y)

    @rules.register_frule(np.linalg.norm)
    def _frule(dots: Any, x: Any) -> Any:
        y = np.linalg.norm(x)
        return y, factor * np.sum(x * dots[1]) / y

    return rules


@pytest.mark.parametrize("scale", [1e-8, 1e-6, 1e-3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_norm_rule_off_by_a_tenth_of_a_percent_is_caught_at_small_inputs(
    scale: float, seed: int
) -> None:
    # (the error estimate was 4000 times the actual error at 1e-6: a rule 1% off passed)
    x = np.random.default_rng(seed).standard_normal(20) * scale
    right, wrong = _norm_rules(1.0), _norm_rules(1.001)
    test_rrule(np.linalg.norm, x, rrule_f=right.rrule, rng=seed)
    test_frule(np.linalg.norm, x, frule_f=right.frule, rng=seed)
    with pytest.raises(RuleTestFailure):
        test_rrule(np.linalg.norm, x, rrule_f=wrong.rrule, rng=seed)
    with pytest.raises(RuleTestFailure):
        test_frule(np.linalg.norm, x, frule_f=wrong.frule, rng=seed)


def test_the_default_method_is_the_one_measured() -> None:
    assert default_fdm().bound_estimator == BOUND
