"""Rules for numpy's reductions and scans: ``sum``, ``mean``, ``prod``, ``cumsum``.

Each rule accepts numpy's positional signature (``sum(a, axis, dtype, out, keepdims)``) and
keywords; ``axis`` may be None, an int (negative too) or a tuple. Every argument after ``a`` gets
``NoTangent()``. Options the rules do not model (``out=``, ``where=``, ``initial=``) make the rule
decline (return None), as a missing rule does. All four are linear or multilinear and holomorphic,
so complex inputs follow the cotangent convention directly.

``prod``'s pullback does not divide by ``x``: it multiplies exclusive cumulative products from
both ends, so zeros in ``x`` (one or several) give the exact gradient.

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.prod, np.array([2.0, 0.0, 3.0]))
>>> pullback(1.0)[1]
array([0., 6., 0.])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rruletest.domains import REALS, Domain
from rruletest.rules import register_frule, register_rrule
from rruletest.rulesets.numpy._common import (
    evaluate,
    examples_rng,
    expand_reduced,
    first_arg_pullback,
    pushforward,
    reduced_count,
    reduction_axes,
    sample,
)
from rruletest.rulesets.numpy._signatures import along_last_axis

__all__: list[str] = []

_DOMAIN = Domain((REALS,), complex=True)
_REDUCE = ("axis", "dtype", "out", "keepdims")
_SCAN = ("axis", "dtype", "out")
#: Along the last axis these act on every row independently (see ``_signatures``).
_REDUCE_SIG = along_last_axis("(n)->()", axis_at=1, keepdims_at=4)
_SCAN_SIG = along_last_axis("(n)->(n)", axis_at=1)


def _examples(*, scan: bool = False) -> list[tuple[Any, ...]]:
    """Example inputs: several shapes, axis None/int/negative/tuple, keepdims, float32, complex."""
    rng = examples_rng()
    out: list[tuple[Any, ...]] = [
        (sample(rng, (4,)),),
        (sample(rng, (3, 4)),),
        (sample(rng, (3, 4)), 0),
        (sample(rng, (2, 3, 4)), -1),
        (sample(rng, (3, 4), np.float32), 1),
        (sample(rng, (2, 3), np.complex128), 0),
    ]
    if not scan:
        out.append((sample(rng, (2, 3, 4)), (0, 2)))
        out.append((sample(rng, (2, 3)), 1, None, None, True))
    return out


def _spread(ybar: Any, x: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """``ybar`` of a reduction, repeated over the reduced axes (a fresh, writable array)."""
    g = expand_reduced(ybar, np.ndim(x), axes, keepdims)
    return np.array(np.broadcast_to(g, np.shape(x)))


# -- sum ----------------------------------------------------------------------------------


@register_rrule(np.sum, domain=_DOMAIN, examples=_examples(), signature=_REDUCE_SIG)
def _sum_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = ybar`` repeated over the summed axes."""
    res = evaluate(np.sum, x, rest, kwargs, _REDUCE, {"keepdims": False})
    if res is None:
        return None
    y, opts = res
    axes, keepdims = reduction_axes(x, opts)
    return y, first_arg_pullback((x, *rest), lambda ybar: _spread(ybar, x, axes, keepdims))


@register_frule(np.sum, domain=_DOMAIN, examples=_examples(), signature=_REDUCE_SIG)
def _sum_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = sum(xdot)`` over the same axes."""
    res = evaluate(np.sum, x, rest, kwargs, _REDUCE, {})
    if res is None:
        return None
    y = res[0]
    return y, pushforward(y, x, tangents[1], lambda xdot: np.sum(xdot, *rest, **kwargs))


# -- mean ---------------------------------------------------------------------------------


@register_rrule(np.mean, domain=_DOMAIN, examples=_examples(), signature=_REDUCE_SIG)
def _mean_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = ybar / n`` repeated over the averaged axes (``n`` elements averaged)."""
    res = evaluate(np.mean, x, rest, kwargs, _REDUCE, {"keepdims": False})
    if res is None:
        return None
    y, opts = res
    axes, keepdims = reduction_axes(x, opts)
    n = reduced_count(x, axes)
    return y, first_arg_pullback((x, *rest), lambda ybar: _spread(ybar, x, axes, keepdims) / n)


