"""Rules for ``trace`` and the linear-algebra functions ``linalg.inv``, ``linalg.det`` and
``linalg.solve``, with numpy's batch dimensions and complex matrices.

All four are holomorphic, so ``abar = ybar * conj(dy/dA)`` in the cotangent convention:

- ``inv``: ``Abar = -Y^H @ Ybar @ Y^H`` with ``Y = inv(A)``;
- ``det``: ``Abar = ybar * adj(A)^H`` (``d det = trace(adj(A) @ dA)``), with the adjugate
  ``adj(A) = det(A) inv(A)`` computed from the SVD, so it exists for singular ``A`` too;
- ``solve(A, b)`` (``x = A^-1 b``): ``bbar = solve(A^H, xbar)``, ``Abar = -bbar @ x^H``, each
  summed over the batch dimensions its operand was broadcast along. ``b`` is a vector when it is
  1-D and a stack of matrices otherwise (numpy 2's rule).

Singular matrices are outside the domain: its ``avoid`` rejects matrices with a condition
number above ``MAX_CONDITION`` or a singular value below ``MARGIN`` (the examples are well
conditioned) for generated tests. ``det``'s rules still give the derivative at a singular
matrix (the adjugate), as ``inv``-based formulas cannot.

>>> import numpy as np
>>> from rruletest import rrule
>>> _, pullback = rrule(np.linalg.det, np.array([[2.0, 0.0], [0.0, 3.0]]))
>>> pullback(1.0)[1]
array([[3., 0.],
       [0., 2.]])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rruletest.domains import REALS, Domain
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.rules import register_frule, register_rrule
from rruletest.rulesets.numpy._common import (
    MARGIN,
    evaluate,
    examples_rng,
    first_arg_pullback,
    is_array_input,
    like_output,
    live_tangent,
    project,
    pullback_over,
    pushforward,
    sample,
    whole_call_predicate,
)
from rruletest.rulesets.numpy._signatures import on_trailing_matrices
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT

__all__: list[str] = []

#: Matrices whose condition number exceeds this are avoided: near-singular inputs make both
#: the rules and finite differences ill-conditioned.
MAX_CONDITION = 100.0


@whole_call_predicate
def _avoid_ill_conditioned(a: Any, *rest: Any, **kwargs: Any) -> bool:
    """Inputs whose (first) matrix argument is singular or nearly so: a condition number above
    ``MAX_CONDITION`` or a smallest singular value below ``MARGIN`` (``[[1e-38]]`` has condition
    number 1 but its inverse is not computable by finite differences)."""
    a = np.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.dtype.kind not in "fc" or a.size == 0:
        return False
    with np.errstate(all="ignore"):
        s = np.linalg.svd(a, compute_uv=False)
        cond = s[..., 0] / s[..., -1]
    return bool(np.any(~np.isfinite(cond) | (cond > MAX_CONDITION) | (s[..., -1] < MARGIN)))


_DOMAIN = Domain((REALS,), complex=True)
_SQUARE_DOMAIN = Domain((REALS,), complex=True, avoid=_avoid_ill_conditioned)
#: Stacks of matrices: each on its own.
_DET_SIG = on_trailing_matrices("(n,n)->()")
_INV_SIG = on_trailing_matrices("(n,n)->(n,n)")


def _h(a: Any) -> Any:
    """Conjugate transpose of a stack of matrices."""
    return np.conj(np.swapaxes(a, -1, -2))


def _well_conditioned(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float64
) -> Any:
    """A random matrix stack plus 3 on the diagonal: far from singular."""
    n = shape[-1]
    return (sample(rng, shape, dtype) + 3 * np.eye(n)).astype(dtype)


def _square_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (_well_conditioned(rng, (3, 3)),),
        (_well_conditioned(rng, (1, 1)),),
        (_well_conditioned(rng, (2, 3, 3)),),
        (_well_conditioned(rng, (2, 2), np.float32),),
        (_well_conditioned(rng, (3, 3), np.complex128),),
    ]


# -- inv ----------------------------------------------------------------------------------


@register_rrule(
    np.linalg.inv, domain=_SQUARE_DOMAIN, examples=_square_examples(), signature=_INV_SIG
)
def _inv_rrule(a: Any) -> tuple[Any, Any] | None:
    """``Abar = -Y^H @ Ybar @ Y^H``."""
    y = np.linalg.inv(a)
    if not is_array_input(a):
        return None

    def xbar_of(ybar: Any) -> Any:
        yh = _h(y)
        return -(yh @ ybar @ yh)

    return y, first_arg_pullback((a,), xbar_of)


@register_frule(
    np.linalg.inv, domain=_SQUARE_DOMAIN, examples=_square_examples(), signature=_INV_SIG
)
def _inv_frule(tangents: Sequence[Any], a: Any) -> Any:
    """``Ydot = -Y @ Adot @ Y``."""
    y = np.linalg.inv(a)
    if not is_array_input(a):
        return None
    return y, pushforward(y, a, tangents[1], lambda adot: -(y @ adot @ y))


# -- det ----------------------------------------------------------------------------------


def adjugate(a: Any) -> Any:
    """The adjugate ``adj(A)`` of a (stack of) square matrices, ``det(A) inv(A)`` where ``A`` is
    invertible, from the SVD ``A = U diag(s) V^H``: ``adj(A) = det(U) det(V^H) V diag(c) U^H``
    with ``c_i`` the product of the other singular values (no division, so singular and
    rank-deficient matrices get their exact adjugate).

    >>> adjugate(np.array([[1.0, 2.0], [2.0, 4.0]])).round(12)
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    a = np.asarray(a)
    n = a.shape[-1]
    if n == 1:
        return np.ones_like(a)
    u, s, vh = np.linalg.svd(a)
    ones = np.ones((*s.shape[:-1], 1), dtype=s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(s, -1)[..., :-1]], axis=-1), -1), -1)
    others = before * after
    phase = np.linalg.det(u) * np.linalg.det(vh)
    adj = _h(vh) @ (others[..., :, None] * _h(u))
    return (phase[..., None, None] * adj).astype(np.result_type(a, s))


