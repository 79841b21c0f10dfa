"""The jax adapters: raw ``custom_vjp``/``custom_jvp`` rules, ``jax.vjp``/``jvp``, x64, complex."""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from rruletest import NoTangent, Tangent, ZeroTangent, with_tangent
from rruletest.interop import InteropError
from rruletest.interop import jax as rjax

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

jax = pytest.importorskip("jax")
jnp = jax.numpy

RNG = np.random.default_rng(1)
X = RNG.uniform(-2, 2, (3, 2))
W = RNG.uniform(-2, 2, (1, 2))


# -- rules under test ---------------------------------------------------------------------------


def make_scaled_sin(bwd_x: Any = None, bwd_w: Any = None) -> Any:
    """``sin(x) * w`` with a custom_vjp; each half of bwd can be swapped for a wrong one."""

    @jax.custom_vjp
    def scaled_sin(x: Any, w: Any) -> Any:
        return jnp.sin(x) * w

    def fwd(x: Any, w: Any) -> Any:
        return scaled_sin(x, w), (x, w)

    def bwd(res: Any, g: Any) -> Any:
        x, w = res
        gx = g * jnp.cos(x) * w if bwd_x is None else bwd_x(x, w, g)
        gw = jnp.sum(g * jnp.sin(x), axis=0, keepdims=True) if bwd_w is None else bwd_w(x, w, g)
        return gx, gw

    scaled_sin.defvjp(fwd, bwd)
    return scaled_sin


# -- custom_vjp, raw ---------------------------------------------------------------------------


def test_custom_vjp_pullback_matches_finite_differences() -> None:
    f = rjax.from_custom_vjp(make_scaled_sin())
    ybar = RNG.uniform(-1, 1, X.shape)
    y, pullback = f.rrule(f, X, W)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, np.sin(X) * W, rtol=1e-15)
    fbar, xbar, wbar = pullback(ybar)
    assert fbar == NoTangent()
    close(xbar, numeric_vjp(f, (X, W), ybar, 0))
    close(wbar, numeric_vjp(f, (X, W), ybar, 1))
    assert (wbar.shape, wbar.dtype) == ((1, 2), np.float64)


def test_raw_bwd_output_is_not_fixed_up() -> None:
    no_sum = rjax.from_custom_vjp(make_scaled_sin(bwd_w=lambda x, w, g: g * jnp.sin(x)))
    assert no_sum.rrule(no_sum, X, W)[1](np.ones_like(X))[2].shape == (3, 2)
    f32 = rjax.from_custom_vjp(
        make_scaled_sin(bwd_x=lambda x, w, g: (g * jnp.cos(x) * w).astype(jnp.float32))
    )
    assert f32.rrule(f32, X, W)[1](np.ones_like(X))[1].dtype == np.float32


def test_bwd_is_called_on_every_pullback_call() -> None:
    f = rjax.from_custom_vjp(make_scaled_sin(bwd_x=accumulating()))
    _, pullback = f.rrule(f, X, W)
    first, second = pullback(np.ones_like(X))[1], pullback(np.ones_like(X))[1]
    np.testing.assert_allclose(second, 2 * first)


def test_nondiff_argnums_integers_and_tuple_outputs() -> None:
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def power_and_double(x: Any, n: int, k: Any) -> Any:
        return x**n, k * 2

    def fwd(x: Any, n: int, k: Any) -> Any:
        return power_and_double(x, n, k), x

    def bwd(n: int, x: Any, g: Any) -> Any:
        gp, _ = g
        return n * x ** (n - 1) * gp, None

    power_and_double.defvjp(fwd, bwd)
    f = rjax.from_custom_vjp(power_and_double)
    assert f.nondiff_argnums == (1,)
    x, k = np.array([1.0, 2.0]), np.array([3, 4])
    (p, d), pullback = f.rrule(f, x, 3, k)
    np.testing.assert_array_equal(p, [1.0, 8.0])
    np.testing.assert_array_equal(d, [6, 8])
    _, xbar, nbar, kbar = pullback(Tangent(tuple, np.ones(2), NoTangent()))
    np.testing.assert_array_equal(xbar, [3.0, 12.0])
    assert (nbar, kbar) == (NoTangent(), NoTangent())
    # A zero cotangent for the float output reaches bwd as zeros.
    np.testing.assert_array_equal(pullback((ZeroTangent(), NoTangent()))[1], [0.0, 0.0])


