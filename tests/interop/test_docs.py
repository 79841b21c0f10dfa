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


GUIDE = PAGE.parent / "guides" / "auditing.md"


def test_the_auditing_guide_is_in_the_site() -> None:
    nav = (PAGE.parents[1] / "mkdocs.yml").read_text(encoding="utf-8")
    assert "Auditing a framework's rules: guides/auditing.md" in nav


def test_the_auditing_guides_table_registers_a_row_per_primitive_in_both_dtypes() -> None:
    """The page itself runs in ``tests/test_docs.py`` (its gate run, output included); this
    checks what its table registers, without the gate."""
    pytest.importorskip("autograd")
    from rruletest.rules import default_ruleset
    from tests.test_docs import clean_default_ruleset, parse_blocks

    (table,) = [b for b in parse_blocks(GUIDE.read_text(encoding="utf-8")) if b.mark == "file"]
    assert table.arg == "audit_autograd.py"
    namespace: dict[str, object] = {"__name__": "audit_autograd"}
    with clean_default_ruleset():
        exec(compile(table.code, str(GUIDE), "exec"), namespace)
        rows = default_ruleset.rules(module="audit_autograd", kind="rrule")
        names = [i.name for i in rows]
        domains = {i.name: None if i.domain is None else str(i.domain.interval(0)) for i in rows}
        dtypes = {i.name: [e[0].dtype.name for e in i.examples] for i in rows}
    assert names == ["sinh", "log", "arcsin", "cumsum", "repeat", "tile"]
    assert (domains["log"], domains["arcsin"], domains["sinh"]) == ("(0, inf)", "(-1, 1)", None)
    assert set(map(tuple, dtypes.values())) == {("float64", "float32")}
