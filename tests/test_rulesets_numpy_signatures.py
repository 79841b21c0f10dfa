"""The numpy ruleset's core signatures: declared along the last axis only, with batches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rruletest.rulesets.numpy  # noqa: F401  (registers the rules)
from rruletest.rules import default_ruleset
from rruletest.rulesets.numpy._composite import softmax


def _sig(f: Any, *args: Any, **kwargs: Any) -> str | None:
    info = default_ruleset.rrule_info(f, *args)
    assert info is not None
    found = info.signature_for(*args, **kwargs)
    return None if found is None else str(found)


X = np.ones((4, 3))


@pytest.mark.parametrize(
    ("f", "args", "kwargs", "expected"),
    [
        (np.cumsum, (X, -1), {}, "(n)->(n)"),
        (np.cumsum, (X,), {"axis": 1}, "(n)->(n)"),
        (np.cumsum, (X,), {}, None),  # axis=None flattens
        (np.cumsum, (X, 0), {}, None),
        (np.cumsum, (np.ones(3), -1), {}, None),  # no batch
        (np.sum, (X, -1), {}, "(n)->()"),
        (np.sum, (X, -1, None, None, True), {}, "(n)->(one)"),
        (np.mean, (X,), {"axis": (-1,)}, "(n)->()"),
        (softmax, (X,), {}, "(n)->(n)"),
        (np.linalg.norm, (X, None, -1), {}, "(n)->()"),
        (np.linalg.norm, (X, 1, -1), {}, None),
        (np.matmul, (np.ones((2, 3, 4)), np.ones((4, 5))), {}, "(m,k),(k,n)->(m,n)"),
        (np.matmul, (np.ones((3, 4)), np.ones((4, 5))), {}, None),
        (np.linalg.inv, (np.ones((2, 3, 3)),), {}, "(n,n)->(n,n)"),
        (np.linalg.det, (np.ones((2, 3, 3)),), {}, "(n,n)->()"),
    ],
)
def test_declared_where_the_call_acts_on_rows(
    f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], expected: str | None
) -> None:
    assert _sig(f, *args, **kwargs) == expected
