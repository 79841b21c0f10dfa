"""The rruletest pytest plugin (entry point ``pytest11``).

Loaded by pytest at start-up, so it imports nothing heavy: no findiff, scipy, sympy or
hypothesis. Seeds, options, fixtures and collection of registered rules live here.
"""

from __future__ import annotations
