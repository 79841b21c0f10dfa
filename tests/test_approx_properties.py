"""Hypothesis properties of rruletest.approx over random nested structures.

For random values built from tuples, lists, dicts, namedtuples, dataclasses, Tangents, thunks,
object arrays, zeros, numeric arrays of several dtypes and shapes, numbers, None and strings:

- ``test_approx(x, x)`` and ``test_approx(copy_of_x, x)`` pass;
- a perturbation of one number larger than the tolerance fails, naming exactly that place;
- any pair of values, misbehaving ones included, gives a list of mismatches or a
  ``RuleTestFailure``, never another exception.
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest.approx import collect_mismatches, test_approx
from rruletest.errors import Mismatch, RuleTestFailure
from rruletest.tangents import AbstractZero, NoTangent, Tangent, Thunk, ZeroTangent
from rruletest.tolerances import default_tolerances

NT = namedtuple("NT", "a b")


@dataclasses.dataclass
class DC:
    a: Any
    b: Any


DTYPES = [np.float64, np.float32, np.float16, np.complex128, np.complex64]
SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf])


def _elements(dtype: Any) -> st.SearchStrategy[Any]:
    if np.dtype(dtype).kind == "c":
        width = np.dtype(dtype).itemsize * 8
        return st.complex_numbers(max_magnitude=1e3, width=width, allow_nan=False)
    width = np.dtype(dtype).itemsize * 8
    return st.floats(-1e3, 1e3, width=width) | SPECIAL


def _arrays(dtype: Any) -> st.SearchStrategy[np.ndarray]:
    shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3)
    return hnp.arrays(dtype, shapes, elements=_elements(dtype))


NUMERIC_ARRAYS = st.sampled_from(DTYPES).flatmap(_arrays)
LEAVES = st.one_of(
    NUMERIC_ARRAYS,
    NUMERIC_ARRAYS.filter(lambda a: a.ndim == 0).map(lambda a: a[()]),  # numpy scalars
    st.floats(-1e3, 1e3),
    st.complex_numbers(max_magnitude=1e3),
    st.integers(-5, 5),
    st.sampled_from([NoTangent(), ZeroTangent(), None]),
    st.text(max_size=3),
)
KEYS = st.sampled_from(["a", "b", "c"])


def _object_array(items: list[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def _thunk(value: Any) -> Thunk:
    return Thunk(lambda: value)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(tuple),
        st.lists(children, min_size=1, max_size=3),
        st.dictionaries(KEYS, children, min_size=1, max_size=3),
        st.builds(NT, children, children),
        st.builds(DC, children, children),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: Tangent(tuple, *xs)),
        st.dictionaries(st.sampled_from(["a", "b"]), children, min_size=1).map(
            lambda d: Tangent(NT, **d)
        ),
        st.dictionaries(KEYS, children, min_size=1, max_size=3).map(lambda d: Tangent(dict, d)),
        children.map(_thunk),
        st.lists(children, min_size=1, max_size=3).map(_object_array),
    )


VALUES = st.recursive(LEAVES, _containers, max_leaves=8)


# ------------------------------------------------------------------------------------------
# An independent model of paths: where each number lives and how to rebuild with it changed
# ------------------------------------------------------------------------------------------

Route = tuple[Any, ...]


def _is_scalar(v: Any) -> bool:
    return isinstance(v, int | float | complex | np.number | AbstractZero)


def _targets(x: Any, path: str, route: Route = ()) -> Iterator[tuple[str, Route]]:
    """``(path, route)`` of every number a perturbation can change (route ends at the leaf)."""
    if isinstance(x, Thunk):
        yield from _targets(x.unthunk(), path, (*route, ("thunk",)))
    elif isinstance(x, AbstractZero) or (_is_scalar(x) and not isinstance(x, bool)):
        yield path, route
    elif isinstance(x, np.ndarray) and x.dtype != object:
        for i in range(x.size):
            yield path, (*route, ("flat", i))
    elif isinstance(x, np.ndarray):  # object array: one leaf if all numbers, else elementwise
        whole = all(_is_scalar(v) for v in x.flat)
        for i, v in enumerate(x):
            if whole:
                yield path, (*route, ("obj", i))
            else:
                yield from _targets(v, f"{path}[{i}]", (*route, ("obj", i)))
    elif isinstance(x, Tangent):
        named = x.primal_type is NT
        for k, v in x.items():
            step = f".{k}" if named else (f"[{k}]" if x.primal_type is tuple else f"[{k!r}]")
            yield from _targets(v, path + step, (*route, ("tangent", k)))
    elif isinstance(x, NT):
        for k in NT._fields:
            yield from _targets(getattr(x, k), f"{path}.{k}", (*route, ("nt", k)))
    elif isinstance(x, DC):
        for k in ("a", "b"):
            yield from _targets(getattr(x, k), f"{path}.{k}", (*route, ("dc", k)))
    elif isinstance(x, tuple | list):
        for i, v in enumerate(x):
            yield from _targets(v, f"{path}[{i}]", (*route, ("seq", i)))
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _targets(v, f"{path}[{k!r}]", (*route, ("dict", k)))


def _bump(v: Any) -> Any:
    """A number far outside any default tolerance of ``v`` (a zero becomes 1.0)."""
    if isinstance(v, AbstractZero):
        return 1.0
    if not np.isfinite(v):
        return type(v)(0)
    return v + 0.5 * max(1.0, abs(v))


def _rebuild(x: Any, route: Route, change: Callable[[Any], Any]) -> Any:
    """A copy of ``x`` with the value at ``route`` replaced by ``change(value)``."""
    if not route:
        return change(x)
    (kind, *key), rest = route[0], route[1:]
    k = key[0] if key else None
    if kind == "thunk":
        inner = _rebuild(x.unthunk(), rest, change)
        return Thunk(lambda: inner)
    if kind == "flat":
        out = x.copy()
        out.flat[k] = change(x.flat[k])
        return out
    if kind == "obj":
        out = x.copy()
        out[k] = _rebuild(x[k], rest, change)
        return out
    if kind == "tangent":
        fields = dict(x.items())
        fields[k] = _rebuild(fields[k], rest, change)
        if x.primal_type is tuple:
            return Tangent(tuple, *fields.values())
        return Tangent(NT, **fields) if x.primal_type is NT else Tangent(dict, fields)
    if kind == "nt":
        return x._replace(**{k: _rebuild(getattr(x, k), rest, change)})
    if kind == "dc":
        return dataclasses.replace(x, **{k: _rebuild(getattr(x, k), rest, change)})
    if kind == "seq":
        items = list(x)
        items[k] = _rebuild(items[k], rest, change)
        return tuple(items) if isinstance(x, tuple) else items
    items_d = dict(x)
    items_d[k] = _rebuild(items_d[k], rest, change)
    return items_d


def _paths(found: list[Mismatch]) -> list[tuple[str, str]]:
    return [(m.check, m.path) for m in found]


# ------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------


@settings(max_examples=150)
@given(VALUES)
def test_a_value_equals_itself_and_its_copy(x: Any) -> None:
    test_approx(x, x)
    copy = _rebuild(x, (), lambda v: v)
    assert collect_mismatches(copy, x, path="v") == []
    assert collect_mismatches(x, copy, path="v", strict_zero_kind=True) == []


@settings(max_examples=150)
@given(VALUES, st.data())
def test_a_perturbation_fails_at_its_path(x: Any, data: st.DataObject) -> None:
    targets = list(_targets(x, "root"))
    if not targets:
        return
    path, route = data.draw(st.sampled_from(targets), label="target")
    perturbed = _rebuild(x, route, _bump)
    for actual, expected in ((perturbed, x), (x, perturbed)):
        found = collect_mismatches(actual, expected, path="root")
        assert found, f"perturbation at {path} not detected"
        assert {m.path for m in found} == {path}, _paths(found)
        assert {m.check for m in found} == {"value"}, _paths(found)
        with pytest.raises(RuleTestFailure) as info:
            test_approx(actual, expected, path="root")
        assert info.value.path == path


class _EqRaises:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no ==")

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def _failing_thunk(_: Any) -> Thunk:
    def fail() -> Any:
        raise ValueError("thunk failed")

    return Thunk(fail)


NASTY = st.one_of(
    st.builds(_EqRaises),
    st.none().map(_failing_thunk),
    st.just(np.array(["x", "y"])),
    st.just(object()),
    st.just(2**80),
)
ANY_VALUES = st.recursive(LEAVES | NASTY, _containers, max_leaves=6)


@settings(max_examples=200)
@given(ANY_VALUES, ANY_VALUES, st.booleans(), st.booleans())
def test_any_pair_is_reported_never_raised(a: Any, e: Any, nan_equal: bool, strict: bool) -> None:
    kw = {"nan_equal": nan_equal, "strict_zero_kind": strict, "path": "p"}
    found = collect_mismatches(a, e, **kw)  # type: ignore[arg-type]
    assert all(isinstance(m, Mismatch) and m.path.startswith("p") and m.message for m in found)
    internal = [m for m in found if m.check == "exception" and "comparing raised" in m.message]
    assert internal == [], "an internal error leaked into a report"
    if found:
        with pytest.raises(RuleTestFailure) as info:
            test_approx(a, e, **kw)  # type: ignore[arg-type]
        assert info.value.mismatches
    else:
        test_approx(a, e, **kw)  # type: ignore[arg-type]


@settings(max_examples=100)
@given(
    hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=st.floats(-1e3, 1e3)),
    st.data(),
)
def test_within_tolerance_passes_beyond_fails(x: np.ndarray, data: st.DataObject) -> None:
    rtol, atol = default_tolerances(x)
    allowed = atol + rtol * np.abs(x)
    signs = data.draw(hnp.arrays(np.float64, x.shape, elements=st.sampled_from([-1.0, 1.0])))
    test_approx(x + 0.5 * allowed * signs, x)
    i = data.draw(st.integers(0, x.size - 1), label="element")
    y = x.copy()
    y.flat[i] += 2 * allowed.flat[i]
    (m,) = collect_mismatches(y, x)
    assert (m.count, m.size) == (1, x.size)
    assert m.index == (np.unravel_index(i, x.shape) if x.ndim else None)


# Complex values with NaN and infinite parts: compared part by part.
_PARTS = st.floats(-1e3, 1e3) | SPECIAL
_COMPLEX_ARRAYS = st.sampled_from([np.complex128, np.complex64]).flatmap(
    lambda dt: hnp.arrays(
        dt,
        hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3),
        elements=st.builds(complex, _PARTS, _PARTS),
    )
)


@given(_COMPLEX_ARRAYS)
def test_complex_values_with_non_finite_parts_equal_themselves(x: np.ndarray) -> None:
    test_approx(x, x.copy())
    test_approx([x[()] if x.ndim == 0 else x[(0,) * x.ndim]], [x.flat[0]])


@given(_COMPLEX_ARRAYS, st.data())
def test_a_changed_part_next_to_a_non_finite_one_is_found(x: np.ndarray, data: Any) -> None:
    i = data.draw(st.integers(0, x.size - 1))
    # One part non-finite in both, the other part far apart: part by part, they differ.
    im = complex(x.flat[i]).imag
    im = im if np.isfinite(im) else 0.0
    special = data.draw(SPECIAL)
    x.flat[i] = complex(special, im)
    y = x.copy()
    y.flat[i] = complex(special, im + 10.0)
    found = collect_mismatches(y, x)
    assert [m.check for m in found] == ["value"]
    assert found[0].index == (None if x.ndim == 0 else np.unravel_index(i, x.shape))