@register_rrule(
    np.linalg.det, domain=_SQUARE_DOMAIN, examples=_square_examples(), signature=_DET_SIG
)
def _det_rrule(a: Any) -> tuple[Any, Any] | None:
    """``Abar = ybar * adj(A)^H``."""
    y = np.linalg.det(a)
    if not is_array_input(a):
        return None

    def xbar_of(ybar: Any) -> Any:
        return np.asarray(ybar)[..., None, None] * _h(adjugate(a))

    return y, first_arg_pullback((a,), xbar_of)


@register_frule(
    np.linalg.det, domain=_SQUARE_DOMAIN, examples=_square_examples(), signature=_DET_SIG
)
def _det_frule(tangents: Sequence[Any], a: Any) -> Any:
    """``ydot = trace(adj(A) @ Adot)``."""
    y = np.linalg.det(a)
    if not is_array_input(a):
        return None

    def ydot_of(adot: Any) -> Any:
        return np.sum(np.swapaxes(adjugate(a), -1, -2) * adot, axis=(-2, -1))

    return y, pushforward(y, a, tangents[1], ydot_of)


# -- solve --------------------------------------------------------------------------------


def _solve_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (_well_conditioned(rng, (3, 3)), sample(rng, (3,))),
        (_well_conditioned(rng, (3, 3)), sample(rng, (3, 2))),
        (_well_conditioned(rng, (2, 3, 3)), sample(rng, (3, 2))),
        (_well_conditioned(rng, (3, 3)), sample(rng, (2, 3, 1))),
        (_well_conditioned(rng, (2, 2), np.float32), sample(rng, (2,), np.float32)),
        (_well_conditioned(rng, (3, 3), np.complex128), sample(rng, (3,), np.complex128)),
        (_well_conditioned(rng, (2, 2)), sample(rng, (2, 2), np.complex128)),
        (_well_conditioned(rng, (2, 3, 3)), sample(rng, (3,))),  # one b for every matrix
    ]


def _as_matrix(v: Any, vector: bool) -> Any:
    """``v`` as a stack of matrices: a column added where ``solve`` took ``b`` as vectors
    (``x`` then has fewer dimensions than ``a``: ``(..., M)``; numpy 2 does so for a 1-d ``b``,
    which every matrix of a batched ``a`` shares)."""
    return np.asarray(v)[..., None] if vector else np.asarray(v)


