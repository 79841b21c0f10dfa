"""``test_approx``: compare two tangents (or any values) structurally, naming every difference.

One walk over both values handles every kind of tangent a rule can return:

- numbers and numeric arrays: shapes must agree, real must not meet complex (reported as a
  ``dtype`` problem), and ``|actual - expected| <= atol + rtol * |expected|`` elementwise; NaN
  equals NaN at the same place (unless ``nan_equal=False``), an infinity the same infinity.
  Values are compared, not dtypes: float32 and float64 holding equal numbers are equal (testers
  check dtypes on their own). Python scalars, numpy scalars and 0-d arrays compare alike; shape
  ``()`` against ``(1,)`` is a shape mismatch;
- ``NoTangent()``/``ZeroTangent()``: equal to each other (unless ``strict_zero_kind``, when a
  ``NoTangent`` on one side needs a ``NoTangent`` on the other) and to anything whose numbers
  are all within ``atol`` of zero;
- ``Thunk``/``InplaceableThunk``: unthunked first; one that raises is a reported problem;
- ``Tangent`` against ``Tangent``: same primal type, field by field over the union of fields
  (a missing field is zero); against a natural value (tuple, list, namedtuple, dataclass, dict,
  object): field by field by name, key or position, so field names matter;
- tuples, lists, dicts, namedtuples, dataclasses, numpy object arrays: element by element;
- anything else: ``==``, guarded, so a value that cannot be compared is reported, not raised.

Tolerances left as None come from ``rruletest.tolerances`` per leaf (at the precision of the
less precise of the two values). ``rtol``/``atol`` may also be arrays broadcasting to every leaf
or structures shaped like ``expected`` holding numbers or arrays per leaf.

Checks reported (``Mismatch.check``): ``value`` (numbers differ, strings or other values
unequal), ``shape``, ``dtype`` (real vs complex), ``type`` (kinds that do not go together),
``structure`` (lengths, keys or fields differ), ``zero_kind`` (``NoTangent`` vs another value
under ``strict_zero_kind``), ``exception`` (unthunking raised, or a value broke the walk, say
its ``len`` raised; an ``==`` that raises is a ``type`` problem: "cannot compare"). A numeric
array is one leaf: its mismatch has the array's path, and ``Mismatch.index`` (shown as
``at [1, 3]``) says where its largest difference is.

>>> from rruletest import ZeroTangent
>>> test_approx((1.0, np.ones(2)), (1.0 + 1e-12, np.ones(2)))
>>> test_approx(np.zeros(2), ZeroTangent())
>>> test_approx([1.0, 2.0], (1.0, 3.0), path="args[1]")
Traceback (most recent call last):
...
rruletest.errors.RuleTestFailure: 2 problems found:
args[1]: a list where a tuple was expected
  actual:   [1.0, 2.0]
  expected: (1.0, 3.0)
  hint: return a tuple, not a list
args[1][1]: values differ
  actual:   2.0
  expected: 3.0
  abs diff 1, rel diff 0.333
  tolerance: rtol=1e-09, atol=1e-09
"""

# ruff: noqa: PT028 - test_approx is an assertion helper, not a test
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rruletest.approx import _render as r
from rruletest.approx._kinds import (
    kind,
    numeric_of,
    object_as_numeric,
    type_hints,
    zero_hints,
)
from rruletest.approx._numeric import (
    InvalidToleranceError,
    compare_numeric,
    leaf_tolerance,
)
from rruletest.approx._numeric import shape_mismatch as _shape_mismatch
from rruletest.approx._structure import StructureMixin, index_tol
from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.tangents import NoTangent, Thunk
from rruletest.walk import MAX_DEPTH, Element, Path, render_path

