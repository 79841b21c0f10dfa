"""Estimation: evaluate the stencil, estimate the error, check and fall back per element.

Values are combined after subtracting one of them, so cancellation costs nothing; points
rounded across a binade get a first-order correction. Suspect estimates are re-checked at
another step: near a domain edge, across 0 (where ``1/x`` is singular), with a grown step
(aliasing), with a step far below the bound estimator's (the function varies on a smaller
scale), or at the input's resolution; ``run(..., check_all=True)`` checks every element, which
also catches round-off that cancellation inside ``f`` hides from the model. Where two estimates
disagree beyond their error, the element retries: without step growth; with ever smaller steps
until the estimates converge; with the round-off model scaled by what the check saw; with its
stencil kept on its side of 0; with one-sided stencils. If nothing works its value is NaN and
its error infinite, never a silently wrong number.

Only suspect elements are re-worked, on a subset when the problem allows it, so the common case
costs one centre, ``p + 1`` bound points and the non-zero stencil points (11 evaluations for
``central_fdm(5, 1)``) whatever the number of elements.

>>> from rruletest.finite_differences import central_fdm
>>> est = run(central_fdm(5, 1), Problem(np.sqrt, np.array([0.0, 4.0])))
>>> est.error[0], bool(abs(est.value[1] - 0.25) <= est.error[1] < 1e-12)
(np.float64(inf), True)
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.problem import Estimate, Problem, abs_spacing, reduce_to
from rruletest.finite_differences.steps import (
    CHECK_FACTOR,
    MAX_SHRINK,
    _accuracy,
    _combine_kernel,
    _Evaluation,
    _evaluation,
    _ew,
    _merge_into,
    _shrink,
    _snap,
    _straddle_mask,
    _ulp,
    choose_step,
    restricted,
    scatter,
)

if TYPE_CHECKING:
    from rruletest.finite_differences.methods import FiniteDifferenceMethod, Kind

__all__ = ["estimate_function", "run"]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]


# ------------------------------------------------------------------------------------------------
# estimation
# ------------------------------------------------------------------------------------------------


class _Result(NamedTuple):
    value: Arr  # S_y
    error: F64  # S_y
    step: Arr  # S_t
    done: Arr  # S_t: a finite estimate was found
    retried: Arr  # S_t: some step had to shrink near a domain edge, or reached across 0
    coarse: Arr  # S_t: some step was limited by the input's precision
    grown: Arr  # S_t: the bound estimator's step grew (the function looked flat)
    unresolved: Arr  # S_t: the step is far below the bound estimator's (magnitudes suspect)


def _estimate(
    m: FiniteDifferenceMethod,
    prob: Problem,
    step: Any,
    h_cap: Any = math.inf,
    c1_scale: Any = None,
    grow: bool = True,
) -> _Result:
    if step is None:
        st = choose_step(m, prob, h_cap, c1_scale, grow)
        h, c1, c2, retried, coarse = st.h, st.c1, st.c2, st.retried.copy(), st.coarse
        grown, unresolved = st.grown, st.unresolved
    else:
        h = _snap(prob, np.broadcast_to(np.asarray(step, dtype=np.float64), prob.t_shape))
        c1 = c2 = None
        retried = np.zeros(prob.t_shape, dtype=bool)
        coarse = grown = unresolved = retried
    value: Arr | None = None
    fmag: Arr | None = None
    used: Arr | None = None
    dead = prob.dead()
    done = dead.copy()
    kernel = functools.partial(_combine_kernel, weights=m.weights, q=m.q, anchor=len(m.points) // 2)
    for attempt in range(MAX_SHRINK + 1):
        # Retries re-evaluate only the elements still without an estimate.
        part = None if attempt == 0 else restricted(prob, ~done)
        if part is None:
            est, fm, ev = _stencil_pass(m, prob, h, kernel)
        else:
            est, fm, ev = _stencil_pass_on(m, prob, h, kernel, *part)
        new = ev.good & ~done
        value = _merge_into(value, est, new, attempt == 0)
        fmag = _merge_into(fmag, fm, new, attempt == 0)
        used = _merge_into(used, h, new, attempt == 0)
        done |= ev.good
        if done.all() or step is not None or attempt == MAX_SHRINK or ev.nearest_bad is None:
            break
        retried |= ~done
        h = _snap(prob, np.where(done, h, _shrink(prob, h, m.max_offset, ev.nearest_bad)))
    assert value is not None
    assert fmag is not None
    assert used is not None
    kernel_e = functools.partial(
        _error_kernel, m=m, out_dtype=prob.out_dtype, default_c2=m.condition * m.df_mult
    )
    (error,) = _ew(prob, kernel_e, used, fmag, c1, c2, c1_scale)
    good = done & ~dead
    if good.all():
        return _Result(value, error, used, done, retried, coarse, grown, unresolved)
    good_y = np.broadcast_to(good, value.shape)
    error = np.where(good_y, error, np.inf)
    value = np.where(good_y, value, np.nan)
    return _Result(value, error, used, done, retried, coarse, grown, unresolved)


def _stencil_pass(
    m: FiniteDifferenceMethod, prob: Problem, h: Arr, kernel: Callable[..., Any]
) -> tuple[Arr, Arr, _Evaluation]:
    """The stencil's estimate (position-corrected), ``max|f|`` and which elements were good."""
    rows = [prob.at(int(g), h) for g in m.points]
    est, fm, good_y = _ew(prob, kernel, rows, h)
    est = _position_correction(m, prob, h, est)
    return est, fm, _evaluation(prob, m.points, rows, good_y)


