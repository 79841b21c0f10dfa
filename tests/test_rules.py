"""The rule registry: lookup, tuple keys, replacement, listing, scalar rules and their errors."""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import rruletest
from rruletest import rules as rules_module
from rruletest.domains import Domain, Interval
from rruletest.rules import RuleInfo, RuleReplacedWarning, RuleSet, register_generic_rule
from rruletest.rules import generic as generic_module
from rruletest.tangents import NoTangent, Thunk, ZeroTangent

HERE = __name__


def broadcasted_stub(f: Callable[..., Any], *args: Any) -> Any:
    """Stands in for ``rruletest.broadcast.broadcasted`` (a key head taking a function)."""
    return f(*args)


def logistic(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def _rrule_returning(tag: str) -> Callable[..., Any]:
    def rule(*args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        return (tag, args, kwargs), lambda ybar: (NoTangent(), *([ybar] * len(args)))

    rule.__qualname__ = f"rule_{tag}"
    return rule


@pytest.fixture
def rules() -> RuleSet:
    return RuleSet("test")


@pytest.fixture
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> RuleSet:
    """Replace the default RuleSet, so module-level registrations do not leak."""
    fresh = RuleSet("default-for-test")
    monkeypatch.setattr(rules_module, "default_ruleset", fresh)
    return fresh


# --------------------------------------------------------------------------------------------
# Lookup
# --------------------------------------------------------------------------------------------


def test_rrule_and_frule_lookup(rules: RuleSet) -> None:
    assert rules.rrule(np.sin, 1.0) is None
    assert rules.frule((NoTangent(), 1.0), np.sin, 1.0) is None

    @rules.register_rrule(np.sin)
    def sin_rrule(x: float) -> tuple[float, Callable[[float], tuple[Any, ...]]]:
        return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))

    @rules.register_frule(np.sin)
    def sin_frule(tangents: tuple[Any, ...], x: float) -> tuple[float, float]:
        return np.sin(x), np.cos(x) * tangents[1]

    y, pullback = rules.rrule(np.sin, 0.5)  # type: ignore[misc]
    assert y == np.sin(0.5)
    assert pullback(2.0) == (NoTangent(), 2.0 * np.cos(0.5))
    assert rules.frule((NoTangent(), 3.0), np.sin, 0.5) == (np.sin(0.5), 3.0 * np.cos(0.5))
    assert rules.frule([NoTangent(), 3.0], np.sin, 0.5) == (np.sin(0.5), 3.0 * np.cos(0.5))
    assert rules.rrule(np.cos, 0.5) is None
    info = rules.rrule_info(np.sin, 0.5)
    assert info is not None
    assert info.rrule is sin_rrule
    assert info.kind == "rrule"
    assert rules.frule_info(np.sin, 0.5).frule is sin_frule  # type: ignore[union-attr]
    assert rules.scalar_info(np.sin) is None
    assert RuleSet().rrule(np.sin, 0.5) is None  # RuleSets are independent


def test_keyword_arguments_reach_the_rule(rules: RuleSet) -> None:
    rules.register_rrule(np.sum)(_rrule_returning("sum"))
    (tag, _args, kwargs), _ = rules.rrule(np.sum, np.ones(3), axis=0)  # type: ignore[misc]
    assert tag == "sum"
    assert kwargs == {"axis": 0}


def test_register_returns_the_rule_unchanged(rules: RuleSet) -> None:
    rule = _rrule_returning("x")
    assert rules.register_rrule(np.sin)(rule) is rule
    assert rules.register_frule(np.sin)(rule) is rule


def test_tuple_key_receives_the_function(rules: RuleSet) -> None:
    rules.register_rrule(broadcasted_stub, np.sin)(_rrule_returning("broadcast-sin"))
    rules.register_rrule(broadcasted_stub)(_rrule_returning("broadcast-any"))
    x = np.ones(3)
    (tag, args, _), pullback = rules.rrule(broadcasted_stub, np.sin, x)  # type: ignore[misc]
    assert tag == "broadcast-sin"
    assert args[0] is np.sin
    assert args[1] is x
    assert len(pullback(1.0)) == 3
    (tag, args, _), _ = rules.rrule(broadcasted_stub, np.cos, x)  # type: ignore[misc]
    assert tag == "broadcast-any"
    assert args[0] is np.cos
    assert rules.rrule_info(broadcasted_stub, np.sin, x).name == "broadcasted_stub(sin)"  # type: ignore[union-attr]


def test_longest_matching_key_wins(rules: RuleSet) -> None:
    def g(*args: Any) -> None:
        return None

    def h() -> None:
        return None

    def k() -> None:
        return None

    rules.register_rrule(g)(_rrule_returning("1"))
    rules.register_rrule(g, h)(_rrule_returning("2"))
    rules.register_rrule(g, h, k)(_rrule_returning("3"))
    assert rules.rrule(g, h, k, 1.0)[0][0] == "3"  # type: ignore[index]
    assert rules.rrule(g, h, 1.0)[0][0] == "2"  # type: ignore[index]
    assert rules.rrule(g, k, 1.0)[0][0] == "1"  # type: ignore[index]
    assert rules.rrule(g)[0][0] == "1"  # type: ignore[index]


