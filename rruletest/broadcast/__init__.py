"""Broadcasting: ``broadcasted(f, *args)``, its generic rrule/frule, and ``unbroadcast``.

``broadcasted(f, *args)`` applies a scalar function elementwise under numpy broadcasting and
returns the collected values (an ndarray when any argument is an ndarray, else a numpy scalar).
Importing this module registers the generic rules, so every RuleSet can differentiate it:

>>> import numpy as np
>>> from rruletest import RuleSet
>>> rules = RuleSet()
>>> _ = rules.scalar_rule(np.multiply, lambda x, y, z: (y, x))
>>> x, w = np.array([[1.0], [2.0]]), np.array([10.0, 20.0, 30.0])
>>> z, pullback = rules.rrule(broadcasted, np.multiply, x, w)
>>> z.shape
(2, 3)
>>> _, _, xbar, wbar = pullback(np.ones((2, 3)))
>>> xbar, wbar
(array([[60.],
       [60.]]), array([3., 3., 3.]))

Which rule is used (a rule registered for ``(broadcasted, f)``, ``f``'s scalar rule, or ``f``'s
own rule once per element) is described in ``rruletest.broadcast._rules``; ``broadcast_path``
reports it.
How ``f`` is applied (ufunc, whole arrays, per-element loop) is in ``rruletest.broadcast._apply``.

Conventions of the generic rules:

- the pullback returns ``(NoTangent(), fbar, xbar_1, ..., xbar_n)``: ``NoTangent()`` for
  ``broadcasted`` itself; ``fbar`` is ``NoTangent()`` except on the per-element path, where it is
  the sum of the per-element ``fbar``s;
- ``xbar_i = unbroadcast(args[i], ...)``: the shape, precision and kind (Python/numpy scalar,
  0-d array) of ``args[i]``, ``NoTangent()`` for integer and boolean arguments, real for real
  arguments (``<a, b> = Re(sum(conj(a) * b))``, so ``xbar = ybar * conj(f'(x))``);
- a ``ZeroTangent()``/``NoTangent()`` output cotangent gives that zero for every differentiable
  argument without computing partials; a ``Thunk`` is unthunked;
- keyword arguments are passed unchanged to every call of ``f``; the scalar path rejects them (a
  scalar rule's partials never see them), the per-element path passes them to ``f``'s rule;
- list or tuple arguments are rejected by the rules (their cotangent would be ambiguous).
"""

from __future__ import annotations

from rruletest.broadcast._apply import broadcasted, declare_vectorised
from rruletest.broadcast._common import NoBroadcastRuleError, SlowBroadcastWarning
from rruletest.broadcast._rules import (
    BroadcastPath,
    broadcast_frule,
    broadcast_path,
    broadcast_rrule,
)
from rruletest.projection import is_differentiable, unbroadcast
from rruletest.rules import register_generic_rule

__all__ = [
    "BroadcastPath",
    "NoBroadcastRuleError",
    "SlowBroadcastWarning",
    "broadcast_frule",
    "broadcast_path",
    "broadcast_rrule",
    "broadcasted",
    "declare_vectorised",
    "is_differentiable",
    "unbroadcast",
]

register_generic_rule(broadcasted, rrule=broadcast_rrule, frule=broadcast_frule)
