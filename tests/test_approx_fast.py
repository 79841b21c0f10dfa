"""The fast answer of ``collect_mismatches`` (``rruletest.approx._fast``): it answers "no
mismatch" exactly where the leaf comparison finds none, and leaves everything else to it."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, Tangent
from rruletest.approx import InvalidToleranceError, collect_mismatches
from rruletest.approx._fast import SMALL, plainly_close
from rruletest.approx._kinds import numeric_of
from rruletest.approx._numeric import compare_numeric
from rruletest.tolerances import override_default_tolerances

_VALUES = [
    0.0,
    -0.0,
    1.0,
    1.0 + 1e-12,
    1.0 + 1e-6,
    -3.5,
    1e300,
    1e-300,
    math.inf,
    -math.inf,
    math.nan,
]
_TYPES = [float, np.float64, np.float32, complex, np.complex128, np.complex64]


class _Sub(np.ndarray):
    """An ndarray subclass (its own semantics: the general way)."""


def _leaf(a: Any, e: Any, rtol: Any, atol: Any) -> list[Any]:
    """What the general comparison of one numeric leaf finds."""
    return compare_numeric("x", numeric_of(a), numeric_of(e), rtol=rtol, atol=atol)


def _numbers() -> list[Any]:
    out: list[Any] = []
    for t, v in itertools.product(_TYPES, _VALUES):
        with np.errstate(all="ignore"):
            out.append(t(v))
    out += [complex(1.0, math.nan), complex(math.inf, 1.0), np.complex128(2 - 3j)]
    return out


def test_numbers_fast_answer_is_the_leaf_comparisons() -> None:
    numbers = _numbers()
    taken = 0
    for a, e in itertools.product(numbers, numbers):
        for rtol, atol in ((None, None), (1e-9, 2e-9), (0.0, 0.0), (1e-3, None), (math.inf, 1.0)):
            fast = plainly_close(a, e, rtol, atol, "x")
            if fast:
                taken += 1
                assert _leaf(a, e, rtol, atol) == [], (a, e, rtol, atol)
            finite_tols = not math.isinf(rtol or 0.0) and not math.isinf(atol or 0.0)
            if type(a) is type(e) and a == e and math.isfinite(abs(complex(e))) and finite_tols:
                assert fast, (a, e, rtol, atol)  # an equal pair of one type: the fast answer
    assert taken > 400  # the common cases do take the fast answer


def test_arrays_fast_answer_is_the_leaf_comparisons() -> None:
    rng = np.random.default_rng(0)
    base = rng.standard_normal(6)
    cases = [
        (base, base + 1e-13),
        (base, base * (1 + 1e-3)),
        (base.astype(np.float32), base),
        (base, np.where(np.arange(6) == 2, np.nan, base)),
        (np.where(np.arange(6) == 2, np.inf, base), np.where(np.arange(6) == 2, np.inf, base)),
        (base + 0j, base + 1e-14j),
        (base, base + 0j),
        (base.reshape(2, 3), base.reshape(2, 3)),
        (base.reshape(2, 3), base.reshape(3, 2)),
    ]
    for a, e in cases:
        for rtol, atol in ((None, None), (1e-9, 1e-9), (1e-9, np.full(e.shape, 1e-2)), (0.0, 0.0)):
            if plainly_close(a, e, rtol, atol, "x"):
                assert _leaf(a, e, rtol, atol) == []
            elif a.shape == e.shape and (a.dtype.kind == "c") == (e.dtype.kind == "c"):
                assert _leaf(a, e, rtol, atol) != [] or not np.all(np.isfinite(e))
    assert plainly_close(base, base.copy(), None, None, "x")
    big = np.ones(SMALL + 1)
    assert not plainly_close(big, big.copy(), None, None, "x")  # large: the walk compares
    assert collect_mismatches(big, big.copy()) == []


@pytest.mark.parametrize(
    ("a", "e"),
    [
        pytest.param(np.ma.array([1.0]), np.ma.array([1.0]), id="masked"),
        pytest.param(np.ones(1).view(_Sub), np.ones(1).view(_Sub), id="subclass"),
        pytest.param(np.array(1.0), np.array(1.0), id="0-d"),
        pytest.param(np.array([1, 2]), np.array([1, 2]), id="int-arrays"),
        pytest.param(1, 1, id="ints"),
        pytest.param(True, True, id="bools"),
        pytest.param(NoTangent(), 0.0, id="zero"),
        pytest.param((1.0,), (1.0,), id="tuple"),
        pytest.param(Tangent(tuple, 1.0), Tangent(tuple, 1.0), id="Tangent"),
        pytest.param(1.0, 1.0 + 0j, id="real-vs-complex"),
    ],
)
def test_other_kinds_go_the_general_way(a: Any, e: Any) -> None:
    assert not plainly_close(a, e, None, None, "x")


def test_defaults_in_force_are_used() -> None:
    assert not plainly_close(1.0, 1.0 + 1e-6, None, None, "x")
    with override_default_tolerances({np.float64: (1e-3, 1e-3)}):
        assert plainly_close(1.0, 1.0 + 1e-6, None, None, "x")
    assert plainly_close(np.float32(1.0), 1.0 + 1e-6, None, None, "x")  # float32's own


def test_bad_tolerances_raise_as_before() -> None:
    with pytest.raises(InvalidToleranceError, match="rtol must be non-negative"):
        collect_mismatches(np.ones(2), np.ones(2), rtol=np.array([-1.0, 0.0]))
    with pytest.raises(InvalidToleranceError, match=r"atol of shape \(3,\) does not broadcast"):
        collect_mismatches(np.ones(2), np.ones(2), atol=np.zeros(3), path="y")
    with pytest.raises(ValueError, match="rtol"):
        collect_mismatches(1.0, 1.0, rtol=math.nan)


def test_a_mismatch_is_reported_in_full() -> None:
    (m,) = collect_mismatches(2.0, 1.0, rtol=1e-9, atol=1e-9, path="y")
    assert (m.check, m.path, m.abs_err) == ("value", "y", 1.0)
    assert m.message.splitlines()[0] == "y: values differ"
