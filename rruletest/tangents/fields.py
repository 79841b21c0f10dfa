"""What a structured primal type declares: its field names (namedtuple and dataclass fields,
``__slots__``, class annotations, or those given to ``rruletest.walk.register_structure``) and
the parameters of its ``__init__``, remembered per type. ``Tangent`` checks its fields
against these; the walks and comparisons read them too.

>>> from collections import namedtuple
>>> declared_fields(namedtuple("Point", "x y")), declared_fields(dict)
(('x', 'y'), None)
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import typing
import weakref
from collections.abc import Mapping

__all__ = [
    "checked_fields",
    "declare_fields",
    "declared_fields",
    "init_params",
    "is_mapping_type",
    "is_namedtuple_type",
    "is_sequence_type",
]

_FIELDS: weakref.WeakKeyDictionary[type, tuple[str, ...] | None] = weakref.WeakKeyDictionary()
_INIT_PARAMS: weakref.WeakKeyDictionary[type, tuple[str, ...]] = weakref.WeakKeyDictionary()
_REGISTERED: weakref.WeakSet[type] = weakref.WeakSet()


def is_namedtuple_type(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields")


def is_mapping_type(t: type) -> bool:
    return issubclass(t, Mapping)


def is_sequence_type(t: type) -> bool:
    return issubclass(t, tuple | list) and not is_namedtuple_type(t)


def declared_fields(t: type) -> tuple[str, ...] | None:
    """The field names a structured type declares (namedtuple fields, dataclass fields,
    ``__slots__``, class annotations), or None when it declares none."""
    try:
        return _FIELDS[t]
    except (KeyError, TypeError):
        pass
    names: tuple[str, ...] | None
    if is_namedtuple_type(t):
        names = tuple(t._fields)  # type: ignore[attr-defined]
    elif dataclasses.is_dataclass(t):
        names = tuple(f.name for f in dataclasses.fields(t))
    else:
        found: list[str] = []
        for klass in reversed(t.__mro__):
            slots = klass.__dict__.get("__slots__", ())
            found.extend([slots] if isinstance(slots, str) else slots)
            hints = inspect.get_annotations(klass)
            found.extend(n for n, hint in hints.items() if not _is_class_var(hint))
        names = tuple(n for n in dict.fromkeys(found) if not n.startswith("__")) or None
    with contextlib.suppress(TypeError):  # types that refuse weak references are not cached
        _FIELDS[t] = names
    return names


def checked_fields(t: type) -> tuple[str, ...] | None:
    """The fields a ``Tangent`` of ``t`` may have, or None when they cannot be known.

    Namedtuples, dataclasses and registered types name all their fields. A plain class whose
    instances have a ``__dict__`` may set attributes its ``__slots__`` and annotations do not
    name (``self.bias = b`` beside ``weight: np.ndarray``), and the walks follow them all, so
    its declared fields are not the whole list.

    >>> class Layer:
    ...     weight: float
    ...     def __init__(self, weight, bias):
    ...         self.weight, self.bias = weight, bias
    >>> declared_fields(Layer), checked_fields(Layer)
    (('weight',), None)
    """
    fields = declared_fields(t)
    if fields is None or is_namedtuple_type(t) or dataclasses.is_dataclass(t):
        return fields
    if t in _REGISTERED or not getattr(t, "__dictoffset__", 0):
        return fields
    return None


def _is_class_var(hint: object) -> bool:
    """Whether an annotation is ``ClassVar[...]`` (also as a string): a class's attribute, not
    its instances' field."""
    if isinstance(hint, str):
        return hint.split("[", 1)[0].strip() in ("ClassVar", "typing.ClassVar")
    return hint is typing.ClassVar or typing.get_origin(hint) is typing.ClassVar


def init_params(t: type) -> tuple[str, ...]:
    """Parameter names of ``t.__init__``: the likely attributes of a plain class."""
    try:
        return _INIT_PARAMS[t]
    except (KeyError, TypeError):
        pass
    try:
        params = inspect.signature(t.__init__).parameters.values()  # type: ignore[misc]
        kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        names = tuple(p.name for p in params if p.kind not in kinds)[1:]  # drop self
    except (TypeError, ValueError):
        names = ()
    with contextlib.suppress(TypeError):
        _INIT_PARAMS[t] = names
    return names


def declare_fields(t: type, names: tuple[str, ...]) -> None:
    """Record the field names of a type registered with ``rruletest.walk.register_structure``,
    so ``Tangent(t, name=...)`` accepts exactly those fields."""
    with contextlib.suppress(TypeError):
        _FIELDS[t] = names
        _REGISTERED.add(t)
