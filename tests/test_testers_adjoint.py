"""``test_rrule`` beyond the dense limit: the adjoint identity names the wrong elements."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, RuleSet, ZeroTangent, test_rrule, unthunk

N = 50_000


def _sin(x: Any) -> Any:
    return np.sin(x)


def _rules(off: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(_sin)
    def _rrule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            g = ybar * np.cos(x)
            g[N // 2] *= 1 + off
            return NoTangent(), g

        return np.sin(x), pullback

    return rules


def _x() -> Any:
    x = np.random.default_rng(0).uniform(-3, 3, N)
    x[N // 2] = 0.5
    return x


def test_a_correct_rule_passes_with_the_adjoint_reference() -> None:
    report = test_rrule(_sin, _x(), rrule_f=_rules(0.0).rrule, rng=1)
    assert (report.numerical or "").startswith(
        "adjoint identity <xbar, v> == <ybar, J v> along 4 random sign directions v "
        "(50000 input coordinates > 2000"
    )


@pytest.mark.parametrize("seed", range(3))
def test_one_element_off_by_a_thousandth_is_named(seed: int) -> None:
    with pytest.raises(AssertionError) as info:
        test_rrule(_sin, _x(), rrule_f=_rules(1e-3).rrule, rng=seed)
    text = str(info.value)
    assert "[numeric] args: adjoint identity fails along random direction" in text
    assert "the wrong elements, found by group testing, follow" in text
    assert (
        "[numeric] args[0]: the cotangent differs from the numerical vjp (adjoint identity, "
        "elements located by group testing)"
    ) in text
    assert f"args[0]: 1 of {N} elements differ" in text
    assert f"at [{N // 2}]" in text
    assert "max rel diff 0.001 at" in text


def test_float32_functions_are_noted_as_evaluated_in_float64() -> None:
    x = _x().astype(np.float32)
    report = test_rrule(_sin, x, rrule_f=_rules(0.0).rrule, rng=2)
    assert "random sign directions v (evaluated in float64)" in (report.numerical or "")


def _cumsum(x: Any) -> Any:
    return np.cumsum(x)


def _cumsum_rules(off: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(_cumsum)
    def _rrule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            g = np.cumsum(unthunk(ybar)[::-1])[::-1].copy()
            g[1234] *= 1 + off
            return NoTangent(), g

        return np.cumsum(x), pullback

    return rules


@pytest.mark.parametrize("seed", range(6))
def test_a_float32_accumulation_is_allowed_the_rounding_it_accumulates(seed: int) -> None:
    """A correct float32 cumsum pullback carries rounding correlated along the sum (the
    function's own float32 output is ~9 ulps off at 5000 elements, against ~0.4 for an
    elementwise one); it used to fail 2 seeds in 5 (gap 0.023 > tolerance 0.0178) although
    its rule is exact. An element 1% off is still found."""
    x = np.random.default_rng(seed).uniform(0.2, 0.9, 5000).astype(np.float32)
    report = test_rrule(_cumsum, x, rrule_f=_cumsum_rules(0.0).rrule, rng=seed)
    assert "(evaluated in float64)" in (report.numerical or "")
    with pytest.raises(AssertionError) as info:
        test_rrule(_cumsum, x, rrule_f=_cumsum_rules(1e-2).rrule, rng=seed)
    assert "args[0]: 1 of 5000 elements differ" in str(info.value)
    assert "at [1234]" in str(info.value)


def _cummax(x: Any) -> Any:
    return np.maximum.accumulate(x)


def _cummax_rules(off: float) -> RuleSet:
    """A running maximum whose pullback sums, in the input's dtype, every output cotangent
    into the element holding the maximum so far (``np.add.at``)."""
    rules = RuleSet()

    @rules.register_rrule(_cummax)
    def _rrule(x: Any) -> Any:
        y = np.maximum.accumulate(x)
        held = np.maximum.accumulate(np.where(x == y, np.arange(x.size), 0))

        def pullback(ybar: Any) -> Any:
            xbar = np.zeros_like(x)
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), xbar
            np.add.at(xbar, held, unthunk(ybar).astype(x.dtype))
            xbar[held[-1]] *= 1 + off
            return NoTangent(), xbar

        return y, pullback

    return rules


def test_a_float32_pullback_is_allowed_the_rounding_of_its_own_sums() -> None:
    """The running maximum is exact in float32, but its pullback adds some 20000 cotangents
    into one element in float32: about 20 ulps of it. This rule is right and used to fail
    (gap 0.000613 > tolerance 0.000584); what its float32 arithmetic rounds is now measured
    against the rule run in float64 and allowed. The maximum's element off by 1e-3 is still
    found: the float64 run carries the same error."""
    x = np.random.default_rng(2).standard_normal(20_000).astype(np.float32)
    report = test_rrule(_cummax, x, rrule_f=_cummax_rules(0.0).rrule, rng=2)
    note = next(n for n in report.notes if n.startswith("the rule's own float32 arithmetic"))
    assert note.endswith(
        "ulps per element (against the rule run in float64): allowed in the adjoint identity"
    )
    with pytest.raises(AssertionError) as info:
        test_rrule(_cummax, x, rrule_f=_cummax_rules(1e-3).rrule, rng=2)
    text = str(info.value)
    assert "args[0]: 1 of 20000 elements differ" in text
    held = int(np.flatnonzero(x == np.maximum.accumulate(x))[-1])
    assert f"at [{held}]" in text


def test_a_float64_rule_is_not_run_again() -> None:
    """Nothing is low precision: the identity's tolerance is its own, and a wrong rule fails
    without a second call of the rule."""
    calls: list[int] = []
    rules = _cummax_rules(1e-3)
    x = np.random.default_rng(2).standard_normal(20_000)

    def counted(f: Any, *args: Any) -> Any:
        calls.append(1)
        return rules.rrule(f, *args)

    with pytest.raises(AssertionError):
        test_rrule(_cummax, x, rrule_f=counted, rng=2)
    assert len(calls) == 1


def _sort_rules(off: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(np.sort)
    def _rrule(x: Any) -> Any:
        perm = np.argsort(x)

        def pullback(ybar: Any) -> Any:
            xbar = np.zeros_like(x)
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), xbar
            xbar[perm] = unthunk(ybar)
            xbar[perm[100]] *= 1 + off
            return NoTangent(), xbar

        return x[perm], pullback

    return rules


def test_a_near_tie_located_by_group_testing_is_checked_against_both_sides() -> None:
    """Two entries one ulp apart: sort has a kink within any step along a direction that
    separates them, and the central difference averages the two slopes. Group testing names
    the two elements; checked against the one-sided derivatives, the rule's values (one side
    each) are accepted with a note, and an element 1% off elsewhere still fails."""
    x = np.random.default_rng(0).standard_normal(5000)
    x[4398] = np.nextafter(x[3311], np.inf)
    seen = 0
    for seed in range(3):  # (a direction with equal signs on the pair crosses no kink)
        report = test_rrule(np.sort, x, rrule_f=_sort_rules(0.0).rrule, rng=seed)
        kinks = [n for n in report.notes if "is at a kink along the tangent" in n]
        assert [k.split()[0] for k in kinks] in ([], ["args[0][3311]", "args[0][4398]"])
        assert all(k.endswith("between them (accepted)") for k in kinks)
        seen += bool(kinks)
    assert seen
    with pytest.raises(AssertionError) as info:
        test_rrule(np.sort, x, rrule_f=_sort_rules(1e-2).rrule, rng=0)
    assert "args[0]: 1 of 5000 elements differ" in str(info.value)


def test_a_direction_across_more_kinks_than_group_testing_names_is_checked_along_itself() -> None:
    """relu at 715 exact zeros (a rule giving 0 there): every direction crosses a kink at
    each, too many for group testing to name alone; the direction itself is checked against
    its one-sided derivatives, and the rule's value, one side's, is accepted with a note."""
    rules = RuleSet()

    def relu(x: Any) -> Any:
        return np.maximum(x, 0.0)

    @rules.register_rrule(relu)
    def _relu_rrule(x: Any) -> Any:
        return relu(x), lambda ybar: (NoTangent(), ybar * (x > 0))

    x = np.random.default_rng(0).standard_normal(5000)
    x[::7] = 0.0
    report = test_rrule(relu, x, rrule_f=rules.rrule, rng=0)
    across = [n for n in report.notes if "of the adjoint identity crosses a kink" in n]
    assert across
    assert all(n.endswith("between them (accepted)") for n in across)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_exact_tie_moves_together_and_a_wrong_element_is_still_named(dtype: Any) -> None:
    """Two equal entries: the directions move the pair together (along them sort is
    differentiable, and either order of the pair gives the same <xbar, v>), and group testing
    keeps the pair in one half: an element 1% off elsewhere is named."""
    x = np.random.default_rng(0).standard_normal(5000).astype(dtype)
    x[4398] = x[3311]
    for seed in range(3):
        test_rrule(np.sort, x, rrule_f=_sort_rules(0.0).rrule, rng=seed)
    with pytest.raises(AssertionError) as info:
        test_rrule(np.sort, x, rrule_f=_sort_rules(1e-2).rrule, rng=0)
    assert "args: 2 elements of x are exactly equal to others" in str(info.value)
    assert "args[0]: 1 of 5000 elements differ" in str(info.value)


@pytest.mark.parametrize(("kind", "seed"), [("normal", 6), ("uniform", 17)])
def test_a_direction_whose_sum_has_kinks_is_estimated_output_by_output(
    kind: str, seed: int
) -> None:
    """5000 close values: every step of the sum over sort's outputs crosses some neighbours,
    and its central difference read a slope of the neighbourhood (a right rule failed 4 of 80
    draws, one by 14.6 for 582); estimated output by output the gap closes, and a note says
    so. An element 1% off still fails."""
    gen = np.random.default_rng(seed)
    x = gen.standard_normal(5000) if kind == "normal" else gen.uniform(0.2, 0.9, 5000)
    report = test_rrule(np.sort, x, rrule_f=_sort_rules(0.0).rrule, rng=seed)
    assert any(
        "of the adjoint identity: the sum over the outputs has kinks within its steps" in n
        and "estimated output by output, the gap is" in n
        for n in report.notes
    )
    with pytest.raises(AssertionError, match="adjoint identity fails"):
        test_rrule(np.sort, x, rrule_f=_sort_rules(1e-2).rrule, rng=seed)


@pytest.mark.parametrize("seed", [0, 4])
def test_directions_move_exactly_equal_elements_together(seed: int) -> None:
    """20000 float32 normal draws hold 2-5 exactly equal pairs. A direction that splits a pair
    crosses sort's kink at x, and the rule's choice per pair mixes the two sides: a right rule
    failed (seed 0) or compared nothing (seed 4). Directions now move each group of equal
    elements together, along which any such choice gives the same <xbar, v>; an element 10%
    off still fails (1% of it is within the gaps' error at seed 4)."""
    x = np.random.default_rng(seed).standard_normal(20_000).astype(np.float32)
    report = test_rrule(np.sort, x, rrule_f=_sort_rules(0.0).rrule, rng=seed)
    assert any(
        n.endswith("every random direction of the adjoint identity moves each such group together")
        for n in report.notes
    )
    with pytest.raises(AssertionError, match="adjoint identity fails"):
        test_rrule(np.sort, x, rrule_f=_sort_rules(0.1).rrule, rng=seed)


def test_a_sort_of_many_values_is_checked_without_the_outputs_no_step_resolves() -> None:
    """1e5 normal draws (seed 3): the closest entries are about 1e-10 apart, and along every
    random direction some outputs of sort cross within each step the engine takes, so
    ``<ybar, J v>`` was void on all three directions and a right rule failed with "nothing
    was compared". ``ybar`` is now zeroed at those few outputs, the rule called once more for
    its cotangent, and the identity checks every other output: the right rule passes with a
    note, and an element off by 3x fails, saying what was zeroed."""
    x = np.random.default_rng(3).standard_normal(100_000)
    report = test_rrule(np.sort, x, rrule_f=_sort_rules(0.0).rrule, rng=3)
    (note,) = [n for n in report.notes if "zeroed" in n]
    assert note.startswith("args: J v along random directions 0, 1, 2 of the adjoint identity")
    assert "could not be estimated at 6 of 100000 outputs" in note
    with pytest.raises(AssertionError, match=r"direction \d \(with ybar zeroed at 6 outputs\)"):
        test_rrule(np.sort, x, rrule_f=_sort_rules(3.0).rrule, rng=3)


def test_a_failing_direction_left_unnarrowed_says_why() -> None:
    """Group testing that stops at a half it cannot estimate does not claim that no element
    is wrong alone: it says where it stopped, and why."""
    from rruletest.finite_differences.adjoint import Located
    from rruletest.testers._adjoint import _where

    spread = Located(np.zeros(0, np.intp), np.zeros(0), np.zeros(0), [np.arange(8)], [])
    stuck = Located(np.zeros(0, np.intp), np.zeros(0), np.zeros(0), [], [np.arange(1000, 2000)])
    assert _where(spread) == (
        "no element is wrong alone: the difference is spread over [0..7] of the input coordinates"
    )
    assert _where(stuck) == (
        "the difference could not be narrowed below [1000..1999] of the input coordinates (its "
        "halves' estimates are too uncertain to show it: f has kinks or noise there)"
    )


def test_a_float32_rule_of_two_arrays_one_element_off_by_one_percent_is_named() -> None:
    rules = RuleSet()

    @rules.register_rrule(np.matmul)
    def _matmul_rrule(a: Any, b: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), ZeroTangent(), ZeroTangent()
            da = ybar @ b.T
            da[24, 34] *= 1.01
            return NoTangent(), da, a.T @ ybar

        return a @ b, pullback

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((50, 50), np.float32), rng.standard_normal((50, 50), np.float32)
    with pytest.raises(AssertionError) as info:
        test_rrule(np.matmul, a, b, rrule_f=rules.rrule, rng=0)
    message = str(info.value)
    assert "(evaluated in float64)" in message
    assert "args[0]: 1 of 2500 elements differ" in message
    assert "at [24, 34]" in message


def _huge_sin(x: Any) -> Any:
    return 1e180 * np.sin(x)


@pytest.mark.parametrize("off", [0.0, 1e-3])
def test_cotangents_whose_squares_overflow_are_checked(off: float) -> None:
    # Values of 1e180 (a 50x50 det at entries of 1e3 is 8e181): the rounding allowed a
    # correct xbar summed squares of 1e178, so every direction's tolerance was infinite and
    # a right rule failed with "nothing was compared".
    rules = RuleSet()

    @rules.register_rrule(_huge_sin)
    def _rrule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, ZeroTangent):
                return NoTangent(), np.zeros_like(x)
            g = ybar * 1e180 * np.cos(x)
            g[1500] *= 1 + off
            return NoTangent(), g

        return _huge_sin(x), pullback

    x = np.random.default_rng(0).uniform(-3, 3, 3000)
    if off == 0.0:
        test_rrule(_huge_sin, x, rrule_f=rules.rrule, rng=0)
        return
    with pytest.raises(AssertionError, match=r"args\[0\]: 1 of 3000 elements differ"):
        test_rrule(_huge_sin, x, rrule_f=rules.rrule, rng=0)
