"""Properties of rruletest.strategies: domains respected, dtypes and shapes right, edges drawn."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from rruletest import NoTangent
from rruletest.domains import Domain, Interval
from rruletest.strategies import (
    AVOID_RADIUS,
    broadcastable_args,
    default_magnitude,
    edge_values,
    elements,
    near_avoided,
    primals,
    scalars,
    shaped_args,
    tangents,
)

DOMAINS = [
    "(-inf, inf)",
    "(0, inf)",
    "[0, inf)",
    "(-1, 1)",
    "[-1, 1]",
    "(-inf, -2]",
    "(1e-3, 1e3)",
    "[0.5, 0.75)",
]
REAL_DTYPES = ["float16", "float32", "float64"]


def _inside(domain: str, x: Any) -> bool:
    return bool(np.all(Interval.parse(domain).contains(np.asarray(x, dtype=np.float64))))


@pytest.mark.parametrize("dtype", REAL_DTYPES)
@pytest.mark.parametrize("domain", DOMAINS)
@settings(max_examples=30)
@given(data=st.data())
def test_primals_stay_inside_the_domain(domain: str, dtype: str, data: st.DataObject) -> None:
    x = data.draw(primals(domain, dtype=dtype, shape=(3,)))
    assert isinstance(x, np.ndarray)
    assert x.dtype == np.dtype(dtype)
    assert x.shape == (3,)
    assert np.all(np.isfinite(x))
    assert _inside(domain, x)
    assert np.all(np.abs(x) <= default_magnitude(dtype))


@pytest.mark.parametrize("domain", DOMAINS)
@settings(max_examples=30)
@given(data=st.data())
def test_margin_keeps_away_from_finite_bounds(domain: str, data: st.DataObject) -> None:
    margin = 1e-4
    x = float(data.draw(scalars(domain, margin=margin)))
    iv = Interval.parse(domain)
    for bound in (iv.lo, iv.hi):
        if math.isfinite(bound):
            assert abs(x - bound) >= margin * max(1.0, abs(bound)) * (1 - 1e-12)


def test_closed_bounds_are_drawn_open_ones_never() -> None:
    assert find(scalars("[0, 1]"), lambda x: x == 0.0) == 0.0
    assert find(scalars("[0, 1]"), lambda x: x == 1.0) == 1.0
    edges = edge_values("(0, 1)")
    assert 0.0 not in edges
    assert 1.0 not in edges
    assert all(0 < v < 1 for v in edges)


def test_edge_values_include_tiny_zero_one_and_large() -> None:
    edges = edge_values("(-inf, inf)")
    tiny = math.sqrt(np.finfo(np.float64).tiny)
    for v in (0.0, tiny, -tiny, 1.0, -1.0, 100.0, -100.0):
        assert v in edges
    # and hypothesis draws them
    assert find(scalars(), lambda x: float(x) == tiny) == tiny


def test_edge_values_are_representable_in_the_dtype() -> None:
    for v in edge_values("(0.1, 0.3)", dtype="float32"):
        assert float(np.float32(v)) == v
        assert 0.1 < v < 0.3


def test_default_magnitude_keeps_exp_finite() -> None:
    for dtype in REAL_DTYPES:
        big = np.asarray(default_magnitude(dtype), dtype=dtype)
        with np.errstate(over="raise"):
            assert np.isfinite(np.exp(big))


@settings(max_examples=40)
@given(x=primals(Domain.of("(0, inf)", complex=True), dtype="complex128", shape=(4,)))
def test_complex_primals_keep_the_real_part_in_the_interval(x: np.ndarray) -> None:
    assert x.dtype == np.complex128
    assert np.all(x.real > 0)
    assert np.all(np.isfinite(x))


@settings(max_examples=40)
@given(
    x=primals(Domain.of("(0, inf)", complex=True), dtype="complex64", shape=(3,)),
    z=primals(Domain.of(None, complex=True), dtype="complex64", magnitude=0.1),
)
def test_complex64_primals_are_drawn(x: np.ndarray, z: np.complexfloating) -> None:
    # the imaginary part's bounds (+-44.36...) were not rounded to float32 (InvalidArgument),
    # and its edge values +-1 ignored magnitude
    assert x.dtype == np.complex64
    assert np.all(x.real > 0)
    assert np.all(np.abs(x.imag) <= 44.5)
    assert z.dtype == np.complex64
    assert abs(z.imag) <= 0.1


def test_complex_dtype_needs_a_complex_domain() -> None:
    with pytest.raises(ValueError, match=r"does not accept complex inputs, got dtype='complex64'"):
        elements("(0, 1)", dtype="complex64")


def test_integer_dtype_is_rejected_with_its_value() -> None:
    with pytest.raises(ValueError, match=r"got dtype='int64'"):
        elements(dtype="int64")


def test_no_room_between_margin_and_bounds_is_reported() -> None:
    with pytest.raises(ValueError, match=r"no room to draw values in \(0, 1\) with margin=0.6"):
        elements("(0, 1)", margin=0.6)


KINK = Domain((Interval(),), avoid=lambda x: x == 0)


@settings(max_examples=50)
@given(x=primals(KINK, shape=(5,)))
def test_avoided_points_are_kept_at_a_distance(x: np.ndarray) -> None:
    assert np.all(np.abs(x) > AVOID_RADIUS * 0.999)
    assert not np.any(near_avoided(KINK.avoid, x))


def test_near_avoided_checks_a_neighbourhood() -> None:
    mask = near_avoided(lambda x: x == 1, np.array([1.0, 1.0 + 1e-9, 1.5]))
    assert mask.tolist() == [True, True, False]
    assert near_avoided(None, np.ones(2)) is False


TWO_ARGS = Domain((Interval(0.0, math.inf), Interval(-1.0, 1.0, lo_closed=True)))


@settings(max_examples=50)
@given(args=broadcastable_args(TWO_ARGS, dtype="float32"))
def test_broadcastable_args_broadcast_and_respect_each_interval(args: tuple[Any, ...]) -> None:
    a, b = args
    np.broadcast_shapes(a.shape, b.shape)  # raises if not broadcastable
    assert a.dtype == b.dtype == np.float32
    assert np.all(a > 0)
    assert np.all((b >= -1) & (b < 1))


def test_broadcastable_args_reach_different_shapes() -> None:
    a, b = find(broadcastable_args(None, 2), lambda xs: xs[0].shape != xs[1].shape)
    assert a.shape != b.shape
    (one,) = find(broadcastable_args("(0, 1)", 1, min_dims=2), lambda xs: True)
    assert one.ndim >= 2


def test_broadcastable_args_need_an_argument() -> None:
    with pytest.raises(ValueError, match=r"nargs >= 1, got nargs=0"):
        find(broadcastable_args(None, 0), lambda xs: True)


@pytest.mark.parametrize(
    "primal",
    [
        1.5,
        np.float32(2.0),
        np.zeros((2, 3)),
        np.zeros(3, np.float32),
        np.zeros(2, np.complex128),
    ],
    ids=["float", "float32-scalar", "array", "float32-array", "complex-array"],
)
@settings(max_examples=20)
@given(data=st.data())
def test_tangents_match_their_primal(primal: Any, data: st.DataObject) -> None:
    t = data.draw(tangents(primal))
    assert type(t) is type(primal)
    assert np.shape(t) == np.shape(primal)
    assert np.result_type(t) == np.result_type(primal)
    grid = np.asarray(t) * 100
    assert np.allclose(grid, np.round(grid), atol=1e-3)
    parts = np.asarray(t).view(np.float64) if np.iscomplexobj(t) else np.asarray(t)
    assert np.all(np.abs(parts) <= 9)


def test_tangents_of_structures_and_non_differentiable_values() -> None:
    t = find(tangents((1.0, 2, [np.ones(2)], {"a": 3.0})), lambda t: True)
    assert isinstance(t, tuple)
    assert isinstance(t[1], NoTangent)
    assert isinstance(t[2], list)
    assert t[2][0].shape == (2,)
    assert set(t[3]) == {"a"}


def test_reprs_read_like_calls() -> None:
    assert repr(primals("(0, 1)", dtype="float32")) == "primals(domain='(0, 1)', dtype='float32')"
    assert repr(broadcastable_args("(0, 1)", 2)) == "broadcastable_args(domain='(0, 1)', nargs=2)"
    assert repr(tangents(1.0)) == "tangents(1.0)"


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(REAL_DTYPES), domain=st.sampled_from(DOMAINS))
def test_shaped_args_share_named_sizes_and_stay_inside(
    data: st.DataObject, dtype: str, domain: str
) -> None:
    a, v, c, s = data.draw(
        shaped_args(domain, [("m", "n"), ("n",), (2, "m"), ()], dtype=dtype, max_side=3)
    )
    assert a.ndim == 2
    assert 1 <= a.shape[0] <= 3
    assert 1 <= a.shape[1] <= 3
    assert v.shape == (a.shape[1],)
    assert c.shape == (2, a.shape[0])
    assert isinstance(s, np.generic)
    assert s.dtype == np.dtype(dtype)
    for x in (a, v, c, s):
        assert np.asarray(x).dtype == np.dtype(dtype)
        assert _inside(domain, x)


def test_shaped_args_draw_each_argument_in_its_interval_and_avoid() -> None:
    dom = Domain((Interval(0, 1), Interval(-3, -2)), avoid=lambda x, y: np.abs(x - 0.5) < 0.1)
    x, y = find(shaped_args(dom, [("n",), ("n",)]), lambda xs: xs[0].shape == (3,))
    assert np.all((x > 0) & (x < 1))
    assert np.all((y > -3) & (y < -2))
    assert not np.any(np.abs(x - 0.5) < 0.1)
    with pytest.raises(ValueError, match="shaped_args needs max_side >= 1, got max_side=0"):
        find(shaped_args(None, [("n",)], max_side=0), lambda xs: True)
