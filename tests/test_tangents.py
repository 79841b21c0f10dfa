"""Zeros, thunks and ``conj`` (``rruletest.tangents.zeros`` and ``.thunks``, public in
``rruletest.tangents``): the algebra every rule relies on. ``Tangent`` is tested in
``test_structured.py``."""

from __future__ import annotations

import copy
import itertools
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest import tangents
from rruletest.tangents import (
    AbstractZero,
    InplaceableThunk,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    conj,
    unthunk,
)

ZEROS = [pytest.param(NoTangent(), id="NoTangent"), pytest.param(ZeroTangent(), id="ZeroTangent")]

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
complexes = st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e300)
float_dtypes = st.sampled_from([np.float16, np.float32, np.float64, np.complex64, np.complex128])
arrays = float_dtypes.flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
)
numpy_scalars = st.one_of(
    finite.map(np.float64),
    finite.filter(lambda v: abs(v) < 1e30).map(np.float32),
    complexes.map(np.complex128),
)
values = st.one_of(finite, complexes, arrays, numpy_scalars)
zeros = st.sampled_from([NoTangent(), ZeroTangent()])


# --------------------------------------------------------------------------------------------
# Zeros: identity, printing, hashing, pickling
# --------------------------------------------------------------------------------------------


def test_zeros_are_singletons_and_distinct() -> None:
    assert NoTangent() is NoTangent()
    assert ZeroTangent() is ZeroTangent()
    assert NoTangent() is not ZeroTangent()
    assert tangents.NO_TANGENT is NoTangent()
    assert tangents.ZERO_TANGENT is ZeroTangent()
    assert isinstance(NoTangent(), AbstractZero)
    assert isinstance(ZeroTangent(), AbstractZero)


def test_abstract_zero_cannot_be_made() -> None:
    with pytest.raises(TypeError, match=r"^AbstractZero is abstract: use NoTangent\(\) or"):
        AbstractZero()


@pytest.mark.parametrize("z", ZEROS)
def test_zero_prints_compares_and_hashes(z: AbstractZero) -> None:
    name = type(z).__name__
    assert repr(z) == str(z) == f"{name}()"
    assert not z
    assert bool(z) is False
    assert z == type(z)()
    assert z == type(z)()
    assert z != 0
    assert z != 0.0
    assert z is not None
    assert NoTangent() != ZeroTangent()
    assert hash(z) == hash(type(z)())
    assert {z: 1}[type(z)()] == 1
    assert len({NoTangent(), ZeroTangent(), NoTangent()}) == 2


@pytest.mark.parametrize("z", ZEROS)
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_zero_singleton_survives_pickle(z: AbstractZero, protocol: int) -> None:
    assert pickle.loads(pickle.dumps(z, protocol=protocol)) is z
    nested = pickle.loads(pickle.dumps({"a": [z, (z, 1.0)]}, protocol=protocol))
    assert nested["a"][0] is z
    assert nested["a"][1][0] is z


@pytest.mark.parametrize("z", ZEROS)
def test_zero_singleton_survives_copy(z: AbstractZero) -> None:
    assert copy.copy(z) is z
    assert copy.deepcopy(z) is z
    assert copy.deepcopy([z, {"k": z}])[1]["k"] is z


@pytest.mark.parametrize("z", ZEROS)
def test_zero_converts_to_the_number_zero(z: AbstractZero) -> None:
    assert float(z) == 0.0
    assert isinstance(float(z), float)
    assert complex(z) == 0j
    arr = np.asarray(z)
    assert arr.shape == ()
    assert arr.dtype == np.float64
    assert arr == 0
    assert np.asarray(z, dtype=np.float32).dtype == np.float32


# --------------------------------------------------------------------------------------------
# Zeros: algebra
# --------------------------------------------------------------------------------------------


def test_sum_of_zeros_keeps_the_weaker_kind() -> None:
    nt, zt = NoTangent(), ZeroTangent()
    assert nt + zt is nt
    assert zt + nt is nt
    assert zt + zt is zt
    assert nt + nt is nt
    assert nt - zt is nt
    assert zt - nt is nt
    assert zt - zt is zt


