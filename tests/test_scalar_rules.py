"""Property: correct scalar rules pass ``test_scalar`` everywhere inside their declared domain,
including near its edges, in float64 and float32 (a tester must never fail a correct rule).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rruletest import NoTangent, RuleSet, RuleTestFailure, Tangent, Thunk, ZeroTangent
from rruletest.testers import test_frule, test_rrule, test_scalar

# (function, partials(x, y), domain, holomorphic, |x| cap for generated values)
RULES: list[tuple[Any, Any, str, bool]] = [
    (np.sin, lambda x, y: np.cos(x), "(-inf, inf)", True),
    (np.cos, lambda x, y: -np.sin(x), "(-inf, inf)", True),
    (np.tan, lambda x, y: 1 + y * y, "(-1.5, 1.5)", True),
    (np.exp, lambda x, y: y, "(-20, 20)", True),
    (np.log, lambda x, y: 1 / x, "(0, inf)", True),
    (np.sqrt, lambda x, y: 1 / (2 * y), "(0, inf)", True),
    (np.tanh, lambda x, y: 1 - y * y, "(-inf, inf)", True),
    (np.arcsin, lambda x, y: 1 / np.sqrt(1 - x * x), "(-1, 1)", True),
    (np.arccos, lambda x, y: -1 / np.sqrt(1 - x * x), "(-1, 1)", True),
    (np.arctan, lambda x, y: 1 / (1 + x * x), "(-inf, inf)", True),
    (np.log1p, lambda x, y: 1 / (1 + x), "(-1, inf)", True),
    (np.expm1, lambda x, y: y + 1, "(-20, 20)", True),
    (np.sinh, lambda x, y: np.cosh(x), "(-20, 20)", True),
    (np.reciprocal, lambda x, y: -y * y, "(0, inf)", True),
    (np.cbrt, lambda x, y: 1 / (3 * y * y), "(0, inf)", False),
]


def ruleset() -> RuleSet:
    rules = RuleSet("scalars")
    for f, partials, domain, holo in RULES:
        rules.scalar_rule(f, partials, domain=domain, complex=holo)
    return rules


RULESET = ruleset()


def inputs(domain: str) -> st.SearchStrategy[float]:
    """Values inside ``domain`` (capped at 1e3 in size), plus points near each finite edge."""
    from rruletest.domains import Interval

    iv = Interval.parse(domain)
    lo, hi = max(iv.lo, -1e3), min(iv.hi, 1e3)
    edges = []
    if math.isfinite(iv.lo):
        edges += [iv.lo + 1e-8 * max(1.0, abs(iv.lo)), iv.lo + 1e-4]
    if math.isfinite(iv.hi):
        edges += [iv.hi - 1e-6 * max(1.0, abs(iv.hi)), iv.hi - 1e-3]
    # Generated points keep 1e-8 (relative) from finite edges; the edges themselves are tested
    # at exactly that distance. Closer than that (sqrt at 2e-308) no finite difference has a
    # step small enough.
    lo_in = lo + 1e-8 * max(1.0, abs(lo)) if math.isfinite(iv.lo) else lo
    hi_in = hi - 1e-8 * max(1.0, abs(hi)) if math.isfinite(iv.hi) else hi
    inside = st.floats(lo_in, hi_in, allow_subnormal=False)
    return st.one_of(st.sampled_from(edges), inside) if edges else inside


@pytest.mark.parametrize(
    ("f", "domain"), [pytest.param(r[0], r[2], id=r[0].__name__) for r in RULES]
)
@settings(max_examples=12)
@given(data=st.data(), dtype=st.sampled_from([np.float64, np.float32]))
def test_correct_scalar_rules_pass_inside_their_domain(
    f: Any, domain: str, data: st.DataObject, dtype: Any
) -> None:
    x = data.draw(inputs(domain), label="x")
    from rruletest.domains import Interval

    iv = Interval.parse(domain)
    if dtype is np.float32:  # keep 100 float32 ulps from a finite edge
        room = 100 * float(np.finfo(np.float32).eps) * abs(x)
        if (math.isfinite(iv.lo) and x - iv.lo < room) or (
            math.isfinite(iv.hi) and iv.hi - x < room
        ):
            return
    x = dtype(x)
    if not iv.contains(float(x)):  # rounding to float32 left the domain
        return
    test_scalar(f, x, rrule_f=RULESET.rrule, frule_f=RULESET.frule, rng=0)


@pytest.mark.parametrize(
    ("f", "x64", "x32"),
    [
        pytest.param(np.log, 1e-8, 1e-8, id="log-1e-8"),
        pytest.param(np.arcsin, 0.999999, 0.999999, id="arcsin-0.999999"),
        pytest.param(np.arccos, -0.999999, -0.999999, id="arccos--0.999999"),
        pytest.param(np.sqrt, 1e-10, 1e-10, id="sqrt-1e-10"),
        # float32 cannot resolve -1 + 1e-7 (two ulps from the edge): no step fits there
        pytest.param(np.log1p, -1 + 1e-7, -1 + 1e-5, id="log1p-edge"),
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_near_domain_edges(f: Any, x64: float, x32: float, dtype: Any) -> None:
    x = dtype(x64 if dtype is np.float64 else x32)
    test_scalar(f, x, rrule_f=RULESET.rrule, frule_f=RULESET.frule, rng=0)


def test_scalar_rule_wrong_near_edge_is_still_caught() -> None:
    from rruletest import RuleTestFailure

    rules = RuleSet()
    rules.scalar_rule(np.log, lambda x, y: 1.01 / x, domain="(0, inf)", complex=True)
    with pytest.raises(RuleTestFailure):
        test_scalar(np.log, 1e-6, rrule_f=rules.rrule, frule_f=rules.frule, rng=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    ("f", "values"),
    [
        pytest.param(np.log, [1e-8, 1e-3, 1.0, 1e8], id="log"),
        pytest.param(np.arcsin, [-0.999999, -0.5, 0.0, 0.999999], id="arcsin"),
        pytest.param(np.sqrt, [1e-10, 2.0, 1e10], id="sqrt"),
    ],
)
def test_broadcast_rules_over_inputs_of_very_different_sizes(
    f: Any, values: list[float], dtype: Any
) -> None:
    from rruletest.broadcast import broadcasted
    from rruletest.testers import test_frule, test_rrule

    x = np.array(values, dtype=dtype)
    test_rrule(broadcasted, f, x, rrule_f=RULESET.rrule, rng=0)
    test_frule(broadcasted, f, x, frule_f=RULESET.frule, rng=0)


@settings(max_examples=20)
@given(
    x=st.lists(st.floats(1e-6, 1e6, allow_subnormal=False), min_size=1, max_size=20).map(np.array)
)
def test_broadcast_log_over_generated_arrays(x: np.ndarray) -> None:
    from rruletest.broadcast import broadcasted
    from rruletest.testers import test_rrule

    test_rrule(broadcasted, np.log, x, rrule_f=RULESET.rrule, rng=0)


BINARY = RuleSet("binary")
BINARY.scalar_rule(np.multiply, lambda x, y, z: (y, x), complex=True)
BINARY.scalar_rule(np.add, lambda x, y, z: (np.ones_like(z), np.ones_like(z)), complex=True)
BINARY.scalar_rule(np.hypot, lambda x, y, z: (x / z, y / z), domain="(0.1, 10)")


@settings(max_examples=15)
@given(
    f=st.sampled_from([np.multiply, np.add, np.hypot]),
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
    dtype=st.sampled_from([np.float64, np.float32]),
    seed=st.integers(0, 2**16),
)
def test_binary_broadcast_rules_pass_for_any_broadcastable_shapes(
    f: Any, shapes: Any, dtype: Any, seed: int
) -> None:
    from rruletest.broadcast import broadcasted
    from rruletest.testers import test_frule, test_rrule

    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(0.5, 3.0, s).astype(dtype) for s in shapes.input_shapes)
    test_rrule(broadcasted, f, a, b, rrule_f=BINARY.rrule, rng=seed)
    test_frule(broadcasted, f, a, b, frule_f=BINARY.frule, rng=seed)


def test_broadcast_with_python_scalar_and_keyword_arguments() -> None:
    from rruletest.broadcast import broadcasted
    from rruletest.testers import test_rrule

    x = np.linspace(0.5, 2, 4)
    test_rrule(broadcasted, np.multiply, x, 2.5, rrule_f=BINARY.rrule, rng=0)
    test_rrule(broadcasted, np.multiply, 2.5, x, rrule_f=BINARY.rrule, rng=0)


# --------------------------------------------------------------------------------------------
# Functions of several outputs: one row of partials per output (ChainRulesCore's @scalar_rule)
# --------------------------------------------------------------------------------------------


def sincos(x: Any) -> tuple[Any, Any]:
    return np.sin(x), np.cos(x)


def polar(r: Any, t: Any) -> tuple[Any, Any]:
    return r * np.cos(t), r * np.sin(t)


def several() -> RuleSet:
    rules = RuleSet("several outputs")
    rules.scalar_rule(sincos, lambda x, y: (y[1], -y[0]))
    rules.scalar_rule(np.modf, lambda x, y: (1.0, 0.0))
    rules.scalar_rule(np.frexp, lambda x, y: (np.ldexp(1.0, -y[1]), 0.0))
    rules.scalar_rule(polar, lambda r, t, y: ((np.cos(t), -y[1]), (np.sin(t), y[0])))
    return rules


SEVERAL = several()


def test_several_outputs_pullback_by_hand() -> None:
    y, pullback = SEVERAL.rrule(sincos, 0.5)
    assert y == (np.sin(0.5), np.cos(0.5))
    fbar, xbar = pullback((2.0, 3.0))
    assert fbar is NoTangent()
    assert xbar == pytest.approx(2.0 * np.cos(0.5) - 3.0 * np.sin(0.5))
    assert pullback(Tangent(tuple, 2.0))[1] == pytest.approx(2.0 * np.cos(0.5))
    assert pullback([ZeroTangent(), Thunk(lambda: 1.0)])[1] == pytest.approx(-np.sin(0.5))
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent())
    assert pullback((NoTangent(), ZeroTangent())) == (NoTangent(), ZeroTangent())
    _, rbar, tbar = SEVERAL.rrule(polar, 2.0, 0.3)[1]((1.0, 1.0))
    assert rbar == pytest.approx(np.cos(0.3) + np.sin(0.3))
    assert tbar == pytest.approx(-2.0 * np.sin(0.3) + 2.0 * np.cos(0.3))


def test_several_outputs_pushforward_by_hand() -> None:
    _, ydot = SEVERAL.frule((NoTangent(), 2.0), sincos, 0.5)
    assert ydot == pytest.approx((2.0 * np.cos(0.5), -2.0 * np.sin(0.5)))
    (m, e), (mdot, edot) = SEVERAL.frule((NoTangent(), 1.0), np.frexp, 12.0)
    assert (m, e) == (0.75, 4)
    assert mdot == 1.0 / 16
    assert edot is NoTangent()  # an integer output has no tangent
    assert SEVERAL.frule((NoTangent(), ZeroTangent()), sincos, 0.5)[1] == (
        ZeroTangent(),
        ZeroTangent(),
    )
    assert SEVERAL.derivatives_given_output(sincos(0.5), sincos, 0.5) == (
        (np.cos(0.5),),
        (-np.sin(0.5),),
    )


@pytest.mark.parametrize(
    ("f", "args"),
    [
        pytest.param(sincos, (0.7,), id="sincos"),
        pytest.param(sincos, (np.linspace(-2, 2, 5),), id="sincos-array"),
        pytest.param(np.modf, (2.3,), id="modf"),
        pytest.param(np.frexp, (np.array([0.3, 5.0, 70.0]),), id="frexp"),
        pytest.param(polar, (1.5, np.array([0.1, 2.0])), id="polar"),
        pytest.param(sincos, (np.float32(0.25),), id="sincos-float32"),
    ],
)
def test_correct_rules_of_several_outputs_pass(f: Any, args: tuple[Any, ...]) -> None:
    test_rrule(f, *args, rrule_f=SEVERAL.rrule, rng=0)
    test_frule(f, *args, frule_f=SEVERAL.frule, rng=0)


def test_a_wrong_row_of_several_outputs_is_caught() -> None:
    bad = RuleSet()
    bad.scalar_rule(sincos, lambda x, y: (y[1], y[0]))  # d cos / dx has the wrong sign
    with pytest.raises(RuleTestFailure) as rr:
        test_rrule(sincos, 0.7, rrule_f=bad.rrule, rng=0)
    assert "[numeric] args[0]: the cotangent differs from the numerical vjp" in str(rr.value)
    with pytest.raises(RuleTestFailure) as fr:
        test_frule(sincos, 0.7, frule_f=bad.frule, rng=0)
    text = str(fr.value)
    assert "ydot[1]: values differ" in text
    assert "ydot[0]" not in text  # the first output's row is right
    assert "hint: actual is -expected: a sign error?" in text


def test_partials_of_several_outputs_are_counted() -> None:
    rules = RuleSet()
    rules.scalar_rule(sincos, lambda x, y: (y[1],))
    with pytest.raises(
        TypeError,
        match=r"^the partials of scalar rule sincos \(registered in test_scalar_rules\) returned "
        r"1 row for a function with 2 outputs; partials\(\*args, y\) must return one row of "
        r"partials per output",
    ):
        rules.rrule(sincos, 0.5)[1]((1.0, 1.0))
    rules.scalar_rule(polar, lambda r, t, y: ((1.0, 2.0), 3.0))
    with pytest.raises(TypeError, match=r"returned row 1 a value of type float for 2 arguments"):
        rules.frule((NoTangent(), 1.0, 1.0), polar, 1.0, 1.0)


def test_cotangent_of_several_outputs_must_have_one_entry_per_output() -> None:
    pullback = SEVERAL.rrule(sincos, 0.5)[1]
    with pytest.raises(
        TypeError,
        match=r"^pullback of sincos: the output is a tuple of 2, so its cotangent must be a "
        r"tuple \(or Tangent\(tuple, \.\.\.\)\) of 2, got float 1\.0$",
    ):
        pullback(1.0)
    with pytest.raises(TypeError, match=r"of 2, got tuple \(1\.0, 2\.0, 3\.0\)$"):
        pullback((1.0, 2.0, 3.0))
