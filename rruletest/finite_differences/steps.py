"""Step selection: a step per element that balances truncation against round-off.

Follows FiniteDifferences.jl: a method of ``p`` points for the ``q``-th derivative has
truncation error about ``C2 * h**(p - q)`` with ``C2 = |f^(p)| * df_mult`` and round-off about
``C1 * h**-q`` with ``C1 = eps(|f|) * f_error_mult * factor``; the step minimising the sum is
``h = (q / (p - q) * C1 / C2) ** (1 / p)``, and the sum at that step is the error estimate.
``|f^(p)|`` comes from a method of ``p + 2`` points evaluated at three neighbouring centres
(recursively adapted), or is assumed to be ``condition`` without adaptation.

Beyond that, per element of ``t`` (see ``problem``): steps are snapped so that ``t0 + h`` is
exactly representable (no positional round-off, so ``1e8`` is as accurate as ``1``); where the
``p``-th derivative estimate is pure round-off (the function is flat at the default scale), the
bound estimator's step grows (``log`` at ``1e8``) or shrinks (``x**3`` at ``1e-8``); where a
stencil point is NaN or infinite (outside the domain), the step shrinks. Elementwise work on
large arrays runs in cache-sized blocks (``problem.chunked``). Shrinking and rescaling passes
re-evaluate only the elements that need them, on a subset of the problem where it allows one;
every kernel is elementwise (weighted sums included), so a subset gives its elements, bit for
bit, what a full-size pass would.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.problem import (
    Problem,
    abs_spacing,
    chunked,
    reduce_to,
    tiny,
)

if TYPE_CHECKING:
    from rruletest.finite_differences.methods import FiniteDifferenceMethod

__all__ = ["choose_step"]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]

#: How many times a failing element's step is shrunk before other fallbacks.
MAX_SHRINK = 4
#: How many times an element whose adaptation sees only round-off changes its step, and by how
#: much.
MAX_GROW = 2
GROW = 1e4
#: The ``p``-th derivative estimate counts as round-off when it is below this fraction of the
#: worst case round-off could produce. Growing a step on that evidence can alias an oscillating
#: function, so every grown estimate is checked, and redone without growth if it fails.
FLAT = 1.0
#: Round-off assumed for float32/float16 function values, in ulps (numpy's SIMD float32
#: transcendental functions are accurate to a few ulps, not half of one).
LOW_PRECISION_ULPS = 4.0
#: A step this many times below the bound estimator's marks the element's magnitudes suspect.
UNRESOLVED = 64.0
#: Steps are at least this many ulps of the point (where the input's precision runs out).
RESOLUTION = 4.0
#: An estimate re-checked at another step is unreliable if the two differ by more than this
#: many times its error estimate.
CHECK_FACTOR = 10.0


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def _ipow(h: Arr, k: int) -> F64:
    """``h ** k`` for a small integer ``k`` by multiplication (``np.power`` is slow)."""
    h = np.asarray(h, dtype=np.float64)
    out = np.ones_like(h) if k == 0 else h.copy()
    for _ in range(abs(k) - 1):
        out *= h
    if k < 0:
        np.reciprocal(out, out=out)
    return out


def _absmax(ys: Arr) -> Arr:
    """``max(|ys|, axis=0)`` without a temporary of the size of ``ys``, for real values."""
    out: Arr = (
        np.abs(ys).max(axis=0)
        if np.iscomplexobj(ys)
        else np.maximum(ys.max(axis=0), -ys.min(axis=0))
    )
    return out


def _ulp(mag: Arr, dtype: np.dtype[Any]) -> F64:
    """The round-off of a value of ``dtype`` and size ``mag`` (as float64): its spacing, times
    ``LOW_PRECISION_ULPS`` below float64 (numpy's float32 kernels err by up to a few ulps)."""
    # ``mag`` is a magnitude (non-negative or NaN), so its spacing is positive.
    out: F64 = abs_spacing(np.asarray(mag).astype(dtype, copy=False)).astype(np.float64, copy=False)
    if np.dtype(dtype).itemsize < 8:
        out = out * LOW_PRECISION_ULPS
    return out


def _optimal_step(m: FiniteDifferenceMethod, c1: Any, c2: Any) -> Any:
    return (m.q / (m.p - m.q) * np.divide(c1, c2)) ** (1.0 / m.p)


def _accuracy(m: FiniteDifferenceMethod, h: Any, c1: Any, c2: Any) -> Any:
    return c1 * _ipow(h, -m.q) + c2 * _ipow(h, m.p - m.q)


@functools.cache
def _default_step(m: FiniteDifferenceMethod, eps: float) -> float:
    c1 = eps * m.f_error_mult * m.factor
    c2 = m.condition * m.df_mult
    return float(_optimal_step(m, c1, c2))


def _snap(prob: Problem, h: Arr) -> Arr:
    """Round ``h`` so that ``t0 + h`` is exactly ``t0`` plus the returned step."""
    hd = np.asarray(h).astype(prob.dtype)
    s = (prob.t0 + hd) - prob.t0
    ok = np.isfinite(s) & (s > 0)
    return s if ok.all() else np.where(ok, s, hd).astype(prob.dtype, copy=False)


def _tiny_step(m: FiniteDifferenceMethod, prob: Problem) -> float:
    """No step below the smallest normal number, nor so small that ``h**(q+1)`` underflows."""
    underflow: float = tiny(np.dtype(np.float64)) ** (1.0 / (m.q + 1))
    return max(tiny(prob.dtype), underflow)


def _lower(m: FiniteDifferenceMethod, prob: Problem) -> F64:
    """The smallest step the input's precision resolves (a few ulps of ``t0``)."""
    spacing = abs_spacing(prob.t0).astype(np.float64, copy=False)
    out: F64 = np.maximum(RESOLUTION * spacing, _tiny_step(m, prob))
    return out


def _upper(m: FiniteDifferenceMethod, prob: Problem, h_cap: Any) -> Any:
    """Steps stay within ``max_range`` and within 1000 default steps (relative to ``|t0|``)."""
    default = _default_step(m, prob.in_eps)
    up = np.maximum(prob.abs_t0, 1.0) * (1000.0 * default)
    up = np.minimum(up, m.max_range / m.max_offset)
    return up if np.all(np.isinf(h_cap)) else np.minimum(up, h_cap)


def _finish_kernel(
    h: Any,
    t0: Arr,
    cap: Any,
    *,
    scale: float,
    range_cap: float,
    tiny: float,
    dtype: np.dtype[Any],
) -> tuple[Arr, Arr]:
    abs_t0 = np.abs(t0).astype(np.float64, copy=False)
    up = np.maximum(abs_t0, 1.0) * scale
    if range_cap != np.inf:
        up = np.minimum(up, range_cap)
    if cap is not None:
        up = np.minimum(up, cap)
    h = np.minimum(h, up)
    lower = np.maximum(abs_spacing(t0).astype(np.float64, copy=False) * RESOLUTION, tiny)
    coarse = h < lower
    h = np.maximum(h, lower)
    hd = h.astype(dtype, copy=False)
    snapped = (t0 + hd) - t0
    ok = np.isfinite(snapped) & (snapped > 0)
    if ok.all():
        return snapped, coarse
    return np.where(ok, snapped, hd).astype(dtype, copy=False), coarse


def _finisher(m: FiniteDifferenceMethod, prob: Problem) -> Callable[..., tuple[Arr, Arr]]:
    return _finisher_for(m, prob.dtype, prob.in_eps, _tiny_step(m, prob))


@functools.cache
def _finisher_for(
    m: FiniteDifferenceMethod, dtype: np.dtype[Any], eps: float, tiny: float
) -> Callable[..., tuple[Arr, Arr]]:
    return functools.partial(
        _finish_kernel,
        scale=1000.0 * _default_step(m, eps),
        range_cap=m.max_range / m.max_offset,
        tiny=tiny,
        dtype=dtype,
    )


def _cap(h_cap: Any) -> Any:
    return None if np.all(np.isinf(h_cap)) else h_cap


def _ew(prob: Problem, kernel: Callable[..., Any], *args: Any) -> Any:
    """Run an elementwise kernel in cache-sized blocks when the problem is elementwise."""
    return chunked(prob.t_shape, kernel, *args) if prob.elementwise else kernel(*args)


def _finish_step(m: FiniteDifferenceMethod, prob: Problem, h: Any, h_cap: Any) -> tuple[Arr, Arr]:
    """Clip ``h`` to ``[lower, upper]`` and snap it; also where the lower limit bound.

    ``upper`` keeps the stencil within ``max_range`` and ``h`` within 1000 default steps
    (relative to ``|t0|``) and ``h_cap``; ``lower`` is a few ulps of ``t0``.
    """
    h_arr, coarse = _ew(prob, _finisher(m, prob), h, prob.t0, _cap(h_cap))
    return np.asarray(h_arr), np.asarray(coarse)


def _shrink(prob: Problem, h: Arr, reach: int, nearest_bad: Arr) -> Arr:
    """A smaller step for elements whose stencil left the domain.

    The stencil stays inside the distance at which the nearest bad point was (``nearest_bad``
    grid units), and inside half the distance to 0 (domains often end there).
    """
    h = np.asarray(h, dtype=np.float64)
    inside = h * np.maximum(nearest_bad - 1.0, 0.5) / (2.0 * reach)
    smaller = np.minimum(inside, h / 2.0)
    at0 = prob.abs_t0 / (2.0 * reach)
    return np.where((at0 > 0) & (at0 < smaller), at0, smaller)


class _Evaluation(NamedTuple):
    good: Arr  # S_t: every point finite
    nearest_bad: Arr | None  # S_t: smallest |offset| of a non-finite point (None if all good)


def _evaluation(prob: Problem, offsets: Any, rows: list[Arr], good_y: Arr) -> _Evaluation:
    good = reduce_to(good_y, prob.t_shape, np.all)
    if good.all():
        return _Evaluation(good, None)
    nearest = np.full(prob.t_shape, np.inf)
    for g, y in zip(offsets, rows, strict=True):
        bad = reduce_to(~np.isfinite(y), prob.t_shape, np.any)
        nearest = np.where(bad, np.minimum(nearest, abs(int(g))), nearest)
    return _Evaluation(good, nearest)


def _combine_kernel(
    rows: list[Arr], h: Arr, *, weights: Arr, q: int, anchor: int, scale: bool = True
) -> tuple[Arr, Arr, Arr]:
    """Weighted sums of the rows (after subtracting the anchor row) over ``h**q``; also
    ``max|f|`` and whether every value is finite."""
    ys = np.stack(rows)
    fm = _absmax(ys)
    # For real values max|y| is finite exactly when every value is (max propagates NaN); the
    # modulus of a finite complex number can overflow, so complex values are checked directly.
    good = np.isfinite(ys).all(axis=0) if np.iscomplexobj(ys) else np.isfinite(fm)
    # A copy of the anchor row: subtracting a view of ``ys`` from ``ys`` makes numpy take its
    # slow path for overlapping operands (ten times slower).
    ys -= rows[anchor]
    est = np.dot(weights, ys.reshape(len(ys), -1)).reshape(weights.shape[:-1] + ys.shape[1:])
    if scale:
        est *= _ipow(h, -q)
    return est, fm, good


def _mag_kernel(
    rows: list[Arr], h: Arr, *, weights: Arr, q: int, anchor: int
) -> tuple[Arr, Arr, Arr]:
    """``max|f^(q)|`` over the neighbourhood, ``max|f|`` and whether every value is finite.

    For real values the largest weighted sum is scaled by ``h**-q`` once: scaling by a positive
    number is monotonic in floating point too, so this equals the largest of the scaled sums
    (the modulus of a complex number is not scaled exactly, so complex sums are scaled first).
    """
    real = not np.iscomplexobj(rows[0])
    est, fm, good = _combine_kernel(rows, h, weights=weights, q=q, anchor=anchor, scale=not real)
    mag = _absmax(est)
    if real:
        mag *= _ipow(h, -q)
    return mag, fm, good


def _merge_into(old: Arr | None, new: Arr, take: Arr, first: bool) -> Arr:
    if old is None or first:
        return new
    return np.where(take, new, old)


# ------------------------------------------------------------------------------------------------
# step selection
# ------------------------------------------------------------------------------------------------


class _Step(NamedTuple):
    h: Arr  # S_t, in the problem's dtype
    c1: Any  # S_y (or None: not adapted)
    c2: Any
    retried: Arr  # S_t: a step had to shrink (a domain edge is near) or reached across 0
    coarse: Arr  # S_t: a step was raised to what the input's precision resolves
    grown: Arr  # S_t: the bound estimator's step grew (the function looked flat)
    unresolved: Arr  # S_t: the step is far below the bound estimator's (magnitudes suspect)


def _h_from_constants(
    c1: Arr, c2: Arr, span: Arr, m: FiniteDifferenceMethod, default: float
) -> Arr:
    h = _optimal_step(m, c1, c2)
    ok = np.isfinite(h) & (h > 0) & (c1 > 0) & (c2 > 0)
    h = np.where(ok, h, default)
    return np.minimum(h, span / m.max_offset)


def _step_kernel(
    df: Arr,
    fmag: Arr,
    span: Arr,
    t0: Arr,
    cap: Any,
    scale: Any,
    *,
    m: FiniteDifferenceMethod,
    out_dtype: np.dtype[Any],
    default: float,
    finish: Callable[..., tuple[Arr, Arr]],
) -> tuple[Arr, Arr, Arr, Arr]:
    c1 = _ulp(fmag, out_dtype) * (m.f_error_mult * m.factor)
    if scale is not None:
        c1 = c1 * scale
    c2 = df * m.df_mult
    h = _h_from_constants(c1, c2, span, m, default)
    h, coarse = finish(h, t0, cap)
    return h, c1, c2, coarse


def choose_step(
    m: FiniteDifferenceMethod,
    prob: Problem,
    h_cap: Any,
    c1_scale: Any = None,
    grow: bool = True,
) -> _Step:
    """The step (per element of ``t``) for ``m`` on ``prob``, and the error constants.

    ``c1_scale`` (per element of ``t``) multiplies the round-off model where it was found too
    optimistic (cancellation inside ``f``).
    """
    bound = m.bound_estimator
    if bound is None:
        h, coarse = _finish_step(m, prob, _default_step(m, prob.in_eps), h_cap)
        no = np.zeros(prob.t_shape, dtype=bool)
        return _Step(h, None, None, no, coarse, no, no)
    mags = _magnitudes(bound, prob, h_cap, grow)
    default = _default_step(m, prob.in_eps)
    if prob.elementwise:
        kernel = functools.partial(
            _step_kernel, m=m, out_dtype=prob.out_dtype, default=default, finish=_finisher(m, prob)
        )
        h, c1, c2, coarse = _ew(
            prob,
            kernel,
            mags.df,
            mags.fmag,
            mags.span,
            prob.t0,
            _cap(h_cap),
            c1_scale,
        )
    else:
        c1 = _ulp(mags.fmag, prob.out_dtype) * (m.f_error_mult * m.factor)
        if c1_scale is not None:
            c1 = c1 * c1_scale
        c2 = mags.df * m.df_mult
        c1_t = reduce_to(c1, prob.t_shape, np.max)
        c2_t = reduce_to(c2, prob.t_shape, np.max)
        h, coarse = _finish_step(
            m, prob, _h_from_constants(c1_t, c2_t, mags.span, m, default), h_cap
        )
    coarse = np.asarray(coarse) | mags.coarse
    h = np.asarray(h)
    # A step far below the bound estimator's means the function varies on a scale that
    # estimator did not resolve (tanh(x / 1e-6) at 0): its magnitudes are suspect.
    unresolved = h.astype(np.float64, copy=False) * (UNRESOLVED * bound.max_offset) < mags.span
    return _Step(h, c1, c2, mags.retried, coarse, mags.grown, unresolved)


class _Magnitudes(NamedTuple):
    df: Arr  # S_y: |f^(p)|, max over three centres (NaN where not found)
    fmag: Arr  # S_y: max |f| over the points
    span: Arr  # S_t: distance from t0 over which f was found finite
    retried: Arr  # S_t
    coarse: Arr  # S_t
    grown: Arr  # S_t


def _magnitude_pass(
    b: FiniteDifferenceMethod, prob: Problem, h: Arr
) -> tuple[_Evaluation, Arr, Arr]:
    rows = [prob.at(int(g), h) for g in b.grid]
    kernel = functools.partial(
        _mag_kernel, weights=b.neighbourhood_weights(), q=b.q, anchor=len(b.grid) // 2
    )
    mag, fm, good_y = _ew(prob, kernel, rows, h)
    return _evaluation(prob, b.grid, rows, good_y), mag, fm


def restricted(prob: Problem, mask: Arr) -> tuple[npt.NDArray[np.intp], Problem] | None:
    """The flat indices of the ``mask``ed elements and the problem on them alone, or None when
    the problem has no subsets or every element is masked (then work on the whole problem).

    The engine's kernels are elementwise, so work on a subset gives, bit for bit, what work on
    the whole problem gives for those elements, at the cost of those elements only.
    """
    if not prob.elementwise:
        return None
    index = np.flatnonzero(mask)
    if index.size == mask.size:
        return None
    sub = prob.subset(index)
    return None if sub is None else (index, sub)


def scatter(index: npt.NDArray[np.intp], part: Arr, shape: tuple[int, ...], fill: Any) -> Arr:
    """An array of ``shape`` holding ``part`` at the flat ``index``es and ``fill`` elsewhere."""
    part = np.asarray(part)
    out = np.full(shape, fill, dtype=part.dtype)
    out.reshape(-1)[index] = part.reshape(-1)
    return out


def _magnitude_pass_on(
    b: FiniteDifferenceMethod, prob: Problem, h: Arr, mask: Arr
) -> tuple[_Evaluation, Arr, Arr]:
    """``_magnitude_pass`` for the ``mask``ed elements, on a subset when the problem allows one.

    Elsewhere the results are placeholders: not good, magnitudes 0.
    """
    part = restricted(prob, mask)
    if part is None:
        return _magnitude_pass(b, prob, h)
    index, sub = part
    ev, mag, fm = _magnitude_pass(b, sub, np.asarray(h).reshape(-1)[index])
    shape = prob.t_shape
    good = scatter(index, ev.good, shape, False)
    nearest = None if ev.nearest_bad is None else scatter(index, ev.nearest_bad, shape, np.inf)
    return (
        _Evaluation(good, nearest),
        scatter(index, mag, shape, 0.0),
        scatter(index, fm, shape, 0.0),
    )


def _magnitudes(
    b: FiniteDifferenceMethod, prob: Problem, h_cap: Any, grow: bool = True
) -> _Magnitudes:
    """Size ``|f^(p)|`` and ``|f|`` near ``t0`` with the bound estimator ``b``."""
    first = choose_step(b, prob, h_cap, None, grow)
    h = first.h
    retried = first.retried.copy()
    done = prob.dead().copy()
    df: Arr | None = None
    fmag: Arr | None = None
    span: Arr | None = None
    for attempt in range(MAX_SHRINK + 1):
        # Retries re-evaluate only the elements still without magnitudes.
        if attempt == 0:
            ev, mag, fm = _magnitude_pass(b, prob, h)
        else:
            ev, mag, fm = _magnitude_pass_on(b, prob, h, ~done)
        new = ev.good & ~done
        df = _merge_into(df, mag, new, attempt == 0)
        fmag = _merge_into(fmag, fm, new, attempt == 0)
        span = _merge_into(span, h.astype(np.float64, copy=False) * b.max_offset, new, attempt == 0)
        done |= ev.good
        if done.all() or attempt == MAX_SHRINK or ev.nearest_bad is None:
            break
        retried |= ~done
        h = _snap(prob, np.where(done, h, _shrink(prob, h, b.max_offset, ev.nearest_bad)))
    assert df is not None
    assert fmag is not None
    assert span is not None
    # A stencil reaching across 0 may have sampled a singularity there (1/x at 1e-3), so the
    # magnitudes are suspect: the estimate made with them will be checked.
    retried |= _straddle_mask(prob, h, b.max_offset)
    h_before = h
    df, fmag, span, h = _rescale_flat(b, prob, h_cap, h, df, fmag, span, done, retried, grow)
    grown = first.grown if h is h_before else first.grown | (h > h_before)
    if not done.all():
        span = np.where(done, span, h.astype(np.float64) * b.max_offset / 2.0)
        bad = ~np.broadcast_to(done, df.shape)
        df = np.where(bad, np.nan, df)
        fmag = np.where(bad, np.nan, fmag)
    return _Magnitudes(df, fmag, span, retried, first.coarse, grown)


def _flat_kernel(
    df: Arr, h: Arr, fmag: Arr, *, q: int, noise_mult: float, dtype: np.dtype[Any]
) -> tuple[Arr]:
    """Where the ``p``-th derivative estimate is no larger than round-off would make it."""
    signal = df * _ipow(h, q)
    return (signal <= FLAT * _ulp(fmag, dtype) * noise_mult,)


def _straddle_mask(prob: Problem, h: Arr, reach: int) -> Arr:
    def kernel(t0: Arr, h: Arr) -> tuple[Arr]:
        a = np.abs(t0).astype(np.float64, copy=False)
        return ((a > 0) & (a <= h * float(reach)),)

    return np.asarray(_ew(prob, kernel, prob.t0, h)[0])


def _rescale_flat(
    b: FiniteDifferenceMethod,
    prob: Problem,
    h_cap: Any,
    h: Arr,
    df: Arr,
    fmag: Arr,
    span: Arr,
    done: Arr,
    retried: Arr,
    grow: bool,
) -> tuple[Arr, Arr, Arr, Arr]:
    """Where the ``p``-th derivative estimate is only round-off, truncation is negligible at
    this step, and the step should be as large as keeps ``|f|`` near ``|f(t0)|`` (less
    round-off per unit of step): grow it where ``|f|`` is about constant over the stencil
    (``log`` at ``1e8``), shrink it where the stencil reaches values far larger than ``f(t0)``
    (``x**3`` at ``1e-8``). Growth stops at a stencil of ``|t0| / 16``: the function may change
    character at the scale of ``t0``."""
    noise_mult = float(np.abs(b.neighbourhood_weights()).sum(axis=1).max())
    kernel = functools.partial(_flat_kernel, q=b.q, noise_mult=noise_mult, dtype=prob.out_dtype)
    (flat_y,) = _ew(prob, kernel, df, h, fmag)
    flat = done & reduce_to(flat_y, prob.t_shape, np.all)
    if not flat.any():
        return df, fmag, span, h
    f0 = reduce_to(np.abs(prob.centre()), prob.t_shape, np.max)
    lower = _lower(b, prob)
    upper = np.minimum(_upper(b, prob, h_cap), prob.abs_t0 / (16.0 * b.max_offset))
    direction = np.zeros(prob.t_shape)
    for _ in range(MAX_GROW):
        wide = reduce_to(fmag, prob.t_shape, np.max) > 4.0 * f0
        flat &= wide | (~retried & grow)
        want = np.where(wide, -1.0, 1.0)
        flat &= (direction == 0) | (direction == want)
        direction = np.where(flat, want, direction)
        h64 = h.astype(np.float64)
        grown = np.maximum(np.minimum(h64 * GROW, upper), h64)
        target = np.where(wide, np.maximum(h64 / GROW, lower), grown)
        flat &= target != h64
        if not flat.any():
            break
        h2 = _snap(prob, np.where(flat, target, h))
        ev, mag, fm = _magnitude_pass_on(b, prob, h2, flat)
        take = flat & ev.good
        df = np.where(take, mag, df)
        fmag = np.where(take, fm, fmag)
        span = np.where(take, h2.astype(np.float64) * b.max_offset, span)
        h = np.where(take, h2, h)
        if not take.any():
            break
        (flat_y,) = _ew(prob, kernel, df, h, fmag)
        flat &= take & reduce_to(flat_y, prob.t_shape, np.all)
    return df, fmag, span, h
