"""The noise of a function's own values, measured, so a mismatch it explains can say so.

Finite differences assume ``f`` is computed to about ``eps * |f|``. An iterative solver stopped
at a tolerance, a truncated series or a float32 kernel inside a float64 function is noisier:
its values scatter by ``sigma >> eps * |f|``, and a difference quotient over a step ``h``
scatters by ``sigma / h``. The tester then sees a mismatch that is the function's, not the
rule's.

``measure_noise`` estimates ``sigma`` at a point from a table of ``f`` along a direction,
``f(x + i * h * d)`` for ``i = 0..8``, at several scales ``h``: the ``k``-th differences of
a smooth function shrink like ``h**k``, those of noise do not, and for independent noise
``E[(diff_k f)^2] = C(2k, k) sigma^2``. The estimate at a scale is accepted when three
consecutive orders agree within a factor of 4 and the differences change sign (the test of
Moré and Wild's ECnoise); the level is the largest accepted over the scales and the output's
elements. ``NoiseLevel.note`` then says what to pass (``rtol=``, ``fdm=central_fdm(5, 1,
factor=...)``).

>>> import numpy as np
>>> level = measure_noise(np.sin, np.array([0.5, 1.0, 2.0]))
>>> level.noisy
False
>>> level = measure_noise(lambda v: np.sin(v.astype(np.float32)).astype(v.dtype), np.ones(3))
>>> level.noisy, 1e-9 < level.relative < 1e-6
(True, True)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.calculus import check_fdm
from rruletest.finite_differences.to_vec import to_vec
from rruletest.walk import leaves

__all__ = ["NOISY", "POINTS", "SCALES", "NoiseLevel", "amplification", "measure_noise"]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]

#: A level above this many ``eps`` of the output (relative to ``|f|``) is called noisy.
NOISY = 100.0
#: Table length (``i = 0..POINTS-1``) and the highest difference order used.
POINTS = 9
ORDERS = 6
#: Perturbation sizes, relative to ``max(|x|, 1)`` per coordinate (the first is near the steps
#: of the finite-difference methods on float32, the last below them on float64).
SCALES = (2.0**-6, 2.0**-10, 2.0**-14, 2.0**-18, 2.0**-24)


class NoiseLevel(NamedTuple):
    """The measured noise of ``f`` at a point.

    ``level``: the standard deviation of ``f``'s values (absolute, its worst element);
    ``relative``: ``level`` over ``f``'s scale there, ``|f| + |x f'|`` (rounding alone scatters
    ``f`` by ``eps`` of that); ``scale``: the relative perturbation at which it was seen (0 if
    at none); ``eps``: of ``f``'s output.
    """

    level: float
    relative: float
    scale: float
    eps: float

    @property
    def noisy(self) -> bool:
        """Noisier than rounding: above ``NOISY`` times ``eps`` relative to ``|f|``."""
        return self.relative > NOISY * self.eps

    def factor(self) -> float:
        """The ``factor=`` that makes a method's round-off model (``eps * |f|``) this noise."""
        return max(1.0, _round_up(self.relative / self.eps))

    def rtol(self) -> float:
        """A relative tolerance the finite differences can meet on this noise: a 5-point method
        with its step balanced against it errs by about ``relative ** (4/5)``; ten times that,
        rounded up to a power of ten."""
        return min(1.0, _round_up(10.0 * self.relative**0.8))

    def derivative_error(self, step: Any, fdm: Any = None) -> Any:
        """The error this noise puts in a first-derivative estimate taken with ``step`` (per
        element for an array of steps): ``sum(|weights|) * level / step``."""
        mult = check_fdm(fdm).f_error_mult
        with np.errstate(divide="ignore"):
            return mult * self.level / np.asarray(step, dtype=np.float64)

    def explains(self, mismatch: Any, step: Any, fdm: Any = None) -> bool:
        """Whether ``f`` is noisy and an absolute ``mismatch`` between a rule and an estimate
        taken with ``step`` is within ten times ``derivative_error`` (everywhere)."""
        if not self.noisy:
            return False
        bound = 10.0 * self.derivative_error(step, fdm)
        return bool(np.all(np.abs(np.asarray(mismatch, dtype=np.float64)) <= bound))

    def note(self) -> str:
        """A sentence for a report (say it next to a mismatch the noise can explain)."""
        if not self.noisy:
            return (
                f"f's own noise is at rounding level ({self.relative:.1e} of |f| + |x f'|, eps "
                f"{self.eps:.1e}): it does not explain a mismatch"
            )
        return (
            f"f is noisy: its values scatter by {self.relative:.1e} of |f| + |x f'| (measured at "
            f"relative perturbations of {self.scale:.1e}; rounding alone would be "
            f"{self.eps:.1e}), so finite differences of it are good to about {self.rtol():.0e}:"
            f" pass rtol={self.rtol():.0e}, or fdm=central_fdm(5, 1, factor={self.factor():.0e})"
            " so the steps allow for the noise"
        )


