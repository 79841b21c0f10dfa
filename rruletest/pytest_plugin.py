"""The rruletest pytest plugin (entry point ``pytest11``, name ``rruletest``).

Loaded by pytest at start-up, so beyond ``import rruletest`` it imports only the standard library,
pytest, ``rruletest._seed``, ``rruletest._plugin.options`` and ``rruletest._plugin.items``: no
findiff, scipy, sympy or hypothesis until a rule item runs or a fixture is used. It provides:

- a session seed: ``--rruletest-seed=N``, ``--rruletest-seed=last`` (from pytest's cache), else
  the one pinned by ``$RRULETEST_SEED`` or the ini key ``rruletest_seed``, else a random one;
  printed in the header (``rruletest: seed=N``) and in every rruletest failure. Each test
  derives its own seed from it and its node id, so one command reproduces one failure;
- fixtures ``rruletest_rng`` (a seeded ``numpy.random.Generator``) and ``rruletest_config``
  (a ``RuleTestConfig``: seed, tolerance overrides per dtype, fdm, and testers using them);
  during each test ``rruletest._seed.current_test_seed()`` gives the test's seed, and the
  tolerance overrides are the library's defaults (``rruletest.tolerances``);
- options and ini keys: ``--rruletest-rtol``/``--rruletest-atol`` (``[DTYPE=]VALUE``, ini
  ``rruletest_rtol``/``rruletest_atol``), ``--rruletest-fdm`` (``central:5``),
  ``--rruletest-examples`` and ``--rruletest-dtypes`` (ini ``rruletest_examples``,
  ``rruletest_dtypes``); ini ``rruletest_check_zero_output_tangent = false`` stops the
  ``rruletest_config`` fixture's ``test_rrule`` calling pullbacks with ``ZeroTangent()``;
- collection of registered rules as test items: ``--rruletest-check MODULE`` (repeatable) and the
  ini key ``rruletest_check`` make one item per rule the module registered, with node ids like
  ``rruletest::mypkg.rules::sin[scalar]`` (MODULE: a dotted name, or a path such as
  ``src/mypkg/rules.py``). Such a node id can be given on the command line to run
  that rule alone. Modules of the ini key are collected when pytest runs without positional
  arguments (a plain ``pytest``), so ``pytest tests/test_one.py`` stays focused.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from rruletest import _seed
from rruletest._plugin import options as opts
from rruletest._plugin.items import (
    SESSION_KEY,
    RuleItem,
    RuleModule,
    Session,
    is_rule_failure,
    plan,
)

#: Modules given to ``--rruletest-check`` that registered no rules (said in the summary).
_UNCHECKED_KEY = pytest.StashKey[list[str]]()

__all__ = [
    "RuleItem",
    "RuleModule",
    "pytest_addoption",
    "pytest_configure",
    "rruletest_config",
    "rruletest_rng",
]

CACHE_KEY = "rruletest/seed"

#: An environment variable that pins the session seed (below ``--rruletest-seed``, above the
#: ini key ``rruletest_seed``).
SEED_ENV = "RRULETEST_SEED"


def _arg(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = parse.__name__.removeprefix("parse_")
    return convert


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rruletest", "rruletest (derivative rules)")
    group.addoption(
        "--rruletest-seed",
        dest="rruletest_seed",
        metavar="N|last",
        type=_arg(opts.parse_seed),
        default=None,
        help="session seed for rruletest's random inputs; 'last' reuses the previous run's "
        f"(default: ${SEED_ENV}, else the ini key rruletest_seed, else random; printed in the "
        "header)",
    )
    group.addoption(
        "--rruletest-check",
        dest="rruletest_check",
        metavar="MODULE",
        action="append",
        default=[],
        help="collect every rule MODULE registers as a test item (repeatable)",
    )
    group.addoption(
        "--rruletest-examples",
        dest="rruletest_examples",
        metavar="N",
        type=_arg(opts.parse_examples),
        default=None,
        help=f"generated examples per rule item (default {opts.DEFAULT_EXAMPLES})",
    )
    group.addoption(
        "--rruletest-dtypes",
        dest="rruletest_dtypes",
        metavar="LIST",
        type=_arg(lambda s: opts.parse_dtypes([s])),
        default=None,
        help="real dtypes rule items draw inputs in, comma separated "
        f"(default {','.join(opts.DEFAULT_DTYPES)})",
    )
    group.addoption(
        "--rruletest-strict",
        dest="rruletest_strict",
        action="store_true",
        default=None,
        help="fail rule items that could be tried at scalars only (rrules/frules without "
        "examples= or shapes= whose function rejects arrays)",
    )
    for which in ("rtol", "atol"):
        group.addoption(
            f"--rruletest-{which}",
            dest=f"rruletest_{which}",
            metavar="[DTYPE=]VALUE",
            action="append",
            default=[],
            help=f"default {which} for testers, for one dtype (float32=1e-4) or all (repeatable)",
        )
    group.addoption(
        "--rruletest-report",
        dest="rruletest_report",
        metavar="DIR",
        default=None,
        help="write DIR/index.html: the rule items as a table, with pictures of failing rules",
    )
    group.addoption(
        "--rruletest-fdm",
        dest="rruletest_fdm",
        metavar="KIND:POINTS",
        type=_arg(opts.parse_fdm),
        default=None,
        help="finite-difference method: central:5 (default), forward:3, backward:3, ...",
    )
    parser.addini("rruletest_seed", "session seed, N or 'last' (default: random)", "string", "")
    parser.addini("rruletest_check", "modules whose registered rules are test items", "args", [])
    parser.addini("rruletest_examples", "generated examples per rule item", "string", "")
    parser.addini("rruletest_dtypes", "real dtypes rule items draw inputs in", "args", [])
    parser.addini("rruletest_strict", "fail rule items tried at scalars only", "bool", False)
    parser.addini("rruletest_rtol", "default rtol, [DTYPE=]VALUE entries", "args", [])
    parser.addini("rruletest_atol", "default atol, [DTYPE=]VALUE entries", "args", [])
    parser.addini("rruletest_fdm", "finite-difference method, KIND:POINTS", "string", "")
    parser.addini(
        "rruletest_check_zero_output_tangent", "call pullbacks with ZeroTangent()", "bool", True
    )


def pinned_seed(config: pytest.Config) -> tuple[int | str | None, str]:
    """The seed pinned outside the command line: ``RRULETEST_SEED``, else the ini key
    ``rruletest_seed``; with a note saying which (None when neither is set)."""
    for text, where in (
        (os.environ.get(SEED_ENV, ""), f"from ${SEED_ENV}"),
        (str(config.getini("rruletest_seed")), "from the ini key rruletest_seed"),
    ):
        if text.strip():
            try:
                return opts.parse_seed(text), f" ({where})"
            except ValueError as err:
                raise pytest.UsageError(f"rruletest: {err} ({where})") from None
    return None, ""


def _resolve_seed(config: pytest.Config) -> tuple[int, str]:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "rruletest_seed" in workerinput:
        return int(workerinput["rruletest_seed"]), ""
    raw, source = config.option.rruletest_seed, ""
    if raw is None:
        raw, source = pinned_seed(config)
    cache = getattr(config, "cache", None)
    if raw == "last":
        if cache is None:
            raise pytest.UsageError(
                "rruletest: --rruletest-seed=last needs pytest's cache; remove -p no:cacheprovider"
            )
        last = cache.get(CACHE_KEY, None)
        if isinstance(last, int):
            return last, " (last)"
        seed, note = opts.new_seed(), " (no previous seed in the cache; a new one)"
    elif raw is None:
        seed, note = opts.new_seed(), ""
    else:
        seed, note = int(raw), source
    if cache is not None:
        cache.set(CACHE_KEY, seed)
    return seed, note


def _read_session(config: pytest.Config) -> Session:
    seed, note = _resolve_seed(config)
    o = config.option
    repro: list[str] = []
    try:
        examples_ini = str(config.getini("rruletest_examples")).strip()
        examples = o.rruletest_examples or (
            opts.parse_examples(examples_ini) if examples_ini else opts.DEFAULT_EXAMPLES
        )
        dtypes_ini = config.getini("rruletest_dtypes")
        dtypes = o.rruletest_dtypes or (
            opts.parse_dtypes(dtypes_ini) if dtypes_ini else opts.DEFAULT_DTYPES
        )
        rtol = opts.parse_tolerances(
            [*config.getini("rruletest_rtol"), *o.rruletest_rtol], name="rtol"
        )
        atol = opts.parse_tolerances(
            [*config.getini("rruletest_atol"), *o.rruletest_atol], name="atol"
        )
        fdm_ini = str(config.getini("rruletest_fdm")).strip()
        fdm = o.rruletest_fdm or (opts.parse_fdm(fdm_ini) if fdm_ini else None)
    except ValueError as err:
        raise pytest.UsageError(f"rruletest: {err}") from None
    if o.rruletest_examples:
        repro.append(f"--rruletest-examples={examples}")
    if o.rruletest_dtypes:
        repro.append(f"--rruletest-dtypes={','.join(dtypes)}")
    repro += [f"--rruletest-rtol={shlex.quote(v)}" for v in o.rruletest_rtol]
    repro += [f"--rruletest-atol={shlex.quote(v)}" for v in o.rruletest_atol]
    if o.rruletest_fdm:
        repro.append(f"--rruletest-fdm={fdm[0]}:{fdm[1]}")  # type: ignore[index]
    strict = bool(o.rruletest_strict or config.getini("rruletest_strict"))
    if o.rruletest_strict:
        repro.append("--rruletest-strict")

    plain, nodes = opts.split_node_args(config.args)
    if nodes:
        config.args[:] = plain
    modules = list(o.rruletest_check)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        modules += list(config.getini("rruletest_check"))
    try:
        modules, paths = opts.module_names(m.strip() for m in modules if m.strip())
    except ValueError as err:
        raise pytest.UsageError(f"rruletest: --rruletest-check: {err}") from None
    repro += [f"--rruletest-check={shlex.quote(path)}" for path in paths]
    cfg = opts.RuleTestConfig(
        seed=seed, examples=examples, rtol=rtol, atol=atol, fdm_spec=fdm, dtypes=dtypes,
        check_zero_output_tangent=bool(config.getini("rruletest_check_zero_output_tangent")),
        strict=strict,
    )  # fmt: skip
    return Session(cfg, note, tuple(modules), tuple(nodes), tuple(repro))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "rruletest: a registered derivative rule checked by rruletest (rule items)"
    )
    config.stash[SESSION_KEY] = _read_session(config)
    report_dir = config.getoption("rruletest_report", None)
    if report_dir and not hasattr(config, "workerinput"):  # the controller writes the page
        from rruletest._plugin.report_collect import ReportCollector

        seed = config.stash[SESSION_KEY].seed
        collector = ReportCollector(report_dir, meta=f"seed={seed}")
        config.pluginmanager.register(collector, "rruletest-report")
    elif report_dir:  # a pytest-xdist worker draws the pictures of the items it runs
        from rruletest._plugin.report_collect import ReportWorker

        config.pluginmanager.register(ReportWorker(), "rruletest-report-worker")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker uses the controller's seed."""
    node.workerinput["rruletest_seed"] = node.config.stash[SESSION_KEY].seed


