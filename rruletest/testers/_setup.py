"""What every tester does first: validate its options, resolve the rng, classify arguments.

Misuse of a tester (a bad option) raises ``TypeError``/``ValueError`` with a ``name=value`` echo
(the one tolerance validator, ``rruletest.defaults.check_tolerance``), never
``RuleTestFailure``. ``guarded`` then runs the tester's checks so that nothing internal leaks.

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

from rruletest import defaults
from rruletest._marked import marking
from rruletest._naming import function_name
from rruletest.broadcast import broadcasted
from rruletest.errors import RuleTestFailure
from rruletest.finite_differences import default_fdm
from rruletest.rules import RuleSet, default_ruleset, frule, rrule
from rruletest.testers._args import Arg, WithTangent, classify_args, describe
from rruletest.testers._rand_tangent import SavedGenerator, resolve_rng
from rruletest.testers._report import Check, Report
from rruletest.testers._snapshot import copyable, snapshot
from rruletest.tolerances import default_tolerances, loosest, tolerances_for
from rruletest.walk import MAX_DEPTH, Index, Key, WalkError, leaves

__all__ = [
    "BadArgumentError",
    "Setup",
    "check_options",
    "guarded",
    "no_rule_text",
    "ruleset_of",
    "setup",
    "tolerances_of",
]


class BadArgumentError(ValueError):
    """A tester was given a value it cannot use (misuse, raised as it is, never as a failure)."""


@dataclass
class Setup:
    """A tester's validated inputs."""

    f: Any
    fdot: Any  # the tangent given for f with with_tangent, or None
    args: list[Arg]
    fkwargs: dict[str, Any]  # as the caller gave them: never passed on (see ``kwargs``)
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
            self.tolerance = tolerances_of([*self.primals, y], self.rtol, self.atol)
        return self.tolerance

    def kwargs(self) -> dict[str, Any]:
        """A fresh copy of the keyword arguments for one call of ``f`` or the rule, so a call
        that changes one in place changes neither the caller's value nor the next call's."""
        if not self.fkwargs:
            return {}
        snap = {k: snapshot(v) for k, v in self.fkwargs.items()}
        return {k: (v if copyable(v) else self.fkwargs[k]) for k, v in snap.items()}


_PLAIN_DTYPES = {float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


def tolerances_of(values: list[Any], rtol: float | None, atol: float | None) -> tuple[float, float]:
    """``tolerances_for(values, rtol, atol)``: the given ones as they are, and for numbers and
    numeric arrays the loosest default of their dtypes found without walking them."""
    if rtol is not None and atol is not None:
        return rtol, atol
    dtypes: set[np.dtype[Any]] = set()
    for v in values:
        kind = type(v)
        if kind in _PLAIN_DTYPES:
            dtypes.add(_PLAIN_DTYPES[kind])
        elif (kind is np.ndarray or isinstance(v, np.generic)) and v.dtype.kind != "O":
            if v.dtype.kind in "fc":
                dtypes.add(v.dtype)
        else:
            return tolerances_for(values, rtol, atol)
    tol = loosest(*dtypes) if dtypes else default_tolerances(np.float64)
    return (float(tol.rtol) if rtol is None else rtol), (float(tol.atol) if atol is None else atol)


def guarded(s: Setup, run: Callable[..., None], *args: Any) -> None:
    """Run a tester's checks; an unexpected exception becomes a reported failure (chained),
    so nothing internal leaks from a tester. ``RuleTestFailure`` and misuse pass through.
    """
    __tracebackhide__ = True
    marked = [a.index for a in s.args if a.reason.startswith("marked with_tangent")]
    try:
        with marking(marked):
            run(s, *args)
    except (RuleTestFailure, BadArgumentError):
        raise
    except RecursionError as exc:
        s.report.exception(
            Check.INPUT,
            "rruletest while walking the arguments",
            exc,
            hint="a value nests too deeply for rruletest to follow: test the rule on a "
            "flatter input",
        )
        s.report.raise_now()
    except Exception as exc:
        s.report.exception(
            Check.INTERNAL,
            "rruletest while checking the rule",
            exc,
            hint="rruletest could not handle a value the rule, f or the pullback produced; "
            "please report this with the reproduce line",
        )
        s.report.raise_now()


def _tol(name: str, value: Any, tester: str) -> float | None:
    try:
        return defaults.check_tolerance(name, value)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{tester}: {exc}") from None


def check_options(
    tester: str, *, rtol: Any, atol: Any, fdm: Any, fkwargs: Any
) -> tuple[dict[str, Any], float | None, float | None]:
    """Validate the options every tester takes; returns ``(fkwargs, rtol, atol)``."""
    if fkwargs is None:
        fkwargs = {}
    if not isinstance(fkwargs, dict) or not all(isinstance(k, str) for k in fkwargs):
        raise TypeError(
            f"{tester}: fkwargs must be a dict of keyword arguments for f, got fkwargs={fkwargs!r}"
        )
    r, a = _tol("rtol", rtol, tester), _tol("atol", atol, tester)
    if fdm is not None and not callable(getattr(fdm, "estimate", None)):
        raise TypeError(
            f"{tester}: fdm must be a FiniteDifferenceMethod (e.g. central_fdm(5, 1)), "
            f"got fdm={fdm!r}"
        )
    q = getattr(fdm, "q", 1)
    if fdm is not None and isinstance(q, int) and q != 1:
        raise ValueError(
            f"{tester}: fdm must be a first-derivative method (q=1, e.g. central_fdm(5, 1)): "
            f"the testers compare first derivatives, got fdm={fdm!r} (q={q})"
        )
    return fkwargs, r, a


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
) -> Setup:
    """Validate a tester's options and build its ``Setup`` (and empty ``Report``); an argument
    the walk cannot follow (it contains itself, or nests deeper than ``walk.MAX_DEPTH``) is
    reported at once."""
    __tracebackhide__ = True
    fdot = None
    if isinstance(f, WithTangent):
        f, fdot = f.primal, f.tangent
    if not callable(f):
        raise TypeError(f"{tester}: f must be callable, got f={f!r}")
    if not callable(rule_f):
        raise TypeError(f"{tester}: {rule_name} must be callable, got {rule_name}={rule_f!r}")
    fkwargs, r, a = check_options(tester, rtol=rtol, atol=atol, fdm=fdm, fkwargs=fkwargs)
    if not isinstance(check_fd, bool):
        raise TypeError(f"{tester}: check_fd must be True or False, got check_fd={check_fd!r}")
    gen, seed = resolve_rng(rng)
    if fdm is None and check_fd:
        fdm = default_fdm()
    f_snap = snapshot(f)  # the report names (and reproduces) f as it was, whatever a rule does
    report = Report(tester, f_snap if copyable(f_snap) else f, args, fkwargs, seed=seed)
    if seed is None:  # a Generator: its state now, which the reproduce line passes as rng
        report.generator = SavedGenerator(gen)
    _check_walkable(report, args, fkwargs)
    classified = classify_args(args)
    primals = tuple(c.primal for c in classified)
    return Setup(
        f, fdot, classified, dict(fkwargs), fdm, r, a, gen, seed, report, primals,
        rules=ruleset_of(rule_f),
    )  # fmt: skip


