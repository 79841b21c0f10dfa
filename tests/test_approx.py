"""Tests for rruletest.approx: test_approx and collect_mismatches.

Tables of pairs that must compare equal and pairs that must not (with the checks and paths
reported), exact messages for representative failures, the two Julia failures this module
replaces, values that misbehave, tolerance arguments, and hypothesis properties over random
nested structures.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections import OrderedDict, namedtuple
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from rruletest.approx import InvalidToleranceError, collect_mismatches, test_approx
from rruletest.broadcast import broadcasted
from rruletest.errors import RuleTestFailure
from rruletest.rules import RuleSet
from rruletest.tangents import InplaceableThunk, NoTangent, Tangent, Thunk, ZeroTangent
from rruletest.walk import MAX_DEPTH, register_structure
from rruletest.walk import _structure as walk_structure

P = namedtuple("P", "x y")
Q = namedtuple("Q", "x z")
P2 = namedtuple("P2", "x y")  # same fields as P, another type


@dataclasses.dataclass
class D:
    a: Any
    b: Any


@dataclasses.dataclass
class E:
    a: Any
    b: Any


class Plain:
    """A plain class with declared (annotated) fields, for Tangent(Plain, ...)."""

    w: Any

    def __init__(self, w: Any) -> None:
        self.w = w


class Undeclared:
    """A plain class that declares no fields: its attributes are those ``__init__`` sets."""

    def __init__(self, u: Any, v: Any) -> None:
        self.u, self.v = u, v


class Opaque:
    """An object rruletest knows nothing about; equal when its payloads are."""

    def __init__(self, v: Any) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and self.v == other.v

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Opaque({self.v!r})"


def raising(exc: Exception) -> Thunk:
    def fail() -> Any:
        raise exc

    return Thunk(fail)


def checks(actual: Any, expected: Any, **kw: Any) -> list[tuple[str, str]]:
    return [(m.check, m.path) for m in collect_mismatches(actual, expected, **kw)]


def message(actual: Any, expected: Any, **kw: Any) -> str:
    with pytest.raises(RuleTestFailure) as info:
        test_approx(actual, expected, **kw)
    return str(info.value)


A = np.array([1.0, 2.0, 3.0])

# ------------------------------------------------------------------------------------------
# Pairs that compare equal
# ------------------------------------------------------------------------------------------

EQUAL = [
    # numbers and arrays
    pytest.param(1.0, 1.0 + 1e-12, {}, id="float-within-tol"),
    pytest.param(1, 1.0, {}, id="int-float"),
    pytest.param(True, 1.0, {}, id="bool-float"),
    pytest.param(np.float64(2.0), 2.0, {}, id="npscalar-pyscalar"),
    pytest.param(np.array(2.0), 2.0, {}, id="0d-pyscalar"),
    pytest.param(np.array(2.0), np.float32(2.0), {}, id="0d-npscalar"),
    pytest.param(np.float32(0.1), 0.1, {}, id="float32-float64-compared-at-float32"),
    pytest.param(A.astype(np.float32), A, {}, id="float32-float64-arrays"),
    pytest.param(np.arange(3), A - 1, {}, id="int-array-float-array"),
    pytest.param(1 + 2j, np.complex64(1 + 2j), {}, id="complex"),
    pytest.param(A + 1e-3, A, {"atol": 1e-2}, id="atol"),
    pytest.param(A * (1 + 1e-4), A, {"rtol": 1e-3}, id="rtol"),
    pytest.param(
        A + np.array([0, 0, 0.1]), A, {"atol": np.array([0, 0, 0.2])}, id="per-element-atol"
    ),
    pytest.param(
        np.array([np.nan, np.inf, -np.inf]),
        np.array([np.nan, np.inf, -np.inf]),
        {},
        id="nan-inf-same-place",
    ),
    pytest.param(complex(np.nan, 1), complex(np.nan, 1), {}, id="complex-nan"),
    pytest.param(complex(1 + 1e-12, np.nan), complex(1, np.nan), {}, id="complex-nan-close"),
    pytest.param(complex(np.inf, 2), complex(np.inf, 2 + 1e-12), {}, id="complex-inf-close"),
    pytest.param(np.zeros((0, 3)), np.zeros((0, 3)), {}, id="empty-arrays"),
    pytest.param(Fraction(1, 2), 0.5, {}, id="fraction-number"),
    pytest.param(np.array([True, False]), np.array([1.0, 0.0]), {}, id="bool-array"),
    # zeros
    pytest.param(ZeroTangent(), ZeroTangent(), {}, id="zero-zero"),
    pytest.param(NoTangent(), ZeroTangent(), {}, id="notangent-zerotangent"),
    pytest.param(NoTangent(), NoTangent(), {"strict_zero_kind": True}, id="strict-same-kind"),
    pytest.param(ZeroTangent(), np.zeros(3), {}, id="zero-zeros-array"),
    pytest.param(np.full(3, 1e-10), NoTangent(), {}, id="near-zero-array-notangent"),
    pytest.param(ZeroTangent(), 0.0, {}, id="zero-float"),
    pytest.param(
        ZeroTangent(),
        np.zeros(2),
        {"strict_zero_kind": True},
        id="strict-allows-zerotangent-for-zeros",
    ),
    pytest.param(ZeroTangent(), (0.0, np.zeros(2), NoTangent()), {}, id="zero-tuple-of-zeros"),
    pytest.param(Tangent(P, x=0.0), ZeroTangent(), {}, id="tangent-of-zeros-zero"),
    pytest.param(ZeroTangent(), {"k": [0.0]}, {}, id="zero-nested-dict"),
    pytest.param(D(0.0, ZeroTangent()), NoTangent(), {}, id="dataclass-of-zeros"),
    pytest.param(
        NoTangent(), np.array([0.0, NoTangent()], dtype=object), {}, id="zero-object-array"
    ),
    # thunks
    pytest.param(Thunk(lambda: A), A, {}, id="thunk-array"),
    pytest.param(A, Thunk(lambda: A), {}, id="array-thunk"),
    pytest.param(Thunk(lambda: Thunk(lambda: 1.0)), 1.0, {}, id="nested-thunk"),
    pytest.param(InplaceableThunk(lambda x: x + 1.0, lambda: 1.0), 1.0, {}, id="inplaceable"),
    pytest.param(Thunk(lambda: ZeroTangent()), np.zeros(2), {}, id="thunk-of-zero"),
    # Tangents
    pytest.param(Tangent(P, x=1.0, y=2.0), Tangent(P, 1.0, 2.0), {}, id="tangent-tangent"),
    pytest.param(
        Tangent(P, x=1.0), Tangent(P, x=1.0, y=ZeroTangent()), {}, id="tangent-missing-field-zero"
    ),
    pytest.param(Tangent(tuple, 1.0), Tangent(tuple, 1.0, 0.0), {}, id="tangent-tuple-shorter"),
    pytest.param(
        Tangent(dict, {"a": 1.0}), Tangent(dict, {"a": 1.0, "b": 0.0}), {}, id="tangent-dict-union"
    ),
    pytest.param(Tangent(tuple, A, 1.0), (A, 1.0), {}, id="tangent-tuple-natural"),
    pytest.param([A, 1.0], Tangent(list, A, 1.0), {}, id="natural-list-tangent"),
    pytest.param(Tangent(P, y=2.0), P(0.0, 2.0), {}, id="tangent-namedtuple-by-name"),
    pytest.param(Tangent(D, b=1.0), D(0.0, 1.0), {}, id="tangent-dataclass"),
    pytest.param(Tangent(dict, {"a": 1.0}), {"a": 1.0, "b": 0.0}, {}, id="tangent-dict-natural"),
    pytest.param(Tangent(OrderedDict, {"a": 1.0}), {"a": 1.0}, {}, id="tangent-ordereddict"),
    pytest.param(Tangent(Plain, w=1.0), Plain(1.0), {}, id="tangent-plain-object"),
    pytest.param(
        Tangent(Undeclared, u=1.0), Undeclared(1.0, 0.0), {}, id="tangent-plain-undeclared-zero"
    ),
    pytest.param(Tangent(tuple, Thunk(lambda: 1.0)), (1.0,), {}, id="thunk-inside-tangent"),
    # containers
    pytest.param((1.0, [A, {"k": 2.0}]), (1.0, [A, {"k": 2.0}]), {}, id="nested"),
    pytest.param(P(1.0, 2.0), P(1.0, 2.0), {}, id="namedtuple"),
    pytest.param(D(1.0, A), D(1.0, A), {}, id="dataclass"),
    pytest.param({"b": 1.0, "a": 2.0}, {"a": 2.0, "b": 1.0}, {}, id="dict-order-free"),
    pytest.param({"a": 1.0}, {"a": 1.0, "n": NoTangent()}, {}, id="dict-missing-notangent"),
    pytest.param({"a": 1.0, "b": np.zeros(2)}, {"a": 1.0}, {}, id="dict-extra-zeros"),
    pytest.param(OrderedDict(a=1.0), {"a": 1.0}, {}, id="ordereddict-dict"),
    pytest.param((), (), {}, id="empty-tuples"),
    pytest.param(
        np.array([NoTangent(), 1.0], dtype=object),
        np.array([0.0, 1.0]),
        {},
        id="object-array-float-array",
    ),
    pytest.param(
        np.array([A, Tangent(P, x=1.0)], dtype=object),
        np.array([A, P(1.0, 0.0)], dtype=object),
        {},
        id="object-arrays-of-tangents",
    ),
    pytest.param(np.array(Thunk(lambda: 1.0), dtype=object), 1.0, {}, id="0d-object-array"),
    # everything else
    pytest.param(None, None, {}, id="none"),
    pytest.param("abc", "abc", {}, id="str"),
    pytest.param(b"x", b"x", {}, id="bytes"),
    pytest.param(Opaque(1), Opaque(1), {}, id="opaque"),
    pytest.param(np.array(["a", "b"]), np.array(["a", "b"]), {}, id="string-array"),
    pytest.param(np.datetime64("2020-01-01"), np.datetime64("2020-01-01"), {}, id="datetime"),
    pytest.param(2**80, 2**80, {}, id="huge-int"),
    pytest.param(frozenset({1}), frozenset({1}), {}, id="frozenset"),
]


@pytest.mark.parametrize(("actual", "expected", "kw"), EQUAL)
def test_equal_pairs(actual: Any, expected: Any, kw: dict[str, Any]) -> None:
    assert collect_mismatches(actual, expected, **kw) == []
    test_approx(actual, expected, **kw)


# ------------------------------------------------------------------------------------------
# Pairs that differ: which checks fail, where
# ------------------------------------------------------------------------------------------

DIFFERENT = [
    # numbers and arrays
    pytest.param(1.0, 1.1, {}, [("value", "")], id="float"),
    pytest.param(np.float32(1.001), np.float32(1.0), {}, [("value", "")], id="float32"),
    pytest.param(np.ones(3), np.ones(2), {}, [("shape", "")], id="shape"),
    pytest.param(np.ones(()), np.ones(1), {}, [("shape", "")], id="0d-vs-1"),
    pytest.param(1.0, np.ones(1), {}, [("shape", "")], id="scalar-vs-1"),
    pytest.param(np.ones((3, 4)), np.ones((3, 1)), {}, [("shape", "")], id="unbroadcast"),
    pytest.param(1 + 0j, 1.0, {}, [("dtype", "")], id="complex-for-real"),
    pytest.param(A, A + 0j, {}, [("dtype", "")], id="real-for-complex"),
    pytest.param(1 + 1j, 1.0, {}, [("dtype", ""), ("value", "")], id="complex-differs"),
    pytest.param(np.array([np.nan]), np.array([1.0]), {}, [("value", "")], id="nan-actual"),
    pytest.param(np.nan, np.nan, {"nan_equal": False}, [("value", "")], id="nan-not-equal"),
    # Regression: complex(1, nan) passed against complex(5, nan). NaN equals NaN per part.
    pytest.param(complex(1, np.nan), complex(5, np.nan), {}, [("value", "")], id="complex-nan"),
    pytest.param(
        complex(np.nan, 0), complex(0, np.nan), {}, [("value", "")], id="complex-nan-elsewhere"
    ),
    # Regression: a complex infinity in a list raised a TypeError inside the comparison.
    pytest.param(
        [complex(np.inf, 0)],
        [np.complex64(complex(np.inf, 1))],
        {},
        [("value", "[0]")],
        id="complex-inf-in-list",
    ),
    pytest.param(np.inf, -np.inf, {}, [("value", "")], id="inf-signs"),
    pytest.param(np.inf, 1e308, {}, [("value", "")], id="inf-finite"),
    pytest.param(
        A + 0.1, A, {"atol": np.array([0.2, 0.2, 0.0])}, [("value", "")], id="per-element-atol"
    ),
    # zeros
    pytest.param(
        ZeroTangent(),
        NoTangent(),
        {"strict_zero_kind": True},
        [("zero_kind", "")],
        id="strict-zerotangent-for-notangent",
    ),
    pytest.param(
        NoTangent(),
        ZeroTangent(),
        {"strict_zero_kind": True},
        [("zero_kind", "")],
        id="strict-notangent-for-zerotangent",
    ),
    pytest.param(
        np.zeros(2),
        NoTangent(),
        {"strict_zero_kind": True},
        [("zero_kind", "")],
        id="strict-zeros-for-notangent",
    ),
    pytest.param(
        NoTangent(),
        np.zeros(2),
        {"strict_zero_kind": True},
        [("zero_kind", "")],
        id="strict-notangent-for-zeros",
    ),
    pytest.param(ZeroTangent(), np.array([0.0, 1e-3]), {}, [("value", "")], id="zero-array"),
    pytest.param(1.0, NoTangent(), {}, [("value", "")], id="float-notangent"),
    pytest.param(ZeroTangent(), (0.0, (1.0,)), {}, [("value", "[1][0]")], id="zero-nested"),
    pytest.param(Tangent(P, y=1.0), ZeroTangent(), {}, [("value", ".y")], id="tangent-zero"),
    pytest.param(NoTangent(), D(0.0, np.ones(1)), {}, [("value", ".b")], id="zero-dataclass"),
    pytest.param(
        NoTangent(), np.array([0.0, 2.0], dtype=object), {}, [("value", "")], id="zero-object-array"
    ),
    pytest.param(NoTangent(), None, {}, [("type", "")], id="zero-none"),
    pytest.param(None, ZeroTangent(), {}, [("type", "")], id="none-zero"),
    pytest.param(ZeroTangent(), "s", {}, [("type", "")], id="zero-str"),
    pytest.param(ZeroTangent(), Opaque(0), {}, [("type", "")], id="zero-opaque"),
    # thunks
    pytest.param(raising(ValueError("boom")), 1.0, {}, [("exception", "")], id="thunk-raises"),
    pytest.param(1.0, raising(KeyError("k")), {}, [("exception", "")], id="expected-thunk-raises"),
    pytest.param(
        (1.0, raising(ValueError("x"))),
        (1.0, 2.0),
        {},
        [("exception", "[1]")],
        id="thunk-raises-inside",
    ),
    pytest.param(Thunk(lambda: 2.0), 1.0, {}, [("value", "")], id="thunk-value"),
    # Tangents
    pytest.param(
        Tangent(P, x=1.0), Tangent(P2, x=1.0), {}, [("type", "")], id="tangent-primal-types"
    ),
    pytest.param(
        Tangent(P, x=1.0),
        Tangent(P, x=1.0, y=1.0),
        {},
        [("value", ".y")],
        id="tangent-missing-field-nonzero",
    ),
    pytest.param(
        Tangent(tuple, 1.0, 2.0),
        Tangent(tuple, 1.0),
        {},
        [("value", "[1]")],
        id="tangent-tuple-longer",
    ),
    pytest.param(
        Tangent(dict, {"a": 1.0}),
        Tangent(dict, {"b": 1.0}),
        {},
        [("value", "['a']"), ("value", "['b']")],
        id="tangent-dict-keys",
    ),
    pytest.param(
        Tangent(tuple, 1.0, 2.0, 3.0), (1.0, 2.0), {}, [("structure", "")], id="tangent-more-fields"
    ),
    pytest.param(Tangent(tuple, 1.0), [1.0], {}, [("type", "")], id="tangent-tuple-vs-list"),
    pytest.param(
        Tangent(tuple, 1.0, 2.0), P(1.0, 2.0), {}, [("type", "")], id="tangent-tuple-vs-namedtuple"
    ),
    pytest.param(
        Tangent(P, x=1.0), Q(1.0, 0.0), {}, [("type", "")], id="tangent-vs-other-namedtuple"
    ),
    pytest.param(Tangent(P, x=1.0), P(2.0, 0.0), {}, [("value", ".x")], id="tangent-field"),
    pytest.param(Tangent(P, x=1.0), A, {}, [("type", "")], id="tangent-for-array"),
    pytest.param(A, Tangent(P, x=1.0), {}, [("type", "")], id="array-for-tangent"),
    pytest.param(
        Tangent(dict, {"c": 1.0}),
        {"a": 1.0},
        {},
        [("structure", ""), ("value", "['a']")],
        id="tangent-dict-extra-key",
    ),
    pytest.param(Tangent(D, a=1.0), E(1.0, 0.0), {}, [("type", "")], id="tangent-other-class"),
    pytest.param(Tangent(Plain, w=1.0), Plain(2.0), {}, [("value", ".w")], id="tangent-plain"),
    # an attribute neither declared nor stored is zero in the Tangent, so it must be zero there
    pytest.param(
        Tangent(Undeclared, u=1.0),
        Undeclared(1.0, 5.0),
        {},
        [("value", ".v")],
        id="tangent-plain-undeclared-field",
    ),
    pytest.param(
        Undeclared(1.0, 5.0),
        Tangent(Undeclared, u=1.0),
        {},
        [("value", ".v")],
        id="plain-undeclared-field-for-tangent",
    ),
    # containers
    pytest.param((1.0, 2.0), (1.0,), {}, [("structure", "")], id="tuple-length"),
    pytest.param([1.0, [2.0, 3.0]], [1.0, [2.0, 3.5]], {}, [("value", "[1][1]")], id="nested"),
    pytest.param([1.0], (1.0,), {}, [("type", "")], id="list-for-tuple"),
    pytest.param((1.0,), [1.0], {}, [("type", "")], id="tuple-for-list"),
    pytest.param((1.0, 2.0), P(1.0, 2.0), {}, [("type", "")], id="tuple-for-namedtuple"),
    pytest.param(P(1.0, 2.0), Q(1.0, 2.0), {}, [("structure", "")], id="namedtuple-names"),
    pytest.param(
        P(1.0, 2.0), P2(1.0, 3.0), {}, [("type", ""), ("value", ".y")], id="namedtuple-types"
    ),
    pytest.param({"a": 1.0}, {"b": 1.0}, {}, [("structure", "")], id="dict-keys"),
    pytest.param({"a": 1.0}, {"a": 2.0}, {}, [("value", "['a']")], id="dict-value"),
    pytest.param(D(1.0, "s"), D(1.0, "t"), {}, [("value", ".b")], id="dataclass-value"),
    pytest.param(D(1.0, 2.0), E(1.0, 2.0), {}, [("type", "")], id="dataclass-types"),
    pytest.param([1.0, 2.0], A[:2], {}, [("type", "")], id="list-for-array"),
    pytest.param(A, (1.0, 2.0, 3.0), {}, [("type", "")], id="array-for-tuple"),
    pytest.param(
        np.array([NoTangent(), 1.0], dtype=object),
        np.array([1.0, 1.0]),
        {},
        [("value", "")],
        id="object-array-value",
    ),
    pytest.param(
        np.array([NoTangent(), 1.0], dtype=object),
        np.ones(3),
        {},
        [("shape", "")],
        id="object-array-shape",
    ),
    pytest.param(
        np.array([A, 1.0], dtype=object),
        np.array([A, 2.0], dtype=object),
        {},
        [("value", "[1]")],
        id="object-array-elementwise",
    ),
    pytest.param(
        np.array([[1.0, raising(ValueError())]], dtype=object),
        np.ones((1, 2)),
        {},
        [("exception", "[0, 1]")],
        id="object-array-thunk-raises",
    ),
    pytest.param(
        np.array([NoTangent(), 1.0], dtype=object),
        np.array([0.0, 1.0]),
        {"strict_zero_kind": True},
        [("zero_kind", "[0]")],
        id="object-array-strict",
    ),
    pytest.param(
        np.array([1.0], dtype=object), [1.0], {}, [("type", "")], id="object-array-for-list"
    ),
    # everything else
    pytest.param(None, 1.0, {}, [("type", "")], id="none-for-float"),
    pytest.param(1.0, None, {}, [("type", "")], id="float-for-none"),
    pytest.param("a", "b", {}, [("value", "")], id="str"),
    pytest.param("a", b"a", {}, [("type", "")], id="str-bytes"),
    pytest.param("1.0", 1.0, {}, [("type", "")], id="str-for-float"),
    pytest.param(Opaque(1), Opaque(2), {}, [("value", "")], id="opaque"),
    pytest.param(Opaque(1), 1.0, {}, [("type", "")], id="opaque-for-float"),
    pytest.param(np.array(["a"]), np.array(["b"]), {}, [("value", "")], id="string-arrays"),
    pytest.param(2**80, 2**80 + 1, {}, [("value", "")], id="huge-int"),
]


@pytest.mark.parametrize(("actual", "expected", "kw", "found"), DIFFERENT)
def test_different_pairs(
    actual: Any, expected: Any, kw: dict[str, Any], found: list[tuple[str, str]]
) -> None:
    assert checks(actual, expected, **kw) == found
    with pytest.raises(RuleTestFailure) as info:
        test_approx(actual, expected, **kw)
    assert [(m.check, m.path) for m in info.value.mismatches] == found


# One representative of each kind; every pair of different kinds is compared both ways.
KINDS: dict[str, Any] = {
    "float": 1.5,
    "array": np.array([1.5, 2.0]),
    "object-array": np.array([1.5, 2.0], dtype=object),
    "tangent": Tangent(P, x=1.5, y=2.0),
    "tuple": (1.5, 2.0),
    "list": [1.5, 2.0],
    "namedtuple": P(1.5, 2.0),
    "dict": {"x": 1.5, "y": 2.0},
    "dataclass": D(1.5, 2.0),
    "none": None,
    "str": "s",
    "opaque": Opaque(1.5),
}
COMPATIBLE = {("array", "object-array"), ("tangent", "namedtuple")}


@pytest.mark.parametrize("ka", list(KINDS))
@pytest.mark.parametrize("ke", list(KINDS))
def test_every_pair_of_kinds(ka: str, ke: str) -> None:
    a, e = KINDS[ka], KINDS[ke]
    found = collect_mismatches(a, e, path="v")
    thunked = collect_mismatches(Thunk(lambda: a), Thunk(lambda: e), path="v")
    assert [m.message for m in thunked] == [m.message for m in found]
    if ka == ke or (ka, ke) in COMPATIBLE or (ke, ka) in COMPATIBLE:
        assert found == []
    else:
        assert found, "kinds that differ must not compare equal"
        assert found[0].check in ("type", "shape")
        assert found[0].path == "v"
        assert found[0].message.startswith("v: ")


# ------------------------------------------------------------------------------------------
# Exact messages
# ------------------------------------------------------------------------------------------


def test_message_array_values() -> None:
    actual = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]])
    expected = np.array([[1.0, 2.5, 3.0], [4.0, 5.0, 6.0]])
    assert message(actual, expected, path="pullback output[2].weights") == (
        "pullback output[2].weights: 2 of 6 elements differ\n"
        "  actual:   array([[1. , 2. , 3. ],\n"
        "                   [4. , 5. , 6.5]])\n"
        "  expected: array([[1. , 2.5, 3. ],\n"
        "                   [4. , 5. , 6. ]])\n"
        "  max abs diff 0.5 at [0, 1] (actual 2.0, expected 2.5)\n"
        "  max rel diff 0.2 at [0, 1]\n"
        "  tolerance: rtol=1e-09, atol=1e-09"
    )


def test_message_scalar_values() -> None:
    assert message(np.float32(1.5), 1.25, path="args[0]") == (
        "args[0]: values differ\n"
        "  actual:   np.float32(1.5)\n"
        "  expected: 1.25\n"
        "  abs diff 0.25, rel diff 0.2\n"
        "  tolerance: rtol=0.0001, atol=0.0001"
    )


def test_message_long_array_is_shortened() -> None:
    expected = np.arange(1000.0)
    actual = expected.copy()
    actual[500] = 0.0
    assert message(actual, expected) == (
        "1 of 1000 elements differ\n"
        "  actual:   array([  0.,   1.,   2., ..., 997., 998., 999.], shape=(1000,))\n"
        "  expected: array([  0.,   1.,   2., ..., 997., 998., 999.], shape=(1000,))\n"
        "  max abs diff 500 at [500] (actual 0.0, expected 500.0)\n"
        "  max rel diff 1 at [500]\n"
        "  tolerance: rtol=1e-09, atol=1e-09"
    )


def test_message_per_element_tolerance_names_the_worst_element() -> None:
    atol = np.array([1e-3, 1e-3, 1e-6])
    assert message(A + np.array([0.0, 0.01, 0.002]), A, atol=atol, path="x") == (
        "x: 2 of 3 elements differ\n"
        "  actual:   array([1.   , 2.01 , 3.002])\n"
        "  expected: array([1., 2., 3.])\n"
        "  max abs diff 0.01 at [1] (actual 2.01, expected 2.0)\n"
        "  max rel diff 0.005 at [1]\n"
        "  tolerance at [1] (per element): rtol=1e-09, atol=0.001"
    )


def test_message_nan() -> None:
    assert message(np.array([np.nan, 1.0, np.nan]), np.array([0.0, 1.0, 2.0])) == (
        "2 of 3 elements differ\n"
        "  actual:   array([nan,  1., nan])\n"
        "  expected: array([0., 1., 2.])\n"
        "  NaN in actual only: 2 elements, first at [0]\n"
        "  tolerance: rtol=1e-09, atol=1e-09"
    )


def test_message_unbroadcast_hint() -> None:
    assert message(np.ones((2, 3)), np.ones((2, 1)), path="args[1]") == (
        "args[1]: shape (2, 3) where (2, 1) was expected\n"
        "  actual:   array([[1., 1., 1.],\n"
        "                   [1., 1., 1.]])\n"
        "  expected: array([[1.],\n"
        "                   [1.]])\n"
        "  hint: did the rule forget to unbroadcast? A cotangent for a value of shape (2, 1) "
        "must have that shape: sum over the broadcast dimensions (rruletest.unbroadcast does)"
    )


@pytest.mark.parametrize(
    ("actual", "expected", "hint"),
    [
        pytest.param(np.ones((2, 3)), np.ones((3, 2)), "a missing transpose?", id="transpose"),
        pytest.param(np.ones(6), np.ones((2, 3)), "a missing reshape?", id="reshape"),
        pytest.param(np.ones(()), np.ones(1), "a 0-d value where a 1-element", id="0d"),
        pytest.param(np.ones((2, 1)), np.ones((2, 3)), "was it summed over", id="over-reduced"),
    ],
)
def test_shape_hints(actual: Any, expected: Any, hint: str) -> None:
    (m,) = collect_mismatches(actual, expected)
    assert m.hint is not None
    assert hint in m.hint
    assert m.extra == {"actual_shape": actual.shape, "expected_shape": expected.shape}


def test_message_complex_for_real() -> None:
    assert message(np.array([1 + 0j]), np.array([1.0]), path="x") == (
        "x: complex (complex128) where a real value (float64) was expected\n"
        "  actual:   array([1.+0.j])\n"
        "  expected: array([1.])\n"
        "  hint: the cotangent of a real input is real: take the real part "
        "(rruletest.unbroadcast does)"
    )


def test_message_real_for_complex() -> None:
    (m,) = collect_mismatches(np.float32(1), np.complex64(1))
    first_line = m.message.splitlines()[0]
    assert first_line == "real (float32) where a complex value (complex64) was expected"


def test_message_list_for_tuple() -> None:
    assert message([1.0, 2.0], (1.0, 2.0), path="pullback output") == (
        "pullback output: a list where a tuple was expected\n"
        "  actual:   [1.0, 2.0]\n"
        "  expected: (1.0, 2.0)\n"
        "  hint: return a tuple, not a list"
    )


def test_message_tangent_for_array() -> None:
    assert message(Tangent(tuple, 1.0), A, path="args[0]") == (
        "args[0]: Tangent(tuple, ...) where an array of shape (3,) and dtype float64 was "
        "expected\n"
        "  actual:   Tangent(tuple, 1.0)\n"
        "  expected: array([1., 2., 3.])\n"
        "  hint: a Tangent is the tangent of a structured value (tuple, namedtuple, dataclass, "
        "dict); the tangent of a number or array is a plain number or array"
    )


def test_message_zerotangent_for_notangent() -> None:
    assert message(ZeroTangent(), NoTangent(), path="args[1]", strict_zero_kind=True) == (
        "args[1]: ZeroTangent() where NoTangent() was expected\n"
        "  actual:   ZeroTangent()\n"
        "  expected: NoTangent()\n"
        "  hint: use NoTangent() rather than ZeroTangent() for a non-differentiable argument"
    )


def test_message_notangent_for_zero_derivative() -> None:
    (m,) = collect_mismatches(NoTangent(), np.zeros(2), strict_zero_kind=True)
    assert m.hint == (
        "NoTangent() says the argument is not differentiable; a derivative that is zero is "
        "ZeroTangent()"
    )


def test_message_zero_against_values() -> None:
    assert message(ZeroTangent(), np.array([0.0, 1e-3]), path="x") == (
        "x: 1 of 2 elements differ\n"
        "  actual:   ZeroTangent()\n"
        "  expected: array([0.   , 0.001])\n"
        "  max abs diff 0.001 at [1] (actual 0.0, expected 0.001)\n"
        "  max rel diff 1 at [1]\n"
        "  tolerance: rtol=1e-09, atol=1e-09"
    )


def test_message_dict_keys() -> None:
    assert message({"a": 1.0, "b": 2.0}, {"a": 1.0, "c": 2.0}, path="args[0].b") == (
        "args[0].b: keys differ: missing 'c'; unexpected 'b'\n"
        "  actual:   {'a': 1.0, 'b': 2.0}\n"
        "  expected: {'a': 1.0, 'c': 2.0}"
    )


def test_message_dict_key_missing_with_a_value_names_only_that_key() -> None:
    assert message({"a": 1.0}, {"a": 1.0, "n": NoTangent(), "v": 6.32}, path="args[0]") == (
        "args[0]: keys differ: missing 'v'\n"
        "  actual:   {'a': 1.0}\n"
        "  expected: {'a': 1.0, 'n': NoTangent(), 'v': 6.32}"
    )


def test_message_namedtuple_field_names() -> None:
    assert message(P(1.0, 2.0), Q(1.0, 2.0)) == (
        "a P (namedtuple) with fields (x, y) where a Q (namedtuple) with fields (x, z) was "
        "expected\n"
        "  actual:   P(x=1.0, y=2.0)\n"
        "  expected: Q(x=1.0, z=2.0)\n"
        "  hint: field names matter: build the expected namedtuple type"
    )


def test_message_thunk_raises() -> None:
    def grad() -> float:
        raise ZeroDivisionError("division by zero")

    assert message(Thunk(grad), 1.0, path="x") == (
        "x: unthunking the actual value raised ZeroDivisionError: division by zero\n"
        f"  actual:   Thunk({grad.__qualname__})\n"
        "  expected: 1.0"
    )


def test_message_several_problems() -> None:
    assert message((1.0, [2.0], None), (1.5, (2.0,), NoTangent()), path="out") == (
        "3 problems found:\n"
        "out[0]: values differ\n"
        "  actual:   1.0\n"
        "  expected: 1.5\n"
        "  abs diff 0.5, rel diff 0.333\n"
        "  tolerance: rtol=1e-09, atol=1e-09\n"
        "out[1]: a list where a tuple was expected\n"
        "  actual:   [2.0]\n"
        "  expected: (2.0,)\n"
        "  hint: return a tuple, not a list\n"
        "out[2]: None where NoTangent() was expected\n"
        "  actual:   None\n"
        "  expected: NoTangent()\n"
        "  hint: use NoTangent() or ZeroTangent() rather than None for a missing tangent"
    )


@pytest.mark.parametrize(
    ("actual", "expected", "hint"),
    [
        pytest.param(-A, A, "actual is -expected: a sign error?", id="sign"),
        pytest.param(np.float64(-2.0), 2.0, "actual is -expected: a sign error?", id="sign-0d"),
        pytest.param(2 * A, A, "actual is 2 times expected everywhere", id="factor"),
        pytest.param(np.zeros(3), A, "actual is zero everywhere", id="zeros"),
        pytest.param(
            np.array([1 - 2j, 3 + 1j]),
            np.array([1 + 2j, 3 - 1j]),
            "actual is the complex conjugate of expected",
            id="conjugate",
        ),
    ],
)
def test_value_hints(actual: Any, expected: Any, hint: str) -> None:
    (m,) = collect_mismatches(actual, expected)
    assert m.hint is not None
    assert m.hint.startswith(hint)
    assert f"  hint: {hint}" in m.message


def test_message_missing_first_element() -> None:
    actual, expected = (A, 3.0), (NoTangent(), A, 3.0)
    assert message(actual, expected, path="pullback output") == (
        "pullback output: 2 elements where 3 were expected\n"
        "  actual:   (array([1., 2., 3.]), 3.0)\n"
        "  expected: (NoTangent(), array([1., 2., 3.]), 3.0)\n"
        "  hint: actual matches expected without its first element: is that one missing? "
        "(a pullback returns the tangent for f first)"
    )


@pytest.mark.parametrize(
    ("actual", "expected", "hint"),
    [
        pytest.param([1.0, 2.0], [1.0, 2.0, 3.0], "without its last element", id="last-missing"),
        pytest.param([0.0, 1.0, 2.0], [1.0, 2.0], "after its first element", id="first-extra"),
        pytest.param((1.0, 2.0, 0.0), (1.0, 2.0), "up to its last element", id="last-extra"),
    ],
)
def test_length_shift_hints(actual: Any, expected: Any, hint: str) -> None:
    (m,) = collect_mismatches(actual, expected)
    assert m.check == "structure"
    assert m.hint is not None
    assert hint in m.hint


def test_length_mismatch_without_shift_compares_the_common_elements() -> None:
    assert checks((1.0, 2.0), (1.0, 3.0, 4.0)) == [("structure", ""), ("value", "[1]")]


def test_no_value_hint_for_unrelated_values() -> None:
    (m,) = collect_mismatches(np.array([1.0, 5.0, -2.0]), A)
    assert m.hint is None
    assert "hint" not in m.message


# ------------------------------------------------------------------------------------------
# Mismatch fields
# ------------------------------------------------------------------------------------------


def test_value_mismatch_fields() -> None:
    actual = A + np.array([0.0, 0.1, -0.5])
    (m,) = collect_mismatches(actual, A, rtol=1e-6, atol=1e-3, path="x")
    assert (m.check, m.path, m.count, m.size, m.index) == ("value", "x", 2, 3, (2,))
    assert m.abs_err == pytest.approx(0.5)
    assert m.rel_err == pytest.approx(0.5 / 3)
    assert (m.rtol, m.atol) == (1e-6, 1e-3)
    assert m.actual is actual
    assert m.expected is A


def test_per_element_tolerance_in_force_at_worst_element() -> None:
    atol = np.array([[1e-1], [1e-4]])  # broadcast over columns
    actual = np.ones((2, 2)) + np.array([[0.05, 0.5], [0.01, 0.0]])
    (m,) = collect_mismatches(actual, np.ones((2, 2)), atol=atol, rtol=0.0)
    assert (m.index, m.atol, m.rtol, m.count) == ((0, 1), 0.1, 0.0, 2)


def test_zero_mismatch_keeps_the_zero_as_actual() -> None:
    (m,) = collect_mismatches(ZeroTangent(), np.array([1.0]), path="x")
    assert m.actual == ZeroTangent()
    assert m.hint is None


def test_failure_exposes_first_mismatch() -> None:
    with pytest.raises(RuleTestFailure) as info:
        test_approx((1.0, 2.0), (1.0, 3.0), path="args[0]", rtol=0.1, atol=0.0)
    err = info.value
    assert (err.path, err.actual, err.expected, err.rtol, err.atol) == (
        "args[0][1]",
        2.0,
        3.0,
        0.1,
        0.0,
    )
    assert isinstance(err, AssertionError)


def test_float32_against_float64_uses_float32_tolerance() -> None:
    x = np.linspace(0.1, 1.0, 5)
    test_approx(x.astype(np.float32), x)
    test_approx(x, x.astype(np.float32))
    (m,) = collect_mismatches(x.astype(np.float32) + np.float32(1e-3), x)
    assert (m.rtol, m.atol) == (1e-4, 1e-4)


def test_default_tolerance_is_per_leaf() -> None:
    # 1e-6 apart: fine for the float32 leaf, a failure for the float64 one.
    x32, x64 = np.float32(1.0), 1.0
    found = checks((x32 + np.float32(1e-6), x64 + 1e-6), (x32, x64), path="t")
    assert found == [("value", "t[1]")]


# ------------------------------------------------------------------------------------------
# The two Julia failures this module replaces (seed thread)
# ------------------------------------------------------------------------------------------


def test_julia_regression_object_array_of_mixed_tangents() -> None:
    # The generic broadcast rule returned an array mixing NoTangent() and floats; Julia
    # compared it element by element with methods that crashed or compared 0.0 with -8.38.
    x = np.array([0.3, 1.2, -0.7])
    pullback_output = np.array([NoTangent(), *np.cos(x[1:])], dtype=object)
    fd = np.array([0.0, *np.cos(x[1:])])
    test_approx(pullback_output, fd + 1e-12, path="pullback output[2]")

    wrong = np.array([NoTangent(), np.cos(x[1]), -8.38], dtype=object)
    assert message(wrong, fd, path="pullback output[2]").splitlines() == [
        "pullback output[2]: 1 of 3 elements differ",
        f"  actual:   array([NoTangent(), {np.cos(1.2)!r}, -8.38], dtype=object)",
        "  expected: array([0.        , 0.36235775, 0.76484219])",
        f"  max abs diff 9.14 at [2] (actual -8.38, expected {float(fd[2])!r})",
        "  max rel diff 12 at [2]",
        "  tolerance: rtol=1e-09, atol=1e-09",
    ]
    # A NoTangent() where the derivative is not zero is a value mismatch at that element.
    assert checks(pullback_output, np.array([1.0, *np.cos(x[1:])])) == [("value", "")]


def test_julia_regression_tangent_of_tuple_against_tuple() -> None:
    # Julia: `AssertionError: T <: NamedTuple` comparing Tangent{Tuple} with a tuple.
    xbar = np.array([0.5, -1.0])
    test_approx(Tangent(tuple, xbar, NoTangent()), (xbar + 1e-12, 0.0), path="pullback output")
    test_approx((xbar, 0.0), Tangent(tuple, xbar))
    assert checks(Tangent(tuple, xbar), (xbar, 1.0), path="out") == [("value", "out[1]")]
    assert checks(Tangent(tuple, 2 * xbar), (xbar,), path="out") == [("value", "out[0]")]


def test_seed_broadcast_rule_end_to_end() -> None:
    # The thread's generic broadcast rule, as rruletest's broadcast module provides it: its
    # pullback output compares with the collected expected value, and a rule that forgets to
    # unbroadcast is told so.
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    x = np.array([0.3, 1.2, -0.7])
    _, pullback = rules.rrule(broadcasted, np.sin, x)
    expected = (NoTangent(), NoTangent(), np.cos(x))
    test_approx(pullback(np.ones(3)), expected, path="pullback output")

    @rules.register_rrule(broadcasted, np.multiply)
    def no_unbroadcast(f: Any, a: Any, b: Any) -> Any:
        return f(a, b), lambda yb: (NoTangent(), NoTangent(), yb * b, yb * a)

    a, b = np.ones((3, 1)), np.arange(4.0)
    _, pullback = rules.rrule(broadcasted, np.multiply, a, b)
    right = (NoTangent(), NoTangent(), np.full((3, 1), 6.0), np.full(4, 3.0))
    found = collect_mismatches(pullback(np.ones((3, 4))), right, path="pullback output")
    assert [(m.check, m.path) for m in found] == [
        ("shape", "pullback output[2]"),
        ("shape", "pullback output[3]"),
    ]
    assert all(m.hint and m.hint.startswith("did the rule forget to unbroadcast?") for m in found)


def test_namedtuple_fields_are_compared_by_name() -> None:
    # ChainRulesTestUtils #157: NamedTuples were compared ignoring their field names.
    assert checks(Tangent(P, y=1.0), P(1.0, 0.0)) == [("value", ".x"), ("value", ".y")]
    assert checks(P(1.0, 2.0), Q(1.0, 2.0))[0][0] == "structure"


# ------------------------------------------------------------------------------------------
# Values that misbehave: reported, never raised
# ------------------------------------------------------------------------------------------


class EqRaises:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparison")

    __hash__ = None  # type: ignore[assignment]


class EqArray:
    def __init__(self, v: Any) -> None:
        self.v = v

    def __eq__(self, other: object) -> Any:
        return np.array([True, self.v == getattr(other, "v", None)])

    __hash__ = None  # type: ignore[assignment]


class Ambiguous:
    def __bool__(self) -> bool:
        raise ValueError("ambiguous")


class EqAmbiguous:
    def __eq__(self, other: object) -> Any:
        return Ambiguous()

    __hash__ = None  # type: ignore[assignment]


class ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class ArrayRaises:
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no array")


class ArrayLike:
    def __init__(self, v: Any) -> None:
        self.v = np.asarray(v)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.v


class LenRaises(tuple):  # type: ignore[type-arg]
    def __len__(self) -> int:
        raise RuntimeError("no len")


@dataclasses.dataclass
class Unset:
    a: float
    b: float = dataclasses.field(init=False)


def _self_list() -> list[Any]:
    x: list[Any] = [1.0]
    x.append(x)
    return x


def _deep(n: int) -> Any:
    x: Any = 1.0
    for _ in range(n):
        x = [x]
    return x


MISBEHAVING = [
    pytest.param(EqRaises(), EqRaises(), [("type", "")], id="eq-raises"),
    pytest.param(EqArray(1), EqArray(1), [], id="eq-array-true"),
    pytest.param(EqArray(1), EqArray(2), [("value", "")], id="eq-array-false"),
    pytest.param(EqAmbiguous(), EqAmbiguous(), [("type", "")], id="eq-ambiguous"),
    pytest.param(ReprRaises(), ReprRaises(), [("value", "")], id="repr-raises"),
    pytest.param(ArrayRaises(), 1.0, [("type", "")], id="array-raises"),
    pytest.param(ArrayLike([1.0, 2.0]), np.array([1.0, 2.0]), [], id="array-like-equal"),
    pytest.param(
        ArrayLike([1.0, 2.0]), np.array([1.0, 2.5]), [("value", "")], id="array-like-differs"
    ),
    pytest.param(LenRaises((1.0,)), LenRaises((1.0,)), [("exception", "")], id="len-raises"),
    pytest.param(Unset(1.0), Unset(1.0), [], id="dataclass-unset-field"),
    pytest.param(_self_list(), _self_list(), [], id="self-containing-list"),
    pytest.param(raising(RecursionError()), 1.0, [("exception", "")], id="thunk-recursion"),
    pytest.param(
        np.array([EqRaises()], dtype=object),
        np.array([EqRaises()], dtype=object),
        [("type", "[0]")],
        id="object-array-eq-raises",
    ),
]


@pytest.mark.parametrize(("actual", "expected", "found"), MISBEHAVING)
def test_misbehaving_values_are_reported(
    actual: Any, expected: Any, found: list[tuple[str, str]]
) -> None:
    result = collect_mismatches(actual, expected)
    assert [(m.check, m.path) for m in result] == found
    for m in result:
        assert isinstance(m.message, str)
        assert m.message


def test_repr_failure_is_described() -> None:
    text = message(ReprRaises(), 1.0)
    assert "<ReprRaises object; repr raised RuntimeError>" in text


def test_very_deep_nesting_is_reported_not_raised() -> None:
    found = collect_mismatches(_deep(5000), _deep(5000))
    assert [m.check for m in found] == ["structure"]
    assert found[0].path == "[0]" * (MAX_DEPTH + 1)
    assert found[0].message.startswith(
        f"{found[0].path}: the values nest deeper than {MAX_DEPTH} levels "
        "(rruletest.walk.MAX_DEPTH): not compared below this point\n"
    )


@pytest.mark.parametrize("depth", [300, 900, MAX_DEPTH])
def test_deep_equal_structures_are_equal(depth: int) -> None:
    # Regression: two equal structures 300 deep were reported as different (RecursionError).
    test_approx(_deep(depth), _deep(depth))
    test_approx(_deep(depth), _deep(depth), path="args[0]", rtol=1e-3)


def test_a_difference_deep_down_is_found_at_its_path() -> None:
    a, e = _deep(400), _deep(400)
    leaf = e
    for _ in range(399):
        leaf = leaf[0]
    leaf[0] = 3.0
    [m] = collect_mismatches(a, e, path="y")
    assert (m.check, m.path) == ("value", "y" + "[0]" * 400)


def test_two_thousand_deep_is_a_clear_finding() -> None:
    with pytest.raises(RuleTestFailure, match=f"nest deeper than {MAX_DEPTH} levels"):
        test_approx(_deep(2000), _deep(2000))


def test_moderate_nesting_compares() -> None:
    assert collect_mismatches(_deep(100), _deep(100)) == []
    assert checks(_deep(3), [[[2.0]]]) == [("value", "[0][0][0]")]


def test_exception_mismatch_carries_the_exception() -> None:
    exc = ValueError("boom")
    (m,) = collect_mismatches(raising(exc), 1.0)
    assert m.extra["exception"] is exc


# ------------------------------------------------------------------------------------------
# Tolerance arguments
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        pytest.param(
            {"rtol": -1.0},
            r"rtol must be non-negative \(and not NaN\), got rtol=-1.0",
            id="negative",
        ),
        pytest.param({"atol": float("nan")}, "got atol=nan", id="nan"),
        pytest.param(
            {"atol": "0.1"},
            r"atol must be a non-negative number or array, got atol='0.1'",
            id="string",
        ),
        pytest.param({"rtol": True}, "got rtol=True", id="bool"),
        pytest.param({"atol": np.array([-1.0])}, "atol must be non-negative", id="negative-array"),
        pytest.param({"atol": np.array([1j])}, "atol must be real", id="complex-array"),
        pytest.param(
            {"atol": np.ones(2)},
            r"atol of shape \(2,\) does not broadcast to the value "
            r"at x\[0\], of shape \(3,\)",
            id="not-broadcastable",
        ),
        pytest.param({"atol": (object(),)}, "atol must be", id="bad-tree-leaf"),
    ],
)
def test_bad_tolerances_raise(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidToleranceError, match=match):
        collect_mismatches((A,), (A,), path="x", **kw)
    assert issubclass(InvalidToleranceError, ValueError)


def test_path_must_be_a_string() -> None:
    with pytest.raises(TypeError, match=r"path must be a string such as 'args\[0\]', got path=0"):
        test_approx(1.0, 1.0, path=0)  # type: ignore[arg-type]


def test_bad_scalar_tolerance_raises_even_without_numbers() -> None:
    with pytest.raises(InvalidToleranceError):
        collect_mismatches("a", "a", rtol=-1.0)


def test_tolerance_tree_per_leaf() -> None:
    actual = (A + 0.05, {"k": np.float64(1.5)}, P(1.0, 2.2))
    expected = (A, {"k": 1.0}, P(1.0, 2.0))
    atol = (0.1, {"k": 1.0}, P(None, 0.5))
    assert collect_mismatches(actual, expected, atol=atol) == []
    tight = (0.1, {"k": 0.1}, P(None, 0.5))
    assert checks(actual, expected, atol=tight) == [("value", "[1]['k']")]


def test_tolerance_tree_for_tangents_and_object_arrays() -> None:
    actual = Tangent(P, x=np.ones(2) + 0.01)
    assert checks(actual, P(np.ones(2), 0.0), atol=Tangent(P, x=0.1)) == []
    assert checks(actual, P(np.ones(2), 0.0), atol=Tangent(P, x=1e-3)) == [("value", ".x")]
    obj = np.array([1.01, 2.0], dtype=object)
    exp = np.array([1.0, 2.0], dtype=object)
    assert checks(obj, exp, atol=np.array([0.1, 0.0])) == []
    mixed = np.array([np.ones(1) + 0.01, 2.0], dtype=object)
    assert checks(mixed, np.array([np.ones(1), 2.0], dtype=object), atol=np.array([0.1, 0])) == []
    assert checks(mixed, np.array([np.ones(1), 2.0], dtype=object), atol=[1e-3, 0]) == [
        ("value", "[0]")
    ]


def test_array_tolerance_broadcasts_to_every_leaf() -> None:
    assert collect_mismatches((A + 0.01, A - 0.01), (A, A), atol=np.full(3, 0.1)) == []


def test_zero_in_tolerance_tree_means_default() -> None:
    assert checks((1.0 + 1e-3,), (1.0,), atol=(NoTangent(),)) == [("value", "[0]")]


# ------------------------------------------------------------------------------------------
# Integration details
# ------------------------------------------------------------------------------------------


def test_tracebackhide_and_not_collected() -> None:
    assert "__tracebackhide__" in test_approx.__code__.co_varnames
    assert test_approx.__test__ is False  # type: ignore[attr-defined]
    assert inspect.signature(collect_mismatches).parameters.keys() == (
        inspect.signature(test_approx).parameters.keys()
    )


def test_large_arrays_compare_in_one_block() -> None:
    x = np.linspace(-1.0, 1.0, 200_000)
    y = x.copy()
    y[123_456] += 1e-3
    (m,) = collect_mismatches(y, x)
    assert (m.index, m.count, m.size) == ((123_456,), 1, 200_000)


# ------------------------------------------------------------------------------------------
# Masked arrays, Decimal, registered types
# ------------------------------------------------------------------------------------------


def test_masked_elements_are_not_compared() -> None:
    a = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])
    e = np.ma.array([1.0, 99.0, 3.0], mask=[False, True, False])
    test_approx(a, e)
    test_approx(ZeroTangent(), np.ma.array([0.0, 5.0], mask=[False, True]))


def test_masks_must_agree() -> None:
    a = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])
    [m] = collect_mismatches(a, np.array([1.0, 2.0, 3.0]), path="y")
    assert (m.check, m.path, m.index, m.count) == ("structure", "y", (1,), 1)
    assert m.message.splitlines()[0] == (
        "y: masks differ: 1 element masked on one side only (1 in actual, 0 in expected), "
        "first at [1]"
    )
    # The unmasked elements are still compared, the masked one never.
    found = collect_mismatches(a, np.ma.array([1.0, 7.0, 4.0], mask=[False, False, False]))
    assert [(m.check, m.index) for m in found] == [("structure", (1,)), ("value", (2,))]
    assert "1 of 3 elements differ" in found[1].message


def test_decimal_is_a_real_number() -> None:
    # Regression: Decimal('0.5') was taken for a complex number (a dtype mismatch).
    test_approx(Decimal("0.5"), 0.5)
    assert checks(Decimal("0.5"), 0.75) == [("value", "")]


class Diagonal:
    def __init__(self, diag: Any) -> None:
        self.diag = diag

    def __repr__(self) -> str:
        return f"Diagonal({self.diag!r})"


@pytest.fixture
def registry() -> Any:
    """Restores the registry of user types after the test (a registration is global)."""
    saved = dict(walk_structure._REGISTRY)
    yield
    walk_structure._REGISTRY.clear()
    walk_structure._REGISTRY.update(saved)


@pytest.mark.usefixtures("registry")
def test_registered_types_compare_field_by_field() -> None:
    register_structure(Diagonal, ["diag"])
    test_approx(Diagonal(np.ones(2)), Diagonal(np.ones(2) + 1e-12))
    assert checks(Diagonal(np.ones(2)), Diagonal(np.array([1.0, 2.0]))) == [("value", ".diag")]
    test_approx(Tangent(Diagonal, diag=np.ones(2)), Diagonal(np.ones(2)))
    assert checks([Tangent(Diagonal, diag=np.ones(2))], [Diagonal(np.zeros(2))]) == [
        ("value", "[0].diag")
    ]
    test_approx(ZeroTangent(), Diagonal(np.zeros(2)))
    assert checks(Diagonal(1.0), 1.0) == [("type", "")]


class Metres(float):
    pass


@pytest.mark.usefixtures("registry")
def test_a_registered_number_type_is_still_compared() -> None:
    # The walk has no children for a number whatever its registration: comparing its (none)
    # registered fields passed any two values.
    register_structure(Metres, ["real"], lambda x, v: Metres(v["real"]))
    assert checks(Metres(1.0), Metres(2.0)) == [("value", "")]
    assert checks([Metres(1.0)], [Metres(2.0)]) == [("value", "[0]")]
    test_approx(Metres(1.0), Metres(1.0))


@pytest.mark.usefixtures("registry")
def test_registered_scipy_sparse_matrices_compare_their_values() -> None:
    sparse = pytest.importorskip("scipy.sparse")
    register_structure(
        sparse.csr_matrix,
        ["data"],
        lambda x, v: sparse.csr_matrix((v["data"], x.indices, x.indptr), shape=x.shape),
    )
    x = sparse.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    test_approx(x, x * (1 + 1e-12))
    [m] = collect_mismatches(x, x * 2, path="xbar")
    assert (m.check, m.path, m.index) == ("value", "xbar.data", (1,))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_matrices_and_number_subclasses_compare_by_value() -> None:
    class MyFloat(float):
        pass

    m = np.asmatrix([[1.0, 2.0]])
    test_approx(m, m.copy())
    test_approx(MyFloat(1.5), 1.5)
    [found] = collect_mismatches(m, m * 2)
    assert (found.check, found.index) == ("value", (0, 1))  # the largest difference
    assert "2 of 2 elements differ" in found.message


def test_python_ints_beyond_int64_are_compared_by_value() -> None:
    # 10**20 is no int64, so ints of that size are compared exactly (==); against a small int
    # the report read "an int where an int was expected".
    with pytest.raises(
        RuleTestFailure,
        match=r"values differ \(compared with ==\)\n  actual:   10{20}\n  expected: 5",
    ):
        test_approx(10**20, 5)
    test_approx(10**20, 10**20)
    with pytest.raises(RuleTestFailure, match=r"values differ \(compared with ==\)"):
        test_approx(5, 10**400)
