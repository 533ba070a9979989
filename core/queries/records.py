"""The base of the typed records the read models return: every field carries its meaning as a docstring
(pydantic reads it into the field's `description`), so a page or the CLI reads named, documented fields
instead of guessing a DataFrame's columns. Records are module-level classes: the app's cache pickles them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A read-only record of a read model; field docstrings are the documentation (`describe`)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, arbitrary_types_allowed=True)

    @classmethod
    def describe(cls) -> dict[str, str]:
        """{field: its documented meaning}, in declaration order."""
        return {name: info.description or "" for name, info in cls.model_fields.items()}
