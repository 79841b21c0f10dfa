"""What a failed check raises: ``RuleTestFailure``, an ``AssertionError`` that carries data.

Every check that finds a wrong rule records a ``Mismatch`` (which check, where, what was found,
what was expected, how far apart, the tolerance in force). One ``RuleTestFailure`` collects them
all, so a rule author sees every problem at once, and tools read the fields instead of parsing
the message.

>>> m = Mismatch(check="value", path="args[0]", actual=1.0, expected=2.0, message="differ")
>>> err = RuleTestFailure([m], header="test_rrule(sin, 1.0)")
>>> isinstance(err, AssertionError), err.path, err.expected
(True, 'args[0]', 2.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Mismatch", "RuleTestFailure"]


@dataclass
class Mismatch:
    """One problem found by one check.

    ``check`` names the check (``"value"``, ``"shape"``, ``"dtype"``, ``"fd"``, ``"exception"``,
    ...), ``path`` the place (``"pullback output[2].weights"``), ``message`` the full text of
    the block shown to the user. Numeric fields are None where they do not apply: ``abs_err``
    and ``rel_err`` are the largest differences found, ``index`` where the largest absolute one
    is, ``rtol``/``atol`` the tolerance in force there, ``count`` how many elements failed out
    of ``size``. ``hint`` holds one hint per line.
    """

    check: str
    path: str
    actual: Any
    expected: Any
    message: str
    abs_err: float | None = None
    rel_err: float | None = None
    index: tuple[int, ...] | None = None
    rtol: float | None = None
    atol: float | None = None
    hint: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    count: int | None = None
    size: int | None = None
    steps: tuple[Any, ...] = ()
    context: str = ""


class RuleTestFailure(AssertionError):
    """A rule failed one or more checks. An ``AssertionError``, so pytest reports a failure.

    ``mismatches`` lists every problem; ``path``, ``actual``, ``expected``, ``rtol`` and
    ``atol`` are those of the first. ``header`` says what was tested and ``reproduce`` how to run
    it again (seed, inputs); both head the message.
    """

    def __init__(
        self,
        mismatches: Sequence[Mismatch],
        *,
        header: str = "",
        reproduce: str = "",
    ) -> None:
        self.mismatches = list(mismatches)
        self.header = header
        self.reproduce = reproduce
        super().__init__(self._render())

    @property
    def first(self) -> Mismatch | None:
        return self.mismatches[0] if self.mismatches else None

    @property
    def path(self) -> str | None:
        return self.first.path if self.first else None

    @property
    def actual(self) -> Any:
        return self.first.actual if self.first else None

    @property
    def expected(self) -> Any:
        return self.first.expected if self.first else None

    @property
    def rtol(self) -> float | None:
        return self.first.rtol if self.first else None

    @property
    def atol(self) -> float | None:
        return self.first.atol if self.first else None

    @property
    def checks(self) -> list[str]:
        """The names of the checks that failed, in order, without repeats."""
        return list(dict.fromkeys(m.check for m in self.mismatches))

    def _render(self) -> str:
        lines: list[str] = []
        if self.header:
            lines.append(self.header)
        n = len(self.mismatches)
        if n != 1:
            lines.append(f"{n} problems found:")
        context = ""
        for m in self.mismatches:
            if m.context and m.context != context:
                lines.append(f"in {m.context}:")
            context = m.context
            block = m.message.rstrip("\n")
            for hint in (m.hint or "").splitlines():
                if hint and hint not in block:
                    block += f"\n  hint: {hint}"
            lines.append(block)
        if self.reproduce:
            lines.append(f"reproduce: {self.reproduce}")
        return "\n".join(lines)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.mismatches, self.header, self.reproduce))


def _rebuild(mismatches: list[Mismatch], header: str, reproduce: str) -> RuleTestFailure:
    return RuleTestFailure(mismatches, header=header, reproduce=reproduce)
