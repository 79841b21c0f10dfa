"""Check PyTorch derivative rules with rruletest.

Two adapters, both numpy in and numpy out:

- ``from_function(MyFunction)`` for a ``torch.autograd.Function`` subclass. It calls the
  class's own ``forward``/``setup_context``/``backward``/``jvp`` with a context object of its
  own, never through torch's autograd engine, so the pullback returns exactly what
  ``backward`` returned: its shape, its dtype, ``None`` (read as ``NoTangent()``) where the rule
  gave no gradient. torch's engine would sum a broadcast-shaped gradient back to the input's
  shape and cast it to the input's dtype, hiding both bugs from ``gradcheck``.
- ``from_callable(fn)`` for any differentiable torch function (including ``MyFunction.apply``),
  through the engine: ``torch.autograd.grad`` for the rrule, forward-mode dual numbers
  (``torch.autograd.forward_ad``) for the frule. It checks what a user of the function gets.

torch's complex gradients already follow rruletest's convention (``xbar = ybar * conj(f'(x))``
for holomorphic ``f``), so cotangents cross unchanged. Arrays and numpy scalars become tensors
(sharing memory when writable, so a rule that mutates its inputs is caught). For
``from_function`` Python numbers stay Python numbers, as torch passes them to ``forward`` (and
never differentiates them); ``from_callable`` makes Python floats float64 tensors. Only float
and complex tensors require grad; ``nondiff_argnums`` switches that off for chosen arguments.

>>> import pytest; torch = pytest.importorskip("torch")
>>> class Cube(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x**3
...     @staticmethod
...     def backward(ctx, g):
...         (x,) = ctx.saved_tensors
...         return 3 * x**2 * g
>>> cube = from_function(Cube)
>>> y, pullback = cube.rrule(cube, np.array([1.0, 2.0]))
>>> y, pullback(np.ones(2))
(array([1., 8.]), (NoTangent(), array([ 3., 12.])))
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rruletest.domains import DomainLike
from rruletest.interop._base import (
    Adapted,
    InteropError,
    MissingRuleError,
    Pullback,
    recreatable,
    signature_of,
)
from rruletest.interop._convert import (
    as_cotangent,
    cotangent_leaves,
    differentiable_argnums,
)
from rruletest.interop._torch_context import (
    FunctionContext,
    GradOutputModifiedError,
    SavedTensorModifiedError,
    check_unmodified,
    is_diff_tensor,
    output_to_numpy,
    outputs,
    shares_memory,
    tangent_out,
    to_numpy,
    to_tensor,
    torch_module,
)
from rruletest.interop._torch_engine import TorchCallable, derived_torch
from rruletest.tangents import NO_TANGENT, AbstractZero

__all__ = [
    "FunctionContext",
    "GradOutputModifiedError",
    "SavedTensorModifiedError",
    "TorchCallable",
    "TorchFunction",
    "from_callable",
    "from_function",
    "wrap",
]


# --------------------------------------------------------------------------------------------
# torch.autograd.Function, called directly
# --------------------------------------------------------------------------------------------


class TorchFunction(Adapted):
    """A ``torch.autograd.Function`` subclass whose own methods give the rrule and frule.

    Built by ``from_function``; see the module docstring for what it does and why.
    """

    framework = "torch"
    mode = "raw autograd.Function"

    def __init__(self, cls: Any, **options: Any) -> None:
        torch = torch_module()
        base = torch.autograd.Function
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise InteropError(
                f"from_function takes a torch.autograd.Function subclass, got cls={cls!r}; "
                f"for any other torch function use from_callable"
            )
        klass: Any = cls  # its methods are torch's, untyped here
        self._uses_setup_context = klass.setup_context is not base.setup_context
        self._backward: Any
        if klass.vjp is not base.vjp:
            self._backward = klass.vjp
        elif klass.backward is not base.backward:
            self._backward = klass.backward
        else:
            self._backward = None
        self._jvp = klass.jvp if klass.jvp is not base.jvp else None
        super().__init__(cls, **options)

    @property
    def has_frule(self) -> bool:
        return self._jvp is not None

    @property
    def __signature__(self) -> inspect.Signature | None:
        """``forward``'s parameters, without ``ctx`` unless the Function has ``setup_context``."""
        return signature_of(self.wrapped.forward, 0 if self._uses_setup_context else 1)

    def derived(self, key: Any) -> Adapted:
        """``pullback_of(self)`` differentiated by torch's engine through ``apply`` (the
        Function's ``backward`` run with ``create_graph=True``: its double backward)."""
        return derived_torch(self.wrapped.apply, key)

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        """Python numbers: torch passes them to ``forward`` as they are and never
        differentiates them (``needs_input_grad`` is False; a gradient for one is an error)."""
        return {
            i: f"torch never differentiates a Python {type(a).__name__}; pass np.float64(x) "
            f"to make it a tensor"
            for i, a in enumerate(args)
            if isinstance(a, float | complex) and not isinstance(a, np.generic)
        }

    def _forward(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, list[int]]:
        torch = torch_module()
        cls = self.wrapped
        diff = differentiable_argnums(args, self.nondiff_argnums)
        targs = tuple(to_tensor(torch, a, requires_grad=i in diff) for i, a in enumerate(args))
        ctx = FunctionContext(tuple(isinstance(t, torch.Tensor) and t.requires_grad for t in targs))
        with torch.no_grad():
            if self._uses_setup_context:
                out = cls.forward(*targs, **kwargs)
                cls.setup_context(ctx, targs, out)
            else:
                out = cls.forward(ctx, *targs, **kwargs)
        return ctx, out, diff

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        _, out, _ = self._forward(args, kwargs)
        return output_to_numpy(torch_module(), out)

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        torch = torch_module()
        backward = self._backward
        if backward is None:
            raise MissingRuleError(f"{self.__qualname__} defines neither backward nor vjp")
        ctx, out, _ = self._forward(args, kwargs)
        outs, n = outputs(out)
        nargs = len(args)
        # torch's engine discards what backward returns for a tensor that does not require
        # grad (integers, nondiff_argnums): so does the adapter.
        discarded = {
            i
            for i, a in enumerate(args)
            if isinstance(a, np.ndarray | np.generic) and not ctx.needs_input_grad[i]
        }

        def pullback(ybar: Any) -> tuple[Any, ...]:
            grads: list[Any] = []
            copied: list[tuple[int, Any, int]] = []  # from ybar, not sharing its memory
            for g, o in zip(cotangent_leaves(ybar, n), outs, strict=True):
                if not isinstance(o, torch.Tensor):
                    grads.append(None)
                elif g is None or not is_diff_tensor(torch, o) or ctx._marked_non_differentiable(o):
                    grads.append(torch.zeros_like(o) if ctx.materialize_grads else None)
                else:
                    t = to_tensor(torch, g, dtype=o.dtype)
                    if isinstance(t, torch.Tensor) and not shares_memory(t, g):
                        copied.append((len(grads), t, t._version))
                    grads.append(t)
            ctx._phase = "backward"
            with torch.no_grad():
                raw = backward(ctx, *grads)
            check_unmodified(copied)
            raw = raw if isinstance(raw, tuple) else (raw,)
            if len(raw) > nargs and all(r is None for r in raw[nargs:]):
                raw = raw[:nargs]  # torch accepts trailing Nones
            primals = list(args) + [None] * (len(raw) - nargs)
            return (
                NO_TANGENT,
                *(
                    NO_TANGENT if i in discarded else as_cotangent(to_numpy(torch, r), p)
                    for i, (r, p) in enumerate(zip(raw, primals, strict=False))
                ),
            )

        return output_to_numpy(torch, out), pullback

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        torch = torch_module()
        if self._jvp is None:
            raise MissingRuleError(
                f"{self.__qualname__} defines no jvp staticmethod, so torch's forward mode cannot "
                f"differentiate it; test its rrule, or add jvp(ctx, *input_tangents)"
            )
        ctx, out, diff = self._forward(args, kwargs)
        ctx._phase = "jvp"
        tangents: list[Any] = []
        copied: list[tuple[int, Any, int]] = []  # from xdots, not sharing their memory
        for i, (a, xd) in enumerate(zip(args, xdots, strict=True)):
            ta = to_tensor(torch, a)
            if not isinstance(ta, torch.Tensor):
                tangents.append(None)
            elif i not in diff or xd is None or isinstance(xd, AbstractZero):
                tangents.append(torch.zeros_like(ta) if ctx.materialize_grads else None)
            else:
                t = to_tensor(torch, xd, dtype=ta.dtype)
                if isinstance(t, torch.Tensor) and not shares_memory(t, xd):
                    copied.append((i, t, t._version))
                tangents.append(t)
        with torch.no_grad():
            raw = self._jvp(ctx, *tangents)
        check_unmodified(copied, "jvp")
        return output_to_numpy(torch, out), tangent_out(torch, raw, out)


