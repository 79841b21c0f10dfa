"""``|f^(p)|`` and ``|f|`` near ``t0``, which choose a method's step, by its bound estimator.

It starts at its own step (``steps.choose_step`` for it), which shrinks where its points leave
the domain (only those elements are re-evaluated), grows (``log`` at ``1e8``) or shrinks (``x**3``
at ``1e-8``) where its ``p``-th derivative is only round-off (``_rescale_flat``), and, where it
reaches far beyond the input's scale over a change of ``f`` larger than ``|f(t0)|``
(``sqrt(t**2 + c**2)`` at ``t``, ``c`` of ``1e-6`` looks like ``|t|`` at a step of ``1e-2``;
``1/t`` there has its pole inside), is tried within that scale, kept where sharper (``_localise``).

>>> from rruletest.finite_differences import central_fdm
>>> from rruletest.finite_differences.problem import Problem
>>> from rruletest.finite_differences.steps import choose_step
>>> b = central_fdm(5, 1).bound_estimator
>>> prob = Problem(lambda t: np.sqrt(t**2 + 1.9e-11), np.array([1e-6]))
>>> mags = magnitudes(b, prob, np.inf, choose_step(b, prob, np.inf))
>>> bool(mags.h[0] * b.max_offset <= 1e-6), bool(mags.fmag[0] < 2 * np.sqrt(2e-11))
(True, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.kernels import (
    FLAT,
    GROW,
    MAX_GROW,
    MAX_SHRINK,
    RESOLUTION,
    Evaluation,
    Stencil,
    elementwise,
    lower_step,
    mag_kernel,
    merge_into,
    restricted,
    scaled,
    scatter,
    shrink,
    snap,
    straddle_kernel,
    straddle_mask,
    tiny_step,
    ulp,
    upper_step,
)
from rruletest.finite_differences.problem import Problem, abs_spacing, reduce_to
from rruletest.finite_differences.rows import combine_rows

__all__ = ["FirstStep", "Magnitudes", "magnitudes"]

Arr = npt.NDArray[Any]

#: A stencil reaching beyond this many times the input's scale, over values beyond
#: ``WIDE_VALUES`` times ``|f(t0)|``, measures magnitudes far from ``t0``; ``_localise``
#: brings its reach to ``LOCAL_REACH`` times that scale (short of 0, where ``1/x``'s pole is).
WIDE_REACH = 16.0
WIDE_VALUES = 4.0
LOCAL_REACH = 0.5


class FirstStep(Protocol):
    """The bound estimator's own step (a ``steps.Step``)."""

    @property
    def h(self) -> Arr: ...
    @property
    def retried(self) -> Arr: ...
    @property
    def coarse(self) -> Arr: ...
    @property
    def grown(self) -> Arr: ...


class Magnitudes(NamedTuple):
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


def magnitudes(
    b: Stencil,
    prob: Problem,
    h_cap: Any,
    first: FirstStep,
    grow: bool = True,
    shrink_edges: bool = True,
) -> Magnitudes:
    """Size ``|f^(p)|`` and ``|f|`` near ``t0`` with the bound estimator ``b``, starting at
    its own step ``first`` (``steps.choose_step`` for ``b``)."""
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
    df, fmag, span, h = _localise(b, prob, h, df, fmag, span, done, retried)
    if not done.all():
        span = np.where(done, span, h.astype(np.float64) * b.max_offset / 2.0)
        bad = ~np.broadcast_to(done, df.shape)
        df = np.where(bad, np.nan, df)
        fmag = np.where(bad, np.nan, fmag)
    return Magnitudes(df, fmag, span, retried, first.coarse, grown, h)


