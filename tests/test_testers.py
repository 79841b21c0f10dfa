"""Tests of the testers: correct rules pass (float64 and float32), the seed scenario, test_frule,
test_scalar, misuse, seeds and reports. Each check's own wrong rule is in test_testers_checks.py.

Every rule lives in a fresh RuleSet (``rrule_f=rules.rrule``), never in the default one.
"""

from __future__ import annotations

import re
from collections import namedtuple
from typing import Any

import numpy as np
import pytest
from testers_helpers import NT, failure, rrule_of, sin_rules

from rruletest import NoTangent, RuleSet, RuleTestFailure, Tangent, ZeroTangent, unthunk
from rruletest.broadcast import broadcasted, unbroadcast
from rruletest.tangents import AbstractZero
from rruletest.testers import rand_tangent, test_frule, test_rrule, test_scalar, with_tangent

# -- passing rules -------------------------------------------------------------------------


def test_correct_rules_pass_float64_and_float32() -> None:
    rules = sin_rules()
    for dtype in (np.float64, np.float32):
        x = np.linspace(-1, 1, 7).astype(dtype)
        test_rrule(np.sin, x, rrule_f=rules.rrule, rng=0)
        test_frule(np.sin, x, frule_f=rules.frule, rng=0)
        test_rrule(np.sin, dtype(0.25), rrule_f=rules.rrule, rng=0)
    test_rrule(np.sin, 0.25, rrule_f=rules.rrule, rng=0)


def test_float32_rule_wrong_by_one_percent_fails() -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * (np.cos(x) * np.float32(1.01))))
    x = np.linspace(-1, 1, 5).astype(np.float32)
    err = failure(lambda: test_rrule(np.sin, x, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["numeric"]


def test_matrix_rule_float32_and_float64() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.matmul)
    def _matmul(a: Any, b: Any) -> Any:
        return a @ b, lambda ybar: (NT, unthunk(ybar) @ b.T, a.T @ unthunk(ybar))

    rng = np.random.default_rng(1)
    for dtype in (np.float64, np.float32):
        a, b = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((4, 2)).astype(dtype)
        test_rrule(np.matmul, a, b, rrule_f=rules.rrule, rng=0)


def test_structured_arguments_and_outputs() -> None:
    Point = namedtuple("Point", "x y")

    def norm2(p: Any, scale: float) -> float:
        return scale * (p.x**2 + p.y**2)

    def pullback_of(p: Any, scale: float) -> Any:
        def pullback(ybar: Any) -> Any:
            return (
                NT,
                Tangent(Point, x=2 * scale * p.x * ybar, y=2 * scale * p.y * ybar),
                (p.x**2 + p.y**2) * ybar,
            )

        return pullback

    rules = rrule_of(norm2, pullback_of)
    test_rrule(norm2, Point(1.5, -0.5), 2.0, rrule_f=rules.rrule, rng=0)


def test_a_natural_dict_cotangent_may_leave_out_an_int_entry() -> None:
    # {"u": 0.7, "k": 3}: "k" is not differentiable, and a dict cotangent without it once
    # failed with "keys differ: missing 'k'" against the reference's NoTangent() there (the
    # type check and Tangent(dict, u=...) accepted it). Leaving out "u" still fails.
    def f(d: dict[str, Any]) -> Any:
        return d["u"] ** 2 * d["k"]

    good = rrule_of(f, lambda d: lambda ybar: (NT, {"u": 2 * d["u"] * d["k"] * ybar}))
    test_rrule(f, {"u": 0.7, "k": 3}, rrule_f=good.rrule, rng=0)
    bad = rrule_of(f, lambda d: lambda ybar: (NT, {"k": NT}))
    err = failure(lambda: test_rrule(f, {"u": 0.7, "k": 3}, rrule_f=bad.rrule, rng=0))
    assert "args[0]: keys differ: missing 'u'" in str(err)


def test_dict_argument_with_natural_tangent() -> None:
    def f(d: dict[str, Any]) -> Any:
        return d["a"] * d["b"]

    rules = rrule_of(
        f, lambda d: lambda ybar: (NT, {"a": np.sum(ybar * d["b"]), "b": ybar * d["a"]})
    )
    test_rrule(f, {"a": 1.5, "b": np.array([1.0, 2.0])}, rrule_f=rules.rrule, rng=0)


def test_object_array_argument_of_floats() -> None:
    # Its error estimate is an object array too: the tolerance is widened element by element.
    def prod(a: Any) -> Any:
        return a[0] * a[1]

    a = np.array([1.5, 2.0], dtype=object)
    right = rrule_of(prod, lambda a: lambda yb: (NT, np.array([yb * a[1], yb * a[0]], object)))
    test_rrule(prod, a, rrule_f=right.rrule, rng=0)
    wrong = rrule_of(prod, lambda a: lambda yb: (NT, np.array([yb * a[0], yb * a[0]], object)))
    text = str(failure(lambda: test_rrule(prod, a, output_tangent=1.0, rrule_f=wrong.rrule, rng=0)))
    assert "args[0]: 1 of 2 elements differ" in text
    assert "max abs diff 0.5 at [0] (actual 1.5, expected 2.0)" in text


def test_complex_holomorphic_rule_passes_and_conj_error_is_caught() -> None:
    good = rrule_of(np.exp, lambda z: lambda ybar: (NT, ybar * np.conj(np.exp(z))))
    z = np.array([0.5 + 0.25j, -1.0 + 2.0j])
    test_rrule(np.exp, z, rrule_f=good.rrule, rng=0)
    bad = rrule_of(np.exp, lambda z: lambda ybar: (NT, ybar * np.exp(z)))
    assert failure(lambda: test_rrule(np.exp, z, rrule_f=bad.rrule, rng=0)).checks == ["numeric"]


# -- misuse -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "text"),
    [
        pytest.param({"vjp_mode": "fast"}, ValueError, "vjp_mode='fast'", id="vjp_mode"),
        pytest.param({"rtol": -1.0}, ValueError, "rtol=-1.0", id="rtol"),
        pytest.param({"atol": "x"}, TypeError, "atol='x'", id="atol"),
        pytest.param({"fkwargs": [1]}, TypeError, "fkwargs=[1]", id="fkwargs"),
        pytest.param({"rng": 1.5}, TypeError, "rng=1.5", id="rng"),
        pytest.param({"fdm": 3}, TypeError, "fdm=3", id="fdm"),
        pytest.param({"rrule_f": 3}, TypeError, "rrule_f=3", id="rrule_f"),
        pytest.param(
            {"output_tangent": np.ones(3)},
            ValueError,
            "output_tangent does not fit the output: shape (3,) for a primal of shape (2,)",
            id="output_tangent",
        ),
        pytest.param(
            {"output_tangent": np.array([1.0, np.nan])},
            ValueError,
            "output_tangent is not finite at output_tangent[1] (nan): give a finite cotangent",
            id="output_tangent-nan",
        ),
    ],
)
def test_misuse_raises_type_or_value_error(kwargs: dict[str, Any], exc: type, text: str) -> None:
    rules = sin_rules()
    kwargs = {"rrule_f": rules.rrule, **kwargs}
    with pytest.raises(exc, match=re.escape(text)):
        test_rrule(np.sin, np.ones(2), **kwargs)


