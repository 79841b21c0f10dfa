"""Richardson extrapolation of a finite-difference method towards step zero.

Estimates at steps ``h, h*c, h*c**2, ...`` (``c = contract``) are combined in a Neville tableau
that cancels the leading error terms ``h**power, h**(2*power), ...``; the difference between
successive extrapolated values is the error estimate, and the best value seen is returned.

That difference alone says nothing about round-off: at a step the input cannot resolve
(``x + h == x``) every estimate is the same wrong number, and two equal wrong numbers differ by
0. So each estimate also carries the round-off of ``f`` it is made of (``f_error_mult * ulp(|f|)
/ h**q``, in the coarser precision of ``x`` and ``f(x)``), carried through the tableau; steps
below a few ulps of ``x`` are not taken, and the extrapolation stops once that round-off alone
exceeds the best error reached (smaller steps only add to it).

>>> import math
>>> from rruletest.finite_differences import central_fdm
>>> est = extrapolate_fdm(central_fdm(2, 1), math.sin, 1.0)
>>> abs(est.value - math.cos(1.0)) < 1e-13, est.error < 1e-8
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.finite_differences.kernels import RESOLUTION, ulp
from rruletest.finite_differences.methods import FiniteDifferenceMethod
from rruletest.finite_differences.problem import Estimate, abs_spacing, check_function, eps

__all__ = ["extrapolate_fdm"]


def _budget(initial_step: float, contract: float, power: int, rtol: float, x: Any) -> int:
    """Steps for ``initial_step * contract**k`` to reach ``(rtol * max(|x|, 1))**(1/power)``,
    with four more for the tableau to settle; at least 20, at most 2000."""
    with np.errstate(all="ignore"):
        size = float(np.nanmax(np.abs(np.asarray(x, dtype=complex)), initial=1.0))
    target = (max(rtol, 1e-300) * max(size, 1.0)) ** (1.0 / power)
    if not (math.isfinite(target) and target < initial_step):
        return 20
    levels = math.log(target / initial_step) / math.log(contract)
    return int(min(max(20, math.ceil(levels) + 4), 2000))


def _float_dtype(a: Any) -> np.dtype[Any]:
    """The real floating dtype of ``a``'s values (float64 for integers and other kinds)."""
    kind = np.asarray(a).dtype
    if kind.kind == "c":
        return np.dtype(np.asarray(a).real.dtype)
    return kind if kind.kind == "f" else np.dtype(np.float64)


class _RoundOff:
    """The round-off in an estimate at step ``h``: ``f``'s rounding near ``x`` amplified by the
    stencil (``f_error_mult * factor * ulp(|f(x)|) / h**q``), at least the rounding of the
    estimate itself; and which steps the input resolves (``x + h`` differs from ``x`` by at
    least ``RESOLUTION`` ulps)."""

    def __init__(self, fdm: FiniteDifferenceMethod, f: Callable[..., Any], x: Any) -> None:
        x_dtype = _float_dtype(x)
        with np.errstate(all="ignore"):
            try:
                y = np.asarray(f(x))
            except (ValueError, ArithmeticError):  # outside the domain at x: no f-term
                y = np.zeros(())
            numeric = y.dtype.kind in "biufc"
            mag = np.abs(y).astype(np.float64) if numeric else np.zeros(())
        y_dtype = _float_dtype(y) if y.dtype.kind in "fc" else x_dtype
        self.dtype = max((x_dtype, y_dtype), key=eps)  # the coarser precision
        self.q = fdm.q
        self.mult = fdm.f_error_mult * fdm.factor
        self.f_part = np.where(np.isfinite(mag), ulp(mag, self.dtype), 0.0) * self.mult
        t0 = np.asarray(np.asarray(x).real, dtype=x_dtype)
        self.resolution = np.multiply(abs_spacing(np.abs(t0)), RESOLUTION, dtype=np.float64)

    def of_f(self, h: float) -> Any:
        """The part that grows as the step falls: ``f``'s rounding over ``h**q``."""
        return self.f_part / h**self.q

    def at(self, h: float, value: Any) -> Any:
        """The round-off of an estimate ``value`` made at step ``h``."""
        return self.of_f(h) + ulp(np.abs(value), self.dtype) * self.mult

    def resolves(self, h: float) -> Any:
        """Where the input's precision resolves the step ``h``."""
        return h >= self.resolution