@register_frule(np.mean, domain=_DOMAIN, examples=_examples(), signature=_REDUCE_SIG)
def _mean_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = mean(xdot)`` over the same axes."""
    res = evaluate(np.mean, x, rest, kwargs, _REDUCE, {})
    if res is None:
        return None
    y = res[0]
    return y, pushforward(y, x, tangents[1], lambda xdot: np.mean(xdot, *rest, **kwargs))


# -- prod ---------------------------------------------------------------------------------


def _prod_of_others(x: Any, axes: tuple[int, ...]) -> Any:
    """For each element, the product of the other elements of its reduction group.

    Exclusive cumulative products from the left and from the right, multiplied: exact with
    zeros, no division.
    """
    x = np.asarray(x)
    k = len(axes)
    if k == 0:
        return np.ones_like(x)
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - k, x.ndim)))
    flat = moved.reshape((*moved.shape[: x.ndim - k], -1))
    ones = np.ones_like(flat[..., :1])
    left = np.concatenate([ones, np.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    right = np.concatenate([np.cumprod(flat[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
    others = (left * right).reshape(moved.shape)
    return np.moveaxis(others, tuple(range(x.ndim - k, x.ndim)), axes)


@register_rrule(np.prod, domain=_DOMAIN, examples=_examples(), signature=_REDUCE_SIG)
def _prod_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = ybar * conj(product of the other elements)``."""
    res = evaluate(np.prod, x, rest, kwargs, _REDUCE, {"keepdims": False})
    if res is None:
        return None
    y, opts = res
    axes, keepdims = reduction_axes(x, opts)

    def xbar_of(ybar: Any) -> Any:
        g = expand_reduced(ybar, np.ndim(x), axes, keepdims)
        return g * np.conj(_prod_of_others(x, axes))

    return y, first_arg_pullback((x, *rest), xbar_of)


@register_frule(np.prod, domain=_DOMAIN, examples=_examples(), signature=_REDUCE_SIG)
def _prod_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = sum(xdot * product of the other elements)`` per group."""
    res = evaluate(np.prod, x, rest, kwargs, _REDUCE, {"keepdims": False})
    if res is None:
        return None
    y, opts = res
    axes, keepdims = reduction_axes(x, opts)
    return y, pushforward(
        y,
        x,
        tangents[1],
        lambda xdot: np.sum(_prod_of_others(x, axes) * xdot, axis=axes, keepdims=keepdims),
    )


# -- cumsum -------------------------------------------------------------------------------


@register_rrule(np.cumsum, domain=_DOMAIN, examples=_examples(scan=True), signature=_SCAN_SIG)
def _cumsum_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar`` = reversed cumulative sum of ``ybar`` (of the flattened input if ``axis=None``)."""
    res = evaluate(np.cumsum, x, rest, kwargs, _SCAN, {})
    if res is None:
        return None
    y, opts = res
    axis = opts["axis"]

    def xbar_of(ybar: Any) -> Any:
        g = np.asarray(ybar)
        ax = -1 if axis is None else axis
        rev = np.flip(np.cumsum(np.flip(g, ax), axis=ax), ax)
        return rev.reshape(np.shape(x))

    return y, first_arg_pullback((x, *rest), xbar_of)


@register_frule(np.cumsum, domain=_DOMAIN, examples=_examples(scan=True), signature=_SCAN_SIG)
def _cumsum_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = cumsum(xdot)`` along the same axis."""
    res = evaluate(np.cumsum, x, rest, kwargs, _SCAN, {})
    if res is None:
        return None
    y = res[0]
    return y, pushforward(y, x, tangents[1], lambda xdot: np.cumsum(xdot, *rest, **kwargs))
