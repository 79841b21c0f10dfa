"""Whether a declared core signature describes a call (``signature_misfit``) and its function
(``batch_dependence``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest.finite_differences.declared import batch_dependence, signature_misfit


def _softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("sig", "f", "xs"),
    [
        ("(n)->(n)", _softmax, [np.random.default_rng(0).standard_normal((7, 5))]),
        ("(n)->()", lambda x: np.linalg.norm(x, axis=-1), [np.ones((3, 2, 4))]),
        (
            "(m,k),(k,n)->(m,n)",
            np.matmul,
            [np.random.default_rng(1).standard_normal((9, 3, 4)), np.ones((4, 2))],
        ),
        (
            "(m,k),(k,n)->(m,n)",
            np.matmul,
            [np.ones((2, 1, 3, 4)), np.random.default_rng(2).standard_normal((5, 4, 2))],
        ),
        ("(n)->(n)", np.sqrt, [np.array([[0.0, 1.0], [np.inf, np.nan], [4.0, 9.0]])]),
    ],
)
def test_functions_that_act_on_each_member_alone(sig: str, f: Any, xs: list[Any]) -> None:
    assert batch_dependence(sig, f, xs) is None


@pytest.mark.parametrize(
    ("f", "what"),
    [
        (lambda x: x / np.sqrt((x**2).sum()), "differ from the same members"),  # all at once
        (lambda x: np.cumsum(x, axis=0), "differ from the same members"),  # along the batch
        (lambda x: x - x.mean(axis=0), "differ from the same members"),
        (lambda x: x if x.shape[0] == 6 else x[:, :1], "has shape (3, 1), not 3 members of 2"),
        (lambda x: x if x.shape[0] == 6 else 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_functions_that_couple_their_members(f: Any, what: str) -> None:
    x = np.random.default_rng(5).standard_normal((6, 2))
    broken = batch_dependence("(n)->(n)", f, [x])
    assert broken is not None
    assert what in broken
    assert broken.startswith(("the members [5, 3, 0]", "f of the members [5, 3, 0]", "f raised"))


def test_a_batch_of_one_or_none_has_nothing_to_test() -> None:
    couple = lambda x: x / x.sum()  # noqa: E731
    assert batch_dependence("(n)->(n)", couple, [np.ones((1, 3))]) is None
    assert batch_dependence("(n)->(n)", couple, [np.ones(3)]) is None
    assert batch_dependence("(n)->(n)", couple, [np.ones((0, 3))]) is None


@pytest.mark.parametrize(
    ("sig", "shapes", "out", "why"),
    [
        ("(n)->(n)", [(3, 4)], (3, 4), None),
        ("(n)->()", [(2, 3, 4)], (2, 3), None),
        ("(n)->()", [(2, 3, 4)], (2, 3, 1), "the output's batch dimensions (2, 3, 1)"),
        ("(m,k),(k,n)->(m,n)", [(5, 1, 2, 3), (4, 3, 2)], (5, 4, 2, 2), None),
        ("(m,k),(k,n)->(m,n)", [(2, 3, 2, 3), (4, 3, 2)], (2, 3, 2, 2), "do not broadcast"),
        ("(n),(n)->()", [(3,)], (), "1 arguments for the 2 inputs"),
        ("(n)->(n)", [(3, 4)], (3, 5), "n is 4 in argument 0 and 5 in the output"),
    ],
)
def test_calls_that_fit_a_signature(sig: str, shapes: Any, out: Any, why: str | None) -> None:
    found = signature_misfit(sig, [np.ones(s) for s in shapes], np.ones(out))
    assert found is None if why is None else why in str(found)
