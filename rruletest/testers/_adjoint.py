"""The adjoint identity as the numerical reference for large inputs, with localisation.

Beyond ``DENSE_LIMIT`` input coordinates a dense vjp is too slow; the identity
``<xbar, v> == <ybar, J v>`` along random sign directions (``finite_differences.adjoint``) then
checks every cotangent at once. When it fails, group testing finds the wrong elements, and the
report reads like a dense mismatch (``1 of 1000000 elements differ ... at [500000]``). A
low-precision rule whose gaps fail is first allowed the rounding its own arithmetic shows
against a run of the rule in float64 (``_float64``): a float32 pullback summing thousands
of cotangents into one element is right, though it rounds by tens of ulps.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rruletest.defaults import ERROR_FACTOR
from rruletest.finite_differences.adjoint import ROUND_Z, AdjointCheck
from rruletest.finite_differences.kink_checks import directional_kinks
from rruletest.finite_differences.localise import localise
from rruletest.finite_differences.to_vec import to_vec
from rruletest.tangents import unthunk
from rruletest.testers._check import Check
from rruletest.testers._checks import compare
from rruletest.testers._evidence import record
from rruletest.testers._fd_inputs import coordinate_count, fd_failure, of_live
from rruletest.testers._findings import contracted, kinks_dense_vjp, out_of_tolerance
from rruletest.testers._float64 import rule_cotangents, wide_cotangents
from rruletest.testers._setup import Setup

__all__ = ["check_adjoint"]


def check_adjoint(
    s: Setup,
    out: tuple[Any, ...],
    good: set[int],
    ybar: Any,
    fdm: Any,
    rtol: float,
    atol: float,
    why: str = "vjp_mode='adjoint'",
    rrule_f: Any = None,
) -> None:
    """The adjoint identity along random sign directions (``finite_differences.adjoint``);
    when it fails, the wrong elements are found by group testing and reported like a dense
    mismatch (``1 of 1000000 elements differ ... at [500000]``). The elements found are
    checked against their one-sided derivatives first, and a direction whose elements are not
    found alone against the one-sided derivatives along it: at a kink of ``f`` (equal entries
    of ``sort``) a central difference averages two slopes, and one side's value is accepted
    with a note; each failing direction is examined until one fails."""
    report = s.report
    live = [a for a in s.args if a.numeric]
    if any(a.index + 1 not in good for a in live):
        return
    g = of_live(s.f, s.fkwargs, s.primals, [a.index for a in live])
    xbar = tuple(unthunk(out[a.index + 1]) for a in live)
    try:
        chk = AdjointCheck(
            fdm,
            g,
            [a.primal for a in live],
            xbar,
            ybar,
            rng=s.gen,
            rel=s.rtol,
            atol=0.0 if s.atol is None else s.atol * math.sqrt(max(1, coordinate_count(live))),
        )
        found = chk.run()
        failing = _failing(found)
        unchecked = ~(np.isfinite(found.gap) & np.isfinite(found.tolerance))
        if (failing.any() or unchecked.any()) and (tied := chk.move_ties_together()):
            found = chk.run()
            failing = _failing(found)
            report.note(
                f"args: {tied} elements of x are exactly equal to others (f may have kinks "
                "there): every random direction of the adjoint identity moves each such group "
                "together"
            )
        if failing.any() and rrule_f is not None:
            found, failing = _with_float64(s, chk, found, failing, rrule_f, ybar, live, rtol)
        masked = None
        unchecked = ~(np.isfinite(found.gap) & np.isfinite(found.tolerance))
        if unchecked.any() and rrule_f is not None:
            found, masked = _without_unestimated(s, chk, found, unchecked, rrule_f, out, live)
            failing = _failing(found)
    except Exception as exc:
        fd_failure(report, exc, "register_rrule", g)
        return
    promoted = " (evaluated in float64)" if chk.promoted else ""
    report.reference(
        f"adjoint identity <xbar, v> == <ybar, J v> along {chk.count} random sign "
        f"directions v{promoted} ({why})",
        fdm,
    )
    finite = np.isfinite(found.gap) & np.isfinite(found.tolerance)
    for lhs, gap in zip(found.lhs[finite], found.gap[finite], strict=True):
        report.measured(float(lhs), float(lhs + gap), scale=max(abs(float(lhs)), 1.0))
    counts = (int(finite.sum()), int((~finite).sum()))
    record(report, "args", counts, "the adjoint identity", unit="random directions")
    # Directions the engine could not estimate are unchecked, not failures (``record``).
    for k in np.flatnonzero(failing).tolist():
        # (a direction checked with ybar zeroed at outputs J v lacks, with its own pair)
        c, o, yb = masked[k] if masked is not None and k in masked else (chk, out, ybar)
        if c is chk and _holds_by_outputs(s, c, k, float(found.gap[k])):
            continue
        try:
            located = localise(c, found, k)
        except Exception as exc:
            fd_failure(report, exc, "register_rrule", g)
            return
        expected, tols = _located(s, c, fdm, g, yb, o, live, located, rtol, atol)
        wrong = located.coords.size > 0 and any(
            _differs(o[a.index + 1], expected[i], rtol, tols[i]) for i, a in enumerate(live)
        )
        if not wrong and not located.regions and not located.unresolved:
            continue  # every element found alone is at a kink, with one side's value
        tol_k, lhs_k = float(found.tolerance[k]), float(found.lhs[k])
        if not wrong and _direction_at_kink(s, c, fdm, g, yb, k, rtol, tol_k, lhs_k):
            continue  # the direction crosses a kink at x: <xbar, v> is one side's
        _failure(report, found, k, located, live, o, expected, tols, rtol, c.void)
        return


def _failing(found: Any) -> Any:
    """The directions whose gap is estimated and exceeds its tolerance."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(found.gap) & (np.abs(found.gap) > found.tolerance)


