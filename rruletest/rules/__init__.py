"""The rule registry: reverse rules (``rrule``), forward rules (``frule``) and scalar rules.

A rule receives the same arguments as the function it is registered for. An rrule returns
``(y, pullback)``; ``pullback(ybar)`` returns one tangent for the function itself, then one per
positional argument. An frule receives ``(fdot, xdot_1, ..., xdot_n)`` first and returns
``(y, ydot)``. Keys may be tuples: ``register_rrule(broadcasted, np.sin)`` registers a rule for
``rrule(broadcasted, np.sin, x)``, which receives ``(np.sin, x)``.

>>> import numpy as np
>>> from rruletest import NoTangent, RuleSet
>>> rules = RuleSet()
>>> @rules.register_rrule(np.sin)
... def _sin_rrule(x):
...     return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))
>>> y, pullback = rules.rrule(np.sin, 0.0)
>>> float(pullback(2.0)[1])
2.0
>>> rules.rrule(np.cos, 0.0) is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rruletest.domains import DomainLike
from rruletest.rules.generic import register_generic_rule
from rruletest.rules.info import RuleInfo, Signature, key_name
from rruletest.rules.inputs import Example
from rruletest.rules.registry import RuleReplacedWarning, RuleSet

__all__ = [
    "Example",
    "RuleInfo",
    "RuleReplacedWarning",
    "RuleSet",
    "default_ruleset",
    "derivatives_given_output",
    "frule",
    "key_name",
    "non_differentiable",
    "register_frule",
    "register_generic_rule",
    "register_rrule",
    "rrule",
    "scalar_rule",
]


default_ruleset = RuleSet("default")


def rrule(f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]] | None:
    """``(y, pullback)`` for ``f(*args, **kwargs)`` from the default RuleSet, or None."""
    return default_ruleset.rrule(f, *args, **kwargs)


def frule(tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any] | None:
    """``(y, ydot)`` for ``f(*args, **kwargs)`` pushed along ``tangents``, or None."""
    return default_ruleset.frule(tangents, f, *args, **kwargs)


def register_rrule(
    *fs: Any,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    signature: str | Signature | Callable[..., Any] | None = None,
    spaces: Any = None,
    shapes: Sequence[Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering an rrule in the default RuleSet (see ``RuleSet.register_rrule``)."""
    return default_ruleset.register_rrule(
        *fs, domain=domain, examples=examples, signature=signature, spaces=spaces, shapes=shapes
    )


def register_frule(
    *fs: Any,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    signature: str | Signature | Callable[..., Any] | None = None,
    spaces: Any = None,
    shapes: Sequence[Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering an frule in the default RuleSet (see ``RuleSet.register_frule``)."""
    return default_ruleset.register_frule(
        *fs, domain=domain, examples=examples, signature=signature, spaces=spaces, shapes=shapes
    )


def scalar_rule(
    f: Any,
    partials: Callable[..., Any],
    *,
    domain: DomainLike = None,
    complex: bool = False,
    examples: Sequence[Any] = (),
) -> RuleInfo:
    """Declare ``f`` elementwise in the default RuleSet (see ``RuleSet.scalar_rule``)."""
    return default_ruleset.scalar_rule(
        f, partials, domain=domain, complex=complex, examples=examples
    )


def derivatives_given_output(y: Any, f: Any, *args: Any) -> tuple[Any, ...] | None:
    """The partials of ``f``'s scalar rule in the default RuleSet, or None."""
    return default_ruleset.derivatives_given_output(y, f, *args)


def non_differentiable(f: Any) -> RuleInfo:
    """Register ``f`` as non-differentiable in the default RuleSet."""
    return default_ruleset.non_differentiable(f)
