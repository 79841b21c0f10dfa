"""What the numerical reference is computed from: ``f`` of the checked arguments only (each
call recording what ``f`` raised), a method whose stencils stay inside the rule's declared
domain, and the tolerance widened by the engine's own error estimate.

>>> widen(1e-9, np.array([0.0, 1e-10, np.inf]))
array([1.e-09, 2.e-09,    inf])
>>> g = of_live(lambda x, n: x * n, {}, (1.0, 3), [0])
>>> g(2.0), g.raised
(6.0, [])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.defaults import ERROR_FACTOR, ROOM_FRACTION
from rruletest.domains import Domain
from rruletest.finite_differences import FiniteDifferenceMethod, to_vec
from rruletest.finite_differences.problem import Estimate
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.tangents import AbstractZero, NoTangent, unthunk
from rruletest.testers._args import Arg
from rruletest.testers._check import Check
from rruletest.testers._report import Report
from rruletest.testers._snapshot import all_zero, copyable, snapshot
from rruletest.walk import is_registered, leaves, map_leaves

__all__ = [
    "coordinate_count",
    "domain_room",
    "fdm_for_domain",
    "note_zero_tangent",
    "of_live",
    "quiet_reference",
    "raised_by_f",
    "recorded",
    "unchecked",
    "unchecked_where_not_finite",
    "unchecked_zero_times_inf",
    "widen",
    "zero_where_not_finite",
]


def recorded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, remembering in its ``raised`` list every exception it raised (raised on)."""
    raised: list[BaseException] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raised.append(exc)
            raise

    setattr(call, "raised", raised)  # noqa: B010 - an attribute of a function
    return call


def of_live(
    f: Callable[..., Any], fkwargs: dict[str, Any], primals: Sequence[Any], live: Sequence[int]
) -> Callable[..., Any]:
    """``f`` as a function of the arguments at positions ``live`` only (the others fixed), its
    keyword arguments copied for every call (``f`` may change them in place); like
    ``recorded``, it remembers what ``f`` raised. One frame per call: the finite differences
    call it hundreds of times."""
    fixed, where = list(primals), list(live)
    raised: list[BaseException] = []

    def g(*xs: Any) -> Any:
        full = list(fixed)
        for i, x in zip(where, xs, strict=True):
            full[i] = x
        try:
            if not fkwargs:
                return f(*full)
            kw = {k: (c if copyable(c := snapshot(v)) else v) for k, v in fkwargs.items()}
            return f(*full, **kw)
        except Exception as exc:
            raised.append(exc)
            raise

    if not fkwargs and where == list(range(len(fixed))):  # every argument moves
        count = len(where)

        def g_all(*xs: Any) -> Any:
            if len(xs) != count:
                return g(*xs)  # the general path raises as it does
            try:
                return f(*xs)
            except Exception as exc:
                raised.append(exc)
                raise

        setattr(g_all, "raised", raised)  # noqa: B010 - an attribute of a function
        return g_all
    setattr(g, "raised", raised)  # noqa: B010 - an attribute of a function
    return g


def raised_by_f(exc: BaseException, g: Any) -> bool:
    """Whether ``exc`` is (or was caused by) an exception ``f`` raised inside ``g``."""
    mine = {id(e) for e in getattr(g, "raised", ())}
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if id(e) in mine:
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def widen(atol: float, error: Any) -> Any:
    """``atol`` plus ``ERROR_FACTOR`` times the error estimate, leaf by leaf (per element for
    arrays), keeping the structure of ``error``. An element the engine could not estimate
    (infinite or NaN error) gets an infinite tolerance: it is not checked (see ``unchecked``).
    """
    if isinstance(error, AbstractZero) or error is None:
        return atol
    if type(error) is float or type(error) is np.float64:  # a scalar's estimate, without numpy
        err = abs(float(error))  # (a float, as _widen_leaf makes it)
        return atol + ERROR_FACTOR * (math.inf if math.isnan(err) else err)
    if type(error) is np.float32 or (type(error) is np.ndarray and error.dtype.kind != "O"):
        return _widen_leaf(atol, error)  # one leaf: what the walk would call, without it
    if type(error) is np.ndarray and _numbers(error):
        # an object array of numbers (an object array primal's estimate): a float array
        return _widen_leaf(atol, error.astype(np.float64))
    return map_leaves(lambda _, e: _widen_leaf(atol, e), error, thunks=False)


def _numbers(a: np.ndarray) -> bool:
    """Whether every element of an object array is a real number."""
    return all(
        isinstance(e, float | int | np.floating | np.integer) and not isinstance(e, bool)
        for e in a.flat
    )


