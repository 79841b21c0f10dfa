"""``rruletest check``: exit codes, the table, module discovery (arguments, entry points)."""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
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
        r"no rule was checked \(\d+ deselected: every rule was deselected or skipped\); "
        r"exit code 3",
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


#: A module with a default-registered rule and a RuleSet of its own: a right scalar rule, a
#: wrong rrule (sin's pullback without cos), a non-differentiable rule.
OWN = """
import numpy as np
from rruletest import NoTangent, RuleSet, register_rrule

extra = RuleSet("extra")
extra.scalar_rule(np.tanh, lambda x, y: 1 - y**2)
extra.register_rrule(np.sin)(lambda x: (np.sin(x), lambda g: (NoTangent(), g)))
extra.non_differentiable(np.sign)


def cube(x):
    return x**3


@register_rrule(cube)
def _cube(x):
    return cube(x), lambda g: (NoTangent(), g * 3 * x**2)
"""


def test_the_rules_of_a_modules_own_ruleset_are_checked_beside_the_default_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, OWN, "own")
    code, out, err = _run(capsys, "check", mod, "--seed", "2", "--examples", "5")
    assert code == 1, out + err
    assert f"{mod} (4 rules)" in out
    assert re.search(r"^  extra\.sin\s+rrule\s+\d+\s+float64.*FAILED", out, re.M), out
    for rule, kind in (("extra.tanh", "scalar"), ("extra.sign", "non_differentiable")):
        assert re.search(rf"^  {re.escape(rule)}\s+{kind}\s+\d+.*passed", out, re.M), out
    assert re.search(r"^  cube\s+rrule\s+\d+.*passed", out, re.M), out
    assert f"rule extra.sin [rrule] registered by {mod} in its RuleSet extra" in out
    # The tester's reproduce line looks the rule up where it was registered.
    assert f"rrule_f={mod}.extra.rrule" in out
    assert f"'rruletest::{mod}::extra.sin[rrule]'" in out


def test_a_ruleset_imported_from_another_module_is_not_collected_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    owner = _module(tmp_path, OWN, "owner")
    mod = _module(tmp_path, f"from {owner} import extra\n", "importer")
    code, out, _ = _run(capsys, "check", mod)
    assert code == 3
    assert f"rruletest check: {mod} registers no rules" in out


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


# -- run as users run it: a subprocess -----------------------------------------------------------

MEAN = """
import numpy as np
from rruletest import NoTangent, register_rrule

def mymean(x):
    return np.sum(x) / np.size(x)

@register_rrule(mymean)
def _mymean_rrule(x):
    return mymean(x), lambda ybar: (NoTangent(), ybar * np.ones_like(x))  # forgot / size
"""

SCALAR_ONLY = """
import math
from rruletest import NoTangent, register_rrule

def msin(x):
    return math.sin(x)

@register_rrule(msin)
def _msin_rrule(x):
    return msin(x), lambda ybar: (NoTangent(), ybar * math.cos(x))
"""

SHAPED = """
import numpy as np
from rruletest import Example, NoTangent, register_frule, register_rrule, unthunk

def matvec(a, x):
    return a @ x

@register_rrule(matvec, shapes=[("m", "n"), ("n",)])
def _matvec_rrule(a, x):
    def pullback(ybar):
        ybar = unthunk(ybar)
        return NoTangent(), np.outer(ybar, x), a.T @ ybar
    return a @ x, pullback

def total(x, axis=None):
    return np.sum(x, axis=axis)

@register_frule(total, examples=[Example(np.ones((2, 3)), axis=0), Example(np.ones(4))])
def _total_frule(tangents, x, axis=None):
    return total(x, axis=axis), np.sum(tangents[1], axis=axis)
"""

