"""Rule items' tracebacks (``rruletest._plugin.items``): they end in the rule, not in rruletest."""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rruletest._plugin import items
from rruletest.rules import default_ruleset

pytest_plugins = ["pytester"]

_counter = itertools.count()

#: A traceback entry in pytest's short style: ``path:line: in function``.
_FRAME = re.compile(r"^(\S+):(\d+): in (\S+)$")


@pytest.fixture(scope="module", autouse=True)
def _heavy_modules_imported_once() -> None:
    """pytester's in-process runs drop the modules they imported; compiled extensions (scipy,
    under findiff) cannot be imported twice, and hypothesis is better imported once: do it here.
    """
    import hypothesis  # noqa: F401

    from rruletest.finite_differences import central_fdm

    central_fdm(5, 1)(math.sin, 1.0)


@pytest.fixture(autouse=True)
def _isolated_ruleset() -> Iterator[None]:
    """Drop what the inner pytest runs registered (modules named ``rules_tb_*``)."""
    yield
    for table in (default_ruleset._rrules, default_ruleset._frules, default_ruleset._scalars):
        for key in [k for k, info in table.items() if info.module.startswith("rules_tb_")]:
            del table[key]


def test_a_failing_rule_items_traceback_shows_only_the_rules_frames(
    pytester: pytest.Pytester,
) -> None:
    name = f"rules_tb_{next(_counter)}"
    pytester.makepyfile(
        **{
            name: """
            from rruletest import non_differentiable

            def sign_of(x):
                raise ValueError("sign_of cannot take " + repr(x))

            non_differentiable(sign_of)
            """
        }
    )
    pytester.syspathinsert()
    result = pytester.runpytest(f"--rruletest-check={name}", "--rruletest-examples=2")
    result.assert_outcomes(failed=1)
    frames = [m.groups() for m in map(_FRAME.match, result.outlines) if m]
    assert frames == [(f"{name}.py", "4", "sign_of")]
    result.stdout.fnmatch_lines(["E   ValueError: sign_of cannot take *"])


def test_hidden_and_shown_packages_exist() -> None:
    """A renamed package would silently show its frames again: each name must be importable."""
    for package in (*items._HIDDEN_PACKAGES, *items._SHOWN_PACKAGES):
        assert importlib.util.find_spec(package) is not None, package


def test_rruletest_frames_are_hidden_but_the_rulesets(tmp_path: Path) -> None:
    import rruletest.rulesets.numpy._unary as unary
    from rruletest._plugin import checks
    from rruletest.testers import _rand_tangent

    hidden, shown = items._hidden_roots()
    for module in (checks, _rand_tangent, items, *(sys.modules[m] for m in ("_pytest", "pluggy"))):
        path = str(module.__file__)
        assert items._under(path, hidden), path
        assert not items._under(path, shown), path
    assert items._under(str(unary.__file__), shown)
    user_file = tmp_path / "rules.py"
    assert not items._under(str(user_file), hidden)
