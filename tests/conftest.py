"""Set-up shared by the whole suite: every rruletest module is imported before any test runs.

The pytester runs inside this process (``runpytest``) drop, after each run, the modules
imported during it. A module imported again by a later run (a second ``rruletest.broadcast``,
with a second ``broadcasted``) is not the one that modules imported earlier refer to, so an
inner run's results would depend on which tests ran before it: running one test file alone
gave other verdicts than the whole suite. Imported up front, every module stays one object.
The adapters (``rruletest.interop``) are left out (they import their frameworks), and
``rruletest.__main__`` (it runs the command line).
"""

from __future__ import annotations

import importlib
import pkgutil

import rruletest

for _module in pkgutil.walk_packages(rruletest.__path__, "rruletest."):
    if not _module.name.startswith("rruletest.interop") and not _module.name.endswith("__main__"):
        importlib.import_module(_module.name)
