"""``unbroadcast`` and ``is_differentiable``: cotangents back to their primal's shape and dtype."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.projection import is_differentiable, project, unbroadcast
from rruletest.spaces import Diagonal, LowerTriangular, Symmetric
from rruletest.tangents import NoTangent, Tangent, Thunk, ZeroTangent, unthunk
from rruletest.walk import WalkError


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


# --------------------------------------------------------------------------------------------
# project: the general case (ChainRulesCore's ProjectTo)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("primal", "tangent", "expected"),
    [
        pytest.param(1.0, 2.0 + 3.0j, 2.0, id="float-takes-the-real-part"),
        pytest.param(1j, 2.0, 2.0 + 0j, id="complex-becomes-complex"),
        pytest.param(np.float32(1.0), np.ones(3), np.float32(3.0), id="float32-sums-and-casts"),
        pytest.param(np.ones((2, 1)), np.ones((3, 2, 4)), np.full((2, 1), 12.0), id="array"),
        pytest.param(3, 1.5, NoTangent(), id="int"),
        pytest.param("name", 1.0, NoTangent(), id="str"),
        pytest.param(None, 1.0, NoTangent(), id="None"),
        pytest.param(np.arange(3), np.ones(3), NoTangent(), id="int-array"),
        pytest.param(2.0, ZeroTangent(), ZeroTangent(), id="zero-passes"),
        pytest.param(2, ZeroTangent(), NoTangent(), id="zero-of-an-int-is-NoTangent"),
        pytest.param([1.0, 2.0], np.ones(2), np.ones(2), id="list-of-numbers-as-array"),
    ],
)
def test_project_leaves(primal: Any, tangent: Any, expected: Any) -> None:
    out = project(primal, tangent)
    assert type(out) is type(expected)
    if isinstance(expected, np.ndarray):
        assert out.dtype == expected.dtype
        assert out.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))


def test_project_is_unbroadcast_on_arrays() -> None:
    x = np.ones((3, 1), np.float32)
    t = np.arange(12.0).reshape(3, 4) + 1j
    np.testing.assert_array_equal(project(x, t), unbroadcast(x, t))
    assert project(x, t).dtype == np.float32


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    n: int = 1


class PointT(NamedTuple):
    x: float
    y: np.ndarray


def test_project_structures_field_by_field_keeping_the_container() -> None:
    out = project((1.0, 2, np.zeros(2)), (1j, 5.0, np.ones((3, 2))))
    assert type(out) is tuple
    assert out[0] == 0.0
    assert out[1] is NoTangent()
    np.testing.assert_array_equal(out[2], [3.0, 3.0])
    out_list = project([np.float32(1.0)], [np.float64(2.5)])
    assert type(out_list) is list
    assert type(out_list[0]) is np.float32
    out_dict = project({"a": 1.0, "b": 2.0}, {"a": 3.0 + 1j})
    assert out_dict == {"a": 3.0, "b": ZeroTangent()}


def test_project_tangents_keep_missing_fields_missing() -> None:
    layer = Layer(np.zeros((2, 2), np.float32), 0.5)
    t = project(layer, Tangent(Layer, w=np.ones((3, 2, 2)), n=1.0))
    assert isinstance(t, Tangent)
    assert t.primal_type is Layer
    assert t.w.dtype == np.float32
    np.testing.assert_array_equal(t.w, np.full((2, 2), 3.0))
    assert t.n is NoTangent()
    assert "b" not in t.backing
    p = project(PointT(1.0, np.zeros(2)), Tangent(PointT, y=np.ones(2) * (1 + 1j)))
    assert isinstance(p, Tangent)
    np.testing.assert_array_equal(p.y, [1.0, 1.0])
    tup = project((1.0, 2.0), Tangent(tuple, 1j))
    assert tup == Tangent(tuple, 0.0)


def test_project_natural_dataclass_and_namedtuple_give_tangents() -> None:
    t = project(Layer(np.zeros(2), 1.0), Layer(np.ones(2), 2.0 + 1j, 3))
    assert isinstance(t, Tangent)
    assert t.b == 2.0
    assert t.n is NoTangent()
    p = project(PointT(1.0, np.zeros(2)), PointT(2.0, np.ones(2)))
    assert isinstance(p, Tangent)
    assert p.primal_type is PointT
    assert p.x == 2.0


def test_project_with_spaces() -> None:
    x = np.eye(2)
    t = np.array([[1.0, 2.0], [0.0, 1.0]])
    np.testing.assert_array_equal(project(x, t, Symmetric()), [[1.0, 1.0], [1.0, 1.0]])
    both = project((x, x), (t, t), (Symmetric(), LowerTriangular()))
    np.testing.assert_array_equal(both[0], [[1.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(both[1], [[1.0, 0.0], [0.0, 1.0]])
    d = project({"s": x, "k": 2}, {"s": t, "k": 1.0}, {"s": Symmetric()})
    np.testing.assert_array_equal(d["s"], [[1.0, 1.0], [1.0, 1.0]])
    assert d["k"] is NoTangent()
    # shape and dtype first, then the space
    big = np.ones((3, 2, 2)) + 1j
    np.testing.assert_array_equal(project(x, big, Diagonal()), [[3.0, 0.0], [0.0, 3.0]])


def test_project_of_a_thunk_is_lazy() -> None:
    calls: list[int] = []
    t = Thunk(lambda: calls.append(1) or np.ones((2, 3)))
    out = project(np.zeros(3), t)
    assert isinstance(out, Thunk)
    assert calls == []
    np.testing.assert_array_equal(unthunk(out), [2.0, 2.0, 2.0])
    assert calls == [1]


def test_project_passes_other_objects_tangents_through() -> None:
    obj, tangent = object(), Tangent(object)
    assert project(obj, tangent) is tangent


@pytest.mark.parametrize(
    ("primal", "tangent", "space", "error", "message"),
    [
        pytest.param(
            (1.0, 2.0),
            (1.0,),
            None,
            ValueError,
            "project: tangent has 1 entries but its primal (a tuple) has 2",
            id="length",
        ),
        pytest.param(
            {"a": 1.0},
            {"b": 1.0},
            None,
            ValueError,
            "project: tangent has key 'b', which its primal does not have",
            id="dict-key",
        ),
        pytest.param(
            (np.ones(2), [1.0, {"w": np.ones(3)}]),
            (np.ones(2), [1.0, {"w": np.ones(4)}]),
            None,
            ValueError,
            "project: tangent[1][1]['w']: cannot unbroadcast a cotangent of shape (4,) to its "
            "primal's shape (3,): broadcasting only adds leading dimensions and stretches "
            "dimensions of size 1",
            id="path-of-a-bad-shape",
        ),
        pytest.param(
            1.0,
            (1.0,),
            None,
            ValueError,
            "project: tangent is a tuple but its primal is a float; a number's or array's "
            "tangent is a number or array",
            id="structure-for-a-number",
        ),
        pytest.param(
            Layer(np.ones(2), 1.0),
            Tangent(Layer, w=np.ones(2)),
            None,
            None,
            None,
            id="ok",
        ),
        pytest.param(
            (np.eye(2),),
            (np.eye(2),),
            Symmetric(),
            TypeError,
            "project: the spaces for tangent must be a structure matching its primal (a tuple), "
            "got Symmetric()",
            id="space-for-a-tuple",
        ),
        pytest.param(
            np.eye(2),
            np.eye(2),
            (Symmetric(),),
            TypeError,
            "project: the space for tangent must be a rruletest.spaces.Space or None (its "
            "primal is an array), got tuple",
            id="tuple-of-spaces-for-an-array",
        ),
        pytest.param(
            (np.eye(2), 1.0),
            (np.eye(2), 1.0),
            (Symmetric(),),
            TypeError,
            "project: 1 spaces for tangent, which has 2 fields",
            id="too-few-spaces",
        ),
        pytest.param(
            1.0,
            1.0,
            Symmetric(),
            TypeError,
            "project: tangent has a space Symmetric() but its primal is not an array",
            id="space-for-a-float",
        ),
    ],
)
def test_project_errors_name_the_path(
    primal: Any, tangent: Any, space: Any, error: Any, message: str | None
) -> None:
    if error is None:
        project(primal, tangent, space)
        return
    with pytest.raises(error) as info:
        project(primal, tangent, space)
    assert str(info.value) == message


def test_project_refuses_a_cycle_and_extreme_depth() -> None:
    opts: list[Any] = [0.5]
    opts.append(opts)
    with pytest.raises(
        WalkError,
        match=r"^tangent\[1\]: the value contains itself \(a cycle: it is tangent again\)$",
    ):
        project(opts, [1.0, [1.0, []]])
    deep: Any = 1.0
    deep_t: Any = 1.0
    for _ in range(50):
        deep, deep_t = [deep], [deep_t]
    assert project(deep, deep_t) == deep_t
    for _ in range(3000):
        deep, deep_t = [deep], [deep_t]
    with pytest.raises(
        ValueError, match=r"^project: the primal nests more deeply than Python's recursion limit$"
    ):
        project(deep, deep_t)


@dataclasses.dataclass
class Wrapper:
    """A user type the walk learns about by registration."""

    inner: np.ndarray


def test_project_follows_the_walk_into_registered_types() -> None:
    from rruletest.walk import register_structure

    class Box:
        def __init__(self, value: np.ndarray) -> None:
            self._v = value

    register_structure(Box, ["value"], lambda b, d: Box(d["value"]), get=lambda b, n: b._v)
    out = project(Box(np.zeros(2, np.float32)), Tangent(Box, value=np.ones((3, 2))))
    assert isinstance(out, Tangent)
    assert out.value.dtype == np.float32
    np.testing.assert_array_equal(out.value, [3.0, 3.0])
    natural = project(Wrapper(np.zeros(2)), Wrapper(np.ones((2, 2))))
    assert isinstance(natural, Tangent)
    np.testing.assert_array_equal(natural.inner, [2.0, 2.0])


@given(
    hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=st.floats(-9, 9)),
    st.integers(0, 2**32 - 1),
)
def test_project_is_idempotent(x: np.ndarray, seed: int) -> None:
    t = np.random.default_rng(seed).normal(size=(2, *x.shape))
    once = project(x, t)
    np.testing.assert_array_equal(project(x, once), once)


@pytest.mark.parametrize("xbar", [None, "x", object()], ids=["None", "str", "object"])
def test_a_cotangent_that_is_not_a_number_is_refused(xbar: Any) -> None:
    # numpy casts None to NaN: unbroadcast(1.0, None) was nan
    with pytest.raises(
        TypeError,
        match=rf"^cannot unbroadcast a cotangent of type {type(xbar).__name__} for a primal of "
        r"type float: it must be a number or numeric array$",
    ):
        unbroadcast(1.0, xbar)
    with pytest.raises(TypeError, match=r"^project: tangent\[0\]: cannot unbroadcast a cotangent"):
        project((np.ones(2),), (xbar,))
    mixed = np.array([1.0, ZeroTangent(), np.float32(2.0)], dtype=object)
    assert unbroadcast(np.ones(3), mixed).tolist() == [1.0, 0.0, 2.0]


def test_an_object_array_of_per_element_cotangents_is_summed_and_cast() -> None:
    # A rule that collects per-element cotangents (numbers and zeros) into an object array:
    # a complex entry for a real primal raised numpy's "float() argument must be ... not
    # 'complex'", and a sum to a Python number raised "'float' object has no attribute 'shape'"
    def objects(*values: Any) -> np.ndarray:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out

    assert unbroadcast(np.ones(2), objects(ZeroTangent(), 1.0 + 2j)).tolist() == [0.0, 1.0]
    total = unbroadcast(1.0, objects(ZeroTangent(), 2.0, Thunk(lambda: 0.5)))
    assert total == 2.5
    assert type(total) is float
    summed = unbroadcast(
        np.ones((1, 2), np.float32), objects(1.0, ZeroTangent(), 2.0, 3.0).reshape(2, 2)
    )
    assert summed.dtype == np.float32
    np.testing.assert_array_equal(summed, [[3.0, 3.0]])
    with pytest.raises(ValueError, match=r"shape \(4,\) to its primal's shape \(1, 2\)"):
        unbroadcast(np.ones((1, 2)), objects(1.0, 2.0, 3.0, 4.0).reshape(4))
    with pytest.raises(TypeError, match="must be a number or numeric array"):
        unbroadcast(np.ones(2), objects(1.0, Thunk(lambda: "x")))
    with pytest.raises(TypeError, match="must be a number or numeric array"):
        unbroadcast(np.ones(2), objects(1.0, np.ones(2)))


def test_a_space_on_a_primal_of_the_wrong_shape_is_a_clear_value_error() -> None:
    # Symmetric's projection swapped axes -1 and -2 of a vector: numpy's AxisError leaked.
    with pytest.raises(ValueError, match="the point does not fit") as info:
        project(np.ones(3), np.ones(3), Symmetric())
    assert str(info.value) == (
        "project: tangent: Symmetric(): the point does not fit: expected a symmetric matrix "
        "(an array of at least 2 dimensions), got shape (3,)"
    )


def test_a_dataclass_primal_takes_its_spaces_as_an_instance_of_its_own_type() -> None:
    # D(m=Symmetric(), s=None) was refused with "must be a structure matching its primal (a
    # D), got D(...)", as a namedtuple of spaces is not.
    @dataclasses.dataclass
    class D:
        m: Any
        s: Any

    x = np.array([[2.0, 0.5], [0.5, 1.0]])
    t = np.array([[1.0, 3.0], [1.0, 0.0]])
    out = project(D(x, 1.0), Tangent(D, m=t, s=2.0), D(Symmetric(), None))
    assert isinstance(out, Tangent)
    np.testing.assert_array_equal(out.m, [[1.0, 2.0], [2.0, 0.0]])
    assert out.s == 2.0