def pytest_report_header(config: pytest.Config) -> list[str]:
    s = config.stash[SESSION_KEY]
    line = f"rruletest: seed={s.seed}{s.seed_note}"
    mods = [*s.modules, *(m for m in map(opts.module_of_node, s.nodes) if m not in s.modules)]
    if mods:
        line += f", checking rules of {', '.join(mods)} ({s.config.examples} examples each)"
    return [line]


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture
def rruletest_config(request: pytest.FixtureRequest) -> opts.RuleTestConfig:
    """The rruletest settings in force for this test: seed, tolerance overrides, fdm.

    ``rruletest_config.test_rrule(f, x)`` calls the tester with this test's generator and the
    tolerances and fdm given by options or ini keys.
    """
    return request.config.stash[SESSION_KEY].for_test(request.node.nodeid)


@pytest.fixture
def rruletest_rng(rruletest_config: opts.RuleTestConfig) -> Any:
    """A ``numpy.random.Generator`` seeded from the session seed and this test's node id."""
    return rruletest_config.rng()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Around each test: its seed for testers called without ``rng`` (``current_test_seed``),
    and the tolerance overrides as the library's defaults.
    """
    s = item.config.stash[SESSION_KEY]
    token = _seed.TEST_SEED.set(opts.derive_seed(s.seed, item.nodeid))
    try:
        with s.config.overriding_defaults():
            return (yield)
    finally:
        _seed.TEST_SEED.reset(token)


# -- failure reports ----------------------------------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and not isinstance(item, RuleItem) and call.excinfo is not None:
        uses = {"rruletest_rng", "rruletest_config"} & set(getattr(item, "fixturenames", ()))
        if uses or is_rule_failure(call.excinfo.value):
            s = item.config.stash[SESSION_KEY]
            report.sections.append(
                ("rruletest", f"seed={s.seed}\nreproduce: {s.reproduce(item.nodeid)}")
            )
    return report


# -- rule items ---------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    s = config.stash[SESSION_KEY]
    if not (s.modules or s.nodes):
        return
    planned = plan(s.modules, s.nodes)
    # A module checked in full on its own (``--rruletest-check`` or its node id) leaves its
    # parent package: each rule is one item.
    whole = [*s.modules, *(m for m, select in planned if select is None)]
    for module, select in planned:
        col = RuleModule.from_parent(
            session, name=f"{opts.NODE_PREFIX}::{module}", nodeid=f"{opts.NODE_PREFIX}::{module}"
        )
        col.setup_rules(
            module, select, dict.fromkeys(m for m in whole if m.startswith(module + "."))
        )
        before = len(items)
        items.extend(session.genitems(col))
        if len(items) == before and module in s.modules and col.registers is False:
            # (``rruletest check`` says so itself, and exits 3; a warning would be an error
            # under ``-W error``)
            config.stash[_UNCHECKED_KEY] = [*config.stash.get(_UNCHECKED_KEY, []), module]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for module in config.stash.get(_UNCHECKED_KEY, []):
        terminalreporter.write_line(
            f"rruletest: {module} (given to --rruletest-check or the rruletest_check ini key) "
            "registers no rules, so none was checked (rules in a RuleSet of their own are not "
            "collected: the module-level register_rrule, register_frule and scalar_rule "
            "register in the default one)",
            yellow=True,
        )
