"""The pytest plugin, exercised through pytester: seeds, fixtures, rule items, reports, xdist."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rruletest._plugin.options import derive_seed
from rruletest.rules import default_ruleset

pytest_plugins = ["pytester"]

# A rule module with 4 correct rules and 2 wrong ones (keys are functions of its own, so the
# built-in ruleset's rules are never replaced).
RULES = """
import numpy as np
from rruletest import NoTangent, non_differentiable, register_frule, register_rrule, scalar_rule

def good_sin(x):
    return np.sin(x)

def bad_cos(x):
    return np.cos(x)

def good_log(x):
    return np.log(x)

def cube(x):
    return x ** 3

def bad_square(x):
    return x * x

def sign(x):
    return np.sign(x)

scalar_rule(good_sin, lambda x, y: (np.cos(x),))
scalar_rule(bad_cos, lambda x, y: (np.sin(x),))  # wrong sign
scalar_rule(good_log, lambda x, y: (1 / x,), domain="(0, inf)")

@register_rrule(cube)
def _cube_rrule(x):
    return cube(x), lambda ybar: (NoTangent(), ybar * 3 * x ** 2)

@register_frule(bad_square)
def _bad_square_frule(tangents, x):
    return x * x, 3 * x * tangents[1]  # should be 2 * x

non_differentiable(sign)
"""

PASSING = """
import numpy as np
from rruletest import scalar_rule

def twice(x):
    return 2.0 * x

scalar_rule(twice, lambda x, y: (2.0 * np.ones_like(x),))
"""

_counter = itertools.count()


@pytest.fixture(scope="module", autouse=True)
def _heavy_modules_imported_once() -> None:
    """pytester's in-process runs drop the modules they imported, and compiled extensions
    (scipy, pulled in by findiff) cannot be imported twice: import them out here first.
    """
    from rruletest.finite_differences import central_fdm

    central_fdm(5, 1)(np.sin, 1.0)


@pytest.fixture(autouse=True)
def _isolated_ruleset() -> Iterator[None]:
    """Rules registered by the inner pytest runs must not leak into the rest of the suite."""
    yield
    # Drop what this file's rule modules registered; rules other imports registered stay
    # (their modules stay imported, so they would not register again).
    for table in (default_ruleset._rrules, default_ruleset._frules, default_ruleset._scalars):
        for key in [k for k, info in table.items() if info.module.startswith("rules_")]:
            del table[key]


@pytest.fixture
def rules_module(pytester: pytest.Pytester) -> str:
    """The name of a fresh importable module holding RULES."""
    name = f"rules_mixed_{next(_counter)}"
    pytester.makepyfile(**{name: RULES})
    pytester.syspathinsert()
    return name


@pytest.fixture
def passing_module(pytester: pytest.Pytester) -> str:
    name = f"rules_passing_{next(_counter)}"
    pytester.makepyfile(**{name: PASSING})
    pytester.syspathinsert()
    return name


def _seed_in(text: str) -> int:
    m = re.search(r"rruletest: seed=(\d+)", text)
    assert m is not None, text
    return int(m.group(1))


# -- seeds and header -------------------------------------------------------------------------
def test_header_shows_given_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--rruletest-seed=1234")
    result.stdout.fnmatch_lines(["rruletest: seed=1234"])
    result.assert_outcomes(passed=1)


def test_header_shows_random_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest()
    assert _seed_in(result.stdout.str()) >= 0


def test_seed_last_reuses_the_previous_seed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    first = _seed_in(pytester.runpytest().stdout.str())
    result = pytester.runpytest("--rruletest-seed=last")
    result.stdout.fnmatch_lines([f"rruletest: seed={first} (last)"])


def test_seed_last_without_a_previous_run_picks_a_new_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("--rruletest-seed=last")
    result.stdout.fnmatch_lines(["rruletest: seed=* (no previous seed in the cache; a new one)"])


def test_seed_last_needs_the_cache(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rruletest-seed=last")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rruletest-seed=last needs pytest's cache*"])


@pytest.mark.parametrize("bad", ["-3", "abc"])
def test_bad_seed_is_a_usage_error(pytester: pytest.Pytester, bad: str) -> None:
    result = pytester.runpytest(f"--rruletest-seed={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*a seed is a non-negative integer or 'last', got seed='{bad}'*"])


# -- fixtures ---------------------------------------------------------------------------------
RNG_TESTS = """
def test_a(rruletest_rng):
    print("A", rruletest_rng.integers(10**9))