def test_with_tangent_rejects_unfit_tangent() -> None:
    with pytest.raises(ValueError, match=re.escape("dx does not fit x: complex dtype")):
        with_tangent(np.ones(2), np.ones(2, complex))


def test_a_tangent_given_with_nan_or_inf_is_misuse() -> None:
    # A NaN in a given ybar was dropped by the numerical vjp (a weight that is not > 0), so
    # a correct rule failed with "NaN in actual only" against an expected 0; a NaN or an
    # infinity in dx made "nothing was compared" and a hint about f's input.
    with pytest.raises(ValueError, match=re.escape("dx is not finite at dx[0] (inf)")):
        with_tangent(np.ones(2), np.array([np.inf, 1.0]))
    with pytest.raises(ValueError, match=re.escape("dx is not finite at dx['b'] (nan)")):
        with_tangent({"a": 1.0, "b": 2.0}, {"a": 1.0, "b": np.nan})
    with_tangent(np.array([np.nan, 1.0]), np.array([0.0, 1.0]))  # a NaN primal is fine


# -- seeds and reports ----------------------------------------------------------------------


def test_seed_is_reported_and_reproduces() -> None:
    bad = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x) * 1.01))
    first = failure(lambda: test_rrule(np.sin, np.ones(3), rrule_f=bad.rrule))
    seed = int(re.search(r"rng=(\d+)\)  # needs bad ", str(first)).group(1))  # type: ignore[union-attr]
    again = failure(lambda: test_rrule(np.sin, np.ones(3), rrule_f=bad.rrule, rng=seed))
    assert str(again) == str(first)


def test_header_summarises_big_arrays_and_api_only_mode() -> None:
    bad = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x)), primal=np.cos)
    err = failure(
        lambda: test_rrule(
            np.sin,
            np.ones((50, 60)),
            rrule_f=bad.rrule,
            rng=0,
            check_fd=False,
            check_thunked_output_tangent=False,
        )
    )
    assert str(err).startswith(
        "test_rrule(np.sin, float64[50, 60]) failed\n"
        "  numerical check: off (check_fd=False): structural checks only\n"
        "  pullback called 3 times: with ybar, ybar again, ZeroTangent()\n"
        "[primal] y: the rule's output differs from f(*args)"
    )


def test_testers_are_not_collected() -> None:
    for f in (test_rrule, test_frule, test_scalar, with_tangent, rand_tangent):
        assert f.__test__ is False  # type: ignore[attr-defined]


# -- the seed scenario: broadcasting -------------------------------------------------------------


