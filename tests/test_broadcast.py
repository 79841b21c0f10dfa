"""Tests of rruletest.broadcast: broadcasted, the generic rrule/frule, unbroadcast.

Every derivative is written by hand; shapes, dtypes and tangent kinds are checked exactly.
"""

from __future__ import annotations

import cmath
import gc
import math
import warnings
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal

import rruletest
from rruletest import NoTangent, RuleSet, RuleTestFailure, Tangent, Thunk, ZeroTangent
from rruletest.broadcast import (
    NoBroadcastRuleError,
    SlowBroadcastWarning,
    broadcast_path,
    broadcasted,
    declare_vectorised,
    unbroadcast,
)
from rruletest.projection import unbroadcast as projection_unbroadcast
from rruletest.rules import default_ruleset
from rruletest.testers import test_frule, test_rrule

NT, ZT = NoTangent(), ZeroTangent()


# ------------------------------------------------------------------------------------------
# fixtures and helpers
# ------------------------------------------------------------------------------------------


def sin_partials(x: Any, y: Any) -> Any:
    return np.cos(x)


def mul_partials(x: Any, z: Any, y: Any) -> tuple[Any, Any]:
    return z, x


@pytest.fixture
def rules() -> RuleSet:
    """A fresh RuleSet with scalar rules for sin, multiply and exp (holomorphic)."""
    r = RuleSet("test")
    r.scalar_rule(np.sin, sin_partials)
    r.scalar_rule(np.multiply, mul_partials, complex=True)
    r.scalar_rule(np.exp, lambda x, y: y, complex=True)
    return r


@pytest.fixture
def clean_default() -> Iterator[RuleSet]:
    """The default RuleSet, restored to its previous contents afterwards."""
    saved = (
        dict(default_ruleset._rrules),
        dict(default_ruleset._frules),
        dict(default_ruleset._scalars),
    )
    try:
        yield default_ruleset
    finally:
        default_ruleset._rrules, default_ruleset._frules, default_ruleset._scalars = saved


def fresh_mul() -> Callable[[Any, Any], Any]:
    """A new multiply function (the slow-path warning is once per function)."""

    def mul(x: Any, z: Any) -> Any:
        return x * z

    return mul


def element_rules(f: Callable[..., Any], rules: RuleSet | None = None) -> RuleSet:
    """A RuleSet where ``f`` (a scalar multiply) has only a scalar rrule and frule."""
    r = RuleSet("elements") if rules is None else rules

    @r.register_rrule(f)
    def _rrule(x: Any, z: Any) -> Any:
        return f(x, z), lambda ybar: (NT, ybar * np.conj(z), ybar * np.conj(x))

    @r.register_frule(f)
    def _frule(tangents: Any, x: Any, z: Any) -> Any:
        _, dx, dz = tangents
        return f(x, z), dx * z + x * dz

    return r


# ------------------------------------------------------------------------------------------
# broadcasted
# ------------------------------------------------------------------------------------------


