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

from collections.abc import Callable
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
    try:
        a = np.asarray(unthunk(actual))
        e = np.asarray(expected)
        x = np.asarray(primal)
    except Exception:
        return None
    if isinstance(unthunk(actual), AbstractZero) or a.shape != e.shape or a.shape != x.shape:
        return None
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] < 2:
        return None
    if a.dtype.kind not in "fc" or e.dtype.kind not in "fc":
        return None
    atol_max = float(np.max(np.asarray(atol, dtype=np.float64), initial=0.0))
    for what, space, proj in _CANDIDATES:
        if what == "symmetric" and x.dtype.kind == "c":
            what, space = "Hermitian", "Hermitian()"
        pa, pe = proj(a), proj(e)
        if not (_close(pa, pe, rtol, atol_max) and _close(a, pa, rtol, atol_max)):
            continue
        if _close(e, pe, rtol, atol_max):
            continue  # the numerical vjp has the structure too: a projection explains nothing
        inside = bool(np.allclose(proj(x), x, rtol=1e-12, atol=0.0))
        point = "" if inside else f" (the primal here is not {what} itself: draw such inputs too)"
        return (
            f"{path}: the cotangent agrees with the numerical vjp once both are projected onto "
            f"{what} matrices: f reads only part of {path}, and the rule is right for {what} "
            f"inputs. If {path} is meant to be {what}, declare it: pass with_tangent(x, "
            f"{space}) or register the rule with spaces= holding {space} at {path}'s "
            f"position (rruletest.spaces), and the comparison is made on its tangent "
            f"space{point}"
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
    atol_max = float(np.max(np.asarray(atol, dtype=np.float64), initial=0.0))
    for k, (path, x, d) in enumerate(zip(paths, primals, dots, strict=True)):
        xa, da = np.asarray(x), np.asarray(unthunk(d))
        if xa.ndim < 2 or xa.shape[-1] != xa.shape[-2] or xa.shape[-1] < 2 or da.shape != xa.shape:
            continue
        if xa.dtype.kind not in "fc" or da.dtype.kind not in "fc":
            continue
        for what, space, proj in _CANDIDATES:
            if what == "symmetric" and xa.dtype.kind == "c":
                what, space = "Hermitian", "Hermitian()"
            pd = proj(da).astype(da.dtype, copy=False)
            if _close(da, pd, 0.0, 0.0):
                continue  # the tangent has the structure already: nothing to learn
            moved = [pd if j == k else t for j, t in enumerate(dots)]
            try:
                value, error = estimate(moved)
                got = np.asarray(unthunk(rule(moved)), dtype=np.result_type(value, np.float64))
                ref = np.asarray(value)
                allow = atol_max + float(np.max(np.asarray(error, dtype=np.float64), initial=0.0))
            except Exception:
                return None
            if got.shape != ref.shape or not _close(got, ref, rtol, allow):
                continue
            return (
                f"{path}: along the input tangent projected onto {what} matrices the output "
                f"tangent agrees with the numerical jvp: f reads only part of {path}, and the "
                f"rule is right for {what} inputs. If {path} is meant to be {what}, declare "
                f"it: pass with_tangent(x, {space}) or register the rule with spaces= holding "
                f"{space} at {path}'s position (rruletest.spaces), and tangents are drawn in "
                f"its tangent space"
            )
    return None
