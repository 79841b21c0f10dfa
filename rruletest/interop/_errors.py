"""The errors of ``rruletest.interop`` and the lazy import of a framework.

A framework that says it has no rule for an argument is reported as such (``NoRuleError``),
not read as a zero or a ``NoTangent()``:

>>> no_rule_reason(NotImplementedError("VJP of clip wrt argnum 1 not defined"))
'NotImplementedError: VJP of clip wrt argnum 1 not defined'
>>> no_rule_reason(ValueError("Betainc gradient with respect to a and b not supported.")) is None
False
>>> no_rule_reason(ValueError("shapes do not match")) is None
True
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = [
    "FrameworkNotInstalledError",
    "InteropError",
    "MissingRuleError",
    "NoRuleError",
    "no_rule_reason",
    "require",
]


class FrameworkNotInstalledError(ImportError):
    """The framework an adapter needs is not installed; the message says how to install it."""

    def __init__(self, module: str, extra: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(
            f"rruletest.interop.{extra} needs the {module!r} package, which is not installed: "
            f"pip install rruletest[{extra}]",
            name=module,
        )


class InteropError(TypeError):
    """An adapter was given something it cannot adapt or call (misuse of the API)."""


def require(module: str, extra: str) -> Any:
    """Import ``module`` (a framework) now, or raise ``FrameworkNotInstalledError``.

    The result is typed ``Any`` on purpose: type-checking rruletest must not depend on which
    frameworks happen to be installed.

    >>> require("math", "math").sqrt(4.0)
    2.0
    >>> require("no_such_framework_xyz", "xyz")
    Traceback (most recent call last):
    ...
    rruletest.interop._errors.FrameworkNotInstalledError: rruletest.interop.xyz needs the \
'no_such_framework_xyz' package, which is not installed: pip install rruletest[xyz]
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == module.split(".")[0]:
            raise FrameworkNotInstalledError(module, extra) from None
        raise


class MissingRuleError(InteropError, NotImplementedError):
    """The framework gives the function no rule of the kind asked for at all (a
    ``torch.autograd.Function`` without ``jvp``, a ``custom_vjp`` in forward mode, a primitive
    without ``defjvp``). A ``NotImplementedError`` too, so a tester looking for the other kind
    of rule (the frule/rrule cross-check) reads it as "no rule", not as a wrong one."""


class NoRuleError(NotImplementedError):
    """The framework has no derivative rule for an argument the test differentiates.

    Raised by a pullback (or a forward rule) in place of a made-up ``NoTangent()``, so the
    tester's report reads ``no rule for args[1]`` with the framework's own words. Its fields:
    ``path`` (``"args[1]"``), ``function`` (the adapter's name) and ``reason``.
    """

    def __init__(self, path: str, function: str, reason: str) -> None:
        self.path = path
        self.function = function
        self.reason = reason
        super().__init__(
            f"no rule for {path}: the framework has no derivative of {function} with respect "
            f"to {path} ({reason}); if it is not meant to be differentiated, pass it "
            f"with_tangent(x, NoTangent()) to the adapter's test_rrule or test_frule (or give "
            f"the adapter nondiff_argnums)"
        )


# jax also says "Reverse-mode differentiation does not work for lax.while_loop ..."
_NO_RULE_WORDS = re.compile(
    r"not (?:implemented|defined|supported)|differentiation does not work"
    r"|can't apply forward-mode autodiff",  # jax: jvp of a custom_vjp (also inside a vjp)
    re.IGNORECASE,
)


def no_rule_reason(exc: BaseException) -> str | None:
    """``"Type: message"`` when ``exc`` is a framework saying it has no rule, else None.

    autograd raises ``NotImplementedError("VJP of f wrt argnum 1 not defined")``, torch
    ``NotImplementedError("the derivative for 'zeta' is not implemented.")``, jax a
    ``NotImplementedError`` or, for some functions, a ``ValueError`` saying the gradient is
    "not supported" or that reverse-mode "differentiation does not work" (a ``while_loop``).
    """
    text = str(exc).strip().split("\n")[0]
    if isinstance(exc, NotImplementedError) or (
        isinstance(exc, ValueError | TypeError | RuntimeError) and _NO_RULE_WORDS.search(text)
    ):
        return f"{type(exc).__name__}: {text}"
    return None
