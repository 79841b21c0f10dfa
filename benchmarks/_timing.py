"""Shared helpers of the benchmark scripts: timing, counting, memory, tables, results.

Not a benchmark itself. The scripts import it as ``_timing`` (``python benchmarks/x.py`` puts
``benchmarks/`` first on ``sys.path``).

- ``interleaved``: the best time of each of several functions, run in turn in every repetition,
  so that load from other processes on a shared machine hits them alike. Report ratios against
  a primal evaluation measured in the same call, never absolute times. Single-threaded
  measurements use the process's CPU time (``CPU``), robust to other processes' load.
- ``Counted``: a function wrapper counting its calls (each call on whole arrays is one primal
  evaluation); it is declared elementwise so ``broadcasted`` calls it on whole arrays.
- ``peak_memory``: the peak of memory allocated while a function runs (tracemalloc; numpy
  reports its array buffers to it), measured apart from the timings.
- ``table``, ``machine``, ``save_json``, ``parser``: output and command line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def interleaved(
    fns: Sequence[Callable[[], Any]],
    repeat: int,
    number: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """Best time per call of each function over ``repeat`` interleaved rounds of ``number``
    calls each (seconds).

    ``clock=time.process_time`` measures the CPU time of this process instead of wall time:
    for single-threaded work (numpy, rruletest) on a shared, loaded machine it does not count
    the time other processes hold the core, and so varies much less between runs.
    """
    best = [math.inf] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = clock()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (clock() - t0) / number)
    return best


CPU = time.process_time


def calibrate(fn: Callable[[], Any], target: float = 0.02) -> int:
    """How many calls of ``fn`` take about ``target`` seconds (at least 1)."""
    t0 = time.process_time()
    fn()
    once = max(time.process_time() - t0, 1e-6)
    return max(1, int(target / once))


class Counted:
    """``f`` with counters of its calls and of the output elements it computed; copies are
    itself (testers snapshot their arguments, and a rule is looked up by the function's
    identity)."""

    def __init__(self, f: Callable[..., Any], name: str | None = None) -> None:
        self.f = f
        self.calls = 0
        self.elements = 0
        self.__name__ = self.__qualname__ = name or getattr(f, "__name__", "f")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        out = self.f(*args, **kwargs)
        self.elements += int(getattr(out, "size", 1))
        return out

    def __copy__(self) -> Counted:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Counted:
        return self

    def count(self, fn: Callable[[], Any]) -> tuple[int, int]:
        """The calls of ``f`` made while ``fn`` runs, and the output elements they computed."""
        calls, elements = self.calls, self.elements
        fn()
        return self.calls - calls, self.elements - elements


def vectorised(f: Callable[..., Any], name: str | None = None) -> Counted:
    """A ``Counted`` ``f`` declared elementwise (``broadcasted`` calls it on whole arrays)."""
    from rruletest.broadcast import declare_vectorised

    return declare_vectorised(Counted(f, name))


def peak_memory(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated while ``fn`` runs, its result included (tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - before


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table, columns right-aligned except the first."""
    cells = [[str(h) for h in headers], *[[_fmt(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        first = r[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))])

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0 or math.isnan(value):
            return f"{value:g}"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.1f}"
        if abs(value) >= 0.01:
            return f"{value:.2f}"
        return f"{value:.2e}"
    return str(value)


def machine() -> dict[str, Any]:
    """What the figures were measured on (cores, not names of products)."""
    import numpy as np

    return {
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def save_json(name: str, payload: dict[str, Any], quick: bool) -> Path | None:
    """Write ``results/<name>.json`` (full runs only: a quick run must not overwrite them)."""
    if quick:
        return None
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    data = {"machine": machine(), **payload}
    path.write_text(json.dumps(data, indent=1, default=_json_default) + "\n")
    print(f"\nsaved {path.relative_to(RESULTS.parent.parent)}")
    return path


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    raise TypeError(f"cannot save {value!r} as JSON")


def parser(doc: str | None) -> argparse.ArgumentParser:
    """The common command line: ``--quick`` (small sizes, few repetitions, nothing saved)."""
    p = argparse.ArgumentParser(
        description=(doc or "").strip().splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--quick", action="store_true", help="small sizes and few repetitions (smoke test)"
    )
    return p


def header(title: str) -> None:
    m = machine()
    print(f"{title}  [{m['cores']} cores, Python {m['python']}, numpy {m['numpy']}]")
    sys.stdout.flush()
