"""A float32 broadcast rule that differs from its reference: the reference again in float64.

The structured broadcast vjp and jvp of a float32 ``f`` take float32 steps, as large as its
precision needs: about 0.04 for ``np.minimum`` near -1.7, which reaches across a tie 0.0057
away, where the central difference averages the two sides' slopes and a right rule failed.
Where a rule's values differ from that reference, and ``f`` takes float64 copies of its
float32 arguments and agrees with its own values there (``_float64.wide_point``), the reference
is taken again at those copies, whose steps resolve such ties, and replaces the float32 one at
the differing elements where it is reliable. A wrong rule differs from both. Nothing of this
runs where the rule agrees.

>>> import numpy as np
>>> a = np.array([-1.7425137, 0.5], dtype=np.float32)
>>> b = np.array([-1.7368555, 0.1], dtype=np.float32)
>>> from rruletest.finite_differences import broadcast_jvp
>>> low = broadcast_jvp(None, np.minimum, (a, np.ones(2, np.float32)), (b, np.zeros(2, np.float32)))
>>> from rruletest.testers._report import Report
>>> report = Report("test_frule", np.minimum, (a, b), {}, seed=None)
>>> pairs = [(a, np.ones(2, np.float32)), (b, np.zeros(2, np.float32))]
>>> ydot = np.array([1.0, 0.0], np.float32)
>>> fixed = wide_jvp(report, None, np.minimum, pairs, np.minimum(a, b), low, ydot, 1e-4, 1e-5)
>>> round(float(low.value[0]), 2), float(fixed.value[0]), report.notes[0][:41]
(0.76, 1.0, 'ydot: 1 element(s) where the rule differs')
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.finite_differences import broadcast_jvp, broadcast_vjp
from rruletest.finite_differences.half import has_half
from rruletest.tangents import unthunk
from rruletest.testers._fd_inputs import widen
from rruletest.testers._findings import out_of_tolerance
from rruletest.testers._float64 import wide_point
from rruletest.testers._report import Report

__all__ = ["NOTE", "wide_jvp", "wide_vjps"]


def wide_vjps(
    report: Report, fdm: Any, g: Any, ybar: Any, primals: Sequence[Any], y: Any,
    ests: dict[int, Any], outs: dict[int, tuple[str, Any]], rtol: float, atol: float,
) -> dict[int, Any]:  # fmt: skip
    """``ests`` (argument position -> the structured vjp of ``g`` at ``primals``, positions
    counted from 1 as in a pullback's output) with the float64 reference where the rule's
    cotangents (``outs``: position -> path and cotangent) differ from them; a note says how
    many elements were estimated again. float16 inputs have their own (``half``)."""
    if has_half(*primals):
        return ests
    differ = {k: _differs(outs[k][1], e, rtol, atol) for k, e in ests.items()}
    if not any(d is not None and d.any() for d in differ.values()):
        return ests

    def estimate(points: list[Any], _: list[Any]) -> Any:
        ybar64 = np.asarray(unthunk(ybar), dtype=np.float64)
        return broadcast_vjp(fdm, g, ybar64, *points, y=g(*points))

    wide = _again(estimate, primals, [], g, y)
    if wide is None:
        return ests
    out = {}
    for k, e in ests.items():
        out[k], n = _where(e, wide[k - 1], differ[k])
        if n:
            report.note(NOTE.format(path=outs[k][0], n=n))
    return out


#: The note of a reference re-estimated at float64 copies where the rule differed.
NOTE = (
    "{path}: {n} element(s) where the rule differs from the float32 structured reference "
    "estimated again at float64 copies of the inputs (float32 steps reach across ties and "
    "kinks that float64 steps resolve)"
)


def wide_jvp(
    report: Report, fdm: Any, g: Any, pairs: Sequence[tuple[Any, Any]], y: Any, est: Any,
    ydot: Any, rtol: float, atol: float,
) -> Any:  # fmt: skip
    """``est`` (the structured jvp of ``g`` along ``pairs``) with the float64 reference where
    the rule's ``ydot`` differs from it, and a note saying so."""
    primals = [p for p, _ in pairs]
    if has_half(*primals):
        return est
    differ = _differs(ydot, est, rtol, atol)
    if differ is None or not differ.any():
        return est

    def estimate(points: list[Any], dots: list[Any]) -> Any:
        return broadcast_jvp(fdm, g, *zip(points, dots, strict=True), y=g(*points))

    out, n = _where(est, _again(estimate, primals, [d for _, d in pairs], g, y), differ)
    if n:
        report.note(NOTE.format(path="ydot", n=n))
    return out


def _differs(actual: Any, est: Any, rtol: float, atol: float) -> Any:
    return out_of_tolerance(unthunk(actual), est.value, rtol, widen(atol, est.error))


def _again(
    estimate: Callable[[list[Any], list[Any]], Any], primals: Sequence[Any],
    dots: Sequence[Any], g: Any, y: Any,
) -> Any:  # fmt: skip
    """``estimate(points, dots)`` at float64 copies of ``primals`` and of the tangents ``dots``
    (``wide_point``, where ``g`` takes and agrees with them); else None."""
    wide = wide_point(g, primals, dots, y)
    if wide is None:
        return None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return estimate(*wide)
        except Exception:  # the reference at the point itself stands
            return None


def _where(low: Any, wide: Any, differ: Any) -> tuple[Any, int]:
    """``low`` with ``wide``'s value and error at the elements ``differ`` where ``wide``'s
    error is finite, in ``low``'s dtype, and how many those were; ``low`` as it is (and 0) for
    estimates of other shapes."""
    if wide is None or differ is None or not np.any(differ):
        return low, 0
    lv, wv = np.asarray(low.value), np.asarray(wide.value)
    le, we = np.asarray(low.error, dtype=np.float64), np.asarray(wide.error, dtype=np.float64)
    if not (lv.shape == wv.shape == le.shape == we.shape == np.shape(differ)):
        return low, 0
    take = np.asarray(differ) & np.isfinite(we)
    if not take.any():
        return low, 0
    value = np.where(take, wv, lv).astype(lv.dtype, copy=False)
    return low._replace(value=value, error=np.where(take, we, le)), int(take.sum())
