"""The rule's cotangents at float64 copies of low-precision inputs (``_rule_rounding``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest import NoTangent, Tangent
from rruletest.testers._rule_rounding import wide_cotangents


def _scaled(f: Any, x: Any, k: Any) -> Any:
    return x * k, lambda ybar: (NoTangent(), ybar * k, NoTangent())


def test_low_precision_arrays_and_ybar_are_widened_to_float64() -> None:
    x = np.array([1.0, 2.0], dtype=np.float32)
    ybar = np.array([0.1, 0.2], dtype=np.float32)
    (xbar,) = wide_cotangents(_scaled, None, (x, 3), {}, ybar, [0]) or ()
    assert xbar.dtype == np.float64
    assert xbar.tolist() == [float(np.float32(0.1)) * 3, float(np.float32(0.2)) * 3]


def test_nothing_low_precision_gives_none() -> None:
    assert wide_cotangents(_scaled, None, (np.ones(2), 3), {}, np.ones(2), [0]) is None


def test_a_rule_that_fails_or_misbehaves_at_float64_gives_none() -> None:
    x = np.ones(2, dtype=np.float32)

    def refuses(f: Any, x: Any) -> Any:
        if x.dtype == np.float64:
            raise TypeError("float32 only")
        return x, lambda ybar: (NoTangent(), ybar)

    def short(f: Any, x: Any) -> Any:
        return x, lambda ybar: (NoTangent(),)

    for rule in (refuses, short, lambda f, x: None):
        assert wide_cotangents(rule, None, (x,), {}, np.ones(2, np.float32), [0]) is None


def test_structured_arguments_keep_their_structure() -> None:
    x = {"w": np.ones(2, dtype=np.float32), "n": 2}

    def rule(f: Any, x: Any, *, scale: float) -> Any:
        def pullback(ybar: Any) -> Any:
            return NoTangent(), Tangent(dict, w=ybar * scale)

        return x["w"] * scale, pullback

    (xbar,) = wide_cotangents(rule, None, (x,), {"scale": 0.5}, np.ones(2, np.float32), [0]) or ()
    assert isinstance(xbar, Tangent)
    assert xbar["w"].dtype == np.float64
    assert xbar["w"].tolist() == [0.5, 0.5]
