"""Tests of rand_tangent and resolve_rng: structure, dtype, readable values, cycles, seeds."""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest import NoTangent, Tangent, rand_tangent
from rruletest.testers._rand_tangent import SavedGenerator, resolve_rng
from rruletest.walk import MAX_DEPTH, register_structure


@given(
    hnp.arrays(
        st.sampled_from([np.float16, np.float32, np.float64, np.complex64, np.complex128]),
        hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    ),
    st.integers(0, 2**32 - 1),
)
def test_arrays_keep_shape_dtype_and_are_short_nonzero_decimals(x: np.ndarray, seed: int) -> None:
    t = rand_tangent(seed, x)
    assert isinstance(t, np.ndarray)
    assert t.shape == x.shape
    assert t.dtype == x.dtype
    parts = [t.real, t.imag] if t.dtype.kind == "c" else [t]
    for p in parts:
        p64 = p.astype(np.float64)
        assert np.all(p64 != 0)
        assert np.all(np.abs(p64) <= 9.0)
        tol = 1e-6 if p.dtype == np.float64 else 1e-2
        assert np.allclose(np.round(p64 * 100), p64 * 100, atol=tol * 100)


def test_scalars() -> None:
    rng = np.random.default_rng(0)
    assert isinstance(rand_tangent(rng, 1.0), float)
    assert isinstance(rand_tangent(rng, 1j), complex)
    t32 = rand_tangent(rng, np.float32(1))
    assert type(t32) is np.float32
    assert type(rand_tangent(rng, np.complex64(1))) is np.complex64
    # np.float64 is a float, but its tangent stays a numpy scalar, as the docstring says:
    # a pullback of a norm may index ``ybar[..., None]``, which a Python float cannot.
    assert type(rand_tangent(rng, np.float64(1))) is np.float64
    assert type(rand_tangent(rng, np.complex128(1))) is np.complex128
    assert all(rand_tangent(rng, 0.0) != 0 for _ in range(200))


@pytest.mark.parametrize(
    "x",
    [
        pytest.param(3, id="int"),
        pytest.param(True, id="bool"),
        pytest.param("s", id="str"),
        pytest.param(None, id="none"),
        pytest.param(np.sin, id="ufunc"),
        pytest.param(len, id="builtin"),
        pytest.param(lambda v: v, id="lambda"),
        pytest.param(np.arange(3), id="int-array"),
        pytest.param(np.array([True]), id="bool-array"),
        pytest.param(np.int32(4), id="np-int"),
        pytest.param((1, "a"), id="tuple-of-ints"),
        pytest.param(NoTangent(), id="notangent"),
    ],
)
def test_non_differentiable_values_get_notangent(x: Any) -> None:
    assert rand_tangent(0, x) is NoTangent()


def test_structures_get_tangents() -> None:
    Point = namedtuple("Point", "x y")

    @dataclasses.dataclass
    class Layer:
        w: np.ndarray
        n: int

    t = rand_tangent(1, (1.0, 2, np.ones(2, np.float32)))
    assert isinstance(t, Tangent)
    assert t.primal_type is tuple
    assert isinstance(t[0], float)
    assert t[1] is NoTangent()
    assert t[2].dtype == np.float32
    p = rand_tangent(1, Point(1.0, 2.0))
    assert p.primal_type is Point
    assert isinstance(p.x, float)
    d = rand_tangent(1, {"a": 1.0, "b": "x"})
    assert d.primal_type is dict
    assert d["b"] is NoTangent()
    layer = rand_tangent(1, Layer(np.ones((2, 2)), 3))
    assert layer.primal_type is Layer
    assert layer.w.shape == (2, 2)
    assert layer.n is NoTangent()
    lst = rand_tangent(1, [1.0, 2.0])
    assert lst.primal_type is list
    obj = rand_tangent(1, np.array([1.0, 2], dtype=object))
    assert obj.dtype == object
    assert isinstance(obj[0], float)


def test_cycles_raise_a_clear_error() -> None:
    x: list[Any] = [1.0]
    x.append(x)
    with pytest.raises(
        ValueError,
        match=r"^rand_tangent: x\[1\]: the value contains itself \(a cycle: it is x again\): a "
        r"cyclic structure has no finite tangent; pass its tangent with with_tangent\(x, dx\)$",
    ):
        rand_tangent(0, x)
    d: dict[str, Any] = {"a": 1.0}
    d["self"] = {"inner": d}
    with pytest.raises(ValueError, match="cyclic structure"):
        rand_tangent(0, d)


def test_shared_but_acyclic_values_are_fine() -> None:
    shared = np.ones(2)
    t = rand_tangent(0, (shared, shared))
    assert t[0].shape == (2,)


def test_seeds_reproduce_and_generators_advance() -> None:
    x = np.ones(5)
    assert np.array_equal(rand_tangent(7, x), rand_tangent(7, x))
    gen = np.random.default_rng(7)
    assert not np.array_equal(rand_tangent(gen, x), rand_tangent(gen, x))


