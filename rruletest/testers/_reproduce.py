"""The ``reproduce:`` line of a failure: one Python statement that runs as printed.

The line imports what it needs (numpy as ``np``, the tester, the modules of the functions and
rule sets passed), gives every argument, ``fkwargs=`` and every option that shaped the verdict
(``rtol``, ``atol``, ``fdm``, ``vjp_mode``, ``output_tangent``, ``rrule_f``...) and the seed.
Numbers and small finite arrays are written out exactly (``repr`` of a float round-trips);
larger arrays, and arrays with NaN or infinities, are saved to one ``.npz`` file (under pytest's
cache directory when running under pytest, else the temporary directory) that the line loads;
other values are pickled next to it. A function is named by its import path when it has one
(``mypkg.rules.softplus``; a ``RuleSet``'s bound ``rrule`` by the module global holding the
RuleSet: ``mypkg.rules.rules.rrule``); one that cannot be imported (a lambda, a local function,
a value that cannot be saved) is named as it is and the line says it needs it.

What a fresh ``python -c`` run from the same directory would lack is in the line too: the
directory of a module it imports that only this process has on ``sys.path`` (a test module
pytest's ``prepend`` import mode found, a module given to ``rruletest check`` by path), the
default tolerances in force where they are not the library's (the plugin's
``--rruletest-rtol``/``--rruletest-atol``, ``override_default_tolerances``), and a
``Generator`` passed as ``rng``, saved as it was when the tester started.

The modules that registered the rules a tester found in the default RuleSet are imported too
(a fresh process has no registration):

>>> import numpy as np
>>> import rruletest.rulesets.numpy
>>> line = reproduce_line("test_rrule", np.sin, (np.array([0.5, 1.0]),), {}, {"rtol": 1e-13}, 4)
>>> print(line)
import numpy as np; import rruletest.rulesets.numpy._unary; from rruletest import test_rrule; \
test_rrule(np.sin, np.array([0.5, 1.0]), rtol=1e-13, rng=4)
>>> given_options(lambda f, *a, rtol=None, vjp_mode="auto", rng=None: None,
...               {"rtol": 1e-13, "vjp_mode": "auto", "rng": 3})
{'rtol': 1e-13}
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import io
import math
import os
import pickle
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import numpy as np

from rruletest._naming import function_name
from rruletest.tangents import AbstractZero
from rruletest.testers._fresh_process import path_entries, rule_modules, tolerance_arguments

__all__ = ["given_options", "reproduce_line", "save_dir"]

PRINT_LIMIT = 8  # arrays of at most this many finite elements are written out
MAX_DEPTH = 12  # containers nested deeper are pickled whole

_PUBLIC_TYPES = {"NoTangent", "ZeroTangent", "WithTangent"}


def save_dir() -> Path:
    """Where saved inputs go: ``.pytest_cache/d/rruletest`` of the working directory (or the
    nearest parent holding a ``.pytest_cache``) under pytest, else the temporary directory."""
    if "PYTEST_CURRENT_TEST" in os.environ:
        here = Path.cwd()
        for d in (here, *here.parents):
            if (d / ".pytest_cache").is_dir():
                return d / ".pytest_cache" / "d" / "rruletest"
        return here / ".pytest_cache" / "d" / "rruletest"
    return Path(tempfile.gettempdir()) / "rruletest"


class _Writer:
    """Renders values as Python expressions, collecting imports and values to save."""

    def __init__(self) -> None:
        self.imports: dict[str, None] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.pickled: list[Any] = []
        self.missing: list[str] = []  # values the line names but cannot recreate
        self.made: dict[int, str] = {}  # objects made by a call in the line, by id: their name

    def expr(self, x: Any, depth: int = 0) -> str:
        if depth > MAX_DEPTH:  # deep, or containing itself: saved whole
            return self._pickle(x)
        d = depth + 1
        if x is None or isinstance(x, bool | str):
            return repr(x)
        # numpy scalars first: np.float64 and np.complex128 are also float and complex, and
        # must keep their type (and bring their import) in the line.
        if isinstance(x, np.generic) and x.dtype.kind in "biufc":
            item = x.item()
            if isinstance(item, np.generic):  # longdouble: no Python number holds it
                return self._pickle(x)
            self.imports["import numpy as np"] = None
            return f"np.{type(x).__name__}({self.expr(item)})"
        if isinstance(x, int):
            return repr(x)
        if isinstance(x, float):
            return _float(x)
        if isinstance(x, complex):
            return f"complex({_float(x.real)}, {_float(x.imag)})"
        if isinstance(x, np.ndarray):
            return self._array(x)
        if isinstance(x, tuple) and not hasattr(type(x), "_fields"):
            inner = ", ".join(self.expr(v, d) for v in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if isinstance(x, list):
            return "[" + ", ".join(self.expr(v, d) for v in x) + "]"
        if type(x) is dict and all(isinstance(k, str | int) for k in x):
            return "{" + ", ".join(f"{k!r}: {self.expr(v, d)}" for k, v in x.items()) + "}"
        if type(x).__name__ in _PUBLIC_TYPES | {"Thunk"} or isinstance(x, AbstractZero):
            return self._rruletest_value(x)
        if type(x).__name__ == "FiniteDifferenceMethod":
            return self._fdm(x)
        made = self._made(x, d)
        if made is not None:
            return made
        if callable(x):
            named = self._callable(x)
            if named is not None:
                return named
        return self._pickle(x)

    def _array(self, x: np.ndarray) -> str:
        self.imports["import numpy as np"] = None
        # Written out through Python numbers; a longdouble array is saved (no float holds it).
        plain = x.dtype.kind in "biuf" and x.dtype.names is None and x.dtype != np.longdouble
        if plain and x.size <= PRINT_LIMIT and x.ndim >= 1 and bool(np.all(np.isfinite(x))):
            dtype = "" if x.dtype in (np.float64, np.int64) else f", dtype=np.{x.dtype.name}"
            if x.dtype == np.bool_:
                dtype = ", dtype=bool"
            return f"np.array({self.expr(x.tolist())}{dtype})"
        if x.dtype.kind not in "biufcmM" or x.dtype.names is not None:
            return self._pickle(x)
        key = f"a{len(self.arrays)}"
        self.arrays[key] = x
        return f"_saved[{key!r}]"

    def _rruletest_value(self, x: Any) -> str:
        name = type(x).__name__
        if name == "WithTangent":
            self.imports["from rruletest import with_tangent"] = None
            if x.space is None:
                return f"with_tangent({self.expr(x.primal)}, {self.expr(x.tangent)})"
            space = self._space(x.space)
            if x.tangent is None:  # with_tangent(x, S)
                return f"with_tangent({self.expr(x.primal)}, {space})"
            return f"with_tangent({self.expr(x.primal)}, {self.expr(x.tangent)}, space={space})"
        if name in ("NoTangent", "ZeroTangent"):
            self.imports[f"from rruletest import {name}"] = None
            return f"{name}()"
        return self._pickle(x)

    def _space(self, space: Any) -> str:
        """A space of ``rruletest.spaces`` as its constructor call (they print as they are
        built, but for ``Sparsity``, whose mask is an array); others are saved whole."""
        name = type(space).__name__
        if type(space).__module__.startswith("rruletest.spaces"):
            self.imports[f"from rruletest.spaces import {name}"] = None
            if name == "Sparsity":
                return f"Sparsity({self.expr(space.mask(None))})"
            return repr(space)
        return self._pickle(space)

    def _fdm(self, fdm: Any) -> str:
        self.imports["from rruletest.finite_differences import FiniteDifferenceMethod"] = None
        return (
            f"FiniteDifferenceMethod({fdm.grid!r}, {fdm.q}, adapt={fdm.adapt}, "
            f"condition={_float(float(fdm.condition))}, factor={_float(float(fdm.factor))}, "
            f"max_range={_float(float(fdm.max_range))})"
        )

    def _made(self, x: Any, depth: int) -> str | None:
        """An object that says how to make it again (``__rruletest_call__``: an interop adapter)
        as that call; made once per line (``(_made0 := call)``, then ``_made0``), since an
        adapter's ``rrule`` accepts only that adapter as ``f``."""
        how = getattr(type(x), "__rruletest_call__", None)
        if how is None:
            return None
        if id(x) in self.made:
            return self.made[id(x)]
        try:
            module, factory, args, options = how(x)
        except Exception:
            return None
        self.imports[f"import {module}"] = None
        parts = [self.expr(a, depth) for a in args]
        parts += [f"{k}={self.expr(v, depth)}" for k, v in options.items()]
        name = f"_made{len(self.made)}"
        self.made[id(x)] = name
        return f"({name} := {module}.{factory}({', '.join(parts)}))"

    def _callable(self, f: Any) -> str | None:
        owner: Any = getattr(f, "__self__", None)
        of = getattr(type(owner), "__rruletest_owner__", None)
        if of is not None and hasattr(f, "__name__"):  # adapter.rrule: a method of its rules
            made = self._made(of(owner), 1)
            if made is not None:
                return f"{made}.{f.__name__}"
        bound = owner is not None and not isinstance(owner, type | types.ModuleType)
        if bound and hasattr(f, "__name__"):  # a builtin's __self__ is its module: not bound
            holder = _global_name(owner)
            if holder is not None:
                mod, var = holder
                self.imports[f"import {mod}"] = None
                return f"{mod}.{var}.{f.__name__}"
            local = _local_name(owner)
            if local is not None:
                self.missing.append(local)
                return f"{local}.{f.__name__}"
        name = function_name(f, qualified=True)
        if name.startswith("np."):
            self.imports["import numpy as np"] = None
            return name
        mod, _, attr = name.rpartition(".")
        if mod and type(f).__name__ == "ufunc" and getattr(sys.modules.get(mod), attr, None) is f:
            self.imports[f"import {mod}"] = None  # a ufunc of another package: scipy.special
            return name
        module = getattr(f, "__module__", None)
        qual = getattr(f, "__qualname__", None)
        if isinstance(module, str) and isinstance(qual, str) and _resolves(module, qual, f):
            if module == "builtins":
                return qual
            if module.split(".")[0] == "rruletest":
                if _resolves("rruletest", qual, f):
                    self.imports[f"from rruletest import {qual.split('.')[0]}"] = None
                    return qual
            elif module != "__main__":
                self.imports[f"import {module}"] = None
                return f"{module}.{qual}"
        held = _module_holding(f)
        if held is not None:
            self.imports[f"import {held[0]}"] = None
            return f"{held[0]}.{held[1]}"
        if not inspect.isfunction(f):
            return None  # a callable object: pickled when it can be
        self.missing.append(name)
        return name

    def _pickle(self, x: Any) -> str:
        try:
            pickle.loads(pickle.dumps(x))
        except Exception:
            owner = getattr(x, "__self__", None)
            if owner is not None and hasattr(x, "__name__"):  # a method of an unnamed object
                what = f"{type(owner).__name__}(...)"
                self.missing.append(f"the {type(owner).__name__} whose {x.__name__} was passed")
                return f"{what}.{x.__name__}"
            self.missing.append(type(x).__name__)
            return f"{type(x).__name__}(...)"
        if type(x).__module__ == "__main__" or "<locals>" in type(x).__qualname__:
            self.missing.append(type(x).__name__)  # unpickled only where it is defined
        self.pickled.append(x)
        return f"_pickled[{len(self.pickled) - 1}]"


