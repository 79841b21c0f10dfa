"""Scalar rules for numpy's binary ufuncs.

``partials(a, b, y)`` returns one partial per argument; the scalar-rule machinery unbroadcasts
each cotangent back to its argument's shape, so ``add(x, 1.0)`` or a ``(3, 1)`` by ``(4,)``
product need nothing special here.

Non-differentiable points and the value returned there (the gate's inputs avoid them):

- ``maximum``/``minimum`` at ties ``a == b``: the derivative is split, 1/2 to each argument, in
  both the rrule and the frule (``ydot = (adot + bdot) / 2``): the average of the two one-sided
  derivatives along the diagonal, symmetric in the arguments.
- ``hypot`` at ``(0, 0)``: subgradient ``(0, 0)``.
- ``arctan2(y, x)`` on its cut (``y == 0``, ``x < 0``, where it jumps from pi to -pi) the formula
  ``(x, -y) / (x**2 + y**2)`` is used as is; at the origin the partials are ``(0, 0)``.
- ``power(x, p)``: the partial in ``p`` is ``y * log(x)``, defined for ``x > 0`` (real) or
  ``x != 0`` (complex); at ``x == 0`` it is 0 (the limit for ``p > 0``) and for real ``x < 0``
  it is NaN (``x**p`` is not real near non-integer ``p``). The partial in ``x`` is
  ``p * x**(p - 1)``, 0 where ``p == 0``. A non-differentiable exponent (an integer) is never
  differentiated, so ``power(-2.0, 3)`` has the rule ``3 * x**2`` without warnings.

Domains (``avoid`` keeps generated inputs ``MARGIN`` away, relative for ties): ties of
``maximum``/``minimum``; the origin of ``hypot``; the cut and the origin of ``arctan2``; divisors
near 0 (``divide``); for ``power`` a positive base (real), complex bases away from the cut
``(-inf, 0]``, and results beyond ``1e+-26`` (``POWER_LOG_LIMIT``).

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.multiply, np.array([1.0, 2.0]), 3.0)
>>> pullback(np.ones(2))
(NoTangent(), array([3., 3.]), 3.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.domains import POSITIVE, REALS, Domain
from rruletest.projection import is_differentiable
from rruletest.rules import scalar_rule
from rruletest.rulesets.numpy._common import MARGIN, near_real_segment, relative_gap

__all__: list[str] = []


def _ones(y: Any) -> Any:
    return np.ones(np.shape(y), dtype=np.result_type(y))


def _d_add(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    one = _ones(y)
    return one, one


def _d_subtract(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    one = _ones(y)
    return one, -one


def _d_multiply(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    return b, a


def _d_divide(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    inv = 1 / np.asarray(b)
    return inv, -y * inv


def _d_power(x: Any, p: Any, y: Any) -> tuple[Any, Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        if is_differentiable(x):
            xm = np.asarray(x)
            dx = np.where(p == 0, 0, p * np.power(xm, np.asarray(p) - 1))
        else:
            dx = np.zeros(np.shape(y), dtype=np.result_type(y))
        if is_differentiable(p):
            dp = np.where(np.asarray(x) == 0, 0, y * np.log(np.asarray(x, dtype=np.result_type(y))))
        else:
            dp = np.zeros(np.shape(y), dtype=np.result_type(y))
    return dx, dp


def _d_hypot(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    safe = np.where(y == 0, 1, y)
    return np.where(y == 0, 0, a / safe), np.where(y == 0, 0, b / safe)


def _d_arctan2(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    r2 = np.asarray(a * a + b * b)
    safe = np.where(r2 == 0, 1, r2)
    return np.where(r2 == 0, 0, b / safe), np.where(r2 == 0, 0, -a / safe)


def _split(first_wins: Any, tie: Any, y: Any) -> tuple[Any, Any]:
    """Partials of a selection: 1 to the winner, 1/2 each at ties."""
    one = _ones(y)
    da = np.where(tie, 0.5 * one, np.where(first_wins, one, 0 * one))
    return da, one - da


def _d_maximum(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    return _split(np.greater(a, b), np.equal(a, b), y)


def _d_minimum(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    return _split(np.less(a, b), np.equal(a, b), y)


def _d_logaddexp(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    return np.exp(a - y), np.exp(b - y)


def _d_logaddexp2(a: Any, b: Any, y: Any) -> tuple[Any, Any]:
    return np.exp2(a - y), np.exp2(b - y)


# -- avoid predicates -----------------------------------------------------------------------


def _avoid_zero_divisor(a: Any, b: Any) -> Any:
    return np.broadcast_to(
        np.abs(np.asarray(b)) < MARGIN, np.broadcast_shapes(np.shape(a), np.shape(b))
    )


#: ``power(x, p)`` is avoided where ``|p * log|x||`` exceeds this: ``x**p`` (and its partials)
#: would be beyond ``1e26`` or below ``1e-26`` and overflow float32 or lose finite differences.
POWER_LOG_LIMIT = 60.0
#: ... and where the phase ``|Im(p * log(x))|`` exceeds this (radians): ``x**p`` is then
#: ``exp`` of a large imaginary part, rounded to ``phase * eps`` rather than ``eps``, noise far
#: above the round-off finite differences allow for at the small steps the avoid radius leaves.
POWER_PHASE_LIMIT = 30.0


def _avoid_power(x: Any, p: Any) -> Any:
    """Complex bases near the cut ``(-inf, 0]``, and results too large or small to test."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(p))
    with np.errstate(all="ignore"):
        size = np.abs(np.real(np.asarray(p) * np.log(np.abs(np.asarray(x)))))
        phase = np.abs(np.imag(np.asarray(p) * np.log(np.asarray(x, dtype=complex))))
    huge = np.asarray(size > POWER_LOG_LIMIT) | np.asarray(phase > POWER_PHASE_LIMIT)
    return np.broadcast_to(near_real_segment(x, -np.inf, 0.0), shape) | huge


