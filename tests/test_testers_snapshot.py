"""Tests for the testers' records of values: snapshots, changes and nonzero places as walk paths."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import Tangent, Thunk, ZeroTangent
from rruletest.testers._snapshot import (
    Change,
    changes,
    inner,
    nonzero,
    render_change,
    snapshot,
)
from rruletest.walk import Element, Index, Key


def test_changes_are_records_with_walk_paths() -> None:
    before = snapshot({"a:b": [1.0, np.array([1.0, 2.0, 3.0])]})
    after = {"a:b": [1.0, np.array([1.0, 7.0, 8.0])]}
    (c,) = changes(before, after)
    assert c == Change((Key("a:b"), Index(1), Element((1,))), 2.0, 7.0, 2)
    assert render_change("args[0]", c) == (
        "args[0]['a:b'][1][1]: was 2.0, now 7.0 (2 elements changed)"
    )


def test_nan_equals_nan_and_a_new_shape_is_one_change() -> None:
    assert changes(snapshot(np.array([np.nan, 1.0])), np.array([np.nan, 1.0])) == []
    (c,) = changes(snapshot(np.zeros(2)), np.zeros(3))
    assert render_change("x", c) == "x: was float64[2], now float64[3]"


def test_generators_compare_by_state() -> None:
    gen = np.random.default_rng(0)
    snap = snapshot(gen)
    assert snap is not gen
    assert changes(snap, gen) == []
    gen.random()
    assert len(changes(snap, gen)) == 1


@pytest.mark.parametrize(
    "value", [pytest.param(object(), id="object"), pytest.param(Thunk(lambda: 1.0), id="thunk")]
)
def test_values_without_equality_are_not_compared(value: Any) -> None:
    assert changes(snapshot([value]), [value]) == []


def test_nonzero_places() -> None:
    t = Tangent(tuple, np.array([0.0, 2.0]), ZeroTangent())
    assert nonzero(t) == [((Index(0), Element((1,))), 2.0)]
    assert nonzero({"w": 0.0, "b": np.zeros(2)}) == []
    assert nonzero(3.0) == [((), 3.0)]


def test_nonzero_of_a_thunk_that_raises_holds_the_exception() -> None:
    def boom() -> Any:
        raise RuntimeError("no")

    ((path, value),) = nonzero([Thunk(boom)])
    assert path == ()
    assert isinstance(value, RuntimeError)


def test_inner_pairs_fields_by_key() -> None:
    from dataclasses import dataclass

    @dataclass
    class P:
        a: Any
        b: Any

    t = Tangent(P, b=np.array([1.0, 2.0]))
    assert inner(t, P(np.ones(2), np.array([3.0, 4.0]))) == 11.0


# -- the shortcuts for plain values give what the walk gives ---------------------------------


def test_numbers_side_by_side_change_at_their_indices() -> None:
    before = [1.0, 2.0, float("nan"), 4.0, 5.0]
    after = [1.0, 7.0, float("nan"), 8.0, 9.0]
    found = changes(before, after)
    assert found == [Change((Index(1),), 2.0, 7.0), Change((Index(3),), 4.0, 8.0),
                     Change((Index(4),), 5.0, 9.0)]  # fmt: skip
    assert changes(before, after, limit=2) == found[:2]
    assert changes(tuple(before), tuple(before)) == []
    assert changes([1.0], [1.0, 2.0]) == [Change((), [1.0], [1.0, 2.0])]  # lengths differ
    assert changes([1.0], (1.0,)) == [Change((), [1.0], (1.0,))]  # a list became a tuple
    assert changes([1.0], [np.array(1.0)]) == []  # equal values


def test_an_immutable_value_is_unchanged_from_itself() -> None:
    for value in (ZeroTangent(), "name", None, np.float64("nan"), np.complex128(1j)):
        assert changes(value, value) == []
    assert changes("a", "b") == [Change((), "a", "b")]


def test_a_tuple_of_arrays_is_copied_as_deepcopy_copies_it() -> None:
    a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    out = (ZeroTangent(), a, a, 1.5)
    snap = snapshot(out)
    assert type(snap) is tuple
    assert snap[0] is out[0]
    assert snap[3] == 1.5
    assert snap[1] is not a
    assert np.array_equal(snap[1], a)
    assert snap[1] is snap[2]  # one array twice: one copy, shared (deepcopy's memo)
    assert snap[1].flags.f_contiguous  # its memory order kept
    a[0, 0] = 99.0
    assert snap[1][0, 0] == 0.0
    listed = snapshot([a, None])
    assert type(listed) is list
    assert listed[0] is not a
    assert listed[1] is None
