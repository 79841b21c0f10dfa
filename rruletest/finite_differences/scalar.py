"""A fast path for the common case of ``estimate`` at one float64 or complex128 number.

``m.estimate(f, 0.5)`` on the general engine costs about 0.3 ms, almost all of it array
machinery around eleven scalar evaluations of ``f``. Here the same steps run on Python floats:
the bound estimator's default step, ``|f^(p)|`` from its neighbourhood weights, the optimal
step from the same constants, the stencil and the same error formula (``steps`` and
``estimation`` document them). Every case that the general engine would treat specially
returns None instead, and the caller runs the general engine: a step that is coarse, grown,
unresolved or reaching across 0, a stencil point that is not finite (or raises), an output
that is not a float64/complex128 scalar, a point rounded across a binade, any method not
adapted exactly once. The values agree with the general engine's to within its error
estimate (summation order may differ in the last bits).

>>> import math
>>> from rruletest.finite_differences import central_fdm
>>> est = fast_estimate(central_fdm(5, 1), np.sin, 0.5)
>>> est is not None and abs(est.value - math.cos(0.5)) <= est.error < 1e-12
True
>>> fast_estimate(central_fdm(5, 1), np.sqrt, 0.0) is None  # the domain edge: general engine
True

For the testers' numerical reference of a function of one number, ``number_partials`` gives
``dy/d(Re x)`` (and ``dy/d(Im x)``) as estimates, each one scalar finite difference (cheaper than
a one-column Jacobian), and ``number_jvp``/``number_vjp`` combine them with a tangent or a
cotangent (``takes_a_number`` says when they apply).

>>> number_vjp(central_fdm(5, 1), np.sin, 0.5, 2.0).value - 2 * math.cos(0.5) < 1e-12
True
"""

from __future__ import annotations

import functools
import math
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from rruletest.finite_differences.kernels import FLAT, RESOLUTION, UNRESOLVED, Stencil, default_step
from rruletest.finite_differences.problem import Estimate

__all__ = ["fast_estimate", "number_jvp", "number_partials", "number_vjp", "takes_a_number"]

_EPS = 2.0**-52
_TINY = 2.2250738585072014e-308
#: Magnitudes beyond this (near the top binade, where ``np.spacing`` overflows) go the general way.
_HUGE = 2.0**1000


class _Bail(Exception):
    """The general engine must decide this case."""


def _spacing(x: float) -> float:
    """``|np.spacing(x)|`` for a finite float64 well below the top binade."""
    if not abs(x) < _HUGE:
        raise _Bail
    return math.ulp(x)


def _ipow(h: float, k: int) -> float:
    """``steps._ipow`` on a float: repeated multiplication, then the reciprocal."""
    if k == 0:
        return 1.0
    out = h
    for _ in range(abs(k) - 1):
        out *= h
    return 1.0 / out if k < 0 else out


def _absmax(ys: list[Any]) -> float:
    if isinstance(ys[0], complex):
        return float(max(abs(y) for y in ys))
    return float(max(max(ys), -min(ys)))


def _finite(ys: list[Any]) -> bool:
    if isinstance(ys[0], complex):
        return all(math.isfinite(y.real) and math.isfinite(y.imag) for y in ys)
    return all(math.isfinite(y) for y in ys)


class _Limits(NamedTuple):
    """What ``_finish`` needs of a method, computed once: the factor of the largest step, the
    cap ``max_range`` sets, and the smallest step."""

    up: float
    range_cap: float
    tiny: float


def _limits(m: Stencil) -> _Limits:
    return _Limits(
        1000.0 * default_step(m, _EPS),
        m.max_range / m.max_offset,
        max(_TINY, _TINY ** (1.0 / (m.q + 1))),
    )


def _finish(lim: _Limits, t0: float, h: float) -> float:
    """``steps._finish_kernel`` without a cap; bails where the input's precision binds."""
    up = max(abs(t0), 1.0) * lim.up
    range_cap = lim.range_cap
    if range_cap != math.inf:
        up = min(up, range_cap)
    h = min(h, up)
    lower = max(_spacing(t0) * RESOLUTION, lim.tiny)
    if h < lower or not h > 0:
        raise _Bail  # coarse
    snapped = (t0 + h) - t0
    if not (math.isfinite(snapped) and snapped > 0):
        raise _Bail
    return snapped


class _Eval:
    """``f`` at ``t0 + g * h`` as a Python float or complex (bails on anything unusual)."""

    __slots__ = ("centre", "f", "imag", "kind", "t0")

    def __init__(self, f: Callable[..., Any], t0: float, imag: float | None) -> None:
        self.f = f
        self.t0 = t0
        self.imag = imag
        self.kind: type | None = None
        self.centre = self.value(t0)
        if not _finite([self.centre]):
            raise _Bail  # dead

    def value(self, t: float) -> Any:
        arg = np.float64(t) if self.imag is None else np.complex128(complex(t, self.imag))
        try:
            y = self.f(arg)
        except Exception:
            raise _Bail from None
        kind = type(y)
        if kind is np.float64 or kind is float:
            out: Any = float(y)
        elif kind is np.complex128 or kind is complex:
            out = complex(y)
        else:
            raise _Bail
        if self.kind is None:
            self.kind = type(out)
        elif type(out) is not self.kind:
            raise _Bail  # real here, complex there: the general engine promotes
        return out

    def at(self, g: int, h: float) -> Any:
        if g == 0:
            return self.centre
        if g == 1:
            return self.value(self.t0 + h)
        if g == -1:
            return self.value(self.t0 - h)
        return self.value(h * g + self.t0)