TINY = """
import numpy as np
from rruletest import scalar_rule

def double(x):
    return 2.0 * x

scalar_rule(double, lambda x, y: (2.0 * np.ones_like(x),), domain=(1, 1 + 4.5e-16))
"""


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), *sys.path])}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "rruletest", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_package_whose_rules_live_in_a_submodule_exits_3_and_names_it(tmp_path: Path) -> None:
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A package that does not import its rules."""\n')
    (pkg / "rules.py").write_text(MEAN.replace("mymean", "pkgmean"))
    (pkg / "other.py").write_text("X = 1\n")
    (pkg / "more.py").write_text(OWN)  # 3 rules in its own RuleSet, 1 default-registered
    run = _cli(tmp_path, "check", "mypkg", "--seed", "1")
    assert run.returncode == 3, run.stdout + run.stderr
    assert (
        "rruletest check: mypkg registers no rules (looked for rules defined in mypkg and in the "
        "submodules importing mypkg loads); its submodules mypkg.more (4 rules), mypkg.rules "
        "(1 rule) do register rules: check them with `rruletest check mypkg.more mypkg.rules`, "
        "or import them in mypkg"
    ) in run.stdout
    assert "rruletest check: no rule was checked; exit code 3" in run.stdout


def test_a_mean_that_forgets_to_divide_fails_the_gate(tmp_path: Path) -> None:
    (tmp_path / "umean.py").write_text(MEAN)
    run = _cli(tmp_path, "check", "umean", "--seed", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"^  mymean\s+rrule\s+\d+\s+float64.*arrays.*FAILED", run.stdout, re.M)
    assert "falsifying inputs: test_rrule(umean.mymean, np.array([" in run.stdout


def test_dtypes_are_honoured_and_shown(tmp_path: Path) -> None:
    (tmp_path / "cube32.py").write_text(GOOD)
    run = _cli(tmp_path, "check", "cube32", "--seed", "2", "--examples", "6", "--dtypes", "float32")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^  cube\s+rrule\s+7\s+float64,float32\s+", run.stdout, re.M)
    assert re.search(r"^  triple\s+scalar\s+6\s+float32\s+", run.stdout, re.M)


def test_rule_tried_at_scalars_only_says_so_and_strict_fails_it(tmp_path: Path) -> None:
    (tmp_path / "sonly.py").write_text(SCALAR_ONLY)
    run = _cli(tmp_path, "check", "sonly", "--seed", "1", "--examples", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(
        r"^  msin\s+rrule\s+3\s+float64,float32\s+scalars only\s+passed", run.stdout, re.M
    )
    strict = _cli(tmp_path, "check", "sonly", "--seed", "1", "--examples", "3", "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert (
        "msin (rrule, registered by sonly) was tried at scalars only (3 examples): it has no "
        "examples=, no shapes=, and sonly.msin does not accept arrays of shape (3,)"
    ) in strict.stdout
    assert "rerun with: rruletest check sonly --seed 1 --examples 3 --strict" in strict.stdout


INT_EXAMPLES = """
import numpy as np
from rruletest import NoTangent, register_rrule

def mycos(x):
    return np.cos(x)

@register_rrule(mycos, examples=[np.array([1, 2, 3]), (2,)])  # integers: not differentiated
def _mycos_rrule(x):
    return np.cos(x), lambda ybar: (NoTangent(), NoTangent())  # wrong for float inputs
