"""Subgradients accepted one coordinate at a time, checked together.

At a kink the kink checks (``_findings``) accept a cotangent coordinate that lies between its
one-sided derivatives. Coordinates accepted one by one need not be a subgradient together: at
a tie of ``max(a, b)`` each entry of ``(1, 1)`` lies in ``[0, 1]``, but along ``(1, 1)`` the
slope is 1, not 2. So where several were accepted, the direction that moves them all at once
is checked too: the pullback's ``<xbar, d>`` must lie between the one-sided derivatives along
``d``. Kinks of their own (``relu(a) - relu(b)`` at 0, where ``(1, 0)`` is a subgradient
though the slope along ``(1, 1)`` is 0) add up: the one-sided derivatives along ``d`` are then
the sums of the coordinates' own, and nothing new is learned.

``dense_jointly`` does it for a general pullback (one direction through every accepted
coordinate), ``broadcast_jointly`` for a broadcast one, output element by output element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.defaults import ERROR_FACTOR
from rruletest.finite_differences.kink_checks import broadcast_jvp_kinks, directional_kinks
from rruletest.finite_differences.kinks import Kind
from rruletest.tangents import AbstractZero, ZeroTangent, unthunk

__all__ = ["Taken", "broadcast_jointly", "dense_jointly", "sides_of"]

Taken = dict[int, tuple[np.ndarray, np.ndarray]]  # per argument: the accepted, the allowed

#: Joint elements described in a report, at most.
MAX_LINES = 5


def sides_of(rep: Any) -> np.ndarray:
    """A scalar directional check's (left, right) one-sided derivatives (NaN if none)."""
    if rep.sides is None:
        return np.full(2, np.nan)
    return np.array([float(np.asarray(rep.sides.left)), float(np.asarray(rep.sides.right))])


def dense_jointly(fdm: Any, h: Callable[..., Any], xs: Sequence[Any], xbars: Sequence[Any],
                  taken: Taken, paths: Sequence[str], sums: np.ndarray) -> str | None:  # fmt: skip
    """Why the coordinates of a general pullback accepted one by one (``taken``) are no
    subgradient together, or None when they are; ``h`` is ``<ybar, f>`` and ``sums`` the
    accepted coordinates' own one-sided derivatives, added up."""
    pairs: list[tuple[Any, Any]] = []
    value, allow = 0.0, 0.0
    for j, x in enumerate(xs):
        if j not in taken:
            pairs.append((x, ZeroTangent()))
            continue
        mask, tol = taken[j]
        arr = np.asarray(x)
        d = mask.astype(arr.dtype)
        pairs.append((x if arr.ndim else arr, d if arr.ndim else d[()]))
        value += float(np.asarray(unthunk(xbars[j]), dtype=np.float64)[mask].sum())
        allow += float(tol[mask].sum())
    rep = directional_kinks(fdm, h, value, *pairs, atol=allow)
    joint = sides_of(rep)
    if bool(rep.accepted) or bool(rep.sides_agree) or not np.isfinite(joint).all():
        return None
    if np.allclose(joint, sums, rtol=1e-6, atol=allow):  # separate kinks: checked one by one
        return None
    where = " and ".join(
        f"{paths[j]}[{', '.join(map(str, i))}]" if i else paths[j]
        for j, (mask, _) in taken.items()
        for i in (tuple(int(k) for k in idx) for idx in np.argwhere(mask))
    )
    left, right = joint
    return (
        f"{where}: each lies between its one-sided derivatives, but not together: moving them "
        f"all at once, the pullback gives {value:.6g} where the one-sided derivatives are "
        f"{left:.6g} and {right:.6g}, so they are no subgradient (fails)"
    )


