"""A griffe extension: render the doctest blocks of docstrings as Python console code.

rruletest's docstrings hold doctests (``>>>`` lines and their expected output) in their
description, where Markdown would read ``>>>`` as nested block quotes. This extension wraps
every doctest block (from a ``>>>`` line to the next blank line) in a ``pycon`` code fence
before mkdocstrings parses the docstring, and turns the reStructuredText literal-block marker
(a paragraph ending in ``::`` before an indented block) into a plain colon, since Markdown
already reads the indented block as code. The docstrings themselves are left unchanged.
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
            if not in_fence and line.endswith("::") and _literal_follows(lines, i):
                line = line[:-1]
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


def _literal_follows(lines: list[str], i: int) -> bool:
    """Whether line ``i`` is followed by a blank line and a more indented block."""
    if i + 2 >= len(lines) or lines[i + 1].strip():
        return False
    indent = len(lines[i]) - len(lines[i].lstrip())
    nxt = lines[i + 2]
    return bool(nxt.strip()) and len(nxt) - len(nxt.lstrip()) > indent


class DoctestFences(griffe.Extension):
    """Wrap doctest blocks in code fences in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
