"""The pytest plugin's machinery: options and seeds, rule items, their inputs and checks.

Nothing here imports numpy, hypothesis or the testers at import time: the plugin module
(``rruletest.pytest_plugin``) loads at every pytest start.
"""