def _round_up(v: float) -> float:
    """The power of ten at or above ``v`` (``v > 0``)."""
    if not v > 0 or not math.isfinite(v):
        return 1.0
    return float(10.0 ** math.ceil(math.log10(v) - 1e-9))


def _gamma(k: int) -> float:
    return math.factorial(k) ** 2 / math.factorial(2 * k)


def _level_at(table: F64) -> F64:
    """Per output element (columns), the noise estimate of one table (rows: points), or NaN
    where no order passes the acceptance test."""
    diffs = [np.diff(table, n=k, axis=0) for k in range(1, ORDERS + 1)]
    sigma = np.array([np.sqrt(_gamma(k + 1) * np.mean(d * d, axis=0)) for k, d in enumerate(diffs)])
    changes = np.array(
        [np.any(d > 0, axis=0) & np.any(d < 0, axis=0) for d in diffs]
    )  # noise makes each order of differences change sign
    out = np.full(table.shape[1], np.nan)
    for k in range(ORDERS - 2):
        trio = sigma[k : k + 3]
        with np.errstate(divide="ignore", invalid="ignore"):
            close = np.max(trio, axis=0) <= 4.0 * np.min(trio, axis=0)
        ok = close & changes[k] & (np.min(trio, axis=0) > 0) & np.isnan(out)
        out[ok] = sigma[k][ok]
    return out


def _output_eps(y: Any) -> float:
    """``eps`` of the least precise floating leaf of ``y`` (float64 if none)."""
    found = [
        float(np.finfo(np.asarray(leaf).real.dtype).eps)
        for _, leaf in leaves(y)
        if np.asarray(leaf).dtype.kind in "fc"
    ]
    return max(found, default=float(np.finfo(np.float64).eps))


def measure_noise(
    f: Callable[..., Any],
    *xs: Any,
    direction: Sequence[float] | F64 | None = None,
    scales: Sequence[float] = SCALES,
) -> NoiseLevel:
    """Estimate the noise of ``f``'s values at ``xs`` (``POINTS`` evaluations per scale).

    Args:
        f: any function of ``xs`` with a numeric output (structures flattened by ``to_vec``).
        xs: the point.
        direction: a real vector of ``to_vec(xs)``'s length; by default a fixed pattern of
            signs (reproducible), each coordinate scaled by ``max(|x_i|, 1)``.
        scales: the relative perturbation sizes to try (those below 1024 ulps of the inputs'
            dtype are skipped: there the rounding of the inputs is what scatters).

    Returns:
        The ``NoiseLevel`` of the noisiest output element (``level`` 0 if none was seen).
    """
    v, rebuild = to_vec(xs, path="args")
    if direction is None:
        signs = np.where(np.arange(v.size) % 3 == 1, -1.0, 1.0)
        d = signs * np.maximum(np.abs(v), 1.0)
    else:
        d = np.asarray(direction, dtype=np.float64).reshape(v.shape)
    y = f(*xs)
    y0, _ = to_vec(y, path="output")
    eps = _output_eps(y)
    worst = NoiseLevel(0.0, 0.0, 0.0, eps)
    tiny = np.finfo(np.float64).tiny
    # Below ~1000 ulps of the inputs, rounding x + i * h * d to their dtype is what scatters.
    in_eps = max((float(np.finfo(dt).eps) for dt in rebuild.coord_dtypes), default=0.0)
    for s in scales:
        if s < 1024.0 * in_eps:
            continue
        rows = []
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                for i in range(POINTS):
                    rows.append(to_vec(f(*rebuild(v + (i * s) * d)), path="output")[0])
            table = np.array(rows, dtype=np.float64)
        except (ValueError, ArithmeticError):  # outside f's domain at this scale
            continue
        if table.shape != (POINTS, y0.size) or not np.all(np.isfinite(table)):
            continue
        with np.errstate(all="ignore"):
            # (scaled by a power of 2 to about 1, exactly: differences of values beyond 1e154
            # square to infinity)
            size = math.ldexp(1.0, math.frexp(float(np.max(np.abs(table))))[1])
            sigma = _level_at(table / size) * size
            # Relative to f's scale near x, |f| + |x f'| (rounding x scatters f by eps |x f'|).
            slope = np.abs(table[-1] - table[0]) / ((POINTS - 1) * s)
            rel = sigma / np.maximum(np.max(np.abs(table), axis=0) + slope, tiny)
        rel[~np.isfinite(rel)] = np.nan
        if np.all(np.isnan(rel)):
            continue
        j = int(np.nanargmax(rel))
        if rel[j] > worst.relative:
            worst = NoiseLevel(float(sigma[j]), float(rel[j]), float(s), eps)
    return worst


