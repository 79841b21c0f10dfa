"""Tester arguments: ``with_tangent``, which arguments are differentiable, short descriptions.

Each positional argument of a tester becomes an ``Arg``: its primal, the tangent the user gave
(``with_tangent(x, dx)``) if any, and whether the finite-difference check covers it. Integers,
booleans, strings, functions and anything else without float coordinates are not differentiable
automatically; ``with_tangent(x, NoTangent())`` marks any argument so.

>>> import numpy as np
>>> a = classify_args((np.ones((2, 3), np.float32), 3, with_tangent(1.0, NoTangent())))
>>> [(x.path, x.numeric, x.reason) for x in a]  # doctest: +NORMALIZE_WHITESPACE
[('args[0]', True, ''), ('args[1]', False, 'int: not differentiable'),
 ('args[2]', False, 'marked with_tangent(x, NoTangent())')]
>>> describe(np.ones((2, 3), np.float32)), describe(0.5), describe(np.float32(2))
('float32[2, 3]', '0.5', 'float32(2.0)')
"""

from __future__ import annotations

import dataclasses
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from rruletest._naming import function_name
from rruletest.spaces import Space
from rruletest.tangents import AbstractZero, NoTangent, Tangent, Thunk
from rruletest.walk import Index, WalkError, children, leaves, render_path

__all__ = [
    "Arg",
    "WithTangent",
    "classify_args",
    "describe",
    "has_coordinates",
    "non_finite_entry",
    "with_tangent",
]


@dataclass(frozen=True)
class WithTangent:
    """A primal paired with its tangent, built by ``with_tangent``."""

    primal: Any
    tangent: Any
    space: Space | None = None

    def __repr__(self) -> str:
        if self.tangent is None and self.space is not None:
            return f"with_tangent({describe(self.primal)}, {self.space!r})"
        extra = "" if self.space is None else f", space={self.space!r}"
        return f"with_tangent({describe(self.primal)}, {describe(self.tangent)}{extra})"


def with_tangent(x: Any, dx: Any, space: Space | None = None) -> WithTangent:
    """Pair the primal ``x`` with the tangent ``dx`` (or its space) for a tester.

    ``test_frule`` pushes ``dx`` forward; ``with_tangent(x, NoTangent())`` marks ``x`` as not
    differentiable, so ``test_rrule`` requires ``NoTangent()`` back for it and neither tester
    checks it numerically. Without ``with_tangent`` an argument gets ``rand_tangent``.

    ``with_tangent(x, S)`` with a space ``S`` from ``rruletest.spaces`` declares ``x`` a point
    of ``S`` (the testers check it is): its random tangents are drawn in ``S``, finite
    differences move along ``S`` only, and a cotangent is compared after projection onto
    ``S``. ``with_tangent(x, dx, space=S)`` gives the tangent too (projected onto ``S``).

    Raises:
        TypeError / ValueError: ``dx`` cannot be a tangent of ``x`` (wrong type, shape, dtype).

    >>> import numpy as np
    >>> with_tangent(np.ones(10), np.zeros(10))
    with_tangent(float64[10], float64[10])
    >>> with_tangent(np.ones(3), np.zeros(4))
    Traceback (most recent call last):
    ...
    ValueError: with_tangent(x, dx): dx does not fit x: shape (4,) for a primal of shape (3,)
    >>> from rruletest.spaces import Symmetric
    >>> with_tangent(np.eye(2), Symmetric())
    with_tangent(float64[2, 2], Symmetric())
    """
    if isinstance(x, WithTangent) or isinstance(dx, WithTangent):
        raise TypeError(
            "with_tangent(x, dx) takes a primal and a tangent, not another with_tangent"
        )
    if space is not None and not isinstance(space, Space):
        raise TypeError(
            f"with_tangent(x, dx, space): space must be a space from rruletest.spaces, "
            f"got space={space!r}"
        )
    if isinstance(dx, Space):
        if space is not None:
            raise TypeError("with_tangent(x, S, space=...): give the space once")
        return WithTangent(x, None, dx)
    if not isinstance(dx, AbstractZero | Thunk):
        from rruletest.testers._fit import fit_problems

        problems = fit_problems(x, dx, "dx", kind="tangent")
        if problems:
            first = problems[0].message.split("\n")[0].removeprefix("dx: ")
            raise ValueError(f"with_tangent(x, dx): dx does not fit x: {first}")
        where = non_finite_entry(dx, "dx")
        if where is not None:
            raise ValueError(
                f"with_tangent(x, dx): dx is not finite at {where}: give a finite tangent "
                "(finite differences cannot step along NaN or an infinity)"
            )
    return WithTangent(x, dx, space)


