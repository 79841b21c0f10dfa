"""``to_vec``: flattening structured values to real coordinates and rebuilding them."""

from __future__ import annotations

import dataclasses
import datetime
from collections import namedtuple
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.finite_differences import to_vec
from rruletest.tangents import NoTangent, Tangent, Thunk, ZeroTangent
from rruletest.walk import MAX_DEPTH, WalkError, register_structure
from rruletest.walk import _structure as walk_structure

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
    """No attributes to walk into (no ``__dict__``, no slots): a leaf to_vec cannot flatten."""

    __slots__ = ()


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


# -- ported to rruletest.walk: cycles, depth, non-finite complex parts, subclasses, Decimal ----


def test_a_cycle_is_a_clear_error_naming_the_path():
    # Regression: to_vec of a self-containing list raised RecursionError.
    opts: list[Any] = [0.5]
    opts.append(opts)
    message = r"^args\[1\]: the value contains itself \(a cycle: it is args again\)$"
    with pytest.raises(WalkError, match=message):
        to_vec(opts, path="args")


def _nested(depth: int) -> Any:
    x: Any = 1.0
    for _ in range(depth):
        x = [x]
    return x


def test_deep_values_round_trip_and_too_deep_is_a_clear_error():
    v, back = to_vec(_nested(600))
    assert v.tolist() == [1.0]
    again = back(v + 1)
    for _ in range(600):
        again = again[0]
    assert again == 2.0
    assert back.tangent_vec(back.tangent(v)).tolist() == [1.0]
    with pytest.raises(WalkError, match=f"nests deeper than {MAX_DEPTH} levels"):
        to_vec(_nested(MAX_DEPTH + 10))


_complex_parts = st.floats(allow_nan=True, allow_infinity=True)


@given(_complex_parts, _complex_parts)
def test_complex_numbers_with_non_finite_parts_round_trip_exactly(re, im):
    # Regression: to_vec(complex(1, inf)) rebuilt as nan+infj.
    x = complex(re, im)
    v, back = to_vec(x)
    y = back(v)
    assert type(y) is complex
    assert np.array_equal([y.real, y.imag], [re, im], equal_nan=True)
    assert np.array_equal(back.tangent_vec(back.tangent(v)), v, equal_nan=True)


@given(
    st.sampled_from(["complex64", "complex128"]).flatmap(
        lambda dt: hnp.arrays(
            np.dtype(dt),
            hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
            elements=hnp.from_dtype(np.dtype(dt), allow_nan=True, allow_infinity=True),
        )
    )
)
def test_complex_arrays_with_non_finite_parts_round_trip_exactly(x):
    v, back = to_vec(x)
    y = back(v)
    assert (y.dtype, y.shape) == (x.dtype, x.shape)
    assert np.array_equal(y.real, x.real, equal_nan=True)
    assert np.array_equal(y.imag, x.imag, equal_nan=True)


def test_decimal_has_no_coordinates():
    # Regression: Decimal('0.5') was taken for a complex number.
    x = (Decimal("0.5"), 2.0)
    v, back = to_vec(x)
    assert v.tolist() == [2.0]
    assert back(v) == x
    assert back.tangent(v) == (NoTangent(), 2.0)


class MyFloat(float):
    pass


class StrictFloat(float):
    def __new__(cls, value: float, unit: str) -> StrictFloat:
        return super().__new__(cls, value)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_subclasses_keep_their_type():
    # Regression: np.matrix, masked arrays and float subclasses came back as their base type.
    m = np.asmatrix([[1.0, 2.0]])
    ma = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False], fill_value=-1.0)
    x = (m, ma, MyFloat(1.5))
    v, back = to_vec(x)
    assert v.tolist() == [1.0, 2.0, 1.0, 2.0, 3.0, 1.5]
    ym, yma, yf = back(v * 2)
    assert type(ym) is np.matrix
    assert ym.tolist() == [[2.0, 4.0]]
    assert type(yma) is np.ma.MaskedArray
    assert np.ma.getmaskarray(yma).tolist() == [False, True, False]
    assert yma.fill_value == -1.0
    assert yma.data.tolist() == [2.0, 4.0, 6.0]
    assert yma.mask is not ma.mask  # a copy: the rebuilt value is new
    assert (type(yf), yf) == (MyFloat, 3.0)
    assert type(back.error(np.abs(v))[0]) is np.ndarray  # errors are plain float64
    tm, tma, tf = back.tangent(v)  # tangents are plain arrays, as rand_tangent draws them
    assert (type(tm), type(tma), type(tf)) == (np.ndarray, np.ndarray, float)


def test_a_number_subclass_that_cannot_be_rebuilt_is_refused():
    with pytest.raises(
        TypeError, match=r"cannot rebuild the StrictFloat at x\[0\]: StrictFloat\(1.5\) does not"
    ):
        to_vec([StrictFloat(1.5, "m")])


class Diagonal:
    def __init__(self, diag: Any) -> None:
        self.diag = diag


