"""The hypothesis-based half of ``rruletest.strategies`` (imported on first use of a strategy).

``rruletest.strategies`` re-exports these; import them from there.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis.extra import numpy as hnp

from rruletest._strategy_values import (
    _bounds,
    _dtype,
    _real,
    _tiny,
    default_magnitude,
    edge_values,
    near_avoided,
)
from rruletest.domains import REALS, Domain, DomainLike
from rruletest.projection import is_differentiable
from rruletest.tangents import NO_TANGENT

__all__ = ["broadcastable_args", "elements", "primals", "scalars", "shaped_args", "tangents"]


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
    try:
        return _elements(dom, dt, arg, edges, float(margin), magnitude)
    except TypeError:  # an unhashable part (an avoid predicate that is not hashable)
        return _elements.__wrapped__(dom, dt, arg, edges, float(margin), magnitude)


@functools.lru_cache(maxsize=512)
def _elements(
    dom: Domain, dt: np.dtype[Any], arg: int, edges: bool, margin: float, magnitude: float | None
) -> st.SearchStrategy[Any]:
    """``elements`` for hashable arguments, cached: strategies are immutable, and ``primals``
    asks for the same ones at every draw.
    """
    dtype = dt.name
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
    ilo, ihi, _, _ = _bounds(REALS, real, 0.0, mag)  # +-mag rounded inward to the precision
    imag_edge = [v for v in (0.0, 1.0, -1.0, _tiny(real)) if ilo <= v <= ihi]
    imag_base = _floats(ilo, ihi, False, False, real)
    imag = st.one_of(imag_base, st.sampled_from(imag_edge)) if edges else imag_base
    return st.builds(complex, part, imag)


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


@st.composite
def shaped_args(
    draw: Any,
    domain: DomainLike,
    shapes: Sequence[Sequence[int | str]],
    *,
    dtype: Any = "float64",
    max_side: int = 4,
    edges: bool = True,
    margin: float = 0.0,
    magnitude: float | None = None,
) -> tuple[Any, ...]:
    """A tuple of arrays, one per declared shape, each in its argument's interval.

    A shape holds sizes (``3``) and size names (``"n"``); each name is drawn once per example
    (1 to ``max_side``) and shared by every argument that uses it, so ``[("m", "n"), ("n",)]``
    gives a matrix and a vector that can be multiplied. ``()`` gives a numpy scalar. The
    domain's ``avoid`` is applied to the whole call.

    >>> from hypothesis import find
    >>> a, v = find(shaped_args("(0, 1)", [("m", "n"), ("n",)]), lambda xs: xs[0].shape[0] == 2)
    >>> a.shape[1] == v.shape[0], bool((a > 0).all())
    (True, True)
    """
    dt = _dtype(dtype)
    dom = Domain.of(domain)
    if max_side < 1:
        raise ValueError(f"shaped_args needs max_side >= 1, got max_side={max_side!r}")
    sizes: dict[str, int] = {}
    out: list[Any] = []
    for i, shape in enumerate(shapes):
        dims: list[int] = []
        for d in shape:
            if isinstance(d, str):
                if d not in sizes:
                    sizes[d] = draw(st.integers(1, max_side))
                dims.append(sizes[d])
            else:
                dims.append(int(d))
        elems = elements(dom, dtype=dt, arg=i, edges=edges, margin=margin, magnitude=magnitude)
        arr = draw(hnp.arrays(dt, tuple(dims), elements=elems))
        out.append(_as_value(arr, tuple(dims)))
    if dom.avoid is not None:
        try:
            bad = bool(np.any(near_avoided(dom.avoid, *out)))
        except (TypeError, ValueError):  # an avoid that cannot judge these shapes
            bad = False
        _assume(not bad)
    return tuple(out)
