"""What the broadcast rules share: their warning and error, element iteration, tangent assembly
and the checks of incoming tangents.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
import warnings
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import numpy as np

from rruletest.broadcast._apply import broadcasted, call_text, fname
from rruletest.projection import is_differentiable
from rruletest.rules import RuleSet, default_ruleset
from rruletest.rules.scalar import fits, numeric_value
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, Tangent, unthunk

__all__ = ["NoBroadcastRuleError", "SlowBroadcastWarning"]


class SlowBroadcastWarning(UserWarning):
    """Differentiating ``broadcasted(f, ...)`` calls ``f``'s own rule once per element (slow).

    Emitted once per function. Give ``f`` a scalar rule to make it fast, or silence it with
    ``warnings.filterwarnings("ignore", category=SlowBroadcastWarning)``.
    """


class NoBroadcastRuleError(TypeError, LookupError):
    """No rule can differentiate ``broadcasted(f, ...)``.

    Attributes ``function``, ``kind`` (``"rrule"`` or ``"frule"``) and ``ruleset`` say which
    lookup failed. A ``TypeError`` (the call cannot be differentiated as made) and a
    ``LookupError`` (a rule is missing), so either ``except`` clause catches it.
    """

    def __init__(self, message: str, function: Any, kind: str, ruleset: RuleSet) -> None:
        super().__init__(message)
        self.function, self.kind, self.ruleset = function, kind, ruleset


_WARNED: set[Hashable] = set()


def _declined_rules(rules: RuleSet, f: Any, kind: str) -> str:
    """The rules registered for ``broadcasted(f)`` (which the RuleSet asked before the generic
    rule), by name and module; empty when there are none."""
    try:
        infos = (rules.rrule_infos if kind == "rrule" else rules.frule_infos)(broadcasted, f)
    except Exception:  # an f the registry cannot look up: nothing registered for it
        return ""
    return ", then ".join(
        f"{i.qualname.rsplit('<locals>.', 1)[-1]} (from {i.module})" for i in infos
    )


def no_rule(rules: RuleSet, f: Any, kind: str) -> NoBroadcastRuleError:
    """The error for a function without any rule, with the three ways to give it one."""
    short = str(getattr(f, "__name__", fname(f)))
    reg = "register_rrule" if kind == "rrule" else "register_frule"
    where = "the default RuleSet" if rules is default_ruleset else repr(rules)
    ways = [
        (f"scalar_rule({short}, partials)", "its partial derivatives, vectorised (fast)"),
        (f"{reg}({short})", f"its own scalar {kind}, called once per element (slow)"),
        (f"{reg}(broadcasted, {short})", "a rule for the whole broadcast"),
    ]
    declined = _declined_rules(rules, f, kind)
    if declined:  # the generic rule runs after every registered one declined
        ways = ways[:2]
        what = (
            f"the {kind} registered for broadcasted({fname(f)}) declined these arguments "
            f"(returned None): {declined}; and {fname(f)} has no rule of its own in {where} to "
            f"fall back on"
        )
    else:
        what = f"{fname(f)} has no rule in {where}"
    width = max(len(w) for w, _ in ways) + 2
    lines = "".join(f"\n  {w.ljust(width)}{why}" for w, why in ways)
    return NoBroadcastRuleError(
        f"{call_text(kind, f)}: {what}. Give it one of:{lines}\n"
        f"(module-level functions register in the default RuleSet, a RuleSet's methods in it). "
        f"broadcast_path(f, rules=...) checks for a rule without raising.",
        f,
        kind,
        rules,
    )


def declined(
    rules: RuleSet, f: Any, kind: str, k: int, element: Sequence[Any]
) -> NoBroadcastRuleError:
    """The error for ``f``'s own rule returning None (declining) at one broadcast element."""
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in element)
    return NoBroadcastRuleError(
        f"{call_text(kind, f)}: the {kind} of {fname(f)} declined (returned None) at element "
        f"{k}, {fname(f)}({shown}), so the broadcast cannot be differentiated there",
        f,
        kind,
        rules,
    )


