"""The numerical reference a tester compares a rule with, and the tolerance it allows.

Three ways to get the reference cotangents of ``f`` at ``xs`` for an output cotangent ``ybar``:

- ``broadcast``: ``f`` is ``broadcasted``; the structured vjp perturbs every element at once
  (cost independent of the size);
- ``dense``: one finite difference per input coordinate (``vjp_estimate``), up to
  ``DENSE_LIMIT`` coordinates (or always, with ``vjp_mode="full"``);
- ``adjoint``: beyond that, the adjoint identity ``<xbar, v> == <ybar, J v>`` along a few
  random directions ``v`` (one jvp each).

The tolerance of each element is the default (or given) one for the dtypes involved, widened
by ``ERROR_FACTOR`` times the engine's own error estimate for that element.

>>> tolerances((np.ones(2, np.float32),), None, None)
(0.0001, 0.0001)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.domains import Domain
from rruletest.finite_differences import (
    Estimate,
    FiniteDifferenceMethod,
    jacobian_estimate,
    to_vec,
)
from rruletest.tangents import AbstractZero, Tangent, unthunk
from rruletest.testers._args import Arg
from rruletest.testers._checks import _kids
from rruletest.tolerances import default_tolerances

__all__ = [
    "ADJOINT_DIRECTIONS",
    "DENSE_LIMIT",
    "ERROR_FACTOR",
    "closed_over",
    "coordinate_count",
    "dense_jvp",
    "dense_vjp",
    "fdm_for_domain",
    "leaf_dtypes",
    "tolerances",
    "unchecked",
    "widen",
]

DENSE_LIMIT = 2000  # input coordinates beyond which the dense numerical vjp is too slow
ADJOINT_DIRECTIONS = 3  # random directions for the adjoint identity
# Up to this many input coordinates test_frule builds the numerical Jacobian (one snapped step
# per coordinate) rather than differentiating along x + t * xdot, whose rounding in float32 at
# large |x| is not in the engine's error estimate.
JVP_DENSE_LIMIT = 32
ERROR_FACTOR = 10.0  # multiples of the FD error estimate added to each element's tolerance
ROOM_FRACTION = 0.9  # stencils stay within this fraction of the distance to a domain edge


def leaf_dtypes(x: Any, out: set[np.dtype] | None = None, depth: int = 0) -> set[np.dtype]:
    """The float/complex dtypes of the numeric leaves of ``x`` (Python floats are float64)."""

    out = set() if out is None else out
    if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        out.add(x.dtype)
        return out
    if type(x) is float:
        out.add(np.dtype(np.float64))
        return out
    x = unthunk(x)
    if depth > 50:
        return out
    if isinstance(x, bool | np.bool_):
        return out
    if isinstance(x, float | np.floating | complex | np.complexfloating):
        out.add(np.result_type(x))
    elif isinstance(x, np.ndarray):
        if x.dtype.kind in "fc":
            out.add(x.dtype)
        elif x.dtype.kind == "O":
            for v in x.flat[:16]:
                leaf_dtypes(v, out, depth + 1)
    else:
        kids = _kids(x)
        if kids is not None:
            for v in kids.values():
                leaf_dtypes(v, out, depth + 1)
    return out


def tolerances(
    values: Sequence[Any], rtol: float | None, atol: float | None
) -> tuple[float, float]:
    """``(rtol, atol)``: the given ones, else the loosest default among the values' dtypes."""

    dts: set[np.dtype] = set()
    for v in values:
        leaf_dtypes(v, dts)
    r, a = default_tolerances(np.dtype(np.float64))
    for dt in dts:
        r2, a2 = default_tolerances(dt)
        r, a = max(r, r2), max(a, a2)
    return (float(r) if rtol is None else rtol, float(a) if atol is None else atol)


def widen(atol: float, error: Any) -> Any:
    """``atol`` plus ``ERROR_FACTOR`` times the error estimate, leaf by leaf (per element for
    arrays), keeping the structure of ``error``. An element the engine could not estimate
    (infinite or NaN error) gets an infinite tolerance: it is not checked (see ``unchecked``).

    >>> widen(1e-9, np.array([0.0, 1e-10, np.inf]))
    array([1.e-09, 2.e-09,    inf])
    """

    if isinstance(error, AbstractZero) or error is None:
        return atol
    if isinstance(error, np.ndarray | float | int | np.number) and not isinstance(error, bool):
        out = np.abs(np.asarray(error, dtype=np.float64))  # a fresh array: worked in place
        if out.ndim == 0:
            err = float(out)
            return atol + ERROR_FACTOR * (np.inf if np.isnan(err) else err)
        out *= ERROR_FACTOR
        out += atol
        out[np.isnan(out)] = np.inf
        return out
    if isinstance(error, Tangent):
        if isinstance(error.backing, tuple):
            return Tangent(error.primal_type, *(widen(atol, v) for v in error.backing))
        if issubclass(error.primal_type, dict):
            return Tangent(error.primal_type, {k: widen(atol, v) for k, v in error.items()})
        return Tangent(error.primal_type, **{k: widen(atol, v) for k, v in error.items()})
    if isinstance(error, tuple) and hasattr(type(error), "_fields"):
        return type(error)(*(widen(atol, v) for v in error))
    if isinstance(error, tuple | list):
        return type(error)(widen(atol, v) for v in error)
    if isinstance(error, dict):
        return {k: widen(atol, v) for k, v in error.items()}
    return atol + ERROR_FACTOR * _max_leaf(error)