def test_b(rruletest_rng):
    print("B", rruletest_rng.integers(10**9))
"""


def _draws(result: pytest.RunResult) -> dict[str, str]:
    return dict(re.findall(r"\b([AB]) (\d+)\b", result.stdout.str()))


def test_rng_is_reproducible_per_seed_and_node(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(RNG_TESTS)
    one = _draws(pytester.runpytest("-s", "--rruletest-seed=7"))
    two = _draws(pytester.runpytest("-s", "--rruletest-seed=7"))
    other = _draws(pytester.runpytest("-s", "--rruletest-seed=8"))
    alone = _draws(pytester.runpytest("-s", "--rruletest-seed=7", "-k", "test_b"))
    assert one == two
    assert one["A"] != one["B"]
    assert other != one
    assert alone == {"B": one["B"]}


def test_config_fixture_has_overrides_from_options_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        rruletest_rtol = float32=1e-3 float64=1e-8
        rruletest_examples = 7
        """
    )
    pytester.makepyfile(
        """
        import numpy as np

        def test_config(rruletest_config):
            assert rruletest_config.seed == 5
            assert rruletest_config.examples == 7
            assert rruletest_config.rtol == {"float32": 1e-3, "float64": 1e-6}
            assert rruletest_config.atol == {"*": 0.5}
            assert rruletest_config.tolerance_overrides(np.float32(1.0)) == {
                "rtol": 1e-3, "atol": 0.5
            }
            assert rruletest_config.tolerance_overrides(1.0, np.ones(2, np.float32)) == {
                "rtol": 1e-3, "atol": 0.5
            }
            assert rruletest_config.fdm_spec == ("forward", 3)

        def test_defaults_are_overridden_inside_tests():
            from rruletest.tolerances import default_tolerances

            assert tuple(default_tolerances(np.float32)) == (1e-3, 0.5)
            assert tuple(default_tolerances(np.float64)) == (1e-6, 0.5)
            assert tuple(default_tolerances(np.float16)) == (1e-2, 0.5)
        """
    )
    result = pytester.runpytest(
        "--rruletest-seed=5",
        "--rruletest-rtol=float64=1e-6",
        "--rruletest-atol=0.5",
        "--rruletest-fdm=forward:3",
    )
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--rruletest-rtol=float8=1", "unknown dtype 'float8'*"),
        ("--rruletest-atol=-1", "*a tolerance is [[]DTYPE=[]]VALUE: atol must be a number >= 0*"),
        ("--rruletest-examples=0", "*a positive integer, got examples='0'*"),
        ("--rruletest-fdm=sideways:3", "*a finite-difference method is KIND:POINTS*"),
    ],
)
def test_bad_option_values_are_usage_errors(
    pytester: pytest.Pytester, option: str, message: str
) -> None:
    pytester.makepyfile("def test_ok(): pass")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_failure_of_a_test_using_rruletest_shows_seed_and_reproduce(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        def test_fails(rruletest_rng):
            assert rruletest_rng.random() > 2
        """
    )
    result = pytester.runpytest("--rruletest-seed=99")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- rruletest -*",
            "seed=99",
            "reproduce: pytest --rruletest-seed=99 test_failure_of_a_test_using_rruletest*.py"
            "::test_fails",
        ]
    )


def test_config_fixture_runs_testers_with_the_tests_seed(pytester: pytest.Pytester) -> None:
    path = pytester.makepyfile(
        """
        import numpy as np
        from rruletest import RuleSet

        rules = RuleSet()
        rules.scalar_rule(np.sin, lambda x, y: np.sin(x))  # wrong: should be cos

        def test_wrong(rruletest_config):
            rruletest_config.test_scalar(np.sin, 0.5, rrule_f=rules.rrule, frule_f=rules.frule)
        """
    )
    result = pytester.runpytest("--rruletest-seed=3")
    result.assert_outcomes(failed=1)
    seed = derive_seed(3, f"{path.name}::test_wrong")
    result.stdout.fnmatch_lines(
        [
            f"*reproduce: *test_scalar(np.sin, 0.5, *rng={seed})*",
            "*- rruletest -*",
            "seed=3",
            f"reproduce: pytest --rruletest-seed=3 {path.name}::test_wrong",
        ]
    )


def test_imported_testers_are_not_collected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from rruletest import TesterReport, test_approx, test_frule, test_rrule, test_scalar
        from rruletest.testers import TesterReport as Report

        def test_mine():
            pass
        """
    )
    result = pytester.runpytest("-W", "error")
    result.assert_outcomes(passed=1)