"""


def test_a_rule_whose_examples_compare_nothing_fails_the_gate(tmp_path: Path) -> None:
    # Integer examples are kept integer (not differentiated), so a wrong rule checked only at
    # them was never compared with finite differences: that must not be a green row.
    (tmp_path / "intex.py").write_text(INT_EXAMPLES)
    run = _cli(tmp_path, "check", "intex", "--seed", "1", "--examples", "3")
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"^  mycos\s+rrule\s+\d+\s+-\s+-\s+FAILED", run.stdout, re.M)
    assert (
        "mycos (rrule, registered by intex) was never compared with finite differences: "
        "none of the 5 inputs it was tested at has an argument it differentiates"
    ) in run.stdout
    reproduce = "reproduce: pytest --rruletest-seed=1 --rruletest-examples=3 "
    assert reproduce + "'rruletest::intex::mycos[rrule]'" in run.stdout


def test_declared_shapes_and_example_keywords(tmp_path: Path) -> None:
    (tmp_path / "shaped.py").write_text(SHAPED)
    run = _cli(tmp_path, "check", "shaped", "--seed", "4", "--examples", "5")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^  matvec\s+rrule\s+6\s+float64,float32\s+arrays 1-2-d", run.stdout, re.M)
    assert re.search(r"^  total\s+frule\s+\d+\s+float64\s+arrays 1-2-d .*passed", run.stdout, re.M)
    wrong = SHAPED.replace("np.outer(ybar, x)", "np.outer(ybar, x) * 1.01")
    (tmp_path / "shaped_bad.py").write_text(wrong)
    bad = _cli(tmp_path, "check", "shaped_bad", "--seed", "4", "--examples", "5")
    assert bad.returncode == 1
    assert re.search(r"^  matvec\s+rrule\s+1\s+.*FAILED", bad.stdout, re.M)
    # a keyword the example carries reaches f and the report: axis=0 is f's, not the tester's
    kw = SHAPED.replace("np.sum(tangents[1], axis=axis)", "np.sum(tangents[1])")
    (tmp_path / "kw_bad.py").write_text(kw)
    bad = _cli(tmp_path, "check", "kw_bad", "--seed", "4", "--examples", "2")
    assert bad.returncode == 1
    assert "falsifying inputs: test_frule(kw_bad.total, np.array([[1., 1., 1.]," in bad.stdout
    assert "fkwargs={'axis': 0})" in bad.stdout


@pytest.mark.parametrize("n", ["0", "-1", "two"])
def test_n_below_one_is_rejected(tmp_path: Path, n: str) -> None:
    run = _cli(tmp_path, "check", "-n", n)
    assert run.returncode == 2
    assert (
        f"rruletest check: error: -n takes a number of processes >= 1 or 'auto', got -n {n}; "
        "drop -n to run serially"
    ) in run.stderr


def test_a_domain_too_narrow_to_draw_in_names_the_rule_and_domain(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY)
    run = _cli(tmp_path, "check", "tiny", "--seed", "1")
    assert run.returncode == 1
    assert (
        "rruletest could not test the rule for double (scalar, registered by tiny): its domain "
        "(1, 1.0000000000000004) is unusable"
    ) in run.stdout
    assert "cannot draw inputs for double: its domain (1, 1.0000000000000004) is too narrow" in (
        run.stdout
    )
    assert "Traceback" not in run.stdout + run.stderr
    assert "hypothesis" not in run.stdout


OUTSIDE = """
import numpy as np
from rruletest import NoTangent, register_rrule

def logsum(x):
    return np.sum(np.log(x))

@register_rrule(logsum, domain="(0.5, inf)", examples=[(np.array([[0.75, 2.0], [0.25, 1.0]]),)])
def _(x):
    return logsum(x), lambda ybar: (NoTangent(), ybar / x)
