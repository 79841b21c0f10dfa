"""Every failure's ``reproduce:`` line runs as printed, in a fresh interpreter, and fails the same
way: the user's rules live in a real module (written to tmp_path), large arrays are loaded from
the saved ``.npz``, ``fkwargs=`` and every option that shaped the verdict are passed."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from rruletest import RuleTestFailure
from rruletest.finite_differences import central_fdm
from rruletest.testers import test_frule, test_rrule, test_scalar
from rruletest.testers._reproduce import reproduce_line, save_dir

ROOT = Path(__file__).resolve().parent.parent

USER_RULES = """
import numpy as np
from rruletest import NoTangent, RuleSet, unthunk

rules = RuleSet()


def mymean(x, axis=None):
    return np.mean(x, axis=axis)


@rules.register_rrule(mymean)
def _mymean_rrule(x, axis=None):
    def pullback(ybar):
        ybar = unthunk(ybar)
        full = ybar if axis is None else np.expand_dims(ybar, axis)
        return NoTangent(), np.broadcast_to(full, x.shape).copy()  # forgets to divide

    return mymean(x, axis=axis), pullback


def cube(x):
    return x**3


@rules.register_rrule(cube)
def _cube_rrule(x):
    def pullback(ybar):
        return NoTangent(), unthunk(ybar) * 3 * x**2 * (1 + 1e-11)  # wrong in the 11th digit

    return cube(x), pullback


@rules.register_frule(cube)
def _cube_frule(dots, x):
    return cube(x), 3.1 * x**2 * dots[1]  # wrong: 3