# -- rule items --------------------------------------------------------------------------------
def test_rule_items_are_collected_with_readable_ids(
    pytester: pytest.Pytester, rules_module: str
) -> None:
    result = pytester.runpytest("--co", "-q", f"--rruletest-check={rules_module}")
    prefix = f"rruletest::{rules_module}::"
    result.stdout.fnmatch_lines(
        [
            f"{prefix}bad_cos[[]scalar[]]",
            f"{prefix}bad_square[[]frule[]]",
            f"{prefix}cube[[]rrule[]]",
            f"{prefix}good_log[[]scalar[]]",
            f"{prefix}good_sin[[]scalar[]]",
            f"{prefix}sign[[]non_differentiable[]]",
        ]
    )
    result.stdout.fnmatch_lines(["6 tests collected*"])


def test_the_rules_of_a_modules_own_ruleset_are_items_named_after_it(
    pytester: pytest.Pytester,
) -> None:
    name = f"rules_own_{next(_counter)}"
    source = (
        "import numpy as np\nfrom rruletest import NoTangent, RuleSet\n"
        "mine = RuleSet('mine')\n"
        "mine.scalar_rule(np.tanh, lambda x, y: 1 - y**2)\n"
        "mine.scalar_rule(np.arctan, lambda x, y: 1 / (1 + x))  # wrong: 1 + x**2\n"
    )
    pytester.makepyfile(**{name: source})
    pytester.syspathinsert()
    check = f"--rruletest-check={name}"
    listed = pytester.runpytest("--co", "-q", check)
    listed.stdout.fnmatch_lines(
        [f"rruletest::{name}::mine.arctan[[]scalar[]]", f"rruletest::{name}::mine.tanh[[]scalar[]]"]
    )
    result = pytester.runpytest(check, "--rruletest-seed=4")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [f"*rrule_f={name}.mine.rrule*", f"rule mine.arctan [[]scalar[]] registered by {name} in*"]
    )
    # -k selects by the RuleSet's name too.
    pytester.runpytest(check, "-k", "mine and tanh").assert_outcomes(passed=1)


def test_rule_items_pass_and_fail(pytester: pytest.Pytester, rules_module: str) -> None:
    result = pytester.runpytest(f"--rruletest-check={rules_module}", "--rruletest-seed=3")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(
        [
            f"FAILED rruletest::{rules_module}::bad_cos[[]scalar[]]*",
            f"FAILED rruletest::{rules_module}::bad_square[[]frule[]]*",
        ],
        consecutive=False,
    )


def test_failure_report_names_rule_inputs_and_reproduce_command(
    pytester: pytest.Pytester, rules_module: str
) -> None:
    nodeid = f"rruletest::{rules_module}::bad_cos[scalar]"
    result = pytester.runpytest("--rruletest-seed=11", nodeid)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"rule bad_cos [scalar] registered by {rules_module}, domain (-inf, inf)" in out
    assert re.search(r"failed after \d+ example\(s\)", out)
    assert re.search(r"falsifying inputs: test_\w+\(", out)
    assert "failed checks:" in out
    assert "rruletest: seed=11" in out
    assert f"reproduce: pytest --rruletest-seed=11 '{nodeid}'" in out

    # The reproduce command runs that rule alone and fails the same way.
    again = pytester.runpytest("--rruletest-seed=11", nodeid)
    again.assert_outcomes(failed=1)
    falsifying = re.findall(r"falsifying inputs: .*", out)
    assert falsifying == re.findall(r"falsifying inputs: .*", again.stdout.str())


