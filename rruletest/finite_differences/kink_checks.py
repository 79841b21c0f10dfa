"""Kink checks a tester runs on a rule's value: accepted subgradients, wrong values, jumps.

``kinks`` gives one-sided derivatives and classifies a value against them; this module applies
that to what the testers compare, so that each call is one line in a tester:

- ``broadcast_vjp_kinks``: a pullback's cotangents of an elementwise ``g`` (each element of
  each argument, two one-sided runs per argument whatever the size);
- ``broadcast_jvp_kinks``: an frule's ``ydot`` of an elementwise ``g`` (two runs);
- ``directional_kinks``: any other function, along one direction (a jvp, or ``<xbar, xdot>``
  for a pullback).

Each returns a ``KinkReport``: the ``Kind`` per compared element, masks of the elements the
tester accepts (a subgradient, or a jump where nothing can be compared) and fails, and one
line of text per finding.

>>> import numpy as np
>>> x = np.array([-1.0, 0.0, 0.0])
>>> ybar = np.array([1.0, 2.0, 2.0])
>>> (report,) = broadcast_vjp_kinks(None, np.abs, ybar, (np.array([-1.0, 0.5, 4.0]),), x)
>>> report.accepted.tolist(), report.failed.tolist()
([False, True, False], [False, False, True])
>>> print(report.lines[0])
args[0][2] = 0.0 is a kink: left derivative -1, right derivative 1; the rule gives 2 (its \
cotangent 4 for ybar 2), outside them: no one-sided derivative supports it (fails)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rruletest.finite_differences.kinks import Kind, Sides, classify, one_sided, supported
from rruletest.projection import is_differentiable
from rruletest.tangents import AbstractZero, ZeroTangent, unthunk

__all__ = [
    "MAX_LINES",
    "KinkReport",
    "broadcast_jvp_kinks",
    "broadcast_vjp_kinks",
    "describe",
    "directional_kinks",
    "findings",
]

F64 = npt.NDArray[np.float64]

#: Findings listed one per line in a report; more are counted in one last line.
MAX_LINES = 10


class KinkReport(NamedTuple):
    """What the one-sided derivatives say about a compared value, element by element.

    ``kinds``: a ``Kind`` per element of the value (an int8 array; a ``Kind`` for a scalar);
    ``lines``: one finding per kink or jump, for the report (accepted ones are notes).
    """

    kinds: Any
    lines: list[str]
    #: Elements that are no kink and whose value agrees with both one-sided derivatives (a
    #: tester accepts them where the central estimate disagreed: ``kinks.supported``).
    sides_agree: Any = False
    #: The one-sided derivatives themselves, shaped like the value (directional checks).
    sides: Sides | None = None

    @property
    def accepted(self) -> Any:
        """Elements not to fail: a value between the sides, or a jump (nothing to compare)."""
        return _mask(self.kinds, (Kind.INSIDE, Kind.JUMP))

    @property
    def failed(self) -> Any:
        """Elements at a kink whose value lies outside the one-sided derivatives."""
        return _mask(self.kinds, (Kind.OUTSIDE,))


def _mask(kinds: Any, wanted: tuple[Kind, ...]) -> Any:
    if isinstance(kinds, Kind):
        return kinds in wanted
    out = np.zeros(np.shape(kinds), dtype=bool)
    for k in wanted:
        out |= kinds == k
    return out


def findings(kinds: Any) -> list[tuple[int, ...]]:
    """The indices of the elements of ``kinds`` that are kinks or jumps: failing ones
    (``OUTSIDE``) first, then the others, each group in index order."""
    arr = np.asarray(kinds, dtype=np.int8)
    fail = arr == Kind.OUTSIDE
    rest = (arr == Kind.INSIDE) | (arr == Kind.JUMP)
    return [tuple(int(i) for i in idx) for m in (fail, rest) for idx in np.argwhere(m)]


def _summary(kinds: Any, shown: int) -> str:
    arr = np.asarray(kinds, dtype=np.int8)
    counts = [int(np.sum(arr == k)) for k in (Kind.OUTSIDE, Kind.INSIDE, Kind.JUMP)]
    return (
        f"... and {sum(counts) - shown} more elements at kinks or jumps (in all: {counts[0]} "
        f"outside, {counts[1]} inside, {counts[2]} at jumps)"
    )


def _num(v: float) -> str:
    return f"{v:.6g}"


def _where(root: str, index: tuple[int, ...]) -> str:
    return root if not index else f"{root}[{', '.join(str(i) for i in index)}]"


def describe(
    root: str,
    x: Any,
    sides: Sides,
    rule: Any,
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
    kinds: Any = None,
    notes: Callable[[tuple[int, ...]], str] | None = None,
    along: bool = False,
    limit: int = MAX_LINES,
) -> list[str]:
    """One line per element that is not ``SMOOTH`` or ``UNKNOWN``, naming it by ``root`` and
    its index (``args[0][3] = 0.0 is a kink: left derivative 0, right derivative 1; ...``).

    Args:
        root: the path of the value (``"args[0]"``, ``"output"``).
        x: the value shown for each element (the argument, of the output's shape for an
            elementwise function), or ``None`` to show none.
        sides, rule, rtol, atol: as for ``classify``.
        kinds: the classification to report, if not ``classify``'s of ``rule`` (a tester that
            judged another quantity, such as a cotangent, passes its own).
        notes: ``notes(index)`` is text added after the rule's value at ``index``.
        along: say "at a kink along the tangent" (a directional derivative, not a partial one).
        limit: at most this many lines (failing elements first), then one line of counts.
    """
    if kinds is None:
        kinds = classify(rule, sides, rtol=rtol, atol=atol)
    kinds_arr = np.asarray(kinds, dtype=np.int8)
    shape = kinds_arr.shape
    left = np.broadcast_to(np.asarray(sides.left, np.float64), shape)
    right = np.broadcast_to(np.asarray(sides.right, np.float64), shape)
    r = np.broadcast_to(np.asarray(rule, np.float64), shape)
    xv = None if x is None else np.broadcast_to(np.asarray(x), shape)
    what = "is at a kink along the tangent" if along else "is a kink"
    lines = []
    found = findings(kinds_arr)
    for index in found[:limit]:
        kind = Kind(int(kinds_arr[index]))
        where = _where(root, index)
        if xv is not None:
            where += f" = {float(np.real(xv[index]))!r}"
        value = _num(float(r[index])) + ("" if notes is None else notes(index))
        if kind is Kind.JUMP:
            lines.append(
                f"{where}: f jumps there, so it has no derivative; the rule's {value} was not "
                "compared"
            )
            continue
        head = (
            f"{where} {what}: left derivative {_num(float(left[index]))}, "
            f"right derivative {_num(float(right[index]))}; the rule gives {value}"
        )
        verdict = (
            "between them (accepted)"
            if kind is Kind.INSIDE
            else "outside them: no one-sided derivative supports it (fails)"
        )
        lines.append(f"{head}, {verdict}")
    if len(found) > limit:
        lines.append(_summary(kinds_arr, limit))
    return lines


def _sum_to(arr: F64, shape: tuple[int, ...]) -> F64:
    """Sum ``arr`` over the axes broadcasting added to reach it from ``shape``."""
    lead = arr.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and arr.shape[lead + i] != 1
    )
    out = arr.sum(axis=axes) if axes else arr
    return np.asarray(out, dtype=np.float64).reshape(shape)


def _cotangent_sides(sides: Sides, ybar: F64, shape: tuple[int, ...]) -> Sides:
    """Bounds on ``unbroadcast(ybar * d)`` over the ``d`` between the sides (per element
    independently), as ``Sides(lower, error, upper, error, jump)``."""
    with np.errstate(invalid="ignore"):
        a, b = ybar * sides.left, ybar * sides.right
        err = np.abs(ybar) * (np.asarray(sides.left_error) + np.asarray(sides.right_error)) / 2
    used = ybar != 0
    lo = _sum_to(np.where(used, np.minimum(a, b), 0.0), shape)
    hi = _sum_to(np.where(used, np.maximum(a, b), 0.0), shape)
    e = _sum_to(np.where(used, err, 0.0), shape)
    jump = _sum_to(np.where(used & np.asarray(sides.jump, dtype=bool), 1.0, 0.0), shape) > 0
    return Sides(lo, e, hi, e, jump)


def _reduced_lines(root: str, x: Any, bounds: Sides, value: F64, kinds: Any) -> list[str]:
    lines = []
    kinds_arr = np.asarray(kinds, dtype=np.int8)
    xv = np.broadcast_to(np.asarray(x), np.shape(value))
    found = findings(kinds_arr)
    for index in found[:MAX_LINES]:
        kind = Kind(int(kinds_arr[index]))
        where = root + (f"[{', '.join(map(str, index))}]" if index else "")
        where += f" = {float(np.real(xv[index]))!r}"
        if kind is Kind.JUMP:
            lines.append(
                f"{where} feeds output elements where f jumps: its cotangent was not compared"
            )
            continue
        lo, hi, v = float(bounds.left[index]), float(bounds.right[index]), float(value[index])
        verdict = "inside (accepted)" if kind is Kind.INSIDE else "outside (fails)"
        lines.append(
            f"{where} feeds output elements at kinks: its cotangent may lie anywhere in "
            f"[{lo:.6g}, {hi:.6g}]; the rule gives {v:.6g}, {verdict}"
        )
    if len(found) > MAX_LINES:
        lines.append(_summary(kinds_arr, MAX_LINES))
    return lines


def broadcast_vjp_kinks(
    fdm: Any,
    g: Callable[..., Any],
    ybar: Any,
    xbars: Sequence[Any],
    *xs: Any,
    rtol: float = 0.0,
    atol: float = 0.0,
    root: str = "args",
    first: int = 0,
    central: Sequence[Any] | None = None,
) -> tuple[KinkReport | None, ...]:
    """Kink checks of a pullback's cotangents ``xbars`` of an elementwise ``g`` at ``xs``.

    ``xbars`` holds the rule's cotangent per argument (``None``, zeros or ``NoTangent()``
    where it gave none). An element's accepted set is every ``unbroadcast(ybar * d)`` with
    each partial ``d`` between its one-sided values (a box: for ``maximum`` at a tie, values
    ``(1, 1)`` for both arguments are accepted here, although only ``(t, 1 - t)`` are
    subgradients; the testers check such coordinates together too, with the ``sides`` each
    report carries where the argument has the output's shape: ``testers._joint``).

    ``first`` is the position of ``xs[0]`` among the tester's arguments, for the paths
    (``1`` under ``broadcasted``, whose ``args[0]`` is the function); ``central`` the central
    estimates of the cotangents, if known (see ``kinks.supported``).

    Returns:
        Per argument a ``KinkReport`` in the argument's shape, ``None`` where nothing was
        checked (a non-differentiable argument, no cotangent, or a zero ``ybar``).
    """
    ybar = unthunk(ybar)
    out: list[KinkReport | None] = []
    zero_ybar = ybar is None or isinstance(ybar, AbstractZero)
    shape = np.broadcast_shapes(*(np.shape(x) for x in xs))
    yb = np.zeros(shape) if zero_ybar else np.broadcast_to(np.asarray(ybar, np.float64), shape)
    for j, (x, xbar) in enumerate(zip(xs, xbars, strict=True)):
        xbar = unthunk(xbar)
        if zero_ybar or not is_differentiable(x) or xbar is None or isinstance(xbar, AbstractZero):
            out.append(None)
            continue
        pairs = [
            (xi, np.ones(np.shape(xi)) if i == j else ZeroTangent()) for i, xi in enumerate(xs)
        ]
        sides = one_sided(fdm, g, *pairs, elementwise=True)
        try:
            value = np.broadcast_to(np.asarray(xbar, dtype=np.float64), np.shape(x))
        except (TypeError, ValueError):  # not a cotangent of x: other checks say so
            out.append(None)
            continue
        bounds = _cotangent_sides(sides, np.asarray(yb, dtype=np.float64), np.shape(x))
        kinds = classify(value, bounds, rtol=rtol, atol=atol)
        c = None if central is None else central[j]
        agree = supported(value, bounds, rtol=rtol, atol=atol, central=c)
        agree = np.asarray(agree) & (kinds == Kind.SMOOTH)
        name = f"{root}[{j + first}]"
        if np.shape(x) == shape:
            with np.errstate(divide="ignore", invalid="ignore"):
                partial = np.where(yb != 0, value / np.where(yb != 0, yb, 1.0), np.nan)

            def notes(i: tuple[int, ...], value: F64 = value) -> str:
                return f" (its cotangent {value[i]:.6g} for ybar {yb[i]:.6g})"

            lines = describe(name, x, sides, partial, kinds=kinds, notes=notes)
        else:
            lines = _reduced_lines(name, x, bounds, value, kinds)
        # The sides along this argument alone, where they are per output element: a tester
        # checks the coordinates it accepted one by one together too (their kinks may be one).
        out.append(KinkReport(kinds, lines, agree, sides if np.shape(x) == shape else None))
    return tuple(out)


def broadcast_jvp_kinks(
    fdm: Any,
    g: Callable[..., Any],
    ydot: Any,
    *pairs: Any,
    rtol: float = 0.0,
    atol: Any = 0.0,
    root: str = "output",
    central: Any = None,
) -> KinkReport:
    """Kink checks of an frule's ``ydot`` for an elementwise ``g`` along ``pairs``' tangents:
    per output element, ``ydot`` must lie between the one-sided directional derivatives."""
    sides = one_sided(fdm, g, *pairs, elementwise=True)
    return _along(sides, np.asarray(unthunk(ydot), dtype=np.float64), rtol, atol, root, central)


def directional_kinks(
    fdm: Any,
    f: Callable[..., Any],
    value: Any,
    *pairs: Any,
    rtol: float = 0.0,
    atol: Any = 0.0,
    root: str = "output",
    central: Any = None,
) -> KinkReport:
    """Kink checks of a directional derivative ``value`` of any ``f`` along ``pairs``'
    tangents (an frule's ``ydot`` flattened as ``to_vec`` does, or for a pullback the scalar
    ``<xbar, xdot>`` against ``f = lambda *a: <ybar, f(*a)>``). ``atol`` is a number or, per
    element, an array of ``value``'s size."""
    sides = one_sided(fdm, f, *pairs)
    v = np.asarray(value, dtype=np.float64)
    if v.ndim > 1 and v.size == np.size(sides.left):  # findings indexed like the output
        sides = Sides(*(np.reshape(np.asarray(part), v.shape) for part in sides))
    else:
        v = v.reshape(np.shape(sides.left))
    c = None if central is None else np.reshape(np.asarray(central, np.float64), v.shape)
    allow = np.asarray(atol, dtype=np.float64)
    return _along(sides, v, rtol, allow.reshape(v.shape) if allow.ndim else allow, root, c)


def _along(
    sides: Sides, value: F64, rtol: float, atol: Any, root: str, central: Any = None
) -> KinkReport:
    """The report of a directional derivative ``value`` against its one-sided ``sides``."""
    kinds = classify(value, sides, rtol=rtol, atol=atol)
    agree = np.asarray(supported(value, sides, rtol=rtol, atol=atol, central=central)) & (
        np.asarray(kinds) == Kind.SMOOTH
    )
    lines = describe(root, None, sides, value, kinds=kinds, along=True)
    return KinkReport(kinds, lines, agree, sides)
