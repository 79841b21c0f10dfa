"""Findings the testers report beyond a mismatch: kinks and the function's own noise."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

from rruletest import (
    AbstractZero,
    NoTangent,
    RuleSet,
    RuleTestFailure,
    broadcasted,
    test_frule,
    test_rrule,
    unthunk,
)


def relu(x: Any) -> Any:
    return np.maximum(x, 0.0)


def _relu_rules(at_zero: float) -> RuleSet:
    rules = RuleSet()
    rules.scalar_rule(relu, lambda x, y: (np.where(x > 0, 1.0, np.where(x < 0, 0.0, at_zero)),))
    return rules


X = np.array([-1.0, 0.0, 1.0])


def test_the_central_difference_at_a_kink_passes_as_it_did() -> None:
    test_rrule(broadcasted, relu, X, rrule_f=_relu_rules(0.5).rrule, rng=0)


@pytest.mark.parametrize("at_zero", [0.0, 1.0])
def test_a_subgradient_at_a_kink_is_accepted_with_a_note(at_zero: float) -> None:
    report = test_rrule(broadcasted, relu, X, rrule_f=_relu_rules(at_zero).rrule, rng=0)
    [line] = [n for n in report.notes if "kink" in n]
    assert line.startswith("args[1][1] = 0.0 is a kink: left derivative 0, right derivative 1;")
    assert line.endswith("between them (accepted)")


def test_a_value_outside_the_one_sided_derivatives_fails_and_says_so() -> None:
    rules = _relu_rules(2.0)
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(broadcasted, relu, X, rrule_f=rules.rrule, rng=0)
    text = str(info.value)
    assert (
        "args[1][1] = 0.0 is a kink: left derivative 0, right derivative 1; the rule gives 2 "
    ) in text
    assert "outside them: no one-sided derivative supports it (fails)" in text
    assert "[numeric] args[1]: the cotangent differs" in text


def test_an_frule_at_a_kink() -> None:
    report = test_frule(broadcasted, relu, X, frule_f=_relu_rules(0.0).frule, rng=0)
    assert any(n.startswith("ydot[1] is at a kink along the tangent") for n in report.notes)


def test_smooth_points_give_no_kink_finding() -> None:
    report = test_rrule(broadcasted, relu, np.array([-1.0, 2.0]), rrule_f=_relu_rules(0).rrule,
                        rng=0)  # fmt: skip
    assert not any("kink" in n for n in report.notes)


def _cube_root(x: Any) -> Any:
    """The root of r**3 + r = x by 34 bisection steps: its values scatter by about 1e-9."""
    lo, hi = np.full_like(x, -10.0), np.full_like(x, 10.0)
    for _ in range(34):
        mid = (lo + hi) / 2
        below = mid**3 + mid - x < 0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2


def test_a_noisy_function_is_named_with_what_to_pass() -> None:
    rules = RuleSet()
    rules.register_rrule(_cube_root)(
        lambda x: (_cube_root(x), lambda ybar: (NoTangent(), ybar / (3 * _cube_root(x) ** 2 + 1)))
    )
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(_cube_root, np.array([0.3, 1.1, 2.0]), rrule_f=rules.rrule, rng=0)
    text = str(info.value)
    # measured along the worst elements' own coordinates, as the dense vjp perturbs them, once
    assert "args[0]: along args[0][1], args[0][2], f is noisy: its values scatter by " in text
    assert text.count("f is noisy") == 1
    assert "pass rtol=" in text
    assert "fdm=central_fdm(5, 1, factor=" in text


def test_float16_broadcast_rules_are_checked_for_real() -> None:
    x = np.random.default_rng(0).uniform(-3, 3, 1000).astype(np.float16)
    good = RuleSet()
    good.scalar_rule(np.sin, lambda x, y: (np.cos(x),))
    for seed in range(5):
        test_rrule(broadcasted, np.sin, x, rrule_f=good.rrule, rng=seed)
        test_frule(broadcasted, np.sin, x, frule_f=good.frule, rng=seed)
    for factor in (1.1, 1.02):  # 10% and 2% wrong everywhere: passed before (atol 0.8-4.9)
        bad = RuleSet()
        bad.scalar_rule(np.sin, lambda x, y, k=factor: (np.cos(x) * k,))
        with pytest.raises(RuleTestFailure):
            test_rrule(broadcasted, np.sin, x, rrule_f=bad.rrule, rng=0)
        with pytest.raises(RuleTestFailure):
            test_frule(broadcasted, np.sin, x, frule_f=bad.frule, rng=0)


# -- kinks along a direction, for any frule (not a broadcast) ---------------------------------

NEAR_TIE = np.linspace(0.0, 1.0, 50)
NEAR_TIE[20] = NEAR_TIE[21] + 1e-13  # closer than any step resolves: a kink within h


def _sort_frule(scale: float) -> Any:
    def frule(dots: Any, f: Any, a: Any) -> Any:
        ydot = np.asarray(dots[1])[np.argsort(a, kind="stable")].copy()
        ydot[20] *= scale
        return np.sort(a), ydot

    return frule


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_general_frule_at_a_near_tie_is_checked_against_both_sides(seed: int) -> None:
    # 50 outputs: the directional finite-difference jvp, whose central difference averages the
    # slopes of the two entries that cross within its step; the rule's slope is one side.
    report = test_frule(np.sort, NEAR_TIE, frule_f=_sort_frule(1.0), rng=seed)
    kinks = [n for n in report.notes if "is at a kink along the tangent" in n]
    assert [k.split()[0] for k in kinks] == ["ydot[20]", "ydot[21]"]
    assert all(k.endswith("between them (accepted)") for k in kinks)


def test_a_general_frule_outside_both_sides_of_a_near_tie_fails() -> None:
    with pytest.raises(RuleTestFailure) as info:
        test_frule(np.sort, NEAR_TIE, frule_f=_sort_frule(3.0), rng=0)
    text = str(info.value)
    assert "[numeric] ydot: the output tangent differs from the numerical jvp" in text
    assert "ydot[20] is at a kink along the tangent" in text


def test_kinks_along_a_direction_are_named_by_the_outputs_index() -> None:
    x = NEAR_TIE.reshape(5, 10)

    def sort_rows(a: Any) -> Any:
        return np.sort(a, axis=None).reshape(5, 10)

    def frule(dots: Any, f: Any, a: Any) -> Any:
        order = np.argsort(a, axis=None, kind="stable")
        return sort_rows(a), np.asarray(dots[1]).reshape(-1)[order].reshape(5, 10)

    report = test_frule(sort_rows, x, frule_f=frule, rng=0)
    kinks = [n.split(" is at")[0] for n in report.notes if "is at a kink along the tangent" in n]
    assert kinks == ["ydot[2, 0]", "ydot[2, 1]"]


def test_a_complex_mismatch_warns_nothing() -> None:
    """The noise check of a mismatch cast complex cotangents to float64: a ComplexWarning
    reached the user (an error under ``-W error``, which then skipped the check)."""
    import warnings

    from rruletest import test_scalar

    rules = RuleSet()
    rules.scalar_rule(np.sin, lambda x, y: (1.01 * np.cos(x),), complex=True)  # 1% off
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(AssertionError, match=r"\[numeric\]"):
            test_scalar(np.sin, 0.3, rrule_f=rules.rrule, frule_f=rules.frule, rng=1)
    assert [str(w.message) for w in seen] == []


DELTA = np.float32(0.2)


def huber(x: Any) -> Any:
    """Huber's loss of ``x - 0.3``: differentiable everywhere, its derivative has corners at
    ``|x - 0.3| = 0.2``."""
    d = np.asarray(x) - np.float32(0.3)
    out = np.where(np.abs(d) < DELTA, 0.5 * d * d, DELTA * (np.abs(d) - 0.5 * DELTA))
    return out.astype(np.asarray(x).dtype)[()]


def _huber_rules(scale: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_frule(huber)
    def _(tangents: Any, x: Any) -> Any:
        d = np.asarray(x) - np.float32(0.3)
        slope = np.where(np.abs(d) < DELTA, d, DELTA * np.sign(d)) * scale
        return huber(x), (slope * tangents[1]).astype(np.asarray(x).dtype)[()]

    @rules.register_rrule(huber)
    def _(x: Any) -> Any:
        d = np.asarray(x) - np.float32(0.3)
        slope = np.where(np.abs(d) < DELTA, d, DELTA * np.sign(d)) * scale

        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return NoTangent(), ybar
            return NoTangent(), (slope * ybar).astype(d.dtype)[()]

        return huber(x), pullback

    return rules


@pytest.mark.parametrize("x", [np.float32(0.5), np.float32(0.501)], ids=["at", "near"])
@pytest.mark.parametrize("seed", range(3))
def test_a_general_rrule_where_f_prime_has_a_corner_passes(x: Any, seed: int) -> None:
    # near: the corner is 0.001 off the point, inside the backward stencil only; the forward
    # side alone agrees with the rule (the central estimate was 1% off, a false failure).
    rules = _huber_rules(1.0)
    test_rrule(huber, x, rrule_f=rules.rrule, rng=seed)
    test_frule(huber, x, frule_f=rules.frule, rng=seed)
    with pytest.raises(RuleTestFailure, match="the cotangent differs"):
        test_rrule(huber, x, rrule_f=_huber_rules(1.01).rrule, rng=seed)


@pytest.mark.parametrize("x", [np.float32(0.5), np.array([0.45, 0.5, 0.55], np.float32)])
@pytest.mark.parametrize("seed", range(3))
def test_a_general_frule_where_f_prime_has_a_corner_passes_on_its_one_sided_evidence(
    x: Any, seed: int
) -> None:
    # float32 0.5 - 0.3 is 0.2 - 1 ulp: the central stencil straddles the corner of f' and
    # its estimate was 1.3% off with an error estimate of 0.03% (a false failure).
    report = test_frule(huber, x, frule_f=_huber_rules(1.0).frule, rng=seed)
    notes = [n for n in report.notes if "backward and forward differences agree" in n]
    assert all(n.startswith("ydot") and n.endswith(": accepted") for n in notes)


def test_the_one_sided_evidence_is_noted() -> None:
    report = test_frule(huber, np.float32(0.5), frule_f=_huber_rules(1.0).frule, rng=1)
    assert (
        "ydot: the central difference disagrees with the rule, but the backward and forward "
        "differences agree with it (a stencil across a point where f or f' is not smooth, such "
        "as Huber's loss at |x| = delta): accepted"
    ) in report.notes


def test_a_wrong_frule_where_f_prime_has_a_corner_still_fails() -> None:
    with pytest.raises(RuleTestFailure, match="the output tangent differs"):
        test_frule(huber, np.float32(0.5), frule_f=_huber_rules(1.01).frule, rng=0)


# -- kinks of a general pullback (a dense vjp), coordinate by coordinate ----------------------

# Entries of 1e-15: within every step the engine can take at this matrix, even at the float64
# copies a float32 f is differentiated at (an entry of 1e-6 is resolved there: see below).
NEAR_ZERO = np.array([[1.8, 0.1, 1e-15], [0.1, 1.35, 0.2], [1e-15, 0.2, 1.62]], np.float32)


def norm1(a: Any) -> Any:
    return np.linalg.norm(a, 1)


def _norm1_rules(at_kink: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_rrule(norm1)
    def _(a: Any) -> Any:
        j = int(np.argmax(np.abs(a).sum(axis=0)))

        def pullback(ybar: Any) -> Any:
            abar = np.zeros_like(a)
            abar[:, j] = ybar * np.sign(a[:, j])
            abar[2, 0] *= at_kink
            return NoTangent(), abar

        return norm1(a), pullback

    return rules


@pytest.mark.parametrize("seed", range(3))
def test_a_general_rrule_next_to_a_kink_at_zero_is_estimated_on_its_side(seed: int) -> None:
    # |a[2, 0]| = 1e-15 is well inside the step: the central difference averaged the slopes
    # of |x| (about 0) and failed the correct sign(1e-15) = 1, which the one-sided check of
    # the tester then accepted with a note. The engine now estimates a stencil across 0 on the
    # side of 0 the entry is on (``finite_differences.sides``): right without a kink note.
    report = test_rrule(norm1, NEAR_ZERO, rrule_f=_norm1_rules(1.0).rrule, rng=seed)
    assert not [n for n in report.notes if "kink" in n]


@pytest.mark.parametrize("seed", range(3))
def test_a_float32_kink_the_float64_steps_resolve_needs_no_one_sided_check(seed: int) -> None:
    # An entry of 1e-6 was inside the float32 step; at float64 copies the steps shrink below
    # it, and the dense vjp is right without the one-sided values. A wrong value still fails.
    a = NEAR_ZERO.copy()
    a[0, 2] = a[2, 0] = 1e-6
    report = test_rrule(norm1, a, rrule_f=_norm1_rules(1.0).rrule, rng=seed)
    assert report.numerical == "dense finite-difference vjp (9 coordinates, evaluated in float64)"
    assert not [n for n in report.notes if "kink" in n]
    with pytest.raises(RuleTestFailure, match=r"args\[0\]: the cotangent differs"):
        test_rrule(norm1, a, rrule_f=_norm1_rules(3.0).rrule, rng=seed)


def test_a_general_rrule_outside_both_sides_of_a_kink_fails() -> None:
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(norm1, NEAR_ZERO, rrule_f=_norm1_rules(3.0).rrule, rng=0)
    assert "args[0][2, 0] is at a kink along the tangent" in str(info.value)
    assert "outside them: no one-sided derivative supports it (fails)" in str(info.value)


# -- a jump a little way off the point: one side supports the rule, and so does the other ----


def hardshrink(x: Any) -> Any:
    a = np.asarray(x)
    return np.where(np.abs(a) > 0.45, a, 0.0).astype(a.dtype)[()]


def _hardshrink_rules(slope_inside: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_frule(hardshrink)
    def _(tangents: Any, x: Any) -> Any:
        d = np.where(np.abs(np.asarray(x)) > 0.45, 1.0, slope_inside)
        return hardshrink(x), (d * tangents[1]).astype(np.asarray(x).dtype)[()]

    return rules


@pytest.mark.parametrize("seed", range(3))
def test_a_jump_just_off_the_point_does_not_fail_a_correct_frule(seed: int) -> None:
    # float32 0.4375 is 0.0125 from the jump at 0.45, inside the central stencil, which gave
    # -37.7 with a small error estimate; the backward side gives 0 exactly, as does the rule.
    x = np.float32(0.4375)
    report = test_frule(hardshrink, x, frule_f=_hardshrink_rules(0.0).frule, rng=seed)
    assert all("agree" not in n or n.endswith(": accepted") for n in report.notes)
    with pytest.raises(RuleTestFailure, match="the output tangent differs"):
        test_frule(hardshrink, x, frule_f=_hardshrink_rules(0.1).frule, rng=seed)


def test_a_near_tie_the_steps_resolve_is_checked_exactly() -> None:
    """Entries 3e-9 apart: sort is differentiable there, and below that scale linear; each
    output settles at its own step, so the rule is checked on every element, not at a kink."""
    x = np.linspace(0.0, 1.0, 50)
    x[20] = x[21] + 3e-9
    report = test_frule(np.sort, x, frule_f=_sort_frule(1.0), rng=0)
    assert not [n for n in report.notes if "kink" in n]
    with pytest.raises(RuleTestFailure) as info:
        test_frule(np.sort, x, frule_f=_sort_frule(1.01), rng=0)
    assert "ydot: 1 of 50 elements differ" in str(info.value)


def _abs_then_sin(x: Any) -> Any:
    return np.concatenate([np.abs(x[:1]), np.sin(x[1:])])


def _one_kink_frule(first: float, off: float) -> RuleSet:
    """An frule of ``_abs_then_sin`` with ``first`` as the slope at ``x[0]`` and ``ydot[2]``
    scaled by ``off``."""
    rules = RuleSet("k")

    @rules.register_frule(_abs_then_sin)
    def _frule(dots: Any, x: Any) -> Any:
        ydot = np.concatenate([first * dots[1][:1], np.cos(x[1:]) * dots[1][1:]])
        ydot[2] *= off
        return _abs_then_sin(x), ydot

    return rules


@pytest.mark.parametrize("first", [0.0, 1.0, -1.0, 0.5])
def test_an_frule_with_one_coordinate_at_a_kink_compares_the_other_outputs(first: float) -> None:
    # The Jacobian's row at the kink has no estimate for its first output only (the others do
    # not depend on x[0]), and that element's infinite tolerance widens no other element's.
    x = np.array([0.0, 0.3, 0.5, 0.7])
    test_frule(_abs_then_sin, x, frule_f=_one_kink_frule(first, 1.0).frule, rng=0)
    wrong = _one_kink_frule(first, 1.01)
    with pytest.raises(RuleTestFailure, match=r"(?s)ydot: 1 of 4 elements differ.*at \[2\]"):
        test_frule(_abs_then_sin, x, frule_f=wrong.frule, rng=0)


def test_a_general_frule_at_an_exact_kink_is_checked_against_both_sides() -> None:
    # The central difference has no estimate at abs's kink; the one-sided derivatives along
    # the tangent stand in, as for a broadcast rule: a subgradient is accepted with a note,
    # a value outside them fails and says so.
    x = np.array([0.0, 0.3, 0.5, 0.7])
    report = test_frule(_abs_then_sin, x, frule_f=_one_kink_frule(0.5, 1.0).frule, rng=0)
    [line] = [n for n in report.notes if "kink" in n]
    assert line.startswith("ydot[0] is at a kink along the tangent: left derivative -")
    assert line.endswith("between them (accepted)")
    assert "ydot: 4 of 4 elements compared numerically" in report.notes
    with pytest.raises(RuleTestFailure) as info:
        test_frule(_abs_then_sin, x, frule_f=_one_kink_frule(5.0, 1.0).frule, rng=0)
    text = str(info.value)
    assert "ydot[0] is at a kink along the tangent" in text
    assert "outside them: no one-sided derivative supports it (fails)" in text
    assert "ydot: 1 of 4 elements differ" in text


def _one_kink_rrule(first: float) -> RuleSet:
    rules = RuleSet("k")

    @rules.register_rrule(_abs_then_sin)
    def _rrule(x: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if isinstance(ybar, AbstractZero):
                return NoTangent(), np.zeros_like(x)
            return NoTangent(), np.concatenate([first * ybar[:1], np.cos(x[1:]) * ybar[1:]])

        return _abs_then_sin(x), pullback

    return rules


@pytest.mark.parametrize(("first", "passes"), [(0.0, True), (1.0, True), (5.0, False)])
def test_a_general_rrule_at_an_exact_kink_is_checked_against_both_sides(
    first: float, passes: bool
) -> None:
    x = np.array([0.0, 0.3, 0.5, 0.7])
    if passes:
        report = test_rrule(_abs_then_sin, x, rrule_f=_one_kink_rrule(first).rrule, rng=0)
        assert any(n.startswith("args[0][0] is at a kink") for n in report.notes)
        assert "args[0]: 4 of 4 elements compared numerically" in report.notes
        return
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(_abs_then_sin, x, rrule_f=_one_kink_rrule(first).rrule, rng=0)
    assert "outside them: no one-sided derivative supports it (fails)" in str(info.value)
    assert "args[0]: 1 of 4 elements differ" in str(info.value)


@pytest.mark.parametrize("x", [0.0, np.float64(0.0), np.array(0.0)])
def test_an_frule_of_a_python_number_at_a_kink_is_checked_against_both_sides(x: Any) -> None:
    # abs of a Python float returns a Python float: its tangent gets the kink check too
    def rules(slope: float) -> RuleSet:
        rules = RuleSet("k")
        rules.register_frule(abs)(lambda dargs, x: (abs(x), slope * dargs[1]))
        return rules

    report = test_frule(abs, x, frule_f=rules(1.0).frule, rng=1)
    [line] = [n for n in report.notes if "kink" in n]
    assert line.endswith("the rule gives -0.49, between them (accepted)")
    with pytest.raises(RuleTestFailure, match=r"the rule gives -1.47, outside them"):
        test_frule(abs, x, frule_f=rules(3.0).frule, rng=1)


def _pair_rules(f: Any, da: float, db: float) -> RuleSet:
    rules = RuleSet("k")

    @rules.register_rrule(f)
    def _rrule(a: Any, b: Any) -> Any:
        def pullback(ybar: Any) -> Any:
            yb = unthunk(ybar)
            if isinstance(yb, AbstractZero):
                return NoTangent(), 0.0, 0.0
            return NoTangent(), da * yb, db * yb

        return f(a, b), pullback

    return rules


def _max(a: float, b: float) -> float:
    return max(a, b)


def _relu_minus_relu(a: float, b: float) -> float:
    return max(a, 0.0) - max(0.0, b)


@pytest.mark.parametrize(("da", "db"), [(1.0, 0.0), (0.5, 0.5), (0.0, 1.0)])
def test_a_subgradient_of_a_tie_is_accepted(da: float, db: float) -> None:
    test_rrule(_max, 1.0, 1.0, rrule_f=_pair_rules(_max, da, db).rrule, rng=0)


@pytest.mark.parametrize(("da", "db", "slope"), [(1.0, 1.0, "12.64"), (0.0, 0.0, "0")])
def test_entries_that_are_subgradients_one_by_one_but_not_together_fail(
    da: float, db: float, slope: str
) -> None:
    # Each entry lies in [0, 1], but moving a and b together max's slope is 1, not 2 or 0.
    rules = _pair_rules(_max, da, db)
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(_max, 1.0, 1.0, rrule_f=rules.rrule, rng=0)
    assert (
        "args[0] and args[1]: each lies between its one-sided derivatives, but not together: "
        f"moving them all at once, the pullback gives {slope} where the one-sided derivatives "
        "are 6.32 and 6.32, so they are no subgradient (fails)"
    ) in str(info.value)


@pytest.mark.parametrize("seed", range(3))
def test_separate_kinks_are_checked_one_by_one(seed: int) -> None:
    # relu(a) - relu(b) at 0: (1, 0) is a subgradient (each kink is its own), though the slope
    # along (1, 1) is 0
    rules = _pair_rules(_relu_minus_relu, 1.0, 0.0)
    test_rrule(_relu_minus_relu, 0.0, 0.0, rrule_f=rules.rrule, rng=seed)


class _SortResult(NamedTuple):
    values: np.ndarray
    indices: np.ndarray


def _sort_result(x: np.ndarray) -> _SortResult:
    """``torch.sort`` in numpy: the sorted values and their integer indices."""
    i = np.argsort(x, kind="stable")
    return _SortResult(x[i], i)


def _sort_result_frule(scale: float) -> RuleSet:
    rules = RuleSet()

    @rules.register_frule(_sort_result)
    def _(dots: Any, x: np.ndarray) -> Any:
        i = np.argsort(x, kind="stable")
        return _sort_result(x), _SortResult(scale * dots[1][i], NoTangent())

    return rules


def test_an_frule_with_a_tuple_output_at_ties_gets_the_kink_check() -> None:
    """torch.sort returns (values, indices): its forward rule at tied entries gives one
    one-sided derivative, and failed against the central difference (the average of both
    sides) because the kink check looked at array outputs only; the notes name the output's
    own paths, and a wrong rule there still fails."""
    ties = np.array([0.3, 0.3, -0.2, 0.9, 0.9])
    report = test_frule(_sort_result, ties, frule_f=_sort_result_frule(1.0).frule, rng=0)
    kinks = [n for n in report.notes if "at a kink along the tangent" in n]
    assert len(kinks) == 4
    assert all(n.startswith("ydot.values[") for n in kinks)
    assert all(n.endswith("between them (accepted)") for n in kinks)
    with pytest.raises(RuleTestFailure) as info:
        test_frule(_sort_result, ties, frule_f=_sort_result_frule(1.001).frule, rng=0)
    assert "outside them: no one-sided derivative supports it (fails)" in str(info.value)
    assert "[numeric] ydot: the output tangent differs" in str(info.value)


def test_a_wrong_frule_next_to_a_pole_is_no_jump_and_fails() -> None:
    # y = 1e-6 beside x = 1e6: the jump probe once moved y across the pole of x / y, so a
    # frule twice too large passed with "f jumps there ... was not compared".
    def div(x: Any, y: Any) -> Any:
        return x / y

    rules = RuleSet()

    @rules.register_frule(div)
    def _div_frule(dots: Any, x: Any, y: Any) -> Any:
        return x / y, 2.0 * (dots[1] / y - x * dots[2] / y**2)

    with pytest.raises(RuleTestFailure) as info:
        test_frule(div, 1e6, 1e-6, frule_f=rules.frule, rng=0)
    text = str(info.value)
    assert "[numeric] ydot: the output tangent differs from the numerical jvp" in text
    assert "jumps" not in text
