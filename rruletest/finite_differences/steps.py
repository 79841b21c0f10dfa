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
domain edge (NaN or infinite points) it shrinks; where it reaches far beyond the input's scale
over values far larger than ``|f(t0)|`` it is brought within that scale (``magnitudes``); in
dense problems a step of at least the bound estimator's goes onto its grid (no new calls).
Only the elements that need it are re-evaluated.

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
    UNRESOLVED,
    Stencil,
    cap_or_none,
    default_step,
    elementwise,
    finish_step,
    finisher,
    optimal_step,
    ulp,
)
from rruletest.finite_differences.magnitudes import Magnitudes, magnitudes
from rruletest.finite_differences.problem import Problem, reduce_to

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


def _on_the_bound_grid(m: Stencil, b: Stencil, h: Arr, mags: Magnitudes) -> Arr:
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
    first = choose_step(bound, prob, h_cap, None, grow)
    mags = magnitudes(bound, prob, h_cap, first, grow, shrink_edges)
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
