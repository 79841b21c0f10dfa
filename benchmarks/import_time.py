"""How long ``import rruletest`` takes beyond ``import numpy`` (target: well under 100 ms).

Run on demand: ``python benchmarks/import_time.py [runs]``. Each run is a fresh interpreter;
the script prints the median over runs of (numpy + rruletest) minus (numpy alone), both timed
inside the child with ``time.perf_counter`` so interpreter start-up does not count. Children run
with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed, one warm-up run first), as an
installed package would: otherwise compiling the sources dominates.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

CHILD = """
import time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
{extra}
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _once(extra: str) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(extra=extra)],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stdout.split()
    return float(out[0]), float(out[1])


def main(runs: int = 15) -> None:
    _once("import rruletest")  # warm-up: writes the bytecode caches
    beyond = [_once("import rruletest")[1] for _ in range(runs)]
    numpy_alone = [_once("")[0] for _ in range(runs)]
    print(f"import numpy:                  median {statistics.median(numpy_alone) * 1e3:6.1f} ms")
    print(f"import rruletest beyond numpy: median {statistics.median(beyond) * 1e3:6.1f} ms")
    print(f"  (min {min(beyond) * 1e3:.1f} ms, max {max(beyond) * 1e3:.1f} ms, {runs} runs)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