@pytest.mark.parametrize("z", ZEROS)
def test_zero_unary_and_structural_operations(z: AbstractZero) -> None:
    assert -z is z
    assert +z is z
    assert abs(z) is z
    assert z.conj() is z
    assert z.real is z
    assert z.imag is z
    assert z[0] is z
    assert z["key"] is z
    assert z[1:, None] is z


@given(x=values, z=zeros)
def test_zero_is_neutral_under_addition(x: Any, z: AbstractZero) -> None:
    assert x + z is x
    assert z + x is x
    assert x - z is x


@given(x=values, z=zeros)
def test_zero_minus_x_is_negated_x(x: Any, z: AbstractZero) -> None:
    out = z - x
    expected = -x
    assert type(out) is type(expected)
    np.testing.assert_array_equal(out, expected)


@given(x=values, z=zeros)
def test_zero_absorbs_products(x: Any, z: AbstractZero) -> None:
    assert z * x is z
    assert x * z is z
    assert z / (x if not np.any(x == 0) else 1.0) is z


@given(z=zeros)
def test_zero_absorbs_matmul(z: AbstractZero) -> None:
    m = np.ones((2, 2))
    assert m @ z is z
    assert z @ m is z


@pytest.mark.parametrize("z", ZEROS)
@pytest.mark.parametrize(
    "dtype", [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int64]
)
def test_numpy_never_makes_object_arrays_from_a_zero(z: AbstractZero, dtype: Any) -> None:
    a = np.ones(3, dtype=dtype)
    for out in (a + z, z + a, a - z):
        assert out is a
        assert out.dtype == dtype
    assert (-(z - a)).dtype == dtype
    assert a * z is z
    assert z * a is z
    scalar = dtype(2)
    assert scalar + z is scalar
    assert z + scalar is scalar
    assert scalar * z is z
    assert z * scalar is z


@pytest.mark.parametrize("z", ZEROS)
def test_numpy_array_construction_with_zeros_gives_numbers(z: AbstractZero) -> None:
    mixed = np.array([z, 1.0, 2.0])
    assert mixed.dtype == np.float64
    np.testing.assert_array_equal(mixed, [0.0, 1.0, 2.0])
    # Asking for objects explicitly keeps the zero itself.
    kept = np.array([z, 1.0], dtype=object)
    assert kept[0] is z


@pytest.mark.parametrize("z", ZEROS)
def test_numpy_ufuncs_follow_the_zero_algebra_and_others_are_refused(z: AbstractZero) -> None:
    x = np.ones(2)
    assert np.add(x, z) is x
    assert np.add(z, x) is x
    assert np.multiply(x, z) is z
    np.testing.assert_array_equal(np.subtract(z, x), -x)
    assert np.add(z, NoTangent()) is NoTangent()
    assert np.negative(z) is z
    assert not np.equal(x, z)
    assert np.not_equal(x, z)
    with pytest.raises(TypeError, match="NotImplemented"):  # not an object array of zeros
        np.sin(z)
    with pytest.raises(TypeError, match="NotImplemented"):
        np.maximum(x, z)
    with pytest.raises(TypeError, match="cannot divide by"):
        np.divide(x, z)
    assert np.divide(z, x) is z
    assert np.divide(z, z) is z  # as ``z / z``


@pytest.mark.parametrize("z", ZEROS)
def test_accumulating_a_zero_in_place(z: AbstractZero) -> None:
    acc = np.arange(3.0, dtype=np.float32)
    same = acc
    acc += z  # a pullback's zero cotangent added to a running total
    acc -= z
    assert acc is same
    np.testing.assert_array_equal(acc, [0.0, 1.0, 2.0])
    assert acc.dtype == np.float32
    acc *= z
    assert acc is same
    np.testing.assert_array_equal(acc, [0.0, 0.0, 0.0])
    out = np.full(3, 5.0)
    assert np.add(np.ones(3), z, out=out) is out
    np.testing.assert_array_equal(out, [1.0, 1.0, 1.0])
    scalar = np.float64(2.0)
    scalar += z
    assert scalar == 2.0