def test_a_registered_type_is_flattened_and_rebuilt():
    register_structure(Diagonal, ["diag"])
    x = {"d": Diagonal(np.array([1.0, 2.0]))}
    v, back = to_vec(x)
    assert v.tolist() == [1.0, 2.0]
    y = back(v * 3)
    assert type(y["d"]) is Diagonal
    assert y["d"].diag.tolist() == [3.0, 6.0]
    t = back.tangent(v)
    assert isinstance(t["d"], Tangent)
    assert t["d"].primal_type is Diagonal
    assert back.tangent_vec({"d": Tangent(Diagonal, diag=np.ones(2))}).tolist() == [1.0, 1.0]
    assert back.tangent_vec({"d": Diagonal(np.full(2, 2.0))}).tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match=r"tangent at x\['d'\] must be a Tangent or a Diagonal"):
        back.tangent_vec({"d": 1.0})


@pytest.fixture
def registry() -> Any:
    """Restores the registry of user types after the test (a registration is global)."""
    saved = dict(walk_structure._REGISTRY)
    yield
    walk_structure._REGISTRY.clear()
    walk_structure._REGISTRY.update(saved)


@pytest.mark.usefixtures("registry")
def test_a_registered_scipy_sparse_matrix_keeps_its_pattern():
    sparse = pytest.importorskip("scipy.sparse")
    register_structure(
        sparse.csr_matrix,
        ["data"],
        lambda x, v: sparse.csr_matrix((v["data"], x.indices, x.indptr), shape=x.shape),
    )
    x = sparse.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    v, back = to_vec(x)
    assert v.tolist() == [1.0, 2.0]
    y = back(v * 10)
    assert isinstance(y, sparse.csr_matrix)
    assert y.toarray().tolist() == [[0.0, 10.0], [20.0, 0.0]]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_the_testers_call_the_function_with_the_type_it_was_given():
    from rruletest import RuleSet, test_rrule, unthunk

    rules = RuleSet()
    seen: list[type] = []

    def f(x):
        seen.append(type(x))
        return np.sin(np.asarray(x))

    @rules.register_rrule(f)
    def f_rrule(x):
        return f(x), lambda ybar: (NoTangent(), unthunk(ybar) * np.cos(np.asarray(x)))

    for x in (np.asmatrix([[0.1, 0.2]]), np.ma.array([0.1, 0.2], mask=[False, True]), MyFloat(0.3)):
        seen.clear()
        test_rrule(f, x, rrule_f=rules.rrule, rng=0)
        assert set(seen) == {type(x)}


class Plain:
    def __init__(self, w: Any, label: str) -> None:
        self.w, self.label = w, label


def test_plain_objects_are_walked_into_as_the_walk_sees_them():
    # The testers follow rruletest.walk, which walks a plain object's attributes: so does to_vec.
    x = [Plain(np.array([1.0, 2.0]), "layer")]
    v, back = to_vec(x)
    assert v.tolist() == [1.0, 2.0]
    [y] = back(v * 2)
    assert (type(y), y.w.tolist(), y.label) == (Plain, [2.0, 4.0], "layer")
    [t] = back.tangent(v)
    assert (t.primal_type, t.w.tolist(), t.label) == (Plain, [1.0, 2.0], NoTangent())
    assert back.tangent_vec([Tangent(Plain, w=np.ones(2))]).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match=r"type .*Opaque.* \(at x\[0\]\.w\)"):
        to_vec([Plain(Opaque(), "s")])


class Layer:
    weight: np.ndarray  # annotated; ``bias`` is set in __init__ only

    def __init__(self, weight: np.ndarray, bias: float) -> None:
        self.weight, self.bias = weight, bias


def test_a_partly_annotated_object_rebuilds_a_tangent_of_every_attribute():
    v, back = to_vec(Layer(np.array([1.0, 2.0]), 3.0))
    assert v.tolist() == [1.0, 2.0, 3.0]
    t = back.tangent(v)
    assert (t.primal_type, t.weight.tolist(), t.bias) == (Layer, [1.0, 2.0], 3.0)
    assert back.tangent_vec(t).tolist() == [1.0, 2.0, 3.0]


class Model:
    def __init__(self, n: int) -> None:  # its attributes are not named after its parameters
        self.w, self.c = np.ones(n), 2.0


def test_a_tangent_of_a_plain_object_reads_its_missing_attributes_as_zero():
    _, back = to_vec(Model(2))
    assert back.tangent_vec(Tangent(Model, c=1.0)).tolist() == [0.0, 0.0, 1.0]
    assert back.tangent_vec(Tangent(Model, w=np.ones(2))).tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(
        TypeError, match=r"^the tangent at x is a Tangent\(Plain, ...\) for a primal of type Model$"
    ):
        back.tangent_vec(Tangent(Plain, w=1.0))


@pytest.mark.parametrize(
    "const",
    [
        np.dtype(np.float32),
        np.random.default_rng(0),
        np.random.RandomState(0),
        np.random.PCG64(0),
        np,
        np.datetime64("2020-01-01"),
        np.str_("a"),
        datetime.date(2020, 1, 1),
        datetime.timedelta(1),
    ],
    ids=lambda c: type(c).__name__,
)
def test_values_the_walk_does_not_look_into_have_no_coordinates(const: Any) -> None:
    # A layer keeping its dtype or its generator: the primal still flattens.
    v, back = to_vec(Box(np.array([1.0, 2.0]), const))
    assert v.tolist() == [1.0, 2.0]
    y = back(v * 2)
    assert y.a.tolist() == [2.0, 4.0]
    assert y.b is const
    assert back.tangent(v).b is NoTangent()