def _straddles(t0: float, h: float, reach: int) -> bool:
    a = abs(t0)
    return a > 0 and a <= h * float(reach)


class _Constants(NamedTuple):
    """What ``_estimate`` needs of a method adapted once, as Python numbers (each computed as
    the method's properties give it, once per method)."""

    b: Stencil  # the bound estimator
    b_grid: list[int]
    b_weights: list[list[float]]  # neighbourhood weights (3 x p + 2)
    noise_mult: float
    points: list[int]
    weights: list[float]
    reach: float
    b_limits: _Limits
    limits: _Limits
    b_step: float  # the bound estimator's default step
    b_q: int
    b_offset: int
    q: int
    p_minus_q: int
    offset: int
    f_error: float  # m.f_error_mult * m.factor
    df_mult: float
    ratio: float  # m.q / (m.p - m.q)
    root: float  # 1.0 / m.p


@functools.cache
def _constants(m: Stencil) -> _Constants | None:
    b = m.bound_estimator
    if m.adapt != 1 or b is None or b.adapt != 0 or m.q == 0:
        return None
    nw = b.neighbourhood_weights()
    points = [int(g) for g in m.points]
    return _Constants(
        b,
        [int(g) for g in b.grid],
        nw.tolist(),
        float(np.abs(nw).sum(axis=1).max()),
        points,
        [float(w) for w in m.weights.tolist()],
        float(max(abs(g) for g in points)),
        _limits(b),
        _limits(m),
        default_step(b, _EPS),
        b.q,
        b.max_offset,
        m.q,
        m.p - m.q,
        m.max_offset,
        m.f_error_mult * m.factor,
        m.df_mult,
        m.q / (m.p - m.q),
        1.0 / m.p,
    )