def scalar_rules() -> RuleSet:
    rules = RuleSet("scalars")
    rules.scalar_rule(np.sin, lambda x, y: np.cos(x), complex=True)
    rules.scalar_rule(np.multiply, lambda x, y, z: (y, x), complex=True)
    return rules


def test_generic_broadcast_rule_passes() -> None:
    rules = scalar_rules()
    for dtype in (np.float64, np.float32):
        x = np.linspace(-2, 2, 11).astype(dtype)
        test_rrule(broadcasted, np.sin, x, rrule_f=rules.rrule, rng=0)
        test_frule(broadcasted, np.sin, x, frule_f=rules.frule, rng=0)


def user_broadcast_rules(wrong: bool) -> RuleSet:
    """The seed thread's generic rule, in Python: for any ``f`` and any number of same-shape
    arguments, one ``rrule(f, ...)`` per element; the pullback unzips the per-element cotangents
    into object arrays, and an argument whose cotangents are all ``NoTangent()`` gets one.
    """
    rules = scalar_rules()

    @rules.register_rrule(broadcasted)
    def _bcast(f: Any, *args: Any) -> Any:
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        pairs = [rules.rrule(f, *(np.asarray(a)[i] for a in args)) for i in np.ndindex(shape)]
        y = np.array([p[0] for p in pairs]).reshape(shape)

        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return (NT, NT, *(ybar for _ in args))
            ybar = np.broadcast_to(ybar, shape)
            per_element = [
                pb(1.0 if wrong else ybar[i])[1:]
                for (_, pb), i in zip(pairs, np.ndindex(shape), strict=True)
            ]
            dxs = []
            for j in range(len(args)):
                dx = np.empty(shape, dtype=object)
                for i, parts in zip(np.ndindex(shape), per_element, strict=True):
                    dx[i] = parts[j]
                dxs.append(NT if all(d is NT for d in dx.flat) else dx)
            return (NT, NT, *dxs)

        return y, pullback

    return rules


def test_user_generic_broadcast_rule_with_object_array() -> None:
    x = np.linspace(-1, 1, 6)
    right, wrong = user_broadcast_rules(False), user_broadcast_rules(True)
    test_rrule(broadcasted, np.sin, x, rrule_f=right.rrule, rng=0)
    a, b = np.linspace(1, 2, 6).reshape(2, 3), np.linspace(-1, 1, 6).reshape(2, 3)
    test_rrule(broadcasted, np.multiply, a, b, rrule_f=right.rrule, rng=0)
    err = failure(lambda: test_rrule(broadcasted, np.sin, x, rrule_f=wrong.rrule, rng=0))
    # the scalar frule agrees with finite differences: the cross-check names the pullback
    assert err.checks == ["numeric", "transpose"]
    assert "the rrule (pullback) disagrees with finite differences; the frule agrees" in str(err)
    text = str(err)
    assert (
        "[numeric] args[1]: the cotangent differs from the numerical vjp (structured "
        "broadcast vjp)\n  args[1]: 6 of 6 elements differ"
    ) in text
    err = failure(lambda: test_rrule(broadcasted, np.multiply, a, b, rrule_f=wrong.rrule, rng=0))
    assert err.checks == ["numeric", "transpose"]
    assert "[numeric] args[2]: the cotangent differs" in str(err)


