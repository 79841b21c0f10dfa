"""The ``signature=`` keyword of rule registration, recorded in ``RuleInfo``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rruletest import RuleSet
from rruletest.rules.info import Signature


def _rule(x: Any) -> Any:
    return x, lambda ybar: (None, ybar)


def test_a_string_is_parsed_and_recorded() -> None:
    rules = RuleSet()
    rules.register_rrule(np.cumsum, signature="(n)->(n)")(_rule)
    info = rules.rrule_info(np.cumsum, np.ones((2, 3)))
    assert info is not None
    assert info.signature == Signature.parse("(n)->(n)")
    assert str(info.signature_for(np.ones((2, 3)))) == "(n)->(n)"


def test_a_function_of_the_call_decides_per_call() -> None:
    rules = RuleSet()

    def sig(x: Any, axis: Any = -1) -> str | None:
        return "(n)->(n)" if axis == -1 else None

    rules.register_frule(np.cumsum, signature=sig)(_rule)
    info = rules.frule_info(np.cumsum, np.ones(3))
    assert info is not None
    assert info.signature_for(np.ones((2, 3))) == Signature.parse("(n)->(n)")
    assert info.signature_for(np.ones((2, 3)), axis=0) is None


def test_no_signature_by_default() -> None:
    rules = RuleSet()
    rules.register_rrule(np.sin)(_rule)
    info = rules.rrule_info(np.sin, 1.0)
    assert info is not None
    assert info.signature is None
    assert info.signature_for(1.0) is None


def test_a_malformed_signature_fails_at_registration() -> None:
    with pytest.raises(ValueError, match=r"signature='\(n\)->' is not a gufunc core signature"):
        RuleSet().register_rrule(np.sin, signature="(n)->")