def extrapolate_fdm(
    fdm: FiniteDifferenceMethod,
    f: Callable[..., Any],
    x: Any,
    initial_step: float = 10.0,
    *,
    power: int | None = None,
    contract: float = 0.125,
    breaktol: float = math.inf,
    rtol: float | None = None,
    atol: float = 0.0,
    max_evals: int | None = None,
) -> Estimate:
    """The derivative of ``f`` at ``x`` by Richardson extrapolation of ``fdm`` in the step.

    Args:
        fdm: the base method (its adaptation is not used: each level has a fixed step).
        f: the function, as for ``fdm(f, x)``.
        x: the point (an array ``x`` is handled elementwise).
        initial_step: the first, largest step.
        power: the error of ``fdm`` is a series in ``h**power``; default 2 for symmetric grids
            (central methods), else 1.
        contract: the factor between successive steps, in ``(0, 1)``.
        breaktol: stop when the error grows by more than this factor.
        rtol: stop when the error is below ``max(rtol * |value|, atol)`` (default
            ``sqrt(eps)`` of the coarser precision of ``x`` and ``f(x)``).
        atol: see ``rtol``.
        max_evals: the largest number of steps tried; by default enough for the step to fall
            to where the error of ``fdm`` itself (about ``h**power`` relative to ``|x|``,
            or to 1) is below ``rtol``, and at least 20: a contraction close to 1 needs more
            steps than one far from it.

    Returns:
        ``Estimate(value, error, step)``: the best extrapolated value, its error estimate (the
        change from the previous extrapolation, at least the round-off carried through the
        tableau) and the smallest step that contributed to it. ``f`` is called once at ``x``
        to size its round-off.
    """
    if not isinstance(fdm, FiniteDifferenceMethod):
        raise TypeError(f"fdm must be a FiniteDifferenceMethod, got fdm={fdm!r}")
    check_function(f)
    if not 0 < contract < 1:
        raise ValueError(f"contract must be in (0, 1), got contract={contract!r}")
    if not (initial_step > 0 and math.isfinite(initial_step)):
        raise ValueError(f"initial_step must be positive, got initial_step={initial_step!r}")
    if power is None:
        power = 2 if fdm.grid == tuple(-g for g in reversed(fdm.grid)) else 1
    noise = _RoundOff(fdm, f, x)
    if rtol is None:
        rtol = math.sqrt(eps(noise.dtype))
    if max_evals is None:
        max_evals = _budget(initial_step, contract, power, rtol, x)
    if max_evals < 2:
        raise ValueError(f"max_evals must be at least 2, got max_evals={max_evals!r}")
    scalar = not isinstance(x, np.ndarray)
    h = float(initial_step)

    def level(h: float) -> tuple[Any, Any]:
        """The estimate at step ``h`` (NaN where ``x`` cannot resolve it) and its round-off."""
        value = np.asarray(fdm.estimate(f, x, step=h).value)
        with np.errstate(all="ignore"):
            value = np.where(noise.resolves(h), value, np.nan)
            return value, np.asarray(noise.at(h, value), dtype=np.float64)

    first, first_noise = level(h)
    tableau, tab_noise = [first], [first_noise]
    best = first
    best_err = np.full(first.shape, np.inf)
    best_step = np.full(first.shape, h)
    ratio = (1.0 / contract) ** power
    for _ in range(1, max_evals):
        h *= contract
        cur, cur_noise = level(h)
        row, row_noise = [cur], [cur_noise]
        for k in range(1, len(tableau) + 1):
            prev, cur = tableau[k - 1], row[k - 1]
            w = 1.0 / (ratio**k - 1.0)
            with np.errstate(all="ignore"):
                combined = cur + (cur - prev) * w
                # A bound on the round-off of the combination, from those of its parts.
                combined_noise = row_noise[k - 1] * (1.0 + w) + tab_noise[k - 1] * w
            keep = np.isfinite(prev)
            row.append(np.where(keep, combined, cur))
            row_noise.append(np.where(keep, combined_noise, row_noise[k - 1]))
        with np.errstate(all="ignore"):
            err = np.maximum(np.abs(row[-1] - tableau[-1]), row_noise[-1])  # NaN stays NaN
        better = np.isfinite(row[-1]) & (err < best_err)
        best = np.where(better, row[-1], best)
        best_step = np.where(better, h, best_step)
        grew = err > breaktol * best_err
        best_err = np.where(better, err, best_err)
        tableau, tab_noise = row, row_noise
        with np.errstate(all="ignore"):
            done = best_err <= np.maximum(rtol * np.abs(best), atol)
            # Smaller steps cannot beat the best error where round-off alone exceeds it.
            hopeless = (noise.of_f(h) >= best_err) | ~noise.resolves(h * contract)
        if np.all(done | grew | hopeless):
            break
    if scalar and best.ndim == 0:
        v = best[()]
        return Estimate(
            complex(v) if np.iscomplexobj(v) else float(v), float(best_err), float(best_step)
        )
    return Estimate(best, best_err, best_step)