def _widen_leaf(atol: float, error: Any) -> Any:
    if isinstance(error, np.ndarray | float | int | np.number) and not isinstance(error, bool):
        out = np.abs(np.asarray(error, dtype=np.float64))  # a fresh array: worked in place
        if out.ndim == 0:
            err = float(out)
            return atol + ERROR_FACTOR * (np.inf if np.isnan(err) else err)
        out *= ERROR_FACTOR
        out += atol
        return np.fmin(out, np.inf, out=out)  # NaN -> inf (fmin takes the number), in place
    return atol


def unchecked(error: Any) -> int:
    """How many elements of an error estimate are not finite (the engine gave up on them)."""
    if type(error) is float:  # a scalar's estimate (the common case), without numpy
        return 0 if math.isfinite(error) else 1
    n = 0
    for _, e in leaves(error, thunks=False):
        if isinstance(e, np.ndarray | float | int | np.number) and not isinstance(e, bool):
            n += int(np.sum(~np.isfinite(np.asarray(e, dtype=np.float64))))
    return n


def coordinate_count(args: Sequence[Arg]) -> int:
    """How many real coordinates the numerically checked arguments have."""
    n = 0
    for a in args:
        if a.numeric:
            p = a.primal
            if isinstance(p, float | np.floating):  # a number: no flattening needed
                n += 1
                continue
            if isinstance(p, complex | np.complexfloating):
                n += 2
                continue
            if type(p) is np.ndarray and p.dtype.kind in "fc" and not is_registered(p):
                n += int(p.size) * (2 if p.dtype.kind == "c" else 1)  # as to_vec counts them
                continue
            vec, _ = to_vec(p)
            n += int(np.size(vec))
    return n


def zero_where_not_finite(x: Any, t: Any) -> tuple[Any, int, str]:
    """A drawn tangent (or cotangent) ``t`` of the array ``x`` with zeros where ``x`` is NaN
    or infinite, how many such elements there are and where (the first three): finite
    differences cannot move such an element (``nan + h`` is ``nan``), and a tangent there
    makes ``0 * NaN`` of every estimate it enters. ``t`` as it is (and 0) where no element,
    or every one, is not finite, or ``t`` is not an array of ``x``'s shape.

    >>> zero_where_not_finite(np.array([1.0, np.nan]), np.array([2.0, 3.0]))
    (array([2., 0.]), 1, '(1,)')
    """
    if not (isinstance(x, np.ndarray) and x.dtype.kind in "fc" and isinstance(t, np.ndarray)):
        return t, 0, ""
    finite = np.isfinite(x)
    if finite.all():  # (the common case: nothing to zero)
        return t, 0, ""
    bad = ~finite
    n = int(bad.sum())
    if n == bad.size or t.shape != x.shape:
        return t, 0, ""
    t = t.copy()
    t[bad] = 0
    where = ", ".join(str(tuple(int(k) for k in i)) for i in np.argwhere(bad)[:3])
    return t, n, where + (f" and {n - 3} more" if n > 3 else "")


def unchecked_where_not_finite(
    est: Estimate, y: Any, x: Any = None, actual: Any = None
) -> Estimate:
    """An elementwise (broadcast) reference with an infinite error, so unchecked, at the
    elements that depend only on outputs NaN or infinite at the primal point: the output
    tangent there (``x`` None), or the cotangent of an element of argument ``x`` that feeds
    only such outputs. Such an output has no derivative to check (its ``ybar`` is zero, see
    ``zero_where_not_finite``), and a correct rule's ``0 * inf`` there is NaN. An element of
    ``x`` that feeds such outputs and finite ones too (a scalar broadcast against them) is
    unchecked where the rule's cotangent ``actual`` is NaN or infinite (that ``0 * inf`` is
    in its sum); a finite value there is still compared. ``est`` as it is when every output,
    or none, is finite (or ``y`` is not one float array).

    >>> e = Estimate(np.zeros(2), np.zeros(2), None)
    >>> unchecked_where_not_finite(e, np.array([np.inf, 1.0]), np.ones(2)).error
    array([inf,  0.])
    >>> e = Estimate(np.float64(3.0), np.float64(0.0), None)
    >>> unchecked_where_not_finite(e, np.array([np.inf, 1.0]), 2.0, np.nan).error
    inf
    """
    if not (isinstance(y, np.ndarray) and y.dtype.kind in "fc"):
        return est
    finite = np.isfinite(y)
    if finite.all() or not finite.any() or isinstance(est.error, AbstractZero):
        return est
    if x is None:
        fed = finite
    elif is_differentiable(x):
        fed = np.asarray(unbroadcast(np.zeros(np.shape(x)), finite.astype(np.float64))) > 0
        bad = _not_finite(actual, fed.shape)
        if bad is not None:
            feeds_void = np.asarray(unbroadcast(np.zeros(np.shape(x)), (~finite) * 1.0)) > 0
            fed &= ~(feeds_void & bad)
    else:
        return est
    if np.shape(est.error) != fed.shape:
        return est
    error = np.where(fed, est.error, np.inf)
    return est._replace(error=error if isinstance(est.error, np.ndarray) else float(error))


