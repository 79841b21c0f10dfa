"""The convergence retry: elements whose estimates disagree at a step and half of it get ever
smaller steps; the outputs of a problem that is not elementwise settle one by one, but only
while they cross kinks (round-off growing as the step shrinks stops them where it did)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.finite_differences import central_fdm, jvp_estimate
from rruletest.finite_differences.attempt import attempt
from rruletest.finite_differences.converge import CONVERGE_LEVELS, converge
from rruletest.finite_differences.problem import Problem

M = central_fdm(5, 1)


def _levels(prob: Problem, retry: Any) -> tuple[Any, Any, int]:
    """``converge`` from a first attempt, and how many steps it estimated at."""
    first = attempt(M, prob, None)
    seen: set[float] = set()
    phi = prob.phi

    def counting(t: Any) -> Any:
        seen.add(float(np.asarray(t).reshape(-1)[0]))
        return phi(t)

    prob.phi = counting
    res, alone, _ = converge(M, prob, first, retry)
    return res, alone, len(seen) // 4  # four stencil points per level


def test_outputs_crossing_kinks_settle_one_by_one() -> None:
    # Two outputs along t: one kinked 1e-9 from 0, one smooth. At the first step both cross
    # nothing the half-step check could miss, but the kinked one has no common step with the
    # smooth one within the retry's own levels.
    def f(t: Any) -> Any:
        s = np.asarray(t, dtype=np.float64).reshape(-1)[0]
        return np.array([abs(s - 1e-9) + 2.0 * s, np.sin(s)])

    prob = Problem(f, np.zeros(1))
    res, alone, levels = _levels(prob, np.array([True]))
    value, error = np.asarray(res.value), np.asarray(res.error)
    assert levels > CONVERGE_LEVELS
    assert bool(alone[0])
    assert abs(value[0] - 1.0) <= error[0] < 1e-3  # the left slope: 0 is left of the kink
    assert abs(value[1] - 1.0) <= error[1] < 1e-6


def test_round_off_growing_as_the_step_shrinks_stops_at_the_retrys_levels() -> None:
    # An output whose rounding is 1e3 times the model's: no level settles it, and it shows no
    # kink, so the retry stops after its own levels, as it did before outputs went on alone.
    rng = np.random.default_rng(0)

    def f(t: Any) -> Any:
        s = np.asarray(t, dtype=np.float64).reshape(-1)[0]
        noise = rng.standard_normal() * 1e3 * np.spacing(1.0)
        return np.array([1.0 + s + noise, np.sin(s)])

    prob = Problem(f, np.zeros(1))
    first = attempt(M, prob, None)
    first = first._replace(error=np.array([np.inf, first.error[1]]))  # as the check left it
    calls = [0]
    phi = prob.phi

    def counting(t: Any) -> Any:
        calls[0] += 1
        return phi(t)

    prob.phi = counting
    _, alone, _ = converge(M, prob, first, np.array([True]))
    assert not bool(alone[0])
    assert calls[0] <= 4 * 2  # within KINKED round-off models two levels running: it stops


def test_cancellation_inside_f_stops_after_two_levels() -> None:
    # (1e4 + t) - 1e4 rounds by ulp(1e4), 1e4 times the model of ulp(f): every level of the
    # retry would only grow that rounding (4 levels, 16 calls before); it stays unreliable for
    # the scaled round-off model to take, while tanh(t / 1e-6) still converges.
    calls = [0]

    def f(t: Any) -> Any:
        calls[0] += 1
        return (1e4 + t) - 1e4

    prob = Problem(f, np.array([0.3, 0.7]))
    first = attempt(M, prob, None)
    first = first._replace(error=np.full(2, np.inf))  # as the half-step check left it
    calls[0] = 0
    res, _, _ = converge(M, prob, first, np.array([True, True]))
    assert calls[0] == 4 * 2
    assert np.all(np.isinf(res.error))
    sharp = Problem(lambda t: np.tanh(t / 1e-6), np.array([0.0]))
    res, _, _ = converge(M, sharp, attempt(M, sharp, None), np.array([True]))
    assert abs(res.value[0] - 1e6) <= res.error[0] < 1e3


def _coarse(r: float) -> Problem:
    """``sin(1 + t)`` of an input that resolves ``t`` only in steps of ``r``: below them every
    point rounds to the same few inputs."""
    return Problem(lambda t: np.sin(1.0 + np.round(t / r) * r), np.array([0.0]), resolution=r)


def test_no_step_below_what_the_input_resolves() -> None:
    # Steps of h/8, h/64 round every point to t = 0: estimates of exactly 0 agreed, and 0 was
    # taken as converged with a finite error (a float32 jvp of sin(x) * x at 2060: 0 +- 5 for
    # a derivative of 69).
    r = 1e-3
    prob = _coarse(r)
    first = attempt(M, prob, np.array([8 * r]))
    res, _, _ = converge(M, prob, first, np.array([True]))
    assert not (np.isfinite(res.error[0]) and abs(res.value[0] - np.cos(1.0)) > res.error[0])


def test_a_float32_jvp_where_the_retries_reached_below_the_input_resolution() -> None:
    x = np.array([-2060.3042], dtype=np.float32)
    d = np.array([-0.04019046], dtype=np.float32)
    est = jvp_estimate(M, lambda x: np.sin(x) * x[::-1], (x, d))
    x64 = x.astype(np.float64)
    truth = (np.cos(x64) * x64 + np.sin(x64)) * d
    assert abs(float(est.value[0]) - truth[0]) <= est.error[0]
