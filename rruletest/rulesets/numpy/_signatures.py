"""Core signatures of the numpy ruleset's axis-wise rules, as functions of the call.

A rule whose function acts along its last axis (``cumsum(x, axis=-1)``, ``softmax``, a
reduction over ``axis=-1``) or on trailing matrices (``matmul``, ``inv``, ``det``) declares a
gufunc core signature, so the testers' numerical reference perturbs one core coordinate in every
batch member at once (exact per element at a cost set by the core size). The structure depends
on the call: ``cumsum(x)`` (``axis=None``) flattens, and 1-D inputs have no batch, so each
declaration is a function of the call's arguments returning a signature or None.

>>> sig = along_last_axis("(n)->(n)", axis_at=1)
>>> sig(np.ones((3, 4)), -1), sig(np.ones((3, 4)), None), sig(np.ones(4), -1)
('(n)->(n)', None, None)
>>> reduction = along_last_axis("(n)->()", axis_at=1, keepdims_at=4)
>>> reduction(np.ones((3, 4)), 1, keepdims=True)
'(n)->(one)'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.rules.info import Signature

__all__ = ["along_last_axis", "on_trailing_matrices"]

Declaration = Callable[..., str | None]


def _option(
    args: tuple[Any, ...], kwargs: dict[str, Any], name: str, at: int | None, default: Any
) -> Any:
    if name in kwargs:
        return kwargs[name]
    if at is not None and len(args) > at:
        return args[at]
    return default


def along_last_axis(
    signature: str,
    *,
    axis_at: int | None,
    axis_default: Any = None,
    keepdims_at: int | None = None,
    axis_name: str = "axis",
    only_if: Callable[..., bool] | None = None,
) -> Declaration:
    """``signature`` when the call works along the last axis of an array with batch dimensions
    (``axis`` given at position ``axis_at`` or by name, else ``axis_default``); with
    ``keepdims`` true the core output is the kept axis of length 1 (``(one)``). ``out=`` and
    other axes give None. ``only_if(*args, **kwargs)`` can veto further (e.g. an ``ord``)."""
    ins, _, outs = signature.partition("->")

    def declared(*args: Any, **kwargs: Any) -> str | None:
        x = args[0] if args else None
        if not isinstance(x, np.ndarray) or x.ndim < 2 or kwargs.get("out") is not None:
            return None
        axis = _option(args, kwargs, axis_name, axis_at, axis_default)
        if isinstance(axis, tuple) and len(axis) == 1:
            axis = axis[0]
        if not isinstance(axis, int | np.integer) or int(axis) not in (-1, x.ndim - 1):
            return None
        if only_if is not None and not only_if(*args, **kwargs):
            return None
        keepdims = bool(_option(args, kwargs, "keepdims", keepdims_at, False))
        return f"{ins}->(one)" if keepdims else f"{ins}->{outs}"

    return declared


def on_trailing_matrices(signature: str) -> Declaration:
    """``signature`` when the leading arguments are arrays with at least their core dimensions,
    one of them with batch dimensions too, and no ``out=`` is given."""
    cores = [len(dims) for dims in Signature.parse(signature).inputs]

    def declared(*args: Any, **kwargs: Any) -> str | None:
        arrays = args[: len(cores)]
        if len(arrays) < len(cores) or kwargs.get("out") is not None:
            return None
        if not all(
            isinstance(a, np.ndarray) and a.ndim >= c for a, c in zip(arrays, cores, strict=True)
        ):
            return None
        if not any(a.ndim > c for a, c in zip(arrays, cores, strict=True)):
            return None  # no batch dimensions: the dense reference is as cheap
        return signature

    return declared
