"""The adjoint identity ``<xbar, v> == <ybar, J v>``, vectorised, sharp, and localised.

For inputs too large for a dense vjp a rule's cotangent ``xbar`` is checked along random
directions ``v``. Each direction's *gap* ``<ybar, J v> - <xbar, v>`` is estimated by the engine
as the derivative at ``t = 0`` of

    psi(t) = <ybar, f(z(t))> - <xbar, z(t)>,    z(t) = x + t * v  (rounded to x's dtype),

so the gap of a correct rule is 0 up to the engine's error estimate: the points really used
(``z(t)``, rounding included) enter both terms alike, and every direction gets its own adapted
step in one vectorised engine run. The tolerance is statistical, not a worst-case sum: the
engine's error of the gap plus ``ROUND_Z`` standard deviations of a correct ``xbar``'s rounding
(``rel * ||xbar * v||_2``; for a float32 ``f`` that accumulates rounding, such as a cumsum,
amplified as measured on ``f``'s output). Directions are random signs (``|v_i| = 1``: no
element hides behind a small weight), more of them at smaller sizes (``directions``).

When a gap fails, ``finite_differences.localise`` finds the wrong coordinates by group testing
(directions restricted to halves of their support, recursively: ``O(k log n)`` gap estimates
for ``k`` wrong coordinates), from the gaps ``gaps`` gives.

>>> x = np.linspace(-1.0, 1.0, 1000)
>>> ybar = np.ones(1000)
>>> good = ybar * np.cos(x)
>>> chk = AdjointCheck(None, np.sin, (x,), good, ybar, rng=np.random.default_rng(0))
>>> bool(chk.run().ok)
True
>>> bad = good.copy(); bad[700] *= 1.001
>>> chk = AdjointCheck(None, np.sin, (x,), bad, ybar, rng=np.random.default_rng(0))
>>> bool(chk.run().ok)
False
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.dense import check_fdm, working_dtype
from rruletest.finite_differences.estimation import run
from rruletest.finite_differences.line import Line, dot
from rruletest.finite_differences.problem import Estimate, Problem, eps
from rruletest.finite_differences.ties import tie_groups
from rruletest.finite_differences.to_vec import to_vec

__all__ = [
    "ERROR_FACTOR",
    "ROUND_ULPS",
    "ROUND_Z",
    "AdjointCheck",
    "Gaps",
    "Located",
    "directions",
]

F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[Any]
Index = npt.NDArray[np.intp]

#: Multiples of the engine's error estimate allowed in a gap (as the dense comparison allows).
ERROR_FACTOR = 10.0
#: Standard deviations of a correct cotangent's rounding allowed in a gap.
ROUND_Z = 6.0
#: Rounding of a correct cotangent's elements, in units of its dtype's epsilon.
ROUND_ULPS = 2.0
#: The round-off model of ``psi`` (a sum over every output) is scaled up by this much: its
#: rounding grows with the number of terms, not only with ``|psi|``.
ROUND_OFF_SCALE = 32.0
#: psi is offset by this many times ``||ybar * f(x)||_2`` (see ``AdjointCheck``).
OFFSET = 8.0
#: Groups followed at once while localising (more wrong regions are reported as one).
MAX_GROUPS = 16


def directions(n: int) -> int:
    """How many random directions ``n`` input coordinates get: 2 at a million, more below
    (each costs one adapted directional derivative, about 15 primal calls).

    >>> [directions(n) for n in (10, 10**4, 10**6)]
    [7, 4, 2]
    """
    return max(2, min(8, 8 - int(math.log10(max(n, 1)))))


class Gaps(NamedTuple):
    """Gaps ``<ybar, J v> - <xbar, v>`` with their engine error estimates and tolerances."""

    gap: F64
    error: F64
    tolerance: F64
    lhs: F64  # <xbar, v>

    @property
    def ok(self) -> bool:
        return bool(np.all(np.abs(self.gap) <= self.tolerance))


class Located(NamedTuple):
    """Coordinates found wrong alone (``coords``), their numerical ``(J^T ybar)_i`` and error;
    groups (index arrays) whose gap fails without one half failing alone: ``regions`` where
    both halves' estimates could show it, else ``unresolved`` (kinks or noise of ``f``)."""

    coords: Index
    value: F64
    error: F64
    regions: list[Index]
    unresolved: list[Index]