def _max_leaf(x: Any) -> float:

    if isinstance(x, np.ndarray | float | int | np.number) and not isinstance(x, bool):
        arr = np.abs(np.asarray(x, dtype=np.float64))
        arr = arr[np.isfinite(arr)]
        return float(arr.max()) if arr.size else 0.0
    kids = _kids(x)
    if not kids:
        return 0.0
    return max((_max_leaf(v) for v in kids.values()), default=0.0)


def unchecked(error: Any) -> int:
    """How many elements of an error estimate are not finite (the engine gave up on them)."""

    if type(error) is float:  # a scalar's estimate (the common case), without numpy
        return 0 if math.isfinite(error) else 1
    if isinstance(error, np.ndarray | float | int | np.number) and not isinstance(error, bool):
        return int(np.sum(~np.isfinite(np.asarray(error, dtype=np.float64))))
    kids = _kids(error)
    return sum(unchecked(v) for v in kids.values()) if kids else 0


def coordinate_count(args: Sequence[Arg]) -> int:
    """How many real coordinates the numerically checked arguments have."""

    n = 0
    for a in args:
        if a.numeric:
            p = a.primal
            if isinstance(p, float | np.floating):  # a number: no flattening needed
                n += 1
                continue
            if isinstance(p, complex | np.complexfloating):
                n += 2
                continue
            vec, _ = to_vec(p)
            n += int(np.size(vec))
    return n


def _jacobians(
    fdm: Any, g: Callable[..., Any], xs: Sequence[Any], cache: dict[Any, Any] | None
) -> tuple[Any, ...]:
    """``jacobian_estimate(fdm, g, *xs)``, shared through ``cache`` (``test_scalar`` runs the
    frule and rrule testers at the same point: one Jacobian serves both).
    """

    if cache is None:
        return tuple(jacobian_estimate(fdm, g, *xs))
    key = (fdm, tuple((type(x), np.asarray(x).dtype.str, np.asarray(x).tobytes()) for x in xs))
    found = cache.get(key)
    if found is None:
        found = cache[key] = tuple(jacobian_estimate(fdm, g, *xs))
    return tuple(found)


def _scalar_fast_path(xs: Sequence[Any], y: Any) -> bool:
    """One scalar input and a numeric output: the engine's scalar estimate applies directly."""
    if len(xs) != 1 or not isinstance(xs[0], float | complex | np.floating | np.complexfloating):
        return False
    if isinstance(y, np.ndarray):
        return y.dtype.kind in "fc"
    return isinstance(y, float | complex | np.floating | np.complexfloating)


def _scalar_partials(
    fdm: Any, g: Callable[..., Any], x: Any, cache: dict[Any, Any] | None
) -> list[Any]:
    """``dy/d(Re x)`` (and ``dy/d(Im x)`` for complex ``x``) as ``Estimate``s, shared through
    ``cache``; each is one scalar finite difference (cheaper than a 1-column Jacobian).
    """
    key = ("scalar", fdm, type(x), np.asarray(x).dtype.str, np.asarray(x).tobytes())
    found = None if cache is None else cache.get(key)
    if found is not None:
        return list(found)
    out = [fdm.estimate(lambda t: g(_like(x, t, None)), np.asarray(x).real[()])]
    if isinstance(x, complex | np.complexfloating):
        re = np.asarray(x).real[()]
        out.append(fdm.estimate(lambda t: g(_like(x, re, t)), np.asarray(x).imag[()]))
    if cache is not None:
        cache[key] = tuple(out)
    return out


def _like(x: Any, re: Any, im: Any) -> Any:
    """A number of ``x``'s type with real part ``re`` (and imaginary part ``im``)."""
    if isinstance(x, complex | np.complexfloating):
        z = complex(float(re), float(np.asarray(x).imag if im is None else im))
        return type(x)(z)
    return type(x)(re)


def _scalar_jvp(fdm: Any, g: Callable[..., Any], x: Any, dot: Any, cache: Any) -> Any:

    dot = unthunk(dot)
    parts = _scalar_partials(fdm, g, x, cache)
    numeric = isinstance(dot, int | float | complex | np.number) and not isinstance(dot, bool)
    comps = [np.real(dot), np.imag(dot)] if numeric else [0.0, 0.0]
    value: Any = 0.0
    error: Any = 0.0
    for est, c in zip(parts, comps, strict=False):
        value = value + np.asarray(est.value) * c
        error = error + np.abs(np.asarray(est.error)) * abs(c)
    return Estimate(value, error, None)


