"""The hint for a cotangent that is right on a subspace (``rruletest.testers._space_hint``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, ZeroTangent, unthunk
from rruletest.errors import RuleTestFailure
from rruletest.spaces import LowerTriangular, Symmetric
from rruletest.testers import test_frule, test_rrule, with_tangent
from rruletest.testers._space_hint import space_hint

A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
W = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.5]])


def cholesky_rrule(f: Any, a: Any) -> Any:
    """The usual Cholesky rule: right for symmetric inputs, symmetric cotangents."""
    chol = np.linalg.cholesky(a)

    def pullback(lbar: Any) -> Any:
        lbar = unthunk(lbar)
        if isinstance(lbar, ZeroTangent):
            return NoTangent(), ZeroTangent()
        p = chol.T @ lbar
        p = np.tril(p) - 0.5 * np.diag(np.diag(p))
        s = np.linalg.solve(chol.T, np.linalg.solve(chol.T, p).T).T
        return NoTangent(), (s + s.T) / 2

    return chol, pullback


def _failure(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(RuleTestFailure) as info:
        test_rrule(*args, rng=0, **kwargs)
    return str(info.value)


def test_cholesky_on_every_entry_fails_with_a_hint_and_passes_on_symmetric_tangents() -> None:
    text = _failure(np.linalg.cholesky, A, rrule_f=cholesky_rrule)
    assert "[numeric] args[0]: the cotangent differs from the numerical vjp" in text
    assert (
        "args[0]: the cotangent agrees with the numerical vjp once both are projected onto "
        "symmetric matrices: f reads only part of args[0], and the rule is right for symmetric "
        "inputs. If args[0] is meant to be symmetric, declare it: pass with_tangent(x, "
        "Symmetric())"
    ) in text
    test_rrule(np.linalg.cholesky, with_tangent(A, Symmetric()), rrule_f=cholesky_rrule, rng=0)


def test_a_rule_assuming_a_triangular_input_is_named_so() -> None:
    def weighted(x: Any) -> Any:
        return np.sum(W * x)

    def rule(f: Any, x: Any) -> Any:  # right only for lower triangular x
        return weighted(x), lambda ybar: (NoTangent(), unthunk(ybar) * np.tril(W))

    lower = np.tril(A)
    text = _failure(weighted, lower, rrule_f=rule)
    assert "projected onto lower triangular matrices" in text
    assert "with_tangent(x, LowerTriangular())" in text
    assert "the primal here is not" not in text
    test_rrule(weighted, with_tangent(lower, LowerTriangular()), rrule_f=rule, rng=0)
    assert "(the primal here is not lower triangular itself" in _failure(weighted, A, rrule_f=rule)


def test_a_transposed_gradient_gets_no_hint() -> None:
    # Its symmetric part is right, but the cotangent is not symmetric: it is simply wrong.
    def weighted(x: Any) -> Any:
        return np.sum(W * x)

    def rule(f: Any, x: Any) -> Any:
        return weighted(x), lambda ybar: (NoTangent(), unthunk(ybar) * W.T)

    text = _failure(weighted, A, rrule_f=rule)
    assert "[numeric] args[0]" in text
    assert "projected onto" not in text


@pytest.mark.parametrize(
    ("primal", "actual", "expected"),
    [
        (np.ones(3), np.ones(3), np.zeros(3)),  # not a matrix
        (np.ones((2, 3)), np.ones((2, 3)), np.zeros((2, 3))),  # not square
        (A, np.ones((3, 3)), np.zeros((3, 3))),  # no projection reconciles them
        (A, A, np.tril(A) * 3),  # the symmetric parts differ
    ],
)
def test_no_hint_without_a_reconciling_projection(primal: Any, actual: Any, expected: Any) -> None:
    assert space_hint("args[0]", primal, actual, expected, 1e-9, 1e-12) is None


def test_complex_matrices_are_projected_onto_hermitian_ones() -> None:
    z = np.array([[2.0, 1j], [-1j, 3.0]])
    fd = np.array([[1.0, 0.0], [2.0 + 2j, 3.0]])
    rule = (fd + fd.conj().T) / 2
    hint = space_hint("args[1]", z, rule, fd, 1e-9, 1e-12)
    assert hint is not None
    assert "projected onto Hermitian matrices" in hint
    assert "with_tangent(x, Hermitian())" in hint


def cholesky_frule(dots: Any, f: Any, a: Any) -> Any:
    """The usual forward Cholesky rule: right for symmetric tangents."""
    chol = np.linalg.cholesky(a)
    da = np.asarray(dots[1])
    inner = np.linalg.solve(chol, np.linalg.solve(chol, da).T).T  # L^-1 dA L^-T
    phi = np.tril(inner) - 0.5 * np.diag(np.diag(inner))
    return chol, chol @ phi


def test_a_cholesky_frule_along_every_entry_fails_with_a_hint() -> None:
    with pytest.raises(RuleTestFailure) as info:
        test_frule(np.linalg.cholesky, A, frule_f=cholesky_frule, rng=0)
    text = str(info.value)
    assert "[numeric] ydot: the output tangent differs from the numerical jvp" in text
    assert (
        "args[0]: along the input tangent projected onto symmetric matrices the output tangent "
        "agrees with the numerical jvp: f reads only part of args[0]"
    ) in text
    test_frule(np.linalg.cholesky, with_tangent(A, Symmetric()), frule_f=cholesky_frule, rng=0)


def test_a_wrong_frule_gets_no_space_hint() -> None:
    def wrong(dots: Any, f: Any, a: Any) -> Any:
        chol, dchol = cholesky_frule(dots, f, a)
        return chol, 1.01 * dchol

    with pytest.raises(RuleTestFailure) as info:
        test_frule(np.linalg.cholesky, A, frule_f=wrong, rng=0)
    assert "projected onto" not in str(info.value)


def test_a_wrong_frule_of_container_arguments_is_a_numeric_failure_only() -> None:
    # The forward hint converted each argument's tangent with np.asarray: a dict's (or a
    # tuple of arrays') tangent raised "Could not convert object to sequence", reported as
    # an [internal] rruletest error next to the real mismatch.
    def f(p: Any, x: Any) -> Any:
        return p["w"] * x[0] + p["b"] * x[1] ** 2

    def wrong_frule(dots: Any, f: Any, p: Any, x: Any) -> Any:
        dp, dx = dots[1], dots[2]
        ydot = dp["w"] * x[0] + p["w"] * dx[0] + dp["b"] * x[1] ** 2 + p["b"] * x[1] * dx[1]
        return f(p, x), ydot  # the last term lacks its factor 2

    args = ({"w": 1.5, "b": -0.5}, (np.array([1.0, 2.0]), np.array([0.3, 0.4])))
    with pytest.raises(RuleTestFailure) as info:
        test_frule(f, *args, frule_f=wrong_frule, rng=0)
    message = str(info.value)
    assert "[numeric] ydot: the output tangent differs from the numerical jvp" in message
    assert "[internal]" not in message


def test_a_wrong_frule_of_a_list_holding_a_matrix_is_a_numeric_failure_only() -> None:
    # np.ndim of [matrix, number] (asked to see whether any argument is a matrix) raised
    # numpy's "inhomogeneous shape" ValueError, reported as an [internal] rruletest error.
    def f(p: Any) -> Any:
        return np.sum(p[0] @ p[0]) * p[1]

    def wrong_frule(dots: Any, f: Any, p: Any) -> Any:
        return f(p), 1.3

    with pytest.raises(RuleTestFailure) as info:
        test_frule(f, [A, 0.5], frule_f=wrong_frule, rng=0)
    message = str(info.value)
    assert "[numeric] ydot: the output tangent differs from the numerical jvp" in message
    assert "[internal]" not in message
