"""The names of the testers' checks: typed values, listed in the order ``test_rrule`` runs them.

>>> Check.NUMERIC == "numeric", Check("zero")
(True, 'zero')
"""

from __future__ import annotations

import enum

__all__ = ["Check"]


class Check(enum.StrEnum):
    """The testers' checks, in the order ``test_rrule`` runs them (``test_frule`` runs the
    same ones that apply to a forward rule). Each is a ``str`` (``Check.NUMERIC ==
    "numeric"``), the ``check`` of the ``Mismatch``es it records and what
    ``RuleTestFailure.checks`` lists."""

    INPUT = "input"  #: an argument the testers cannot walk (it contains itself)
    RULE = "rule"  #: a rule exists and returns ``(y, pullback)`` / ``(y, ydot)``
    PRIMAL = "primal"  #: ``y`` matches ``f(*args)``, a collected value, not a thunk
    OUTPUT = "output"  #: the pullback returns a tuple, one tangent for ``f`` then one per arg
    TYPE = "type"  #: each tangent's type, shape and dtype fit its primal
    NOTANGENT = "notangent"  #: ``NoTangent()`` for ``f`` and non-differentiable arguments
    SIGNATURE = "signature"  #: a declared core signature holds: ``f`` acts on each member alone
    NUMERIC = "numeric"  #: the tangents match the numerical reference
    REPEAT = "repeat"  #: a second call of the pullback gives the same
    THUNK = "thunk"  #: ``pullback(Thunk(ybar))`` gives the same
    INPLACE = "inplace"  #: an ``InplaceableThunk``'s ``add_fn(buffer)`` adds its value in place
    ZERO = "zero"  #: ``pullback(ZeroTangent())`` gives zeros
    MUTATION = "mutation"  #: neither inputs, keyword arguments, tangents nor ``ybar`` mutated
    EXCEPTION = "exception"  #: ``f``, the rule or the pullback raised
    CONVENTION = "convention"  #: a complex pullback used ``f'(z)`` for ``conj(f'(z))``
    TRANSPOSE = (
        "transpose"  #: the frule and the rrule are adjoint: ``<ybar, ydot> == <xbar, xdot>``
    )
    ORDER2 = "order2"  #: the rule's own derivative (order=2) matches finite differences of it
    INTERNAL = "internal"  #: rruletest itself failed on a value (a bug to report)

    def __repr__(self) -> str:
        return repr(self.value)  # shown as the string it equals: ['numeric']