def test_a_rule_that_declines_falls_back_to_a_less_specific_one(rules: RuleSet) -> None:
    # ChainRulesCore's ``nothing``: a rule returning None has no rule for these arguments.
    def g(*args: Any) -> None:
        return None

    def h() -> None:
        return None

    @rules.register_rrule(g, h)
    def _specific(h: Any, x: Any) -> Any:
        return None if x < 0 else (("specific", x), None)

    @rules.register_frule(g, h)
    def _specific_f(dots: Any, h: Any, x: Any) -> Any:
        return None if x < 0 else ("specific", dots)

    rules.register_rrule(g)(_rrule_returning("general"))
    assert rules.rrule(g, h, 1.0)[0][0] == "specific"  # type: ignore[index]
    assert rules.rrule(g, h, -1.0)[0][0] == "general"  # type: ignore[index]
    assert rules.frule((None, None, 1.0), g, h, 1.0)[0] == "specific"  # type: ignore[index]
    assert rules.frule((None, None, 1.0), g, h, -1.0) is None  # nothing else to ask


def test_rule_infos_list_the_rules_asked_in_order(rules: RuleSet) -> None:
    def g(*args: Any) -> None:
        return None

    def h() -> None:
        return None

    rules.register_rrule(g, h)(_rrule_returning("specific"))
    rules.register_rrule(g)(_rrule_returning("general"))
    rules.register_frule(g)(lambda dots, *args: None)
    assert [i.key for i in rules.rrule_infos(g, h, 1.0)] == [(g, h), (g,)]
    assert [i.key for i in rules.rrule_infos(g, 1.0)] == [(g,)]
    assert rules.rrule_infos(h) == []
    assert [i.key for i in rules.frule_infos(g, h, 1.0)] == [(g,)]
    assert rules.rrule_info(g, h, 1.0) is rules.rrule_infos(g, h, 1.0)[0]


def test_a_broadcast_rule_that_declines_falls_back_to_the_scalar_rule(rules: RuleSet) -> None:
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x),))

    @rules.register_rrule(rruletest.broadcasted, np.sin)
    def _float64_only(f: Any, x: Any) -> Any:
        if x.dtype != np.float64:
            return None
        return np.sin(x), lambda g: (NoTangent(), NoTangent(), 2 * g)  # (wrong, for the test)

    x = np.linspace(-1, 1, 5)
    _, pb = rules.rrule(rruletest.broadcasted, np.sin, x)  # type: ignore[misc]
    assert np.array_equal(pb(np.ones(5))[2], np.full(5, 2.0))
    y, pb = rules.rrule(rruletest.broadcasted, np.sin, x.astype(np.float32))  # type: ignore[misc]
    assert y.dtype == np.float32
    np.testing.assert_allclose(pb(np.ones(5, np.float32))[2], np.cos(x), rtol=1e-6)
    rruletest.test_rrule(rruletest.broadcasted, np.sin, x.astype(np.float32), rrule_f=rules.rrule)


class UnhashableCallable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self) -> None:
        return None

    def __eq__(self, other: object) -> bool:  # pragma: no cover - must never be asked
        raise AssertionError("lookup compared a non-key argument")


def test_lookup_survives_awkward_first_arguments(rules: RuleSet) -> None:
    rules.register_rrule(broadcasted_stub, np.sin)(_rrule_returning("bs"))
    rules.register_rrule(broadcasted_stub)(_rrule_returning("b"))
    for first in (np.ones(3), [1.0], {"a": 1}, UnhashableCallable(), 0.0):
        assert rules.rrule(broadcasted_stub, first)[0][0] == "b"  # type: ignore[index]
    assert rules.rrule(UnhashableCallable(), 1.0) is None
    assert rules.frule((), UnhashableCallable()) is None
    assert rules.scalar_info(UnhashableCallable()) is None


