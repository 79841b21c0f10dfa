"""Inputs drawn for a collected rule: numbers and broadcast arrays inside its domain, points of
its declared spaces, and registered examples perturbed (along their spaces) within the domain.

Hypothesis strategies, loaded only when a rule item runs (as ``cases`` is).

>>> from rruletest.domains import Domain
>>> where_outside(Domain.of((0, 1)), [0.5]) is None, where_outside(Domain.of((0, 1)), [2.0])
(True, 'args[0] = 2.0 is outside (0, 1)')
"""

from __future__ import annotations

import operator
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis.extra import numpy as hnp

from rruletest import strategies as rst
from rruletest._plugin.arrays import bound_margin
from rruletest.domains import Domain
from rruletest.projection import is_differentiable

__all__ = [
    "MIN_DIMS",
    "PERTURBATIONS",
    "along_space",
    "array_args",
    "assume",
    "inside",
    "perturbed",
    "scalar_args",
    "space_args",
    "spaced_shapes",
    "where_outside",
]

#: Broadcast arguments have at least this many dimensions (0: 0-d arrays are drawn too).
MIN_DIMS = 0
#: Perturbations of registered examples: relative sizes hypothesis chooses from.
PERTURBATIONS = (0.0, 1e-6, 1e-3, 1e-1)


def scalar_args(domain: Domain, n: int, dtype: str) -> st.SearchStrategy[tuple[Any, ...]]:
    one = [
        rst.scalars(domain, dtype=dtype, arg=i, margin=bound_margin(dtype)).map(
            (lambda v: v.item()) if dtype in ("float64", "complex128") else (lambda v: v)
        )
        for i in range(n)
    ]
    args = st.tuples(*one)
    if domain.avoid is not None and n > 1:
        args = args.filter(lambda xs: not np.any(rst.near_avoided(domain.avoid, *xs)))
    return args


def array_args(domain: Domain, n: int, dtype: str) -> st.SearchStrategy[tuple[Any, ...]]:
    return rst.broadcastable_args(
        domain,
        n,
        dtype=dtype,
        min_dims=MIN_DIMS,
        max_dims=3,
        max_side=3,
        margin=bound_margin(dtype),
    )


def perturbed(
    domain: Domain, example: tuple[Any, ...], skip: int, spaces: tuple[Any, ...] = ()
) -> st.SearchStrategy[Any]:
    """Arguments near ``example``: each float or complex leaf moved by up to ``rel * max(1, |x|)``
    per element (``rel`` from ``PERTURBATIONS``, 0 included), staying inside the domain.

    Rules registered with examples often need inputs a domain cannot describe (compatible
    shapes, a well-conditioned matrix), so generated inputs stay near the examples.
    """

    @st.composite
    def near(draw: Any) -> tuple[Any, ...]:
        rel = draw(st.sampled_from(PERTURBATIONS))
        out = list(example)
        for i in range(skip, len(example)):
            a = example[i]
            if isinstance(a, bool | int) or not is_differentiable(a) or rel == 0:
                continue
            arr = np.asarray(a)
            unit = hnp.arrays(
                np.float64, arr.shape, elements=st.floats(-1.0, 1.0, allow_subnormal=False)
            )
            space = spaces[i - skip] if i - skip < len(spaces) else None
            if space is not None:
                out[i] = along_space(space, arr, rel, draw(unit))
                continue
            moved = arr + rel * np.maximum(1.0, np.abs(arr)) * draw(unit)
            if arr.dtype.kind == "c":
                moved = moved + 1j * rel * np.maximum(1.0, np.abs(arr)) * draw(unit)
            moved = moved.astype(arr.dtype)
            value: Any = moved if isinstance(a, np.ndarray) else moved[()]
            out[i] = value.item() if isinstance(a, float | complex) else value
        assume(inside(domain, out[skip:]))
        return tuple(out)

    return near()


