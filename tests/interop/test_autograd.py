"""The autograd adapters: raw ``defvjp``/``defjvp`` makers, ``make_vjp``/``make_jvp``, complex."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from rruletest import NoTangent, ZeroTangent, with_tangent
from rruletest.interop import InteropError, NoRuleError
from rruletest.interop import autograd as rautograd

from ._numeric import (
    WRONG_RULE_LINES,
    assert_adjoint,
    assert_one_element_off_is_caught,
    assert_rrule_fails,
    close,
    complex_arrays,
    numeric_jvp,
    numeric_vjp,
)

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
extend = pytest.importorskip("autograd.extend")

RNG = np.random.default_rng(2)
X = RNG.uniform(-2, 2, (3, 2))
W = RNG.uniform(-2, 2, (1, 2))


def make_scaled_sin(vjp_x: Any = None, vjp_w: Any = None, with_jvp: bool = True) -> Any:
    """``sin(x) * w`` as an autograd primitive; either VJP can be swapped for a wrong one."""

    @extend.primitive
    def scaled_sin(x: Any, w: Any) -> Any:
        return np.sin(x) * w

    def right_x(ans: Any, x: Any, w: Any) -> Any:
        return lambda g: g * np.cos(x) * w

    def right_w(ans: Any, x: Any, w: Any) -> Any:
        return lambda g: np.sum(g * np.sin(x), axis=0, keepdims=True)

    extend.defvjp(scaled_sin, vjp_x or right_x, vjp_w or right_w)
    if with_jvp:
        extend.defjvp(
            scaled_sin,
            lambda g, ans, x, w: g * np.cos(x) * w,
            lambda g, ans, x, w: np.sin(x) * g,
        )
    return scaled_sin


def test_primitive_pullback_matches_finite_differences() -> None:
    f = rautograd.from_primitive(make_scaled_sin())
    ybar = RNG.uniform(-1, 1, X.shape)
    y, pullback = f.rrule(f, X, W)
    np.testing.assert_allclose(y, np.sin(X) * W, rtol=1e-15)
    fbar, xbar, wbar = pullback(ybar)
    assert fbar == NoTangent()
    close(xbar, numeric_vjp(f, (X, W), ybar, 0))
    close(wbar, numeric_vjp(f, (X, W), ybar, 1))
    assert (wbar.shape, wbar.dtype) == ((1, 2), np.float64)


def test_raw_vjp_output_is_not_fixed_up() -> None:
    no_sum = rautograd.from_primitive(
        make_scaled_sin(vjp_w=lambda ans, x, w: lambda g: g * np.sin(x))
    )
    assert no_sum.rrule(no_sum, X, W)[1](np.ones_like(X))[2].shape == (3, 2)
    f32 = rautograd.from_primitive(
        make_scaled_sin(vjp_x=lambda ans, x, w: lambda g: (g * np.cos(x) * w).astype(np.float32))
    )
    assert f32.rrule(f32, X, W)[1](np.ones_like(X))[1].dtype == np.float32


def test_vjp_is_called_on_every_pullback_call() -> None:
    f = rautograd.from_primitive(make_scaled_sin(vjp_x=accumulating()))
    _, pullback = f.rrule(f, X, W)
    first, second = pullback(np.ones_like(X))[1], pullback(np.ones_like(X))[1]
    np.testing.assert_allclose(second, 2 * first)


def test_argument_without_a_vjp_maker_is_no_rule_not_notangent(testers: Any) -> None:
    @extend.primitive
    def shift(x: Any, s: Any) -> Any:
        return x + s

    extend.defvjp(shift, lambda ans, x, s: lambda g: g)
    f = rautograd.from_primitive(shift)
    with pytest.raises(NoRuleError, match=r"^no rule for args\[1\]: .* of shift") as info:
        f.rrule(f, X, 0.5)[1](np.ones_like(X))
    assert (info.value.path, info.value.function) == ("args[1]", "shift")
    with pytest.raises(AssertionError, match=r"raised NoRuleError: no rule for args\[1\]"):
        testers.test_rrule(f, X, 0.5, rrule_f=f.rrule, rng=0)
    with pytest.raises(InteropError, match="has no JVP"):
        f.frule((NoTangent(), X, 0.1), f, X, 0.5)


def test_primitive_frule_calls_the_jvp_makers() -> None:
    f = rautograd.from_primitive(make_scaled_sin())
    dx, dw = RNG.uniform(-1, 1, X.shape), RNG.uniform(-1, 1, W.shape)
    _, ydot = f.frule((NoTangent(), dx, dw), f, X, W)
    close(ydot, numeric_jvp(f, (X, W), (dx, dw)))
    _, ydot_x = f.frule((NoTangent(), dx, ZeroTangent()), f, X, W)
    close(ydot_x, dx * np.cos(X) * W)
    _, zero = f.frule((NoTangent(), ZeroTangent(), NoTangent()), f, X, W)
    np.testing.assert_array_equal(zero, np.zeros_like(X))


def test_function_rrule_frule_and_integers() -> None:
    def fn(x: Any, w: Any, n: Any) -> Any:
        return anp.tanh(x) * w * n

    f = rautograd.from_function(fn)
    n = np.array([2, 3])
    ybar = RNG.uniform(-1, 1, X.shape)
    _, xbar, wbar, nbar = f.rrule(f, X, W, n)[1](ybar)
    assert nbar == NoTangent()
    close(xbar, numeric_vjp(f, (X, W, n), ybar, 0))
    close(wbar, numeric_vjp(f, (X, W, n), ybar, 1))
    dx = RNG.uniform(-1, 1, X.shape)
    _, ydot = f.frule((NoTangent(), dx, None, NoTangent()), f, X, W, n)
    close(ydot, numeric_jvp(f, (X, W, n), (dx, None, None)))


@pytest.mark.parametrize(
    "fn",
    [anp.sin, lambda z: anp.abs(z) ** 2, lambda z: anp.exp(anp.conj(z))],
    ids=["sin", "abs2", "exp-conj"],
)
@pytest.mark.parametrize("how", ["wrap", "function"])
def test_complex_rules_in_autograd_convention_match_rruletest_convention(fn: Any, how: str) -> None:
    z = RNG.uniform(-1, 1, 4) + 1j * RNG.uniform(-1, 1, 4)
    f = rautograd.wrap(fn) if how == "wrap" else rautograd.from_function(fn)
    y = f(z)
    ybar = RNG.uniform(-1, 1, y.shape) + (
        1j * RNG.uniform(-1, 1, y.shape) if y.dtype.kind == "c" else 0
    )
    (zbar,) = f.rrule(f, z)[1](ybar)[1:]
    close(zbar, numeric_vjp(f, (z,), ybar, 0))


def test_wrap_and_misuse() -> None:
    assert isinstance(rautograd.wrap(anp.sin), rautograd.AutogradPrimitive)
    assert isinstance(rautograd.wrap(lambda x: x), rautograd.AutogradFunction)
    with pytest.raises(InteropError, match=r"made with autograd\.extend\.primitive"):
        rautograd.from_primitive(np.sin)
    with pytest.raises(InteropError, match="has no rule yet"):
        rautograd.from_primitive(extend.primitive(lambda x: x))


@functools.cache
def adjoint_adapter() -> Any:
    return rautograd.from_function(lambda z: anp.sin(z) * anp.conj(z) + anp.abs(z))


@settings(max_examples=25)
@given(complex_arrays())
def test_pullback_is_the_adjoint_of_the_pushforward_for_complex_inputs(zs: Any) -> None:
    """<pullback(ybar), dz> == <ybar, jvp(dz)> under rruletest's inner product, for all inputs."""
    assert_adjoint(adjoint_adapter(), zs)


