"""The fast answer of ``collect_mismatches`` for the common pair: two plain numbers, or two
small plain float or complex arrays of one shape, that agree within tolerance.

Internal. A tester compares a few such pairs in every call, and the general walk (kinds,
tasks, paths) costs ten times the arithmetic for a number. ``plainly_close`` only ever answers
"no mismatch": it applies the same test the walk applies to such a pair (the scalar test of
``_numeric._scalars_close``, the elementwise test of ``compare_numeric``) with the same
tolerances, and whenever the pair is of another kind, or anything differs, it answers False
and the general walk compares (and reports) as before. So no message depends on it.

>>> plainly_close(1.0, 1.0 + 1e-12, None, None, "y")
True
>>> plainly_close(np.ones(3), np.ones(3), 1e-9, np.full(3, 1e-9), "x")
True
>>> plainly_close(1.0, 2.0, None, None, "y"), plainly_close(1.0, 1 + 0j, None, None, "y")
(False, False)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rruletest.approx._numeric import leaf_tolerance
from rruletest.tolerances import loosest
from rruletest.walk import is_registered

__all__ = ["PLAIN", "SMALL", "plainly_close"]

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_C128, _C64 = np.dtype(np.complex128), np.dtype(np.complex64)
# The exact types of numbers the fast path takes, with the dtype numpy gives them.
_SCALAR_DTYPES: dict[type, np.dtype[Any]] = {
    float: _F64,
    np.float64: _F64,
    np.float32: _F32,
    complex: _C128,
    np.complex128: _C128,
    np.complex64: _C64,
}

#: The exact types ``plainly_close`` may answer for (a cheap test before calling it).
PLAIN = frozenset({*_SCALAR_DTYPES, np.ndarray})
#: Arrays up to this size only: the walk costs little next to a large array's arithmetic,
#: which a pair that is not close would otherwise pay twice (here, then in the walk).
SMALL = 4096


def _tolerance(tol: Any) -> bool:
    """A tolerance the fast path takes as it is: None or a non-negative float (not NaN)."""
    return tol is None or (type(tol) is float and tol >= 0)


_BAD = object()


def _array_tolerance(name: str, tol: Any, e: np.ndarray, path: str) -> Any:
    """``leaf_tolerance`` of ``tol`` for ``e``; a float64 array of ``e``'s shape is taken as it
    is when non-negative (``_BAD`` when not: the general comparison then raises)."""
    if type(tol) is np.ndarray and tol.dtype == _F64 and tol.shape == e.shape:
        with np.errstate(invalid="ignore"):
            return tol if bool((tol >= 0).all()) else _BAD
    return leaf_tolerance(name, tol, e.shape, path)


def plainly_close(a: Any, e: Any, rtol: Any, atol: Any, path: str) -> bool:
    """Whether ``a`` and ``e`` are plain numbers or arrays that certainly compare equal (then
    ``collect_mismatches`` finds nothing); False means "compare the general way"."""
    da, de = _SCALAR_DTYPES.get(type(a)), _SCALAR_DTYPES.get(type(e))
    if da is not None and de is not None:
        if (da.kind == "c") != (de.kind == "c") or not (_tolerance(rtol) and _tolerance(atol)):
            return False
        if is_registered(a) or is_registered(e):
            return False
        if rtol is None or atol is None:
            default = loosest(da, de)
            rtol = default.rtol if rtol is None else rtol
            atol = default.atol if atol is None else atol
        av = a if type(a) is float or type(a) is complex else a.item()
        ev = e if type(e) is float or type(e) is complex else e.item()
        try:
            bound = float(atol) + float(rtol) * abs(ev)
            return bool(abs(av - ev) <= bound and bound < math.inf)
        except (OverflowError, TypeError, ValueError):
            return False
    if type(a) is not np.ndarray or type(e) is not np.ndarray:
        return False
    ka, ke = a.dtype.kind, e.dtype.kind
    if ka not in "fc" or ke not in "fc" or (ka == "c") != (ke == "c") or a.shape != e.shape:
        return False
    if a.ndim == 0 or a.size > SMALL or is_registered(a):
        return False  # 0-d arrays: the walk's scalar test decides; large ones: see SMALL
    if not (_tolerance(rtol) or type(rtol) is np.ndarray) or not (
        _tolerance(atol) or type(atol) is np.ndarray
    ):
        return False
    # The tolerances as compare_numeric takes them (an ill-shaped array raises as there).
    rtol, atol = _array_tolerance("rtol", rtol, e, path), _array_tolerance("atol", atol, e, path)
    if rtol is _BAD or atol is _BAD:
        return False
    if rtol is None or atol is None:
        default = loosest(a.dtype, e.dtype)
        rtol = default.rtol if rtol is None else rtol
        atol = default.atol if atol is None else atol
    work = np.result_type(a.dtype, e.dtype, np.float64)
    with np.errstate(all="ignore"):
        af = a.astype(work, copy=False)
        ef = e.astype(work, copy=False)
        dist = np.abs(af - ef)
        allowed = np.abs(ef)
        allowed *= rtol
        allowed += atol
        good = dist <= allowed
        good &= np.isfinite(ef)
        return bool(good.all())
