"""The tangent of ``f`` itself: callable objects whose fields hold floats.

A rule's function can carry numbers of its own: a dataclass with ``__call__`` and float
fields, ``functools.partial`` over arrays, a bound method of an object holding arrays, a
closure over arrays (only when the user marks it with ``with_tangent(f, df)``: a closure's
cells are otherwise taken as constants). Such an ``f`` has a tangent, a ``Tangent`` of its
fields (``Tangent(Scale, k=...)``; ``Tangent(partial, args=(...), keywords={...})`` for a
partial; a ``Tangent`` of the object for a bound method; ``Tangent(function, name=...)`` of
the cell names for a closure), and the testers check it like an argument's:

- ``test_rrule``: the ``fbar`` the pullback returns against the numerical vjp over the
  fields (a zero ``fbar`` counts as zeros);
- ``test_frule``: ``ydot`` against the numerical jvp that moves the fields along ``fdot``
  (the given one, else a random one) as well as the arguments.

>>> import dataclasses
>>> @dataclasses.dataclass
... class Scale:
...     k: float
...     def __call__(self, x):
...         return self.k * x
>>> fields = fields_of(Scale(2.0))
>>> fields.values, fields.rebuild({"k": 3.0})(1.0)
({'k': 2.0}, 3.0)
>>> fields_of(abs) is None
True
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rruletest.errors import Mismatch
from rruletest.finite_differences import jvp_estimate, to_vec
from rruletest.tangents import ZERO_TANGENT, AbstractZero, NoTangent, Tangent, unthunk
from rruletest.testers._args import Arg, describe, has_coordinates
from rruletest.testers._checks import compare
from rruletest.testers._constrained import Chart, bounded, declared, derivative_at_zero
from rruletest.testers._dense import dense_vjp
from rruletest.testers._fd_inputs import fd_failure, fdm_for_domain, recorded, widen
from rruletest.testers._fit import fit_problems
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._report import Check
from rruletest.testers._setup import Setup, domain_for
from rruletest.testers._snapshot import nonzero
from rruletest.walk import children, render_path

__all__ = [
    "FFields",
    "check_f_cotangent",
    "check_jvp_with_f",
    "describe_tangent",
    "f_tangent",
    "fields_of",
    "fit_f_cotangent",
    "random_fdot",
]


@dataclass(frozen=True)
class FFields:
    """The differentiable fields of a callable ``f``: their ``values`` by name, the type a
    ``Tangent`` of ``f`` names, and ``rebuild(values)``, the same callable with new values."""

    primal_type: type
    values: dict[str, Any]
    rebuild: Callable[[dict[str, Any]], Any]


def _object_fields(obj: Any) -> tuple[dict[str, Any], Callable[[dict[str, Any]], Any]] | None:
    """The fields with coordinates of a dataclass or a plain object, and how to rebuild it."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = [fl.name for fl in dataclasses.fields(obj) if fl.init]
        values = {n: getattr(obj, n) for n in names if has_coordinates(getattr(obj, n))}
        return values, lambda new: dataclasses.replace(obj, **new)
    attrs = getattr(obj, "__dict__", None)
    if not isinstance(attrs, dict) or isinstance(obj, type | types.ModuleType):
        return None
    values = {k: v for k, v in attrs.items() if has_coordinates(v)}

    def rebuild(new: dict[str, Any]) -> Any:
        other = copy.copy(obj)
        for k, v in new.items():
            setattr(other, k, v)
        return other

    return values, rebuild


def fields_of(f: Any, marked: bool = False) -> FFields | None:
    """``f``'s differentiable fields, or None when it has none (a plain function, a ufunc; a
    closure unless ``marked``)."""
    if type(f) is np.ufunc or type(f) is types.BuiltinFunctionType:
        return None  # no fields (what the checks below find for them)
    if isinstance(f, functools.partial):
        values = {"args": f.args, "keywords": dict(f.keywords)}
        if not has_coordinates(values):
            return None
        func = f.func
        return FFields(
            functools.partial,
            values,
            lambda v: functools.partial(func, *v["args"], **v["keywords"]),
        )
    if isinstance(f, types.MethodType):
        found = _object_fields(f.__self__)
        if found is None or not found[0]:
            return None
        method, (values, rebuild_obj) = f.__func__, found
        return FFields(type(f.__self__), values, lambda v: types.MethodType(method, rebuild_obj(v)))
    if isinstance(f, types.FunctionType):
        if not marked or not f.__closure__:
            return None
        names = f.__code__.co_freevars
        cells = dict(zip(names, (c.cell_contents for c in f.__closure__), strict=True))
        values = {k: v for k, v in cells.items() if has_coordinates(v)}
        if not values:
            return None

        def closure(new: dict[str, Any]) -> Any:
            cs = tuple(types.CellType(new.get(n, cells[n])) for n in names)
            return types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, cs)

        return FFields(types.FunctionType, values, closure)
    if dataclasses.is_dataclass(f) and not isinstance(f, type):
        found = _object_fields(f)
        if found is None or not found[0]:
            return None
        return FFields(type(f), found[0], found[1])
    return None


