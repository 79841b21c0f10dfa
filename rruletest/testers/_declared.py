"""A core signature the rule declared, checked before the batched reference rests on it.

``register_rrule(f, signature="(n)->(n)")`` lets the references perturb one core coordinate in
every batch member at once; that reads sums of cross derivatives as partials where ``f``
couples its members. So the declaration is used only where it fits the call
(``signature_misfit``: a number for ``"(n)->(n)"`` is no batch of vectors; a note says so) and
holds (``batch_dependence``: a few members evaluated as a batch of their own give what the whole
batch gives them); otherwise the report has a ``[signature]`` problem and the tangents are
checked against the dense or adjoint reference, whose answers do not rest on it.
"""

from __future__ import annotations

import functools
from typing import Any

from rruletest.finite_differences.declared import batch_dependence, signature_misfit
from rruletest.testers._report import Check
from rruletest.testers._setup import Setup

__all__ = ["checked_signature", "core_signature"]


def core_signature(info: Any, s: Setup) -> Any:
    """The core signature the rule declared for this call (``RuleInfo.signature_for``), or
    None; a declaration that fails on these arguments counts as none."""
    if info is None or getattr(info, "signature", None) is None:
        return None
    try:
        return info.signature_for(*s.primals, **s.fkwargs)
    except Exception:
        return None


def checked_signature(info: Any, s: Setup, y_ref: Any, register: str) -> Any:
    """``core_signature``, if ``f`` does act on each batch member alone at these arguments;
    else None, and a problem in the report (the tangents are then checked against the dense
    or adjoint reference, whose answers do not rest on the declaration)."""
    sig = core_signature(info, s)
    if sig is None:
        return None
    misfit = signature_misfit(sig, s.primals, y_ref)
    if misfit is not None:  # a call the declaration does not describe: not the rule's fault
        s.report.note(
            f"the rule's core signature {sig} does not fit this call ({misfit}): not used"
        )
        return None
    broken = batch_dependence(sig, functools.partial(s.f, **s.kwargs()), s.primals, y_ref)
    if broken is None:
        return sig
    s.report.problem(
        Check.SIGNATURE,
        "f",
        f"the rule declares the core signature {sig}, but f does not act on each batch "
        f"member alone: {broken}; checked against a reference that does not rest on it",
        hint=f"declare the signature only where it holds ({register}(..., signature=...) "
        "takes a function of the call's arguments that returns None where it does not)",
    )
    return None