def test_k_and_m_select_rule_items(pytester: pytest.Pytester, rules_module: str) -> None:
    check = f"--rruletest-check={rules_module}"
    result = pytester.runpytest(check, "-k", "good_sin or cube")
    result.assert_outcomes(passed=2, deselected=4)
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest(check, "-m", "not rruletest")
    result.assert_outcomes(passed=1, deselected=6)
    result = pytester.runpytest(check, "-k", "scalar and not bad")
    result.assert_outcomes(passed=2, deselected=5)


def test_x_stops_at_the_first_failing_rule(pytester: pytest.Pytester, rules_module: str) -> None:
    result = pytester.runpytest(f"--rruletest-check={rules_module}", "-x")
    result.assert_outcomes(failed=1)


def test_examples_option_sets_how_many_inputs_each_rule_gets(
    pytester: pytest.Pytester, passing_module: str
) -> None:
    xml = pytester.path / "report.xml"
    result = pytester.runpytest(
        f"--rruletest-check={passing_module}", "--rruletest-examples=5", f"--junitxml={xml}"
    )
    result.assert_outcomes(passed=1)
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).iter("property")}
    assert props["rruletest_examples"] == "5"
    assert props["rruletest_kind"] == "scalar"


def test_junitxml_lists_rule_items_and_failures(
    pytester: pytest.Pytester, rules_module: str
) -> None:
    xml = pytester.path / "report.xml"
    pytester.runpytest(
        f"--rruletest-check={rules_module}", "--rruletest-seed=4", f"--junitxml={xml}"
    )
    cases = {c.get("name"): c for c in ET.parse(xml).iter("testcase")}
    assert set(cases) == {
        "bad_cos[scalar]",
        "bad_square[frule]",
        "cube[rrule]",
        "good_log[scalar]",
        "good_sin[scalar]",
        "sign[non_differentiable]",
    }
    assert {c.get("classname") for c in cases.values()} == {f"rruletest.{rules_module}"}
    failure = cases["bad_cos[scalar]"].find("failure")
    assert failure is not None
    assert "failed" in (failure.get("message") or "")
    assert "reproduce: pytest --rruletest-seed=4" in (failure.text or "")
    assert cases["good_sin[scalar]"].find("failure") is None


def test_ini_modules_are_collected_only_without_positional_arguments(
    pytester: pytest.Pytester, passing_module: str
) -> None:
    pytester.makeini(f"[pytest]\nrruletest_check = {passing_module}\n")
    pytester.makepyfile(test_plain="def test_plain(): pass")
    pytester.runpytest().assert_outcomes(passed=2)
    pytester.runpytest("test_plain.py").assert_outcomes(passed=1)


def test_registered_examples_are_used(pytester: pytest.Pytester) -> None:
    name = f"rules_examples_{next(_counter)}"
    pytester.makepyfile(
        **{
            name: """
            import numpy as np
            from rruletest import NoTangent, register_rrule, unbroadcast

            def mul(a, b):
                return a * b

            @register_rrule(mul, examples=[(2.0, 3.0), (np.ones(3), 0.5)])
            def _mul_rrule(a, b):
                def pullback(ybar):
                    return NoTangent(), unbroadcast(a, ybar * b), unbroadcast(b, ybar * a)

                return a * b, pullback
            """
        }
    )
    pytester.syspathinsert()
    xml = pytester.path / "report.xml"
    result = pytester.runpytest(
        f"--rruletest-check={name}", "--rruletest-examples=3", f"--junitxml={xml}"
    )
    result.assert_outcomes(passed=1)
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).iter("property")}
    assert props["rruletest_examples"] == "5"  # the 2 registered, then 3 generated like them