def binary_rules(with_unbroadcast: bool) -> RuleSet:
    rules = RuleSet("binary")

    @rules.register_rrule(broadcasted, np.multiply)
    def _mul(f: Any, a: Any, b: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            da, db = ybar * b, ybar * a
            if with_unbroadcast:
                da, db = unbroadcast(a, da), unbroadcast(b, db)
            return NT, NT, da, db

        return a * b, pullback

    return rules


def test_binary_broadcast_rule_and_missing_unbroadcast() -> None:
    a, b = np.linspace(1, 2, 3).reshape(3, 1), np.linspace(-1, 1, 4).reshape(1, 4)
    for dtype in (np.float64, np.float32):
        test_rrule(
            broadcasted,
            np.multiply,
            a.astype(dtype),
            b.astype(dtype),
            rrule_f=binary_rules(True).rrule,
            rng=0,
        )
    err = failure(
        lambda: test_rrule(broadcasted, np.multiply, a, b, rrule_f=binary_rules(False).rrule, rng=0)
    )
    assert err.checks == ["type"]
    text = str(err)
    assert (
        "[type] args[1]: shape (3, 4) for a primal of shape (3, 1)\n  hint: a cotangent must "
        "have its argument's shape: sum the broadcast dimensions back with unbroadcast(x, xbar)"
        in text
    )
    assert "[type] args[2]: shape (3, 4) for a primal of shape (1, 4)" in text
    assert "test_rrule(broadcasted, np.multiply, float64[3, 1], float64[1, 4]) failed" in text


# -- test_frule ------------------------------------------------------------------------------


def test_frule_wrong_and_right() -> None:
    good = sin_rules()
    test_frule(
        np.sin, with_tangent(np.array([0.1, 0.2]), np.array([1.0, -2.0])), frule_f=good.frule, rng=0
    )
    bad = RuleSet()
    bad.register_frule(np.sin)(lambda dots, x: (np.sin(x), -np.cos(x) * dots[1]))
    err = failure(lambda: test_frule(np.sin, np.array([0.1, 0.2]), frule_f=bad.frule, rng=0))
    assert err.checks == ["numeric"]
    assert "[numeric] ydot: the output tangent differs from the numerical jvp" in str(err)


def test_frule_dtype_and_missing_rule() -> None:
    bad = RuleSet()
    bad.register_frule(np.sin)(lambda dots, x: (np.sin(x), np.cos(x).astype(float) * dots[1]))
    x = np.array([0.1, 0.2], np.float32)
    err = failure(lambda: test_frule(np.sin, x, frule_f=bad.frule, rng=0))
    assert err.checks == ["type"]
    assert "[type] ydot: dtype float64 for a float32 primal" in str(err)
    err = failure(lambda: test_frule(np.sin, x, frule_f=RuleSet().frule, rng=0))
    assert err.checks == ["rule"]


def test_frule_declining_is_a_failure_naming_it() -> None:
    rules = RuleSet()

    @rules.register_frule(np.sin)
    def sin_float64_only(dots: Any, x: Any) -> Any:
        return None if x.dtype != np.float64 else (np.sin(x), np.cos(x) * dots[1])

    x = np.array([0.1, 0.2], np.float32)
    err = failure(lambda: test_frule(np.sin, x, frule_f=rules.frule, rng=0))
    assert err.checks == ["rule"]
    assert (
        "no rule: RuleSet.frule returned None: the one registered declined these arguments "
        f"(returned None): sin_float64_only (for np.sin, from {__name__}); no other frule applies"
    ) in str(err)
    test_frule(np.sin, x.astype(np.float64), frule_f=rules.frule, rng=0)


# -- test_scalar ----------------------------------------------------------------------------


def test_scalar_real_and_complex() -> None:
    rules = scalar_rules()
    test_scalar(np.sin, 0.5, rrule_f=rules.rrule, frule_f=rules.frule, rng=0)
    test_scalar(np.sin, np.float32(0.5), rrule_f=rules.rrule, frule_f=rules.frule, rng=0)


def test_scalar_catches_missing_conj() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.exp)
    def _exp(z: Any) -> Any:
        y = np.exp(z)
        return y, lambda ybar: (NT, unthunk(ybar) * y)  # should be conj(y)

    rules.register_frule(np.exp)(lambda dots, z: (np.exp(z), np.exp(z) * dots[1]))
    err = failure(lambda: test_scalar(np.exp, 0.5, rrule_f=rules.rrule, frule_f=rules.frule, rng=0))
    text = str(err)
    assert text.startswith("test_scalar(np.exp, 0.5) failed (tested at x = 0.5, (0.5+0.5j))")
    assert "in test_rrule(np.exp, (0.5+0.5j)):\n[numeric] args[0]" in text
    assert "the cotangent convention is xbar = ybar * conj(f'(z))" in text
    assert text.endswith(
        "reproduce: import numpy as np; from rruletest import test_scalar; test_scalar(np.exp, "
        "0.5, rrule_f=rules.rrule, frule_f=rules.frule, rng=0)  # needs rules defined as in the "
        "test"
    )


# -- scale, modes, structured outputs -----------------------------------------------------------


def test_one_wrong_element_in_a_large_broadcast_is_caught() -> None:
    rules = RuleSet()

    @rules.register_rrule(broadcasted, np.sin)
    def _rule(f: Any, x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return NT, NT, ybar
            d = np.cos(x)
            d[12345] *= 1.001
            return NT, NT, ybar * d

        return np.sin(x), pullback

    x = np.random.default_rng(0).uniform(-3, 3, 100_000)
    err = failure(lambda: test_rrule(broadcasted, np.sin, x, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["numeric"]
    assert "args[1]: 1 of 100000 elements differ" in str(err)
    assert "at [12345]" in str(err)


def test_auto_mode_switches_to_the_adjoint_identity_beyond_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rruletest.testers import _reference

    monkeypatch.setattr(_reference, "DENSE_LIMIT", 10)
    bad = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x) * 1.001))
    x = np.linspace(0, 1, 20)
    err = failure(lambda: test_rrule(np.sin, x, rrule_f=bad.rrule, rng=0))
    assert "(20 input coordinates > 10; vjp_mode='full' forces dense)" in str(err)
    err = failure(lambda: test_rrule(np.sin, x, rrule_f=bad.rrule, rng=0, vjp_mode="full"))
    assert "dense finite-difference vjp (20 coordinates)" in str(err)