def non_finite_entry(t: Any, root: str) -> str | None:
    """Where a (co)tangent given to a tester first holds NaN or an infinity, as
    ``"root[1] (nan)"``; None when it holds none. Thunks are not evaluated. A direction (or
    ``ybar``) must be finite: a finite difference along NaN is NaN, and the numerical vjp
    weighs each output by ``|ybar|``, so it would drop a NaN entry the rule propagates.

    >>> non_finite_entry({"a": 1.0, "b": np.array([0.0, np.inf])}, "ybar")
    "ybar['b'][1] (inf)"
    >>> non_finite_entry((1.0, np.zeros(2)), "dx") is None, non_finite_entry(np.nan, "dx")
    (True, 'dx (nan)')
    """
    try:
        for path, leaf in leaves(t, root=root, thunks=False):
            if isinstance(leaf, bool | np.bool_) or not isinstance(
                leaf, float | complex | np.number | np.ndarray
            ):
                continue
            arr = np.asarray(leaf)
            if arr.dtype.kind not in "fc":
                continue
            if not np.isfinite(arr).all():
                index = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
                where = render_path(root, path)
                if index:
                    where += "[" + ", ".join(map(str, index)) + "]"
                return f"{where} ({arr[index]})"
    except WalkError:  # a cycle or too deep: the fit and comparison report such values
        return None
    return None


def has_coordinates(x: Any) -> bool:
    """Whether ``x`` contains a float or complex number anywhere (so it has a tangent space),
    looking into it with the one walk (``rruletest.walk``). Functions, callable objects other
    than dataclasses, classes and modules have none (each part is looked at once, so a value
    that contains itself ends too).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Scale:
    ...     k: float
    ...     def __call__(self, x):
    ...         return self.k * x
    >>> has_coordinates(Scale(2.0)), has_coordinates(np.sin), has_coordinates((1, "a"))
    (True, False, False)
    """
    if isinstance(x, bool | int | str | bytes | np.bool_ | np.integer | AbstractZero) or x is None:
        return False
    if isinstance(x, float | complex | np.floating | np.complexfloating):
        return True
    if isinstance(x, np.ndarray) and x.dtype.kind != "O":
        return x.dtype.kind in "fc"
    if _opaque(x):
        return False
    stack, seen = [x], set()
    while stack:
        item = stack.pop()
        if isinstance(item, float | complex | np.floating | np.complexfloating):
            return True
        if isinstance(item, np.ndarray) and item.dtype.kind in "fc":
            return True
        if id(item) in seen:
            continue
        if _opaque(item) or isinstance(item, AbstractZero):
            continue
        kids = children(item)
        if kids is not None:
            seen.add(id(item))
            stack.extend(v for _, v in kids)
    return False


def _opaque(x: Any) -> bool:
    """A function or callable object (not a dataclass, not a ``Tangent``): no coordinates."""
    return (
        callable(x)
        and not isinstance(x, Tangent | np.ndarray)
        and not (dataclasses.is_dataclass(x) and not isinstance(x, type))
    )


def _kind(x: Any) -> str:
    if isinstance(x, bool | np.bool_):
        return "bool"
    if isinstance(x, int | np.integer):
        return "int"
    if isinstance(x, np.ndarray):
        return f"{x.dtype} array"
    if isinstance(x, str):
        return "str"
    if callable(x):
        return "function"
    return type(x).__name__


@dataclass(frozen=True, eq=False)
class Arg:
    """One tester argument. ``numeric``: checked against finite differences. ``strict``: its
    tangent must be exactly ``NoTangent()`` (marked, or an int/bool/str-like value).
    """

    index: int
    primal: Any
    tangent: Any  # the tangent given with with_tangent, or None
    numeric: bool
    strict: bool
    reason: str
    space: Space | None = None  # the space declared with with_tangent(x, S), or None

    @property
    def path(self) -> str:
        return f"args[{self.index}]"

    @property
    def step(self) -> Index:
        """Its place below the root ``args``, as a walk step."""
        return Index(self.index)


