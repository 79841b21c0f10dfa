"""Default comparison tolerances, one table keyed by dtype, and how user overrides merge into it.

A value computed in float32 cannot match a reference better than float32 rounding allows, and a
float64 rule should be held to far more. So every comparison in rruletest takes its default
``rtol`` and ``atol`` from this one table, by the precision of the values compared:

========================  ========  ========
precision                 rtol      atol
========================  ========  ========
float16                   1e-2      1e-2
float32                   1e-4      1e-4
float64 (and longdouble)  1e-9      1e-9
========================  ========  ========

A complex dtype uses the entry of its real part (complex64 like float32). Integers, booleans and
anything without a floating dtype use the float64 entry. A comparison passes where
``|actual - expected| <= atol + rtol * |expected|``.

>>> default_tolerances(np.float32)
Tolerance(rtol=0.0001, atol=0.0001)
>>> rtol, atol = default_tolerances(np.zeros(3, np.complex128))
>>> rtol, atol
(1e-09, 1e-09)
>>> merge_tolerances(np.float32, atol=0.5)
Tolerance(rtol=0.0001, atol=0.5)

The pytest plugin changes the defaults for a block of code (a test) with
``override_default_tolerances``:

>>> with override_default_tolerances({np.float32: (1e-3, 1e-5)}):
...     default_tolerances(np.float32)
Tolerance(rtol=0.001, atol=1e-05)
"""

from __future__ import annotations

import contextvars
import numbers
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from rruletest import defaults
from rruletest.walk import WalkError, leaves

__all__ = [
    "DEFAULT_TOLERANCES",
    "Tolerance",
    "default_tolerances",
    "leaf_dtypes",
    "loosest",
    "merge_tolerances",
    "override_default_tolerances",
    "tolerances_for",
]


class Tolerance(NamedTuple):
    """A relative and an absolute tolerance; unpacks as ``rtol, atol``."""

    rtol: Any
    atol: Any


DEFAULT_TOLERANCES: Mapping[np.dtype[Any], Tolerance] = MappingProxyType(
    {np.dtype(name): Tolerance(*pair) for name, pair in defaults.TOLERANCES.items()}
)
"""The built-in table (``rruletest.defaults.TOLERANCES``), keyed by real floating dtype
(read-only)."""

_FALLBACK = np.dtype(np.float64)
_OVERRIDES: contextvars.ContextVar[Mapping[np.dtype[Any], Tolerance]] = contextvars.ContextVar(
    "rruletest_tolerance_overrides", default=MappingProxyType({})
)


def _real_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The real floating dtype whose table entry ``dtype`` uses."""
    if dtype.kind == "c":
        return np.dtype(dtype.char.lower()) if dtype.char in "FDG" else _FALLBACK
    if dtype.kind == "f":
        return dtype
    return _FALLBACK


def _as_dtype(dtype_or_value: Any, names: bool = True) -> np.dtype[Any] | None:
    """The dtype a value or dtype-like stands for; None for a structure or a non-numeric value.

    A string is a dtype name when ``names`` (at the top level), a plain value inside structures.
    """
    x = dtype_or_value
    if isinstance(x, np.dtype):
        return x
    if isinstance(x, str | bytes) and not names:
        return None
    if isinstance(x, str) or (isinstance(x, type) and issubclass(x, np.generic | numbers.Number)):
        try:
            return np.dtype(x)
        except TypeError:
            raise TypeError(f"not a dtype name: dtype_or_value={x!r}") from None
    if isinstance(x, bool | int | float | complex):
        return np.dtype(complex) if isinstance(x, complex) else _FALLBACK
    dtype = getattr(x, "dtype", None)
    if dtype is not None and not isinstance(x, type):
        try:
            return np.dtype(dtype)  # type: ignore[no-any-return]
        except TypeError:
            return None
    return None


def leaf_dtypes(x: Any) -> set[np.dtype[Any]]:
    """The floating and complex dtypes of the numeric leaves of ``x``, found with the one walk
    (``rruletest.walk``): arrays, numpy and Python numbers (a Python float is float64) inside
    tuples, lists, dicts, dataclasses, plain objects, ``Tangent``s and object arrays. The
    testers and the pytest plugin both use it, so they agree on the precision of a value.

    A structure the walk cannot follow (a cycle) gives the dtypes found before it.

    >>> class Box:
    ...     def __init__(self, v):
    ...         self.v = v
    >>> sorted(str(d) for d in leaf_dtypes([1.0, Box(np.ones(2, np.float32)), 3]))
    ['float32', 'float64']
    """
    if type(x) is float:
        return {np.dtype(np.float64)}
    if isinstance(x, np.ndarray | np.generic) and x.dtype.kind != "O":  # no walk needed
        return {x.dtype} if x.dtype.kind in "fc" else set()
    out: set[np.dtype[Any]] = set()
    try:
        for _, leaf in leaves(x):
            if isinstance(leaf, bool | np.bool_):
                continue
            if isinstance(leaf, np.ndarray | np.generic):
                if leaf.dtype.kind in "fc":
                    out.add(leaf.dtype)
            elif isinstance(leaf, float | complex):
                out.add(np.dtype(type(leaf)))
    except WalkError:
        pass
    return out


def tolerances_for(
    values: Any, rtol: float | None = None, atol: float | None = None
) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing ``values`` (a sequence): the given ones, else the loosest
    default among the dtypes of all their leaves (float64's when there is none).

    >>> tolerances_for((np.ones(2, np.float32), 1.0), None, 1e-3)
    (0.0001, 0.001)
    """
    dts: set[np.dtype[Any]] = set()
    for v in values:
        dts |= leaf_dtypes(v)
    tol = loosest(*dts) if dts else _lookup(_FALLBACK)
    r = float(tol.rtol) if rtol is None else rtol
    a = float(tol.atol) if atol is None else atol
    return r, a


