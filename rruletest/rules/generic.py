"""Generic rules: rules for a function that every ``RuleSet`` falls back to when it has none
of its own, called with the RuleSet that looks them up (so fresh RuleSets get them too).
``rruletest.broadcast`` registers the rule for ``broadcasted`` here.

>>> calls = []
>>> register_generic_rule(print, rrule=lambda rules, *args: calls.append(args))
>>> generic_rrule(print)(None, 1.0), calls, generic_frule(print)
(None, [(1.0,)], None)
>>> del GENERIC_RRULES[print]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

__all__ = [
    "GENERIC_FRULES",
    "GENERIC_RRULES",
    "generic_frule",
    "generic_rrule",
    "register_generic_rule",
]

# Generic rules (such as the one for ``broadcasted``) live outside any RuleSet and receive the
# RuleSet that looks them up, so fresh RuleSets get them too. Registered by the modules that
# define them (see rruletest.broadcast).
GENERIC_RRULES: dict[Hashable, Callable[..., Any]] = {}
GENERIC_FRULES: dict[Hashable, Callable[..., Any]] = {}


def register_generic_rule(
    f: Hashable,
    *,
    rrule: Callable[..., Any] | None = None,
    frule: Callable[..., Any] | None = None,
) -> None:
    """Register rules for ``f`` that every RuleSet falls back to; they get the RuleSet first.

    ``rrule(ruleset, *args, **kwargs)`` and ``frule(ruleset, tangents, *args, **kwargs)``
    are used when the RuleSet has no rule of its own for ``f`` (or for ``(f, args[0])``).
    """
    if rrule is not None:
        GENERIC_RRULES[f] = rrule
    if frule is not None:
        GENERIC_FRULES[f] = frule


def _lookup(table: dict[Hashable, Callable[..., Any]], f: Any) -> Callable[..., Any] | None:
    try:
        return table.get(f)
    except TypeError:  # an unhashable f has no rule
        return None


def generic_rrule(f: Any) -> Callable[..., Any] | None:
    """The generic rrule registered for ``f``, if any."""
    return _lookup(GENERIC_RRULES, f)


def generic_frule(f: Any) -> Callable[..., Any] | None:
    """The generic frule registered for ``f``, if any."""
    return _lookup(GENERIC_FRULES, f)
