"""Low-precision values made float64: a rule's own rounding, and exact points for ``f``.

**The rule's rounding** (``wide_cotangents``): what a low-precision rule's own arithmetic puts
into its cotangents, measured.

The adjoint identity allows each element of a correct ``xbar`` a few ulps of rounding, which
keeps it sharp enough to see one wrong element among a million. A float32 pullback that sums
thousands of terms into one element (``np.add.at`` for a running maximum, a scatter for
indexing) rounds far more than that, though it is right: its gap then fails by a few ulps of
``|xbar|`` spread over those elements. What the rule's arithmetic rounds is measured on the
rule itself: it is called again at float64 copies of its low-precision arguments, with a
float64 ``ybar``, and ``|xbar - xbar_64|`` per element is what its float32 arithmetic lost. A
rule wrong in both precisions is as wrong in ``xbar_64``: the difference stays its rounding.

**Points for the numerical references** (``wide_point``): finite differences of a float32
``f`` round every perturbed point, and where ``f`` has kinks (``median``, ``sort``: entries
that cross) the steps that rounding forces reach across them: a dense vjp of a float32 sort
of 1000 draws took a rule 1% off for right. Where ``f`` accepts float64 copies of its array
arguments and gives float64 values close to its own (``noise.agrees``), the dense vjp and the
jvp are taken at those copies, as the adjoint identity evaluates such an ``f``. Elements the
engine cannot estimate there (an infinite error: at float64 precision its error model sees
the poles of ``inv`` of a matrix of condition 1e3 that float32's round-off hides) take the
estimate at the low-precision point instead (``void_from``).

>>> import numpy as np
>>> from rruletest import NoTangent
>>> def rrule_f(f, x):
...     return np.cumsum(x), lambda yb: (NoTangent(), np.cumsum(yb[::-1])[::-1].astype(x.dtype))
>>> x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
>>> wide = wide_cotangents(rrule_f, np.cumsum, (x,), {}, np.ones(5, np.float32), [0])
>>> wide[0].dtype, wide[0].tolist()
(dtype('float64'), [5.0, 4.0, 3.0, 2.0, 1.0])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.finite_differences.noise import agrees, low_precision
from rruletest.tangents import NO_TANGENT, unthunk
from rruletest.testers._findings import out_of_tolerance
from rruletest.walk import map_leaves

__all__ = [
    "Allowance",
    "frule_allowance",
    "rounding_allowance",
    "rrule_allowance",
    "rule_cotangents",
    "void_from",
    "wide_cotangents",
    "wide_point",
]


def _widened(value: Any, changed: list[bool], numbers: bool = True) -> Any:
    """``value`` with its float16/float32 arrays (and numbers, unless ``numbers`` is false) as
    float64 (``changed`` records whether any was)."""

    kinds = np.ndarray | np.floating if numbers else np.ndarray

    def leaf(_path: Any, v: Any) -> Any:
        if isinstance(v, kinds) and v.dtype in (np.float16, np.float32):
            changed.append(True)
            return v.astype(np.float64) if isinstance(v, np.ndarray) else np.float64(v)
        return v

    return map_leaves(leaf, value, thunks=False)


def wide_cotangents(
    rrule_f: Any,
    f: Any,
    primals: Sequence[Any],
    kwargs: dict[str, Any],
    ybar: Any,
    positions: Sequence[int],
) -> tuple[Any, ...] | None:
    """The rule's cotangents for the arguments at ``positions``, from a call at float64 copies
    of the low-precision primals with a float64 ``ybar``; None when nothing is low precision or
    the call does not give cotangents (it raises, or returns something else)."""
    changed: list[bool] = []
    try:
        wide = [_widened(p, changed) for p in primals]
        ybar64 = _widened(unthunk(ybar), changed)
    except Exception:  # a measurement only: the checks already made stand as they are
        return None
    if not changed:
        return None
    return rule_cotangents(rrule_f, f, wide, kwargs, ybar64, positions)


def rule_cotangents(
    rrule_f: Any,
    f: Any,
    primals: Sequence[Any],
    kwargs: dict[str, Any],
    ybar: Any,
    positions: Sequence[int],
) -> tuple[Any, ...] | None:
    """The rule's cotangents (unthunked) for the arguments at ``positions`` from a fresh call
    of the rule at ``primals`` with ``ybar``; None when the call does not give them (it raises,
    or returns another shape of result). Its floating-point warnings are the first call's."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = rrule_f(f, *primals, **kwargs)
            if not isinstance(res, tuple) or len(res) != 2 or not callable(res[1]):
                return None
            out = res[1](ybar)
            if not isinstance(out, tuple) or len(out) != len(primals) + 1:
                return None
            return tuple(unthunk(out[i + 1]) for i in positions)
    except Exception:  # a measurement only: the checks already made stand as they are
        return None