def default_tolerances(dtype_or_value: Any) -> Tolerance:
    """The default ``(rtol, atol)`` for values of a dtype.

    Args:
        dtype_or_value: a numpy dtype, a scalar type (``np.float32``, ``float``), a dtype name
            (``"float16"``), or a value: an array, a numpy or Python number, or a structure
            (tuple, list, dict, dataclass, ``Tangent``), for which the loosest tolerance of its
            floating leaves applies. Anything without a floating dtype gets the float64 entry.

    Returns:
        A ``Tolerance(rtol, atol)`` named tuple, in force overrides included.

    Raises:
        TypeError: a string that names no dtype.

    >>> default_tolerances("float16"), default_tolerances(1.0)
    (Tolerance(rtol=0.01, atol=0.01), Tolerance(rtol=1e-09, atol=1e-09))
    >>> default_tolerances((1.0, np.ones(2, np.float32)))
    Tolerance(rtol=0.0001, atol=0.0001)
    """
    dtype = _as_dtype(dtype_or_value)
    if dtype is not None and dtype.kind != "O":
        return _lookup(dtype)
    dtypes = leaf_dtypes(dtype_or_value)
    return loosest(*dtypes) if dtypes else _lookup(_FALLBACK)


def _lookup(dtype: np.dtype[Any]) -> Tolerance:
    real = _real_dtype(dtype)
    overrides = _OVERRIDES.get()
    found = overrides.get(real)
    if found is None:
        found = DEFAULT_TOLERANCES.get(real, DEFAULT_TOLERANCES[_FALLBACK])
    return found


def loosest(*dtypes: Any) -> Tolerance:
    """The largest ``rtol`` and ``atol`` among the default tolerances of several dtypes.

    A comparison between a float32 and a float64 value is held to float32 precision:

    >>> loosest(np.float32, np.float64)
    Tolerance(rtol=0.0001, atol=0.0001)
    """
    tols = [_lookup(d) if isinstance(d, np.dtype) else default_tolerances(d) for d in dtypes]
    if len(tols) == 1 or (len(tols) == 2 and tols[0] == tols[1]):
        return tols[0]
    tols = tols or [_lookup(_FALLBACK)]
    return Tolerance(max(t.rtol for t in tols), max(t.atol for t in tols))


def _check_tol(name: str, value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value
    return defaults.check_tolerance(name, value)


def merge_tolerances(dtype_or_value: Any, rtol: Any = None, atol: Any = None) -> Tolerance:
    """The tolerances in force: the user's ``rtol``/``atol`` where given, else the table's.

    ``rtol`` and ``atol`` may be non-negative numbers or arrays (kept as they are, e.g. a
    per-element tolerance widened by a finite-difference error estimate).

    Raises:
        TypeError, ValueError: a tolerance that is not a non-negative number or an array.

    >>> merge_tolerances(np.float64, rtol=1e-6)
    Tolerance(rtol=1e-06, atol=1e-09)
    >>> merge_tolerances(np.float64, rtol=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: rtol must be a number >= 0, got rtol=-1.0
    """
    rtol = _check_tol("rtol", rtol)
    atol = _check_tol("atol", atol)
    if rtol is not None and atol is not None:
        return Tolerance(rtol, atol)
    default = default_tolerances(dtype_or_value)
    return Tolerance(default.rtol if rtol is None else rtol, default.atol if atol is None else atol)


@contextmanager
def override_default_tolerances(
    table: Mapping[Any, tuple[float, float]] | None = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
) -> Iterator[None]:
    """Change the default tolerances inside a ``with`` block (this thread or task only).

    Args:
        table: ``{dtype: (rtol, atol)}`` for particular real floating dtypes.
        rtol: a relative tolerance for every dtype (applied before ``table``).
        atol: an absolute tolerance for every dtype (applied before ``table``).

    Raises:
        TypeError, ValueError: a tolerance that is not a non-negative number, or a key that is
            not a real floating dtype.

    >>> with override_default_tolerances(rtol=1e-6):
    ...     default_tolerances(np.float64), default_tolerances(np.float32)
    (Tolerance(rtol=1e-06, atol=1e-09), Tolerance(rtol=1e-06, atol=0.0001))
    """
    rtol = _check_tol("rtol", rtol)
    atol = _check_tol("atol", atol)
    current = {dtype: _lookup(dtype) for dtype in DEFAULT_TOLERANCES}
    new = {
        dtype: Tolerance(t.rtol if rtol is None else rtol, t.atol if atol is None else atol)
        for dtype, t in current.items()
    }
    for key, value in (table or {}).items():
        dtype = np.dtype(key)
        if dtype.kind != "f":
            raise ValueError(f"tolerance table keys must be real float dtypes, got key={key!r}")
        pair = tuple(value)
        if len(pair) != 2:
            raise ValueError(f"tolerance table values must be (rtol, atol), got {value!r}")
        new[dtype] = Tolerance(_check_tol("rtol", pair[0]), _check_tol("atol", pair[1]))
    token = _OVERRIDES.set(new)
    try:
        yield
    finally:
        _OVERRIDES.reset(token)
