"""Domains: where a rule's inputs are valid, so generated tests stay inside them.

A rule declares one ``Interval`` per argument (or one for all), whether it accepts complex
inputs, and optionally points to avoid (a kink such as ``abs`` at 0):

>>> Interval.parse("(0, inf)")
Interval('(0, inf)')
>>> d = Domain.of("(-1, 1)")
>>> d.interval(0).contains(0.999), d.interval(0).contains(1.0)
(True, False)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

__all__ = ["NONNEGATIVE", "POSITIVE", "REALS", "UNIT_OPEN", "Domain", "Interval"]

_INTERVAL_RE = re.compile(r"^\s*([\[(])\s*([^,\s]+)\s*,\s*([^,\s]+)\s*([\])])\s*$")


def _fmt(v: float) -> str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v)


def _end(text: str, whole: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(
            f"cannot read an interval from {whole!r}: {text!r} is not a number; write it like "
            f"'(0, inf)' or '[-1, 1]'"
        ) from None
    if math.isnan(v):
        raise ValueError(f"cannot read an interval from {whole!r}: an end is nan")
    return v


@dataclass(frozen=True)
class Interval:
    """A real interval of valid inputs; closed ends are included, open ends and infinities not.

    >>> Interval(0.0, 1.0, lo_closed=True).contains(0.0)
    True
    """

    lo: float = -math.inf
    hi: float = math.inf
    lo_closed: bool = False
    hi_closed: bool = False

    def __post_init__(self) -> None:
        for name in ("lo", "hi"):
            v = getattr(self, name)
            if not isinstance(v, int | float | np.integer | np.floating) or isinstance(v, bool):
                raise TypeError(f"an interval's ends are real numbers, got {name}={v!r}")
            object.__setattr__(self, name, float(v))
        if not self.lo < self.hi:
            raise ValueError(f"an interval needs lo < hi, got lo={self.lo!r}, hi={self.hi!r}")
        # An infinite end is never included: "[-inf, 0]" means "(-inf, 0]".
        if math.isinf(self.lo):
            object.__setattr__(self, "lo_closed", False)
        if math.isinf(self.hi):
            object.__setattr__(self, "hi_closed", False)

    @classmethod
    def parse(cls, text: str) -> Interval:
        """Read an interval written as in mathematics: ``"(0, inf)"``, ``"[-1, 1]"``.

        ``str(Interval.parse(s))`` gives ``s`` back in normal form (``"[0, 1e+300)"``).

        Raises:
            ValueError: text that is not an interval, or ends with ``lo >= hi``.
        """
        if not isinstance(text, str):
            raise TypeError(f"Interval.parse takes a string like '(0, inf)', got text={text!r}")
        m = _INTERVAL_RE.match(text)
        if m is None:
            raise ValueError(
                f"cannot read an interval from {text!r}; write it like '(0, inf)' or '[-1, 1]'"
            )
        left, lo, hi, right = m.groups()
        return cls(_end(lo, text), _end(hi, text), lo_closed=left == "[", hi_closed=right == "]")

    def contains(self, x: Any) -> Any:
        """Whether ``x`` (a number or array, elementwise) lies inside; NaN never does, a
        complex number only when it is real."""
        x = np.asarray(x)
        if x.dtype.kind == "c":
            inside = np.asarray(self.contains(x.real) & (x.imag == 0))
            return bool(inside) if inside.ndim == 0 else inside
        above = x >= self.lo if self.lo_closed else x > self.lo
        below = x <= self.hi if self.hi_closed else x < self.hi
        out = above & below
        return bool(out) if out.ndim == 0 else out

    def __str__(self) -> str:
        left = "[" if self.lo_closed and math.isfinite(self.lo) else "("
        right = "]" if self.hi_closed and math.isfinite(self.hi) else ")"
        return f"{left}{_fmt(self.lo)}, {_fmt(self.hi)}{right}"

    def __repr__(self) -> str:
        return f"Interval({str(self)!r})"


REALS = Interval()
POSITIVE = Interval(0.0, math.inf)
NONNEGATIVE = Interval(0.0, math.inf, lo_closed=True)
UNIT_OPEN = Interval(-1.0, 1.0)

IntervalLike = Interval | str | tuple[float, float]
DomainLike = Union["Domain", IntervalLike, Sequence[IntervalLike | None], None]


def _is_real(x: Any) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool)


def _is_pair(x: Any) -> bool:
    return isinstance(x, tuple | list) and len(x) == 2 and all(_is_real(v) for v in x)


def _interval(x: Any) -> Interval:
    if isinstance(x, Interval):
        return x
    if isinstance(x, str):
        return Interval.parse(x)
    if _is_pair(x):
        return Interval(x[0], x[1])
    raise TypeError(
        f"an interval is an Interval, a string like '(0, inf)' or a pair (lo, hi) of numbers "
        f"(open ends), got {x!r}"
    )


@dataclass(frozen=True)
class Domain:
    """Valid inputs of a rule: an interval per argument, complex support, points to avoid.

    ``intervals`` holds one interval per argument, or a single one that applies to all.
    ``complex`` says the function is holomorphic and accepts complex inputs (the real line
    restriction still uses the intervals). ``avoid(*args)`` returns a boolean mask (or bool) of
    inputs to keep away from, such as kinks where the derivative is a chosen subgradient.
    """

    intervals: tuple[Interval, ...] = (REALS,)
    complex: bool = False
    avoid: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        raw: Any = self.intervals
        if isinstance(raw, Interval | str) or _is_pair(raw):
            raw = (raw,)
        intervals = tuple(_interval(i) for i in raw)
        if not intervals:
            raise ValueError("a domain needs at least one interval, got intervals=()")
        object.__setattr__(self, "intervals", intervals)
        if self.avoid is not None and not callable(self.avoid):
            raise TypeError(f"avoid must be a function of the arguments, got avoid={self.avoid!r}")

    @classmethod
    def of(cls, spec: DomainLike, *, complex: bool = False) -> Domain:
        """Normalise what users write: None (all reals), an ``Interval``, a string such as
        ``"(0, inf)"``, a pair ``(lo, hi)`` (an open interval), a list of these (one per
        argument), or a ``Domain``. ``complex=True`` marks the domain complex.

        >>> str(Domain.of(None)), str(Domain.of((0, 1))), str(Domain.of(["[0, 1]", "(0, inf)"]))
        ('(-inf, inf)', '(0, 1)', '[0, 1], (0, inf)')
        >>> str(Domain.of([None, "(0, inf)"]))
        '(-inf, inf), (0, inf)'

        Raises:
            TypeError: something that is not an interval.
            ValueError: a string that is not an interval, or an empty list.
        """
        if isinstance(spec, Domain):
            dom = spec
        elif spec is None:
            dom = cls((REALS,))
        elif isinstance(spec, Interval | str) or _is_pair(spec):
            dom = cls((_interval(spec),))
        elif isinstance(spec, Sequence):
            # None in the list is an argument without bounds, as a lone None is.
            dom = cls(tuple(REALS if s is None else _interval(s) for s in spec))
        else:
            raise TypeError(
                f"a domain is an interval, a string like '(0, inf)', a pair (lo, hi), a list of "
                f"these or a Domain, got {spec!r}"
            )
        if complex and not dom.complex:
            dom = cls(dom.intervals, complex=True, avoid=dom.avoid)
        return dom

    def interval(self, i: int) -> Interval:
        """The interval of argument ``i`` (the only one, when one interval covers all).

        Raises:
            IndexError: the domain declares fewer intervals than ``i + 1``.
        """
        if len(self.intervals) == 1:
            return self.intervals[0]
        if not 0 <= i < len(self.intervals):
            raise IndexError(
                f"the domain {self} declares {len(self.intervals)} intervals, one per "
                f"argument; there is none for argument {i}"
            )
        return self.intervals[i]

    def contains(self, *args: Any) -> Any:
        """Whether the arguments lie inside (elementwise, broadcast), avoided points excluded.

        A complex argument is inside when the domain is complex; a real one when its interval
        contains it. Returns a bool for scalars, a boolean array otherwise.
        """
        ok: Any = np.True_
        for i, a in enumerate(args):
            a = np.asarray(a)
            if a.dtype.kind == "c":
                ok = ok & np.full(a.shape, self.complex)
                continue
            ok = ok & self.interval(i).contains(a)
        if self.avoid is not None:
            ok = ok & ~np.asarray(self.avoid(*args), dtype=bool)
        ok = np.asarray(ok)
        return bool(ok) if ok.ndim == 0 else ok

    def __str__(self) -> str:
        parts = ", ".join(str(i) for i in self.intervals)
        return parts + (" or complex" if self.complex else "")
