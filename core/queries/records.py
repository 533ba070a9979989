"""The base of the typed records the read models return: every field carries its meaning as a docstring
(pydantic reads it into the field's `description`), so a page or the CLI reads named, documented fields
instead of guessing a DataFrame's columns. Records are module-level classes: the app's cache pickles them.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from functools import cache

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A read-only record of a read model; field docstrings are the documentation (`describe`)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True, arbitrary_types_allowed=True)

    @classmethod
    def describe(cls) -> dict[str, str]:
        """{field: its documented meaning}, in declaration order."""
        return {name: info.description or "" for name, info in cls.model_fields.items()}


@cache
def field_docs(cls: type) -> dict[str, str]:
    """{field: its docstring} of a class whose fields are documented the way Records are (a string right
    under the field), for the records kept as plain dataclasses for speed (`TriageRow`)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    return {
        node.target.id: inspect.cleandoc(doc.value.value)
        for node, doc in zip(body, body[1:], strict=False)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)
    }  # fmt: skip
