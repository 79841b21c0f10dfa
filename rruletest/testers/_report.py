"""What a tester call produces: problems as records, rendered to text once.

``Check`` names the testers' checks (typed values, in the order the testers run them). A
``Report`` collects the problems one tester call finds, each a ``rruletest.errors.Mismatch``
carrying its check, its path (as text and as walk steps), the values and the hint, and raises
one ``RuleTestFailure`` at the end, chained to the first exception the rule raised. A passing
call returns a ``TesterReport``: what was checked and how closely.

>>> import numpy as np
>>> r = Report("test_rrule", np.sinc, (np.ones(1000),), {}, seed=5)
>>> r.problem(Check.RULE, "rrule", "no rule: rrule_f returned None", expected="a rule")
>>> print(r.failure())
test_rrule(np.sinc, float64[1000]) failed
[rule] rrule: no rule: rrule_f returned None
reproduce: import numpy as np; from rruletest import test_rrule; _saved = np.load(...); \
test_rrule(np.sinc, _saved['a0'], rng=5)
>>> worst_errors(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
(0.5, 0.2)
"""

from __future__ import annotations

import dataclasses
import math
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NoReturn

import numpy as np

from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.tangents import AbstractZero, Thunk, unthunk
from rruletest.testers._args import describe
from rruletest.testers._check import Check
from rruletest.testers._snapshot import plain_leaf
from rruletest.walk import Element, Path, Step, WalkError, children, leaves, render_path

__all__ = ["Check", "Evidence", "Report", "TesterReport", "combine", "follow", "worst_errors"]


@dataclass(frozen=True)
class Evidence:
    """How many elements of one checked place (``args[0]``, ``ydot``) were compared with the
    numerical reference, and how many the engine left unchecked (it could not estimate them).
    """

    path: str
    compared: int
    unchecked: int


