"""The torch adapters: raw ``autograd.Function`` rules, the engine path, complex conventions."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from rruletest import NoTangent, Tangent, Thunk, ZeroTangent, with_tangent
from rruletest.interop import InteropError, MissingRuleError
from rruletest.interop import torch as rtorch
from rruletest.interop._torch_context import quiet_torch_internals

from ._numeric import (
    WRONG_RULE_LINES,
    assert_adjoint,
    assert_one_element_off_is_caught,
    assert_rrule_fails,
    complex_arrays,
    numeric_jvp,
    numeric_vjp,
)

torch = pytest.importorskip("torch")
Function = torch.autograd.Function

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Any:
    """torch's intra-op thread pool waits for a free core on every operation when the machine
    is busy (tens of ms each); these tests use tiny tensors, so one thread is faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


X = RNG.uniform(-2, 2, (3, 2))
W = RNG.uniform(-2, 2, (1, 2))


# -- rules under test ---------------------------------------------------------------------------


class ScaledSin(Function):
    """``sin(x) * w`` with ``w`` broadcast along the first axis; a correct rule."""

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any) -> Any:
        ctx.save_for_backward(x, w)
        ctx.save_for_forward(x, w)  # jvp sees only these (torch's forward mode)
        return torch.sin(x) * w

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, w = ctx.saved_tensors
        return g * torch.cos(x) * w, (g * torch.sin(x)).sum(0, keepdim=True)

    @staticmethod
    def jvp(ctx: Any, dx: Any, dw: Any) -> Any:
        x, w = ctx.saved_tensors
        return dx * torch.cos(x) * w + torch.sin(x) * dw


class ScaledSinSetupContext(ScaledSin):
    """The same rule in the ``setup_context`` style (forward without ctx); ``backward`` and
    ``jvp`` are ``ScaledSin``'s."""

    @staticmethod
    def forward(x: Any, w: Any) -> Any:  # type: ignore[override]
        return torch.sin(x) * w

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)


class NoUnbroadcast(ScaledSin):
    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, w = ctx.saved_tensors
        return g * torch.cos(x) * w, g * torch.sin(x)  # forgot .sum(0, keepdim=True)


class Float32Grad(ScaledSin):
    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, w = ctx.saved_tensors
        return (g * torch.cos(x) * w).float(), (g * torch.sin(x)).sum(0, keepdim=True)


class Accumulates(ScaledSin):
    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, w = ctx.saved_tensors
        ctx.calls = getattr(ctx, "calls", 0) + 1
        return g * torch.cos(x) * w * ctx.calls, (g * torch.sin(x)).sum(0, keepdim=True)


