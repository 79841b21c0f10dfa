"""The transposition cross-check: a function's frule and rrule must be adjoint to each other.

When both rules exist for ``f``, at the same point and for any tangents ``xdot`` and ``ybar``,

    <ybar, frule(xdot)>  ==  <pullback(ybar), xdot>

holds up to rounding, with no finite difference at all (``<a, b> = Re(sum(conj(a) * b))``, the
cotangent convention). It costs one frule and one pullback call whatever the size, and it catches
a wrong rule of one kind where finite differences are weak (noisy or expensive functions, large
inputs). Only when the identity fails is one finite-difference jvp along ``xdot`` taken, to say
which of the two rules disagrees with the function.

>>> import numpy as np
>>> from rruletest import NoTangent, RuleSet
>>> rules = RuleSet()
>>> @rules.register_rrule(np.sin)
... def _sin_r(x):
...     return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))
>>> @rules.register_frule(np.sin)
... def _sin_f(dargs, x):
...     return np.sin(x), -dargs[1] * np.cos(x)  # wrong sign
>>> x, xdot, ybar = np.array([0.1, 0.2]), np.array([1.0, 2.0]), np.array([0.5, -1.0])
>>> t = transposition(np.sin, (x,), (xdot,), ybar, rrule_f=rules.rrule, frule_f=rules.frule)
>>> t.passed, t.culprit
(False, 'frule')
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rruletest.broadcast import broadcasted
from rruletest.errors import Mismatch
from rruletest.finite_differences import Estimate, broadcast_jvp, jvp_estimate, to_vec
from rruletest.tangents import NO_TANGENT, AbstractZero, unthunk
from rruletest.tolerances import default_tolerances, leaf_dtypes, loosest

__all__ = [
    "Transposition",
    "TranspositionError",
    "coords",
    "sides",
    "transposition",
    "with_numeric",
]

# Rounding of each inner product grows like sqrt(terms) ulps; this many ulps per sqrt(term) of
# the absolute scale are always allowed, on top of the dtype's default relative tolerance.
_ULPS = 64.0
# Values whose leaf dtypes ``leaf_dtypes`` finds without a walk.
_PLAIN = frozenset(
    {float, complex, np.float64, np.float32, np.float16, np.complex128, np.complex64}
)
_FD_FACTOR = 5.0  # the finite-difference error estimate is widened by this, as elsewhere


class TranspositionError(Exception):
    """A rule could not be called for the cross-check (it raised, or returned no rule)."""


@dataclass(frozen=True)
class Transposition:
    """The two sides of the identity and what was concluded.

    ``forward`` is ``<ybar, ydot>`` (from the frule), ``reverse`` ``sum_i <xbar_i, xdot_i>`` (from
    the pullback); ``scale`` the same sums with absolute values, which bound their rounding;
    ``tolerance`` the gap allowed. When they differ, ``numeric`` is ``<ybar, jvp>`` with a
    finite-difference jvp and ``numeric_error`` its error bound, and ``culprit`` names the rule
    that disagrees with it (``"frule"``, ``"rrule"``, ``"both"``, or None when neither can be
    singled out).
    """

    forward: float
    reverse: float
    scale: float
    tolerance: float
    numeric: float | None = None
    numeric_error: float | None = None
    culprit: str | None = None

    @property
    def gap(self) -> float:
        return abs(self.forward - self.reverse)

    @property
    def passed(self) -> bool:
        return self.gap <= self.tolerance

    def mismatch(self, header: str = "frule/rrule transposition") -> Mismatch:
        """The failed identity as a ``Mismatch`` (check ``"transpose"``), message included."""
        lines = [
            f"{header}: <ybar, frule ydot> = {self.forward:.10g} but "
            f"<pullback(ybar), xdot> = {self.reverse:.10g} "
            f"(difference {self.gap:.3g}, allowed {self.tolerance:.3g})"
        ]
        if self.numeric is not None:
            lines.append(
                f"  finite differences give <ybar, J xdot> = {self.numeric:.10g} "
                f"(error bound {self.numeric_error:.2g})"
            )
        hint = {
            "frule": "the frule disagrees with finite differences; the rrule agrees",
            "rrule": "the rrule (pullback) disagrees with finite differences; the frule agrees",
            "both": "neither rule agrees with finite differences",
        }.get(self.culprit or "")
        if hint:
            lines.append(f"  {hint}")
        rel = self.gap / max(abs(self.forward), abs(self.reverse), 1e-300)
        return Mismatch(
            check="transpose",
            path=self.culprit or "frule/rrule",
            actual=self.forward,
            expected=self.reverse,
            message="\n".join(lines),
            abs_err=self.gap,
            rel_err=rel,
            rtol=None,
            atol=self.tolerance,
            extra={"culprit": self.culprit, "numeric": self.numeric},
        )


def coords(primal: Any, tangent: Any) -> np.ndarray:
    """The real coordinates of a tangent of ``primal`` (zeros for zeros, ``NoTangent``)."""
    t = unthunk(tangent)
    if (
        isinstance(primal, np.ndarray)
        and isinstance(t, np.ndarray)
        and primal.dtype.kind == "f"
        and t.dtype.kind == "f"
        and t.shape == primal.shape
    ):
        return t.ravel()  # a real array's coordinates are its elements: no copy
    _, back = to_vec(primal, path="x")
    if isinstance(t, AbstractZero) or t is None:
        return np.zeros(back.size)
    if isinstance(t, np.ndarray) and t.dtype.kind == "O":
        # an object array of tangents (numbers, zeros, thunks): its natural numeric value
        t = np.array([_number(e) for e in t.flat]).reshape(t.shape)
    return back.tangent_vec(t)


def _number(e: Any) -> Any:
    e = unthunk(e)
    return 0.0 if isinstance(e, AbstractZero) else e


def _inner(direction: np.ndarray, value: np.ndarray) -> tuple[float, float]:
    """``<direction, value>`` and ``<|direction|, |value|>`` (the scale that bounds its
    rounding). A coordinate the direction does not move contributes nothing, even where the
    value there is NaN or infinite (a derivative at a NaN element of the point, which the
    testers' directions leave at zero): ``0 * NaN`` is no evidence about the rules. Summed
    in float64: float16 products of derivatives near 100 overflow, and ``-inf == -inf``
    would be no evidence either."""
    with np.errstate(invalid="ignore", over="ignore"):
        prod = np.multiply(direction, value, dtype=np.float64)
        total = float(prod.sum())
        if not math.isfinite(total):
            prod = np.where(direction == 0, 0.0, prod)
            total = float(prod.sum())
        return total, float(np.abs(prod, out=prod).sum())


def _dtypes(values: Sequence[Any]) -> set[np.dtype[Any]]:
    """``leaf_dtypes(tuple(values))``: value by value when every one is a plain number or a
    numeric array (the same set, without walking the tuple)."""
    if all(type(v) in _PLAIN or (type(v) is np.ndarray and v.dtype.kind != "O") for v in values):
        out: set[np.dtype[Any]] = set()
        for v in values:
            out |= leaf_dtypes(v)
        return out
    return leaf_dtypes(tuple(values))


@functools.cache
def _eps_tiny(dtypes: frozenset[np.dtype[Any]]) -> tuple[float, float]:
    """The machine epsilon and smallest normal number of the least precise of ``dtypes``."""
    infos = [np.finfo(d) for d in dtypes] or [np.finfo(np.float64)]
    return max(float(i.eps) for i in infos), max(float(i.tiny) for i in infos)


def sides(
    y: Any,
    ybar: Any,
    ydot: Any,
    primals: Sequence[Any],
    xdots: Sequence[Any],
    xbars: Sequence[Any],
    rtol: float | None = None,
) -> Transposition:
    """Compare ``<ybar, ydot>`` with ``sum_i <xbar_i, xdot_i>`` (rules already called)."""
    ybar_c = coords(y, ybar)
    forward, forward_abs = _inner(ybar_c, coords(y, ydot))
    reverse, reverse_abs = 0.0, 0.0
    terms = ybar_c.size
    for x, xbar, xdot in zip(primals, xbars, xdots, strict=True):
        if isinstance(unthunk(xdot), AbstractZero):
            continue
        xdot_c = coords(x, xdot)
        r, r_abs = _inner(xdot_c, coords(x, xbar))
        reverse, reverse_abs, terms = reverse + r, reverse_abs + r_abs, terms + xdot_c.size
    scale = max(forward_abs, reverse_abs)
    dtypes = _dtypes((y, *primals))  # (found once, for both the tolerance and the precision)
    if rtol is None:
        rtol = _rtol_of(dtypes)
    eps, tiny = _eps_tiny(frozenset(dtypes))
    tolerance = max(max(float(rtol), _ULPS * eps * math.sqrt(max(terms, 1))) * scale, tiny)
    return Transposition(forward, reverse, scale, tolerance)


def transposition(
    f: Callable[..., Any],
    primals: Sequence[Any],
    xdots: Sequence[Any],
    ybar: Any,
    *,
    rrule_f: Callable[..., Any],
    frule_f: Callable[..., Any],
    fkwargs: dict[str, Any] | None = None,
    fdot: Any = NO_TANGENT,
    rtol: float | None = None,
    fdm: Any = None,
    numeric: bool = True,
) -> Transposition:
    """Check ``<ybar, frule(xdot)> == <pullback(ybar), xdot>`` for ``f`` at ``primals``.

    ``xdots`` has one tangent per argument (``NoTangent()`` for one not moved); ``ybar`` is a
    cotangent of the output. ``rtol`` (default: the dtype's from ``rruletest.tolerances``) is
    relative to the absolute scale of the inner products; a few ulps per term are always
    allowed. Finite differences (``fdm``, default ``central_fdm(5, 1)``) run only when the
    identity fails (and ``numeric`` is true), to name the culprit.

    Raises:
        TranspositionError: a rule is missing, raised, or returned something malformed.
    """
    kwargs = dict(fkwargs or {})
    rule = rrule_f(f, *primals, **kwargs)
    if rule is None:
        raise TranspositionError("no rrule")
    y, pullback = rule
    out = pullback(ybar)
    if not isinstance(out, tuple) or len(out) != len(primals) + 1:
        raise TranspositionError("the pullback did not return (fbar, xbar_0, ...)")
    res = frule_f((fdot, *xdots), f, *primals, **kwargs)
    if res is None:
        raise TranspositionError("no frule")
    result = sides(y, ybar, res[1], primals, xdots, out[1:], rtol)
    if result.passed or not numeric:
        return result
    return with_numeric(
        result, f, primals, xdots, coords(y, ybar), kwargs, fdm, result_rtol(rtol, y, primals)
    )


def _rtol(y: Any, primals: Sequence[Any]) -> Any:
    """``default_tolerances((y, *primals)).rtol``, the leaf dtypes found as ``_dtypes`` does."""
    return _rtol_of(_dtypes((y, *primals)))


def _rtol_of(dtypes: set[np.dtype[Any]]) -> Any:
    """The default relative tolerance of the loosest of ``dtypes`` (float64's if none)."""
    return (loosest(*dtypes) if dtypes else default_tolerances(np.float64)).rtol


def result_rtol(rtol: float | None, y: Any, primals: Sequence[Any]) -> float:
    return float(rtol) if rtol is not None else float(_rtol(y, primals))


def with_numeric(
    t: Transposition,
    f: Callable[..., Any],
    primals: Sequence[Any],
    xdots: Sequence[Any],
    ybar_c: np.ndarray,
    kwargs: dict[str, Any],
    fdm: Any,
    rtol: float,
) -> Transposition:
    """``t`` with a finite-difference ``<ybar, J xdot>`` and the rule that disagrees with it."""
    pairs = [(x, d) for x, d in zip(primals, xdots, strict=True)]
    try:
        est: Estimate
        if f is broadcasted and primals and not kwargs:
            # elementwise: the structured jvp is exact per element at a cost independent of size
            est = broadcast_jvp(fdm, primals[0], *pairs[1:])
        else:
            est = jvp_estimate(fdm, lambda *xs: f(*xs, **kwargs), *pairs)
    except Exception:
        return t  # the numerical reference is unavailable: the gap stands on its own
    y = f(*primals, **kwargs)
    value, error = coords(y, est.value), np.abs(coords(y, est.error))
    numeric, _ = _inner(ybar_c, value)
    bound, _ = _inner(np.abs(ybar_c), error)
    if not math.isfinite(numeric) or not math.isfinite(bound):
        return t
    allowed = t.tolerance + _FD_FACTOR * bound + rtol * max(t.scale, abs(numeric))
    forward_ok = abs(t.forward - numeric) <= allowed
    reverse_ok = abs(t.reverse - numeric) <= allowed
    culprit = {
        (True, False): "rrule",
        (False, True): "frule",
        (False, False): "both",
    }.get((forward_ok, reverse_ok))
    return Transposition(
        t.forward, t.reverse, t.scale, t.tolerance, numeric, _FD_FACTOR * bound, culprit
    )
