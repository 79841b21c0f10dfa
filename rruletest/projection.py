"""Projection of a cotangent onto its primal: shape (``unbroadcast``), dtype and realness.

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.tangents import NO_TANGENT, AbstractZero, Tangent, unthunk

__all__ = ["is_differentiable", "unbroadcast"]


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