def _stencil_pass_on(
    m: FiniteDifferenceMethod,
    prob: Problem,
    h: Arr,
    kernel: Callable[..., Any],
    index: npt.NDArray[np.intp],
    sub: Problem,
) -> tuple[Arr, Arr, _Evaluation]:
    """``_stencil_pass`` for the elements at ``index`` alone, on the problem ``sub`` restricted
    to them; elsewhere the results are placeholders (not good, values 0)."""
    est, fm, ev = _stencil_pass(m, sub, np.asarray(h).reshape(-1)[index], kernel)
    shape = prob.t_shape
    good = scatter(index, ev.good, shape, False)
    nearest = None if ev.nearest_bad is None else scatter(index, ev.nearest_bad, shape, np.inf)
    return (
        scatter(index, est, shape, 0.0),
        scatter(index, fm, shape, 0.0),
        _Evaluation(good, nearest),
    )


def _crossing_kernel(t0: Arr, h: Arr, *, reach: float) -> tuple[Arr]:
    """Where the farthest stencil point lands in a coarser binade than ``t0``."""
    abs_t0 = np.abs(t0)
    far = (abs_t0.astype(np.float64, copy=False) + reach * h.astype(np.float64, copy=False)).astype(
        t0.dtype, copy=False
    )
    return (abs_spacing(far) > abs_spacing(abs_t0),)


def _position_correction(m: FiniteDifferenceMethod, prob: Problem, h: Arr, est: Arr) -> Arr:
    """Correct a first-derivative estimate for stencil points that were rounded.

    Snapped steps make ``t0 + g * h`` exact unless the point lands in a coarser binade than
    ``t0`` (``0.99999 + 2h`` above 1). There ``f(t0 + g*h + d) = f(t0 + g*h) + f' * d`` to first
    order, so the estimate is off by ``f' * sum(c * d) / h``: scale it by ``1 - sum(c * d) / h``.
    ``est`` (freshly computed) is corrected in place where it has the shape of ``t``.
    """
    if m.q != 1:
        return est
    reach = float(np.abs(m.points).max())
    kernel = functools.partial(_crossing_kernel, reach=reach)
    (crossing,) = _ew(prob, kernel, prob.t0, h)
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
    m: FiniteDifferenceMethod,
    out_dtype: np.dtype[Any],
    default_c2: float,
) -> tuple[F64]:
    c1m = _ulp(fmag, out_dtype) * (m.f_error_mult * m.factor)
    if scale is not None:
        c1m = c1m * scale
    c1 = c1m if c1 is None else np.fmax(c1, c1m)
    c2 = default_c2 if c2 is None else np.where(np.isfinite(c2), c2, default_c2)
    error = np.asarray(_accuracy(m, used, c1, c2), dtype=np.float64)
    return (np.where(np.isfinite(error), error, np.inf),)


