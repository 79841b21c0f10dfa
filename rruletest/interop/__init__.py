"""Check PyTorch, JAX and autograd derivative rules with rruletest's testers.

Each framework has its own module, which imports the framework only when an adapter is made:

- ``rruletest.interop.torch``: ``from_function(MyFunction)`` for a ``torch.autograd.Function``
  (its ``forward``/``backward``/``jvp`` called directly, raw), ``from_callable(fn)`` for any
  torch function (through torch's engine);
- ``rruletest.interop.jax``: ``from_custom_vjp(f)`` (its ``fwd``/``bwd`` called directly),
  ``from_function(f)`` for any jax function (``jax.vjp``/``jax.jvp``), float64 kept float64;
- ``rruletest.interop.autograd``: ``from_primitive(f)`` (its ``defvjp``/``defjvp`` makers
  called directly), ``from_function(f)`` for any function (``make_vjp``/``make_jvp``).

An adapter is a numpy-level function with ``.rrule`` and ``.frule`` methods, so::

    f = rruletest.interop.torch.from_function(MyFunction, domain="(0, inf)")
    report = f.test_rrule(x, y)                # test_rrule(f, x, y, rrule_f=f.rrule), said once

``register(f)`` puts an adapter's rules into a RuleSet for the gate (``rruletest check``), one
row per adapter; a framework that has no rule for an argument is reported as ``NoRuleError``
("no rule for args[1]"), never as a made-up ``NoTangent()``.

Complex cotangents are mapped to rruletest's convention (see ``docs/interop.md``). This
package imports no framework itself; ``wrap`` picks the module from the object it is given:

>>> import rruletest.interop as interop
>>> sorted(interop.FRAMEWORKS)
['autograd', 'jax', 'torch']
>>> interop.wrap(len)
Traceback (most recent call last):
...
rruletest.interop._errors.InteropError: cannot tell which framework obj=<built-in function len> \
belongs to; use rruletest.interop.torch, .jax or .autograd directly
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rruletest.interop._base import (
    Adapted,
    FrameworkNotInstalledError,
    InteropError,
    MissingRuleError,
    NoRuleError,
    Pullback,
)
from rruletest.interop._rules import register

if TYPE_CHECKING:
    from rruletest.interop import autograd, jax, torch

__all__ = [
    "FRAMEWORKS",
    "Adapted",
    "FrameworkNotInstalledError",
    "InteropError",
    "MissingRuleError",
    "NoRuleError",
    "autograd",
    "frule",
    "jax",
    "register",
    "rrule",
    "torch",
    "wrap",
]

#: The frameworks with an adapter module, and the pip extra that installs each.
FRAMEWORKS: dict[str, str] = {"torch": "torch", "jax": "jax", "autograd": "autograd"}


def __getattr__(name: str) -> ModuleType:
    if name in FRAMEWORKS:
        module = importlib.import_module(f"rruletest.interop.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'rruletest.interop' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _as_adapter(f: Any, what: str) -> Adapted:
    if isinstance(f, Adapted):
        return f
    raise InteropError(
        f"rruletest.interop.{what} takes an adapter as f (made by rruletest.interop.torch, .jax "
        f"or .autograd), got f={f!r}"
    )


def rrule(f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Pullback]:
    """The rrule of any adapter: ``test_rrule(adapter, *args, rrule_f=rruletest.interop.rrule)``."""
    return _as_adapter(f, "rrule").rrule(f, *args, **kwargs)


def frule(tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """The frule of any adapter: ``test_frule(adapter, *args, frule_f=rruletest.interop.frule)``."""
    return _as_adapter(f, "frule").frule(tangents, f, *args, **kwargs)


def _framework_of(obj: Any) -> str | None:
    if isinstance(obj, type):
        if any(c.__module__.startswith("torch.") for c in obj.__mro__):
            return "torch"
        return None
    top = type(obj).__module__.split(".")[0]
    if top in ("jax", "jaxlib"):
        return "jax"
    if top == "torch":
        return "torch"
    if getattr(obj, "_is_autograd_primitive", False):
        return "autograd"
    module = (getattr(obj, "__module__", None) or "").split(".")[0]
    if module in ("torch", "jax", "autograd"):
        return module
    return None


def wrap(obj: Any, **options: Any) -> Adapted:
    """Adapt ``obj`` with the module of the framework it belongs to (``<module>.wrap``).

    A ``torch.autograd.Function`` subclass, a jax ``custom_vjp``/``custom_jvp`` or jitted
    function, and an autograd primitive are recognised; for a plain Python function, call the
    framework's module directly. ``options`` go to that module's ``wrap``.
    """
    name = _framework_of(obj)
    if name is None:
        raise InteropError(
            f"cannot tell which framework obj={obj!r} belongs to; use rruletest.interop.torch, "
            f".jax or .autograd directly"
        )
    module = importlib.import_module(f"rruletest.interop.{name}")
    adapter: Adapted = module.wrap(obj, **options)
    return adapter