def _avoid_origin(a: Any, b: Any) -> Any:
    return np.hypot(a, b) < MARGIN


def _avoid_arctan2_cut(a: Any, b: Any) -> Any:
    # the ray {(a, b) = (0, t): t <= 0}, origin included
    return np.hypot(a, np.maximum(b, 0)) < MARGIN


def _avoid_ties(a: Any, b: Any) -> Any:
    return relative_gap(a, b) < MARGIN


def _dom(*intervals: Any, complex: bool = False, avoid: Any = None) -> Domain:
    """One interval per argument (the reals unless given), so ``avoid`` is seen as binary."""
    return Domain(tuple(intervals) or (REALS, REALS), complex=complex, avoid=avoid)


_TABLE: list[tuple[Any, Any, Domain]] = [
    (np.add, _d_add, _dom(complex=True)),
    (np.subtract, _d_subtract, _dom(complex=True)),
    (np.multiply, _d_multiply, _dom(complex=True)),
    (np.divide, _d_divide, _dom(complex=True, avoid=_avoid_zero_divisor)),
    (np.power, _d_power, _dom(POSITIVE, REALS, complex=True, avoid=_avoid_power)),
    (np.hypot, _d_hypot, _dom(avoid=_avoid_origin)),
    (np.arctan2, _d_arctan2, _dom(avoid=_avoid_arctan2_cut)),
    (np.maximum, _d_maximum, _dom(avoid=_avoid_ties)),
    (np.minimum, _d_minimum, _dom(avoid=_avoid_ties)),
    (np.logaddexp, _d_logaddexp, _dom()),
    (np.logaddexp2, _d_logaddexp2, _dom()),
]

for _f, _partials, _domain in _TABLE:
    scalar_rule(_f, _partials, domain=_domain)