@pytest.mark.parametrize("z", ZEROS)
def test_a_zero_in_place_matmul_zeroes_the_array(z: AbstractZero) -> None:
    # numpy passes ``axes`` to matmul for ``@=``: it was refused (TypeError), where the
    # operators zero-multiply
    acc = np.ones((2, 2))
    same = acc
    acc @= z
    assert acc is same
    np.testing.assert_array_equal(acc, np.zeros((2, 2)))


@pytest.mark.parametrize("z", ZEROS)
def test_a_zero_ufunc_writes_out_by_numpys_casting_rule(z: AbstractZero) -> None:
    ints = np.ones(3, dtype=np.int64)
    with pytest.raises(TypeError, match="same_kind"):  # numpy refuses float into int
        np.add(np.full(3, 1.5), z, out=ints)
    with pytest.raises(TypeError, match="same_kind"):
        np.subtract(z, np.full(3, 1.5), out=ints)
    np.testing.assert_array_equal(ints, [1, 1, 1])
    np.add(np.full(3, 2.5), z, out=ints, casting="unsafe")
    np.testing.assert_array_equal(ints, [2, 2, 2])
    flags = np.ones(3, dtype=bool)
    assert np.multiply(flags, z, out=flags) is flags  # a zero is exact in any dtype
    assert not flags.any()


@pytest.mark.parametrize("z", ZEROS)
def test_an_object_array_times_a_zero_holds_that_zero(z: AbstractZero) -> None:
    cotangents = np.array([1.0, ZeroTangent(), 2.0], dtype=object)
    same = cotangents
    cotangents *= z
    assert cotangents is same
    assert all(v is z for v in cotangents)  # not the integer 0
    cotangents = np.array([1.0, ZeroTangent(), 2.0], dtype=object)
    cotangents += z
    assert list(cotangents) == [1.0, ZeroTangent(), 2.0]


@pytest.mark.parametrize("z", ZEROS)
def test_a_zero_ufunc_takes_where_and_dtype(z: AbstractZero) -> None:
    x = np.arange(1.0, 4.0)
    mask = np.array([True, False, True])
    out = np.full(3, 9.0)
    assert np.add(x, z, out=out, where=mask) is out
    np.testing.assert_array_equal(out, [1.0, 9.0, 3.0])
    np.multiply(x, z, out=out, where=mask)
    np.testing.assert_array_equal(out, [0.0, 9.0, 0.0])
    acc = x.copy()
    np.add(acc, z, out=acc, where=mask)
    np.testing.assert_array_equal(acc, x)
    cast = np.add(x, z, dtype=np.float32)
    assert cast.dtype == np.float32
    np.testing.assert_array_equal(cast, x)
    assert type(np.add(np.float64(2.0), z, dtype=np.float32)) is np.float32
    with pytest.raises(TypeError, match="same_kind"):
        np.add(x, z, dtype=np.int64)
    assert np.multiply(x, z, dtype=np.float32) is z


@pytest.mark.parametrize("z", ZEROS)
def test_scatter_adding_a_zero_leaves_the_array(z: AbstractZero) -> None:
    acc = np.arange(3.0)
    np.add.at(acc, [0, 0, 2], z)  # a pullback of indexing, with a zero cotangent
    np.subtract.at(acc, [1], z)
    np.testing.assert_array_equal(acc, [0.0, 1.0, 2.0])
    np.multiply.at(acc, [1, 2], z)
    np.testing.assert_array_equal(acc, [0.0, 0.0, 0.0])
    with pytest.raises(TypeError):
        np.add.at(z, [0], acc)
    with pytest.raises(TypeError):
        np.add.reduce(z)
    with pytest.raises(TypeError):
        np.add.outer(acc, z)


