"""What the autograd adapters share: autograd's core module (imported when first used), and
values converted between rruletest's conventions and autograd's (conjugated cotangents,
concrete zeros, ``SparseObject`` cotangents made dense).

Importing this module does not import autograd.

>>> import numpy as np
>>> cotangent_out(np.array([1 + 2j]), np.array([0j]))
array([1.-2.j])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.interop._base import Adapted, NoRuleError, require
from rruletest.interop._convert import (
    as_cotangent,
    conj_leaf,
    leaf_out,
    map_cotangent,
    natural_tangent,
    rebuild,
)
from rruletest.tangents import NO_TANGENT, AbstractZero

__all__ = [
    "SequenceBoxed",
    "autograd_core",
    "autograd_cotangent",
    "cotangent_out",
    "dense",
    "output",
    "raise_no_rule",
    "tangent_in",
    "tangent_out",
]


def autograd_core() -> Any:
    return require("autograd.core", "autograd")


def output(out: Any) -> Any:
    if isinstance(out, dict):
        return {k: leaf_out(o) for k, o in out.items()}
    if isinstance(out, tuple | list):
        return rebuild(out, (leaf_out(o) for o in out))
    return leaf_out(out)


def autograd_cotangent(ybar: Any, out: Any) -> Any:
    """ybar in rruletest's convention as autograd's (conjugated), zeros made concrete."""
    return map_cotangent(ybar, out, _ct_leaf)


def _ct_leaf(g: Any, out: Any) -> Any:
    if g is None:
        return np.zeros_like(out)
    return conj_leaf(g)


def dense(raw: Any) -> Any:
    """autograd's ``SparseObject`` (the cotangent of indexing) as the dense array it stands
    for, in the vector space it carries (its shape and dtype, not the primal's)."""
    if type(raw).__name__ == "SparseObject" and hasattr(raw, "mut_add"):
        return raw.mut_add(raw.vs.zeros())
    if isinstance(raw, tuple | list):
        return rebuild(raw, (dense(r) for r in raw))
    if isinstance(raw, dict):
        return {k: dense(v) for k, v in raw.items()}
    return raw


def cotangent_out(raw: Any, primal: Any) -> Any:
    raw = dense(raw)
    return as_cotangent(None if raw is None else conj_leaf(raw), primal)


def tangent_out(raw: Any, out: Any) -> Any:
    if isinstance(out, dict):
        return {k: tangent_out(raw[k], o) for k, o in out.items()}
    if isinstance(out, tuple | list):
        return rebuild(out, (tangent_out(r, o) for r, o in zip(raw, out, strict=True)))
    if np.result_type(out).kind not in "fc":
        return NO_TANGENT
    if raw is None or isinstance(raw, AbstractZero):
        raw = np.zeros_like(out)
    return leaf_out(as_cotangent(dense(raw), None))


def tangent_in(xdot: Any, primal: Any) -> Any:
    return natural_tangent(xdot, primal, np.zeros_like)


def raise_no_rule(f: Adapted, missing: dict[int, str]) -> None:
    if missing:
        i = min(missing)
        raise NoRuleError(f"args[{i}]", f.__qualname__, missing[i])


class SequenceBoxed:
    """``fn`` with a plain tuple, list or dict output returned as autograd's own container.

    autograd traces a function's output only when it is a box: a plain tuple of boxes reads
    to it as an output independent of the input ("Output seems independent of input", zero
    cotangents, boxes in the result), while ``autograd.builtins.tuple`` of the same values is
    differentiated element by element with the elements' own rules. ``unboxed(ans)`` gives
    the output back in the function's own container type (a namedtuple stays one).
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.like: Any = None

    def __call__(self, *args: Any) -> Any:
        out = self.fn(*args)
        if isinstance(out, tuple | list | dict):
            builtins = require("autograd.builtins", "autograd")
            self.like = out
            if isinstance(out, dict):
                return builtins.dict(out)
            return (builtins.list if isinstance(out, list) else builtins.tuple)(out)
        return out

    def unboxed(self, ans: Any) -> Any:
        if isinstance(self.like, dict) and isinstance(ans, dict):
            return dict(ans)
        if self.like is not None and isinstance(ans, tuple | list):
            return rebuild(self.like, ans)
        return ans
