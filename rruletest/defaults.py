"""Every default of rruletest in one place, each with the reason for its value.

The testers, the tolerance table, the pytest plugin and the CLI read their defaults from here,
so changing one means changing one line, and the documentation page *Defaults* lists them all.
This module is the bottom layer: it imports nothing of rruletest (and not numpy), so the pytest
plugin can read it at start-up for free.

It also holds the one validator of tolerance options (``check_tolerance``): ``rtol=-1`` gets the
same message from a tester, ``rruletest.tolerances``, the plugin's ``--rruletest-rtol`` and
``rruletest check --rtol``.

>>> TOLERANCES["float32"]
(0.0001, 0.0001)
>>> check_tolerance("rtol", -1.0)
Traceback (most recent call last):
...
ValueError: rtol must be a number >= 0, got rtol=-1.0
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = [
    "ADJOINT_DIRECTIONS",
    "AVOID_MARGIN",
    "COMPLEX_PART",
    "DENSE_LIMIT",
    "DTYPES",
    "ERROR_FACTOR",
    "EXAMPLES",
    "JVP_DENSE_LIMIT",
    "ROOM_FRACTION",
    "TOLERANCES",
    "check_tolerance",
    "tolerance_message",
]

#: Default ``(rtol, atol)`` by real floating dtype name; a complex dtype uses its real part's
#: entry, anything without a floating dtype the float64 one. float64 is held to 1e-9, the
#: accuracy ``central_fdm(5, 1)`` reaches on smooth functions with room to spare; float32 and
#: float16 to a few hundred times their machine epsilon, so a correct rule never fails on
#: rounding (ChainRulesTestUtils' single 1e-9 fails every float32 rule).
TOLERANCES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "float16": (1e-2, 1e-2),
        "float32": (1e-4, 1e-4),
        "float64": (1e-9, 1e-9),
        "longdouble": (1e-9, 1e-9),
    }
)

#: Input coordinates up to which ``test_rrule`` builds the dense numerical vjp (one finite
#: difference per coordinate); beyond it the adjoint identity is checked instead, which costs
#: a few jvps whatever the size (``finite_differences.adjoint.directions``: 2 random sign
#: directions at a million coordinates, more below, up to 8).
DENSE_LIMIT = 2000

#: Random directions ``v`` along which the adjoint identity ``<xbar, v> == <ybar, J v>`` is
#: checked for arguments in spaces (``with_tangent``, ``spaces=``), beyond ``DENSE_LIMIT``:
#: three independent directions make a wrong cotangent that passes by chance vanishingly
#: unlikely.
ADJOINT_DIRECTIONS = 3

#: Input coordinates up to which ``test_frule`` multiplies the numerical Jacobian by the input
#: tangents (one snapped step per coordinate) rather than differentiating along
#: ``x + t * xdot``, whose rounding in float32 at large ``|x|`` is not in the error estimate.
JVP_DENSE_LIMIT = 32

#: Multiples of the finite-difference engine's own error estimate added to each element's
#: absolute tolerance: the estimate is a bound of the right order, not a strict one.
ERROR_FACTOR = 10.0

#: Stencils stay within this fraction of the distance to a declared domain's edge.
ROOM_FRACTION = 0.9

#: The imaginary part ``test_scalar`` adds to a real ``x`` to test a complex input.
COMPLEX_PART = 0.5

#: Examples hypothesis generates per rule item (plugin and ``rruletest check``).
EXAMPLES = 20

#: Floating dtypes rule items draw their inputs in unless told otherwise.
DTYPES: tuple[str, ...] = ("float64", "float32")

#: How far the built-in numpy ruleset's generated inputs keep from kinks, poles and branch
#: cuts, so that no finite-difference stencil straddles one (float32 steps are a few
#: hundredths, and a tester moves along tangents of a few units).
AVOID_MARGIN = 0.25


def tolerance_message(name: str, value: Any) -> str:
    """The one text every entry point shows for a bad tolerance option.

    >>> tolerance_message("atol", "x")
    "atol must be a number >= 0, got atol='x'"
    """
    return f"{name} must be a number >= 0, got {name}={value!r}"


def check_tolerance(name: str, value: Any) -> float | None:
    """``value`` as a float if it is a valid tolerance (a real number >= 0; ``inf`` turns the
    comparison off), None for None.

    Raises:
        TypeError: not a real number (a bool, a string, ...).
        ValueError: negative or NaN.

    >>> check_tolerance("atol", 1), check_tolerance("atol", None)
    (1.0, None)
    >>> check_tolerance("rtol", "1e-3")
    Traceback (most recent call last):
    ...
    TypeError: rtol must be a number >= 0, got rtol='1e-3'
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(tolerance_message(name, value))
    if not float(value) >= 0:  # also catches NaN
        raise ValueError(tolerance_message(name, value))
    return float(value)