def test_resolve_rng() -> None:
    gen, seed = resolve_rng(None)
    assert isinstance(seed, int)
    assert np.array_equal(gen.random(3), np.random.default_rng(seed).random(3))
    g = np.random.default_rng(1)
    assert resolve_rng(g) == (g, None)
    with pytest.raises(TypeError, match="rng=True"):
        resolve_rng(True)
    with pytest.raises(ValueError, match="rng=-1"):
        resolve_rng(-1)


def test_public_name_is_the_function() -> None:
    import rruletest

    assert callable(rruletest.rand_tangent)
    assert rruletest.rand_tangent is rand_tangent


def test_deep_values_get_tangents_and_too_deep_is_a_clear_error() -> None:
    deep: Any = 1.0
    for _ in range(600):
        deep = [deep]
    t = rand_tangent(0, deep)
    for _ in range(600):
        assert t.primal_type is list
        t = t[0]
    assert isinstance(t, float)
    for _ in range(MAX_DEPTH):
        deep = [deep]
    with pytest.raises(ValueError, match=f"nests deeper than {MAX_DEPTH} levels"):
        rand_tangent(0, deep)


def test_a_callable_dataclass_has_a_tangent() -> None:
    @dataclasses.dataclass
    class Scale:
        w: float

        def __call__(self, x: float) -> float:
            return self.w * x

    t = rand_tangent(0, Scale(2.0))
    assert t.primal_type is Scale
    assert isinstance(t.w, float)


def test_decimals_and_subclasses() -> None:
    assert rand_tangent(0, Decimal("0.5")) is NoTangent()
    masked = np.ma.array([1.0, 2.0], mask=[False, True])
    assert rand_tangent(0, masked).shape == (2,)


class Diagonal:
    def __init__(self, diag: Any) -> None:
        self.diag = diag


def test_a_registered_type_gets_a_tangent_of_its_fields() -> None:
    register_structure(Diagonal, ["diag"])
    t = rand_tangent(0, [Diagonal(np.ones(3, np.float32))])
    assert t[0].primal_type is Diagonal
    assert (t[0].diag.dtype, t[0].diag.shape) == (np.float32, (3,))


class Plain:
    def __init__(self, w: Any, n: int) -> None:
        self.w, self.n = w, n


class Scaler:
    def __init__(self, w: float) -> None:
        self.w = w

    def __call__(self, x: float) -> float:
        return self.w * x


def test_plain_objects_get_a_tangent_of_their_attributes() -> None:
    t = rand_tangent(0, Plain(np.ones(2), 3))
    assert (t.primal_type, t.w.shape, t.n) == (Plain, (2,), NoTangent())
    assert rand_tangent(0, Plain(1, 2)) is NoTangent()  # no float anywhere
    assert rand_tangent(0, Scaler(2.0)) is NoTangent()  # a function object, as the testers say


class Layer:
    weight: np.ndarray  # annotated; ``bias`` is set in __init__ only

    def __init__(self, weight: np.ndarray, bias: float) -> None:
        self.weight, self.bias = weight, bias


def test_a_partly_annotated_object_gets_a_tangent_of_every_attribute() -> None:
    t = rand_tangent(0, Layer(np.ones(2), 3.0))
    assert (t.primal_type, t.weight.shape, type(t.bias)) == (Layer, (2,), float)


def test_one_number_is_drawn_as_the_arrays_draw_it() -> None:
    from rruletest.testers._rand_tangent import _decimal, _decimals

    for seed in range(20):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        for _ in range(50):
            assert _decimal(a) == float(_decimals(b, ())[()])
        assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize(
    "x", [0.5, np.float64(2.0), np.float32(1.0), 1 + 1j, np.complex64(1), np.ones((2, 3))]
)
def test_plain_values_draw_what_the_walk_draws(x: Any) -> None:
    # Inside a list the walk reaches the value as a leaf; at the top it is drawn directly.
    alone, inside = rand_tangent(7, x), rand_tangent(7, [x])[0]
    assert type(alone) is type(inside)
    assert np.array_equal(alone, inside)


class _OwnBits(np.random.PCG64):
    """A bit generator of the user's own: not rebuilt from its state, deep-copied instead."""


@pytest.mark.parametrize(
    "kind", [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox,
             np.random.SFC64, _OwnBits],
)  # fmt: skip
def test_a_saved_generator_draws_what_the_generator_drew_after_it_was_saved(kind: Any) -> None:
    # Saved by its state (about 2 us) where a deepcopy costs about 30: a tester saves the rng
    # on every call, for a reproduce line only a failure writes.
    gen = np.random.Generator(kind(5))
    gen.standard_normal(3)  # a state no seed names
    saved = SavedGenerator(gen)
    drawn = gen.standard_normal(4)
    again, twice = saved.generator(), saved.generator()
    assert type(again.bit_generator) is kind
    assert np.array_equal(again.standard_normal(4), drawn)
    assert np.array_equal(twice.standard_normal(4), drawn)  # each call a fresh generator