def test_jit_around_custom_vjp_is_looked_through() -> None:
    f = rjax.wrap(jax.jit(make_scaled_sin()))
    assert isinstance(f, rjax.JaxCustomVJP)
    close(f.rrule(f, X, W)[1](np.ones_like(X))[1], np.cos(X) * W)


def test_custom_vjp_has_no_frule() -> None:
    f = rjax.from_custom_vjp(make_scaled_sin())
    with pytest.raises(InteropError, match="cannot differentiate in forward mode"):
        f.frule((NoTangent(), X, W), f, X, W)


# -- 64-bit mode -------------------------------------------------------------------------------


def test_float64_is_never_downcast_and_the_mode_is_set_once() -> None:
    f = rjax.from_function(lambda x: jnp.sin(x) * 2.0)
    assert jax.config.jax_enable_x64
    assert f(X).dtype == np.float64
    assert f(X.astype(np.float32)).dtype == np.float32
    assert f(np.complex128(1j)).dtype == np.complex128
    (xbar,) = f.rrule(f, X)[1](np.ones_like(X))[1:]
    assert xbar.dtype == np.float64
    close(xbar, 2 * np.cos(X))
    assert jax.config.jax_enable_x64
    with pytest.raises(InteropError, match="x64='yes'"):
        rjax.from_function(jnp.sin, x64="yes")  # type: ignore[arg-type]


def run_fresh(code: str) -> str:
    """``code`` run in a new interpreter (jax's mode is the process's), its standard output."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_x64_false_leaves_the_mode_alone_and_refuses_to_downcast() -> None:
    out = run_fresh(
        """
        import numpy as np, jax.numpy as jnp, jax
        from rruletest.interop import jax as rjax
        f = rjax.from_function(jnp.sin, x64=False)
        print(f(np.ones(2, np.float32)).dtype, jax.config.jax_enable_x64)
        for args in [(np.ones(2),), (np.arange(4.0, dtype=np.float32), np.array([2**40]))]:
            g = f if len(args) == 1 else rjax.from_function(lambda x, i: x[i], x64=False)
            try:
                g(*args)
            except rjax.PrecisionError as exc:
                print(exc)
        """
    )
    assert out.splitlines()[0] == "float32 False"
    assert "jax would turn args[0] from float64 into float32 with jax's 64-bit mode off" in out
    assert "args[1] from int64 into int32" in out


def test_results_do_not_depend_on_test_order() -> None:
    """A float32 ``owens_t`` failed after a float64 one when the mode was switched per call."""
    code = """
        import numpy as np
        from jax.scipy.special import owens_t
        from rruletest.interop import jax as rjax
        f = rjax.from_function(owens_t)
        h, a = np.array([0.3, 1.2]), np.array([0.5, 2.0])
        for dtype in {order}:
            r = f.test_rrule(h.astype(dtype), a.astype(dtype), rng=0)
            print(dtype, r.worst_rel_err < 1e-2)
        """
    first = run_fresh(code.format(order="('float64', 'float32')"))
    second = run_fresh(code.format(order="('float32', 'float64')"))
    assert sorted(first.splitlines()) == sorted(second.splitlines())
    assert sorted(first.splitlines()) == ["float32 True", "float64 True"]


def test_a_float32_kernel_promoted_to_float64_is_differenced_at_float32_precision() -> None:
    """jax's float32 ``owens_t`` returns float64 values that resolve the input in steps of
    alternately 1 and 2 ulps: judged at float64 round-off, the engine took a step of 3 ulps
    and missed the derivative by 0.1% while claiming 1e-10 (the gate failed this correct rule
    in about one seed of three). Round-off is judged at the input's precision."""
    from jax.scipy.special import owens_t

    from rruletest.finite_differences.dense import dense_vjp

    f = rjax.from_function(lambda h: owens_t(h, 0.5), name="owens_t_h")
    x = np.array([[0.251, 0.501, 0.751], [0.401, 0.651, 0.901]], dtype=np.float32)
    ybar = np.zeros((2, 3))
    ybar[0, 2] = 1.0
    (est,) = dense_vjp(None, f, ybar, x)
    h = 0.751
    exact = -np.exp(-h * h / 2) / np.sqrt(2 * np.pi) * math.erf(0.5 * h / np.sqrt(2)) / 2
    assert abs(float(est.value[0, 2]) - exact) <= max(float(est.error[0, 2]), 1e-6 * abs(exact))
    assert abs(float(est.value[0, 2]) - exact) < 1e-5 * abs(exact)
    f.test_rrule(x, rng=14820586873)


