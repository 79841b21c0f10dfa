"""Projection of a tangent onto its primal's tangent space: ``project`` (ChainRulesCore's
``ProjectTo``) and its array case ``unbroadcast``.

A cotangent computed for a broadcast result has the result's shape and a dtype that numpy's
promotion chose. Its primal may be smaller (broadcast added or expanded dimensions), of lower
precision (float32), real where the result is complex, or not differentiable at all (an integer).
``unbroadcast`` maps it back:

>>> import numpy as np
>>> unbroadcast(np.ones((3, 1), np.float32), np.ones((3, 4)))
array([[4.],
       [4.],
       [4.]], dtype=float32)
>>> unbroadcast(2, np.ones(3))
NoTangent()
>>> unbroadcast(1.0, np.array([1 + 1j, 2 - 1j]))
3.0
>>> unbroadcast(np.array(1.0), np.ones(3))
array(3.)

``project(primal, tangent, space)`` does the same for every value a primal can be: numbers and
arrays as ``unbroadcast`` does, then onto a constrained argument's space
(``rruletest.spaces``); tuples, lists, namedtuples, dicts, dataclasses and ``Tangent``s field by
field; a thunk lazily; values without a tangent space give ``NoTangent()``:

>>> from rruletest.spaces import Symmetric
>>> project((np.eye(2), 3), (np.array([[1.0, 2.0], [0.0, 1.0]]), 1.0), (Symmetric(), None))
(array([[1., 1.],
       [1., 1.]]), NoTangent())
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Number
from typing import Any

import numpy as np

from rruletest.spaces import Space
from rruletest.tangents import NO_TANGENT, ZERO_TANGENT, AbstractZero, Tangent, Thunk, unthunk
from rruletest.walk import Guard, Path, Step, children, render_path

__all__ = ["is_differentiable", "project", "unbroadcast"]

_ROOT = "tangent"  # how messages name the projected value


def is_differentiable(x: Any) -> bool:
    """Whether ``x`` is a numeric leaf with a tangent space (a float or complex number or array).

    >>> is_differentiable(1.0), is_differentiable(1), is_differentiable(np.arange(3))
    (True, False, False)
    """
    if isinstance(x, bool | int | np.bool_ | np.integer):
        return False
    if isinstance(x, float | complex | np.floating | np.complexfloating):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc"
    return False


def _is_nondifferentiable_leaf(x: Any) -> bool:
    if isinstance(x, bool | int | str | bytes | np.bool_ | np.integer):
        return True
    return isinstance(x, np.ndarray | np.generic) and x.dtype.kind not in "fc"


def unbroadcast(x: Any, xbar: Any) -> Any:
    """Reduce ``xbar`` to a cotangent for ``x``: sum broadcast dimensions, fix dtype and realness.

    Sums over the leading dimensions broadcasting added and over those it expanded from 1, so
    the result has ``np.shape(x)``; casts to ``x``'s precision (float32 stays float32); keeps the
    real part when ``x`` is real (the cotangent of a real input is real under
    ``<a, b> = Re(sum(conj(a) * b))``). Integers, booleans and integer or boolean arrays get
    ``NoTangent()``; zeros and ``Tangent`` pass through. A Python scalar gets a Python scalar, a
    numpy scalar a numpy scalar of its type, an array (0-d included) an array, a list or tuple of
    numbers an array.

    Raises:
        ValueError: ``xbar``'s shape is not one broadcasting could make from ``x``'s (both
            shapes are in the message).
        TypeError: ``xbar`` is not a number, a numeric array or an array of numbers and zeros
            (``None``, a string).
    """
    xbar = unthunk(xbar)
    if isinstance(xbar, Tangent):
        return xbar
    if _is_nondifferentiable_leaf(x):
        return NO_TANGENT
    if isinstance(xbar, AbstractZero):
        return xbar
    if isinstance(x, list | tuple):
        as_array = np.asarray(x)
        return unbroadcast(as_array, xbar) if as_array.dtype.kind in "fc" else NO_TANGENT
    if not is_differentiable(x):
        return NO_TANGENT
    arr = np.asarray(xbar)
    if arr.dtype.kind not in "biufc":
        numeric = _numeric(arr)
        if numeric is None:
            # numpy would cast None to NaN: a cotangent that is not a number must not pass as one
            raise TypeError(
                f"cannot unbroadcast a cotangent of type {type(xbar).__name__} for a primal of "
                f"type {type(x).__name__}: it must be a number or numeric array"
            )
        arr = numeric
    shape = np.shape(x)
    if arr.shape != shape:
        arr = _sum_to(arr, shape)
    dtype = np.result_type(x)
    if dtype.kind != "c" and arr.dtype.kind == "c":
        arr = arr.real
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    if isinstance(x, np.ndarray):
        # a full reduction (``sum`` over every axis) yields a numpy scalar: keep 0-d arrays arrays
        return np.asarray(arr)
    if isinstance(x, np.generic):
        return np.asarray(arr)[()]
    return np.asarray(arr).item()


def _number(v: Any) -> Any:
    """``v`` (unthunked) as a number, 0 for a zero tangent; None when it is not a number."""
    v = unthunk(v)
    if isinstance(v, AbstractZero):
        return 0.0
    if isinstance(v, Number):
        return v
    if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "biufc":
        return v[()]
    return None


def _numeric(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | None:
    """An object array of numbers, zeros and thunks of numbers (a rule's per-element
    cotangents) as a numeric array of the numbers' common type, zeros as 0, so it is summed and
    cast as any array (a complex entry for a real primal too); None when an entry is not a
    number (or for another dtype: strings)."""
    if arr.dtype.kind != "O":
        return None
    values = [_number(v) for v in arr.flat]
    if any(v is None for v in values):
        return None
    return np.array(values, dtype=None if values else float).reshape(arr.shape)


def _sum_to(arr: np.ndarray[Any, Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    lead = arr.ndim - len(shape)
    tail = arr.shape[max(lead, 0) :]
    if lead < 0 or any(n != m and n != 1 for n, m in zip(shape, tail, strict=True)):
        raise ValueError(
            f"cannot unbroadcast a cotangent of shape {arr.shape} to its primal's shape "
            f"{shape}: broadcasting only adds leading dimensions and stretches dimensions of "
            f"size 1"
        )
    if lead:
        arr = arr.sum(axis=tuple(range(lead)))
    expanded = tuple(i for i, (n, m) in enumerate(zip(shape, arr.shape, strict=True)) if n != m)
    if expanded:
        arr = arr.sum(axis=expanded, keepdims=True)
    return np.asarray(arr)


# --------------------------------------------------------------------------------------------
# project: every kind of primal
# --------------------------------------------------------------------------------------------


def project(primal: Any, tangent: Any, space: Any = None) -> Any:
    """The tangent projected onto ``primal``'s tangent space (ChainRulesCore's ``ProjectTo``).

    A rule calls it on each cotangent it returns when the cotangent it computed may be
    larger than the primal's tangent space: broadcast to a bigger shape, of numpy's promoted
    dtype (float64 for a float32 primal, complex for a real one), or with a component outside a
    constrained argument's space (a non-symmetric gradient for a symmetric matrix). A tester
    compares a rule's cotangent after this projection.

    - numbers and arrays: ``unbroadcast`` (shape, precision, real part for real primals, the
      primal's container kind), then ``space.project`` when ``space`` is a
      ``rruletest.spaces.Space``;
    - integers, booleans, strings, integer arrays, ``None``: ``NoTangent()``;
    - containers (tuples, lists, namedtuples, dicts, dataclasses, objects with declared fields
      and types registered with ``rruletest.walk.register_structure``: what
      ``rruletest.walk`` looks into): field by field (``space`` is then None or a structure of
      spaces, or ``None``s, matching the primal: a tuple for a tuple, a dict for a dict, ...).
      A ``Tangent`` gives a ``Tangent`` (fields it does not store stay missing); a natural
      tuple, list or dict the same container; any other natural value (the primal's own type) a
      ``Tangent`` of the primal's type;
    - zeros pass through (``NoTangent()`` where the primal has no tangent space); a ``Thunk``
      gives a ``Thunk`` that projects when unthunked; the tangents of other values are returned
      as they are.

    Raises:
        ValueError: a shape that broadcasting cannot have made, or a structure whose length or
            fields do not match the primal's; the message names the path
            (``tangent[1]['w']``). ``rruletest.walk.WalkError`` (a ``ValueError``) for a primal
            that contains itself.
        TypeError: ``space`` does not fit the primal (a space for a non-array, a tuple of
            spaces for an array).

    Examples:
        >>> import numpy as np
        >>> project(np.float32(1.0), np.ones(3))
        np.float32(3.0)
        >>> project({"w": np.zeros(2), "n": 4}, {"w": np.ones((3, 2)), "n": 1.0})
        {'w': array([3., 3.]), 'n': NoTangent()}
        >>> from rruletest.spaces import Simplex
        >>> project(np.full(2, 0.5), np.array([1.0, 0.0]), Simplex())
        array([ 0.5, -0.5])
    """
    try:
        return _project(primal, tangent, space, (), Guard(_ROOT))
    except RecursionError:
        raise ValueError(
            "project: the primal nests more deeply than Python's recursion limit"
        ) from None


def _project(primal: Any, tangent: Any, space: Any, path: Path, guard: Guard) -> Any:
    if isinstance(tangent, Thunk):
        return Thunk(lambda: _project(primal, unthunk(tangent), space, path, Guard(_ROOT)))
    if _is_nondifferentiable_leaf(primal) or primal is None:
        return NO_TANGENT
    if isinstance(primal, float | complex | np.ndarray | np.generic):
        return _leaf(primal, tangent, space, path)
    if isinstance(tangent, np.ndarray) and type(primal) in (tuple, list):
        return _leaf(np.asarray(primal), tangent, space, path)  # a list of numbers as an array
    if isinstance(tangent, AbstractZero):
        return tangent
    kids = children(primal)
    if kids is None:
        if space is not None:
            raise TypeError(
                f"project: {render_path(_ROOT, path)} has a space {space!r} but its primal is a "
                f"{type(primal).__name__}, not an array"
            )
        return tangent
    guard.enter(primal, path)
    try:
        return _structure(primal, kids, tangent, space, path, guard)
    finally:
        guard.leave(primal)


def _leaf(primal: Any, tangent: Any, space: Any, path: Path) -> Any:
    where = render_path(_ROOT, path)
    if space is not None and not isinstance(space, Space):
        raise TypeError(
            f"project: the space for {where} must be a rruletest.spaces.Space or None (its "
            f"primal is an array), got {type(space).__name__}"
        )
    if isinstance(tangent, Tangent) or (
        isinstance(tangent, tuple | list | Mapping) and not isinstance(primal, np.ndarray)
    ):
        raise ValueError(
            f"project: {where} is a {type(tangent).__name__} but its primal is a "
            f"{type(primal).__name__}; a number's or array's tangent is a number or array"
        )
    try:
        out = unbroadcast(primal, tangent)
    except (TypeError, ValueError) as e:
        raise type(e)(f"project: {where}: {e}") from None
    if space is None or isinstance(out, AbstractZero):
        return out
    if not isinstance(primal, np.ndarray):
        raise TypeError(f"project: {where} has a space {space!r} but its primal is not an array")
    try:
        return space.project(primal, out)
    except ValueError as e:  # a primal of no shape the space has
        raise ValueError(f"project: {where}: {e}") from None


def _space_of(space: Any, key: Any, index: int, primal: Any, n: int, where: str) -> Any:
    if space is None:
        return None
    if type(space) is type(primal) and not isinstance(space, tuple | list | Mapping):
        found = {step.key: v for step, v in children(space) or ()}  # D(m=S) for a dataclass D
        return found.get(key)
    if isinstance(space, Mapping):
        return space.get(key)
    if isinstance(space, tuple | list) and not isinstance(primal, Mapping):
        if len(space) != n:
            raise TypeError(f"project: {len(space)} spaces for {where}, which has {n} fields")
        return space[index]
    raise TypeError(
        f"project: the spaces for {where} must be a structure matching its primal (a "
        f"{type(primal).__name__}), got {space!r}"
    )


def _structure(
    primal: Any,
    kids: list[tuple[Step, Any]],
    tangent: Any,
    space: Any,
    path: Path,
    guard: Guard,
) -> Any:
    where = render_path(_ROOT, path)
    keys = [step.key for step, _ in kids]

    def one(i: int, value: Any, t: Any) -> Any:
        step = kids[i][0]
        sub = _space_of(space, step.key, i, primal, len(kids), where)
        return _project(value, t, sub, (*path, step), guard)

    if isinstance(tangent, Tangent):
        stored = dict(tangent.items())
        unknown = [k for k in stored if k not in keys]
        if unknown:
            raise ValueError(
                f"project: {where} has field {unknown[0]!r}, which its primal (a "
                f"{type(primal).__name__}) does not have"
            )
        out = {
            step.key: one(i, v, stored[step.key])
            for i, (step, v) in enumerate(kids)
            if step.key in stored
        }
        if isinstance(tangent.backing, tuple):
            n = max(out, default=-1) + 1
            return Tangent(tangent.primal_type, *(out.get(i, ZERO_TANGENT) for i in range(n)))
        if issubclass(tangent.primal_type, Mapping):
            return Tangent(tangent.primal_type, out)
        return Tangent(tangent.primal_type, **out)
    values = _natural_fields(primal, kids, tangent, where)
    projected = [one(i, v, values[i]) for i, (_, v) in enumerate(kids)]
    if type(tangent) in (tuple, list):
        return type(tangent)(projected)
    if type(tangent) is dict:
        return dict(zip(keys, projected, strict=True))
    if isinstance(primal, Mapping):
        return Tangent(type(primal), dict(zip(keys, projected, strict=True)))
    if isinstance(primal, tuple | list) and not hasattr(primal, "_fields"):
        return Tangent(type(primal), *projected)
    return Tangent(type(primal), **dict(zip(keys, projected, strict=True)))


def _natural_fields(
    primal: Any, kids: list[tuple[Step, Any]], tangent: Any, where: str
) -> list[Any]:
    """The natural tangent's value for each child of the primal (a missing key is a zero)."""
    name = type(primal).__name__
    keys = [step.key for step, _ in kids]
    if isinstance(primal, Mapping):
        if not isinstance(tangent, Mapping):
            raise ValueError(
                f"project: {where} is a {type(tangent).__name__} but its primal is a {name}"
            )
        unknown = [k for k in tangent if k not in primal]
        if unknown:
            raise ValueError(
                f"project: {where} has key {unknown[0]!r}, which its primal does not have"
            )
        return [tangent.get(k, ZERO_TANGENT) for k in keys]
    plain = type(tangent) in (tuple, list)
    if plain or (isinstance(tangent, tuple | list) and type(tangent) is not type(primal)):
        if len(tangent) != len(kids):
            raise ValueError(
                f"project: {where} has {len(tangent)} entries but its primal (a {name}) has "
                f"{len(kids)}"
            )
        return list(tangent)
    own = children(tangent) if type(tangent) is type(primal) else None
    if own is not None:
        found = {step.key: v for step, v in own}
        return [found.get(k, ZERO_TANGENT) for k in keys]
    raise ValueError(
        f"project: {where} is a {type(tangent).__name__} but its primal is a {name}; give a "
        f"Tangent({name}, ...) or a value of the same structure"
    )
