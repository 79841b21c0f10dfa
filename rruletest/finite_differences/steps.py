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
    from rruletest.finite_differences.methods import FiniteDifferenceMethod

__all__ = ["Estimate", "Problem", "estimate_function", "run"]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]

#: How many times a failing element's step is shrunk before trying one-sided stencils.
MAX_SHRINK = 4
#: How much each retry shrinks the step.
SHRINK = 8.0


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
        self.out_dtype: np.dtype[Any] = np.dtype(np.float64)
        self.complex_out = False
        self.evaluations = 0
        self._centre: Arr | None = None if centre is None else self._convert(centre)

    def _convert(self, y: Any) -> Arr:
        arr = np.asarray(y)
        kind = arr.dtype.kind
        if kind in "biu":
            arr = arr.astype(np.float64)
        elif kind == "f":
            self.out_dtype = arr.dtype
            arr = arr.astype(np.float64, copy=False)
        elif kind == "c":
            self.out_dtype = np.dtype(arr.real.dtype)
            self.complex_out = True
            arr = arr.astype(np.complex128, copy=False)
        else:
            raise TypeError(
                f"finite differences need numeric function values, got dtype {arr.dtype} "
                f"({type(y).__name__})"
            )
        try:
            ok = np.broadcast_shapes(self.t_shape, arr.shape) == arr.shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"the function's output (shape {arr.shape}) must depend elementwise on the "
                f"perturbed input (shape {self.t_shape}); use jacobian/vjp for other functions"
            )
        if self.y_shape is None:
            self.y_shape = arr.shape
        elif arr.shape != self.y_shape:
            raise ValueError(
                f"the function returned shape {arr.shape} at one point and {self.y_shape} at "
                "another"
            )
        return arr

    def centre(self) -> Arr:
        """The value at ``t0`` (exceptions propagate: the primal point must work)."""
        if self._centre is None:
            with np.errstate(all="ignore"):
                y = self.phi(self.t0.copy())
            self.evaluations += 1
            self._centre = self._convert(y)
        return self._centre

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
        return np.spacing(np.asarray(mag).astype(dtype)).astype(np.float64)


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


def _finish_step(m: FiniteDifferenceMethod, prob: Problem, h: Any, upper: Any) -> Arr:
    h = np.broadcast_to(np.asarray(h, dtype=np.float64), prob.t_shape)
    h = np.minimum(h, upper)
    tiny = float(np.finfo(prob.dtype).tiny) ** (1.0 / (m.q + 1))
    lower = np.maximum(64.0 * np.spacing(np.abs(prob.t0)).astype(np.float64), tiny)
    h = np.maximum(h, lower)
    return _snap(prob, h)


def _shrink(prob: Problem, h: Arr, reach: int) -> Arr:
    """A smaller step for elements whose stencil left the domain (edges are often at 0)."""
    at0 = np.abs(prob.t0).astype(np.float64) / (2.0 * reach)
    smaller = np.asarray(h, dtype=np.float64) / SHRINK
    return np.where((at0 > 0) & (at0 < smaller), at0, smaller)


def _upper(m: FiniteDifferenceMethod, prob: Problem, h_cap: Any) -> Any:
    default = _default_step(m, prob.in_eps)
    return np.minimum(h_cap, min(m.max_range / m.max_offset, 1000.0 * default))


def _evaluate(prob: Problem, offsets: Any, h: Arr) -> Arr:
    rows = [prob.at(int(g), h) for g in offsets]
    return np.stack(rows)


# ------------------------------------------------------------------------------------------------
# step selection
# ------------------------------------------------------------------------------------------------


class _Step(NamedTuple):
    h: Arr  # S_t, in the problem's dtype
    c1: Any  # S_y (or None: not adapted)
    c2: Any


def choose_step(m: FiniteDifferenceMethod, prob: Problem, h_cap: Any) -> _Step:
    """The step (per element of ``t``) for ``m`` on ``prob``, and the error constants."""
    upper = _upper(m, prob, h_cap)
    bound = m.bound_estimator
    if bound is None:
        return _Step(_finish_step(m, prob, _default_step(m, prob.in_eps), upper), None, None)
    df, fmag, span = _magnitudes(bound, prob, h_cap)
    c1 = _ulp(fmag, prob.out_dtype) * m.f_error_mult * m.factor
    c2 = df * m.df_mult
    c1_t = _reduce(c1, prob.t_shape, np.max)
    c2_t = _reduce(c2, prob.t_shape, np.max)
    h = _optimal_step(m, c1_t, c2_t)
    ok = np.isfinite(h) & (h > 0) & (c1_t > 0) & (c2_t > 0)
    h = np.where(ok, h, _default_step(m, prob.in_eps))
    h = np.minimum(h, span / m.max_offset)
    return _Step(_finish_step(m, prob, h, upper), c1, c2)


