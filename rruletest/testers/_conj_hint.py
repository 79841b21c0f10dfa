"""A hint for a complex pullback that forgot the conjugate, whatever ``ybar`` is.

The cotangent convention gives ``xbar = ybar * conj(f'(z))`` for a holomorphic elementwise
``f``; a pullback written as ``ybar * f'(z)`` is the commonest complex mistake. With a real
``ybar`` the comparison itself sees it (``actual`` is ``conj(expected)``); with a complex one it
does not, but ``xbar / ybar``, element by element, is then the conjugate of the numerical
``xbar / ybar``. No call of ``f`` is made: the two cotangents and ``ybar`` are at hand.

>>> import numpy as np
>>> z = np.array([1 + 2j, 0.5 - 1j])
>>> ybar = np.array([0.3 - 1j, 2 + 0.5j])
>>> print(conj_hint("args[0]", z, ybar * 2 * z, ybar * np.conj(2 * z), ybar))  # doctest: +ELLIPSIS
args[0]: xbar / ybar is the complex conjugate of the numerical xbar / ybar at every element: ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.tangents import unthunk

__all__ = ["conj_hint"]

_RTOL = 1e-6  # far looser than a rule's rounding, far tighter than a chance agreement


def conj_hint(path: str, primal: Any, actual: Any, expected: Any, ybar: Any) -> str | None:
    """The hint for the cotangent ``actual`` of a complex ``primal``, or None when the mistake
    is not a forgotten conjugate (or the comparison's own hint already names it)."""
    try:
        a, e = np.asarray(unthunk(actual)), np.asarray(unthunk(expected))
        yb, kind = np.asarray(unthunk(ybar)), np.asarray(primal).dtype.kind
    except Exception:
        return None
    if kind != "c" or not a.shape == e.shape == yb.shape:
        return None
    if any(v.dtype.kind not in "fc" for v in (a, e, yb)):
        return None
    use = np.isfinite(a) & np.isfinite(e) & np.isfinite(yb) & (yb != 0)
    if not use.any():
        return None
    with np.errstate(all="ignore"):
        ra, re = a[use] / yb[use], e[use] / yb[use]
    scale = _RTOL * float(np.max(np.abs(re)))
    if np.allclose(ra, re, rtol=_RTOL, atol=scale) or np.allclose(a, np.conj(e), rtol=_RTOL):
        return None  # right after all, or a real ybar: the comparison's hint says it
    if not np.allclose(ra, np.conj(re), rtol=_RTOL, atol=scale):
        return None
    return (
        f"{path}: xbar / ybar is the complex conjugate of the numerical xbar / ybar at every "
        "element: the pullback multiplies ybar by f'(z) where the convention needs conj(f'(z)) "
        "(xbar = ybar * conj(f'(z)))"
    )
