"""The one walk over values: children, rebuild, paths, guards and registered user types."""

from __future__ import annotations

import dataclasses
import enum
from collections import OrderedDict, defaultdict, namedtuple
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rruletest import (
    NoTangent,
    RuleSet,
    RuleTestFailure,
    Tangent,
    Thunk,
    ZeroTangent,
    rand_tangent,
    test_approx,
    test_frule,
    test_rrule,
    unthunk,
)
from rruletest.finite_differences import to_vec
from rruletest.tangents import add_to_primal
from rruletest.walk import (
    MAX_DEPTH,
    Attr,
    Element,
    Index,
    Key,
    WalkError,
    children,
    fold,
    is_registered,
    is_structure,
    leaves,
    map_leaves,
    rebuild,
    register_structure,
    render_path,
)
from rruletest.walk import _structure as walk_structure

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


class Scaled:
    __slots__ = ("p",)
    scale: ClassVar[float] = 2.0  # annotated, but the class's: no part of an instance

    def __init__(self, p: float) -> None:
        self.p = p


def test_a_slotted_objects_children_are_its_slots_not_its_class_variables() -> None:
    assert children(Scaled(1.0)) == [(Attr("p"), 1.0)]
    v, back = to_vec(Scaled(1.0))  # rebuilding set the read-only class attribute: it raised
    assert (v.tolist(), back(v * 2).p) == ([1.0], 2.0)
    assert rand_tangent(0, Scaled(1.0)).keys() == ["p"]
    test_approx(Tangent(Scaled, p=1.0), Scaled(1.0))
    with pytest.raises(TypeError, match=r"got field 'scale', which Scaled does not have"):
        Tangent(Scaled, scale=1.0)


@dataclasses.dataclass
class Scaling:
    w: np.ndarray
    unit: dataclasses.InitVar[float]  # used by __post_init__, kept nowhere

    def __post_init__(self, unit: float) -> None:
        self.w = self.w * unit


def test_a_dataclass_needing_an_init_var_is_rebuilt_as_a_copy() -> None:
    # Its constructor cannot be called again: the InitVar's value was never kept.
    x = Scaling(np.array([1.0, 2.0]), 1.0)
    y = rebuild(x, [np.array([3.0, 4.0])])
    assert (type(y), y.w.tolist(), x.w.tolist()) == (Scaling, [3.0, 4.0], [1.0, 2.0])
    v, back = to_vec(x)
    assert back(v * 2).w.tolist() == [2.0, 4.0]
    assert add_to_primal(x, Tangent(Scaling, w=np.ones(2))).w.tolist() == [2.0, 3.0]


class Mode(enum.Enum):
    SCALE = 0.5


def test_enum_members_are_opaque() -> None:
    # A member is a singleton: rebuilding one with new attributes would change it everywhere.
    assert children(Mode.SCALE) is None
    assert rand_tangent(0, [1.0, Mode.SCALE])[1] is NoTangent()
    v, back = to_vec([1.0, Mode.SCALE])
    assert v.tolist() == [1.0]
    assert back(v * 2) == [2.0, Mode.SCALE]
    assert Mode.SCALE.value == 0.5


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


# --------------------------------------------------------------------------------------------
# One registration, every walk: to_vec, rand_tangent, test_approx, add_to_primal, the testers
# --------------------------------------------------------------------------------------------


@pytest.fixture
def registry() -> Any:
    """Restores the registry of user types after the test (a registration is global)."""
    saved = dict(walk_structure._REGISTRY)
    yield
    walk_structure._REGISTRY.clear()
    walk_structure._REGISTRY.update(saved)


class UserDiagonal:
    """A user's diagonal matrix: only the diagonal is differentiable."""

    def __init__(self, diag: Any) -> None:
        self.diag = diag

    def __repr__(self) -> str:
        return f"UserDiagonal({self.diag!r})"


def _apply(d: UserDiagonal, x: Any) -> Any:
    return d.diag * x


