"""One estimate: the stencil at chosen (or given) steps, its error, and a re-check.

``attempt`` picks the steps (``steps.choose_step``) unless given, evaluates the non-zero stencil
points, shrinks the steps of elements whose points left the domain (re-evaluating those alone),
combines the values after subtracting one of them (so cancellation costs nothing), corrects
first-derivative estimates for points rounded across a binade, and bounds the error by the
truncation and round-off model. ``check`` re-estimates some elements at another step and widens
or voids their errors where the two disagree; ``checked`` applies it to the suspect ones.

>>> from rruletest.finite_differences import central_fdm
>>> res = attempt(central_fdm(5, 1), Problem(np.exp, np.array([0.0, 1.0])), None)
>>> bool(np.all(np.abs(res.value - np.exp([0.0, 1.0])) <= res.error)), res.done.tolist()
(True, [True, True])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences._stencils import stencil
from rruletest.finite_differences.kernels import (
    CHECK_FACTOR,
    MAX_SHRINK,
    Evaluation,
    Stencil,
    accuracy,
    combine_kernel,
    elementwise,
    merge_into,
    restricted,
    scatter,
    shrink,
    snap,
    straddle_mask,
    ulp,
)
from rruletest.finite_differences.problem import Problem, abs_spacing, reduce_to
from rruletest.finite_differences.rows import combine_rows
from rruletest.finite_differences.steps import choose_step

__all__ = [
    "Result",
    "attempt",
    "check",
    "checked",
    "elements",
    "merge",
    "straddles",
    "unreliable",
]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]


class Result(NamedTuple):
    value: Arr  # S_y
    error: F64  # S_y
    step: Arr  # S_t
    done: Arr  # S_t: a finite estimate was found
    retried: Arr  # S_t: some step had to shrink near a domain edge, or reached across 0
    coarse: Arr  # S_t: some step was limited by the input's precision
    grown: Arr  # S_t: the bound estimator's step grew (the function looked flat)
    unresolved: Arr  # S_t: the step is far below the bound estimator's (magnitudes suspect)


def attempt(
    m: Stencil,
    prob: Problem,
    step: Any,
    h_cap: Any = math.inf,
    c1_scale: Any = None,
    grow: bool = True,
    shrink_edges: bool = True,
) -> Result:
    """(``shrink_edges`` False: elements whose points, or the bound estimator's, left the
    domain are left without an estimate, their steps not shrunk: ``estimation.first_rows``
    defers that to a joined problem.)"""
    cut = None
    if step is None:
        st = choose_step(m, prob, h_cap, c1_scale, grow, shrink_edges)
        h, c1, c2, retried, coarse = st.h, st.c1, st.c2, st.retried.copy(), st.coarse
        if not shrink_edges and c2 is not None:  # the bound estimator's points left the domain
            cut = ~np.isfinite(reduce_to(np.asarray(c2, dtype=np.float64), prob.t_shape, np.max))
        grown, unresolved = st.grown, st.unresolved
    else:
        h = snap(prob, np.broadcast_to(np.asarray(step, dtype=np.float64), prob.t_shape))
        c1 = c2 = None
        retried = np.zeros(prob.t_shape, dtype=bool)
        coarse = grown = unresolved = retried
    value: Arr | None = None
    fmag: Arr | None = None
    used: Arr | None = None
    inter: Arr | None = None
    dead = prob.dead()
    done = dead.copy()
    kernel = functools.partial(combine_kernel, weights=m.weights, q=m.q, anchor=len(m.points) // 2)
    kernel_e = functools.partial(
        _error_kernel, m=m, out_dtype=prob.out_dtype, default_c2=m.condition * m.df_mult
    )
    # The first pass combines the rows, finds the points rounded across a binade and bounds
    # the error in one pass over the data; retries (a few elements) combine only.
    fused = functools.partial(
        _fused_kernel, combine=kernel, error=kernel_e, reach=float(np.abs(m.points).max()), q=m.q
    )
    error: F64 | None = None
    for attempt in range(MAX_SHRINK + 1):
        # Retries re-evaluate only the elements still without an estimate.
        part = None if attempt == 0 else restricted(prob, ~done)
        if attempt == 0:
            est, fm, ev, ip, error = _stencil_pass(m, prob, h, fused, (c1, c2, c1_scale))
        elif part is None:
            est, fm, ev, ip, _ = _stencil_pass(m, prob, h, kernel)
        else:
            (est, fm, ev), ip = _stencil_pass_on(m, prob, h, kernel, *part), None
        new = ev.good & ~done
        if ip is not None:
            inter = merge_into(inter, ip, new, attempt == 0)
        value = merge_into(value, est, new, attempt == 0)
        fmag = merge_into(fmag, fm, new, attempt == 0)
        used = merge_into(used, h, new, attempt == 0)
        done |= ev.good
        if done.all() or step is not None or attempt == MAX_SHRINK or ev.nearest_bad is None:
            break
        if not shrink_edges:
            break
        error = None  # steps changed: bound the errors once the passes are merged
        retried |= ~done
        h = snap(prob, np.where(done, h, shrink(prob, h, m.max_offset, ev.nearest_bad)))
    assert value is not None
    assert fmag is not None
    assert used is not None
    if cut is not None:  # (estimated at the default step: not an estimate)
        done &= ~cut
    if error is None:
        (error,) = elementwise(prob, kernel_e, used, fmag, c1, c2, c1_scale)
    if inter is not None:
        error = _unresolved_centre(m, prob, inter, value, error, used, fmag)
    good = done & ~dead
    if good.all():
        return Result(value, error, used, done, retried, coarse, grown, unresolved)
    good_y = np.broadcast_to(good, value.shape)
    error = np.where(good_y, error, np.inf)
    value = np.where(good_y, value, np.nan)
    return Result(value, error, used, done, retried, coarse, grown, unresolved)


def _fused_kernel(
    rows: list[Arr],
    h: Arr,
    t0: Arr,
    c1: Any,
    c2: Any,
    scale: Any,
    *,
    combine: Callable[..., tuple[Arr, Arr, Arr]],
    error: Callable[..., tuple[F64]],
    reach: float,
    q: int,
) -> tuple[Arr, Arr, Arr, Arr, F64]:
    """``combine``, the binade crossings (first derivatives) and ``error`` on one block."""
    est, fm, good = combine(rows, h)
    if q == 1:
        (crossing,) = _crossing_kernel(t0, h, reach=reach)
    else:
        crossing = np.zeros(np.shape(t0), dtype=bool)
    (err,) = error(h, fm, c1, c2, scale)
    return est, fm, good, np.asarray(crossing), err


def _stencil_pass(
    m: Stencil,
    prob: Problem,
    h: Arr,
    kernel: Callable[..., Any],
    constants: tuple[Any, Any, Any] | None = None,
) -> tuple[Arr, Arr, Evaluation, Arr | None, F64 | None]:
    """The stencil's estimate (position-corrected), ``max|f|``, which elements were good,
    (for a problem that is not elementwise: a direction or a Jacobian's columns) the value at
    ``t0`` interpolated from the stencil's points, and, with the error ``constants`` (``c1``,
    ``c2``, ``c1_scale``) and the fused kernel, the error bound."""
    rows = [prob.at(int(g), h) for g in m.points]
    inter = None
    if not prob.elementwise and m.q > 0 and 0 not in m.points:
        w0, _ = _centre_weights(tuple(int(g) for g in m.points))
        inter = np.zeros(rows[0].shape, dtype=np.result_type(rows[0].dtype, np.float64))
        for w, r in zip(w0, rows, strict=True):
            inter += w * r
    error = None
    if constants is None:
        (est, fm, _), ev = combine_rows(prob, m.points, rows, kernel, (0, 1), h)
        rows.clear()
        est = _position_correction(m, prob, h, est)
    else:
        (est, fm, _, crossing, error), ev = combine_rows(
            prob, m.points, rows, kernel, (0, 1, 4), h, prob.t0, *constants
        )
        rows.clear()  # (what is left of them) before the correction's temporaries
        est = _position_correction(m, prob, h, est, crossing)
    return est, fm, ev, inter, error


@functools.cache
def _centre_weights(points: tuple[int, ...]) -> tuple[tuple[float, ...], float]:
    """The weights interpolating the value at ``t0`` from ``points``, and their absolute sum."""
    w0 = stencil(points, 0)
    return tuple(float(w) for w in w0), float(sum(abs(w) for w in w0))


def _unresolved_centre(
    m: Stencil, prob: Problem, inter: Arr, value: Arr, error: F64, h: Arr, fmag: Arr
) -> F64:
    """Infinite errors where the stencil's points do not predict the value at ``t0``.

    Interpolated from the stencil's points, a smooth function's value at ``t0`` is off by far
    less than its change over the stencil (``|f'| * h * reach``); a value at ``t0`` off by more
    than that means ``f`` varies on a scale the step does not resolve (a pole between the
    points: ``inv`` of a matrix near singular along the direction), and the estimate, however
    consistent at another step of that size, is not one of the derivative.
    """
    _, total = _centre_weights(tuple(int(g) for g in m.points))
    noise = ulp(np.asarray(fmag), prob.out_dtype) * total
    gap = np.abs(inter - prob.centre())
    # The change over the stencil of the whole output (its largest component): a component
    # with no slope of its own (the real part of z**25 along an imaginary step) still curves
    # on the output's scale, and its interpolation error is no sign of a pole.
    slope = reduce_to(np.abs(value), prob.t_shape, np.max)  # broadcast against the gap below
    change = slope * np.asarray(h, dtype=np.float64) * float(m.max_offset)
    far = gap > CHECK_FACTOR * (change + noise)
    if not np.any(far):
        return error
    # Only the outputs that show it: one that does not vary along ``t`` (a Jacobian row's
    # output that does not depend on the coordinate) keeps its estimate, 0.
    return np.where(far, np.inf, error)


def _stencil_pass_on(
    m: Stencil,
    prob: Problem,
    h: Arr,
    kernel: Callable[..., Any],
    index: npt.NDArray[np.intp],
    sub: Problem,
) -> tuple[Arr, Arr, Evaluation]:
    """``_stencil_pass`` for the elements at ``index`` alone, on the problem ``sub`` restricted
    to them; elsewhere the results are placeholders (not good, values 0)."""
    est, fm, ev, _, _ = _stencil_pass(m, sub, np.asarray(h).reshape(-1)[index], kernel)
    shape = prob.t_shape
    good = scatter(index, ev.good, shape, False)
    nearest = None if ev.nearest_bad is None else scatter(index, ev.nearest_bad, shape, np.inf)
    return (
        scatter(index, est, shape, 0.0),
        scatter(index, fm, shape, 0.0),
        Evaluation(good, nearest),
    )


def _crossing_kernel(t0: Arr, h: Arr, *, reach: float) -> tuple[Arr]:
    """Where the farthest stencil point lands in a coarser binade than ``t0``."""
    abs_t0 = np.abs(t0)
    far = (abs_t0.astype(np.float64, copy=False) + reach * h.astype(np.float64, copy=False)).astype(
        t0.dtype, copy=False
    )
    return (abs_spacing(far) > abs_spacing(abs_t0),)


def _position_correction(
    m: Stencil, prob: Problem, h: Arr, est: Arr, crossing: Arr | None = None
) -> Arr:
    """Correct a first-derivative estimate for stencil points that were rounded.

    Snapped steps make ``t0 + g * h`` exact unless the point lands in a coarser binade than
    ``t0`` (``0.99999 + 2h`` above 1). There ``f(t0 + g*h + d) = f(t0 + g*h) + f' * d`` to first
    order, so the estimate is off by ``f' * sum(c * d) / h``: scale it by ``1 - sum(c * d) / h``.
    ``est`` (freshly computed) is corrected in place where it has the shape of ``t``;
    ``crossing`` (those points) is computed unless given.
    """
    if m.q != 1:
        return est
    if crossing is None:
        reach = float(np.abs(m.points).max())
        kernel = functools.partial(_crossing_kernel, reach=reach)
        (crossing,) = elementwise(prob, kernel, prob.t0, h)
    if not crossing.any():
        return est
    idx = np.flatnonzero(crossing)
    t0 = prob.t0.reshape(-1)[idx]
    hh = h.reshape(-1)[idx]
    total = np.zeros(idx.size)
    for g, c in zip(m.points, m.weights, strict=True):
        t = np.multiply(hh, int(g), dtype=prob.dtype)
        t += t0
        delta = (t.astype(np.float64) - t0.astype(np.float64)) - int(g) * hh.astype(np.float64)
        total += c * delta
    scale = 1.0 - total / hh.astype(np.float64)
    if est.shape == prob.t_shape and est.flags.writeable and est.flags.c_contiguous:
        flat = est.reshape(-1)
        flat[idx] = flat[idx] * scale  # elsewhere the factor is exactly 1
        return est
    factor = np.ones(prob.t_shape)
    factor.reshape(-1)[idx] = scale
    out: Arr = est * factor
    return out


def _error_kernel(
    used: Arr,
    fmag: Arr,
    c1: Any,
    c2: Any,
    scale: Any,
    *,
    m: Stencil,
    out_dtype: np.dtype[Any],
    default_c2: float,
) -> tuple[F64]:
    c1m = ulp(fmag, out_dtype) * (m.f_error_mult * m.factor)
    if scale is not None:
        c1m = c1m * scale
    c1 = c1m if c1 is None else np.fmax(c1, c1m)
    c2 = default_c2 if c2 is None else np.where(np.isfinite(c2), c2, default_c2)
    error = np.asarray(accuracy(m, used, c1, c2), dtype=np.float64)
    return (np.where(np.isfinite(error), error, np.inf),)


def check(m: Stencil, prob: Problem, res: Result, mask: Arr, factor: float) -> tuple[Result, Arr]:
    """Re-estimate the ``mask``ed elements at ``factor`` times the step; widen or void errors.

    Two estimates that differ by more than ``CHECK_FACTOR`` error estimates mean the error
    model does not hold there (a singularity, round-off hidden by cancellation inside ``f``, or
    a function the input's precision cannot resolve): the element's error becomes infinite.
    Otherwise twice the difference widens it. Also returns, per element of ``t``, the ratio of the
    difference to the error estimate (0 where not checked).
    """
    other = np.where(mask, res.step.astype(np.float64) * factor, res.step)
    again = attempt(m, prob, other)
    diff = np.abs(again.value - res.value)
    # The difference underestimates the truncation error of the estimate at the larger
    # step by a factor 1 - 2**-(p - q); twice the difference bounds it.
    error = np.where(
        np.isfinite(diff) & (diff <= CHECK_FACTOR * res.error),
        np.maximum(res.error, 2.0 * diff),
        np.inf,
    )
    ratio = reduce_to(np.where(res.error > 0, diff / res.error, np.inf), prob.t_shape, np.max)
    mask_y = np.broadcast_to(mask, res.value.shape)
    return res._replace(error=np.where(mask_y, error, res.error)), np.where(mask, ratio, 0.0)


def straddles(m: Stencil, prob: Problem, res: Result) -> Arr:
    """Elements whose stencil reaches across 0 (where singularities such as 1/x's live)."""
    return straddle_mask(prob, res.step, m.max_offset)


def checked(m: Stencil, prob: Problem, res: Result, mask: Arr) -> tuple[Result, Arr]:
    ratio = np.zeros(prob.t_shape)
    suspect = res.retried | res.grown | res.unresolved | straddles(m, prob, res)
    near_edge = mask & res.done & suspect
    if near_edge.any():
        res, r = check(m, prob, res, near_edge, 0.5)
        ratio = np.maximum(ratio, r)
    coarse = mask & res.done & res.coarse & ~near_edge
    if coarse.any():
        res, r = check(m, prob, res, coarse, 2.0)
        ratio = np.maximum(ratio, r)
    return res, ratio


def elements(res: Result, index: npt.NDArray[np.intp]) -> Result:
    """The flat ``index``es of an elementwise ``res`` (every field shaped like ``t``)."""
    return Result(*(np.asarray(a).reshape(-1)[index] for a in res))


def merge(res: Result, alt: Result, take: Arr) -> Result:
    """``res`` with ``alt``'s results where ``take`` (per element of ``t``) is true."""
    take_y = np.broadcast_to(take, res.value.shape)
    return Result(
        np.where(take_y, alt.value, res.value),
        np.where(take_y, alt.error, res.error),
        np.where(take, alt.step, res.step),
        res.done | take,
        res.retried | take,
        np.where(take, alt.coarse, res.coarse),
        np.where(take, alt.grown, res.grown),
        np.where(take, alt.unresolved, res.unresolved),
    )


def unreliable(prob: Problem, res: Result) -> Arr:
    """Elements still without a reliable estimate that some fallback might give one."""
    return ~np.isfinite(reduce_to(res.error, res.done.shape, np.max)) & ~prob.dead()
