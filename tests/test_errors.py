"""Tests for rruletest.errors: Mismatch records and the RuleTestFailure that carries them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rruletest.errors import Mismatch, RuleTestFailure


def _m(check: str = "value", path: str = "args[0]", **kw: object) -> Mismatch:
    fields: dict[str, object] = {"actual": 1.0, "expected": 2.0, "message": f"{path}: differ"}
    fields.update(kw)
    return Mismatch(check=check, path=path, **fields)  # type: ignore[arg-type]


def test_mismatch_defaults() -> None:
    m = _m()
    assert (m.abs_err, m.rel_err, m.index, m.rtol, m.atol, m.hint) == (None,) * 6
    assert (m.count, m.size, m.extra) == (None, None, {})


def test_mismatch_fields_keep_their_positions() -> None:
    # Positional construction, as written before count/size were added, still works.
    m = Mismatch("value", "x", 1.0, 2.0, "msg", 1.0, 0.5, (1,), 1e-9, 1e-9, "hint", {"k": 1})
    assert (m.index, m.hint, m.extra, m.count) == ((1,), "hint", {"k": 1}, None)


def test_failure_is_an_assertion_error_carrying_the_first_mismatch() -> None:
    first = _m(rtol=1e-9, atol=1e-8)
    err = RuleTestFailure([first, _m("shape", "args[1]")])
    assert isinstance(err, AssertionError)
    assert err.first is first
    assert (err.path, err.actual, err.expected, err.rtol, err.atol) == (
        "args[0]",
        1.0,
        2.0,
        1e-9,
        1e-8,
    )


def test_failure_without_mismatches() -> None:
    err = RuleTestFailure([], header="nothing")
    assert err.first is None
    assert (err.path, err.actual, err.expected, err.rtol, err.atol) == (None,) * 5
    assert str(err) == "nothing\n0 problems found:"


def test_checks_in_order_without_repeats() -> None:
    err = RuleTestFailure([_m("value"), _m("shape"), _m("value"), _m("type")])
    assert err.checks == ["value", "shape", "type"]


def test_render_one_mismatch_is_its_block() -> None:
    assert str(RuleTestFailure([_m(message="x: differ\n")])) == "x: differ"


def test_render_several_with_header_and_reproduce() -> None:
    err = RuleTestFailure(
        [_m(path="a", message="a: one"), _m(path="b", message="b: two")],
        header="test_rrule(sin, 1.0)",
        reproduce="pytest --rruletest-seed=1",
    )
    assert str(err) == (
        "test_rrule(sin, 1.0)\n2 problems found:\na: one\nb: two\n"
        "reproduce: pytest --rruletest-seed=1"
    )


def test_hints_are_appended_once() -> None:
    inline = _m(message="x: differ\n  hint: use a tuple", hint="use a tuple")
    extra = _m(message="y: differ", hint="first\nsecond")
    assert str(RuleTestFailure([inline, extra])) == (
        "2 problems found:\n"
        "x: differ\n  hint: use a tuple\n"
        "y: differ\n  hint: first\n  hint: second"
    )


def test_pickle_round_trip() -> None:
    err = RuleTestFailure(
        [_m(actual=np.arange(3.0), count=1, size=3, index=(2,))], header="h", reproduce="r"
    )
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err)
    assert back.mismatches[0].count == 1
    np.testing.assert_array_equal(back.actual, np.arange(3.0))


def test_pytest_raises_reads_the_fields() -> None:
    with pytest.raises(RuleTestFailure) as info:
        raise RuleTestFailure([_m("dtype", "pullback output[1]")])
    assert info.value.checks == ["dtype"]
    assert info.value.path == "pullback output[1]"
