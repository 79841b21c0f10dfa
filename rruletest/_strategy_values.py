"""What the strategies draw, without hypothesis: dtypes, ranges, edge values, avoided points.

``rruletest.strategies`` (the public face, light to import) re-exports the public names, and
``rruletest._hypothesis_strategies`` (the strategies, loaded on first use) builds on them, so the
implementation never imports the public module back.

>>> edge_values("[-1, 1]", magnitude=0.5)[:3]
[0.0, 1.4916681462400413e-154, -1.4916681462400413e-154]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.domains import Domain, DomainLike, Interval

__all__ = ["AVOID_RADIUS", "default_magnitude", "edge_values", "near_avoided"]

#: Values within this distance (relative to ``max(1, |x|)``) of a point where the domain's
#: ``avoid`` holds are avoided too: finite differences cannot be accurate across a kink.
AVOID_RADIUS = 1e-3
_FLOAT_DTYPES = ("float16", "float32", "float64")
_COMPLEX_DTYPES = {"complex64": "float32", "complex128": "float64"}


def _dtype(dtype: Any) -> np.dtype[Any]:
    dt = np.dtype(dtype)
    if dt.name not in _FLOAT_DTYPES and dt.name not in _COMPLEX_DTYPES:
        raise ValueError(
            "primals are floating or complex: float16, float32, float64, complex64 or "
            f"complex128, got dtype={dtype!r}"
        )
    out: np.dtype[Any] = dt
    return out


def _real(dt: np.dtype[Any]) -> np.dtype[Any]:
    real: np.dtype[Any] = np.dtype(_COMPLEX_DTYPES.get(dt.name, dt.name))
    return real


def default_magnitude(dtype: Any) -> float:
    """The largest ``|x|`` drawn by default for ``dtype``: ``min(100, log(finfo.max) / 2)``.

    >>> default_magnitude("float64"), round(default_magnitude("float32"), 1)
    (100.0, 44.4)
    """
    real = _real(_dtype(dtype))
    return float(min(100.0, math.log(float(np.finfo(real).max)) / 2))


def _tiny(real: np.dtype[Any]) -> float:
    """A tiny magnitude far above the subnormals: ``sqrt(finfo.tiny)``."""
    return float(np.sqrt(np.finfo(real).tiny))


def _bounds(
    interval: Interval, real: np.dtype[Any], margin: float, magnitude: float
) -> tuple[float, float, bool, bool]:
    """The drawable range ``[lo, hi]`` and whether each end is excluded, in ``real``'s precision."""
    lo, hi = interval.lo, interval.hi
    excl_lo, excl_hi = not interval.lo_closed, not interval.hi_closed
    if margin > 0:
        if math.isfinite(lo):
            lo, excl_lo = lo + margin * max(1.0, abs(lo)), False
        if math.isfinite(hi):
            hi, excl_hi = hi - margin * max(1.0, abs(hi)), False
    if lo < -magnitude:
        lo, excl_lo = -magnitude, False
    if hi > magnitude:
        hi, excl_hi = magnitude, False
    if not lo < hi:
        raise ValueError(
            f"no room to draw values in {interval} with margin={margin!r} and "
            f"magnitude={magnitude!r}"
        )
    # Round the ends inward to the dtype, so every drawn value is representable and inside.
    lo_r, hi_r = real.type(lo), real.type(hi)
    if float(lo_r) < lo:
        lo_r = np.nextafter(lo_r, real.type(np.inf))
    if float(hi_r) > hi:
        hi_r = np.nextafter(hi_r, real.type(-np.inf))
    return float(lo_r), float(hi_r), excl_lo, excl_hi


def edge_values(
    domain: DomainLike = None,
    *,
    dtype: Any = "float64",
    arg: int = 0,
    margin: float = 0.0,
    magnitude: float | None = None,
) -> list[float]:
    """The edge values of argument ``arg`` of ``domain`` that are drawable in ``dtype``.

    Zero, ``+-sqrt(finfo.tiny)``, ``+-1``, the bounds (closed ones exactly, open ones one step
    inside except 0, which the tiny value covers; finite ones also at relative distances 1e-6
    and 1e-2) and ``+-magnitude``; only those inside the domain (and ``margin`` away from its
    bounds) are kept.

    >>> edge_values("(0, 1]")
    [1.4916681462400413e-154, 1.0, 0.01, 1e-06, 0.99, 0.999999, 0.9999999999999999]
    """
    dom = Domain.of(domain)
    real = _real(_dtype(dtype))
    mag = default_magnitude(real) if magnitude is None else float(magnitude)
    interval = dom.interval(arg)
    lo, hi, excl_lo, excl_hi = _bounds(interval, real, margin, mag)
    tiny = _tiny(real)
    cands: list[float] = [0.0, tiny, -tiny, 1.0, -1.0, mag, -mag, hi, lo]
    for b, inward in ((interval.lo, 1.0), (interval.hi, -1.0)):
        if math.isfinite(b):
            scale = max(1.0, abs(b))
            cands += [b + inward * 1e-2 * scale, b + inward * 1e-6 * scale]
            if margin == 0 and b != 0:  # one step inside (0 is covered by tiny)
                cands.append(float(np.nextafter(real.type(b), real.type(inward * np.inf))))
    out: list[float] = []
    for c in cands:
        v = float(real.type(c))
        ok = (v > lo if excl_lo else v >= lo) and (v < hi if excl_hi else v <= hi)
        if ok and interval.contains(v) and v not in out:
            out.append(v)
    return out


def near_avoided(avoid: Callable[..., Any] | None, *args: Any) -> Any:
    """Where ``avoid`` holds at ``args`` or close to them (elementwise, broadcast).

    Checks the arguments, the arguments moved by ``+-AVOID_RADIUS * max(1, |x|)``, and the
    nearest integers when they are that close, so a kink written as ``x == 0`` also keeps
    ``1e-9`` away. Write ``avoid`` as a neighbourhood where you can (``abs(x) < 1e-3``).

    >>> near_avoided(lambda x: x == 0, np.array([1e-9, 0.5]))
    array([ True, False])
    """
    if avoid is None:
        return False
    arrays = [np.asarray(a) for a in args]
    bad = np.zeros(np.broadcast_shapes(*(a.shape for a in arrays)), dtype=bool)
    shifts: list[list[Any]] = [[], [], []]
    for a in arrays:
        scale = AVOID_RADIUS * np.maximum(1.0, np.abs(a))
        shifts[0].append(a - scale)
        shifts[1].append(a + scale)
        if np.iscomplexobj(a):
            shifts[2].append(a)
        else:
            r = np.round(a)
            shifts[2].append(np.where(np.abs(r - a) <= scale, r, a))
    for cand in ([*arrays], *shifts):
        try:
            with np.errstate(all="ignore"):
                mask = np.asarray(avoid(*cand), dtype=bool)
        except TypeError:  # an avoid written for reals, given complex values
            with np.errstate(all="ignore"):
                mask = np.asarray(avoid(*(np.real(c) for c in cand)), dtype=bool)
        bad = bad | mask
    return bad if bad.ndim else bool(bad)