def broadcast_jointly(
    fdm: Any,
    g: Callable[..., Any],
    ybar: Any,
    xbars: Sequence[Any],
    xs: Sequence[Any],
    reports: Sequence[Any],
    accepted: Sequence[np.ndarray | None],
    tolerances: Sequence[tuple[float, Any]],
    first: int,
) -> tuple[list[np.ndarray | None], list[str]]:
    """For a broadcast pullback: per argument, the elements accepted one by one (``accepted``,
    from ``reports`` of ``broadcast_vjp_kinks``) that are no subgradient together with the
    other arguments' at the same output element (None where none), and the lines saying so.

    Only arguments of the output's shape take part: a broadcast argument's cotangent sums
    output elements, whose partials it no longer tells apart (those keep the box).
    """
    n = len(xs)
    none: list[np.ndarray | None] = [None] * n
    yb_raw = unthunk(ybar)
    if yb_raw is None or isinstance(yb_raw, AbstractZero):
        return none, []
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    own: list[np.ndarray | None] = []
    for x, rep, acc in zip(xs, reports, accepted, strict=True):
        full = rep is not None and rep.sides is not None and np.shape(x) == shape
        own.append(np.asarray(acc, dtype=bool) if full and acc is not None else None)
    count = sum(m.astype(np.int64) for m in own if m is not None)
    if not np.any(np.asarray(count) >= 2):
        return none, []
    yb = np.broadcast_to(np.asarray(yb_raw, dtype=np.float64), shape)
    joint = (np.asarray(count) >= 2) & (yb != 0)
    # The rule's directional derivative along d (1 at each argument's accepted elements of a
    # joint output element) is the sum of its partials there: xbar / ybar, added up.
    pairs: list[tuple[Any, Any]] = []
    rule = np.zeros(shape)
    sums_left, sums_right, allow = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for j, (x, m) in enumerate(zip(xs, own, strict=True)):
        if m is None:
            pairs.append((x, ZeroTangent()))
            continue
        d = joint & m
        pairs.append((x, d.astype(np.float64)))
        xbar = np.broadcast_to(np.asarray(unthunk(xbars[j]), dtype=np.float64), shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            rule += np.where(d, xbar / np.where(yb != 0, yb, 1.0), 0.0)
            rtol, tol = tolerances[j]
            allow += np.where(d, (rtol * np.abs(xbar) + np.asarray(tol)) / np.abs(yb), 0.0)
        sides = reports[j].sides
        sums_left += np.where(d, np.asarray(sides.left, dtype=np.float64), 0.0)
        sums_right += np.where(d, np.asarray(sides.right, dtype=np.float64), 0.0)
    rep = broadcast_jvp_kinks(fdm, g, rule, *pairs, atol=np.where(joint, allow, 0.0))
    if rep.sides is None:
        return none, []
    left = np.asarray(rep.sides.left, dtype=np.float64)
    right = np.asarray(rep.sides.right, dtype=np.float64)
    kinds = np.asarray(rep.kinds)
    with np.errstate(invalid="ignore"):
        errors = np.asarray(rep.sides.left_error) + np.asarray(rep.sides.right_error)
        scale = allow + ERROR_FACTOR * errors + 1e-6 * np.maximum(np.abs(left), np.abs(right))
        # no kink along d, and the partials add up to the derivative there
        agree = (np.abs(rule - left) <= scale) & (np.abs(rule - right) <= scale)
        # separate kinks: along d the one-sided derivatives are the coordinates' own, added up
        apart = (np.abs(left - sums_left) <= scale) & (np.abs(right - sums_right) <= scale)
    fine = (kinds == Kind.INSIDE) | (kinds == Kind.JUMP) | agree
    bad = joint & ~fine & ~apart & np.isfinite(left) & np.isfinite(right)
    if not bad.any():
        return none, []
    lines = []
    for index in [tuple(int(k) for k in i) for i in np.argwhere(bad)][:MAX_LINES]:
        where = " and ".join(
            f"args[{j + first}][{', '.join(map(str, index))}]"
            for j, m in enumerate(own)
            if m is not None and m[index]
        )
        lines.append(
            f"{where}: each lies between its one-sided derivatives, but not together: moving "
            f"them all at once, the pullback's partials add up to {rule[index]:.6g} where the "
            f"one-sided derivatives are {left[index]:.6g} and {right[index]:.6g}, so they are "
            "no subgradient (fails)"
        )
    if bad.sum() > MAX_LINES:
        lines.append(f"... and {int(bad.sum()) - MAX_LINES} more output elements like these")
    return [None if m is None else (bad & m) for m in own], lines
