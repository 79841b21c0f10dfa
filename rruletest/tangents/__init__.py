"""Tangent types: the values that rules return and testers compare.

A tangent lives in the tangent space of its primal. Numbers and arrays are their own tangents;
this layer adds what numbers and arrays cannot express:

- ``NoTangent()``: the primal has no tangent space (integers, booleans, indices, functions);
- ``ZeroTangent()``: a strong zero, cheaper and clearer than an array of zeros;
- ``Tangent(T, ...)``: the tangent of a structured primal of type ``T`` (tuple, namedtuple,
  dataclass, dict or plain object), field by field;
- ``Thunk(fn)`` / ``InplaceableThunk(add_fn, thunk)``: a tangent computed only when needed.

The zeros and thunks are defined in ``zeros``, ``Tangent`` in ``structured`` and
``add_to_primal`` in ``primal`` (submodules of this package), which is their public home. They
take part in ordinary arithmetic, so rule code can add and scale them without special cases:

>>> import numpy as np
>>> np.ones(2) + ZeroTangent()
array([1., 1.])
>>> 3.0 * ZeroTangent()
ZeroTangent()
>>> (1.0, 2.0) + Tangent(tuple, 0.5, ZeroTangent())
(1.5, 2.0)
"""

from __future__ import annotations

from rruletest.tangents.primal import add_to_primal
from rruletest.tangents.structured import Tangent
from rruletest.tangents.thunks import InplaceableThunk, Thunk, conj, unthunk
from rruletest.tangents.zeros import NO_TANGENT, ZERO_TANGENT, AbstractZero, NoTangent, ZeroTangent

__all__ = [
    "NO_TANGENT",
    "ZERO_TANGENT",
    "AbstractZero",
    "InplaceableThunk",
    "NoTangent",
    "Tangent",
    "Thunk",
    "ZeroTangent",
    "add_to_primal",
    "conj",
    "unthunk",
]
