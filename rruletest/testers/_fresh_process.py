"""What a fresh Python process needs before it can repeat a tester call as printed.

A reproduce line (``_reproduce``) runs in a new ``python -c`` process: it has none of this
process's rule registrations, ``sys.path`` entries or default tolerances. This module says
which modules registered the rules a tester may have used (``rule_modules``), which import
directories only this process has (``path_entries``), and which default tolerances are in
force (``tolerance_arguments``).

>>> tolerance_arguments() is None  # the library's defaults are in force
True
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rruletest.tolerances import DEFAULT_TOLERANCES, default_tolerances

__all__ = ["path_entries", "rule_modules", "tolerance_arguments"]


_RULE_OPTIONS = {
    "test_rrule": ("rrule_f",),
    "test_frule": ("frule_f",),
    "test_scalar": ("rrule_f", "frule_f"),
}


def rule_modules(tester: str, f: Any, args: tuple[Any, ...], options: dict[str, Any]) -> list[str]:
    """The modules that registered the default RuleSet's rules the tester may have used for
    ``f`` (every one it asks: the most specific may decline and a less specific one answer),
    and, for ``broadcasted(g, ...)``, the scalar rule of ``g``, in the order found."""
    from rruletest.broadcast import broadcasted
    from rruletest.rules import default_ruleset
    from rruletest.testers._args import WithTangent

    primals = tuple(a.primal if isinstance(a, WithTangent) else a for a in args)
    infos: list[Any] = []
    for option in _RULE_OPTIONS.get(tester, ()):
        if option in options:
            continue
        find = default_ruleset.rrule_infos if option == "rrule_f" else default_ruleset.frule_infos
        try:
            infos.extend(find(f, *primals))
        except Exception:  # a lookup that cannot judge these arguments: no rule to name
            continue
        if f is broadcasted and primals:
            infos.append(default_ruleset.scalar_info(primals[0]))
    modules = (str(getattr(info, "module", "")) for info in infos if info is not None)
    return list(dict.fromkeys(m for m in modules if m))


def _import_root(module: str) -> str | None:
    """The directory ``module``'s top-level package or module was imported from (None for a
    built-in, frozen or unlocated one)."""
    top = sys.modules.get(module.split(".")[0])
    file = getattr(top, "__file__", None)
    if isinstance(file, str):
        here = Path(file).resolve().parent
        return str(here.parent if Path(file).name == "__init__.py" else here)
    paths = list(getattr(top, "__path__", None) or ())  # a namespace package
    return str(Path(paths[0]).resolve().parent) if len(paths) == 1 else None


def _fresh_path() -> tuple[set[str], tuple[str, ...]]:
    """Where a fresh ``python -c`` run where this one runs imports from: the working directory,
    ``$PYTHONPATH`` and the directories ``.pth`` files add (exactly), and anything inside the
    standard library and site-packages."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    trees = [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths]
    dirs = [os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    for folder in sites:
        try:
            pth = sorted(Path(folder).glob("*.pth"))
        except OSError:
            continue
        for file in pth:
            try:
                lines = file.read_text().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            entries = (ln.strip() for ln in lines)
            dirs += [  # relative to the site directory, as ``site`` reads them
                str(Path(folder) / e) for e in entries if e and not e.startswith(("#", "import"))
            ]
    exact = {str(Path(d).resolve()) for d in dirs if d}
    return exact, tuple(os.path.join(str(Path(t).resolve()), "") for t in [*trees, *sites])


def tolerance_arguments() -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The default tolerances in force where they are not the library's (the pytest plugin's
    ``--rruletest-rtol``/``--rruletest-atol`` and ini keys, or an ``override_default_tolerances``
    block), as ``override_default_tolerances``'s arguments: a table by dtype name, and a
    ``rtol``/``atol`` every dtype has (``--rruletest-rtol=1e-13`` is one keyword). None when
    the library's are in force. A tester called without ``rtol``/``atol`` used them, and a
    fresh process has the library's."""
    now = {d: tuple(default_tolerances(d)) for d in DEFAULT_TOLERANCES}
    if all(now[d] == tuple(t) for d, t in DEFAULT_TOLERANCES.items()):
        return None
    uniform: dict[str, Any] = {}
    for i, name in enumerate(("rtol", "atol")):
        values = {t[i] for t in now.values()}
        if len(values) == 1 and any(
            t[i] != d[i] for t, d in zip(now.values(), DEFAULT_TOLERANCES.values(), strict=True)
        ):
            uniform[name] = values.pop()
    base = {
        d: (uniform.get("rtol", t.rtol), uniform.get("atol", t.atol))
        for d, t in DEFAULT_TOLERANCES.items()
    }
    table = {d.name: now[d] for d in now if now[d] != base[d]}
    return (table, uniform) if table or uniform else None


def path_entries(modules: Iterable[str]) -> list[str]:
    """The directories a fresh process must put first on ``sys.path`` to import ``modules``:
    their import directories that only this process has on ``sys.path``, as the directory of
    a test module pytest put there (its ``prepend`` import mode), or of a module given to
    ``rruletest check`` by path."""
    fresh: tuple[set[str], tuple[str, ...]] | None = None
    dirs: dict[str, None] = {}
    for module in modules:
        root = _import_root(module)
        if root is None or (
            root not in sys.path
            and not any(Path(p or ".").resolve() == Path(root) for p in sys.path)
        ):
            continue  # not found through sys.path (an import hook's): the hook finds it again
        fresh = _fresh_path() if fresh is None else fresh
        exact, trees = fresh
        if root not in exact and not os.path.join(root, "").startswith(trees):
            dirs[root] = None
    return list(dirs)