# -- raw Function ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [ScaledSin, ScaledSinSetupContext], ids=["ctx", "setup_context"])
def test_function_pullback_matches_finite_differences(cls: type) -> None:
    f = rtorch.from_function(cls)
    ybar = RNG.uniform(-1, 1, (3, 2))
    y, pullback = f.rrule(f, X, W)
    np.testing.assert_allclose(y, np.sin(X) * W, rtol=1e-15)
    fbar, xbar, wbar = pullback(ybar)
    assert fbar == NoTangent()
    np.testing.assert_allclose(xbar, numeric_vjp(f, (X, W), ybar, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(wbar, numeric_vjp(f, (X, W), ybar, 1), rtol=1e-6, atol=1e-8)
    assert wbar.shape == W.shape
    assert wbar.dtype == np.float64


@pytest.mark.parametrize("cls", [ScaledSin, ScaledSinSetupContext], ids=["ctx", "setup_context"])
def test_function_frule_calls_jvp(cls: type) -> None:
    f = rtorch.from_function(cls)
    dx, dw = RNG.uniform(-1, 1, X.shape), RNG.uniform(-1, 1, W.shape)
    y, ydot = f.frule((NoTangent(), dx, dw), f, X, W)
    np.testing.assert_allclose(y, np.sin(X) * W, rtol=1e-15)
    np.testing.assert_allclose(ydot, numeric_jvp(f, (X, W), (dx, dw)), rtol=1e-6, atol=1e-8)
    # A zero tangent reaches jvp as zeros (torch materializes it too).
    _, ydot_x = f.frule((NoTangent(), dx, ZeroTangent()), f, X, W)
    np.testing.assert_allclose(ydot_x, dx * np.cos(X) * W, rtol=1e-12)


def test_raw_backward_output_is_not_fixed_up() -> None:
    """What torch's engine would sum and cast reaches the tester untouched."""
    bad = rtorch.from_function(NoUnbroadcast)
    _, pullback = bad.rrule(bad, X, W)
    assert pullback(np.ones_like(X))[2].shape == (3, 2)
    bad32 = rtorch.from_function(Float32Grad)
    _, pullback = bad32.rrule(bad32, X, W)
    assert pullback(np.ones_like(X))[1].dtype == np.float32
    # The engine path hides both bugs: this is what gradcheck sees.
    for cls in (NoUnbroadcast, Float32Grad):
        engine = rtorch.from_callable(cls.apply)
        _, xbar, wbar = engine.rrule(engine, X, W)[1](np.ones_like(X))
        assert (xbar.dtype, wbar.shape) == (np.float64, (1, 2))


def test_pullback_called_twice_reuses_ctx() -> None:
    f = rtorch.from_function(Accumulates)
    _, pullback = f.rrule(f, X, W)
    first, second = pullback(np.ones_like(X))[1], pullback(np.ones_like(X))[1]
    np.testing.assert_allclose(second, 2 * first)


class WithOptions(Function):
    @staticmethod
    def forward(ctx: Any, x: Any, scale: float, n: Any) -> Any:
        ctx.scale = scale
        ctx.seen = (type(scale), x.requires_grad, n.dtype)
        ctx.needs = ctx.needs_input_grad
        return x * scale, n * 2

    @staticmethod
    def backward(ctx: Any, gx: Any, gn: Any) -> Any:
        WithOptions.last = (ctx.seen, ctx.needs, gn)
        return gx * ctx.scale, None, None


def test_python_scalars_ints_and_tuple_outputs() -> None:
    f = rtorch.from_function(WithOptions)
    x, n = np.array([1.0, 2.0]), np.array([1, 2])
    y, pullback = f.rrule(f, x, 3.0, n)
    np.testing.assert_array_equal(y[0], [3.0, 6.0])
    np.testing.assert_array_equal(y[1], [2, 4])
    out = pullback(Tangent(tuple, np.ones(2), NoTangent()))
    assert out[2:] == (NoTangent(), NoTangent())
    np.testing.assert_array_equal(out[1], [3.0, 3.0])
    seen, needs, gn = WithOptions.last
    assert seen == (float, True, torch.int64)
    assert needs == (True, False, False)
    assert torch.equal(gn, torch.zeros(2, dtype=torch.int64))  # materialized, as torch does
    # A thunked, plain-tuple cotangent gives the same.
    again = pullback(Thunk(lambda: (np.ones(2), NoTangent())))
    np.testing.assert_array_equal(again[1], out[1])


def test_nondiff_argnums_switches_off_needs_input_grad() -> None:
    f = rtorch.from_function(WithOptions, nondiff_argnums=[0])
    f.rrule(f, np.array([1.0]), 2.0, np.array([1]))[1]((np.ones(1), None))
    assert WithOptions.last[1] == (False, False, False)


class Materialize(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx: Any, g1: Any, g2: Any) -> Any:
        Materialize.got = (g1, g2)
        return (0 if g1 is None else g1 * 2) + (0 if g2 is None else g2 * 3)


def test_set_materialize_grads_false_passes_none() -> None:
    f = rtorch.from_function(Materialize)
    _, pullback = f.rrule(f, np.ones(2))
    (xbar,) = pullback((ZeroTangent(), np.ones(2)))[1:]
    assert Materialize.got[0] is None
    np.testing.assert_array_equal(xbar, [3.0, 3.0])


class ArgMax(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        y = x.max()
        i = x.argmax()
        flat = x * 1.0
        ctx.mark_non_differentiable(flat)
        ctx.save_for_backward(x, i)
        return y, i, flat

    @staticmethod
    def backward(ctx: Any, gy: Any, gi: Any, gflat: Any) -> Any:
        x, i = ctx.saved_tensors
        ArgMax.got = gflat
        out = torch.zeros_like(x)
        out[i] = gy
        return out


def test_non_differentiable_outputs_get_zero_cotangents() -> None:
    f = rtorch.from_function(ArgMax)
    x = np.array([1.0, 5.0, 2.0])
    (y, i, _), pullback = f.rrule(f, x)
    assert (float(y), int(i)) == (5.0, 1)
    (xbar,) = pullback((np.float64(2.0), NoTangent(), np.ones(3)))[1:]
    np.testing.assert_array_equal(xbar, [0.0, 2.0, 0.0])
    assert torch.equal(ArgMax.got, torch.zeros(3, dtype=torch.float64))


class SavesThenMutates(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        y = x * 2
        ctx.save_for_backward(y)
        y.add_(1)
        return y

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (y,) = ctx.saved_tensors
        return g * y


def test_saved_tensor_modified_in_place_is_reported() -> None:
    f = rtorch.from_function(SavesThenMutates)
    _, pullback = f.rrule(f, np.ones(2))
    with pytest.raises(rtorch.SavedTensorModifiedError, match=r"saved_tensors\[0\].*in place"):
        pullback(np.ones(2))


class MutatesInput(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x.mul_(2)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return 2 * g


def test_inputs_share_memory_so_mutation_is_visible() -> None:
    x = np.ones(2)
    rtorch.from_function(MutatesInput)(x)
    np.testing.assert_array_equal(x, [2.0, 2.0])
    frozen = np.ones(2)
    frozen.flags.writeable = False
    rtorch.from_function(MutatesInput)(frozen)  # a read-only input is copied, never mutated
    np.testing.assert_array_equal(frozen, [1.0, 1.0])


# -- complex numbers ---------------------------------------------------------------------------


class ComplexExp(Function):
    """A holomorphic rule written the torch way: ``grad = g * conj(f'(z))``."""

    @staticmethod
    def forward(ctx: Any, z: Any) -> Any:
        y = torch.exp(z)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (y,) = ctx.saved_tensors
        return g * y.conj()


class AbsSquared(Function):
    """A non-holomorphic, real-valued rule: ``d|z|^2 = 2 Re(conj(z) dz)``."""

    @staticmethod
    def forward(ctx: Any, z: Any) -> Any:
        ctx.save_for_backward(z)
        return (z * z.conj()).real

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (z,) = ctx.saved_tensors
        return 2 * g * z


@pytest.mark.parametrize("cls", [ComplexExp, AbsSquared])
def test_complex_rules_in_torch_convention_match_rruletest_convention(cls: type) -> None:
    z = RNG.uniform(-1, 1, 4) + 1j * RNG.uniform(-1, 1, 4)
    f = rtorch.from_function(cls)
    y = f(z)
    ybar = RNG.uniform(-1, 1, y.shape) + (
        1j * RNG.uniform(-1, 1, y.shape) if y.dtype.kind == "c" else 0
    )
    (zbar,) = f.rrule(f, z)[1](ybar)[1:]
    np.testing.assert_allclose(zbar, numeric_vjp(f, (z,), ybar, 0), rtol=1e-6, atol=1e-8)
    engine = rtorch.from_callable(lambda t: cls.apply(t))
    np.testing.assert_allclose(engine.rrule(engine, z)[1](ybar)[1], zbar, rtol=1e-12)


# -- any torch callable ------------------------------------------------------------------------


def test_callable_rrule_and_frule() -> None:
    def fn(x: Any, w: Any, k: int) -> Any:
        return torch.tanh(x) * w + k, x.sum()

    f = rtorch.from_callable(fn)
    ybar = (RNG.uniform(-1, 1, X.shape), np.float64(0.5))
    y, pullback = f.rrule(f, X, W, 3)
    np.testing.assert_allclose(y[0], np.tanh(X) * W + 3)
    _, xbar, wbar, kbar = pullback(ybar)
    assert kbar == NoTangent()
    np.testing.assert_allclose(xbar, numeric_vjp(f, (X, W, 3), ybar, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(wbar, numeric_vjp(f, (X, W, 3), ybar, 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pullback(ybar)[1], xbar)  # the graph is retained
    np.testing.assert_array_equal(pullback(ZeroTangent())[1], np.zeros_like(X))
    dx = RNG.uniform(-1, 1, X.shape)
    _, (ydot, sdot) = f.frule((NoTangent(), dx, None, NoTangent()), f, X, W, 3)
    expected = numeric_jvp(f, (X, W, 3), (dx, None, None))
    np.testing.assert_allclose(ydot, expected[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sdot, expected[1], rtol=1e-6, atol=1e-8)


def test_callable_takes_python_floats_as_tensors() -> None:
    f = rtorch.from_callable(torch.pow)
    y, pullback = f.rrule(f, 2.0, 3.0)
    assert (type(y), y) == (np.float64, 8.0)
    _, xbar, pbar = pullback(1.0)
    assert (float(xbar), float(pbar)) == pytest.approx((12.0, 8.0 * np.log(2.0)))
    g = rtorch.from_callable(torch.pow, nondiff_argnums=[1])
    assert g.rrule(g, np.float64(2.0), 3.0)[1](1.0)[2] == NoTangent()  # 3.0 stays a Python float
    _, ydot = f.frule((NoTangent(), 1.0, 0.0), f, 2.0, 3.0)
    assert float(ydot) == pytest.approx(12.0)


def test_frule_without_jvp_is_a_clear_error() -> None:
    f = rtorch.from_function(AbsSquared)
    with pytest.raises(InteropError, match="AbsSquared defines no jvp staticmethod"):
        f.frule((NoTangent(), np.ones(2, complex)), f, np.ones(2, complex))


def test_wrap_and_misuse() -> None:
    import rruletest.interop as interop

    assert isinstance(interop.wrap(ScaledSin), rtorch.TorchFunction)
    assert isinstance(rtorch.wrap(torch.sin), rtorch.TorchCallable)
    assert repr(rtorch.wrap(ScaledSin)) == "<torch raw autograd.Function adapter for ScaledSin>"
    with pytest.raises(InteropError, match=r"takes a torch\.autograd\.Function subclass"):
        rtorch.from_function(torch.sin)
    f = rtorch.from_function(ScaledSin)
    with pytest.raises(InteropError, match="pass the adapter itself as f"):
        f.rrule(np.sin, X, W)
    y, _ = interop.rrule(f, X, W)  # the generic rrule_f
    np.testing.assert_allclose(y, np.sin(X) * W)


@functools.cache
def adjoint_adapter() -> Any:
    return rtorch.from_callable(lambda z: torch.sin(z) * z.conj() + z.abs())


@settings(max_examples=25)
@given(complex_arrays())
def test_pullback_is_the_adjoint_of_the_pushforward_for_complex_inputs(zs: Any) -> None:
    """<pullback(ybar), dz> == <ybar, jvp(dz)> under rruletest's inner product, for all inputs."""
    assert_adjoint(adjoint_adapter(), zs)


# -- acceptance: rruletest's testers on torch rules ---------------------------------------------


class OneElementOff(ScaledSin):
    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, w = ctx.saved_tensors
        gx = g * torch.cos(x) * w
        gx.view(-1)[1234] *= 1.001
        return gx, (g * torch.sin(x)).sum(0, keepdim=True)


def test_correct_rules_pass_test_rrule_and_test_frule(testers: Any) -> None:
    for cls in (ScaledSin, ScaledSinSetupContext):
        f = rtorch.from_function(cls)
        testers.test_rrule(f, X, W, rrule_f=f.rrule, rng=0)
        testers.test_frule(f, X, W, frule_f=f.frule, rng=0)
        f.test_rrule(X, W, rng=1)
    z = RNG.uniform(-1, 1, 3) + 1j * RNG.uniform(-1, 1, 3)
    for cls in (ComplexExp, AbsSquared):
        rtorch.from_function(cls).test_rrule(z, rng=0)
    g = rtorch.from_callable(lambda x, w: torch.tanh(x) * w)
    g.test_rrule(X, W, rng=0)
    g.test_frule(X, W, rng=0)
    s = rtorch.from_callable(torch.sin)
    testers.test_scalar(s, 0.5, rrule_f=s.rrule, frule_f=s.frule, rng=0)


WRONG_RULES = {"no-unbroadcast": NoUnbroadcast, "float32": Float32Grad, "accumulates": Accumulates}


@pytest.mark.parametrize("kind", WRONG_RULE_LINES)
def test_wrong_rules_fail_with_rruletest_messages(testers: Any, kind: str) -> None:
    cls = WRONG_RULES[kind]
    head = f"test_rrule({cls.__name__}, float64[3, 2], float64[1, 2]) failed"
    assert_rrule_fails(testers, rtorch.from_function(cls), (X, W), head, WRONG_RULE_LINES[kind])


def test_one_element_off_by_a_thousandth_in_ten_thousand_is_caught(testers: Any) -> None:
    assert_one_element_off_is_caught(rtorch.from_function, OneElementOff, ScaledSin, W)


class WrongJvp(ScaledSin):
    @staticmethod
    def jvp(ctx: Any, dx: Any, dw: Any) -> Any:
        x, w = ctx.saved_tensors
        return (dx * torch.cos(x) * w).float()  # forgot the dw term, and float32


def test_wrong_jvp_fails_test_frule(testers: Any) -> None:
    f = rtorch.from_function(WrongJvp)
    with pytest.raises(AssertionError) as info:
        f.test_frule(X, W, rng=0)
    assert str(info.value).startswith("test_frule(WrongJvp, float64[3, 2], float64[1, 2]) failed")
    assert "float32" in str(info.value)


class JvpReadsBackwardSaves(ScaledSin):
    """A jvp that reads what only save_for_backward saved: torch's forward mode shows it
    nothing (``ctx.saved_tensors`` is empty in ``jvp``), so the rule fails in torch."""

    @staticmethod
    def forward(ctx: Any, x: Any, w: Any) -> Any:
        ctx.save_for_backward(x, w)
        return torch.sin(x) * w


def test_jvp_sees_only_what_save_for_forward_saved(testers: Any) -> None:
    fwad = torch.autograd.forward_ad
    with quiet_torch_internals(), fwad.dual_level():
        tx = fwad.make_dual(torch.from_numpy(X), torch.ones(X.shape, dtype=torch.float64))
        with pytest.raises(ValueError, match="not enough values"):
            JvpReadsBackwardSaves.apply(tx, torch.from_numpy(W))  # torch itself
    f = rtorch.from_function(JvpReadsBackwardSaves)
    with pytest.raises(AssertionError, match=r"raised ValueError: not enough values to unpack"):
        f.test_frule(X, W, rng=0)
    f.test_rrule(X, W, rng=0)  # backward still sees save_for_backward's tensors


class IgnoresNeedsInputGrad(Function):
    @staticmethod
    def forward(ctx: Any, x: Any, n: Any) -> Any:
        ctx.save_for_backward(x, n)
        return x * n

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, n = ctx.saved_tensors
        return g * n, g * x  # a gradient for n too, which torch's engine discards


def test_gradients_for_tensors_that_do_not_require_grad_are_discarded() -> None:
    f = rtorch.from_function(IgnoresNeedsInputGrad)
    _, xbar, nbar = f.rrule(f, np.ones(2), np.array([2, 3]))[1](np.ones(2))
    np.testing.assert_array_equal(xbar, [2.0, 3.0])
    assert nbar == NoTangent()
    g = rtorch.from_function(IgnoresNeedsInputGrad, nondiff_argnums=[1])
    assert g.rrule(g, np.ones(2), np.array([2.0, 3.0]))[1](np.ones(2))[2] == NoTangent()


# -- the framework's rule, reported as the framework's -----------------------------------------


class NeedsGrad(ScaledSin):
    """``ScaledSin`` that computes only the gradients ``ctx.needs_input_grad`` asks for."""

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        x, w = ctx.saved_tensors
        NeedsGrad.asked = ctx.needs_input_grad
        gx = g * torch.cos(x) * w if ctx.needs_input_grad[0] else None
        gw = (g * torch.sin(x)).sum(0, keepdim=True) if ctx.needs_input_grad[1] else None
        return gx, gw


def test_with_tangent_notangent_reaches_the_function(testers: Any) -> None:
    """Marked once in the test, ``w`` does not require grad in the rule either."""
    f = rtorch.from_function(ScaledSin)
    # a plain tester call says it to the rule too (rruletest._marked): no NoTangent mismatch
    plain = testers.test_rrule(f, X, with_tangent(W, NoTangent()), rrule_f=f.rrule, rng=0)
    assert plain.not_checked == ("args[1]",)
    report = rtorch.from_function(NeedsGrad).test_rrule(X, with_tangent(W, NoTangent()), rng=0)
    assert NeedsGrad.asked == (True, False)
    assert report.not_checked == ("args[1]",)
    g = rtorch.from_function(NeedsGrad)
    testers.test_rrule(g, X, with_tangent(W, NoTangent()), rrule_f=g.rrule, rng=0)
    assert NeedsGrad.asked == (True, False)


def test_nondiff_argnums_reach_the_tester(testers: Any) -> None:
    """Declared once on the adapter, ``w`` is not compared with its derivative."""
    f = rtorch.from_function(ScaledSin, nondiff_argnums=[1])
    with pytest.raises(AssertionError, match=r"\[numeric\] args\[1\]"):
        testers.test_rrule(f, X, W, rrule_f=f.rrule, rng=0)
    report = f.test_rrule(X, W, rng=0)
    assert report.not_checked == ("args[1]",)
    assert "args[1]: not differentiated by the rule (in the adapter's nondiff_argnums)" in (
        report.notes
    )
    with pytest.raises(InteropError, match=r"args\[1\] is given a tangent, but the rule does not"):
        f.test_frule(X, with_tangent(W, np.ones_like(W)), rng=0)


def test_the_engines_missing_derivative_is_no_rule(testers: Any) -> None:
    """torch has no derivative of ``zeta`` in its first argument."""
    f = rtorch.from_callable(torch.special.zeta)
    x, q = np.array([2.5, 3.0]), np.array([1.5, 2.0])
    with pytest.raises(AssertionError) as info:
        testers.test_rrule(f, x, q, rrule_f=f.rrule, rng=0)
    assert (
        "raised NoRuleError: no rule for args[0]: the framework has no derivative of special_zeta "
        "with respect to args[0] (NotImplementedError: the derivative for 'zeta' is not "
        "implemented.)"
    ) in str(info.value)
    report = f.test_rrule(x, q, rng=0)
    assert report.not_checked == ("args[0]",)
    assert report.worst_rel_err < 1e-6


def test_test_rrule_returns_the_report(testers: Any) -> None:
    f = rtorch.from_function(ScaledSin)
    report = f.test_rrule(X, W, rng=0)
    assert (report.tester, report.function) == ("test_rrule", "ScaledSin")
    assert report.worst_rel_err == testers.test_rrule(f, X, W, rrule_f=f.rrule, rng=0).worst_rel_err
    assert f.test_frule(X, W, rng=0).tester == "test_frule"


def test_a_missing_forward_derivative_is_no_rule(testers: Any) -> None:
    """torch's forward mode has no rule for ``zeta`` at all: a failure, never a pass."""
    f = rtorch.from_callable(torch.special.zeta)
    x, q = np.array([2.5, 3.0]), np.array([1.5, 2.0])
    for run in (
        lambda: testers.test_frule(f, x, q, frule_f=f.frule, rng=0),
        lambda: f.test_frule(x, q, rng=0),
    ):
        with pytest.raises(AssertionError) as info:
            run()
        assert "raised NoRuleError: no rule for args[0]" in str(info.value)
        assert "Trying to use forward AD with special_zeta" in str(info.value)


class SinNoJvp(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        return g * torch.cos(x)


def test_a_function_without_jvp_has_no_frule_for_the_cross_check() -> None:
    """No ``jvp``: the frule raises ``MissingRuleError``, an ``InteropError`` that is also a
    ``NotImplementedError``, so the frule/rrule cross-check reads "no frule", not a failure."""
    f = rtorch.from_function(SinNoJvp)
    x = np.array([0.1, 0.2])
    with pytest.raises(MissingRuleError, match="defines no jvp staticmethod") as info:
        f.frule((NoTangent(), x), f, x)
    assert isinstance(info.value, InteropError)
    assert isinstance(info.value, NotImplementedError)
    assert not f.has_frule
    report = f.test_rrule(x, rng=0)
    assert "frule/rrule cross-check: not run (there is no frule for f)" in report.notes


class TimesPythonNumber(Function):
    @staticmethod
    def forward(ctx: Any, x: Any, a: Any) -> Any:
        ctx.a = a
        return x * a

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g * ctx.a, None  # torch requires None for a Python number


def test_a_python_number_argument_reaches_the_tester_as_not_differentiated(testers: Any) -> None:
    """torch never differentiates a Python number given to a Function: a correct rule failed
    test_rrule with a numeric mismatch for it, as if its None were a wrong zero."""
    f = rtorch.from_function(TimesPythonNumber)
    x = np.array([3.0, 1.0], np.float32)
    report = f.test_rrule(x, 2.5, rng=0)
    assert report.notes[-1] == (
        "args[1]: not differentiated by the rule (the framework has no rule for it (torch never "
        "differentiates a Python float; pass np.float64(x) to make it a tensor))"
    )
    assert f.rrule(f, x, 2.5)[1](np.ones(2, np.float32))[2] == NoTangent()


class ScalesGradInPlace(Function):
    """``sum(x**2)`` whose backward writes into its grad_output (correct values)."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return (x * x).sum()

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        return g.mul_(2) * x


def test_a_backward_writing_into_a_scalar_grad_output_fails(testers: Any) -> None:
    """An array ybar is shared with backward (the tester sees a mutation); a numpy scalar
    cannot be, so a loss-like rule writing into its gradient passed unseen."""
    f = rtorch.from_function(ScalesGradInPlace)
    with pytest.raises(AssertionError) as info:
        f.test_rrule(np.array([1.5, -2.0]), rng=0)
    assert (
        "[exception] pullback(ybar) raised GradOutputModifiedError: backward modified "
        "grad_outputs[0] (shape (), torch.float64) in place (version 0 -> 1): it is the "
        "caller's gradient, which a rule must not write into; compute a new tensor instead"
    ) in str(info.value)
    rtorch.from_function(SumOfSquares).test_rrule(np.array([1.5, -2.0]), rng=0)


class ScalesTangentInPlace(Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def jvp(ctx: Any, dx: Any) -> Any:
        (x,) = ctx.saved_tensors
        return dx.mul_(2 * x)


def test_a_jvp_writing_into_a_scalar_tangent_fails(testers: Any) -> None:
    f = rtorch.from_function(ScalesTangentInPlace)
    with pytest.raises(AssertionError, match=r"jvp modified tangents\[0\] \(shape \(\), "):
        f.test_frule(np.float64(0.5), rng=0)
    with pytest.raises(AssertionError, match=r"\[mutation\] xdots\[0\]"):
        f.test_frule(np.array([0.5, 2.0]), rng=0)  # shared: the tester sees it


class SumOfSquares(ScalesGradInPlace):
    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        return 2 * g * x


def test_an_adapter_has_the_signature_of_forward_without_ctx() -> None:
    """So the gate can count the arguments of a Function registered without examples."""
    import inspect

    from rruletest._plugin.cases import rule_arity
    from rruletest.rules import RuleInfo

    for cls in (ScaledSin, ScaledSinSetupContext):
        adapter = rtorch.from_function(cls)
        assert list(inspect.signature(adapter).parameters) == ["x", "w"]
        assert rule_arity(RuleInfo((adapter,), "rrule", "m", "f")) == 2
    double = rtorch.from_callable(lambda a, b, c: a * b + c)
    assert len(inspect.signature(double).parameters) == 3