def _diagonal_rules(factor: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(_apply)
    def _apply_rrule(d: UserDiagonal, x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            return NoTangent(), Tangent(UserDiagonal, diag=factor * ybar * x), ybar * d.diag

        return _apply(d, x), pullback

    @rules.register_frule(_apply)
    def _apply_frule(dots: Any, d: UserDiagonal, x: Any) -> Any:
        _, dd, dx = dots
        return _apply(d, x), factor * dd.diag * x + d.diag * dx

    return rules


@pytest.mark.usefixtures("registry")
def test_a_registered_user_type_works_everywhere() -> None:
    register_structure(UserDiagonal, ["diag"])
    d = UserDiagonal(np.array([1.0, 2.0]))
    v, back = to_vec([d, 3.0])
    assert v.tolist() == [1.0, 2.0, 3.0]
    assert type(back(v)[0]) is UserDiagonal
    t = rand_tangent(0, d)
    assert (t.primal_type, t.diag.shape) == (UserDiagonal, (2,))
    moved = add_to_primal(d, t)
    assert type(moved) is UserDiagonal
    np.testing.assert_array_equal(moved.diag, d.diag + t.diag)
    test_approx(t, Tangent(UserDiagonal, diag=t.diag.copy()))
    with pytest.raises(RuleTestFailure, match=r"xbar\.diag: 2 of 2 elements differ"):
        test_approx(UserDiagonal(d.diag * 2), d, path="xbar")
    x = np.array([3.0, 4.0])
    right = _diagonal_rules(1.0)
    test_rrule(_apply, d, x, rrule_f=right.rrule, rng=0)
    test_frule(_apply, d, x, frule_f=right.frule, rng=0)
    wrong = _diagonal_rules(2.0)
    with pytest.raises(RuleTestFailure, match=r"args\[0\]\.diag: 2 of 2 elements differ"):
        test_rrule(_apply, d, x, rrule_f=wrong.rrule, rng=0)
    with pytest.raises(RuleTestFailure, match="differs from the numerical jvp"):
        test_frule(_apply, d, x, frule_f=wrong.frule, rng=0)


def _matvec(a: Any, x: Any) -> Any:
    return a @ x


@pytest.mark.usefixtures("registry")
def test_a_registered_scipy_sparse_matrix_works_through_test_rrule() -> None:
    sparse = pytest.importorskip("scipy.sparse")
    register_structure(
        sparse.csr_matrix,
        ["data"],
        lambda x, v: sparse.csr_matrix((v["data"], x.indices, x.indptr), shape=x.shape),
    )
    rules = RuleSet()

    @rules.register_rrule(_matvec)
    def _matvec_rrule(a: Any, x: Any) -> Any:
        rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))

        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), ZeroTangent(), ZeroTangent()
            abar = Tangent(sparse.csr_matrix, data=ybar[rows] * x[a.indices])
            return NoTangent(), abar, a.T @ ybar

        return _matvec(a, x), pullback

    a = sparse.csr_matrix(np.array([[0.0, 1.0], [2.0, 3.0]]))
    test_rrule(_matvec, a, np.array([1.0, -1.0]), rrule_f=rules.rrule, rng=0)
    t = rand_tangent(0, a)
    assert (t.primal_type, t.data.shape) == (sparse.csr_matrix, (3,))
    moved = add_to_primal(a, t)
    np.testing.assert_array_equal(moved.data, a.data + t.data)
    np.testing.assert_array_equal(moved.indices, a.indices)


# --------------------------------------------------------------------------------------------
# fold, is_registered, and the small additions to rebuild and Element
# --------------------------------------------------------------------------------------------


def test_fold_is_bottom_up_in_order_and_stops_where_expand_says() -> None:
    seen: list[str] = []

    def leaf(path: Any, v: Any) -> Any:
        seen.append(render_path("x", path))
        return 1

    def node(path: Any, x: Any, steps: Any, results: list[Any]) -> Any:
        seen.append(render_path("x", path) + "/")
        return sum(results)

    value = {"a": [1.0, (2.0, 3.0)], "b": Point(4.0, 5.0)}
    assert fold(value, leaf, node) == 5
    assert seen == [
        "x['a'][0]",
        "x['a'][1][0]",
        "x['a'][1][1]",
        "x['a'][1]/",
        "x['a']/",
        "x['b'].x",
        "x['b'].y",
        "x['b']/",
        "x/",
    ]

    def tuples_are_leaves(x: Any) -> Any:
        return None if isinstance(x, tuple) else children(x)

    assert fold(value, leaf, node, expand=tuples_are_leaves) == 3  # 1.0, (2.0, 3.0), Point