def f_tangent(s: Setup) -> FFields | None:
    """The fields of the tested ``f`` when its tangent is checked (not for ``with_tangent(f,
    NoTangent())``; a closure only when given ``with_tangent``)."""
    if isinstance(s.fdot, NoTangent):
        return None
    return fields_of(s.f, marked=s.fdot is not None)


def _as_fields(ff: FFields, t: Any) -> dict[str, Any]:
    """A tangent of ``f`` as a dict of its fields (a zero gives zeros; missing fields too)."""
    t = unthunk(t)
    backing = t.backing if isinstance(t, Tangent) and isinstance(t.backing, dict) else {}
    return {k: unthunk(backing.get(k, ZERO_TANGENT)) for k in ff.values}


def fit_f_cotangent(ff: FFields, fbar: Any) -> list[Mismatch]:
    """Every way ``fbar`` fails to be the cotangent of a callable with float fields: it must be
    a zero or a ``Tangent`` of ``ff.primal_type`` whose fields fit ``f``'s (a missing field is
    zero); empty if it fits."""
    try:
        t = unthunk(fbar)
    except Exception as exc:  # reported as a problem of the rule, never leaked
        return [Mismatch(Check.TYPE, "f", exc, "a value", f"f: unthunking fbar raised {exc!r}")]
    if isinstance(t, AbstractZero):
        return []
    name, names = ff.primal_type.__name__, ", ".join(ff.values)
    if not isinstance(t, Tangent) or not issubclass(ff.primal_type, t.primal_type):
        want = f"Tangent({name}, ...)"
        text = (
            f"f: {describe_tangent(t)} for a {name} with float fields ({names}); return {want} "
            "with their cotangents, a zero, or pass with_tangent(f, NoTangent()) if they are "
            "constants"
        )
        return [Mismatch(Check.TYPE, "f", t, want, text)]
    out: list[Mismatch] = []
    for step, value in children(t) or []:
        if step.key in ff.values:
            out += fit_problems(ff.values[step.key], value, "f", steps=(step,))
        elif nonzero(value):
            where = render_path("f", (step,))
            text = f"{where}: a cotangent for a field that is not one of f's float fields ({names})"
            out.append(Mismatch(Check.TYPE, where, value, "no field", text, steps=(step,)))
    return out


def describe_tangent(t: Any) -> str:
    """``describe(t)``, naming the primal type of a ``Tangent``."""
    return f"Tangent({t.primal_type.__name__}, ...)" if isinstance(t, Tangent) else describe(t)


def _g(s: Setup, ff: FFields, live: Sequence[int]) -> Callable[..., Any]:
    """``f`` as a function of its fields' values and the arguments at positions ``live``."""
    fixed, kwargs = list(s.primals), s.kwargs

    def g(values: dict[str, Any], *xs: Any) -> Any:
        full = list(fixed)
        for i, x in zip(live, xs, strict=True):
            full[i] = x
        return ff.rebuild(values)(*full, **kwargs())

    return recorded(g)


