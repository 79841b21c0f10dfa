"""Tests for rruletest.defaults: the values the rest of rruletest reads, and the one validator."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rruletest import defaults
from rruletest._plugin.options import DEFAULT_DTYPES, DEFAULT_EXAMPLES, parse_tolerances
from rruletest.testers import test_frule, test_rrule, test_scalar
from rruletest.tolerances import DEFAULT_TOLERANCES, merge_tolerances


def test_the_tolerance_table_is_built_from_the_defaults() -> None:
    assert {str(d): tuple(t) for d, t in DEFAULT_TOLERANCES.items()} == {
        ("float128" if name == "longdouble" else name): pair
        for name, pair in defaults.TOLERANCES.items()
    } | {str(np.dtype(np.longdouble)): defaults.TOLERANCES["longdouble"]}


def test_the_plugin_reads_its_defaults_here() -> None:
    assert DEFAULT_EXAMPLES == defaults.EXAMPLES
    assert DEFAULT_DTYPES == defaults.DTYPES


def test_defaults_import_nothing_of_rruletest_nor_numpy() -> None:
    code = (
        "import sys; import rruletest.defaults; "
        "print(sorted(m for m in sys.modules if m.startswith(('rruletest', 'numpy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['rruletest', 'rruletest.defaults']"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        pytest.param(-1.0, ValueError, id="negative"),
        pytest.param(float("nan"), ValueError, id="nan"),
        pytest.param("1e-3", TypeError, id="string"),
        pytest.param(True, TypeError, id="bool"),
    ],
)
def test_every_entry_point_rejects_a_bad_tolerance_in_the_same_words(
    value: object, error: type[Exception]
) -> None:
    words = defaults.tolerance_message("rtol", value)
    with pytest.raises(error) as direct:
        defaults.check_tolerance("rtol", value)
    assert str(direct.value) == words
    with pytest.raises(error) as merged:
        merge_tolerances(np.float64, rtol=value)
    assert str(merged.value) == words
    for tester, args in ((test_rrule, (0.5,)), (test_frule, (0.5,)), (test_scalar, (0.5,))):
        with pytest.raises(error) as called:
            tester(np.sin, *args, rtol=value)
        assert str(called.value) == f"{tester.__name__}: {words}"


def test_the_options_parser_uses_the_same_words() -> None:
    with pytest.raises(ValueError, match=r"a tolerance is \[DTYPE=\]VALUE: atol must be a number"):
        parse_tolerances(["float32=-1"], name="atol")
    assert parse_tolerances(["inf"], name="rtol") == {"*": float("inf")}


def test_inf_switches_a_comparison_off() -> None:
    assert defaults.check_tolerance("atol", float("inf")) == float("inf")
