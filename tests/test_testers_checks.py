"""Each check of ``test_rrule`` alone catches its deliberately wrong rule, with its message.

Every rule lives in a fresh RuleSet (``rrule_f=rules.rrule``), never in the default one.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from testers_helpers import NT, failure, rrule_of, sin_rules

from rruletest import RuleSet, Thunk, ZeroTangent, unthunk
from rruletest.tangents import AbstractZero
from rruletest.testers import test_rrule, with_tangent

# -- check 1: a rule exists and returns (y, pullback) ---------------------------------------


def test_missing_rule() -> None:
    err = failure(lambda: test_rrule(np.tan, 0.5, rrule_f=RuleSet().rrule, rng=3))
    text, pickled = str(err).rsplit("reproduce: ", 1)
    assert text == (
        "test_rrule(np.tan, 0.5) failed\n"
        "[rule] rrule_f(f, *args): no rule: RuleSet.rrule returned None (register one with "
        "register_rrule, or pass rrule_f=)\n"
    )
    # the RuleSet no variable holds is pickled; the line loads it
    assert re.fullmatch(
        r"import numpy as np; import pickle; from rruletest import test_rrule; "
        r"_pickled = pickle.loads\(open\('.*\.pkl', 'rb'\)\.read\(\)\); "
        r"test_rrule\(np\.tan, 0\.5, rrule_f=_pickled\[0\], rng=3\)",
        pickled,
    )
    assert err.checks == ["rule"]


def test_every_rule_declining_is_a_failure_naming_them() -> None:
    # a rule returning None declines (ChainRulesCore's nothing): "no rule registered" was wrong
    rules = RuleSet()

    def apply(fn: Any, x: Any) -> Any:
        return fn(x)

    @rules.register_rrule(apply, np.sin)
    def sin_positive(fn: Any, x: Any) -> Any:
        return None if x < 0 else (np.sin(x), lambda g: (NT, NT, g * np.cos(x)))

    @rules.register_rrule(apply)
    def never(fn: Any, x: Any) -> None:
        return None

    err = failure(lambda: test_rrule(apply, np.sin, -0.5, rrule_f=rules.rrule, rng=3))
    assert err.checks == ["rule"]
    assert str(err).splitlines()[1] == (
        "[rule] rrule_f(f, *args): no rule: RuleSet.rrule returned None: every one registered "
        "declined these arguments (returned None): sin_positive (for apply(np.sin), from "
        f"{__name__}), then never (for apply, from {__name__}); no other rrule applies"
    )
    test_rrule(apply, np.sin, 0.5, rrule_f=rules.rrule, rng=3)


def test_rule_returning_no_pullback() -> None:
    rules = RuleSet()
    rules.register_rrule(np.sin)(lambda x: np.sin(x))
    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["rule"]
    assert "expected a tuple (y, pullback) with a callable pullback" in str(err)


# -- check 2: y matches f -------------------------------------------------------------------


def test_wrong_primal_alone() -> None:
    rules = rrule_of(
        np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x)), primal=lambda x: np.sin(x) + 1e-3
    )
    err = failure(lambda: test_rrule(np.sin, np.array([0.1, 0.2]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["primal"]
    assert "[primal] y: the rule's output differs from f(*args)" in str(err)


@pytest.mark.parametrize(
    ("f", "x", "primal", "text"),
    [
        # exact values (floor's), a lower precision: the values alone would pass
        (np.floor, np.array([0.5, 1.5, -2.25]), lambda x: np.floor(x).astype(np.float32),
         "y: the rule's output is float32, f(*args) gives float64: the rule computes y at a "
         "lower precision (cast its result with .astype(np.float64), or compute it as f does)"),
        (np.floor, np.array([0.5, 1.5]), lambda x: np.floor(x).astype(np.int64),
         "y: the rule's output is int64, f(*args) gives float64: the rule computes y as integers"),
        (np.conj, np.array([1.0, 2.0]) + 0j, lambda x: np.conj(x).astype(np.complex64),
         "y: the rule's output is complex64, f(*args) gives complex128: the rule computes y at "
         "a lower precision"),
    ],
)  # fmt: skip
def test_a_primal_of_a_dtype_that_cannot_hold_fs_is_caught_even_when_its_values_equal(
    f: Any, x: Any, primal: Any, text: str
) -> None:
    rules = rrule_of(f, lambda x: lambda ybar: (NT, np.zeros_like(x)), primal=primal)
    err = failure(lambda: test_rrule(f, x, rrule_f=rules.rrule, rng=0, check_fd=False))
    assert err.checks == ["primal"]
    assert f"[primal] {text}" in str(err)


def test_a_lost_dtype_inside_a_tuple_output_is_named_by_its_path() -> None:
    def two(x: Any) -> Any:
        return np.sin(x), np.cos(x)

    rules = rrule_of(
        two,
        lambda x: lambda ybar: (NT, ybar[0] * np.cos(x) - ybar[1] * np.sin(x)),
        primal=lambda x: (np.sin(x), np.cos(x).astype(np.float32)),
    )
    err = failure(lambda: test_rrule(two, np.array([0.0, 0.5]), rrule_f=rules.rrule, rng=0))
    assert "[primal] y[1]: the rule's output is float32, f(*args) gives float64" in str(err)
    assert "y[0]: the rule's output is" not in str(err)


def test_a_higher_precision_primal_is_no_loss() -> None:
    x = np.linspace(0.1, 0.9, 4, dtype=np.float32)
    rules = rrule_of(
        np.sin,
        lambda x: lambda ybar: (NT, ybar * np.cos(x)),
        primal=lambda x: np.sin(x.astype(np.float64)),
    )
    test_rrule(np.sin, x, rrule_f=rules.rrule, rng=0)


def test_lazy_primal_is_a_failure() -> None:
    rules = rrule_of(
        np.sin,
        lambda x: lambda ybar: (NT, ybar * np.cos(x)),
        primal=lambda x: (np.sin(v) for v in x),
    )
    err = failure(lambda: test_rrule(np.sin, np.array([0.1, 0.2]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["primal"]
    assert "[primal] y: the rule returned a lazy generator as its output" in str(err)


# -- check 3: the pullback's output -----------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "text"),
    [
        pytest.param(
            lambda x, ybar: [NT, ybar * np.cos(x)],
            "[output] pullback(ybar): returned a list of length 2; return a tuple "
            "(fbar, xbar_0) instead",
            id="list",
        ),
        pytest.param(
            lambda x, ybar: (ybar * np.cos(x),),
            "[output] pullback(ybar): returned a tuple of length 1; expected a tuple of length 2",
            id="short",
        ),
        pytest.param(
            lambda x, ybar: ybar * np.cos(x), "[output] pullback(ybar): returned", id="bare"
        ),
    ],
)
def test_pullback_output_shape(make: Any, text: str) -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: make(x, ybar))
    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["output"]
    assert text in str(err)


# -- check 4: types, shapes, dtypes -------------------------------------------------------------


def test_float64_cotangent_for_float32_argument_alone() -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, (ybar * np.cos(x)).astype(np.float64)))
    x = np.linspace(0, 1, 4).astype(np.float32)
    err = failure(lambda: test_rrule(np.sin, x, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["type"]
    assert (
        "[type] args[0]: dtype float64 for a float32 primal (a cotangent keeps its primal's "
        "precision: cast with .astype(np.float32))"
    ) in str(err)


def test_complex_cotangent_for_real_argument() -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, (ybar * np.cos(x)) + 0j))
    err = failure(lambda: test_rrule(np.sin, np.ones(2), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["type"]
    assert "[type] args[0]: complex dtype complex128 for a real float64 primal" in str(err)


def test_array_cotangent_for_scalar_argument() -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, np.array([ybar * np.cos(x)])))
    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=rules.rrule, rng=0))
    assert "[type] args[0]: ndarray of shape (1,) for a scalar primal (return a scalar)" in str(err)


def test_zero_tangent_for_non_differentiable_argument_gets_hint() -> None:
    def power(x: Any, n: int) -> Any:
        return x**n

    rules = rrule_of(power, lambda x, n: lambda ybar: (NT, ybar * n * x ** (n - 1), ZeroTangent()))
    err = failure(lambda: test_rrule(power, np.array([1.5, 2.0]), 3, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["notangent"]
    text = str(err)
    assert (
        "[notangent] args[1]: ZeroTangent() for a non-differentiable argument (int: not "
        "differentiable)" in text
    )
    assert "hint: the pullback should use NoTangent() rather than ZeroTangent()" in text
    assert "not checked numerically: args[1] (int: not differentiable)" in text


def test_marked_argument_requires_notangent() -> None:
    def scale(x: Any, s: float) -> Any:
        return x * s

    rules = rrule_of(scale, lambda x, s: lambda ybar: (NT, ybar * s, np.sum(ybar * x)))
    x = np.array([1.0, 2.0])
    test_rrule(scale, x, 2.5, rrule_f=rules.rrule, rng=0)
    err = failure(lambda: test_rrule(scale, x, with_tangent(2.5, NT), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["notangent"]
    assert (
        "for a non-differentiable argument (marked with_tangent(x, NoTangent())); expected "
        "NoTangent()"
    ) in str(err)
    assert "not checked numerically: args[1] (marked with_tangent(x, NoTangent()))" in str(err)


def test_a_thunk_is_judged_by_its_value() -> None:
    # Thunk(NoTangent()) is NoTangent() once unthunked, as in ChainRulesTestUtils.
    def power(x: Any, n: int) -> Any:
        return x**n

    def pullback_of(x: Any, n: int) -> Any:
        return lambda ybar: (Thunk(lambda: NT), ybar * n * x ** (n - 1), Thunk(lambda: NT))

    x = np.array([1.5, 2.0])
    test_rrule(power, x, 3, rrule_f=rrule_of(power, pullback_of).rrule, rng=0)
    zero = rrule_of(power, lambda x, n: lambda ybar: (NT, ybar * n * x ** (n - 1),
                                                      Thunk(ZeroTangent)))  # fmt: skip
    text = str(failure(lambda: test_rrule(power, x, 3, rrule_f=zero.rrule, rng=0)))
    assert "[notangent] args[1]: ZeroTangent() for a non-differentiable argument" in text


# -- check 5: numbers ------------------------------------------------------------------------


def test_wrong_derivative_alone_with_numbers() -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x) * 1.001))
    err = failure(lambda: test_rrule(np.sin, np.linspace(0, 1, 3), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["numeric"]
    text = str(err)
    assert (
        "[numeric] args[0]: the cotangent differs from the numerical vjp (dense "
        "finite-difference vjp (3 coordinates))" in text
    )
    assert "numerical reference: dense finite-difference vjp (3 coordinates)" in text
    assert err.path == "args[0]"


def test_adjoint_mode_catches_wrong_rule_and_passes_right_one() -> None:
    good = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x)))
    bad = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x) * 1.001))
    x = np.linspace(0, 1, 50)
    test_rrule(np.sin, x, rrule_f=good.rrule, vjp_mode="adjoint", rng=0)
    err = failure(lambda: test_rrule(np.sin, x, rrule_f=bad.rrule, vjp_mode="adjoint", rng=0))
    assert err.checks == ["numeric"]
    assert "adjoint identity fails along random direction 0" in str(err)
    assert "numerical reference: adjoint identity <xbar, v> == <ybar, J v>" in str(err)


def test_check_fd_false_runs_structural_checks_only() -> None:
    bad = rrule_of(np.sin, lambda x: lambda ybar: (NT, ybar * np.cos(x) * 2))
    test_rrule(np.sin, np.ones(3), rrule_f=bad.rrule, check_fd=False, rng=0)


# -- check 6: a thunked ybar --------------------------------------------------------------------


def test_thunk_mishandled_alone() -> None:
    def pullback_of(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            if isinstance(ybar, Thunk):
                return NT, np.cos(x)  # forgets to multiply by the unthunked ybar
            return NT, ybar * np.cos(x)

        return pullback

    rules = rrule_of(np.sin, pullback_of)
    err = failure(lambda: test_rrule(np.sin, np.array([0.3, 0.4]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["thunk"]
    assert "[thunk] args[0]: pullback(Thunk(ybar)) differs from pullback(ybar)" in str(err)
    test_rrule(
        np.sin, np.array([0.3, 0.4]), rrule_f=rules.rrule, rng=0, check_thunked_output_tangent=False
    )


# -- check 7: a second call -------------------------------------------------------------------


def test_stateful_pullback_alone() -> None:
    def pullback_of(x: Any) -> Any:
        acc = np.zeros_like(x)

        def pullback(ybar: Any) -> Any:
            if isinstance(unthunk(ybar), AbstractZero):
                return NT, ybar
            acc[...] += unthunk(ybar) * np.cos(x)  # accumulates across calls: wrong
            return NT, acc

        return pullback

    rules = rrule_of(np.sin, pullback_of)
    err = failure(lambda: test_rrule(np.sin, np.array([0.3, 0.4]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["repeat"]
    text = str(err)
    assert (
        "[repeat] args[0]: calling the pullback a second time gave a different result "
        "(rules must tolerate being called more than once)" in text
    )
    assert "Thunk(ybar) check skipped: the pullback does not repeat its result" in text


def test_stateful_pullback_behind_a_thunk() -> None:
    # The first result's thunk reads a buffer the second call overwrites: it is unthunked
    # before that call, so the two results are not the second one compared with itself.
    def pullback_of(x: Any) -> Any:
        buf, calls = np.zeros_like(x), [0]

        def pullback(ybar: Any) -> Any:
            calls[0] += 1
            yb = unthunk(ybar)
            buf[...] = 0 if isinstance(yb, AbstractZero) else yb * np.cos(x) * calls[0]
            return NT, Thunk(lambda: buf)

        return pullback

    rules = rrule_of(np.sin, pullback_of)
    err = failure(lambda: test_rrule(np.sin, np.array([0.3, 0.4]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["repeat"]
    assert "hint: actual is 2 times expected everywhere: a wrong constant factor?" in str(err)


# -- check 8: mutation -----------------------------------------------------------------------


def test_rule_mutating_its_input_alone() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.sin)
    def _rule(x: Any) -> Any:
        y, c = np.sin(x), np.cos(x)
        x[0] = 10.0
        return y, lambda ybar: (NT, ybar * c)

    err = failure(lambda: test_rrule(np.sin, np.array([0.5, 1.0]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["mutation"]
    assert "[mutation] args[0][0]: the rule mutated its input: was 0.5, now 10.0" in str(err)


def test_pullback_mutating_ybar_alone() -> None:
    def pullback_of(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return NT, ybar
            ybar *= np.cos(x)
            return NT, ybar

        return pullback

    rules = rrule_of(np.sin, pullback_of)
    err = failure(lambda: test_rrule(np.sin, np.array([0.5, 1.0]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["mutation"]
    assert "[mutation] ybar[0]: pullback(ybar) mutated the output cotangent" in str(err)


# -- check 9: a zero ybar ------------------------------------------------------------------------


def test_zero_ybar_must_give_zeros_alone() -> None:
    def pullback_of(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            ybar = np.ones_like(x) if isinstance(ybar, AbstractZero) else ybar
            return NT, ybar * np.cos(x)

        return pullback

    rules = rrule_of(np.sin, pullback_of, handle_zero=False)
    err = failure(lambda: test_rrule(np.sin, np.array([0.5, 1.0]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["zero"]
    assert "[zero] args[0][0]: pullback(ZeroTangent()) gave a nonzero cotangent" in str(err)


# -- exceptions ----------------------------------------------------------------------------


def test_exceptions_are_failures_chained_to_the_original() -> None:
    def boom(x: Any) -> Any:
        raise ZeroDivisionError("inside the pullback")

    rules = rrule_of(np.sin, lambda x: boom, handle_zero=False)
    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["exception"]
    assert "[exception] pullback(ybar) raised ZeroDivisionError: inside the pullback" in str(err)
    assert isinstance(err.__cause__, ZeroDivisionError)

    def bad_rule(x: Any) -> Any:
        raise KeyError("rule")

    rules2 = RuleSet()
    rules2.register_rrule(np.sin)(bad_rule)
    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=rules2.rrule, rng=0))
    assert "[exception] rrule_f(f, *args) raised KeyError: 'rule'" in str(err)
    assert isinstance(err.__cause__, KeyError)


def test_f_raising_is_a_failure() -> None:
    def f(x: Any) -> Any:
        raise ValueError("f broke")

    rules = rrule_of(f, lambda x: lambda ybar: (NT, ybar), primal=lambda x: x)
    err = failure(lambda: test_rrule(f, 0.5, rrule_f=rules.rrule, rng=0))
    assert "[exception] f(*args) raised ValueError: f broke" in str(err)
    assert isinstance(err.__cause__, ValueError)


def test_unexpected_values_become_failures_not_internal_errors() -> None:
    class Weird:
        """A cotangent whose comparison raises everywhere."""

        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no comparing me")

        __hash__ = None  # type: ignore[assignment]

    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, Weird()))
    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=rules.rrule, rng=0))
    assert "[type] args[0]: Weird for a float primal (return a number)" in str(err)


def test_internal_errors_are_reported_as_failures_with_the_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rruletest.testers import _pullback_checks

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("internal bug")

    monkeypatch.setattr(_pullback_checks, "fit_problems", broken)
    err = failure(lambda: test_rrule(np.sin, 0.5, rrule_f=sin_rules().rrule, rng=0))
    assert err.checks == ["internal"]
    assert "[internal] rruletest while checking the rule raised RuntimeError: internal bug" in str(
        err
    )
    assert isinstance(err.__cause__, RuntimeError)


def test_f_raising_at_perturbed_inputs_names_the_domain() -> None:
    def picky(x: float) -> float:
        if x < 0.5:
            raise RuntimeError("picky only takes x >= 0.5")
        return x * x

    rules = rrule_of(picky, lambda x: lambda ybar: (NT, 2 * x * ybar))
    err = failure(lambda: test_rrule(picky, 0.5, rrule_f=rules.rrule, rng=0))
    assert err.checks == ["numeric"]
    text = str(err)
    assert (
        "[numeric] f at inputs perturbed by the finite differences raised RuntimeError: picky "
        "only takes x >= 0.5\n  hint: if f is defined only on part of its inputs, declare the "
        "rule's domain (register_rrule(..., domain=...)) or pass an fdm with a smaller max_range"
    ) in text
    assert isinstance(err.__cause__, RuntimeError)


def _exp64(x: Any) -> Any:
    """float64 out of float32 in, computed in float64."""
    return np.exp(np.asarray(x, dtype=np.float64))


def _exp64_rules(factor: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(_exp64)
    def _(x: Any) -> Any:
        y = np.exp(x).astype(np.float64) * factor  # computed in float32: 6e-8 off
        return y, lambda ybar: (NT, np.asarray(unthunk(ybar) * np.exp(x), dtype=np.float32))

    return rules


def test_a_float64_primal_from_float32_inputs_is_compared_at_float32_tolerance() -> None:
    x = np.linspace(0.1, 0.9, 9, dtype=np.float32)
    test_rrule(_exp64, x, rrule_f=_exp64_rules(1.0).rrule, rng=0)
    err = failure(lambda: test_rrule(_exp64, x, rrule_f=_exp64_rules(1.001).rrule, rng=0))
    assert "y: the rule's output differs from f(*args)" in str(err)


# -- a cotangent returned as a thunk: its problems say so ----------------------------------


def test_a_wrong_thunked_cotangent_is_caught_and_said_to_be_a_thunk() -> None:
    rules = rrule_of(np.sin, lambda x: lambda ybar: (NT, Thunk(lambda: unthunk(ybar) * np.sin(x))))
    err = failure(lambda: test_rrule(np.sin, np.array([0.3, 1.2]), rrule_f=rules.rrule, rng=0))
    assert err.checks == ["numeric"]
    assert (
        "hint: args[0] was returned as a thunk (Thunk): what was checked is its unthunked "
        "value (unthunk(...))"
    ) in str(err)


def test_a_thunked_ydot_of_the_wrong_shape_is_said_to_be_a_thunk() -> None:
    from rruletest.testers import test_frule

    rules = RuleSet("t")
    rules.register_frule(np.cos)(lambda d, x: (np.cos(x), Thunk(lambda: (-np.sin(x) * d[1])[:1])))
    err = failure(lambda: test_frule(np.cos, np.array([0.3, 1.2]), frule_f=rules.frule, rng=0))
    assert "[type] ydot: shape (1,) for a primal of shape (2,)" in str(err)
    assert "hint: ydot was returned as a thunk (Thunk)" in str(err)


def test_a_thunk_that_raises_for_a_zero_ybar_is_not_called_a_nonzero_cotangent() -> None:
    rules = rrule_of(
        np.sin,
        lambda x: lambda ybar: (NT, Thunk(lambda: unthunk(ybar).astype(float) * np.cos(x))),
        handle_zero=False,
    )
    err = failure(lambda: test_rrule(np.sin, np.array([0.3, 1.2]), rrule_f=rules.rrule, rng=0))
    assert "gave a nonzero cotangent" not in str(err)
    assert (
        "[zero] args[0]: the cotangent pullback(ZeroTangent()) gave: it could not be read "
        "(unthunking it raised AttributeError: ZeroTangent() has no attribute 'astype'"
    ) in str(err)