def test_generic_rules_apply_to_every_ruleset(
    rules: RuleSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    def head(*args: Any) -> None:
        return None

    seen: list[RuleSet] = []

    def generic_rrule(ruleset: RuleSet, *args: Any) -> Any:
        seen.append(ruleset)
        return "generic", lambda ybar: (NoTangent(),)

    def generic_frule(ruleset: RuleSet, tangents: tuple[Any, ...], *args: Any) -> Any:
        return "generic-f", tangents

    monkeypatch.setattr(generic_module, "GENERIC_RRULES", {})
    monkeypatch.setattr(generic_module, "GENERIC_FRULES", {})
    register_generic_rule(head, rrule=generic_rrule, frule=generic_frule)
    assert rules.rrule(head, 1.0)[0] == "generic"  # type: ignore[index]
    assert seen == [rules]
    assert rules.frule([1.0], head, 1.0) == ("generic-f", (1.0,))
    rules.register_rrule(head)(_rrule_returning("own"))
    assert rules.rrule(head, 1.0)[0][0] == "own"  # type: ignore[index]
    assert rules.rrule_info(head) is not None
    assert RuleSet().rrule_info(head) is None  # generic rules are not listed as own rules


def test_module_level_functions_use_the_default_ruleset(fresh_default: RuleSet) -> None:
    rruletest.register_rrule(np.sin)(_rrule_returning("sin"))
    rruletest.register_frule(np.sin)(lambda t, x: (np.sin(x), t[1]))
    rruletest.scalar_rule(np.cos, lambda x, y: -np.sin(x))
    rruletest.non_differentiable(np.sign)
    assert rruletest.rrule(np.sin, 1.0)[0][0] == "sin"  # type: ignore[index]
    assert rruletest.frule((NoTangent(), 2.0), np.sin, 1.0) == (np.sin(1.0), 2.0)
    assert rruletest.derivatives_given_output(np.cos(1.0), np.cos, 1.0) == (-np.sin(1.0),)
    assert rruletest.rrule(np.sign, 1.0)[1](1.0) == (NoTangent(), NoTangent())  # type: ignore[index]
    assert {i.kind for i in fresh_default.rules()} == {
        "rrule",
        "frule",
        "scalar",
        "non_differentiable",
    }
    assert repr(fresh_default) == "RuleSet('default-for-test', 4 rules)"


# --------------------------------------------------------------------------------------------
# Replacement
# --------------------------------------------------------------------------------------------


def test_replacing_a_rule_warns_and_replaces(rules: RuleSet) -> None:
    rules.register_rrule(np.sin)(_rrule_returning("first"))
    with pytest.warns(RuleReplacedWarning) as record:
        rules.register_rrule(np.sin)(_rrule_returning("second"))
    assert len(record) == 1
    assert str(record[0].message) == (
        f"sin: replacing the rrule rule_first from {HERE} with the rrule rule_second from {HERE}"
    )
    assert record[0].filename == __file__  # the warning points at the registration
    assert rules.rrule(np.sin, 1.0)[0][0] == "second"  # type: ignore[index]


def test_replacing_with_a_scalar_rule_warns_once(rules: RuleSet) -> None:
    rules.register_rrule(np.exp)(_rrule_returning("r"))
    rules.register_frule(np.exp)(_rrule_returning("f"))
    with pytest.warns(RuleReplacedWarning) as record:
        rules.scalar_rule(np.exp, lambda x, y: y)
    assert [str(r.message) for r in record] == [
        f"exp: replacing the rrule rule_r from {HERE} with the scalar rule from {HERE}"
    ]
    assert record[0].filename == __file__
    with pytest.warns(RuleReplacedWarning, match=r"^exp: replacing the scalar rule from .* with "):
        rules.non_differentiable(np.exp)
    assert rules.scalar_info(np.exp) is None


def test_module_level_replacement_warning_points_at_the_caller(fresh_default: RuleSet) -> None:
    rruletest.scalar_rule(np.tanh, lambda x, y: 1 - y**2)
    with pytest.warns(RuleReplacedWarning) as record:
        rruletest.scalar_rule(np.tanh, lambda x, y: 1 - y**2)
    assert record[0].filename == __file__


def test_first_registration_does_not_warn(rules: RuleSet) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rules.register_rrule(np.sin)(_rrule_returning("a"))
        rules.register_frule(np.sin)(_rrule_returning("b"))
        rules.register_rrule(broadcasted_stub, np.sin)(_rrule_returning("c"))


# --------------------------------------------------------------------------------------------
# Listing
# --------------------------------------------------------------------------------------------


def _run_module(name: str, source: str, rules: RuleSet) -> types.ModuleType:
    """Execute ``source`` as module ``name`` with ``rules`` and ``np`` in scope."""
    module = types.ModuleType(name)
    module.__dict__.update(rules=rules, np=np, NoTangent=NoTangent)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def test_rules_are_listed_by_module_and_kind(rules: RuleSet) -> None:
    _run_module(
        "pkg_a.unary",
        "@rules.register_rrule(np.sin, domain='(0, 1)')\n"
        "def sin_rrule(x):\n"
        "    return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))\n"
        "rules.scalar_rule(np.exp, lambda x, y: y, complex=True)\n",
        rules,
    )
    _run_module(
        "pkg_a.sub.more",
        "@rules.register_frule(np.sin)\n"
        "def sin_frule(t, x):\n"
        "    return np.sin(x), np.cos(x) * t[1]\n",
        rules,
    )
    _run_module("pkg_ab", "rules.non_differentiable(np.sign)\n", rules)

    def listed(**kw: Any) -> list[tuple[str, str, str, str]]:
        return [(i.name, i.kind, i.module, i.qualname) for i in rules.rules(**kw)]

    assert listed(module="pkg_a") == [
        ("sin", "rrule", "pkg_a.unary", "sin_rrule"),
        ("exp", "scalar", "pkg_a.unary", "exp"),
        ("sin", "frule", "pkg_a.sub.more", "sin_frule"),
    ]
    assert listed(module="pkg_a.sub") == [("sin", "frule", "pkg_a.sub.more", "sin_frule")]
    assert listed(module="pkg_ab") == [("sign", "non_differentiable", "pkg_ab", "sign")]
    assert listed(module="pkg") == []  # a prefix matches whole module names only
    assert listed(kind="scalar") == [("exp", "scalar", "pkg_a.unary", "exp")]
    assert listed(module="pkg_a", kind="frule") == [("sin", "frule", "pkg_a.sub.more", "sin_frule")]
    assert len(rules.rules()) == 4
    by_kind = {i.kind: i for i in rules.rules()}
    assert by_kind["rrule"].domain == Domain((Interval(0, 1),))
    assert by_kind["scalar"].domain == Domain.of(None, complex=True)
    assert by_kind["frule"].domain is None
    assert by_kind["scalar"].function is np.exp


def test_rules_made_by_a_factory_record_the_module_whose_import_called_it(
    rules: RuleSet,
) -> None:
    helpers = _run_module(
        "pkg_h._helpers",
        "def elementwise(f, df):\n"
        "    @rules.register_rrule(f)\n"
        "    def rule(x):\n"
        "        return f(x), lambda ybar: (NoTangent(), ybar * df(x))\n"
        "    return rule\n",
        rules,
    )
    module = types.ModuleType("pkg_h.rules")
    module.__dict__.update(elementwise=helpers.elementwise, np=np)
    source = (
        "elementwise(np.sin, np.cos)\n"  # at import, directly
        "def _more():\n"
        "    elementwise(np.cos, lambda x: -np.sin(x))\n"
        "_more()\n"  # and through a function of its own
    )
    exec(compile(source, "<pkg_h.rules>", "exec"), module.__dict__)
    assert [(i.name, i.module) for i in rules.rules()] == [
        ("sin", "pkg_h.rules"),
        ("cos", "pkg_h.rules"),
    ]
    # At run time (a test function calling the factory) the factory's module stays.
    helpers.elementwise(np.tan, lambda x: 1 / np.cos(x) ** 2)
    assert rules.rrule_info(np.tan, 0.5).module == "pkg_h._helpers"  # type: ignore[union-attr]


def test_non_function_rules_record_the_registering_module(rules: RuleSet) -> None:
    import functools

    partial_rule = functools.partial(_rrule_returning("p"))
    rules.register_rrule(np.sin)(partial_rule)
    info = rules.rrule_info(np.sin)
    assert info is not None
    assert info.module == HERE  # not "functools"


def test_listing_rejects_unknown_kinds(rules: RuleSet) -> None:
    with pytest.raises(
        ValueError,
        match=r"^kind must be one of rrule, frule, scalar, non_differentiable; got kind='rule'$",
    ):
        rules.rules(kind="rule")


def test_examples_are_recorded_as_argument_tuples(rules: RuleSet) -> None:
    rules.register_rrule(np.hypot, examples=[(1.0, 2.0), (3.0, 4.0)])(_rrule_returning("h"))
    info = rules.scalar_rule(np.sin, lambda x, y: np.cos(x), examples=[0.5, (1.5,)])
    assert rules.rrule_info(np.hypot).examples == ((1.0, 2.0), (3.0, 4.0))  # type: ignore[union-attr]
    assert info.examples == ((0.5,), (1.5,))
    assert isinstance(info, RuleInfo)
    assert info.partials is not None


# --------------------------------------------------------------------------------------------
# Scalar rules: derivatives against known formulas
# --------------------------------------------------------------------------------------------

# (function, partials as a rule author would write them, the known derivative, sample inputs)
UNARY = [
    pytest.param(np.sin, lambda x, y: np.cos(x), np.cos, id="sin"),
    pytest.param(np.cos, lambda x, y: -np.sin(x), lambda x: -np.sin(x), id="cos"),
    pytest.param(np.exp, lambda x, y: y, np.exp, id="exp"),
    pytest.param(np.log, lambda x, y: 1 / x, lambda x: 1 / x, id="log"),
    pytest.param(np.tanh, lambda x, y: 1 - y**2, lambda x: 1 / np.cosh(x) ** 2, id="tanh"),
    pytest.param(np.sqrt, lambda x, y: 0.5 / y, lambda x: 0.5 * x**-0.5, id="sqrt"),
    pytest.param(np.square, lambda x, y: 2 * x, lambda x: 2 * x, id="square"),
    pytest.param(np.arctan, lambda x, y: 1 / (1 + x**2), lambda x: 1 / (1 + x * x), id="arctan"),
    pytest.param(np.sinh, lambda x, y: np.cosh(x), np.cosh, id="sinh"),
    pytest.param(
        logistic,
        lambda x, y: y * (1 - y),
        lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2,
        id="logistic",
    ),
]

BINARY = [
    pytest.param(np.add, lambda a, b, y: (1.0, 1.0), lambda a, b: (1.0, 1.0), id="add"),
    pytest.param(np.multiply, lambda a, b, y: (b, a), lambda a, b: (b, a), id="multiply"),
    pytest.param(
        np.divide, lambda a, b, y: (1 / b, -y / b), lambda a, b: (1 / b, -a / b**2), id="divide"
    ),
    pytest.param(
        np.hypot,
        lambda a, b, y: (a / y, b / y),
        lambda a, b: (a / np.sqrt(a * a + b * b), b / np.sqrt(a * a + b * b)),
        id="hypot",
    ),
]

XS = np.array([0.2, 0.7, 1.3, 2.9])
YBAR = np.array([1.0, -0.5, 2.25, 0.125])


@pytest.mark.parametrize(("f", "partials", "df"), UNARY)
def test_unary_scalar_rule_matches_the_known_derivative(
    rules: RuleSet, f: Any, partials: Any, df: Any
) -> None:
    rules.scalar_rule(f, partials)
    expected = df(XS)
    y, pullback = rules.rrule(f, XS)  # type: ignore[misc]
    np.testing.assert_array_equal(y, f(XS))
    fbar, xbar = pullback(YBAR)
    assert fbar is NoTangent()
    np.testing.assert_allclose(xbar, YBAR * expected, rtol=1e-12)
    y2, ydot = rules.frule((NoTangent(), YBAR), f, XS)  # type: ignore[misc]
    np.testing.assert_array_equal(y2, f(XS))
    np.testing.assert_allclose(ydot, expected * YBAR, rtol=1e-12)
    (d,) = rules.derivatives_given_output(y, f, XS)  # type: ignore[misc]
    np.testing.assert_allclose(d, expected, rtol=1e-12)
    # scalars: a Python float in, a Python float out
    _y0, pb0 = rules.rrule(f, 0.7)  # type: ignore[misc]
    xbar0 = pb0(2.0)[1]
    assert isinstance(xbar0, float)
    assert xbar0 == pytest.approx(2.0 * float(df(0.7)), rel=1e-12)


@pytest.mark.parametrize(("f", "partials", "df"), BINARY)
def test_binary_scalar_rule_matches_the_known_derivative(
    rules: RuleSet, f: Any, partials: Any, df: Any
) -> None:
    rules.scalar_rule(f, partials)
    a, b = XS, XS[::-1] + 0.5
    da, db = df(a, b)
    _, pullback = rules.rrule(f, a, b)  # type: ignore[misc]
    fbar, abar, bbar = pullback(YBAR)
    assert fbar is NoTangent()
    np.testing.assert_allclose(abar, YBAR * np.broadcast_to(da, a.shape), rtol=1e-12)
    np.testing.assert_allclose(bbar, YBAR * np.broadcast_to(db, b.shape), rtol=1e-12)
    adot, bdot = np.full(4, 0.25), np.full(4, -2.0)
    _, ydot = rules.frule((NoTangent(), adot, bdot), f, a, b)  # type: ignore[misc]
    np.testing.assert_allclose(ydot, da * adot + db * bdot, rtol=1e-12)
    _, ydot_a = rules.frule((NoTangent(), adot, ZeroTangent()), f, a, b)  # type: ignore[misc]
    np.testing.assert_allclose(ydot_a, np.broadcast_to(da * adot, a.shape), rtol=1e-12)


@pytest.mark.parametrize(
    ("f", "partials", "df"),
    [
        pytest.param(np.exp, lambda x, y: y, np.exp, id="exp"),
        pytest.param(np.log, lambda x, y: 1 / x, lambda x: 1 / x, id="log"),
        pytest.param(np.square, lambda x, y: 2 * x, lambda x: 2 * x, id="square"),
        pytest.param(np.sin, lambda x, y: np.cos(x), np.cos, id="sin"),
    ],
)
def test_complex_scalar_rule_uses_the_conjugate_in_the_pullback(
    rules: RuleSet, f: Any, partials: Any, df: Any
) -> None:
    rules.scalar_rule(f, partials, complex=True)
    z = np.array([0.3 + 0.7j, -1.2 + 0.1j, 2.0 - 3.0j])
    zbar = np.array([1.0 + 0.0j, 0.5 - 2.0j, -1.0 + 1.0j])
    _, pullback = rules.rrule(f, z)  # type: ignore[misc]
    np.testing.assert_allclose(pullback(zbar)[1], zbar * np.conj(df(z)), rtol=1e-12)
    _, ydot = rules.frule((NoTangent(), zbar), f, z)  # type: ignore[misc]
    np.testing.assert_allclose(ydot, df(z) * zbar, rtol=1e-12)  # the pushforward does not conj
    # The convention: <ybar, J zdot> == <J^H ybar, zdot> with <a, b> = Re(sum(conj(a) * b)).
    zdot = np.array([0.1 - 0.4j, 2.0 + 0.5j, -0.3 + 0.3j])
    _, ydot = rules.frule((NoTangent(), zdot), f, z)  # type: ignore[misc]
    lhs = np.real(np.sum(np.conj(zbar) * ydot))
    rhs = np.real(np.sum(np.conj(pullback(zbar)[1]) * zdot))
    assert lhs == pytest.approx(rhs, rel=1e-12)
    assert rules.scalar_info(f).domain.complex  # type: ignore[union-attr]


def test_python_complex_partials_are_conjugated(rules: RuleSet) -> None:
    def square(x: Any) -> Any:
        return x * x

    rules.scalar_rule(square, lambda x, y: 2 * x, complex=True)
    _, pullback = rules.rrule(square, 1 + 2j)  # type: ignore[misc]
    xbar = pullback(1.0)[1]
    assert xbar == 2 - 4j
    assert isinstance(xbar, complex)


def test_real_input_gets_a_real_cotangent_from_a_complex_ybar(rules: RuleSet) -> None:
    rules.scalar_rule(np.multiply, lambda a, b, y: (b, a))
    _, pullback = rules.rrule(np.multiply, 2.0, np.array([1j, 2.0]))  # type: ignore[misc]
    _, abar, bbar = pullback(np.array([1.0 + 1.0j, 1.0]))
    assert isinstance(abar, float)
    assert abar == 3.0
    assert bbar.dtype == np.complex128


def test_scalar_rule_unbroadcasts_and_keeps_dtypes(rules: RuleSet) -> None:
    rules.scalar_rule(np.multiply, lambda a, b, y: (b, a))
    a = np.arange(1.0, 4.0).reshape(3, 1)
    b = np.arange(1.0, 5.0, dtype=np.float32).reshape(1, 4)
    y, pullback = rules.rrule(np.multiply, a, b)  # type: ignore[misc]
    assert y.shape == (3, 4)
    ybar = np.ones((3, 4))
    _, abar, bbar = pullback(ybar)
    assert abar.shape == (3, 1)
    assert abar.dtype == np.float64
    assert bbar.shape == (1, 4)
    assert bbar.dtype == np.float32
    np.testing.assert_array_equal(abar, [[10.0], [10.0], [10.0]])
    np.testing.assert_array_equal(bbar, [[6.0, 6.0, 6.0, 6.0]])
    x32 = np.linspace(0, 1, 5, dtype=np.float32)
    rules.scalar_rule(np.sin, lambda x, y: np.cos(x))
    _, pb = rules.rrule(np.sin, x32)  # type: ignore[misc]
    assert pb(np.ones(5))[1].dtype == np.float32
    _, ydot = rules.frule((NoTangent(), np.ones(5)), np.sin, x32)  # type: ignore[misc]
    assert ydot.dtype == np.float32
    _, ydot_s = rules.frule((NoTangent(), 1.0), np.sin, np.float32(0.5))  # type: ignore[misc]
    assert type(ydot_s) is np.float32


def test_scalar_rule_gives_integers_no_tangent(rules: RuleSet) -> None:
    rules.scalar_rule(np.multiply, lambda a, b, y: (b, a))
    rules.scalar_rule(np.sin, lambda x, y: np.cos(x))
    _, pullback = rules.rrule(np.multiply, 2, np.array([1.0, 2.0]))  # type: ignore[misc]
    _fbar, abar, bbar = pullback(np.ones(2))
    assert abar is NoTangent()
    np.testing.assert_array_equal(bbar, [2.0, 2.0])
    _, pb_int = rules.rrule(np.sin, np.arange(3))  # type: ignore[misc]
    assert pb_int(np.ones(3)) == (NoTangent(), NoTangent())
    assert pb_int(ZeroTangent()) == (NoTangent(), NoTangent())
    _, ydot = rules.frule((NoTangent(), 1.0), np.sin, 1)  # type: ignore[misc]
    assert ydot is ZeroTangent()  # sin(1) is a float with a zero tangent
    _, ydot_int = rules.frule((NoTangent(), 1.0, 1.0), np.multiply, 2, 3)  # type: ignore[misc]
    assert ydot_int is NoTangent()  # 2 * 3 is an integer: no tangent space


def test_scalar_rule_zero_and_thunk_cotangents(rules: RuleSet) -> None:
    calls: list[int] = []

    def partial(x: Any, y: Any) -> Any:
        calls.append(1)
        return np.cos(x)

    rules.scalar_rule(np.sin, partial)
    _, pullback = rules.rrule(np.sin, XS)  # type: ignore[misc]
    assert calls == []  # partials are computed in the pullback, not the forward pass
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent())
    assert pullback(NoTangent()) == (NoTangent(), NoTangent())
    assert calls == []
    np.testing.assert_allclose(pullback(Thunk(lambda: YBAR))[1], YBAR * np.cos(XS))
    _, ydot = rules.frule((NoTangent(), ZeroTangent()), np.sin, XS)  # type: ignore[misc]
    assert ydot is ZeroTangent()
    np.testing.assert_allclose(
        rules.frule((NoTangent(), Thunk(lambda: YBAR)), np.sin, XS)[1],  # type: ignore[index]
        YBAR * np.cos(XS),
    )
    assert calls == [1, 1]