# --------------------------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------------------------


@recreatable
def from_function(
    cls: Any,
    *,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> TorchFunction:
    """Adapt a ``torch.autograd.Function`` subclass; its rules are called directly (raw).

    Args:
        cls: the Function subclass (``forward(ctx, ...)`` or ``forward(...)`` plus
            ``setup_context``; ``backward`` or ``vjp``; optionally ``jvp``).
        nondiff_argnums: positions of float arguments to pass as tensors that do not require
            grad (``ctx.needs_input_grad`` is False there; the adapter's ``test_rrule`` tells
            the tester).
        name: the name failure messages use (default: the class's).
        elementwise: each output element depends only on the matching input elements.
        domain: where the inputs are valid (``rruletest.domains.Domain.of`` forms).
        examples: argument tuples for the gate (``rruletest.interop.register``).

    Raises:
        FrameworkNotInstalledError: torch is not installed.
        InteropError: ``cls`` is not a Function subclass.
    """
    return TorchFunction(
        cls,
        nondiff_argnums=nondiff_argnums,
        name=name,
        elementwise=elementwise,
        domain=domain,
        examples=examples,
        spaces=spaces,
    )


@recreatable
def from_callable(
    fn: Any,
    *,
    nondiff_argnums: Iterable[int] = (),
    name: str | None = None,
    elementwise: bool = False,
    domain: DomainLike = None,
    examples: Sequence[Any] = (),
    spaces: Any = None,
) -> TorchCallable:
    """Adapt any differentiable torch function; torch's engine differentiates it (options as
    for ``from_function``).

    Use it for functions built from torch operations, or for ``MyFunction.apply`` to test
    what the engine makes of a Function's rules (compare with ``from_function``).
    """
    if not callable(fn):
        raise InteropError(f"from_callable takes a function, got fn={fn!r}")
    torch_module()
    return TorchCallable(
        fn,
        nondiff_argnums=nondiff_argnums,
        name=name,
        elementwise=elementwise,
        domain=domain,
        examples=examples,
        spaces=spaces,
    )


def wrap(obj: Any, **options: Any) -> TorchFunction | TorchCallable:
    """``from_function`` for a Function subclass, ``from_callable`` for anything else
    (``options`` as theirs)."""
    torch = torch_module()
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        return from_function(obj, **options)
    return from_callable(obj, **options)