@dataclass(frozen=True)
class TesterReport:
    """The result of a passing tester call.

    Attributes:
        tester: ``"test_rrule"``, ``"test_frule"`` or ``"test_scalar"``.
        function: the function tested, as reports name it (``"np.sin"``).
        numerical: the numerical reference used (``"dense finite-difference vjp (3
            coordinates)"``, ``"structured broadcast vjp"``, ...), or None when nothing was
            compared numerically (``check_fd=False``, no differentiable argument).
        not_checked: the paths of the arguments not checked numerically (``"args[1]"``;
            the notes say why).
        pullback_calls: how many times the pullback was called (0 for ``test_frule``).
        worst_abs_err: the largest absolute difference from the numerical reference, or None.
        worst_rel_err: the largest normwise relative difference from the numerical reference
            (per leaf, ``max|actual - reference| / max(max|reference|, 1)``), or None: a
            relative error where the reference is of size 1 or more, an absolute one below, as
            the default tolerances (``rtol == atol``) judge it. So a derivative that is nearly
            zero everywhere (tanh's at 20 is 1e-17) does not make a passing rule look wrong.
        seed: the seed of the random tangents (None for a ``Generator`` passed as ``rng``).
        notes: the notes of the report (what was checked, how).
        parts: for ``test_scalar``, the report of each tester call it made.
        evidence: per checked place, the elements compared and left unchecked (``Evidence``;
            for the adjoint identity one entry ``args`` counting its random directions);
            empty when nothing was compared numerically (``check_fd=False``).
    """

    __test__ = False  # not a pytest test class, whatever the name

    tester: str
    function: str
    numerical: str | None
    not_checked: tuple[str, ...]
    pullback_calls: int
    worst_abs_err: float | None
    worst_rel_err: float | None
    seed: int | None
    notes: tuple[str, ...] = ()
    parts: tuple[TesterReport, ...] = ()
    evidence: tuple[Evidence, ...] = ()


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
    ) -> None:
        self.tester = tester
        self._what = (f, args, fkwargs)
        self._call: str | None = None
        self.seed = seed
        # a Generator passed as rng, as it was on entry (set by ``setup``): the line passes it
        self.generator: Any = None  # a SavedGenerator
        self.mismatches: list[Mismatch] = []
        self.notes: list[str] = []
        self.passing_notes: list[str] = []
        self.cause: BaseException | None = None
        self.mutated: set[tuple[str, Path]] = set()  # places already reported as mutated
        self.numerical: str | None = None  # the numerical reference used, once one was
        self.pullback_calls = 0
        self.worst_abs_err: float | None = None
        self.worst_rel_err: float | None = None
        self.evidence: list[Evidence] = []
        self.options: dict[str, Any] = {}  # the tester's options the caller gave
        self.thunked: dict[str, str] = {}  # place -> kind, for what the rule returned thunked

    @property
    def call(self) -> str:
        """The tester call, its arguments summarised (built only when a report is needed)."""
        if self._call is None:
            f, args, fkwargs = self._what
            parts = [describe(f), *(describe(a) for a in args)]
            if fkwargs:  # f's keywords, shown as the tester takes them
                kws = ", ".join(f"{k!r}: {describe(v)}" for k, v in fkwargs.items())
                parts.append(f"fkwargs={{{kws}}}")
            self._call = f"{self.tester}({', '.join(parts)})"
        return self._call

    # -- recording ---------------------------------------------------------------------------
    def add(self, m: Mismatch) -> None:
        """Record a mismatch; its message gets the check's tag on its first line, and a hint
        when it is about a value the rule returned as a thunk (``mark_thunks``)."""
        tag = f"[{m.check}] "
        if not m.message.startswith(tag):
            m = dataclasses.replace(m, message=tag + m.message)
        place = self._thunked_place(m)
        if place is not None:
            hint = (
                f"{place} was returned as a thunk ({self.thunked[place]}): what was checked is its "
                "unthunked value (unthunk(...))"
            )
            m = dataclasses.replace(m, hint=f"{m.hint}\n{hint}" if m.hint else hint)
        self.mismatches.append(m)

    def mark_thunks(self, root: str, value: Any) -> None:
        """Remember where ``value`` (what the rule returned at ``root``: ``args[0]``, ``ydot``)
        holds a ``Thunk``, so that problems found there say the rule returned a thunk (the
        checks compare its unthunked value, and the thunk would be invisible otherwise)."""
        if plain_leaf(value):
            return  # a number, a plain array or a zero (the common case): no thunk inside
        try:
            found = [(p, v) for p, v in leaves(value, thunks=False) if isinstance(v, Thunk)]
        except Exception:  # a value the walk cannot follow: its own checks report it
            return
        for path, thunk in found:
            self.thunked[render_path(root, path)] = type(thunk).__name__

    def _thunked_place(self, m: Mismatch) -> str | None:
        """The thunked place ``m`` is at or below, unless its message speaks of thunks."""
        if not self.thunked or "thunk" in m.message.lower():
            return None
        for place in self.thunked:
            if m.path == place or (m.path.startswith(place) and m.path[len(place)] in "[."):
                return place
        return None

    def problem(
        self,
        check: Check,
        path: str,
        text: str,
        *,
        steps: Sequence[Step] = (),
        actual: Any = None,
        expected: Any = None,
        hint: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Record a problem described in words at ``path`` (rendered text; ``steps`` the same
        place as data, below the root the text starts with; ``extra`` data for tools)."""
        m = Mismatch(check, path, actual, expected, f"{path}: {text}", hint=hint, extra=extra or {})
        self.add(dataclasses.replace(m, steps=tuple(steps)))

    def at(self, check: Check, root: str, steps: Path, text: str, **kw: Any) -> None:
        """Record a problem at the walk path ``steps`` below ``root`` (rendered here, once)."""
        self.problem(check, render_path(root, steps), text, steps=steps, **kw)

    def titled(self, check: Check, title: str, found: list[Mismatch]) -> None:
        """Record mismatches from ``collect_mismatches`` under one explaining title each."""
        for m in found:
            body = textwrap.indent(m.message.rstrip("\n"), "  ")
            self.add(dataclasses.replace(m, check=check, message=f"{title}\n{body}"))

    def exception(
        self, check: Check, call: str, exc: BaseException, *, hint: str | None = None
    ) -> None:
        """Record that ``call`` raised ``exc`` (the first such exception becomes the cause)."""
        if self.cause is None:
            self.cause = exc
        if check is Check.EXCEPTION:
            exc.__traceback__ = user_frames(exc.__traceback__)
        text = f"{call} raised {type(exc).__name__}: {exc}"
        self.add(Mismatch(check, call, exc, "no exception", text, hint=hint))

    def note(self, line: str, *, on_failure: bool = True) -> None:
        """Add a line explaining a check; ``on_failure=False`` keeps it out of a failure's
        header (a check that passed and says nothing about the problems found)."""
        (self.notes if on_failure else self.passing_notes).append(line)

    def reference(self, mode: str, fdm: Any) -> None:
        """Note the numerical reference used (``mode``, with the ``fdm``)."""
        self.numerical = mode
        self.note(f"numerical reference: {mode}, fdm={fdm!r}")

    def measured(self, actual: Any, expected: Any, *, scale: float | None = None) -> None:
        """Track the worst differences of a tangent from its numerical reference (relative to
        ``scale`` when given, else to the reference)."""
        found = worst_errors(actual, expected)
        if found is not None and scale is not None:
            found = (found[0], found[0] / scale if scale > 0 else float(found[0] > 0) * math.inf)
        if found is not None:
            self.worst_abs_err = combine(self.worst_abs_err, found[0])
            self.worst_rel_err = combine(self.worst_rel_err, found[1])

    def result(self, not_checked: tuple[str, ...]) -> TesterReport:
        """The ``TesterReport`` a passing tester returns."""
        return TesterReport(
            tester=self.tester,
            function=describe(self._what[0]),
            numerical=self.numerical,
            not_checked=not_checked,
            pullback_calls=self.pullback_calls,
            worst_abs_err=self.worst_abs_err,
            worst_rel_err=self.worst_rel_err,
            seed=self.seed,
            notes=(*self.notes, *self.passing_notes),
            evidence=tuple(self.evidence),
        )

    # -- raising -----------------------------------------------------------------------------
    def reproduce(self) -> str:
        """The statement that repeats this tester call (``_reproduce.reproduce_line``)."""
        from rruletest.testers._reproduce import reproduce_line

        f, args, fkwargs = self._what
        try:
            rng: Any = self.seed
            if rng is None and self.generator is not None:
                rng = self.generator.generator()
            return reproduce_line(self.tester, f, args, fkwargs, self.options, rng)
        except Exception:  # a value nothing can write out: the call as summarised
            tail = f", rng={self.seed})" if self.seed is not None else ")"
            return f"{self.call[:-1]}{tail}  # (its inputs could not be written out)"

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


# -- the user's frames of an exception ---------------------------------------------------------


def _library_dirs() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("purelib", "platlib", "stdlib", "platstdlib") if k in paths}
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # rruletest itself
    return tuple(os.path.join(d, "") for d in sorted(dirs))


def user_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback of an exception from the user's code, without the library frames above
    the user's first one (the tester's) nor below its last one (numpy internals), so a failing
    pullback shows its own lines. Unchanged when no frame is the user's.

    >>> user_frames(None) is None
    True
    """
    libs = _library_dirs()

    def lib(t: TracebackType) -> bool:
        return os.path.abspath(t.tb_frame.f_code.co_filename).startswith(libs)

    start = tb
    while start is not None and lib(start):
        start = start.tb_next
    if start is None:
        return tb
    last, cur = start, start.tb_next
    while cur is not None:
        if not lib(cur):
            last = cur
        cur = cur.tb_next
    last.tb_next = None  # numpy's (or another library's) frames below the user's last one
    return start


# -- worst errors -------------------------------------------------------------------------------


def follow(x: Any, path: Path) -> Any:
    """The part of ``x`` at ``path`` (zeros stay zeros below them); None when it has none."""
    for step in path:
        x = unthunk(x)
        if isinstance(x, AbstractZero):
            return 0.0
        if isinstance(step, Element) and isinstance(x, np.ndarray):
            x = x[step.key]
            continue
        kids = children(x)
        found = None if kids is None else next((v for s, v in kids if s.key == step.key), None)
        if found is None:
            return None
        x = found
    x = unthunk(x)
    return 0.0 if isinstance(x, AbstractZero) else x


_SCALARS = frozenset({float, complex, np.float64, np.float32, np.complex128, np.complex64})


def worst_errors(actual: Any, expected: Any) -> tuple[float, float] | None:
    """The largest absolute and normwise relative differences of ``actual`` from ``expected``
    over the numeric leaves of ``expected`` (found with the one walk, dataclass fields and
    plain objects included; NaN in ``expected``: not estimated, skipped); None if none compare.

    The relative difference of a leaf is ``max|a - e| / max(max|e|, 1)``: elementwise ratios
    would blow up where the reference is nearly zero (tanh's derivative at 20 is 1e-17), which
    says nothing about the rule.
    """
    if type(expected) in _SCALARS and type(actual) in _SCALARS:  # the common case, no walk
        dist = abs(complex(actual) - complex(expected))  # (Python numbers: no numpy warnings)
        if dist != dist:
            return None
        return float(dist), float(dist) / max(abs(complex(expected)), 1.0)
    worst_abs = worst_rel = -1.0
    try:
        if type(expected) is np.ndarray and expected.dtype.kind in "fc":
            pairs: list[tuple[Any, Any]] = [(follow(actual, ()), expected)]  # the one leaf
        else:
            pairs = [
                (follow(actual, path), e)
                for path, e in leaves(expected)
                if isinstance(e, np.ndarray | np.number | float | int | complex)
                and not isinstance(e, bool | np.bool_)
            ]
    except (WalkError, Exception):
        return None
    for a, e in pairs:
        if a is None:
            continue
        try:
            with np.errstate(all="ignore"):
                ea = np.asarray(e)
                dist = np.abs(np.asarray(a) - ea)
                keep = ~np.isnan(dist)
        except Exception:
            continue
        if dist.shape != ea.shape or dist.size == 0:
            continue
        if keep.all():  # every element estimated (the common case): no masked copies
            leaf_abs = float(dist.max())
            scale = max(float(np.abs(ea).max()), 1.0)
        elif keep.any():
            leaf_abs = float(np.max(dist[keep]))
            scale = max(float(np.max(np.abs(ea[keep]))), 1.0)
        else:
            continue
        worst_abs = max(worst_abs, leaf_abs)
        worst_rel = max(worst_rel, leaf_abs / scale)
    if worst_abs < 0:
        return None
    return worst_abs, worst_rel


def combine(a: float | None, b: float | None) -> float | None:
    """The larger of two optional errors (NaN-free)."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b) if not (math.isnan(a) or math.isnan(b)) else math.nan
