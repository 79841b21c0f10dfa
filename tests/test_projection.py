"""``unbroadcast`` and ``is_differentiable``: cotangents back to their primal's shape and dtype."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.projection import is_differentiable, unbroadcast
from rruletest.tangents import NoTangent, Tangent, Thunk, ZeroTangent


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (1.0, True),
        (1j, True),
        (np.float32(1.0), True),
        (np.complex64(1j), True),
        (np.ones(2, np.float16), True),
        (np.array(1.0), True),
        (1, False),
        (True, False),
        (np.int64(1), False),
        (np.bool_(True), False),
        (np.arange(3), False),
        (np.array([True]), False),
        ("text", False),
        (None, False),
        ([1.0, 2.0], False),
        (np.sin, False),
    ],
    ids=repr,
)
def test_is_differentiable(x: Any, expected: bool) -> None:
    assert is_differentiable(x) is expected


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((3, 1), np.full((3, 1), 4.0)),
        ((1, 4), np.full((1, 4), 3.0)),
        ((4,), np.full(4, 3.0)),
        ((1,), np.full(1, 12.0)),
        ((1, 1), np.full((1, 1), 12.0)),
        ((3, 4), np.ones((3, 4))),
    ],
)
def test_unbroadcast_sums_broadcast_dimensions(shape: tuple[int, ...], expected: Any) -> None:
    out = unbroadcast(np.zeros(shape), np.ones((3, 4)))
    assert isinstance(out, np.ndarray)
    assert out.shape == shape
    np.testing.assert_array_equal(out, expected)


def test_unbroadcast_leading_dimensions() -> None:
    xbar = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(unbroadcast(np.zeros((3, 4)), xbar), xbar.sum(axis=0))
    np.testing.assert_array_equal(unbroadcast(np.zeros(4), xbar), xbar.sum(axis=(0, 1)))
    np.testing.assert_array_equal(
        unbroadcast(np.zeros((1, 4)), xbar), xbar.sum(axis=(0, 1)).reshape(1, 4)
    )
    np.testing.assert_array_equal(
        unbroadcast(np.zeros((3, 1)), xbar), xbar.sum(axis=(0, 2)).reshape(3, 1)
    )


def test_unbroadcast_zero_dimensional_primal_gets_a_zero_dimensional_array() -> None:
    out = unbroadcast(np.array(1.0), np.ones((2, 3)))
    assert isinstance(out, np.ndarray)
    assert out.shape == ()
    assert out == 6.0
    same = unbroadcast(np.array(1.0), np.array(2.0))
    assert isinstance(same, np.ndarray)
    assert same.shape == ()


@pytest.mark.parametrize(
    ("x", "kind"),
    [
        (1.0, float),
        (1j, complex),
        (np.float64(1.0), np.float64),
        (np.float32(1.0), np.float32),
        (np.float16(1.0), np.float16),
        (np.complex64(1.0), np.complex64),
    ],
    ids=repr,
)
def test_unbroadcast_scalars_keep_their_kind(x: Any, kind: type) -> None:
    out = unbroadcast(x, np.ones((2, 2)))
    assert type(out) is kind
    assert out == 4.0
    assert type(unbroadcast(x, 2.0)) is kind


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
def test_unbroadcast_preserves_low_precision(dtype: Any) -> None:
    out = unbroadcast(np.ones((3, 1), dtype=dtype), np.ones((3, 4), dtype=np.float64))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, np.full((3, 1), 4.0))


def test_unbroadcast_sums_before_lowering_precision() -> None:
    # In float32, 1e8 + 1 == 1e8: casting first would give 0; summing first gives 1.
    out = unbroadcast(np.float32(0.0), np.array([1e8, 1.0, -1e8]))
    assert type(out) is np.float32
    assert out == 1.0


def test_unbroadcast_complex_to_real_keeps_the_real_part() -> None:
    xbar = np.array([[1 + 2j, 3 - 1j]])
    out = unbroadcast(np.zeros(2), xbar)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 3.0])
    assert unbroadcast(1.0, np.array([1 + 1j, 2 - 1j])) == 3.0
    assert isinstance(unbroadcast(1.0, 2j), float)
    out_c = unbroadcast(np.zeros(2, np.complex128), np.array([1.0, 2.0]))
    assert out_c.dtype == np.complex128


@pytest.mark.parametrize(
    "x",
    [1, True, np.int32(3), np.bool_(False), np.arange(3), np.array([True, False]), "label"],
    ids=repr,
)
def test_unbroadcast_gives_integers_no_tangent(x: Any) -> None:
    assert unbroadcast(x, np.ones(3)) is NoTangent()
    assert unbroadcast(x, ZeroTangent()) is NoTangent()
    assert unbroadcast(x, 1.0) is NoTangent()


def test_unbroadcast_passes_zeros_tangents_and_unthunks() -> None:
    assert unbroadcast(np.ones(3), ZeroTangent()) is ZeroTangent()
    assert unbroadcast(1.0, NoTangent()) is NoTangent()
    t = Tangent(tuple, 1.0)
    assert unbroadcast((1.0,), t) is t
    out = unbroadcast(np.ones((3, 1)), Thunk(lambda: np.ones((3, 4))))
    np.testing.assert_array_equal(out, np.full((3, 1), 4.0))


def test_unbroadcast_of_a_list_of_numbers_is_an_array() -> None:
    out = unbroadcast([1.0, 2.0], np.ones((3, 2)))
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [3.0, 3.0])
    assert unbroadcast([1, 2], np.ones(2)) is NoTangent()


@pytest.mark.parametrize(
    ("x_shape", "xbar_shape"),
    [
        ((3,), (4,)),
        ((2, 3), (3, 2)),  # a reshape would silently succeed: must not
        ((6,), (2, 3)),
        ((2, 2), (4,)),
        ((3, 4), (4,)),
        ((2,), ()),
        ((2, 1), (3, 3, 5)),
    ],
    ids=str,
)
def test_unbroadcast_impossible_shapes_name_both(
    x_shape: tuple[int, ...], xbar_shape: tuple[int, ...]
) -> None:
    message = (
        f"cannot unbroadcast a cotangent of shape {xbar_shape} to its primal's shape {x_shape}: "
        f"broadcasting only adds leading dimensions and stretches dimensions of size 1"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        unbroadcast(np.zeros(x_shape), np.ones(xbar_shape))


@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3),
    data=st.data(),
)
def test_unbroadcast_is_the_adjoint_of_broadcasting(shapes: Any, data: st.DataObject) -> None:
    """<ybar, broadcast(xdot)> == <unbroadcast(x, ybar), xdot> for every broadcastable shape."""
    (x_shape, _), out_shape = shapes.input_shapes, shapes.result_shape
    elements = st.floats(-4, 4, allow_nan=False).map(lambda v: round(v, 2))
    xdot = data.draw(hnp.arrays(np.float64, x_shape, elements=elements))
    ybar = data.draw(hnp.arrays(np.float64, out_shape, elements=elements))
    xbar = unbroadcast(np.zeros(x_shape), ybar)
    assert np.shape(xbar) == x_shape
    lhs = np.sum(ybar * np.broadcast_to(xdot, out_shape))
    rhs = np.sum(xbar * xdot)
    assert lhs == pytest.approx(rhs, abs=1e-9)


@given(
    x=hnp.arrays(
        st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]),
        hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
        elements=st.floats(-10, 10, width=32),
    )
)
def test_unbroadcast_of_a_same_shaped_cotangent_keeps_values(x: np.ndarray) -> None:
    out = unbroadcast(x, x.astype(np.complex128))
    assert out.shape == x.shape
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, x)