class TestBroadcasted:
    def test_ufunc_values_shape_dtype(self) -> None:
        x = np.linspace(0, 1, 3, dtype=np.float32)
        y = broadcasted(np.sin, x)
        assert isinstance(y, np.ndarray)
        assert y.dtype == np.float32
        assert_array_equal(y, np.sin(x))

    def test_binary_broadcast(self) -> None:
        x, z = np.arange(3.0).reshape(3, 1), np.arange(4.0).reshape(1, 4)
        assert_array_equal(broadcasted(np.add, x, z), x + z)
        assert broadcasted(np.add, x, z).shape == (3, 4)

    def test_scalars_give_numpy_scalar(self) -> None:
        y = broadcasted(np.sin, 0.5)
        assert type(y) is np.float64
        y = broadcasted(math.sin, 0.5)
        assert type(y) is np.float64
        assert y == math.sin(0.5)
        assert type(broadcasted(math.sin, np.float32(0.5))) is np.float32

    def test_zero_d_array_gives_zero_d_array(self) -> None:
        for f in (np.sin, math.sin):
            y = broadcasted(f, np.array(0.5))
            assert isinstance(y, np.ndarray)
            assert y.shape == ()
            assert y == math.sin(0.5)

    def test_empty(self) -> None:
        assert broadcasted(np.sin, np.ones((0, 3))).shape == (0, 3)
        y = broadcasted(math.sin, np.ones((2, 0), np.float32))
        assert y.shape == (2, 0)
        assert y.dtype == np.float32

    def test_plain_function_is_not_called_on_arrays(self) -> None:
        shapes: list[tuple[int, ...]] = []

        def centred(x: Any) -> Any:
            shapes.append(np.shape(x))
            return x - np.mean(x)  # not elementwise on arrays: 0 for each element

        y = broadcasted(centred, np.array([1.0, 2.0, 6.0]))
        assert_array_equal(y, [0.0, 0.0, 0.0])
        assert shapes == [(), (), ()]

    def test_declared_vectorised_is_called_once(self) -> None:
        shapes: list[tuple[int, ...]] = []

        @declare_vectorised
        def cube(x: Any) -> Any:
            shapes.append(np.shape(x))
            return x**3

        assert_array_equal(broadcasted(cube, np.array([1.0, 2.0])), [1.0, 8.0])
        assert shapes == [(2,)]

    def test_declared_vectorised_that_fails_on_arrays_falls_back(self) -> None:
        f = declare_vectorised(lambda x: math.sin(x))
        assert_allclose(broadcasted(f, np.array([0.0, 1.0])), [0.0, math.sin(1.0)])

    def test_scalar_rule_in_default_ruleset_vectorises(self, clean_default: RuleSet) -> None:
        shapes: list[tuple[int, ...]] = []

        def sq(x: Any) -> Any:
            shapes.append(np.shape(x))
            return x * x

        clean_default.scalar_rule(sq, lambda x, y: 2 * x)
        assert_array_equal(broadcasted(sq, np.array([1.0, 3.0])), [1.0, 9.0])
        assert shapes == [(2,)]

    def test_vectorised_result_never_aliases_an_input(self) -> None:
        x = np.ones(3)
        y = broadcasted(declare_vectorised(lambda v: v), x)
        assert_array_equal(y, x)
        assert not np.shares_memory(y, x)

    @pytest.mark.parametrize(
        ("f", "x", "dtype"),
        [
            pytest.param(math.sin, np.ones(2, np.float32), np.float32, id="float32"),
            pytest.param(math.sin, np.arange(2), np.float64, id="int-to-float64"),
            pytest.param(cmath.exp, np.ones(2, np.complex64), np.complex64, id="complex64"),
            pytest.param(lambda v: int(v) + 1, np.arange(2.0), np.int64, id="int-results"),
            pytest.param(lambda v: np.float64(v), np.ones(2, np.float32), np.float64, id="strong"),
            # numpy functions of an element keep its precision (they gave float64 for float32)
            pytest.param(lambda v: np.log(v), np.ones(2, np.float32), np.float32, id="np-float32"),
            pytest.param(lambda v: np.exp(v), np.ones(2, np.float16), np.float16, id="np-float16"),
            pytest.param(lambda v: np.exp(v), np.ones(2, np.complex64), np.complex64, id="np-c64"),
            pytest.param(lambda v: v / 2, np.array([Fraction(1)] * 2), object, id="object"),
        ],
    )
    def test_loop_restores_dtype(self, f: Any, x: np.ndarray, dtype: Any) -> None:
        y = broadcasted(f, x)
        assert y.dtype == dtype
        assert y.shape == x.shape

    def test_loop_and_per_element_rule_agree_in_float32(self, rules: RuleSet) -> None:
        def log_of(v: Any) -> Any:
            return np.log(v)

        @rules.register_rrule(broadcasted, log_of)
        def _log_rrule(f: Any, x: Any) -> Any:
            return np.log(x), lambda ybar: (NT, NT, ybar / x)

        x = np.array([[1.0, 2.0]], np.float32)
        assert broadcasted(log_of, x).dtype == np.float32
        test_rrule(broadcasted, log_of, x, rrule_f=rules.rrule)

    @pytest.mark.parametrize(
        ("other", "dtype"),
        [
            pytest.param(np.ones(3), np.float64, id="float64-array"),
            pytest.param(np.arange(3), np.float64, id="int64-array"),
            pytest.param(np.float64(2.0), np.float64, id="float64-scalar"),
            pytest.param(2.0, np.float32, id="python-float"),
            pytest.param(np.ones(3, np.complex128), np.complex128, id="complex128-array"),
            pytest.param(np.array([True, False, True]), np.float32, id="bool-array"),
        ],
    )
    def test_loop_promotes_mixed_precisions_as_numpy(self, other: Any, dtype: Any) -> None:
        # float32 elements were numpy scalars and float64 (int64) ones Python numbers, which
        # are weak: a float32 array times a float64 array gave float32, and a correct per-element
        # frule then failed test_frule ("dtype float64 for a float32 primal")
        def mul(a: Any, b: Any) -> Any:
            return a * b

        x = np.array([[1.5], [2.5]], np.float32)
        assert broadcasted(mul, x, other).dtype == dtype == np.multiply(x, other).dtype
        rules = RuleSet()

        @rules.register_frule(mul)
        def _mul_frule(dots: Any, a: Any, b: Any) -> Any:
            return a * b, dots[1] * b + a * dots[2]

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SlowBroadcastWarning)
            test_frule(broadcasted, mul, x, other, frule_f=rules.frule, rng=0)

    def test_loop_matches_ufunc(self) -> None:
        x = np.linspace(-2, 2, 7).reshape(7, 1)
        z = np.linspace(0.5, 3, 4)
        assert_allclose(broadcasted(math.atan2, x, z), np.arctan2(x, z), rtol=1e-15)

    def test_lists_count_as_arrays(self) -> None:
        assert_array_equal(broadcasted(np.add, [1.0, 2.0], 1.0), [2.0, 3.0])

    def test_kwargs_passed_unchanged(self) -> None:
        def scaled(x: Any, *, scale: Any) -> Any:
            return x * scale

        assert_array_equal(broadcasted(scaled, np.array([1.0, 2.0]), scale=3.0), [3.0, 6.0])
        assert_array_equal(broadcasted(np.add, np.ones(2), 1, dtype=np.float32), [2.0, 2.0])

    def test_unknown_kwarg_rejected(self) -> None:
        def plain(x: Any) -> Any:
            return x

        with pytest.raises(TypeError, match=r"broadcasted\(.*plain, \.\.\.\): .*scale=3"):
            broadcasted(plain, np.ones(2), scale=3)

    @pytest.mark.parametrize("kw", ["out", "where"])
    def test_ufunc_out_and_where_rejected(self, kw: str) -> None:
        with pytest.raises(TypeError, match=f"{kw} cannot be used"):
            broadcasted(np.sin, np.ones(2), **{kw: np.ones(2, bool)})

    def test_shapes_that_do_not_broadcast(self) -> None:
        msg = r"broadcasted\(np\.add, \.\.\.\): the argument shapes do not broadcast \(args\[0\]: "
        with pytest.raises(ValueError, match=msg + r"\(3,\), args\[1\]: \(4,\)\)"):
            broadcasted(np.add, np.ones(3), np.ones(4))

    def test_misuse(self) -> None:
        with pytest.raises(TypeError, match="needs a callable f, got f=3"):
            broadcasted(3, 1.0)
        with pytest.raises(TypeError, match="needs at least one argument"):
            broadcasted(np.sin)
        with pytest.raises(TypeError, match="returned a tuple of 2 for one element and something"):
            broadcasted(lambda v: (v, v) if v > 0 else v, np.array([1.0, -1.0]))
        with pytest.raises(TypeError, match="returned ndarray of shape \\(2,\\) for one element"):
            broadcasted(lambda v: np.array([v, v]), np.ones(3))

    @given(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
        st.sampled_from([np.float32, np.float64]),
    )
    @settings(max_examples=40)
    def test_matches_numpy(self, shapes: Any, dtype: Any) -> None:
        a = np.linspace(0.5, 2.0, math.prod(shapes.input_shapes[0])).astype(dtype)
        b = np.linspace(-1.0, 1.0, math.prod(shapes.input_shapes[1])).astype(dtype)
        a, b = a.reshape(shapes.input_shapes[0]), b.reshape(shapes.input_shapes[1])
        expected = np.asarray(np.hypot(a, b))
        y = broadcasted(math.hypot, a, b)
        assert y.shape == shapes.result_shape
        assert y.dtype == dtype
        assert_allclose(y, expected, rtol=1e-6 if dtype == np.float32 else 1e-15)


# ------------------------------------------------------------------------------------------
# unbroadcast
# ------------------------------------------------------------------------------------------


