"""Start-up cost: ``import rruletest`` beyond numpy, and pytest with and without the plugin.

    python benchmarks/startup.py [--quick]

Every measurement is a fresh interpreter. Children run with bytecode caching on
(``PYTHONDONTWRITEBYTECODE`` removed from their environment, which this environment sets, and
one warm-up run first), as an installed package would: otherwise compiling the sources
dominates and the figures say nothing about a user's start-up.

Times are CPU time (user + system), not wall time: on a shared machine other processes' load
makes wall times of short runs vary by a factor of two.

- ``import rruletest`` beyond ``import numpy``: both timed inside the child with
  ``time.process_time``, so interpreter start-up does not count (target: well under 100 ms,
  DESIGN.md). The child also reports whether findiff, scipy, sympy or hypothesis were loaded
  (they must not be), and ``-X importtime`` gives the slowest rruletest modules. Public names
  load their modules on first access, so ``import rruletest`` alone loads little: "first use"
  times ``from rruletest import RuleSet, broadcasted, test_rrule, test_scalar`` too.
- pytest start-up: the CPU time of ``pytest -q`` (in a child) running one trivial test in an
  empty directory, with the plugin (the ``pytest11`` entry point) and with
  ``-p no:rruletest``, runs interleaved; the
  difference of the medians is what the plugin costs (target: nothing noticeable). Twice: a
  test file that does not import numpy (the plugin's whole cost, numpy included) and one that
  does (what the plugin adds for a suite that uses numpy anyway). It also lists the top-level
  packages loading the plugin adds to a pytest process.

- the first finite difference in a process (``central_fdm(5, 1)`` on a number and on an
  array, after ``import rruletest.finite_differences``): CPU time and growth of the peak
  resident memory, with the stencil cache cold (an empty ``RRULETEST_CACHE_DIR``: findiff and
  sympy compute the weights, then save them) and warm (the same directory again: the weights
  are read from it; target under 0.15 s, issue 18). Also whether sympy was loaded.

Results: ``benchmarks/results/startup.json``.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _timing import header, parser, save_json, table

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
HEAVY = ("findiff", "scipy", "sympy", "hypothesis")
# What a test module of a rule author imports: the names load their modules on first access.
FIRST_USE = "from rruletest import RuleSet, broadcasted, test_rrule, test_scalar"
# A suite that never imports numpy shows the plugin's whole cost (numpy included, since the
# plugin imports rruletest); a suite that does (any user of rruletest) shows what it adds.
SUITES = {
    "no numpy": "def test_one():\n    assert True\n",
    "imports numpy": "import numpy\n\ndef test_one():\n    assert numpy.ones(1)[0] == 1\n",
}

CHILD = """
import sys, time
t0 = time.process_time()
import numpy
t1 = time.process_time()
{extra}
t2 = time.process_time()
heavy = [m for m in {heavy!r} if m in sys.modules]
print(t1 - t0, t2 - t1, ",".join(heavy) or "-")
"""


FIRST_FD = """
import resource, sys, time
import numpy as np
import rruletest.finite_differences as fd
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.process_time()
fd.central_fdm(5, 1)(np.sin, 0.5)
fd.central_fdm(5, 1)(np.sin, np.linspace(0.1, 1.0, 8))
t1 = time.process_time()
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(t1 - t0, (rss1 - rss0) / 1024, "sympy" in sys.modules)
"""


def first_fd(cache: Path) -> tuple[float, float, bool]:
    """CPU seconds, peak-RSS growth (MB) and whether sympy loaded, for the first finite
    difference of a fresh interpreter with the stencil cache in ``cache``."""
    env = {**ENV, "RRULETEST_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", FIRST_FD], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    return float(out[0]), float(out[1]), out[2] == "True"


def first_fd_runs(runs: int) -> dict[str, tuple[list[float], list[float], bool]]:
    """``first_fd`` with a cold cache (a new directory each run) and a warm one."""
    cold_t, cold_m, warm_t, warm_m = [], [], [], []
    sympy_cold = sympy_warm = False
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            t, m, s = first_fd(Path(tmp))
            cold_t.append(t)
            cold_m.append(m)
            sympy_cold |= s
            t, m, s = first_fd(Path(tmp))
            warm_t.append(t)
            warm_m.append(m)
            sympy_warm |= s
    return {"cold": (cold_t, cold_m, sympy_cold), "warm": (warm_t, warm_m, sympy_warm)}


def child(extra: str) -> tuple[float, float, str]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(extra=extra, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stdout.split()
    return float(out[0]), float(out[1]), out[2]


def slowest_modules(count: int = 6) -> list[tuple[str, float]]:
    """The rruletest modules with the largest cumulative import time (``-X importtime``) on
    first use."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import numpy\n" + FIRST_USE],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip().startswith("rruletest"):
            rows.append((parts[2].strip(), int(parts[1]) / 1e3))
    return sorted(rows, key=lambda r: -r[1])[:count]


PLUGIN_ADDS = """
import sys
import pytest
before = set(sys.modules)
import rruletest.pytest_plugin
added = {m.split(".")[0] for m in set(sys.modules) - before}
print(" ".join(sorted(m for m in added if not m.startswith(("_", "encodings")))))
"""


