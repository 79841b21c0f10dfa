"""The engine: choose a step per element, evaluate the stencil, estimate the error.

A *problem* is a function ``phi(t)`` of a real array ``t`` (shape ``S_t``) whose output (shape
``S_y``, into which ``S_t`` broadcasts) depends elementwise on ``t``: output element ``k`` depends
only on the element of ``t`` it broadcasts from. A scalar ``t`` (``S_t == ()``) covers a
directional derivative of any function; ``S_t == S_y`` covers elementwise functions, where every
element gets its own step in one vectorised stencil run.

Step selection follows FiniteDifferences.jl: a method of ``p`` points for the ``q``-th derivative
has truncation error about ``C2 * h**(p - q)`` with ``C2 = |f^(p)| * df_mult`` and round-off about
``C1 * h**-q`` with ``C1 = eps(|f|) * f_error_mult * factor``; the step minimising the sum is
``h = (q / (p - q) * C1 / C2) ** (1 / p)``, and the sum at that step is the error estimate.
``|f^(p)|`` comes from a method of ``p + 2`` points evaluated at three neighbouring centres
(recursively adapted), or is assumed to be ``condition`` without adaptation.

Beyond that, per element: steps are snapped so that ``t + h`` is exactly representable (no
positional round-off, so ``1e8`` is as accurate as ``1``); a stencil point where ``f`` is NaN or
infinite (outside its domain) makes that element retry with smaller steps, then one-sided
stencils, and if nothing works the element's value is NaN and its error infinite. Function
values are combined after subtracting one of them, so cancellation costs no accuracy.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from rruletest.finite_differences.methods import FiniteDifferenceMethod, Kind

__all__ = ["Estimate", "OutputError", "Problem", "estimate_function", "run"]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]

#: How many times a failing element's step is shrunk before trying one-sided stencils.
MAX_SHRINK = 4
#: How many times an element whose adaptation sees only round-off grows its step, and by how much.
MAX_GROW = 2
GROW = 1e4
#: Steps are at least this many ulps of the point (where the input's precision runs out).
RESOLUTION = 4.0
#: An estimate re-checked at another step is unreliable if the two differ by more than this
#: many times its error estimate.
CHECK_FACTOR = 10.0


class OutputError(ValueError):
    """The function's output does not fit finite differences (shape changed, not numeric).

    Raised through the engine's handling of domain errors, which only catches the function's own
    ``ValueError``/``ArithmeticError`` at perturbed points.
    """


class Estimate(NamedTuple):
    """A finite-difference estimate: ``value``, its estimated absolute ``error``, the ``step``.

    ``error`` has the shape (and structure) of ``value``; an element that could not be
    estimated reliably (its stencil left the function's domain) has an infinite error.
    """

    value: Any
    error: Any
    step: Any


class Problem:
    """``phi`` around ``t0``: evaluations, with the centre cached and failures contained.

    ``centre`` may be given when the value at ``t0`` is already known (a broadcast's primal);
    ``evaluations`` counts calls of ``phi``.
    """

    def __init__(
        self,
        phi: Callable[[Arr], Any],
        t0: Arr,
        *,
        centre: Any = None,
        out_dtype: Any = None,
    ) -> None:
        t0 = np.asarray(t0)
        if t0.dtype.kind != "f":
            raise TypeError(f"t0 must be a real floating array, got dtype {t0.dtype}")
        self.phi = phi
        self.t0 = t0
        self.dtype = t0.dtype
        self.in_eps = float(np.finfo(t0.dtype).eps)
        self.t_shape: tuple[int, ...] = t0.shape
        self.y_shape: tuple[int, ...] | None = None
        self.out_dtype: np.dtype[Any] = np.dtype(np.float64 if out_dtype is None else out_dtype)
        self._fixed_out = out_dtype is not None
        self._seen_out = False
        self.complex_out = False
        self.evaluations = 0
        self._dead: Arr | None = None
        self._centre: Arr | None = None if centre is None else self._convert(centre)

    def _see(self, dtype: np.dtype[Any]) -> None:
        """Round-off is judged in the least precise output dtype seen."""
        if self._fixed_out:
            return
        if not self._seen_out or np.finfo(dtype).eps > np.finfo(self.out_dtype).eps:
            self.out_dtype = dtype
        self._seen_out = True

    def _convert(self, y: Any) -> Arr:
        arr = np.asarray(y)
        kind = arr.dtype.kind
        if kind in "biu":
            arr = arr.astype(np.float64)
        elif kind == "f":
            self._see(arr.dtype)
            arr = arr.astype(np.float64, copy=False)
        elif kind == "c":
            self._see(np.dtype(arr.real.dtype))
            self.complex_out = True
            arr = arr.astype(np.complex128, copy=False)
        else:
            raise OutputError(
                f"finite differences need numeric function values, got dtype {arr.dtype} "
                f"({type(y).__name__})"
            )
        try:
            ok = np.broadcast_shapes(self.t_shape, arr.shape) == arr.shape
        except ValueError:
            ok = False
        if not ok:
            raise OutputError(
                f"the function's output (shape {arr.shape}) must depend elementwise on the "
                f"perturbed input (shape {self.t_shape}); use jacobian/vjp for other functions"
            )
        if self.y_shape is None:
            self.y_shape = arr.shape
        elif arr.shape != self.y_shape:
            raise OutputError(
                f"the function returned shape {arr.shape} at one point and {self.y_shape} at "
                "another"
            )
        return arr

    def centre(self) -> Arr:
        """The value at ``t0`` (exceptions propagate: the primal point must work)."""
        if self._centre is None:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                y = self.phi(self.t0.copy())
            self.evaluations += 1
            self._centre = self._convert(y)
        return self._centre

    def dead(self) -> Arr:
        """Elements of ``t`` where the value at ``t0`` is not finite: nothing to estimate."""
        if self._dead is None:
            self._dead = _reduce(~np.isfinite(self.centre()), self.t_shape, np.any)
        return self._dead

    def at(self, g: int, h: Arr) -> Arr:
        """The value at ``t0 + g * h``; NaN everywhere if ``phi`` raises a domain-type error."""
        if g == 0:
            return self.centre()
        if self.y_shape is None:
            self.centre()
        with np.errstate(all="ignore"):
            t = (self.t0 + np.asarray(g * h, dtype=self.dtype)).astype(self.dtype, copy=False)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                y = self.phi(t)
        except OutputError:
            raise
        except (ArithmeticError, ValueError):
            assert self.y_shape is not None
            dt = np.complex128 if self.complex_out else np.float64
            self.evaluations += 1
            return np.full(self.y_shape, np.nan, dtype=dt)
        self.evaluations += 1
        return self._convert(y)


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def _reduce(arr: Arr, shape: tuple[int, ...], op: Callable[..., Any]) -> Arr:
    """Reduce ``arr`` (shape ``S_y``) to ``shape`` (``S_t``) with ``op`` over broadcast axes."""
    arr = np.asarray(arr)
    if arr.shape == shape:
        return arr
    lead = arr.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and arr.shape[lead + i] != 1
    )
    out = op(arr, axis=axes) if axes else arr
    return np.asarray(out).reshape(shape)


def _ulp(mag: Arr, dtype: np.dtype[Any]) -> F64:
    """The spacing of floats of ``dtype`` at ``mag`` (as float64)."""
    with np.errstate(all="ignore"):
        out: F64 = np.spacing(np.asarray(mag).astype(dtype)).astype(np.float64)
    return out


def _optimal_step(m: FiniteDifferenceMethod, c1: Any, c2: Any) -> Any:
    with np.errstate(all="ignore"):
        return (m.q / (m.p - m.q) * np.divide(c1, c2)) ** (1.0 / m.p)


def _accuracy(m: FiniteDifferenceMethod, h: Any, c1: Any, c2: Any) -> Any:
    with np.errstate(all="ignore"):
        return c1 * np.power(h, -float(m.q)) + c2 * np.power(h, float(m.p - m.q))


def _default_step(m: FiniteDifferenceMethod, eps: float) -> float:
    c1 = eps * m.f_error_mult * m.factor
    c2 = m.condition * m.df_mult
    return float(_optimal_step(m, c1, c2))


def _snap(prob: Problem, h: Arr) -> Arr:
    """Round ``h`` so that ``t0 + h`` is exactly ``t0`` plus the returned step."""
    hd = np.asarray(h).astype(prob.dtype)
    with np.errstate(all="ignore"):
        s = (prob.t0 + hd) - prob.t0
    return np.where(np.isfinite(s) & (s > 0), s, hd).astype(prob.dtype)


def _lower(m: FiniteDifferenceMethod, prob: Problem) -> F64:
    """The smallest step the input's precision resolves (a few ulps of ``t0``)."""
    tiny = float(np.finfo(prob.dtype).tiny) ** (1.0 / (m.q + 1))
    out: F64 = np.maximum(RESOLUTION * np.spacing(np.abs(prob.t0)).astype(np.float64), tiny)
    return out


def _finish_step(m: FiniteDifferenceMethod, prob: Problem, h: Any, upper: Any) -> tuple[Arr, Arr]:
    """Clip ``h`` to ``[lower, upper]`` and snap it; also where the lower limit bound."""
    h = np.minimum(np.broadcast_to(np.asarray(h, dtype=np.float64), prob.t_shape), upper)
    lower = _lower(m, prob)
    coarse = h < lower
    return _snap(prob, np.maximum(h, lower)), coarse


def _shrink(prob: Problem, h: Arr, reach: int, nearest_bad: Arr) -> Arr:
    """A smaller step for elements whose stencil left the domain.

    The stencil stays inside the distance at which the nearest bad point was (``nearest_bad``
    grid units), and inside half the distance to 0 (domains often end there).
    """
    h = np.asarray(h, dtype=np.float64)
    inside = h * np.maximum(nearest_bad - 1.0, 0.5) / (2.0 * reach)
    smaller = np.minimum(inside, h / 2.0)
    at0 = np.abs(prob.t0).astype(np.float64) / (2.0 * reach)
    return np.where((at0 > 0) & (at0 < smaller), at0, smaller)


def _upper(m: FiniteDifferenceMethod, prob: Problem, h_cap: Any) -> Any:
    """Steps stay within ``max_range`` and within 1000 default steps (relative to ``|t0|``)."""
    default = _default_step(m, prob.in_eps)
    scale = np.maximum(np.abs(prob.t0).astype(np.float64), 1.0)
    return np.minimum(np.minimum(h_cap, m.max_range / m.max_offset), 1000.0 * default * scale)


class _Evaluation(NamedTuple):
    ys: Arr  # (points, *S_y)
    good: Arr  # S_t: every point finite
    nearest_bad: Arr  # S_t: smallest |offset| of a non-finite point (inf if none)


def _evaluate(prob: Problem, offsets: Any, h: Arr) -> _Evaluation:
    rows = []
    nearest = np.full(prob.t_shape, np.inf)
    for g in offsets:
        y = prob.at(int(g), h)
        bad = _reduce(~np.isfinite(y), prob.t_shape, np.any)
        nearest = np.where(bad, np.minimum(nearest, abs(int(g))), nearest)
        rows.append(y)
    ys = np.stack(rows)
    return _Evaluation(ys, ~np.isfinite(nearest), nearest)


# ------------------------------------------------------------------------------------------------
# step selection
# ------------------------------------------------------------------------------------------------


class _Step(NamedTuple):
    h: Arr  # S_t, in the problem's dtype
    c1: Any  # S_y (or None: not adapted)
    c2: Any
    retried: Arr  # S_t: a step had to shrink (a domain edge is near) or reached across 0
    coarse: Arr  # S_t: a step was raised to what the input's precision resolves


def choose_step(m: FiniteDifferenceMethod, prob: Problem, h_cap: Any) -> _Step:
    """The step (per element of ``t``) for ``m`` on ``prob``, and the error constants."""
    upper = _upper(m, prob, h_cap)
    bound = m.bound_estimator
    if bound is None:
        h, coarse = _finish_step(m, prob, _default_step(m, prob.in_eps), upper)
        return _Step(h, None, None, np.zeros(prob.t_shape, dtype=bool), coarse)
    mags = _magnitudes(bound, prob, h_cap)
    c1 = _ulp(mags.fmag, prob.out_dtype) * m.f_error_mult * m.factor
    c2 = mags.df * m.df_mult
    c1_t = _reduce(c1, prob.t_shape, np.max)
    c2_t = _reduce(c2, prob.t_shape, np.max)
    h = _optimal_step(m, c1_t, c2_t)
    ok = np.isfinite(h) & (h > 0) & (c1_t > 0) & (c2_t > 0)
    h = np.where(ok, h, _default_step(m, prob.in_eps))
    h = np.minimum(h, mags.span / m.max_offset)
    h, coarse = _finish_step(m, prob, h, upper)
    return _Step(h, c1, c2, mags.retried, coarse | mags.coarse)


class _Magnitudes(NamedTuple):
    df: Arr  # S_y: |f^(p)|, max over three centres (NaN where not found)
    fmag: Arr  # S_y: max |f| over the points
    span: Arr  # S_t: distance from t0 over which f was found finite
    retried: Arr  # S_t
    coarse: Arr  # S_t


def _magnitude_pass(
    b: FiniteDifferenceMethod, prob: Problem, h: Arr
) -> tuple[_Evaluation, Arr, Arr]:
    ev = _evaluate(prob, b.grid, h)
    ys = ev.ys
    with np.errstate(all="ignore"):
        fm = np.abs(ys).max(axis=0)
        ys -= ys[len(b.grid) // 2]
        est = np.tensordot(b.neighbourhood_weights(), ys, axes=1)
        mag = np.abs(est).max(axis=0) / np.power(h.astype(np.float64), float(b.q))
    return ev, mag, fm


def _magnitudes(b: FiniteDifferenceMethod, prob: Problem, h_cap: Any) -> _Magnitudes:
    """Size ``|f^(p)|`` and ``|f|`` near ``t0`` with the bound estimator ``b``.

    Elements whose points leave the domain retry with smaller steps; elements where the
    estimate is pure round-off (the function is flat at this scale, such as ``log`` at ``1e8``)
    retry with larger steps, so that far from 0 steps grow with ``|t0|`` where that is safe.
    """
    first = choose_step(b, prob, h_cap)
    h = first.h
    retried = first.retried.copy()
    done = prob.dead().copy()
    df: Arr | None = None
    fmag: Arr | None = None
    span = np.zeros(prob.t_shape, dtype=np.float64)
    for attempt in range(MAX_SHRINK + 1):
        ev, mag, fm = _magnitude_pass(b, prob, h)
        new = ev.good & ~done
        if df is None or fmag is None:
            df, fmag = mag, fm
        else:
            df = np.where(new, mag, df)
            fmag = np.where(new, fm, fmag)
        span = np.where(new, h.astype(np.float64) * b.max_offset, span)
        done |= ev.good
        if done.all() or attempt == MAX_SHRINK:
            break
        retried |= ~done
        h = _snap(prob, np.where(done, h, _shrink(prob, h, b.max_offset, ev.nearest_bad)))
    assert df is not None
    assert fmag is not None
    # A stencil reaching across 0 may have sampled a singularity there (1/x at 1e-3), so the
    # magnitudes are suspect: the estimate made with them will be checked.
    t0 = np.abs(prob.t0).astype(np.float64)
    retried |= (t0 > 0) & (t0 <= h.astype(np.float64) * b.max_offset)
    upper = _upper(b, prob, h_cap)
    # Where the estimate is only round-off, truncation is negligible at this step and the step
    # should be as large as keeps |f| near |f(t0)| (less round-off per unit of step): grow it
    # where |f| is about constant over the stencil (log at 1e8), shrink it where the stencil
    # reaches values far larger than f(t0) (x**3 at 1e-8).
    noise_mult = float(np.abs(b.neighbourhood_weights()).sum(axis=1).max())
    f0 = _reduce(np.abs(prob.centre()), prob.t_shape, np.max)
    lower = _lower(b, prob)
    direction = np.zeros(prob.t_shape)
    # Never grow beyond a stencil of |t0| / 16: the function may change character at that scale.
    reach = np.abs(prob.t0).astype(np.float64) / (16.0 * b.max_offset)
    for _ in range(MAX_GROW):
        noise = _ulp(fmag, prob.out_dtype) * noise_mult
        with np.errstate(all="ignore"):
            signal = df * np.power(np.broadcast_to(h, df.shape).astype(np.float64), float(b.q))
        flat = done & _reduce(signal <= noise, prob.t_shape, np.all)
        wide = _reduce(fmag, prob.t_shape, np.max) > 4.0 * f0
        flat &= wide | ~retried
        want = np.where(wide, -1.0, 1.0)
        flat &= (direction == 0) | (direction == want)
        direction = np.where(flat, want, direction)
        h64 = h.astype(np.float64)
        grow_to = np.minimum(np.minimum(h64 * GROW, upper), reach)
        target = np.where(wide, np.maximum(h64 / GROW, lower), np.maximum(grow_to, h64))
        flat &= target != h64
        if not flat.any():
            break
        h2 = _snap(prob, np.where(flat, target, h))
        ev, mag, fm = _magnitude_pass(b, prob, h2)
        take = flat & ev.good
        df = np.where(take, mag, df)
        fmag = np.where(take, fm, fmag)
        span = np.where(take, h2.astype(np.float64) * b.max_offset, span)
        h = np.where(take, h2, h)
        if not take.any():
            break
    span = np.where(done, span, h.astype(np.float64) * b.max_offset / 2.0)
    bad = ~np.broadcast_to(done, df.shape)
    df = np.where(bad, np.nan, df)
    fmag = np.where(bad, np.nan, fmag)
    return _Magnitudes(df, fmag, span, retried, first.coarse)


# ------------------------------------------------------------------------------------------------
# estimation
# ------------------------------------------------------------------------------------------------


class _Result(NamedTuple):
    value: Arr  # S_y
    error: F64  # S_y
    step: Arr  # S_t
    done: Arr  # S_t: a finite estimate was found
    retried: Arr  # S_t: some step had to shrink near a domain edge
    coarse: Arr  # S_t: some step was limited by the input's precision


def _estimate(
    m: FiniteDifferenceMethod, prob: Problem, step: Any, h_cap: Any = math.inf
) -> _Result:
    if step is None:
        st = choose_step(m, prob, h_cap)
        h, c1, c2, retried, coarse = st.h, st.c1, st.c2, st.retried.copy(), st.coarse
    else:
        h = _snap(prob, np.broadcast_to(np.asarray(step, dtype=np.float64), prob.t_shape))
        c1 = c2 = None
        retried = np.zeros(prob.t_shape, dtype=bool)
        coarse = retried
    value: Arr | None = None
    fmag: Arr | None = None
    used = h.copy()
    dead = prob.dead()
    done = dead.copy()
    for attempt in range(MAX_SHRINK + 1):
        ev = _evaluate(prob, m.points, h)
        ys = ev.ys
        with np.errstate(all="ignore"):
            fm = np.abs(ys).max(axis=0)
            ys -= ys[len(ys) // 2]
            hq = np.power(h.astype(np.float64), float(m.q))
            est = np.tensordot(m.weights, ys, axes=1) / hq
        new = ev.good & ~done
        if value is None or fmag is None:
            value, fmag = est, fm
        else:
            value = np.where(new, est, value)
            fmag = np.where(new, fm, fmag)
        used = np.where(new, h, used)
        done |= ev.good
        if done.all() or step is not None or attempt == MAX_SHRINK:
            break
        retried |= ~done
        h = _snap(prob, np.where(done, h, _shrink(prob, h, m.max_offset, ev.nearest_bad)))
    assert value is not None
    assert fmag is not None
    c1m = _ulp(fmag, prob.out_dtype) * m.f_error_mult * m.factor
    c1 = c1m if c1 is None else np.fmax(c1, c1m)
    default_c2 = m.condition * m.df_mult
    c2 = default_c2 if c2 is None else np.where(np.isfinite(c2), c2, default_c2)
    error = np.asarray(_accuracy(m, used.astype(np.float64), c1, c2), dtype=np.float64)
    good_y = np.broadcast_to(done & ~dead, value.shape)
    error = np.where(good_y & np.isfinite(error), error, np.inf)
    value = np.where(good_y, value, np.nan)
    return _Result(value, error, used, done, retried, coarse)


def _check(
    m: FiniteDifferenceMethod, prob: Problem, res: _Result, mask: Arr, factor: float
) -> _Result:
    """Re-estimate the ``mask``ed elements at ``factor`` times the step; widen or void errors.

    Two estimates that differ by more than ``CHECK_FACTOR`` error estimates mean the error
    model does not hold there (a singularity, or a function the input's precision cannot
    resolve): the element's error becomes infinite. Otherwise the difference widens it.
    """
    other = np.where(mask, res.step.astype(np.float64) * factor, res.step)
    again = _estimate(m, prob, other)
    with np.errstate(all="ignore"):
        diff = np.abs(again.value - res.value)
        error = np.where(
            np.isfinite(diff) & (diff <= CHECK_FACTOR * res.error),
            np.maximum(res.error, diff),
            np.inf,
        )
    mask_y = np.broadcast_to(mask, res.value.shape)
    return res._replace(error=np.where(mask_y, error, res.error))


def _straddles(m: FiniteDifferenceMethod, prob: Problem, res: _Result) -> Arr:
    """Elements whose stencil reaches across 0 (where singularities such as 1/x's live)."""
    t0 = np.abs(prob.t0).astype(np.float64)
    return (t0 > 0) & (t0 <= res.step.astype(np.float64) * m.max_offset)


def _checked(m: FiniteDifferenceMethod, prob: Problem, res: _Result, mask: Arr) -> _Result:
    near_edge = mask & res.done & (res.retried | _straddles(m, prob, res))
    if near_edge.any():
        res = _check(m, prob, res, near_edge, 0.5)
    coarse = mask & res.done & res.coarse & ~near_edge
    if coarse.any():
        res = _check(m, prob, res, coarse, 2.0)
    return res


def _merge(res: _Result, alt: _Result, take: Arr) -> _Result:
    take_y = np.broadcast_to(take, res.value.shape)
    return _Result(
        np.where(take_y, alt.value, res.value),
        np.where(take_y, alt.error, res.error),
        np.where(take, alt.step, res.step),
        res.done | take,
        res.retried | take,
        np.where(take, alt.coarse, res.coarse),
    )


def _unreliable(prob: Problem, res: _Result) -> Arr:
    """Elements still without a reliable estimate that some fallback might give one."""
    return ~np.isfinite(_reduce(res.error, res.done.shape, np.max)) & ~prob.dead()


def run(m: FiniteDifferenceMethod, prob: Problem, step: Any = None) -> Estimate:
    """Estimate the ``q``-th derivative of ``prob`` with ``m``, falling back per element.

    Elements whose stencil left the function's domain retry with smaller steps; estimates near
    a domain edge, across 0, or limited by the input's precision are re-checked at another
    step, and where two estimates disagree beyond their error the element retries with its
    stencil kept on its side of 0, then (for a central method) with forward and backward
    stencils. An element nothing works for gets NaN and an infinite error, never a silently
    wrong number. Returns arrays: ``value`` and ``error`` of shape ``S_y`` (float64 or
    complex128; error float64), ``step`` of shape ``S_t``.
    """
    res = _estimate(m, prob, step)
    if step is not None:
        return Estimate(res.value, res.error, res.step)
    res = _checked(m, prob, res, np.ones(prob.t_shape, dtype=bool))
    t0 = np.abs(prob.t0).astype(np.float64)
    retry = _unreliable(prob, res) & (t0 > 0)
    if retry.any():
        cap = np.where(retry, t0 / (2.0 * m.max_offset), math.inf)
        alt = _estimate(m, prob, None, cap)
        alt = _checked(m, prob, alt._replace(retried=alt.retried | retry), retry)
        res = _merge(res, alt, retry & ~_unreliable(prob, alt))
    if m.kind == "central":
        sides: tuple[Kind, ...] = ("forward", "backward")
        for kind in sides:
            retry = _unreliable(prob, res)
            if not retry.any():
                break
            side = m.one_sided(kind)
            alt = _estimate(side, prob, None)
            alt = _checked(side, prob, alt._replace(retried=alt.retried | retry), retry)
            res = _merge(res, alt, retry & ~_unreliable(prob, alt))
    return Estimate(res.value, res.error, res.step)


def estimate_function(
    m: FiniteDifferenceMethod, f: Callable[..., Any], x: Any, step: Any
) -> Estimate:
    """``m.estimate(f, x)``: elementwise over an array ``x``, along the real axis if complex."""
    scalar = not isinstance(x, np.ndarray)
    arr = np.asarray(x)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    if arr.dtype.kind not in "fc":
        raise TypeError(
            f"x must be a real or complex number or array, got {type(x).__name__} "
            f"(dtype {arr.dtype})"
        )
    if arr.dtype.kind == "c":
        t0 = np.array(arr.real, copy=True)
        imag = np.array(arr.imag, copy=True)
        cdtype = arr.dtype

        def phi(t: Arr) -> Any:
            z = np.empty(t.shape, dtype=cdtype)
            z.real = t
            z.imag = imag
            return f(z[()] if scalar else z)

    else:
        t0 = np.array(arr, copy=True)

        def phi(t: Arr) -> Any:
            return f(t[()] if scalar else t)

    prob = Problem(phi, t0)
    est = run(m, prob, step)
    if scalar and np.ndim(est.value) == 0:
        v = est.value[()]
        return Estimate(
            complex(v) if np.iscomplexobj(v) else float(v), float(est.error), float(est.step)
        )
    if scalar:
        return Estimate(est.value, est.error, float(est.step))
    return est