"""


def test_examples_outside_the_domain_are_named(tmp_path: Path) -> None:
    # Generated inputs stay near the examples and inside the domain: with every example
    # outside it, the report says which element is out, not that drawing was unsatisfiable.
    (tmp_path / "outside.py").write_text(OUTSIDE)
    run = _cli(tmp_path, "check", "outside", "--seed", "1")
    assert run.returncode == 1
    assert (
        "no input can be drawn for logsum: each of its 1 example(s) lies outside its domain "
        "(0.5, inf) (example 0: args[0][1, 0] = 0.25 is outside (0.5, inf)), and generated "
        "inputs stay near the examples"
    ) in run.stdout
    assert "hint: move the examples inside the domain, or widen the domain" in run.stdout
    inside = OUTSIDE.replace("0.25", "0.6")
    (tmp_path / "inside.py").write_text(inside)
    assert _cli(tmp_path, "check", "inside", "--seed", "1").returncode == 0


def test_rerun_with_keeps_every_option_that_shaped_the_run(tmp_path: Path) -> None:
    (tmp_path / "rerun.py").write_text(BAD)
    argv = ["check", "rerun", "--seed", "7", "--examples", "3", "--dtypes", "float32,float64"]
    run = _cli(tmp_path, *argv, "--", "-k", "half or triple")
    assert run.returncode == 1
    line = (
        "rerun with: rruletest check rerun --seed 7 --examples 3 --dtypes float32,float64 -- -k "
        "'half or triple'"
    )
    assert line in run.stdout
    again = _cli(tmp_path, *shlex.split(line.removeprefix("rerun with: rruletest ")))
    assert again.returncode == 1
    assert again.stdout.splitlines()[-2:] == run.stdout.splitlines()[-2:]


def test_ci_gate_seeds_come_from_the_commit_and_are_printed(tmp_path: Path) -> None:
    script = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    assert "seq 1 20" not in script
    start = script.index("commit=$(")
    end = script.index('echo "seeds', start)
    snippet = script[start:end] + 'echo "$first $last"\n'
    outs = []
    for commit in ("0" * 40, "f" * 40, "1234abcd" + "0" * 32):
        fake = tmp_path / commit[:8]
        fake.mkdir()
        (fake / "git").write_text(f"#!/bin/sh\necho {commit}\n")
        (fake / "git").chmod(0o755)
        env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
        res = subprocess.run(["bash", "-c", snippet], env=env, capture_output=True, text=True)
        first, last = map(int, res.stdout.split())
        assert last - first == 19
        outs.append(first)
    assert outs == [1, 0xFFFFFFFF % 1000000 + 1, 0x1234ABCD % 1000000 + 1]
    assert 'echo "seeds $first..$last (from ${commit:0:12})"' in script


def test_a_rule_node_id_after_double_dash_narrows_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, BAD, "narrow")
    code, out, _ = _run(
        capsys, "check", mod, "--seed", "2", "--", f"rruletest::{mod}::half[scalar]"
    )
    assert code == 1
    assert "1 rule in 1 module: 1 failed (seed=2)" in out
    assert f"rerun with: rruletest check {mod} --seed 2 -- 'rruletest::{mod}::half[scalar]'" in out


SIGNATURES = """
import numpy as np
from rruletest import NoTangent, ZeroTangent, register_rrule, unthunk


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@register_rrule(softmax, signature="(n)->(n)")
def softmax_rrule(x):
    y = softmax(x)

    def pullback(g):
        g = unthunk(g)
        if isinstance(g, ZeroTangent):
            return NoTangent(), np.zeros_like(x)
        return NoTangent(), y * (g - (y * g).sum(-1, keepdims=True))

    return y, pullback


def normalise(x):  # couples every element: "(n)->(n)" is a wrong declaration
    return x / np.sqrt((x**2).sum() + 1.0)


@register_rrule(normalise, signature="(n)->(n)")
def normalise_rrule(x):
    s = np.sqrt((x**2).sum() + 1.0)
    y = x / s

    def pullback(g):
        g = unthunk(g)
        if isinstance(g, ZeroTangent):
            return NoTangent(), np.zeros_like(x)
        return NoTangent(), (g - y * (y * g).sum()) / s

    return y, pullback
