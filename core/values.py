"""Small value helpers every layer shares: what counts as "no value", and whitespace normalisation."""

from __future__ import annotations

import numbers
from typing import Any, TypeVar

T = TypeVar("T")


def is_missing(value: Any) -> bool:
    """True for None, NaN (any float type) and pandas' NA and NaT: the cells a table shows as blank.

    Pandas is not imported: this runs in the importers and the CLI's start-up path too."""
    if value is None:
        return True
    if isinstance(value, numbers.Real) and not isinstance(value, bool | numbers.Integral):
        return value != value  # NaN is the only value unequal to itself
    kind = type(value)
    return kind.__module__.startswith("pandas") and kind.__name__ in ("NAType", "NaTType")


def or_none(value: T) -> T | None:
    """The value, or None where `is_missing` (a DataFrame cell on its way to JSON or a typed record)."""
    return None if is_missing(value) else value


def normalise_text(text: str) -> str:
    """Non-breaking and repeated spaces to one space, trimmed; nothing else changes."""
    return " ".join(text.replace("\xa0", " ").split())
