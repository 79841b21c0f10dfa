"""``test_approx``: compare two tangents (or any values) structurally, naming every difference.

One walk over both values handles every kind of tangent a rule can return (containers are
understood as ``rruletest.walk`` understands them, paths are its steps; the walk is a loop,
not a recursion, so any depth up to ``walk.MAX_DEPTH`` compares and a deeper one is a
``structure`` finding):

- numbers and numeric arrays: shapes must agree, real must not meet complex (reported as a
  ``dtype`` problem), and ``|actual - expected| <= atol + rtol * |expected|`` elementwise; NaN
  equals NaN at the same place (unless ``nan_equal=False``), an infinity the same infinity; a
  complex element with a NaN or infinite part is compared part by part (``complex(1, nan)`` is
  not ``complex(5, nan)``). Values are compared, not dtypes: float32 and float64 holding equal
  numbers are equal (testers check dtypes on their own). Python scalars, numpy scalars and 0-d
  arrays compare alike (a ``Decimal`` is a real number); shape ``()`` against ``(1,)`` is a
  shape mismatch;
- masked arrays: the masks must agree (an element masked on one side only, a plain array
  being masked nowhere, is a ``structure`` mismatch) and masked elements are not compared;
- ``NoTangent()``/``ZeroTangent()``: equal to each other (unless ``strict_zero_kind``, when a
  ``NoTangent`` on one side needs a ``NoTangent`` on the other) and to anything whose numbers
  are all within ``atol`` of zero;
- ``Thunk``/``InplaceableThunk``: unthunked first; one that raises is a reported problem;
- ``Tangent`` against ``Tangent``: same primal type, field by field over the union of fields
  (a missing field is zero); against a natural value (tuple, list, namedtuple, dataclass, dict,
  object): field by field by name, key or position, so field names matter;
- tuples, lists, dicts, namedtuples, dataclasses, numpy object arrays: element by element (a
  dict key on one side only is zero on the other, like a Tangent's missing field);
  types given to ``rruletest.walk.register_structure``: same type, then field by field;
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

from typing import Any

import numpy as np

from rruletest.approx._fast import plainly_close
from rruletest.approx._numeric import InvalidToleranceError, leaf_tolerance
from rruletest.approx._walker import _Walker
from rruletest.errors import Mismatch, RuleTestFailure

__all__ = ["InvalidToleranceError", "collect_mismatches", "test_approx"]


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
        if tol is None or (type(tol) is float and tol >= 0):
            continue  # nothing to check (leaf_tolerance would pass it as it is)
        if type(tol) is np.ndarray and tol.dtype == np.float64 and bool((tol >= 0).all()):
            continue  # non-negative, no NaN: leaf_tolerance would pass it too
        if isinstance(tol, float | int | np.number | np.ndarray | str | bytes):
            leaf_tolerance(name, tol, np.shape(tol), path)
    if plainly_close(actual, expected, rtol, atol, path):
        return []  # two plain numbers or arrays within tolerance: nothing to walk
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
