"""The rrule and frule that ``scalar_rule(f, partials)`` provides.

``partials(*args, y)`` returns one partial derivative per argument, computed with numpy so it
vectorises. The rrule's pullback is ``xbar_i = unbroadcast(x_i, ybar * conj(d_i))`` (the
cotangent convention ``<a, b> = Re(sum(conj(a) * b))``: for holomorphic ``f``,
``xbar = ybar * conj(f'(x))``); the frule's pushforward is ``ydot = sum_i d_i * xdot_i``. Both
compute the partials only when needed and keep only inputs and output.

>>> import numpy as np
>>> rule = ScalarRRule(np.exp, lambda x, y: y, "exp", "example")
>>> y, pullback = rule(1j)
>>> complex(pullback(1.0)[1]) == complex(np.conj(np.exp(1j)))
True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.projection import is_differentiable, unbroadcast
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, conj, unthunk

__all__ = ["ScalarFRule", "ScalarRRule", "check_partials_signature", "checked_partials"]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def checked_partials(
    partials: Callable[..., Any], name: str, module: str, args: tuple[Any, ...], y: Any
) -> tuple[Any, ...]:
    """Call ``partials(*args, y)`` and check it returned one partial per argument.

    Raises:
        TypeError: naming the rule, when the count (or the container) is wrong.
    """
    where = f"the partials of scalar rule {name} (registered in {module})"
    try:
        ps = partials(*args, y)
    except TypeError:
        if _accepts(partials, len(args) + 1) is False:
            raise TypeError(
                f"{where} cannot be called with {_plural(len(args), 'argument')} and the output; "
                f"partials(*args, y) takes the function's arguments, then its output y"
            ) from None
        raise
    if not isinstance(ps, tuple | list):
        if len(args) == 1:
            return (ps,)
        raise TypeError(
            f"{where} returned a value of type {type(ps).__name__} for "
            f"{_plural(len(args), 'argument')}; "
            f"partials(*args, y) must return a tuple with one partial per argument"
        )
    if len(ps) != len(args):
        raise TypeError(
            f"{where} returned {_plural(len(ps), 'partial')} for "
            f"{_plural(len(args), 'argument')}; partials(*args, y) must return one partial per "
            f"argument"
        )
    return tuple(ps)


def _accepts(fn: Callable[..., Any], n: int) -> bool | None:
    """Whether ``fn`` can take ``n`` positional arguments (None when its signature is unknown)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(n))
    except TypeError:
        return False
    return True


def check_partials_signature(partials: Callable[..., Any], name: str) -> None:
    """Refuse, at registration, partials that cannot take even one argument and the output.

    Raises:
        TypeError: naming the rule.
    """
    try:
        params = inspect.signature(partials).parameters.values()
    except (TypeError, ValueError):
        return
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
        return
    if sum(p.kind in kinds for p in params) < 2:
        raise TypeError(
            f"scalar_rule({name}, partials): partials must take the function's arguments and "
            f"then its output, partials(*args, y); {name_of_partials(partials)} cannot take two "
            f"arguments"
        )


def name_of_partials(partials: Callable[..., Any]) -> str:
    qualname = getattr(partials, "__qualname__", None)
    try:
        return f"{qualname or repr(partials)}{inspect.signature(partials)}"
    except (TypeError, ValueError):
        return str(qualname or repr(partials))


class _ScalarRule:
    def __init__(self, f: Any, partials: Callable[..., Any], name: str, module: str) -> None:
        self.f, self.partials, self.name, self.module = f, partials, name, module
        self.__qualname__ = self.__name__ = f"{type(self).__name__.lower()}_{name}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} for {self.name}>"

    def _partials(self, args: tuple[Any, ...], y: Any) -> tuple[Any, ...]:
        return checked_partials(self.partials, self.name, self.module, args, y)


class ScalarRRule(_ScalarRule):
    """``rrule(f, *args)`` of a scalar rule: ``(y, pullback)``."""

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        y = self.f(*args, **kwargs)

        kept: list[tuple[Any, ...]] = []  # the partials, computed on the first pullback

        def pullback(ybar: Any) -> tuple[Any, ...]:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return (NO_TANGENT, *(ybar if is_differentiable(a) else NO_TANGENT for a in args))
            if not kept:
                kept.append(self._partials(args, y))
            ps = kept[0]
            return (
                NO_TANGENT,
                *(
                    unbroadcast(a, ybar * conj(p)) if is_differentiable(a) else NO_TANGENT
                    for a, p in zip(args, ps, strict=True)
                ),
            )

        return y, pullback


class ScalarFRule(_ScalarRule):
    """``frule((fdot, *xdots), f, *args)`` of a scalar rule: ``(y, ydot)``."""

    def __call__(self, tangents: tuple[Any, ...], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        if len(tangents) != len(args) + 1:
            raise TypeError(
                f"frule for {self.name}: got {_plural(len(tangents), 'tangent')} for "
                f"{_plural(len(args), 'argument')}; pass (fdot, xdot_1, ..., xdot_n)"
            )
        y = self.f(*args, **kwargs)
        if not is_differentiable(y):
            return y, NO_TANGENT
        xdots = [unthunk(t) for t in tangents[1:]]
        live = [
            i
            for i, (a, d) in enumerate(zip(args, xdots, strict=True))
            if is_differentiable(a) and not isinstance(d, AbstractZero)
        ]
        if not live:
            return y, ZERO_TANGENT
        ps = self._partials(args, y)
        ydot: Any = ps[live[0]] * xdots[live[0]]
        for i in live[1:]:
            ydot = ydot + ps[i] * xdots[i]
        return y, _like_output(y, ydot)


def _like_output(y: Any, ydot: Any) -> Any:
    """Cast a tangent to the output's shape, precision and container (scalar vs array)."""
    dtype = np.result_type(y)
    arr = np.asarray(ydot)
    if arr.shape != np.shape(y):
        arr = np.broadcast_to(arr, np.shape(y))
    if dtype.kind != "c" and arr.dtype.kind == "c":
        arr = arr.real
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    if isinstance(y, np.ndarray):
        return arr if arr.flags.writeable else np.array(arr)  # broadcast_to views are read-only
    if isinstance(y, np.generic):
        return arr[()]
    return arr.item()
