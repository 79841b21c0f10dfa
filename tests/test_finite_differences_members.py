"""Each batch member's values remembered by its input value; several core coordinates served
by one call of the function; a sub-batch that raises halved until the culprit is found."""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.finite_differences.members import Members, evaluate_joined, split_on_errors


def _squares(log: list[Any]) -> Any:
    def compute(index: Any, t: Any) -> Any:
        log.append(None if index is None else index.tolist())
        return t[:, None] ** 2

    return compute


def test_only_members_at_new_points_are_computed() -> None:
    log: list[Any] = []
    seen = Members(np.array([1.0, 2.0, 3.0]), np.array([[1.0], [4.0], [9.0]]), _squares(log))
    out = seen.evaluate(np.arange(3), np.array([1.0, 5.0, 3.0]))
    assert out.tolist() == [[1.0], [25.0], [9.0]]
    assert log == [[1]]
    out = seen.evaluate(np.arange(3), np.array([2.0, 5.0, 4.0]))
    assert out.tolist() == [[4.0], [25.0], [16.0]]
    assert log == [[1], [0, 2]]
    # every member at a new point: the whole batch, in order
    seen.evaluate(np.arange(3), np.array([7.0, 8.0, 9.0]))
    assert log[-1] is None


def test_kept_members_are_remembered_and_the_others_forgotten() -> None:
    log: list[Any] = []
    seen = Members(np.array([1.0, 2.0, 3.0]), np.array([[1.0], [4.0], [9.0]]), _squares(log))
    seen.evaluate(np.arange(3), np.array([6.0, 7.0, 8.0]))
    seen.keep(np.array([2]))
    assert seen.evaluate(np.array([2]), np.array([8.0])).tolist() == [[64.0]]
    assert log == [None]  # member 2 at 8 was remembered
    assert seen.evaluate(np.array([0]), np.array([6.0])).tolist() == [[36.0]]
    assert log == [None, [0]]  # member 0 was forgotten


def test_one_call_serves_several_coordinates() -> None:
    log: list[Any] = []
    first = Members(np.array([1.0, 2.0]), np.array([[1.0], [4.0]]), _squares([]))
    second = Members(np.array([3.0, 4.0]), np.array([[9.0], [16.0]]), _squares([]))

    def compute(group: Any, index: Any, t: Any) -> Any:
        log.append((group.tolist(), index.tolist()))
        return (t + 100 * group)[:, None]

    outs = evaluate_joined(
        [(first, np.array([0, 1]), np.array([1.0, 5.0])), (second, np.array([1]), np.array([6.0]))],
        compute,
    )
    assert [o.tolist() for o in outs] == [[[1.0], [5.0]], [[106.0]]]
    assert log == [([0, 1], [1, 1])]  # member 1 twice, once per coordinate
    # each coordinate remembers its own values
    assert second.evaluate(np.array([1]), np.array([6.0])).tolist() == [[106.0]]


def test_a_sub_batch_that_raises_is_halved_until_the_culprit_is_found() -> None:
    seen: list[int] = []

    def evaluate(sel: Any) -> Any:
        seen.append(sel.size)
        if np.any(sel == 5):
            raise ValueError("outside the domain")
        return np.stack([sel, -sel], axis=1).astype(float)

    out = split_on_errors(evaluate, 16, 2, np.dtype(np.float64))
    expected = np.stack([np.arange(16), -np.arange(16)], axis=1).astype(float)
    expected[5] = np.nan
    np.testing.assert_array_equal(out, expected)
    assert seen == [16, 8, 4, 4, 2, 1, 1, 2, 8]  # halvings along the culprit, not 16 calls
