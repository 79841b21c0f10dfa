"""Hypothesis strategies for rule tests: primals inside a domain, tangents, broadcastable arguments.

Built on ``hypothesis.extra.numpy``. Values are drawn inside a rule's declared ``Domain`` and
never outside it: open ends stay open, closed ends may be drawn exactly, ``avoid`` (a kink, a
pole) is kept at a distance. Edge values are drawn often: zero, tiny numbers, ``+-1``, values next
to each bound, and large magnitudes. "Large" stays within what a rule test can check: by default
``|x| <= min(100, log(finfo.max) / 2)`` (100 for float64, about 44 for float32, 5.5 for float16),
so ``exp`` or ``cosh`` of any drawn value stays finite. Pass ``magnitude`` to change it.

Loaded lazily (``rruletest.strategies`` imports hypothesis): ``import rruletest`` and the pytest
plugin never import this module.

>>> from hypothesis import find
>>> x = find(primals("(0, 1]", dtype="float32"), lambda v: v > 0.5)
>>> x.dtype.name, 0.5 < float(x) <= 1.0
('float32', True)
>>> primals("(0, inf)", dtype="float64", shape=(2, 3))
primals(domain='(0, inf)', shape=(2, 3))
>>> xs = find(broadcastable_args("[0, 1]", 2), lambda a: a[0].ndim == 2 and a[1].ndim == 1)
>>> np.broadcast_shapes(xs[0].shape, xs[1].shape) == xs[0].shape
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis.extra import numpy as hnp

from rruletest.domains import Domain, DomainLike, Interval
from rruletest.projection import is_differentiable
from rruletest.tangents import NO_TANGENT

__all__ = [
    "AVOID_RADIUS",
    "broadcastable_args",
    "default_magnitude",
    "edge_values",
    "elements",
    "near_avoided",
    "primals",
    "scalars",
    "tangents",
]

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


def _floats(lo: float, hi: float, excl_lo: bool, excl_hi: bool, real: np.dtype[Any]) -> Any:
    return st.floats(
        min_value=lo,
        max_value=hi,
        exclude_min=excl_lo,
        exclude_max=excl_hi,
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=False,
        width=16 if real.itemsize == 2 else 32 if real.itemsize == 4 else 64,
    )


def elements(
    domain: DomainLike = None,
    *,
    dtype: Any = "float64",
    arg: int = 0,
    edges: bool = True,
    margin: float = 0.0,
    magnitude: float | None = None,
) -> st.SearchStrategy[Any]:
    """Python floats (complex for a complex dtype) inside argument ``arg``'s interval.

    For a complex dtype the real part lies in the interval (keeping clear of branch cuts on the
    real axis outside it) and the imaginary part within ``magnitude``. About a quarter of the
    draws are edge values (see ``edge_values``). ``avoid`` is not applied here (it may involve
    several arguments); ``primals`` and ``broadcastable_args`` apply it.
    """
    dt = _dtype(dtype)
    dom = Domain.of(domain)
    if dt.kind == "c" and not dom.complex:
        raise ValueError(f"the domain {dom} does not accept complex inputs, got dtype={dtype!r}")
    real = _real(dt)
    mag = default_magnitude(real) if magnitude is None else float(magnitude)
    lo, hi, excl_lo, excl_hi = _bounds(dom.interval(arg), real, margin, mag)
    base = _floats(lo, hi, excl_lo, excl_hi, real)
    edge = edge_values(dom, dtype=real, arg=arg, margin=margin, magnitude=mag)
    part = st.one_of(base, base, base, st.sampled_from(edge)) if edges and edge else base
    if dt.kind != "c":
        return part
    imag_edge = [0.0, 1.0, -1.0, _tiny(real)]
    imag_base = _floats(-mag, mag, False, False, real)
    imag = st.one_of(imag_base, st.sampled_from(imag_edge)) if edges else imag_base
    return st.builds(complex, part, imag)


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


def _as_value(a: np.ndarray[Any, Any], shape: Any) -> Any:
    return a[()] if shape == () else a


@st.composite
def primals(
    draw: Any,
    domain: DomainLike = None,
    *,
    dtype: Any = "float64",
    shape: int | tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] = (),
    arg: int = 0,
    edges: bool = True,
    margin: float = 0.0,
    magnitude: float | None = None,
) -> Any:
    """A primal value of ``dtype`` and ``shape`` inside ``domain`` (argument ``arg``).

    Returns a numpy scalar for ``shape=()`` and an ndarray otherwise. The domain's ``avoid``
    applies when it is a function of one argument (``arg=0`` of a one-interval domain).

    Args:
        domain: a ``Domain`` or what ``Domain.of`` accepts (``"(0, inf)"``), None for the reals.
        dtype: float16, float32, float64, complex64 or complex128 (complex needs a domain that
            accepts complex inputs).
        shape: an int, a tuple or a strategy of shapes (``hypothesis.extra.numpy.array_shapes``).
        arg: which argument's interval to use, for a domain with one interval per argument.
        edges: whether to draw edge values often (zero, tiny, +-1, bounds, large).
        margin: keep this far (relative to ``max(1, |bound|)``) from finite bounds.
        magnitude: the largest ``|x|`` drawn (default ``default_magnitude(dtype)``).
    """
    dt = _dtype(dtype)
    dom = Domain.of(domain)
    elems = elements(dom, dtype=dt, arg=arg, edges=edges, margin=margin, magnitude=magnitude)
    shp = draw(shape) if isinstance(shape, st.SearchStrategy) else shape
    shp = (shp,) if isinstance(shp, int) else tuple(shp)
    arr = draw(hnp.arrays(dt, shp, elements=elems))
    if dom.avoid is not None and len(dom.intervals) == 1 and arg == 0:
        bad = np.asarray(near_avoided(dom.avoid, arr))
        if bad.any():
            # Move avoided elements to a safe edge instead of rejecting the whole draw.
            safe = [
                v
                for v in edge_values(dom, dtype=dt, margin=margin, magnitude=magnitude)
                if not near_avoided(dom.avoid, np.asarray(v, dt))
            ]
            _assume(bool(safe))
            arr = np.where(bad, np.asarray(safe[0], dt), arr).astype(dt)
    return _as_value(arr, shp)


def _assume(condition: bool) -> None:
    """Reject the current draw unless ``condition`` (``hypothesis.assume``)."""
    from hypothesis import assume

    assume(condition)


def scalars(
    domain: DomainLike = None,
    *,
    dtype: Any = "float64",
    arg: int = 0,
    edges: bool = True,
    margin: float = 0.0,
    magnitude: float | None = None,
) -> st.SearchStrategy[Any]:
    """A numpy scalar inside ``domain``: ``primals(domain, dtype=dtype, shape=())``."""
    return primals(
        domain, dtype=dtype, shape=(), arg=arg, edges=edges, margin=margin, magnitude=magnitude
    )


@st.composite
def tangents(draw: Any, primal: Any) -> Any:
    """A tangent for ``primal``: same type, shape and dtype, on a grid of short decimals.

    Elements are multiples of 0.01 in [-9, 9] (readable in a failure report; zero included).
    Complex primals get complex tangents; integers, booleans and other non-differentiable
    values get ``NoTangent()``; tuples, lists and dicts get one tangent per element.

    >>> from hypothesis import find
    >>> find(tangents(np.zeros(2, np.float32)), lambda t: True)
    array([0., 0.], dtype=float32)
    """
    if isinstance(primal, tuple | list):
        out = [draw(tangents(p)) for p in primal]
        return type(primal)(out) if isinstance(primal, list) else tuple(out)
    if isinstance(primal, dict):
        return {k: draw(tangents(v)) for k, v in primal.items()}
    if not is_differentiable(primal):
        return NO_TANGENT
    dt = np.result_type(primal)
    grid = st.integers(-900, 900).map(lambda k: k / 100)
    elems: st.SearchStrategy[Any] = grid
    if dt.kind == "c":
        elems = st.builds(complex, grid, grid)
    arr = draw(hnp.arrays(dt, np.shape(primal), elements=elems))
    if isinstance(primal, np.ndarray):
        return arr
    if isinstance(primal, np.generic):
        return arr[()]
    return arr.item()


@st.composite
def broadcastable_args(
    draw: Any,
    domain: DomainLike = None,
    nargs: int | None = None,
    *,
    dtype: Any = "float64",
    min_dims: int = 0,
    max_dims: int = 3,
    max_side: int = 4,
    edges: bool = True,
    margin: float = 0.0,
    magnitude: float | None = None,
) -> tuple[Any, ...]:
    """A tuple of ``nargs`` arrays with mutually broadcastable shapes, each in its interval.

    Shapes come from ``hypothesis.extra.numpy.mutually_broadcastable_shapes``; argument ``i``
    is drawn in ``domain.interval(i)``; the domain's ``avoid`` is applied to the broadcast
    arguments. ``nargs`` defaults to the number of intervals in the domain.

    >>> from hypothesis import find
    >>> a, b = find(broadcastable_args("(0, inf)", 2, dtype="float32"), lambda xs: True)
    >>> a.dtype.name, bool((a > 0).all() and (b > 0).all())
    ('float32', True)
    """
    dt = _dtype(dtype)
    dom = Domain.of(domain)
    n = len(dom.intervals) if nargs is None else nargs
    if n < 1:
        raise ValueError(f"broadcastable_args needs nargs >= 1, got nargs={nargs!r}")
    shapes = draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=n, min_dims=min_dims, max_dims=max_dims, max_side=max_side
        )
    ).input_shapes
    args = tuple(
        draw(
            hnp.arrays(
                dt,
                shp,
                elements=elements(
                    dom, dtype=dt, arg=i, edges=edges, margin=margin, magnitude=magnitude
                ),
            )
        )
        for i, shp in enumerate(shapes)
    )
    if dom.avoid is not None:
        _assume(not np.any(near_avoided(dom.avoid, *args)))
    return args