# -- complex numbers ---------------------------------------------------------------------------


def holomorphic_exp() -> Any:
    """A holomorphic custom_vjp written the jax way: ``bwd = g * f'(z)``, no conj."""

    @jax.custom_vjp
    def cexp(z: Any) -> Any:
        return jnp.exp(z)

    cexp.defvjp(lambda z: (jnp.exp(z), jnp.exp(z)), lambda y, g: (g * y,))
    return cexp


def abs_squared() -> Any:
    """A real-valued function of z written the jax way: ``bwd = 2 g conj(z)``."""

    @jax.custom_vjp
    def abs2(z: Any) -> Any:
        return jnp.real(z * jnp.conj(z))

    abs2.defvjp(lambda z: (abs2(z), z), lambda z, g: (2 * g * jnp.conj(z),))
    return abs2


@pytest.mark.parametrize(
    "fn",
    [holomorphic_exp(), abs_squared(), jnp.sin, lambda z: jnp.abs(z) ** 3],
    ids=["custom-exp", "custom-abs2", "sin", "abs-cubed"],
)
def test_complex_rules_in_jax_convention_match_rruletest_convention(fn: Any) -> None:
    z = RNG.uniform(-1, 1, 4) + 1j * RNG.uniform(-1, 1, 4)
    f = rjax.wrap(fn)
    y = f(z)
    ybar = RNG.uniform(-1, 1, y.shape) + (
        1j * RNG.uniform(-1, 1, y.shape) if y.dtype.kind == "c" else 0
    )
    (zbar,) = f.rrule(f, z)[1](ybar)[1:]
    assert zbar.dtype == np.complex128
    close(zbar, numeric_vjp(f, (z,), ybar, 0))


def test_complex_output_of_real_input() -> None:
    f = rjax.from_function(lambda t: jnp.exp(1j * t))
    t = RNG.uniform(-1, 1, 3)
    ybar = RNG.uniform(-1, 1, 3) + 1j * RNG.uniform(-1, 1, 3)
    (tbar,) = f.rrule(f, t)[1](ybar)[1:]
    assert tbar.dtype == np.float64
    close(tbar, numeric_vjp(f, (t,), ybar, 0))


# -- frules ------------------------------------------------------------------------------------


def test_function_frule_and_integer_arguments() -> None:
    def fn(x: Any, w: Any, n: Any) -> Any:
        return jnp.tanh(x) * w * n, jnp.sum(n)

    f = rjax.from_function(fn)
    n = np.array([2, 3])
    dx = RNG.uniform(-1, 1, X.shape)
    y, (ydot, ndot) = f.frule((NoTangent(), dx, ZeroTangent(), NoTangent()), f, X, W, n)
    close(y[0], np.tanh(X) * W * n)
    close(ydot, numeric_jvp(lambda x: f(x, W, n)[0], (X,), (dx,)))
    assert ndot == NoTangent()
    _, _, wbar, nbar = f.rrule(f, X, W, n)[1]((np.ones_like(X), NoTangent()))
    assert nbar == NoTangent()
    close(wbar, np.sum(np.tanh(X) * n, axis=0, keepdims=True))