def _with_float64(
    s: Setup, chk: AdjointCheck, found: Any, failing: Any, rrule_f: Any, ybar: Any,
    live: list[Any], rtol: float,
) -> tuple[Any, Any]:  # fmt: skip
    """The gaps again, each coordinate allowed the rounding the rule's low-precision
    arithmetic showed against its float64 run (``_float64``), when that run is there;
    a note says how much was allowed where that changes the verdict of a direction."""
    wide = wide_cotangents(rrule_f, s.f, s.primals, s.kwargs(), ybar, [a.index for a in live])
    if wide is None:
        return found, failing
    ulps = chk.allow_rounding(wide, rtol)
    again = chk.retolerate(found)
    still = _failing(again)
    if int(still.sum()) < int(failing.sum()):
        s.report.note(
            f"the rule's own {np.dtype(chk.back_dtype).name} arithmetic rounds its cotangent by "
            f"up to {ulps:.3g} ulps per element (against the rule run in float64): allowed in "
            "the adjoint identity"
        )
    return again, still


#: At most this share of the outputs may be left out of ``<ybar, J v>`` by zeroing ``ybar``
#: there (``_without_unestimated``); beyond it the directions stay unchecked.
MAX_UNESTIMATED_SHARE = 0.5


def _without_unestimated(
    s: Setup, chk: AdjointCheck, found: Any, unchecked: Any, rrule_f: Any,
    out: tuple[Any, ...], live: list[Any],
) -> tuple[Any, dict[int, tuple[AdjointCheck, tuple[Any, ...], Any]] | None]:  # fmt: skip
    """The unchecked directions checked again with ``ybar`` zeroed at the few outputs where
    ``J v`` could not be estimated (``sort`` of a million values: its closest entries cross
    within every step the engine can take, so some outputs never settle and leave
    ``<ybar, J v>`` void): ``<J^T ybar', v> == <ybar', J v>`` holds for any ``ybar'``, so the
    rule is called once more for ``J^T ybar'`` and the identity checks it on every other output.
    Returns the gaps with those directions' and, per such direction, the check, the pullback's
    output and the ``ybar'`` it was given (None where nothing changed)."""
    ks = np.flatnonzero(unchecked).tolist()
    if chk.dtype != np.float64:  # (J v output by output needs float64 points)
        return found, None
    void = np.flatnonzero(np.logical_or.reduce([~np.isfinite(chk.output_jvp(k).error) for k in ks]))
    kept = chk.ybar.size if chk.keep is None else chk.keep.size
    if void.size == 0 or void.size > MAX_UNESTIMATED_SHARE * kept:
        return found, None
    vec = chk.ybar.copy()
    vec[void if chk.keep is None else chk.keep[void]] = 0.0
    ybar2 = chk.yback.tangent(vec)
    got = rule_cotangents(rrule_f, s.f, s.primals, s.kwargs(), ybar2, [a.index for a in live])
    if got is None:
        return found, None
    other = chk.without_outputs(void, vec, got)
    gap, error, tol = found.gap.copy(), found.error.copy(), found.tolerance.copy()
    lhs = found.lhs.copy()
    out2 = list(out)
    for a, xbar in zip(live, got, strict=True):
        out2[a.index + 1] = xbar
    pair = (other, tuple(out2), ybar2)  # (the check, the pullback's output, its ybar)
    done = {}
    for k in ks:
        gap_k, err, tol_k = other.by_outputs(k)
        if math.isfinite(gap_k) and math.isfinite(err):
            gap[k], error[k], tol[k], lhs[k] = gap_k, err, tol_k, other.inner(k, None)
            done[k] = pair
    if not done:
        return found, None
    s.report.note(
        f"args: J v along random direction{'s' if len(done) > 1 else ''} "
        f"{', '.join(map(str, done))} of the adjoint identity could not be estimated at "
        f"{void.size} of {kept} outputs (f varies there on a scale below any step: the closest "
        "entries of a sort cross within it); checked with ybar zeroed at those outputs, the "
        "rule called once more for its cotangent"
    )
    return found._replace(gap=gap, error=error, tolerance=tol, lhs=lhs), done


