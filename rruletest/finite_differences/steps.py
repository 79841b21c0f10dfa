"""Step selection: a step per element that balances truncation against round-off.

Follows FiniteDifferences.jl: a method of ``p`` points for the ``q``-th derivative has
truncation error about ``C2 * h**(p - q)`` with ``C2 = |f^(p)| * df_mult`` and round-off about
``C1 * h**-q`` with ``C1 = eps(|f|) * f_error_mult * factor``; the step minimising the sum is
``h = (q / (p - q) * C1 / C2) ** (1 / p)``, and the sum at that step is the error estimate.
``|f^(p)|`` comes from a method of ``p + 2`` points evaluated at three neighbouring centres
(recursively adapted), or is assumed to be ``condition`` without adaptation.

Beyond that, per element of ``t`` (see ``problem``): steps are snapped so that ``t0 + h`` is
exact (``1e8`` is as accurate as ``1``); where the ``p``-th derivative estimate is round-off,
the bound estimator's step grows (``log`` at ``1e8``) or shrinks (``x**3`` at ``1e-8``); near a
domain edge (NaN or infinite points) it shrinks; in dense problems a step of at least the bound
estimator's goes onto its grid (no new calls). Only the elements that need it are re-evaluated.

>>> from rruletest.finite_differences import central_fdm
>>> st = choose_step(central_fdm(5, 1), Problem(np.sin, np.array([1.0])), np.inf)
>>> bool(1e-4 < st.h[0] < 1e-2), bool(st.grown[0])
(True, False)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.kernels import (
    FLAT,
    GROW,
    MAX_GROW,
    MAX_SHRINK,
    UNRESOLVED,
    Evaluation,
    Stencil,
    cap_or_none,
    default_step,
    elementwise,
    finish_step,
    finisher,
    lower_step,
    mag_kernel,
    merge_into,
    optimal_step,
    restricted,
    scaled,
    scatter,
    shrink,
    snap,
    straddle_kernel,
    straddle_mask,
    ulp,
    upper_step,
)
from rruletest.finite_differences.problem import Problem, reduce_to
from rruletest.finite_differences.rows import combine_rows

__all__ = ["Step", "choose_step"]

Arr = npt.NDArray[Any]


class Step(NamedTuple):
    h: Arr  # S_t, in the problem's dtype
    c1: Any  # S_y (or None: not adapted)
    c2: Any
    retried: Arr  # S_t: a step had to shrink (a domain edge is near) or reached across 0
    coarse: Arr  # S_t: a step was raised to what the input's precision resolves
    grown: Arr  # S_t: the bound estimator's step grew (the function looked flat)
    unresolved: Arr  # S_t: the step is far below the bound estimator's (magnitudes suspect)


def _h_from_constants(c1: Arr, c2: Arr, span: Arr, m: Stencil, default: float) -> Arr:
    """The optimal step, capped by ``span``. Where the ``p``-th derivative was measured 0 (or
    the optimal step overflowed), there is no truncation to balance: the widest step seen finite
    (the default one gave ``3 * x`` at ``1e12`` a round-off of 1.0 on its slope of 3)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        h = optimal_step(m, c1, c2)
    widest = span / m.max_offset
    ok = np.isfinite(h) & (h > 0) & (c1 > 0) & (c2 > 0)
    nil = ((c2 == 0) | (h == np.inf)) & (c1 > 0) & np.isfinite(widest) & (widest > 0)
    h = np.where(ok, h, np.where(nil, widest, default))
    return np.minimum(h, widest)


