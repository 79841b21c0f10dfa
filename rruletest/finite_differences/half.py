"""float16: references precise enough to check a float16 rule, or a plain statement of how little.

Finite differences of a float16 function are poor: with 11 bits of mantissa the best step
balances truncation against a round-off of ``5e-4 * |f|``, and the estimates come with error
estimates of 1-50% of the derivative. A tester widens its tolerance by those errors (ten times
them), so a rule 10% wrong everywhere passes. Most float16 functions are float16 evaluations of
a function that accepts float32/float64 too (numpy's ufuncs, anything written with them): then
the finite differences are taken through float64 copies of the float16 inputs, where they are
accurate to ~1e-10, and the rule is checked against the derivative its float16 values round.

Without a float16 input they run the engine once and return an empty note.

``lift`` decides whether that is sound: ``f`` of the float64 copies must round (to float16) to
``f`` of the float16 inputs within the float16 tolerance. The ``half_*`` functions then run the
engine both ways and keep the float64 result only where it agrees with the float16 one within
the latter's error and is no less certain (a function that casts to float16 internally is
caught there). Where
it cannot be lifted, they return the float16 estimates with a ``note`` saying how large their
errors are, i.e. what the check could not see.

>>> import numpy as np
>>> x = np.linspace(-2, 2, 5).astype(np.float16)
>>> (est,), note = half_broadcast_vjp(None, np.sin, np.ones(5, np.float16), x)
>>> bool(np.max(np.abs(est.value - np.cos(x.astype(np.float64)))) < 1e-9), note
(True, 'float16 inputs: finite differences taken through float64 copies')
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.broadcast import broadcast_jvp, broadcast_vjp
from rruletest.finite_differences.calculus import jvp_estimate, vjp_estimate
from rruletest.finite_differences.problem import Estimate
from rruletest.finite_differences.to_vec import to_vec
from rruletest.walk import WalkError, leaves, map_leaves

__all__ = [
    "LIFTED_NOTE",
    "MATCH",
    "Lift",
    "coarse_note",
    "half_broadcast_jvp",
    "half_broadcast_vjp",
    "half_jvp_estimate",
    "half_vjp_estimate",
    "has_half",
    "lift",
]

F64 = npt.NDArray[np.float64]
HALF = np.dtype(np.float16)
#: The note of a reference computed through float64 copies.
LIFTED_NOTE = "float16 inputs: finite differences taken through float64 copies"
#: How far ``f(float64 copies)`` may be from ``f(float16 inputs)``, relative to ``1 + |f|``: the
#: float16 test tolerance (a float16 function rounds at every operation; this only screens out
#: another function, and the derivatives are compared again after the finite differences).
MATCH = 1e-2


def _is_half(v: Any) -> bool:
    return isinstance(v, np.ndarray | np.floating) and np.asarray(v).dtype == HALF


def has_half(*values: Any) -> bool:
    """Whether any leaf of ``values`` is a float16 array or number.

    >>> has_half(1.0, [np.zeros(2, np.float16)]), has_half(np.zeros(2))
    (True, False)
    """
    try:
        return any(_is_half(v) for _, v in leaves(values))
    except WalkError:
        return False


def _widen(path: Any, v: Any) -> Any:
    if not _is_half(v):
        return v
    out = np.asarray(v, dtype=np.float64)
    return out if isinstance(v, np.ndarray) else np.float64(out)


class Lift(NamedTuple):
    """``xs`` with float16 leaves as float64 copies; ``used`` when ``f`` accepts them (``note``
    says why not otherwise)."""

    xs: tuple[Any, ...]
    used: bool
    note: str


def _half_vec(y: Any) -> F64 | None:
    try:
        v, _ = to_vec(y, path="output")
    except (TypeError, ValueError):
        return None
    return v


def lift(f: Callable[..., Any], *xs: Any, y: Any = None) -> Lift:
    """float64 copies of ``xs``' float16 leaves, and whether ``f`` computes the same function
    on them: ``f(*copies)`` is a float32/float64 output that rounds to ``f(*xs)`` (``y`` if
    given) within ``MATCH * (1 + |f|)`` per element.
    """
    wide = tuple(map_leaves(_widen, xs, root="args"))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y16 = f(*xs) if y is None else y
        try:
            y64 = f(*wide)
        except Exception as exc:  # any refusal of float64 inputs means "do not lift"
            why = f"f does not accept float64 copies ({type(exc).__name__}: {exc})"
            return Lift(xs, False, why)
    if has_half(y64):
        return Lift(xs, False, "f returns float16 even for float64 inputs")
    a, b = _half_vec(y16), _half_vec(y64)
    if a is None or b is None or a.shape != b.shape:
        return Lift(xs, False, "f's output for float64 copies does not match its float16 output")
    rounded = b.astype(np.float16).astype(np.float64)
    with np.errstate(all="ignore"):
        bad = ~(np.abs(rounded - a) <= MATCH * (1.0 + np.abs(a)))
        bad &= ~(np.isnan(a) & np.isnan(rounded))
    if np.any(bad):
        worst = int(np.argmax(bad))
        return Lift(
            xs,
            False,
            f"f of float64 copies is not f of the float16 inputs rounded (output element {worst}:"
            f" {b[worst]!r} against {a[worst]!r})",
        )
    return Lift(wide, True, LIFTED_NOTE)


def _flat(v: Any) -> F64:
    try:
        return np.asarray(to_vec(v)[0], dtype=np.float64)
    except (TypeError, ValueError):
        return np.zeros(0)


def _agrees(precise: Estimate, coarse: Estimate) -> bool:
    """The float64 estimate lies within the float16 one's error (ten times, as a tester widens)
    plus a float16 tolerance, element by element."""
    p, c, e = _flat(precise.value), _flat(coarse.value), _flat(coarse.error)
    if p.shape != c.shape or e.shape != c.shape:
        return False
    with np.errstate(all="ignore"):
        ok = np.abs(p - c) <= 10.0 * e + 1e-2 * (1.0 + np.abs(c))
    return bool(np.all(ok | ~np.isfinite(e) | np.isnan(c)))


def _surer(precise: Estimate, coarse: Estimate) -> bool:
    """The float64 estimate's largest finite error is no larger than the float16 one's."""
    p, c = _flat(precise.error), _flat(coarse.error)
    p, c = p[np.isfinite(p)], c[np.isfinite(c)]
    return not p.size or not c.size or float(np.max(p)) <= float(np.max(c))


def coarse_note(estimates: tuple[Estimate, ...] | list[Estimate], why: str) -> str:
    """What a float16 reference can see: the size of its errors relative to its values."""
    rel = []
    for est in estimates:
        v, e = _flat(est.value), _flat(est.error)
        if v.size and v.shape == e.shape:
            with np.errstate(all="ignore"):
                r = e / np.maximum(np.abs(v), 1.0)
            rel.append(r[np.isfinite(r)])
    allr = np.concatenate(rel) if rel else np.zeros(0)
    if not allr.size:
        return f"float16 reference ({why})"
    return (
        f"float16 reference ({why}): its error estimates reach {np.max(allr):.1%} of the "
        f"derivative (median {np.median(allr):.1%}); rule errors smaller than ten times that "
        "are not detected"
    )


def _choose(
    f: Callable[..., Any],
    xs: tuple[Any, ...],
    run: Callable[[tuple[Any, ...]], Any],
    ests: Callable[[Any], list[Estimate]],
    y: Any,
) -> tuple[Any, str]:
    if not has_half(xs):
        return run(xs), ""
    coarse = run(xs)
    lifted = lift(f, *xs, y=y)
    if not lifted.used:
        return coarse, coarse_note(ests(coarse), lifted.note)
    precise = run(lifted.xs)
    pairs = list(zip(ests(precise), ests(coarse), strict=True))
    if all(_agrees(p, c) and _surer(p, c) for p, c in pairs):
        return precise, LIFTED_NOTE
    why = "f's float64 derivative disagrees with its float16 finite differences"
    return coarse, coarse_note(ests(coarse), why)


def half_broadcast_vjp(
    fdm: Any, g: Callable[..., Any], ybar: Any, *xs: Any, y: Any = None
) -> tuple[tuple[Estimate, ...], str]:
    """``broadcast_vjp`` for float16 inputs: ``(estimates, note)``; the estimates are float64
    (through float64 copies) when ``lift`` allows and they agree with the float16 ones."""

    def run(a: tuple[Any, ...]) -> tuple[Estimate, ...]:
        # y is g of the float16 inputs: it may only stand in for a call on those.
        return broadcast_vjp(fdm, g, ybar, *a, y=y if a is xs else None)

    return _choose(g, xs, run, lambda e: list(e), y)


def half_vjp_estimate(
    fdm: Any, f: Callable[..., Any], ybar: Any, *xs: Any
) -> tuple[tuple[Estimate, ...], str]:
    """``vjp_estimate`` (dense) for float16 inputs, as ``half_broadcast_vjp``."""
    return _choose(f, xs, lambda a: vjp_estimate(fdm, f, ybar, *a), lambda e: list(e), None)


def _split(pairs: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def half_broadcast_jvp(
    fdm: Any, g: Callable[..., Any], *pairs: Any, y: Any = None
) -> tuple[Estimate, str]:
    """``broadcast_jvp`` for float16 inputs: ``(estimate, note)``, as ``half_broadcast_vjp``."""
    xs, dxs = _split(pairs)
    return _choose(
        g,
        xs,
        lambda a: broadcast_jvp(fdm, g, *zip(a, dxs, strict=True), y=y if a is xs else None),
        lambda e: [e],
        y,
    )


def half_jvp_estimate(fdm: Any, f: Callable[..., Any], *pairs: Any) -> tuple[Estimate, str]:
    """``jvp_estimate`` (any function) for float16 inputs, as ``half_broadcast_vjp``."""
    xs, dxs = _split(pairs)
    return _choose(
        f, xs, lambda a: jvp_estimate(fdm, f, *zip(a, dxs, strict=True)), lambda e: [e], None
    )
