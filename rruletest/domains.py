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

_INTERVAL_RE = re.compile(
    r"^\s*([\[(])\s*([-+]?(?:inf|[0-9.eE+-]+))\s*,\s*([-+]?(?:inf|[0-9.eE+-]+))\s*([\])])\s*$"
)


def _fmt(v: float) -> str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(int(v)) if float(v).is_integer() else repr(v)


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
        if not self.lo < self.hi:
            raise ValueError(f"an interval needs lo < hi, got lo={self.lo!r}, hi={self.hi!r}")

    @classmethod
    def parse(cls, text: str) -> Interval:
        """Read an interval written as in mathematics: ``"(0, inf)"``, ``"[-1, 1]"``."""
        m = _INTERVAL_RE.match(text)
        if m is None:
            raise ValueError(f"cannot read an interval from {text!r}; write it like '(0, inf)'")
        left, lo, hi, right = m.groups()
        return cls(float(lo), float(hi), lo_closed=left == "[", hi_closed=right == "]")

    def contains(self, x: Any) -> Any:
        """Whether ``x`` (a number or array, elementwise) lies inside."""
        x = np.asarray(x)
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

IntervalLike = Interval | str
DomainLike = Union["Domain", IntervalLike, Sequence[IntervalLike], None]


def _interval(x: IntervalLike) -> Interval:
    if isinstance(x, Interval):
        return x
    if isinstance(x, str):
        return Interval.parse(x)
    raise TypeError(f"an interval is an Interval or a string like '(0, inf)', got {x!r}")


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

    @classmethod
    def of(cls, spec: DomainLike, *, complex: bool = False) -> Domain:
        """Normalise what users write (None, an interval, a string, a list of them)."""
        if isinstance(spec, Domain):
            return spec
        if spec is None:
            return cls((REALS,), complex=complex)
        if isinstance(spec, Interval | str):
            return cls((_interval(spec),), complex=complex)
        return cls(tuple(_interval(s) for s in spec), complex=complex)

    def interval(self, i: int) -> Interval:
        """The interval of argument ``i``."""
        return self.intervals[0] if len(self.intervals) == 1 else self.intervals[i]

    def contains(self, *args: Any) -> Any:
        """Whether the arguments lie inside (elementwise, broadcast), avoided points excluded."""
        ok: Any = True
        for i, a in enumerate(args):
            a = np.asarray(a)
            if np.iscomplexobj(a):
                ok = ok & self.complex
                continue
            ok = ok & self.interval(i).contains(a)
        if self.avoid is not None:
            ok = ok & ~np.asarray(self.avoid(*args), dtype=bool)
        return ok

    def __str__(self) -> str:
        parts = ", ".join(str(i) for i in self.intervals)
        return parts + (" or complex" if self.complex else "")