# -- acceptance: rruletest's testers on autograd rules ------------------------------------------


def one_element_off(ans: Any, x: Any, w: Any) -> Any:
    def vjp(g: Any) -> Any:
        out = g * np.cos(x) * w
        out[617, 0] *= 1.001
        return out

    return vjp


def accumulating() -> Any:
    calls = []

    def maker(ans: Any, x: Any, w: Any) -> Any:
        def vjp(g: Any) -> Any:
            calls.append(1)
            return g * np.cos(x) * w * len(calls)

        return vjp

    return maker


def test_correct_rules_pass_test_rrule_and_test_frule(testers: Any) -> None:
    f = rautograd.from_primitive(make_scaled_sin())
    testers.test_rrule(f, X, W, rrule_f=f.rrule, rng=0)
    testers.test_frule(f, X, W, frule_f=f.frule, rng=0)
    z = RNG.uniform(-1, 1, 3) + 1j * RNG.uniform(-1, 1, 3)
    for fn in (anp.sin, lambda z: anp.abs(z) ** 2):
        rautograd.wrap(fn).test_rrule(z, rng=0)
    g = rautograd.from_function(lambda x, w: anp.tanh(x) * w)
    g.test_rrule(X, W, rng=0)
    g.test_frule(X, W, rng=0)
    s = rautograd.from_function(anp.sin)
    testers.test_scalar(s, 0.5, rrule_f=s.rrule, frule_f=s.frule, rng=0)


