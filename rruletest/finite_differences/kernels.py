"""The engine's shared parts: its constants, the method it needs, and its elementwise kernels.

The engine runs in stages, each a module using only the ones below it:

- ``problem``: the function of a real array ``t`` being differentiated, and its evaluations;
- ``kernels`` (here): limits, round-off model, step clipping and snapping, weighted sums;
- ``rows``: a stencil pass over its rows, blockwise, the rows' memory reused for the results;
- ``steps``: the step per element (``choose_step``), adapted to the function;
- ``attempt``: one estimate at chosen (or given) steps, its error, and a re-check at another step;
- ``estimation``: ``run``, which checks suspect elements and falls back per element, and
  ``estimate_function``, the front door of ``FiniteDifferenceMethod.estimate`` (with the
  scalar fast path of ``scalar``).

Every kernel is elementwise (work on a subset gives those elements, bit for bit, what a full
pass would); ``elementwise`` runs one in cache-sized blocks on large problems. float32 inputs,
steps, values and ``max|f|`` stay float32 (all exact there); blocks go to float64 only for the
weighted sums, the error model's products and powers, and the estimates.

>>> ipow(np.array([2.0]), -3).tolist()
[0.125]
>>> float(ulp(np.array(1.0), np.dtype(np.float32))) == 4 * 2.0**-23  # float32: a few ulps
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.problem import (
    Problem,
    abs_spacing,
    chunked,
    reduce_to,
    tiny,
)

__all__ = [
    "CHECK_FACTOR",
    "FLAT",
    "GROW",
    "LOW_PRECISION_ULPS",
    "MAX_GROW",
    "MAX_SHRINK",
    "RESOLUTION",
    "UNRESOLVED",
    "Evaluation",
    "Kind",
    "Stencil",
    "absmax",
    "accuracy",
    "cap_or_none",
    "combine_kernel",
    "default_step",
    "elementwise",
    "evaluation",
    "finish_step",
    "finisher",
    "ipow",
    "lower_step",
    "mag_kernel",
    "merge_into",
    "optimal_step",
    "restricted",
    "scaled",
    "scatter",
    "shrink",
    "snap",
    "straddle_kernel",
    "straddle_mask",
    "tiny_step",
    "ulp",
    "upper_step",
]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]

Kind = Literal["central", "forward", "backward"]


class Stencil(Protocol):
    """What the engine needs of a method (``FiniteDifferenceMethod`` is one)."""

    @property
    def grid(self) -> tuple[int, ...]: ...
    @property
    def q(self) -> int: ...
    @property
    def p(self) -> int: ...
    @property
    def adapt(self) -> int: ...
    @property
    def condition(self) -> float: ...
    @property
    def factor(self) -> float: ...
    @property
    def max_range(self) -> float: ...
    @property
    def kind(self) -> Kind: ...
    @property
    def points(self) -> npt.NDArray[np.int64]: ...
    @property
    def weights(self) -> npt.NDArray[np.float64]: ...
    @property
    def f_error_mult(self) -> float: ...
    @property
    def df_mult(self) -> float: ...
    @property
    def max_offset(self) -> int: ...
    @property
    def bound_estimator(self) -> Stencil | None: ...
    def neighbourhood_weights(self) -> npt.NDArray[np.float64]: ...
    def one_sided(self, kind: Kind) -> Stencil: ...
    def __hash__(self) -> int: ...


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


def ipow(h: Arr, k: int) -> F64:
    """``h ** k`` for a small integer ``k`` by multiplication (``np.power`` is slow)."""
    h = np.asarray(h, dtype=np.float64)
    out = np.ones_like(h) if k == 0 else h.copy()
    for _ in range(abs(k) - 1):
        out *= h
    if k < 0:
        np.reciprocal(out, out=out)
    return out


def absmax(ys: Arr) -> Arr:
    """``max(|ys|, axis=0)`` without a temporary of the size of ``ys``, for real values."""
    out: Arr = (
        np.abs(ys).max(axis=0)
        if np.iscomplexobj(ys)
        else np.maximum(ys.max(axis=0), -ys.min(axis=0))
    )
    return out


def ulp(mag: Arr, dtype: np.dtype[Any]) -> F64:
    """The round-off of a value of ``dtype`` and size ``mag`` (as float64): its spacing, times
    ``LOW_PRECISION_ULPS`` below float64 (numpy's float32 kernels err by up to a few ulps)."""
    spacing = abs_spacing(np.asarray(mag).astype(dtype, copy=False))
    if np.dtype(dtype).itemsize < 8:  # (in float64 at once: exact, one pass)
        return np.multiply(spacing, LOW_PRECISION_ULPS, dtype=np.float64)
    out: F64 = spacing.astype(np.float64, copy=False)
    return out


def optimal_step(m: Stencil, c1: Any, c2: Any) -> Any:
    if m.q == 0:  # interpolation: no round-off amplified, the smallest resolvable step is best
        return np.zeros(np.shape(np.asarray(c1) * 1.0))[()]
    return (m.q / (m.p - m.q) * np.divide(c1, c2)) ** (1.0 / m.p)


def scaled(c: Any, h: Any, k: int) -> Any:
    """``c * h**k``, through logarithms where the power overflows (a step of ``1e85`` at
    ``1e100``); ``c == 0`` gives 0, not ``0 * inf``."""
    with np.errstate(all="ignore"):
        out = c * ipow(h, k)
        if np.all(np.isfinite(out)):
            return out
        logs = np.exp(np.log(np.abs(c)) + k * np.log(np.asarray(h, dtype=np.float64)))
    return np.where(np.isfinite(out), out, np.where(c == 0, 0.0, logs))


def accuracy(m: Stencil, h: Any, c1: Any, c2: Any) -> Any:
    """The error bound ``c1 * h**-q + c2 * h**(p - q)`` (see ``scaled``)."""
    return scaled(c1, h, -m.q) + scaled(c2, h, m.p - m.q)


@functools.cache
def default_step(m: Stencil, eps: float) -> float:
    c1 = eps * m.f_error_mult * m.factor
    c2 = m.condition * m.df_mult
    return float(optimal_step(m, c1, c2))


def snap(prob: Problem, h: Arr) -> Arr:
    """Round ``h`` so that ``t0 + h`` is exactly ``t0`` plus the returned step."""
    hd = np.asarray(h).astype(prob.dtype)
    s = (prob.t0 + hd) - prob.t0
    ok = np.isfinite(s) & (s > 0)
    return s if ok.all() else np.where(ok, s, hd).astype(prob.dtype, copy=False)


def tiny_step(m: Stencil, prob: Problem) -> float:
    """No step below the smallest normal number, nor so small that ``h**(q+1)`` underflows,
    nor below a few times the rounding of the function's own input (``prob.resolution``)."""
    underflow: float = tiny(np.dtype(np.float64)) ** (1.0 / (m.q + 1))
    return max(tiny(prob.dtype), underflow, RESOLUTION * prob.resolution)


def lower_step(m: Stencil, prob: Problem) -> F64:
    """The smallest step the input's precision resolves (a few ulps of ``t0``)."""
    spacing = np.multiply(abs_spacing(prob.t0), RESOLUTION, dtype=np.float64)
    out: F64 = np.maximum(spacing, tiny_step(m, prob))
    return out


def upper_step(m: Stencil, prob: Problem, h_cap: Any) -> Any:
    """Steps stay within ``max_range`` and within 1000 default steps (relative to ``|t0|``)."""
    default = default_step(m, prob.in_eps)
    up = np.maximum(prob.abs_t0, 1.0) * (1000.0 * default)
    up = np.minimum(up, m.max_range / m.max_offset)
    if prob.room is not None:
        up = np.minimum(up, prob.room / m.max_offset)
    return up if no_cap(h_cap) else np.minimum(up, h_cap)


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
    # (float32 values enter float64 arithmetic without a conversion pass of their own)
    up = np.maximum(np.abs(t0), 1.0, dtype=np.float64) * scale
    if range_cap != np.inf:
        up = np.minimum(up, range_cap)
    if cap is not None:
        up = np.minimum(up, cap)
    h = np.minimum(h, up)
    lower = np.maximum(np.multiply(abs_spacing(t0), RESOLUTION, dtype=np.float64), tiny)
    coarse = h < lower
    h = np.maximum(h, lower)
    hd = h.astype(dtype, copy=False)
    snapped = (t0 + hd) - t0
    ok = np.isfinite(snapped) & (snapped > 0)
    if ok.all():
        return snapped, coarse
    return np.where(ok, snapped, hd).astype(dtype, copy=False), coarse


def finisher(m: Stencil, prob: Problem) -> Callable[..., tuple[Arr, Arr]]:
    return _finisher_for(m, prob.dtype, prob.in_eps, tiny_step(m, prob))


@functools.cache
def _finisher_for(
    m: Stencil, dtype: np.dtype[Any], eps: float, tiny: float
) -> Callable[..., tuple[Arr, Arr]]:
    return functools.partial(
        _finish_kernel,
        scale=1000.0 * default_step(m, eps),
        range_cap=m.max_range / m.max_offset,
        tiny=tiny,
        dtype=dtype,
    )


def no_cap(h_cap: Any) -> bool:
    """Whether the step cap ``h_cap`` (a number or an array) is infinite everywhere."""
    if type(h_cap) is float:  # the common case, without numpy
        return math.isinf(h_cap)
    return bool(np.all(np.isinf(h_cap)))


def cap_or_none(h_cap: Any) -> Any:
    return None if no_cap(h_cap) else h_cap


def elementwise(prob: Problem, kernel: Callable[..., Any], *args: Any) -> Any:
    """Run an elementwise kernel in cache-sized blocks when the problem is elementwise."""
    return chunked(prob.t_shape, kernel, *args) if prob.elementwise else kernel(*args)


def finish_step(m: Stencil, prob: Problem, h: Any, h_cap: Any) -> tuple[Arr, Arr]:
    """Clip ``h`` to ``[lower_step, upper_step]`` (and ``h_cap``) and snap it; also where the
    lower limit bound."""
    if prob.room is not None:
        h_cap = np.minimum(h_cap, prob.room / m.max_offset)
    h_arr, coarse = elementwise(prob, finisher(m, prob), h, prob.t0, cap_or_none(h_cap))
    return np.asarray(h_arr), np.asarray(coarse)


def shrink(prob: Problem, h: Arr, reach: int, nearest_bad: Arr) -> Arr:
    """A smaller step for elements whose stencil left the domain.

    The stencil stays inside the distance at which the nearest bad point was (``nearest_bad``
    grid units), and inside half the distance to 0 (domains often end there).
    """
    h = np.asarray(h, dtype=np.float64)
    inside = h * np.maximum(nearest_bad - 1.0, 0.5) / (2.0 * reach)
    smaller = np.minimum(inside, h / 2.0)
    at0 = prob.abs_t0 / (2.0 * reach)
    return np.where((at0 > 0) & (at0 < smaller), at0, smaller)


class Evaluation(NamedTuple):
    good: Arr  # S_t: every point finite
    nearest_bad: Arr | None  # S_t: smallest |offset| of a non-finite point (None if all good)


def evaluation(prob: Problem, offsets: Any, rows: list[Arr], good_y: Arr) -> Evaluation:
    good = reduce_to(good_y, prob.t_shape, np.all)
    if good.all():
        return Evaluation(good, None)
    nearest = np.full(prob.t_shape, np.inf)
    for g, y in zip(offsets, rows, strict=True):
        bad = reduce_to(~np.isfinite(y), prob.t_shape, np.any)
        nearest = np.where(bad, np.minimum(nearest, abs(int(g))), nearest)
    return Evaluation(good, nearest)


def combine_kernel(
    rows: list[Arr], h: Arr, *, weights: Arr, q: int, anchor: int, scale: bool = True
) -> tuple[Arr, Arr, Arr]:
    """Weighted sums of the rows (after subtracting the anchor row, which makes cancellation
    free) over ``h**q``; also ``max|f|`` and whether every value is finite."""
    # (``np.array`` of same-shaped rows is ``np.stack``, without its Python overhead)
    ys = np.array(rows, dtype=np.result_type(rows[0].dtype, np.float64))
    if ys.dtype.kind == "f" and ys.ndim > 1:
        # max|y| over the rows in their own precision (the largest of float32 values is one
        # of them: exact, half the size), without the stack.
        fm = np.abs(rows[0]).astype(np.result_type(*rows), copy=False)
        for r in rows[1:]:
            np.maximum(fm, np.abs(r), out=fm)
    else:
        fm = absmax(ys)
    # For real values max|y| is finite exactly when every value is (max propagates NaN); the
    # modulus of a finite complex number can overflow, so complex values are checked directly.
    good = np.isfinite(ys).all(axis=0) if np.iscomplexobj(ys) else np.isfinite(fm)
    # A copy of the anchor row: subtracting a view of ``ys`` from ``ys`` makes numpy take its
    # slow path for overlapping operands (ten times slower).
    ys -= rows[anchor]
    est = np.dot(weights, ys.reshape(len(ys), -1)).reshape(weights.shape[:-1] + ys.shape[1:])
    if q == 0:  # interpolation weights sum to 1, not 0: the anchor's value comes back
        est += rows[anchor]
    if scale:
        est *= ipow(h, -q)
    return est, fm, good


def mag_kernel(
    rows: list[Arr], h: Arr, *, weights: Arr, q: int, anchor: int
) -> tuple[Arr, Arr, Arr]:
    """``max|f^(q)|`` over the neighbourhood, ``max|f|`` and whether every value is finite.

    For real values the largest weighted sum is scaled by ``h**-q`` once: scaling by a positive
    number is monotonic in floating point too, so this equals the largest of the scaled sums
    (the modulus of a complex number is not scaled exactly, so complex sums are scaled first).
    """
    real = not np.iscomplexobj(rows[0])
    est, fm, good = combine_kernel(rows, h, weights=weights, q=q, anchor=anchor, scale=not real)
    mag = absmax(est)
    if real:
        scale = ipow(h, -q)
        if np.all(np.isfinite(scale)):
            mag *= scale
        else:  # the power overflowed (a tiny step): no 0 * inf
            mag = np.asarray(scaled(mag, h, -q))
    return mag, fm, good


def merge_into(old: Arr | None, new: Arr, take: Arr, first: bool) -> Arr:
    return new if old is None or first else np.where(take, new, old)


def restricted(prob: Problem, mask: Arr) -> tuple[npt.NDArray[np.intp], Problem] | None:
    """The flat indices of the ``mask``ed elements and the problem on them alone, or None when
    the problem has no subsets or every element is masked (then work on the whole problem).
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


def straddle_kernel(t0: Arr, h: Arr, *, reach: float) -> tuple[Arr]:
    """Where a stencil reaching ``reach * h`` from ``t0`` reaches across 0."""
    a = np.abs(t0)  # (compared exactly in its own precision)
    return ((a > 0) & (a <= h * reach),)


def straddle_mask(prob: Problem, h: Arr, reach: int) -> Arr:
    kernel = functools.partial(straddle_kernel, reach=float(reach))
    return np.asarray(elementwise(prob, kernel, prob.t0, h)[0])
