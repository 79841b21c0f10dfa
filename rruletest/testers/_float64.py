"""Low-precision values made float64: a rule's own rounding, and exact points for ``f``.

**The rule's rounding** (``wide_cotangents``): what a low-precision rule's own arithmetic puts
into its cotangents, measured.

The adjoint identity allows each element of a correct ``xbar`` a few ulps of rounding, which
keeps it sharp enough to see one wrong element among a million. A float32 pullback that sums
thousands of terms into one element (``np.add.at`` for a running maximum, a scatter for
indexing) rounds far more than that, though it is right: its gap then fails by a few ulps of
``|xbar|`` spread over those elements. What the rule's arithmetic rounds is measured on the
rule itself: it is called again at float64 copies of its low-precision arguments, with a
float64 ``ybar``, and ``|xbar - xbar_64|`` per element is what its float32 arithmetic lost. A
rule wrong in both precisions is as wrong in ``xbar_64``: the difference stays its rounding.

**Points for the numerical references** (``wide_point``): finite differences of a float32
``f`` round every perturbed point, and where ``f`` has kinks (``median``, ``sort``: entries
that cross) the steps that rounding forces reach across them: a dense vjp of a float32 sort
of 1000 draws took a rule 1% off for right. Where ``f`` accepts float64 copies of its array
arguments and gives float64 values close to its own (``noise.agrees``), the dense vjp and the
jvp are taken at those copies, as the adjoint identity evaluates such an ``f``. Elements the
engine cannot estimate there (an infinite error: at float64 precision its error model sees
the poles of ``inv`` of a matrix of condition 1e3 that float32's round-off hides) take the
estimate at the low-precision point instead (``void_from``).

>>> import numpy as np
>>> from rruletest import NoTangent
>>> def rrule_f(f, x):
...     return np.cumsum(x), lambda yb: (NoTangent(), np.cumsum(yb[::-1])[::-1].astype(x.dtype))
>>> x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
>>> wide = wide_cotangents(rrule_f, np.cumsum, (x,), {}, np.ones(5, np.float32), [0])
>>> wide[0].dtype, wide[0].tolist()
(dtype('float64'), [5.0, 4.0, 3.0, 2.0, 1.0])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.finite_differences.noise import agrees, low_precision
from rruletest.tangents import unthunk
from rruletest.walk import map_leaves

__all__ = ["void_from", "wide_cotangents", "wide_point"]


def _widened(value: Any, changed: list[bool], numbers: bool = True) -> Any:
    """``value`` with its float16/float32 arrays (and numbers, unless ``numbers`` is false) as
    float64 (``changed`` records whether any was)."""

    kinds = np.ndarray | np.floating if numbers else np.ndarray

    def leaf(_path: Any, v: Any) -> Any:
        if isinstance(v, kinds) and v.dtype in (np.float16, np.float32):
            changed.append(True)
            return v.astype(np.float64) if isinstance(v, np.ndarray) else np.float64(v)
        return v

    return map_leaves(leaf, value, thunks=False)


def wide_cotangents(
    rrule_f: Any,
    f: Any,
    primals: Sequence[Any],
    kwargs: dict[str, Any],
    ybar: Any,
    positions: Sequence[int],
) -> tuple[Any, ...] | None:
    """The rule's cotangents for the arguments at ``positions``, from a call at float64 copies
    of the low-precision primals with a float64 ``ybar``; None when nothing is low precision or
    the call does not give cotangents (it raises, or returns something else)."""
    changed: list[bool] = []
    try:
        wide = [_widened(p, changed) for p in primals]
        ybar64 = _widened(unthunk(ybar), changed)
        if not changed:
            return None
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = rrule_f(f, *wide, **kwargs)
            if not isinstance(res, tuple) or len(res) != 2 or not callable(res[1]):
                return None
            out = res[1](ybar64)
        if not isinstance(out, tuple) or len(out) != len(primals) + 1:
            return None
        return tuple(unthunk(out[i + 1]) for i in positions)
    except Exception:  # a measurement only: the checks already made stand as they are
        return None


def _wide_already(p: Any) -> bool:
    """Whether ``p`` is a number or an array that ``wide_point`` leaves as it is."""
    if type(p) is np.ndarray:
        return p.dtype.kind not in "f" or p.dtype.itemsize >= 8
    return isinstance(p, int | float | complex | np.generic)


def wide_point(
    g: Any, primals: Sequence[Any], dots: Sequence[Any], y: Any
) -> tuple[list[Any], list[Any]] | None:
    """float64 copies of the low-precision arrays in ``primals`` and their tangents ``dots``
    when ``g`` takes them and returns float64 values that ``noise.agrees`` with ``y`` (its value
    at ``primals``); None otherwise (no low-precision array, ``g`` raises, or differs).
    Numbers stay as they are: their scalar finite differences need no such help."""
    if all(_wide_already(p) for p in primals):  # the common case, without a walk
        return None
    changed: list[bool] = []
    try:
        wide = [_widened(p, changed, numbers=False) for p in primals]
        if not changed:
            return None
        if not low_precision(y):
            return None
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            high = g(*wide)
        if not agrees(y, high):
            return None
        return wide, [_widened(unthunk(d), [], numbers=False) for d in dots]
    except Exception:  # the float32 point stays the reference
        return None


def void_from(wide: Any, low: Callable[[], Any]) -> Any:
    """The estimate ``wide`` (at float64 copies), with ``low()``'s value and error (at the
    low-precision point, computed only if needed) where ``wide``'s error is not finite; for
    array and number estimates (other structures are left as they are).

    >>> from rruletest.finite_differences import Estimate
    >>> wide = Estimate(np.array([1.0, 2.0]), np.array([1e-9, np.inf]), None)
    >>> out = void_from(wide, lambda: Estimate(np.array([1.1, 2.1]), np.array([0.1, 0.2]), None))
    >>> out.value.tolist(), out.error.tolist()
    ([1.0, 2.1], [1e-09, 0.2])
    """
    err = wide.error
    if not isinstance(err, np.ndarray | np.generic | float):
        return wide
    void = ~np.isfinite(np.asarray(err, dtype=np.float64))
    if not void.any():
        return wide
    other = low()
    if np.shape(other.error) != void.shape or np.shape(other.value) != np.shape(wide.value):
        return wide
    value = np.where(void, np.asarray(other.value), np.asarray(wide.value))
    error = np.where(void, np.asarray(other.error, dtype=np.float64), np.asarray(err))
    if not isinstance(wide.value, np.ndarray):
        return wide._replace(value=value[()], error=error[()])
    return wide._replace(value=value, error=error)