def along_space(space: Any, x: Any, rel: float, noise: Any) -> Any:
    """``x`` moved by up to ``rel * max(1, |x|)`` along its space, and kept in the set.

    The noise is projected in float64 (complex128): projected in float32, noise nearly
    normal to the space (``[-1, -1, -0.99999994]`` on a simplex) left a direction made of
    rounding, which moved a float32 point 25 ulps off the set (inside ``contains``'s
    tolerance, outside scipy's ``dirichlet``'s). A projection at that rounding level is none.
    """
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    t = np.asarray(space.project(x.astype(wide), noise.astype(wide)))
    size = float(np.max(np.abs(t))) if t.size else 0.0
    if size <= 64 * float(np.finfo(np.float64).eps) * float(np.max(np.abs(noise), initial=0.0)):
        return x
    h = min(rel * max(1.0, float(np.max(np.abs(x)))), 0.5 * space.max_step(x, t / size))
    moved = space.retract(x, ((h / size) * t).astype(x.dtype))
    assume(space.contains(moved))
    return moved


def space_args(
    domain: Domain, spaces: tuple[Any, ...], n: int, dtype: str
) -> st.SearchStrategy[tuple[Any, ...]]:
    """Arguments of a rule registered with ``spaces``: points of each space, numbers else."""
    real = dtype if np.dtype(dtype).kind == "f" else "float64"
    numbers = scalar_args(domain, n, dtype)
    parts: list[st.SearchStrategy[Any]] = []
    for i in range(n):
        if i < len(spaces) and spaces[i] is not None:
            parts.append(spaces[i].points(dtype=real))
        else:
            parts.append(numbers.map(operator.itemgetter(i)))
    return st.tuples(*parts)


def spaced_shapes(
    shaped: st.SearchStrategy[tuple[Any, ...]], spaces: tuple[Any, ...], dtype: str
) -> st.SearchStrategy[tuple[Any, ...]]:
    """Arguments of declared ``shapes=`` (drawn by ``shaped``) where each argument with a
    declared space is replaced by a point of it, of the size its shape drew (its last axis)."""
    real = dtype if np.dtype(dtype).kind == "f" else "float64"

    @st.composite
    def draw(data: Any) -> tuple[Any, ...]:
        xs = list(data(shaped))
        for i, space in enumerate(spaces):
            if space is not None and i < len(xs) and np.ndim(xs[i]) >= 1:
                xs[i] = data(space.points(np.shape(xs[i])[-1], dtype=real))
        return tuple(xs)

    return draw()


def inside(domain: Domain, args: list[Any]) -> bool:
    """Finite, inside each argument's interval (real parts), clear of ``avoid``."""
    return where_outside(domain, args) is None


def where_outside(domain: Domain, args: list[Any]) -> str | None:
    """The first element of ``args`` that is not finite or outside its interval, as
    ``args[i][j, k] = v is outside (a, b)``, or what ``avoid`` excludes; None when inside."""
    n = len(domain.intervals)
    for i, x in enumerate(args):
        if not is_differentiable(x):
            continue
        arr = np.asarray(x)
        bad = ~np.isfinite(arr)
        why = "is not finite"
        if not bad.any() and (n == 1 or i < n):
            interval = domain.interval(i)
            bad = ~np.asarray(interval.contains(arr.real), dtype=bool)
            why = f"is outside {interval}"
        if bad.any():
            at = tuple(int(k) for k in np.argwhere(bad)[0]) if arr.ndim else ()
            where = f"args[{i}]" + (f"[{', '.join(map(str, at))}]" if at else "")
            return f"{where} = {arr[at].item()!r} {why}"
    try:
        avoided = bool(np.any(rst.near_avoided(domain.avoid, *args)))
    except (TypeError, ValueError):  # avoid cannot judge these arguments (shapes, structures)
        avoided = False
    return (
        "its arguments are near a point the domain's avoid predicate excludes" if avoided else None
    )


def assume(condition: bool) -> None:
    from hypothesis import assume

    assume(condition)
