"""Import hygiene and the public surface of the package."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rruletest

HEAVY = ("findiff", "scipy", "sympy", "hypothesis", "torch", "jax", "autograd")

# The public API contract of DESIGN.md: these names must stay importable from rruletest.
DESIGN_NAMES = [
    "AbstractZero",
    "NoTangent",
    "ZeroTangent",
    "Tangent",
    "Thunk",
    "InplaceableThunk",
    "unthunk",
    "RuleSet",
    "rrule",
    "frule",
    "register_rrule",
    "register_frule",
    "scalar_rule",
    "derivatives_given_output",
    "non_differentiable",
    "broadcasted",
    "FiniteDifferenceMethod",
    "central_fdm",
    "forward_fdm",
    "backward_fdm",
    "extrapolate_fdm",
    "test_rrule",
    "test_frule",
    "test_scalar",
    "test_approx",
    "with_tangent",
    "rand_tangent",
    "RuleTestFailure",
    "strategies",
]

# Modules whose import must not load the heavy dependencies either: the pytest plugin (loaded
# by every pytest run) and the layers that load them on first use.
LIGHT_MODULES = (
    "rruletest",
    "rruletest.pytest_plugin",
    "rruletest.cli",
    "rruletest.approx",
    "rruletest.broadcast",
    "rruletest.finite_differences",
    "rruletest.testers",
    "rruletest.strategies",
    "rruletest.interop",
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )


def _module_exists(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_import_does_not_load_heavy_dependencies(module: str) -> None:
    if not _module_exists(module):
        pytest.skip(f"{module} does not exist yet (another issue adds it)")
    proc = _run(
        f"import sys, json; import {module}; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == [], f"import {module} loaded {', '.join(loaded)}"


@pytest.mark.parametrize("module", ["rruletest", "rruletest.pytest_plugin"])
def test_package_and_plugin_import_without_numpy(module: str) -> None:
    # pytest loads the plugin at every start: it must cost next to nothing, numpy included.
    proc = _run(f"import sys; import {module}; print('numpy' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"


def test_all_is_sorted_and_unique() -> None:
    assert rruletest.__all__ == sorted(rruletest.__all__)
    assert len(set(rruletest.__all__)) == len(rruletest.__all__)


def test_all_contains_the_design_contract() -> None:
    missing = sorted(set(DESIGN_NAMES) - set(rruletest.__all__))
    assert missing == []


@pytest.mark.parametrize("name", rruletest.__all__)
def test_public_name_resolves(name: str) -> None:
    lazy = getattr(rruletest, "_LAZY", {})
    module = lazy.get(name)
    if module is not None and not _module_exists(module):
        pytest.skip(f"rruletest.{name} lives in {module}, which does not exist yet")
    value = getattr(rruletest, name)
    assert value is not None
    assert getattr(rruletest, name) is value  # cached after the first access
    assert name in dir(rruletest)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'rruletest' has no attribute 'nope'$"):
        rruletest.nope  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(rruletest, "nope")


def test_submodule_names_agree_with_the_package() -> None:
    from rruletest import rules, tangents

    assert rruletest.Tangent is tangents.Tangent
    assert rruletest.ZeroTangent is tangents.ZeroTangent
    assert rruletest.rrule is rules.rrule
    assert rruletest.RuleSet is rules.RuleSet
    from rruletest import testers

    assert rruletest.TesterReport is testers.TesterReport  # what the testers return
    for module in (tangents, rules):
        assert len(set(module.__all__)) == len(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_py_typed_marker_ships() -> None:
    assert (Path(rruletest.__file__).parent / "py.typed").is_file()


def test_version_matches_the_installed_metadata() -> None:
    assert rruletest.__version__ == importlib.metadata.version("rruletest")


def test_python_dash_m_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rruletest", "--help"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: rruletest")
    assert "check" in proc.stdout


def test_console_script_help() -> None:
    script = Path(sys.executable).parent / ("rruletest.exe" if os.name == "nt" else "rruletest")
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable} (package not installed)")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: rruletest")
