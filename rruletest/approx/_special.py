"""Values ``rruletest.approx`` compares other than element by element: masked arrays, and
complex numbers with a NaN or infinite part.

Internal. A masked array's mask is part of its value: masks must agree (an element masked on
one side only is a ``structure`` mismatch), and masked elements are never compared, whatever
they hold; a plain array is masked nowhere. A complex element with a non-finite part is
compared part by part: NaN equals NaN only in the same part, an infinity only the same infinity,
a finite part within tolerance of the other's.

>>> found = []
>>> a, e = unmasked("x", np.ma.array([1.0, 9.0], mask=[0, 1]), np.array([1.0, 2.0]), 0, 0, found)
>>> print(found[0].message.splitlines()[0])
x: masks differ: 1 element masked on one side only (1 in actual, 0 in expected), first at [1]
>>> a.tolist(), e.tolist()
([1.0, 0.0], [1.0, 0.0])
>>> parts_match(np.array([1.0]), np.array([5.0]), np.zeros(1), np.zeros(1), True).tolist()
[False]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rruletest.approx._render import block
from rruletest.errors import Mismatch
from rruletest.walk import Element

__all__ = ["at", "index_text", "parts_match", "unmasked"]


def index_text(index: tuple[int, ...]) -> str:
    """Where an element is in its array (``[1, 3]``), written as a walk step writes it."""
    return Element(index).render()


def at(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of the element at flat position ``flat`` of an array of ``shape``."""
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def parts_match(
    a: np.ndarray, e: np.ndarray, rtol: np.ndarray, atol: np.ndarray, nan_equal: bool
) -> np.ndarray:
    """Whether real parts (or imaginary parts) of complex elements match, NaN only with NaN."""
    close = np.isfinite(a) & np.isfinite(e) & (np.abs(a - e) <= atol + rtol * np.abs(e))
    same: np.ndarray = close | (a == e)  # equal infinities too
    if nan_equal:
        same |= np.isnan(a) & np.isnan(e)
    return same


def unmasked(
    path: str, a: np.ndarray, e: np.ndarray, a_shown: Any, e_shown: Any, found: list[Mismatch]
) -> tuple[np.ndarray, np.ndarray]:
    """Masked arrays: report where the masks differ, and leave masked elements uncompared.

    A plain array is masked nowhere. Elements masked on either side are set to 0 on both, so
    they never take part in the comparison of values.
    """
    mask_a, mask_e = np.ma.getmaskarray(a), np.ma.getmaskarray(e)
    differ = mask_a != mask_e
    if differ.any():
        n = int(np.count_nonzero(differ))
        only_a = int(np.count_nonzero(mask_a & ~mask_e))
        first = at(int(np.argmax(differ)), a.shape)
        first_at = f", first at {index_text(first)}" if first else ""
        summary = (
            f"masks differ: {n} element{'s' * (n != 1)} masked on one side only "
            f"({only_a} in actual, {n - only_a} in expected){first_at}"
        )
        hint = "masked elements are not compared; an element masked on one side only is a mismatch"
        found.append(
            Mismatch(
                check="structure",
                path=path,
                actual=a_shown,
                expected=e_shown,
                message=block(path, summary, a_shown, e_shown, (), [hint]),
                hint=hint,
                index=first or None,
                count=n,
                size=int(a.size),
                extra={"actual_mask": mask_a, "expected_mask": mask_e},
            )
        )
    masked = mask_a | mask_e
    da, de = np.asarray(np.ma.getdata(a)), np.asarray(np.ma.getdata(e))
    return np.where(masked, 0, da).astype(da.dtype), np.where(masked, 0, de).astype(de.dtype)