def make_softplus(*, wrong_sign: bool = False, calls: list[int] | None = None) -> Any:
    """``softplus`` with a ``jax.custom_jvp`` rule; ``wrong_sign`` gets the sign of ``x`` in the
    rule wrong; ``calls`` gets a 1 appended at each call of the rule."""

    @jax.custom_jvp
    def softplus(x: Any) -> Any:
        return jnp.log1p(jnp.exp(x))

    @softplus.defjvp
    def softplus_jvp(primals: Any, tangents: Any) -> Any:
        if calls is not None:
            calls.append(1)
        (x,), (dx,) = primals, tangents
        return softplus(x), dx / (1 + jnp.exp(x if wrong_sign else -x))

    return softplus


def test_custom_jvp_frule_calls_the_rule() -> None:
    calls: list[int] = []
    f = rjax.wrap(make_softplus(calls=calls))
    assert isinstance(f, rjax.JaxCustomJVP)
    dx = RNG.uniform(-1, 1, X.shape)
    _, ydot = f.frule((NoTangent(), dx), f, X)
    close(ydot, numeric_jvp(f, (X,), (dx,)))
    assert calls == [1]
    close(f.rrule(f, X)[1](np.ones_like(X))[1], 1 / (1 + np.exp(-X)))


def test_misuse() -> None:
    with pytest.raises(InteropError, match=r"decorated with jax\.custom_vjp"):
        rjax.from_custom_vjp(jnp.sin)
    with pytest.raises(InteropError, match="has no rule yet"):
        rjax.from_custom_vjp(jax.custom_vjp(jnp.sin))
    f = rjax.from_custom_vjp(make_scaled_sin())
    with pytest.raises(InteropError, match="positional arguments only"):
        f.rrule(f, X, w=W)


@functools.cache
def adjoint_adapter() -> Any:
    return rjax.from_function(lambda z: jnp.sin(z) * jnp.conj(z) + jnp.abs(z))


@settings(max_examples=25)
@given(complex_arrays())
def test_pullback_is_the_adjoint_of_the_pushforward_for_complex_inputs(zs: Any) -> None:
    """<pullback(ybar), dz> == <ybar, jvp(dz)> under rruletest's inner product, for all inputs."""
    assert_adjoint(adjoint_adapter(), zs)


# -- acceptance: rruletest's testers on jax rules -----------------------------------------------


def one_element_off(x: Any, w: Any, g: Any) -> Any:
    return (g * jnp.cos(x) * w).at[617, 0].multiply(1.001)


def accumulating() -> Any:
    calls = []

    def bwd_x(x: Any, w: Any, g: Any) -> Any:
        calls.append(1)
        return g * jnp.cos(x) * w * len(calls)

    return bwd_x


def test_correct_rules_pass_test_rrule_and_test_frule(testers: Any) -> None:
    f = rjax.from_custom_vjp(make_scaled_sin())
    testers.test_rrule(f, X, W, rrule_f=f.rrule, rng=0)
    f.test_rrule(X.astype(np.float32), W.astype(np.float32), rng=0)
    z = RNG.uniform(-1, 1, 3) + 1j * RNG.uniform(-1, 1, 3)
    for fn in (holomorphic_exp(), abs_squared(), jnp.sin):
        rjax.wrap(fn).test_rrule(z, rng=0)
    g = rjax.from_function(lambda x, w: jnp.tanh(x) * w)
    g.test_rrule(X, W, rng=0)
    g.test_frule(X, W, rng=0)
    s = rjax.from_function(jnp.sin)
    testers.test_scalar(s, 0.5, rrule_f=s.rrule, frule_f=s.frule, rng=0)


WRONG_RULES: dict[str, dict[str, Any]] = {
    "no-unbroadcast": {"bwd_w": lambda x, w, g: g * jnp.sin(x)},
    "float32": {"bwd_x": lambda x, w, g: (g * jnp.cos(x) * w).astype(jnp.float32)},
    "accumulates": {"bwd_x": accumulating()},
}


