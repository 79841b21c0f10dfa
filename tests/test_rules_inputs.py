"""``rruletest.rules.inputs``: examples with keyword arguments and ``shapes=`` declarations."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import Example, NoTangent, RuleSet
from rruletest.rules.inputs import example_kwargs, shapes_of


def test_an_example_is_a_tuple_of_its_positional_arguments_with_keywords() -> None:
    ex = Example(np.ones(2), 3, axis=0, keepdims=True)
    assert isinstance(ex, tuple)
    assert len(ex) == 2
    assert ex[1] == 3
    assert ex.kwargs == {"axis": 0, "keepdims": True}
    assert example_kwargs(ex) == {"axis": 0, "keepdims": True}
    assert example_kwargs((1.0,)) == {}
    assert repr(Example(1.0, axis=0)) == "Example(1.0, axis=0)"
    assert Example(1.0, axis=0) == Example(1.0, axis=0)
    assert Example(1.0, axis=0) != Example(1.0, axis=1)
    assert Example(1.0) == (1.0,)


def test_registration_keeps_examples_with_keywords_and_shapes() -> None:
    rules = RuleSet()

    def total(x: Any, axis: Any = None) -> Any:
        return np.sum(x, axis=axis)

    @rules.register_rrule(total, examples=[Example(np.ones((2, 3)), axis=0)], shapes=[("m", 3)])
    def _total_rrule(x: Any, axis: Any = None) -> Any:
        return total(x, axis), lambda ybar: (NoTangent(), np.ones_like(x) * ybar)

    info = rules.rrule_info(total)
    assert info is not None
    assert info.examples[0].kwargs == {"axis": 0}  # type: ignore[attr-defined]
    assert info.shapes == (("m", 3),)


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        pytest.param([3, ("n",), (), ["m", 2]], ((3,), ("n",), (), ("m", 2)), id="mixed"),
        pytest.param((), (), id="no-arguments"),
    ],
)
def test_shapes_of_normalises(shapes: Any, expected: Any) -> None:
    assert shapes_of(shapes) == expected


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        pytest.param("n", "got shapes='n'", id="a-string"),
        pytest.param(["n"], "got shapes=['n']", id="a-bare-name"),
        pytest.param(
            [(-1,)], "a size in shapes= is an int >= 0 or a name such as 'n', got -1", id="neg"
        ),
        pytest.param([(1.5,)], "got 1.5 in shapes=[(1.5,)]", id="a-float"),
        pytest.param([(True,)], "got True", id="a-bool"),
    ],
)
def test_bad_shapes_are_type_errors_naming_the_value(shapes: Any, message: str) -> None:
    rules = RuleSet()
    with pytest.raises(
        TypeError,
        match=message.replace("(", r"\(")
        .replace(")", r"\)")
        .replace("[", r"\[")
        .replace("]", r"\]"),
    ):
        rules.register_rrule(abs, shapes=shapes)