def plugin_imports() -> list[str]:
    """The top-level packages loading the plugin adds to a pytest process."""
    out = subprocess.run(
        [sys.executable, "-c", PLUGIN_ADDS], capture_output=True, text=True, check=True, env=ENV
    ).stdout
    return out.split()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pytest_once(directory: Path, *extra: str) -> float:
    """CPU time (user + system) of one pytest run in a child process."""
    t0 = _children_cpu()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, str(directory)],
        capture_output=True,
        check=True,
        cwd=directory,
        env=ENV,
    )
    return _children_cpu() - t0


def main() -> None:
    opts = parser(__doc__).parse_args()
    runs = 3 if opts.quick else 21
    header("Start-up cost (fresh interpreters, bytecode cached, CPU time)")
    child(FIRST_USE)  # warm-up: writes the bytecode caches
    beyond, first_use, numpy_alone, heavy = [], [], [], set()
    for _ in range(runs):  # interleaved
        _, b, h = child("import rruletest")
        beyond.append(b)
        heavy.add(h)
        _, u, h = child(FIRST_USE)
        first_use.append(u)
        heavy.add(h)
        numpy_alone.append(child("")[0])
    slow = slowest_modules()
    fd_runs = first_fd_runs(3 if opts.quick else 7)

    pytest_ms: dict[str, tuple[list[float], list[float]]] = {}
    for label, source in SUITES.items():
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            (directory / "test_trivial.py").write_text(source)
            pytest_once(directory)  # warm-up
            pytest_once(directory, "-p", "no:rruletest")
            with_plugin, without = [], []
            for _ in range(runs):
                with_plugin.append(pytest_once(directory))
                without.append(pytest_once(directory, "-p", "no:rruletest"))
        pytest_ms[label] = (with_plugin, without)

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1e3

    rows: list[list[Any]] = [
        ["import numpy", ms(numpy_alone), min(numpy_alone) * 1e3],
        ["import rruletest beyond numpy", ms(beyond), min(beyond) * 1e3],
        ["first use beyond numpy (testers, broadcast)", ms(first_use), min(first_use) * 1e3],
    ]
    for label, (with_plugin, without) in pytest_ms.items():
        rows.append([f"pytest, {label}, with plugin", ms(with_plugin), min(with_plugin) * 1e3])
        rows.append([f"pytest, {label}, -p no:rruletest", ms(without), min(without) * 1e3])
    print(table(["", "median ms", "min ms"], rows))
    plugin_cost = {k: ms(w) - ms(wo) for k, (w, wo) in pytest_ms.items()}
    plugin_cost_min = {k: (min(w) - min(wo)) * 1e3 for k, (w, wo) in pytest_ms.items()}
    for label, cost in plugin_cost.items():
        print(
            f"plugin cost, {label}: {cost:+.1f} ms on the median, "
            f"{plugin_cost_min[label]:+.1f} ms on the minimum ({runs} interleaved runs)"
        )
    fd_rows = [
        [
            f"first finite difference, stencil cache {k}",
            statistics.median(t) * 1e3,
            min(t) * 1e3,
            statistics.median(m),
            "yes" if s else "no",
        ]
        for k, (t, m, s) in fd_runs.items()
    ]
    print(table(["", "median ms", "min ms", "peak RSS +MB", "sympy loaded"], fd_rows))
    warm_ms = statistics.median(fd_runs["warm"][0]) * 1e3
    verdict = "met" if warm_ms < 150 else "MISSED"
    print(f"target first finite difference under 150 ms (warm cache): {warm_ms:.1f} ms ({verdict})")
    added = plugin_imports()
    print(f"top-level packages the plugin adds to a pytest process: {', '.join(added)}")
    loaded = ",".join(sorted(h for h in heavy if h != "-")) or "none"
    print(f"heavy modules loaded by import rruletest: {loaded}")
    print("slowest rruletest modules on first use (cumulative import time, ms):")
    for name, t in slow:
        print(f"  {name:40s} {t:6.1f}")
    target = "met" if ms(first_use) < 100 else "MISSED"
    print(
        f"target import rruletest well under 100 ms beyond numpy: {ms(beyond):.1f} ms, "
        f"{ms(first_use):.1f} ms on first use ({target})"
    )
    save_json(
        "startup",
        {
            "runs": runs,
            "import_numpy_ms": ms(numpy_alone),
            "import_rruletest_beyond_numpy_ms": ms(beyond),
            "first_use_beyond_numpy_ms": ms(first_use),
            "pytest_ms": {
                k: {"with_plugin": ms(w), "without": ms(wo)} for k, (w, wo) in pytest_ms.items()
            },
            "plugin_cost_ms": plugin_cost,
            "plugin_cost_min_ms": plugin_cost_min,
            "heavy_modules_loaded": loaded,
            "plugin_adds_packages": added,
            "slowest_modules_ms": slow,
            "first_fd": {
                k: {
                    "median_ms": statistics.median(t) * 1e3,
                    "rss_mb": statistics.median(m),
                    "sympy": s,
                }
                for k, (t, m, s) in fd_runs.items()
            },
        },
        opts.quick,
    )


if __name__ == "__main__":
    main()