@pytest.mark.parametrize("z", ZEROS)
def test_sum_and_mean_of_a_zero_are_the_zero(z: AbstractZero) -> None:
    assert np.sum(z) is z
    assert np.mean(z) is z  # was np.float64(0.0): mean is linear, as sum is
    assert np.mean(z, axis=0) is z


@pytest.mark.parametrize("z", ZEROS)
def test_zero_cannot_be_divided_by(z: AbstractZero) -> None:
    with pytest.raises(TypeError):
        1.0 / z  # type: ignore[operator]


@pytest.mark.parametrize("z", ZEROS)
def test_zero_with_thunk_stays_lazy_or_unthunks(z: AbstractZero) -> None:
    calls: list[int] = []
    t = Thunk(lambda: calls.append(1) or 2.0)
    assert z + t is t
    assert t + z == 2.0
    assert z * t is z
    assert unthunk(z - Thunk(lambda: 3.0)) == -3.0
    assert calls == [1]


# --------------------------------------------------------------------------------------------
# conj
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        pytest.param(1 + 2j, 1 - 2j, id="python-complex"),
        pytest.param(2.5, 2.5, id="python-float"),
        pytest.param(3, 3, id="python-int"),
        pytest.param(np.complex64(1 + 1j), np.complex64(1 - 1j), id="numpy-complex64"),
        pytest.param(np.float32(1.5), np.float32(1.5), id="numpy-float32"),
    ],
)
def test_conj_of_numbers_keeps_their_type(x: Any, expected: Any) -> None:
    out = conj(x)
    assert out == expected
    assert type(out) is type(expected)


def test_conj_of_arrays_copies_only_complex_ones() -> None:
    real = np.ones(3)
    assert conj(real) is real
    c = np.array([1 + 1j, 2 - 3j], dtype=np.complex64)
    out = conj(c)
    assert out.dtype == np.complex64
    np.testing.assert_array_equal(out, [1 - 1j, 2 + 3j])
    assert conj(Thunk(lambda: 1j)) == -1j
    assert conj("text") == "text"


# --------------------------------------------------------------------------------------------
# Thunks
# --------------------------------------------------------------------------------------------


