"""The batched reference of a rule that declared a gufunc core signature, as the testers take it.

``batched_vjp``/``batched_jvp`` perturb one core coordinate in every batch member at once. As
the dense references, they are taken at float64 copies of low-precision primals where ``f``
agrees there (``wide_point``: the estimates at the float32 or float16 point itself have errors
that hide a wrong element), at the point itself where those cannot estimate (``void_from``).
Each also returns ``f`` as a function of the checked arguments alone and the points it was
taken at, for the one-sided (kink) walks the dense references get: a central difference at a
kink (``relu`` at 0, a tie of ``max``) averages two slopes, and a right rule gives one of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from rruletest.finite_differences.batched import batched_jvp, batched_vjp
from rruletest.testers._fd_inputs import of_live
from rruletest.testers._float64 import void_from, wide_point
from rruletest.testers._setup import Setup

__all__ = ["batched_jvp_reference", "batched_vjp_reference"]


def _promoted(sig: Any, kind: str, wide: Any) -> str:
    promoted = ", evaluated in float64" if wide else ""
    return f"batched {kind} over the core signature {sig} (declared by the rule{promoted})"


def batched_vjp_reference(
    s: Setup, fdm: Any, sig: Any, ybar: Any, y_ref: Any, which: Sequence[int]
) -> tuple[dict[int, Any], str, Callable[..., Any], list[Any]]:
    """Per checked argument (position in ``s.primals``), the batched vjp's estimate; the
    reference's name; ``f`` of the checked arguments alone; the points it was taken at."""
    g = functools.partial(s.f, **s.kwargs())
    wide = wide_point(g, s.primals, [], y_ref)
    xs = wide[0] if wide else list(s.primals)
    ests = list(batched_vjp(fdm, sig, g, ybar, *xs, which=which))
    if wide:  # what float64 points cannot estimate, the point itself may
        low = functools.partial(_low_vjp, fdm, sig, g, ybar, s.primals)
        ests = [void_from(e, functools.partial(low, j)) for j, e in zip(which, ests, strict=True)]
    live = of_live(s.f, s.fkwargs, s.primals, which)
    est_of = dict(zip(which, ests, strict=True))
    return est_of, _promoted(sig, "vjp", wide), live, [xs[j] for j in which]


def _low_vjp(fdm: Any, sig: Any, g: Any, ybar: Any, primals: Any, j: int) -> Any:
    """The batched vjp of argument ``j`` at the (low-precision) primals themselves."""
    return batched_vjp(fdm, sig, g, ybar, *primals, which=[j])[0]


def batched_jvp_reference(
    s: Setup, fdm: Any, sig: Any, dots: Sequence[Any], y_ref: Any, which: Sequence[int]
) -> tuple[Any, str, Callable[..., Any], list[tuple[Any, Any]]]:
    """The batched jvp along ``dots`` (one per argument at the positions ``which``); the
    reference's name; ``f`` of those arguments alone; the (point, tangent) pairs it used."""
    g = functools.partial(s.f, **s.kwargs())
    wide = wide_point(g, s.primals, dots, y_ref)
    xs, ds = wide or (list(s.primals), list(dots))
    est = batched_jvp(fdm, sig, g, xs, ds, which=which)
    if wide:  # what float64 points cannot estimate, the point itself may
        est = void_from(est, lambda: batched_jvp(fdm, sig, g, s.primals, dots, which))
    pairs = [(xs[j], d) for j, d in zip(which, ds, strict=True)]
    return est, _promoted(sig, "jvp", wide), of_live(s.f, s.fkwargs, s.primals, which), pairs
