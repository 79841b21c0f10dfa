"""Does a tangent fit its primal? Type, shape and dtype, walked through structures.

This is the Python counterpart of Julia's inference check: a pullback that returns a float64
cotangent for a float32 argument, a broadcast-shaped cotangent, a complex cotangent for a real
input or a list where a tuple belongs is a failure with a path, never an exception.

>>> import numpy as np
>>> [m.message for m in fit_problems(np.ones((3, 1)), np.ones((3, 4)), "args[1]")]
['args[1]: shape (3, 4) for a primal of shape (3, 1)']
>>> fit_problems(np.ones(2, np.float32), np.ones(2, np.float32), "args[0]")
[]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rruletest.errors import Mismatch
from rruletest.tangents import AbstractZero, Tangent, Thunk, unthunk
from rruletest.testers._check import Check
from rruletest.walk import Element, Path, Step, children, render_path

__all__ = ["computation_precision", "fit_problems", "precision_of"]

_UNBROADCAST_HINT = (
    "a cotangent must have its argument's shape: sum the broadcast dimensions back with "
    "unbroadcast(x, xbar)"
)


def precision_of(x: Any) -> int | None:
    """Bits per real component of a numeric value's dtype; None for Python scalars (weak)."""
    if isinstance(x, np.ndarray | np.generic):
        return _dtype_precision(x.dtype)
    return None


def _dtype_precision(dt: np.dtype[Any]) -> int | None:
    """Bits per real component of a float or complex dtype; None for other dtypes."""
    if dt.kind == "f":
        return int(dt.itemsize * 8)
    if dt.kind == "c":
        return int(dt.itemsize * 4)
    return None


def _primal_precision(x: Any) -> int:
    p = precision_of(x)
    return 64 if p is None else p


@dataclass(frozen=True)
class _Where:
    """A place inside the checked value: the root text and the walk steps below it."""

    root: str
    steps: Path = ()

    def child(self, step: Step) -> _Where:
        return _Where(self.root, (*self.steps, step))

    def __str__(self) -> str:
        return render_path(self.root, self.steps)


def _problem(
    path: _Where, text: str, actual: Any, expected: Any, hint: str | None = None
) -> Mismatch:
    where = str(path)
    return Mismatch(
        check=Check.TYPE,
        path=where,
        actual=actual,
        expected=expected,
        message=f"{where}: {text}",
        hint=hint,
        steps=path.steps,
    )


def _tname(t: Any) -> str:
    if isinstance(t, np.ndarray):
        return f"ndarray {t.dtype}{list(t.shape)}"
    if isinstance(t, Tangent):
        return f"Tangent({t.primal_type.__name__}, ...)"
    return type(t).__name__


def computation_precision(primals: Any) -> int | None:
    """The precision numpy computes in with these arguments: that of the result type of their
    float and complex arrays and numpy scalars (inside tuples, lists and dicts too), None when
    they have none. A Python number is weak (NEP 50): ``x32 ** 2.5`` is float32, so the
    cotangent of ``2.5`` may be float32 too.

    >>> computation_precision((np.ones(2, np.float32), 2.5)), computation_precision((2.5,))
    (32, None)
    """
    dtypes: list[np.dtype[Any]] = []

    def visit(x: Any, depth: int) -> None:
        if isinstance(x, np.ndarray | np.generic):
            if x.dtype.kind in "fc":
                dtypes.append(x.dtype)
        elif depth < 8 and isinstance(x, tuple | list):
            for item in x:
                visit(item, depth + 1)
        elif depth < 8 and isinstance(x, Mapping):
            for item in x.values():
                visit(item, depth + 1)

    visit(primals, 0)
    return _dtype_precision(np.result_type(*dtypes)) if dtypes else None


def fit_problems(
    primal: Any,
    tangent: Any,
    path: str,
    *,
    kind: str = "cotangent",
    steps: Path = (),
    weak_precision: int | None = None,
) -> list[Mismatch]:
    """Every way ``tangent`` fails to be a (co)tangent of ``primal``; empty if it fits.

    ``path`` is the root the places are rendered from (``args``, ``ydot``), ``steps`` the
    walk steps from it to ``primal``; each problem carries its own steps below the root.
    ``weak_precision`` is the precision of the computation (``computation_precision`` of the
    arguments): the (co)tangent of a Python number may have it, besides float64.
    """
    tp, tt = type(primal), type(tangent)
    if (
        weak_precision is not None
        and tp in (float, complex)
        and isinstance(tangent, np.floating if tp is float else np.complexfloating)
        and precision_of(tangent) == weak_precision
    ):
        return []  # a Python number computed with float32 arrays: a float32 cotangent fits
    if tp in _NUMBER_TYPES and tt in _NUMBER_TYPES and _number_fits(tp, tt):
        return []  # a number for a number, of a kind that fits (the usual case)
    if (
        tp is np.ndarray
        and tt is np.ndarray
        and primal.dtype.kind in "fc"
        and tangent.dtype == primal.dtype
        and tangent.shape == primal.shape
    ):
        return []  # an array of the primal's own dtype and shape: fits
    out: list[Mismatch] = []
    _fit(primal, tangent, _Where(path, tuple(steps)), kind, out, set())
    return out


