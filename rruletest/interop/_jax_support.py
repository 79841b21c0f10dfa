"""The jax side of ``rruletest.interop.jax``: dtype policy and pytree conversions.

Cotangents cross in jax's convention on one side and rruletest's on the other (conjugated:
see ``rruletest.interop.jax``). Importing this module does not import jax.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.interop._convert import (
    as_cotangent,
    conj_leaf,
    leaf_out,
    map_cotangent,
    natural_tangent,
    rebuild,
)
from rruletest.interop._errors import InteropError, require
from rruletest.tangents import NO_TANGENT

__all__ = [
    "PrecisionError",
    "cotangent_out",
    "cotangent_tree",
    "enable_x64",
    "find_custom",
    "jax_module",
    "same_integers",
    "tangent_in",
    "tangent_tree_out",
    "to_numpy",
    "x64_enabled",
]


def jax_module() -> Any:
    return require("jax", "jax")


class PrecisionError(InteropError, ValueError):
    """jax would change an argument's dtype (float64 to float32) in the 64-bit mode asked for."""


_WIDE = ("float64", "complex128")


def x64_enabled() -> bool:
    """Whether jax's 64-bit mode is on (float64 arrays stay float64)."""
    return bool(jax_module().config.jax_enable_x64)


def enable_x64() -> None:
    """Turn jax's 64-bit mode on for the process; it is never turned off again here."""
    if not x64_enabled():
        jax_module().config.update("jax_enable_x64", True)


def same_integers(a: Any, j: Any) -> bool:
    """An integer or boolean argument jax narrowed (int64 to int32) without changing a value:
    it carries no tangent, so that is harmless, unlike a float64 turned float32."""
    return a.dtype.kind in "biu" and bool(np.array_equal(np.asarray(j), a))


def to_numpy(tree: Any) -> Any:
    jax = jax_module()

    def leaf(x: Any) -> Any:
        if isinstance(x, jax.Array):
            return leaf_out(np.asarray(x))
        return x

    return jax.tree_util.tree_map(leaf, tree)


def cotangent_tree(ybar: Any, out: Any) -> Any:
    """ybar (rruletest's convention) as a jax cotangent for ``out`` (conjugated)."""
    return map_cotangent(ybar, out, cotangent_leaf)


def _dtype(out: Any) -> np.dtype[Any]:
    """The dtype of an output leaf: an array's, or a Python number's (a rule may return one)."""
    dtype = getattr(out, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.result_type(out)


def cotangent_leaf(g: Any, out: Any) -> Any:
    jax = jax_module()
    jnp = jax.numpy
    if _dtype(out).kind not in "fc":
        return np.zeros(np.shape(out), dtype=jax.dtypes.float0)
    if g is None:
        return jnp.zeros_like(out)
    return conj_leaf(jnp.asarray(g))


def cotangent_out(raw: Any, primal: Any) -> Any:
    """A jax cotangent as rruletest's (conjugated back), shape and dtype untouched."""
    jax = jax_module()
    if raw is None:
        return NO_TANGENT

    def leaf(x: Any) -> Any:
        if isinstance(x, jax.Array):
            return conj_leaf(np.asarray(x))
        return conj_leaf(x)

    return as_cotangent(jax.tree_util.tree_map(leaf, raw), primal)


def tangent_in(xdot: Any, primal: Any) -> Any:
    """An input tangent as jax takes it: the primal's pytree structure, zeros made concrete
    (``float0`` zeros for integer leaves), numpy leaves as jax arrays."""
    jax = jax_module()
    jnp = jax.numpy

    def zeros(p: Any) -> Any:
        kind = np.dtype(p.dtype if hasattr(p, "dtype") else type(p)).kind
        if kind not in "fc":
            return np.zeros(np.shape(p), dtype=jax.dtypes.float0)
        return jnp.zeros_like(p)

    def leaf(t: Any) -> Any:
        if isinstance(t, np.ndarray | np.generic) and t.dtype != jax.dtypes.float0:
            return jnp.asarray(t)
        return t

    tangent = natural_tangent(xdot, primal, zeros)
    dtype = getattr(primal, "dtype", None)
    if isinstance(tangent, float | complex) and dtype is not None and dtype.kind in "fc":
        # A Python number for an array primal (a drawn scalar tangent): jax rules read the
        # tangent's dtype (lax.reduce_max's jvp failed with "'float' has no attribute dtype").
        return jnp.asarray(tangent, dtype=dtype)
    return jax.tree_util.tree_map(leaf, tangent)


def tangent_tree_out(tout: Any, out: Any) -> Any:
    if isinstance(out, dict):
        return {k: tangent_leaf(tout[k], o) for k, o in out.items()}
    if isinstance(out, tuple | list):
        return rebuild(out, (tangent_leaf(t, o) for t, o in zip(tout, out, strict=True)))
    return tangent_leaf(tout, out)


def tangent_leaf(t: Any, out: Any) -> Any:
    if _dtype(out).kind not in "fc":
        return NO_TANGENT
    return as_cotangent(np.asarray(t), None)


def find_custom(fn: Any, kind: str) -> Any:
    """``fn`` itself when it is a jax ``custom_vjp``/``custom_jvp`` object, else what it wraps."""
    for _ in range(8):
        if type(fn).__name__ == kind and type(fn).__module__.startswith("jax"):
            return fn
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            return None
    return None
