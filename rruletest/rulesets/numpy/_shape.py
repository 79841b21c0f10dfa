"""Rules for numpy's shape functions: ``transpose`` and ``reshape``.

Both are linear permutations of the elements, so the pullback applies the inverse permutation
(``transpose`` by the inverse axes, ``reshape`` back to the input's shape in the same ``order``)
and the frule applies the function itself to the tangent. Tangents are fresh arrays, never views
of ``ybar`` or ``xdot``, so accumulating into them in place is safe. Shapes, axes and orders get
``NoTangent()``.

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.transpose, np.zeros((2, 3, 4)), (1, 2, 0))
>>> [np.shape(t) for t in pullback(np.ones((3, 4, 2)))[1:2]]
[(2, 3, 4)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rruletest.domains import REALS, Domain
from rruletest.rules import register_frule, register_rrule
from rruletest.rulesets.numpy._common import (
    bind_options,
    evaluate,
    examples_rng,
    first_arg_pullback,
    is_array_input,
    pushforward,
    sample,
)

__all__: list[str] = []

_DOMAIN = Domain((REALS,), complex=True)


# -- transpose ----------------------------------------------------------------------------


def _permutation(axes: Any, ndim: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))[::-1]
    return tuple(int(a) % ndim for a in axes)


def _transpose_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (sample(rng, (3, 4)),),
        (sample(rng, (2, 3, 4)), (1, 2, 0)),
        (sample(rng, (2, 3, 4)), (-1, 0, 1)),
        (sample(rng, (4,)),),
        (sample(rng, (3, 2), np.float32), (1, 0)),
        (sample(rng, (2, 3), np.complex128),),
    ]


@register_rrule(np.transpose, domain=_DOMAIN, examples=_transpose_examples())
def _transpose_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = transpose(ybar, inverse permutation)``."""
    res = evaluate(np.transpose, x, rest, kwargs, ("axes",), {})
    if res is None:
        return None
    y, opts = res
    inverse = tuple(int(i) for i in np.argsort(_permutation(opts["axes"], np.ndim(x))))

    return y, first_arg_pullback((x, *rest), lambda ybar: np.array(np.transpose(ybar, inverse)))


@register_frule(np.transpose, domain=_DOMAIN, examples=_transpose_examples())
def _transpose_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = transpose(xdot, axes)``."""
    res = evaluate(np.transpose, x, rest, kwargs, ("axes",), {})
    if res is None:
        return None
    y, opts = res
    return y, pushforward(y, x, tangents[1], lambda xdot: np.transpose(xdot, opts["axes"]))


# -- reshape ------------------------------------------------------------------------------


def _reshape_evaluate(
    x: Any, rest: Sequence[Any], kwargs: dict[str, Any]
) -> tuple[Any, dict[str, Any]] | None:
    y = np.reshape(x, *rest, **kwargs)
    if not is_array_input(x):
        return None
    kwargs = dict(kwargs)
    if "newshape" in kwargs:  # numpy < 2.1 spelling
        kwargs["shape"] = kwargs.pop("newshape")
    opts = bind_options(rest, kwargs, ("shape", "order", "copy"), {"order": "C"})
    return None if opts is None else (y, opts)


def _resolved_order(x: Any, order: Any) -> Any:
    """The order numpy reads and writes in: ``'A'`` is ``'F'`` for Fortran-ordered arrays."""
    if order == "A":
        return "F" if np.isfortran(x) else "C"
    return order


def _reshape_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (sample(rng, (3, 4)), (4, 3)),
        (sample(rng, (2, 3, 4)), (-1,)),
        (sample(rng, (2, 6)), (3, -1), "F"),
        (sample(rng, (6,)), (2, 3, 1)),
        (sample(rng, (2, 3), np.float32), (3, 2)),
        (sample(rng, (2, 3), np.complex128), 6),
    ]


@register_rrule(np.reshape, domain=_DOMAIN, examples=_reshape_examples())
def _reshape_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = reshape(ybar, shape of x)`` in the same element order."""
    res = _reshape_evaluate(x, rest, kwargs)
    if res is None:
        return None
    y, opts = res
    order = _resolved_order(x, opts["order"])
    shape = np.shape(x)

    def xbar_of(ybar: Any) -> Any:
        return np.array(np.reshape(ybar, shape, order=order))

    return y, first_arg_pullback((x, *rest), xbar_of)


@register_frule(np.reshape, domain=_DOMAIN, examples=_reshape_examples())
def _reshape_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = reshape(xdot, shape)`` in the order the primal used."""
    res = _reshape_evaluate(x, rest, kwargs)
    if res is None:
        return None
    y, opts = res
    order = _resolved_order(x, opts["order"])
    return y, pushforward(
        y, x, tangents[1], lambda xdot: np.reshape(xdot, opts["shape"], order=order)
    )