@pytest.mark.parametrize("kind", WRONG_RULE_LINES)
def test_wrong_rules_fail_with_rruletest_messages(testers: Any, kind: str) -> None:
    f = rjax.from_custom_vjp(make_scaled_sin(**WRONG_RULES[kind]))
    head = "test_rrule(scaled_sin, float64[3, 2], float64[1, 2]) failed"
    assert_rrule_fails(testers, f, (X, W), head, WRONG_RULE_LINES[kind])


def test_one_element_off_by_a_thousandth_in_ten_thousand_is_caught(testers: Any) -> None:
    wrong, right = make_scaled_sin(bwd_x=one_element_off), make_scaled_sin()
    assert_one_element_off_is_caught(rjax.from_custom_vjp, wrong, right, W)


def test_primal_is_jitted_when_traceable_and_eager_otherwise() -> None:
    def power(x: Any, n: int) -> Any:
        return x**n if n > 2 else x  # n is static under jit

    f = rjax.from_function(power)
    close(f(X, 3), X**3)
    assert f._jit_ok

    def value_dependent(x: Any) -> Any:
        return x if float(x[0, 0]) > 0 else -x  # cannot be traced

    g = rjax.from_function(value_dependent)
    close(g(np.abs(X)), np.abs(X))
    assert not g._jit_ok
    close(g(-np.abs(X)), np.abs(X))


def test_wrong_custom_jvp_fails_test_frule(testers: Any) -> None:
    rjax.from_custom_jvp(make_softplus()).test_frule(X, rng=0)
    with pytest.raises(AssertionError, match=r"\[numeric\]"):
        rjax.from_custom_jvp(make_softplus(wrong_sign=True)).test_frule(X, rng=0)


def test_tuple_and_dict_arguments_are_differentiated_as_pytrees() -> None:
    def affine(p: Any, x: Any) -> Any:
        return p["a"] * x + p["b"][0]

    f = rjax.from_function(affine)
    p = {"a": np.float64(2.0), "b": (np.array([1.0]), 3)}
    x = np.linspace(0, 1, 4)
    assert f(p, x).dtype == np.float64
    _, pbar, xbar = f.rrule(f, p, x)[1](np.ones(4))
    assert pbar["a"] == pytest.approx(x.sum())
    np.testing.assert_allclose(pbar["b"][0], [4.0])
    assert pbar["b"][1] == NoTangent()
    np.testing.assert_allclose(xbar, np.full(4, 2.0))
    dp = Tangent(dict, {"a": np.float64(1.0)})  # b's tangent missing: zero
    _, ydot = f.frule((NoTangent(), dp, ZeroTangent()), f, p, x)
    np.testing.assert_allclose(ydot, x)


# -- the framework's rule, reported as the framework's -----------------------------------------


def test_custom_jvp_rules_get_default_arguments_filled_in() -> None:
    """``log_ndtr(x, series_order=3)`` is a ``custom_jvp`` with ``nondiff_argnums=(1,)``: its
    rule needs the default too (it raised IndexError before)."""
    f = rjax.from_custom_jvp(jax.scipy.special.log_ndtr)
    x = np.array([-3.0, -0.5, 0.7, 4.0])
    assert f.test_frule(x, rng=0).worst_rel_err < 1e-8
    assert f.test_frule(x, 5, rng=0).not_checked == ("args[1]",)
    assert f.test_frule(x, fkwargs={"series_order": 5}, rng=0).worst_rel_err < 1e-8
    _, ydot = f.frule((NoTangent(), np.ones(4)), f, x)
    close(ydot, numeric_jvp(f, (x,), (np.ones(4),)))
    assert rjax.all_positional(lambda a, b=2, c=None: a, (1,), {"c": 3}) == (1, 2, 3)
    assert rjax.all_positional(lambda *a: a, (1,), {}) is None


def make_scale() -> Any:
    """``x * s`` with a custom_vjp that does not differentiate the float ``s``."""

    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def scale(x: Any, s: Any) -> Any:
        return x * s

    scale.defvjp(lambda x, s: (x * s, None), lambda s, res, g: (g * s,))
    return scale


