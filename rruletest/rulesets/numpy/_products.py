"""Rules for numpy's products: ``matmul`` (with batch broadcasting and 1-D operands) and ``dot``.

Both are bilinear and holomorphic: ``abar = ybar @ conj(b).T`` and ``bbar = conj(a).T @ ybar``
in matrix terms. ``matmul`` broadcasts its batch dimensions, so each cotangent is summed back to
its operand's batch shape (``unbroadcast``); a 1-D operand is treated as a row (first) or column
(second) matrix and its cotangent is returned 1-D. ``dot`` contracts the last axis of ``a`` with
the second-to-last of ``b`` (the last if ``b`` is 1-D) and multiplies when either is a scalar.
``outer`` flattens both operands: ``abar = ybar @ conj(b)``, ``bbar = ybar^T @ conj(a)``,
reshaped to the operands' shapes.

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.matmul, np.ones((5, 2, 3)), np.ones((3, 4)))
>>> [t.shape for t in pullback(np.ones((5, 2, 4)))[1:]]
[(5, 2, 3), (3, 4)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rruletest.domains import REALS, Domain
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.rules import register_frule, register_rrule
from rruletest.rulesets.numpy._common import (
    examples_rng,
    is_array_input,
    like_output,
    live_tangent,
    project,
    pullback_over,
    sample,
)
from rruletest.rulesets.numpy._signatures import on_trailing_matrices
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT

__all__: list[str] = []

_DOMAIN = Domain((REALS,), complex=True)
#: matmul is a gufunc: each matrix of a stack on its own.
_MATMUL_SIG = on_trailing_matrices("(m,k),(k,n)->(m,n)")


def _evaluate(product: Any, a: Any, b: Any, kwargs: dict[str, Any]) -> Any:
    """``product(a, b, **kwargs)`` (numpy's errors first), or None when the rule declines:
    keyword options, or operands that are not arrays or numbers."""
    y = product(a, b, **kwargs)
    return None if kwargs or not (is_array_input(a) and is_array_input(b)) else y


def _bilinear_frule(
    product: Any, tangents: Sequence[Any], a: Any, b: Any, y: Any
) -> tuple[Any, Any]:
    """``ydot = product(adot, b) + product(a, bdot)``, skipping zero tangents."""
    adot = live_tangent(a, tangents[1])
    bdot = live_tangent(b, tangents[2])
    ydot: Any = ZERO_TANGENT
    if adot is not None:
        ydot = product(adot, b)
    if bdot is not None:
        ydot = ydot + product(a, bdot)
    return y, like_output(y, ydot)


# -- matmul -------------------------------------------------------------------------------


def _matmul_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (sample(rng, (2, 3)), sample(rng, (3, 4))),
        (sample(rng, (3,)), sample(rng, (3, 2))),
        (sample(rng, (2, 3)), sample(rng, (3,))),
        (sample(rng, (4,)), sample(rng, (4,))),
        (sample(rng, (5, 2, 3)), sample(rng, (3, 2))),
        (sample(rng, (2, 1, 2, 3)), sample(rng, (4, 3, 2))),
        (sample(rng, (3,)), sample(rng, (2, 3, 2))),
        (sample(rng, (2, 3), np.float32), sample(rng, (3, 2), np.float32)),
        (sample(rng, (2, 3), np.complex128), sample(rng, (3, 2), np.complex128)),
        (sample(rng, (2, 2)), sample(rng, (2, 3), np.complex128)),
    ]


@register_rrule(np.matmul, domain=_DOMAIN, examples=_matmul_examples(), signature=_MATMUL_SIG)
def _matmul_rrule(a: Any, b: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``abar = ybar @ conj(b)^T``, ``bbar = conj(a)^T @ ybar``, batch dims unbroadcast."""
    y = _evaluate(np.matmul, a, b, kwargs)
    if y is None:
        return None

    def cotangents_of(ybar: Any) -> tuple[Any, Any]:
        am, bm = np.asarray(a), np.asarray(b)
        g = np.asarray(ybar)
        if bm.ndim == 1:
            g, bm = g[..., None], bm[:, None]
        if am.ndim == 1:
            g, am = g[..., None, :], am[None, :]
        abar = bbar = NO_TANGENT
        if is_differentiable(a):
            full = np.matmul(g, np.conj(bm).swapaxes(-1, -2))
            abar = project(a, unbroadcast(am, full).reshape(np.shape(a)))
        if is_differentiable(b):
            full = np.matmul(np.conj(am).swapaxes(-1, -2), g)
            bbar = project(b, unbroadcast(bm, full).reshape(np.shape(b)))
        return abar, bbar

    return y, pullback_over((a, b), cotangents_of)


@register_frule(np.matmul, domain=_DOMAIN, examples=_matmul_examples(), signature=_MATMUL_SIG)
def _matmul_frule(tangents: Sequence[Any], a: Any, b: Any, **kwargs: Any) -> Any:
    """``ydot = adot @ b + a @ bdot``."""
    y = _evaluate(np.matmul, a, b, kwargs)
    return None if y is None else _bilinear_frule(np.matmul, tangents, a, b, y)


# -- dot ----------------------------------------------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxy"


def _dot_subscripts(nda: int, ndb: int) -> tuple[str, str, str]:
    """einsum subscripts ``(a, b, y)`` of ``np.dot`` for operands of ``nda``, ``ndb`` >= 1 dims."""
    a_sub = _LETTERS[: nda - 1] + "z"
    if ndb == 1:
        return a_sub, "z", a_sub[:-1]
    free = _LETTERS[nda - 1 : nda + ndb - 2]
    return a_sub, free[:-1] + "z" + free[-1], a_sub[:-1] + free


def _dot_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (sample(rng, (3,)), sample(rng, (3,))),
        (sample(rng, (2, 3)), sample(rng, (3, 4))),
        (sample(rng, (2, 3)), sample(rng, (3,))),
        (sample(rng, (3,)), sample(rng, (3, 2))),
        (sample(rng, (2, 2, 3)), sample(rng, (4, 3, 2))),
        (1.5, sample(rng, (2, 3))),
        (sample(rng, (2, 3), np.float32), sample(rng, (3,), np.float32)),
        (sample(rng, (2, 3), np.complex128), sample(rng, (3, 2), np.complex128)),
    ]