WRONG_RULES: dict[str, dict[str, Any]] = {
    "no-unbroadcast": {"vjp_w": lambda ans, x, w: lambda g: g * np.sin(x)},
    "float32": {"vjp_x": lambda ans, x, w: lambda g: (g * np.cos(x) * w).astype(np.float32)},
    "accumulates": {"vjp_x": accumulating()},
}


@pytest.mark.parametrize("kind", WRONG_RULE_LINES)
def test_wrong_rules_fail_with_rruletest_messages(testers: Any, kind: str) -> None:
    f = rautograd.from_primitive(make_scaled_sin(**WRONG_RULES[kind]))
    head = "test_rrule(scaled_sin, float64[3, 2], float64[1, 2]) failed"
    assert_rrule_fails(testers, f, (X, W), head, WRONG_RULE_LINES[kind])


def test_one_element_off_by_a_thousandth_in_ten_thousand_is_caught(testers: Any) -> None:
    wrong, right = make_scaled_sin(vjp_x=one_element_off), make_scaled_sin()
    assert_one_element_off_is_caught(rautograd.from_primitive, wrong, right, W)


def test_tuple_arguments_are_differentiated() -> None:
    f = rautograd.from_function(lambda p, x: p[0] * x + p[1])
    p, x = (2.0, 1.0), np.linspace(0, 1, 4)
    _, pbar, xbar = f.rrule(f, p, x)[1](np.ones(4))
    assert (float(pbar[0]), float(pbar[1])) == pytest.approx((x.sum(), 4.0))
    np.testing.assert_allclose(xbar, np.full(4, 2.0))
    _, ydot = f.frule((NoTangent(), (1.0, ZeroTangent()), None), f, p, x)
    np.testing.assert_allclose(ydot, x)


# -- what autograd gives users, reported as the framework's -------------------------------------


def test_sparse_cotangents_of_indexing_are_made_dense() -> None:
    """autograd's indexing VJP returns a ``SparseObject``; it reaches the tester as the dense
    array it stands for, repeated indices summed."""
    getitem = rautograd.from_primitive(anp.numpy_boxes.ArrayBox.__getitem__, name="getitem")
    x = np.linspace(0.5, 2.0, 4)
    idx = np.array([0, 2, 0])
    _, pullback = getitem.rrule(getitem, x, idx)
    (_, xbar, ibar) = pullback(np.array([1.0, 2.0, 3.0]))
    assert (type(xbar), xbar.dtype, ibar) == (np.ndarray, np.float64, NoTangent())
    np.testing.assert_array_equal(xbar, [4.0, 0.0, 2.0, 0.0])
    assert getitem.test_rrule(x, idx, rng=0).worst_rel_err < 1e-9
    assert getitem.test_rrule(x, slice(1, 3), rng=0).worst_rel_err < 1e-9


def test_float32_promoted_by_autograds_mean_is_shown_not_hidden(testers: Any) -> None:
    """``autograd.grad(np.mean)`` gives a float64 gradient for a float32 input: the user gets
    it, so the tester sees it (one ``make_vjp`` per argument, as ``autograd.grad`` runs)."""
    x = np.array([0.3, 0.7, 1.2], np.float32)
    vjp, _ = autograd.make_vjp(anp.mean)(x)
    assert vjp(np.float32(1.0)).dtype == np.float64  # what a user gets
    for fn in (anp.mean, anp.var):
        f = rautograd.from_function(fn)
        with pytest.raises(AssertionError) as info:
            f.test_rrule(x, rng=0)
        assert "[type] args[0]: dtype float64 for a float32 primal" in str(info.value)
        assert "[numeric]" not in str(info.value)


