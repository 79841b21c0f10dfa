"""The functions a rule computes, as functions of their own: what second-order rules are for.

A pullback maps ``ybar`` to cotangents at a point ``x``; seen as a function of both,
``PullbackOf(f)(*x, ybar) == pullback_at_x(ybar)[1:]``. Its derivative along ``x`` is a
Hessian-vector product (for a scalar ``f`` with ``ybar = 1``). Likewise
``PushforwardOf(f)(*x, *xdot) == frule((NoTangent(), *xdot), f, *x)[1]``. A rule registered for
one of these is a second-order rule, and ``order=2`` in the testers checks it against finite
differences of the first-order rule. Automatic-differentiation adapters answer for them by
differentiating the first-order rule themselves.

Both compare and hash by ``f`` alone, so a rule registered for ``pullback_of(f)`` is found
whichever rule lookup computes the first-order rule.

>>> import numpy as np
>>> from rruletest import NoTangent, RuleSet
>>> rules = RuleSet()
>>> rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
RuleInfo(...)
>>> g = PullbackOf(np.sin, rules.rrule)
>>> g(0.0, 2.0)
(2.0,)
>>> g == pullback_of(np.sin), g
(True, pullback_of(np.sin))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rruletest.tangents import NO_TANGENT, unthunk

__all__ = ["PullbackOf", "PushforwardOf", "pullback_of", "pushforward_of"]


def _name(f: Any) -> str:
    module = getattr(f, "__module__", None)
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if name is None:
        return repr(f)
    if module == "numpy":
        return f"np.{name}"
    return str(name)


class _Derived:
    """A function derived from ``f``'s rule; equal to any other of its kind for the same ``f``."""

    __slots__ = ("f", "rule_f")
    _label = ""

    def __init__(self, f: Any, rule_f: Callable[..., Any] | None = None) -> None:
        if not callable(f):
            raise TypeError(f"{self._label} needs a function, got f={f!r}")
        self.f = f
        self.rule_f = rule_f

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Derived) and type(other) is type(self) and other.f == self.f

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.f))

    def __repr__(self) -> str:
        return f"{self._label}({_name(self.f)})"

    @property
    def __name__(self) -> str:
        return repr(self)


class PullbackOf(_Derived):
    """``(*x, ybar) -> (xbar_0, ..., xbar_n-1)``: the pullback of ``f`` at ``x`` applied to
    ``ybar``, computed with ``rule_f`` (default: the module-level ``rrule``).

    Raises:
        LookupError: when called and ``rule_f`` has no rule for ``f`` at ``x``.
    """

    __slots__ = ()
    _label = "pullback_of"

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        if not args:
            raise TypeError(f"{self!r} takes the arguments of f, then ybar")
        *xs, ybar = args
        rule_f = self.rule_f
        if rule_f is None:
            from rruletest.rules import rrule

            rule_f = rrule
        res = rule_f(self.f, *xs, **kwargs)
        if res is None:
            raise LookupError(f"no rrule for {_name(self.f)}: {self!r} cannot be evaluated")
        _, pullback = res
        out = pullback(ybar)
        return tuple(unthunk(t) for t in out[1:])


class PushforwardOf(_Derived):
    """``(*x, *xdot) -> ydot``: the frule of ``f`` at ``x`` along ``xdot`` (half the
    arguments are points, half tangents), computed with ``rule_f`` (default: ``frule``)."""

    __slots__ = ()
    _label = "pushforward_of"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) % 2:
            raise TypeError(f"{self!r} takes the arguments of f, then one tangent for each")
        n = len(args) // 2
        xs, xdots = args[:n], args[n:]
        rule_f = self.rule_f
        if rule_f is None:
            from rruletest.rules import frule

            rule_f = frule
        res = rule_f((NO_TANGENT, *xdots), self.f, *xs, **kwargs)
        if res is None:
            raise LookupError(f"no frule for {_name(self.f)}: {self!r} cannot be evaluated")
        return unthunk(res[1])


def pullback_of(f: Any, rule_f: Callable[..., Any] | None = None) -> PullbackOf:
    """The key to register a second-order rule under: the function ``f``'s pullback computes.

    >>> import numpy as np
    >>> pullback_of(np.sin)
    pullback_of(np.sin)
    """
    return PullbackOf(f, rule_f)


def pushforward_of(f: Any, rule_f: Callable[..., Any] | None = None) -> PushforwardOf:
    """The key for a rule of the function ``f``'s frule computes (see ``PushforwardOf``)."""
    return PushforwardOf(f, rule_f)