def _located(
    s: Setup,
    chk: AdjointCheck,
    fdm: Any,
    g: Any,
    ybar: Any,
    out: tuple[Any, ...],
    live: list[Any],
    located: Any,
    rtol: float,
    atol: float,
) -> tuple[list[Any], list[Any]]:
    """The numerical cotangents of the elements found alone (the others: the rule's, with an
    infinite tolerance) and their tolerances, after the one-sided checks of those elements."""
    if not located.coords.size:
        return [], []
    vec = chk.xbar.copy()
    vec[located.coords] = located.value
    tol = np.full(vec.size, np.inf)
    tol[located.coords] = (
        atol + ERROR_FACTOR * located.error + ROUND_Z * chk.element_rounding(located.coords)
    )
    expected, tols = list(chk.back.tangent(vec)), list(chk.back.error(tol))
    # (at the float64 point the identity was evaluated at, if it was promoted)
    xs = list(chk.points)
    return _kinks(s, fdm, g, ybar, out, live, xs, expected, tols, rtol), tols


def _holds_by_outputs(s: Setup, chk: AdjointCheck, k: int, gap: float) -> bool:
    """Whether direction ``k``'s identity holds with ``J v`` estimated output by output
    (``AdjointCheck.by_outputs``), which a note then says: ``sort`` of 5000 close values has
    kinks at every step of the sum over its outputs, whose central difference then reads a
    slope of the neighbourhood (14.6 for 582)."""
    try:
        again, error, tol = chk.by_outputs(k)
    except Exception:
        return False
    if not (math.isfinite(again) and math.isfinite(error)) or abs(again) > tol:
        return False
    s.report.note(
        f"args: random direction {k} of the adjoint identity: the sum over the outputs has "
        f"kinks within its steps (gap {gap:.3g}); estimated output by output, the gap is "
        f"{again:.3g} (tolerance {tol:.3g})"
    )
    return True