@register_rrule(np.dot, domain=_DOMAIN, examples=_dot_examples())
def _dot_rrule(a: Any, b: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """Contractions of ``ybar`` with ``conj`` of the other operand; scalars multiply."""
    y = _evaluate(np.dot, a, b, kwargs)
    if y is None:
        return None

    def cotangents_of(ybar: Any) -> tuple[Any, Any]:
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            return project(a, ybar * np.conj(b)), project(b, np.conj(a) * ybar)
        sa, sb, sy = _dot_subscripts(np.ndim(a), np.ndim(b))
        abar = bbar = NO_TANGENT
        if is_differentiable(a):
            abar = project(a, np.einsum(f"{sy},{sb}->{sa}", ybar, np.conj(b), optimize=True))
        if is_differentiable(b):
            bbar = project(b, np.einsum(f"{sa},{sy}->{sb}", np.conj(a), ybar, optimize=True))
        return abar, bbar

    return y, pullback_over((a, b), cotangents_of)


@register_frule(np.dot, domain=_DOMAIN, examples=_dot_examples())
def _dot_frule(tangents: Sequence[Any], a: Any, b: Any, **kwargs: Any) -> Any:
    """``ydot = dot(adot, b) + dot(a, bdot)``."""
    y = _evaluate(np.dot, a, b, kwargs)
    return None if y is None else _bilinear_frule(np.dot, tangents, a, b, y)


# -- outer --------------------------------------------------------------------------------


def _outer_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (sample(rng, (3,)), sample(rng, (4,))),
        (sample(rng, (2, 2)), sample(rng, (3,))),
        (1.5, sample(rng, (3,))),
        (sample(rng, (3,), np.float32), sample(rng, (2,), np.float32)),
        (sample(rng, (3,), np.complex128), sample(rng, (2,), np.complex128)),
    ]


@register_rrule(np.outer, domain=_DOMAIN, examples=_outer_examples())
def _outer_rrule(a: Any, b: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``abar = ybar @ conj(b)``, ``bbar = ybar^T @ conj(a)`` on the flattened operands."""
    y = _evaluate(np.outer, a, b, kwargs)
    if y is None:
        return None

    def cotangents_of(ybar: Any) -> tuple[Any, Any]:
        g = np.asarray(ybar)
        af, bf = np.ravel(a), np.ravel(b)
        abar = project(a, (g @ np.conj(bf)).reshape(np.shape(a)))
        bbar = project(b, (g.T @ np.conj(af)).reshape(np.shape(b)))
        return abar, bbar

    return y, pullback_over((a, b), cotangents_of)


@register_frule(np.outer, domain=_DOMAIN, examples=_outer_examples())
def _outer_frule(tangents: Sequence[Any], a: Any, b: Any, **kwargs: Any) -> Any:
    """``ydot = outer(adot, b) + outer(a, bdot)``."""
    y = _evaluate(np.outer, a, b, kwargs)
    return None if y is None else _bilinear_frule(np.outer, tangents, a, b, y)
