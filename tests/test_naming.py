"""Tests for rruletest._naming: one way to show a function everywhere."""

from __future__ import annotations

import json  # noqa: F401  (imported, so function_name sees the module)
import math
from typing import Any

import numpy as np
import pytest

from rruletest import RuleSet, broadcasted
from rruletest._naming import function_name
from rruletest._plugin.cases import fname
from rruletest.broadcast._apply import fname as broadcast_fname
from rruletest.testers import test_rrule
from rruletest.testers._args import describe


def _local() -> object:
    def inner(x: float) -> float:
        return x

    return inner


@pytest.mark.parametrize(
    ("f", "short", "qualified"),
    [
        pytest.param(np.sin, "np.sin", "np.sin", id="ufunc"),
        pytest.param(np.linalg.norm, "np.linalg.norm", "np.linalg.norm", id="submodule"),
        pytest.param(np.sum, "np.sum", "np.sum", id="numpy-function"),
        pytest.param(math.sqrt, "sqrt", "math.sqrt", id="stdlib"),
        pytest.param(len, "len", "len", id="builtin"),
        pytest.param(_local(), "inner", "inner", id="local"),
        pytest.param(broadcasted, "broadcasted", "broadcasted", id="rruletest"),
    ],
)
def test_function_names(f: object, short: str, qualified: str) -> None:
    assert function_name(f) == short
    assert function_name(f, qualified=True) == qualified


def test_np_linalg_norm_is_shown_one_way_everywhere() -> None:
    f = np.linalg.norm
    assert describe(f) == fname(f) == broadcast_fname(f) == "np.linalg.norm"
    with pytest.raises(AssertionError, match=r"^test_rrule\(np\.linalg\.norm, "):
        test_rrule(f, np.ones(3), rrule_f=RuleSet().rrule, rng=0)


def test_a_ufunc_of_another_package_is_named_from_its_module() -> None:
    """scipy.special's functions are numpy ufuncs: they were shown as ``np.gammaln``, and
    reproduce lines called ``np.gammaln`` (AttributeError)."""
    special = pytest.importorskip("scipy.special")
    assert function_name(special.gammaln) == "scipy.special.gammaln"
    assert function_name(special.expit, qualified=True) == "scipy.special.expit"
    assert function_name(np.add) == "np.add"


def test_a_qualified_name_is_not_made_up_from_a_module_that_does_not_hold_it() -> None:
    """An interop adapter named ``sort_axis0`` keeps the ``__module__`` of what it wraps
    (``autograd.tracer``): a gate's "falsifying inputs" line showed
    ``autograd.tracer.sort_axis0``, which names nothing; the bare name is shown instead."""

    def sort_axis0(x: Any) -> Any:
        return x

    sort_axis0.__qualname__ = "sort_axis0"
    sort_axis0.__module__ = "json"  # imported, holds no sort_axis0
    assert function_name(sort_axis0, qualified=True) == "sort_axis0"
    sort_axis0.__qualname__ = sort_axis0.__name__ = "dumps"
    assert function_name(sort_axis0, qualified=True) == "json.dumps"