def _direction_at_kink(
    s: Setup,
    chk: AdjointCheck,
    fdm: Any,
    g: Any,
    ybar: Any,
    k: int,
    rtol: float,
    atol: float,
    lhs: float,
) -> bool:
    """Whether ``lhs = <xbar, v>`` along direction ``k`` lies between the one-sided derivatives of
    ``<ybar, f(x + t v)>`` at 0, which differ: ``f`` has a kink at ``x`` along ``v`` (equal
    entries of float32 ``sort``, split by ``v``), where the central difference averages the two
    sides and group testing finds no element alone. Then a note says so. A single real array
    argument only (the direction is over its elements)."""
    if chk.array is None:
        return False
    x = chk.array
    v = chk.direction(k).reshape(x.shape).astype(x.dtype)
    h = contracted(g, to_vec(unthunk(ybar))[0])
    try:
        rep = directional_kinks(fdm, h, lhs, (x, v), rtol=rtol, atol=atol, root="args")
    except Exception:
        return False
    if not bool(rep.accepted):
        return False
    s.report.note(
        f"args: random direction {k} of the adjoint identity crosses a kink of f at x: "
        + "; ".join(line.split(": ", 1)[-1] for line in rep.lines)
    )
    return True


def _failure(
    report: Any,
    found: Any,
    k: int,
    located: Any,
    live: list[Any],
    out: tuple[Any, ...],
    expected: list[Any],
    tols: list[Any],
    rtol: float,
    void: Any = None,
) -> None:
    """Direction ``k``'s failure, and the elements found alone compared as a dense vjp's
    (``void``: the outputs at which ``ybar`` was zeroed for this direction, if any)."""
    lhs, rhs = float(found.lhs[k]), float(found.lhs[k] + found.gap[k])
    zeroed = "" if void is None else f" (with ybar zeroed at {len(void)} outputs)"
    where = (
        "the wrong elements, found by group testing, follow"
        if located.coords.size
        else _where(located)
    )
    report.problem(
        Check.NUMERIC,
        "args",
        f"adjoint identity fails along random direction {k}{zeroed}: <xbar, v> = {lhs!r} but "
        f"<ybar, J v> = {rhs!r} (difference {abs(found.gap[k]):.3g} > tolerance "
        f"{found.tolerance[k]:.3g}); {where}",
        actual=lhs,
        expected=rhs,
    )
    for i, a in enumerate(live if located.coords.size else []):
        compare(
            report,
            Check.NUMERIC,
            f"{a.path}: the cotangent differs from the numerical vjp (adjoint identity, "
            "elements located by group testing)",
            out[a.index + 1],
            expected[i],
            a.path,
            rtol,
            tols[i],
        )


def _kinks(
    s: Setup,
    fdm: Any,
    g: Any,
    ybar: Any,
    out: tuple[Any, ...],
    live: list[Any],
    xs: list[Any],
    expected: list[Any],
    tols: list[Any],
    rtol: float,
) -> list[Any]:
    """``expected`` with the located elements that sit at a kink of ``<ybar, f>`` (a tie of
    float32 ``sort``, where a central difference averages the two sides' slopes) and whose
    rule value is one side's replaced by it, as for a dense vjp; their notes are reported."""
    try:
        values, _, lines = kinks_dense_vjp(
            fdm, g, ybar, xs, [out[a.index + 1] for a in live],
            expected, [(rtol, t) for t in tols], [a.path for a in live],
        )  # fmt: skip
    except Exception:
        return expected  # the one-sided runs failed: compare as usual
    for line in lines:
        if line not in s.report.notes:  # (another failing direction may name it too)
            s.report.note(line)
    return values


def _differs(actual: Any, expected: Any, rtol: float, atol: Any) -> bool:
    mask = out_of_tolerance(actual, expected, rtol, atol)
    return mask is None or bool(mask.any())


def _where(located: Any) -> str:
    """Where group testing left a failing direction's difference, with no element alone."""
    parts = []
    if located.regions:
        spans = ", ".join(_span(r) for r in located.regions[:4])
        parts.append(
            f"no element is wrong alone: the difference is spread over {spans} of the input "
            "coordinates"
        )
    if located.unresolved:
        spans = ", ".join(_span(r) for r in located.unresolved[:4])
        parts.append(
            f"the difference could not be narrowed below {spans} of the input coordinates "
            "(its halves' estimates are too uncertain to show it: f has kinks or noise there)"
        )
    return "; ".join(parts)


def _span(index: Any) -> str:
    lo, hi = int(index.min()), int(index.max())
    return f"[{lo}]" if lo == hi else f"[{lo}..{hi}]"