def check_f_cotangent(s: Setup, fbar: Any, ybar: Any, y_ref: Any, rule_f: Any) -> None:
    """Check: ``fbar`` matches the numerical vjp over ``f``'s fields."""
    ff = f_tangent(s)
    if ff is None or isinstance(unthunk(ybar), AbstractZero):
        return
    if not isinstance(unthunk(fbar), AbstractZero | Tangent):
        return  # reported by the type check
    report, (rtol, atol) = s.report, s.tolerances(y_ref)
    domain, _ = domain_for(s, rule_f)
    fdm = fdm_for_domain(s.fdm, domain, s.primals)
    g = _g(s, ff, [])
    try:
        (est,) = dense_vjp(fdm, g, [ff.values], ybar, y_ref)
    except Exception as exc:
        fd_failure(report, exc, "register_rrule", g)
        return
    actual = Tangent(ff.primal_type, **_as_fields(ff, fbar))
    expected = Tangent(ff.primal_type, **est.value)
    found = compare(
        report,
        Check.NUMERIC,
        "f: the cotangent of f's own fields differs from the numerical vjp over them",
        actual,
        expected,
        "f",
        rtol,
        widen(atol, _max_error(est.error)),
    )
    report.measured(actual, expected)
    if found and isinstance(unthunk(fbar), AbstractZero):
        name = ff.primal_type.__name__
        report.note(
            f"f: a {name} with float fields ({', '.join(ff.values)}), and the pullback returned "
            f"{unthunk(fbar)!r} for it: return Tangent({name}, ...) with their cotangents, or "
            "pass with_tangent(f, NoTangent()) if they are constants"
        )


def _max_error(error: Any) -> float:
    leaves = [np.max(np.abs(np.asarray(v))) for v in _leaves(error) if np.size(v)]
    return float(max(leaves, default=0.0))


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in _leaves(v)]
    if isinstance(x, tuple | list):
        return [leaf for v in x for leaf in _leaves(v)]
    return [] if isinstance(x, AbstractZero) or x is None else [x]


def random_fdot(s: Setup) -> Any:
    """A random tangent of ``f``'s fields, or None when ``f`` has none."""
    ff = f_tangent(s)
    if ff is None:
        return None
    return Tangent(ff.primal_type, **rand_tangent(s.gen, ff.values))


def check_jvp_with_f(
    s: Setup, ydot: Any, fdot: Any, dots: list[Any], y_ref: Any, rule_f: Any
) -> bool:
    """Check: ``ydot`` matches the numerical jvp moving ``f``'s fields along ``fdot`` and the
    arguments along ``dots``. False when ``f`` has no fields to move (the caller checks)."""
    ff = f_tangent(s)
    if ff is None or isinstance(unthunk(fdot), AbstractZero) or fdot is None:
        return False
    report, (rtol, atol) = s.report, s.tolerances(y_ref)
    live = [a for a in s.args if a.numeric]
    domain, _ = domain_for(s, rule_f)
    fdm = fdm_for_domain(s.fdm, domain, s.primals)
    g = _g(s, ff, [a.index for a in live])
    mode = "finite-difference jvp moving f's fields and the arguments"
    try:
        if declared(live):  # constrained arguments move in their sets, f's fields in a line
            mode += " (along the declared spaces)"
            value, error, fdm = _jvp_in_spaces(fdm, g, ff, fdot, live, dots, y_ref)
        else:
            pairs = [(ff.values, _as_fields(ff, fdot))]
            pairs += [(a.primal, d) for a, d in zip(live, dots, strict=True)]
            est = jvp_estimate(fdm, g, *pairs)
            value, error = est.value, est.error
    except Exception as exc:
        fd_failure(report, exc, "register_frule", g)
        return True
    report.reference(mode, fdm)
    compare(
        report,
        Check.NUMERIC,
        f"ydot: the output tangent differs from the numerical jvp ({mode})",
        ydot,
        value,
        "ydot",
        rtol,
        widen(atol, error),
    )
    report.measured(ydot, value)
    return True


def _jvp_in_spaces(
    fdm: Any, g: Callable[..., Any], ff: FFields, fdot: Any, live: Sequence[Arg],
    dots: Sequence[Any], y: Any,
) -> tuple[Any, Any, Any]:  # fmt: skip
    """The jvp moving ``f``'s fields along ``fdot`` and the arguments in their spaces."""
    chart = Chart(live)
    cdot = chart.coords(dots)
    fdm = bounded(fdm, chart.room([chart.tangent(k, cdot) for k in range(len(live))]))
    fv, fback = to_vec(ff.values, path="f")
    fdv = fback.tangent_vec(_as_fields(ff, fdot), "fdot")
    value, error = derivative_at_zero(
        fdm, lambda t: g(fback(fv + t * fdv), *chart.points(t * cdot)), y, chart.dtype
    )
    return value, error, fdm