# The exact number types whose fit depends on their types alone (``_fit_scalar``).
_NUMBER_TYPES = frozenset(
    {float, complex, np.float64, np.float32, np.float16, np.complex128, np.complex64}
)


_FITS: dict[tuple[type, type], bool] = {}


def _number_fits(primal_type: type, tangent_type: type) -> bool:
    """Whether a ``tangent_type`` number fits a ``primal_type`` one: the general check run
    once on two such numbers (its verdict depends on their types, not their values)."""
    key = (primal_type, tangent_type)
    found = _FITS.get(key)
    if found is None:
        out: list[Mismatch] = []
        _fit(primal_type(1.0), tangent_type(1.0), _Where("x"), "tangent", out, set())
        found = _FITS[key] = not out
    return found


def _fit(
    primal: Any, tangent: Any, path: _Where, kind: str, out: list[Mismatch], seen: set[int]
) -> None:
    if isinstance(tangent, Thunk):
        try:
            tangent = unthunk(tangent)
        except Exception as exc:  # reported as a problem of the rule, never leaked
            out.append(_problem(path, f"unthunking the {kind} raised {exc!r}", exc, "a value"))
            return
    if isinstance(tangent, AbstractZero):
        return
    if isinstance(primal, bool | int | str | bytes | np.bool_ | np.integer) or primal is None:
        out.append(
            _problem(
                path,
                f"{_tname(tangent)} for a non-differentiable {type(primal).__name__} "
                "(its tangent must be NoTangent())",
                tangent,
                "NoTangent()",
            )
        )
        return
    if isinstance(primal, float | np.floating | complex | np.complexfloating):
        _fit_scalar(primal, tangent, path, kind, out)
        return
    if isinstance(primal, np.ndarray) and primal.dtype.kind in "fc":
        _fit_array(primal, tangent, path, kind, out)
        return
    if isinstance(primal, np.ndarray) and primal.dtype.kind != "O":
        out.append(
            _problem(
                path,
                f"{_tname(tangent)} for a {primal.dtype} array (use NoTangent())",
                tangent,
                "NoTangent()",
            )
        )
        return
    if id(primal) in seen:
        return
    seen.add(id(primal))
    try:
        _fit_structure(primal, tangent, path, kind, out, seen)
    finally:
        seen.discard(id(primal))


def _fit_scalar(primal: Any, t: Any, path: _Where, kind: str, out: list[Mismatch]) -> None:
    real = not isinstance(primal, complex | np.complexfloating)
    if isinstance(t, np.ndarray):
        out.append(
            _problem(
                path,
                f"ndarray of shape {t.shape} for a scalar primal (return a scalar)",
                t,
                "a scalar",
            )
        )
        return
    if isinstance(t, bool | np.bool_) or not isinstance(t, int | float | complex | np.number):
        out.append(
            _problem(
                path,
                f"{_tname(t)} for a {type(primal).__name__} primal (return a number)",
                t,
                "a number",
            )
        )
        return
    if real and isinstance(t, complex | np.complexfloating):
        out.append(
            _problem(
                path,
                f"complex {kind} {t!r} for a real primal (the {kind} of a real input "
                "is real: take .real)",
                t,
                "a real number",
            )
        )
        return
    _check_precision(primal, t, path, kind, out)


def _check_precision(primal: Any, t: Any, path: _Where, kind: str, out: list[Mismatch]) -> None:
    tp = precision_of(t)
    if tp is None:
        return
    if isinstance(t, np.ndarray | np.generic) and t.dtype.kind not in "fc":
        out.append(
            _problem(
                path,
                f"dtype {t.dtype} for a {np.result_type(primal)} primal "
                f"(a {kind} of floats is floats)",
                t.dtype,
                np.result_type(primal),
            )
        )
        return
    pp = _primal_precision(primal)
    if tp != pp:
        want = np.result_type(primal)
        real_dtype = np.dtype(f"f{pp // 8}")
        out.append(
            _problem(
                path,
                f"dtype {t.dtype} for a {want} primal (a {kind} keeps its primal's precision: "
                f"cast with .astype(np.{real_dtype if t.dtype.kind == 'f' else want}))",
                t.dtype,
                want,
            )
        )


