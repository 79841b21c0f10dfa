"""order=2 through the jax adapter: jax differentiates the custom rule's own body, as users of
second derivatives get it (jax issue #5054's sinc''(0))."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import RuleTestFailure, test_rrule, test_scalar

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
rj = pytest.importorskip("rruletest.interop.jax")


def _sinc(careful: bool) -> Any:
    @jax.custom_jvp
    def sinc(x: Any) -> Any:
        return jnp.where(x == 0, 1.0, jnp.sin(x) / jnp.where(x == 0, 1.0, x))

    @sinc.defjvp
    def sinc_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        safe = jnp.where(x == 0, 1.0, x)
        exact = (jnp.cos(x) * safe - jnp.sin(x)) / safe**2
        if careful:  # the Taylor series near 0 has the right derivative there: -1/3
            d = jnp.where(jnp.abs(x) < 1e-2, -x / 3 + x**3 / 30, exact)
        else:  # a constant 0 at 0: the first derivative is right, the second is 0
            d = jnp.where(x == 0, 0.0, exact)
        return sinc(x), d * t

    return rj.from_custom_jvp(sinc)


X = np.array([0.0, 0.5])


def test_a_wrong_second_derivative_at_zero_is_caught_with_the_point_and_values() -> None:
    f = _sinc(careful=False)
    test_rrule(f, X, rrule_f=f.rrule, rng=0)  # first order: right
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(f, X, rrule_f=f.rrule, order=2, rng=0)
    text = str(info.value)
    assert text.startswith(
        "test_rrule(sinc, ..., order=2) failed: the derivative of sinc's pullback "
        "(pullback_of(sinc)) is wrong\n"
    )
    assert "ydot[0]: 1 of 2 elements differ" in text
    assert "at [0] (actual 0.0, expected -0.44" in text
    assert "np.array([0.0, 0.5]), rrule_f=" in info.value.reproduce
    assert ", order=2, rng=0)" in info.value.reproduce


def test_a_correct_second_derivative_passes() -> None:
    f = _sinc(careful=True)
    report = test_rrule(f, X, rrule_f=f.rrule, order=2, rng=0)
    assert [p.function for p in report.parts] == ["pullback_of(sinc)", "pullback_of(sinc)"]
    test_scalar(f, 0.0, rrule_f=f.rrule, frule_f=f.frule, order=2, check_complex=False, rng=0)


def test_torch_double_backward() -> None:
    torch = pytest.importorskip("torch")
    rt = pytest.importorskip("rruletest.interop.torch")

    def cube(detach: bool) -> Any:
        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x**3

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                return g * 3 * (x.detach() if detach else x) ** 2  # detach: no double backward

        return rt.from_function(Cube)

    good, bad = cube(False), cube(True)
    report = test_rrule(good, X + 0.5, rrule_f=good.rrule, order=2, rng=0)
    assert [p.function for p in report.parts] == ["pullback_of(Cube)"]
    test_rrule(bad, X + 0.5, rrule_f=bad.rrule, rng=0)  # first order: right
    with pytest.raises(RuleTestFailure, match=r"the derivative of Cube's pullback"):
        test_rrule(bad, X + 0.5, rrule_f=bad.rrule, order=2, rng=0)


def test_torch_double_backward_at_a_complex_point() -> None:
    # complex tensors are differentiable too: the derived function made them require grad
    # only when they were real ("`inputs` argument to `grad()` cannot be empty")
    torch = pytest.importorskip("torch")
    rt = pytest.importorskip("rruletest.interop.torch")
    f = rt.from_callable(torch.sin)
    report = test_rrule(f, X + 0.5j, rrule_f=f.rrule, order=2, rng=0)
    assert [p.function for p in report.parts] == ["pullback_of(sin)"]
    assert report.parts[0].worst_rel_err < 1e-8


def test_autograd_rules_of_rules() -> None:
    ra = pytest.importorskip("rruletest.interop.autograd")
    anp = pytest.importorskip("autograd.numpy")
    extend = pytest.importorskip("autograd.extend")

    def cube(unbox: bool) -> Any:
        @extend.primitive
        def cube(x: Any) -> Any:
            return x**3

        def vjp(ans: Any, x: Any) -> Any:
            base = getattr(x, "_value", x) if unbox else x  # unboxed: no second derivative
            return lambda g: g * 3 * anp.square(base)

        extend.defvjp(cube, vjp)
        return ra.from_primitive(cube)

    good, bad = cube(False), cube(True)
    report = test_rrule(good, X + 0.5, rrule_f=good.rrule, order=2, rng=0)
    assert report.parts[0].function == "pullback_of(cube)"
    with pytest.raises(RuleTestFailure, match=r"the derivative of cube's pullback"):
        test_rrule(bad, X + 0.5, rrule_f=bad.rrule, order=2, rng=0)


def test_torch_order_2_with_an_argument_torch_does_not_differentiate() -> None:
    # a Python float reaches the double backward as a number in the rule's call and as a
    # tensor in the primal's: the derived function has one cotangent per argument either way
    torch = pytest.importorskip("torch")
    rt = pytest.importorskip("rruletest.interop.torch")

    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, c: Any) -> Any:
            ctx.save_for_backward(x)
            ctx.c = c
            return torch.sin(x) * c

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (x,) = ctx.saved_tensors
            return g * torch.cos(x) * ctx.c, None

    report = rt.from_function(Scaled).test_rrule(X + 0.5, 2.0, order=2, rng=0)
    assert [p.function for p in report.parts] == ["pullback_of(Scaled)"]


def test_jax_order_2_holds_a_custom_vjps_nondiff_argument_fixed() -> None:
    # jax refuses a tracer in a nondiff_argnums position, and forward mode over the rule:
    # the pullback's own derivative is checked in reverse mode
    from functools import partial

    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def scaled(x: Any, n: Any) -> Any:
        return jnp.sin(x) * n

    scaled.defvjp(lambda x, n: (scaled(x, n), x), lambda n, x, g: (g * jnp.cos(x) * n,))
    report = rj.from_custom_vjp(scaled).test_rrule(X + 0.5, 3.0, order=2, rng=0)
    assert [(p.tester, p.function) for p in report.parts] == [("test_rrule", "pullback_of(scaled)")]


def test_autograd_order_2_with_an_integer_argument() -> None:
    ra = pytest.importorskip("rruletest.interop.autograd")
    f = ra.from_function(lambda a, n: a**n)
    report = f.test_rrule(X + 0.5, 3, order=2, rng=0)
    assert len(report.parts) == 2


def test_jax_order_2_of_a_function_with_a_tuple_output() -> None:
    # the derived function takes ybar as an argument: a tuple of arrays jax converts and
    # differentiates, not the Tangent(tuple, ...) a pullback receives
    f = rj.from_function(lambda a: (jnp.sin(a), jnp.cos(a)))
    report = f.test_rrule(X + 0.5, order=2, rng=0)
    assert [p.function for p in report.parts] == ["pullback_of(<lambda>)"] * 2