def test_thunk_computes_once() -> None:
    calls: list[int] = []

    def compute() -> np.ndarray:
        calls.append(1)
        return np.arange(3.0)

    t = Thunk(compute)
    assert calls == []
    assert repr(t).startswith("Thunk(")
    assert "compute" in repr(t)
    first = unthunk(t)
    second = t.unthunk()
    assert first is second
    np.testing.assert_array_equal(t + 1.0, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(2.0 * t, [0.0, 2.0, 4.0])
    assert calls == [1]
    assert repr(t) == "Thunk(value=array([0., 1., 2.]))"


def test_thunk_that_raises_is_tried_again() -> None:
    attempts: list[int] = []

    def flaky() -> float:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first call fails")
        return 5.0

    t = Thunk(flaky)
    with pytest.raises(RuntimeError, match="first call fails"):
        unthunk(t)
    assert unthunk(t) == 5.0
    assert unthunk(t) == 5.0
    assert attempts == [1, 1]


def test_nested_thunks_unthunk_fully() -> None:
    assert unthunk(Thunk(lambda: Thunk(lambda: 4.0))) == 4.0


def test_unthunk_passes_other_values_through() -> None:
    a = np.ones(2)
    assert unthunk(a) is a
    assert unthunk(ZeroTangent()) is ZeroTangent()


@given(x=finite.filter(lambda v: abs(v) < 1e100), y=finite.filter(lambda v: 0.5 < abs(v) < 1e100))
def test_thunk_arithmetic_matches_its_value(x: float, y: float) -> None:
    def t() -> Thunk:
        return Thunk(lambda: x)

    assert t() + y == x + y
    assert y + t() == y + x
    assert t() - y == x - y
    assert y - t() == y - x
    assert t() * y == x * y
    assert y * t() == y * x
    assert t() / y == x / y
    assert -t() == -x
    assert +t() == x
    assert t() + t() == x + x


def test_thunk_with_arrays_in_both_orders() -> None:
    a = np.arange(1.0, 4.0)
    t = Thunk(lambda: np.full(3, 2.0))
    for out in (a + t, t + a, a * t, t * a, a - t, t - a, a / t, t / a):
        assert isinstance(out, np.ndarray)
        assert out.dtype == np.float64
    np.testing.assert_array_equal(a - t, [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(a / t, [0.5, 1.0, 1.5])
    m = Thunk(lambda: np.eye(2))
    np.testing.assert_array_equal(m @ np.ones(2), [1.0, 1.0])
    np.testing.assert_array_equal(np.ones(2) @ m, [1.0, 1.0])


def test_iterating_a_thunk_iterates_its_value() -> None:
    # A pullback unpacks a thunked cotangent of a tuple output: Python's fallback iteration
    # through __getitem__ never stopped at a zero or a Tangent (every index reads as a zero).
    s, c = Thunk(lambda: Tangent(tuple, 1.0, 2.0))
    assert (s, c) == (1.0, 2.0)
    assert list(Thunk(lambda: ZeroTangent())) == [ZeroTangent()]
    assert list(Thunk(lambda: np.array([1.0, 2.0]))) == [1.0, 2.0]
    assert 2.0 in Thunk(lambda: (1.0, 2.0))


def test_thunk_needs_a_function() -> None:
    with pytest.raises(TypeError, match=r"^Thunk takes a function of no arguments, got fn=1\.0$"):
        Thunk(1.0)  # type: ignore[arg-type]


def test_inplaceable_thunk_adds_in_place_or_computes() -> None:
    calls: list[str] = []

    def add(x: np.ndarray) -> np.ndarray:
        calls.append("add")
        x += 2.0
        return x

    def compute() -> np.ndarray:
        calls.append("compute")
        return np.full(2, 2.0)

    it = InplaceableThunk(add, compute)
    acc = np.ones(2)
    assert it.add_into(acc) is acc
    np.testing.assert_array_equal(acc, [3.0, 3.0])
    assert calls == ["add"]
    np.testing.assert_array_equal(unthunk(it), [2.0, 2.0])
    np.testing.assert_array_equal(it + 1.0, [3.0, 3.0])
    assert calls == ["add", "compute"]
    assert isinstance(it, Thunk)
    assert isinstance(it.thunk, Thunk)
    assert repr(it).startswith("InplaceableThunk(")
    assert "add" in repr(it)


@pytest.mark.parametrize("z", ZEROS)
def test_a_thunk_times_a_zero_is_the_zero_without_computing_it(z: AbstractZero) -> None:
    calls: list[int] = []

    def compute() -> np.ndarray:
        calls.append(1)
        raise RuntimeError("not needed")

    t = Thunk(compute)
    assert t * z is z
    assert z * t is z
    assert t @ z is z
    assert z @ t is z
    assert calls == []
    np.testing.assert_array_equal(Thunk(lambda: np.ones(2)) * 2.0, [2.0, 2.0])


@pytest.mark.parametrize("z", ZEROS)
def test_inplaceable_thunk_added_into_a_zero_is_its_value(z: AbstractZero) -> None:
    # ChainRulesCore's add!!(zero, thunk): a zero accumulator is no buffer to write into
    it = InplaceableThunk(lambda x: x.__iadd__(2.0), lambda: np.full(2, 2.0))
    np.testing.assert_array_equal(it.add_into(z), [2.0, 2.0])
    acc = np.ones(2)
    assert it.add_into(acc) is acc
    np.testing.assert_array_equal(acc, [3.0, 3.0])


def test_inplaceable_thunk_takes_a_thunk_and_checks_arguments() -> None:
    inner = Thunk(lambda: 1.5)
    it = InplaceableThunk(lambda x: x, inner)
    assert it.thunk is inner
    assert unthunk(it) == 1.5
    with pytest.raises(
        TypeError, match=r"^InplaceableThunk needs a callable add_fn, got add_fn=3$"
    ):
        InplaceableThunk(3, inner)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"needs a Thunk or a function of no arguments, got thunk=2"
    ):
        InplaceableThunk(lambda x: x, 2)  # type: ignore[arg-type]


def test_object_array_holding_a_thunk_does_not_compute_it() -> None:
    calls: list[int] = []
    t = Thunk(lambda: calls.append(1) or 2.0)
    arr = np.array([t, 1.0], dtype=object)
    assert arr[0] is t
    assert calls == []


# --------------------------------------------------------------------------------------------
# The ChainRulesCore table: every pair of zeros, both orders
# --------------------------------------------------------------------------------------------

NT, ZT = NoTangent(), ZeroTangent()


@pytest.mark.parametrize(
    ("a", "op", "b", "expected"),
    [
        pytest.param(NT, "+", NT, NT, id="NT+NT"),
        pytest.param(NT, "+", ZT, NT, id="NT+ZT"),
        pytest.param(ZT, "+", NT, NT, id="ZT+NT"),
        pytest.param(ZT, "+", ZT, ZT, id="ZT+ZT"),
        pytest.param(NT, "-", NT, NT, id="NT-NT"),
        pytest.param(NT, "-", ZT, NT, id="NT-ZT"),
        pytest.param(ZT, "-", NT, NT, id="ZT-NT"),
        pytest.param(ZT, "-", ZT, ZT, id="ZT-ZT"),
        pytest.param(NT, "*", NT, NT, id="NT*NT"),
        pytest.param(NT, "*", ZT, ZT, id="NT*ZT"),
        pytest.param(ZT, "*", NT, ZT, id="ZT*NT"),
        pytest.param(ZT, "*", ZT, ZT, id="ZT*ZT"),
        pytest.param(NT, "@", ZT, ZT, id="NT@ZT"),
        pytest.param(ZT, "@", NT, ZT, id="ZT@NT"),
        pytest.param(NT, "/", ZT, NT, id="NT/ZT"),
        pytest.param(ZT, "/", NT, ZT, id="ZT/NT"),
    ],
)
def test_zero_with_zero_follows_the_chainrulescore_table(
    a: AbstractZero, op: str, b: AbstractZero, expected: AbstractZero
) -> None:
    ops = {
        "+": lambda x, y: x + y,
        "-": lambda x, y: x - y,
        "*": lambda x, y: x * y,
        "@": lambda x, y: x @ y,
        "/": lambda x, y: x / y,
    }
    assert ops[op](a, b) is expected


@given(x=values, z=zeros)
def test_zero_matmul_and_divide_with_values_in_both_orders(x: Any, z: AbstractZero) -> None:
    assert z @ x is z
    assert x @ z is z if isinstance(x, np.ndarray) else z.__rmatmul__(x) is z
    assert z / x is z


@pytest.mark.parametrize("z", ZEROS)
def test_dividing_by_a_zero_names_it(z: AbstractZero) -> None:
    with pytest.raises(TypeError, match=rf"^cannot divide by {type(z).__name__}\(\): a symbolic"):
        np.ones(2) / z  # type: ignore[operator]
    with pytest.raises(TypeError, match=r"got float / "):
        2.0 / z  # type: ignore[operator]


@pytest.mark.parametrize("z", ZEROS)
def test_zero_conversions_to_int(z: AbstractZero) -> None:
    assert int(z) == 0
    assert isinstance(int(z), int)


# --------------------------------------------------------------------------------------------
# Iteration, parts and attributes of a zero (issue 13: iterating a zero never ended)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("z", ZEROS)
def test_iterating_a_zero_ends(z: AbstractZero) -> None:
    # islice first, so a regression fails here instead of hanging in list() below
    assert list(itertools.islice(iter(z), 5)) == [z]
    assert list(z) == [z]
    assert next(iter(z)) is z
    assert sum(z) == 0  # type: ignore[call-overload]
    assert 1.0 not in z
    assert z in z
    (only,) = z
    assert only is z
    with pytest.raises(ValueError, match="not enough values to unpack"):
        _a, _b = z


def test_a_pullback_looping_over_a_zero_cotangent_returns() -> None:
    def pullback(ybar: Any) -> float:
        total: Any = 0.0
        for yb in itertools.islice(ybar, 100):
            total = total + 2.0 * yb
        return float(total)

    assert pullback(ZeroTangent()) == 0.0
    assert pullback(NoTangent()) == 0.0
    assert pullback([1.0, 2.0]) == 6.0


@pytest.mark.parametrize("z", ZEROS)
def test_fields_and_parts_of_a_zero_are_that_zero(z: AbstractZero) -> None:
    assert z.weights is z
    assert z.bias.inner is z
    assert z[0].weights[1, 2] is z
    assert z.T is z
    assert z.transpose() is z
    assert z.transpose(1, 0) is z
    assert z.conjugate() is z
    assert z.sum() is z
    assert z.sum(axis=0) is z
    assert z.reshape(2, 3) is z
    assert z.copy() is z


@pytest.mark.parametrize("z", ZEROS)
@pytest.mark.parametrize(
    "name",
    ["dtype", "shape", "ndim", "size", "astype", "ravel", "keys", "items", "values", "unthunk"],
)
def test_duck_typing_probes_do_not_see_a_zero_as_an_array_or_mapping(
    z: AbstractZero, name: str
) -> None:
    assert getattr(z, name, None) is None
    assert not hasattr(z, name)
    kind = type(z).__name__
    with pytest.raises(AttributeError) as info:
        getattr(z, name)
    assert str(info.value) == (
        f"{kind}() has no attribute {name!r} (a zero is not an array: handle {kind}() before "
        f"using array attributes)"
    )


@pytest.mark.parametrize("z", ZEROS)
def test_private_and_dunder_names_are_not_parts(z: AbstractZero) -> None:
    assert getattr(z, "_fields", None) is None
    assert getattr(z, "__array_interface__", None) is None
    assert not hasattr(z, "_repr_html_")


# --------------------------------------------------------------------------------------------
# Thunks: the protocols a pullback uses, by unthunking
# --------------------------------------------------------------------------------------------


def test_thunk_indexing_transpose_and_parts_unthunk() -> None:
    calls: list[int] = []

    def value() -> np.ndarray:
        calls.append(1)
        return np.array([[1.0 + 2j, 3.0], [4.0, 5.0 - 1j]])

    t = Thunk(value)
    np.testing.assert_array_equal(t.T, value().T)
    assert t[0, 1] == 3.0
    np.testing.assert_array_equal(t[1], [4.0, 5.0 - 1j])
    np.testing.assert_array_equal(t.real, [[1.0, 3.0], [4.0, 5.0]])
    np.testing.assert_array_equal(t.imag, [[2.0, 0.0], [0.0, -1.0]])
    np.testing.assert_array_equal(t.conj(), np.conj(value()))
    assert calls == [1, 1, 1]  # once for the thunk, twice for the expected values above


def test_thunk_converts_to_python_numbers() -> None:
    assert float(Thunk(lambda: np.float32(1.5))) == 1.5
    assert isinstance(float(Thunk(lambda: 2)), float)
    assert complex(Thunk(lambda: 1.0 - 2j)) == 1.0 - 2j
    assert complex(Thunk(lambda: 3.0)) == 3.0 + 0j
    assert abs(Thunk(lambda: -2.5)) == 2.5
    assert Thunk(lambda: 3.0) ** 2 == 9.0
    assert 2.0 ** Thunk(lambda: 3.0) == 8.0


def test_thunk_transpose_of_a_scalar_is_the_scalar() -> None:
    assert Thunk(lambda: 2.0).T == 2.0
    assert Thunk(lambda: 1 + 1j).real == 1.0
    assert Thunk(lambda: 1 + 1j).imag == 1.0


@pytest.mark.parametrize("z", ZEROS)
def test_thunk_of_a_zero_has_zero_parts(z: AbstractZero) -> None:
    t = Thunk(lambda: z)
    assert t[3] is z
    assert t.T is z
    assert t.real is z
    assert float(t) == 0.0
    assert t * 2.0 is z
    assert t + 2.0 == 2.0