class AdjointCheck:
    """The adjoint identity for ``f`` at ``xs`` with the rule's ``xbar`` and the ``ybar`` it
    was given (coordinate vectors in ``to_vec`` layout, or values structured like ``xs``/``y``).

    ``rel`` is the relative rounding allowed per element of ``xbar`` (default ``ROUND_ULPS``
    epsilons of the least precise input dtype); ``atol`` an absolute allowance per gap.
    """

    def __init__(
        self,
        fdm: Any,
        f: Callable[..., Any],
        xs: Sequence[Any],
        xbar: Any,
        ybar: Any,
        *,
        rng: np.random.Generator,
        rel: float | None = None,
        atol: float = 0.0,
        count: int | None = None,
        promote: bool = True,
    ) -> None:
        self.fdm = check_fdm(fdm)
        self.f = f
        self.xs = tuple(xs)
        y = f(*self.xs)
        yv, yback = to_vec(y, path="output")
        self.line = Line(f, self.xs, yv.size)
        self.v, self.back = self.line.v, self.line.back
        self.n = self.v.size
        self.xbar = _coords(xbar, self.n, lambda t: self.back.tangent_vec(t, "xbar"))
        self.yback = yback
        self.ybar = _coords(ybar, yv.size, lambda t: yback.tangent_vec(t, "ybar"))
        self.back_dtype = self.line.dtype  # the inputs' own (``dtype`` is float64 if promoted)
        self.line.out_dtype = working_dtype(yback.coord_dtypes)
        self.rel = ROUND_ULPS * eps(self.line.dtype) if rel is None else rel
        #: Absolute rounding per element of a correct ``xbar`` beyond ``rel * |xbar_i|`` (the
        #: rounding a low-precision ``f`` accumulates, ``noise.amplification``); 0 for most.
        self.floor = 0.0
        #: Per coordinate, rounding measured on the rule's own arithmetic (``allow_rounding``).
        self.spread: F64 | None = None
        self.atol = atol
        self.count = directions(self.n) if count is None else count
        self.signs = rng.integers(0, 2, size=(self.count, self.n), dtype=np.int8) * 2 - 1
        if promote:
            self.line.promote(y)
            amp = self.line.amplification
            if rel is None and amp > 1.0:
                self.floor = self.rel * amp * _norm(self.xbar) / math.sqrt(max(self.n, 1))
        self._y0: F64 | None = None  # f's kept output coordinates at x (``_vector_jvp``)
        #: ``J v`` output by output along whole directions, by direction (``output_jvp``).
        self._jvps: dict[int, Estimate] = {}
        #: Kept output coordinates at which ``ybar`` was zeroed (``without_outputs``).
        self.void: Index | None = None
        # psi's rounding comes from every term of <ybar, f>, however much they cancel: its
        # values carry an offset of that size, so the engine's round-off model sees it.
        # Output coordinates not finite at x with a zero ybar take no part in <ybar, f>
        # (0 * NaN is NaN): the tester zeroes ybar there, and psi reads only the others.
        finite = np.isfinite(yv)
        self.keep: npt.NDArray[np.intp] | None = None
        if finite.any() and not finite.all() and not np.any(self.ybar[~finite]):
            self.keep = np.flatnonzero(finite)
        self.offset = 0.0
        self.offset = OFFSET * _norm(self._kept(self.ybar) * self._kept(yv))
        self._directions: dict[int, Arr] = {}
        #: After ``move_ties_together``: coordinates ordered with equal values adjacent, and
        #: each coordinate's group of equal values (``localise`` keeps groups whole).
        self.tie_order: Index | None = None
        self.tie_group: Index | None = None

    def _kept(self, yv: Arr) -> Arr:
        return yv if self.keep is None else yv[self.keep]

    @property
    def calls(self) -> int:
        """Evaluations of ``f``, the one at ``x`` included."""
        return 1 + self.line.calls

    @property
    def array(self) -> Arr | None:
        """The one real float array argument the points are built in (float64 if promoted)."""
        return self.line.array

    @property
    def points(self) -> tuple[Any, ...]:  # the arguments f is evaluated at (xs, or widened)
        return self.line.args

    @property
    def promoted(self) -> bool:
        return self.line.promoted

    @property
    def dtype(self) -> np.dtype[Any]:
        """The points' working dtype."""
        return self.line.dtype

    @property
    def out_dtype(self) -> np.dtype[Any]:
        return self.line.out_dtype

    def gaps(self, groups: Sequence[tuple[int, Index | None]], resolve: float = math.inf) -> Gaps:
        """The gaps of direction ``k`` restricted to ``index`` (all coordinates for None), one
        per ``(k, index)``, in one engine run; a void estimate, or one too uncertain to tell a
        gap of size ``resolve``, again output by output (``_vector_jvp``) where that is sharper."""
        parts = [(self.direction(k), idx) for k, idx in groups]

        def psi_of(sel: Sequence[tuple[F64, Index | None]]) -> Callable[[Arr], F64]:
            def psi(t: Arr) -> F64:
                out = np.empty(len(sel))
                for r, (d, idx) in enumerate(sel):
                    out[r] = self._psi(float(t[r]), d, idx)
                return out

            return psi

        def restrict(index: Index) -> tuple[Callable[[Arr], Any], Arr, Arr]:
            sel = [parts[i] for i in index.tolist()]
            return psi_of(sel), np.zeros(index.size, dtype=self.dtype), centre[index]

        base = self._psi(0.0, None, None)
        centre = np.full(len(parts), base)
        prob = Problem(
            psi_of(parts),
            np.zeros(len(parts), dtype=self.dtype),
            centre=centre,
            out_dtype=self.out_dtype,
            restrict=restrict,
        )
        est = run(self.fdm, prob, check_all=True, c1_scale=ROUND_OFF_SCALE)
        lhs = np.array([self.inner(k, idx) for k, idx in groups])
        gap = np.asarray(est.value, dtype=np.float64) - lhs
        error = np.array(est.error, dtype=np.float64)
        for r in np.flatnonzero(void := ~np.isfinite(error)).tolist():
            value, error[r] = self._vector_jvp(*groups[r])
            gap[r] = value - lhs[r]
        tol = np.array([self.tolerance(e, idx) for e, (_, idx) in zip(error, groups, strict=True)])
        for r in np.flatnonzero(~void & ~(tol < resolve)).tolist():  # (void ones: done above)
            value, e = self._vector_jvp(*groups[r])
            if e < error[r]:
                gap[r], error[r], tol[r] = value - lhs[r], e, self.tolerance(e, groups[r][1])
        return Gaps(gap, error, tol, lhs)

    def direction(self, k: int) -> Arr:
        """Direction ``k`` (random signs) in the dtype of the points, made once."""
        found = self._directions.get(k)
        if found is None:
            dt = self.array.dtype if self.array is not None else np.float64
            found = self._directions[k] = self.signs[k].astype(dt)
        return found

    def inner(self, k: int, idx: Index | None) -> float:
        """``<xbar, v>`` for direction ``k`` restricted to ``idx``."""
        sel = slice(None) if idx is None else idx
        return dot(self.xbar[sel], self.direction(k)[sel])

    def tolerance(self, error: float, idx: Index | None) -> float:
        """The gap allowed on ``idx`` (all coordinates for None) whose estimate has the error
        ``error``: ``ERROR_FACTOR`` errors, ``ROUND_Z`` standard deviations of the rounding a
        correct ``xbar`` carries there, and ``atol``."""
        return float(ERROR_FACTOR * error + ROUND_Z * self._rounding(idx) + self.atol)

    def _rounding(self, idx: Index | None) -> float:
        """The standard deviation of ``<err, v>`` on ``idx`` for a correct ``xbar``'s rounding
        ``err`` (``rel * |xbar_i|`` and ``element_rounding``), whatever its correlation."""
        xb = self.xbar if idx is None else self.xbar[idx]
        sp = self.spread if self.spread is None or idx is None else self.spread[idx]
        terms = [self.rel * _norm(xb), math.sqrt(xb.size) * self.floor]
        return math.hypot(*terms, 0.0 if sp is None else _norm(sp))  # (no squares to overflow)

    def element_rounding(self, idx: Index) -> F64:
        """The rounding allowed each coordinate at ``idx`` beyond ``rel * |xbar_i|``: the
        amplification ``floor`` and what the rule's own arithmetic showed (``spread``)."""
        out: F64 = np.hypot(self.floor, 0.0 if self.spread is None else self.spread[idx])
        return out

    def allow_rounding(self, xbar_wide: Any, cap: float) -> float:
        """Allow each coordinate the rounding the rule's own arithmetic showed: ``|xbar -
        xbar_wide|``, where ``xbar_wide`` is the rule's cotangent computed in float64 (see
        ``rruletest.testers._float64``), at most ``cap * |xbar_i|`` (what a dense
        comparison at relative tolerance ``cap`` would accept of it). Returns the largest
        allowance in ulps of ``|xbar_i|`` (0 if none)."""
        wide = _coords(xbar_wide, self.n, lambda t: self.back.tangent_vec(t, "xbar"))
        with np.errstate(invalid="ignore"):
            diff = np.abs(self.xbar - wide)
            spread = np.where(np.isfinite(diff), np.minimum(diff, cap * np.abs(self.xbar)), 0.0)
        self.spread = spread
        ulps = spread / np.maximum(np.abs(self.xbar) * eps(self.back_dtype), np.finfo(float).tiny)
        return float(ulps.max(initial=0.0))

    def by_outputs(self, k: int) -> tuple[float, float, float]:
        """Direction ``k``'s gap, its error and tolerance, with ``J v`` estimated output by
        output (``_vector_jvp``): where every step of ``psi`` (a sum over all outputs) crosses
        kinks of some output (``sort`` of many close values), a central difference of the sum
        converges to a slope of the wider neighbourhood, not to the one at ``x``. NaN and an
        infinite error where it cannot be estimated so (a point below float64)."""
        value, error = self._vector_jvp(k, None)
        return value - self.inner(k, None), error, self.tolerance(error, None)

    def without_outputs(self, void: Index, ybar: F64, xbar: Any) -> AdjointCheck:
        """This check for the cotangent pair ``ybar`` (zero at the kept outputs ``void``) and
        ``xbar`` (the rule's cotangent for it): ``J v`` output by output at outputs with a
        zero ``ybar`` weighs nothing, so where the engine cannot estimate ``J v`` at a few
        outputs (``sort`` of a million values, whose closest entries cross at every step),
        the identity still checks the rule on all the others. The directions and the ``J v``
        already estimated are shared."""
        other = copy.copy(self)
        other.ybar = ybar
        other.xbar = _coords(xbar, self.n, lambda t: self.back.tangent_vec(t, "xbar"))
        other.void = void
        other.spread = None
        if self._y0 is not None:
            other.offset = OFFSET * _norm(self._kept(ybar) * self._y0)
        return other

    def retolerate(self, found: Gaps) -> Gaps:
        """``found`` (the gaps of ``run``) with tolerances for the allowances as they are now."""
        return found._replace(tolerance=np.array([self.tolerance(e, None) for e in found.error]))

    def move_ties_together(self) -> int:
        """Make every direction move each group of exactly equal elements of the input array
        together (``ties``); returns how many elements are tied (0: nothing changed), and
        ``tie_order``/``tie_group`` then keep groups whole in ``localise``."""
        found = None if self.array is None else tie_groups(self.array.reshape(-1))
        if found is None:
            return 0
        self.tie_order, self.tie_group, lead, tied = found
        self.signs[:, self.tie_order] = self.signs[:, lead]
        self._directions.clear()
        self._jvps.clear()
        return tied

    def _psi(self, t: float, d: Arr | None, idx: Index | None) -> float:
        """``<ybar, f(z)>`` at ``z = x + t * d`` on ``idx`` (rounded to x's dtype), less
        ``<xbar, z - x - t * d>``: the rounding of the point, so that the derivative at 0 is
        ``<ybar, J d>`` along the displacement really made."""
        yv, rounding = self._output_at(t, d, idx)
        return dot(self._kept(self.ybar), self._kept(yv)) - rounding + self.offset

    def _output_at(self, t: float, d: Arr | None, idx: Index | None) -> tuple[Arr, float]:
        """``Line.output`` with this check's ``xbar`` weighing the rounding of the point."""
        return self.line.output(t, d, idx, self.xbar)

    def _vector_jvp(self, k: int, idx: Index | None) -> tuple[float, float]:
        """``<ybar, J d>`` along direction ``k`` on ``idx`` from the engine's estimate of
        ``J d`` itself, output by output, and its error (``sum |ybar_k| * error_k`` over the
        outputs ``ybar`` weighs): where ``psi``, a sum over every output, has no step that
        suits them all (``sort`` of 1e5 values crosses some tie at every step but one far
        below the gaps between neighbours), each output of ``J d`` settles at its own
        (``converge.converge``). Float64 points only (the rounding of a lower-precision point
        would differ output by output); else NaN with an infinite error (the gap stays
        unchecked)."""
        if self.dtype != np.float64:
            return math.nan, math.inf
        est = self.output_jvp(k) if idx is None else self._output_jvp(k, idx)
        ybar = self._kept(self.ybar)
        used = ybar != 0
        if not used.all():
            ybar, est = ybar[used], Estimate(est.value[used], est.error[used], None)
        error = dot(np.abs(ybar), np.asarray(est.error, dtype=np.float64))
        value = dot(ybar, np.asarray(est.value, dtype=np.float64))
        return value, (error if math.isfinite(error) else math.inf)

    def output_jvp(self, k: int) -> Estimate:
        """``J v`` along whole direction ``k``, output by output over the kept outputs
        (float64 points; estimated once)."""
        found = self._jvps.get(k)
        if found is None:
            found = self._jvps[k] = self._output_jvp(k, None)
        return found

    def _output_jvp(self, k: int, idx: Index | None) -> Estimate:
        d = self.direction(k)

        def phi(t: Arr) -> F64:
            yv, _ = self._output_at(float(t.reshape(-1)[0]), d, idx)
            return np.array(self._kept(yv), dtype=np.float64)

        if self._y0 is None:
            y0, _ = self._output_at(0.0, None, None)
            self._y0 = np.array(self._kept(y0), dtype=np.float64)
        prob = Problem(phi, np.zeros(1), centre=self._y0, out_dtype=self.out_dtype)
        est = run(self.fdm, prob, check_all=True)
        return Estimate(
            np.asarray(est.value, dtype=np.float64), np.asarray(est.error, dtype=np.float64), None
        )

    # -- the check and the localisation -------------------------------------------------------

    def run(self) -> Gaps:
        """The gaps of all directions on all coordinates."""
        return self.gaps([(k, None) for k in range(self.count)])


def _norm(a: F64) -> float:
    """``|a|_2``, scaled where the sum of squares overflows (finite values beyond 1e154)."""
    sq = dot(a, a)
    if math.isfinite(sq) or not np.isfinite(big := float(np.max(np.abs(a), initial=0.0))):
        return math.sqrt(sq)
    return big * math.sqrt(dot(a / big, a / big))


def _coords(value: Any, size: int, convert: Callable[[Any], F64]) -> F64:
    """A coordinate vector as it is (a real array of ``size``), else ``convert(value)``."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size == size:
        return value.astype(np.float64).reshape(-1)
    return convert(value)