#: How close (in ulps of its own dtype) a low-precision ``f``'s float64 values must be to its
#: own for the float64 ones to stand in, and at most (relative and absolute): 1000 ulps of
#: float16 would be most of the value.
CLOSE_ULPS = 1000.0
CLOSE_AT_MOST = 1e-2


def agrees(y: Any, y64: Any) -> bool:
    """Whether ``y64``, ``f`` at float64 copies of its low-precision inputs (a float64 array
    or numpy scalar), is ``f``'s value ``y`` within ``CLOSE_ULPS`` of ``y``'s dtype: then the
    float64 copies may stand in for the point (no other function is computed there).

    >>> x = np.float32([0.5, 2.0])
    >>> agrees(np.sin(x), np.sin(x.astype(np.float64))), agrees(x, x.astype(np.float64) + 1e-3)
    (True, False)
    """
    if not isinstance(y, np.ndarray | np.generic) or not isinstance(y64, np.ndarray | np.generic):
        return _agree_leaves(y, y64)
    low, high = np.asarray(y), np.asarray(y64)
    if high.dtype != np.float64 or high.shape != low.shape or low.dtype.kind != "f":
        return False
    tol = min(CLOSE_ULPS * float(np.finfo(low.dtype).eps), CLOSE_AT_MOST)
    return bool(np.allclose(high, low, rtol=tol, atol=tol, equal_nan=True))


def _agree_leaves(y: Any, y64: Any) -> bool:
    """``agrees`` for outputs with structure (``torch.sort``'s ``(values, indices)``): the
    same leaves at the same paths, each float leaf agreeing (``agrees``), each other leaf
    (integer indices) equal, and at least one low-precision float leaf."""
    try:
        a, b = list(leaves(y, root="y")), list(leaves(y64, root="y"))
    except Exception:
        return False
    if (
        len(a) != len(b)
        or len(a) < 2
        or any(pa != pb for (pa, _), (pb, _) in zip(a, b, strict=True))
    ):
        return False
    low = False
    for (_, u), (_, v) in zip(a, b, strict=True):
        if not isinstance(u, np.ndarray | np.generic) or not isinstance(v, np.ndarray | np.generic):
            return False
        if u.dtype.kind == "f":
            if not agrees(u, v):
                return False
            low = low or u.dtype.itemsize < 8
        elif u.dtype != v.dtype or not np.array_equal(u, v):
            return False
    return low


def low_precision(y: Any) -> bool:
    """Whether ``y`` (an array, a number or a structure of them) has a float16/float32 leaf.

    >>> low_precision((np.ones(2, np.float32), np.arange(2))), low_precision(np.ones(2))
    (True, False)
    """
    if isinstance(y, np.ndarray | np.generic):
        return y.dtype.kind == "f" and y.dtype.itemsize < 8
    try:
        return any(low_precision(v) for _, v in leaves(y, root="y") if v is not y)
    except Exception:
        return False


def amplification(y: Arr, y64: Arr, epsilon: float) -> float:
    """How many times its dtype's rounding a low-precision ``f`` accumulates, measured on its
    output against the float64 one (at least 1): ``||y - y64|| / (eps ||y64||)``.

    A correct pullback of an accumulating ``f`` (a cumulative sum, a long dot product)
    accumulates rounding as ``f`` does: absolute, not relative to each element (an element
    near a cancellation carries the rounding of the large sums it came from). Its elements
    are then allowed this many times ``rel`` of their root mean square (``floor``): float32
    ``cumsum`` of 5000 values measures about 9, elementwise functions below 1 (no floor).

    >>> x = np.random.default_rng(0).uniform(0.2, 0.9, 5000).astype(np.float32)
    >>> y64 = np.cumsum(x.astype(np.float64))
    >>> round(amplification(np.cumsum(x), y64, float(np.finfo(np.float32).eps)))
    9
    >>> amplification(np.exp(x), np.exp(x.astype(np.float64)), float(np.finfo(np.float32).eps))
    1.0
    """
    with np.errstate(all="ignore"):
        diff = (y.astype(np.float64) - y64).reshape(-1)
        ref = y64.reshape(-1)
        finite = np.isfinite(diff) & np.isfinite(ref)
        scale = epsilon * float(np.sqrt(np.einsum("i,i->", ref[finite], ref[finite])))
        d = diff[finite]
        ratio = float(np.sqrt(np.einsum("i,i->", d, d))) / scale if scale > 0 else 1.0
    return max(1.0, float(ratio))
