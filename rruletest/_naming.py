"""How rruletest names a function in reports, headers and reproduce lines: one helper.

numpy functions are shown as their users write them (``np.sin``, ``np.linalg.norm``), other
functions by their name (``softplus``; a function defined inside another by its own name, not
``test_x.<locals>.softplus``), and, where a line must be importable (``qualified=True``), with
their module (``mypkg.rules.softplus``; rruletest's own functions, which users import from
``rruletest``, and builtins without). Bottom layer: imports nothing of rruletest, nor numpy.

>>> import math
>>> function_name(math.sqrt), function_name(math.sqrt, qualified=True)
('sqrt', 'math.sqrt')
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["function_name"]


def _numpy_module(module: str) -> str | None:
    """``np`` for numpy's namespace, ``np.linalg`` for ``numpy.linalg``; None otherwise.

    Private submodules (``numpy._core.fromnumeric``) name the top-level namespace, where numpy
    exports those functions.
    """
    if module != "numpy" and not module.startswith("numpy."):
        return None
    public = [p for p in module.split(".")[1:] if not p.startswith("_")]
    if len(public) != len(module.split(".")) - 1:
        return "np"
    return ".".join(["np", *public])


def _module_of_ufunc(f: Any) -> str | None:
    """The public module, among those already imported, that holds the ufunc ``f`` under its
    name (``scipy.special`` for ``gammaln``): the shortest such name, private ones last."""
    found = [
        name
        for name, mod in list(sys.modules.items())
        if mod is not None and getattr(mod, getattr(f, "__name__", ""), None) is f
    ]
    public = [n for n in found if not any(p.startswith("_") for p in n.split("."))]
    return min(public or found, key=lambda n: (n.count("."), len(n)), default=None)


def function_name(f: Any, *, qualified: bool = False) -> str:
    """The name of ``f`` as rruletest shows it.

    Args:
        f: a function, a ufunc, a callable object or a class.
        qualified: prefix the module (for lines meant to be run, such as reproduce lines);
            numpy functions and builtins are shown the same way either way.

    >>> import numpy as np
    >>> function_name(np.sin), function_name(np.linalg.norm), function_name(np.sum)
    ('np.sin', 'np.linalg.norm', 'np.sum')
    >>> function_name(len), function_name(lambda x: x)
    ('len', '<lambda>')
    >>> import scipy.special
    >>> function_name(scipy.special.gammaln)
    'scipy.special.gammaln'
    """
    if type(f).__name__ == "ufunc" and type(f).__module__ == "numpy":
        # scipy.special's functions are numpy ufuncs too: np.<name> only for numpy's own.
        ufunc_name = str(f.__name__)
        if getattr(sys.modules.get("numpy"), ufunc_name, None) is f:
            return f"np.{ufunc_name}"
        holder = _module_of_ufunc(f)
        return ufunc_name if holder is None else f"{holder}.{ufunc_name}"
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if not isinstance(name, str) or not name:
        return type(f).__name__ + "(...)"
    local = "<locals>" in name  # defined inside a function: not importable, shown by its name
    if local:
        name = str(getattr(f, "__name__", name))
    module = getattr(f, "__module__", None)
    if isinstance(module, str):
        np_module = _numpy_module(module)
        if np_module is not None:
            return f"{np_module}.{name}"
        public = module in ("builtins", "__main__") or module.split(".")[0] == "rruletest"
        if qualified and not public and not local and not _absent(module, name):
            return f"{module}.{name}"
    return name


def _absent(module: str, name: str) -> bool:
    """Whether ``module`` is imported and holds nothing under ``name``'s first part: then
    ``module.name`` names nothing (an interop adapter named ``sort_axis0`` keeps the
    ``__module__`` of the primitive it wraps, ``autograd.tracer``)."""
    mod = sys.modules.get(module)
    return mod is not None and not hasattr(mod, name.split(".")[0])
