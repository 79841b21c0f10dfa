"""Scalar rules for numpy's unary ufuncs.

Each partial is written with numpy, so it vectorises, and uses the output ``y`` where that saves
work (``exp``: the derivative is ``y``). Complex-capable functions are declared holomorphic
(``complex=True``); their domains' ``avoid`` keeps generated complex inputs away from branch cuts
and poles, and their intervals keep real inputs where the function is real and differentiable.

Non-differentiable points and the value returned there:

- ``abs`` at 0: subgradient 0 (``sign(0) == 0``). ``abs`` is not holomorphic, so it is declared
  real (``complex=False``); complex inputs are still handled correctly: the partial is
  ``conj(z) / |z|`` and the output is real, so ``xbar = ybar * z / |z|`` and
  ``ydot = Re(conj(z) * zdot) / |z|`` (0 at ``z == 0``).
- ``cbrt`` at 0, ``sqrt`` at 0, ``arcsin``/``arccos``/``arctanh`` at +-1, ``arccosh`` at 1,
  ``log``/``log2``/``log10`` at 0, ``log1p`` at -1: the derivative is infinite there and the
  partial is ``inf`` (no warning, for Python numbers as for arrays, at ``-0.0`` as at ``0.0``);
  ``cbrt``'s domain avoids a neighbourhood of 0, the others' intervals are open.

Generated inputs keep ``MARGIN`` away from the kinks of ``abs`` and ``cbrt`` and the pole of
``reciprocal`` (0), the poles of ``tan`` (``pi/2 + k*pi``) and, for complex inputs, of ``tanh``
(``i*(pi/2 + k*pi)``), and the branch cuts of the complex inverse functions, ``log*`` and
``sqrt``.

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.exp, np.array([0.0, 1.0]))
>>> pullback(np.ones(2))[1]
array([1.        , 2.71828183])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rruletest.domains import POSITIVE, REALS, UNIT_OPEN, Domain, Interval
from rruletest.rules import scalar_rule
from rruletest.rulesets.numpy._common import MARGIN, near_imag_segment, near_real_segment

__all__: list[str] = []

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_DEG = math.pi / 180.0


def _const(y: Any, c: float) -> Any:
    """The constant partial ``c`` in the shape and dtype of ``y``."""
    return np.full(np.shape(y), c, dtype=np.result_type(y))


def _inv(v: Any) -> Any:
    """``1 / v`` computed by numpy, without a warning: a Python number at a pole gives ``inf``
    (not ``ZeroDivisionError``), and ``-0.0`` counts as ``0.0`` (``+ 0.0`` turns it into ``0.0``),
    so both zeros give the same partial, ``+inf`` at the edge of a domain."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.reciprocal(np.asarray(v) + 0.0)


def _inv_sqrt(v: Any) -> Any:
    """``1 / sqrt(v)`` without a warning where ``v == 0`` (the derivative is infinite there)."""
    with np.errstate(divide="ignore"):
        return 1 / np.sqrt(v)


# -- avoid predicates: complex inputs near branch cuts and poles ------------------------------


def _avoid_log_cut(x: Any) -> Any:  # log, log2, log10, sqrt: cut (-inf, 0]
    return near_real_segment(x, -np.inf, 0.0)


def _avoid_log1p_cut(x: Any) -> Any:
    """The cut ``(-inf, -1]``, and complex ``x`` near 0: numpy computes the complex ``log1p`` as
    ``log(1 + x)``, with an absolute (not relative) rounding error, so finite differences with
    the tiny steps chosen there cannot check it (the real ``log1p`` is accurate)."""
    z = np.asarray(x)
    near_zero = np.abs(z) < MARGIN if z.dtype.kind == "c" else np.zeros(z.shape, dtype=bool)
    return near_real_segment(x, -np.inf, -1.0) | near_zero


def _avoid_real_cuts(x: Any) -> Any:  # arcsin, arccos, arctanh: cuts (-inf, -1] and [1, inf)
    return near_real_segment(x, -np.inf, -1.0) | near_real_segment(x, 1.0, np.inf)


def _avoid_imag_cuts(x: Any) -> Any:  # arctan, arcsinh: cuts i(-inf, -1] and i[1, inf)
    return near_imag_segment(x, -np.inf, -1.0) | near_imag_segment(x, 1.0, np.inf)


def _avoid_arccosh_cut(x: Any) -> Any:  # cut (-inf, 1]
    return near_real_segment(x, -np.inf, 1.0)


def _pole_distance(t: Any, u: Any) -> Any:
    """Distance of ``t + i*u`` from the nearest of ``pi/2 + k*pi`` (on the axis of ``t``)."""
    pole = np.pi / 2 + np.pi * np.round((t - np.pi / 2) / np.pi)
    return np.hypot(t - pole, u)


