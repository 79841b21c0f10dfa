"""The built-in ruleset for numpy functions; importing this package registers its rules.

``import rruletest`` registers nothing (a user may bring their own rules for numpy);
``import rruletest.rulesets.numpy`` registers, in the default RuleSet:

- scalar rules for 27 unary ufuncs (``sin`` ... ``rad2deg``) and 11 binary ufuncs (``add`` ...
  ``logaddexp2``), so ``broadcasted(f, ...)`` of each is differentiated on the vectorised path;
- rrule/frule pairs for ``sum``, ``mean``, ``prod``, ``cumsum``, ``max``/``amax``,
  ``min``/``amin``, ``var``, ``std``, ``matmul``, ``dot``, ``outer``, ``transpose``, ``reshape``,
  ``trace``, ``linalg.norm``, ``linalg.inv``, ``linalg.det``, ``linalg.solve`` and this
  package's ``logsumexp`` and ``softmax``, each with example inputs (shapes, axes, float32,
  complex) that ``rruletest check`` tests.

Every rule declares its domain (``RuleInfo.domain``): an interval per argument, whether complex
inputs are accepted (holomorphic functions), and points to avoid (kinks, poles, branch cuts).
Each module's docstring says which subgradient is returned at non-differentiable points.

>>> import numpy as np
>>> import rruletest.rulesets.numpy
>>> from rruletest.rules import default_ruleset
>>> str(default_ruleset.scalar_info(np.log).domain)
'(0, inf) or complex'
"""

from __future__ import annotations

from rruletest.rulesets.numpy import (
    _binary,
    _linalg,
    _norm,
    _products,
    _reductions,
    _shape,
    _statistics,
    _unary,
)
from rruletest.rulesets.numpy._composite import logsumexp, softmax

__all__ = ["logsumexp", "softmax"]

_MODULES = (_unary, _binary, _reductions, _statistics, _products, _shape, _norm, _linalg)
