"""A hint for a cotangent that is right on a subspace: the argument is meant to be constrained.

Many matrix functions read only part of their argument: a Cholesky factorisation or an ``eigh``
reads one triangle, and their rules return the symmetric cotangent that is right for symmetric
inputs. Finite differences along every entry then disagree (an entry of the unread triangle has
a zero derivative), and neither is wrong: the argument is meant to be symmetric. When a
cotangent of a square-matrix argument fails the comparison, but agrees with the numerical vjp
once both are projected onto symmetric (Hermitian for complex), lower or upper triangular
matrices, the report says so and names the space to declare (``with_tangent(x, Symmetric())``,
``register_rrule(..., spaces=[Symmetric()])``), with which the comparison is made on the tangent
space. No call of ``f`` is made: the projections are of the two cotangents at hand.

>>> import numpy as np
>>> x = np.array([[2.0, 0.5], [0.5, 1.0]])
>>> fd = np.array([[1.0, 0.0], [4.0, 3.0]])  # reads the lower triangle only
>>> rule = np.array([[1.0, 2.0], [2.0, 3.0]])  # the symmetric cotangent
>>> print(space_hint("args[0]", x, rule, fd, 1e-9, 1e-12))  # doctest: +ELLIPSIS
args[0]: the cotangent agrees with the numerical vjp once both are projected onto symmetric ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from rruletest.tangents import AbstractZero, unthunk

__all__ = ["jvp_space_hint", "space_hint"]

Array = np.ndarray[Any, Any]


def _symmetric(t: Array) -> Array:
    return np.asarray((t + np.conj(np.swapaxes(t, -1, -2))) / 2)


#: (what the projected cotangents are, the space to declare, the projection)
_CANDIDATES: tuple[tuple[str, str, Callable[[Array], Array]], ...] = (
    ("symmetric", "Symmetric()", _symmetric),
    ("lower triangular", "LowerTriangular()", np.tril),
    ("upper triangular", "UpperTriangular()", np.triu),
)


def _candidates(x: Array) -> Iterator[tuple[str, str, Callable[[Array], Array]]]:
    """The spaces to try for the square matrix ``x`` (Hermitian, not symmetric, if complex)."""
    for what, space, proj in _CANDIDATES:
        if what == "symmetric" and x.dtype.kind == "c":
            what, space = "Hermitian", "Hermitian()"
        yield what, space, proj


def _square(*arrays: Array) -> bool:
    """Float or complex square matrices (stacks of them), all of one shape."""
    x = arrays[0]
    return (
        x.ndim >= 2
        and x.shape[-1] == x.shape[-2] >= 2
        and all(a.shape == x.shape and a.dtype.kind in "fc" for a in arrays)
    )


def _declare(path: str, what: str, space: str) -> str:
    return (
        f"f reads only part of {path}, and the rule is right for {what} inputs. If {path} is "
        f"meant to be {what}, declare it: pass with_tangent(x, {space}) or register the rule "
        f"with spaces= holding {space} at {path}'s position (rruletest.spaces)"
    )


def _most(atol: Any) -> float:
    return float(np.max(np.asarray(atol, dtype=np.float64), initial=0.0))


def space_hint(
    path: str, primal: Any, actual: Any, expected: Any, rtol: float, atol: Any
) -> str | None:
    """A note when ``actual`` and ``expected`` (cotangents of the square matrix ``primal``)
    differ but agree within ``atol + rtol * |expected|`` after one of the candidate
    projections, and ``actual`` lies in that space while ``expected`` does not (the rule's
    cotangent has the structure, the function's full derivative lacks it); None otherwise.
    A rule whose cotangent lacks the structure (say a transposed gradient, whose symmetric part
    is right) gets no hint: it is simply wrong.
    """
    if isinstance(unthunk(actual), AbstractZero):
        return None
    try:
        a, e, x = np.asarray(unthunk(actual)), np.asarray(expected), np.asarray(primal)
    except Exception:
        return None
    if not _square(x, a, e):
        return None
    tol = _most(atol)
    for what, space, proj in _candidates(x):
        pa, pe = proj(a), proj(e)
        if not (_close(pa, pe, rtol, tol) and _close(a, pa, rtol, tol)):
            continue
        if _close(e, pe, rtol, tol):
            continue  # the numerical vjp has the structure too: a projection explains nothing
        inside = bool(np.allclose(proj(x), x, rtol=1e-12, atol=0.0))
        point = "" if inside else f" (the primal here is not {what} itself: draw such inputs too)"
        return (
            f"{path}: the cotangent agrees with the numerical vjp once both are projected onto "
            f"{what} matrices: {_declare(path, what, space)}, and the comparison is made on its "
            f"tangent space{point}"
        )
    return None


def _close(a: Array, b: Array, rtol: float, atol: float) -> bool:
    with np.errstate(invalid="ignore"):
        ok = np.abs(a - b) <= atol + rtol * np.abs(b)
    return bool(np.all(ok & np.isfinite(a) & np.isfinite(b)))


def jvp_space_hint(
    paths: list[str],
    primals: list[Any],
    dots: list[Any],
    estimate: Callable[[list[Any]], tuple[Any, Any]],
    rule: Callable[[list[Any]], Any],
    rtol: float,
    atol: Any,
) -> str | None:
    """The forward counterpart of ``space_hint``: for each square-matrix argument whose input
    tangent is not symmetric (triangular), the rule's output tangent along the projected
    tangent (``rule``) against the numerical jvp along it (``estimate``: value and error).
    When they agree, the note names the space. Calls the rule and the estimate at most three
    times per argument, on a failure only; None when no projection reconciles them."""
    tol = _most(atol)
    for k, (path, x, d) in enumerate(zip(paths, primals, dots, strict=True)):
        if not isinstance(x, np.ndarray):
            continue  # a number or a container (a dict, a list of arrays) is no matrix
        try:
            da = np.asarray(unthunk(d))
        except Exception:  # a tangent that is no array (a Tangent): nothing to project
            continue
        xa = x
        if not _square(xa, da):
            continue
        for what, space, proj in _candidates(xa):
            pd = proj(da).astype(da.dtype, copy=False)
            if _close(da, pd, 0.0, 0.0):
                continue  # the tangent has the structure already: nothing to learn
            moved = [pd if j == k else t for j, t in enumerate(dots)]
            try:
                value, error = estimate(moved)
                got = np.asarray(unthunk(rule(moved)), dtype=np.result_type(value, np.float64))
            except Exception:
                return None
            ref = np.asarray(value)
            if got.shape != ref.shape or not _close(got, ref, rtol, tol + _most(error)):
                continue
            return (
                f"{path}: along the input tangent projected onto {what} matrices the output "
                f"tangent agrees with the numerical jvp: {_declare(path, what, space)}, and "
                f"tangents are drawn in its tangent space"
            )
    return None
