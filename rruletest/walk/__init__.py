"""One walk over values: the children of every container, how to rebuild it, and its path steps.

Primals and tangents nest: tuples, lists, namedtuples, dicts, dataclasses, plain objects,
``Tangent``s, thunks and object arrays. Every part of rruletest that looks inside a value
(``to_vec``, ``test_approx``, ``rand_tangent``, the testers' type and mutation checks, the
tolerances, the reports) asks this module, so a container is understood the same way
everywhere, and a user type registered once (``register_structure``) is understood everywhere.

A path is a tuple of ``Step``s, rendered once by ``render_path``:

>>> import numpy as np
>>> from collections import namedtuple
>>> P = namedtuple("P", "x y")
>>> value = {"a:b": [1.0, P(2.0, np.array([3.0, 4.0]))]}
>>> [(render_path("args[0]", p), v) for p, v in leaves(value)][:2]
[("args[0]['a:b'][0]", 1.0), ("args[0]['a:b'][1].x", 2.0)]
>>> rebuild(P(1.0, 2.0), [10.0, 20.0])
P(x=10.0, y=20.0)

Walks are iterative (``leaves``, ``map_leaves``) or count their depth (``Guard``), so a cycle or
a structure deeper than ``MAX_DEPTH`` is a ``WalkError`` naming the path, never a
``RecursionError``:

>>> loop: list = [0.5]
>>> loop.append(loop)
>>> list(leaves(loop))
Traceback (most recent call last):
...
rruletest.walk.WalkError: x[1]: the value contains itself (a cycle: it is x again)

``fold`` is the general bottom-up walk the others are made of (``to_vec`` builds its plan with
it, ``rand_tangent`` draws with it, ``add_to_primal`` folds a primal and its tangent together).

A user type is taught to every walk at once with ``register_structure`` (see the API page and
the tangents guide):

>>> class Diag:
...     def __init__(self, d):
...         self.d = d
>>> register_structure(Diag, ["d"])
>>> [(render_path("args[0]", p), v) for p, v in leaves([Diag(1.0), Diag(2.0)])]
[('args[0][0].d', 1.0), ('args[0][1].d', 2.0)]
"""

from __future__ import annotations

from rruletest.tangents import primal as _primal
from rruletest.walk._steps import (
    MAX_DEPTH,
    Attr,
    Element,
    Index,
    Key,
    Path,
    Step,
    WalkError,
    render_path,
)
from rruletest.walk._structure import (
    children,
    is_registered,
    is_structure,
    rebuild,
    register_structure,
)
from rruletest.walk._walks import Guard, fold, leaves, map_leaves

__all__ = [
    "MAX_DEPTH",
    "Attr",
    "Element",
    "Guard",
    "Index",
    "Key",
    "Path",
    "Step",
    "WalkError",
    "children",
    "fold",
    "is_registered",
    "is_structure",
    "leaves",
    "map_leaves",
    "rebuild",
    "register_structure",
    "render_path",
]

# Shown (and pickled) under their public home.
for _cls in (Step, Index, Key, Attr, Element, WalkError, Guard):
    _cls.__module__ = __name__

# ``primal + tangent`` walks with this module: it sits above the tangents, so it registers there.
_primal.use_walk(fold, children, rebuild)
