"""Run every code example of the documentation site, so the guides cannot drift from the code.

Each page under ``docs/`` (but ``interop.md``, which its own module's tests cover) runs top to
bottom in one namespace (a module named ``__main__``, as a script would), in a clean default
RuleSet that is restored afterwards. A ``python`` block is executed; a ``pycon`` block is run as
a doctest (its output checked exactly); a ``toml`` block is parsed. An HTML comment on the line
before a block changes what is done with it:

- ``<!-- fails: NAME -->``: the block must raise ``NAME`` (an exception exported by
  ``rruletest`` or ``rruletest.rules``, or a builtin one);
- ``<!-- warns: NAME -->``: the block must emit that warning;
- ``<!-- output -->``: the block is the output of the block before it (its standard output,
  then the exception or warning message);
- ``<!-- file: PATH -->``: the block is written to ``PATH`` in a scratch directory (on
  ``sys.path``, and the working directory of commands) instead of being run;
- ``<!-- run -->``: a ``console`` block whose first line is ``$ COMMAND`` runs ``COMMAND``
  (``rruletest ...`` or ``pytest ...``) in the scratch directory; the rest is its output;
- ``<!-- needs: MODULE -->``: the block runs only where ``MODULE`` is installed (an optional
  framework); ``<!-- skip -->``: the block never runs.

Shown output matches the real one line by line: a line ``...`` skips any number of real lines,
``...`` inside a line matches any text, and blank real lines may be left out.
"""

from __future__ import annotations

import builtins
import contextlib
import doctest
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import tomllib
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rruletest
from rruletest import rules
from rruletest.rules import default_ruleset

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SKIP_PAGES = {"interop.md"}  # owned and tested with rruletest.interop (needs the frameworks)
PAGES = sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).as_posix() not in SKIP_PAGES)

_FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")
_MARK = re.compile(
    r"^\s*<!--\s*(fails|warns|file|run|output|skip|needs)\s*(?::\s*(.*?))?\s*-->\s*$"
)


@dataclass
class Block:
    lang: str
    code: str
    line: int  # 1-based line of the first code line
    mark: str = ""
    arg: str = ""


def parse_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown page, each with the marker comment before it."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, lang = m.groups()
        start = i
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mm = _MARK.match(prev)
        mark, arg = (mm.group(1), (mm.group(2) or "").strip()) if mm else ("", "")
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        blocks.append(Block(lang, "\n".join(body) + "\n", start + 2, mark, arg))
        i += 1
    return blocks


def _line_matches(shown: str, actual: str) -> bool:
    if shown == actual:
        return True
    if "..." not in shown:
        return False
    pattern = ".*".join(re.escape(part) for part in shown.split("..."))
    return re.fullmatch(pattern, actual) is not None


def assert_output(shown: str, actual: str, where: str) -> None:
    """Every shown line appears in ``actual``, in order (see the module docstring)."""
    have = [line.rstrip() for line in actual.splitlines()]
    pos = 0
    skipping = False
    for raw in shown.splitlines():
        want = raw.rstrip()
        if want.strip() == "...":
            skipping = True
            continue
        if not want.strip():
            continue
        while not skipping and pos < len(have) and not have[pos].strip():
            pos += 1  # blank lines of the real output may be left out
        candidates = range(pos, len(have)) if skipping else range(pos, min(pos + 1, len(have)))
        found = next((k for k in candidates if _line_matches(want, have[k])), None)
        if found is None:
            pytest.fail(
                f"{where}: the documented output line\n  {want!r}\ndoes not match the real "
                f"output at line {pos + 1}:\n{actual}",
                pytrace=False,
            )
        pos = found + 1
        skipping = False


def _importable(modules: str) -> bool:
    """Whether every module of a comma-separated list can be imported."""
    return all(
        importlib.util.find_spec(m.strip()) is not None for m in modules.split(",") if m.strip()
    )


def _exception_type(name: str) -> type[BaseException]:
    value = next((getattr(m, name) for m in (rruletest, rules, builtins) if hasattr(m, name)), None)
    if not (isinstance(value, type) and issubclass(value, BaseException)):
        raise LookupError(f"unknown exception or warning {name!r} in a docs marker")
    return value


