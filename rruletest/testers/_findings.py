"""Findings beyond a mismatch: kinks, the function's own noise, float16 references.

The numerical reference (``_reference``) asks this module, where a rule and finite differences
disagree, whether the disagreement is a finding of its own:

- a **kink**: where the one-sided derivatives of an elementwise function differ, a central
  difference is a convention nobody chose. Elements whose rule value lies between the one-sided
  values (a subgradient) are accepted with a note; outside them they fail and say so
  (``kinks_vjp``, ``kinks_jvp``);
- **noise**: an iterative solver, a truncated series or a float32 kernel inside a float64
  function limits what finite differences can see; the level measured and what to pass are
  noted next to the mismatch (``noise_note``);
- **float16**: a float16 function's references are computed through float64 copies of its
  inputs when that is sound, else the report says how little was checked (``half_*`` of
  ``rruletest.finite_differences.half``, chosen in ``_reference``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.finite_differences.kink_checks import (
    broadcast_jvp_kinks,
    broadcast_vjp_kinks,
    directional_kinks,
)
from rruletest.finite_differences.kinks import Kind
from rruletest.finite_differences.noise import measure_noise
from rruletest.finite_differences.to_vec import to_vec
from rruletest.tangents import AbstractZero, unthunk
from rruletest.testers._fd_inputs import widen
from rruletest.testers._joint import Taken, broadcast_jointly, dense_jointly, sides_of
from rruletest.walk import leaves, render_path

__all__ = [
    "contracted",
    "kinks_dense",
    "kinks_dense_vjp",
    "kinks_directional",
    "kinks_jvp",
    "kinks_vjp",
    "noise_note",
    "one_sided_evidence",
    "out_of_tolerance",
]

#: At most this many mismatched coordinates of a general pullback get one-sided checks (two
#: one-sided finite differences each); the others stay as they are.
DENSE_KINK_COORDINATES = 8


_FLOATS = frozenset({float, np.float64})
_COMPLEX = frozenset({complex, np.complex128, np.complex64})


def _all_finite(x: Any) -> bool:
    """Whether every element of ``x`` is finite (a float without numpy)."""
    return math.isfinite(x) if type(x) is float else bool(np.isfinite(x).all())


def _real(v: Any) -> np.ndarray | None:
    if type(v) is np.ndarray:  # a plain array (the common case): as the checks below take it
        return v if v.dtype.kind in "fiu" else None
    v = unthunk(v)
    if isinstance(v, AbstractZero) or v is None:
        return None
    try:
        arr = np.asarray(v)
    except Exception:
        return None
    return arr if arr.dtype.kind in "fiu" else None


def out_of_tolerance(actual: Any, expected: Any, rtol: float, atol: Any) -> np.ndarray | None:
    """The elements where ``actual`` and ``expected`` differ beyond ``atol + rtol|expected|``
    (a boolean array), or None when they are not real arrays of one shape."""
    if type(actual) in _COMPLEX and type(expected) in _COMPLEX:
        return None  # complex numbers: not real (what _real says of them)
    if all(type(v) in _FLOATS for v in (actual, expected, rtol, atol)):
        # numbers (a scalar function's): the same float64 arithmetic, without arrays (and
        # without numpy's overflow warning, which the numerical references silence anyway)
        x, y = float(actual), float(expected)
        bad = abs(x - y) > float(atol) + float(rtol) * abs(y)
        return np.asarray(bad and math.isfinite(x) and math.isfinite(y))
    a, e = _real(actual), _real(expected)
    if a is None or e is None or a.shape != e.shape:
        return None
    with np.errstate(invalid="ignore"):
        bad = np.abs(a - e) > np.asarray(atol) + rtol * np.abs(e)
    if not bad.any():  # (the common case: none to keep to the finite elements)
        return np.asarray(bad)
    return np.asarray(bad & np.isfinite(a) & np.isfinite(e))


def _accept(expected: Any, actual: Any, mask: np.ndarray) -> Any:
    """``expected`` with the elements of ``mask`` replaced by ``actual``'s (accepted values)."""
    out = np.array(expected, dtype=np.result_type(np.asarray(expected), np.asarray(actual)))
    out[mask] = np.asarray(actual)[mask]
    return out.reshape(np.shape(expected))