def _wide_already(p: Any) -> bool:
    """Whether ``p`` is a number or an array that ``wide_point`` leaves as it is."""
    if type(p) is np.ndarray:
        return p.dtype.kind not in "f" or p.dtype.itemsize >= 8
    return isinstance(p, int | float | complex | np.generic)


def wide_point(
    g: Any, primals: Sequence[Any], dots: Sequence[Any], y: Any
) -> tuple[list[Any], list[Any]] | None:
    """float64 copies of the low-precision arrays in ``primals`` and their tangents ``dots``
    when ``g`` takes them and returns float64 values that ``noise.agrees`` with ``y`` (its value
    at ``primals``); None otherwise (no low-precision array, ``g`` raises, or differs).
    Numbers stay as they are: their scalar finite differences need no such help."""
    if all(_wide_already(p) for p in primals):  # the common case, without a walk
        return None
    changed: list[bool] = []
    try:
        wide = [_widened(p, changed, numbers=False) for p in primals]
        if not changed:
            return None
        if not low_precision(y):
            return None
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            high = g(*wide)
        if not agrees(y, high):
            return None
        return wide, [_widened(unthunk(d), [], numbers=False) for d in dots]
    except Exception:  # the float32 point stays the reference
        return None


def void_from(wide: Any, low: Callable[[], Any]) -> Any:
    """The estimate ``wide`` (at float64 copies), with ``low()``'s value and error (at the
    low-precision point, computed only if needed) where ``wide``'s error is not finite; for
    array and number estimates (other structures are left as they are).

    >>> from rruletest.finite_differences import Estimate
    >>> wide = Estimate(np.array([1.0, 2.0]), np.array([1e-9, np.inf]), None)
    >>> out = void_from(wide, lambda: Estimate(np.array([1.1, 2.1]), np.array([0.1, 0.2]), None))
    >>> out.value.tolist(), out.error.tolist()
    ([1.0, 2.1], [1e-09, 0.2])
    """
    err = wide.error
    if not isinstance(err, np.ndarray | np.generic | float):
        return wide
    void = ~np.isfinite(np.asarray(err, dtype=np.float64))
    if not void.any():
        return wide
    other = low()
    if np.shape(other.error) != void.shape or np.shape(other.value) != np.shape(wide.value):
        return wide
    value = np.where(void, np.asarray(other.value), np.asarray(wide.value))
    error = np.where(void, np.asarray(other.error, dtype=np.float64), np.asarray(err))
    if not isinstance(wide.value, np.ndarray):
        return wide._replace(value=value[()], error=error[()])
    return wide._replace(value=value, error=error)


#: The rounding a backward-stable low-precision rule may put into each input: its result is
#: then exact at inputs this many ulps away (``rounding_allowance``).
INPUT_ULPS = 1.0

