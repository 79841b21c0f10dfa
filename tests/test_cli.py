"""``rruletest check``: exit codes, the table, module discovery (arguments, entry points)."""

from __future__ import annotations

import itertools
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from rruletest import cli
from rruletest.rules import default_ruleset

GOOD = """
import numpy as np
from rruletest import NoTangent, register_rrule, scalar_rule

def triple(x):
    return 3.0 * x

def cube(x):
    return x ** 3

scalar_rule(triple, lambda x, y: (3.0 * np.ones_like(x),))

@register_rrule(cube)
def _cube_rrule(x):
    return cube(x), lambda ybar: (NoTangent(), ybar * 3 * x ** 2)
"""

BAD = """
import numpy as np
from rruletest import scalar_rule

def triple(x):
    return 3.0 * x

def half(x):
    return 0.5 * x

scalar_rule(triple, lambda x, y: (3.0 * np.ones_like(x),))
scalar_rule(half, lambda x, y: (2.0 * np.ones_like(x),))  # wrong: should be 0.5
"""

EMPTY = '"""Registers no rules."""\n'

_counter = itertools.count()


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Run in an empty directory (no project ini); forget the rules registered here."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    # Drop what this file's rule modules registered; rules other imports registered stay
    # (their modules stay imported, so they would not register again).
    for table in (default_ruleset._rrules, default_ruleset._frules, default_ruleset._scalars):
        for key in [k for k, info in table.items() if info.module.startswith("cli_")]:
            del table[key]


def _module(tmp_path: Path, source: str, stem: str) -> str:
    name = f"cli_{stem}_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(source)
    return name


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_passing_module_exits_0_with_a_row_per_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, GOOD, "good")
    code, out, _ = _run(capsys, "check", mod, "--seed", "3", "--examples", "4")
    assert code == 0
    assert f"rruletest check: {mod} (from the command line)" in out
    assert re.search(
        r"^  rule\s+kind\s+examples\s+dtypes\s+shapes\s+status\s+worst rel err$", out, re.M
    )
    # passing rules show their worst relative error too (what the testers return), and what
    # they were checked on: cube has no examples, so it gets a fixed array case, then numbers
    # and same-shape arrays
    assert re.search(
        r"^  cube\s+rrule\s+5\s+float\S+\s+(scalars, )?arrays [\d-]+-d \(max \d+ el\.\)\s+"
        r"passed\s+\d\.\de[+-]\d\d$",
        out,
        re.M,
    )
    assert re.search(r"^  triple\s+scalar\s+4\s+\S+\s+.+\s+passed\s+\d\.\de[+-]\d\d$", out, re.M)
    assert "worst rel err: the largest max|rule - finite differences|" in out
    assert "rruletest check: 2 rules in 1 module: 2 passed (seed=3)" in out


def test_failing_module_exits_1_and_says_how_to_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, BAD, "bad")
    code, out, _ = _run(capsys, "check", mod, "--seed", "5")
    assert code == 1
    assert re.search(r"^  half\s+scalar\s+\d+\s+\S+\s+.+\s+FAILED\s+\d\.\de[+-]\d\d$", out, re.M)
    assert re.search(r"^  triple\s+scalar\s+\d+\s+\S+\s+.+\s+passed", out, re.M)
    assert "2 rules in 1 module: 1 passed, 1 failed (seed=5)" in out
    assert f"reproduce: pytest --rruletest-seed=5 'rruletest::{mod}::half[scalar]'" in out
    assert f"rerun with: rruletest check {mod} --seed 5" in out


def test_unknown_module_exits_2_and_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _run(capsys, "check", "no_such_module_xyz")
    assert code == 2
    assert "unknown module 'no_such_module_xyz'" in err


def test_module_that_fails_to_import_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, "raise RuntimeError('broken on purpose')\n", "broken")
    code, _, err = _run(capsys, "check", mod)
    assert code == 2
    assert f"importing module {mod!r} failed: RuntimeError: broken on purpose" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "--examples", "0"], "got examples='0'"),
        (["check", "--seed", "minus"], "got seed='minus'"),
        (["check", "--dtypes", "int8"], "unknown dtype 'int8'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "required: COMMAND"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert message in err


def test_n_without_xdist_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "_have_xdist", lambda: False)
    code, _, err = _run(capsys, "check", "-n", "2")
    assert code == 2
    assert "-n 2 needs pytest-xdist, which is not installed" in err