def test_frule_output_is_writeable_and_shaped_like_y(rules: RuleSet) -> None:
    rules.scalar_rule(np.add, lambda a, b, y: (1.0, 1.0))
    a = np.ones((2, 3))
    _, ydot = rules.frule((NoTangent(), 1.0, ZeroTangent()), np.add, a, 1.0)  # type: ignore[misc]
    assert ydot.shape == (2, 3)
    assert ydot.flags.writeable


def test_non_differentiable_rules(rules: RuleSet) -> None:
    rules.non_differentiable(np.argmax)
    y, pullback = rules.rrule(np.argmax, np.array([1.0, 3.0, 2.0]), axis=0)  # type: ignore[misc]
    assert y == 1
    assert pullback(1.0) == (NoTangent(), NoTangent())
    y2, ydot = rules.frule((NoTangent(), np.ones(3)), np.argmax, np.array([1.0, 3.0]))  # type: ignore[misc]
    assert (y2, ydot) == (1, NoTangent())
    info = rules.rules(kind="non_differentiable")[0]
    assert info.name == "argmax"
    assert info.module == HERE


# --------------------------------------------------------------------------------------------
# Bad registrations
# --------------------------------------------------------------------------------------------

NOT_CALLABLE = (
    r"a rule is registered for a function \(or a tuple of functions such as broadcasted, f\), "
)