#: Up to this many low-precision input coordinates, ``rounding_allowance`` moves each alone
#: (one float64 call of the rule each); beyond it, all at once along ``PROBES`` random signs.
ALLOWANCE_COORDINATES = 512
#: Random sign moves of every input coordinate at once, and the multiple of their root mean
#: square change per element allowed (``rounding_allowance`` beyond ``ALLOWANCE_COORDINATES``).
PROBES = 8
PROBE_Z = 6.0


def rounding_allowance(
    call: Callable[[list[Any]], Sequence[Any] | None],
    primals: Sequence[Any],
    positions: Sequence[int],
) -> list[np.ndarray] | None:
    """How far a low-precision rule's results may be from the exact ones although it is right.

    A float32 rule computes in float32 from float32 inputs: at best (backward stability) its
    result is the exact one at inputs each rounded by a few ulps. Where the result is
    ill-conditioned in its inputs (the gradient ``2 (x - mean(x)) / (n - 1)`` of ``var`` at
    values near 1000 that differ by 0.01), that alone moves it by far more than float32's
    tolerance: torch's and autograd's right ``var`` rules failed by 0.4%. Per element, this is
    ``sum_j |r(x + INPUT_ULPS * eps * |x_j| e_j) - r(x)|`` over the low-precision real array
    coordinates ``j`` of the arguments at ``positions``, with the rule ``r`` evaluated by
    ``call`` at float64 copies of ``primals`` (it returns one array per compared result, or
    None). Beyond ``ALLOWANCE_COORDINATES`` coordinates (one call each would cost too much),
    every coordinate moves at once along ``PROBES`` random signs, and ``PROBE_Z`` times the
    root mean square change per element stands for the sum: the rounding of a float32 rule
    that cancels large terms (``x * sum(x)`` at values near 100) is a sum of that many random
    roundings. None when there is nothing to measure or a call fails. A wrong rule is off by
    far more than its inputs' rounding explains, except where float32 cannot resolve the
    result anyway.
    """
    wide = list(primals)
    low: list[tuple[int, float]] = []
    for i in positions:
        p = primals[i]
        if isinstance(p, np.ndarray) and p.dtype in (np.float16, np.float32):
            wide[i] = p.astype(np.float64)
            low.append((i, float(np.finfo(p.dtype).eps)))
    if not low:
        return None
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = _arrays(call(wide))
            if base is None:
                return None
            if sum(primals[i].size for i, _ in low) > ALLOWANCE_COORDINATES:
                return _probed(call, wide, low, base)
            total = [np.zeros(b.shape) for b in base]
            for i, e in low:
                x = wide[i]
                for j in np.ndindex(x.shape):
                    if x[j] == 0.0 or not np.isfinite(x[j]):
                        continue
                    moved = list(wide)
                    xj = x.copy()
                    xj[j] += INPUT_ULPS * e * abs(x[j])
                    moved[i] = xj
                    out = _arrays(call(moved))
                    if out is None or [o.shape for o in out] != [b.shape for b in base]:
                        return None
                    for t, o, b in zip(total, out, base, strict=True):
                        t += np.abs(o - b)
    except Exception:  # a measurement only: the comparison stands as it is
        return None
    return [np.where(np.isfinite(t), t, 0.0) for t in total]


def _probed(
    call: Callable[[list[Any]], Sequence[Any] | None],
    wide: list[Any],
    low: list[tuple[int, float]],
    base: list[np.ndarray],
) -> list[np.ndarray] | None:
    """``rounding_allowance`` from ``PROBES`` moves of every coordinate at once, each by
    ``INPUT_ULPS`` ulps with a random sign (the same signs every time: a measurement)."""
    rng = np.random.default_rng(0)
    squares = [np.zeros(b.shape) for b in base]
    for _ in range(PROBES):
        moved = list(wide)
        for i, e in low:
            x = wide[i]
            signs = rng.integers(0, 2, size=x.shape) * 2.0 - 1.0
            moved[i] = x + signs * (INPUT_ULPS * e) * np.abs(x)
        out = _arrays(call(moved))
        if out is None or [o.shape for o in out] != [b.shape for b in base]:
            return None
        for t, o, b in zip(squares, out, base, strict=True):
            t += (o - b) ** 2
    total = [PROBE_Z * np.sqrt(t / PROBES) for t in squares]
    return [np.where(np.isfinite(t), t, 0.0) for t in total]