def _check_walkable(report: Report, args: tuple[Any, ...], fkwargs: dict[str, Any]) -> None:
    """Report (and stop at) an argument that contains itself or nests too deeply."""
    __tracebackhide__ = True
    for i, x in enumerate(args):
        value = x.primal if isinstance(x, WithTangent) else x
        if isinstance(value, float | int | complex | np.ndarray | np.generic | str):
            continue
        try:
            for _ in leaves(value, thunks=False):
                pass
        except WalkError as exc:
            report.at(Check.INPUT, "args", (Index(i), *exc.path), _why(exc))
            report.raise_now()
    for k, v in fkwargs.items():
        try:
            for _ in leaves(v, thunks=False):
                pass
        except WalkError as exc:
            report.at(Check.INPUT, "fkwargs", (Key(k), *exc.path), _why(exc))
            report.raise_now()


def _why(exc: WalkError) -> str:
    what = (
        "the value contains itself (a cycle)"
        if exc.reason == "cycle"
        else f"the value nests deeper than {MAX_DEPTH} levels"
    )
    return f"{what}; the testers cannot walk it (pass a value without cycles)"


def ruleset_of(rule_f: Callable[..., Any]) -> RuleSet:
    """The RuleSet a rule function looks rules up in (``RuleSet.rrule`` bound methods), else
    the default one: where the testers find declared domains.
    """
    owner = getattr(rule_f, "__self__", None)
    return owner if isinstance(owner, RuleSet) else default_ruleset


def _short(qualname: str) -> str:
    """A rule's name without the function it was defined in (``<locals>``)."""
    return qualname.rsplit("<locals>.", 1)[-1]


def _key_text(key: tuple[Any, ...]) -> str:
    head, *rest = (function_name(k) for k in key)
    return f"{head}({', '.join(rest)})" if rest else head


def no_rule_text(s: Setup, rule_f: Any, kind: str, args: tuple[Any, ...]) -> str:
    """What a tester says when ``rule_f`` returned None: no rule is registered, or (for a
    RuleSet's own ``rrule``/``frule``) the registered ones named here all declined."""
    owner = default_ruleset if rule_f in (rrule, frule) else getattr(rule_f, "__self__", None)
    declining: list[Any] = []
    if isinstance(owner, RuleSet):
        try:
            infos = owner.rrule_infos if kind == "rrule" else owner.frule_infos
            declining = infos(s.f, *args)
        except Exception:  # arguments the registry cannot look up with: no rule to name
            declining = []
    if not declining:
        return (
            f"no rule: {describe(rule_f)} returned None (register one with register_{kind}, "
            f"or pass {kind}_f=)"
        )
    named = ", then ".join(
        f"{_short(info.qualname)} (for {_key_text(info.key)}, from {info.module})"
        for info in declining
    )
    which = "the one registered" if len(declining) == 1 else "every one registered"
    return (
        f"no rule: {describe(rule_f)} returned None: {which} declined these arguments (returned "
        f"None): {named}; no other {kind} applies"
    )


def domain_for(s: Setup, rule_f: Any) -> tuple[Any, tuple[Any, ...]]:
    """The rule's declared domain and the primals it describes (``broadcasted``'s function
    excluded), or ``(None, primals)``."""
    rules = ruleset_of(rule_f)
    f, primals = s.f, s.primals
    try:
        if f is broadcasted and primals:
            info = rules.rrule_info(f, *primals) or rules.scalar_info(primals[0])
            return (info.domain if info is not None else None), primals[1:]
        info = rules.rrule_info(f, *primals) or rules.frule_info(f, *primals)
    except Exception:
        return None, primals
    return (info.domain if info is not None else None), primals