def test_fold_is_guarded() -> None:
    with pytest.raises(WalkError, match="deeper than"):
        fold(_nested(MAX_DEPTH + 5), lambda p, v: v, lambda p, x, s, r: r)
    loop: list[Any] = [1.0]
    loop.append({"k": loop})
    with pytest.raises(WalkError, match=r"^x\[1\]\['k'\]: .* \(a cycle: it is x again\)$"):
        fold(loop, lambda p, v: v, lambda p, x, s, r: r)


@pytest.mark.usefixtures("registry")
def test_is_registered_covers_subclasses() -> None:
    class Base:
        def __init__(self, w: Any) -> None:
            self.w = w

    class Child(Base):
        pass

    assert not is_registered(Child(1.0))
    register_structure(Base, ["w"])
    assert is_registered(Base(1.0))
    assert is_registered(Child(1.0))
    assert not is_registered(1.0)


def test_rebuild_keeps_mapping_types() -> None:
    d: defaultdict[str, Any] = defaultdict(list, a=1.0)
    again = rebuild(d, [2.0])
    assert type(again) is defaultdict
    assert again.default_factory is list
    assert again == {"a": 2.0}
    assert d == {"a": 1.0}
    proxy = rebuild(MappingProxyType({"a": 1.0}), [3.0])
    assert type(proxy) is MappingProxyType
    assert dict(proxy) == {"a": 3.0}


def test_the_element_of_a_0d_object_array_has_no_index_text() -> None:
    x = np.empty((), dtype=object)
    x[()] = 1.0
    assert children(x) == [(Element(()), 1.0)]
    assert render_path("x", (Element(()),)) == "x"


class Weights:
    """A plain object (no dataclass, not registered): the walk follows its attributes."""

    def __init__(self, w: float) -> None:
        self.w = w

    def __repr__(self) -> str:
        return f"Weights({self.w})"


def _weigh(p: Weights, x: Any) -> Any:
    return p.w * x


def test_a_plain_object_argument_is_checked_end_to_end() -> None:
    def rules_with(factor: float) -> RuleSet:
        rules = RuleSet()

        @rules.register_rrule(_weigh)
        def _weigh_rrule(p: Weights, x: Any) -> Any:
            def pullback(ybar: Any) -> Any:
                ybar = unthunk(ybar)
                if isinstance(ybar, ZeroTangent):
                    return NoTangent(), ybar, ybar
                pbar = Tangent(Weights, w=factor * float(np.sum(ybar * x)))
                return NoTangent(), pbar, ybar * p.w

            return _weigh(p, x), pullback

        return rules

    x = np.array([1.0, 2.0])
    test_rrule(_weigh, Weights(2.0), x, rrule_f=rules_with(1.0).rrule, rng=0)
    with pytest.raises(RuleTestFailure, match=r"args\[0\]\.w: values differ"):
        test_rrule(_weigh, Weights(2.0), x, rrule_f=rules_with(2.0).rrule, rng=0)


@dataclasses.dataclass
class Cast:
    w: np.ndarray
    dtype: np.dtype[Any]


def _cast(p: Cast) -> Any:
    return (2 * p.w).astype(p.dtype)


def test_a_dataclass_holding_its_dtype_is_checked_end_to_end() -> None:
    rules = RuleSet()

    @rules.register_rrule(_cast)
    def _cast_rrule(p: Cast) -> Any:
        def pullback(ybar: Any) -> Any:
            return NoTangent(), Tangent(Cast, w=2 * unthunk(ybar), dtype=NoTangent())

        return _cast(p), pullback

    test_rrule(_cast, Cast(np.array([1.0, 2.0]), np.dtype(np.float64)), rrule_f=rules.rrule, rng=0)
