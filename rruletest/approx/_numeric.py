"""Comparison of numeric leaves (numbers and numeric arrays) for ``rruletest.approx``.

Shapes must agree, real must not meet complex, and every element must satisfy
``|actual - expected| <= atol + rtol * |expected|`` (NaN equal to NaN when ``nan_equal``, an
infinity equal to the same infinity). Values are compared in a common precision, so a float32
and a float64 holding the same number are equal; the dtype itself is the testers' business.

>>> [m.check for m in compare_numeric("x", np.ones(3), np.ones((3, 1)))]
['shape']
>>> print(compare_numeric("x", np.array([1.0, 2.5]), np.array([1.0, 2.0]))[0].message)
x: 1 of 2 elements differ
  actual:   array([1. , 2.5])
  expected: array([1., 2.])
  max abs diff 0.5 at [1] (actual 2.5, expected 2.0)
  max rel diff 0.25 at [1]
  tolerance: rtol=1e-09, atol=1e-09
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rruletest.approx._render import block, diff, num
from rruletest.approx._special import at as _at
from rruletest.approx._special import index_text, parts_match, unmasked
from rruletest.errors import Mismatch
from rruletest.tolerances import loosest

__all__ = [
    "InvalidToleranceError",
    "compare_numeric",
    "leaf_tolerance",
    "shape_mismatch",
]


class InvalidToleranceError(ValueError):
    """An ``rtol``/``atol`` that is not a non-negative number or a broadcastable array."""


def leaf_tolerance(name: str, tol: Any, shape: tuple[int, ...], path: str) -> Any:
    """Check one leaf's tolerance: None, a non-negative float, or an array broadcasting to shape."""
    if type(tol) is float and tol >= 0:  # the common case (not NaN): as the general path
        return tol
    if tol is None:
        return None
    from rruletest.tangents import AbstractZero

    if tol is None or isinstance(tol, AbstractZero):
        return None
    where = f" at {path}" if path else ""
    if isinstance(tol, bool) or not isinstance(
        tol, int | float | np.number | np.ndarray | list | tuple
    ):
        raise InvalidToleranceError(
            f"{name} must be a non-negative number or array, got {name}={tol!r}{where}"
        )
    try:
        arr = np.asarray(tol)
    except ValueError:  # a ragged list
        arr = np.asarray(None)
    if arr.dtype.kind not in "iuf":
        raise InvalidToleranceError(f"{name} must be real, got {name}={tol!r}")
    with np.errstate(invalid="ignore"):
        negative = not bool(np.all(arr >= 0))
    if negative:
        raise InvalidToleranceError(
            f"{name} must be non-negative (and not NaN), got {name}={tol!r}"
        )
    if arr.ndim == 0:
        return float(arr)
    try:
        ok = np.broadcast_shapes(arr.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise InvalidToleranceError(
            f"{name} of shape {arr.shape} does not broadcast to the value{where}, of shape {shape}"
        )
    return arr.astype(np.float64)


def shape_mismatch(path: str, a: np.ndarray, e: np.ndarray, a_shown: Any, e_shown: Any) -> Mismatch:
    """The block for two numeric values of different shapes, with a hint when one fits."""
    sa, se = a.shape, e.shape
    hints: list[str] = []
    try:
        broadcast = np.broadcast_shapes(sa, se)
    except ValueError:
        broadcast = None
    if a.size == e.size and 1 in (a.size, e.size) and 0 in (a.ndim, e.ndim):
        hints.append(
            "a 0-d value where a 1-element array belongs, or the reverse: "
            "reshape, or take the element"
        )
    elif broadcast == sa:
        hints.append(
            f"did the rule forget to unbroadcast? A cotangent for a value of shape {se} must "
            f"have that shape: sum over the broadcast dimensions (rruletest.unbroadcast does)"
        )
    elif broadcast == se:
        hints.append(
            f"the actual value broadcasts to {se}: was it summed over a dimension the "
            f"expected value keeps?"
        )
    if len(sa) >= 2 and sa == se[::-1]:
        hints.append("the shape is the expected one reversed: a missing transpose?")
    elif a.size == e.size and not hints:
        hints.append("same number of elements in another shape: a missing reshape?")
    return Mismatch(
        check="shape",
        path=path,
        actual=a_shown,
        expected=e_shown,
        message=block(path, f"shape {sa} where {se} was expected", a_shown, e_shown, (), hints),
        hint="\n".join(hints) or None,
        extra={"actual_shape": sa, "expected_shape": se},
    )


def _dtype_mismatch(
    path: str, a: np.ndarray, e: np.ndarray, a_shown: Any, e_shown: Any
) -> Mismatch | None:
    ca, ce = a.dtype.kind == "c", e.dtype.kind == "c"
    if ca == ce:
        return None
    if ca:
        summary = f"complex ({a.dtype}) where a real value ({e.dtype}) was expected"
        hint = (
            "the cotangent of a real input is real: take the real part (rruletest.unbroadcast does)"
        )
    else:
        summary = f"real ({a.dtype}) where a complex value ({e.dtype}) was expected"
        hint = "was the imaginary part dropped (np.real, a float cast, an abs)?"
    return Mismatch(
        check="dtype",
        path=path,
        actual=a_shown,
        expected=e_shown,
        message=block(path, summary, a_shown, e_shown, (), [hint]),
        hint=hint,
        extra={"actual_dtype": a.dtype, "expected_dtype": e.dtype},
    )


def _value_hints(af: np.ndarray, ef: np.ndarray, allowed: np.ndarray) -> list[str]:
    """Known shapes of wrong answers: a sign flip, a conjugate, a constant factor, all zeros."""
    finite = np.isfinite(af) & np.isfinite(ef)
    if not finite.all() or not np.any(ef != 0):
        return []
    if np.all(np.abs(af + ef) <= allowed):
        return ["actual is -expected: a sign error?"]
    if (
        af.dtype.kind == "c"
        and np.any(ef.imag != 0)
        and np.all(np.abs(af - np.conj(ef)) <= allowed)
    ):
        return [
            "actual is the complex conjugate of expected: rruletest's convention is "
            "xbar = ybar * conj(f'(x))"
        ]
    if not np.any(af != 0):
        return ["actual is zero everywhere: a missing term, or a zero where a derivative belongs?"]
    if np.count_nonzero(ef) >= 2:
        c = np.vdot(ef, af) / np.vdot(ef, ef)
        if abs(c - 1) > 0.01 and np.all(np.abs(af - c * ef) <= allowed):
            factor = complex(c) if abs(c.imag) > 1e-12 * abs(c) else float(c.real)
            return [f"actual is {factor:.3g} times expected everywhere: a wrong constant factor?"]
    return []


def _scalars_close(a: np.ndarray, e: np.ndarray, rtol: Any, atol: Any) -> bool:
    """Whether two finite 0-d values are within tolerance (False also when unsure)."""
    av, ev = a.item(), e.item()
    if not isinstance(av, int | float | complex) or not isinstance(ev, int | float | complex):
        return False  # longdouble and friends: the array path keeps their precision
    try:
        bound = float(atol) + float(rtol) * abs(ev)
        return abs(av - ev) <= bound and bound < math.inf
    except (OverflowError, TypeError, ValueError):
        return False


def compare_numeric(
    path: str,
    a: np.ndarray,
    e: np.ndarray,
    *,
    a_shown: Any = None,
    e_shown: Any = None,
    rtol: Any = None,
    atol: Any = None,
    nan_equal: bool = True,
    check_dtype: bool = True,
    value_hints: bool = True,
) -> list[Mismatch]:
    """Mismatches between two numeric arrays (0-d for scalars); ``*_shown`` are displayed."""
    a_shown = a if a_shown is None else a_shown
    e_shown = e if e_shown is None else e_shown
    if a.shape != e.shape:
        return [shape_mismatch(path, a, e, a_shown, e_shown)]
    found: list[Mismatch] = []
    if isinstance(a, np.ma.MaskedArray) or isinstance(e, np.ma.MaskedArray):
        a, e = unmasked(path, a, e, a_shown, e_shown, found)
    a, e = np.asarray(a), np.asarray(e)  # np.matrix and other subclasses: their values
    if check_dtype:
        dtype_problem = _dtype_mismatch(path, a, e, a_shown, e_shown)
        if dtype_problem is not None:
            found.append(dtype_problem)
    default = loosest(a.dtype, e.dtype)
    rtol = leaf_tolerance("rtol", rtol, e.shape, path)
    atol = leaf_tolerance("atol", atol, e.shape, path)
    rtol = default.rtol if rtol is None else rtol
    atol = default.atol if atol is None else atol
    if a.ndim == 0 and _scalars_close(a, e, rtol, atol):  # the common case, without numpy ufuncs
        return found
    work = np.result_type(a.dtype, e.dtype, np.float64)
    with np.errstate(all="ignore"):
        af = a.astype(work, copy=False)
        ef = e.astype(work, copy=False)
        dist = np.abs(af - ef)
        allowed = np.abs(ef)  # in place from here: large arrays are the common case
        allowed *= rtol
        allowed += atol
        good = dist <= allowed
        good &= np.isfinite(ef)  # an infinite expected value is matched only by itself
        if good.all():
            return found
        # From here on only the elements out of tolerance (or NaN, or infinite) matter.
        cand = np.flatnonzero(~good)
        a_c, e_c = np.take(af, cand), np.take(ef, cand)
        if work.kind == "c":  # part by part: complex(1, nan) is not complex(5, nan)
            r_c = np.take(np.broadcast_to(rtol, af.shape), cand)
            t_c = np.take(np.broadcast_to(atol, af.shape), cand)
            same = ~(np.isfinite(a_c) & np.isfinite(e_c))
            for part_a, part_e in ((a_c.real, e_c.real), (a_c.imag, e_c.imag)):
                same &= parts_match(part_a, part_e, r_c, t_c, nan_equal)
        else:
            same = (a_c == e_c) & ~np.isfinite(e_c)
            if nan_equal:
                same |= np.isnan(a_c) & np.isnan(e_c)
        bad = ~same
        if not bad.any():
            return found
        found.append(
            _value_mismatch(
                path,
                af.shape,
                cand[bad],
                a_c[bad],
                e_c[bad],
                rtol,
                atol,
                a_shown,
                e_shown,
                _hints(af, ef, allowed, cand[bad]) if value_hints else [],
                nan_equal=nan_equal,
            )
        )
    return found


def _hints(af: np.ndarray, ef: np.ndarray, allowed: np.ndarray, idx: np.ndarray) -> list[str]:
    """``_value_hints``, tried on the failing elements first (each hint holds for all or none)."""
    if not _value_hints(np.take(af, idx), np.take(ef, idx), np.take(allowed, idx)):
        return []
    return _value_hints(af, ef, allowed)


def _value_mismatch(
    path: str,
    shape: tuple[int, ...],
    idx: np.ndarray,
    a_b: np.ndarray,
    e_b: np.ndarray,
    rtol: Any,
    atol: Any,
    a_shown: Any,
    e_shown: Any,
    hints: list[str],
    *,
    nan_equal: bool = True,
) -> Mismatch:
    """The block for the failing elements ``idx`` (flat indices), valued ``a_b`` and ``e_b``."""
    scalar = len(shape) == 0
    count, size = int(idx.size), math.prod(shape)
    summary = "values differ" if scalar else f"{count} of {size} elements differ"
    details: list[str] = []
    dist = np.abs(a_b - e_b)
    numeric = ~np.isnan(dist)
    abs_err = rel_err = None
    worst: tuple[int, ...] = ()
    if numeric.any():
        k = int(np.argmax(np.where(numeric, dist, -1.0)))
        rel = np.where(numeric, dist / np.abs(e_b), -1.0)
        rel = np.where(np.isnan(rel), np.inf, rel)  # 0 / 0 cannot fail; inf / inf can
        kr = int(np.argmax(rel))
        worst = _at(int(idx[k]), shape)
        abs_err, rel_err = float(dist[k]), float(rel[kr])
        if scalar:
            details.append(f"abs diff {diff(abs_err)}, rel diff {diff(rel_err)}")
        else:
            details.append(
                f"max abs diff {diff(abs_err)} at {index_text(worst)} "
                f"(actual {num(a_b[k])}, expected {num(e_b[k])})"
            )
            rworst = _at(int(idx[kr]), shape)
            details.append(f"max rel diff {diff(rel_err)} at {index_text(rworst)}")
    nan_a, nan_e = np.isnan(a_b), np.isnan(e_b)
    both = "NaN in both (nan_equal=False)"
    if a_b.dtype.kind == "c" and nan_equal:
        same_parts = np.all(np.isnan(a_b.real) == np.isnan(e_b.real))
        both = (
            "NaN in the same part of both, the other part differs"
            if same_parts
            else "NaN in both, in different parts (NaN equals NaN only in the same part)"
        )
    for label, mask in (
        ("NaN in actual only", nan_a & ~nan_e),
        ("NaN in expected only", nan_e & ~nan_a),
        (both, nan_a & nan_e),
        ("infinite values differ", ~numeric & ~nan_a & ~nan_e),
    ):
        n = int(np.count_nonzero(mask))
        if n:
            first = _at(int(idx[int(np.argmax(mask))]), shape)
            where = "" if scalar else f": {n} element{'s' * (n != 1)}, first at {index_text(first)}"
            details.append(label + where)
            if not worst and not scalar:
                worst = first
    if not worst and not scalar:  # pragma: no cover - every failing element has a label above
        worst = _at(int(idx[0]), shape)
    rtol_at = float(np.broadcast_to(rtol, shape)[worst])
    atol_at = float(np.broadcast_to(atol, shape)[worst])
    per_element = isinstance(rtol, np.ndarray) or isinstance(atol, np.ndarray)
    if per_element and not scalar:
        details.append(
            f"tolerance at {index_text(worst)} (per element): rtol={diff(rtol_at)}, "
            f"atol={diff(atol_at)}"
        )
    else:
        details.append(f"tolerance: rtol={diff(rtol_at)}, atol={diff(atol_at)}")
    return Mismatch(
        check="value",
        path=path,
        actual=a_shown,
        expected=e_shown,
        message=block(path, summary, a_shown, e_shown, details, hints),
        abs_err=abs_err,
        rel_err=rel_err,
        index=None if scalar else worst,
        rtol=rtol_at,
        atol=atol_at,
        hint="\n".join(hints) or None,
        count=count,
        size=size,
    )