def _agreed(root: str, rep: Any, mask: np.ndarray, shape: tuple[int, ...]) -> tuple[Any, list[str]]:
    """The elements of ``mask`` the one-sided derivatives support (``KinkReport.sides_agree``),
    and the note that says so."""
    agree = np.asarray(rep.sides_agree, dtype=bool).reshape(shape) & mask
    if not agree.any():
        return agree, []
    first = tuple(int(i) for i in np.argwhere(agree)[0])
    where = f"{root}[{', '.join(map(str, first))}]" if first else root
    n = int(agree.sum())
    return agree, [
        f"{where}{f' and {n - 1} more' if n > 1 else ''}: the central difference disagrees "
        "with the rule, but the backward and forward differences agree with it (a stencil "
        "across a point where f or f' is not smooth, such as Huber's loss at |x| = delta): "
        "accepted"
    ]


def kinks_vjp(
    fdm: Any,
    g: Callable[..., Any],
    ybar: Any,
    xbars: Sequence[Any],
    xs: Sequence[Any],
    expected: Sequence[Any],
    tolerances: Sequence[tuple[float, Any]],
) -> tuple[list[Any], list[str]]:
    """For a broadcast pullback: the expected cotangents with accepted subgradients put in,
    and the finding lines (notes). Runs only where some element is out of tolerance."""
    masks = [
        out_of_tolerance(a, e, r, t)
        for a, e, (r, t) in zip(xbars, expected, tolerances, strict=True)
    ]
    if not any(m is not None and m.any() for m in masks):
        return list(expected), []
    rtol = max(r for r, _ in tolerances)
    reports = broadcast_vjp_kinks(
        fdm, g, ybar, xbars, *xs, rtol=rtol, first=1, central=list(expected)
    )
    out, lines = list(expected), []
    inside: list[np.ndarray | None] = []  # per argument: subgradients accepted one by one
    for j, (rep, mask) in enumerate(zip(reports, masks, strict=True)):
        inside.append(None)
        if rep is None or mask is None or not mask.any():
            continue
        agree, notes = _agreed(f"args[{j + 1}]", rep, mask, mask.shape)
        accepted = (np.asarray(rep.accepted) & mask) | agree
        if accepted.any():
            out[j] = _accept(expected[j], xbars[j], accepted)
            inside[j] = (np.asarray(rep.kinds) == Kind.INSIDE) & mask
        if (np.asarray(rep.accepted | rep.failed) & mask).any():
            lines += list(rep.lines)
        lines += notes
    if sum(m is not None and bool(m.any()) for m in inside) > 1:  # together too?
        bad, joint = broadcast_jointly(fdm, g, ybar, xbars, xs, reports, inside, tolerances, 1)
        for j, b in enumerate(bad):
            if b is not None and b.any():
                out[j] = _rejected(out[j], expected[j], b)
        lines += joint
    return out, lines


def kinks_jvp(
    fdm: Any, g: Callable[..., Any], ydot: Any, pairs: Sequence[Any], expected: Any,
    rtol: float, atol: Any,
) -> tuple[Any, list[str]]:  # fmt: skip
    """For a broadcast frule: ``expected`` with accepted one-sided values put in, and lines."""
    mask = out_of_tolerance(ydot, expected, rtol, atol)
    if mask is None or not mask.any():
        return expected, []
    rep = broadcast_jvp_kinks(fdm, g, ydot, *pairs, rtol=rtol, root="ydot", central=expected)
    agree, notes = _agreed("ydot", rep, mask, mask.shape)
    accepted = (np.asarray(rep.accepted) & mask) | agree
    out = _accept(expected, ydot, accepted) if accepted.any() else expected
    shown = (np.asarray(rep.accepted | rep.failed) & mask).any()
    return out, (list(rep.lines) if shown else []) + notes


