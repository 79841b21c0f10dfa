"""The last fallback: a ladder of steps around the chosen one, and the estimate of least spread.

Some elements fail every check and retry although their derivative is well defined: ``f``
amplifies its own rounding far beyond the round-off model (``inv`` of a matrix of condition
1e3: its rounding is about the condition number times the model's), and the bound estimator,
whose step reached towards a pole, gave a truncation model that does not hold either. Their
estimates still behave as finite differences do: along steps ``h * 2**k`` the truncation
error shrinks as the step does until round-off takes over, so successive estimates change
least where the two balance. ``ladder`` takes, per element, the estimate whose changes to its
two neighbours on the ladder are smallest, with twice the larger change as its error, where
that change is small against the estimates themselves (a singularity inside the stencil, or
noise, changes them by about their own size). A kink is no such element: the caller keeps
the elements whose one-sided estimates disagree out.

>>> from rruletest.finite_differences import central_fdm
>>> from rruletest.finite_differences.attempt import attempt
>>> prob = Problem(np.sin, np.array([1.0]))
>>> est = ladder(central_fdm(5, 1), prob, attempt(central_fdm(5, 1), prob, None), np.array([True]))
>>> bool(est.done[0]), bool(abs(est.value[0] - np.cos(1.0)) <= est.error[0] < 1e-9)
(True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.attempt import Result, attempt, merge
from rruletest.finite_differences.kernels import Stencil, lower_step
from rruletest.finite_differences.problem import Problem, reduce_to

__all__ = ["LADDER", "SPREAD_LIMIT", "ladder"]

Arr = npt.NDArray[Any]

#: The ladder's steps, as powers of 2 times the element's step.
LADDER = tuple(range(-4, 4))
#: An estimate whose changes to its neighbours exceed this fraction of the element's largest
#: estimate is not taken (a singularity or noise, not a derivative).
SPREAD_LIMIT = 1e-4


def ladder(m: Stencil, prob: Problem, res: Result, retry: Arr) -> Result:
    """For the ``retry`` elements, estimates at ``res.step * 2**k`` (``k`` in ``LADDER``);
    returns, with ``done`` where one was found, the estimate of least spread (the larger of
    its changes to its neighbours, summed over the element's outputs) whose spread is below
    ``SPREAD_LIMIT`` of its size, with ``max(2 * spread, its own error)`` per output as error.
    The other elements are as in ``res``, with ``done`` false. A rung below the step the
    input resolves (``lower_step``) has no estimate: its points round to the same few inputs,
    and equal estimates there would pass for a spread of 0."""
    h = res.step.astype(np.float64)
    lower = lower_step(m, prob)
    rungs = [_rung(m, prob, np.where(retry, h * 2.0**k, h), lower) for k in LADDER]
    out = res._replace(done=np.zeros(prob.t_shape, dtype=bool))
    best = np.full(prob.t_shape, np.inf)
    for low, mid, high in zip(rungs, rungs[1:], rungs[2:], strict=False):
        with np.errstate(invalid="ignore"):
            spread = np.maximum(np.abs(mid.value - low.value), np.abs(high.value - mid.value))
        error = np.maximum(2.0 * spread, mid.error)
        finite = reduce_to(np.isfinite(error) & np.isfinite(mid.value), prob.t_shape, np.all)
        total = np.where(finite, reduce_to(spread, prob.t_shape, np.sum), np.inf)
        size = reduce_to(np.abs(mid.value), prob.t_shape, np.max)
        worst = reduce_to(spread, prob.t_shape, np.max)
        take = retry & finite & mid.done & (total < best) & (worst <= SPREAD_LIMIT * size)
        if take.any():
            out = merge(out, mid._replace(error=error), take)
            best = np.where(take, total, best)
    return out


def _rung(m: Stencil, prob: Problem, step: Arr, lower: Arr) -> Result:
    """The estimate at ``step``, NaN (error infinite) where ``step`` is below ``lower``."""
    est = attempt(m, prob, step)
    below = step < lower
    if not below.any():
        return est
    below_y = np.broadcast_to(below, est.value.shape)
    return est._replace(
        value=np.where(below_y, np.nan, est.value),
        error=np.where(below_y, np.inf, est.error),
        done=est.done & ~below,
    )