"""


def test_a_core_signature_draws_batches_and_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = _module(tmp_path, SIGNATURES, "signatures")
    code, out, _ = _run(capsys, "check", mod, "--seed", "2", "--examples", "6")
    assert code == 1
    # Drawn as the declaration describes them: a batch dimension, then the core one.
    assert re.search(
        r"^  softmax\s+rrule\s+\d+\s+\S+\s+arrays 2-d \(max \d+ el\.\)\s+passed", out, re.M
    )
    assert re.search(r"^  normalise\s+rrule\s+\d+\s+\S+\s+arrays 2-d .+FAILED", out, re.M)
    assert "failed checks: signature\n" in out
    assert "the rule declares the core signature (n)->(n), but f does not act on each batch" in out


def test_a_package_and_its_submodule_check_each_rule_once(tmp_path: Path) -> None:
    # both given: the package's row group also held the submodule's rules, which ran twice
    pkg = tmp_path / "twopkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(GOOD.replace("def cube", "import twopkg.sub\n\ndef cube"))
    (pkg / "sub.py").write_text(BAD.replace("triple", "thrice"))
    run = _cli(tmp_path, "check", "twopkg", "twopkg.sub", "--seed", "1", "--examples", "2")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "\ntwopkg (2 rules)\n" in run.stdout
    assert "\ntwopkg.sub (2 rules)\n" in run.stdout
    assert "rruletest check: 4 rules in 2 modules: 3 passed, 1 failed (seed=1)" in run.stdout
    assert run.stdout.count("rule half[scalar]") == 1


def test_a_module_given_as_a_path_is_checked_and_its_reproduce_runs_from_there(
    tmp_path: Path,
) -> None:
    # A src layout, not installed: the module is named by its path, as pytest takes test files;
    # each failure's reproduce command names that path too, so it reruns from the same place.
    pkg = tmp_path / "src" / "pathpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text(BAD.replace("triple", "ptriple").replace("half", "phalf"))
    work = tmp_path / "work"
    work.mkdir()
    run = _cli(work, "check", "../src/pathpkg/rules.py", "--seed", "2", "--examples", "3")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "rruletest check: pathpkg.rules (from the command line)" in run.stdout
    assert re.search(r"^  phalf +scalar .* FAILED ", run.stdout, re.M)
    assert re.search(r"^  ptriple +scalar .* passed ", run.stdout, re.M)
    assert "rerun with: rruletest check ../src/pathpkg/rules.py --seed 2 --examples 3" in run.stdout
    line = next(x for x in run.stdout.splitlines() if x.startswith("reproduce: pytest"))
    assert line.endswith(
        "--rruletest-check=../src/pathpkg/rules.py 'rruletest::pathpkg.rules::phalf[scalar]'"
    )
    argv = shlex.split(line.removeprefix("reproduce: "))
    again = subprocess.run(
        [sys.executable, "-m", *argv, "-p", "no:cacheprovider"],
        cwd=work,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 1, again.stdout + again.stderr
    assert "1 failed" in again.stdout
    assert "rule phalf [scalar] registered by pathpkg.rules" in again.stdout


def test_a_path_that_is_no_module_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "check", "nowhere/rules.py")
    assert code == 2
    assert "no Python file or package directory 'nowhere/rules.py'" in err


def test_an_import_error_names_the_line_of_the_module_that_raised_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    helper = _module(tmp_path, "def f():\n    return 1 / 0\n\nX = f()\n", "helper")
    mod = _module(tmp_path, f"import {helper}\n", "importer")
    code, _, err = _run(capsys, "check", mod)
    assert code == 2
    assert f"importing module {mod!r} failed: ZeroDivisionError: division by zero\n" in err
    assert f'{helper}.py", line 2, in f\n    return 1 / 0' in err
    assert "<frozen importlib" not in err
    assert "import_module" not in err


def test_rows_of_skipped_xfailed_and_xpassed_rules_say_so(tmp_path: Path) -> None:
    # Markers a project's conftest puts on rule items: a skip marker crashed pytest (its
    # location needs a line number, which the rule items did not give), an xfail read "skipped".
    mod = _module(tmp_path, BAD, "marked")
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if 'half' in item.nodeid:\n"
        "            item.add_marker(pytest.mark.xfail(reason='known: half is wrong'))\n"
        "        elif 'triple' in item.nodeid:\n"
        "            item.add_marker(pytest.mark.skip(reason='not today'))\n"
    )
    run = _cli(tmp_path, "check", mod, "--seed", "1", "--examples", "3", "--", "-rs")
    assert "INTERNALERROR" not in run.stdout + run.stderr
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^  half +scalar .* xfailed ", run.stdout, re.M)
    assert "xfailed: known: half is wrong" in run.stdout
    assert re.search(r"^  triple +scalar .* skipped ", run.stdout, re.M)
    assert f"SKIPPED [1] {mod}.py:" in run.stdout
    assert "2 rules in 1 module: 1 xfailed, 1 skipped" in run.stdout

    # Every rule xfailed: they were checked, failing as expected (not "no rule was checked").
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.xfail(reason='all'))\n"
    )
    run = _cli(tmp_path, "check", mod, "--seed", "1", "--examples", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 xfailed, 1 xpassed" in run.stdout