@pytest.mark.parametrize(
    ("register", "message"),
    [
        pytest.param(
            lambda r: r.register_rrule(3),
            rf"^register_rrule\(3\): {NOT_CALLABLE}got 3 \(int\), which is not callable$",
            id="rrule-non-callable-key",
        ),
        pytest.param(
            lambda r: r.register_frule(broadcasted_stub, "sin"),
            rf"^register_frule\(broadcasted_stub, 'sin'\): {NOT_CALLABLE}got 'sin' \(str\), "
            r"which is not callable$",
            id="frule-non-callable-in-tuple-key",
        ),
        pytest.param(
            lambda r: r.register_rrule(),
            r"^register_rrule\(\) needs the function the rule is for, e\.g\. "
            r"register_rrule\(np\.sin\)$",
            id="empty-key",
        ),
        pytest.param(
            lambda r: r.register_rrule(UnhashableCallable()),
            r"^register_rrule\(<.*UnhashableCallable object at .*>\): a rule's key must be "
            r"hashable, got <.*> \(UnhashableCallable\)$",
            id="unhashable-key",
        ),
        pytest.param(
            lambda r: r.register_rrule(np.sin)(3),
            r"^register_rrule\(sin\): the rule must be callable, got 3 \(int\)$",
            id="non-callable-rrule",
        ),
        pytest.param(
            lambda r: r.register_frule(broadcasted_stub, np.sin)(None),
            r"^register_frule\(broadcasted_stub\(sin\)\): the rule must be callable, got None "
            r"\(NoneType\)$",
            id="non-callable-frule",
        ),
        pytest.param(
            lambda r: r.scalar_rule(np.sin, 3),
            r"^scalar_rule\(sin, partials\): partials must be callable, got 3 \(int\)$",
            id="non-callable-partials",
        ),
        pytest.param(
            lambda r: r.scalar_rule(2.0, lambda x, y: x),
            rf"^scalar_rule\(2\.0\): {NOT_CALLABLE}got 2\.0 \(float\), which is not callable$",
            id="non-callable-scalar-function",
        ),
        pytest.param(
            lambda r: r.non_differentiable([1]),
            rf"^non_differentiable\(\[1\]\): {NOT_CALLABLE}got \[1\] \(list\), which is not",
            id="non-callable-non-differentiable",
        ),
    ],
)
def test_bad_registrations_say_what_is_wrong(
    rules: RuleSet, register: Callable[[RuleSet], Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        register(rules)
    assert rules.rules() == []


def test_partials_with_the_wrong_count_fail_on_first_use(rules: RuleSet) -> None:
    rules.scalar_rule(np.sin, lambda x, y: (np.cos(x), 1.0))  # registering cannot know
    expected = (
        rf"^the partials of scalar rule sin \(registered in {HERE}\) returned 2 partials for 1 "
        r"argument; partials\(\*args, y\) must return one partial per argument$"
    )
    with pytest.raises(TypeError, match=expected):
        rules.derivatives_given_output(np.sin(1.0), np.sin, 1.0)
    _, pullback = rules.rrule(np.sin, 1.0)  # type: ignore[misc]
    with pytest.raises(TypeError, match=expected):
        pullback(1.0)
    with pytest.raises(TypeError, match=expected):
        rules.frule((NoTangent(), 1.0), np.sin, 1.0)


def test_partials_must_be_a_tuple_for_several_arguments(rules: RuleSet) -> None:
    rules.scalar_rule(np.hypot, lambda a, b, y: a / y)
    with pytest.raises(
        TypeError,
        match=rf"^the partials of scalar rule hypot \(registered in {HERE}\) returned a value "
        r"of type float for 2 arguments; partials\(\*args, y\) must return a tuple with one "
        r"partial per argument$",
    ):
        rules.derivatives_given_output(5.0, np.hypot, 3.0, 4.0)
    rules.scalar_rule(np.add, lambda a, b, y: [1.0])
    with pytest.raises(TypeError, match=r"returned 1 partial for 2 arguments; partials"):
        rules.derivatives_given_output(2.0, np.add, 1.0, 1.0)


def test_partials_that_are_not_elementwise_are_named(rules: RuleSet) -> None:
    # numpy's "operands could not be broadcast together with shapes (4,) (5,)" named no rule
    rules.scalar_rule(np.multiply, lambda a, b, y: (np.ones(5), a))
    x = np.linspace(0.2, 1.0, 4)
    _, pullback = rules.rrule(np.multiply, x, x)  # type: ignore[misc]
    expected = (
        rf"^the partials of scalar rule multiply \(registered in {HERE}\) returned shape "
        r"\(5,\) for args\[0\] where the output has shape \(4,\); partials must be elementwise$"
    )
    with pytest.raises(TypeError, match=expected):
        pullback(np.ones(4))
    with pytest.raises(TypeError, match=expected):
        rules.frule((NoTangent(), np.ones(4), np.ones(4)), np.multiply, x, x)


def test_scalar_frule_needs_one_tangent_per_argument_plus_f(rules: RuleSet) -> None:
    rules.scalar_rule(np.add, lambda a, b, y: (1.0, 1.0))
    with pytest.raises(
        TypeError,
        match=r"^frule for add: got 2 tangents for 2 arguments; pass \(fdot, xdot_1, ..., "
        r"xdot_n\)$",
    ):
        rules.frule((1.0, 1.0), np.add, 1.0, 2.0)


def test_scalar_rules_refuse_tangents_of_the_wrong_shape(rules: RuleSet) -> None:
    # the pullback summed a (2, 3) cotangent of a (3,) output silently; the frule failed with
    # numpy's "input operand has more dimensions than allowed by the axis remapping"
    rules.scalar_rule(np.sin, lambda x, y: np.cos(x))
    _, pullback = rules.rrule(np.sin, np.ones(3))  # type: ignore[misc]
    with pytest.raises(
        ValueError,
        match=r"^pullback of sin: the output cotangent has shape \(2, 3\), the output has "
        r"shape \(3,\)$",
    ):
        pullback(np.ones((2, 3)))
    assert pullback(2.0)[1].shape == (3,)  # a cotangent that broadcasts to the output is fine
    with pytest.raises(
        ValueError,
        match=r"^frule for sin: the tangent of args\[0\] has shape \(2, 3\), args\[0\] has "
        r"shape \(3,\)$",
    ):
        rules.frule((NoTangent(), np.ones((2, 3))), np.sin, np.ones(3))


def test_a_scalar_cotangent_with_constant_partials_reaches_every_element(rules: RuleSet) -> None:
    # ybar * partial was a scalar here (a scalar ybar, a constant partial), and unbroadcast
    # refused it: "cannot unbroadcast a cotangent of shape () to its primal's shape (3,)"
    rules.scalar_rule(np.add, lambda a, b, y: (1.0, 1.0))
    rules.scalar_rule(np.negative, lambda x, y: -1.0)
    rules.scalar_rule(np.modf, lambda x, y: (1.0, 0.0))
    _, pullback = rules.rrule(np.add, np.ones((2, 3)), 1.0)  # type: ignore[misc]
    _, abar, bbar = pullback(2.0)
    np.testing.assert_array_equal(abar, np.full((2, 3), 2.0))
    assert abar.flags.writeable
    assert bbar == 12.0
    assert type(bbar) is float
    _, pullback = rules.rrule(np.negative, np.ones((2, 3)))  # type: ignore[misc]
    np.testing.assert_array_equal(pullback(np.ones(3))[1], -np.ones((2, 3)))
    _, pullback = rules.rrule(np.modf, np.full(3, 1.5))  # type: ignore[misc]
    np.testing.assert_array_equal(pullback((2.0, 1.0))[1], np.full(3, 2.0))
    with pytest.raises(
        ValueError,
        match=r"^pullback of modf \(output 0\): the output cotangent has shape \(4,\), the "
        r"output has shape \(3,\)$",
    ):
        pullback((np.ones(4), np.ones(4)))  # was numpy's "operands could not be broadcast"


def test_derivatives_given_output_without_a_scalar_rule(rules: RuleSet) -> None:
    assert rules.derivatives_given_output(1.0, np.sin, 0.0) is None
    rules.register_rrule(np.sin)(_rrule_returning("s"))
    assert rules.derivatives_given_output(1.0, np.sin, 0.0) is None


def test_partials_that_forget_the_output_are_refused_at_registration(rules: RuleSet) -> None:
    def sin_partials(x: Any) -> Any:
        return np.cos(x)

    with pytest.raises(
        TypeError,
        match=r"^scalar_rule\(sin, partials\): partials must take the function's arguments and "
        r"then its output, partials\(\*args, y\); .*sin_partials\(x: 'Any'\) -> 'Any' cannot take "
        r"two "
        r"arguments$",
    ):
        rules.scalar_rule(np.sin, sin_partials)
    assert rules.rules() == []


def test_partials_with_too_few_parameters_fail_clearly_on_use(rules: RuleSet) -> None:
    rules.scalar_rule(np.hypot, lambda a, y: (a / y, 0.0))  # fine for one argument, not two
    with pytest.raises(
        TypeError,
        match=rf"^the partials of scalar rule hypot \(registered in {HERE}\) cannot be called "
        r"with 2 arguments and the output; partials\(\*args, y\) takes the function's "
        r"arguments, then its output y$",
    ):
        rules.derivatives_given_output(5.0, np.hypot, 3.0, 4.0)


def test_errors_inside_partials_propagate_unchanged(rules: RuleSet) -> None:
    def broken(x: Any, y: Any) -> Any:
        raise TypeError("bug inside the partials")

    rules.scalar_rule(np.sin, broken)
    with pytest.raises(TypeError, match=r"^bug inside the partials$"):
        rules.derivatives_given_output(0.0, np.sin, 0.0)


def test_pullback_computes_the_partials_once(rules: RuleSet) -> None:
    calls: list[int] = []

    def partial(x: Any, y: Any) -> Any:
        calls.append(1)
        return np.cos(x)

    rules.scalar_rule(np.sin, partial)
    _, pullback = rules.rrule(np.sin, XS)  # type: ignore[misc]
    first, second = pullback(YBAR)[1], pullback(2 * YBAR)[1]
    np.testing.assert_allclose(second, 2 * first)
    assert calls == [1]