@contextlib.contextmanager
def clean_default_ruleset() -> Any:
    """An empty default RuleSet for one page; what was registered before is restored after."""
    saved = {k: (v.copy() if isinstance(v, dict) else v) for k, v in vars(default_ruleset).items()}
    for v in vars(default_ruleset).values():
        if isinstance(v, dict):
            v.clear()
    default_ruleset._longest_key = 1
    try:
        yield
    finally:
        for k, v in saved.items():
            current = getattr(default_ruleset, k)
            if isinstance(v, dict):
                current.clear()
                current.update(v)
            else:
                setattr(default_ruleset, k, v)


def _run_command(command: str, cwd: Path) -> str:
    argv = shlex.split(command)
    if argv[0] == "rruletest":
        argv = [sys.executable, "-m", "rruletest", *argv[1:]]
    elif argv[0] == "pytest":
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]]
    else:
        raise ValueError(f"docs can run rruletest or pytest commands, got {command!r}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)]), "COLUMNS": "80"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return done.stdout + done.stderr


class PageRunner:
    """Runs the blocks of one page in one namespace."""

    def __init__(self, page: Path, scratch: Path) -> None:
        self.page = page
        self.name = page.relative_to(DOCS).as_posix()
        self.scratch = scratch
        self.module = types.ModuleType("__main__")  # as in a script: messages say "gelu"
        self.ns: dict[str, Any] = self.module.__dict__
        self.last_output: str | None = None
        self.skipped = False

    def where(self, block: Block) -> str:
        return f"docs/{self.name}:{block.line}"

    def run(self, block: Block) -> None:
        if block.mark == "skip" or (block.mark == "needs" and not _importable(block.arg)):
            self.skipped = True
            return
        if block.mark == "output":
            if self.skipped:
                return
            if self.last_output is None:
                raise AssertionError(f"{self.where(block)}: an output block follows nothing run")
            assert_output(block.code, self.last_output, self.where(block))
            return
        if block.mark == "file":
            target = self.scratch / block.arg
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code)
            return
        if block.mark == "run":
            self.skipped = False
            first, _, shown = block.code.partition("\n")
            out = _run_command(first.removeprefix("$").strip(), self.scratch)
            assert_output(shown, out, self.where(block))
            self.last_output = out
            return
        if block.lang == "toml":
            tomllib.loads(block.code)
        elif block.lang == "pycon":
            self.run_doctest(block)
        elif block.lang == "python":
            self.run_python(block)

    def run_python(self, block: Block) -> None:
        self.skipped = False
        code = compile(block.code, self.where(block), "exec", dont_inherit=True)
        stdout = io.StringIO()
        message = ""
        with contextlib.redirect_stdout(stdout):
            if block.mark == "fails":
                with pytest.raises(_exception_type(block.arg)) as info:
                    exec(code, self.ns)
                message = str(info.value)
            elif block.mark == "warns":
                with pytest.warns(_exception_type(block.arg)) as record:  # type: ignore[arg-type]
                    exec(code, self.ns)
                message = "\n".join(str(w.message) for w in record)
            else:
                exec(code, self.ns)
        self.last_output = stdout.getvalue() + message

    def run_doctest(self, block: Block) -> None:
        self.skipped = False
        parser = doctest.DocTestParser()
        test = parser.get_doctest(block.code, self.ns, self.where(block), str(self.page), 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        out = io.StringIO()
        runner.run(test, out=out.write, clear_globs=False)
        self.ns.update(test.globs)
        if runner.failures:
            pytest.fail(f"{self.where(block)}: doctest failed\n{out.getvalue()}", pytrace=False)
        self.last_output = None


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    runner = PageRunner(page, tmp_path)
    monkeypatch.setitem(sys.modules, "__main__", runner.module)
    blocks = parse_blocks(page.read_text(encoding="utf-8"))
    with clean_default_ruleset(), warnings.catch_warnings():
        for block in blocks:
            runner.run(block)


def test_getting_started_has_a_passing_and_a_failing_example() -> None:
    blocks = parse_blocks((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    code = "".join(b.code for b in blocks if b.lang == "python")
    assert "test_rrule(" in code
    assert any(b.mark == "fails" and b.arg == "RuleTestFailure" for b in blocks)


def test_every_public_module_has_an_api_page() -> None:
    pages = {p.read_text(encoding="utf-8").strip() for p in (DOCS / "api").glob("*.md")}
    documented = {
        line[4:].strip() for page in pages for line in page.splitlines() if line.startswith("::: ")
    }
    public = {
        "rruletest.tangents",
        "rruletest.rules",
        "rruletest.domains",
        "rruletest.broadcast",
        "rruletest.projection",
        "rruletest.finite_differences",
        "rruletest.approx",
        "rruletest.tolerances",
        "rruletest.errors",
        "rruletest.testers",
        "rruletest.strategies",
        "rruletest.pytest_plugin",
        "rruletest.cli",
        "rruletest.rulesets.numpy",
    }
    assert public <= documented


def test_ci_guide_declares_the_entry_point_group_the_cli_reads() -> None:
    from rruletest import cli

    text = (DOCS / "guides" / "ci.md").read_text(encoding="utf-8")
    assert f'[project.entry-points."{cli.ENTRY_POINT_GROUP}"]' in text


def test_guides_state_the_testers_constants() -> None:
    from rruletest import defaults as ref
    from rruletest.finite_differences.adjoint import directions
    from rruletest.tolerances import default_tolerances

    fd = (DOCS / "guides" / "finite-differences.md").read_text(encoding="utf-8")
    assert f"up to {ref.DENSE_LIMIT} coordinates" in fd
    many, few = directions(10**6), directions(1)
    assert f"along random sign directions `v` ({many} at a million coordinates, up to {few}" in fd
    assert f"widened by {ref.ERROR_FACTOR:g} times" in fd
    assert f"within {ref.ROOM_FRACTION:.0%} of the distance" in fd
    for page in ("coming-from/chainrulestestutils.md", "coming-from/gradcheck.md"):
        assert f"beyond {ref.DENSE_LIMIT}" in (DOCS / page).read_text(encoding="utf-8")
    crtu = (DOCS / "coming-from" / "chainrulestestutils.md").read_text(encoding="utf-8")
    for dtype in ("float64", "float32", "float16"):
        rtol, atol = default_tolerances(np.dtype(dtype))
        shown = f"{rtol:.0e}".replace("e-0", "e-")
        assert rtol == atol, dtype
        assert f"`{shown}` {dtype}" in crtu, dtype


def test_nav_lists_every_page() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert page.relative_to(DOCS).as_posix() in nav, page


def test_parse_blocks_reads_markers() -> None:
    text = (
        "Intro\n\n<!-- fails: RuleTestFailure -->\n```python\nraise X\n```\n\n"
        "<!-- output -->\n```text\nboom\n```\n"
    )
    blocks = parse_blocks(text)
    assert [(b.lang, b.mark, b.arg, b.code) for b in blocks] == [
        ("python", "fails", "RuleTestFailure", "raise X\n"),
        ("text", "output", "", "boom\n"),
    ]
    assert blocks[0].line == 5


def test_assert_output_matches_in_order_with_ellipses() -> None:
    actual = "a\nb 1.25 s\nc\nd\n"
    assert_output("a\nb ... s\n...\nd\n", actual, "here")
    with pytest.raises(pytest.fail.Exception):
        assert_output("d\na\n", actual, "here")


def test_doctest_fences_extension() -> None:
    pytest.importorskip("griffe")  # installed with the docs extra
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from griffe_doctests import fence_doctests  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    text = "Say:\n\n    >>> 1 + 1\n    2\n\nDone.\n```\n>>> not a doctest\n```"
    assert fence_doctests(text) == (
        "Say:\n\n    ```pycon\n    >>> 1 + 1\n    2\n    ```\n\nDone.\n```\n>>> not a doctest\n```"
    )
    assert fence_doctests("So::\n\n    code\n") == "So:\n\n    code"
