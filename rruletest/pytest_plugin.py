"""The rruletest pytest plugin (entry point ``pytest11``, name ``rruletest``).

Loaded by pytest at start-up, so it imports only the standard library, pytest and
``rruletest._options``: no numpy, findiff, scipy, sympy or hypothesis until a rule item runs or a
fixture is used. It provides:

- a session seed: ``--rruletest-seed=N``, ``--rruletest-seed=last`` (from pytest's cache), else a
  random one; printed in the header (``rruletest: seed=N``) and in every rruletest failure.
  Each test derives its own seed from it and its node id, so one command reproduces one failure;
- fixtures ``rruletest_rng`` (a seeded ``numpy.random.Generator``) and ``rruletest_config``
  (a ``RuleTestConfig``: seed, tolerance overrides per dtype, fdm, and testers using them);
- options and ini keys: ``--rruletest-rtol``/``--rruletest-atol`` (``[DTYPE=]VALUE``, ini
  ``rruletest_rtol``/``rruletest_atol``), ``--rruletest-fdm`` (``central:5``),
  ``--rruletest-examples`` and ``--rruletest-dtypes`` (ini ``rruletest_examples``,
  ``rruletest_dtypes``);
- collection of registered rules as test items: ``--rruletest-check MODULE`` (repeatable) and the
  ini key ``rruletest_check`` make one item per rule the module registered, with node ids like
  ``rruletest::mypkg.rules::sin[scalar]``. Such a node id can be given on the command line to run
  that rule alone. Modules of the ini key are collected when pytest runs without positional
  arguments (a plain ``pytest``), so ``pytest tests/test_one.py`` stays focused.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from rruletest import _options as opts

if TYPE_CHECKING:
    from rruletest._rule_checks import RunRecord
    from rruletest.rules import RuleInfo

__all__ = ["RuleItem", "RuleModule"]

CACHE_KEY = "rruletest/seed"


@dataclass(frozen=True)
class _Session:
    """The rruletest settings of one pytest run (stored in ``config.stash``)."""

    config: opts.RuleTestConfig
    seed_note: str
    modules: tuple[str, ...]
    nodes: tuple[str, ...]
    repro_flags: tuple[str, ...]

    @property
    def seed(self) -> int:
        return self.config.seed

    def for_test(self, nodeid: str) -> opts.RuleTestConfig:
        return replace(self.config, test_seed=opts.derive_seed(self.seed, nodeid))

    def reproduce(self, nodeid: str) -> str:
        flags = " ".join((f"--rruletest-seed={self.seed}", *self.repro_flags))
        return f"pytest {flags} {shlex.quote(nodeid)}"


SESSION_KEY = pytest.StashKey[_Session]()


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
        "(default: random, printed in the header)",
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
        "--rruletest-fdm",
        dest="rruletest_fdm",
        metavar="KIND:POINTS",
        type=_arg(opts.parse_fdm),
        default=None,
        help="finite-difference method: central:5 (default), forward:3, backward:3, ...",
    )
    parser.addini("rruletest_check", "modules whose registered rules are test items", "args", [])
    parser.addini("rruletest_examples", "generated examples per rule item", "string", "")
    parser.addini("rruletest_dtypes", "real dtypes rule items draw inputs in", "args", [])
    parser.addini("rruletest_rtol", "default rtol, [DTYPE=]VALUE entries", "args", [])
    parser.addini("rruletest_atol", "default atol, [DTYPE=]VALUE entries", "args", [])
    parser.addini("rruletest_fdm", "finite-difference method, KIND:POINTS", "string", "")


def _resolve_seed(config: pytest.Config) -> tuple[int, str]:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "rruletest_seed" in workerinput:
        return int(workerinput["rruletest_seed"]), ""
    raw = config.option.rruletest_seed
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
        seed, note = int(raw), ""
    if cache is not None:
        cache.set(CACHE_KEY, seed)
    return seed, note


def _read_session(config: pytest.Config) -> _Session:
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

    plain, nodes = opts.split_node_args(config.args)
    if nodes:
        config.args[:] = plain
    modules = list(o.rruletest_check)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        modules += list(config.getini("rruletest_check"))
    modules = list(dict.fromkeys(m.strip() for m in modules if m.strip()))
    cfg = opts.RuleTestConfig(
        seed=seed, examples=examples, rtol=rtol, atol=atol, fdm_spec=fdm, dtypes=dtypes
    )
    return _Session(cfg, note, tuple(modules), tuple(nodes), tuple(repro))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "rruletest: a registered derivative rule checked by rruletest (rule items)"
    )
    config.stash[SESSION_KEY] = _read_session(config)


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
    token = opts.TEST_SEED.set(opts.derive_seed(s.seed, item.nodeid))
    try:
        with s.config.overriding_defaults():
            return (yield)
    finally:
        opts.TEST_SEED.reset(token)


# -- failure reports ----------------------------------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed and not isinstance(item, RuleItem) and call.excinfo is not None:
        uses = {"rruletest_rng", "rruletest_config"} & set(getattr(item, "fixturenames", ()))
        if uses or _is_rule_failure(call.excinfo.value):
            s = item.config.stash[SESSION_KEY]
            report.sections.append(
                ("rruletest", f"seed={s.seed}\nreproduce: {s.reproduce(item.nodeid)}")
            )
    return report


def _is_rule_failure(err: BaseException) -> bool:
    errors = sys.modules.get("rruletest.errors")
    return errors is not None and isinstance(err, errors.RuleTestFailure)


# -- rule items ---------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    s = config.stash[SESSION_KEY]
    if not (s.modules or s.nodes):
        return
    for module, select in _plan(s.modules, s.nodes):
        col = RuleModule.from_parent(
            session, name=f"{opts.NODE_PREFIX}::{module}", nodeid=f"{opts.NODE_PREFIX}::{module}"
        )
        col.setup_rules(module, select, [m for m in s.modules if m.startswith(module + ".")])
        items.extend(session.genitems(col))


def _plan(modules: Sequence[str], nodes: Sequence[str]) -> list[tuple[str, tuple[str, ...] | None]]:
    """(module, node ids to keep or None for all) in order: modules first, then node ids."""
    plan: dict[str, tuple[str, ...] | None] = dict.fromkeys(modules)
    for node in nodes:
        module = opts.module_of_node(node)
        if module in plan and plan[module] is None:
            continue
        keep = None if node == f"{opts.NODE_PREFIX}::{module}" else (node,)
        prev = plan.get(module, ())
        plan[module] = None if keep is None else (*(prev or ()), *keep)
    return list(plan.items())


class RuleModule(pytest.Collector):
    """The rules one module registered (node id ``rruletest::<module>``)."""

    module_name: str = ""
    select: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    def setup_rules(
        self, module: str, select: tuple[str, ...] | None, exclude: Iterable[str]
    ) -> None:
        self.module_name, self.select, self.exclude = module, select, tuple(exclude)

    def collect(self) -> list[pytest.Item]:
        top = self.module_name.split(".")[0]
        if importlib.util.find_spec(top) is None:
            # A rule module next to the project's ini file is importable as with
            # ``python -m pytest`` (appended: installed packages win).
            root = self.config.rootpath
            if (root / top).is_dir() or (root / f"{top}.py").is_file():
                sys.path.append(str(root))
            if importlib.util.find_spec(top) is None:
                raise self.CollectError(f"rruletest: no module named {self.module_name!r}")
        importlib.import_module(self.module_name)
        from rruletest.rules import default_ruleset

        infos = [
            i
            for i in default_ruleset.rules(module=self.module_name)
            if not any(i.module == e or i.module.startswith(e + ".") for e in self.exclude)
        ]
        # A module imported again (importlib.reload, a fresh in-process pytest run) registers
        # new function objects under the same names: the latest registration stands.
        latest = {(i.module, i.kind, i.name): i for i in infos}
        infos = sorted(latest.values(), key=lambda i: (i.name, i.kind, i.module))
        items: list[pytest.Item] = []
        seen: set[str] = set()
        for info in infos:
            name = _item_name(info, seen)
            nodeid = f"{self.nodeid}::{name}"
            if self.select is None or any(
                nodeid == n or nodeid.startswith((n + "::", n + "[")) for n in self.select
            ):
                items.append(RuleItem.from_parent(self, name=name, info=info))
        if self.select is not None:
            names = {it.nodeid for it in items}
            missing = [n for n in self.select if not any(x.startswith(n) for x in names)]
            if missing:
                known = ", ".join(_item_name(i, set()) for i in infos) or "no rules"
                raise self.CollectError(
                    f"rruletest: no rule matches {', '.join(missing)}; {self.module_name} "
                    f"registers: {known}"
                )
        return items

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> Any:
        if isinstance(excinfo.value, self.CollectError):
            return str(excinfo.value.args[0])
        return super().repr_failure(excinfo)


def _item_name(info: RuleInfo, seen: set[str]) -> str:
    name = f"{info.name}[{info.kind}]"
    if name in seen:
        mod = getattr(info.function, "__module__", None) or "?"
        name = f"{mod}.{info.name}[{info.kind}]"
        k = 2
        while name in seen:
            name, k = f"{mod}.{info.name}-{k}[{info.kind}]", k + 1
    seen.add(name)
    return name


class RuleItem(pytest.Item):
    """One registered rule, tested with generated inputs inside its domain."""

    def __init__(self, *, info: RuleInfo, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.info = info
        self.record: RunRecord | None = None
        self.add_marker("rruletest")
        self.extra_keyword_matches.update({info.kind, info.module})

    def runtest(self) -> None:
        from rruletest._rule_checks import CannotGenerate, RunRecord, check_rule

        s = self.config.stash[SESSION_KEY]
        self.record = record = RunRecord()
        self.user_properties.append(("rruletest_rule", self.info.name))
        self.user_properties.append(("rruletest_kind", self.info.kind))
        try:
            check_rule(self.info, s.for_test(self.nodeid), record)
        except CannotGenerate as err:
            pytest.skip(f"rruletest: {err}")
        finally:
            self.user_properties.append(("rruletest_examples", record.examples))
            if record.worst_rel_err is not None:
                self.user_properties.append(("rruletest_worst_rel_err", record.worst_rel_err))

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        mod = sys.modules.get(self.info.module)
        path = getattr(mod, "__file__", None)
        return (Path(path) if path else self.path), None, f"rule {self.name}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        s = self.config.stash[SESSION_KEY]
        err = excinfo.value
        info, record = self.info, self.record
        lines = [f"rule {info.name} [{info.kind}] registered by {info.module}"]
        if info.domain is not None:
            lines[0] += f", domain {info.domain}"
        if record is not None:
            ran = f"{record.examples} example(s)"
            if record.shrinks:
                ran += f", shrunk in {record.shrinks} more run(s)"
            lines.append(f"failed after {ran}")
            if record.case is not None:
                lines.append(f"falsifying inputs: {record.case!r}")
        checks = getattr(err, "checks", None)
        if checks:
            lines.append(f"failed checks: {', '.join(checks)}")
        lines.append(f"rruletest: seed={s.seed}")
        lines.append(f"reproduce: {s.reproduce(self.nodeid)}")
        context = "\n".join(lines)
        if _is_rule_failure(err):
            return f"{err}\n\n{context}"
        rep = super().repr_failure(excinfo, style="short")
        if hasattr(rep, "addsection"):
            rep.addsection("rruletest", context)
            return rep
        return f"{rep}\n{context}"  # pragma: no cover - pytest always returns a repr object

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """Hide hypothesis's and rruletest's own frames: the traceback ends in the rule."""
        tb = excinfo.traceback
        cut = tb.filter(lambda e: not any(p in str(e.path) for p in _HIDDEN_PATHS))
        return cut or tb.filter(excinfo)


_HIDDEN_PATHS = ("hypothesis", "_rule_checks", "pytest_plugin", "pluggy", "_pytest")