def kinks_directional(
    fdm: Any, g: Callable[..., Any], ydot: Any, pairs: Sequence[Any], expected: Any,
    error: Any, rtol: float, atol: Any,
) -> tuple[Any, Any, list[str]]:  # fmt: skip
    """For any frule (not a broadcast): ``expected`` with accepted one-sided values put in,
    its ``error`` where the one-sided derivatives stand in, and the finding lines. Runs only
    where some element is out of tolerance or has no central estimate, and only for a real
    array or float ``ydot``: a ``sort`` along a direction that makes two entries cross
    near the point has one-sided derivatives that differ there, and a central difference
    averages them; the rule's value is then checked against the two sides instead. An element
    the central difference could not estimate (``abs`` of an entry at its kink, 0) is checked
    against the two sides too (``one_sided_evidence``)."""
    real = unthunk(ydot)
    if not isinstance(real, float | complex | np.ndarray | np.number):  # (a structure)
        return _kinks_flattened(fdm, g, real, pairs, expected, error, rtol, atol)
    tol = widen(atol, error)
    mask = out_of_tolerance(ydot, expected, rtol, tol)
    if mask is None:
        return expected, error, []
    if not mask.any() and _all_finite(tol):  # (the common case: all compared)
        return expected, error, []
    value = np.asarray(real, dtype=np.float64)
    void = _void(value, error)
    if not mask.any() and not void.any():
        return expected, error, []
    # Each element's own tolerance: one element the engine could not estimate (an infinite
    # tolerance) must not widen the others'; those are held to the plain ``atol``.
    allow = np.where(void, np.asarray(atol, np.float64), np.asarray(tol, np.float64))
    rep = directional_kinks(
        fdm, g, value, *pairs, rtol=rtol, atol=np.broadcast_to(allow, value.shape),
        root="ydot", central=expected,
    )  # fmt: skip
    agree, notes = _agreed("ydot", rep, mask, value.shape)
    accepted = (np.asarray(rep.accepted).reshape(value.shape) & mask) | agree
    out = _accept(expected, ydot, accepted) if accepted.any() else expected
    out, err = one_sided_evidence(rep, value, out, error, void)
    looked = mask | void
    shown = (np.asarray(rep.accepted | rep.failed).reshape(value.shape) & looked).any()
    return out, err, (list(rep.lines) if shown else []) + notes


def _kinks_flattened(
    fdm: Any, g: Callable[..., Any], ydot: Any, pairs: Sequence[Any], expected: Any,
    error: Any, rtol: float, atol: Any,
) -> tuple[Any, Any, list[str]]:  # fmt: skip
    """``kinks_directional`` of a structured ``ydot`` (a tuple or namedtuple of outputs: the
    ``values`` and integer ``indices`` of ``torch.sort``) on its real coordinates as ``to_vec``
    flattens them, which is also how the one-sided runs flatten ``g``'s outputs; the accepted
    values and errors are put back into ``expected``'s structure. Nothing changes where the
    three do not have the same coordinates (a zero tangent for an output, say)."""
    try:
        value, _ = to_vec(ydot)
        flat, back = to_vec(expected)
        err, err_back = to_vec(error)
        tol = atol if np.ndim(atol) == 0 else to_vec(atol)[0]
    except Exception:
        return expected, error, []
    sizes = {value.size, flat.size, err.size} | ({np.size(tol)} if np.ndim(tol) else set())
    if len(sizes) != 1 or value.size == 0:
        return expected, error, []
    out, new_err, lines = kinks_directional(fdm, g, value, pairs, flat, err, rtol, tol)
    lines = _named_coordinates(lines, back, value.size)
    if out is flat and new_err is err:
        return expected, error, lines
    return back(np.asarray(out, np.float64)), err_back(np.asarray(new_err, np.float64)), lines


def _named_coordinates(lines: list[str], back: Any, n: int) -> list[str]:
    """``lines`` about flat coordinates (``ydot[6]``) with each coordinate's own path
    (``ydot[1][1]``): the structure rebuilt from the coordinates' own numbers says which."""
    paths: dict[int, str] = {}
    for path, leaf in leaves(back(np.arange(n, dtype=np.float64)), root="ydot"):
        arr = np.asarray(leaf)
        if arr.dtype.kind != "f":
            continue  # (complex coordinates stay flat)
        for idx in np.ndindex(arr.shape):
            inner = f"[{', '.join(map(str, idx))}]" if idx else ""
            paths[int(arr[idx])] = render_path("ydot", path) + inner

    def name(match: re.Match[str]) -> str:
        return paths.get(int(match.group(1)), match.group(0))

    return [re.sub(r"^ydot\[(\d+)\]", name, line) for line in lines]


def _void(value: Any, error: Any) -> np.ndarray:
    """Where the rule's value is finite and the central estimate has none (infinite error)."""
    v = np.asarray(value, dtype=np.float64)
    e = _real(error)
    if e is None or np.broadcast_shapes(e.shape, v.shape) != v.shape:
        return np.zeros(v.shape, dtype=bool)
    out: np.ndarray = np.isfinite(v) & ~np.isfinite(np.broadcast_to(e, v.shape))
    return out