def _localise(
    b: Stencil, prob: Problem, h: Arr, df: Arr, fmag: Arr, span: Arr, done: Arr, retried: Arr
) -> tuple[Arr, Arr, Arr, Arr]:
    """Where the stencil reaches beyond ``WIDE_REACH`` times the input's scale and ``f``
    changes over it by more than its own size, its magnitudes are those of ``f`` far from
    ``t0``: measure them again with the stencil's reach at ``LOCAL_REACH`` times that scale.

    The signs: values beyond ``WIDE_VALUES`` times ``|f(t0)|`` (the round-off model is ``eps *
    max|f|``: ``norm`` at ``1e-6``, values 5000 times ``|f(t0)|``, had an error estimate 4000
    times its error, and a rule 1% off passed), or a ``q``-th difference as large as
    ``|f(t0)|`` (``1/t`` at ``1e-6``, its pole inside). The local magnitudes are taken where
    they show a ``q``-th derivative above round-off, a feature at that scale, or, for values
    far larger, where they give the smaller error (``cos(300 t)`` and ``exp(100 t)`` at
    ``1e-6`` keep the wide ones; ``exp`` there is left alone). Where the scale is ``|t0|``,
    only a stencil reaching across 0 (in ``retried``) can reach beyond it: only those
    elements are looked at (a broadcast problem pays next to nothing for the others).
    """
    idx = np.flatnonzero(retried if prob.resolution == 0.0 else done)
    idx = idx[done.reshape(-1)[idx]]
    if idx.size == 0:
        return df, fmag, span, h
    t0 = prob.t0.reshape(-1)[idx]
    if prob.resolution == 0.0:
        scale = np.abs(t0).astype(np.float64)
    else:
        scale = np.broadcast_to(prob.input_scale, prob.t_shape).reshape(-1)[idx]
    f0 = _at(np.abs(prob.centre()), prob, idx)
    h_b = h.reshape(-1)[idx].astype(np.float64)
    big = _at(fmag, prob, idx) > WIDE_VALUES * f0
    curved = scaled(_at(df, prob, idx), h_b, b.q) > f0
    ok = (f0 > 0) & (scale > 0) & (big | curved) & (h_b * b.max_offset > WIDE_REACH * scale)
    if not ok.any():
        return df, fmag, span, h
    idx, t0, big = idx[ok], t0[ok], big[ok]
    lower = np.maximum(
        np.multiply(abs_spacing(t0), RESOLUTION, dtype=np.float64), tiny_step(b, prob)
    )
    hd = np.maximum(LOCAL_REACH * scale[ok] / b.max_offset, lower).astype(prob.dtype)
    snapped = (t0 + hd) - t0  # (as ``snap``: t0 + h is exact)
    h_new = np.where(np.isfinite(snapped) & (snapped > 0), snapped, hd).astype(prob.dtype)
    sub = prob.subset(idx)
    if sub is None:  # (not elementwise, so small) the whole problem, these elements taken
        h_all = np.array(h, copy=True)
        h_all.reshape(-1)[idx] = h_new
        mask = scatter(idx, np.ones(idx.size, dtype=bool), prob.t_shape, False)
        ev, mag, fm = _magnitude_pass_on(b, prob, h_all, mask)
        (flat_y,) = elementwise(prob, _flat_check(b, prob), mag, h_all, fm)
        flat = reduce_to(flat_y, prob.t_shape, np.all).reshape(-1)[idx]
        better = _sharper(
            b,
            prob,
            _at(df, prob, idx),
            _at(fmag, prob, idx),
            *(_at(a, prob, idx) for a in (mag, fm)),
        )
        good = ev.good.reshape(-1)[idx] & (~flat | (big & better))
        take = scatter(idx[good], np.ones(int(good.sum()), dtype=bool), prob.t_shape, False)
        return (
            np.where(take, mag, df),
            np.where(take, fm, fmag),
            np.where(take, np.multiply(h_all, b.max_offset, dtype=np.float64), span),
            np.where(take, h_all, h),
        )
    ev, mag, fm = _magnitude_pass(b, sub, h_new)
    (flat,) = _flat_check(b, sub)(mag, h_new, fm)
    better = _sharper(b, prob, _at(df, prob, idx), _at(fmag, prob, idx), mag, fm)
    good = ev.good.reshape(-1) & (~np.asarray(flat).reshape(-1) | (big & better))
    if not good.any():
        return df, fmag, span, h
    local = np.multiply(h_new, b.max_offset, dtype=np.float64)
    out = []
    # (df, fmag, span are this run's own, written in place; h may be the first step's, copied)
    for full, piece in ((df, mag), (fmag, fm), (span, local), (h, h_new)):
        arr, dtype = np.asarray(full), np.result_type(full, piece)
        if full is h or arr.dtype != dtype or not (arr.flags.writeable and arr.flags.c_contiguous):
            arr = np.array(full, dtype=dtype, copy=True)
        arr.reshape(-1)[idx[good]] = np.asarray(piece).reshape(-1)[good]
        out.append(arr)
    return out[0], out[1], out[2], out[3]


def _sharper(b: Stencil, prob: Problem, *mags: Arr) -> Arr:
    """Whether the magnitudes ``df_2, fmag_2`` give a smaller error than ``df, fmag`` (``mags``
    is the four) at the optimal step of a first derivative of ``b.q`` points: ``eps(|f|)**(1 -
    1/p) * |f^(p)|**(1/p)``, up to a common factor."""
    pairs = ((mags[0], mags[1]), (mags[2], mags[3]))
    w = 1.0 / b.q
    with np.errstate(all="ignore"):
        one, two = (ulp(m, prob.out_dtype) ** (1 - w) * np.abs(d) ** w for d, m in pairs)
    return np.asarray(two < one).reshape(-1)


def _at(a: Arr, prob: Problem, idx: npt.NDArray[np.intp]) -> Arr:
    """``a`` (over outputs) reduced to ``t``'s shape by its largest entry, at ``idx``."""
    if np.shape(a) == prob.t_shape:
        return np.asarray(a).reshape(-1)[idx]
    return reduce_to(a, prob.t_shape, np.max).reshape(-1)[idx]


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
        wide = (fm_t > WIDE_VALUES * f0) & (fm_t > shrink_gain * f0)
        wide &= h.astype(np.float64, copy=False) * b.max_offset > WIDE_REACH * scale
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