def test_custom_vjp_nondiff_argnums_reach_the_tester(testers: Any) -> None:
    f = rjax.from_custom_vjp(make_scale())
    with pytest.raises(AssertionError, match=r"\[numeric\] args\[1\]"):
        testers.test_rrule(f, X, 2.0, rrule_f=f.rrule, rng=0)
    report = f.test_rrule(X, 2.0, rng=0)
    assert report.not_checked == ("args[1]",)
    assert "args[1]: not differentiated by the rule (in the adapter's nondiff_argnums)" in (
        report.notes
    )
    assert f.test_rrule(X, with_tangent(2.0, NoTangent()), rng=0).not_checked == ("args[1]",)


def test_a_gradient_jax_does_not_support_is_no_rule(testers: Any) -> None:
    """jax differentiates ``betainc(a, b, x)`` in ``x`` only ("not supported" for a and b)."""
    f = rjax.from_function(jax.scipy.special.betainc)
    a, b, x = np.array([2.0, 3.0]), np.array([3.0, 1.5]), np.array([0.4, 0.7])
    with pytest.raises(AssertionError) as info:
        testers.test_rrule(f, a, b, x, rrule_f=f.rrule, rng=0)
    assert (
        "raised NoRuleError: no rule for args[0]: the framework has no derivative of betainc"
        in (str(info.value))
    )
    assert "not supported" in str(info.value)
    report = f.test_rrule(a, b, x, rng=0)
    assert report.not_checked == ("args[0]", "args[1]")
    report = f.test_rrule(with_tangent(a, NoTangent()), with_tangent(b, NoTangent()), x, rng=0)
    assert report.notes == tuple(n for n in report.notes if "not differentiated by" not in n)


def test_a_loop_jax_cannot_reverse_is_no_rule(testers: Any) -> None:
    """jax's ``random_gamma_grad`` runs a ``while_loop``: forward mode only. The pullback's
    ValueError ("Reverse-mode differentiation does not work ...") was reported as a crash."""
    f = rjax.from_function(
        lambda a: jax.lax.random_gamma_grad(a, 0.7 * jax.numpy.ones_like(a)), name="gamma_grad"
    )
    with pytest.raises(AssertionError) as info:
        testers.test_rrule(f, np.array([1.5, 2.5]), rrule_f=f.rrule, rng=0)
    assert "raised NoRuleError: no rule for args[0]: the framework has no derivative" in str(
        info.value
    )
    assert "Reverse-mode differentiation does not work" in str(info.value)


def test_a_python_float_tangent_of_a_scalar_is_given_to_jax_as_an_array(testers: Any) -> None:
    """A drawn tangent of ``np.float64(0.5)`` is a Python float; ``lax.reduce_max``'s jvp reads
    its dtype (the frule raised "'float' object has no attribute 'dtype'")."""
    f = rjax.from_function(lambda x: jax.lax.reduce_max(x, ()), name="reduce_max")
    for seed in range(3):
        testers.test_frule(f, np.float64(0.5), frule_f=f.frule, rng=seed)
    y, ydot = f.frule((None, 2.0), f, np.float64(0.5))
    assert (y, ydot) == (0.5, 2.0)


def test_test_rrule_returns_the_report(testers: Any) -> None:
    f = rjax.from_custom_vjp(make_scaled_sin())
    report = f.test_rrule(X, W, rng=0)
    assert (report.tester, report.function) == ("test_rrule", "scaled_sin")
    assert report.worst_rel_err == testers.test_rrule(f, X, W, rrule_f=f.rrule, rng=0).worst_rel_err


def test_a_forward_derivative_jax_does_not_support_is_no_rule(testers: Any) -> None:
    f = rjax.from_function(jax.scipy.special.betainc)
    a, b, x = np.array([2.0, 3.0]), np.array([3.0, 1.5]), np.array([0.4, 0.7])
    with pytest.raises(AssertionError, match=r"raised NoRuleError: no rule for args\[0\]"):
        testers.test_frule(f, a, b, x, frule_f=f.frule, rng=0)
    assert f.test_frule(a, b, x, rng=0).not_checked == ("args[0]", "args[1]")


