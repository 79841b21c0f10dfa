"""Finite-difference methods: a grid of points, a derivative order, and how to pick the step.

A method estimates the ``q``-th derivative of ``f`` at ``x`` from ``f(x + g_i * h)`` on its
integer grid ``g``. The weights are exact rationals (from findiff, cached); points whose weight
is zero are never evaluated. The step ``h`` is chosen per element, balancing truncation against
round-off (see ``steps``), and every estimate carries an error estimate.

>>> import math
>>> m = central_fdm(5, 1)
>>> m
FiniteDifferenceMethod(order=5, q=1, grid=(-2, -1, 0, 1, 2), adapt=1, max_range=inf)
>>> abs(m(np.sin, 1.0) - math.cos(1.0)) < 1e-13
True
>>> est = m.estimate(np.exp, np.array([0.0, 1.0]))
>>> bool(np.all(np.abs(est.value - np.exp([0.0, 1.0])) <= est.error))
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences._stencils import stencil
from rruletest.finite_differences.estimation import estimate_function
from rruletest.finite_differences.kernels import Kind
from rruletest.finite_differences.problem import Estimate

__all__ = [
    "FiniteDifferenceMethod",
    "backward_fdm",
    "central_fdm",
    "default_fdm",
    "forward_fdm",
]


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value!r}")
    return int(value)


def _check_positive(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a positive number, got {name}={value!r}") from None
    if not v > 0:
        raise ValueError(f"{name} must be positive, got {name}={value!r}")
    return v


class FiniteDifferenceMethod:
    """A finite-difference method on an integer grid for the ``q``-th derivative.

    Args:
        offsets: distinct integers ``g_i``; ``f`` is evaluated at ``x + g_i * h``.
        q: the order of the derivative (``q >= 0``, fewer than ``len(offsets)``; ``q = 0``
            interpolates).
        adapt: levels of step adaptation. ``0`` uses a fixed default step (which assumes the
            ``p``-th derivative is about ``condition``); ``k`` estimates that derivative with a
            method of ``p + 2`` points adapted ``k - 1`` times.
        condition: assumed size of the ``p``-th derivative when it is not estimated.
        factor: multiplies the assumed round-off of ``f`` (raise it for noisy functions).
        max_range: largest distance from ``x`` at which ``f`` may be evaluated.

    Raises:
        ValueError: for a bad grid or order, echoing the values (``p=2 <= q=2``).
    """

    __slots__ = ("_adapt", "_condition", "_factor", "_grid", "_max_range", "_q")

    def __init__(
        self,
        offsets: Sequence[int] | npt.ArrayLike,
        q: int,
        *,
        adapt: int = 1,
        condition: float = 10.0,
        factor: float = 1.0,
        max_range: float = math.inf,
    ) -> None:
        try:
            raw = list(np.asarray(offsets).ravel().tolist())
        except (TypeError, ValueError):
            raise TypeError(
                f"offsets must be a sequence of integers, got offsets={offsets!r}"
            ) from None
        if not all(isinstance(g, int | float) and float(g).is_integer() for g in raw):
            raise ValueError(f"offsets must be integers, got offsets={offsets!r}")
        grid = tuple(sorted(int(g) for g in raw))
        if len(set(grid)) != len(grid):
            raise ValueError(f"offsets must be distinct, got offsets={offsets!r}")
        q = _check_int("q", q, 0)
        if len(grid) <= q:
            raise ValueError(
                "a finite-difference method needs more grid points than the derivative order, "
                f"got p={len(grid)} <= q={q} (offsets={offsets!r})"
            )
        self._grid = grid
        self._q = q
        self._adapt = _check_int("adapt", adapt, 0)
        self._condition = _check_positive("condition", condition)
        self._factor = _check_positive("factor", factor)
        self._max_range = _check_positive("max_range", max_range)

    # -- parameters ---------------------------------------------------------------------------
    @property
    def grid(self) -> tuple[int, ...]:
        """The integer offsets, ascending."""
        return self._grid

    @property
    def q(self) -> int:
        """The order of the derivative."""
        return self._q

    @property
    def p(self) -> int:
        """The number of grid points (the order of the method)."""
        return len(self._grid)

    order = p

    @property
    def adapt(self) -> int:
        """Levels of step adaptation."""
        return self._adapt

    @property
    def condition(self) -> float:
        """Assumed size of the ``p``-th derivative when it is not estimated."""
        return self._condition

    @property
    def factor(self) -> float:
        """Multiplier of the assumed round-off error of ``f``."""
        return self._factor

    @property
    def max_range(self) -> float:
        """Largest distance from ``x`` at which ``f`` is evaluated."""
        return self._max_range

    @property
    def kind(self) -> Kind:
        """``"forward"`` (no negative offset), ``"backward"`` (no positive one) or ``"central"``."""
        if self._grid[0] >= 0:
            return "forward"
        if self._grid[-1] <= 0:
            return "backward"
        return "central"

    @property
    def coefficients(self) -> tuple[Fraction, ...]:
        """The exact weights, one per grid point (zeros included)."""
        return stencil(self._grid, self._q)

    # -- derived constants (cached per parameter set) -------------------------------------------
    @property
    def points(self) -> npt.NDArray[np.int64]:
        """The offsets actually evaluated (those with a non-zero weight)."""
        return _constants(self._grid, self._q)[0]

    @property
    def weights(self) -> npt.NDArray[np.float64]:
        """The weights of ``points`` as floats."""
        return _constants(self._grid, self._q)[1]

    @property
    def f_error_mult(self) -> float:
        """``sum(|c_i|)``: how round-off in ``f`` is amplified."""
        return _constants(self._grid, self._q)[2]

    @property
    def df_mult(self) -> float:
        """``sum(|c_i * g_i**p|) / p!``: how the ``p``-th derivative enters the truncation error."""
        return _constants(self._grid, self._q)[3]

    @property
    def max_offset(self) -> int:
        """``max(|g_i|)`` over the whole grid."""
        return _max_offset(self._grid)

    @property
    def bound_estimator(self) -> FiniteDifferenceMethod | None:
        """The method (``p + 2`` points, derivative ``p``) that sizes the ``p``-th derivative."""
        if self._adapt == 0:
            return None
        return _build(
            self.kind,
            self.p + 2,
            self.p,
            adapt=self._adapt - 1,
            condition=self._condition,
            factor=self._factor,
            max_range=self._max_range,
        )

    def neighbourhood_weights(self) -> npt.NDArray[np.float64]:
        """Weights (3 x p) estimating the ``q``-th derivative at ``x - h``, ``x``, ``x + h``."""
        return _neighbourhood(self._grid, self._q)

    def one_sided(self, kind: Kind) -> FiniteDifferenceMethod:
        """The same method (points, derivative, adaptation) on a one-sided or central grid."""
        return _build(
            kind,
            self.p,
            self._q,
            adapt=self._adapt,
            condition=self._condition,
            factor=self._factor,
            max_range=self._max_range,
        )

    # -- use ----------------------------------------------------------------------------------
    def __call__(self, f: Callable[..., Any], x: Any, *, step: Any = None) -> Any:
        """The estimate of the ``q``-th derivative of ``f`` at ``x`` (elementwise for arrays),
        NaN where it has no reliable one (an infinite error, which ``estimate`` also returns):
        ``forward_fdm(5, 1)(np.sqrt, 0.0)`` gave 962, its error infinite but unseen."""
        est = self.estimate(f, x, step=step)
        value, error = est.value, est.error
        if isinstance(value, np.ndarray):
            bad = ~np.isfinite(np.asarray(error, dtype=np.float64))
            return np.where(bad, np.nan, value).astype(value.dtype) if bad.any() else value
        if not math.isfinite(float(error)):
            if isinstance(value, complex | np.complexfloating):
                return type(value)(complex(math.nan, math.nan))
            return type(value)(math.nan) if isinstance(value, float | np.floating) else math.nan
        return value

    def estimate(self, f: Callable[..., Any], x: Any, *, step: Any = None) -> Estimate:
        """``Estimate(value, error, step)`` of the ``q``-th derivative of ``f`` at ``x``.

        ``x`` may be a number or an array (a list of numbers is taken as ``np.asarray(x)``);
        for an array, ``f`` must act elementwise (its output broadcasts from ``x``'s shape) and
        each element gets its own step and error. A complex ``x`` is stepped along the real
        axis. ``step`` (positive and finite, a number or one per element) fixes the step instead
        of adapting it.

        Raises:
            TypeError: ``f`` is not callable, or ``x`` is not numeric.
            ValueError: ``step`` is zero, negative or not finite.
        """
        return estimate_function(self, f, x, step)

    # -- value object -------------------------------------------------------------------------
    def _key(self) -> tuple[Any, ...]:
        return (self._grid, self._q, self._adapt, self._condition, self._factor, self._max_range)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FiniteDifferenceMethod):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = ""
        if self._condition != 10.0:
            extra += f", condition={self._condition:g}"
        if self._factor != 1.0:
            extra += f", factor={self._factor:g}"
        return (
            f"FiniteDifferenceMethod(order={self.p}, q={self._q}, grid={self._grid}, "
            f"adapt={self._adapt}{extra}, max_range={self._max_range:g})"
        )


@functools.cache
def _constants(
    grid: tuple[int, ...], q: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], float, float]:
    coefs = stencil(grid, q)
    p = len(grid)
    keep = [i for i, c in enumerate(coefs) if c != 0]
    points = np.array([grid[i] for i in keep], dtype=np.int64)
    weights = np.array([float(coefs[i]) for i in keep], dtype=np.float64)
    f_error_mult = float(sum(abs(c) for c in coefs))
    df_mult = float(sum(abs(c * Fraction(g) ** p) for c, g in zip(coefs, grid, strict=True)))
    df_mult /= math.factorial(p)
    points.setflags(write=False)
    weights.setflags(write=False)
    return points, weights, f_error_mult, df_mult


@functools.cache
def _max_offset(grid: tuple[int, ...]) -> int:
    return max(abs(g) for g in grid)


@functools.cache
def _neighbourhood(grid: tuple[int, ...], q: int) -> npt.NDArray[np.float64]:
    rows = [[float(c) for c in stencil(tuple(g - s for g in grid), q)] for s in (-1, 0, 1)]
    out = np.array(rows, dtype=np.float64)
    out.setflags(write=False)
    return out


def _grid(kind: Kind, p: int) -> tuple[int, ...]:
    if kind == "forward":
        return tuple(range(p))
    if kind == "backward":
        return tuple(range(-p + 1, 1))
    if p % 2:
        return tuple(range(-(p // 2), p // 2 + 1))
    return tuple(range(-(p // 2), 0)) + tuple(range(1, p // 2 + 1))


@functools.cache
def _build(kind: Kind, p: int, q: int, **kw: Any) -> FiniteDifferenceMethod:
    return FiniteDifferenceMethod(_grid(kind, p), q, **kw)


def _builder(kind: Kind, name: str, p: Any, q: Any, kw: dict[str, Any]) -> FiniteDifferenceMethod:
    p = _check_int("p", p, 1)
    q = _check_int("q", q, 0)
    if p <= q:
        raise ValueError(
            f"{name}(p, q) needs more grid points than the derivative order: p={p} <= q={q}"
        )
    return FiniteDifferenceMethod(_grid(kind, p), q, **kw)


def central_fdm(p: int, q: int, **kwargs: Any) -> FiniteDifferenceMethod:
    """A central method of ``p`` points for the ``q``-th derivative (grid symmetric about 0).

    Keyword arguments (``adapt``, ``condition``, ``factor``, ``max_range``) are those of
    ``FiniteDifferenceMethod``.

    >>> central_fdm(4, 1).grid
    (-2, -1, 1, 2)
    >>> central_fdm(2, 2)
    Traceback (most recent call last):
    ...
    ValueError: central_fdm(p, q) needs more grid points than the derivative order: p=2 <= q=2
    """
    return _builder("central", "central_fdm", p, q, kwargs)


def forward_fdm(p: int, q: int, **kwargs: Any) -> FiniteDifferenceMethod:
    """A forward method of ``p`` points (offsets ``0 .. p-1``) for the ``q``-th derivative.

    >>> forward_fdm(3, 1).grid
    (0, 1, 2)
    """
    return _builder("forward", "forward_fdm", p, q, kwargs)


def backward_fdm(p: int, q: int, **kwargs: Any) -> FiniteDifferenceMethod:
    """A backward method of ``p`` points (offsets ``-(p-1) .. 0``) for the ``q``-th derivative.

    >>> backward_fdm(3, 1).grid
    (-2, -1, 0)
    """
    return _builder("backward", "backward_fdm", p, q, kwargs)


@functools.cache
def default_fdm() -> FiniteDifferenceMethod:
    """The method testers use unless told otherwise: ``central_fdm(5, 1)``, adapted once.

    >>> default_fdm()
    FiniteDifferenceMethod(order=5, q=1, grid=(-2, -1, 0, 1, 2), adapt=1, max_range=inf)
    """
    return central_fdm(5, 1)