class TestUnbroadcast:
    def test_reexported(self) -> None:
        assert unbroadcast is projection_unbroadcast
        assert rruletest.unbroadcast is unbroadcast
        assert rruletest.broadcasted is broadcasted

    @pytest.mark.parametrize(
        ("shape", "expected"),
        [
            pytest.param((2, 3, 4), lambda g: g, id="same"),
            pytest.param((3, 4), lambda g: g.sum(axis=0), id="leading"),
            pytest.param((3, 1), lambda g: g.sum(axis=(0, 2))[:, None], id="leading+expanded"),
            pytest.param((1, 4), lambda g: g.sum(axis=(0, 1))[None, :], id="expanded-first"),
            pytest.param((2, 1, 4), lambda g: g.sum(axis=1, keepdims=True), id="middle"),
            pytest.param((4,), lambda g: g.sum(axis=(0, 1)), id="trailing"),
        ],
    )
    def test_sums_broadcast_dims(self, shape: tuple[int, ...], expected: Any) -> None:
        xbar = np.arange(24.0).reshape(2, 3, 4)
        got = unbroadcast(np.ones(shape), xbar)
        assert isinstance(got, np.ndarray)
        assert got.shape == shape
        assert_array_equal(got, expected(xbar))

    def test_kinds(self) -> None:
        assert type(unbroadcast(1.0, np.ones(3))) is float
        assert type(unbroadcast(np.float32(1), np.ones(3))) is np.float32
        assert unbroadcast(2, np.ones(3)) is NT
        assert unbroadcast(True, np.ones(3)) is NT
        assert unbroadcast(1.0, np.array([1 + 2j, 3 - 1j])) == 4.0
        assert unbroadcast(np.ones(2), ZT) is ZT

    def test_zero_d_array_stays_array(self) -> None:
        got = unbroadcast(np.array(1.0, np.float32), np.ones((2, 3)))
        assert isinstance(got, np.ndarray)
        assert got.shape == ()
        assert got.dtype == np.float32
        assert got == 6.0

    def test_empty(self) -> None:
        got = unbroadcast(np.ones((1, 3)), np.ones((0, 3)))
        assert_array_equal(got, np.zeros((1, 3)))

    def test_bad_shape(self) -> None:
        with pytest.raises(ValueError, match="cannot unbroadcast"):
            unbroadcast(np.ones((3, 4)), np.ones(4))


# ------------------------------------------------------------------------------------------
# rrule: scalar-rule path
# ------------------------------------------------------------------------------------------


BINARY_SHAPES = [
    pytest.param((3,), (), id="(3,)x()"),
    pytest.param((3, 1), (1, 4), id="(3,1)x(1,4)"),
    pytest.param((2, 3, 4), (4,), id="(2,3,4)x(4,)"),
    pytest.param((), (), id="0d"),
    pytest.param((0,), (1,), id="empty"),
    pytest.param((2, 0), (2, 1), id="empty2"),
]


def expected_reduce(x: np.ndarray, full: np.ndarray) -> np.ndarray:
    """Sum ``full`` back to ``x.shape`` by hand (leading dims, then expanded ones)."""
    lead = full.ndim - x.ndim
    out = full.sum(axis=tuple(range(lead))) if lead else full
    for ax, n in enumerate(x.shape):
        if n == 1 and out.shape[ax] != 1:
            out = out.sum(axis=ax, keepdims=True)
    return out