@functools.cache
def _options(tester: Any) -> tuple[tuple[str, Any], ...]:
    """The keyword-only options of ``tester`` with their defaults (``rng`` and ``fkwargs``
    aside), read from its signature once: a tester is called many times."""
    return tuple(
        (name, p.default)
        for name, p in inspect.signature(tester).parameters.items()
        if p.kind is p.KEYWORD_ONLY and name not in ("rng", "fkwargs")
    )


def given_options(tester: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The keyword options of ``tester`` in ``values`` (its ``locals()`` on entry) that differ
    from their defaults: what the reproduce line must pass (``rng`` and ``fkwargs`` aside)."""
    out: dict[str, Any] = {}
    for name, default in _options(tester):
        if name not in values:
            continue
        v = values[name]
        same = v is default or (
            type(v) in (bool, int, float, str) and type(v) is type(default) and v == default
        )
        if not same:
            out[name] = v
    return out


def _float(v: float) -> str:
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "-float('inf')"
    return repr(v)


def _resolves(module: str, qualname: str, f: Any) -> bool:
    """Whether ``module.qualname`` is ``f`` (so an import path names it)."""
    if "<" in qualname:
        return False
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        return False
    return obj is f or getattr(obj, "__wrapped__", None) is f


def _registered(f: Any, args: tuple[Any, ...], option: str) -> bool:
    """Whether ``f`` is an adapter (it says how to make it again) whose rule the default
    RuleSet holds (``rruletest.interop.register``): the rule the tester found by default."""
    if getattr(type(f), "__rruletest_call__", None) is None:
        return False
    from rruletest.rules import default_ruleset

    find = default_ruleset.rrule_info if option == "rrule_f" else default_ruleset.frule_info
    try:
        return find(f, *args) is not None
    except Exception:
        return False


def _module_holding(f: Any) -> tuple[str, str] | None:
    """A public module holding ``f``: ``(module, attribute)``.

    A function made by a decorator factory (an autograd primitive's ``qualname`` is
    ``primitive.<locals>.f_wrapped``, its ``__module__`` ``autograd.tracer``) is still
    importable as ``autograd.numpy.sin``. The modules of ``f``'s own package come first, then
    any other (``cube = primitive(_cube)`` in a user's module); its own name is preferred,
    then any other public one (``autograd.scipy.special.digamma`` is a primitive named
    ``psi``), then a private one (``autograd.numpy.numpy_wrapper._primitive_mean`` is the only
    name of ``mean``'s primitive): each runs in a fresh interpreter, where the bare name would
    not. Shorter module paths first.
    """
    name, module = getattr(f, "__name__", None), getattr(f, "__module__", None)
    top = module.split(".")[0] if isinstance(module, str) else None
    best: tuple[tuple[bool, bool, bool, int, int], str, str] | None = None
    for m, mod in list(sys.modules.items()):
        if m == "__main__" or any(part.startswith("_") for part in m.split(".")):
            continue
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for attr, value in items:
            if value is f and isinstance(attr, str) and attr.isidentifier():
                own = m == top or m.startswith(f"{top}.")
                rank = (attr.startswith("_"), not own, attr != name, m.count("."), len(m))
                if best is None or rank < best[0]:
                    best = (rank, m, attr)
    return None if best is None else (best[1], best[2])


def _global_name(obj: Any) -> tuple[str, str] | None:
    """A module global holding ``obj`` (a RuleSet whose method was passed): (module, name).
    The modules its rules were registered from are looked at first, then every module."""
    tables = [getattr(obj, t, None) for t in ("_rrules", "_frules", "_scalars")]
    first = {
        str(getattr(info, "module", ""))
        for t in tables
        if isinstance(t, dict)
        for info in t.values()
    }
    candidates = [(m, sys.modules.get(m)) for m in sorted(first)] + list(sys.modules.items())
    for module_name, module in candidates:
        if module is None or module_name == "__main__" or module_name.startswith("_"):
            continue
        try:
            found = [k for k, v in vars(module).items() if v is obj and not k.startswith("_")]
        except TypeError:
            continue
        if found:
            return module_name, found[0]
    return None


def _local_name(obj: Any) -> str | None:
    """The name of a variable holding ``obj`` in the caller's code (the first frame outside
    rruletest): the line then needs that variable defined as it is there."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] != "rruletest":
            for scope in (frame.f_locals, frame.f_globals):
                found = [k for k, v in scope.items() if v is obj and k.isidentifier()]
                if found:
                    return str(found[0])
        frame = frame.f_back
    return None


#: The rule options each tester takes; one not given means the default RuleSet's rule is used.
def _import_rule_modules(
    w: _Writer, tester: str, f: Any, args: tuple[Any, ...], options: dict[str, Any]
) -> None:
    """Import in the line the modules that registered the rules the tester found: a fresh
    process has no registration, so ``test_scalar(np.tan, 1.0)`` of a rule registered by
    ``rruletest.rulesets.numpy`` (or a user's ``mypkg.rules``) would find no rule at all.
    Rules registered by ``__main__`` (a script, a docs page) cannot be imported: the line is
    run where they are defined."""
    for module in rule_modules(tester, f, args, options):
        if module != "__main__" and module in sys.modules:
            w.imports[f"import {module}"] = None


def _tolerance_defaults(w: _Writer, options: dict[str, Any]) -> list[str]:
    """The statement that sets the default tolerances in force where they are not the
    library's (``fresh_process.tolerance_arguments``), with its import."""
    if "rtol" in options and "atol" in options:
        return []
    found = tolerance_arguments()
    if found is None:
        return []
    table, uniform = found
    w.imports["from rruletest.tolerances import override_default_tolerances"] = None
    args = [w.expr(table)] if table else []
    args += [f"{k}={w.expr(v)}" for k, v in uniform.items()]
    # held by a name: a context manager nothing refers to is collected, and its exit undoes it
    return [f"(_tolerances := override_default_tolerances({', '.join(args)})).__enter__()"]


def _path_entries(w: _Writer) -> list[str]:
    """``sys.path`` entries for the modules the line imports (``fresh_process.path_entries``)."""
    modules = []
    for statement in w.imports:
        words = statement.split()
        if words[0] in ("import", "from") and words[1].split(".")[0] not in ("numpy", "rruletest"):
            modules.append(words[1])
    return [f"sys.path.insert(0, {d!r})" for d in path_entries(modules)]


def _save(w: _Writer) -> list[str]:
    """Save the collected arrays and pickled values; the statements that load them."""
    loads: list[str] = []
    folder = save_dir()
    folder.mkdir(parents=True, exist_ok=True)
    if w.arrays:
        buf = io.BytesIO()
        np.savez(buf, **w.arrays)  # type: ignore[arg-type]
        data = buf.getvalue()
        path = folder / f"reproduce-{hashlib.sha1(data).hexdigest()[:12]}.npz"
        if not path.exists():
            path.write_bytes(data)
        w.imports["import numpy as np"] = None
        loads.append(f"_saved = np.load({str(path)!r})")
    if w.pickled:
        data = pickle.dumps(w.pickled)
        path = folder / f"reproduce-{hashlib.sha1(data).hexdigest()[:12]}.pkl"
        if not path.exists():
            path.write_bytes(data)
        w.imports["import pickle"] = None
        loads.append(f"_pickled = pickle.loads(open({str(path)!r}, 'rb').read())")
    return loads


def reproduce_line(
    tester: str,
    f: Any,
    args: tuple[Any, ...],
    fkwargs: dict[str, Any],
    options: dict[str, Any],
    seed: int | np.random.Generator | None,
) -> str:
    """The statement that repeats a tester call: ``tester(f, *args, fkwargs=..., **options,
    rng=seed)`` with its imports and loads. ``options`` are the keyword options the caller
    gave (those left at their defaults are not passed). ``seed`` is an int seed, or a copy
    of the ``Generator`` passed as ``rng`` as it was on entry (saved with the inputs)."""
    w = _Writer()
    own = {"test_rrule": "rrule_f", "test_frule": "frule_f"}.get(tester)
    if own and own not in options and _registered(f, args, own):
        # An adapter's rule found where it was registered (the gate's default RuleSet) is its
        # own: the line passes it, since a fresh process has no registration.
        rule = getattr(f, own[:-2], None)
        if rule is not None:
            options = {**options, own: rule}
    parts = [w.expr(f), *(w.expr(a) for a in args)]
    _import_rule_modules(w, tester, f, args, options)
    if fkwargs:
        parts.append(f"fkwargs={w.expr(dict(fkwargs))}")
    parts += [f"{k}={w.expr(v)}" for k, v in options.items()]
    if isinstance(seed, np.random.Generator):
        parts.append(f"rng={w.expr(seed)}")
    elif seed is not None:
        parts.append(f"rng={seed}")
    call = f"{tester}({', '.join(parts)})"
    defaults = _tolerance_defaults(w, options)
    try:
        loads = _save(w)
    except OSError as exc:
        loads = []
        w.missing.append(f"the saved inputs ({exc})")
    paths = _path_entries(w)
    imports = [*w.imports, f"from rruletest import {tester}"]
    if paths:
        imports = ["import sys", *paths, *imports]
    line = "; ".join([*imports, *loads, *defaults, call])
    if seed is None:
        line += "  # with the same numpy Generator state (pass an int rng=seed to reproduce)"
    if w.missing:
        line += f"  # needs {', '.join(dict.fromkeys(w.missing))} defined as in the test"
    return line