def test_broadcast_rules_and_non_numeric_example_arguments(pytester: pytest.Pytester) -> None:
    name = f"rules_broadcast_{next(_counter)}"
    pytester.makepyfile(
        **{
            name: """
            import numpy as np
            from rruletest import NoTangent, broadcasted, register_frule, register_rrule
            from rruletest import unbroadcast

            def softplus(x):
                return np.log1p(np.exp(x))

            @register_rrule(broadcasted, softplus)
            def _softplus_rrule(f, x):
                def pullback(ybar):
                    return NoTangent(), NoTangent(), unbroadcast(x, ybar / (1 + np.exp(-x)))

                return broadcasted(softplus, x), pullback

            def scale(x, k):
                return x * k

            @register_frule(scale, examples=[(np.ones(3), 2)])  # k is an int: kept as it is
            def _scale_frule(tangents, x, k):
                return x * k, tangents[1] * k
            """
        }
    )
    pytester.syspathinsert()
    result = pytester.runpytest(f"--rruletest-check={name}", "--rruletest-examples=5", "-v")
    result.stdout.fnmatch_lines(
        [
            f"rruletest::{name}::broadcasted(softplus)[[]rrule[]] PASSED*",
            f"rruletest::{name}::scale[[]frule[]] PASSED*",
        ]
    )
    result.assert_outcomes(passed=2)


def test_rule_whose_inputs_cannot_be_generated_is_skipped(pytester: pytest.Pytester) -> None:
    name = f"rules_varargs_{next(_counter)}"
    pytester.makepyfile(
        **{
            name: """
            from rruletest import NoTangent, register_rrule

            def total(*xs):
                return sum(xs)

            @register_rrule(total)
            def _total_rrule(*xs):
                return sum(xs), lambda ybar: (NoTangent(), *(ybar for _ in xs))
            """
        }
    )
    pytester.syspathinsert()
    result = pytester.runpytest(f"--rruletest-check={name}", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*cannot tell how many arguments total takes*"])


def test_rule_module_in_the_rootdir_is_importable(pytester: pytest.Pytester) -> None:
    name = f"rules_rootdir_{next(_counter)}"
    pytester.makepyfile(**{name: PASSING})
    pytester.makeini("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = Path(sys.executable).with_name("pytest")  # the console script adds no path
    if not script.exists():
        pytest.skip(f"no pytest console script next to {sys.executable}")
    out = subprocess.run(
        [
            str(script),
            "-p",
            "no:cacheprovider",
            f"--rruletest-check={name}",
            "--rruletest-examples=2",
        ],
        cwd=pytester.path,
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    assert "1 passed" in out, out


def test_unknown_module_is_a_collection_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--rruletest-check=no_such_rules_module")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*rruletest: no module named 'no_such_rules_module'*"])


def test_a_module_that_fails_to_import_names_its_line_not_importlib(
    pytester: pytest.Pytester,
) -> None:
    name = f"rules_broken_{next(_counter)}"
    pytester.makepyfile(**{name: "import numpy as np\n\nraise RuntimeError('broken on purpose')\n"})
    pytester.syspathinsert()
    result = pytester.runpytest(f"--rruletest-check={name}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            f"rruletest: importing module '{name}' failed: RuntimeError: broken on purpose",
            f'  File "*{name}.py", line 3, in <module>',
            "    raise RuntimeError('broken on purpose')",
        ]
    )
    assert "<frozen importlib" not in result.stdout.str()
    assert "import_module" not in result.stdout.str()


def test_a_module_given_by_path_is_collected_and_its_reproduce_names_the_path(
    pytester: pytest.Pytester,
) -> None:
    name = f"rules_pathpkg_{next(_counter)}"
    pkg = pytester.path / "src" / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text(RULES)
    path = f"src/{name}/rules.py"
    result = pytester.runpytest(f"--rruletest-check={path}", "--rruletest-seed=4", "-k", "bad_cos")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"rruletest: seed=4, checking rules of {name}.rules *",
            f"reproduce: pytest --rruletest-seed=4 --rruletest-check={path} "
            f"'rruletest::{name}.rules::bad_cos[scalar]'",
        ]
    )
    bad = pytester.runpytest("--rruletest-check=src/nothing_here.py")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*no Python file or package directory 'src/nothing_here.py'*"])


def test_a_module_without_rules_is_said(pytester: pytest.Pytester) -> None:
    # `rruletest check` exits 3 there; a plain pytest run must not pass it in silence either
    # (a line of the summary: a warning would be an error under -W error).
    pytester.makepyfile(rules_none="x = 1\n", test_other="def test_a():\n    pass\n")
    result = pytester.runpytest("--rruletest-check=rules_none", "test_other.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "rruletest: rules_none (given to --rruletest-check or the "
            "rruletest_check ini key) registers no rules, so none was checked*"
        ]
    )


