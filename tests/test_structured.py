"""``Tangent`` and ``add_to_primal`` (``rruletest.tangents.structured`` and ``.primal``)."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
from collections import OrderedDict, namedtuple
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest.tangents import NoTangent, Tangent, Thunk, ZeroTangent, add_to_primal
from rruletest.walk import register_structure

Point = namedtuple("Point", "x y")


class Pair(NamedTuple):
    a: float
    b: np.ndarray


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float = 0.0


@dataclasses.dataclass(frozen=True)
class Frozen:
    x: float
    y: float = dataclasses.field(init=False, default=1.0)


class Slotted:
    __slots__ = ("p", "q")

    def __init__(self, p: float, q: float) -> None:
        self.p, self.q = p, q


class Plain:
    def __init__(self, u: float, v: float) -> None:
        self.u, self.v = u, v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plain) and (self.u, self.v) == (other.u, other.v)

    __hash__ = None  # type: ignore[assignment]


small = st.floats(-1e6, 1e6, allow_nan=False)


# --------------------------------------------------------------------------------------------
# Tuples and lists
# --------------------------------------------------------------------------------------------


def test_tuple_tangent_construction_and_access() -> None:
    t = Tangent(tuple, 1.0, ZeroTangent(), np.array([2.0]))
    assert t.primal_type is tuple
    assert t[0] == 1.0
    assert t[1] is ZeroTangent()
    assert t[-3] == 1.0
    np.testing.assert_array_equal(t[2], [2.0])
    assert t[3] is ZeroTangent()
    assert t[-4] is ZeroTangent()
    assert t[np.int64(0)] == 1.0
    assert t[:2] == (1.0, ZeroTangent())
    assert len(t) == 3
    assert [type(v) for v in t] == [float, ZeroTangent, np.ndarray]
    assert t.keys() == [0, 1, 2]
    assert t.backing[0] == 1.0
    assert repr(t) == "Tangent(tuple, 1.0, ZeroTangent(), array([2.]))"
    assert repr(Tangent(tuple)) == "Tangent(tuple)"


def test_tuple_tangent_rejects_names_and_bad_indices() -> None:
    with pytest.raises(TypeError, match=r"^Tangent\(tuple, ...\) takes positional fields, got "):
        Tangent(tuple, a=1.0)
    t = Tangent(tuple, 1.0)
    with pytest.raises(TypeError, match=r"index must be an int, got 'a'"):
        t["a"]
    with pytest.raises(TypeError, match=r"index must be an int, got True"):
        t[True]
    with pytest.raises(AttributeError, match=r"has no attribute 'x'; read its fields as t\[i\]"):
        t.x  # noqa: B018


def test_tuple_tangent_algebra() -> None:
    a = Tangent(tuple, 1.0, 2.0)
    b = Tangent(tuple, 10.0, ZeroTangent(), 5.0)
    assert a + b == Tangent(tuple, 11.0, 2.0, 5.0)
    assert b - a == Tangent(tuple, 9.0, -2.0, 5.0)
    assert -a == Tangent(tuple, -1.0, -2.0)
    assert +a is a
    assert 2 * a == a * 2 == Tangent(tuple, 2.0, 4.0)
    assert np.float32(2) * a == Tangent(tuple, 2.0, 4.0)
    assert np.array(2.0) * a == Tangent(tuple, 2.0, 4.0)
    assert a / 2 == Tangent(tuple, 0.5, 1.0)
    assert a + ZeroTangent() is a
    assert ZeroTangent() + a is a
    assert a - NoTangent() is a
    assert a * ZeroTangent() is ZeroTangent()
    assert NoTangent() * a is NoTangent()
    assert ZeroTangent() - a == -a
    assert (a + Thunk(lambda: b)) == a + b


def test_tuple_tangent_refuses_non_scalar_products() -> None:
    a = Tangent(tuple, 1.0, 2.0)
    with pytest.raises(TypeError):
        a * np.ones(2)
    with pytest.raises(TypeError):
        a * a
    with pytest.raises(TypeError):
        a * "x"  # type: ignore[operator]
    with pytest.raises(TypeError):
        a / np.ones(2)


def test_tuple_and_list_primal_plus_tangent() -> None:
    t = Tangent(tuple, 0.5, ZeroTangent())
    assert (1.0, 2.0) + t == (1.5, 2.0)  # noqa: RUF005 - primal + tangent, not concatenation
    assert t + (1.0, 2.0) == (1.5, 2.0)  # noqa: RUF005
    out = [1.0, np.ones(2)] + Tangent(list, 1.0, np.ones(2))  # noqa: RUF005
    assert isinstance(out, list)
    assert out[0] == 2.0
    np.testing.assert_array_equal(out[1], [2.0, 2.0])
    assert add_to_primal((1.0, 2.0), Tangent(tuple, 1.0)) == (2.0, 2.0)  # short: rest is zero
    with pytest.raises(ValueError, match=r"^Tangent\(tuple, ...\) has 3 fields but the primal "):
        add_to_primal((1.0,), Tangent(tuple, 1.0, 2.0, 3.0))


# --------------------------------------------------------------------------------------------
# Namedtuples
# --------------------------------------------------------------------------------------------


def test_namedtuple_tangent_construction_and_access() -> None:
    t = Tangent(Point, x=1.0)
    assert t.x == 1.0
    assert t.y is ZeroTangent()
    assert t[0] == 1.0
    assert t[1] is ZeroTangent()
    assert t[-1] is ZeroTangent()
    assert t["x"] == 1.0
    assert t["y"] is ZeroTangent()
    assert list(t) == [1.0, ZeroTangent()]
    assert len(t) == 2
    assert t.keys() == ["x"]
    assert t.items() == [("x", 1.0)]
    assert repr(t) == "Tangent(Point, x=1.0)"
    assert Tangent(Point, 1.0, 2.0) == Tangent(Point, x=1.0, y=2.0)
    assert Tangent(Point, 1.0, y=2.0) == Tangent(Point, x=1.0, y=2.0)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(
            lambda: Tangent(Point, z=1.0),
            r"^Tangent\(Point, ...\) got field 'z', which Point does not have "
            r"\(its fields: x, y\)$",
            id="unknown-field",
        ),
        pytest.param(
            lambda: Tangent(Point, 1.0, 2.0, 3.0),
            r"^Tangent\(Point, ...\) got 3 positional fields but Point has 2: x, y$",
            id="too-many-positional",
        ),
        pytest.param(
            lambda: Tangent(Point, 1.0, x=2.0),
            r"^Tangent\(Point, ...\) got field 'x' twice$",
            id="field-twice",
        ),
    ],
)
def test_namedtuple_tangent_construction_errors(make: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        make()


def test_namedtuple_tangent_access_errors() -> None:
    t = Tangent(Point, x=1.0)
    with pytest.raises(AttributeError, match=r"has no field 'z' \(its fields: x, y\)"):
        t.z  # noqa: B018
    with pytest.raises(KeyError, match="has no field 'z'"):
        t["z"]
    with pytest.raises(IndexError, match=r"index 2 out of range for 2 fields"):
        t[2]


def test_namedtuple_primal_plus_tangent_rebuilds_the_type() -> None:
    p = Pair(1.0, np.array([1.0, 2.0]))
    out = p + Tangent(Pair, b=np.array([0.5, 0.5]))
    assert type(out) is Pair
    assert out.a == 1.0
    np.testing.assert_array_equal(out.b, [1.5, 2.5])
    np.testing.assert_array_equal(p.b, [1.0, 2.0])  # the primal is not modified
    assert Point(1.0, 2.0) + Tangent(Point, 1.0, 1.0) == Point(2.0, 3.0)
    assert Tangent(Point, y=1.0) + Point(1.0, 2.0) == Point(1.0, 3.0)
    with pytest.raises(TypeError, match=r"^cannot add Tangent\(Point, ...\) to a primal of type "):
        (1.0, 2.0) + Tangent(Point, x=1.0)  # noqa: RUF005


def test_namedtuple_tangent_algebra() -> None:
    a = Tangent(Point, x=1.0)
    b = Tangent(Point, y=2.0)
    assert a + b == Tangent(Point, x=1.0, y=2.0)
    assert a - b == Tangent(Point, x=1.0, y=-2.0)
    assert 3 * a == Tangent(Point, x=3.0)
    with pytest.raises(TypeError, match=r"^cannot combine Tangent\(Point, ...\) with Tangent\("):
        a + Tangent(Pair, a=1.0)


# --------------------------------------------------------------------------------------------
# Dataclasses
# --------------------------------------------------------------------------------------------


def test_dataclass_tangent_construction_access_and_algebra() -> None:
    t = Tangent(Params, w=np.ones(2))
    assert t.b is ZeroTangent()
    assert t["b"] is ZeroTangent()
    np.testing.assert_array_equal(t.w, [1.0, 1.0])
    assert Tangent(Params, np.ones(2), 3.0) == Tangent(Params, w=np.ones(2), b=3.0)
    s = t + Tangent(Params, b=1.0)
    assert s == Tangent(Params, w=np.ones(2), b=1.0)
    assert (2 * s).b == 2.0
    assert repr(Tangent(Params, b=1.0)) == "Tangent(Params, b=1.0)"
    with pytest.raises(TypeError, match=r"^Tangent\(Params, ...\) is not a sequence; use "):
        iter(t)
    with pytest.raises(
        TypeError, match=r"^Tangent\(Params, ...\) got field 'c', which Params does not have"
    ):
        Tangent(Params, c=1.0)


def test_dataclass_primal_plus_tangent_rebuilds_the_type() -> None:
    p = Params(np.array([1.0, 2.0]), 0.5)
    out = p + Tangent(Params, w=np.array([1.0, 1.0]))
    assert type(out) is Params
    assert out is not p
    np.testing.assert_array_equal(out.w, [2.0, 3.0])
    assert out.b == 0.5
    np.testing.assert_array_equal(p.w, [1.0, 2.0])


def test_frozen_dataclass_with_non_init_field() -> None:
    out = Frozen(1.0) + Tangent(Frozen, x=1.0, y=0.5)
    assert type(out) is Frozen
    assert (out.x, out.y) == (2.0, 1.5)


# --------------------------------------------------------------------------------------------
# Dicts
# --------------------------------------------------------------------------------------------


def test_dict_tangent_construction_and_access() -> None:
    t = Tangent(dict, {"a": 1.0, 2: 3.0})
    assert t["a"] == 1.0
    assert t[2] == 3.0
    assert t["missing"] is ZeroTangent()
    assert Tangent(dict, a=1.0) == Tangent(dict, {"a": 1.0})
    assert repr(t) == "Tangent(dict, {'a': 1.0, 2: 3.0})"
    assert repr(Tangent(dict)) == "Tangent(dict)"
    with pytest.raises(AttributeError, match=r"has no attribute 'a'; read its fields as t\[key\]"):
        t.a  # noqa: B018
    with pytest.raises(TypeError, match=r"^Tangent\(dict, ...\) takes one mapping of keys"):
        Tangent(dict, 1.0)


def test_dict_tangent_algebra_and_primal_plus_tangent() -> None:
    a = Tangent(dict, {"a": 1.0})
    b = Tangent(dict, {"b": 2.0})
    assert a + b == Tangent(dict, {"a": 1.0, "b": 2.0})
    assert (a + b) / 2 == Tangent(dict, {"a": 0.5, "b": 1.0})
    primal = {"a": 1.0, "b": 2.0, "c": "label"}
    assert primal + (a + b) == {"a": 2.0, "b": 4.0, "c": "label"}
    assert primal == {"a": 1.0, "b": 2.0, "c": "label"}
    ordered = OrderedDict(a=1.0)
    out = ordered + Tangent(OrderedDict, {"a": 1.0})
    assert type(out) is OrderedDict
    assert out == OrderedDict(a=2.0)
    proxy = MappingProxyType({"a": 1.0})
    assert dict(add_to_primal(proxy, Tangent(MappingProxyType, {"a": 1.0}))) == {"a": 2.0}


def test_dict_primal_plus_tangent_with_an_unknown_key() -> None:
    with pytest.raises(
        ValueError,
        match=r"^the Tangent\(dict, ...\) tangent has key 'z', which the primal dict lacks "
        r"\(its keys: 'a'\)$",
    ):
        {"a": 1.0} + Tangent(dict, {"z": 1.0})


# --------------------------------------------------------------------------------------------
# Plain objects
# --------------------------------------------------------------------------------------------


def test_slotted_class_fields_are_checked() -> None:
    t = Tangent(Slotted, p=1.0)
    assert t.q is ZeroTangent()
    out = Slotted(1.0, 2.0) + t
    assert type(out) is Slotted
    assert (out.p, out.q) == (2.0, 2.0)
    with pytest.raises(TypeError, match=r"got field 'r', which Slotted does not have"):
        Tangent(Slotted, r=1.0)


def test_plain_class_uses_init_parameters_for_reading() -> None:
    t = Tangent(Plain, u=1.0)
    assert t.v is ZeroTangent()
    with pytest.raises(AttributeError, match=r"has no field 'shape' \(its fields: u, v\)"):
        t.shape  # noqa: B018
    assert not hasattr(t, "dtype")
    p = Plain(1.0, 2.0)
    assert p + t == Plain(2.0, 2.0)
    assert (p.u, p.v) == (1.0, 2.0)
    with pytest.raises(TypeError, match=r"needs named fields: Plain declares no field order"):
        Tangent(Plain, 1.0)
    with pytest.raises(ValueError, match=r"^Tangent\(Plain, ...\) has field 'w', which the primal"):
        p + Tangent(Plain, w=1.0)


class Annotated:
    """Annotates one attribute; ``__init__`` sets another (instances have a ``__dict__``)."""

    weight: float

    def __init__(self, weight: float, bias: float) -> None:
        self.weight, self.bias = weight, bias


def test_partly_annotated_class_takes_its_other_attributes() -> None:
    # The walk (to_vec, rand_tangent) follows every attribute, so its Tangent must hold them.
    t = Tangent(Annotated, bias=1.0)
    assert t.bias == 1.0
    assert t.weight is ZeroTangent()
    assert Tangent(Annotated, 2.0).weight == 2.0  # annotations still give the field order
    out = Annotated(1.0, 2.0) + t
    assert (out.weight, out.bias) == (1.0, 3.0)
    with pytest.raises(AttributeError, match=r"has no field 'shape' \(its fields: weight, bias\)"):
        t.shape  # noqa: B018


@dataclasses.dataclass
class Spec:
    primal_type: float  # fields named as Tangent's own parameter and methods
    values: float = 0.0


def test_fields_named_like_tangents_own_names_are_read_by_key() -> None:
    t = Tangent(Spec, primal_type=1.0, values=2.0)
    assert (t.primal_type, t["primal_type"], t["values"]) == (Spec, 1.0, 2.0)
    assert Tangent(Spec, values=2.0)["primal_type"] is ZeroTangent()
    assert Spec(2.0) + t == Spec(3.0, 2.0)
    assert Tangent(dict, primal_type=1.0)["primal_type"] == 1.0


class Built:
    def __init__(self, n: int) -> None:  # its attributes are not named after its parameters
        self.w, self.c = np.ones(n), 2.0


def test_a_plain_objects_attributes_not_stored_read_as_zero() -> None:
    # Its class cannot say which attributes an instance has: a rule reads dx.w of Tangent(c=...)
    t = Tangent(Built, c=1.0)
    assert t.w is ZeroTangent()
    assert t["w"] is ZeroTangent()
    assert t.c == 1.0
    assert getattr(t, "dtype", None) is None  # names duck-typing code probes are not fields
    with pytest.raises(AttributeError, match=r"^Tangent\(Built, ...\) has no field 'astype'"):
        t.astype  # noqa: B018
    with pytest.raises(AttributeError, match=r"^Tangent\(Built, ...\) has no field '_w'"):
        t._w  # noqa: B018


# --------------------------------------------------------------------------------------------
# General behaviour
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "primal_type", [float, int, complex, np.ndarray, np.float64, str], ids=lambda t: t.__name__
)
def test_tangent_refuses_numbers_and_arrays(primal_type: type) -> None:
    with pytest.raises(TypeError, match=r"^Tangent is for structured primals; a "):
        Tangent(primal_type, 1.0)


def test_tangent_needs_a_type() -> None:
    with pytest.raises(TypeError, match=r"^Tangent needs the primal's type first, got primal_"):
        Tangent((1.0, 2.0))  # type: ignore[arg-type]


def test_equality_treats_missing_fields_as_zero() -> None:
    assert Tangent(Point, x=0.0) == Tangent(Point)
    assert Tangent(tuple, 1.0, 0.0) == Tangent(tuple, 1.0)
    assert Tangent(tuple, np.zeros(2)) == Tangent(tuple, ZeroTangent())
    assert Tangent(tuple, (0.0, 0.0)) == Tangent(tuple, NoTangent())
    assert Tangent(tuple, Tangent(Point, x=0.0)) == Tangent(tuple, ZeroTangent())
    assert Tangent(tuple, np.ones(2)) == Tangent(tuple, Thunk(lambda: np.ones(2)))
    assert Tangent(tuple, [1.0, 2.0]) == Tangent(tuple, [1.0, 2.0])
    assert Tangent(tuple, {"k": 1.0}) == Tangent(tuple, {"k": 1.0})
    assert Tangent(tuple, 1.0) != Tangent(tuple, 2.0)
    assert Tangent(tuple, np.ones(2)) != Tangent(tuple, np.ones(3))
    assert Tangent(tuple, 1.0) != Tangent(list, 1.0)
    assert Tangent(tuple, 1.0) != (1.0,)
    assert Tangent(tuple, "a") != Tangent(tuple, ZeroTangent())


def test_tangent_is_unhashable_and_truthiness_follows_zeros() -> None:
    with pytest.raises(TypeError):
        hash(Tangent(tuple, 1.0))
    assert not Tangent(tuple)
    assert not Tangent(Point, x=ZeroTangent())
    assert Tangent(Point, x=0.0)
    assert Tangent(dict, {"a": np.zeros(3)})


def test_tangent_conj_and_thunk_fields() -> None:
    t = Tangent(tuple, 1 + 1j, np.array([2j]), Thunk(lambda: 3j))
    c = t.conj()
    assert c[0] == 1 - 1j
    assert c[2] == -3j
    np.testing.assert_array_equal(c[1], [-2j])
    assert (Tangent(tuple, Thunk(lambda: 1.0)) + Tangent(tuple, 2.0))[0] == 3.0
    assert (-Tangent(tuple, Thunk(lambda: 1.0)))[0] == -1.0


def test_tangent_pickles() -> None:
    t = Tangent(Point, x=1.0, y=ZeroTangent())
    back = pickle.loads(pickle.dumps(t))
    assert back == t
    assert back.y is ZeroTangent()
    assert pickle.loads(pickle.dumps(Tangent(dict, {"a": 1.0}))) == Tangent(dict, {"a": 1.0})


def test_nested_structures_add_recursively() -> None:
    primal = {"p": Point(1.0, 2.0), "xs": (np.ones(2), 3)}
    t = Tangent(dict, {"p": Tangent(Point, y=1.0), "xs": Tangent(tuple, np.ones(2), NoTangent())})
    out = primal + t
    assert out["p"] == Point(1.0, 3.0)
    np.testing.assert_array_equal(out["xs"][0], [2.0, 2.0])
    assert out["xs"][1] == 3


def test_add_to_primal_with_natural_tangents() -> None:
    assert add_to_primal((1.0, 2.0), (0.5, ZeroTangent())) == (1.5, 2.0)
    assert add_to_primal(Point(1.0, 2.0), (1.0, 1.0)) == Point(2.0, 3.0)
    assert add_to_primal([1.0], [1.0]) == [2.0]
    assert add_to_primal({"a": 1.0, "b": 1.0}, {"a": 1.0}) == {"a": 2.0, "b": 1.0}
    assert add_to_primal(1.0, Thunk(lambda: 2.0)) == 3.0
    assert add_to_primal(np.ones(2), ZeroTangent()) is not None
    with pytest.raises(ValueError, match=r"^cannot add a tuple tangent of length 1 to a tuple "):
        add_to_primal((1.0, 2.0), (1.0,))


@given(
    a=st.lists(small, min_size=1, max_size=5),
    b=st.lists(small, min_size=1, max_size=5),
    c=st.floats(-100, 100, allow_nan=False),
)
def test_tuple_tangent_algebra_is_fieldwise(a: list[float], b: list[float], c: float) -> None:
    ta, tb = Tangent(tuple, *a), Tangent(tuple, *b)
    n = max(len(a), len(b))
    pad_a, pad_b = a + [0.0] * (n - len(a)), b + [0.0] * (n - len(b))
    assert (ta + tb).backing == tuple(x + y for x, y in zip(pad_a, pad_b, strict=True))
    assert ta + tb == tb + ta
    assert (ta - tb).backing == tuple(x - y for x, y in zip(pad_a, pad_b, strict=True))
    assert (c * ta).backing == tuple(c * x for x in a)
    primal = tuple(pad_a)
    assert primal + tb == tuple(x + y for x, y in zip(pad_a, pad_b, strict=True))


@given(x=small, y=small, dx=small, dy=small)
def test_namedtuple_primal_plus_tangent_is_fieldwise(
    x: float, y: float, dx: float, dy: float
) -> None:
    assert Point(x, y) + Tangent(Point, dx, dy) == Point(x + dx, y + dy)
    assert Point(x, y) + Tangent(Point, y=dy) == Point(x, y + dy)


@given(
    primal=st.dictionaries(st.sampled_from("abcd"), st.integers(-1000, 1000).map(float)),
    data=st.data(),
)
def test_dict_tangents_add_like_their_values(primal: dict[str, float], data: Any) -> None:
    keys = st.sampled_from(sorted(primal)) if primal else st.nothing()
    values = st.integers(-1000, 1000).map(float)
    d1 = data.draw(st.dictionaries(keys, values))
    d2 = data.draw(st.dictionaries(keys, values))
    t1, t2 = Tangent(dict, d1), Tangent(dict, d2)
    expected = {k: v + d1.get(k, 0.0) + d2.get(k, 0.0) for k, v in primal.items()}
    assert primal + (t1 + t2) == expected
    assert (primal + t1) + t2 == expected
    assert t1 + t2 == t2 + t1
    assert (t1 - t1) == Tangent(dict)


# --------------------------------------------------------------------------------------------
# Through rruletest.walk: deep values and registered types
# --------------------------------------------------------------------------------------------


def test_add_to_primal_of_a_deep_value_needs_no_recursion() -> None:
    primal: Any = 1.0
    tangent: Any = 0.5
    for _ in range(600):
        primal, tangent = [primal], Tangent(list, tangent)
    out = add_to_primal(primal, tangent)
    for _ in range(600):
        assert type(out) is list
        out = out[0]
    assert out == 1.5


class Diag:
    def __init__(self, diag: Any) -> None:
        self.diag = diag


def test_add_to_primal_of_a_registered_type_uses_its_rebuild() -> None:
    made: list[Any] = []

    def make(x: Diag, values: dict[str, Any]) -> Diag:
        made.append(values)
        return Diag(values["diag"])

    register_structure(Diag, ["diag"], make)
    out = add_to_primal(Diag(np.ones(2)), Tangent(Diag, diag=np.full(2, 0.5)))
    assert type(out) is Diag
    np.testing.assert_array_equal(out.diag, [1.5, 1.5])
    assert len(made) == 1
    with pytest.raises(TypeError, match=r"^cannot add Tangent\(Diag, ...\) to a primal of type "):
        add_to_primal(1.0, Tangent(Diag, diag=1.0))


def test_add_to_primal_of_a_tangent_adds_the_tangents() -> None:
    # A Tangent can be a primal (a pullback's argument); its tangent is a Tangent of its type.
    primal = Tangent(Point, x=1.0)
    assert add_to_primal(primal, Tangent(Point, x=2.0, y=1.0)) == Tangent(Point, x=3.0, y=1.0)
    pair = add_to_primal((primal,), Tangent(tuple, Tangent(Point, y=2.0)))
    assert pair == (Tangent(Point, x=1.0, y=2.0),)
    with pytest.raises(
        TypeError, match=r"^cannot combine Tangent\(Point, ...\) with Tangent\(tuple"
    ):
        add_to_primal(primal, Tangent(tuple, 1.0))


def test_before_the_walk_loads_a_built_in_walk_adds() -> None:
    # rruletest.walk sits above the tangents and registers itself when it loads; before that,
    # primal + Tangent still works for the built-in containers.
    code = (
        "import sys\n"
        "from collections import namedtuple\n"
        "from rruletest.tangents import Tangent, add_to_primal\n"
        "assert 'rruletest.walk' not in sys.modules\n"
        "P = namedtuple('P', 'x y')\n"
        "print((1.0, [2.0]) + Tangent(tuple, 1.0, Tangent(list, 0.5)))\n"
        "print(add_to_primal({'a': P(1.0, 2.0)}, {'a': Tangent(P, y=1.0)}))\n"
        "print(add_to_primal([Tangent(P, x=1.0)], [Tangent(P, y=1.0)]))\n"
        "import rruletest.walk\n"
        "print(add_to_primal({'a': P(1.0, 2.0)}, {'a': Tangent(P, y=1.0)}))\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    ).stdout
    assert out.splitlines() == [
        "(2.0, [2.5])",
        "{'a': P(x=1.0, y=3.0)}",
        "[Tangent(P, x=1.0, y=1.0)]",
        "{'a': P(x=1.0, y=3.0)}",
    ]


# Indexing unthunks a thunked field (ChainRulesCore's getindex/getproperty)
# --------------------------------------------------------------------------------------------


def test_tuple_tangent_indexing_unthunks_the_field() -> None:
    t = Tangent(tuple, Thunk(lambda: 2.0), 3.0)
    assert t[0] == 2.0
    assert isinstance(t[0], float)
    assert t[-2] == 2.0
    assert t[1] == 3.0
    assert isinstance(t.backing[0], Thunk)  # the stored value stays lazy
    assert isinstance(next(iter(t)), Thunk)  # iteration gives stored values


def test_dict_tangent_indexing_unthunks_the_field() -> None:
    t = Tangent(dict, {"a": Thunk(lambda: np.ones(2))})
    np.testing.assert_array_equal(t["a"], [1.0, 1.0])
    assert isinstance(t["a"], np.ndarray)
    assert t["missing"] is ZeroTangent()


def test_named_tangent_attribute_and_index_unthunk_the_field() -> None:
    calls: list[int] = []
    t = Tangent(Point, x=Thunk(lambda: calls.append(1) or 5.0))
    assert t.x == 5.0
    assert t[0] == 5.0
    assert t["x"] == 5.0
    assert t.y is ZeroTangent()
    assert calls == [1]


def test_thunk_of_a_zero_field_reads_as_the_zero() -> None:
    t = Tangent(tuple, Thunk(lambda: NoTangent()))
    assert t[0] is NoTangent()


def test_in_reads_a_dict_tangents_keys_as_a_dicts() -> None:
    t = Tangent(dict, {"s": 1.0})
    assert "s" in t
    assert "p" not in t
    assert t["p"] == ZeroTangent()  # absent keys still read as zeros