class TestScalarPathRRule:
    def test_unary(self, rules: RuleSet) -> None:
        x = np.linspace(-1, 1, 5)
        y, pullback = rules.rrule(broadcasted, np.sin, x)
        assert_array_equal(y, np.sin(x))
        ybar = np.linspace(1, 2, 5)
        out = pullback(ybar)
        assert len(out) == 3
        assert out[0] is NT
        assert out[1] is NT
        assert_allclose(out[2], ybar * np.cos(x), rtol=1e-15)

    @pytest.mark.parametrize(("sx", "sz"), BINARY_SHAPES)
    def test_binary_shapes(self, rules: RuleSet, sx: Any, sz: Any) -> None:
        x = np.arange(1.0, 1.0 + math.prod(sx)).reshape(sx)
        z = (np.arange(2.0, 2.0 + math.prod(sz)) / 3).reshape(sz)
        y, pullback = rules.rrule(broadcasted, np.multiply, x, z)
        assert_array_equal(y, x * z)
        full = np.broadcast_shapes(sx, sz)
        ybar = np.arange(math.prod(full), dtype=float).reshape(full) - 1.5
        _, fbar, xbar, zbar = pullback(ybar)
        assert fbar is NT
        assert isinstance(xbar, np.ndarray)
        assert isinstance(zbar, np.ndarray)
        assert xbar.shape == sx
        assert zbar.shape == sz
        assert_allclose(xbar, expected_reduce(x, ybar * z), rtol=1e-14)
        assert_allclose(zbar, expected_reduce(z, ybar * x), rtol=1e-14)

    def test_python_and_numpy_scalars(self, rules: RuleSet) -> None:
        y, pullback = rules.rrule(broadcasted, np.multiply, np.ones(3), 2.5)
        _, _, xbar, zbar = pullback(np.array([1.0, 2.0, 3.0]))
        assert_array_equal(xbar, [2.5, 5.0, 7.5])
        assert type(zbar) is float
        assert zbar == 6.0
        y, pullback = rules.rrule(broadcasted, np.sin, np.float32(0.5))
        assert type(y) is np.float32
        xbar = pullback(np.float32(2))[2]
        assert type(xbar) is np.float32
        assert_allclose(xbar, 2 * np.cos(np.float32(0.5)), rtol=1e-6)

    def test_float32_preserved(self, rules: RuleSet) -> None:
        x = np.linspace(0, 1, 4, dtype=np.float32).reshape(4, 1)
        z = np.ones(3, np.float32)
        y, pullback = rules.rrule(broadcasted, np.multiply, x, z)
        assert y.dtype == np.float32
        _, _, xbar, zbar = pullback(np.ones((4, 3)))  # float64 ybar
        assert xbar.dtype == np.float32
        assert zbar.dtype == np.float32
        assert_allclose(xbar, np.full((4, 1), 3.0), rtol=1e-6)
        assert_allclose(zbar, np.full(3, x.sum()), rtol=1e-6)

    def test_complex_holomorphic(self, rules: RuleSet) -> None:
        x = np.array([0.5 + 1j, -1 - 0.5j])
        _, pullback = rules.rrule(broadcasted, np.exp, x)
        ybar = np.array([1.0 - 2j, 0.5j])
        xbar = pullback(ybar)[2]
        assert xbar.dtype == np.complex128
        assert_allclose(xbar, ybar * np.conj(np.exp(x)), rtol=1e-15)

    def test_complex_times_real_scalar(self, rules: RuleSet) -> None:
        x = np.array([1 + 1j, 2j])
        _, pullback = rules.rrule(broadcasted, np.multiply, x, 2.0)
        ybar = np.array([1.0, 1j])
        _, _, xbar, zbar = pullback(ybar)
        assert_allclose(xbar, ybar * 2.0)
        # real argument: Re(sum(ybar * conj(x))) = Re(1 - 1j + 1j * -2j) = 3
        assert type(zbar) is float
        assert zbar == 3.0

    def test_real_input_complex_output(self, rules: RuleSet) -> None:
        def cis(x: Any) -> Any:
            return np.exp(1j * x)

        rules.scalar_rule(cis, lambda x, y: 1j * y)
        x = np.array([0.0, 0.7])
        _, pullback = rules.rrule(broadcasted, cis, x)
        ybar = np.array([1 + 2j, -0.5 + 1j])
        xbar = pullback(ybar)[2]
        assert xbar.dtype == np.float64
        assert_allclose(xbar, np.real(ybar * np.conj(1j * np.exp(1j * x))), rtol=1e-15)

    def test_mixed_int_float(self, rules: RuleSet) -> None:
        y, pullback = rules.rrule(broadcasted, np.multiply, np.arange(3), 2.5)
        assert_array_equal(y, [0.0, 2.5, 5.0])
        _, _, ibar, zbar = pullback(np.ones(3))
        assert ibar is NT
        assert zbar == 3.0
        y, pullback = rules.rrule(broadcasted, np.multiply, 2, np.ones(2))
        assert pullback(np.ones(2))[2] is NT
        _, _, bbar, _ = rules.rrule(broadcasted, np.multiply, np.array([True]), 1.0)[1](1.0)
        assert bbar is NT

    def test_all_integer_args(self, rules: RuleSet) -> None:
        _, pullback = rules.rrule(broadcasted, np.multiply, np.arange(3), 2)
        assert pullback(np.ones(3)) == (NT, NT, NT, NT)

    @pytest.mark.parametrize("zero", [ZT, NT], ids=["ZeroTangent", "NoTangent"])
    def test_zero_ybar_computes_no_partials(self, zero: Any) -> None:
        calls = []

        def partials(x: Any, z: Any, y: Any) -> tuple[Any, Any]:
            calls.append(1)
            return z, x

        rules = RuleSet()
        rules.scalar_rule(np.multiply, partials)
        _, pullback = rules.rrule(broadcasted, np.multiply, np.ones(3), np.arange(3))
        assert pullback(zero) == (NT, NT, zero, NT)
        assert calls == []

    def test_partials_are_lazy_and_not_kept(self, rules: RuleSet) -> None:
        calls = []

        def partials(x: Any, y: Any) -> Any:
            calls.append(1)
            return np.cos(x)

        rules.scalar_rule(np.cos, partials)  # any function: the rule is what matters
        _, pullback = rules.rrule(broadcasted, np.cos, np.ones(3))
        assert calls == []
        pullback(np.ones(3))
        pullback(np.ones(3))
        assert calls == [1, 1]

    def test_thunk_and_scalar_ybar(self, rules: RuleSet) -> None:
        x = np.linspace(0, 1, 3)
        _, pullback = rules.rrule(broadcasted, np.sin, x)
        assert_allclose(pullback(Thunk(lambda: np.full(3, 2.0)))[2], 2 * np.cos(x))
        assert_allclose(pullback(2.0)[2], 2 * np.cos(x))

    def test_pullback_holds_only_inputs_and_output(self, rules: RuleSet) -> None:
        x, z = np.ones((50, 1)), np.ones(40)
        y, pullback = rules.rrule(broadcasted, np.multiply, x, z)
        pullback(np.ones((50, 40)))  # nothing is cached by a call either
        held = [o for o in gc.get_referents(pullback) if not isinstance(o, type)]
        args = next(o for o in held if isinstance(o, tuple) and len(o) == 2)
        assert args[0] is x
        assert args[1] is z
        expected = {id(rules), id(np.multiply), id(args), id(y)}
        others = [o for o in held if id(o) not in expected]
        assert others == [(50, 40)]  # the output shape
        for o in held:
            assert not isinstance(o, list)
            assert not (isinstance(o, np.ndarray) and o.dtype == object)

    def test_cotangents_are_writeable_arrays(self, rules: RuleSet) -> None:
        def twice(x: Any) -> Any:
            return 2 * x

        rules.scalar_rule(twice, lambda x, y: 2.0)
        _, pullback = rules.rrule(broadcasted, twice, np.ones(3))
        xbar = pullback(1.5)[2]  # scalar ybar, constant partial: a broadcast inside
        assert_array_equal(xbar, [3.0, 3.0, 3.0])
        xbar += 1.0  # a caller may accumulate into it
        _, pullback = rules.rrule(broadcasted, np.multiply, np.ones(2), 1.0)
        _, _, xbar, _ = pullback(np.array([1j, 2 + 1j]))  # real primal, complex cotangent
        assert xbar.dtype == np.float64
        assert xbar.flags.owndata
        assert_array_equal(xbar, [0.0, 2.0])

    def test_bad_ybar(self, rules: RuleSet) -> None:
        _, pullback = rules.rrule(broadcasted, np.sin, np.ones(3))
        with pytest.raises(ValueError, match=r"cotangent has shape \(4,\), the output has shape"):
            pullback(np.ones(4))
        with pytest.raises(TypeError, match="must be a number or a numeric array of shape"):
            pullback("a")
        with pytest.raises(TypeError, match="must be a number or a numeric array"):
            pullback(Tangent(tuple, 1.0))

    def test_a_list_of_numbers_is_a_cotangent_and_a_tangent_like_an_array(self) -> None:
        # with a constant partial, ybar * 1.0 was list * float: "can't multiply sequence by
        # non-int of type 'float'" (a partial that is an array made it an array by chance)
        r = RuleSet()
        r.scalar_rule(np.add, lambda a, b, y: (1.0, 1.0))
        _, pullback = r.rrule(broadcasted, np.add, np.ones(2), np.ones(2))
        _, _, abar, bbar = pullback([1.0, 2.0])
        assert_array_equal(abar, [1.0, 2.0])
        assert_array_equal(bbar, [1.0, 2.0])
        tangents = (NT, NT, [1.0, 2.0], [3.0, 4.0])
        _, ydot = r.frule(tangents, broadcasted, np.add, np.ones(2), np.ones(2))
        assert_array_equal(ydot, [4.0, 6.0])
        _, pullback = r.rrule(np.add, np.ones(2), np.ones(2))
        assert_array_equal(pullback([1.0, 2.0])[1], [1.0, 2.0])
        _, ydot = r.frule((NT, [1.0, 2.0], ZT), np.add, np.ones(2), np.ones(2))
        assert_array_equal(ydot, [1.0, 2.0])
        _, pullback = r.rrule(broadcasted, np.add, np.ones(2), np.ones(2))
        with pytest.raises(TypeError, match="must be a number or a numeric array of shape"):
            pullback([1.0, [2.0]])

    def test_kwargs_rejected_on_scalar_path(self, rules: RuleSet) -> None:
        with pytest.raises(TypeError, match=r"keyword arguments dtype=.*functools\.partial"):
            rules.rrule(broadcasted, np.sin, np.ones(2), dtype=np.float32)

    def test_list_argument_rejected(self, rules: RuleSet) -> None:
        with pytest.raises(TypeError, match=r"args\[0\] is a list.*np\.asarray\(args\[0\]\)"):
            rules.rrule(broadcasted, np.sin, [1.0, 2.0])

    def test_partials_that_do_not_vectorise(self) -> None:
        def msin(x: Any) -> Any:
            return math.sin(x)

        rules = RuleSet()
        rules.scalar_rule(msin, lambda x, y: math.cos(x))
        x = np.linspace(0, 1, 4, dtype=np.float32)
        y, pullback = rules.rrule(broadcasted, msin, x)
        assert y.dtype == np.float32
        with pytest.warns(SlowBroadcastWarning, match="partials once per element"):
            xbar = pullback(np.ones(4))[2]
        assert xbar.dtype == np.float32
        assert_allclose(xbar, np.cos(x), rtol=1e-6)

    def test_broken_partials_raise_their_own_error(self) -> None:
        rules = RuleSet()
        rules.scalar_rule(np.multiply, lambda x, z, y: (z,))
        _, pullback = rules.rrule(broadcasted, np.multiply, np.ones(3), np.ones(3))
        with pytest.raises(TypeError, match=r"returned 1 partial for 2 arguments"):
            pullback(np.ones(3))

    def test_partials_of_wrong_shape(self) -> None:
        rules = RuleSet()
        rules.scalar_rule(np.sin, lambda x, y: np.ones(7))
        _, pullback = rules.rrule(broadcasted, np.sin, np.ones(3))
        with pytest.raises(TypeError, match=r"returned shape \(7,\) for args\[0\]"):
            pullback(np.ones(3))

    @given(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
        st.sampled_from([np.float32, np.float64, np.complex128]),
    )
    @settings(max_examples=40)
    def test_property_matches_hand_written(self, shapes: Any, dtype: Any) -> None:
        rules = RuleSet()
        rules.scalar_rule(np.multiply, mul_partials, complex=True)
        sx, sz = shapes.input_shapes
        x = (np.arange(math.prod(sx)) + 1.0).reshape(sx).astype(dtype)
        z = (np.arange(math.prod(sz)) - 0.5).reshape(sz).astype(dtype) * (
            1 + 1j if dtype == np.complex128 else 1
        )
        ybar = np.ones(shapes.result_shape) * 0.5
        _, pullback = rules.rrule(broadcasted, np.multiply, x, z)
        _, _, xbar, zbar = pullback(ybar)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        assert xbar.dtype == dtype
        assert xbar.shape == sx
        assert_allclose(xbar, expected_reduce(x, ybar * np.conj(z)), rtol=tol, atol=tol)
        assert_allclose(zbar, expected_reduce(z, ybar * np.conj(x)), rtol=tol, atol=tol)


