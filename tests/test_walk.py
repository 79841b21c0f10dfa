"""The one walk over values: children, rebuild, paths, guards and registered user types."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, namedtuple
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest import Tangent, Thunk, ZeroTangent
from rruletest.walk import (
    MAX_DEPTH,
    Attr,
    Element,
    Index,
    Key,
    WalkError,
    children,
    is_structure,
    leaves,
    map_leaves,
    rebuild,
    register_structure,
    render_path,
)

Point = namedtuple("Point", "x y")


@dataclasses.dataclass
class Layer:
    w: Any
    b: Any


@dataclasses.dataclass
class CallableLayer:
    w: float

    def __call__(self, x: float) -> float:
        return self.w * x


class Plain:
    def __init__(self, a: Any) -> None:
        self.a = a


class Slotted:
    __slots__ = ("u", "v")

    def __init__(self, u: Any, v: Any) -> None:
        self.u, self.v = u, v


def _paths(x: Any, root: str = "x") -> list[str]:
    return [render_path(root, p) for p, _ in leaves(x)]


def test_path_steps_render_as_python_indexes_them() -> None:
    value = {"a:b": [1.0, Point(2.0, 3.0)], 3: Layer(4.0, 5.0)}
    assert _paths(value, "args[0]") == [
        "args[0]['a:b'][0]",
        "args[0]['a:b'][1].x",
        "args[0]['a:b'][1].y",
        "args[0][3].w",
        "args[0][3].b",
    ]


def test_a_key_with_a_colon_is_kept_whole() -> None:
    # Regression: a mutation of {"a:b": x} was reported at path args[0]['a
    assert render_path("args[0]", (Key("a:b"), Index(1))) == "args[0]['a:b'][1]"


def test_object_array_elements_and_tangent_fields() -> None:
    arr = np.empty((1, 2), dtype=object)
    arr[0, 0], arr[0, 1] = 1.0, np.zeros(2)
    assert children(arr) == [(Element((0, 0)), 1.0), (Element((0, 1)), arr[0, 1])]
    assert _paths(Tangent(Point, x=1.0)) == ["x.x"]
    assert _paths(Tangent(tuple, 1.0, 2.0)) == ["x[0]", "x[1]"]
    assert _paths(Tangent(dict, {"k": 1.0})) == ["x['k']"]


@pytest.mark.parametrize(
    "leaf",
    [1.0, 2, 1 + 2j, "s", None, np.float32(1), np.arange(3.0), ZeroTangent(), np.sin, object()],
    ids=repr,
)
def test_leaves_have_no_children(leaf: Any) -> None:
    assert children(leaf) is None
    assert not is_structure(leaf)


def test_random_generators_are_opaque() -> None:
    assert children(np.random.default_rng(0)) is None


def test_callable_dataclass_and_plain_objects_are_structures() -> None:
    # Regression: a dataclass with __call__ was taken to have no tangent space.
    assert children(CallableLayer(2.0)) == [(Attr("w"), 2.0)]
    assert children(Plain(1.0)) == [(Attr("a"), 1.0)]
    assert children(Slotted(1.0, 2.0)) == [(Attr("u"), 1.0), (Attr("v"), 2.0)]


def test_thunks_are_leaves_unless_asked() -> None:
    t = Thunk(lambda: (1.0, 2.0))
    assert children(t) is None
    assert children(t, thunks=True) == [(Index(0), 1.0), (Index(1), 2.0)]
    assert [v for _, v in leaves([t])] == [1.0, 2.0]
    assert [v for _, v in leaves([t], thunks=False)] == [t]


@pytest.mark.parametrize(
    "value",
    [
        (1.0, 2.0),
        [1.0, [2.0]],
        Point(1.0, 2.0),
        {"a": 1.0, "b": 2.0},
        OrderedDict(a=1.0),
        Layer(1.0, 2.0),
        CallableLayer(3.0),
        Tangent(Point, x=1.0),
        Tangent(tuple, 1.0, 2.0),
        Tangent(dict, {"k": 1.0}),
    ],
    ids=lambda v: type(v).__name__,
)
def test_rebuild_keeps_the_type(value: Any) -> None:
    kids = children(value)
    assert kids is not None
    again = rebuild(value, [v for _, v in kids])
    assert type(again) is type(value)
    assert again == value


def test_rebuild_plain_and_slotted_objects() -> None:
    p = rebuild(Plain(1.0), [5.0])
    s = rebuild(Slotted(1.0, 2.0), [3.0, 4.0])
    assert (type(p), p.a) == (Plain, 5.0)
    assert (type(s), s.u, s.v) == (Slotted, 3.0, 4.0)


def test_rebuild_checks_the_count() -> None:
    with pytest.raises(ValueError, match="2 children expected, got 1"):
        rebuild((1.0, 2.0), [1.0])
    with pytest.raises(TypeError, match="float is not a container"):
        rebuild(1.0, [])


def test_a_cycle_is_a_walk_error_naming_the_path() -> None:
    opts: list[Any] = [0.5]
    opts.append(opts)
    with pytest.raises(WalkError, match=r"^x\[1\]: the value contains itself") as info:
        list(leaves(opts))
    assert info.value.reason == "cycle"
    with pytest.raises(WalkError, match="cycle"):
        map_leaves(lambda p, v: v, opts)


def test_shared_children_are_not_cycles() -> None:
    a = [1.0]
    assert [v for _, v in leaves((a, a))] == [1.0, 1.0]


def _nested(depth: int) -> list[Any]:
    x: list[Any] = [1.0]
    for _ in range(depth - 1):
        x = [x]
    return x


def test_deep_structures_are_walked_without_recursion() -> None:
    deep = _nested(400)
    [(path, leaf)] = list(leaves(deep))
    assert (len(path), leaf) == (400, 1.0)
    bumped = map_leaves(lambda p, v: v + 1, deep)
    [(_, new_leaf)] = list(leaves(bumped))
    assert new_leaf == 2.0


def test_too_deep_is_a_walk_error() -> None:
    with pytest.raises(WalkError, match=f"deeper than {MAX_DEPTH} levels") as info:
        list(leaves(_nested(MAX_DEPTH + 5)))
    assert info.value.reason == "depth"


class Diagonal:
    def __init__(self, diag: Any) -> None:
        self.diag = diag


class Masked:
    """A user type whose rebuild keeps a non-differentiable pattern."""

    def __init__(self, values: Any, mask: Any) -> None:
        self.values, self.mask = values, mask


def test_registered_types_are_followed_everywhere() -> None:
    register_structure(Diagonal, ["diag"])
    register_structure(Masked, ["values"], lambda x, v: Masked(v["values"], x.mask))
    d = Diagonal(np.array([1.0, 2.0]))
    m = Masked(np.array([3.0]), np.array([True]))
    assert _paths([d, m]) == ["x[0].diag", "x[1].values"]
    doubled = map_leaves(lambda p, v: v * 2, [d, m])
    assert type(doubled[0]) is Diagonal
    np.testing.assert_array_equal(doubled[0].diag, [2.0, 4.0])
    assert doubled[1].mask is m.mask
    assert Tangent(Diagonal, diag=1.0).diag == 1.0  # the tangent type knows the fields


def test_register_structure_rejects_misuse() -> None:
    with pytest.raises(TypeError, match="needs a class"):
        register_structure(Diagonal(1.0), ["diag"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fields must be attribute names"):
        register_structure(Diagonal, ["not a name"])


_values = st.recursive(
    st.floats(allow_nan=False) | st.integers() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        | st.builds(Point, inner, inner)
    ),
    max_leaves=12,
)


@given(_values)
def test_map_leaves_identity_round_trips(value: Any) -> None:
    assert map_leaves(lambda p, v: v, value) == value


@given(_values)
def test_leaves_and_map_leaves_visit_the_same_paths(value: Any) -> None:
    seen: list[Any] = []
    map_leaves(lambda p, v: seen.append(p), value)
    assert seen == [p for p, _ in leaves(value)]
