"""The built-in ruleset for numpy functions (importing this module registers them)."""

from __future__ import annotations