def test_a_wrong_shape_is_reported_as_the_rules_not_raised() -> None:
    """Differentiating all arguments at once made autograd add a (3, 2) cotangent into a
    (1, 2) slot and raise; one argument at a time, the wrong shape comes back as it is."""
    f = rautograd.from_function(make_scaled_sin(vjp_w=lambda ans, x, w: lambda g: g * np.sin(x)))
    _, _, wbar = f.rrule(f, X, W)[1](np.ones_like(X))
    assert wbar.shape == (3, 2)
    with pytest.raises(AssertionError, match=r"\[type\] args\[1\]: shape \(3, 2\)"):
        f.test_rrule(X, W, rng=0)


def test_no_vjp_for_an_argument_is_reported_as_no_rule(testers: Any) -> None:
    """``np.clip`` has a VJP for ``x`` only: the pullback says "no rule for args[1]" (it read
    ``NoTangent()`` before, so the report compared that with the derivative)."""
    x = np.array([-0.5, 0.2, 0.9, 1.7])
    for f in (rautograd.from_primitive(anp.clip), rautograd.from_function(anp.clip)):
        with pytest.raises(AssertionError) as info:
            testers.test_rrule(f, x, 0.0, 1.0, rrule_f=f.rrule, rng=0)
        message = str(info.value)
        assert "raised NoRuleError: no rule for args[1]: the framework has no derivative of " in (
            message
        )
        assert "NoTangent()" in message  # the way out is named
        assert "actual" not in message


def test_the_rules_own_nondiff_arguments_reach_the_tester() -> None:
    """The adapter's ``test_rrule`` passes ``a_min``, ``a_max`` (no VJP) as not differentiated
    and says why; ``with_tangent(x, NoTangent())`` there reaches autograd too."""
    x = np.array([-0.5, 0.2, 0.9, 1.7])
    for f in (rautograd.from_primitive(anp.clip), rautograd.from_function(anp.clip)):
        report = f.test_rrule(x, 0.0, 1.0, rng=0)
        assert report.not_checked == ("args[1]", "args[2]")
        assert any(
            n.startswith("args[1]: not differentiated by the rule (the framework has no")
            for n in report.notes
        )
    g = rautograd.from_function(lambda x, s: anp.sin(x) * s)
    report = g.test_rrule(x, with_tangent(2.0, NoTangent()), rng=0)
    assert report.not_checked == ("args[1]",)


def test_a_function_with_no_rule_at_all_fails() -> None:
    x = np.array([0.3, 0.7], np.float64)
    with pytest.raises(AssertionError, match=r"no rule for args\[0\].*cbrt"):
        rautograd.from_function(anp.cbrt).test_rrule(x, rng=0)
    with pytest.raises(AssertionError, match=r"no rule for args\[0\]"):
        rautograd.from_function(anp.linalg.eigh).test_frule(np.eye(2) * 2.0, rng=0)


def test_domain_keeps_the_finite_differences_inside(testers: Any) -> None:
    x = np.array([1e-7, 2.0])
    inside = rautograd.from_primitive(anp.log, domain="(0, inf)")
    for report in (
        inside.test_rrule(x, rng=0),
        testers.test_rrule(inside, x, rrule_f=inside.rrule),
    ):
        assert any("max_range=9e-08" in n for n in report.notes)
    plain = rautograd.from_primitive(anp.log)
    assert any("max_range=inf" in n for n in plain.test_rrule(x, rng=0).notes)


def test_test_rrule_returns_the_report(testers: Any) -> None:
    f = rautograd.from_primitive(make_scaled_sin())
    report = f.test_rrule(X, W, rng=0)
    same = testers.test_rrule(f, X, W, rrule_f=f.rrule, rng=0)
    assert (report.tester, report.function, report.pullback_calls) == (
        "test_rrule",
        "scaled_sin",
        4,
    )
    assert (report.worst_rel_err, report.seed) == (same.worst_rel_err, same.seed)
    assert f.test_frule(X, W, rng=0).tester == "test_frule"


# -- the two wrong rules found in autograd's numpy VJPs -----------------------------------------