__all__ = ["InvalidToleranceError", "collect_mismatches", "test_approx"]

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

    # -- reporting ---------------------------------------------------------------------------
    def where(self, path: Path) -> str:
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
        self._pending.append(("walk", a, e, path, rtol, atol))

    def run(self, a: Any, e: Any, rtol: Any, atol: Any) -> None:
        """Compare ``a`` with ``e`` from the root, collecting every mismatch in ``found``."""
        stack: list[tuple[Any, ...]] = [("walk", a, e, (), rtol, atol)]
        while stack:
            task = stack.pop()
            if task[0] == "emit":
                self.found.append(task[1])
            elif task[0] == "leave":
                self.active.discard(task[1])
            else:
                self._pending = []
                self._visit(*task[1:])
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
        self._pending.append(("leave", pair))

    def _dispatch(self, a: Any, e: Any, path: Path, rtol: Any, atol: Any) -> None:
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
        elif ka == ke and ka in ("str", "other"):
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


def collect_mismatches(
    actual: Any,
    expected: Any,
    *,
    rtol: Any = None,
    atol: Any = None,
    path: str = "",
    nan_equal: bool = True,
    strict_zero_kind: bool = False,
) -> list[Mismatch]:
    """Every difference between ``actual`` and ``expected``, as ``Mismatch`` records.

    Never raises for any pair of values: what cannot be compared is itself a mismatch. Testers
    use it to gather every problem of a rule into one report.

    Args:
        actual: any value; see the module docstring for what is compared how.
        expected: the reference value ``actual`` must match.
        rtol: None (the per-dtype default of ``rruletest.tolerances``), a non-negative
            number, an array broadcasting to every numeric leaf, or a structure shaped like
            ``expected`` holding any of these per leaf.
        atol: as ``rtol``, for the absolute tolerance.
        path: the prefix of every reported path (``"pullback output[2]"``).
        nan_equal: NaN equals NaN at the same place.
        strict_zero_kind: ``NoTangent()`` on either side requires ``NoTangent()`` on the other.

    Raises:
        InvalidToleranceError: (a ``ValueError``) a negative, NaN or ill-shaped tolerance.
        TypeError: a ``path`` that is not a string.

    >>> from rruletest import ZeroTangent
    >>> [m.check for m in collect_mismatches(np.ones(3), np.ones(2))]
    ['shape']
    >>> collect_mismatches(ZeroTangent(), 1e-12)
    []
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a string such as 'args[0]', got path={path!r}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, float | int | np.number | np.ndarray | str | bytes):
            leaf_tolerance(name, tol, np.shape(tol), path)
    walker = _Walker(path, nan_equal=nan_equal, strict_zero_kind=strict_zero_kind)
    walker.run(actual, expected, rtol, atol)
    return walker.found


def test_approx(
    actual: Any,
    expected: Any,
    *,
    rtol: Any = None,
    atol: Any = None,
    path: str = "",
    nan_equal: bool = True,
    strict_zero_kind: bool = False,
) -> None:
    """Pass silently when ``actual`` matches ``expected``, else raise ``RuleTestFailure``.

    Same arguments as ``collect_mismatches``; the failure lists every mismatch found (its
    ``mismatches``), and its ``path``, ``actual``, ``expected``, ``rtol`` and ``atol`` are those
    of the first.

    >>> from rruletest import ZeroTangent
    >>> test_approx(ZeroTangent(), np.array([0.0, 0.5]), path="xbar")
    Traceback (most recent call last):
    ...
    rruletest.errors.RuleTestFailure: xbar: 1 of 2 elements differ
      actual:   ZeroTangent()
      expected: array([0. , 0.5])
      max abs diff 0.5 at [1] (actual 0.0, expected 0.5)
      max rel diff 1 at [1]
      tolerance: rtol=1e-09, atol=1e-09
    """
    __tracebackhide__ = True
    found = collect_mismatches(
        actual,
        expected,
        rtol=rtol,
        atol=atol,
        path=path,
        nan_equal=nan_equal,
        strict_zero_kind=strict_zero_kind,
    )
    if found:
        raise RuleTestFailure(found)


test_approx.__test__ = False  # type: ignore[attr-defined]