def _fit_array(primal: np.ndarray, t: Any, path: _Where, kind: str, out: list[Mismatch]) -> None:
    real = primal.dtype.kind == "f"
    if isinstance(t, np.generic) and primal.ndim == 0:
        t = np.asarray(t)
    if not isinstance(t, np.ndarray):
        out.append(
            _problem(
                path,
                f"{_tname(t)} for an ndarray primal of shape {primal.shape} "
                f"(return an ndarray of that shape)",
                t,
                "an ndarray",
            )
        )
        return
    if t.shape != primal.shape:
        hint = None
        try:
            if np.broadcast_shapes(t.shape, primal.shape) == t.shape:
                hint = _UNBROADCAST_HINT
        except ValueError:
            pass
        out.append(
            _problem(
                path,
                f"shape {t.shape} for a primal of shape {primal.shape}",
                t.shape,
                primal.shape,
                hint,
            )
        )
        return
    if t.dtype.kind == "O":
        # An array of tangents (numbers, zeros, thunks): element by element, at most 5.
        for idx in np.ndindex(t.shape):
            elem = unthunk(t[idx])
            where = path.child(Element(idx))
            if isinstance(elem, int | np.integer) and not isinstance(elem, bool | np.bool_):
                out.append(
                    _problem(
                        where,
                        f"integer {elem!r} for a {primal.dtype} element (a {kind} of floats is "
                        "floats)",
                        elem,
                        primal.dtype,
                    )
                )
            elif not isinstance(elem, AbstractZero):
                _fit_scalar(primal[idx], elem, where, kind, out)
            if len(out) >= 5:
                return
        return
    if t.dtype.kind not in "fc":  # integers, booleans: not a float array's tangent
        out.append(
            _problem(
                path,
                f"dtype {t.dtype} for a {primal.dtype} primal (a {kind} of a float array is a "
                f"float array of its dtype: np.asarray(..., dtype=np.{primal.dtype}))",
                t.dtype,
                primal.dtype,
            )
        )
        return
    if real and t.dtype.kind == "c":
        out.append(
            _problem(
                path,
                f"complex dtype {t.dtype} for a real {primal.dtype} primal (the "
                f"{kind} of a real input is real: take .real)",
                t.dtype,
                primal.dtype,
            )
        )
        return
    _check_precision(primal, t, path, kind, out)


def _known(x: Any) -> bool:
    """The containers whose tangents are checked field by field (others: anything goes)."""
    if isinstance(x, Tangent | tuple | list | Mapping | np.ndarray):
        return True
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def _fields_of(x: Any) -> dict[Any, tuple[Step, Any]] | None:
    """A container's children by key (with their walk steps), None when not looked into."""
    if not _known(x):
        return None
    kids = children(x)
    return None if kids is None else {step.key: (step, v) for step, v in kids}


def _natural_fields(primal: Any, t: Any) -> dict[Any, tuple[Step, Any]] | None:
    """The fields of a natural (non-Tangent) tangent ``t`` of ``primal``, None if unfit."""
    if isinstance(primal, np.ndarray):
        if isinstance(t, np.ndarray) and t.shape == primal.shape:
            return {idx: (Element(idx), t[idx]) for idx in np.ndindex(t.shape)}
        return None
    if isinstance(primal, tuple | list) and type(t) is type(primal) and len(t) == len(primal):
        return _fields_of(t)
    if isinstance(primal, Mapping) and isinstance(t, Mapping):
        return _fields_of(t)
    if dataclasses.is_dataclass(primal) and type(t) is type(primal):
        return _fields_of(t)
    return None


def _fit_structure(
    primal: Any, t: Any, path: _Where, kind: str, out: list[Mismatch], seen: set[int]
) -> None:
    pfields = _fields_of(primal)
    if pfields is None:  # a function or an object we do not look into: anything goes
        return
    if isinstance(t, Tangent):
        ptype = type(primal) if not isinstance(primal, Tangent) else primal.primal_type
        if not issubclass(ptype, t.primal_type):
            out.append(
                _problem(
                    path,
                    f"{_tname(t)} for a primal of type {ptype.__name__}",
                    t,
                    f"Tangent({ptype.__name__}, ...)",
                )
            )
            return
        tfields = _fields_of(t) or {}
    else:
        nat = _natural_fields(primal, t)
        if nat is None:
            name = type(primal).__name__
            out.append(
                _problem(
                    path,
                    f"{_tname(t)} for a primal of type {name} (return "
                    f"Tangent({name}, ...), a zero, or a {name} of tangents)",
                    t,
                    f"Tangent({name}, ...)",
                )
            )
            return
        tfields = nat
    for key, (step, value) in tfields.items():
        if key not in pfields:
            where = path.child(step)
            out.append(
                _problem(where, f"a {kind} for a field the primal does not have", value, "no field")
            )
            continue
        pstep, pvalue = pfields[key]
        _fit(pvalue, value, path.child(pstep), kind, out, seen)
