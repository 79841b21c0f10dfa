"""Tests for rruletest.tolerances: the dtype table, value lookup, merging and overrides."""

from __future__ import annotations

import threading
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest

from rruletest.tangents import NoTangent, Tangent
from rruletest.tolerances import (
    DEFAULT_TOLERANCES,
    Tolerance,
    default_tolerances,
    loosest,
    merge_tolerances,
    override_default_tolerances,
)

F16 = Tolerance(1e-2, 1e-2)
F32 = Tolerance(1e-4, 1e-4)
F64 = Tolerance(1e-9, 1e-9)

Pair = namedtuple("Pair", "a b")


@dataclass
class Box:
    x: object


@pytest.mark.parametrize(
    ("dtype_or_value", "expected"),
    [
        pytest.param(np.float16, F16, id="float16-type"),
        pytest.param(np.float32, F32, id="float32-type"),
        pytest.param(np.float64, F64, id="float64-type"),
        pytest.param(np.longdouble, F64, id="longdouble-type"),
        pytest.param(np.complex64, F32, id="complex64-like-float32"),
        pytest.param(np.complex128, F64, id="complex128-like-float64"),
        pytest.param(np.clongdouble, F64, id="clongdouble-like-longdouble"),
        pytest.param(np.int32, F64, id="int-falls-back"),
        pytest.param(np.bool_, F64, id="bool-falls-back"),
        pytest.param(np.dtype("float32"), F32, id="dtype-object"),
        pytest.param("float16", F16, id="dtype-name"),
        pytest.param("c8", F32, id="dtype-code"),
        pytest.param(float, F64, id="python-float-type"),
        pytest.param(complex, F64, id="python-complex-type"),
        pytest.param(1.5, F64, id="python-float"),
        pytest.param(2, F64, id="python-int"),
        pytest.param(True, F64, id="python-bool"),
        pytest.param(1j, F64, id="python-complex"),
        pytest.param(np.float32(1.5), F32, id="numpy-scalar"),
        pytest.param(np.zeros((2, 3), np.float16), F16, id="array"),
        pytest.param(np.array(1.0, np.complex64), F32, id="0d-array"),
        pytest.param((1.0, np.ones(2, np.float32)), F32, id="tuple-loosest"),
        pytest.param([np.ones(2, np.float16), 1.0], F16, id="list-loosest"),
        pytest.param({"a": np.float32(1)}, F32, id="dict"),
        pytest.param(Pair(1.0, np.float16(2)), F16, id="namedtuple"),
        pytest.param(Box(np.ones(1, np.float32)), F32, id="dataclass"),
        pytest.param(Tangent(tuple, np.ones(1, np.float32)), F32, id="tangent"),
        pytest.param(np.array([np.float16(1), NoTangent()], dtype=object), F16, id="object-array"),
        pytest.param((), F64, id="empty-structure"),
        pytest.param(("text", None, NoTangent()), F64, id="no-numbers"),
        pytest.param(object(), F64, id="opaque-object"),
    ],
)
def test_default_tolerances(dtype_or_value: object, expected: Tolerance) -> None:
    assert default_tolerances(dtype_or_value) == expected


def test_default_tolerances_is_a_named_pair() -> None:
    rtol, atol = default_tolerances(np.float32)
    assert (rtol, atol) == (1e-4, 1e-4)
    assert default_tolerances(np.float32).rtol == 1e-4


def test_default_tolerances_of_a_self_containing_list() -> None:
    x: list[object] = [np.float32(1)]
    x.append(x)
    assert default_tolerances(x) == F32


def test_bad_dtype_name_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"not a dtype name: dtype_or_value='float99'"):
        default_tolerances("float99")


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        DEFAULT_TOLERANCES[np.dtype(np.float64)] = F32  # type: ignore[index]


def test_loosest() -> None:
    assert loosest(np.float32, np.float64) == F32
    assert loosest(np.float16, np.complex64) == F16
    assert loosest() == F64


@pytest.mark.parametrize(
    ("rtol", "atol", "expected"),
    [
        pytest.param(None, None, F32, id="defaults"),
        pytest.param(1e-3, None, Tolerance(1e-3, 1e-4), id="rtol-only"),
        pytest.param(None, 0, Tolerance(1e-4, 0.0), id="atol-zero"),
        pytest.param(0.5, 2, Tolerance(0.5, 2.0), id="both"),
        pytest.param(np.float32(0.5), None, Tolerance(0.5, 1e-4), id="numpy-number"),
    ],
)
def test_merge_tolerances(rtol: object, atol: object, expected: Tolerance) -> None:
    assert merge_tolerances(np.float32, rtol, atol) == expected


def test_merge_keeps_arrays() -> None:
    atol = np.array([1e-3, 2e-3])
    merged = merge_tolerances(np.float64, atol=atol)
    assert merged.rtol == 1e-9
    assert merged.atol is atol


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        pytest.param(
            {"rtol": -1.0}, ValueError, "rtol must be a number >= 0, got rtol=-1.0", id="neg"
        ),
        pytest.param({"atol": float("nan")}, ValueError, "got atol=nan", id="nan"),
        pytest.param({"atol": "1e-3"}, TypeError, "got atol='1e-3'", id="string"),
        pytest.param({"rtol": True}, TypeError, "got rtol=True", id="bool"),
    ],
)
def test_merge_rejects_bad_tolerances(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(")):
        merge_tolerances(np.float64, **kwargs)  # type: ignore[arg-type]


def test_override_per_dtype_and_reset() -> None:
    with override_default_tolerances({np.float32: (1e-3, 1e-5)}):
        assert default_tolerances(np.float32) == Tolerance(1e-3, 1e-5)
        assert default_tolerances(np.complex64) == Tolerance(1e-3, 1e-5)
        assert default_tolerances(np.float64) == F64
    assert default_tolerances(np.float32) == F32


def test_override_everything_and_nest() -> None:
    with override_default_tolerances(atol=0.0):
        assert default_tolerances(np.float64) == Tolerance(1e-9, 0.0)
        with override_default_tolerances({"float16": (0.1, 0.1)}, rtol=1e-6):
            assert default_tolerances(np.float16) == Tolerance(0.1, 0.1)
            assert default_tolerances(np.float64) == Tolerance(1e-6, 0.0)
        assert default_tolerances(np.float16) == Tolerance(1e-2, 0.0)
    assert default_tolerances(np.float64) == F64


def test_override_is_reset_after_an_exception() -> None:
    with pytest.raises(RuntimeError), override_default_tolerances(rtol=0.5):
        raise RuntimeError
    assert default_tolerances(np.float64) == F64


def test_override_stays_in_its_thread() -> None:
    seen: list[Tolerance] = []
    with override_default_tolerances(rtol=0.5):
        thread = threading.Thread(target=lambda: seen.append(default_tolerances(np.float64)))
        thread.start()
        thread.join()
    assert seen == [F64]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        pytest.param({np.int64: (1, 1)}, "keys must be real float dtypes", id="int-key"),
        pytest.param({np.complex64: (1, 1)}, "keys must be real float dtypes", id="complex-key"),
        pytest.param({np.float32: (1,)}, r"values must be \(rtol, atol\)", id="short-pair"),
        pytest.param(
            {np.float32: (1, -1)}, "atol must be a number >= 0, got atol=-1", id="negative"
        ),
    ],
)
def test_override_rejects_bad_tables(table: dict[object, tuple[float, ...]], message: str) -> None:
    with pytest.raises(ValueError, match=message), override_default_tolerances(table):  # type: ignore[arg-type]
        pass  # pragma: no cover
