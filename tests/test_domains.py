"""Domains: parsing, printing, membership, normalisation and the errors of bad input."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest.domains import NONNEGATIVE, POSITIVE, REALS, UNIT_OPEN, Domain, Interval

finite = st.floats(-1e300, 1e300, allow_nan=False)


@pytest.mark.parametrize(
    "text",
    [
        "(0, inf)",
        "[0, inf)",
        "(-1, 1)",
        "[-1, 1]",
        "(-inf, inf)",
        "(0.5, 2.25]",
        "[1e-300, 1e+300)",
    ],
)
def test_parse_and_str_round_trip(text: str) -> None:
    interval = Interval.parse(text)
    assert str(interval) == text
    assert Interval.parse(str(interval)) == interval
    assert repr(interval) == f"Interval({text!r})"


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("  ( 0 ,inf )  ", "(0, inf)"),
        ("[-inf, 0]", "(-inf, 0]"),
        ("(+0.0, +1.0)", "(0, 1)"),
        ("[-INF, Inf]", "(-inf, inf)"),
        ("(1e16, 1e17)", "(1e+16, 1e+17)"),
    ],
)
def test_parse_normalises(text: str, normal: str) -> None:
    assert str(Interval.parse(text)) == normal


@given(
    ends=st.lists(finite, min_size=2, max_size=2, unique=True).map(sorted),
    lo_closed=st.booleans(),
    hi_closed=st.booleans(),
)
def test_round_trip_for_any_finite_interval(
    ends: list[float], lo_closed: bool, hi_closed: bool
) -> None:
    interval = Interval(ends[0], ends[1], lo_closed=lo_closed, hi_closed=hi_closed)
    assert Interval.parse(str(interval)) == interval


def test_constants() -> None:
    assert (str(REALS), str(POSITIVE), str(NONNEGATIVE), str(UNIT_OPEN)) == (
        "(-inf, inf)",
        "(0, inf)",
        "[0, inf)",
        "(-1, 1)",
    )


@pytest.mark.parametrize(
    ("interval", "inside", "outside"),
    [
        (POSITIVE, [1e-300, 1.0, 1e300], [0.0, -1.0, math.inf, math.nan]),
        (NONNEGATIVE, [0.0, 2.0], [-1e-300, math.nan]),
        (UNIT_OPEN, [-0.999, 0.0, 0.999], [-1.0, 1.0, 2.0]),
        (Interval.parse("[-1, 1]"), [-1.0, 1.0], [-1.0001, 1.0001]),
        (REALS, [-1e308, 0.0, 1e308], [math.inf, -math.inf, math.nan]),
    ],
    ids=str,
)
def test_contains(interval: Interval, inside: list[float], outside: list[float]) -> None:
    for x in inside:
        assert interval.contains(x) is True, x
    for x in outside:
        assert interval.contains(x) is False, x
    mask = interval.contains(np.array(inside + outside))
    assert mask.dtype == bool
    assert mask.tolist() == [True] * len(inside) + [False] * len(outside)


def test_contains_complex_only_on_the_real_line() -> None:
    assert POSITIVE.contains(2 + 0j) is True
    assert POSITIVE.contains(2 + 1j) is False
    assert POSITIVE.contains(np.array([1 + 0j, 1 + 1j, -1 + 0j])).tolist() == [True, False, False]


def test_interval_coerces_ends_to_float() -> None:
    i = Interval(0, np.int64(2), lo_closed=True)
    assert isinstance(i.lo, float)
    assert isinstance(i.hi, float)
    assert i == Interval(0.0, 2.0, lo_closed=True)
    assert hash(i) == hash(Interval(0.0, 2.0, lo_closed=True))
    assert not Interval(-math.inf, 0.0, lo_closed=True).lo_closed


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("0, 1", ValueError, r"^cannot read an interval from '0, 1'; write it like '\(0, inf\)'"),
        ("(0; 1)", ValueError, r"^cannot read an interval from '\(0; 1\)'"),
        ("(a, 1)", ValueError, r"^cannot read an interval from '\(a, 1\)': 'a' is not a number"),
        ("(1-2, 3)", ValueError, r"'1-2' is not a number"),
        ("(nan, 1)", ValueError, r"^cannot read an interval from '\(nan, 1\)': an end is nan$"),
        ("(1, 0)", ValueError, r"^an interval needs lo < hi, got lo=1\.0, hi=0\.0$"),
        ("[1, 1]", ValueError, r"^an interval needs lo < hi, got lo=1\.0, hi=1\.0$"),
    ],
)
def test_parse_errors(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Interval.parse(text)


def test_interval_construction_errors() -> None:
    with pytest.raises(TypeError, match=r"^Interval\.parse takes a string like '\(0, inf\)', got"):
        Interval.parse(1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^an interval's ends are real numbers, got lo='0'$"):
        Interval("0", 1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"got hi=True$"):
        Interval(0.0, True)
    with pytest.raises(ValueError, match=r"^an interval needs lo < hi, got lo=nan, hi=1\.0$"):
        Interval(math.nan, 1.0)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, "(-inf, inf)"),
        ("(0, inf)", "(0, inf)"),
        (POSITIVE, "(0, inf)"),
        ((0, 1), "(0, 1)"),
        ([0.0, 1.0], "(0, 1)"),
        (["[0, 1]", POSITIVE], "[0, 1], (0, inf)"),
        ([(0, 1), (2, 3)], "(0, 1), (2, 3)"),
        (Domain((UNIT_OPEN,)), "(-1, 1)"),
    ],
    ids=repr,
)
def test_domain_of_normalises(spec: Any, expected: str) -> None:
    domain = Domain.of(spec)
    assert isinstance(domain, Domain)
    assert str(domain) == expected
    assert not domain.complex
    assert str(Domain.of(spec, complex=True)) == expected + " or complex"


def test_domain_of_returns_a_domain_as_is_unless_made_complex() -> None:
    d = Domain((POSITIVE,), avoid=lambda x: x == 1)
    assert Domain.of(d) is d
    c = Domain.of(d, complex=True)
    assert c.complex
    assert c.avoid is d.avoid
    assert c.intervals == d.intervals


def test_domain_normalises_its_intervals() -> None:
    assert Domain("(0, 1)").intervals == (Interval(0, 1),)  # type: ignore[arg-type]
    assert Domain(("(0, 1)", (2, 3))).intervals == (Interval(0, 1), Interval(2, 3))  # type: ignore[arg-type]
    assert Domain() == Domain.of(None)


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        (3, TypeError, r"^a domain is an interval, a string like '\(0, inf\)', a pair"),
        ([3], TypeError, r"^an interval is an Interval, a string like '\(0, inf\)' or a pair"),
        ([], ValueError, r"^a domain needs at least one interval, got intervals=\(\)$"),
        ("(0, 1", ValueError, r"^cannot read an interval from '\(0, 1'"),
        ((1, 0), ValueError, r"^an interval needs lo < hi"),
    ],
    ids=repr,
)
def test_domain_of_errors(spec: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Domain.of(spec)


def test_domain_avoid_must_be_callable() -> None:
    with pytest.raises(TypeError, match=r"^avoid must be a function of the arguments, got avoid=0"):
        Domain(avoid=0)  # type: ignore[arg-type]


def test_domain_intervals_per_argument() -> None:
    d = Domain.of(["(0, inf)", "[-1, 1]"])
    assert d.interval(0) == POSITIVE
    assert d.interval(1) == Interval(-1, 1, True, True)
    assert d.contains(1.0, 1.0) is True
    assert d.contains(1.0, 2.0) is False
    assert d.contains(np.array([1.0, -1.0]), 0.0).tolist() == [True, False]
    with pytest.raises(
        IndexError,
        match=r"^the domain \(0, inf\), \[-1, 1\] declares 2 intervals, one per argument; "
        r"there is none for argument 2$",
    ):
        d.contains(1.0, 1.0, 1.0)
    single = Domain.of("(0, inf)")
    assert single.interval(5) == POSITIVE
    assert single.contains(1.0, 2.0, 3.0) is True


def test_domain_contains_complex_and_avoided_points() -> None:
    real = Domain.of("(0, inf)")
    assert real.contains(1j) is False
    cplx = Domain.of("(0, inf)", complex=True)
    assert cplx.contains(-1 + 1j) is True
    assert cplx.contains(-1.0) is False
    kink = Domain(avoid=lambda x: x == 0)
    assert kink.contains(0.0) is False
    assert kink.contains(1.0) is True
    assert kink.contains(np.array([-1.0, 0.0, 1.0])).tolist() == [True, False, True]


def test_none_in_a_list_of_intervals_is_an_unbounded_argument() -> None:
    """``Domain.of`` reads "a list of these", None among them (an audit table wrote
    ``["(0, inf)", None]`` for power(x, p) and got a TypeError)."""
    d = Domain.of(["(0, inf)", None])
    assert d.interval(0) == POSITIVE
    assert d.interval(1) == REALS