def test_no_module_checks_the_builtin_ruleset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--examples", "1", "--", "-k", "nothing_matches_this")
    assert code == cli.EXIT_NO_RULES == 3
    assert "rruletest check: rruletest.rulesets.numpy (from the built-in ruleset)" in out
    assert re.search(
        r"no rule was checked \(\d+ deselected: every rule was deselected or skipped\); exit code 3",
        out,
    )


def test_module_without_rules_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, EMPTY, "empty")
    code, out, _ = _run(capsys, "check", mod)
    assert code == 3
    assert f"rruletest check: {mod} registers no rules (looked for rules defined in {mod}" in out
    assert "0 rules in 1 module: nothing run" in out
    assert "rruletest check: no rule was checked; exit code 3" in out


def test_entry_points_name_the_modules_when_none_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, GOOD, "declared")
    dist = tmp_path / "fake_rule_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-rule-pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[rruletest.rules]\nfakepkg = {mod}\n")
    code, out, _ = _run(capsys, "check", "--seed", "1", "--examples", "2")
    assert code == 0
    assert f"(from entry points 'rruletest.rules' (fakepkg={mod}))" in out
    assert "2 rules in 1 module: 2 passed" in out


def test_pytest_options_pass_through_and_junitxml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, BAD, "passthrough")
    xml = tmp_path / "gate.xml"
    code, out, _ = _run(
        capsys, "check", mod, "--junitxml", str(xml), "--seed", "2", "--", "-k", "triple"
    )
    assert code == 0
    assert re.search(r"^  half\s+scalar\s+-\s+-\s+-\s+deselected", out, re.M)
    assert "1 passed, 1 deselected" in out
    names = [c.get("name") for c in ET.parse(xml).iter("testcase")]
    assert names == ["triple[scalar]"]


def test_x_stops_at_the_first_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module(tmp_path, BAD, "stop")
    code, out, _ = _run(capsys, "check", mod, "--", "-x")
    assert code == 1
    assert re.search(r"^  triple\s+scalar\s+-\s+-\s+-\s+not run", out, re.M)


@pytest.mark.skipif("xdist" not in sys.modules and not cli._have_xdist(), reason="no xdist")
def test_n_runs_on_xdist_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Local workers get the sys.path xdist saw when it was imported (by this test session).
    monkeypatch.setattr("xdist.workermanage._sys_path", [str(tmp_path), *sys.path])
    mod = _module(tmp_path, BAD, "xdist")
    code, out, _ = _run(capsys, "check", mod, "-n", "2", "--seed", "8", "--examples", "3")
    assert code == 1
    assert re.search(r"^  half\s+scalar\s+\d+\s+\S+\s+.+\s+FAILED", out, re.M)
    assert re.search(r"^  triple\s+scalar\s+3\s+\S+\s+.+\s+passed", out, re.M)


def test_runs_inside_a_project_with_its_own_pytest_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conftest.py").write_text("collect_ignore = []\n")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'addopts = ["--strict-markers", "--strict-config", "--doctest-modules"]\n'
        'filterwarnings = ["error"]\n'
    )
    (tmp_path / "test_unrelated.py").write_text("def test_not_run():\n    raise AssertionError\n")
    mod = _module(tmp_path, GOOD, "project")
    code, out, _ = _run(capsys, "check", mod, "--seed", "4", "--examples", "3")
    assert code == 0
    assert "2 rules in 1 module: 2 passed (seed=4)" in out


def test_pytest_usage_error_after_double_dash_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, GOOD, "usage")
    code, _, err = _run(capsys, "check", mod, "--", "--no-such-pytest-option")
    assert code == 2
    assert "rruletest check: pytest rejected its arguments" in err


def test_seed_last_reuses_the_previous_runs_seed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, GOOD, "last")
    assert _run(capsys, "check", mod, "--seed", "31", "--examples", "2")[0] == 0
    code, out, _ = _run(capsys, "check", mod, "--seed", "last", "--examples", "2")
    assert code == 0
    assert "2 passed (seed=31)" in out