def _check(
    m: FiniteDifferenceMethod, prob: Problem, res: _Result, mask: Arr, factor: float
) -> tuple[_Result, Arr]:
    """Re-estimate the ``mask``ed elements at ``factor`` times the step; widen or void errors.

    Two estimates that differ by more than ``CHECK_FACTOR`` error estimates mean the error
    model does not hold there (a singularity, round-off hidden by cancellation inside ``f``, or
    a function the input's precision cannot resolve): the element's error becomes infinite.
    Otherwise twice the difference widens it. Also returns, per element of ``t``, the ratio of the
    difference to the error estimate (0 where not checked).
    """
    other = np.where(mask, res.step.astype(np.float64) * factor, res.step)
    again = _estimate(m, prob, other)
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


def _straddles(m: FiniteDifferenceMethod, prob: Problem, res: _Result) -> Arr:
    """Elements whose stencil reaches across 0 (where singularities such as 1/x's live)."""
    return _straddle_mask(prob, res.step, m.max_offset)


def _checked(
    m: FiniteDifferenceMethod, prob: Problem, res: _Result, mask: Arr
) -> tuple[_Result, Arr]:
    ratio = np.zeros(prob.t_shape)
    suspect = res.retried | res.grown | res.unresolved | _straddles(m, prob, res)
    near_edge = mask & res.done & suspect
    if near_edge.any():
        res, r = _check(m, prob, res, near_edge, 0.5)
        ratio = np.maximum(ratio, r)
    coarse = mask & res.done & res.coarse & ~near_edge
    if coarse.any():
        res, r = _check(m, prob, res, coarse, 2.0)
        ratio = np.maximum(ratio, r)
    return res, ratio


def _merge(res: _Result, alt: _Result, take: Arr) -> _Result:
    take_y = np.broadcast_to(take, res.value.shape)
    return _Result(
        np.where(take_y, alt.value, res.value),
        np.where(take_y, alt.error, res.error),
        np.where(take, alt.step, res.step),
        res.done | take,
        res.retried | take,
        np.where(take, alt.coarse, res.coarse),
        np.where(take, alt.grown, res.grown),
        np.where(take, alt.unresolved, res.unresolved),
    )


def _unreliable(prob: Problem, res: _Result) -> Arr:
    """Elements still without a reliable estimate that some fallback might give one."""
    return ~np.isfinite(reduce_to(res.error, res.done.shape, np.max)) & ~prob.dead()


