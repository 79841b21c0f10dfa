"""Rules for ``numpy.linalg.norm``: vector norms, and matrix norms over two axes.

Supported: vector ``ord`` None/2, 1, inf, -inf and any real ``p >= 1``; matrix ``ord``
None/'fro', 'nuc', 2, -2, 1, -1, inf, -inf; any ``axis`` numpy accepts, ``keepdims``; real and
complex inputs. Other orders (``0``, ``p < 1``) make the rule decline (return None).

``ord`` and ``axis`` are options, not inputs: they get ``NoTangent()``. The examples use integer
orders so a tester does not perturb them; mark a float ``ord`` such as ``np.inf`` as
non-differentiable when testing by hand (``with_tangent(np.inf, NoTangent())``).

Both rules go through one gradient ``G`` shaped like ``x`` (reduced axes kept) with
``dy = Re(sum(conj(G) * dx))`` over the reduced axes: the rrule returns ``ybar * G`` (``ybar`` is
real, the norm is real) and the frule ``sum(Re(conj(G) * xdot))``. Complex entries enter through
``sgn(x) = x / |x|``, which is what the cotangent convention asks of a real function.

Non-differentiable points and the subgradient returned (examples avoid them):

- a zero norm: ``G = 0``; an entry ``x_i == 0`` in the 1-norm (and every norm built on
  ``sgn``): ``sgn(0) = 0``;
- ties for the maximum (``inf``), minimum (``-inf``), or the largest/smallest column or row
  sum (matrix ``1``, ``-1``, ``inf``, ``-inf``): the derivative is split equally between the
  tied entries, columns or rows;
- repeated extreme singular values (matrix ``2``, ``-2``) or rank deficiency (``'nuc'``): the
  singular vectors numpy's SVD returns are used as they are.

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.linalg.norm, np.array([3.0, 4.0]))
>>> pullback(1.0)[1]
array([0.6, 0.8])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rruletest.domains import REALS, Domain
from rruletest.rules import register_frule, register_rrule
from rruletest.rulesets.numpy._common import (
    MARGIN,
    bind_options,
    evaluate,
    examples_rng,
    expand_reduced,
    extreme_gaps,
    first_arg_pullback,
    groups,
    normalize_axes,
    pushforward,
    sample,
    sample_avoiding,
    whole_call_predicate,
)
from rruletest.rulesets.numpy._signatures import along_last_axis

__all__: list[str] = []

_NAMES = ("ord", "axis", "keepdims")


def _sgn(x: Any) -> Any:
    """``x / |x|``, 0 at 0."""
    ax = np.abs(x)
    return np.where(ax == 0, 0, x / np.where(ax == 0, 1, ax))


def _safe_div(x: Any, y: Any) -> Any:
    return np.where(y == 0, 0, x / np.where(y == 0, 1, y))


def _share(mask: Any, axes: tuple[int, ...]) -> Any:
    """``mask`` divided by its count over ``axes``: ties split the derivative equally."""
    return mask / np.sum(mask, axis=axes, keepdims=True)


def _vector_gradient(x: Any, ord: Any, axes: tuple[int, ...], y_kd: Any) -> Any:
    if ord is None or ord == 2:
        return _safe_div(x, y_kd)
    ax = np.abs(x)
    if ord == 1:
        return _sgn(x)
    if ord in (np.inf, -np.inf):
        return _sgn(x) * _share(ax == y_kd, axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _sgn(x) * _safe_div(ax, y_kd) ** (ord - 1)


def _svd_gradient(x: Any, ord: Any, axes: tuple[int, ...]) -> Any:
    moved = np.moveaxis(x, axes, (-2, -1))
    u, _, vh = np.linalg.svd(moved, full_matrices=False)
    if ord == "nuc":
        g = u @ vh
    else:
        k = 0 if ord == 2 else -1
        g = u[..., :, k, None] * vh[..., None, k, :]
    return np.moveaxis(g, (-2, -1), axes)


def _matrix_gradient(x: Any, ord: Any, axes: tuple[int, ...], y_kd: Any) -> Any:
    if ord in (None, "fro"):
        return _safe_div(x, y_kd)
    if ord in ("nuc", 2, -2):
        return _svd_gradient(x, ord, axes)
    row, col = axes
    # ord +-1: column sums (over rows) are extremised; ord +-inf: row sums (over columns)
    summed = row if ord in (1, -1) else col
    sums = np.sum(np.abs(x), axis=summed, keepdims=True)
    other = col if summed == row else row
    return _sgn(x) * _share(sums == y_kd, (other,))


def _setup(x: Any, opts: dict[str, Any]) -> tuple[tuple[int, ...], bool] | None:
    """The reduced axes and whether it is a matrix norm, or None for unsupported orders."""
    ord, axis, nd = opts["ord"], opts["axis"], np.ndim(x)
    if axis is None and ord is None:
        return tuple(range(nd)), False
    axes = normalize_axes(axis, nd)
    matrix = len(axes) == 2
    if matrix:
        if ord not in (None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
            return None
        return (axes if axis is None else tuple(int(a) % nd for a in axis)), True
    if isinstance(ord, str) or not (ord in (np.inf, -np.inf) or ord is None or ord >= 1):
        return None
    return axes, False


def _gradient(x: Any, opts: dict[str, Any], axes: tuple[int, ...], matrix: bool) -> Any:
    x = np.asarray(x)
    y_kd = np.linalg.norm(x, opts["ord"], opts["axis"], keepdims=True)
    if matrix:
        return _matrix_gradient(x, opts["ord"], axes, y_kd)
    return _vector_gradient(x, opts["ord"], axes, y_kd)


# Entries at least 0.3 from 0 and extreme column/row sums apart (3.0, 2.0 ... 1.2, 0.9 by
# column; 3.1, 2.3, 1.7 by row), so no finite-difference step reaches a kink of the 1- or
# inf-norms.
_KINKED = np.array([[1.5, -0.8, 0.5, 0.3], [0.9, 0.7, -0.4, 0.3], [-0.6, 0.5, 0.3, -0.3]])


def _near_kink(x: Any, opts: dict[str, Any], axes: tuple[int, ...], matrix: bool) -> bool:
    """Whether ``x`` is within ``MARGIN`` of a point where the chosen norm has a kink."""
    ord, ax = opts["ord"], np.abs(x)
    if matrix and ord in ("nuc", 2, -2):
        s = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), compute_uv=False)
        if ord == "nuc":
            return bool(np.any(s[..., -1] < MARGIN))
        top, bottom = extreme_gaps(s)
        return bool(np.any((top if ord == 2 else bottom) < MARGIN) or np.any(s[..., -1] < MARGIN))
    if ord in (None, 2, "fro") or (not matrix and ord not in (1, np.inf, -np.inf)):
        return bool(np.any(np.sqrt(np.sum(ax * ax, axis=axes)) < MARGIN))  # only 0 is a kink
    if np.any(ax < MARGIN):  # sgn(x) jumps at 0
        return True
    if not matrix and ord == 1:
        return False
    if matrix:  # ord +-1: column sums, +-inf: row sums
        row, col = axes
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        ax = np.sum(ax, axis=summed, keepdims=True)
        axes = (other,)
    top, bottom = extreme_gaps(groups(ax, axes))
    largest = ord in (1, np.inf)  # the maximum is taken; -1, -inf: the minimum
    return bool(np.any((top if largest else bottom) < MARGIN))


@whole_call_predicate
def _avoid_kinks(x: Any, *rest: Any, **kwargs: Any) -> bool:
    """Inputs near a kink of the norm they ask for (zero, sign changes, ties, equal or zero
    singular values); one bool for the whole call."""
    opts = bind_options(rest, kwargs, _NAMES, {"keepdims": False})
    x = np.asarray(x)
    if opts is None or x.dtype.kind not in "fc" or x.size == 0:
        return False
    try:
        setup = _setup(x, opts)
    except (ValueError, TypeError, np.exceptions.AxisError):
        return False
    if setup is None:
        return False
    with np.errstate(all="ignore"):
        return _near_kink(x, opts, *setup)


_DOMAIN = Domain((REALS,), complex=True, avoid=_avoid_kinks)


#: The vector 2-norm along the last axis acts on every row independently.
def _two_norm(x: Any, *rest: Any, **kwargs: Any) -> bool:
    return (rest[0] if rest else kwargs.get("ord")) is None


_SIG = along_last_axis("(n)->()", axis_at=2, keepdims_at=3, only_if=_two_norm)


def _examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (sample(rng, (4,)),),
        (sample(rng, (3, 4)),),
        (sample(rng, (2, 3, 4)),),
        (np.array([0.8, -1.3, 0.5, 1.1]), 1),
        (np.array([0.8, -1.3, 0.5, 1.1]), 3),
        (sample(rng, (3, 4)), None, 1),
        (sample(rng, (3, 4)), 2, -1, True),
        (sample(rng, (3, 4)), "fro"),
        (sample(rng, (3, 4)), "nuc"),
        (sample_avoiding(rng, (3, 4), _avoid_kinks, 2), 2),
        (_KINKED, 1),
        (_KINKED, -1),
        (_KINKED.T, 1, (1, 0)),
        (sample(rng, (3, 2)), -2),
        (sample(rng, (2, 3, 4)), "nuc", (2, 0)),
        (sample(rng, (4,), np.float32),),
        (sample(rng, (3, 4), np.float32), "nuc"),
        (_KINKED.astype(np.float32), 1),
        (sample(rng, (4,), np.complex128),),
        (np.array([0.8 + 0.5j, -1.3j, 0.5 - 0.4j, 1.1]), 1),
        (sample(rng, (3, 2), np.complex128), 2),
    ]


@register_rrule(np.linalg.norm, domain=_DOMAIN, examples=_examples(), signature=_SIG)
def _norm_rrule(x: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``xbar = ybar * G`` (see the module docstring for ``G``)."""
    res = evaluate(np.linalg.norm, x, rest, kwargs, _NAMES, {"keepdims": False})
    setup = None if res is None else _setup(x, res[1])
    if res is None or setup is None:
        return None
    y, opts = res
    axes, matrix = setup

    def xbar_of(ybar: Any) -> Any:
        g = expand_reduced(np.real(ybar), np.ndim(x), axes, bool(opts["keepdims"]))
        return g * _gradient(x, opts, axes, matrix)

    return y, first_arg_pullback((x, *rest), xbar_of)


@register_frule(np.linalg.norm, domain=_DOMAIN, examples=_examples(), signature=_SIG)
def _norm_frule(tangents: Sequence[Any], x: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = sum(Re(conj(G) * xdot))`` over the reduced axes."""
    res = evaluate(np.linalg.norm, x, rest, kwargs, _NAMES, {"keepdims": False})
    setup = None if res is None else _setup(x, res[1])
    if res is None or setup is None:
        return None
    y, opts = res
    axes, matrix = setup

    def ydot_of(xdot: Any) -> Any:
        g = _gradient(x, opts, axes, matrix)
        return np.sum(np.real(np.conj(g) * xdot), axis=axes, keepdims=bool(opts["keepdims"]))

    return y, pushforward(y, x, tangents[1], ydot_of)