def _not_finite(actual: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """Where a rule's cotangent ``actual`` (a number or an array of ``shape``) is NaN or
    infinite; None when it is no such value (a zero, a structure, a thunk that raises)."""
    try:
        arr = np.asarray(unthunk(actual))
    except Exception:  # the comparison reports it; here it only leaves the reference alone
        return None
    if arr.shape != shape or arr.dtype.kind not in "fc":
        return None
    out: np.ndarray = ~np.isfinite(arr)
    return out


def unchecked_zero_times_inf(est: Estimate, actual: Any, y: Any) -> Estimate:
    """A dense reference with an infinite error, so unchecked, where the rule's cotangent is NaN
    or infinite and the reference is 0 (no finite output changes along the coordinate), when
    some outputs are not finite at the primal point: such a coordinate feeds
    only those outputs, whose ``ybar`` is zero (``zero_where_not_finite``), and a correct
    rule's ``0 * inf`` there is NaN (``log`` at 0). A finite value there is still compared.
    (0 here: within an error below ``ZERO_SCALE`` of the argument's largest value.)

    >>> e = Estimate(np.array([0.0, 0.5]), np.array([0.0, 1e-12]), None)
    >>> y = np.array([-np.inf, 0.7])
    >>> unchecked_zero_times_inf(e, np.array([np.nan, 0.5]), y).error
    array([   inf, 1.e-12])
    """
    value, error = est.value, est.error
    if not (isinstance(value, np.ndarray) and isinstance(error, np.ndarray)):
        return est
    if not isinstance(actual, np.ndarray) or actual.shape != value.shape:
        return est
    if type(y) is np.ndarray and y.dtype in _EXACT_IN_F64 and not is_registered(y):
        finite = bool(np.isfinite(y).all())  # its coordinates, without flattening it
    else:
        finite = bool(np.isfinite(to_vec(y, path="output")[0]).all())
    if finite:
        return est
    with np.errstate(invalid="ignore"):
        # (0 within an error far below the argument's other values: round-off of nothing)
        scale = ZERO_SCALE * max(1.0, float(np.nanmax(np.abs(value), initial=0.0)))
        void = (np.abs(value) <= error) & (error <= scale) & ~np.isfinite(actual)
    return est._replace(error=np.where(void, np.inf, error)) if void.any() else est


#: A dense reference within this fraction of the argument's largest value of 0 counts as 0.
ZERO_SCALE = 1e-8

# Dtypes whose elements ``to_vec`` turns into float64 coordinates exactly (so finite where
# they are): an array of one of these is checked as it is.
_EXACT_IN_F64 = frozenset(
    np.dtype(t) for t in (np.float64, np.float32, np.float16, np.complex128, np.complex64)
)


def domain_room(domain: Domain | None, primals: Sequence[Any]) -> float | None:
    """The largest step that keeps every real input strictly inside its declared interval."""
    if domain is None:
        return None
    room = np.inf
    for i, x in enumerate(primals):
        if type(x) is float or type(x) is np.float64:  # a number: the same sums, no arrays
            interval = (
                domain.interval(i)
                if i < len(domain.intervals) or len(domain.intervals) == 1
                else None
            )
            if interval is None or not math.isfinite(x):
                continue
            if math.isfinite(interval.lo):
                room = min(room, float(x - interval.lo))
            if math.isfinite(interval.hi):
                room = min(room, float(interval.hi - x))
            continue
        try:
            arr = np.asarray(x)
        except Exception:
            continue
        if arr.dtype.kind != "f" or arr.size == 0:
            continue
        interval = (
            domain.interval(i) if i < len(domain.intervals) or len(domain.intervals) == 1 else None
        )
        if interval is None:
            continue
        finite = arr[np.isfinite(arr)]
        if finite.size == 0:
            continue
        if np.isfinite(interval.lo):
            room = min(room, float(np.min(finite - interval.lo)))
        if np.isfinite(interval.hi):
            room = min(room, float(np.min(interval.hi - finite)))
    if not np.isfinite(room) or room <= 0:
        return None
    return float(room)


def element_rooms(fdm: Any, domain: Domain | None, primals: Sequence[Any]) -> list[Any] | None:
    """Per argument, ``ROOM_FRACTION`` of each element's distance to its interval's edges
    (None for an unbounded one), for the structured broadcast engine, whose elements each
    take their own step: one element near an edge then limits its own step, not the others'
    (``fdm_for_domain``'s one ``max_range`` made ``gammaln`` at 1.0 take the steps of its
    neighbour at 1e-6, too small for its rounding). None when nothing is bounded, or ``fdm``
    is not a plain ``FiniteDifferenceMethod``.
    """
    if domain is None or type(fdm) is not FiniteDifferenceMethod:
        return None
    rooms: list[Any] = []
    for i, x in enumerate(primals):
        n = len(domain.intervals)
        interval = domain.interval(i) if i < n or n == 1 else None
        arr = np.asarray(x) if isinstance(x, float | np.ndarray | np.floating) else None
        if interval is None or arr is None or arr.dtype.kind != "f":
            rooms.append(None)
            continue
        if not (math.isfinite(interval.lo) or math.isfinite(interval.hi)):
            rooms.append(None)
            continue
        with np.errstate(all="ignore"):
            wide = arr.astype(np.float64)
            room = np.minimum(wide - interval.lo, interval.hi - wide)
        rooms.append(np.where(np.isfinite(room) & (room > 0), ROOM_FRACTION * room, np.inf))
    return rooms if any(r is not None for r in rooms) else None


def fdm_for_domain(fdm: Any, domain: Domain | None, primals: Sequence[Any]) -> Any:
    """``fdm`` limited so its stencils never leave the declared domain (see ``domain_room``).

    Only a plain ``FiniteDifferenceMethod`` is rebuilt (with a smaller ``max_range``); other
    methods are used as they are and rely on the engine's own domain safety (an element whose
    stencil meets NaN retries with smaller and one-sided steps).
    """
    room = domain_room(domain, primals)
    if room is None or type(fdm) is not FiniteDifferenceMethod:
        return fdm
    limit = ROOM_FRACTION * room
    if fdm.max_range <= limit:
        return fdm
    return _with_max_range(fdm, limit)


@functools.lru_cache(maxsize=256)
def _with_max_range(fdm: Any, max_range: float) -> Any:
    return type(fdm)(
        fdm.grid,
        fdm.q,
        adapt=fdm.adapt,
        condition=fdm.condition,
        factor=fdm.factor,
        max_range=max_range,
    )


def fd_failure(report: Report, exc: BaseException, register: str, g: Any = None) -> None:
    """Record an exception raised while computing the numerical reference: by ``f`` at a
    perturbed input (``g`` recorded it: a domain problem, usually) or inside the engine itself
    (a bug to report)."""
    if g is not None and not raised_by_f(exc, g):
        report.exception(
            Check.NUMERIC,
            "the finite-difference engine",
            exc,
            hint="this is a bug in rruletest's finite differences (not in the rule): please "
            "report it with the reproduce line; check_fd=False runs the other checks meanwhile",
        )
        return
    report.exception(
        Check.NUMERIC,
        "f at inputs perturbed by the finite differences",
        exc,
        hint=f"if f is defined only on part of its inputs, declare the rule's domain "
        f"({register}(..., domain=...)) or pass an fdm with a smaller max_range",
    )


def quiet_reference(check: Callable[..., None]) -> Callable[..., None]:
    """``check`` with floating-point warnings silenced: a numerical reference evaluates ``f``
    at points of its own choosing (``log`` at a stencil point below 0), and what ``f`` warns
    there is not the user's to see."""

    @functools.wraps(check)
    def quiet(*args: Any, **kwargs: Any) -> None:
        with np.errstate(all="ignore"):  # (numpy's RuntimeWarnings; f's own warnings stand)
            check(*args, **kwargs)

    return quiet


def note_zero_tangent(report: Report, tangents: Sequence[Any], what: str, rule: str) -> None:
    """A note where every tangent the numerical check runs along is zero (``nonzero``): the
    check then shows only that the rule maps zero to zero, not its derivatives."""
    # (NoTangent: an integer output or argument, with no tangent to give)
    tangents = [t for t in tangents if not isinstance(t, NoTangent)]
    if tangents and any(map(_sized, tangents)) and all(map(all_zero, tangents)):
        report.note(
            f"the {what} is zero everywhere: the numerical check shows only that the {rule} "
            f"maps it to zero, not the rule's derivatives (give a nonzero {what} to check them)"
        )


def _sized(t: Any) -> bool:
    """Whether a tangent has coordinates (a zero stands for some; an empty array has none)."""
    if isinstance(t, AbstractZero | int | float | complex | np.number):
        return True
    if type(t) is np.ndarray:
        return t.size > 0
    try:
        return bool(to_vec(t, path="tangent")[0].size)
    except Exception:  # not a value to_vec knows: say what is known
        return True
