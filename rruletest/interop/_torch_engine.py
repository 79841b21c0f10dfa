"""``from_callable``'s adapter: any torch function, differentiated by torch's engine.

``torch.autograd.grad`` gives the rrule, forward-mode dual numbers (``torch.autograd.forward_ad``)
the frule: what a user of the function gets. An input the engine has no derivative for
("the derivative for 'zeta' is not implemented") is a ``NoRuleError`` naming it. Importing this
module does not import torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.interop._base import Adapted, NoRuleError, Pullback, no_rule_reason
from rruletest.interop._convert import (
    as_cotangent,
    cotangent_leaves,
    differentiable_argnums,
    rebuild,
    scatter_cotangents,
)
from rruletest.interop._torch_context import (
    engine_grad,
    engine_missing,
    is_diff_tensor,
    output_to_numpy,
    outputs,
    quiet_torch_internals,
    tangent_leaf,
    to_numpy,
    to_tensor,
    torch_module,
)
from rruletest.tangents import AbstractZero

__all__ = ["TorchCallable"]


def _differentiable(torch: Any, x: Any) -> bool:
    """A float or complex tensor not yet requiring grad (complex ones are differentiable too)."""
    return bool(
        torch.is_tensor(x) and (x.is_floating_point() or x.is_complex()) and not x.requires_grad
    )


def torch_pullback_of(fn: Any) -> Any:
    """``(*x, ybar) -> cotangents``: torch's backward of ``fn`` with ``create_graph=True``, so
    that torch's engine differentiates it again (double backward, what users of second
    derivatives get). An input without a gradient gets zeros."""
    torch = torch_module()

    def g(*args: Any) -> Any:
        *xs, ybar = args
        xs = [x.detach().requires_grad_(True) if _differentiable(torch, x) else x for x in xs]
        with torch.enable_grad():  # the adapter evaluates its primal without grad
            out = fn(*xs)
            diff = [x for x in xs if torch.is_tensor(x) and x.requires_grad]
            grads = iter(
                torch.autograd.grad(
                    out, diff, grad_outputs=ybar, create_graph=True, allow_unused=True
                )
            )
        # one cotangent per number or tensor argument, whether or not it was differentiated
        # (a Python float may reach g as a number or as a tensor): zeros where it was not
        result = []
        for x in xs:
            if torch.is_tensor(x) and x.requires_grad:
                grad = next(grads)
                result.append(torch.zeros_like(x) if grad is None else grad)
            elif torch.is_tensor(x):
                result.append(torch.zeros_like(x))
            elif isinstance(x, float | complex):
                kind = torch.float64 if isinstance(x, float) else torch.complex128
                result.append(torch.zeros((), dtype=kind))
        return tuple(result)

    return g


class TorchCallable(Adapted):
    """Any torch function, differentiated by torch's engine. Built by ``from_callable``."""

    framework = "torch"
    mode = "engine"

    def derived(self, key: Any) -> Adapted:
        """The adapter of ``pullback_of(self)`` (``rruletest.rules.derived``) differentiated by
        torch's engine: double backward, for ``order=2``. Forward-over-reverse is not offered
        (``MissingRuleError`` for ``pushforward_of``)."""
        return derived_torch(self.wrapped, key)

    def no_rule_argnums(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool = False
    ) -> dict[int, str]:
        if forward:
            return self._dual_missing(args, kwargs)
        torch, targs, diff = self._prepare(args)
        with torch.enable_grad():
            out = self.wrapped(*targs, **kwargs)
        outs, _ = outputs(out)
        pairs = [(o, torch.zeros_like(o)) for o in outs if is_diff_tensor(torch, o)]
        pairs = [(o, g) for o, g in pairs if o.requires_grad]
        if not pairs:
            return {}
        return engine_missing(torch, pairs, [targs[i] for i in diff], diff)

    def _tensors(self, args: tuple[Any, ...], diff: list[int], grad: bool) -> tuple[Any, ...]:
        """Arrays, numpy scalars and differentiable Python floats/complexes as tensors (torch
        functions take no Python float where they take a tensor); other values as they are."""
        torch = torch_module()
        out = []
        for i, a in enumerate(args):
            if i in diff and isinstance(a, float | complex) and not isinstance(a, np.generic):
                a = np.float64(a) if isinstance(a, float) else np.complex128(a)
            out.append(to_tensor(torch, a, requires_grad=grad and i in diff))
        return tuple(out)

    def _prepare(self, args: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...], list[int]]:
        diff = differentiable_argnums(args, self.nondiff_argnums)
        return torch_module(), self._tensors(args, diff, grad=True), diff

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        torch = torch_module()
        targs = self._tensors(args, differentiable_argnums(args, self.nondiff_argnums), False)
        with torch.no_grad():
            out = self.wrapped(*targs, **kwargs)
        return output_to_numpy(torch, out)

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Pullback]:
        torch, targs, diff = self._prepare(args)
        with torch.enable_grad():
            out = self.wrapped(*targs, **kwargs)
        outs, n = outputs(out)
        inputs = [targs[i] for i in diff]

        def pullback(ybar: Any) -> tuple[Any, ...]:
            pairs = [
                (o, to_tensor(torch, g, dtype=o.dtype))
                for g, o in zip(cotangent_leaves(ybar, n), outs, strict=True)
                if g is not None and isinstance(o, torch.Tensor) and o.requires_grad
            ]
            if pairs and inputs:
                try:
                    grads = engine_grad(torch, pairs, inputs)
                except (NotImplementedError, RuntimeError) as exc:
                    if no_rule_reason(exc) is None:
                        raise
                    missing = engine_missing(torch, pairs, inputs, diff)
                    if not missing:
                        raise
                    i = min(missing)
                    raise NoRuleError(f"args[{i}]", self.__qualname__, missing[i]) from exc
            else:
                grads = tuple(torch.zeros_like(t) for t in inputs)
            return scatter_cotangents(
                args, diff, grads, lambda g, a: as_cotangent(to_numpy(torch, g), a)
            )

        return output_to_numpy(torch, out), pullback

    def _dual(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, list[Any], list[Any]]:
        """The output, its primal and tangent leaves, through forward-mode dual numbers."""
        torch = torch_module()
        fwad = torch.autograd.forward_ad
        diff = differentiable_argnums(args, self.nondiff_argnums)
        plain = self._tensors(args, diff, grad=False)
        with quiet_torch_internals(), fwad.dual_level(), torch.no_grad():
            targs = []
            for i, (ta, xd) in enumerate(zip(plain, xdots, strict=True)):
                if i in diff and xd is not None and not isinstance(xd, AbstractZero):
                    ta = fwad.make_dual(ta, to_tensor(torch, xd, dtype=ta.dtype))
                targs.append(ta)
            out = self.wrapped(*targs, **kwargs)
            outs, _ = outputs(out)
            pairs = [
                fwad.unpack_dual(o) if isinstance(o, torch.Tensor) else (o, None) for o in outs
            ]
        return out, [p for p, _ in pairs], [t for _, t in pairs]

    def _dual_missing(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[int, str]:
        """The arguments torch's forward mode has no rule for, one at a time."""
        missing: dict[int, str] = {}
        for i in differentiable_argnums(args, self.nondiff_argnums):
            xdots = tuple(np.ones_like(a) if j == i else None for j, a in enumerate(args))
            try:
                self._dual(xdots, args, kwargs)
            except (NotImplementedError, RuntimeError) as exc:
                reason = no_rule_reason(exc)
                if reason is not None:
                    missing[i] = reason
        return missing

    def _frule(
        self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        torch = torch_module()
        try:
            out, primal, tang = self._dual(xdots, args, kwargs)
        except (NotImplementedError, RuntimeError) as exc:
            missing = self._dual_missing(args, kwargs) if no_rule_reason(exc) else {}
            if not missing:
                raise
            i = min(missing)
            raise NoRuleError(f"args[{i}]", self.__qualname__, missing[i]) from exc
        if isinstance(out, tuple | list):
            y = output_to_numpy(torch, rebuild(out, primal))
            tangents = (tangent_leaf(torch, t, p) for t, p in zip(tang, primal, strict=True))
            ydot = rebuild(out, tangents)
        else:
            y = output_to_numpy(torch, primal[0])
            ydot = tangent_leaf(torch, tang[0], primal[0])
        return y, ydot


def derived_torch(fn: Any, key: Any) -> Adapted:
    """The adapter of the function ``key`` names for ``fn`` (``TorchCallable.derived``)."""
    from rruletest.interop._errors import MissingRuleError
    from rruletest.rules.derived import PullbackOf

    if not isinstance(key, PullbackOf):
        raise MissingRuleError(
            f"the torch adapters derive pullback_of(f) (double backward) only, not {key!r}"
        )
    return _DoubleBackward(torch_pullback_of(fn), name=repr(key))


class _DoubleBackward(TorchCallable):
    """``pullback_of(f)`` through torch's engine: reverse mode only (forward mode over a
    backward graph is not what torch users differentiate with)."""

    mode = "engine, double backward"

    def _frule(self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        from rruletest.interop._errors import MissingRuleError

        raise MissingRuleError(f"{self.__name__}: the torch adapters check double backward only")
