"""The numerical reference a tester compares a rule with, and the tolerance it allows.

Three ways to get the reference cotangents of ``f`` at ``xs`` for an output cotangent ``ybar``:

- ``broadcast``: ``f`` is ``broadcasted``; the structured vjp perturbs every element at once
  (cost independent of the size);
- ``dense``: one finite difference per input coordinate (``vjp_estimate``), up to
  ``DENSE_LIMIT`` coordinates (or always, with ``vjp_mode="full"``);
- ``adjoint``: beyond that, the adjoint identity ``<xbar, v> == <ybar, J v>`` along a few
  random directions ``v`` (one jvp each).

The tolerance of each element is the default (or given) one for the dtypes involved, widened
by ``ERROR_FACTOR`` times the engine's own error estimate for that element.

>>> tolerances((np.ones(2, np.float32),), None, None)
(0.0001, 0.0001)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest._args import Arg
from rruletest.domains import Domain

__all__ = [
    "ADJOINT_DIRECTIONS",
    "DENSE_LIMIT",
    "ERROR_FACTOR",
    "closed_over",
    "coordinate_count",
    "fdm_for_domain",
    "leaf_dtypes",
    "tolerances",
    "widen",
]

DENSE_LIMIT = 2000  # input coordinates beyond which the dense numerical vjp is too slow
ADJOINT_DIRECTIONS = 3  # random directions for the adjoint identity
ERROR_FACTOR = 10.0  # multiples of the FD error estimate added to each element's tolerance


def leaf_dtypes(x: Any, out: set[np.dtype] | None = None, depth: int = 0) -> set[np.dtype]:
    """The float/complex dtypes of the numeric leaves of ``x`` (Python floats are float64)."""
    from rruletest._checks import _kids
    from rruletest.tangents import unthunk

    out = set() if out is None else out
    x = unthunk(x)
    if depth > 50:
        return out
    if isinstance(x, bool | np.bool_):
        return out
    if isinstance(x, float | np.floating | complex | np.complexfloating):
        out.add(np.result_type(x))
    elif isinstance(x, np.ndarray):
        if x.dtype.kind in "fc":
            out.add(x.dtype)
        elif x.dtype.kind == "O":
            for v in x.flat[:16]:
                leaf_dtypes(v, out, depth + 1)
    else:
        kids = _kids(x)
        if kids is not None:
            for v in kids.values():
                leaf_dtypes(v, out, depth + 1)
    return out


def tolerances(
    values: Sequence[Any], rtol: float | None, atol: float | None
) -> tuple[float, float]:
    """``(rtol, atol)``: the given ones, else the loosest default among the values' dtypes."""
    from rruletest.tolerances import default_tolerances

    dts: set[np.dtype] = set()
    for v in values:
        leaf_dtypes(v, dts)
    r, a = default_tolerances(np.dtype(np.float64))
    for dt in dts:
        r2, a2 = default_tolerances(dt)
        r, a = max(r, r2), max(a, a2)
    return (float(r) if rtol is None else rtol, float(a) if atol is None else atol)


def widen(atol: float, error: Any) -> Any:
    """``atol`` plus ``ERROR_FACTOR`` times the error estimate: per element for arrays, else
    the largest error of a structure. An unknown (NaN) error adds nothing for that element.
    """
    if isinstance(error, np.ndarray | float | int | np.number) and not isinstance(error, bool):
        err = np.abs(np.asarray(error, dtype=np.float64))
        err = np.where(np.isfinite(err), err, 0.0)
        return atol + ERROR_FACTOR * err if err.ndim else atol + ERROR_FACTOR * float(err)
    biggest = _max_leaf(error)
    return atol + ERROR_FACTOR * biggest


def _max_leaf(x: Any) -> float:
    from rruletest._checks import _kids

    if isinstance(x, np.ndarray | float | int | np.number) and not isinstance(x, bool):
        arr = np.abs(np.asarray(x, dtype=np.float64))
        arr = arr[np.isfinite(arr)]
        return float(arr.max()) if arr.size else 0.0
    kids = _kids(x)
    if not kids:
        return 0.0
    return max((_max_leaf(v) for v in kids.values()), default=0.0)


def coordinate_count(args: Sequence[Arg]) -> int:
    """How many real coordinates the numerically checked arguments have."""
    from rruletest.finite_differences import to_vec

    n = 0
    for a in args:
        if a.numeric:
            vec, _ = to_vec(a.primal)
            n += int(np.size(vec))
    return n


def closed_over(
    f: Callable[..., Any], fkwargs: dict[str, Any], primals: Sequence[Any], live: Sequence[int]
) -> Callable[..., Any]:
    """``f`` as a function of the arguments at positions ``live`` only (others fixed)."""
    fixed = list(primals)

    def g(*xs: Any) -> Any:
        full = list(fixed)
        for i, x in zip(live, xs, strict=True):
            full[i] = x
        return f(*full, **fkwargs)

    return g


def domain_room(domain: Domain | None, primals: Sequence[Any]) -> float | None:
    """The largest step that keeps every real input strictly inside its declared interval."""
    if domain is None:
        return None
    room = np.inf
    for i, x in enumerate(primals):
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
    return room


@functools.lru_cache(maxsize=64)
def _cached_fdm(fdm: Any, max_range: float) -> Any:
    return fdm.with_max_range(max_range)


def fdm_for_domain(fdm: Any, domain: Domain | None, primals: Sequence[Any]) -> Any:
    """``fdm`` limited so its stencils never leave the declared domain (see ``domain_room``)."""
    room = domain_room(domain, primals)
    if room is None:
        return fdm
    return fdm_with_max_range(fdm, room)


def fdm_with_max_range(fdm: Any, room: float) -> Any:
    current = getattr(fdm, "max_range", None)
    if current is not None and current <= room:
        return fdm
    try:
        return _cached_fdm(fdm, room)
    except (AttributeError, TypeError):
        return fdm
