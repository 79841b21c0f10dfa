"""What a numerical comparison actually compared: no pass without evidence.

The engine leaves an element unchecked when it cannot estimate it (its stencil left ``f``'s
domain, ``f`` gave NaN there: an infinite or NaN error estimate, or a NaN estimate). Such an
element is neither passed nor failed: ``masked`` puts the rule's own value in the reference
there, so the comparison skips it, and counts the elements compared and left unchecked.
``record`` notes the counts for the argument (every report carries them) and, when a
differentiable argument had elements but none could be compared, records the ``nothing was
compared`` finding: a tester that compared nothing numerically does not pass.

``near_zero`` notes a comparison whose every value is within its tolerance of 0 (``log``'s
slope at ``1e100`` against ``atol = 1e-9``): a rule of twice the size, or of none, passes
there too, so the comparison bounded the rule's size and no more.

(When ``f``'s own noise explains a mismatch, ``_findings.noise_note`` says so: not here.)

>>> import numpy as np
>>> ref, n = masked(np.array([-np.inf, 0.5]), np.array([np.nan, 0.5]), np.array([np.inf, 0.0]))
>>> ref, n
(array([-inf,  0.5]), (1, 1))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rruletest.testers._report import Check, Evidence, Report, follow
from rruletest.walk import Path, map_leaves

__all__ = ["masked", "near_zero", "record"]

_NUMERIC = (np.ndarray, np.number, float, int, complex)


def _bad(value: Any, error: Any) -> np.ndarray:
    """Where the engine left an element unchecked: NaN estimate, non-finite error."""
    with np.errstate(all="ignore"):
        if type(value) is np.ndarray and value.dtype.kind == "f":
            bad = np.isnan(value)  # what its complex128 copy would give, without the copy
        else:
            bad = np.isnan(np.asarray(value, dtype=np.complex128))
        if isinstance(error, _NUMERIC) and not isinstance(error, bool | np.bool_):
            err = np.asarray(error)
            if err.shape == bad.shape or err.ndim == 0:
                bad = bad | ~np.isfinite(err.astype(np.float64, copy=False))
    return np.asarray(bad)


_REALS = frozenset({float, np.float64, np.float32})
_COMPLEX = frozenset({complex, np.complex128, np.complex64})
_NUMBERS = _REALS | _COMPLEX


def _number_ok(value: Any, error: Any) -> bool:
    """Whether a plain number ``value`` with a plain error estimate (or none) is certainly
    one ``_bad`` passes (not NaN, finite error); False also when unsure."""
    kind = type(value)
    if kind in _REALS:
        if math.isnan(value):
            return False
    elif kind in _COMPLEX:
        if math.isnan(value.real) or math.isnan(value.imag):
            return False
    else:
        return False
    return error is None or (type(error) in _REALS and math.isfinite(error))


def masked(actual: Any, expected: Any, error: Any) -> tuple[Any, tuple[int, int]]:
    """``expected`` with the rule's value (from ``actual``) put at every element the engine
    left unchecked, and ``(compared, unchecked)`` element counts over its numeric leaves."""
    counts = [0, 0]

    def leaf(path: Path, e: Any) -> Any:
        if not isinstance(e, _NUMERIC) or isinstance(e, bool | np.bool_):
            return e
        if not path and _number_ok(e, error):  # a number with a finite estimate: compared
            counts[0] += 1
            return e
        try:
            bad = _bad(e, follow(error, path) if error is not None else None)
        except Exception:
            return e
        n_bad = int(np.count_nonzero(bad))
        counts[0] += int(bad.size) - n_bad
        counts[1] += n_bad
        if not n_bad:
            return e
        a = follow(actual, path)
        if a is None:
            return e
        if bad.ndim == 0:
            return a
        try:
            a_arr = np.asarray(a)
            if a_arr.shape != bad.shape:
                return e
            out = np.array(e, copy=True, dtype=np.result_type(np.asarray(e), a_arr))
            out[bad] = a_arr[bad]
        except Exception:
            return e
        return out

    try:
        if type(expected) in _NUMBERS or (
            type(expected) is np.ndarray and expected.dtype.kind != "O"
        ):
            result = leaf((), expected)  # one leaf: what the walk would call, without it
        else:
            result = map_leaves(leaf, expected, thunks=False)
    except Exception:
        return expected, (0, 0)
    return result, (counts[0], counts[1])


def record(
    report: Report, path: str, counts: tuple[int, int], what: str, unit: str = "elements"
) -> None:
    """Note how many elements of ``path`` were compared (``what``: the cotangent, ydot; or
    another ``unit``: the adjoint identity's random directions) and record ``nothing was
    compared`` when there were some and none could be."""
    compared, unchecked = counts
    report.evidence.append(Evidence(path, compared, unchecked))
    total = compared + unchecked
    if unchecked:
        report.note(
            f"{path}: {compared} of {total} {unit} compared numerically, {unchecked} "
            "unchecked (the engine could not estimate them: their stencils left f's domain, "
            "f gave NaN there, or f's rounding or a singularity hides the derivative)"
        )
    else:
        report.note(f"{path}: {compared} of {total} {unit} compared numerically", on_failure=False)
    if total and not compared:
        report.problem(
            Check.NUMERIC,
            path,
            f"nothing was compared: none of the {total} {unit} of {what} could be estimated "
            "numerically, so the rule's values there are unchecked",
            hint="test at an input where f is finite and differentiable around every element; "
            "pass check_fd=False if only the structural checks are meant",
            extra={"evidence": "none"},
        )


def near_zero(report: Report, path: str, expected: Any, rtol: float, tol: Any) -> None:
    """Note (on a pass) when every finite element of a numeric ``expected`` is within its
    tolerance ``tol + rtol * |expected|`` of 0 and some is not 0: the comparison there cannot
    tell the rule from twice or none of it (a smaller ``atol`` would)."""
    if not isinstance(expected, _NUMERIC) or isinstance(expected, bool | np.bool_):
        return
    try:
        with np.errstate(all="ignore"):
            e = np.asarray(expected)
            tols = np.asarray(tol, dtype=np.float64)
            if e.dtype.kind == "f" and e.size and tols.shape in ((), e.shape):
                # The largest and the smallest values first (two passes, no temporaries): one
                # beyond its tolerance settles it, as it does for almost every comparison.
                for k in (int(np.argmax(e)), int(np.argmin(e))):
                    v = abs(float(e.flat[k]))
                    if v > float(tols.flat[k] if tols.ndim else tols) + rtol * v:
                        return
            size = np.abs(e).astype(np.float64, copy=False)
            allowed = np.broadcast_to(tols, size.shape)
            finite = np.isfinite(size) & np.isfinite(allowed)
            size, allowed = size[finite], allowed[finite]
            if size.size == 0 or not size.max() > 0 or np.any(size > allowed + rtol * size):
                return
    except (TypeError, ValueError):
        return
    report.note(
        f"{path}: every value compared is within its tolerance of 0 (the largest, "
        f"{float(size.max()):.3g}, against a tolerance of {float(allowed.min()):.3g} or more): "
        "a rule twice as large, or 0, passes too; pass a smaller atol to compare these values",
        on_failure=False,
    )
