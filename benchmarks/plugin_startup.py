"""pytest start-up with and without the rruletest plugin (run on demand, not collected).

    python benchmarks/plugin_startup.py [RUNS]

Runs ``python -m pytest --co -q -p no:cacheprovider`` on a one-test directory, alternating
with and without ``-p no:rruletest`` so machine load affects both alike, and prints the median
and minimum wall time and the median CPU time (user + system, steadier on a loaded machine) of
each, and the difference in CPU time. It also reports which modules loading the
plugin imports beyond plain pytest.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _time(cmd: list[str], cwd: str) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(runs: int = 20) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_tiny.py").write_text("def test_one():\n    pass\n")
        base = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
        variants = {"with plugin": base, "without (-p no:rruletest)": [*base, "-p", "no:rruletest"]}
        for cmd in variants.values():  # warm-up
            _time(cmd, tmp)
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
        for _ in range(runs):
            for name, cmd in variants.items():
                times[name].append(_time(cmd, tmp))
        for name, ts in times.items():
            wall = [w for w, _ in ts]
            cpu = [c for _, c in ts]
            print(
                f"{name:<28} wall median {statistics.median(wall) * 1e3:7.1f} ms, "
                f"min {min(wall) * 1e3:7.1f} ms; CPU median {statistics.median(cpu) * 1e3:7.1f} ms"
                f" ({runs} runs)"
            )
        a, b = ([statistics.median([c for _, c in ts]) for ts in times.values()],)[0]
        print(f"CPU difference (median)      {(a - b) * 1e3:+7.1f} ms")
    code = (
        "import sys; before = set(sys.modules); import rruletest.pytest_plugin; "
        "print(sorted(m.split('.')[0] for m in set(sys.modules) - before "
        "if not m.startswith(('_', 'encodings'))))"
    )
    mods = subprocess.run(
        [sys.executable, "-c", "import pytest; " + code], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(f"top-level packages the plugin adds to a pytest process: {sorted(set(eval(mods)))}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