def _estimate(m: Stencil, ev: _Eval) -> Estimate:
    t0 = ev.t0
    k = _constants(m)
    if k is None:
        raise _Bail
    # The bound estimator at its default step (choose_step without adaptation).
    hb = _finish(k.b_limits, t0, k.b_step)
    rows = [ev.at(g, hb) for g in k.b_grid]
    if not _finite(rows):
        raise _Bail  # a domain edge: the step shrinks
    anchor = rows[len(k.b_grid) // 2]
    diffs = [y - anchor for y in rows]
    fmag_b = _absmax(rows)
    sums = [sum(map(operator.mul, row, diffs)) for row in k.b_weights]  # in order, as before
    if isinstance(anchor, complex):
        scale = _ipow(hb, -k.b_q)
        df = max(abs(s * scale) for s in sums)
    else:
        df = max(max(sums), -min(sums)) * _ipow(hb, -k.b_q)
    if _straddles(t0, hb, k.b_offset):
        raise _Bail
    if df * _ipow(hb, k.b_q) <= FLAT * _spacing(fmag_b) * k.noise_mult:
        raise _Bail  # flat: the step would grow or shrink
    span = hb * k.b_offset
    # The method's step from the constants (steps._step_kernel).
    c1 = _spacing(fmag_b) * k.f_error
    c2 = df * k.df_mult
    if not (c1 > 0 and c2 > 0 and math.isfinite(c1) and math.isfinite(c2)):
        raise _Bail
    h = (k.ratio * (c1 / c2)) ** k.root
    if not (math.isfinite(h) and h > 0):
        raise _Bail
    h = min(h, span / k.offset)
    h = _finish(k.limits, t0, h)
    if h * (UNRESOLVED * k.b_offset) < span:
        raise _Bail  # unresolved
    if _straddles(t0, h, k.offset):
        raise _Bail
    # The stencil (estimation._estimate, first attempt).
    points = k.points
    ys = [ev.at(g, h) for g in points]
    if not _finite(ys):
        raise _Bail
    weights = k.weights
    anchor = ys[len(points) // 2]
    est: Any = sum([w * (y - anchor) for w, y in zip(weights, ys, strict=True)])
    est = est * _ipow(h, -k.q)
    if k.q == 1:
        # estimation._position_correction: points rounded in a coarser binade than t0.
        a = abs(t0)
        if _spacing(a + k.reach * h) > _spacing(a):
            total = 0.0
            for g, c in zip(points, weights, strict=True):
                total += c * (((h * g + t0) - t0) - g * h)
            est = est * (1.0 - total / h)
    fmag = _absmax(ys)
    c1 = max(c1, _spacing(fmag) * k.f_error)
    error = c1 * _ipow(h, -k.q) + c2 * _ipow(h, k.p_minus_q)
    if not (math.isfinite(error) and _finite([est])):
        raise _Bail
    return Estimate(est, error, h)


def fast_estimate(m: Stencil, f: Callable[..., Any], x: Any) -> Estimate | None:
    """``m.estimate(f, x)`` for a float64 or complex128 number ``x`` (stepped along the real
    axis), or None where the general engine must decide (then nothing of this is used)."""
    kind = type(x)
    if kind is float or kind is np.float64:
        t0, imag = float(x), None
    elif kind is complex or kind is np.complex128:
        t0, imag = float(x.real), float(x.imag)
    else:
        return None
    if not math.isfinite(t0):
        return None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return _estimate(m, _Eval(f, t0, imag))
        except (_Bail, ArithmeticError, ValueError):
            return None


def takes_a_number(xs: Sequence[Any], y: Any) -> bool:
    """One real or complex number in, a number or a float/complex array out."""
    if len(xs) != 1 or not isinstance(xs[0], float | complex | np.floating | np.complexfloating):
        return False
    if isinstance(y, np.ndarray):
        return y.dtype.kind in "fc"
    return isinstance(y, float | complex | np.floating | np.complexfloating)


def number_partials(m: Any, g: Callable[[Any], Any], x: Any) -> list[Estimate]:
    """``[dy/d(Re x)]``, and ``dy/d(Im x)`` for a complex ``x``, by ``m.estimate`` on ``g``
    called with numbers of ``x``'s own type."""
    re = np.asarray(x).real[()]
    kind = type(x)
    if not isinstance(x, complex | np.complexfloating):
        return [m.estimate(lambda t: g(kind(t)), re)]  # a number of x's own type
    im = np.asarray(x).imag[()]
    fixed_im, fixed_re = float(im), float(re)  # the part held fixed, converted once
    return [
        m.estimate(lambda t: g(kind(complex(float(t), fixed_im))), re),
        m.estimate(lambda t: g(kind(complex(fixed_re, float(t)))), im),
    ]


def _numeric(v: Any) -> bool:
    return isinstance(v, int | float | complex | np.number) and not isinstance(v, bool)


_FLOATS = (float, np.float64)


def _total(z: Any) -> float:
    """``float(np.sum(z))``; for one number that sum is ``0.0 + z`` (so -0.0 becomes 0.0)."""
    return float(0.0 + z) if z.ndim == 0 else float(np.sum(z))


def _product(est: Estimate, c: float) -> tuple[float, float] | None:
    """``(0.0 + value * c, 0.0 + |error| * |c|)`` on Python floats: what the numpy
    expressions below give for float64 numbers (a 0-d sum adds to 0.0, so -0.0 becomes 0.0),
    or None where numpy would warn or the numbers are not float64 (then numpy computes)."""
    value, error = est.value, est.error
    if type(value) not in _FLOATS or type(error) not in _FLOATS:
        return None
    v, e = 0.0 + float(value) * c, 0.0 + abs(float(error)) * abs(c)
    if not (math.isfinite(v) and math.isfinite(e) and math.isfinite(value)):
        return None
    return v, e


def number_jvp(
    m: Any, g: Callable[[Any], Any], x: Any, xdot: Any, parts: list[Estimate] | None = None
) -> Estimate:
    """``dy/dx * xdot`` (real and imaginary parts of ``xdot`` apart) with its error; a
    non-numeric ``xdot`` (a zero tangent) counts as 0. ``parts`` reuses ``number_partials``."""
    parts = number_partials(m, g, x) if parts is None else parts
    if len(parts) == 1 and type(xdot) in _FLOATS:
        fast = _product(parts[0], float(xdot))
        if fast is not None:
            return Estimate(np.float64(fast[0]), np.float64(fast[1]), None)
    comps = [np.real(xdot), np.imag(xdot)] if _numeric(xdot) else [0.0, 0.0]
    value: Any = 0.0
    error: Any = 0.0
    for est, c in zip(parts, comps, strict=False):
        value = value + np.asarray(est.value) * c
        error = error + np.abs(np.asarray(est.error)) * abs(c)
    return Estimate(value, error, None)


def number_vjp(
    m: Any, g: Callable[[Any], Any], x: Any, ybar: Any, parts: list[Estimate] | None = None
) -> Estimate:
    """``Re(conj(ybar) * dy/dx)`` summed over the output (complex for a complex ``x``), with
    its error. ``parts`` reuses ``number_partials``."""
    parts = number_partials(m, g, x) if parts is None else parts
    if len(parts) == 1 and type(ybar) in _FLOATS:
        fast = _product(parts[0], float(ybar))
        if fast is not None:
            return Estimate(fast[0], fast[1], None)
    yb = np.asarray(ybar)
    comps = [_total((np.conj(yb) * np.asarray(e.value)).real) for e in parts]
    errs = [_total(np.abs(yb) * np.abs(np.asarray(e.error))) for e in parts]
    if len(comps) == 2:
        return Estimate(complex(comps[0], comps[1]), float(np.hypot(errs[0], errs[1])), None)
    return Estimate(comps[0], errs[0], None)
