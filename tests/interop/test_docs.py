"""The examples of ``docs/interop.md`` run and pass, so the page cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "interop.md"


def examples() -> list[str]:
    """The ``python`` code blocks from the first framework section on (earlier ones are
    fragments showing call shapes)."""
    text = PAGE.read_text(encoding="utf-8")
    text = text[text.index("## PyTorch") :]
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_the_page_has_examples() -> None:
    assert len(examples()) >= 4


def test_examples_run_in_order() -> None:
    for module in ("torch", "jax", "autograd"):
        pytest.importorskip(module)
    namespace: dict[str, object] = {"__name__": "docs_interop"}
    for i, code in enumerate(examples()):
        exec(compile(code, f"{PAGE.name}[python block {i}]", "exec"), namespace)