def test_tuple_output_rule() -> None:
    def sincos(x: Any) -> Any:
        return np.sin(x), np.cos(x)

    def pullback_of(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            a, b = unthunk(ybar)
            return NT, unthunk(a) * np.cos(x) - unthunk(b) * np.sin(x)

        return pullback

    rules = rrule_of(sincos, pullback_of)
    test_rrule(sincos, np.array([0.1, 0.7]), rrule_f=rules.rrule, rng=0)
    test_rrule(sincos, 0.3, rrule_f=rules.rrule, rng=0)


def test_complex_broadcast_and_float32_wrong_broadcast() -> None:
    rules = scalar_rules()
    z = np.array([0.5 + 0.5j, -1.0 + 0.25j], dtype=np.complex64)
    test_rrule(broadcasted, np.sin, z, rrule_f=rules.rrule, rng=0)
    test_frule(broadcasted, np.sin, z, frule_f=rules.frule, rng=0)
    wrong = RuleSet()
    wrong.scalar_rule(np.sin, lambda x, y: np.cos(x) * np.float32(1.01))
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    err = failure(lambda: test_rrule(broadcasted, np.sin, x, rrule_f=wrong.rrule, rng=0))
    assert err.checks == ["numeric"]  # frule and rrule are wrong alike: they still transpose
    err = failure(lambda: test_frule(broadcasted, np.sin, x, frule_f=wrong.frule, rng=0))
    assert err.checks == ["numeric"]


def test_scalar_skips_complex_when_f_rejects_it_or_the_domain_says_real() -> None:
    wrong = RuleSet()
    wrong.register_rrule(np.cbrt)(lambda x: (np.cbrt(x), lambda ybar: (NT, unthunk(ybar) * 2.0)))
    wrong.register_frule(np.cbrt)(lambda dots, x: (np.cbrt(x), dots[1] / (3 * np.cbrt(x) ** 2)))
    err = failure(
        lambda: test_scalar(np.cbrt, 0.5, rrule_f=wrong.rrule, frule_f=wrong.frule, rng=0)
    )
    assert str(err).startswith("test_scalar(np.cbrt, 0.5) failed (tested at x = 0.5)\n")
    real = RuleSet()
    real.scalar_rule(np.exp, lambda x, y: y * 1.01)  # wrong, and declared real-only
    err = failure(lambda: test_scalar(np.exp, 0.5, rrule_f=real.rrule, frule_f=real.frule, rng=0))
    assert "(tested at x = 0.5)" in str(err)
    assert err.checks == ["numeric"]


def test_scalar_misuse() -> None:
    with pytest.raises(TypeError, match=re.escape("x must be a real or complex number, got x='a'")):
        test_scalar(np.sin, "a")
    with pytest.raises(TypeError, match="check_complex=1"):
        test_scalar(np.sin, 0.5, check_complex=1)  # type: ignore[arg-type]


def test_output_tangent_and_with_tangent_for_frule() -> None:
    rules = sin_rules()
    x = np.array([0.2, 0.4])
    test_rrule(np.sin, x, output_tangent=np.array([1.0, -1.0]), rrule_f=rules.rrule, rng=0)
    test_rrule(np.sin, x, output_tangent=ZeroTangent(), rrule_f=rules.rrule, rng=0)
    test_frule(np.sin, with_tangent(x, ZeroTangent()), frule_f=rules.frule, rng=0)


def test_dense_rule_with_a_declared_domain_near_its_edge() -> None:
    def logsum(x: Any) -> Any:
        return np.sum(np.log(x))

    for domain in (None, "(0, inf)"):
        rules = RuleSet()
        rules.register_rrule(logsum, domain=domain)(
            lambda x: (logsum(x), lambda ybar: (NT, unthunk(ybar) / x))
        )
        rules.register_frule(logsum, domain=domain)(lambda d, x: (logsum(x), np.sum(d[1] / x)))
        for dtype in (np.float64, np.float32):
            x = np.array([1e-8, 1.0, 3e4], dtype)
            test_rrule(logsum, x, rrule_f=rules.rrule, rng=0)
            test_frule(logsum, x, frule_f=rules.frule, rng=0)


class _Scaled:
    """A callable object with state: a function the rules know by identity."""

    def __init__(self, k: float) -> None:
        self.k = np.array(k)

    def __call__(self, x: Any) -> Any:
        return self.k * x


def test_snapshot_keeps_callables_by_identity() -> None:
    import functools
    import math

    from rruletest.testers._snapshot import changes, render_change, snapshot

    obj, part = _Scaled(2.0), functools.partial(np.add, 1.0)
    value = [obj, part, np.sin, math, _Scaled, {"f": obj}, np.ones(2)]
    snap = snapshot(value)
    assert snap[0] is obj
    assert snap[1] is part
    assert snap[2] is np.sin
    assert snap[3] is math
    assert snap[4] is _Scaled
    assert snap[5]["f"] is obj
    assert snap[6] is not value[6]  # arrays are still copied
    assert snapshot(obj) is obj
    assert changes(snap, value) == []
    assert render_change("args", changes(snap, [_Scaled(2.0), *value[1:]])[0]).startswith(
        "args[0]: was "
    )


def test_rrule_broadcast_of_a_callable_object_finds_its_rule() -> None:
    scaled = _Scaled(3.0)
    rules = RuleSet()
    rules.scalar_rule(scaled, lambda x, y: 3.0)
    x = np.linspace(0.0, 1.0, 4)
    test_rrule(broadcasted, scaled, x, rrule_f=rules.rrule, rng=0)
    test_frule(broadcasted, scaled, x, frule_f=rules.frule, rng=0)
    test_rrule(scaled, x, rrule_f=rules.rrule, rng=0)


def test_broadcast_reference_vectorises_by_the_ruleset_in_use() -> None:
    calls = [0]

    def square(x: Any) -> Any:  # a plain Python function: only `rules` declares it elementwise
        calls[0] += 1
        return x * x

    rules = RuleSet()
    rules.scalar_rule(square, lambda x, y: 2 * x)
    x = np.linspace(0.5, 1.5, 1000)
    test_rrule(broadcasted, square, x, rrule_f=rules.rrule, rng=0)
    assert calls[0] < 100  # a few whole-array calls, not one per element per stencil point
    calls[0] = 0
    test_frule(broadcasted, square, x, frule_f=rules.frule, rng=0)
    assert calls[0] < 100


def test_testers_return_a_report_of_what_they_checked() -> None:
    import dataclasses

    from rruletest.testers import TesterReport

    def sin_times(x: Any, n: int) -> Any:
        return n * np.sin(x)

    rules = RuleSet()

    @rules.register_rrule(sin_times)
    def _rule(x: Any, n: int) -> Any:
        # the derivative off by a relative 1e-12: well inside the tolerance, and measured
        return n * np.sin(x), lambda ybar: (NT, ybar * n * np.cos(x) * (1 + 1e-12), NT)

    x = np.linspace(0.1, 1.0, 3)
    report = test_rrule(sin_times, x, 2, rrule_f=rules.rrule, rng=11)
    assert isinstance(report, TesterReport)
    assert report.tester == "test_rrule"
    assert "sin_times" in report.function
    assert report.numerical == "dense finite-difference vjp (3 coordinates)"
    assert report.not_checked == ("args[1]",)
    assert "not checked numerically: args[1] (int: not differentiable)" in report.notes
    assert report.pullback_calls == 4
    assert report.seed == 11
    assert report.worst_rel_err is not None
    assert 1e-13 < report.worst_rel_err < 1e-9
    assert report.worst_abs_err is not None
    assert 1e-14 < report.worst_abs_err < 1e-9
    assert any(n.startswith("pullback called 4 times") for n in report.notes)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.seed = 3  # type: ignore[misc]
    assert TesterReport.__test__ is False  # type: ignore[attr-defined]

    off = test_rrule(sin_times, x, 2, rrule_f=rules.rrule, rng=11, check_fd=False)
    assert off.numerical is None
    assert off.worst_rel_err is None
    assert off.worst_abs_err is None


def test_frule_and_scalar_reports() -> None:
    rules = sin_rules()
    fr = test_frule(np.sin, np.ones(3), frule_f=rules.frule, rng=2)
    assert fr.tester == "test_frule"
    assert fr.pullback_calls == 0
    assert fr.seed == 2
    assert fr.numerical is not None
    assert fr.worst_rel_err is not None
    assert fr.worst_rel_err < 1e-9
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: np.cos(x), complex=True)
    sc = test_scalar(np.sin, 0.5, rrule_f=rules.rrule, frule_f=rules.frule, rng=4)
    assert len(sc.parts) == 4  # frule and rrule at 0.5 and at 0.5 + 0.5j
    assert sc.tester == "test_scalar"
    assert sc.seed == 4
    assert [p.tester for p in sc.parts] == ["test_frule", "test_rrule"] * (len(sc.parts) // 2)
    assert sc.pullback_calls == sum(p.pullback_calls for p in sc.parts) > 0
    worst = max(p.worst_rel_err for p in sc.parts if p.worst_rel_err is not None)
    assert sc.worst_rel_err == worst


def test_adjoint_mode_reports_the_identity_error() -> None:
    rules = sin_rules()
    report = test_rrule(np.sin, np.ones(5), rrule_f=rules.rrule, rng=0, vjp_mode="adjoint")
    assert report.numerical is not None
    assert report.numerical.startswith("adjoint identity")
    assert report.worst_rel_err is not None
    assert report.worst_rel_err < 1e-9


@pytest.mark.parametrize(
    "f", [lambda x: x, np.atleast_1d, np.squeeze], ids=["id", "atleast_1d", "squeeze"]
)
def test_a_function_returning_its_argument_passes_both_testers(f: Any) -> None:
    # An output that is the argument itself (or a view of it) must not read as a zero Jacobian.
    x = np.array([[0.25, 0.5, 0.75], [0.4, 0.65, 0.9]])

    def rrule_f(g: Any, x: Any) -> Any:
        return g(x), lambda ybar: (NoTangent(), np.reshape(unthunk(ybar), np.shape(x)))

    def frule_f(dots: Any, g: Any, x: Any) -> Any:
        return g(x), g(dots[1])

    test_rrule(f, x, rrule_f=rrule_f)
    test_frule(f, x, frule_f=frule_f)


def test_inputs_not_finite_at_the_primal_point_get_a_zero_xdot() -> None:
    # nan + h is nan: no finite difference moves x[1], so a random tangent there would leave
    # every output it might reach unchecked ("nothing was compared"); it is zero instead (a
    # note), and the finite elements are compared, a wrong one among them still caught.
    def frule_f(dots: Any, f: Any, x: Any) -> Any:
        return np.sin(x), np.cos(x) * dots[1]

    def wrong(dots: Any, f: Any, x: Any) -> Any:
        y, ydot = frule_f(dots, f, x)
        return y, ydot * np.where(np.arange(x.size) == 2, 1.01, 1.0)

    for n in (3, 40):
        x = np.linspace(0.1, 1.0, n)
        x[1] = np.nan
        report = test_frule(np.sin, x, frule_f=frule_f, rng=0)
        assert (
            "args[0]: tangent zero at the 1 element(s) not finite at the primal point (at (1,)): "
            "finite differences cannot move them"
        ) in report.notes
        with pytest.raises(RuleTestFailure, match=r"\[numeric\] ydot"):
            test_frule(np.sin, x, frule_f=wrong, rng=0)


def test_a_broadcast_at_outputs_not_finite_leaves_their_elements_unchecked() -> None:
    # exp(inf) = inf and exp(nan) = nan: ybar (xdot) is zero there, and a correct rule's
    # 0 * inf is NaN, which the structured reference compared with its exact 0 and failed
    # ("NaN in actual only"); those elements have no derivative to check. The finite ones
    # are compared, and a wrong one among them is still caught.
    rules, wrong = RuleSet(), RuleSet()
    rules.scalar_rule(np.exp, lambda x, y: y)
    rules.scalar_rule(np.log, lambda x, y: 1 / x)  # inf at 0, where log is -inf
    wrong.scalar_rule(np.exp, lambda x, y: y * np.where(x == 1.0, 1.01, 1.0))
    x = np.array([np.inf, 0.5, np.nan, 1.0, -np.inf])
    with np.errstate(invalid="ignore", divide="ignore"):
        report = test_rrule(broadcasted, np.exp, x, rrule_f=rules.rrule, rng=0)
        assert "args[1]: 2 of 5 elements compared numerically, 3 unchecked" in report.notes[2]
        test_frule(broadcasted, np.exp, x, frule_f=rules.frule, rng=0)
        test_rrule(broadcasted, np.log, np.array([0.0, 2.0]), rrule_f=rules.rrule, rng=0)
        with pytest.raises(RuleTestFailure, match=r"\[numeric\] args\[1\]"):
            test_rrule(broadcasted, np.exp, x, rrule_f=wrong.rrule, rng=0)
        with pytest.raises(RuleTestFailure, match=r"\[numeric\] ydot"):
            test_frule(broadcasted, np.exp, x, frule_f=wrong.frule, rng=0)


def test_a_nan_cotangent_of_an_argument_feeding_an_output_not_finite_is_unchecked() -> None:
    # x * y at x = [1, inf]: ybar is zero at the infinite output, and the scalar y feeds it
    # too, so a correct rule's cotangent of y, sum(ybar * x), holds 0 * inf = NaN. It was
    # compared with the reference's finite sum ("values differ", blaming the rule); it is
    # unchecked, and nothing else of y is (a failure that says so). A finite wrong value
    # there is still compared.
    rules, wrong = RuleSet(), RuleSet()
    rules.scalar_rule(np.multiply, lambda a, b, y: (b, a))
    wrong.scalar_rule(np.multiply, lambda a, b, y: (b, np.where(np.isfinite(a), 2 * a, 0.0)))
    x = np.array([1.0, np.inf])
    with np.errstate(invalid="ignore"):
        text = str(failure(lambda: test_rrule(broadcasted, np.multiply, x, 2.0,
                                              rrule_f=rules.rrule, rng=0)))  # fmt: skip
        assert "args[2]: 0 of 1 elements compared numerically, 1 unchecked" in text
        assert "[numeric] args[2]: nothing was compared" in text
        assert "values differ" not in text
        test_rrule(broadcasted, np.multiply, x, np.array([2.0, 3.0]), rrule_f=rules.rrule, rng=0)
        text = str(failure(lambda: test_rrule(broadcasted, np.multiply, x, 2.0,
                                              rrule_f=wrong.rrule, rng=0)))  # fmt: skip
        assert "[numeric] args[2]: the cotangent differs from the numerical vjp" in text


def test_outputs_not_finite_at_the_primal_point_get_a_zero_ybar() -> None:
    # log(-1) is NaN: its ybar is zero (said in a note), and the other elements are compared,
    # densely and through the adjoint identity; a wrong element among them is still caught.
    def rrule_f(f: Any, x: Any) -> Any:
        return np.log(x), lambda ybar: (NoTangent(), unthunk(ybar) / x)

    def wrong(f: Any, x: Any) -> Any:
        y, pullback = rrule_f(f, x)
        return y, lambda ybar: (NoTangent(), pullback(ybar)[1] * np.where(x > 1.9, 1.01, 1.0))

    for n in (8, 3000):
        x = np.linspace(0.5, 2.0, n)
        x[2] = -1.0
        with np.errstate(invalid="ignore"):
            report = test_rrule(np.log, x, rrule_f=rrule_f, rng=0)
            assert (
                "ybar: zero at the 1 output element(s) not finite at the primal point (at (2,))"
                in report.notes[0]
            )
            with pytest.raises(RuleTestFailure, match=r"\[numeric\] args\[0\]"):
                test_rrule(np.log, x, rrule_f=wrong, rng=0)


def test_scalar_given_one_rule_function_takes_the_other_from_the_same_ruleset() -> None:
    """``test_scalar(f, x, rrule_f=rules.rrule)`` looked the frule up in the default RuleSet
    and failed with 'no rule'; the frule now comes from ``rules`` too (and the other way)."""
    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    assert len(test_scalar(np.sin, 0.5, rrule_f=rules.rrule).parts) == 2
    assert len(test_scalar(np.sin, 0.5, frule_f=rules.frule).parts) == 2
    wrong = RuleSet()

    @wrong.register_rrule(np.sin)
    def _sin_rrule(x: Any) -> Any:
        return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))

    @wrong.register_frule(np.sin)
    def _sin_frule(dots: Any, x: Any) -> Any:
        return np.sin(x), 2.0 * np.cos(x) * dots[1]

    with pytest.raises(RuleTestFailure, match=r"in test_frule\(np\.sin, 0\.5\)"):
        test_scalar(np.sin, 0.5, rrule_f=wrong.rrule)


