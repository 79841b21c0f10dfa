"""The seed of the running test: written by the pytest plugin, read by the testers.

It sits at the bottom of the layers (standard library only), so the testers can seed a
generator from the running test without importing the plugin above them: the plugin sets
``TEST_SEED`` around each test, and ``rand_tangent``'s rng resolution (``rng=None``) reads
``current_test_seed()``. Outside a test run with the plugin the seed is ``None``.

>>> token = TEST_SEED.set(7)  # what the plugin does around a test
>>> current_test_seed()
7
>>> TEST_SEED.reset(token)
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["TEST_SEED", "current_test_seed"]

#: The seed of the test pytest is running (set by the plugin around each test), else None.
TEST_SEED: ContextVar[int | None] = ContextVar("rruletest_test_seed", default=None)


def current_test_seed() -> int | None:
    """The seed of the running test under the rruletest pytest plugin, None outside a test.

    Testers called with ``rng=None`` seed their generator from it, so a test that never
    mentions a seed still reproduces from ``pytest --rruletest-seed=N <nodeid>``.

    >>> token = TEST_SEED.set(None)  # as outside a test run with the plugin
    >>> current_test_seed() is None
    True
    >>> TEST_SEED.reset(token)
    """
    return TEST_SEED.get()
