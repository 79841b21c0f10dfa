"""The transposition cross-check inside ``test_rrule``, ``test_frule`` and ``test_scalar``.

When a function has both rules, the tester that checks one calls the other once at the same
point and checks ``<ybar, frule(xdot)> == <pullback(ybar), xdot>`` (``_transpose``). It is on
by default when the other rule exists (``check_transpose=None``), required with ``True`` (no
other rule is then a failure) and off with ``False``. It needs no finite differences, so it
runs with ``check_fd=False`` too; only when it fails, and ``check_fd`` is on, one
finite-difference jvp names the rule that is wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rruletest.broadcast import broadcasted
from rruletest.finite_differences import to_vec
from rruletest.rules import RuleSet, default_ruleset, frule, rrule
from rruletest.tangents import NO_TANGENT, AbstractZero
from rruletest.testers._check import Check
from rruletest.testers._constrained import draw_tangent
from rruletest.testers._fd_inputs import zero_where_not_finite
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._setup import Setup
from rruletest.testers._snapshot import copyable, snapshot
from rruletest.testers._transpose import Transposition, coords, sides, with_numeric
from rruletest.walk import WalkError

__all__ = ["after_frule", "after_rrule", "check_transpose_option", "partner"]

_NO_FD_RTOL = float(np.finfo(np.float64).eps) ** (1 / 3)


def check_transpose_option(tester: str, value: Any) -> bool | None:
    """Validate ``check_transpose`` (None, True or False)."""
    if value is not None and not isinstance(value, bool):
        raise TypeError(
            f"{tester}: check_transpose must be None, True or False, got check_transpose={value!r}"
        )
    return value


def partner(rule_f: Any, want: str) -> Callable[..., Any] | None:
    """The other kind of rule (``"frule"`` or ``"rrule"``) from where ``rule_f`` comes from: the
    same RuleSet, the same adapter, or the module-level functions."""
    if rule_f is rrule and want == "frule":
        return frule
    if rule_f is frule and want == "rrule":
        return rrule
    owner = getattr(rule_f, "__self__", None)
    other = getattr(owner, want, None) if owner is not None else None
    if callable(other) and (isinstance(owner, RuleSet) or hasattr(owner, "rrule")):
        found: Callable[..., Any] = other
        return found
    return None


def _no_rule(exc: BaseException) -> bool:
    """Whether a rule's exception says it has no rule at all (not that the rule is wrong)."""
    from rruletest.broadcast import NoBroadcastRuleError

    return isinstance(exc, NoBroadcastRuleError | NotImplementedError)


def _fresh(values: Sequence[Any]) -> tuple[Any, ...]:
    out = []
    for v in values:
        snap = snapshot(v)
        out.append(snap if copyable(snap) else v)
    return tuple(out)


def _skip(s: Setup, mode: bool | None, why: str) -> None:
    if mode:
        s.report.problem(
            Check.TRANSPOSE, "check_transpose", f"the cross-check was asked for, but {why}"
        )
    else:
        s.report.note(f"frule/rrule cross-check: not run ({why})", on_failure=False)


#: How the kink checks end a note on a value they accepted (``kink_checks``, ``_findings``).
_ACCEPTED = ("between them (accepted)", "inside (accepted)")


def _explained(t: Transposition, check_fd: bool, notes: Sequence[str] = ()) -> str | None:
    """Why a gap over the rounding tolerance is still no evidence of a wrong rule, or None.

    Rules that cancel large terms (a softmax of large inputs) round far above the inner
    products' own scale. With finite differences, a gap that both sides agree with them
    across is such rounding; without them, a gap within ``eps ** (1/3)`` of the scale is.
    Where this test accepted a subgradient at a kink (``clamp(x, min=y)`` at ``x == y``),
    the frule and the rrule may each pick another valid one: they need not be transposes.
    """
    if check_fd and t.numeric is not None and t.culprit is None:
        return "finite differences agree with both sides: rounding in the rules"
    if any(n.endswith(_ACCEPTED) for n in notes):
        return "a kink was found and its subgradient accepted: each rule may pick its own"
    if not check_fd and t.gap <= _NO_FD_RTOL * t.scale:
        return "within eps**(1/3) of the scale: rounding in the rules"
    return None


