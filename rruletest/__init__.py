"""rruletest: test derivative rules against finite differences.

Every public name loads its module on first use, so ``import rruletest`` (and the pytest plugin,
which pytest loads at every start) costs next to nothing, and findiff, scipy, sympy and
hypothesis load only when a finite difference or a strategy is first needed.

>>> import rruletest
>>> rruletest.ZeroTangent() + 1.0
1.0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rruletest import defaults, interop, spaces, strategies
    from rruletest.approx import collect_mismatches, test_approx
    from rruletest.broadcast import (
        NoBroadcastRuleError,
        SlowBroadcastWarning,
        broadcasted,
        unbroadcast,
    )
    from rruletest.domains import Domain, Interval
    from rruletest.errors import Mismatch, RuleTestFailure
    from rruletest.finite_differences import (
        FiniteDifferenceMethod,
        backward_fdm,
        central_fdm,
        extrapolate_fdm,
        forward_fdm,
    )
    from rruletest.projection import project
    from rruletest.rules import (
        Example,
        RuleInfo,
        RuleSet,
        derivatives_given_output,
        frule,
        non_differentiable,
        register_frule,
        register_rrule,
        rrule,
        scalar_rule,
    )
    from rruletest.rules.derived import pullback_of, pushforward_of
    from rruletest.tangents import (
        AbstractZero,
        InplaceableThunk,
        NoTangent,
        Tangent,
        Thunk,
        ZeroTangent,
        unthunk,
    )
    from rruletest.testers import (
        Check,
        Evidence,
        TesterReport,
        rand_tangent,
        test_frule,
        test_rrule,
        test_scalar,
        with_tangent,
    )
    from rruletest.walk import register_structure

__version__ = "0.1.0"

# Public names that load their module on first access.
_LAZY: dict[str, str] = {
    **dict.fromkeys(["Domain", "Interval"], "rruletest.domains"),
    **dict.fromkeys(["Mismatch", "RuleTestFailure"], "rruletest.errors"),
    **dict.fromkeys(
        [
            "Example",
            "RuleInfo",
            "RuleSet",
            "derivatives_given_output",
            "frule",
            "non_differentiable",
            "register_frule",
            "register_rrule",
            "rrule",
            "scalar_rule",
        ],
        "rruletest.rules",
    ),
    **dict.fromkeys(
        [
            "AbstractZero",
            "InplaceableThunk",
            "NoTangent",
            "Tangent",
            "Thunk",
            "ZeroTangent",
            "unthunk",
        ],
        "rruletest.tangents",
    ),
    "strategies": "rruletest.strategies",
    "spaces": "rruletest.spaces",
    "project": "rruletest.projection",
    "pullback_of": "rruletest.rules.derived",
    "pushforward_of": "rruletest.rules.derived",
    "interop": "rruletest.interop",
    "test_approx": "rruletest.approx",
    "collect_mismatches": "rruletest.approx",
    "broadcasted": "rruletest.broadcast",
    "NoBroadcastRuleError": "rruletest.broadcast",
    "SlowBroadcastWarning": "rruletest.broadcast",
    "unbroadcast": "rruletest.broadcast",
    "FiniteDifferenceMethod": "rruletest.finite_differences",
    "central_fdm": "rruletest.finite_differences",
    "forward_fdm": "rruletest.finite_differences",
    "backward_fdm": "rruletest.finite_differences",
    "extrapolate_fdm": "rruletest.finite_differences",
    "test_rrule": "rruletest.testers",
    "TesterReport": "rruletest.testers",
    "Evidence": "rruletest.testers",
    "Check": "rruletest.testers",
    "defaults": "rruletest.defaults",
    "test_frule": "rruletest.testers",
    "test_scalar": "rruletest.testers",
    "with_tangent": "rruletest.testers",
    "rand_tangent": "rruletest.testers",
    "register_structure": "rruletest.walk",
    "walk": "rruletest.walk",
}

__all__ = [
    "AbstractZero",
    "Check",
    "Domain",
    "Evidence",
    "Example",
    "FiniteDifferenceMethod",
    "InplaceableThunk",
    "Interval",
    "Mismatch",
    "NoBroadcastRuleError",
    "NoTangent",
    "RuleInfo",
    "RuleSet",
    "RuleTestFailure",
    "SlowBroadcastWarning",
    "Tangent",
    "TesterReport",
    "Thunk",
    "ZeroTangent",
    "backward_fdm",
    "broadcasted",
    "central_fdm",
    "collect_mismatches",
    "defaults",
    "derivatives_given_output",
    "extrapolate_fdm",
    "forward_fdm",
    "frule",
    "interop",
    "non_differentiable",
    "project",
    "pullback_of",
    "pushforward_of",
    "rand_tangent",
    "register_frule",
    "register_rrule",
    "register_structure",
    "rrule",
    "scalar_rule",
    "spaces",
    "strategies",
    "test_approx",
    "test_frule",
    "test_rrule",
    "test_scalar",
    "unbroadcast",
    "unthunk",
    "walk",
    "with_tangent",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rruletest' has no attribute {name!r}")
    mod = importlib.import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
