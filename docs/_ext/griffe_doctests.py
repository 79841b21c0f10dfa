"""A griffe extension: render the doctest blocks of docstrings as Python console code.

rruletest's docstrings hold doctests (``>>>`` lines and their expected output) in their
description, where Markdown would read ``>>>`` as nested block quotes. This extension wraps
every doctest block (from a ``>>>`` line to the next blank line) in a ``pycon`` code fence
before mkdocstrings parses the docstring. The docstrings themselves stay plain doctests.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with each doctest block wrapped in a ``pycon`` code fence (same indent)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        block: list[str] = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i])
            i += 1
        out.append(f"{indent}```pycon")
        out.extend(block)
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Wrap doctest blocks in code fences in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