def test_custom_rules_get_python_floats_as_jax_arrays(testers: Any) -> None:
    """jax hands a custom rule's ``fwd``/``jvp`` arrays, never Python numbers (the pullback of
    ``square(1.3)`` raised "'float' object has no attribute 'dtype'"); the rule's own
    ``nondiff_argnums`` stay as they were given."""
    seen: list[type] = []

    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def scale(x: Any, k: Any) -> Any:
        return x * k

    def fwd(x: Any, k: Any) -> Any:
        seen.append(type(x))
        seen.append(type(k))
        return x * k, None

    scale.defvjp(fwd, lambda k, _, g: (g * k,))
    f = rjax.from_custom_vjp(scale)
    y, pullback = f.rrule(f, 1.5, 2.0)
    assert (y, pullback(1.0)) == (3.0, (NoTangent(), 2.0, NoTangent()))
    assert seen == [type(jnp.asarray(1.5)), float]
    f.test_rrule(1.5, 2.0, rng=0)

    @jax.custom_jvp
    def square(x: Any) -> Any:
        return x * x

    square.defjvp(lambda p, t: (p[0] * p[0], 2 * p[0] * t[0]))
    g = rjax.from_custom_jvp(square)
    g.test_frule(1.3, rng=0)
    g.test_rrule(1.3, rng=0)
    testers.test_scalar(g, 0.5, rrule_f=g.rrule, frule_f=g.frule)


def test_dict_outputs(testers: Any) -> None:
    """A dict output takes a dict (or ``Tangent(dict, ...)``) cotangent; the pullback raised
    "'dict' object has no attribute 'dtype'" (custom_vjp) or "entry not a 2- or 3- tuple"."""

    def make(sign: float) -> Any:
        @jax.custom_vjp
        def sincos(x: Any) -> Any:
            return {"s": jnp.sin(x), "c": jnp.cos(x)}

        def bwd(x: Any, g: Any) -> Any:
            return (g["s"] * jnp.cos(x) + sign * g["c"] * jnp.sin(x),)

        sincos.defvjp(lambda x: (sincos(x), x), bwd)
        return sincos

    x = np.array([1.0, 2.0])
    f = rjax.from_custom_vjp(make(-1.0))
    y, pullback = f.rrule(f, x)
    assert sorted(y) == ["c", "s"]
    np.testing.assert_allclose(pullback({"c": np.ones(2)})[1], -np.sin(x), rtol=1e-14)
    np.testing.assert_allclose(pullback(Tangent(dict, s=np.ones(2)))[1], np.cos(x), rtol=1e-14)
    f.test_rrule(x, rng=0)
    with pytest.raises(AssertionError, match=r"\[numeric\] args\[0\]"):
        rjax.from_custom_vjp(make(1.0)).test_rrule(x, rng=0)
    with pytest.raises(InteropError, match="the output is a dict, so its cotangent must be"):
        pullback(np.ones(2))
    g = rjax.from_function(lambda x: {"s": jnp.sin(x), "c": jnp.cos(x)}, name="sincos")
    g.test_rrule(x, rng=0)
    g.test_frule(x, rng=0)


def test_an_adapter_has_the_wrapped_function_s_signature() -> None:
    """``rruletest check`` counts the arguments of ``register(from_function(lambda x, w: ...))``
    from it: each such rule was skipped ('cannot tell how many arguments')."""
    import inspect

    from rruletest._plugin.cases import rule_arity
    from rruletest.rules import RuleInfo

    adapter = rjax.from_function(lambda x, w: jnp.sin(x) * w)
    assert list(inspect.signature(adapter).parameters) == ["x", "w"]
    assert rule_arity(RuleInfo((adapter,), "rrule", "m", "f")) == 2
    assert len(inspect.signature(rjax.from_custom_vjp(make_scaled_sin())).parameters) == 2