def _record(s: Setup, t: Transposition, against: str, check_fd: bool) -> None:
    why = None if t.passed else _explained(t, check_fd, s.report.notes)
    if why is not None:
        s.report.note(
            f"frule/rrule cross-check with the {against}: passed (difference {t.gap:.2g} over "
            f"the rounding allowance {t.tolerance:.2g}; {why})",
            on_failure=False,
        )
        return
    if t.passed:
        s.report.note(
            f"frule/rrule cross-check with the {against}: passed (difference {t.gap:.2g}, "
            f"allowed {t.tolerance:.2g})",
            on_failure=False,
        )
        return
    m = t.mismatch(f"frule/rrule transposition (the {against} called once more)")
    if t.culprit is None:
        why = (
            "finite differences are off (check_fd=False): run with check_fd=True to learn "
            "which of the two rules is wrong"
            if not check_fd
            else "finite differences could not say which rule is wrong: check the "
            f"{against} with its own tester (test_{against})"
        )
        m = dataclasses.replace(m, hint=why)
    s.report.add(m)


def _numeric(s: Setup, t: Transposition, y: Any, ybar: Any, xdots: Sequence[Any],
             check_fd: bool) -> Transposition:  # fmt: skip
    if t.passed or not check_fd:
        return t
    rtol = s.tolerances(y)[0]
    return with_numeric(
        t, s.f, _fresh(s.primals), xdots, coords(y, ybar), s.kwargs(), s.fdm, float(rtol)
    )


def _compare(s: Setup, mode: bool | None, y: Any, ybar: Any, ydot: Any, xdots: Sequence[Any],
             xbars: Sequence[Any], check_fd: bool, against: str) -> None:  # fmt: skip
    """Compare the two sides; values the inner products cannot read skip the check (a note)."""
    try:
        t = sides(y, ybar, ydot, s.primals, xdots, xbars, s.rtol)
    except Exception as exc:  # a tangent of a kind the coordinates cannot read
        _skip(s, mode, f"the tangents could not be compared ({type(exc).__name__}: {exc})")
        return
    if not (math.isfinite(t.forward) and math.isfinite(t.reverse)) and not _finite(y, s.primals):
        # NaN * 0 is NaN: a non-finite element of the point spoils both inner products
        _skip(s, mode, "f's inputs or output are not finite there (NaN or infinite elements)")
        return
    with contextlib.suppress(Exception):  # the culprit is a bonus: the gap stands on its own
        t = _numeric(s, t, y, ybar, xdots, check_fd)
    _record(s, t, against, check_fd)


def _finite(y: Any, primals: Sequence[Any]) -> bool:
    """Whether every float coordinate of the output and the inputs is finite."""
    try:
        v, _ = to_vec((y, *primals))
    except Exception:
        return True  # values to_vec cannot read: the inner products decide alone
    return bool(np.isfinite(v).all())


def _guarded(run: Callable[..., None]) -> Callable[..., None]:
    """Run a cross-check; a value the walk cannot follow (too deep, a cycle) skips it."""

    def wrapper(s: Setup, *args: Any) -> None:
        try:
            run(s, *args)
        except (RecursionError, WalkError) as exc:
            _skip(s, args[-2], f"the values cannot be walked ({type(exc).__name__})")

    wrapper.__doc__ = run.__doc__
    return wrapper


def one_scalar_rule(s: Setup, other_f: Any) -> bool:
    """Whether both rules of ``f`` come from one ``scalar_rule`` (its partials give the frule
    and the rrule alike, directly or through the generic broadcast rule): they are transposes
    by construction, and the finite-difference check of either covers both."""
    owner = s.rules
    other = default_ruleset if other_f in (rrule, frule) else getattr(other_f, "__self__", None)
    if owner is not other:
        return False
    f, primals = s.f, s.primals
    try:
        if f is broadcasted and primals:
            explicit = owner.rrule_info(f, *primals) or owner.frule_info(f, *primals)
            return explicit is None and owner.scalar_info(primals[0]) is not None
        infos = (owner.rrule_info(f, *primals), owner.frule_info(f, *primals))
    except Exception:
        return False
    return all(i is not None and i.kind == "scalar" for i in infos)