def warn_slow(f: Any, what: str) -> None:
    """Warn, once per function, that differentiating its broadcast is slow."""
    try:
        if f in _WARNED:
            return
    except TypeError:
        pass
    frame: Any = sys._getframe(0)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("rruletest"):
        frame, level = frame.f_back, level + 1  # point the warning at the user's call
    warnings.warn(
        f"broadcasting {fname(f)} {what}: slow for large arrays. Declare scalar_rule("
        f"{getattr(f, '__name__', fname(f))}, partials) to make it vectorised",
        SlowBroadcastWarning,
        stacklevel=level,
    )
    with contextlib.suppress(TypeError):
        _WARNED.add(f)  # only once the warning was shown (an "error" filter raises above)


def check_args(args: Sequence[Any], kind: str, f: Any) -> None:
    """Reject list and tuple arguments: their cotangent would be ambiguous."""
    for i, a in enumerate(args):
        if isinstance(a, list | tuple):
            raise TypeError(
                f"{call_text(kind, f)}: args[{i}] is a {type(a).__name__}; a rule cannot give a "
                f"{type(a).__name__} an array cotangent, pass np.asarray(args[{i}])"
            )


def elements(values: Sequence[Any], shape: tuple[int, ...]) -> Iterator[tuple[Any, ...]]:
    """The broadcast elements of ``values`` in C order: numpy scalars (dtype kept) for arrays,
    the value itself for scalars and zero tangents."""
    its = [
        np.broadcast_to(v, shape).flat if isinstance(v, np.ndarray) else itertools.repeat(v)
        for v in values
    ]
    return itertools.islice(zip(*its, strict=False), math.prod(shape))


def assemble(values: list[Any], shape: tuple[int, ...], what: Callable[[int], str]) -> Any:
    """Per-element tangents as one array of ``shape``; a zero when every element is one."""
    if values and all(isinstance(v, AbstractZero) for v in values):
        return NO_TANGENT if all(v is NO_TANGENT for v in values) else ZERO_TANGENT
    flat = []
    for k, v in enumerate(values):
        v = unthunk(v)
        if isinstance(v, AbstractZero):
            v = 0.0
        elif isinstance(v, Tangent) or np.ndim(v) != 0 or np.asarray(v).dtype.kind not in "biufc":
            raise TypeError(f"{what(k)}: expected a number, got {type(v).__name__} {v!r}")
        flat.append(v)
    return np.array(flat, dtype=None if flat else float).reshape(shape)


def cotangent_in(ybar: Any, shape: tuple[int, ...], where: str) -> Any:
    """The output cotangent unthunked and checked: a zero, or numbers broadcastable to ``shape``
    (a list of numbers as an array)."""
    ybar = numeric_value(ybar)
    if isinstance(ybar, AbstractZero):
        return ybar
    kind = "O" if isinstance(ybar, Tangent) else np.asarray(ybar).dtype.kind
    if kind not in "biufc":
        raise TypeError(
            f"{where}: the output cotangent must be a number or a numeric array of shape "
            f"{shape}, got {type(ybar).__name__}"
        )
    if not fits(np.shape(ybar), shape):
        raise ValueError(
            f"{where}: the output cotangent has shape {np.shape(ybar)}, the output has shape "
            f"{shape}"
        )
    return ybar


def zero_cotangents(ybar: AbstractZero, args: Sequence[Any]) -> tuple[Any, ...]:
    """The pullback's result for a zero output cotangent: that zero for each differentiable arg."""
    return (NO_TANGENT, NO_TANGENT, *(ybar if is_differentiable(a) else NO_TANGENT for a in args))


def owned(t: Any) -> Any:
    """A returned tangent that the caller may modify: copies read-only broadcast views and real
    views of complex buffers; anything else is returned as it is."""
    if isinstance(t, np.ndarray) and (
        not t.flags.writeable or (t.base is not None and t.base.dtype.kind != t.dtype.kind)
    ):
        return t.copy()
    return t


def like_output(y: Any, ydot: Any, shape: tuple[int, ...]) -> Any:
    """A tangent cast to the output's shape, precision (real for a real output) and container."""
    if isinstance(ydot, AbstractZero):
        return ydot
    arr = np.asarray(ydot)
    if arr.shape != shape:
        arr = np.broadcast_to(arr, shape)
    dtype = np.result_type(y)
    if dtype.kind != "c" and arr.dtype.kind == "c":
        arr = arr.real
    if dtype.kind in "fc" and arr.dtype != dtype:
        arr = arr.astype(dtype)
    if not isinstance(y, np.ndarray):
        return arr[()]
    return arr if arr.flags.owndata and arr.flags.writeable else arr.copy()  # never a view