def one_sided_evidence(rep: Any, value: Any, expected: Any, error: Any, void: Any) -> Any:
    """``(expected, error)`` with the one-sided derivatives of ``rep`` standing in where the
    central estimate is ``void``: at a kink the rule's value, with the larger side's error,
    if it lies between the sides (a subgradient), else the nearer side (it then fails); where
    the sides agree, their mean, with their spread and errors as its error. Elements whose
    sides are unknown or across a jump stay without an estimate."""
    sides = rep.sides
    v = np.asarray(value, dtype=np.float64)
    if sides is None or not np.any(void):
        return expected, error
    left, lerr, right, rerr = (
        np.broadcast_to(np.asarray(a, np.float64), v.shape)
        for a in (sides.left, sides.left_error, sides.right, sides.right_error)
    )
    kinds = np.broadcast_to(np.asarray(rep.kinds), v.shape)
    known = void & np.isfinite(left) & np.isfinite(right) & np.isfinite(lerr) & np.isfinite(rerr)
    inside = known & (kinds == Kind.INSIDE)
    outside = known & (kinds == Kind.OUTSIDE)
    smooth = known & (kinds == Kind.SMOOTH)
    if not (inside | outside | smooth).any():
        return expected, error
    nearer_left = np.abs(v - left) <= np.abs(v - right)
    near, near_err = np.where(nearer_left, left, right), np.where(nearer_left, lerr, rerr)
    wide = np.maximum(lerr, rerr)
    cases = [inside, outside, smooth]
    stand_in = np.select(cases, [v, near, (left + right) / 2])
    stand_err = np.select(cases, [wide, near_err, wide + np.abs(right - left) / 2])
    take = inside | outside | smooth
    exp = np.where(take, stand_in, np.asarray(expected, dtype=np.float64))
    err = np.where(take, stand_err, np.broadcast_to(np.asarray(error, np.float64), v.shape))
    return exp, err


def contracted(g: Callable[..., Any], yb: Any) -> Callable[..., Any]:
    """``*args -> <yb, g(*args)>`` on ``to_vec`` coordinates (NaN if the output's size
    changed): the scalar whose derivatives along the inputs a pullback gives."""

    def h(*args: Any) -> Any:
        y, _ = to_vec(g(*args))
        return np.dot(yb, y) if y.shape == yb.shape else np.nan

    return h


def kinks_dense_vjp(
    fdm: Any, g: Callable[..., Any], ybar: Any, xs: Sequence[Any], xbars: Sequence[Any],
    expected: Sequence[Any], tolerances: Sequence[tuple[float, Any]], paths: Sequence[str],
    errors: Sequence[Any] | None = None, atol: float = 0.0,
) -> tuple[list[Any], list[Any] | None, list[str]]:  # fmt: skip
    """For any pullback (not a broadcast), checked against a dense vjp: each mismatched
    coordinate ``i`` of a real argument (at most ``DENSE_KINK_COORDINATES`` in all) is the
    partial derivative of ``<ybar, g(x)>`` along ``e_i``, and is checked against its one-sided
    values as ``kinks_directional`` does for an frule: a matrix 1-norm at an entry of 1e-6 has
    ``|x|``'s kink within the step, and a central difference averages its two slopes. Given
    the dense vjp's ``errors``, a coordinate it could not estimate (an entry at ``abs``'s
    kink) is checked against its one-sided values too (held to the plain ``atol``), and the
    errors are returned with the one-sided ones standing in (``one_sided_evidence``)."""
    out, lines = list(expected), []
    errs = None if errors is None else list(errors)
    ybar = unthunk(ybar)
    yb: Any = None  # ybar's coordinates, flattened only once a coordinate is to be checked
    budget = DENSE_KINK_COORDINATES
    taken: Taken = {}
    sums = np.zeros(2)  # the accepted coordinates' one-sided derivatives, added up
    rows = zip(xs, xbars, expected, tolerances, strict=True)
    for j, (x, xbar, exp, (rtol, tol)) in enumerate(rows):
        mask = out_of_tolerance(xbar, exp, rtol, tol)
        arr = np.asarray(x)
        if mask is None or arr.dtype.kind != "f" or mask.shape != arr.shape:
            continue
        if not mask.any() and (errs is None or _all_finite(errs[j])):
            continue  # (the common case: all compared, and within tolerance)
        value = np.asarray(unthunk(xbar), dtype=np.float64)
        void = np.zeros(mask.shape, dtype=bool) if errs is None else _void(value, errs[j])
        if not (mask | void).any():
            continue
        if yb is None:
            yb = to_vec(ybar)[0]
        allow = np.where(void, atol, np.broadcast_to(np.asarray(tol, np.float64), mask.shape))
        accepted = np.zeros(mask.shape, dtype=bool)
        for index in (tuple(int(i) for i in idx) for idx in np.argwhere(mask | void)[:budget]):
            budget -= 1

            def h(v: Any, j: int = j, yb: Any = yb) -> Any:
                args = list(xs)
                args[j] = v
                return contracted(g, yb)(*args)

            e = np.zeros(arr.shape, dtype=arr.dtype)
            e[index] = 1
            root = f"{paths[j]}[{', '.join(map(str, index))}]" if index else paths[j]
            rep = directional_kinks(
                fdm, h, value[index], (x if arr.ndim else arr, e if arr.ndim else e[()]),
                rtol=rtol, atol=float(allow[index]), root=root,
                central=np.asarray(exp, dtype=np.float64)[index],
            )  # fmt: skip
            if void[index] and errs is not None:
                stand, err = one_sided_evidence(rep, value[index], out[j][index], np.inf, True)
                if np.isfinite(err):
                    out[j] = _put(out[j], index, stand)
                    errs[j] = _put(errs[j], index, err)
            else:
                agree, notes = _agreed(root, rep, np.ones((), dtype=bool), ())
                if bool(rep.accepted) or bool(agree):
                    accepted[index] = True
                    sums += sides_of(rep)
                lines += notes
            if bool(rep.accepted) or bool(rep.failed):
                lines += list(rep.lines)
        if accepted.any():
            out[j] = _accept(out[j], xbar, accepted)
            taken[j] = (accepted, allow)
        if budget <= 0:
            break
    if sum(int(m.sum()) for m, _ in taken.values()) > 1:  # accepted one by one: together too?
        line = dense_jointly(fdm, contracted(g, yb), xs, xbars, taken, paths, sums)
        if line is not None:
            lines.append(line)
            out = [_rejected(v, expected[j], taken[j][0]) if j in taken else v
                   for j, v in enumerate(out)]  # fmt: skip
    return out, errs, lines