@register_rrule(np.linalg.solve, domain=_SQUARE_DOMAIN, examples=_solve_examples())
def _solve_rrule(a: Any, b: Any) -> tuple[Any, Any] | None:
    """``bbar = solve(A^H, xbar)``, ``Abar = -bbar @ x^H`` (batch dims unbroadcast)."""
    x = np.linalg.solve(a, b)
    if not (is_array_input(a) and is_array_input(b)):
        return None

    vector = np.ndim(x) < np.ndim(a)  # b (and x) a vector per matrix: numpy's choice

    def cotangents_of(xbar: Any) -> tuple[Any, Any]:
        am = np.asarray(a)
        g = np.broadcast_to(_as_matrix(xbar, vector), _as_matrix(x, vector).shape)
        full_b = np.linalg.solve(np.broadcast_to(_h(am), (*g.shape[:-2], *am.shape[-2:])), g)
        bbar = project(b, unbroadcast(_as_matrix(b, vector), full_b).reshape(np.shape(b)))
        abar = NO_TANGENT
        if is_differentiable(a):
            abar = project(a, unbroadcast(am, -(full_b @ _h(_as_matrix(x, vector)))))
        return abar, bbar

    return x, pullback_over((a, b), cotangents_of)


@register_frule(np.linalg.solve, domain=_SQUARE_DOMAIN, examples=_solve_examples())
def _solve_frule(tangents: Sequence[Any], a: Any, b: Any) -> Any:
    """``xdot = solve(A, bdot - Adot @ x)``."""
    x = np.linalg.solve(a, b)
    if not (is_array_input(a) and is_array_input(b)):
        return None
    adot, bdot = live_tangent(a, tangents[1]), live_tangent(b, tangents[2])
    if adot is None and bdot is None:
        return x, ZERO_TANGENT
    vector = np.ndim(x) < np.ndim(a)  # b (and x) a vector per matrix: numpy's choice
    rhs: Any = 0
    if bdot is not None:
        rhs = _as_matrix(bdot, vector)
    if adot is not None:
        rhs = rhs - np.asarray(adot) @ _as_matrix(x, vector)
    am = np.asarray(a)
    rhs = np.broadcast_to(rhs, _as_matrix(x, vector).shape)
    xdot = np.linalg.solve(np.broadcast_to(am, (*rhs.shape[:-2], *am.shape[-2:])), rhs)
    return x, like_output(x, xdot.reshape(np.shape(x)))


# -- trace --------------------------------------------------------------------------------

_TRACE = ("offset", "axis1", "axis2", "dtype", "out")


def _trace_examples() -> list[tuple[Any, ...]]:
    rng = examples_rng()
    return [
        (sample(rng, (3, 3)),),
        (sample(rng, (3, 4)), 1),
        (sample(rng, (4, 3)), -2),
        (sample(rng, (2, 3, 4)), 0, 2, 1),
        (sample(rng, (3, 3), np.float32),),
        (sample(rng, (3, 3), np.complex128),),
    ]


@register_rrule(np.trace, domain=_DOMAIN, examples=_trace_examples())
def _trace_rrule(a: Any, *rest: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``Abar`` = ``ybar`` on the traced diagonal, 0 elsewhere."""
    res = evaluate(np.trace, a, rest, kwargs, _TRACE, {"offset": 0, "axis1": 0, "axis2": 1})
    if res is None:
        return None
    y, opts = res

    def xbar_of(ybar: Any) -> Any:
        nd = np.ndim(a)
        ax1, ax2 = int(opts["axis1"]) % nd, int(opts["axis2"]) % nd
        n1, n2 = np.shape(a)[ax1], np.shape(a)[ax2]
        eye = np.eye(n1, n2, k=int(opts["offset"]))
        full = np.asarray(ybar)[..., None, None] * eye
        return np.moveaxis(full, (-2, -1), (ax1, ax2))

    return y, first_arg_pullback((a, *rest), xbar_of)


@register_frule(np.trace, domain=_DOMAIN, examples=_trace_examples())
def _trace_frule(tangents: Sequence[Any], a: Any, *rest: Any, **kwargs: Any) -> Any:
    """``ydot = trace(Adot)`` with the same offset and axes."""
    res = evaluate(np.trace, a, rest, kwargs, _TRACE, {})
    if res is None:
        return None
    y = res[0]
    return y, pushforward(y, a, tangents[1], lambda adot: np.trace(adot, *rest, **kwargs))