def _arrays(results: Sequence[Any] | None) -> list[np.ndarray] | None:
    """The results as real float64 arrays (numbers as 0-d), or None if one is not."""
    if results is None:
        return None
    out = []
    for r in results:
        r = unthunk(r)
        if not isinstance(r, np.ndarray | np.floating | float) or np.iscomplexobj(r):
            return None
        out.append(np.asarray(r, dtype=np.float64))
    return out


def rrule_allowance(
    rrule_f: Any, f: Any, primals: Sequence[Any], kwargs: dict[str, Any], ybar: Any,
    positions: Sequence[int],
) -> list[np.ndarray] | None:  # fmt: skip
    """``rounding_allowance`` of the cotangents at ``positions`` (``ybar`` made float64)."""
    ybar64 = _widened(unthunk(ybar), [])

    def call(ps: list[Any]) -> Sequence[Any] | None:
        return rule_cotangents(rrule_f, f, ps, kwargs, ybar64, positions)

    return rounding_allowance(call, primals, positions)


def frule_allowance(
    frule_f: Any, f: Any, primals: Sequence[Any], kwargs: dict[str, Any],
    tangents: Sequence[Any], positions: Sequence[int],
) -> list[np.ndarray] | None:  # fmt: skip
    """``rounding_allowance`` of the output tangent (one per argument, float64 copies). The
    tangents round like the inputs: a right float32 frule is exact at both moved by an ulp
    (``x * sum(xdot)`` carries the rounding of the float32 sum of the tangents)."""
    n = len(primals)
    dots = [unthunk(t) for t in tangents]

    def call(ps: list[Any]) -> list[Any] | None:
        wide = [_widened(d, []) for d in ps[n:]]
        return [frule_f((NO_TANGENT, *wide), f, *ps[:n], **kwargs)[1]]

    return rounding_allowance(call, [*primals, *dots], [*positions, *(n + i for i in positions)])


class Allowance:
    """The rounding a right low-precision rule may show (``_float64.rounding_allowance``),
    measured once, and only where a comparison would fail without it."""

    def __init__(self, measure: Callable[[], list[Any] | None]) -> None:
        self.measure = measure
        self.found: list[Any] | None = None
        self.done = False

    def widened(self, report: Any, path: str, actual: Any, ref: Any, rtol: float, tol: Any,
                k: int) -> Any:  # fmt: skip
        """``tol`` plus result ``k``'s allowance, when that changes which elements fail
        (with a note saying how much was allowed); ``tol`` itself otherwise."""
        if not _low_precision_array(actual):  # (the cheaper test first: float64 has none)
            return tol
        bad = out_of_tolerance(actual, ref, rtol, tol)
        if bad is None or not bad.any():
            return tol
        if not self.done:
            self.done, self.found = True, self.measure()
        if self.found is None or np.shape(self.found[k]) != np.shape(bad):
            return tol
        wider = np.asarray(tol, dtype=np.float64) + self.found[k]
        still = out_of_tolerance(actual, ref, rtol, wider)
        if still is None or int(still.sum()) == int(bad.sum()):
            return tol
        report.note(
            f"{path}: the {np.asarray(unthunk(actual)).dtype} rounding of the inputs alone moves "
            f"the exact result by up to {float(np.max(self.found[k])):.3g} per element (inputs "
            f"{INPUT_ULPS:g} ulp away); the {int(bad.sum())} element(s) beyond the tolerance "
            "differ by less than that: allowed"
        )
        return wider


def _low_precision_array(x: Any) -> bool:
    x = unthunk(x)
    return isinstance(x, np.ndarray | np.floating) and x.dtype in (np.float16, np.float32)