def _avoid_tan_poles(x: Any) -> Any:  # poles at pi/2 + k*pi on the real axis
    z = np.asarray(x)
    return _pole_distance(z.real, z.imag if z.dtype.kind == "c" else 0.0) < MARGIN


def _avoid_tanh_poles(x: Any) -> Any:  # poles at i(pi/2 + k*pi)
    z = np.asarray(x)
    return _pole_distance(z.imag if z.dtype.kind == "c" else np.zeros(z.shape), z.real) < MARGIN


def _avoid_zero(x: Any) -> Any:  # kinks or poles at 0
    return np.abs(np.asarray(x)) < MARGIN


# -- partials -------------------------------------------------------------------------------


def _d_tan(x: Any, y: Any) -> Any:
    return 1 + y * y


def _d_arcsin(x: Any, y: Any) -> Any:
    return _inv_sqrt(1 - x * x)


def _d_arccos(x: Any, y: Any) -> Any:
    return -_inv_sqrt(1 - x * x)


def _d_arccosh(x: Any, y: Any) -> Any:
    # sqrt(x - 1) * sqrt(x + 1), not sqrt(x*x - 1): the two differ in sign for Re(x) < 0.
    return _inv_sqrt(x - 1) * _inv_sqrt(x + 1)


def _d_arctanh(x: Any, y: Any) -> Any:
    return _inv(1 - x * x)


def _d_sqrt(x: Any, y: Any) -> Any:
    return 0.5 * _inv(y)  # sqrt(-0.0) is -0.0: the partial is +inf at both zeros


def _d_cbrt(x: Any, y: Any) -> Any:
    with np.errstate(divide="ignore"):
        return 1 / (3 * y * y)


def _d_abs(x: Any, y: Any) -> Any:
    x = np.asarray(x)
    if x.dtype.kind != "c":
        return np.sign(x)
    safe = np.where(y == 0, 1, y)
    return np.where(y == 0, 0, np.conj(x) / safe)


_C = True  # holomorphic: complex inputs allowed
_R = False  # real only

# name: (function, partials(x, y), real interval, complex?, avoid)
_TABLE: list[tuple[Any, Any, Interval, bool, Any]] = [
    (np.sin, lambda x, y: np.cos(x), REALS, _C, None),
    (np.cos, lambda x, y: -np.sin(x), REALS, _C, None),
    (np.tan, _d_tan, REALS, _C, _avoid_tan_poles),
    (np.arcsin, _d_arcsin, UNIT_OPEN, _C, _avoid_real_cuts),
    (np.arccos, _d_arccos, UNIT_OPEN, _C, _avoid_real_cuts),
    (np.arctan, lambda x, y: _inv(1 + x * x), REALS, _C, _avoid_imag_cuts),
    (np.sinh, lambda x, y: np.cosh(x), REALS, _C, None),
    (np.cosh, lambda x, y: np.sinh(x), REALS, _C, None),
    (np.tanh, lambda x, y: 1 - y * y, REALS, _C, _avoid_tanh_poles),
    (np.arcsinh, lambda x, y: _inv_sqrt(1 + x * x), REALS, _C, _avoid_imag_cuts),
    (np.arccosh, _d_arccosh, Interval(1.0, math.inf), _C, _avoid_arccosh_cut),
    (np.arctanh, _d_arctanh, UNIT_OPEN, _C, _avoid_real_cuts),
    (np.exp, lambda x, y: y, REALS, _C, None),
    (np.exp2, lambda x, y: y * _LN2, REALS, _C, None),
    (np.expm1, lambda x, y: y + 1, REALS, _C, None),
    (np.log, lambda x, y: _inv(x), POSITIVE, _C, _avoid_log_cut),
    (np.log2, lambda x, y: _inv(x * _LN2), POSITIVE, _C, _avoid_log_cut),
    (np.log10, lambda x, y: _inv(x * _LN10), POSITIVE, _C, _avoid_log_cut),
    (np.log1p, lambda x, y: _inv(1 + x), Interval(-1.0, math.inf), _C, _avoid_log1p_cut),
    (np.sqrt, _d_sqrt, POSITIVE, _C, _avoid_log_cut),
    (np.cbrt, _d_cbrt, REALS, _R, _avoid_zero),
    (np.square, lambda x, y: 2 * x, REALS, _C, None),
    (np.reciprocal, lambda x, y: -y * y, REALS, _C, _avoid_zero),
    (np.negative, lambda x, y: _const(y, -1.0), REALS, _C, None),
    (np.abs, _d_abs, REALS, _R, _avoid_zero),
    (np.deg2rad, lambda x, y: _const(y, _DEG), REALS, _R, None),
    (np.rad2deg, lambda x, y: _const(y, 1 / _DEG), REALS, _R, None),
]

for _f, _partials, _interval, _complex, _avoid in _TABLE:
    scalar_rule(_f, _partials, domain=Domain((_interval,), complex=_complex, avoid=_avoid))
