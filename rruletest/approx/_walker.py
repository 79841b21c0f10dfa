"""The walker of ``rruletest.approx``: one comparison of two values, as a loop over tasks.

Internal. ``_Walker.run`` compares two values from the root; comparing a container schedules
its children (``walk``) and its own findings (``emit``) in order on a stack, so mismatches come
out in path order and nesting costs no recursion: structures as deep as
``rruletest.walk.MAX_DEPTH`` compare, deeper ones are a ``structure`` finding. A pair of
containers met again below itself (a cycle) is not compared twice. Leaves are compared by
``_numeric``, containers by ``_structure.StructureMixin``.

>>> w = _Walker("y", nan_equal=True, strict_zero_kind=False)
>>> w.run({"a": [1.0, 2.0]}, {"a": [1.0, 2.5]}, None, None)
>>> [(m.check, m.path) for m in w.found]
[('value', "y['a'][1]")]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.approx import _render as r
from rruletest.approx._fast import PLAIN, plainly_close
from rruletest.approx._kinds import (
    kind,
    numeric_of,
    object_as_numeric,
    type_hints,
    zero_hints,
)
from rruletest.approx._numeric import InvalidToleranceError, compare_numeric
from rruletest.approx._numeric import shape_mismatch as _shape_mismatch
from rruletest.approx._structure import StructureMixin, index_tol
from rruletest.errors import Mismatch
from rruletest.tangents import NoTangent, Thunk
from rruletest.walk import MAX_DEPTH, Element, Path, render_path

__all__ = ["_Walker"]

_FAILED = object()
_TOO_DEEP = (
    f"the values nest deeper than {MAX_DEPTH} levels (rruletest.walk.MAX_DEPTH): not compared "
    "below this point"
)


class _Walker(StructureMixin):
    """One comparison: settings, the mismatches found so far, and the pairs being walked.

    The walk is a loop over a stack of tasks, not a recursion: comparing a container schedules
    its children (``walk``) and its own findings (``emit``) in order, and the loop runs them
    depth first, so mismatches come out in the order of the paths whatever the depth.
    """

    def __init__(self, root: str, *, nan_equal: bool, strict_zero_kind: bool) -> None:
        self.root = root
        self.nan_equal = nan_equal
        self.strict = strict_zero_kind
        self.found: list[Mismatch] = []
        self.active: set[tuple[int, int]] = set()
        self._pending: list[tuple[Any, ...]] = []
        self._here: tuple[Path, str] = ((), root)  # the node being compared, and its text
        self._scheduled = False  # whether that node scheduled children

    # -- reporting ---------------------------------------------------------------------------
    def where(self, path: Path) -> str:
        """The text of ``path``: built from the current node's text when one step below it
        (the common case, so a deep walk does not render its long paths over and over)."""
        here, text = self._here
        if path is here:
            return text
        if len(path) == len(here) + 1 and (not here or path[-2] is here[-1]):
            return text + path[-1].render()
        return render_path(self.root, path)

    def emit(self, mismatch: Mismatch) -> None:
        self._pending.append(("emit", mismatch))

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
        where = self.where(path)
        self.emit(
            Mismatch(
                check=check,
                path=where,
                actual=actual,
                expected=expected,
                message=r.block(where, summary, actual, expected, (), hints),
                hint="\n".join(hints) or None,
                extra=extra,
            )
        )

    def guarded(self, path: Path, what: str, fn: Callable[[], Any], a: Any, e: Any) -> Any:
        """``fn()``, or ``_FAILED`` after reporting the exception it raised."""
        try:
            return fn()
        except InvalidToleranceError:
            raise
        except Exception as exc:
            self.report(
                "exception",
                path,
                f"{what} raised {type(exc).__name__}: {exc}",
                a,
                e,
                exception=exc,
            )
            return _FAILED

    def matches(self, a: Any, e: Any, rtol: Any, atol: Any) -> bool:
        """Whether ``a`` and ``e`` compare equal (a separate walk, nothing reported here)."""
        sub = _Walker("", nan_equal=self.nan_equal, strict_zero_kind=self.strict)
        try:
            sub.run(a, e, rtol, atol)
        except InvalidToleranceError:
            return False
        return not sub.found

    # -- the walk ----------------------------------------------------------------------------
    def walk(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        """Schedule the comparison of ``a`` with ``e`` at ``path``."""
        self._pending.append(("walk", a, e, path, rtol, atol, self.where(path)))
        self._scheduled = True

    def run(self, a: Any, e: Any, rtol: Any, atol: Any) -> None:
        """Compare ``a`` with ``e`` from the root, collecting every mismatch in ``found``."""
        stack: list[tuple[Any, ...]] = [("walk", a, e, (), rtol, atol, self.root)]
        while stack:
            task = stack.pop()
            if task[0] == "emit":
                self.found.append(task[1])
            elif task[0] == "leave":
                self.active.discard(task[1])
            else:
                self._pending = []
                self._scheduled = False
                self._here = (task[3], task[6])
                self._visit(*task[1:6])
                if self._pending:
                    stack.extend(reversed(self._pending))

    def _visit(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        if isinstance(a, Thunk):
            a = self.guarded(path, "unthunking the actual value", a.unthunk, a, e)
        if isinstance(e, Thunk):
            e = self.guarded(path, "unthunking the expected value", e.unthunk, a, e)
        if a is _FAILED or e is _FAILED:
            return
        pair = (id(a), id(e))
        if pair in self.active:  # a structure that contains itself: already being compared
            return
        if len(path) > MAX_DEPTH:
            self.report("structure", path, _TOO_DEEP, a, e)
            return
        self.active.add(pair)
        try:
            self._dispatch(a, e, path, rtol, atol)
        except InvalidToleranceError:
            raise
        except Exception as exc:  # never leak: an odd value becomes a reported problem
            self.report(
                "exception",
                path,
                f"comparing raised {type(exc).__name__}: {exc}",
                a,
                e,
                exception=exc,
            )
        if self._scheduled:
            self._pending.append(("leave", pair))  # once its children are compared
        else:
            self.active.discard(pair)

    def _dispatch(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        if (
            type(a) in PLAIN
            and type(e) in PLAIN
            and plainly_close(a, e, rtol, atol, self.where(path))
        ):
            return  # plain numbers or arrays within tolerance: compare_numeric finds nothing
        ka, ke = kind(a), kind(e)
        if ka == "zero" or ke == "zero":
            self.zero(a, e, ka, ke, path, rtol, atol)
        elif ka == "tangent" and ke == "tangent":
            self.tangents(a, e, path, rtol, atol)
        elif ka == "tangent" or ke == "tangent":
            self.tangent_natural(a, e, ka == "tangent", path, rtol, atol)
        elif ka == "numeric" and ke == "numeric":
            self.numeric(numeric_of(a), numeric_of(e), path, rtol, atol, a, e)
        elif "objarray" in (ka, ke) and {ka, ke} <= {"objarray", "numeric"}:
            self.object_arrays(a, e, path, rtol, atol)
        elif ka == ke and ka in ("tuple", "list"):
            self.sequences(a, e, path, rtol, atol)
        elif {ka, ke} <= {"tuple", "list", "namedtuple"}:
            self.mixed_sequences(a, e, ka, ke, path, rtol, atol)
        elif ka == ke == "dict":
            self.mappings(a, e, path, rtol, atol)
        elif ka == ke == "dataclass":
            self.dataclasses(a, e, path, rtol, atol)
        elif ka == ke == "registered":
            self.registered(a, e, path, rtol, atol)
        elif ka == ke == "none":
            return
        elif (ka == ke and ka in ("str", "other")) or (
            {ka, ke} == {"numeric", "other"} and type(a) is type(e)
        ):
            # (an int numpy cannot hold, 10**400, against another int: by value)
            self.equality(a, e, path)
        else:
            self.report(
                "type",
                path,
                f"{r.describe(a)} where {r.describe(e)} was expected",
                a,
                e,
                type_hints(a, e, ka, ke),
            )

    # -- leaves ------------------------------------------------------------------------------
    def numeric(
        self,
        a: np.ndarray,
        e: np.ndarray,
        path: Path,
        rtol: Any,
        atol: Any,
        a_shown: Any,
        e_shown: Any,
        *,
        zero: bool = False,
    ) -> None:
        for mismatch in compare_numeric(
            self.where(path),
            a,
            e,
            a_shown=a_shown,
            e_shown=e_shown,
            rtol=rtol,
            atol=atol,
            nan_equal=self.nan_equal,
            check_dtype=not zero,
            value_hints=not zero,
        ):
            self.emit(mismatch)

    def equality(self, a: Any, e: Any, path: Path) -> None:
        try:
            result = a == e
            equal = bool(np.all(result)) if isinstance(result, np.ndarray) else bool(result)
        except Exception as exc:
            self.report(
                "type",
                path,
                f"cannot compare {r.describe(a)} with {r.describe(e)}: == raised "
                f"{type(exc).__name__}: {exc}",
                a,
                e,
            )
            return
        if equal:
            return
        if type(a) is not type(e):
            self.report("type", path, f"{r.describe(a)} where {r.describe(e)} was expected", a, e)
        else:
            self.report("value", path, "values differ (compared with ==)", a, e)

    def zero(self, a: Any, e: Any, ka: str, ke: str, path: Path, rtol: Any, atol: Any) -> None:
        if ka == ke == "zero":
            if self.strict and type(a) is not type(e):
                self.report(
                    "zero_kind", path, f"{a!r} where {e!r} was expected", a, e, zero_hints(a, e)
                )
            return
        zero_is_actual = ka == "zero"
        z, other, kother = (a, e, ke) if zero_is_actual else (e, a, ka)
        if self.strict and isinstance(z, NoTangent):
            summary = f"{r.describe(a)} where {r.describe(e)} was expected"
            self.report("zero_kind", path, summary, a, e, zero_hints(a, e))
            return
        if kother == "numeric":
            arr = numeric_of(other)
            zeros = np.zeros(arr.shape)
            if isinstance(arr, np.ma.MaskedArray):  # a zero has the other side's mask
                zeros = np.ma.MaskedArray(zeros, mask=np.ma.getmaskarray(arr))
            na, ne = (zeros, arr) if zero_is_actual else (arr, zeros)
            self.numeric(na, ne, path, rtol, atol, a, e, zero=True)
        elif kother == "objarray" and (flat := object_as_numeric(other, self.strict)) is not None:
            zeros = np.zeros(flat.shape)
            na, ne = (zeros, flat) if zero_is_actual else (flat, zeros)
            self.numeric(na, ne, path, rtol, atol, a, e, zero=True)
        elif kother in _CONTAINER_KINDS:
            for step, child, sub_r, sub_a in self.zero_children(other, rtol, atol):
                ca, ce = (z, child) if zero_is_actual else (child, z)
                self.walk(ca, ce, (*path, step), sub_r, sub_a)
        elif kother == "other":
            self.report(
                "type",
                path,
                f"cannot compare {r.describe(a)} with {r.describe(e)}",
                a,
                e,
                type_hints(a, e, ka, ke),
            )
        else:
            self.report(
                "type",
                path,
                f"{r.describe(a)} where {r.describe(e)} was expected",
                a,
                e,
                type_hints(a, e, ka, ke),
            )

    def object_arrays(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
        shape_a, shape_e = np.shape(a), np.shape(e)
        if shape_a != shape_e:
            where = self.where(path)
            self.emit(_shape_mismatch(where, np.empty(shape_a), np.empty(shape_e), a, e))
            return
        na, ne = object_as_numeric(a, self.strict), object_as_numeric(e, self.strict)
        if na is not None and ne is not None:
            self.numeric(na, ne, path, rtol, atol, a, e)
            return
        oa, oe = np.asarray(a, dtype=object), np.asarray(e, dtype=object)
        if oa.ndim == 0:
            self.walk(oa[()], oe[()], path, rtol, atol)
            return
        for idx in np.ndindex(oa.shape):
            self.walk(
                oa[idx],
                oe[idx],
                (*path, Element(idx)),
                index_tol(rtol, idx, oa.shape),
                index_tol(atol, idx, oa.shape),
            )


_CONTAINER_KINDS = (
    "tangent",
    "objarray",
    "tuple",
    "list",
    "namedtuple",
    "dict",
    "dataclass",
    "registered",
)
