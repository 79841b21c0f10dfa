"""The testers' shortcuts for plain numbers and arrays (their fixed cost on small inputs) give
exactly what the general walks give: the same verdicts, values, counts and messages."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, RuleSet, Tangent, Thunk, ZeroTangent
from rruletest.defaults import ERROR_FACTOR
from rruletest.domains import Domain, Interval
from rruletest.finite_differences import Estimate, to_vec
from rruletest.testers import test_rrule
from rruletest.testers._args import classify_args
from rruletest.testers._checks import compare
from rruletest.testers._evidence import masked
from rruletest.testers._fd_inputs import (
    coordinate_count,
    domain_room,
    of_live,
    unchecked_zero_times_inf,
    widen,
)
from rruletest.testers._findings import out_of_tolerance
from rruletest.testers._fit import _fit, _Where, fit_problems
from rruletest.testers._rand_tangent import _array_tangent, _rand_leaf
from rruletest.testers._report import Report, worst_errors
from rruletest.testers._setup import tolerances_of
from rruletest.testers._snapshot import all_zero, changes, nonzero, plain_leaf, snapshot
from rruletest.testers._transpose import _dtypes, _eps_tiny
from rruletest.tolerances import leaf_dtypes, override_default_tolerances, tolerances_for
from rruletest.walk import Index, leaves, map_leaves

_NUMBER_TYPES = [float, complex, np.float64, np.float32, np.float16, np.complex128, np.complex64]


def _general_fit(primal: Any, tangent: Any) -> list[str]:
    out: list[Any] = []
    _fit(primal, tangent, _Where("x"), "tangent", out, set())
    return [m.message for m in out]


@pytest.mark.parametrize(("p", "t"), list(itertools.product(_NUMBER_TYPES, _NUMBER_TYPES)))
def test_a_number_fits_a_number_as_the_walk_says(p: type, t: type) -> None:
    assert [m.message for m in fit_problems(p(1.5), t(0.25), "x", kind="tangent")] == (
        _general_fit(p(1.5), t(0.25))
    )


def test_same_dtype_arrays_fit_and_others_are_walked() -> None:
    x = np.ones((2, 3), np.float32)
    assert fit_problems(x, np.zeros((2, 3), np.float32), "args[0]") == []
    (m,) = fit_problems(x, np.zeros((2, 3)), "args[0]")
    assert m.message.startswith("args[0]: dtype float64 for a float32 primal")
    (m,) = fit_problems(x, np.zeros((3, 2), np.float32), "args[0]")
    assert m.message == "args[0]: shape (3, 2) for a primal of shape (2, 3)"


@pytest.mark.parametrize("error", [0.0, 1e-12, -3.0, math.inf, math.nan, np.float64(2e-9)])
def test_widened_tolerance_of_a_number_is_the_leafs(error: Any) -> None:
    got, want = widen(1e-9, error), widen(1e-9, (error,))[0]
    assert type(got) is type(want)
    assert got == want or (math.isnan(got) and math.isnan(want))


@pytest.mark.parametrize(
    ("value", "error", "counts"),
    [
        (0.5, 1e-12, (1, 0)),
        (np.float64(0.5), None, (1, 0)),
        (complex(1, 2), 1e-9, (1, 0)),
        (math.nan, 1e-12, (0, 1)),
        (0.5, math.inf, (0, 1)),
        (complex(1, math.nan), 1e-9, (0, 1)),
    ],
)
def test_masked_number_as_the_walk_masks_it(value: Any, error: Any, counts: Any) -> None:
    ref, found = masked(0.25, value, error)
    ref_t, found_t = masked((0.25,), (value,), None if error is None else (error,))
    assert found == found_t == counts
    assert ref == ref_t[0] or (math.isnan(ref) and math.isnan(ref_t[0]))


@pytest.mark.parametrize("x", [0.3, -2.0, 1e-300, 5.0, math.inf, np.float64(0.7)])
@pytest.mark.parametrize(
    "domain",
    [
        Domain((Interval(0.0, math.inf),)),
        Domain((Interval(-1.0, 1.0),)),
        Domain((Interval(-math.inf, math.inf),)),
        Domain((Interval(0.0, 10.0), Interval(-5.0, 5.0))),
    ],
)
def test_domain_room_of_a_number_is_the_arrays(x: Any, domain: Domain) -> None:
    assert domain_room(domain, (x,)) == domain_room(domain, (np.array(x),))


def test_coordinates_of_arrays_are_to_vecs() -> None:
    values = (np.ones((2, 3)), np.ones(4, np.complex64), 1.5, 2j, np.ones(3, np.float16))
    args = classify_args(values)
    assert coordinate_count(args) == sum(to_vec(v)[0].size for v in values)


def test_f_of_every_argument_records_what_it_raised() -> None:
    def f(x: float, y: float) -> float:
        if y < 0:
            raise ValueError("negative")
        return x * y

    g = of_live(f, {}, (1.0, 2.0), [0, 1])
    assert g(3.0, 4.0) == 12.0
    with pytest.raises(ValueError, match="negative"):
        g(1.0, -1.0)
    assert [str(e) for e in g.raised] == ["negative"]  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="zip"):  # the wrong number of arguments
        g(1.0)
    assert len(g.raised) == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (np.array([1.0, 2.5]), np.array([1.0, 2.0])),
        (np.array([1.0, np.nan]), np.array([1.0, np.nan])),
        (np.ones((2, 2)), np.ones((2, 2)) * 3),
        (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
    ],
)
def test_worst_errors_of_an_array_are_the_walks(actual: Any, expected: Any) -> None:
    assert worst_errors(actual, expected) == worst_errors((actual,), (expected,))


def test_leaf_dtypes_of_plain_values_are_the_tuples() -> None:
    values = [1.0, 2j, np.float32(1), np.ones(2, np.complex64), np.arange(3), np.float16(1)]
    for k in range(1, len(values) + 1):
        for some in itertools.combinations(values, k):
            assert _dtypes(some) == leaf_dtypes(tuple(some))
    assert _eps_tiny(frozenset(_dtypes([np.float32(1), 1.0]))) == (
        float(np.finfo(np.float32).eps),
        float(np.finfo(np.float32).tiny),
    )


@pytest.mark.parametrize(
    "values",
    [
        [1.0],
        [np.float32(1.0), 2.0],
        [np.ones(2, np.complex64)],
        [np.arange(3)],
        [np.float16(1.0), np.ones(2)],
        [1j, np.True_],
        [(1.0, np.float32(2))],
        [],
    ],
)
@pytest.mark.parametrize(("rtol", "atol"), [(None, None), (1e-3, None), (None, 0.5), (1e-3, 0.5)])
def test_tolerances_of_plain_values_are_tolerances_for(
    values: list[Any], rtol: Any, atol: Any
) -> None:
    assert tolerances_of(values, rtol, atol) == tolerances_for(values, rtol, atol)
    with override_default_tolerances({np.float32: (1e-2, 1e-3)}):
        assert tolerances_of(values, rtol, atol) == tolerances_for(values, rtol, atol)


def test_identical_arrays_are_not_compared_but_unequal_kinds_are() -> None:
    report = Report("test_rrule", np.sin, (), {}, seed=None)
    x = np.array([1.0, 2.0])
    assert compare(report, "value", "t", x, x.copy(), "y", 1e-9, 1e-9) == 0
    # equal values of another dtype are compared (and a complex one where a real belongs is
    # a dtype problem, as before)
    assert compare(report, "value", "t", x + 0j, x, "y", 1e-9, 1e-9) == 1
    assert [m.check for m in report.mismatches] == ["value"]
    assert "complex (complex128) where a real value (float64) was expected" in (
        report.mismatches[0].message
    )


def test_a_wrong_matmul_rule_is_reported_in_full() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.matmul)
    def _rule(a: Any, b: Any) -> Any:
        return a @ b, lambda ybar: (NoTangent(), ybar @ b.T * 1.01, a.T @ ybar)

    a, b = np.eye(3), np.arange(9.0).reshape(3, 3)
    with pytest.raises(AssertionError) as info:
        test_rrule(np.matmul, a, b, rrule_f=rules.rrule, rng=0, check_transpose=False)
    text = str(info.value)
    assert "args[0]: the cotangent differs from the numerical vjp" in text
    assert "  args[0]: 9 of 9 elements differ" in text
    assert "    max abs diff 1.54 at [2, 2]" in text
    assert "    max rel diff 0.01 at [" in text  # (every element is 1% off: a tie)
    assert "[numeric] args[1]" not in text  # the right cotangent passes


def test_arrays_identical_as_changes_sees_them_are_not_compared() -> None:
    # NaN is NaN wherever it is in a complex number, for the check of a repeated call
    report = Report("test_rrule", np.sin, (), {}, seed=None)
    a = np.array([complex(np.nan, 1.0), 2.0 + 0j])
    b = np.array([complex(1.0, np.nan), 2.0 + 0j])
    assert compare(report, "repeat", "t", a, b, "y", 1e-9, 1e-9) == 0
    assert report.mismatches == []
    nat = np.array(["NaT", "2026-01-01"], dtype="datetime64[D]")
    assert compare(report, "repeat", "t", nat, nat.copy(), "y", 1e-9, 1e-9) == 0


def test_tangent_leaves_still_compare_field_by_field() -> None:
    report = Report("test_rrule", np.sin, (), {}, seed=None)
    t = Tangent(tuple, np.ones(2), 1.0)
    assert compare(report, "value", "t", t, Tangent(tuple, np.ones(2), 1.0 + 1e-12), "y",
                   1e-9, 1e-9) == 0  # fmt: skip
    assert compare(report, "value", "t", t, Tangent(tuple, np.ones(2), 2.0), "y", 1e-9, 1e-9)
    assert report.mismatches[0].path == "y[1]"


_ARRAYS = [
    np.array([1.0, -0.0, 2.5]),
    np.zeros((2, 2)),
    np.array([0.0, np.nan]),
    np.array(0.0),
    np.array(3.0),
    np.array([0j, 1j]),
    np.zeros(3, np.float32),
    np.array([0, 0, 4]),
    np.array([False, True]),
    np.zeros(0),
]


@pytest.mark.parametrize("t", _ARRAYS, ids=repr)
def test_nonzero_of_an_array_is_the_walks(t: np.ndarray) -> None:
    # the walk's answer for the array inside a list, without the list's step
    walked = [(path[1:], value) for path, value in nonzero([t])]
    found = nonzero(t)
    assert [p for p, _ in found] == [p for p, _ in walked]
    assert [repr(v) for _, v in found] == [repr(v) for _, v in walked]
    assert all_zero(t) == (not nonzero([t], 1))


@pytest.mark.parametrize("t", _ARRAYS, ids=repr)
def test_changes_of_plain_arrays_are_the_walks(t: np.ndarray) -> None:
    def records(before: Any, after: Any, skip: int = 0) -> list[Any]:
        return [(c.path[skip:], repr(c.before), repr(c.after), c.count)
                for c in changes(before, after)]  # fmt: skip

    moved = t.copy()
    if moved.size:
        moved.flat[0] = 7
    for after in (t, moved, t.astype(np.complex128), t.reshape(-1, 1), list(t.flat)):
        # alone, and in a list beside a number: what the walk finds inside a dict
        for before, now in ((snapshot(t), after), ([snapshot(t), 1.0], [after, 1.0])):
            assert records(before, now) == records({"k": before}, {"k": now}, skip=1)
    assert changes([snapshot(t), 2.0], [t, 2.0]) == []
    assert [c.path for c in changes([snapshot(t), 2.0], [t, 3.0])] == [(Index(1),)]


@pytest.mark.parametrize("v", [*_ARRAYS, 1.0, 2, "s", None, NoTangent(), ZeroTangent()], ids=repr)
def test_plain_leaves_are_leaves_of_every_walk(v: Any) -> None:
    assert plain_leaf(v)
    assert [(p, w is v) for p, w in leaves(v)] == [((), True)]
    assert map_leaves(lambda _, w: w, v) is v


def test_containers_and_thunks_are_no_plain_leaves() -> None:
    for v in [(1.0,), [np.ones(2)], {"a": 1.0}, Thunk(lambda: 1.0), np.array([1.0], object)]:
        assert not plain_leaf(v)


_FLOATS = [0.0, -0.0, 1.0, 1.0 + 1e-9, -2.5, 1e308, -1e308, math.inf, -math.inf, math.nan]


def test_out_of_tolerance_of_numbers_is_the_arrays() -> None:
    for a, e, rtol, atol in itertools.product(_FLOATS, _FLOATS, [0.0, 1e-9, 1e308],
                                              [0.0, 1e-9, math.inf]):  # fmt: skip
        for kind in (float, np.float64):
            got = out_of_tolerance(kind(a), kind(e), rtol, atol)
            with np.errstate(over="ignore"):
                want = out_of_tolerance(np.array(a), np.array(e), rtol, atol)
            assert got is not None
            assert want is not None
            assert (got.dtype, got.shape, bool(got)) == (want.dtype, want.shape, bool(want))


@pytest.mark.parametrize("error", [0.0, -0.0, 1e-12, -3.0, math.inf, -math.inf, math.nan])
def test_widened_tolerance_of_a_float64_is_the_arrays(error: float) -> None:
    got, want = widen(1e-9, np.float64(error)), widen(1e-9, np.array([error]))
    assert type(got) is float
    assert got == want[0] or (math.isnan(got) and math.isnan(want[0]))
    assert list(widen(0.0, np.array([np.nan, -1.0]))) == [math.inf, ERROR_FACTOR]


@pytest.mark.parametrize(
    "kind", [np.float64, np.float32, np.float16, np.longdouble, np.complex128, np.complex64]
)
def test_a_numpy_number_draws_what_its_0d_array_draws(kind: type) -> None:
    for seed in range(20):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        got, want = _rand_leaf(a, kind(1.5)), _array_tangent(b, (), np.dtype(kind))[()]
        assert type(got) is type(want)
        assert repr(got) == repr(want)
        assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (np.array([1.0, np.nan, 2.0]), np.array([0.0, 0.0, np.inf])),
        (np.ones(3, np.float32), None),
        (np.array([np.nan]), np.float64(1e-9)),
        (np.array([1.0, 2.0]), np.array([np.nan, 1e-12])),
    ],
)
def test_masked_float_arrays_as_the_walk_masks_them(value: Any, error: Any) -> None:
    actual = np.array([5.0] * value.size, value.dtype)
    ref, counts = masked(actual, value, error)
    ref_t, counts_t = masked((actual,), (value,), None if error is None else (error,))
    assert counts == counts_t
    np.testing.assert_array_equal(ref, ref_t[0])


@pytest.mark.parametrize(
    "y",
    [
        np.array([-np.inf, 0.7]),
        np.array([1.0, 0.7]),
        np.array([np.nan, 1.0], np.float32),
        np.array([complex(1, np.inf), 2j]),
    ],
)
def test_unchecked_zero_times_inf_of_an_array_is_the_tuples(y: np.ndarray) -> None:
    est = Estimate(np.array([0.0, 0.5]), np.array([0.0, 1e-12]), None)
    actual = np.array([np.nan, 0.5])
    got = unchecked_zero_times_inf(est, actual, y).error
    want = unchecked_zero_times_inf(est, actual, (y,)).error
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (np.array([1.0, np.nan]), np.array([1.5, 2.0])),
        (np.zeros(0), np.zeros(0)),
        (np.array([np.nan]), np.array([np.nan])),
        (np.float64(1.0), np.float64(3.0)),
    ],
)
def test_worst_errors_with_nan_and_empty_arrays_are_the_walks(actual: Any, expected: Any) -> None:
    assert worst_errors(actual, expected) == worst_errors((actual,), (expected,))


def test_complex_numbers_are_not_real_for_out_of_tolerance() -> None:
    for kind in (complex, np.complex128, np.complex64):
        assert out_of_tolerance(kind(1j), kind(2j), 1e-9, 0.0) is None
    assert out_of_tolerance(np.array(1j), np.array(2j), 1e-9, 0.0) is None


def test_functions_are_kept_by_their_snapshot() -> None:
    rules = RuleSet()

    def f(x: float) -> float:
        return x

    for fn in (np.sin, f, len, rules.rrule):
        assert snapshot(fn) is fn
