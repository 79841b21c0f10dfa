"""The testers rule authors call from their test suites.

``test_rrule`` and ``test_frule`` check one rule at one input against the function and against
finite differences, plus the structure of everything the rule returns; ``test_scalar`` runs both
at a real and (when the function takes them) a complex number. Every problem found goes into
one ``RuleTestFailure`` (an ``AssertionError``) whose message names the tester call, each
problem's path (``args[1]``, zero-based; ``f`` for the function's own tangent), the values, the
size of the difference, the tolerance, and how to reproduce (the seed of the random tangents).

Layout: each tester is one module listing its checks in the order they run
(``_rrule_tester``, ``_frule_tester``, ``_scalar_tester``); the checks they share are in
``_checks``; ``_reference`` chooses the numerical reference for both; the names of the checks
are the typed values of ``Check``.

>>> import numpy as np
>>> from rruletest import NoTangent, RuleSet
>>> rules = RuleSet()
>>> @rules.register_rrule(np.sin)
... def _sin(x):
...     return np.sin(x), lambda ybar: (NoTangent(), ybar * np.cos(x))
>>> report = test_rrule(np.sin, np.linspace(0, 1, 5), rrule_f=rules.rrule, rng=0)  # passes
>>> report.numerical, report.pullback_calls, report.worst_rel_err < 1e-9
('dense finite-difference vjp (5 coordinates)', 4, True)
>>> @rules.register_rrule(np.cos)
... def _cos(x):
...     return np.cos(x), lambda ybar: (NoTangent(), ybar * np.sin(x))  # sign is wrong
>>> test_rrule(np.cos, 0.5, rrule_f=rules.rrule, rng=0)
Traceback (most recent call last):
...
rruletest.errors.RuleTestFailure: test_rrule(np.cos, 0.5) failed
...
"""

from rruletest.testers._args import with_tangent
from rruletest.testers._frule_tester import test_frule
from rruletest.testers._rand_tangent import rand_tangent
from rruletest.testers._report import Check, TesterReport
from rruletest.testers._rrule_tester import test_rrule
from rruletest.testers._scalar_tester import test_scalar

__all__ = [
    "Check",
    "TesterReport",
    "rand_tangent",
    "test_frule",
    "test_rrule",
    "test_scalar",
    "with_tangent",
]

with_tangent.__test__ = False  # type: ignore[attr-defined]
rand_tangent.__test__ = False  # type: ignore[attr-defined]
