"""The dense numerical references: ``J @ xdot`` and ``J^T ybar`` for ``f`` at ``xs``.

Without a cache the blockwise engine (``finite_differences.dense``) computes them and never holds
the Jacobian; with one (``Setup.cache``: ``test_scalar`` runs the frule and rrule testers at the
same point) one Jacobian serves both testers. A number in, a number out takes the engine's scalar
path (``number_jvp``/``number_vjp``), its partials shared the same way.

>>> import numpy as np
>>> est = dense_jvp(None, np.sin, [np.array([0.0, 1.0])], [np.ones(2)], np.zeros(2))
>>> bool(np.allclose(est.value, np.cos([0.0, 1.0])))
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.finite_differences import Estimate, jacobian_estimate, to_vec
from rruletest.finite_differences.dense import dense_jvp as engine_jvp
from rruletest.finite_differences.dense import dense_vjp as engine_vjp
from rruletest.finite_differences.scalar import (
    number_jvp,
    number_partials,
    number_vjp,
    takes_a_number,
)
from rruletest.tangents import AbstractZero, unthunk

__all__ = ["dense_jvp", "dense_vjp"]


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


def _scalar_partials(
    fdm: Any, g: Callable[..., Any], x: Any, cache: dict[Any, Any] | None
) -> list[Any]:
    """The engine's scalar partials of ``g`` at the number ``x`` (``number_partials``), shared
    through ``cache`` by ``test_scalar``'s two testers."""
    key = ("scalar", fdm, type(x), np.asarray(x).dtype.str, np.asarray(x).tobytes())
    found = None if cache is None else cache.get(key)
    if found is not None:
        return list(found)
    out = number_partials(fdm, g, x)
    if cache is not None:
        cache[key] = tuple(out)
    return out


def dense_jvp(
    fdm: Any,
    g: Callable[..., Any],
    xs: Sequence[Any],
    dots: Sequence[Any],
    y: Any,
    cache: dict[Any, Any] | None = None,
) -> Any:
    """``J @ xdot`` from the numerical Jacobian of ``g`` at ``xs``, as an ``Estimate``."""

    if takes_a_number(xs, y):
        return number_jvp(fdm, g, xs[0], unthunk(dots[0]), _scalar_partials(fdm, g, xs[0], cache))

    if cache is None:  # blockwise, skipping coordinates whose tangent is zero
        return engine_jvp(fdm, g, xs, dots)
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
    if takes_a_number(xs, y) and not isinstance(ybar, AbstractZero):
        return [number_vjp(fdm, g, xs[0], ybar, _scalar_partials(fdm, g, xs[0], cache))]

    if cache is None:  # blockwise: the Jacobian is never held
        return list(engine_vjp(fdm, g, ybar, *xs))  # (steps kept: see _noise_allowance)
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