def _careful(
    m: FiniteDifferenceMethod, prob: Problem, res: _Result, mask: Arr, noisy_ok: Arr
) -> _Result:
    """Check the ``mask``ed elements, and retry those found unreliable.

    In order: without step growth where it grew; with ever smaller steps until successive
    estimates converge (the function varies on a scale far below the chosen step, such as
    ``tanh(x / 1e-6)`` at 0); where nothing points at a domain edge (``noisy_ok``), with the
    round-off model
    scaled up by what the check saw (cancellation inside ``f``); with the stencil kept on its
    side of 0; with forward, then backward stencils. Each retry is checked in turn, and only a
    consistent estimate replaces an unreliable one.
    """
    res, ratio = _checked(m, prob, res._replace(retried=res.retried | noisy_ok), mask)
    retry = _unreliable(prob, res) & mask & res.grown
    if retry.any():
        # The function looked flat at the default scale, but not at the larger one: aliasing.
        alt = _estimate(m, prob, None, grow=False)
        alt, _ = _checked(m, prob, alt._replace(retried=alt.retried | retry), retry)
        res = _merge(res, alt, retry & ~_unreliable(prob, alt))
    retry = _unreliable(prob, res) & mask & res.done
    if retry.any():
        res = _converge(m, prob, res, retry)
        # A change that shrank by chance (round-off) must also pass the half-step check.
        converged = retry & ~_unreliable(prob, res)
        if converged.any():
            res, _ = _check(m, prob, res, converged, 0.5)
    retry = _unreliable(prob, res) & mask & noisy_ok & np.isfinite(ratio) & (ratio > 0)
    if retry.any():
        scale = np.where(retry, 2.0 * ratio, 1.0)
        alt = _estimate(m, prob, None, math.inf, scale)
        alt, _ = _checked(m, prob, alt._replace(retried=alt.retried | retry), retry)
        res = _merge(res, alt, retry & ~_unreliable(prob, alt))
    # Unreliable, or no better than its own size, with a stencil across 0: try again with the
    # stencil on its side of 0 (1/x at 1e-100), and keep whichever error is smaller.
    vague = reduce_to(res.error >= np.abs(res.value), prob.t_shape, np.any)
    vague &= _straddles(m, prob, res)
    retry = (_unreliable(prob, res) | vague) & mask & (prob.abs_t0 > 0)
    if retry.any():
        cap = np.where(retry, prob.abs_t0 / (2.0 * m.max_offset), math.inf)
        alt = _estimate(m, prob, None, cap)
        alt, _ = _checked(m, prob, alt._replace(retried=alt.retried | retry), retry)
        # A retry that could not make its step as small as asked (the input's precision) has
        # not kept its stencil off 0 either.
        failed = _unreliable(prob, alt) | alt.coarse
        better = reduce_to(
            (alt.error < res.error) | (alt.error < np.abs(alt.value)), prob.t_shape, np.all
        )
        # A vague estimate whose retry at the scale of t0 is inconsistent too sampled
        # something singular near 0: it is not to be trusted either.
        doomed = np.broadcast_to(retry & vague & failed, res.error.shape)
        res = res._replace(error=np.where(doomed, np.inf, res.error))
        res = _merge(res, alt, retry & ~failed & better)
    if m.kind == "central":
        sides: tuple[Kind, ...] = ("forward", "backward")
        for kind in sides:
            retry = _unreliable(prob, res) & mask
            if not retry.any():
                break
            side = m.one_sided(kind)
            alt = _estimate(side, prob, None)
            alt, _ = _checked(side, prob, alt._replace(retried=alt.retried | retry), retry)
            res = _merge(res, alt, retry & ~_unreliable(prob, alt))
    return res


#: Levels of the convergence retry, and the step ratio between levels.
CONVERGE_LEVELS = 4
CONVERGE_RATIO = 8.0


def _converge(m: FiniteDifferenceMethod, prob: Problem, res: _Result, retry: Arr) -> _Result:
    """Estimates at steps ``h / 8, h / 64, ...`` for the ``retry`` elements; accept the first
    whose change from the previous level is below 1/64 of the change before (the truncation
    error is shrinking as it should, ``8**-(p-q)`` per level), with twice that change as its
    error. Round-off-dominated and singular elements never converge and stay unreliable."""
    h = res.step.astype(np.float64)
    prev_value = res.value
    prev_diff: Arr | None = None
    pending = retry.copy()
    for level in range(1, CONVERGE_LEVELS + 1):
        step = np.where(pending, h / CONVERGE_RATIO**level, h)
        alt = _estimate(m, prob, step)
        diff = np.abs(alt.value - prev_value)
        if prev_diff is not None:
            # Converging: the change shrank by 64, or is already within the round-off model.
            settled = (diff * 64.0 <= prev_diff) | (diff <= alt.error)
            ok = reduce_to(np.isfinite(diff) & settled, prob.t_shape, np.all)
            take = pending & ok & alt.done
            if take.any():
                accepted = alt._replace(error=np.maximum(alt.error, 2.0 * diff))
                res = _merge(res, accepted, take)
                pending &= ~take
        if not pending.any():
            break
        prev_value, prev_diff = alt.value, diff
    return res


def _take(res: _Result, index: npt.NDArray[np.intp]) -> _Result:
    return _Result(*(np.asarray(a).reshape(-1)[index] for a in res))


def _put(res: _Result, index: npt.NDArray[np.intp], part: _Result) -> Estimate:
    """``value``, ``error`` and ``step`` of ``res`` with the subset's results at ``index``.

    ``_estimate`` made these arrays for this run alone, so they are written in place when the
    subset's results fit their dtype (no full-size copies).
    """
    out = []
    for whole, piece in zip(res[:3], part[:3], strict=True):
        dtype = np.result_type(whole, piece)
        arr = np.asarray(whole)
        if arr.dtype != dtype or not arr.flags.writeable or not arr.flags.c_contiguous:
            arr = np.array(whole, dtype=dtype, copy=True)
        arr.reshape(-1)[index] = piece
        out.append(arr)
    return Estimate(*out)


