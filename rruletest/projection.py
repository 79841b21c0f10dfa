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


def unbroadcast(x: Any, xbar: Any) -> Any:
    """Reduce ``xbar`` to a cotangent for ``x``: sum broadcast dimensions, fix dtype and realness.

    Sums over the leading dimensions broadcasting added and over those it expanded from 1, so
    the result has ``np.shape(x)``; casts to ``x``'s precision; keeps the real part when ``x`` is
    real (the cotangent of a real input is real under ``<a, b> = Re(sum(conj(a) * b))``).
    Integers and booleans get ``NoTangent()``; zeros pass through. A Python scalar gets a
    Python scalar, a numpy scalar a numpy scalar, a 0-d array a 0-d array.
    """
    xbar = unthunk(xbar)
    if isinstance(xbar, AbstractZero | Tangent):
        return xbar
    if not is_differentiable(x):
        return NO_TANGENT
    arr = np.asarray(xbar)
    shape = np.shape(x)
    if arr.shape != shape:
        lead = arr.ndim - len(shape)
        if lead < 0:
            raise ValueError(
                f"cannot unbroadcast a cotangent of shape {arr.shape} to a primal of shape {shape}"
            )
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and arr.shape[lead + i] != 1
        )
        arr = arr.sum(axis=axes) if axes else arr
        if arr.shape != shape:
            try:
                arr = arr.reshape(shape)
            except ValueError:
                raise ValueError(
                    f"cannot unbroadcast a cotangent of shape {np.shape(xbar)} to a primal of "
                    f"shape {shape}"
                ) from None
    dtype = np.result_type(x)
    if dtype.kind != "c" and arr.dtype.kind == "c":
        arr = arr.real
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    if isinstance(x, np.ndarray):
        # a full reduction (``sum`` over every axis) yields a numpy scalar: keep 0-d arrays arrays
        return np.asarray(arr)
    if isinstance(x, np.generic):
        return arr[()]
    return arr.item()
