"""pytest start-up with and without the rruletest plugin (run on demand, not collected).

    python benchmarks/plugin_startup.py [RUNS]

Runs ``python -m pytest --co -q -p no:cacheprovider`` on a one-test directory, alternating
with and without ``-p no:rruletest`` so machine load affects both alike, and prints the median
and minimum wall time of each and their difference. It also reports which modules loading the
plugin imports beyond plain pytest.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _time(cmd: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(runs: int = 20) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_tiny.py").write_text("def test_one():\n    pass\n")
        base = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
        variants = {"with plugin": base, "without (-p no:rruletest)": [*base, "-p", "no:rruletest"]}
        for cmd in variants.values():  # warm-up
            _time(cmd, tmp)
        times: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(runs):
            for name, cmd in variants.items():
                times[name].append(_time(cmd, tmp))
        for name, ts in times.items():
            print(
                f"{name:<28} median {statistics.median(ts) * 1e3:7.1f} ms   "
                f"min {min(ts) * 1e3:7.1f} ms   ({runs} runs)"
            )
        ta, tb = times.values()
        med = (statistics.median(ta) - statistics.median(tb)) * 1e3
        print(f"difference (median)          {med:+7.1f} ms")
        print(f"difference (min)             {(min(ta) - min(tb)) * 1e3:+7.1f} ms")
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