def _on_the_bound_grid(m: Stencil, b: Stencil, h: Arr, mags: _Magnitudes) -> Arr:
    """Where the step is at least ``j`` bound estimator steps, ``j`` of them: its points, for
    dense problems' memory (cumsum: 4 calls per coordinate fewer). A step ``r < 2`` times
    smaller (1.5 for ``central_fdm(5, 1)``) has at most ``r`` times the error bound."""
    if (j := b.max_offset // m.max_offset) < 1:
        return h
    hb = np.asarray(mags.h).astype(np.float64) * j
    own = np.multiply(np.asarray(mags.h), b.max_offset, dtype=np.float64) == mags.span
    down = own & (h >= hb)
    return np.where(down, hb, h) if down.any() else h


def _step_kernel(
    df: Arr,
    fmag: Arr,
    span: Arr,
    t0: Arr,
    cap: Any,
    scale: Any,
    coarse_before: Arr,
    *,
    m: Stencil,
    out_dtype: np.dtype[Any],
    default: float,
    finish: Callable[..., tuple[Arr, Arr]],
    reach: float,
) -> tuple[Arr, Arr, Arr, Arr, Arr]:
    """One block's steps, error constants, coarse steps (here or in the bound estimator) and
    steps far below the bound estimator's (``tanh(x / 1e-6)`` at 0: magnitudes suspect)."""
    c1 = ulp(fmag, out_dtype) * (m.f_error_mult * m.factor)
    if scale is not None:
        c1 = c1 * scale
    c2 = df * m.df_mult
    h = _h_from_constants(c1, c2, span, m, default)
    h, coarse = finish(h, t0, cap)
    unresolved = np.multiply(h, reach, dtype=np.float64) < span
    return h, c1, c2, coarse | coarse_before, unresolved


def choose_step(
    m: Stencil,
    prob: Problem,
    h_cap: Any,
    c1_scale: Any = None,
    grow: bool = True,
    shrink_edges: bool = True,
) -> Step:
    """The step (per element of ``t``) for ``m`` on ``prob``, and the error constants.

    ``c1_scale`` (per element of ``t``) multiplies the round-off model where it was found too
    optimistic (cancellation inside ``f``). ``shrink_edges`` False: the bound estimator's steps
    are not shrunk where its points left the domain (their error constants are NaN).
    """
    bound = m.bound_estimator
    if bound is None:
        h, coarse = finish_step(m, prob, default_step(m, prob.in_eps), h_cap)
        no = np.zeros(prob.t_shape, dtype=bool)
        return Step(h, None, None, no, coarse, no, no)
    mags = _magnitudes(bound, prob, h_cap, grow, shrink_edges)
    default = default_step(m, prob.in_eps)
    if prob.elementwise:
        kernel = functools.partial(
            _step_kernel,
            m=m,
            out_dtype=prob.out_dtype,
            default=default,
            finish=finisher(m, prob),
            reach=UNRESOLVED * bound.max_offset,
        )
        h, c1, c2, coarse, unresolved = elementwise(
            prob,
            kernel,
            mags.df,
            mags.fmag,
            mags.span,
            prob.t0,
            cap_or_none(h_cap),
            c1_scale,
            mags.coarse,
        )
        return Step(np.asarray(h), c1, c2, mags.retried, coarse, mags.grown, unresolved)
    c1 = ulp(mags.fmag, prob.out_dtype) * (m.f_error_mult * m.factor)
    if c1_scale is not None:
        c1 = c1 * c1_scale
    c2 = mags.df * m.df_mult
    c1_t = reduce_to(c1, prob.t_shape, np.max)
    c2_t = reduce_to(c2, prob.t_shape, np.max)
    h = _h_from_constants(c1_t, c2_t, mags.span, m, default)
    h, coarse = finish_step(m, prob, _on_the_bound_grid(m, bound, h, mags), h_cap)
    coarse = np.asarray(coarse) | mags.coarse
    h = np.asarray(h)
    # A step far below the bound estimator's: see _step_kernel.
    unresolved = h.astype(np.float64, copy=False) * (UNRESOLVED * bound.max_offset) < mags.span
    return Step(h, c1, c2, mags.retried, coarse, mags.grown, unresolved)


class _Magnitudes(NamedTuple):
    df: Arr  # S_y: |f^(p)|, max over three centres (NaN where not found)
    fmag: Arr  # S_y: max |f| over the points
    span: Arr  # S_t: distance from t0 over which f was found finite
    retried: Arr  # S_t
    coarse: Arr  # S_t
    grown: Arr  # S_t
    h: Arr  # S_t: the bound estimator's step (where ``span`` is its reach)


def _mag(b: Stencil) -> Callable[..., tuple[Arr, Arr, Arr]]:
    w = b.neighbourhood_weights()
    return functools.partial(mag_kernel, weights=w, q=b.q, anchor=len(b.grid) // 2)


def _magnitude_pass(b: Stencil, prob: Problem, h: Arr) -> tuple[Evaluation, Arr, Arr]:
    rows = [prob.at(int(g), h) for g in b.grid]
    (mag, fm, _), ev = combine_rows(prob, b.grid, rows, _mag(b), (0, 1), h)
    return ev, mag, fm


def _mag_fused_kernel(
    rows: list[Arr],
    h: Arr,
    t0: Arr,
    *,
    mag: Callable[..., tuple[Arr, Arr, Arr]],
    flat: Callable[..., tuple[Arr]],
    reach: float,
) -> tuple[Arr, Arr, Arr, Arr, Arr]:
    """``mag_kernel``, ``_flat_kernel`` and ``straddle_kernel`` on one block of rows."""
    df, fm, good = mag(rows, h)
    (flat_y,) = flat(df, h, fm)
    (straddles,) = straddle_kernel(t0, h, reach=reach)
    return df, fm, good, flat_y, straddles


def _first_magnitude_pass(
    b: Stencil, prob: Problem, h: Arr
) -> tuple[Evaluation, Arr, Arr, Arr, Arr]:
    """``_magnitude_pass``, with ``_flat_kernel``'s verdict and ``straddle_kernel``'s."""
    rows = [prob.at(int(g), h) for g in b.grid]
    kernel = functools.partial(
        _mag_fused_kernel, mag=_mag(b), flat=_flat_check(b, prob), reach=float(b.max_offset)
    )
    (df, fm, _, flat_y, straddles), ev = combine_rows(
        prob, b.grid, rows, kernel, (0, 1), h, prob.t0
    )
    return ev, df, fm, flat_y, straddles


def _magnitude_pass_on(b: Stencil, prob: Problem, h: Arr, mask: Arr) -> tuple[Evaluation, Arr, Arr]:
    """``_magnitude_pass`` for the ``mask``ed elements (a subset where the problem allows
    one); elsewhere placeholders: not good, magnitudes 0."""
    part = restricted(prob, mask)
    if part is None:
        return _magnitude_pass(b, prob, h)
    index, sub = part
    ev, mag, fm = _magnitude_pass(b, sub, np.asarray(h).reshape(-1)[index])
    shape = prob.t_shape
    good = scatter(index, ev.good, shape, False)
    nearest = None if ev.nearest_bad is None else scatter(index, ev.nearest_bad, shape, np.inf)
    return (
        Evaluation(good, nearest),
        scatter(index, mag, shape, 0.0),
        scatter(index, fm, shape, 0.0),
    )


def _magnitudes(
    b: Stencil, prob: Problem, h_cap: Any, grow: bool = True, shrink_edges: bool = True
) -> _Magnitudes:
    """Size ``|f^(p)|`` and ``|f|`` near ``t0`` with the bound estimator ``b``."""
    first = choose_step(b, prob, h_cap, None, grow)
    h = first.h
    retried = first.retried.copy()
    done = prob.dead().copy()
    df: Arr | None = None
    fmag: Arr | None = None
    span: Arr | None = None
    flat_y: Arr | None = None
    straddles: Arr | None = None
    for attempt in range(MAX_SHRINK + 1):
        # Retries re-evaluate only the elements still without magnitudes.
        if attempt == 0:
            ev, mag, fm, flat_y, straddles = _first_magnitude_pass(b, prob, h)
        else:
            flat_y = straddles = None  # the steps changed
            ev, mag, fm = _magnitude_pass_on(b, prob, h, ~done)
        new = ev.good & ~done
        df = merge_into(df, mag, new, attempt == 0)
        fmag = merge_into(fmag, fm, new, attempt == 0)
        span = merge_into(span, np.multiply(h, b.max_offset, dtype=np.float64), new, attempt == 0)
        done |= ev.good
        if done.all() or attempt == MAX_SHRINK or ev.nearest_bad is None or not shrink_edges:
            break
        retried |= ~done
        h = snap(prob, np.where(done, h, shrink(prob, h, b.max_offset, ev.nearest_bad)))
    assert df is not None
    assert fmag is not None
    assert span is not None
    # A stencil reaching across 0 may have sampled a singularity there (1/x at 1e-3), so the
    # magnitudes are suspect: the estimate made with them will be checked.
    retried |= straddle_mask(prob, h, b.max_offset) if straddles is None else straddles
    h_before = h
    df, fmag, span, h = _rescale_flat(
        b, prob, h_cap, h, df, fmag, span, done, retried, grow, flat_y
    )
    grown = first.grown if h is h_before else first.grown | (h > h_before)
    if not done.all():
        span = np.where(done, span, h.astype(np.float64) * b.max_offset / 2.0)
        bad = ~np.broadcast_to(done, df.shape)
        df = np.where(bad, np.nan, df)
        fmag = np.where(bad, np.nan, fmag)
    return _Magnitudes(df, fmag, span, retried, first.coarse, grown, h)


def _flat_kernel(
    df: Arr, h: Arr, fmag: Arr, *, q: int, noise_mult: float, dtype: np.dtype[Any]
) -> tuple[Arr]:
    """Where the ``p``-th derivative estimate is no larger than round-off would make it."""
    signal = scaled(df, h, q)
    return (signal <= FLAT * ulp(fmag, dtype) * noise_mult,)


def _flat_check(b: Stencil, prob: Problem) -> Callable[..., tuple[Arr]]:
    noise_mult = float(np.abs(b.neighbourhood_weights()).sum(axis=1).max())
    return functools.partial(_flat_kernel, q=b.q, noise_mult=noise_mult, dtype=prob.out_dtype)


def _rescale_flat(
    b: Stencil,
    prob: Problem,
    h_cap: Any,
    h: Arr,
    df: Arr,
    fmag: Arr,
    span: Arr,
    done: Arr,
    retried: Arr,
    grow: bool,
    flat_y: Arr | None = None,
) -> tuple[Arr, Arr, Arr, Arr]:
    """Where the ``p``-th derivative estimate is only round-off, truncation is negligible: the
    step should be as large as keeps ``|f|`` near ``|f(t0)|``. Grow it where ``|f|`` is about
    constant over the stencil (``log`` at ``1e8``), up to a stencil of ``|t0| / 16`` (``f`` may
    change character at the scale of ``t0``); shrink it where the stencil reaches values far
    larger than ``f(t0)`` (``x**3`` at ``1e-8``)."""
    kernel = _flat_check(b, prob)
    if flat_y is None:  # (else computed with the magnitudes)
        (flat_y,) = elementwise(prob, kernel, df, h, fmag)
    flat = done & reduce_to(flat_y, prob.t_shape, np.all)
    if not flat.any():
        return df, fmag, span, h
    part = restricted(prob, flat)
    if part is None:
        return _rescale_loop(b, prob, h_cap, h, df, fmag, span, flat, retried, grow, kernel)
    # The few flat elements alone (a subset gives them what a full pass would).
    index, sub = part

    def pick(a: Any) -> Any:
        return a if np.ndim(a) == 0 else np.asarray(a).reshape(-1)[index]

    cap_s, h_s, df_s, fmag_s, span_s, retried_s = (
        pick(a) for a in (h_cap, h, df, fmag, span, retried)
    )
    everywhere = np.ones(index.size, dtype=bool)
    out = _rescale_loop(
        b, sub, cap_s, h_s, df_s, fmag_s, span_s, everywhere, retried_s, grow, kernel
    )
    # df, fmag, span are this run's own (written in place); the caller compares h (copied).
    whole = []
    for i, (full, piece) in enumerate(zip((df, fmag, span, h), out, strict=True)):
        arr = np.asarray(full)
        dtype = np.result_type(full, piece)
        if i == 3 or arr.dtype != dtype or not arr.flags.writeable or not arr.flags.c_contiguous:
            arr = np.array(full, dtype=dtype, copy=True)
        arr.reshape(-1)[index] = piece
        whole.append(arr)
    return whole[0], whole[1], whole[2], whole[3]


def _rescale_loop(
    b: Stencil,
    prob: Problem,
    h_cap: Any,
    h: Arr,
    df: Arr,
    fmag: Arr,
    span: Arr,
    flat: Arr,
    retried: Arr,
    grow: bool,
    kernel: Callable[..., tuple[Arr]],
) -> tuple[Arr, Arr, Arr, Arr]:
    """``_rescale_flat``'s growing and shrinking of the ``flat`` elements' steps."""
    f0 = reduce_to(np.abs(prob.centre()), prob.t_shape, np.max)
    lower = lower_step(b, prob)
    scale = prob.input_scale
    upper = np.minimum(upper_step(b, prob, h_cap), scale / (16.0 * b.max_offset))
    direction = np.zeros(prob.t_shape)
    shrink_gain = GROW ** max(b.q - 5, 0)
    for _ in range(MAX_GROW):
        # Shrinking pays only where the stencil reaches far beyond the input's scale (x**3 at
        # 1e-8), not where it drowns the p-th derivative in round-off (logaddexp2 at -1 in
        # float32). Each shrink multiplies that round-off by GROW**p: for p > 5, |f| must also
        # fall by GROW**(p - 5) (exp at 1 with forward_fdm(10, 1) in float32).
        fm_t = reduce_to(fmag, prob.t_shape, np.max)
        wide = (fm_t > 4.0 * f0) & (fm_t > shrink_gain * f0)
        wide &= h.astype(np.float64, copy=False) * b.max_offset > 16.0 * scale
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
        h2 = snap(prob, np.where(flat, target, h))
        # A target that snaps back to the step would only repeat the points it has.
        flat &= h2 != h
        if not flat.any():
            break
        ev, mag, fm = _magnitude_pass_on(b, prob, h2, flat)
        take = flat & ev.good
        df = np.where(take, mag, df)
        fmag = np.where(take, fm, fmag)
        span = np.where(take, h2.astype(np.float64) * b.max_offset, span)
        h = np.where(take, h2, h)
        if not take.any():
            break
        (flat_y,) = elementwise(prob, kernel, df, h, fmag)
        flat &= take & reduce_to(flat_y, prob.t_shape, np.all)
    return df, fmag, span, h
