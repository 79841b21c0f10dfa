"""``to_vec``: flattening structured values to real coordinates and rebuilding them."""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.finite_differences import to_vec
from rruletest.tangents import NoTangent, Tangent, Thunk, ZeroTangent

Pair = namedtuple("Pair", "a b")


@dataclasses.dataclass
class Box:
    a: Any
    b: Any


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: Any
    n: int = 3


def same(x: Any, y: Any) -> bool:
    """Equal in value, type, dtype and structure (NaN equal to NaN)."""
    if type(x) is not type(y):
        return False
    if isinstance(x, np.ndarray):
        return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
    if isinstance(x, np.generic):
        return x.dtype == y.dtype and bool(np.array_equal(x, y, equal_nan=True))
    if isinstance(x, float | complex):
        return np.array_equal(x, y, equal_nan=True)
    if isinstance(x, tuple | list):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, dict):
        return list(x) == list(y) and all(same(x[k], y[k]) for k in x)
    if isinstance(x, Tangent):
        return x.primal_type is y.primal_type and same(x.backing, y.backing)
    if dataclasses.is_dataclass(x):
        return all(same(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x))
    return bool(x == y)


FLOAT_DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]

leaves = st.one_of(
    st.floats(allow_nan=False, width=64),
    st.complex_numbers(allow_nan=False, allow_infinity=False),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.sampled_from([NoTangent(), ZeroTangent(), "label"]),
    st.sampled_from(FLOAT_DTYPES).flatmap(
        lambda dt: hnp.from_dtype(np.dtype(dt), allow_nan=False, allow_infinity=False).map(
            np.dtype(dt).type
        )
    ),
    st.sampled_from([*FLOAT_DTYPES, "int32", "bool"]).flatmap(
        lambda dt: hnp.arrays(
            np.dtype(dt),
            hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
            elements=hnp.from_dtype(np.dtype(dt), allow_nan=False, allow_infinity=False),
        )
    ),
)


def containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3).map(tuple),
        st.lists(children, max_size=3),
        st.builds(Pair, children, children),
        st.dictionaries(st.sampled_from("xyz"), children, max_size=3),
        st.builds(Box, children, children),
        st.builds(Frozen, children),
        st.lists(children, max_size=3).map(lambda xs: Tangent(tuple, *xs)),
        st.builds(lambda a, b: Tangent(Pair, a=a, b=b), children, children),
    )


structures = st.recursive(leaves, containers, max_leaves=8)


@given(structures)
def test_round_trip(x):
    v, back = to_vec(x)
    assert v.dtype == np.float64
    assert v.ndim == 1
    assert back.size == v.size
    y = back(v)
    assert same(y, x)
    v2, _ = to_vec(y)
    assert np.array_equal(v2, v)


@given(structures)
def test_tangent_round_trip(x):
    v, back = to_vec(x)
    t = back.tangent(v)
    assert np.array_equal(back.tangent_vec(t), v)
    err = back.error(np.abs(v))
    ev, _ = to_vec(err)
    assert np.all(ev >= 0)


def test_rebuilt_values_are_new():
    x = {"a": np.ones(2), "n": np.arange(2)}
    v, back = to_vec(x)
    y = back(v)
    y["a"][0] = 5.0
    y["n"][0] = 5
    assert x["a"][0] == 1.0
    assert x["n"][0] == 0


def test_layout_and_types():
    x = (np.float32(1.5), 2 + 3j, np.array([[1.0, 2.0]]), Pair(4, 5.0), True)
    v, back = to_vec(x)
    assert v.tolist() == [1.5, 2.0, 3.0, 1.0, 2.0, 5.0]
    y = back(v + 1)
    assert type(y[0]) is np.float32
    assert y[1] == 3 + 4j
    assert y[2].shape == (1, 2)
    assert y[3] == Pair(4, 6.0)
    assert y[4] is True


def test_tangent_rebuild_marks_constants():
    x = Box(a=np.ones(2, np.float32), b=(3, "s", None))
    v, back = to_vec(x)
    t = back.tangent(v)
    assert isinstance(t, Tangent)
    assert t.primal_type is Box
    assert t.a.dtype == np.float32
    assert t.b == (NoTangent(), NoTangent(), NoTangent())


def test_thunks_are_unthunked():
    v, back = to_vec((Thunk(lambda: 2.0),))
    assert v.tolist() == [2.0]
    assert back(v) == (2.0,)


def test_object_arrays():
    x = np.empty(2, dtype=object)
    x[0] = 1.0
    x[1] = (2.0, 3)
    v, back = to_vec(x)
    assert v.tolist() == [1.0, 2.0]
    y = back(v)
    assert y.dtype == object
    assert y[1] == (2.0, 3)


class Opaque:
    pass


@pytest.mark.parametrize(
    ("x", "path"),
    [
        pytest.param(Opaque(), "x", id="top"),
        pytest.param((1.0, [2.0, Opaque()]), r"x\[1\]\[1\]", id="nested"),
        pytest.param({"k": Pair(1.0, Opaque())}, r"x\['k'\]\.b", id="dict-namedtuple"),
        pytest.param(Box(1.0, {3}), r"x\.b", id="set-in-dataclass"),
    ],
)
def test_unsupported_leaf_names_type_and_path(x, path):
    with pytest.raises(TypeError, match=rf"type .*(Opaque|set).* \(at {path}\)"):
        to_vec(x)


def test_tangent_vec_checks():
    _, back = to_vec((1.0, np.zeros(2)), path="args")
    assert back.tangent_vec((ZeroTangent(), np.ones(2))).tolist() == [0.0, 1.0, 1.0]
    assert back.tangent_vec(Tangent(tuple, 2.0)).tolist() == [2.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"args\[0\] is complex but its primal is real"):
        back.tangent_vec((1j, np.ones(2)))
    with pytest.raises(ValueError, match=r"args\[1\] has shape \(3,\)"):
        back.tangent_vec((1.0, np.ones(3)))


def test_real_tangent_on_complex_primal():
    _, back = to_vec(1 + 1j)
    assert back.tangent_vec(2.0).tolist() == [2.0, 0.0]


def test_from_vec_checks_length():
    _, back = to_vec((1.0, 2.0))
    with pytest.raises(ValueError, match="length 2"):
        back(np.zeros(3))