def test_a_general_rrule_at_an_input_whose_output_is_infinite_leaves_that_element_unchecked() -> (
    None
):
    """``log`` at [0, 1] through a plain rrule: ybar is zeroed at the infinite output, so a
    correct rule's cotangent there is 0 * inf = NaN, which the dense reference held to 0 ('NaN
    in actual only'). Such an element is unchecked; a wrong value elsewhere still fails, and
    the numerical references keep f's floating-point warnings at their own points to
    themselves."""
    import warnings

    def rules(scale: float) -> RuleSet:
        rs = RuleSet()

        @rs.register_rrule(np.log)
        def _log_rrule(x: Any) -> Any:
            def pullback(ybar: Any) -> Any:
                ybar = unthunk(ybar)
                if isinstance(ybar, ZeroTangent):
                    return NoTangent(), np.zeros_like(x)
                with np.errstate(all="ignore"):
                    xbar = ybar / x
                xbar[-1] *= scale
                return NoTangent(), xbar

            with np.errstate(all="ignore"):
                return np.log(x), pullback

        return rs

    x = np.array([0.0, 2.0, 3.0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with np.errstate(divide="ignore"):
            report = test_rrule(np.log, x, rrule_f=rules(1.0).rrule, rng=0)
    unchecked = "args[0]: 2 of 3 elements compared numerically, 1 unchecked"
    assert any(n.startswith(unchecked) for n in report.notes)
    assert not [w for w in seen if "_fd_inputs" in w.filename or "finite_differences" in w.filename]
    with (
        pytest.raises(RuleTestFailure, match=r"args\[0\]: 1 of 3 elements differ"),
        np.errstate(divide="ignore"),
    ):
        test_rrule(np.log, x, rrule_f=rules(1.01).rrule, rng=0)


def test_an_output_infinite_at_the_point_is_not_compared_against_zero() -> None:
    # 2 * sum(x) at x = [1, inf] is inf around x: the dense reference once called its slope
    # along x[0] 0 (inf == inf), failing these correct rules with "expected 0.0".
    def f(x: Any) -> Any:
        return 2.0 * np.sum(x)

    rules = RuleSet()

    @rules.register_rrule(f)
    def _f_rrule(x: Any) -> Any:
        return f(x), lambda ybar: (NT, np.full_like(x, 2.0 * unthunk(ybar)))

    @rules.register_frule(f)
    def _f_frule(dots: Any, x: Any) -> Any:
        return f(x), 2.0 * np.sum(dots[1])

    x = np.array([1.0, np.inf])
    for call in (
        lambda: test_rrule(f, x, rrule_f=rules.rrule, check_transpose=False, rng=0),
        lambda: test_frule(f, x, frule_f=rules.frule, check_transpose=False, rng=0),
    ):
        text = str(failure(call))
        assert "nothing was compared" in text
        assert "expected: np.float64(0.0)" not in text