# ------------------------------------------------------------------------------------------
# resolution order, registered rules, errors
# ------------------------------------------------------------------------------------------


class TestResolution:
    def test_registered_broadcast_rule_wins(self, rules: RuleSet) -> None:
        @rules.register_rrule(broadcasted, np.sin)
        def _special(f: Any, x: Any) -> Any:
            return f(x), lambda ybar: (NT, NT, "special")

        assert broadcast_path(np.sin, rules=rules) == "registered"
        assert broadcast_path(np.sin, rules=rules, kind="frule") == "scalar"
        _, pullback = rules.rrule(broadcasted, np.sin, np.ones(2))
        assert pullback(np.ones(2)) == (NT, NT, "special")

    def test_registered_broadcast_frule_wins(self, rules: RuleSet) -> None:
        @rules.register_frule(broadcasted, np.sin)
        def _special(tangents: Any, f: Any, x: Any) -> Any:
            return f(x), "special"

        assert broadcast_path(np.sin, rules=rules, kind="frule") == "registered"
        assert rules.frule((NT, NT, np.ones(2)), broadcasted, np.sin, np.ones(2))[1] == "special"

    def test_paths(self, rules: RuleSet) -> None:
        mul = fresh_mul()
        element_rules(mul, rules)
        rules.non_differentiable(np.floor)
        assert broadcast_path(np.sin, rules=rules) == "scalar"
        assert broadcast_path(mul, rules=rules) == "per_element"
        assert broadcast_path(mul, rules=rules, kind="frule") == "per_element"
        assert broadcast_path(np.floor, rules=rules) == "non_differentiable"
        assert broadcast_path(np.cos, rules=rules) is None

    def test_non_differentiable(self, rules: RuleSet) -> None:
        rules.non_differentiable(np.floor)
        x = np.array([1.5, -0.5])
        y, pullback = rules.rrule(broadcasted, np.floor, x)
        assert_array_equal(y, [1.0, -1.0])
        assert pullback(np.ones(2)) == (NT, NT, NT)
        y, ydot = rules.frule((NT, NT, np.ones(2)), broadcasted, np.floor, x)
        assert ydot is NT

    def test_no_rule_error_names_a_broadcast_rule_that_declined(self, rules: RuleSet) -> None:
        # "softsign has no rule ... register_rrule(broadcasted, softsign)" when that rule was
        # registered and had declined (returned None) the float32 argument
        def softsign(x: Any) -> Any:
            return x / (1 + abs(x))

        @rules.register_rrule(broadcasted, softsign)
        def float64_only(f: Any, x: Any) -> Any:
            return None if x.dtype != np.float64 else (softsign(x), lambda g: (NT, NT, g))

        with pytest.raises(NoBroadcastRuleError) as info:
            rules.rrule(broadcasted, softsign, np.ones(2, np.float32))
        msg = str(info.value)
        assert msg.startswith(
            "rrule(broadcasted, softsign, ...): the rrule registered for broadcasted(softsign) "
            f"declined these arguments (returned None): float64_only (from {__name__}); and "
            "softsign has no rule of its own in RuleSet('test'"
        )
        assert "register_rrule(softsign)" in msg
        assert "register_rrule(broadcasted, softsign)" not in msg
        with pytest.raises(NoBroadcastRuleError, match="has no rule in"):  # frule: none at all
            rules.frule((NT, NT, np.ones(2)), broadcasted, softsign, np.ones(2, np.float32))

    def test_no_rule_error(self, rules: RuleSet) -> None:
        def softsign(x: Any) -> Any:
            return x / (1 + abs(x))

        with pytest.raises(NoBroadcastRuleError) as info:
            rules.rrule(broadcasted, softsign, np.ones(2))
        msg = str(info.value)
        assert msg.startswith("rrule(broadcasted, softsign, ...): softsign has no rule")
        assert "softsign has no rule in RuleSet('test'" in msg
        assert "scalar_rule(softsign, partials)" in msg
        assert "register_rrule(softsign)" in msg
        assert "register_rrule(broadcasted, softsign)" in msg
        assert "broadcast_path" in msg
        assert isinstance(info.value, TypeError)
        assert isinstance(info.value, LookupError)
        assert info.value.function is softsign
        assert info.value.kind == "rrule"
        assert info.value.ruleset is rules
        with pytest.raises(NoBroadcastRuleError, match=r"register_frule\(broadcasted, softsign\)"):
            rules.frule((NT, NT, np.ones(2)), broadcasted, softsign, np.ones(2))

    def test_a_rule_declining_at_one_element_is_named_not_reported_missing(
        self, rules: RuleSet
    ) -> None:
        def root(x: float) -> float:
            return math.sqrt(x)

        @rules.register_rrule(root)
        def _root_rrule(x: float) -> Any:
            if x < 0:
                return None  # declines
            return root(x), lambda ybar: (NT, ybar / (2 * root(x)))

        @rules.register_frule(root)
        def _root_frule(tangents: Any, x: float) -> Any:
            return None if x < 0 else (root(x), tangents[1] / (2 * root(x)))

        x = np.array([4.0, -1.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SlowBroadcastWarning)
            with pytest.raises(NoBroadcastRuleError) as info:
                rules.rrule(broadcasted, root, x)
            assert str(info.value) == (
                "rrule(broadcasted, root, ...): the rrule of root declined (returned None) at "
                "element 1, root(-1.0), so the broadcast cannot be differentiated there"
            )
            assert info.value.kind == "rrule"
            with pytest.raises(NoBroadcastRuleError, match=r"the frule of root declined .* root"):
                rules.frule((NT, NT, np.ones(2)), broadcasted, root, x)

    def test_no_rule_in_default_ruleset(self, clean_default: RuleSet) -> None:
        def nothing(x: Any) -> Any:
            return x

        with pytest.raises(NoBroadcastRuleError, match="no rule in the default RuleSet"):
            rruletest.rrule(broadcasted, nothing, np.ones(2))

    def test_module_level_rrule_uses_default(self, clean_default: RuleSet) -> None:
        def twice(x: Any) -> Any:
            return 2 * x

        rruletest.scalar_rule(twice, lambda x, y: 2.0)
        assert broadcast_path(twice) == "scalar"
        _, pullback = rruletest.rrule(broadcasted, twice, np.ones(3))
        assert_array_equal(pullback(np.ones(3))[2], [2.0, 2.0, 2.0])


# ------------------------------------------------------------------------------------------
# rrule: per-element fallback
# ------------------------------------------------------------------------------------------


class TestPerElement:
    def test_warns_once_per_function(self) -> None:
        mul = fresh_mul()
        rules = element_rules(mul)
        with pytest.warns(SlowBroadcastWarning, match="once per element") as record:
            rules.rrule(broadcasted, mul, np.ones(2), 1.0)
        assert record[0].filename == __file__
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rules.rrule(broadcasted, mul, np.ones(2), 1.0)
            rules.frule((NT, NT, np.ones(2), 0.0), broadcasted, mul, np.ones(2), 1.0)

    @pytest.mark.parametrize(("sx", "sz"), BINARY_SHAPES)
    @pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
    def test_same_cotangents_as_scalar_path(
        self, rules: RuleSet, sx: Any, sz: Any, dtype: Any
    ) -> None:
        mul = fresh_mul()
        element_rules(mul, rules)
        x = (np.arange(math.prod(sx)) + 1.0).reshape(sx).astype(dtype)
        z = (np.arange(math.prod(sz)) - 0.5).reshape(sz).astype(dtype)
        if dtype == np.complex128:
            z = z * (1 - 2j)
        full = np.broadcast_shapes(sx, sz)
        ybar = np.linspace(-1, 1, math.prod(full)).reshape(full)
        y1, pb1 = rules.rrule(broadcasted, np.multiply, x, z)
        with pytest.warns(SlowBroadcastWarning):
            y2, pb2 = rules.rrule(broadcasted, mul, x, z)
        assert_allclose(y2, y1)
        assert y2.dtype == y1.dtype
        out1, out2 = pb1(ybar), pb2(ybar)
        assert out2[:2] == (NT, NT)
        for a, b in zip(out1[2:], out2[2:], strict=True):
            assert type(a) is type(b)
            assert a.dtype == b.dtype
            assert a.shape == b.shape
            assert_allclose(a, b, rtol=1e-6)

    def test_mixed_int_float(self) -> None:
        mul = fresh_mul()
        rules = element_rules(mul)
        with pytest.warns(SlowBroadcastWarning):
            y, pullback = rules.rrule(broadcasted, mul, np.arange(3), 2.5)
        assert_array_equal(y, [0.0, 2.5, 5.0])
        _, _, ibar, zbar = pullback(np.ones(3))
        assert ibar is NT
        assert type(zbar) is float
        assert zbar == 3.0

    def test_all_scalars_and_empty(self) -> None:
        mul = fresh_mul()
        rules = element_rules(mul)
        with pytest.warns(SlowBroadcastWarning):
            y, pullback = rules.rrule(broadcasted, mul, 2.0, np.float32(3))
        assert type(y) is np.float32
        _, _, xbar, zbar = pullback(1.0)
        assert type(xbar) is float
        assert type(zbar) is np.float32
        assert (xbar, zbar) == (3.0, 2.0)
        y, pullback = rules.rrule(broadcasted, mul, np.ones((0, 2)), np.ones((1, 2)))
        assert y.shape == (0, 2)
        _, _, xbar, zbar = pullback(np.ones((0, 2)))
        assert_array_equal(xbar, np.ones((0, 2)))
        assert_array_equal(zbar, np.zeros((1, 2)))

    def test_zero_and_thunk_ybar(self) -> None:
        mul = fresh_mul()
        rules = element_rules(mul)
        with pytest.warns(SlowBroadcastWarning):
            _, pullback = rules.rrule(broadcasted, mul, np.ones(2), 3.0)
        assert pullback(ZT) == (NT, NT, ZT, ZT)
        assert_array_equal(pullback(Thunk(lambda: np.ones(2)))[2], [3.0, 3.0])

    def test_pullback_keeps_one_pullback_per_element(self) -> None:
        mul = fresh_mul()
        rules = element_rules(mul)
        with pytest.warns(SlowBroadcastWarning):
            _, pullback = rules.rrule(broadcasted, mul, np.ones(5), 3.0)
        assert len(pullback.pullbacks) == 5

    def test_fbar_is_summed(self) -> None:
        class Scale:
            """A callable with a parameter: its tangent is a Tangent over ``a``."""

            def __init__(self, a: float) -> None:
                self.a = a

            def __call__(self, x: Any) -> Any:
                return self.a * x

        s = Scale(2.0)
        rules = RuleSet()

        @rules.register_rrule(s)
        def _rrule(x: Any) -> Any:
            return s(x), lambda ybar: (Tangent(Scale, a=ybar * x), ybar * s.a)

        with pytest.warns(SlowBroadcastWarning):
            _, pullback = rules.rrule(broadcasted, s, np.array([1.0, 2.0, 3.0]))
        _, fbar, xbar = pullback(np.ones(3))
        assert fbar == Tangent(Scale, a=6.0)
        assert_array_equal(xbar, [2.0, 2.0, 2.0])

    def test_element_zeros(self) -> None:
        def relu(x: Any) -> Any:
            return max(x, 0.0)

        rules = RuleSet()

        @rules.register_rrule(relu)
        def _rrule(x: Any) -> Any:
            return relu(x), lambda ybar: (NT, ybar if x > 0 else ZT)

        with pytest.warns(SlowBroadcastWarning):
            y, pullback = rules.rrule(broadcasted, relu, np.array([-1.0, 2.0]))
        assert_array_equal(y, [0.0, 2.0])
        assert_array_equal(pullback(np.array([5.0, 7.0]))[2], [0.0, 7.0])
        assert pullback(np.array([5.0, 7.0]))[2].dtype == np.float64
        _, pullback = rules.rrule(broadcasted, relu, np.array([-1.0, -2.0]))
        assert pullback(np.ones(2))[2] is ZT

    def test_kwargs_reach_the_element_rule(self) -> None:
        def scaled(x: Any, *, scale: float) -> Any:
            return scale * x

        rules = RuleSet()

        @rules.register_rrule(scaled)
        def _rrule(x: Any, *, scale: float) -> Any:
            return scaled(x, scale=scale), lambda ybar: (NT, ybar * scale)

        with pytest.warns(SlowBroadcastWarning):
            y, pullback = rules.rrule(broadcasted, scaled, np.ones(2), scale=3.0)
        assert_array_equal(y, [3.0, 3.0])
        assert_array_equal(pullback(np.ones(2))[2], [3.0, 3.0])

    def test_bad_element_rules(self) -> None:
        def one(x: Any) -> Any:
            return x

        def two(x: Any) -> Any:
            return x

        rules = RuleSet()
        rules.register_rrule(one)(lambda x: x)
        rules.register_rrule(two)(lambda x: (x, None))
        rules.register_frule(one)(lambda tangents, x: x)
        with pytest.raises(TypeError, match=r"returned np.float64\(1.0\) at element 0; expected"):
            rules.rrule(broadcasted, one, np.ones(2))
        with pytest.raises(TypeError, match=r"returned a pullback None at element 0 that is not"):
            rules.rrule(broadcasted, two, np.ones(2))
        with pytest.raises(TypeError, match=r"expected \(y, ydot\)"):
            rules.frule((NT, NT, np.ones(2)), broadcasted, one, np.ones(2))

    def test_bad_element_pullbacks(self) -> None:
        def ident(x: Any) -> Any:
            return x

        rules = RuleSet()
        rules.register_rrule(ident)(lambda x: (x, lambda ybar: (ybar,)))
        with pytest.warns(SlowBroadcastWarning):
            _, pullback = rules.rrule(broadcasted, ident, np.ones(2))
        with pytest.raises(
            TypeError, match=r"giving \(np.float64\(1\.0\),\) at element 0; expected a tuple of 2"
        ):
            pullback(np.ones(2))

        def ident2(x: Any) -> Any:
            return x

        rules.register_rrule(ident2)(lambda x: (x, lambda ybar: (NT, Tangent(tuple, ybar))))
        with pytest.warns(SlowBroadcastWarning):
            _, pullback = rules.rrule(broadcasted, ident2, np.ones(2))
        with pytest.raises(TypeError, match=r"element 0 of the cotangent for args\[0\]"):
            pullback(np.ones(2))


# ------------------------------------------------------------------------------------------
# frule
# ------------------------------------------------------------------------------------------


class TestFRule:
    def test_unary(self, rules: RuleSet) -> None:
        x = np.linspace(-1, 1, 4)
        xdot = np.arange(4.0)
        y, ydot = rules.frule((NT, NT, xdot), broadcasted, np.sin, x)
        assert_array_equal(y, np.sin(x))
        assert_allclose(ydot, np.cos(x) * xdot, rtol=1e-15)

    @pytest.mark.parametrize(("sx", "sz"), BINARY_SHAPES)
    def test_binary_shapes(self, rules: RuleSet, sx: Any, sz: Any) -> None:
        x = np.arange(1.0, 1.0 + math.prod(sx)).reshape(sx)
        z = np.arange(2.0, 2.0 + math.prod(sz)).reshape(sz)
        dx, dz = np.full(sx, 0.5), np.full(sz, -2.0)
        _, ydot = rules.frule((NT, NT, dx, dz), broadcasted, np.multiply, x, z)
        assert ydot.shape == np.broadcast_shapes(sx, sz)
        assert_allclose(ydot, dx * z + x * dz)

    def test_dtype_and_kind(self, rules: RuleSet) -> None:
        x = np.ones(3, np.float32)
        y, ydot = rules.frule((NT, NT, np.ones(3), 0.0), broadcasted, np.multiply, x, 2.0)
        assert y.dtype == np.float32
        assert ydot.dtype == np.float32
        assert_array_equal(ydot, [2.0, 2.0, 2.0])
        _, ydot = rules.frule((NT, NT, 1.0), broadcasted, np.sin, 0.0)
        assert type(ydot) is np.float64
        assert ydot == 1.0
        x = np.array([1j])
        _, ydot = rules.frule((NT, NT, np.array([2.0 + 0j])), broadcasted, np.exp, x)
        assert_allclose(ydot, 2 * np.exp(x))

    def test_zero_and_integer_tangents(self, rules: RuleSet) -> None:
        _, ydot = rules.frule((NT, NT, ZT), broadcasted, np.sin, np.ones(2))
        assert ydot is ZT
        _, ydot = rules.frule((NT, NT, NT, 1.0), broadcasted, np.multiply, np.arange(2), 2.0)
        assert_array_equal(ydot, [0.0, 1.0])
        _, ydot = rules.frule((NT, NT, Thunk(lambda: np.ones(2))), broadcasted, np.sin, np.zeros(2))
        assert_array_equal(ydot, [1.0, 1.0])

    def test_misuse(self, rules: RuleSet) -> None:
        with pytest.raises(TypeError, match=r"got 2 tangents for 1 argument\(s\)"):
            rules.frule((NT, np.ones(2)), broadcasted, np.sin, np.ones(2))
        with pytest.raises(ValueError, match=r"tangent of args\[0\] has shape \(3,\)"):
            rules.frule((NT, NT, np.ones(3)), broadcasted, np.sin, np.ones(2))
        with pytest.raises(TypeError, match="has no tangent; pass NoTangent"):
            rules.frule((NT, 1.0, np.ones(2)), broadcasted, np.sin, np.ones(2))

    @pytest.mark.parametrize(("sx", "sz"), BINARY_SHAPES)
    def test_per_element_matches_scalar_path(self, rules: RuleSet, sx: Any, sz: Any) -> None:
        mul = fresh_mul()
        element_rules(mul, rules)
        x = np.arange(1.0, 1.0 + math.prod(sx), dtype=np.float32).reshape(sx)
        z = np.arange(2.0, 2.0 + math.prod(sz), dtype=np.float32).reshape(sz)
        tangents = (NT, NT, np.full(sx, 0.5, np.float32), np.full(sz, -2.0, np.float32))
        y1, d1 = rules.frule(tangents, broadcasted, np.multiply, x, z)
        with pytest.warns(SlowBroadcastWarning):
            y2, d2 = rules.frule(tangents, broadcasted, mul, x, z)
        assert y1.dtype == y2.dtype == d1.dtype == d2.dtype == np.float32
        assert_allclose(y1, y2)
        assert_allclose(d1, d2)


# ------------------------------------------------------------------------------------------
# Functions of several outputs through the broadcast path
# ------------------------------------------------------------------------------------------


def sincos(x: Any) -> tuple[Any, Any]:
    return np.sin(x), np.cos(x)


def scaled_sincos(x: Any, s: Any) -> tuple[Any, Any]:
    return s * np.sin(x), s * np.cos(x)


@pytest.fixture
def several() -> RuleSet:
    r = RuleSet("several")
    r.scalar_rule(sincos, lambda x, y: (y[1], -y[0]))
    r.scalar_rule(np.modf, lambda x, y: (1.0, 0.0))
    r.scalar_rule(np.frexp, lambda x, y: (np.ldexp(1.0, -y[1]), 0.0))
    r.scalar_rule(
        scaled_sincos,
        lambda x, s, y: ((s * np.cos(x), np.sin(x)), (-s * np.sin(x), np.cos(x))),
    )
    return r


class TestSeveralOutputs:
    def test_broadcasted_returns_one_array_per_output(self) -> None:
        frac, whole = broadcasted(np.modf, np.array([[1.5], [-2.25]]))
        assert_array_equal(frac, [[0.5], [-0.25]])
        assert_array_equal(whole, [[1.0], [-2.0]])
        _, e = broadcasted(np.frexp, np.array([8.0, 3.0]))
        assert e.dtype.kind == "i"
        s, c = broadcasted(lambda v: (math.sin(v), math.cos(v)), np.array([0.0, 1.0]))
        assert s.dtype == c.dtype == np.float64
        assert_allclose(c, [1.0, math.cos(1.0)])
        s0, c0 = broadcasted(lambda v: (math.sin(v), math.cos(v)), 0.0)
        assert (s0, c0) == (0.0, 1.0)

    def test_scalar_path_pullback_sums_over_outputs(self, several: RuleSet) -> None:
        x = np.array([[0.1, 0.5, 2.0]])
        s = np.array([[1.0], [2.0]])
        (ys, yc), pullback = several.rrule(broadcasted, scaled_sincos, x, s)
        assert ys.shape == yc.shape == (2, 3)
        a, b = np.ones((2, 3)), np.full((2, 3), 3.0)
        out = pullback((a, b))
        assert out[:2] == (NT, NT)
        assert_allclose(out[2], (s * np.cos(x) * a - s * np.sin(x) * b).sum(0, keepdims=True))
        assert_allclose(out[3], (np.sin(x) * a + np.cos(x) * b).sum(1, keepdims=True))
        only_first = pullback(Tangent(tuple, a))
        assert_allclose(only_first[2], (s * np.cos(x) * a).sum(0, keepdims=True))
        assert pullback(ZT)[2:] == (ZT, ZT)
        assert pullback((NT, ZT))[2:] == (ZT, ZT)

    def test_scalar_path_pushforward_per_output(self, several: RuleSet) -> None:
        x = np.linspace(0.1, 3.0, 4)
        (_, e), (mdot, edot) = several.frule((NT, NT, np.ones(4)), broadcasted, np.frexp, x)
        assert_allclose(mdot, np.ldexp(1.0, -e))
        assert edot is NT
        _, (sdot, cdot) = several.frule((NT, NT, 2 * np.ones(4)), broadcasted, sincos, x)
        assert_allclose(sdot, 2 * np.cos(x))
        assert_allclose(cdot, -2 * np.sin(x))
        _, zeros = several.frule((NT, NT, ZT), broadcasted, sincos, x)
        assert zeros == (ZT, ZT)

    def test_partials_written_for_scalars_fall_back_per_element(self) -> None:
        r = RuleSet()
        r.scalar_rule(sincos, lambda x, y: (math.cos(x), -math.sin(x)))
        x = np.array([0.2, 1.0])
        _, pullback = r.rrule(broadcasted, sincos, x)
        with pytest.warns(SlowBroadcastWarning, match="partials once per element"):
            out = pullback((np.ones(2), np.ones(2)))
        assert_allclose(out[2], np.cos(x) - np.sin(x))

    @pytest.mark.parametrize("f", [sincos, np.modf, np.frexp], ids=lambda f: f.__name__)
    def test_rules_of_several_outputs_pass_the_testers(self, several: RuleSet, f: Any) -> None:
        x = np.linspace(0.3, 5.0, 7)
        test_rrule(broadcasted, f, x, rrule_f=several.rrule, rng=0)
        test_frule(broadcasted, f, x, frule_f=several.frule, rng=0)
        s = np.array([[1.0], [-2.0]])
        test_rrule(broadcasted, scaled_sincos, x, s, rrule_f=several.rrule, rng=0)
        test_frule(broadcasted, scaled_sincos, x, s, frule_f=several.frule, rng=0)

    def test_a_wrong_row_of_several_outputs_fails_the_testers(self) -> None:
        bad = RuleSet()
        bad.scalar_rule(sincos, lambda x, y: (y[1], -1.01 * y[0]))
        x = np.linspace(-2.0, 2.0, 6)
        with pytest.raises(RuleTestFailure) as rr:
            test_rrule(broadcasted, sincos, x, rrule_f=bad.rrule, rng=0)
        assert "numerical reference: structured broadcast vjp" in str(rr.value)
        assert "args[1]: 6 of 6 elements differ" in str(rr.value)
        with pytest.raises(RuleTestFailure) as fr:
            test_frule(broadcasted, sincos, x, frule_f=bad.frule, rng=0)
        assert "ydot[1]: 6 of 6 elements differ" in str(fr.value)
        assert "ydot[0]" not in str(fr.value)

    def test_per_element_path_with_several_outputs(self) -> None:
        r = RuleSet()

        def sincos2(x: Any) -> tuple[Any, Any]:  # its own function: SlowBroadcastWarning is once
            return np.sin(x), np.cos(x)

        @r.register_rrule(sincos2)
        def _rrule(x: Any) -> Any:
            return sincos2(x), lambda ybar: (NT, ybar[0] * np.cos(x) - ybar[1] * np.sin(x))

        @r.register_frule(sincos2)
        def _frule(tangents: Any, x: Any) -> Any:
            xdot = tangents[1]
            return sincos2(x), (np.cos(x) * xdot, -np.sin(x) * xdot)

        x = np.array([[0.1, 0.5, 2.0]])
        with pytest.warns(SlowBroadcastWarning, match="scalar rrule once per element"):
            (s, _), pullback = r.rrule(broadcasted, sincos2, x)
        assert_allclose(s, np.sin(x))
        a, b = np.array([[1.0, 2.0, 3.0]]), np.full(3, 2.0)  # b broadcasts to the output
        _, fbar, xbar = pullback((a, b))
        assert fbar is NT
        assert_allclose(xbar, np.cos(x) * a - np.sin(x) * b)
        assert_allclose(pullback((ZT, b))[2], -np.sin(x) * b)
        assert pullback(ZT)[2] is ZT
        # (warned once per function: the rrule above already did)
        _, (sdot, cdot) = r.frule((NT, NT, np.full((1, 3), 3.0)), broadcasted, sincos2, x)
        assert_allclose(sdot, 3.0 * np.cos(x))
        assert_allclose(cdot, -3.0 * np.sin(x))
