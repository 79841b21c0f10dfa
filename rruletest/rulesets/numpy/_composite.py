"""``logsumexp`` and ``softmax``: numerically stable composites, with their rules.

numpy has neither, so they are defined here (``rruletest.rulesets.numpy.logsumexp``) as an
example of a rule for a function written in terms of others: the rule is cheaper and more
accurate than differentiating the composition, and its test proves it right. Both are real
functions: complex inputs make the rules decline (return None), as for ``max``.

>>> import numpy as np
>>> float(logsumexp(np.array([0.0, 0.0])))  # log(2)
0.6931471805599453
>>> softmax(np.array([0.0, np.log(3.0)]))
array([0.25, 0.75])
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
    normalize_axes,
    pushforward,
    reduction_axes,
    sample,
)
from rruletest.rulesets.numpy._signatures import along_last_axis

__all__ = ["logsumexp", "softmax"]

_DOMAIN = Domain((REALS,))


def _shifted(x: Any, axis: Any) -> tuple[Any, Any]:
    """``(x - m, m)`` with ``m`` the maximum over ``axis`` (kept), 0 where it is not finite."""
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
    m = np.where(np.isfinite(m), m, 0).astype(m.dtype)
    return x - m, m


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log(sum(exp(x), axis))`` without overflow: the maximum is factored out first.

    Args:
        x: real array (or number).
        axis: None (all elements), an int or a tuple of ints.
        keepdims: keep the reduced axes with length 1.

    >>> round(float(logsumexp(np.array([1000.0, 1000.0])) - 1000.0), 12)
    0.69314718056
    """
    d, m = _shifted(x, axis)
    with np.errstate(divide="ignore"):
        y = np.log(np.sum(np.exp(d), axis=axis, keepdims=True)) + m
    return y if keepdims else np.squeeze(y, axis=normalize_axes(axis, np.ndim(x)))[()]


def softmax(x: Any, axis: Any = -1) -> Any:
    """``exp(x) / sum(exp(x), axis)`` without overflow; sums to 1 along ``axis``.

    Args:
        x: real array.
        axis: the axis (or axes; None for all) to normalise over, the last by default.

    >>> softmax(np.array([[1.0, 1.0], [0.0, 1000.0]]))
    array([[0.5, 0.5],
           [0. , 1. ]])
    """
    d, _ = _shifted(x, axis)
    e = np.exp(d)
    return e / np.sum(e, axis=axis, keepdims=True)


def _examples(*, with_keepdims: bool) -> list[tuple[Any, ...]]:
    rng = examples_rng()
    out: list[tuple[Any, ...]] = [
        (sample(rng, (4,)),),
        (sample(rng, (3, 4)),),
        (sample(rng, (3, 4)), 0),
        (sample(rng, (2, 3, 4)), (0, 2)),
        (sample(rng, (3, 4)) * 300,),
        (sample(rng, (3, 4), np.float32), 1),
    ]
    if with_keepdims:
        out.append((sample(rng, (2, 3)), 1, True))
    else:
        out.append((sample(rng, (2, 3)), None))
    return out


_LSE = ("axis", "keepdims")
_SOFTMAX = ("axis",)
#: Along the last axis these act on every row independently (see ``_signatures``).
_LSE_SIG = along_last_axis("(n)->()", axis_at=1, keepdims_at=2)
_SOFTMAX_SIG = along_last_axis("(n)->(n)", axis_at=1, axis_default=-1)


@register_rrule(
    logsumexp, domain=_DOMAIN, examples=_examples(with_keepdims=True), signature=_LSE_SIG
)
def _logsumexp_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = ybar * softmax(x)`` over the reduced axes (``exp(x - y)``)."""
    res = evaluate(logsumexp, x, rest, kwargs, _LSE, {"keepdims": False})
    if res is None or np.iscomplexobj(x):
        return None
    y, opts = res
    axes, keepdims = reduction_axes(x, opts)

    def xbar_of(ybar: Any) -> Any:
        y_kd = expand_reduced(y, np.ndim(x), axes, keepdims)
        return expand_reduced(ybar, np.ndim(x), axes, keepdims) * np.exp(x - y_kd)

    return y, first_arg_pullback((x, *rest), xbar_of)


@register_frule(
    logsumexp, domain=_DOMAIN, examples=_examples(with_keepdims=True), signature=_LSE_SIG
)
def _logsumexp_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = sum(softmax(x) * xdot)`` over the reduced axes."""
    res = evaluate(logsumexp, x, rest, kwargs, _LSE, {"keepdims": False})
    if res is None or np.iscomplexobj(x):
        return None
    y, opts = res
    axes, keepdims = reduction_axes(x, opts)

    def ydot_of(xdot: Any) -> Any:
        p = np.exp(x - expand_reduced(y, np.ndim(x), axes, keepdims))
        return np.sum(p * xdot, axis=axes, keepdims=keepdims)

    return y, pushforward(y, x, tangents[1], ydot_of)


@register_rrule(
    softmax, domain=_DOMAIN, examples=_examples(with_keepdims=False), signature=_SOFTMAX_SIG
)
def _softmax_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = y * (ybar - sum(ybar * y))`` along ``axis``."""
    res = evaluate(softmax, x, rest, kwargs, _SOFTMAX, {"axis": -1})
    if res is None or np.iscomplexobj(x):
        return None
    y, opts = res
    axis = opts["axis"]

    def xbar_of(ybar: Any) -> Any:
        ybar = np.real(ybar)
        return y * (ybar - np.sum(ybar * y, axis=axis, keepdims=True))

    return y, first_arg_pullback((x, *rest), xbar_of)


@register_frule(
    softmax, domain=_DOMAIN, examples=_examples(with_keepdims=False), signature=_SOFTMAX_SIG
)
def _softmax_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = y * (xdot - sum(y * xdot))`` along ``axis``."""
    res = evaluate(softmax, x, rest, kwargs, _SOFTMAX, {"axis": -1})
    if res is None or np.iscomplexobj(x):
        return None
    y, opts = res
    axis = opts["axis"]
    return y, pushforward(
        y, x, tangents[1], lambda xdot: y * (xdot - np.sum(y * xdot, axis=axis, keepdims=True))
    )
