"""What every tester does first: validate its options, resolve the rng, classify arguments.

Misuse of a tester (a bad option) raises ``TypeError``/``ValueError`` with a ``name=value`` echo,
never ``RuleTestFailure``.

>>> s = setup("test_rrule", lambda x: x, (1.0, 2), rtol=None, atol=None, fdm=None,
...           fkwargs=None, rng=3, rule_f=lambda *a: None, rule_name="rrule_f", check_fd=False)
>>> [a.numeric for a in s.args], s.seed
([True, False], 3)
>>> setup("test_rrule", len, (), rtol=-1.0, atol=None, fdm=None, fkwargs=None, rng=None,
...       rule_f=len, rule_name="rrule_f", check_fd=False)
Traceback (most recent call last):
...
ValueError: test_rrule: rtol must be a number >= 0, got rtol=-1.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rruletest.rules import RuleSet, default_ruleset
from rruletest.testers._args import Arg, WithTangent, classify_args
from rruletest.testers._rand_tangent import resolve_rng
from rruletest.testers._report import Report

__all__ = ["BadArgumentError", "Setup", "guarded", "ruleset_of", "setup"]


class BadArgumentError(ValueError):
    """A tester was given a value it cannot use (misuse, raised as it is, never as a failure)."""


def guarded(s: Setup, run: Callable[..., None], *args: Any) -> None:
    """Run a tester's checks; an unexpected exception becomes a reported failure (chained),
    so nothing internal leaks from a tester. ``RuleTestFailure`` and misuse pass through.
    """
    __tracebackhide__ = True
    from rruletest.errors import RuleTestFailure

    try:
        run(s, *args)
    except (RuleTestFailure, BadArgumentError):
        raise
    except Exception as exc:
        s.report.exception(
            "internal",
            "rruletest while checking the rule",
            exc,
            hint="rruletest could not handle a value the rule, f or the pullback produced; "
            "please report this with the reproduce line",
        )
        s.report.raise_now()


@dataclass
class Setup:
    """A tester's validated inputs."""

    f: Any
    fdot: Any  # the tangent given for f with with_tangent, or None
    args: list[Arg]
    fkwargs: dict[str, Any]
    fdm: Any
    rtol: float | None
    atol: float | None
    gen: np.random.Generator
    seed: int | None
    report: Report

    primals: tuple[Any, ...] = ()
    tolerance: tuple[float, float] | None = None  # (rtol, atol) for the primals and output
    cache: dict[Any, Any] | None = None  # numerical Jacobians shared by test_scalar's testers
    rules: RuleSet = default_ruleset  # the RuleSet the rule under test looks rules up in

    def tolerances(self, y: Any) -> tuple[float, float]:
        """``(rtol, atol)`` in force: the given ones, else the loosest default among the
        dtypes of the primals and the output ``y`` (computed once)."""
        if self.tolerance is None:
            from rruletest.testers._reference import tolerances

            self.tolerance = tolerances([*self.primals, y], self.rtol, self.atol)
        return self.tolerance


def _tol(name: str, value: Any, tester: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{tester}: {name} must be a number >= 0 or None, got {name}={value!r}")
    if not value >= 0:
        raise ValueError(f"{tester}: {name} must be a number >= 0, got {name}={value!r}")
    return float(value)


def setup(
    tester: str,
    f: Any,
    args: tuple[Any, ...],
    *,
    rtol: Any,
    atol: Any,
    fdm: Any,
    fkwargs: Any,
    rng: Any,
    rule_f: Any,
    rule_name: str,
    check_fd: bool,
    extra: str = "",
) -> Setup:
    """Validate a tester's options and build its ``Setup`` (and empty ``Report``)."""
    __tracebackhide__ = True
    fdot = None
    if isinstance(f, WithTangent):
        f, fdot = f.primal, f.tangent
    if not callable(f):
        raise TypeError(f"{tester}: f must be callable, got f={f!r}")
    if not callable(rule_f):
        raise TypeError(f"{tester}: {rule_name} must be callable, got {rule_name}={rule_f!r}")
    if fkwargs is None:
        fkwargs = {}
    if not isinstance(fkwargs, dict) or not all(isinstance(k, str) for k in fkwargs):
        raise TypeError(
            f"{tester}: fkwargs must be a dict of keyword arguments for f, got fkwargs={fkwargs!r}"
        )
    if not isinstance(check_fd, bool):
        raise TypeError(f"{tester}: check_fd must be True or False, got check_fd={check_fd!r}")
    r, a = _tol("rtol", rtol, tester), _tol("atol", atol, tester)
    if fdm is not None and not callable(getattr(fdm, "estimate", None)):
        raise TypeError(
            f"{tester}: fdm must be a FiniteDifferenceMethod (e.g. central_fdm(5, 1)), "
            f"got fdm={fdm!r}"
        )
    gen, seed = resolve_rng(rng)
    if fdm is None and check_fd:
        from rruletest.finite_differences import default_fdm

        fdm = default_fdm()
    classified = classify_args(args)
    report = Report(tester, f, args, fkwargs, seed=seed, extra=extra)
    primals = tuple(c.primal for c in classified)
    return Setup(
        f,
        fdot,
        classified,
        dict(fkwargs),
        fdm,
        r,
        a,
        gen,
        seed,
        report,
        primals,
        rules=ruleset_of(rule_f),
    )


def ruleset_of(rule_f: Callable[..., Any]) -> RuleSet:
    """The RuleSet a rule function looks rules up in (``RuleSet.rrule`` bound methods), else
    the default one: where the testers find declared domains.
    """
    owner = getattr(rule_f, "__self__", None)
    return owner if isinstance(owner, RuleSet) else default_ruleset
