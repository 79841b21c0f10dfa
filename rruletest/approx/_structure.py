"""The container part of ``rruletest.approx``: Tangents, sequences, mappings, dataclasses.

Each method hands matching children of two containers to ``self.walk``, extending the path by
one ``rruletest.walk`` step (``Index``, ``Attr``, ``Key``, ``Element``: ``[2]``, ``.name``,
``['key']``, ``[1, 3]``) and picking each child's tolerance out of a tolerance structure when
the caller gave one. Differences in the containers themselves (lengths, keys, fields, types)
are reported here; the leaves are compared by the walker. ``walk`` schedules a child rather
than comparing it at once, so nesting depth costs no recursion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from rruletest.approx import _render as r
from rruletest.approx._kinds import kind, type_hints
from rruletest.errors import Mismatch
from rruletest.tangents import ZERO_TANGENT, AbstractZero, Tangent
from rruletest.tangents.fields import declared_fields
from rruletest.walk import Attr, Index, Key, Path, Step, children, is_registered

__all__ = ["StructureMixin", "index_tol", "sub_tolerance"]

_MISSING = object()


def sub_tolerance(tol: Any, key: Any, pos: int | None = None) -> Any:
    """The tolerance for one child: picked from a structure, or the same number/array."""
    if tol is None or isinstance(tol, float | int | np.number):
        return tol
    if isinstance(tol, np.ndarray):
        if tol.dtype == object and isinstance(key, tuple) and tol.ndim == len(key):
            return tol[key]
        return tol
    if isinstance(tol, AbstractZero):
        return None
    if isinstance(tol, Tangent):
        if isinstance(tol.backing, tuple):
            index = key if isinstance(key, int) else pos
            return None if index is None else tol[index]
        return tol[key] if _stored(tol, key) else None
    if isinstance(tol, Mapping):
        return tol.get(key)
    if isinstance(tol, tuple | list):
        if isinstance(key, str) and hasattr(tol, "_fields"):
            return getattr(tol, key, None)
        index = key if isinstance(key, int) else pos
        return tol[index] if index is not None and 0 <= index < len(tol) else None
    if dataclasses.is_dataclass(tol) and isinstance(key, str):
        return getattr(tol, key, None)
    return tol


def _stored(t: Tangent, key: Any) -> bool:
    """Whether a Tangent stores a field (positions for tuple-backed Tangents)."""
    if isinstance(t.backing, tuple):
        return isinstance(key, int) and 0 <= key < len(t.backing)
    return key in t.backing


def _tangent_steps(*tangents: Tangent) -> Iterator[tuple[Step, Any, int | None]]:
    """``(path step, key, position)`` for the union of the fields of Tangents of one type."""
    t = tangents[0]
    ptype = t.primal_type
    if isinstance(t.backing, tuple):
        for i in range(max(len(x.backing) for x in tangents)):
            yield Index(i), i, i
        return
    declared = declared_fields(ptype) or ()
    keys = dict.fromkeys([*declared, *(k for x in tangents for k in x.backing)])
    mapping = issubclass(ptype, Mapping | dict)
    for pos, key in enumerate(keys):
        if any(_stored(x, key) for x in tangents) or key in declared:
            yield (Key(key) if mapping else Attr(key)), key, pos


def _fields(x: Any) -> tuple[str, ...]:
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return tuple(getattr(type(x), "_fields", ()))
    return tuple(f.name for f in dataclasses.fields(x))


class StructureMixin:
    """Container comparisons; mixed into the walker, which provides ``walk`` and ``report``."""

    strict: bool
    found: list[Mismatch]

    def walk(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        raise NotImplementedError  # pragma: no cover - provided by the walker

    def report(
        self,
        check: str,
        path: Path,
        summary: str,
        actual: Any,
        expected: Any,
        hints: list[str] | tuple[str, ...] = (),
        **extra: Any,
    ) -> None:
        raise NotImplementedError  # pragma: no cover - provided by the walker

    def matches(self, a: Any, e: Any, rtol: Any, atol: Any) -> bool:
        raise NotImplementedError  # pragma: no cover - provided by the walker

    def _shift_hint(self, a: Any, e: Any, rtol: Any, atol: Any) -> str | None:
        """A hint when one element too few or too many, at either end, explains a length."""
        n_a, n_e = len(a), len(e)
        if abs(n_a - n_e) != 1:
            return None
        flat = [
            t if t is None or isinstance(t, float | int | np.ndarray) else None
            for t in (rtol, atol)
        ]
        if n_a < n_e:
            if self.matches(list(a), list(e)[1:], *flat):
                return (
                    "actual matches expected without its first element: is that one missing? "
                    "(a pullback returns the tangent for f first)"
                )
            if self.matches(list(a), list(e)[:-1], *flat):
                return "actual matches expected without its last element: is that one missing?"
        else:
            if self.matches(list(a)[1:], list(e), *flat):
                return "actual matches expected after its first element: is that one extra?"
            if self.matches(list(a)[:-1], list(e), *flat):
                return "actual matches expected up to its last element: is that one extra?"
        return None

    def _child(
        self, a: Any, e: Any, path: Path, step: Step, rtol: Any, atol: Any, key: Any, pos: Any
    ) -> None:
        sub_r, sub_a = sub_tolerance(rtol, key, pos), sub_tolerance(atol, key, pos)
        self.walk(a, e, (*path, step), sub_r, sub_a)

    # -- Tangents ----------------------------------------------------------------------------
    def tangents(self, a: Tangent, e: Tangent, path: Path, rtol: Any, atol: Any) -> None:
        if a.primal_type is not e.primal_type:
            self.report("type", path, f"{r.describe(a)} where {r.describe(e)} was expected", a, e)
            return
        for step, key, pos in _tangent_steps(a, e):
            self._child(a._get(key), e._get(key), path, step, rtol, atol, key, pos)

    def tangent_natural(
        self, a: Any, e: Any, actual_is_tangent: bool, path: Path, rtol: Any, atol: Any
    ) -> None:
        t, v = (a, e) if actual_is_tangent else (e, a)
        ptype = t.primal_type
        mapping = issubclass(ptype, Mapping | dict)
        if not (type(v) is ptype or (mapping and isinstance(v, Mapping))):
            hints: list[str] = []
            if not actual_is_tangent and type(v) in (tuple, list) and ptype in (tuple, list):
                hints.append(f"return a {ptype.__name__}, not a {type(v).__name__}")
            if actual_is_tangent and isinstance(v, tuple | list | Mapping):
                hints.append(
                    f"a Tangent for a {type(v).__name__} must say so: Tangent("
                    f"{type(v).__name__}, ...), or return the {type(v).__name__} itself"
                )
            summary = f"{r.describe(a)} where {r.describe(e)} was expected"
            hints.extend(type_hints(a, e, kind(a), kind(e)))
            self.report("type", path, summary, a, e, hints)
            return

        def child(tv: Any, vv: Any, step: Step, key: Any, pos: Any) -> None:
            pair = (tv, vv) if actual_is_tangent else (vv, tv)
            self._child(*pair, path, step, rtol, atol, key, pos)

        side = "actual" if actual_is_tangent else "expected"
        if isinstance(t.backing, tuple):
            n_t, n_v = len(t.backing), len(v)
            if n_t > n_v:
                self.report(
                    "structure",
                    path,
                    f"the {side} Tangent({ptype.__name__}, ...) has {n_t} fields but the "
                    f"{ptype.__name__} it is compared with has {n_v}",
                    a,
                    e,
                )
            for i in range(n_v):
                child(t._get(i), v[i], Index(i), i, i)  # stored value: walk unthunks
        elif mapping:
            extra = [k for k in t.backing if k not in v]
            if extra:
                self.report(
                    "structure",
                    path,
                    f"the {side} Tangent has keys the {type(v).__name__} lacks: "
                    + ", ".join(r.safe_repr(k) for k in extra),
                    a,
                    e,
                )
            for pos, k in enumerate(v):
                child(t._get(k), v[k], Key(k), k, pos)
        else:
            # The value's own fields too: one the Tangent does not store is zero there, so a
            # plain object's attribute that no declaration names is compared with zero as well.
            fields = [*(declared_fields(ptype) or ()), *t.keys(), *(s.key for s, _ in _pairs(v))]
            names = dict.fromkeys(fields)
            own = _fields_of(v)
            for pos, name in enumerate(names):
                value = own.get(name, _MISSING) if own is not None else getattr(v, name, _MISSING)
                if value is _MISSING:
                    self.report(
                        "structure",
                        (*path, Attr(name)),
                        f"the {ptype.__name__} compared with the Tangent has no field {name!r}",
                        a,
                        e,
                    )
                    continue
                child(t._get(name), value, Attr(name), name, pos)

    # -- sequences, mappings, dataclasses ----------------------------------------------------
    def sequences(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        n_a, n_e = len(a), len(e)
        if n_a != n_e:
            shift = self._shift_hint(a, e, rtol, atol)
            self.report(
                "structure",
                path,
                f"{n_a} element{'s' * (n_a != 1)} where {n_e} {'were' if n_e != 1 else 'was'} "
                "expected",
                a,
                e,
                [shift] if shift else [],
                length=(n_a, n_e),
            )
            if shift:  # the elements are misaligned: comparing them pairwise would only add noise
                return
        for i in range(min(n_a, n_e)):
            self._child(a[i], e[i], path, Index(i), rtol, atol, i, i)

    def mixed_sequences(
        self, a: Any, e: Any, ka: str, ke: str, path: Path, rtol: Any, atol: Any
    ) -> None:
        if ka == ke == "namedtuple":
            fa, fe = _fields(a), _fields(e)
            if fa != fe:
                self.report(
                    "structure",
                    path,
                    f"{r.describe(a)} with fields ({', '.join(fa)}) where {r.describe(e)} with "
                    f"fields ({', '.join(fe)}) was expected",
                    a,
                    e,
                    ["field names matter: build the expected namedtuple type"],
                )
            elif type(a) is not type(e):
                self.report(
                    "type", path, f"{r.describe(a)} where {r.describe(e)} was expected", a, e
                )
            for pos, name in enumerate(fe):
                if name in fa:
                    self._child(
                        getattr(a, name),
                        getattr(e, name),
                        path,
                        Attr(name),
                        rtol,
                        atol,
                        name,
                        pos,
                    )
            return
        self.report(
            "type",
            path,
            f"{r.describe(a)} where {r.describe(e)} was expected",
            a,
            e,
            type_hints(a, e, ka, ke),
        )
        self.sequences(a, e, path, rtol, atol)

    def mappings(
        self, a: Mapping[Any, Any], e: Mapping[Any, Any], path: Path, rtol: Any, atol: Any
    ) -> None:
        # A key on one side only is zero on the other, as a Tangent's missing field is: a
        # natural dict cotangent may leave out an int entry's NoTangent() (or any zero).
        missing = [k for k in e if k not in a and not self._zero(e[k], rtol, atol, k)]
        unexpected = [k for k in a if k not in e and not self._zero(a[k], rtol, atol, k)]
        if missing or unexpected:
            parts = []
            if missing:
                parts.append("missing " + ", ".join(r.safe_repr(k) for k in missing))
            if unexpected:
                parts.append("unexpected " + ", ".join(r.safe_repr(k) for k in unexpected))
            self.report(
                "structure",
                path,
                "keys differ: " + "; ".join(parts),
                a,
                e,
                missing=missing,
                unexpected=unexpected,
            )
        for pos, k in enumerate(e):
            if k in a:
                self._child(a[k], e[k], path, Key(k), rtol, atol, k, pos)

    def _zero(self, value: Any, rtol: Any, atol: Any, key: Any) -> bool:
        """Whether a mapping's entry at ``key`` compares equal to zero (its own tolerance)."""
        return self.matches(ZERO_TANGENT, value, sub_tolerance(rtol, key), sub_tolerance(atol, key))

    def dataclasses(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        if type(a) is not type(e):
            self.report("type", path, f"{r.describe(a)} where {r.describe(e)} was expected", a, e)
            return
        for pos, name in enumerate(_fields(e)):
            va, ve = getattr(a, name, _MISSING), getattr(e, name, _MISSING)
            if va is _MISSING or ve is _MISSING:
                if va is not ve:
                    self.report(
                        "structure", (*path, Attr(name)), f"field {name!r} is not set on both", a, e
                    )
                continue
            self._child(va, ve, path, Attr(name), rtol, atol, name, pos)

    def registered(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        """Two values of a type given to ``register_structure``: field by field."""
        if type(a) is not type(e):
            self.report("type", path, f"{r.describe(a)} where {r.describe(e)} was expected", a, e)
            return
        fa, fe = dict(_pairs(a)), _pairs(e)
        for pos, (step, ve) in enumerate(fe):
            self._child(fa[step], ve, path, step, rtol, atol, step.key, pos)

    # -- children, for a container compared with a zero -------------------------------------
    def zero_children(self, x: Any, rtol: Any, atol: Any) -> Iterator[tuple[Step, Any, Any, Any]]:
        """``(step, child, rtol, atol)`` for every child of a container (``rruletest.walk``)."""
        for pos, (step, child) in enumerate(children(x) or ()):
            key = step.key
            if isinstance(x, np.ndarray):
                sub_r = index_tol(rtol, key, x.shape)
                sub_a = index_tol(atol, key, x.shape)
            else:
                sub_r, sub_a = sub_tolerance(rtol, key, pos), sub_tolerance(atol, key, pos)
            yield step, child, sub_r, sub_a


def _pairs(x: Any) -> list[tuple[Step, Any]]:
    return children(x) or []


def _fields_of(x: Any) -> dict[str, Any] | None:
    """The fields of a registered value by name (None: read them with ``getattr``)."""
    if not is_registered(x):
        return None
    return {s.key: v for s, v in _pairs(x)}


def index_tol(tol: Any, idx: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """The tolerance of one element of an object array: indexed when shaped like it."""
    if isinstance(tol, list | tuple):
        try:
            arr = np.asarray(tol, dtype=float)
        except (TypeError, ValueError):
            return tol
        return arr[idx] if arr.shape == shape else tol
    if isinstance(tol, np.ndarray) and tol.shape == shape:
        return tol[idx]
    return tol