def _rejected(out: Any, expected: Any, mask: np.ndarray) -> Any:
    """``out`` with the central estimate back at ``mask`` (accepted values taken back)."""
    return expected if np.ndim(out) == 0 else _accept(out, expected, mask)


def _put(arr: Any, index: tuple[int, ...], v: Any) -> Any:
    """A float64 copy of ``arr`` with ``v`` at ``index``."""
    out = np.array(arr, dtype=np.float64, copy=True)
    out[index] = v
    return out


def kinks_dense(report: Any, fdm: Any, g: Any, ybar: Any, out: tuple[Any, ...], live: Any,
                est_of: dict[int, Any], expected: dict[int, Any], rtol: float,
                atol: float, points: Any = None) -> dict[int, Any]:  # fmt: skip
    """A general pullback's mismatched coordinates, and those the dense vjp could not
    estimate, checked against one-sided differences (at ``points``, the arguments the dense
    vjp was taken at, if not the primals); ``est_of``'s errors are updated where the one-sided
    derivatives stand in."""
    xs = [a.primal for a in live] if points is None else list(points)
    try:
        values, errors, lines = kinks_dense_vjp(
            fdm, g, ybar, xs, [out[a.index + 1] for a in live],
            [expected[a.index] for a in live],
            [(rtol, widen(atol, est_of[a.index].error)) for a in live], [a.path for a in live],
            [est_of[a.index].error for a in live], atol,
        )  # fmt: skip
    except Exception:
        return expected  # the one-sided runs failed: compare as usual
    for line in lines:
        report.note(line)
    for a, err in zip(live, errors or (), strict=False):
        if err is not est_of[a.index].error:
            est_of[a.index] = est_of[a.index]._replace(error=err)
    return {**expected, **{a.index: v for a, v in zip(live, values, strict=True)}}


def noise_note(g: Callable[..., Any], xs: Sequence[Any], mismatch: Any, step: Any,
               fdm: Any, expected: Any = 0.0) -> str | None:  # fmt: skip
    """A note when ``g``'s own noise explains a mismatch (its level and what to pass). Without
    the steps (a dense vjp combines many), the mismatch is set against the relative tolerance
    the noise calls for."""
    try:
        level = measure_noise(g, *xs)
    except Exception:
        return None
    if not level.noisy:
        return None
    if step is not None:
        explained = level.explains(mismatch, step, fdm)
    else:
        scale = 1.0 + np.abs(np.asarray(expected, dtype=np.float64))
        explained = bool(np.all(np.abs(mismatch) <= 10.0 * level.rtol() * scale))
    return level.note() if explained else None
