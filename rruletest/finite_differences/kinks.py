"""Kinks: points where ``f`` has no derivative, told apart from wrong rules.

A central difference at ``relu(0)`` returns ``0.5`` with a tiny error estimate: the average of
the one-sided slopes, which no rule's convention chooses. Here the two one-sided directional
derivatives are estimated separately (a backward and a forward stencil, each with its own
steps and error estimate). Where they differ beyond their errors (and beyond the tolerance of
the comparison), ``f`` has a kink: any value between them is a valid choice (a subgradient),
and a rule's value outside them is wrong. Where ``f`` itself jumps (``floor`` at an integer),
it has no derivative at all and the rule's value cannot be checked.

For an elementwise ``g`` every element is done at once, each with its own steps, so the cost
does not depend on the size: two stencil runs plus four probe evaluations (``one_sided`` with
``elementwise=True``). For any other function the same is done along one direction.

>>> import numpy as np
>>> x = np.array([-1.0, 0.0, 2.0])
>>> sides = one_sided(None, lambda v: np.maximum(v, 0.0), (x, np.ones(3)), elementwise=True)
>>> sides.left.round(12).tolist(), sides.right.round(12).tolist()
([0.0, 0.0, 1.0], [0.0, 1.0, 1.0])
>>> [Kind(k).name for k in classify(np.array([0.0, 0.0, 1.0]), sides)]
['SMOOTH', 'INSIDE', 'SMOOTH']
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.broadcast import broadcast_jvp
from rruletest.finite_differences.calculus import check_fdm, jvp_estimate
from rruletest.finite_differences.methods import FiniteDifferenceMethod
from rruletest.finite_differences.problem import Estimate
from rruletest.finite_differences.to_vec import to_vec
from rruletest.tangents import AbstractZero, ZeroTangent, unthunk

__all__ = ["KINK_FACTOR", "NEARER", "Kind", "Sides", "classify", "one_sided", "supported"]

F64 = npt.NDArray[np.float64]

#: Multiples of the one-sided error estimates by which the two sides must differ to be a kink.
KINK_FACTOR = 10.0
#: The second jump probe's distance relative to the first (about sqrt(eps) relative): still
#: a dozen ulps away from ``x`` in float32.
NEARER = 2.0**-8


class Kind(enum.IntEnum):
    """What the one-sided derivatives say about a point (per element)."""

    SMOOTH = 0  #: the sides agree: compare the rule with the ordinary estimate
    INSIDE = 1  #: a kink, the rule's value lies between the sides: accepted, with a note
    OUTSIDE = 2  #: a kink, the rule's value lies outside the sides: the rule is wrong there
    JUMP = 3  #: ``f`` itself jumps: no derivative exists, the rule's value is not compared
    UNKNOWN = 4  #: a one-sided estimate failed (domain edge, NaN): nothing to say

    @property
    def is_kink(self) -> bool:
        """A kink (either verdict): ``f`` is continuous but not differentiable here."""
        return self in (Kind.INSIDE, Kind.OUTSIDE)


class Sides(NamedTuple):
    """One-sided directional derivatives with their estimated absolute errors (float64).

    ``left`` is ``lim (f(x) - f(x - t*xdot)) / t``, ``right`` is ``lim (f(x + t*xdot) - f(x)) / t``
    (``t -> 0+``), with the output's shape (a float for a scalar output); ``jump`` is true where
    ``f`` itself is discontinuous along ``xdot`` (then the sides mean nothing).
    """

    left: Any
    left_error: Any
    right: Any
    right_error: Any
    jump: Any


def _methods(fdm: Any) -> tuple[FiniteDifferenceMethod, FiniteDifferenceMethod]:
    method = check_fdm(fdm)
    return method.one_sided("backward"), method.one_sided("forward")


def _as_f64(value: Any) -> Any:
    arr = np.asarray(value)
    if arr.dtype.kind == "c":
        raise TypeError("one_sided needs a real output; split a complex one into re and im")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"one_sided needs a numeric output, got dtype {arr.dtype}")
    out = arr.astype(np.float64)
    return float(out) if out.ndim == 0 else out


def _is_jump(f0: F64, near: F64, nearer: F64, eps: float) -> npt.NDArray[np.bool_]:
    """Where ``f(x + d) - f(x)`` does not shrink with ``d`` (probes at ``d`` and ``d * NEARER``):
    a continuous ``f`` gives a 256 times smaller difference, a jump the same one."""
    big = np.abs(near - f0)
    small = np.abs(nearer - f0)
    floor = 64.0 * eps * np.maximum(np.abs(f0), np.finfo(np.float64).tiny)
    out: npt.NDArray[np.bool_] = (small > floor) & (small >= 0.25 * big)
    return out


def _probe(fn: Callable[..., Any], *args: Any) -> F64 | None:
    """``fn(*args)`` as a float64 array, or ``None`` where ``fn`` refuses the probe point (the
    errors the engine treats as leaving the domain): then no jump is looked for."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.asarray(fn(*args), dtype=np.float64)
    except (ValueError, ArithmeticError):
        return None


