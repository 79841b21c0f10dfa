"""The torch side of ``rruletest.interop.torch``: conversions, the ``ctx`` stand-in, engine calls.

``FunctionContext`` is what ``forward``/``setup_context``/``backward``/``jvp`` of a
``torch.autograd.Function`` receive when the adapter calls them directly. Importing this module
does not import torch.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from rruletest.interop._convert import as_cotangent, leaf_out, rebuild
from rruletest.interop._errors import no_rule_reason, require
from rruletest.tangents import NO_TANGENT

__all__ = [
    "FunctionContext",
    "GradOutputModifiedError",
    "SavedTensorModifiedError",
    "check_unmodified",
    "engine_grad",
    "engine_missing",
    "is_diff_tensor",
    "output_to_numpy",
    "outputs",
    "quiet_torch_internals",
    "shares_memory",
    "tangent_leaf",
    "tangent_out",
    "to_numpy",
    "to_tensor",
    "torch_module",
]


def torch_module() -> Any:
    return require("torch", "torch")


# --------------------------------------------------------------------------------------------
# numpy <-> torch
# --------------------------------------------------------------------------------------------


def to_tensor(torch: Any, x: Any, *, requires_grad: bool = False, dtype: Any = None) -> Any:
    """A numpy array or scalar as a tensor (sharing memory when it can); other values as they are.

    ``dtype`` is used for Python numbers only (a cotangent for a tensor output).
    """
    if isinstance(x, np.ndarray):
        if x.flags.writeable and x.dtype.isnative and all(s >= 0 for s in x.strides):
            t = torch.from_numpy(x)
        else:
            t = torch.from_numpy(np.array(x))
    elif isinstance(x, np.generic):
        t = torch.from_numpy(np.array(x))
    elif dtype is not None and isinstance(x, int | float | complex):
        t = torch.tensor(x, dtype=dtype)
    else:
        return x
    if requires_grad and (t.is_floating_point() or t.is_complex()):
        t.requires_grad_(True)
    return t


def to_numpy(torch: Any, x: Any) -> Any:
    """A tensor as a numpy array (a copy, dtype and shape kept); other values as they are."""
    if isinstance(x, torch.Tensor):
        if x._is_zerotensor():  # forward mode's symbolic zero (slogdet's sign): make it concrete
            x = torch.zeros(x.shape, dtype=x.dtype)
        return np.array(x.detach().resolve_conj().resolve_neg().cpu().numpy(), copy=True)
    return x


def outputs(out: Any) -> tuple[list[Any], int | None]:
    if isinstance(out, tuple | list):
        return list(out), len(out)
    return [out], None


def output_to_numpy(torch: Any, out: Any) -> Any:
    if isinstance(out, tuple | list):
        return rebuild(out, (leaf_out(to_numpy(torch, o)) for o in out))
    return leaf_out(to_numpy(torch, out))


@contextlib.contextmanager
def quiet_torch_internals() -> Iterator[None]:
    """Silence the DeprecationWarning torch 2.x raises from its own forward-AD set-up.

    The first ``make_dual`` loads jvp decompositions through ``torch.jit.script``, which warns
    that ``torch.jit.script`` is deprecated: torch's business, not the rule author's, and an
    error in test suites that turn warnings into errors.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*torch\.jit\.script.* is deprecated", category=DeprecationWarning
        )
        yield


def is_diff_tensor(torch: Any, t: Any) -> bool:
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


# --------------------------------------------------------------------------------------------
# The context handed to forward / setup_context / backward / jvp
# --------------------------------------------------------------------------------------------


class SavedTensorModifiedError(RuntimeError):
    """A tensor saved for backward was modified in place afterwards (torch raises here too)."""


class GradOutputModifiedError(RuntimeError):
    """``backward`` modified a gradient it was given (``grad_outputs``) in place, or ``jvp``
    an input tangent.

    torch hands ``backward`` the caller's gradient (``y.backward(g)`` or another rule's
    result), so writing into it corrupts the caller's values. An array ``ybar`` is handed on
    sharing its memory, and the tester reports the mutation; a numpy scalar cannot be shared,
    so the adapter checks the tensor it made from it.
    """


def shares_memory(t: Any, x: Any) -> bool:
    """Whether tensor ``t`` is a view of the numpy array ``x`` (no copy was made)."""
    return isinstance(x, np.ndarray) and bool(np.shares_memory(t.numpy(), x))