def _worst(actual: Any, expected: Any) -> str:
    """How the report names the worst element: ``max abs diff 4.6 at [1, 0]``."""
    diff = np.abs(actual - expected)
    at = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return f"max abs diff {float(diff[at]):.3g} at [{', '.join(str(int(i)) for i in at)}]"


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "right"),
    [
        pytest.param(
            anp.repeat,
            (2,),
            {"axis": -1},
            lambda g: g.reshape(2, 3, 2).sum(-1),
            id="repeat-axis-1",
        ),
        pytest.param(anp.tile, (2,), {}, lambda g: g.reshape(2, 2, 3).sum(1), id="tile"),
    ],
)
def test_autograds_wrong_repeat_and_tile_rules_are_caught(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], right: Any
) -> None:
    x = np.arange(1.0, 7.0).reshape(2, 3) / 4
    f = rautograd.from_primitive(fn)
    y = f(x, *args, **kwargs)
    ybar = np.random.default_rng(3).uniform(-2, 2, y.shape).round(2)
    actual = f.rrule(f, x, *args, **kwargs)[1](ybar)[1]
    with pytest.raises(AssertionError) as info:
        f.test_rrule(x, *args, fkwargs=kwargs, output_tangent=ybar, rng=0)
    message = str(info.value)
    shown = [f"fkwargs={kwargs!r}"] if kwargs else []  # f's keywords, as the tester takes them
    call = ", ".join(["float64[2, 3]", *map(repr, args), *shown])
    assert message.startswith(f"test_rrule({fn.__name__}, {call}) failed")
    assert "[numeric] args[0]: the cotangent differs from the numerical vjp" in message
    assert _worst(actual, right(ybar)) in message
    assert "[numeric] args[1]" not in message


def test_no_jvp_for_an_argument_is_no_rule_in_forward_mode_too(testers: Any) -> None:
    x = np.array([-0.5, 0.2, 0.9, 1.7])
    for f in (rautograd.from_primitive(anp.clip), rautograd.from_function(anp.clip)):
        with pytest.raises(AssertionError, match=r"raised NoRuleError: no rule for args\[1\]"):
            testers.test_frule(f, x, 0.0, 1.0, frule_f=f.frule, rng=0)
        assert f.test_frule(x, 0.0, 1.0, rng=0).not_checked == ("args[1]", "args[2]")


def test_a_function_returning_a_plain_tuple_is_differentiated_element_by_element(
    testers: Any,
) -> None:
    """autograd traces only boxed outputs: a plain tuple of boxes read as independent of the
    input (zero cotangents, ArrayBoxes in y). The adapter returns it as autograd's own
    container, so each element keeps its own rule, right or wrong."""
    import collections

    Pair = collections.namedtuple("Pair", "s c")
    f = rautograd.from_function(lambda x: Pair(anp.sin(x), anp.cos(x)), name="pair")
    y, pullback = f.rrule(f, X)
    assert type(y) is Pair
    np.testing.assert_array_equal(y.c, np.cos(X))
    ones = np.ones_like(X)
    np.testing.assert_allclose(pullback((ones, ones))[1], np.cos(X) - np.sin(X), rtol=1e-14)
    f.test_rrule(X, rng=0)
    f.test_frule(X, rng=0)
    g = rautograd.from_function(lambda x, w: [make_scaled_sin()(x, w), x * 2.0], name="pair")
    g.test_rrule(X, W, rng=0)

    def off(ans: Any, x: Any, w: Any) -> Any:
        return lambda g: 1.001 * np.sum(g * np.sin(x), axis=0, keepdims=True)

    wrong = make_scaled_sin(vjp_w=off)
    h = rautograd.from_function(lambda x, w: (x * 2.0, wrong(x, w)), name="pair")
    with pytest.raises(AssertionError, match=r"\[numeric\] args\[1\]"):
        h.test_rrule(X, W, rng=0)


def test_a_function_returning_a_dict_is_differentiated(testers: Any) -> None:
    f = rautograd.from_function(lambda x: {"s": anp.sin(x), "c": anp.cos(x)}, name="sincos")
    y, pullback = f.rrule(f, X)
    assert sorted(y) == ["c", "s"]
    np.testing.assert_allclose(pullback({"c": np.ones_like(X)})[1], -np.sin(X), rtol=1e-14)
    f.test_rrule(X, rng=0)
    # autograd's forward mode has no JVP for building a dict: said as no rule.
    with pytest.raises(AssertionError, match=r"no rule for args\[0\].*_make_dict"):
        f.test_frule(X, rng=0)
