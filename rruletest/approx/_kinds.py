"""What kind of value each side of a comparison is, and hints for kinds found out of place.

Internal to ``rruletest.approx``: ``kind`` sorts a value into the cases the walker handles
(``zero``, ``tangent``, ``registered``, ``numeric``, ``objarray``, ``tuple``, ``list``,
``namedtuple``, ``dict``, ``dataclass``, ``none``, ``str``, ``other``); ``as_numeric`` turns
numbers, numeric arrays and array-likes into numpy arrays. A ``Decimal`` is a real number.

>>> kind(1.0), kind(np.ones(2)), kind((1.0,)), kind(None), kind(object())
('numeric', 'numeric', 'tuple', 'none', 'other')
>>> as_numeric(np.float32(2)).dtype, as_numeric("x")
(dtype('float32'), None)
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from rruletest.approx import _render as r
from rruletest.tangents import AbstractZero, NoTangent, Tangent, Thunk, ZeroTangent
from rruletest.walk import is_registered, is_structure

__all__ = [
    "NUMERIC_KINDS",
    "as_numeric",
    "kind",
    "numeric_of",
    "object_as_numeric",
    "type_hints",
    "zero_hints",
]

NUMERIC_KINDS = "biufc"


def as_numeric(x: Any) -> np.ndarray | None:
    """``x`` as a numeric array (0-d for a number), or None when it is not a numeric leaf."""
    if isinstance(x, np.ndarray):
        return x if x.dtype.kind in NUMERIC_KINDS else None
    if isinstance(x, bool | int | float | complex | np.generic):
        arr = np.asarray(x)
        return arr if arr.dtype.kind in NUMERIC_KINDS else None
    if isinstance(x, numbers.Number) and not isinstance(x, AbstractZero):
        # Only a registered numbers.Complex that is not Real is complex: a Decimal is a
        # numbers.Number and nothing more, but it holds a real number.
        is_complex = isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real)
        try:
            value = complex(x) if is_complex else float(x)  # type: ignore[call-overload, arg-type]
        except (TypeError, ValueError, OverflowError):
            return None
        return np.asarray(value)
    if hasattr(x, "__array__") and not isinstance(x, type | Tangent | Thunk):
        try:
            arr = np.asarray(x)
        except Exception:
            return None
        return arr if arr.dtype.kind in NUMERIC_KINDS else None
    return None


def kind(x: Any) -> str:
    """The kind of a value for dispatch: ``zero``, ``tangent``, ``numeric``, ``tuple``, ..."""
    if isinstance(x, AbstractZero):
        return "zero"
    if isinstance(x, Tangent):
        return "tangent"
    if is_registered(x) and is_structure(x):  # a registered number or array is still a leaf
        return "registered"
    if isinstance(x, np.ndarray) and x.dtype == object:
        return "objarray"
    if isinstance(x, tuple):
        return "namedtuple" if hasattr(type(x), "_fields") else "tuple"
    if isinstance(x, list):
        return "list"
    if isinstance(x, Mapping):
        return "dict"
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return "dataclass"
    if x is None:
        return "none"
    if isinstance(x, str | bytes):
        return "str"
    return "numeric" if as_numeric(x) is not None else "other"


def type_hints(a: Any, e: Any, ka: str, ke: str) -> list[str]:
    """Hints for kinds that are a known mistake when found where another kind belongs."""
    if ka == "tangent" and ke in ("numeric", "objarray"):
        return [
            "a Tangent is the tangent of a structured value (tuple, namedtuple, dataclass, "
            "dict); the tangent of a number or array is a plain number or array"
        ]
    if ke == "tangent" and ka in ("numeric", "objarray"):
        return [f"the expected value is structured: build {r.describe(e)}"]
    if ka == "none" and ke in ("zero", "numeric", "objarray"):
        return ["use NoTangent() or ZeroTangent() rather than None for a missing tangent"]
    if ka == "list" and ke == "tuple":
        return ["return a tuple, not a list"]
    if ka == "tuple" and ke == "list":
        return ["return a list, not a tuple"]
    if ka == "tuple" and ke == "namedtuple":
        return [f"field names matter: return a {type(e).__name__}, not a plain tuple"]
    if ka in ("list", "tuple") and ke in ("numeric", "objarray"):
        return [f"a {ka} where an array belongs: return np.asarray(...)"]
    if ka in ("numeric", "objarray") and ke in ("list", "tuple"):
        return [f"an array where a {ke} belongs"]
    return []


def numeric_of(x: Any) -> np.ndarray:
    """``as_numeric`` for a value already known to be numeric."""
    arr = as_numeric(x)
    return np.asarray(np.nan) if arr is None else arr


def object_as_numeric(x: Any, strict: bool) -> np.ndarray | None:
    """An object array of numbers and zeros as a numeric array (zeros as 0), else None."""
    if not (isinstance(x, np.ndarray) and x.dtype == object):
        return as_numeric(x)
    values: list[Any] = []
    for item in x.flat:
        if isinstance(item, Thunk):
            return None  # walked element by element, so a failing thunk is reported there
        if isinstance(item, AbstractZero):
            if strict and isinstance(item, NoTangent):
                return None
            values.append(0.0)
        elif isinstance(item, bool | int | float | complex | np.number | np.bool_):
            values.append(item)
        else:
            return None
    try:
        arr = np.array(values).reshape(x.shape)
    except (TypeError, ValueError, OverflowError):
        return None
    return arr if arr.dtype.kind in NUMERIC_KINDS else None


def zero_hints(a: Any, e: Any) -> list[str]:
    if isinstance(e, NoTangent) and isinstance(a, ZeroTangent):
        return ["use NoTangent() rather than ZeroTangent() for a non-differentiable argument"]
    if isinstance(e, NoTangent):
        return ["the argument is not differentiable: its tangent is NoTangent()"]
    if isinstance(a, NoTangent):
        return [
            "NoTangent() says the argument is not differentiable; a derivative that is zero "
            "is ZeroTangent()"
        ]
    return []