"""


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    name = f"userrules_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(USER_RULES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    # The nearest .pytest_cache is the project's (a parent's, such as /tmp's, is not).
    (tmp_path / ".pytest_cache").mkdir()
    return importlib.import_module(name)


def _failure(call: Any) -> RuleTestFailure:
    with pytest.raises(RuleTestFailure) as info:
        call()
    return info.value


def _rerun(line: str, cwd: Path) -> str:
    """Run a reproduce line in a fresh interpreter; its error output (it must fail)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)])}
    env.pop("PYTEST_CURRENT_TEST", None)
    done = subprocess.run(
        [sys.executable, "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0, done.stdout
    return done.stderr


def _first_line(err: RuleTestFailure) -> str:
    return str(err).splitlines()[0]


def test_fkwargs_options_and_saved_arrays_reproduce(user: ModuleType, tmp_path: Path) -> None:
    x = np.arange(20.0).reshape(4, 5)
    kw = {"fkwargs": {"axis": 0}, "rrule_f": user.rules.rrule, "rng": 3, "vjp_mode": "full"}
    err = _failure(lambda: test_rrule(user.mymean, x, fdm=central_fdm(7, 1), **kw))
    assert _first_line(err) == "test_rrule(mymean, float64[4, 5], fkwargs={'axis': 0}) failed"
    line = err.reproduce
    mod = user.__name__
    folder = tmp_path / ".pytest_cache" / "d" / "rruletest"  # under pytest: its cache
    assert line.startswith(f"import {mod}; import numpy as np; ")
    assert f"_saved = np.load('{folder}/reproduce-" in line
    assert (
        f"test_rrule({mod}.mymean, _saved['a0'], fkwargs={{'axis': 0}}, fdm="
        "FiniteDifferenceMethod((-3, -2, -1, 0, 1, 2, 3), 1, adapt=1, condition=10.0, "
        f"factor=1.0, max_range=float('inf')), vjp_mode='full', rrule_f={mod}.rules.rrule, "
        "rng=3)"
    ) in line
    assert "object at 0x" not in line
    assert "#" not in line
    shown = _rerun(line, tmp_path)
    assert _first_line(err) in shown
    assert "[numeric] args[0]: the cotangent differs from the numerical vjp" in shown
    assert str(err).split("reproduce:")[0].split("\n", 1)[1] in shown  # the same findings


def test_a_tolerance_that_shaped_the_verdict_is_kept(user: ModuleType, tmp_path: Path) -> None:
    x = np.array([0.5, 1.5])
    test_rrule(user.cube, x, rrule_f=user.rules.rrule, rng=1, check_transpose=False)  # passes
    err = _failure(
        lambda: test_rrule(
            user.cube, x, rrule_f=user.rules.rrule, rng=1, rtol=1e-13, atol=1e-13,
            output_tangent=np.array([1.0, -2.0]), check_transpose=False,
        )
    )  # fmt: skip
    assert (
        "output_tangent=np.array([1.0, -2.0]), rtol=1e-13, atol=1e-13, "
        f"rrule_f={user.__name__}.rules.rrule, check_transpose=False, rng=1)"
    ) in err.reproduce
    shown = _rerun(err.reproduce, tmp_path)
    assert "[numeric] args[0]" in shown


def test_frule_and_scalar_lines_reproduce(user: ModuleType, tmp_path: Path) -> None:
    mod = user.__name__
    err = _failure(lambda: test_frule(user.cube, 0.5, frule_f=user.rules.frule, rng=2))
    assert f"test_frule({mod}.cube, 0.5, frule_f={mod}.rules.frule, rng=2)" in err.reproduce
    assert "[numeric] ydot" in _rerun(err.reproduce, tmp_path)
    err = _failure(
        lambda: test_scalar(
            user.cube, 0.5, rrule_f=user.rules.rrule, frule_f=user.rules.frule, rng=2
        )
    )
    assert err.reproduce.endswith(
        f"test_scalar({mod}.cube, 0.5, rrule_f={mod}.rules.rrule, frule_f={mod}.rules.frule, rng=2)"
    )
    assert _first_line(err) in _rerun(err.reproduce, tmp_path)


def test_nan_and_special_values_are_written_so_they_load() -> None:
    line = reproduce_line(
        "test_rrule", np.sqrt, (np.array([0.0, np.nan]), float("inf"), np.float32(0.5)), {}, {}, 4
    )
    assert "_saved['a0'], float('inf'), np.float32(0.5), rng=4)" in line


def test_numpy_float64_and_complex128_scalars_keep_their_type_and_import() -> None:
    # np.float64 is a float and np.complex128 a complex: the line once wrote
    # "np.float64(0.5)" (numpy's repr) without importing numpy, and complex(...) for the other.
    # (np.sinc: no ruleset registers a rule for it, whose module the line would import.)
    line = reproduce_line(
        "test_rrule",
        np.sinc,
        (np.float64(0.5), np.complex128(1 - 2j), np.float64("nan")),
        {},
        {},
        1,
    )
    assert line == (
        "import numpy as np; from rruletest import test_rrule; test_rrule(np.sinc, "
        "np.float64(0.5), np.complex128(complex(1.0, -2.0)), np.float64(float('nan')), rng=1)"
    )
    args = eval(line.split("test_rrule(np.sinc, ", 1)[1][: -len(", rng=1)")], {"np": np})
    assert [type(a) for a in args] == [np.float64, np.complex128, np.float64]


def test_longdouble_values_are_saved_and_the_line_keeps_the_options(
    user: ModuleType, tmp_path: Path
) -> None:
    # A longdouble's .item() is a longdouble: writing it recursed without end, and the line
    # fell back to the call's summary without rrule_f= (it could not reproduce anything).
    x = np.array([0.5, 2.0], dtype=np.longdouble)
    err = _failure(lambda: test_rrule(user.mymean, x, rrule_f=user.rules.rrule, rng=0))
    assert "could not be written out" not in err.reproduce
    assert "_saved['a0'], rrule_f=" in err.reproduce
    assert _first_line(err) in _rerun(err.reproduce, tmp_path)
    line = reproduce_line(
        "test_rrule", np.sinc, (np.longdouble(0.5), np.clongdouble(1 - 2j)), {}, {}, 1
    )
    assert "pickle.loads(" in line
    assert line.endswith(", rng=1)")


def test_a_local_function_is_named_and_the_line_says_it_needs_it() -> None:
    def local(x: Any) -> Any:
        return x

    line = reproduce_line("test_rrule", local, (1.0,), {}, {}, 0)
    assert line == (
        "from rruletest import test_rrule; test_rrule(local, 1.0, rng=0)  # needs local "
        "defined as in the test"
    )


def test_builtin_functions_are_named_by_their_own_module() -> None:
    # a builtin's __self__ is its module, and it was taken for a bound method of a module
    # global found elsewhere: numpy._core.fromnumeric.math.exp, codecs.builtins.abs
    import math

    from rruletest import broadcasted

    line = reproduce_line("test_rrule", broadcasted, (math.exp, 1.0), {}, {}, 0)
    assert line == (
        "from rruletest import broadcasted; import math; from rruletest import test_rrule; "
        "test_rrule(broadcasted, math.exp, 1.0, rng=0)"
    )
    line = reproduce_line("test_rrule", abs, (1.0,), {}, {}, 0)
    assert line == "from rruletest import test_rrule; test_rrule(abs, 1.0, rng=0)"


def test_inputs_are_saved_in_a_temp_dir_outside_pytest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert save_dir() == tmp_path / "rruletest"
    line = reproduce_line("test_rrule", np.sin, (np.zeros(100),), {}, {}, 1)
    assert f"np.load('{tmp_path}/rruletest/reproduce-" in line


def test_the_header_shows_fkwargs_as_the_testers_keyword(user: ModuleType) -> None:
    err = _failure(
        lambda: test_rrule(
            user.mymean, np.ones((2, 3)), fkwargs={"axis": 1}, rrule_f=user.rules.rrule, rng=0
        )
    )
    assert _first_line(err) == "test_rrule(mymean, float64[2, 3], fkwargs={'axis': 1}) failed"


def test_a_scipy_ufunc_reproduces(tmp_path: Path) -> None:
    """A failure of ``broadcasted(scipy.special.expit, ...)`` reproduces as printed: the line
    imports scipy.special (it wrote ``np.expit``, which does not exist)."""
    special = pytest.importorskip("scipy.special")
    from rruletest import RuleSet, broadcasted

    rules = RuleSet()
    rules.scalar_rule(special.expit, lambda x, y: (1.01 * y * (1 - y),))  # 1% off
    err = _failure(
        lambda: test_rrule(
            broadcasted, special.expit, np.array([0.5, 1.0]), rrule_f=rules.rrule, rng=1
        )
    )
    line = err.reproduce
    assert "import scipy.special" in line
    assert "scipy.special.expit, " in line
    # run without the rule set: the line must get as far as the missing rule, not fail
    # on the name of the function
    runnable = line.replace("rrule_f=rules.rrule, ", "")
    shown = _rerun(runnable, tmp_path)
    assert "AttributeError" not in shown
    assert "RuleTestFailure" in shown, shown


def test_an_argument_declared_in_a_space_reproduces_with_its_space(
    user: ModuleType, tmp_path: Path
) -> None:
    # The line wrote with_tangent(x, None) for with_tangent(x, S): run, it raised ValueError
    # ("dx does not fit x: NoneType ...") instead of failing the same way.
    from rruletest import with_tangent
    from rruletest.spaces import Sparsity, Sphere, Symmetric

    mod, x = user.__name__, np.array([0.6, 0.0, 0.8])
    for space, text in [
        (Sphere(), "Sphere()"),
        (Sphere(2.0), "Sphere(2.0)"),
        (
            Sparsity(np.array([True, False, True])),
            "Sparsity(np.array([True, False, True], dtype=bool))",
        ),
    ]:
        y = x * space.radius if isinstance(space, Sphere) else x
        arg = with_tangent(y, space)
        err = _failure(lambda: test_rrule(user.cube, arg, rrule_f=user.rules.rrule, rng=0))  # noqa: B023
        assert f"test_rrule({mod}.cube, with_tangent(np.array({y.tolist()}), {text})" in (
            err.reproduce
        )
        assert _first_line(err) in _rerun(err.reproduce, tmp_path)
    line = reproduce_line(
        "test_frule", np.trace, (with_tangent(np.eye(2), np.ones((2, 2)), space=Symmetric()),),
        {}, {}, 3,
    )  # fmt: skip
    assert line.endswith(
        "test_frule(np.trace, with_tangent(np.array([[1.0, 0.0], [0.0, 1.0]]), "
        "np.array([[1.0, 1.0], [1.0, 1.0]]), space=Symmetric()), rng=3)"
    )
    assert "from rruletest.spaces import Symmetric" in line


FUNCS = """
def double(x):
    return 2.0 * x
"""

DEFAULT_RULES = """
import numpy as np
from rruletest import scalar_rule
import {funcs}

scalar_rule({funcs}.double, lambda x, y: (2.1 * np.ones_like(x),))  # wrong: 2
"""


@pytest.fixture
def default_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A function in one module, its (wrong) rule registered in the default RuleSet by another;
    the registration is dropped afterwards."""
    from rruletest.rules import default_ruleset

    stem = tmp_path.name.replace("-", "_")
    funcs, rules = f"userfuncs_{stem}", f"userdefault_{stem}"
    (tmp_path / f"{funcs}.py").write_text(FUNCS)
    (tmp_path / f"{rules}.py").write_text(DEFAULT_RULES.format(funcs=funcs))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".pytest_cache").mkdir()
    importlib.import_module(rules)
    yield importlib.import_module(funcs), rules
    for table in (default_ruleset._rrules, default_ruleset._frules, default_ruleset._scalars):
        for key in [k for k, info in table.items() if info.module == rules]:
            del table[key]


def test_the_module_that_registered_the_default_rule_is_imported(
    default_rules: Any, tmp_path: Path
) -> None:
    # A fresh process has no registration: the line used to name only f's module, so it
    # reported "no rule" instead of the failure (every gate failure of the numpy ruleset).
    funcs, rules = default_rules
    err = _failure(lambda: test_scalar(funcs.double, 0.5, rng=2))
    assert f"import {funcs.__name__}; import {rules}; " in err.reproduce
    shown = _rerun(err.reproduce, tmp_path)
    assert "no rule" not in shown
    assert "[numeric]" in shown
    assert _first_line(err) in shown


def test_the_module_of_a_rule_asked_after_one_that_declines_is_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (apply, np.sin)'s rule (one package) declines negative x and apply's own rule (another
    # package) answers: the line imported only the first, so a fresh process found no rule.
    from rruletest.rules import default_ruleset
    from rruletest.tangents import NoTangent

    def apply(fn: Any, x: Any) -> Any:
        return fn(x)

    def positive_only(fn: Any, x: Any) -> Any:
        return None if x < 0 else (fn(x), lambda g: (NoTangent(), NoTangent(), g))

    def any_x(fn: Any, x: Any) -> Any:
        return fn(x), lambda g: (NoTangent(), NoTangent(), g)

    for rule, module in ((positive_only, "pkg_specific.rules"), (any_x, "pkg_general.rules")):
        monkeypatch.setitem(sys.modules, module, ModuleType(module))
        rule.__module__ = module
    monkeypatch.setattr(default_ruleset, "_rrules", dict(default_ruleset._rrules))
    monkeypatch.setattr(default_ruleset, "_longest_key", default_ruleset._longest_key)
    default_ruleset.register_rrule(apply, np.sin)(positive_only)
    default_ruleset.register_rrule(apply)(any_x)
    line = reproduce_line("test_rrule", apply, (np.sin, -0.5), {}, {}, 5)
    assert "import pkg_specific.rules; import pkg_general.rules; " in line


def test_the_numpy_rulesets_modules_are_imported_and_a_given_rule_imports_none() -> None:
    import rruletest.rulesets.numpy
    from rruletest import RuleSet, broadcasted

    line = reproduce_line("test_scalar", np.tan, (1.0,), {}, {}, 5)
    assert line.startswith("import numpy as np; import rruletest.rulesets.numpy._unary; ")
    line = reproduce_line("test_frule", broadcasted, (np.hypot, np.ones(2), 2.0), {}, {}, 5)
    assert "; import rruletest.rulesets.numpy._binary; " in line
    norm = reproduce_line("test_rrule", np.linalg.norm, (np.ones(3),), {}, {}, 5)
    assert "import rruletest.rulesets.numpy._norm; " in norm
    assert rruletest.rulesets.numpy.__name__ in norm
    given = reproduce_line("test_rrule", np.tan, (1.0,), {}, {"rrule_f": RuleSet().rrule}, 5)
    assert "rulesets" not in given.split("test_rrule(")[0]


def test_default_tolerances_in_force_are_set_by_the_line(user: ModuleType, tmp_path: Path) -> None:
    # The plugin's --rruletest-rtol/--rruletest-atol (and ini keys) change the defaults around
    # each test; the line left them out, so in a fresh process the rule passed.
    from rruletest.tolerances import override_default_tolerances

    with override_default_tolerances(rtol=1e-13, atol=0.0):
        err = _failure(lambda: test_rrule(user.cube, 0.5, rrule_f=user.rules.rrule, rng=3))
    assert (
        "(_tolerances := override_default_tolerances(rtol=1e-13, atol=0.0)).__enter__(); "
        f"test_rrule({user.__name__}.cube, 0.5, rrule_f={user.__name__}.rules.rrule, rng=3)"
    ) in err.reproduce
    shown = _rerun(err.reproduce, tmp_path)
    assert str(err).split("reproduce:")[0] in shown
    with override_default_tolerances({np.float64: (1e-13, 0.0)}):
        line = reproduce_line("test_rrule", user.cube, (0.5,), {}, {}, 3)
        given = reproduce_line("test_rrule", user.cube, (0.5,), {}, {"rtol": 1.0, "atol": 1.0}, 3)
    assert "override_default_tolerances({'float64': (1e-13, 0.0)})" in line
    assert "override_default_tolerances" not in given
    assert "override_default_tolerances" not in reproduce_line(
        "test_rrule", user.cube, (0.5,), {}, {}, 3
    )


def test_a_generator_passed_as_rng_is_saved_as_it_was_on_entry(
    user: ModuleType, tmp_path: Path
) -> None:
    # The line used to say "with the same numpy Generator state" and draw other tangents.
    gen = np.random.default_rng(11)
    gen.random(5)  # a state that no seed names
    x = np.array([0.5, -1.0, 2.0])
    err = _failure(lambda: test_rrule(user.mymean, x, rrule_f=user.rules.rrule, rng=gen))
    assert "Generator state" not in err.reproduce
    assert err.reproduce.endswith(", rng=_pickled[0])")
    assert str(err).split("reproduce:")[0] in _rerun(err.reproduce, tmp_path)
    err = _failure(lambda: test_scalar(user.cube, 0.5, rrule_f=user.rules.rrule, rng=gen))
    assert err.reproduce.endswith(", rng=_pickled[0])")
    assert str(err).split("reproduce:")[0] in _rerun(err.reproduce, tmp_path)


def test_scalar_chains_its_first_part_without_a_line_of_its_own(user: ModuleType) -> None:
    # The part ran with test_scalar's generator: its own line (shown first by pytest, as the
    # direct cause) did not repeat it; the combined failure's line does.
    err = _failure(
        lambda: test_scalar(user.cube, 0.5, rrule_f=user.rules.rrule, rng=np.random.default_rng(1))
    )
    cause = err.__cause__
    assert isinstance(cause, RuleTestFailure)
    assert cause.reproduce == ""
    assert "reproduce:" not in str(cause)
    first = [m.message for m in err.mismatches if m.context == err.mismatches[0].context]
    assert [m.message for m in cause.mismatches] == first


def test_a_module_imported_from_a_directory_a_fresh_process_lacks_is_put_on_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest's prepend import mode puts a test module's directory on sys.path, and
    # ``rruletest check path/to/rules.py`` its file's: ``python -c`` from the same place did
    # not find the module (ModuleNotFoundError).
    name = f"userrules_{tmp_path.name.replace('-', '_')}_far"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / f"{name}.py").write_text(USER_RULES)
    monkeypatch.syspath_prepend(str(tmp_path / "tests"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".pytest_cache").mkdir()
    far = importlib.import_module(name)
    err = _failure(lambda: test_rrule(far.cube, 0.5, rrule_f=far.rules.rrule, rtol=1e-13, rng=1))
    assert err.reproduce.startswith(
        f"import sys; sys.path.insert(0, {str((tmp_path / 'tests').resolve())!r}); import {name}; "
    )
    assert str(err).split("reproduce:")[0] in _rerun(err.reproduce, tmp_path)
    # a module the fresh process finds (the working directory, $PYTHONPATH) needs no entry
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "tests"))
    line = reproduce_line("test_rrule", far.cube, (0.5,), {}, {}, 1)
    assert line.startswith(f"import {name}; ")