def check_unmodified(given: list[tuple[int, Any, int]], what: str = "backward") -> None:
    """Raise ``GradOutputModifiedError`` for a ``(position, tensor, version)`` whose tensor's
    version moved on (``what``, ``"backward"`` or ``"jvp"``, modified it in place)."""
    name, whose = ("grad_outputs", "gradient") if what == "backward" else ("tangents", "tangent")
    for i, t, version in given:
        if t._version != version:
            raise GradOutputModifiedError(
                f"{what} modified {name}[{i}] (shape {tuple(t.shape)}, {t.dtype}) in "
                f"place (version {version} -> {t._version}): it is the caller's {whose}, "
                f"which a rule must not write into; compute a new tensor instead"
            )


class FunctionContext:
    """A stand-in for torch's ``ctx``: the same methods, plain attribute storage, no engine.

    It supports ``save_for_backward``/``saved_tensors`` (with torch's check that a saved tensor
    was not modified in place afterwards), ``save_for_forward`` (what ``jvp`` sees as
    ``saved_tensors``), ``needs_input_grad``, ``mark_non_differentiable``, ``mark_dirty`` and
    ``set_materialize_grads``. Any other attribute a rule sets is kept, as on torch's ctx.
    """

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self.non_differentiable: tuple[Any, ...] = ()
        self.dirty_tensors: tuple[Any, ...] = ()
        self._saved: tuple[Any, ...] = ()
        self._versions: tuple[int | None, ...] = ()
        self._saved_forward: tuple[Any, ...] | None = None
        self._phase = "forward"

    def save_for_backward(self, *tensors: Any) -> None:
        torch = torch_module()
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, torch.Tensor):
                raise TypeError(
                    f"save_for_backward can only save tensors or None, but argument {i} is of "
                    f"type {type(t).__name__}"
                )
        self._saved = tensors
        self._versions = tuple(None if t is None else t._version for t in tensors)

    def save_for_forward(self, *tensors: Any) -> None:
        self._saved_forward = tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if self._phase == "jvp":
            # torch's forward mode records no backward graph, so jvp sees only what
            # save_for_forward saved (an empty tuple without it), never save_for_backward's.
            return () if self._saved_forward is None else self._saved_forward
        for i, (t, v) in enumerate(zip(self._saved, self._versions, strict=True)):
            if t is not None and t._version != v:
                raise SavedTensorModifiedError(
                    f"saved_tensors[{i}] (shape {tuple(t.shape)}, {t.dtype}) was modified in "
                    f"place after save_for_backward (version {v} -> {t._version}); torch "
                    f"raises 'one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation' here"
                )
        return self._saved

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = self.non_differentiable + tensors

    def mark_dirty(self, *tensors: Any) -> None:
        self.dirty_tensors = self.dirty_tensors + tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def _marked_non_differentiable(self, t: Any) -> bool:
        return any(t is m for m in self.non_differentiable)


def tangent_out(torch: Any, raw: Any, out: Any) -> Any:
    if isinstance(out, tuple | list):
        raws = raw if isinstance(raw, tuple | list) else (raw,)
        return rebuild(out, (tangent_leaf(torch, r, o) for r, o in zip(raws, out, strict=False)))
    return tangent_leaf(torch, raw, out)


def tangent_leaf(torch: Any, raw: Any, out: Any) -> Any:
    if not is_diff_tensor(torch, out):
        return NO_TANGENT
    if raw is None:
        raw = torch.zeros_like(out)
    return leaf_out(as_cotangent(to_numpy(torch, raw), None))


def engine_grad(torch: Any, pairs: list[tuple[Any, Any]], inputs: list[Any]) -> Any:
    """``torch.autograd.grad`` of the (output, cotangent) ``pairs`` with respect to ``inputs``."""
    return torch.autograd.grad(
        [o for o, _ in pairs],
        inputs,
        grad_outputs=[g for _, g in pairs],
        retain_graph=True,
        allow_unused=True,
        materialize_grads=True,
    )


def engine_missing(
    torch: Any, pairs: list[tuple[Any, Any]], inputs: list[Any], diff: list[int]
) -> dict[int, str]:
    """The inputs torch's engine says it has no derivative for, one at a time."""
    missing: dict[int, str] = {}
    for i, t in zip(diff, inputs, strict=True):
        try:
            engine_grad(torch, pairs, [t])
        except (NotImplementedError, RuntimeError) as exc:
            reason = no_rule_reason(exc)
            if reason is not None:
                missing[i] = reason
    return missing
