"""A failure of an adapted framework rule reproduces as printed: the ``reproduce:`` line makes the
adapter again (``rruletest.interop._base.recreatable``) and passes its own rule, so a fresh
process without the test's registrations fails the same way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rruletest.errors import RuleTestFailure

ROOT = Path(__file__).resolve().parents[2]


def _line(call: Any) -> str:
    with pytest.raises(RuleTestFailure) as info:
        call()
    lines = [ln for ln in str(info.value).splitlines() if ln.startswith("reproduce: ")]
    assert len(lines) == 1
    return lines[0][len("reproduce: ") :]


def _run(line: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(cwd)])}
    run = subprocess.run(
        [sys.executable, "-c", line], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )
    assert run.returncode == 1, run.stderr[-2000:]
    return run.stderr


def test_an_autograd_primitive_failure_reruns_as_printed(tmp_path: Path, testers: Any) -> None:
    anp = pytest.importorskip("autograd.numpy")
    from rruletest.interop.autograd import from_primitive

    adapter = from_primitive(anp.repeat)
    x = np.array([[0.25, 0.5, 0.75], [1.0, 1.25, 1.5]])
    line = _line(lambda: testers.test_rrule(adapter, x, 2, -1, rrule_f=adapter.rrule, rng=1))
    assert "needs" not in line
    assert "(_made0 := rruletest.interop.autograd.from_primitive(autograd.numpy.repeat))" in line
    assert "rrule_f=_made0.rrule" in line
    err = _run(line, tmp_path)
    assert "[numeric] args[0]: the cotangent differs from the numerical vjp" in err


def test_a_jax_rule_from_a_module_reruns_without_its_registration(
    tmp_path: Path, testers: Any
) -> None:
    pytest.importorskip("jax")
    (tmp_path / "wrong_jax.py").write_text(
        "import jax\n"
        "import jax.numpy as jnp\n\n"
        "@jax.custom_vjp\n"
        "def cube(x):\n"
        "    return x**3\n\n"
        "cube.defvjp(lambda x: (x**3, x), lambda x, g: (2 * x**2 * g,))\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import wrong_jax  # type: ignore[import-not-found]

        from rruletest.interop import register
        from rruletest.interop.jax import from_custom_vjp
        from rruletest.rules import default_ruleset

        adapter = from_custom_vjp(wrong_jax.cube, nondiff_argnums=(), domain="(0, inf)")
        # The rule found in the default RuleSet, as the gate finds it: the line passes the
        # adapter's own, since the fresh process has no registration.
        saved = dict(default_ruleset._rrules), dict(default_ruleset._frules)
        register(adapter)
        try:
            line = _line(lambda: testers.test_rrule(adapter, np.array([0.5, 2.0]), rng=3))
        finally:
            default_ruleset._rrules.clear()
            default_ruleset._rrules.update(saved[0])
            default_ruleset._frules.clear()
            default_ruleset._frules.update(saved[1])
        # Without a registration the tester finds no rule, and the line does not invent one.
        unregistered = _line(lambda: testers.test_rrule(adapter, np.array([0.5, 2.0]), rng=3))
        assert "rrule_f" not in unregistered
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("wrong_jax", None)
    made = "from_custom_vjp(wrong_jax.cube, nondiff_argnums=(), domain='(0, inf)')"
    assert f"(_made0 := rruletest.interop.jax.{made})" in line
    assert "rrule_f=_made0.rrule" in line
    assert "needs" not in line
    err = _run(line, tmp_path)
    assert "the cotangent differs from the numerical vjp" in err


def test_nondiff_argnums_added_by_the_tester_are_in_the_line(testers: Any) -> None:
    pytest.importorskip("autograd")
    import autograd.numpy as anp

    from rruletest.interop.autograd import from_primitive

    adapter = from_primitive(anp.sin).with_nondiff([0])
    assert adapter.made_by is not None
    assert adapter.made_by[1:] == ("from_primitive", (anp.sin,), {"nondiff_argnums": (0,)})


def test_a_primitive_held_under_another_name_reruns_as_printed(
    tmp_path: Path, testers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A primitive's ``__name__`` is its raw function's: ``cube = primitive(_cube)`` is found as
    ``wrong_primitive.cube`` (and ``autograd.scipy.special.digamma``, named ``psi``, as
    ``digamma``), not printed as a bare ``_cube`` the line would need defined."""
    pytest.importorskip("autograd")
    (tmp_path / "wrong_primitive.py").write_text(
        "from autograd.extend import defvjp, primitive\n\n"
        "def _cube(x):\n"
        "    return x ** 3\n\n"
        "cube = primitive(_cube)\n"
        "defvjp(cube, lambda ans, x: lambda g: g * 2 * x ** 2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import wrong_primitive  # type: ignore[import-not-found]

    from rruletest.interop.autograd import from_primitive

    adapter = from_primitive(wrong_primitive.cube)
    x = np.array([0.5, 1.5])
    line = _line(lambda: testers.test_rrule(adapter, x, rrule_f=adapter.rrule, rng=1))
    assert "needs" not in line
    assert "from_primitive(wrong_primitive.cube)" in line
    assert "[numeric] args[0]" in _run(line, tmp_path)

    import autograd.scipy.special as asp

    digamma = from_primitive(asp.digamma)
    x32 = np.array([0.5, 1.5], dtype=np.float32)  # autograd's cotangent is float64
    line = _line(lambda: testers.test_rrule(digamma, x32, rrule_f=digamma.rrule, rng=1))
    assert "from_primitive(autograd.scipy.special.digamma)" in line
    assert "needs" not in line