def test_unknown_rule_node_lists_what_the_module_registers(
    pytester: pytest.Pytester, passing_module: str
) -> None:
    result = pytester.runpytest(f"rruletest::{passing_module}::nope[rrule]")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            f"*no rule matches rruletest::{passing_module}::nope[[]rrule[]]*"
            "registers: twice[[]scalar[]]"
        ]
    )


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="needs pytest-xdist")
def test_xdist_collects_the_same_items_and_shares_the_seed(
    pytester: pytest.Pytester, rules_module: str
) -> None:
    result = pytester.runpytest_subprocess(
        f"--rruletest-check={rules_module}", "-n", "2", "--rruletest-examples=8"
    )
    result.assert_outcomes(passed=4, failed=2)
    out = result.stdout.str()
    seeds = {int(s) for s in re.findall(r"seed=(\d+)", out)}
    assert len(seeds) == 1, seeds
    assert "Different tests were collected" not in out


def test_plugin_module_imports_nothing_heavy() -> None:
    """Beyond ``import rruletest``, loading the plugin imports only its options module."""
    code = (
        "import sys, pytest, rruletest; before = set(sys.modules); "
        "import rruletest.pytest_plugin; "
        "print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    added = {m for m in ast.literal_eval(out.strip()) if not m.startswith("_")}
    light = {
        "rruletest._seed",
        "rruletest._plugin",
        "rruletest._plugin.options",
        "rruletest._plugin.items",
        "rruletest.defaults",
        "rruletest.pytest_plugin",
    }
    assert added <= light | {"contextvars", "shlex"}


def test_current_test_seed_is_set_during_a_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from rruletest._plugin.options import current_test_seed, derive_seed

        def test_seed(request):
            assert current_test_seed() == derive_seed(21, request.node.nodeid)
        """
    )
    pytester.runpytest("--rruletest-seed=21").assert_outcomes(passed=1)


_WRONG_COS_RULE = """
    import numpy as np
    from rruletest import NoTangent, RuleSet, test_rrule

    rules = RuleSet()

    @rules.register_rrule(np.cos)
    def _cos(x):
        return np.cos(x), lambda ybar: (NoTangent(), ybar * np.sin(x))  # sign is wrong

    def test_wrong():
        test_rrule(np.cos, np.linspace(0.1, 1.0, 4), rrule_f=rules.rrule)
"""


def _reproduced_rng(text: str) -> int:
    found = re.findall(r"reproduce: .*test_rrule\(np\.cos, .*rng=(\d+)\)", text)
    assert found, text
    return int(found[0])


def test_tester_without_rng_uses_the_test_seed(pytester: pytest.Pytester) -> None:
    from rruletest._plugin.options import derive_seed

    pytester.makepyfile(test_wrong=_WRONG_COS_RULE)
    first = pytester.runpytest("--rruletest-seed=5")
    first.assert_outcomes(failed=1)
    seed = _reproduced_rng(first.stdout.str())
    assert seed == derive_seed(5, "test_wrong.py::test_wrong")
    # the same session seed and node id draw the same tangents: the same reproduce line
    again = pytester.runpytest("--rruletest-seed=5", "test_wrong.py::test_wrong")
    again.assert_outcomes(failed=1)
    assert _reproduced_rng(again.stdout.str()) == seed
    other = pytester.runpytest("--rruletest-seed=6")
    assert _reproduced_rng(other.stdout.str()) == derive_seed(6, "test_wrong.py::test_wrong")


def test_tester_without_rng_outside_pytest_draws_a_fresh_seed() -> None:
    from rruletest._plugin.options import TEST_SEED
    from rruletest.testers._rand_tangent import resolve_rng

    token = TEST_SEED.set(None)  # as outside a test run with the plugin
    try:
        (_, a), (_, b) = resolve_rng(None), resolve_rng(None)
    finally:
        TEST_SEED.reset(token)
    assert a is not None
    assert b is not None
    assert a != b
    token = TEST_SEED.set(123)
    try:
        gen, seed = resolve_rng(None)
    finally:
        TEST_SEED.reset(token)
    assert seed == 123
    assert gen.random() == np.random.default_rng(123).random()


# -- pytest conventions: --lf, node ids, pinned seeds, --strict ---------------------------------
def test_lf_reruns_the_rule_items_that_failed(pytester: pytest.Pytester, rules_module: str) -> None:
    first = pytester.runpytest(f"--rruletest-check={rules_module}", "--rruletest-seed=3")
    first.assert_outcomes(passed=4, failed=2)
    again = pytester.runpytest(f"--rruletest-check={rules_module}", "--rruletest-seed=3", "--lf")
    again.assert_outcomes(failed=2, deselected=4)
    again.stdout.fnmatch_lines(["run-last-failure: rerun previous 2 failures"])
    ff = pytester.runpytest(f"--rruletest-check={rules_module}", "--rruletest-seed=3", "--ff", "-v")
    ff.assert_outcomes(passed=4, failed=2)
    ran = re.findall(r"^rruletest::\S+::(\S+) (?:PASSED|FAILED)", ff.stdout.str(), re.M)
    assert ran[:2] == ["bad_cos[scalar]", "bad_square[frule]"], ran


def test_a_rule_node_id_narrows_rruletest_check_to_it(
    pytester: pytest.Pytester, rules_module: str
) -> None:
    nodeid = f"rruletest::{rules_module}::cube[rrule]"
    result = pytester.runpytest(f"--rruletest-check={rules_module}", "--rruletest-seed=3", nodeid)
    result.assert_outcomes(passed=1)
    whole = pytester.runpytest(
        f"--rruletest-check={rules_module}", "--rruletest-seed=3", f"rruletest::{rules_module}"
    )
    whole.assert_outcomes(passed=4, failed=2)


@pytest.mark.parametrize("where", ["env", "ini", "both"])
def test_the_seed_can_be_pinned_by_an_environment_variable_or_an_ini_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    pytester.makepyfile("def test_ok(): pass")
    if where in ("ini", "both"):
        pytester.makeini("[pytest]\nrruletest_seed = 77\n")
    if where in ("env", "both"):
        monkeypatch.setenv("RRULETEST_SEED", "4242")
    result = pytester.runpytest()
    expected = {
        "env": "rruletest: seed=4242 (from $RRULETEST_SEED)",
        "ini": "rruletest: seed=77 (from the ini key rruletest_seed)",
        "both": "rruletest: seed=4242 (from $RRULETEST_SEED)",
    }[where]
    result.stdout.fnmatch_lines([expected])
    # the command line wins over both
    result = pytester.runpytest("--rruletest-seed=5")
    result.stdout.fnmatch_lines(["rruletest: seed=5"])


def test_a_bad_pinned_seed_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile("def test_ok(): pass")
    monkeypatch.setenv("RRULETEST_SEED", "minus one")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*rruletest: a seed is a non-negative integer or 'last', got seed='minus one' "
            "(from $RRULETEST_SEED)*"
        ]
    )


SCALAR_ONLY = """
import math
from rruletest import NoTangent, register_rrule

def rules_msin(x):
    return math.sin(x)

@register_rrule(rules_msin)
def _rrule(x):
    return rules_msin(x), lambda ybar: (NoTangent(), ybar * math.cos(x))
"""


def test_strict_fails_rules_tried_at_scalars_only(pytester: pytest.Pytester) -> None:
    name = f"rules_sonly_{next(_counter)}"
    pytester.makepyfile(**{name: SCALAR_ONLY})
    pytester.syspathinsert()
    loose = pytester.runpytest(f"--rruletest-check={name}", "--rruletest-examples=3")
    loose.assert_outcomes(passed=1)
    strict = pytester.runpytest(
        f"--rruletest-check={name}", "--rruletest-examples=3", "--rruletest-strict"
    )
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        [
            "--strict: the rule for rules_msin was tried at scalars only",
            "*rules_msin (rrule, registered by rules_sonly_*) was tried at scalars only (3 exam*",
            f"reproduce: pytest --rruletest-seed=* --rruletest-examples=3 --rruletest-strict "
            f"'rruletest::{name}::rules_msin[[]rrule[]]'",
        ],
        consecutive=False,
    )
    pytester.makeini("[pytest]\nrruletest_strict = true\n")
    ini = pytester.runpytest(f"--rruletest-check={name}", "--rruletest-examples=3")
    ini.assert_outcomes(failed=1)
