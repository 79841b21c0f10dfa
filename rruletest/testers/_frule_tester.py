"""``test_frule``: its checks, in the order they run.

1. the rule exists and returns ``(y, ydot)`` (``call_rule``), called once, with the tangents
   given by ``with_tangent`` (else ``rand_tangent``);
2. neither the inputs, the keyword arguments nor the input tangents were mutated;
3. ``y`` matches ``f(*args, **fkwargs)`` and is a value (``_checks.check_primal``);
4. ``ydot`` is a collected value that fits ``y``: type, shape, dtype (``check_ydot_type``);
5. ``ydot`` matches the numerical jvp (``_reference.check_jvp`` chooses it).
"""

# The public testers are named test_* (like ChainRulesTestUtils') but are not pytest tests.
# ruff: noqa: PT028

from __future__ import annotations

from typing import Any

from rruletest.rules import frule
from rruletest.tangents import NO_TANGENT, AbstractZero
from rruletest.testers._args import describe, has_coordinates
from rruletest.testers._checks import (
    MISSING,
    Inputs,
    call_f,
    check_mutation,
    check_primal,
    check_unchanged,
    note_unchecked,
)
from rruletest.testers._fit import fit_problems
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._reference import check_jvp
from rruletest.testers._report import Check, TesterReport
from rruletest.testers._setup import Setup, guarded, setup
from rruletest.testers._snapshot import copyable, is_lazy, nonzero, snapshot

__all__ = ["run_frule_checks", "test_frule"]


def test_frule(
    f: Any,
    *args: Any,
    fdm: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    fkwargs: dict[str, Any] | None = None,
    check_fd: bool = True,
    frule_f: Any = frule,
    rng: Any = None,
) -> TesterReport:
    """Check the forward rule of ``f`` at ``args``; raise one ``RuleTestFailure`` listing
    every problem, or return a ``TesterReport``.

    Calls ``frule_f((fdot, xdot_0, ..., xdot_n-1), f, *args)`` with the tangents given by
    ``with_tangent`` (else ``rand_tangent``) and checks: a rule exists and returns
    ``(y, ydot)``; ``y`` matches ``f(*args)``; ``ydot`` fits ``y`` (type, shape, dtype); ``ydot``
    matches the numerical jvp (the structured one for ``broadcasted``) within tolerance widened
    by the engine's error estimate; inputs and tangents are not mutated. The rule is called
    once. Arguments and options are as in ``test_rrule``.

    >>> import numpy as np
    >>> from rruletest import RuleSet, with_tangent
    >>> rules = RuleSet()
    >>> _ = rules.scalar_rule(np.exp, lambda x, y: y)
    >>> test_frule(np.exp, with_tangent(np.ones(3), np.full(3, 2.0)), frule_f=rules.frule).tester
    'test_frule'
    """
    __tracebackhide__ = True
    s = setup(
        "test_frule",
        f,
        args,
        rtol=rtol,
        atol=atol,
        fdm=fdm,
        fkwargs=fkwargs,
        rng=rng,
        rule_f=frule_f,
        rule_name="frule_f",
        check_fd=check_fd,
    )
    guarded(s, run_frule_checks, frule_f, check_fd)
    return s.report.result(tuple(a.path for a in s.args if not a.numeric))


def run_frule_checks(s: Setup, frule_f: Any, check_fd: bool) -> None:
    """The checks of ``test_frule`` in order, recording into ``s.report``; raises at the end."""
    __tracebackhide__ = True
    report = s.report
    inputs = Inputs(s)
    xdots = _tangents(s)
    fdot = NO_TANGENT if s.fdot is None else s.fdot
    dot_snap = snapshot(xdots)
    xdots_in = snapshot(xdots) if copyable(dot_snap) else xdots
    y_f = call_f(s, inputs)

    call = "frule_f((fdot, *xdots), f, *args)"
    res = call_rule(s, frule_f, (fdot, *xdots_in), inputs, call)
    if res is None:
        report.raise_now()
    y, ydot = res
    check_mutation(s, inputs, "the frule")
    check_unchanged(report, "xdots", dot_snap, xdots_in, "the frule mutated an input tangent")
    y_ref = check_primal(s, y, y_f)
    if is_lazy(ydot):
        report.problem(
            Check.TYPE,
            "ydot",
            f"the frule returned a lazy {type(ydot).__name__} as ydot; return a collected value",
            actual=ydot,
        )
        report.raise_now()
    fits = check_ydot_type(s, y_ref, ydot)

    live = [a for a in s.args if a.numeric]
    if check_fd and fits and live and y_f is not MISSING:
        check_jvp(s, ydot, [xdots[a.index] for a in live], y_ref, frule_f)
    elif not check_fd:
        report.note("numerical check: off (check_fd=False): structural checks only")

    note_unchecked(report, s.args)
    report.finish()


def _tangents(s: Setup) -> list[Any]:
    """The input tangents: ``with_tangent`` ones, else random ones (``NoTangent()`` for the
    arguments not differentiated)."""
    out: list[Any] = []
    for a in s.args:
        if a.tangent is not None:
            out.append(a.tangent)
        elif a.numeric:
            out.append(rand_tangent(s.gen, a.primal))
        else:
            out.append(NO_TANGENT)
    return out


def call_rule(s: Setup, frule_f: Any, tangents: tuple[Any, ...], inputs: Inputs, call: str) -> Any:
    """Check: a rule exists and returns ``(y, ydot)`` (None when not)."""
    report = s.report
    try:
        res = frule_f(tangents, s.f, *inputs.args, **inputs.kwargs)
    except Exception as exc:
        report.exception(Check.EXCEPTION, call, exc)
        return None
    if res is None:
        report.problem(
            Check.RULE,
            call,
            f"no rule: {describe(frule_f)} returned None (register one "
            "with register_frule, or pass frule_f=)",
            expected="a rule",
        )
        return None
    if not isinstance(res, tuple) or len(res) != 2:
        report.problem(
            Check.RULE,
            call,
            f"returned {describe(res)}; expected a tuple (y, ydot)",
            actual=res,
            expected="(y, ydot)",
        )
        return None
    return res


def check_ydot_type(s: Setup, y: Any, ydot: Any) -> bool:
    """Check: ``ydot`` fits ``y`` (type, shape, dtype; ``NoTangent()`` for an output without
    coordinates)."""
    if not has_coordinates(y):
        if isinstance(ydot, AbstractZero) or not nonzero(ydot):
            return True
        s.report.problem(
            Check.TYPE,
            "ydot",
            f"{describe(ydot)} for an output without a tangent "
            f"space ({describe(y)}); expected NoTangent()",
            actual=ydot,
            expected=NO_TANGENT,
        )
        return False
    problems = fit_problems(y, ydot, "ydot", kind="tangent")
    for m in problems:
        s.report.add(m)
    return not problems


test_frule.__test__ = False  # type: ignore[attr-defined]