def _should_run(s: Setup, mode: bool | None, other_f: Any, other: str) -> bool:
    """Whether the cross-check runs against ``other_f`` (the ``other`` kind of rule); when it
    does not, says why (a failure if it was asked for)."""
    if mode is False:
        return False
    if other_f is None:
        _skip(s, mode, f"no {other} was found (pass {other}_f=)")
    elif mode is None and one_scalar_rule(s, other_f):
        _skip(s, mode, "both rules come from one scalar_rule: transposes by construction")
    elif s.fdot is not None and not isinstance(s.fdot, AbstractZero):
        _skip(s, mode, "f has a tangent of its own")
    else:
        return True
    return False


@_guarded
def after_rrule(s: Setup, y: Any, ybar: Any, xbars: Sequence[Any], frule_f: Any,
                mode: bool | None, check_fd: bool) -> None:  # fmt: skip
    """In ``test_rrule``: call the frule along random tangents and compare."""
    if not _should_run(s, mode, frule_f, "frule"):
        return
    # zero at NaN or infinite elements, as test_frule draws them: nothing is known there
    xdots = [
        zero_where_not_finite(a.primal, draw_tangent(s.gen, a))[0]
        if a.numeric and not a.strict
        else NO_TANGENT
        for a in s.args
    ]
    try:
        res = frule_f((NO_TANGENT, *xdots), s.f, *_fresh(s.primals), **s.kwargs())
    except Exception as exc:
        if _no_rule(exc):
            _skip(s, mode, "there is no frule for f")
        elif mode is None:  # the frule's own tester reports its exceptions
            _skip(s, mode, f"the frule raised {type(exc).__name__}: {exc}")
        else:
            s.report.exception(Check.TRANSPOSE, "frule_f((fdot, *xdots), f, *args) [cross-check]",
                               exc)  # fmt: skip
        return
    if res is None:
        _skip(s, mode, "there is no frule for f")
        return
    if not isinstance(res, tuple) or len(res) != 2:
        _skip(s, mode, "the frule did not return (y, ydot)")
        return
    _compare(s, mode, y, ybar, res[1], xdots, xbars, check_fd, "frule")


@_guarded
def after_frule(s: Setup, y: Any, xdots: Sequence[Any], ydot: Any, rrule_f: Any,
                mode: bool | None, check_fd: bool) -> None:  # fmt: skip
    """In ``test_frule``: call the rrule and its pullback with a random ``ybar``, compare."""
    if not _should_run(s, mode, rrule_f, "rrule"):
        return
    try:  # zero at NaN or infinite output elements, as test_rrule draws it
        ybar = zero_where_not_finite(y, rand_tangent(s.gen, y))[0]
    except Exception as exc:
        _skip(s, mode, f"no random cotangent for the output ({type(exc).__name__})")
        return
    call = "rrule_f(f, *args) and its pullback [cross-check]"
    try:
        res = rrule_f(s.f, *_fresh(s.primals), **s.kwargs())
        if res is None:
            _skip(s, mode, "there is no rrule for f")
            return
        out = res[1](ybar)
    except Exception as exc:
        if _no_rule(exc):
            _skip(s, mode, "there is no rrule for f")
        elif mode is None:  # the rrule's own tester reports its exceptions
            _skip(s, mode, f"the rrule raised {type(exc).__name__}: {exc}")
        else:
            s.report.exception(Check.TRANSPOSE, call, exc)
        return
    if not isinstance(out, tuple) or len(out) != len(s.primals) + 1:
        _skip(s, mode, "the pullback did not return (fbar, xbar_0, ...)")
        return
    _compare(s, mode, y, ybar, ydot, xdots, out[1:], check_fd, "rrule")
