"""Collecting every problem a tester finds into one ``RuleTestFailure``.

A ``Report`` names the tester call (function and a summary of the arguments: shapes and dtypes,
not huge arrays), gathers ``Mismatch``es from every check, notes what was and was not checked
numerically, and raises one failure at the end, chained to the first exception the rule raised.

>>> import numpy as np
>>> r = Report("test_rrule", np.sin, (np.ones(1000),), {}, seed=5)
>>> r.problem("rule", "rrule", "no rule: rrule_f returned None", actual=None, expected="a rule")
>>> print(r.failure())
test_rrule(np.sin, float64[1000]) failed
[rule] rrule: no rule: rrule_f returned None
reproduce: test_rrule(np.sin, float64[1000], rng=5)
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from typing import TYPE_CHECKING, Any, NoReturn

from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.testers._args import describe

if TYPE_CHECKING:
    from rruletest.testers._result import TesterReport

__all__ = ["Report"]


class Report:
    """The problems found by one tester call, and the notes that explain its checks."""

    def __init__(
        self,
        tester: str,
        f: Any,
        args: tuple[Any, ...],
        fkwargs: dict[str, Any],
        *,
        seed: int | None,
        extra: str = "",
    ) -> None:
        self._what = (tester, f, args, fkwargs, extra)
        self._call: str | None = None
        self.seed = seed
        self.mismatches: list[Mismatch] = []
        self.notes: list[str] = []
        self.cause: BaseException | None = None
        self.mutated: set[str] = set()  # paths already reported as mutated
        self.numerical: str | None = None  # the numerical reference used, once one was
        self.pullback_calls = 0
        self.worst_abs_err: float | None = None
        self.worst_rel_err: float | None = None

    @property
    def call(self) -> str:
        """The tester call, its arguments summarised (built only when a report is needed)."""
        if self._call is None:
            tester, f, args, fkwargs, extra = self._what
            parts = [describe(f), *(describe(a) for a in args)]
            parts += [f"{k}={describe(v)}" for k, v in fkwargs.items()]
            self._call = f"{tester}({', '.join(parts)}{extra})"
        return self._call

    # -- recording ---------------------------------------------------------------------------
    def add(self, m: Mismatch) -> None:
        """Record a mismatch; its message gets the check's tag on its first line."""
        tag = f"[{m.check}] "
        if not m.message.startswith(tag):
            m = dataclasses.replace(m, message=tag + m.message)
        self.mismatches.append(m)

    def problem(
        self,
        check: str,
        path: str,
        text: str,
        *,
        actual: Any = None,
        expected: Any = None,
        hint: str | None = None,
    ) -> None:
        """Record a problem described in words."""
        self.add(Mismatch(check, path, actual, expected, f"{path}: {text}", hint=hint))

    def titled(self, check: str, title: str, found: list[Mismatch]) -> None:
        """Record mismatches from ``collect_mismatches`` under one explaining title each."""
        for m in found:
            body = textwrap.indent(m.message.rstrip("\n"), "  ")
            self.add(dataclasses.replace(m, check=check, message=f"{title}\n{body}"))

    def exception(
        self, check: str, call: str, exc: BaseException, *, hint: str | None = None
    ) -> None:
        """Record that ``call`` raised ``exc`` (the first such exception becomes the cause)."""
        if self.cause is None:
            self.cause = exc
        text = f"{call} raised {type(exc).__name__}: {exc}"
        self.add(Mismatch(check, call, exc, "no exception", text, hint=hint))

    def note(self, line: str) -> None:
        self.notes.append(line)

    def reference(self, mode: str, fdm: Any) -> None:
        """Note the numerical reference used (``mode``, with the ``fdm``)."""
        self.numerical = mode
        self.note(f"numerical reference: {mode}, fdm={fdm!r}")

    def measured(self, actual: Any, expected: Any, *, scale: float | None = None) -> None:
        """Track the worst differences of a tangent from its numerical reference (relative to
        ``scale`` when given, else to the reference)."""
        from rruletest.testers._result import combine, worst_errors

        found = worst_errors(actual, expected)
        if found is not None and scale is not None:
            found = (found[0], found[0] / scale if scale > 0 else float(found[0] > 0) * math.inf)
        if found is not None:
            self.worst_abs_err = combine(self.worst_abs_err, found[0])
            self.worst_rel_err = combine(self.worst_rel_err, found[1])

    def result(self, not_checked: tuple[str, ...]) -> TesterReport:
        """The ``TesterReport`` a passing tester returns."""
        from rruletest.testers._result import TesterReport

        tester, f, _, _, _ = self._what
        return TesterReport(
            tester=tester,
            function=describe(f),
            numerical=self.numerical,
            not_checked=not_checked,
            pullback_calls=self.pullback_calls,
            worst_abs_err=self.worst_abs_err,
            worst_rel_err=self.worst_rel_err,
            seed=self.seed,
            notes=tuple(self.notes),
        )

    # -- raising -----------------------------------------------------------------------------
    @property
    def failed(self) -> bool:
        return bool(self.mismatches)

    def reproduce(self) -> str:
        if self.seed is None:
            return (
                f"{self.call} with the same numpy Generator state (pass an int rng=seed "
                "to make tangents reproducible)"
            )
        call = self.call[:-1] + f", rng={self.seed})"
        return call

    def failure(self) -> RuleTestFailure:
        header = "\n".join([f"{self.call} failed", *(f"  {n}" for n in self.notes)])
        return RuleTestFailure(self.mismatches, header=header, reproduce=self.reproduce())

    def raise_now(self) -> NoReturn:
        """Raise the failure at once (a check that later checks depend on failed)."""
        __tracebackhide__ = True
        raise self.failure() from self.cause

    def finish(self) -> None:
        """Raise the failure if anything was recorded."""
        __tracebackhide__ = True
        if self.mismatches:
            raise self.failure() from self.cause