def _probe_scale(xs: list[Any], dxs: list[Any], shape: tuple[int, ...], eps: float) -> F64:
    """Per element, a probe distance ``t`` (along ``xdot``) of about ``sqrt(eps)`` relative to
    the argument that moves most (relative to its size)."""
    scale: F64 = np.sqrt(eps) * _relative_ratios(xs, dxs, shape)[0]
    return scale


def _relative_ratios(xs: list[Any], dxs: list[Any], shape: tuple[int, ...]) -> tuple[F64, F64]:
    """Per element, ``s = min_j max(|x_j|, 1) / |xdot_j|`` over the moving arguments (1 where
    none moves) and ``max_j max(|x_j|, 1) / (s * |xdot_j|)`` (>= 1): how much larger than ``s``
    the least moving argument's own scale is, which sets how rounding ``x_j`` shows."""
    ratios = []
    for x, dx in zip(xs, dxs, strict=True):
        d = np.abs(np.broadcast_to(np.asarray(dx, dtype=np.float64), shape))
        mag = np.maximum(np.abs(np.broadcast_to(np.asarray(x, dtype=np.float64), shape)), 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios.append(np.where(d > 0, mag / d, np.nan))
    if not ratios:
        return np.ones(shape), np.ones(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN where nothing moves
        low = np.nanmin(ratios, axis=0)
        high = np.nanmax(ratios, axis=0)
    s = np.where(np.isfinite(low), low, 1.0)
    return s, np.where(np.isfinite(high), high / s, 1.0)


def _elementwise(fdm: Any, g: Callable[..., Any], pairs: tuple[Any, ...]) -> Sides:
    back, fwd = _methods(fdm)
    xs = [p[0] for p in pairs]
    dxs = [np.zeros(()) if _zero(p[1]) else np.real(np.asarray(unthunk(p[1]))) for p in pairs]
    y0 = np.asarray(g(*xs))
    f0 = np.asarray(_as_f64(y0))
    eps = float(np.finfo(y0.dtype if y0.dtype.kind == "f" else np.float64).eps)
    shape = np.shape(y0)
    scale = _probe_scale(xs, dxs, shape, eps)
    if sum(bool(np.any(dx)) for dx in dxs) > 1:
        # One-sided partials do not add up to a one-sided directional derivative (maximum at a
        # tie): step all moving arguments together, along t per element.
        left, right = (_combined(m, g, xs, dxs, y0) for m in (back, fwd))
    else:
        left = broadcast_jvp(back, g, *pairs, y=y0)
        right = broadcast_jvp(fwd, g, *pairs, y=y0)
    jump = np.zeros(shape, dtype=bool)
    for sign in (-1.0, 1.0):
        vals = [
            _probe(g, *(_move(x, sign * t * dx) for x, dx in zip(xs, dxs, strict=True)))
            for t in (scale, scale * NEARER)
        ]
        if vals[0] is not None and vals[1] is not None and vals[0].shape == vals[1].shape == shape:
            jump |= _is_jump(f0, vals[0], vals[1], eps)
    return Sides(
        _as_f64(left.value),
        _as_f64(left.error),
        _as_f64(right.value),
        _as_f64(right.error),
        jump if jump.ndim else bool(jump),
    )


def _combined(
    method: FiniteDifferenceMethod,
    g: Callable[..., Any],
    xs: list[Any],
    dxs: list[Any],
    y0: Any,
) -> Estimate:
    """The derivative of ``g(*(x + t * s * xdot))`` in ``t`` at 0 per element, divided by ``s``
    (``_relative_ratios``: ``t``'s steps are then relative to the argument moving most)."""
    moving = [np.asarray(x).dtype for x, dx in zip(xs, dxs, strict=True) if np.any(dx)]
    dtype = max(
        (d if d.kind == "f" else np.dtype(np.float64) for d in moving),
        key=lambda d: float(np.finfo(d).eps),
    )

    k = len(xs)
    scale, spread = _relative_ratios(xs, dxs, np.shape(y0))

    def phi(t: F64, s: F64, *rest: Any) -> Any:
        # Every array is an argument, so the engine's retries on a subset of elements slice all.
        tt = np.asarray(t, np.float64) * s
        return g(*(_move(x, tt * dx) for x, dx in zip(rest[:k], rest[k:], strict=True)))

    shape = np.shape(y0)
    fixed = [(a, ZeroTangent()) for a in (scale, *xs, *dxs)]
    est = broadcast_jvp(method, phi, (np.zeros(shape, dtype=dtype), np.ones(shape)), *fixed)
    value = np.asarray(est.value, dtype=np.float64) / scale
    # x + t * scale * xdot is rounded to x's dtype: up to an ulp of x per point, over a step.
    step = np.asarray(est.step[0], dtype=np.float64) * scale
    with np.errstate(all="ignore"):
        rounding = (
            method.f_error_mult
            * np.abs(value)
            * float(np.finfo(dtype).eps)
            * (spread * scale / step)
        )
    error = np.asarray(est.error, dtype=np.float64) / scale + np.where(step > 0, rounding, 0.0)
    return Estimate(value, error, step)


def _zero(dx: Any) -> bool:
    return dx is None or isinstance(unthunk(dx), AbstractZero)


def _move(x: Any, d: F64) -> Any:
    """``x + d`` in ``x``'s own dtype (a Python float stays a float array of float64)."""
    if not np.any(d):
        return x
    arr = np.asarray(x)
    dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
    return (arr.astype(np.float64) + d).astype(dtype)


def _directional(fdm: Any, f: Callable[..., Any], pairs: tuple[Any, ...]) -> Sides:
    back, fwd = _methods(fdm)
    left = jvp_estimate(back, f, *pairs)
    right = jvp_estimate(fwd, f, *pairs)
    xs = tuple(p[0] for p in pairs)
    v, rebuild = to_vec(xs, path="args")
    vdot = rebuild.tangent_vec(tuple(p[1] for p in pairs), "tangents")
    y = f(*xs)
    y0, _ = to_vec(y, path="output")
    eps = max((float(np.finfo(d).eps) for d in rebuild.coord_dtypes), default=2.0**-52)
    jump = np.zeros(y0.shape, dtype=bool)
    moving = np.abs(vdot) > 0
    if np.any(moving):
        # Each coordinate moves by at most sqrt(eps) of its own size (at least 1), as in
        # ``_relative_ratios``: a probe sized by the largest coordinate carries a small one
        # beside it (y = 1e-6 next to x = 1e6 in x / y) across a nearby pole, a false jump.
        ratios = np.maximum(np.abs(v[moving]), 1.0) / np.abs(vdot[moving])
        t0 = np.sqrt(eps) * float(np.fmin.reduce(ratios))

        def along(point: F64) -> F64:
            return to_vec(f(*rebuild(point)), path="output")[0]

        for sign in (-1.0, 1.0):
            vals = [_probe(along, v + sign * t * vdot) for t in (t0, t0 * NEARER)]
            if vals[0] is not None and vals[1] is not None and vals[0].shape == vals[1].shape:
                jump |= _is_jump(y0, vals[0], vals[1], eps)
    left_v, right_v = to_vec(left.value)[0], to_vec(right.value)[0]
    left_e, right_e = to_vec(left.error)[0], to_vec(right.error)[0]
    if y0.size == 1 and np.ndim(y) == 0:
        return Sides(
            float(left_v[0]), float(left_e[0]), float(right_v[0]), float(right_e[0]), bool(jump[0])
        )
    return Sides(left_v, left_e, right_v, right_e, jump)


def one_sided(fdm: Any, f: Callable[..., Any], *pairs: Any, elementwise: bool = False) -> Sides:
    """The left and right directional derivatives of ``f`` at ``xs`` along ``xdots``.

    Args:
        fdm: the method whose points, adaptation and ``factor`` the one-sided stencils copy
            (``None``: ``default_fdm()``).
        f: the function. With ``elementwise=True`` it must map its arguments elementwise
            (``np.maximum``, ``functools.partial(broadcasted, f)``); every element then gets
            its own one-sided derivatives at a cost that does not depend on the size. Otherwise
            the output is flattened as ``to_vec`` does.
        pairs: ``(x, xdot)`` per argument, as for ``jvp_estimate``/``broadcast_jvp``.
        elementwise: use the structured broadcast estimates.

    Returns:
        ``Sides`` (see there), each field shaped like the output (flattened by ``to_vec``
        for a non-elementwise ``f``).
    """
    if elementwise:
        return _elementwise(fdm, f, pairs)
    return _directional(fdm, f, pairs)


def _bounds(sides: Sides) -> tuple[F64, F64, F64, F64]:
    left, right = np.asarray(sides.left, dtype=np.float64), np.asarray(sides.right, np.float64)
    err = np.asarray(sides.left_error, np.float64) + np.asarray(sides.right_error, np.float64)
    return np.minimum(left, right), np.maximum(left, right), err, np.abs(right - left)


def classify(
    rule: Any, sides: Sides, *, rtol: float = 0.0, atol: Any = 0.0, factor: float = KINK_FACTOR
) -> Any:
    """Per element, the ``Kind`` of the point and of the rule's value ``rule`` there.

    ``rule`` is the rule's directional derivative (the same quantity as the sides: the
    frule's ``ydot``, or ``<xbar, xdot>`` for a pullback). The sides differ (a kink) when
    ``|right - left| > factor * (errors) + atol + rtol * max(|left|, |right|)``, so a kink too
    small for the comparison's tolerance is no kink. At a kink the rule is ``INSIDE`` when it
    lies in ``[min, max]`` of the sides widened by the same allowance, else ``OUTSIDE``.

    Returns:
        A ``Kind`` for a scalar output, else an int8 array of ``Kind`` values (output's shape;
        compare with ``kinds == Kind.INSIDE``, read one with ``Kind(kinds[i])``).

    >>> classify(0.5, Sides(0.0, 1e-16, 1.0, 1e-16, False)).name
    'INSIDE'
    >>> classify(-0.5, Sides(0.0, 1e-16, 1.0, 1e-16, False)).name
    'OUTSIDE'
    >>> classify(1.0, Sides(1.0, 1e-10, 1.0 + 1e-12, 1e-10, False)).name
    'SMOOTH'
    """
    lo, hi, err, gap = _bounds(sides)
    r = np.asarray(rule, dtype=np.float64)
    allowance = factor * err + atol + rtol * np.maximum(np.abs(lo), np.abs(hi))
    with np.errstate(invalid="ignore"):
        kink = gap > allowance
        inside = (r >= lo - allowance) & (r <= hi + allowance)
    codes = np.where(kink, np.where(inside, Kind.INSIDE, Kind.OUTSIDE), Kind.SMOOTH)
    unknown = ~np.isfinite(err) | ~np.isfinite(gap)
    codes = np.where(unknown, Kind.UNKNOWN, codes)
    codes = np.where(np.asarray(sides.jump, dtype=bool), Kind.JUMP, codes)
    codes = np.broadcast_to(codes, np.broadcast_shapes(codes.shape, r.shape))
    if codes.ndim == 0:
        return Kind(int(codes))
    return codes.astype(np.int8)


def supported(
    rule: Any, sides: Sides, *, rtol: float = 0.0, atol: Any = 0.0, central: Any = None
) -> Any:
    """Per element, whether both one-sided values support ``rule`` where ``f`` does not jump.

    A side supports the rule when the rule lies within its error estimate and the tolerance
    (``|rule - side| <= error + atol + rtol * |side|``) and, either that whole interval lies
    within the tolerance (an imprecise side, float16's, supports nothing on its own), or the
    side contradicts the ``central`` estimate by more than the same allowance. One side whose
    whole interval lies within the tolerance of the rule is enough: where ``f`` is
    differentiable both sides are its derivative, and at a kink either is a valid choice.

    Where ``f`` is differentiable but ``f'`` is not (Huber's loss at ``|x| = delta``), or
    ``f`` jumps a little way off the point (``hardshrink`` just inside its threshold), a
    central stencil straddles the corner or the jump and its error estimate misses it, while
    one one-sided stencil, or both, lie on a smooth side. Both sides agreeing with the rule is
    then as good a reference as a central estimate would be.

    >>> bool(supported(0.2, Sides(0.2 + 1e-9, 1e-8, 0.2 - 1e-9, 1e-8, False), rtol=1e-6))
    True
    >>> bool(supported(0.21, Sides(0.2, 1e-8, 0.2, 1e-8, False), rtol=1e-3))
    False
    >>> bool(supported(0.0, Sides(0.0, 1e-40, 0.0, 1e-2, False), atol=1e-3, central=-37.7))
    True
    >>> bool(supported(0.2, Sides(0.19, 1e-2, 0.2, 1e-8, False), rtol=1e-6))
    True
    """
    r = np.asarray(rule, dtype=np.float64)
    c = None if central is None else np.asarray(central, dtype=np.float64)
    shape = np.broadcast_shapes(r.shape, np.shape(sides.left))
    ok, one = np.ones(shape, dtype=bool), np.zeros(shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        for side, err in ((sides.left, sides.left_error), (sides.right, sides.right_error)):
            v, e = np.asarray(side, np.float64), np.asarray(err, np.float64)
            allow = atol + rtol * np.abs(v)
            precise = np.isfinite(e) & (np.abs(r - v) + e <= allow)
            one |= precise
            if c is not None:
                precise |= np.abs(c - v) > e + allow
            ok &= np.isfinite(e) & (np.abs(r - v) <= e + allow) & precise
    ok |= one
    ok &= ~np.asarray(sides.jump, dtype=bool)
    return bool(ok) if ok.ndim == 0 else ok