def run(
    m: FiniteDifferenceMethod,
    prob: Problem,
    step: Any = None,
    *,
    check_all: bool = False,
    c1_scale: Any = None,
) -> Estimate:
    """Estimate the ``q``-th derivative of ``prob`` with ``m``, falling back per element.

    ``check_all`` re-checks every element at half its step (4 more evaluations for
    ``central_fdm(5, 1)``), which also catches round-off hidden by cancellation inside ``f``;
    otherwise only elements near a domain edge, across 0 or at the input's resolution are.
    ``c1_scale`` multiplies the round-off model (for errors that behave like it).
    Returns arrays: ``value`` and ``error`` of shape ``S_y`` (float64 or complex128; error
    float64), ``step`` of shape ``S_t``. Floating-point warnings (of ``f`` outside its domain,
    and of the engine) are silenced for the duration.
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _run(m, prob, step, check_all=check_all, c1_scale=c1_scale)


def _run(
    m: FiniteDifferenceMethod,
    prob: Problem,
    step: Any = None,
    *,
    check_all: bool = False,
    c1_scale: Any = None,
) -> Estimate:
    """``run`` without its floating-point context."""
    res = _estimate(m, prob, step, math.inf, c1_scale)
    if step is not None:
        return Estimate(res.value, res.error, res.step)
    edge = res.retried | res.grown | _straddles(m, prob, res)
    noisy_ok = np.full(prob.t_shape, check_all) & ~edge & ~res.coarse & res.done
    suspect = (~res.done | edge | res.coarse | res.unresolved | noisy_ok) & ~prob.dead()
    if suspect.any():
        index = np.flatnonzero(suspect)
        sub = prob.subset(index) if index.size < suspect.size else None
        if sub is None:
            res = _careful(m, prob, res, suspect, noisy_ok)
        else:
            whole = np.ones(index.size, dtype=bool)
            part = _careful(m, sub, _take(res, index), whole, noisy_ok.reshape(-1)[index])
            return _put(res, index, part)
    return Estimate(res.value, res.error, res.step)


def estimate_function(
    m: FiniteDifferenceMethod, f: Callable[..., Any], x: Any, step: Any
) -> Estimate:
    """``m.estimate(f, x)``: elementwise over an array ``x``, along the real axis if complex."""
    if step is None and not isinstance(x, np.ndarray):
        from rruletest.finite_differences.scalar import fast_estimate

        fast = fast_estimate(m, f, x)
        if fast is not None:
            return fast
    scalar = not isinstance(x, np.ndarray)
    arr = np.asarray(x)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    if arr.dtype.kind not in "fc":
        raise TypeError(
            f"x must be a real or complex number or array, got {type(x).__name__} "
            f"(dtype {arr.dtype})"
        )
    imag = np.array(arr.imag, copy=True) if arr.dtype.kind == "c" else None
    cdtype = arr.dtype

    def make(part: Arr | None, as_scalar: bool) -> Callable[[Arr], Any]:
        def phi(t: Arr) -> Any:
            if part is not None:
                z = np.empty(t.shape, dtype=cdtype)
                z.real = t
                z.imag = part
                t = z
            return f(t[()] if as_scalar else t)

        return phi

    t0 = np.array(arr.real, copy=True)

    def restrict(index: npt.NDArray[np.intp]) -> tuple[Callable[[Arr], Any], Arr, Arr]:
        part = None if imag is None else imag.reshape(-1)[index]
        return make(part, False), t0.reshape(-1)[index], prob.centre().reshape(-1)[index]

    prob = Problem(make(imag, scalar), t0, restrict=None if scalar else restrict)
    est = run(m, prob, step)
    if scalar and np.ndim(est.value) == 0:
        v = est.value[()]
        return Estimate(
            complex(v) if np.iscomplexobj(v) else float(v), float(est.error), float(est.step)
        )
    if scalar:
        return Estimate(est.value, est.error, float(est.step))
    return est