def classify_args(args: tuple[Any, ...]) -> list[Arg]:
    """Unwrap ``with_tangent`` pairs and decide which arguments are checked numerically.

    Raises:
        NotInSpaceError: an argument declared in a space is not a point of it.
    """
    out: list[Arg] = []
    for i, a in enumerate(args):
        if isinstance(a, WithTangent) and a.space is not None:
            a.space.check(a.primal, f"args[{i}]")
            tangent = a.tangent if a.tangent is None else a.space.project(a.primal, a.tangent)
            out.append(Arg(i, a.primal, tangent, True, False, "", a.space))
            continue
        if isinstance(a, WithTangent):
            primal, tangent = a.primal, a.tangent
            if isinstance(tangent, NoTangent):
                out.append(
                    Arg(i, primal, tangent, False, True, "marked with_tangent(x, NoTangent())")
                )
                continue
        else:
            primal, tangent = a, None
        if has_coordinates(primal):
            out.append(Arg(i, primal, tangent, True, False, ""))
            continue
        strict = _is_plain_nondiff(primal)
        out.append(Arg(i, primal, tangent, False, strict, f"{_kind(primal)}: not differentiable"))
    return out


def _is_plain_nondiff(x: Any) -> bool:
    """Values whose only valid tangent is NoTangent(): ints, bools, strings, int arrays, None."""
    if isinstance(x, bool | int | str | bytes | np.bool_ | np.integer) or x is None:
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "biuSUM"


_FUNCTIONS = frozenset({np.ufunc, types.FunctionType, types.BuiltinFunctionType})


def describe(x: Any, limit: int = 6, _depth: int = 0) -> str:
    """A short description of a value for report headers: shapes and dtypes, not huge arrays.

    >>> describe(np.arange(3.0)), describe(np.zeros((1000, 2))), describe((1, "a"))
    ('array([0.0, 1.0, 2.0])', 'float64[1000, 2]', "(1, 'a')")
    """
    if type(x) in _FUNCTIONS:
        return function_name(x)  # what the checks below end at for a function
    if isinstance(x, WithTangent):
        return repr(x)
    if isinstance(x, np.ndarray):
        shape = ", ".join(str(n) for n in x.shape)
        if 0 < x.size <= limit and x.dtype.kind in "biufc" and x.ndim == 1:
            text = ", ".join(str(v) for v in x)
            plain = x.dtype in (np.float64, np.int64, np.complex128, np.bool_)
            return f"array([{text}])" if plain else f"array([{text}], dtype={x.dtype})"
        return f"{x.dtype}[{shape}]"
    if isinstance(x, np.generic):
        return f"{type(x).__name__}({x.item()!r})"
    if isinstance(x, float | int | complex | bool | str | AbstractZero) or x is None:
        text = repr(x)
        return text if len(text) <= 40 else text[:37] + "..."
    if _depth > 3 and isinstance(x, tuple | list | dict):  # deep (or containing itself)
        return f"{type(x).__name__}(...)"
    if isinstance(x, tuple) and hasattr(type(x), "_fields") and len(x) <= limit:
        inner = ", ".join(
            f"{k}={describe(v, limit, _depth + 1)}"
            for k, v in zip(getattr(x, "_fields", ()), x, strict=True)
        )
        return f"{type(x).__name__}({inner})"
    if isinstance(x, dict) and len(x) <= limit:
        return (
            "{" + ", ".join(f"{k!r}: {describe(v, limit, _depth + 1)}" for k, v in x.items()) + "}"
        )
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        fields = dataclasses.fields(x)
        if len(fields) <= limit:
            inner = ", ".join(
                f"{fl.name}={describe(getattr(x, fl.name), limit, _depth + 1)}" for fl in fields
            )
            return f"{type(x).__name__}({inner})"
    if isinstance(x, tuple | list) and len(x) <= limit:
        inner = ", ".join(describe(v, limit, _depth + 1) for v in x)
        if isinstance(x, list):
            return f"[{inner}]"
        return f"({inner},)" if len(x) == 1 else f"({inner})"
    if callable(x):
        return function_name(x)
    return type(x).__name__ + "(...)"
