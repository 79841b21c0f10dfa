"""The README's example runs as written, and its two set-up commands are the ones CI uses."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks, "README has no python example"
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)


def test_readme_commands_are_the_ones_ci_runs() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    assert commands == [
        "pip install . && rruletest check",
        "pip install -e '.[test]' && python -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    for command in commands:
        assert command in ci
