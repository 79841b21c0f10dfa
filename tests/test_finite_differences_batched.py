"""The batched reference for rules with a gufunc core signature: exact per element, its calls
set by the core size, not the batch."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, RuleSet, ZeroTangent, test_frule, test_rrule, unthunk
from rruletest.finite_differences.batched import batched_jvp, batched_vjp
from rruletest.rules.info import Signature


def _softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_vjp(x: Any, ybar: Any) -> Any:
    y = _softmax(x)
    return y * (ybar - (y * ybar).sum(axis=-1, keepdims=True))


def test_signatures_parse_and_print() -> None:
    sig = Signature.parse(" (m, k),(k,n) -> (m,n)")
    assert sig.inputs == (("m", "k"), ("k", "n"))
    assert sig.outputs == (("m", "n"),)
    assert str(sig) == "(m,k),(k,n)->(m,n)"
    assert Signature.parse("(n)->()").outputs == ((),)


@pytest.mark.parametrize("text", ["(n)", "n->n", "(n)->(n", "(n-1)->()"])
def test_malformed_signatures_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="is not a gufunc core signature") as info:
        Signature.parse(text)
    assert str(info.value).startswith(f"signature={text!r} is not")


def test_softmax_rows_exact_per_element() -> None:
    rng = np.random.default_rng(0)
    x, ybar = rng.standard_normal((50, 6)), rng.standard_normal((50, 6))
    (est,) = batched_vjp(None, "(n)->(n)", _softmax, ybar, x)
    assert np.all(np.abs(est.value - _softmax_vjp(x, ybar)) <= 10 * est.error + 1e-12)
    assert np.max(est.error) < 1e-10


def _calls(rows: int) -> int:
    calls = [0]

    def f(x: Any) -> Any:
        calls[0] += 1
        return _softmax(x)

    x = np.random.default_rng(rows).standard_normal((rows, 8))
    batched_vjp(None, "(n)->(n)", f, np.ones((rows, 8)), x)
    return calls[0]


def test_calls_do_not_grow_with_the_batch() -> None:
    small, large = _calls(10), _calls(3000)
    assert small <= 8 * 16 + 8
    assert large <= 1.5 * small  # retry stages, not rows, make the difference


def _work(f: Any, x: Any) -> float:
    """Batch members evaluated per member of ``x`` (the vjp of ``f`` declared ``(n)->(n)``)."""
    members = [0]

    def g(x: Any) -> Any:
        members[0] += x.shape[0]
        return f(x)

    batched_vjp(None, "(n)->(n)", g, np.ones(x.shape), x)
    return members[0] / x.shape[0]


def _strict_log(x: Any) -> Any:
    if np.any(x <= 0):
        raise ValueError("log of a non-positive number")
    return np.log(x) * x[..., ::-1]


def test_work_per_member_does_not_grow_with_the_batch() -> None:
    small = _work(_softmax, np.random.default_rng(10).standard_normal((10, 8)))
    large = _work(_softmax, np.random.default_rng(3000).standard_normal((3000, 8)))
    assert small <= 8 * 16
    assert large <= small + 1


def _log(x: Any) -> Any:
    return np.log(x) * x[..., ::-1]


def _log_vjp(x: Any) -> Any:
    return 1 / x * x[:, ::-1] + np.log(x[:, ::-1])


def test_a_retry_evaluates_only_the_members_that_need_it() -> None:
    x = np.random.default_rng(5).uniform(1.0, 2.0, (2000, 4))
    plain = _work(_log, x)
    x[7, 2] = 1e-5  # this member's stencils step below 0: its steps shrink, its alone
    assert _work(_log, x) <= plain + 0.1
    (est,) = batched_vjp(None, "(n)->(n)", _log, np.ones(x.shape), x)
    np.testing.assert_allclose(est.value, _log_vjp(x), rtol=1e-7)


def _vjp_calls(x: Any, ybar: Any) -> tuple[int, Any]:
    calls = [0]

    def f(x: Any) -> Any:
        calls[0] += 1
        return _softmax(x)

    (est,) = batched_vjp(None, "(n)->(n)", f, ybar, x)
    return calls[0], est


def test_the_fallbacks_of_every_core_coordinate_share_their_calls() -> None:
    # A member's stencil across 0 is estimated again on its side of 0 (a fallback). One such
    # member in every core coordinate costs the calls of one: the fallbacks of all coordinates
    # run on one sub-batch, a member in it once per coordinate it needs.
    rng = np.random.default_rng(5)
    x, ybar = rng.uniform(1.0, 2.0, (500, 6)), rng.standard_normal((500, 6))
    one, every = x.copy(), x.copy()
    one[7, 2] = 1e-9
    for c, b in enumerate([100, 9, 7, 50, 51, 52]):
        every[b, c] = 1e-9 * (-1) ** c
    plain, _ = _vjp_calls(x, ybar)
    calls_one, _ = _vjp_calls(one, ybar)
    calls_every, est = _vjp_calls(every, ybar)
    assert plain < calls_one == calls_every
    assert np.all(np.abs(est.value - _softmax_vjp(every, ybar)) <= 10 * est.error + 1e-12)
    assert np.max(est.error) < 1e-10
    # the jvp settles the same members the same way
    dot = rng.standard_normal(x.shape)
    jvp = batched_jvp(None, "(n)->(n)", _softmax, (every,), (dot,))
    exact = _softmax_vjp(every, dot)  # softmax's Jacobian is symmetric
    assert np.all(np.abs(jvp.value - exact) <= 10 * jvp.error + 1e-12)


def test_a_function_raising_for_the_whole_batch() -> None:
    # One member outside the domain voids the evaluation of its whole sub-batch; the others'
    # values come back at the next stage that re-evaluates them, on a sub-batch again.
    x = np.random.default_rng(5).uniform(1.0, 2.0, (200, 4))
    x[7, 2] = 1e-5
    (est,) = batched_vjp(None, "(n)->(n)", _strict_log, np.ones(x.shape), x)
    np.testing.assert_allclose(est.value, _log_vjp(x), rtol=1e-7)


def test_matmul_with_a_shared_operand() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((5, 3, 4)), rng.standard_normal((4, 2))
    ybar = rng.standard_normal((5, 3, 2))
    ea, eb = batched_vjp(None, "(m,k),(k,n)->(m,n)", np.matmul, ybar, a, b)
    np.testing.assert_allclose(ea.value, ybar @ b.T, atol=1e-10)
    np.testing.assert_allclose(eb.value, np.einsum("bmk,bmn->kn", a, ybar), atol=1e-10)
    da, db = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
    est = batched_jvp(None, "(m,k),(k,n)->(m,n)", np.matmul, (a, b), (da, db))
    np.testing.assert_allclose(est.value, da @ b + a @ db, atol=1e-10)


def test_complex_inputs_and_a_reduction() -> None:
    rng = np.random.default_rng(2)
    z = rng.standard_normal((6, 3)) + 1j * rng.standard_normal((6, 3))
    ybar = rng.standard_normal(6)
    (est,) = batched_vjp(None, "(n)->()", lambda z: np.sum(np.abs(z) ** 2, axis=-1), ybar, z)
    np.testing.assert_allclose(est.value, 2 * ybar[:, None] * z, atol=1e-9)


def _softmax_rules(off: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(_softmax, signature="(n)->(n)")
    def _rrule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            g = _softmax_vjp(x, ybar)
            g[len(g) // 2, 3] *= 1 + off
            return NoTangent(), g

        return _softmax(x), pullback

    @rules.register_frule(_softmax, signature="(n)->(n)")
    def _frule(tangents: Any, x: Any) -> Any:
        y = _softmax(x)
        xdot = tangents[1]
        return y, y * (xdot - (y * xdot).sum(axis=-1, keepdims=True)) * (1 + off)

    return rules


def test_the_testers_use_the_declared_signature() -> None:
    x = np.random.default_rng(3).standard_normal((400, 6))
    report = test_rrule(_softmax, x, rrule_f=_softmax_rules(0.0).rrule, rng=0)
    assert report.numerical == "batched vjp over the core signature (n)->(n) (declared by the rule)"
    report = test_frule(_softmax, x, frule_f=_softmax_rules(0.0).frule, rng=0)
    assert report.numerical == "batched jvp over the core signature (n)->(n) (declared by the rule)"


def test_one_wrong_element_of_a_batch_is_named() -> None:
    x = np.random.default_rng(4).standard_normal((400, 6))
    with pytest.raises(AssertionError) as info:
        test_rrule(_softmax, x, rrule_f=_softmax_rules(1e-3).rrule, rng=0)
    text = str(info.value)
    assert "args[0]: 1 of 2400 elements differ" in text
    assert "at [200, 3]" in text


def test_sub_batches_over_two_batch_axes_with_a_broadcast_operand() -> None:
    rng = np.random.default_rng(8)
    a = rng.uniform(1.0, 2.0, (2, 3, 4, 5))
    b = rng.standard_normal((3, 5, 2))  # batch (3,): broadcast against a's (2, 3)
    a[1, 2, 0, 3] = 1e-5  # near log's edge: this member alone is re-worked, as a sub-batch
    ybar = rng.standard_normal((2, 3, 4, 2))
    shapes: list[tuple[int, ...]] = []

    def f(a: Any, b: Any) -> Any:
        shapes.append(a.shape)
        return np.log(a) @ b

    ea, eb = batched_vjp(None, "(m,k),(k,n)->(m,n)", f, ybar, a, b)
    np.testing.assert_allclose(ea.value, (ybar @ np.swapaxes(b, -1, -2)) / a, rtol=1e-7)
    np.testing.assert_allclose(
        eb.value, np.einsum("xbmk,xbmn->bkn", np.log(a), ybar), rtol=1e-7, atol=1e-9
    )
    assert (1, 4, 5) in shapes  # one member evaluated on its own


def _normalise_rules(frule: bool) -> RuleSet:
    """A correct rule of a function that couples its rows, wrongly declared ``(n)->(n)``."""
    rules = RuleSet("couples")

    def f(x: Any) -> Any:
        return x / np.sqrt((x**2).sum())

    @rules.register_rrule(f, signature="(n)->(n)")
    def f_rrule(x: Any) -> Any:
        s = np.sqrt((x**2).sum())
        y = x / s

        def pullback(g: Any) -> Any:
            if isinstance(g, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            g = np.asarray(unthunk(g))
            return NoTangent(), (g - y * (y * g).sum()) / s

        return y, pullback

    @rules.register_frule(f, signature="(n)->(n)")
    def f_frule(tangents: Any, x: Any) -> Any:
        s = np.sqrt((x**2).sum())
        y = x / s
        xdot = tangents[1]
        return y, (xdot - y * (y * xdot).sum()) / s

    rules.f = f  # type: ignore[attr-defined]
    return rules


@pytest.mark.parametrize("tester", ["rrule", "frule"])
def test_a_declaration_that_does_not_hold_is_a_failure_of_its_own(tester: str) -> None:
    rules = _normalise_rules(tester == "frule")
    x = np.random.default_rng(6).standard_normal((40, 3))
    run = (
        functools.partial(test_rrule, rrule_f=rules.rrule)
        if tester == "rrule"
        else (functools.partial(test_frule, frule_f=rules.frule))
    )
    with pytest.raises(AssertionError) as info:
        run(rules.f, x, rng=0)  # type: ignore[attr-defined]
    assert info.value.checks == ["signature"]  # type: ignore[attr-defined]
    text = str(info.value)
    assert (
        "[signature] f: the rule declares the core signature (n)->(n), but f does not act on "
        "each batch member alone: the members [39, 20, 0] evaluated as a batch of their own "
        "differ from the same members of the whole batch's output"
    ) in text
    # The tangents were checked against a reference that does not rest on the declaration,
    # and they are right.
    dense = "dense finite-difference vjp (120 coordinates)"
    assert (
        f"numerical reference: {dense if tester == 'rrule' else 'finite-difference jvp'}," in text
    )


def test_a_call_the_signature_does_not_describe_uses_another_reference() -> None:
    # A number has no core dimension n: the rule is tested there as any rule, with a note.
    rules = RuleSet("sin")
    rules.register_rrule(np.sin, signature="(n)->(n)")(
        lambda x: (np.sin(x), lambda g: (NoTangent(), unthunk(g) * np.cos(x)))
    )
    report = test_rrule(np.sin, np.float64(0.5), rrule_f=rules.rrule, rng=0)
    assert report.numerical is not None
    assert not report.numerical.startswith("batched")
    assert (
        "the rule's core signature (n)->(n) does not fit this call (argument 0 has shape (), "
        "fewer dimensions than its core (n)): not used"
    ) in report.notes


@pytest.mark.parametrize(
    ("sig", "f", "xs"),
    [
        ("(n)->(n)", _softmax, [np.zeros((0, 5))]),
        ("(n)->()", lambda x: x.sum(axis=-1), [np.zeros((3, 0, 2))]),
        ("(m,k),(k,n)->(m,n)", np.matmul, [np.zeros((0, 3, 2)), np.ones((2, 3))]),
    ],
)
def test_an_empty_batch_has_zero_partials(sig: str, f: Any, xs: list[Any]) -> None:
    y = f(*xs)
    ests = batched_vjp(None, sig, f, np.ones(y.shape), *xs)
    for est, x in zip(ests, xs, strict=True):
        assert est.value.shape == x.shape
        assert not np.any(est.value)
        assert not np.any(est.error)
    jvp = batched_jvp(None, sig, f, xs, [np.ones(x.shape) for x in xs])
    assert jvp.value.shape == y.shape


def _doubling_sin(x: Any) -> Any:
    x *= 2.0  # mutates its argument
    return np.sin(x)


def test_a_function_that_mutates_its_argument_is_given_copies() -> None:
    rng = np.random.default_rng(9)
    x, b = rng.standard_normal((6, 3)), rng.standard_normal((3, 2))
    x0, b0 = x.copy(), b.copy()
    (est,) = batched_vjp(None, "(n)->(n)", _doubling_sin, np.ones(x.shape), x)
    np.testing.assert_array_equal(x, x0)
    assert np.all(np.abs(est.value - 2 * np.cos(2 * x0)) <= 10 * est.error + 1e-12)
    jvp = batched_jvp(None, "(n)->(n)", _doubling_sin, (x,), (np.ones(x.shape),))
    np.testing.assert_array_equal(x, x0)
    assert np.all(np.abs(jvp.value - 2 * np.cos(2 * x0)) <= 10 * jvp.error + 1e-12)

    def scaled(a: Any, b: Any) -> Any:  # mutates the operand shared by every member
        b *= 2.0
        return a @ b

    ea, eb = batched_vjp(None, "(m,k),(k,n)->(m,n)", scaled, np.ones((6, 2)), x, b)
    np.testing.assert_array_equal(b, b0)
    np.testing.assert_allclose(ea.value, np.ones((6, 2)) @ (2 * b0).T, atol=1e-9)
    np.testing.assert_allclose(eb.value, 2 * x0.T @ np.ones((6, 2)), atol=1e-9)


def test_a_mutating_function_is_a_mutation_finding_alone() -> None:
    # The primal mutates its input as f does: the one problem is the mutation (as with the
    # dense reference), not a reference taken at the mutated input.
    rules = RuleSet("doubling")

    @rules.register_rrule(_doubling_sin, signature="(n)->(n)")
    def _rrule(x: Any) -> Any:
        x2 = 2.0 * x
        x[...] = x2

        def pullback(g: Any) -> Any:
            g = unthunk(g)
            if isinstance(g, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            return NoTangent(), 2 * np.cos(x2) * g

        return np.sin(x2), pullback

    x = np.random.default_rng(0).standard_normal((4, 3))
    with pytest.raises(AssertionError) as info:
        test_rrule(_doubling_sin, x, rrule_f=rules.rrule, rng=0)
    assert info.value.checks == ["mutation"]  # type: ignore[attr-defined]
    assert "batched vjp over the core signature (n)->(n)" in str(info.value)


def test_a_low_precision_number_tangent_is_not_a_zero_one() -> None:
    for number in (np.float32, np.float16, np.complex64):
        est = batched_jvp(None, "()->()", np.sin, [number(0.5)], [number(1.0)])
        assert abs(est.value - np.cos(0.5)) <= 10 * est.error + 1e-3
        assert est.error > 0
    rules = RuleSet("sin32")
    rules.register_frule(np.sin, signature="()->()")(lambda t, x: (np.sin(x), np.cos(x) * t[1]))
    report = test_frule(np.sin, np.float32(0.5), frule_f=rules.frule, rng=0)
    assert report.numerical is not None
    assert report.numerical.startswith("batched jvp")


def _norm(x: Any) -> Any:
    return np.linalg.norm(x, axis=-1)


def _norm_rules(off: float, rows: int) -> RuleSet:
    """Rules of a norm over the last axis, one element of each tangent ``off`` relatively."""
    rules = RuleSet("norm")

    @rules.register_rrule(_norm, signature="(n)->()")
    def _rrule(x: Any) -> Any:
        def pullback(g: Any) -> Any:
            g = unthunk(g)
            if isinstance(g, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            xbar = g[..., None] * x / _norm(x)[..., None]
            xbar[rows // 2, 3] *= 1 + off
            return NoTangent(), xbar

        return _norm(x), pullback

    @rules.register_frule(_norm, signature="(n)->()")
    def _frule(tangents: Any, x: Any) -> Any:
        ydot = np.sum(tangents[1] * x, axis=-1) / _norm(x)
        ydot[rows // 2] *= 1 + off
        return _norm(x), ydot

    return rules


@pytest.mark.parametrize(("dtype", "off"), [(np.float32, 1e-3), (np.float16, 0.1)])
def test_low_precision_batches_are_estimated_at_float64_copies(dtype: Any, off: float) -> None:
    # At the float32 (float16) point itself the estimates' errors hide a wrong element that
    # the dense references catch; at float64 copies (where f agrees) they do not.
    rows = 300 if dtype == np.float32 else 30
    x = np.random.default_rng(0).standard_normal((rows, 5)).astype(dtype)
    report = test_frule(_norm, x, frule_f=_norm_rules(0.0, rows).frule, rng=0)
    assert report.numerical == (
        "batched jvp over the core signature (n)->() (declared by the rule, evaluated in float64)"
    )
    report = test_rrule(_norm, x, rrule_f=_norm_rules(0.0, rows).rrule, rng=0)
    assert report.numerical == (
        "batched vjp over the core signature (n)->() (declared by the rule, evaluated in float64)"
    )
    with pytest.raises(AssertionError) as info:
        test_frule(_norm, x, frule_f=_norm_rules(off, rows).frule, rng=0)
    assert f"ydot: 1 of {rows} elements differ" in str(info.value)
    assert f"at [{rows // 2}]" in str(info.value)


def _relu_softmax(x: Any) -> Any:
    return _softmax(np.maximum(x, 0.0))


def _relu_softmax_rules(off: float) -> RuleSet:
    """Rules of ``softmax(relu(x))`` (relu's derivative 0 at 0), one element ``off``."""
    rules = RuleSet("relu_softmax")

    @rules.register_rrule(_relu_softmax, signature="(n)->(n)")
    def _rrule(x: Any) -> Any:
        def pullback(g: Any) -> Any:
            g = unthunk(g)
            if isinstance(g, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            xbar = _softmax_vjp(np.maximum(x, 0.0), g) * (x > 0)
            xbar[1, 2] *= 1 + off
            return NoTangent(), xbar

        return _relu_softmax(x), pullback

    @rules.register_frule(_relu_softmax, signature="(n)->(n)")
    def _frule(tangents: Any, x: Any) -> Any:
        ydot = _softmax_vjp(np.maximum(x, 0.0), tangents[1] * (x > 0))  # (symmetric)
        ydot[1, 2] *= 1 + off
        return _relu_softmax(x), ydot

    return rules


@pytest.mark.parametrize("tester", ["rrule", "frule"])
def test_a_right_rule_at_kinks_passes_with_a_note(tester: str) -> None:
    # relu at 0 in some members: a central difference there averages relu's two slopes; the
    # one-sided walk (as for the dense references) accepts the rule's one-sided derivative.
    x = np.random.default_rng(0).standard_normal((20, 4))
    x[::3, 1] = 0.0
    run = test_rrule if tester == "rrule" else test_frule
    kw = "rrule_f" if tester == "rrule" else "frule_f"
    report = run(_relu_softmax, x, rng=0, **{kw: getattr(_relu_softmax_rules(0.0), tester)})
    assert report.numerical is not None
    assert report.numerical.startswith(f"batched {'vjp' if tester == 'rrule' else 'jvp'}")
    assert any("is at a kink along the tangent" in n for n in report.notes)
    with pytest.raises(AssertionError) as info:
        run(_relu_softmax, x, rng=0, **{kw: getattr(_relu_softmax_rules(1e-3), tester)})
    where = "args[0]" if tester == "rrule" else "ydot"
    assert f"{where}: 1 of 80 elements differ" in str(info.value)
    assert "at [1, 2]" in str(info.value)


def _sqrt_scaled(x: Any) -> Any:
    return np.sqrt(x) * x.sum(axis=-1, keepdims=True)


def _sqrt_scaled_vjp(x: Any, ybar: Any) -> Any:
    s = x.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return ybar * s / (2 * np.sqrt(x)) + (ybar * np.sqrt(x)).sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("edge", [0.0, 1e-12])
def test_steps_shrinking_at_a_domain_edge_share_their_calls(edge: float) -> None:
    # A member at (or next to) sqrt's edge has its steps shrunk, its bound estimator's first:
    # the shrinking runs on one problem of every coordinate's such members, so one of them in
    # every core coordinate costs the calls of one (at 0: 24 calls per coordinate before).
    rng = np.random.default_rng(1)
    x, ybar = rng.uniform(1.0, 2.0, (500, 8)), rng.standard_normal((500, 8))
    one, every = x.copy(), x.copy()
    one[11, 0] = edge
    at = [((37 * c + 11) % 500, c) for c in range(8)]
    for b, c in at:
        every[b, c] = edge
    counts = []
    for point in (one, every):
        calls = [0]

        def f(x: Any, calls: list[int] = calls) -> Any:
            calls[0] += 1
            return _sqrt_scaled(x)

        (est,) = batched_vjp(None, "(n)->(n)", f, ybar, point)
        counts.append(calls[0])
    assert counts[0] == counts[1]
    void = ~np.isfinite(est.error)
    assert np.argwhere(void).tolist() == (sorted([list(i) for i in at]) if edge == 0 else [])
    exact = _sqrt_scaled_vjp(every, ybar)
    ok = np.abs(est.value - exact) <= 10 * est.error + 1e-9 * np.abs(exact)
    assert np.all(ok | void)
