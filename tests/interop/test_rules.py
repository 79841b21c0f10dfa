"""``rruletest.interop._rules``: an adapter's one-function RuleSet, and ``register`` for gates."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rruletest import NoTangent, RuleSet
from rruletest.interop import InteropError, register
from rruletest.interop._base import Adapted
from rruletest.rules import default_ruleset


class Log(Adapted):
    """``log`` as a numpy 'framework' adapter; ``wrong`` makes its rule off by a factor."""

    framework = "numpy"
    mode = "test"

    def __init__(self, *, wrong: float = 1.0, **options: Any) -> None:
        self.wrong = wrong
        super().__init__(np.log, **options)

    def _primal(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return np.log(args[0])

    def _rrule(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        x = args[0]
        return np.log(x), lambda ybar: (NoTangent(), self.wrong * ybar / x)

    def _frule(self, xdots: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return np.log(args[0]), self.wrong * xdots[0] / args[0]


def test_the_adapters_rules_hold_its_domain(testers: Any) -> None:
    f = Log(domain="(0, inf)")
    assert f.rrule.__self__ is f.rules
    (info,) = f.rules.rules(kind="rrule")
    assert (info.function, str(info.domain.interval(0))) == (f, "(0, inf)")
    x = np.array([1e-7, 2.0])
    report = testers.test_rrule(f, x, rrule_f=f.rrule, rng=0)
    assert any("max_range=9e-08" in n for n in report.notes)
    assert any("max_range=9e-08" in n for n in testers.test_frule(f, x, frule_f=f.frule).notes)


def test_the_adapters_rules_refuse_other_functions() -> None:
    f = Log()
    with pytest.raises(InteropError, match="pass the adapter itself"):
        f.rrule(np.exp, 1.0)
    with pytest.raises(InteropError, match="pass the adapter itself"):
        f.frule((NoTangent(), 1.0), np.exp, 1.0)
    assert f.rrule(np.log, 2.0)[0] == np.log(2.0)  # the wrapped function is accepted


def test_register_puts_the_rules_in_a_ruleset_as_the_callers(testers: Any) -> None:
    rules = RuleSet()
    f = register(Log(), rules=rules, domain="(0, inf)", examples=[np.array([0.5, 2.0])])
    infos = rules.rules()
    assert [(i.kind, i.module, i.qualname) for i in infos] == [
        ("rrule", __name__, "log"),
        ("frule", __name__, "log"),
    ]
    assert infos[0].examples[0][0].tolist() == [0.5, 2.0]
    testers.test_rrule(f, np.array([0.5, 2.0]), rrule_f=rules.rrule, rng=0)
    wrong = register(Log(wrong=1.01), rules=rules)
    with pytest.raises(AssertionError, match=r"\[numeric\] args\[0\]"):
        testers.test_rrule(wrong, np.array([0.5, 2.0]), rrule_f=rules.rrule, rng=0)
    with pytest.raises(InteropError, match="register takes an adapter"):
        register(np.log)  # type: ignore[arg-type]
    assert default_ruleset.rrule_info(f) is None


def test_the_gate_runs_registered_adapters(tmp_path: Path) -> None:
    """``rruletest check MODULE`` tests the adapters a module registers: a row per adapter."""
    (tmp_path / "numpy_table.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            from rruletest.interop import register
            from tests.interop.test_rules import Log

            register(Log(name="log"), domain="(0, inf)", examples=[np.array([0.5, 2.0])])
            register(Log(name="wrong_log", wrong=1.01), domain="(0, inf)",
                     examples=[np.array([0.5, 2.0])])
            """
        )
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rruletest",
            "check",
            "numpy_table",
            "--seed",
            "1",
            "--examples",
            "3",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "passed" in rows["log"]
    assert "FAILED" in rows["wrong_log"].upper()


def test_register_says_each_arguments_declaration_once(testers: Any) -> None:
    """For the gate too: an example argument marked ``with_tangent(x, NoTangent())`` is not
    differentiated by the framework, and the adapter's ``nondiff_argnums`` are marked in the
    examples the gate tests (and generates near)."""
    from rruletest import with_tangent

    from .test_declarations import Scale

    x = np.array([0.5, 1.5])
    rules = RuleSet()
    told = register(Scale(), rules=rules, examples=[(x, with_tangent(2.0, NoTangent()))])
    declared = register(Scale(nondiff_argnums=[1], name="scale2"), rules=rules, examples=[(x, 2.0)])
    for f in (told, declared):
        (example,) = rules.rrule_info(f).examples
        assert repr(example[1]) == "with_tangent(2.0, NoTangent())"
        assert rules.rrule(f, x, 2.0)[1](np.ones(2))[2] == NoTangent()
        report = testers.test_rrule(f, *example, rrule_f=rules.rrule, rng=0)
        assert report.not_checked == ("args[1]",)
    assert told.nondiff_argnums == ()  # the adapter itself is unchanged


def test_register_keeps_an_examples_keywords(testers: Any) -> None:
    """An ``Example(x, axis=1)`` given to ``register`` is tested with its keywords: before,
    marking the non-differentiated arguments rebuilt it as a plain tuple, so the gate called
    ``tensordot(a, b)`` for ``Example(a, b, axes=([1], [0]))`` (and failed a correct rule
    with the function's own shape error) or ``sum(x)`` for ``Example(x, axis=1)``."""
    from rruletest import with_tangent
    from rruletest.rules import Example

    from .test_declarations import Scale

    x = np.array([0.5, 1.5])
    rules = RuleSet()
    f = register(Log(), rules=rules, examples=[Example(x, out=None), (x,)])
    g = register(
        Scale(nondiff_argnums=[1], name="scale3"), rules=rules, examples=[Example(x, 2.0, k=1)]
    )
    kept = [e for i in (f, g) for e in rules.rrule_info(i).examples]
    assert [getattr(e, "kwargs", None) for e in kept] == [{"out": None}, None, {"k": 1}]
    assert repr(kept[2]) == "Example(array([0.5, 1.5]), with_tangent(2.0, NoTangent()), k=1)"
    assert isinstance(kept[2][1], type(with_tangent(2.0, NoTangent())))


def test_register_marks_the_arguments_the_framework_has_no_rule_for(testers: Any) -> None:
    """As the adapter's test_rrule does: a Python number given to a torch Function (never
    differentiated by torch) is marked in the gate's examples; the gate failed a correct rule
    with a numeric mismatch for it."""
    pytest.importorskip("torch")
    from rruletest.interop import torch as rtorch

    from .test_torch import TimesPythonNumber

    x = np.array([0.5, 1.5])
    rules = RuleSet()
    f = register(rtorch.from_function(TimesPythonNumber), rules=rules, examples=[(x, 2.5)])
    (example,) = rules.rrule_info(f).examples
    assert repr(example[1]) == "with_tangent(2.5, NoTangent())"
    report = testers.test_rrule(f, *example, rrule_f=rules.rrule, rng=0)
    assert report.not_checked == ("args[1]",)