def _scalar_vjp(fdm: Any, g: Callable[..., Any], x: Any, ybar: Any, cache: Any) -> Any:

    parts = _scalar_partials(fdm, g, x, cache)
    yb = np.asarray(ybar)
    comps = [float(np.sum((np.conj(yb) * np.asarray(e.value)).real)) for e in parts]
    errs = [float(np.sum(np.abs(yb) * np.abs(np.asarray(e.error)))) for e in parts]
    if len(comps) == 2:
        return Estimate(complex(comps[0], comps[1]), float(np.hypot(errs[0], errs[1])), None)
    return Estimate(comps[0], errs[0], None)


def dense_jvp(
    fdm: Any,
    g: Callable[..., Any],
    xs: Sequence[Any],
    dots: Sequence[Any],
    y: Any,
    cache: dict[Any, Any] | None = None,
) -> Any:
    """``J @ xdot`` from the numerical Jacobian of ``g`` at ``xs``, as an ``Estimate``."""

    if _scalar_fast_path(xs, y):
        return _scalar_jvp(fdm, g, xs[0], dots[0], cache)

    yv, yback = to_vec(y, path="output")
    total = np.zeros(yv.size)
    error = np.zeros(yv.size)
    for x, dot, est in zip(xs, dots, _jacobians(fdm, g, xs, cache), strict=True):
        _, xback = to_vec(x, path="x")
        dv = xback.tangent_vec(dot, "xdot")
        used = dv != 0
        with np.errstate(all="ignore"):
            total += np.where(used, est.value * dv, 0.0).sum(axis=1)
            error += np.where(used, est.error * np.abs(dv), 0.0).sum(axis=1)
    return Estimate(yback.tangent(total), yback.error(error), None)


def dense_vjp(
    fdm: Any,
    g: Callable[..., Any],
    xs: Sequence[Any],
    ybar: Any,
    y: Any,
    cache: dict[Any, Any] | None = None,
) -> list[Any]:
    """``J^T ybar`` per argument from the numerical Jacobian, as ``Estimate``s."""

    ybar = unthunk(ybar)
    if _scalar_fast_path(xs, y) and not isinstance(ybar, AbstractZero):
        return [_scalar_vjp(fdm, g, xs[0], ybar, cache)]

    _, yback = to_vec(y, path="output")
    yb = yback.tangent_vec(ybar, "ybar")
    weight = np.abs(yb)
    used = weight > 0
    out = []
    for x, est in zip(xs, _jacobians(fdm, g, xs, cache), strict=True):
        _, xback = to_vec(x, path="x")
        with np.errstate(all="ignore"):
            value = np.where(used, est.value.T * yb, 0.0).sum(axis=1)
            error = np.where(used, est.error.T * weight, 0.0).sum(axis=1)
        out.append(Estimate(xback.tangent(value), xback.error(error), None))
    return out


def closed_over(
    f: Callable[..., Any], fkwargs: dict[str, Any], primals: Sequence[Any], live: Sequence[int]
) -> Callable[..., Any]:
    """``f`` as a function of the arguments at positions ``live`` only (others fixed)."""
    fixed = list(primals)

    def g(*xs: Any) -> Any:
        full = list(fixed)
        for i, x in zip(live, xs, strict=True):
            full[i] = x
        return f(*full, **fkwargs)

    return g


def domain_room(domain: Domain | None, primals: Sequence[Any]) -> float | None:
    """The largest step that keeps every real input strictly inside its declared interval."""
    if domain is None:
        return None
    room = np.inf
    for i, x in enumerate(primals):
        try:
            arr = np.asarray(x)
        except Exception:
            continue
        if arr.dtype.kind != "f" or arr.size == 0:
            continue
        interval = (
            domain.interval(i) if i < len(domain.intervals) or len(domain.intervals) == 1 else None
        )
        if interval is None:
            continue
        finite = arr[np.isfinite(arr)]
        if finite.size == 0:
            continue
        if np.isfinite(interval.lo):
            room = min(room, float(np.min(finite - interval.lo)))
        if np.isfinite(interval.hi):
            room = min(room, float(np.min(interval.hi - finite)))
    if not np.isfinite(room) or room <= 0:
        return None
    return room


def fdm_for_domain(fdm: Any, domain: Domain | None, primals: Sequence[Any]) -> Any:
    """``fdm`` limited so its stencils never leave the declared domain (see ``domain_room``).

    Only a plain ``FiniteDifferenceMethod`` is rebuilt (with a smaller ``max_range``); other
    methods are used as they are and rely on the engine's own domain safety (an element whose
    stencil meets NaN retries with smaller and one-sided steps).
    """

    room = domain_room(domain, primals)
    if room is None or type(fdm) is not FiniteDifferenceMethod:
        return fdm
    limit = ROOM_FRACTION * room
    if fdm.max_range <= limit:
        return fdm
    return _with_max_range(fdm, limit)


@functools.lru_cache(maxsize=256)
def _with_max_range(fdm: Any, max_range: float) -> Any:
    return type(fdm)(
        fdm.grid,
        fdm.q,
        adapt=fdm.adapt,
        condition=fdm.condition,
        factor=fdm.factor,
        max_range=max_range,
    )