def _magnitudes(b: FiniteDifferenceMethod, prob: Problem, h_cap: Any) -> tuple[Arr, Arr, Arr]:
    """``|f^(p)|`` (max over three centres) and ``max|f|``, per output element, and the span
    (per element of ``t``) over which ``f`` was found finite."""
    h = choose_step(b, prob, h_cap).h
    weights = b.neighbourhood_weights()
    assert prob.y_shape is not None or prob.centre() is not None
    done = np.zeros(prob.t_shape, dtype=bool)
    df: Arr | None = None
    fmag: Arr | None = None
    span = np.zeros(prob.t_shape, dtype=np.float64)
    for attempt in range(MAX_SHRINK + 1):
        ys = _evaluate(prob, b.grid, h)
        finite = np.isfinite(ys).all(axis=0)
        good = _reduce(finite, prob.t_shape, np.all)
        fm = np.abs(ys).max(axis=0)
        ys -= ys[len(b.grid) // 2]
        est = np.tensordot(weights, ys, axes=1)
        with np.errstate(all="ignore"):
            mag = np.abs(est).max(axis=0) / np.power(h.astype(np.float64), float(b.q))
        new = good & ~done
        if df is None or fmag is None:
            df, fmag = mag, fm
        else:
            df = np.where(new, mag, df)
            fmag = np.where(new, fm, fmag)
        span = np.where(new, h.astype(np.float64) * b.max_offset, span)
        done |= good
        if done.all() or attempt == MAX_SHRINK:
            break
        h = _snap(prob, np.where(done, h, _shrink(prob, h, b.max_offset)))
    assert df is not None and fmag is not None
    span = np.where(done, span, h.astype(np.float64) * b.max_offset / SHRINK)
    bad = ~np.broadcast_to(done, df.shape) if df.shape != done.shape else ~done
    df = np.where(bad, np.nan, df)
    fmag = np.where(bad, np.nan, fmag)
    return df, fmag, span


# ------------------------------------------------------------------------------------------------
# estimation
# ------------------------------------------------------------------------------------------------


def _estimate(
    m: FiniteDifferenceMethod, prob: Problem, h_cap: Any, step: Any
) -> tuple[Arr, F64, Arr, Arr]:
    if step is None:
        st = choose_step(m, prob, h_cap)
        h, c1, c2 = st.h, st.c1, st.c2
    else:
        h = _snap(prob, np.broadcast_to(np.asarray(step, dtype=np.float64), prob.t_shape))
        c1 = c2 = None
    value: Arr | None = None
    fmag: Arr | None = None
    used = h.copy()
    done = np.zeros(prob.t_shape, dtype=bool)
    for attempt in range(MAX_SHRINK + 1):
        ys = _evaluate(prob, m.points, h)
        finite = np.isfinite(ys).all(axis=0)
        good = _reduce(finite, prob.t_shape, np.all)
        fm = np.abs(ys).max(axis=0)
        ys -= ys[len(ys) // 2]
        with np.errstate(all="ignore"):
            est = np.tensordot(m.weights, ys, axes=1) / np.power(h.astype(np.float64), float(m.q))
        new = good & ~done
        if value is None or fmag is None:
            value, fmag = est, fm
        else:
            value = np.where(new, est, value)
            fmag = np.where(new, fm, fmag)
        used = np.where(new, h, used)
        done |= good
        if done.all() or step is not None or attempt == MAX_SHRINK:
            break
        h = _snap(prob, np.where(done, h, _shrink(prob, h, m.max_offset)))
    assert value is not None and fmag is not None
    c1m = _ulp(fmag, prob.out_dtype) * m.f_error_mult * m.factor
    c1 = c1m if c1 is None else np.fmax(c1, c1m)
    default_c2 = m.condition * m.df_mult
    c2 = default_c2 if c2 is None else np.where(np.isfinite(c2), c2, default_c2)
    error = np.asarray(_accuracy(m, used.astype(np.float64), c1, c2), dtype=np.float64)
    good_y = np.broadcast_to(done, value.shape) if value.shape != done.shape else done
    error = np.where(good_y & np.isfinite(error), error, np.inf)
    value = np.where(good_y, value, np.nan)
    return value, error, used, done


def run(m: FiniteDifferenceMethod, prob: Problem, step: Any = None) -> Estimate:
    """Estimate the ``q``-th derivative of ``prob`` with ``m``, falling back per element.

    Returns arrays: ``value`` and ``error`` of shape ``S_y`` (float64 or complex128, error
    float64), ``step`` of shape ``S_t``.
    """
    value, error, used, done = _estimate(m, prob, math.inf, step)
    if step is None and not done.all() and m.kind == "central":
        for kind in ("forward", "backward"):
            v2, e2, u2, d2 = _estimate(m.one_sided(kind), prob, math.inf, None)  # type: ignore[arg-type]
            new = d2 & ~done
            new_y = np.broadcast_to(new, value.shape) if value.shape != new.shape else new
            value = np.where(new_y, v2, value)
            error = np.where(new_y, e2, error)
            used = np.where(new, u2, used)
            done |= d2
            if done.all():
                break
    return Estimate(value, error, used)


def estimate_function(m: FiniteDifferenceMethod, f: Callable[..., Any], x: Any, step: Any) -> Estimate:
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
