"""Every kind of failure, one type each. Raised ones are printed by the CLI as one line (exit 2) and shown
by the app as one line; `Problem` is the one that is recorded instead of raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class TrajreviewError(Exception):
    """Base class for every error trajreview reports to a user as one line."""


class InputError(TrajreviewError):
    """A file or an argument the user gave us cannot be used; names it and the reason."""

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class NotFound(TrajreviewError):
    """A run, task, gold set or other named thing the database does not hold."""

    def __init__(self, kind: str, name: Any, *, where: str = "", hint: str = ""):
        self.kind, self.name = kind, name
        shown = f"named {name!r}" if isinstance(name, str) else str(name)
        super().__init__(
            f"no {kind} {shown}" + (f" {where}" if where else "") + (f"; {hint}" if hint else "")
        )


class Conflict(TrajreviewError):
    """A write refused because someone else changed the same thing first (the draft is kept)."""


class StoreError(TrajreviewError):
    """The database file cannot be opened or migrated."""


def _problem_class() -> type:
    from pydantic import BaseModel, Field

    class Problem(BaseModel):
        """A per-task problem of an import: recorded and listed (table import_problems), never raised, never
        a crash of the whole import."""

        task_id: int | None = Field(description="the task it concerns; None when not tied to one task")
        source_path: str = Field(description="the file (or archive member) that caused it")
        kind: str = Field(description="short machine-readable code, e.g. missing_file")
        message: str = Field(description="one plain sentence for the reviewer")

    Problem.__qualname__ = "Problem"  # pickled by workers: found again as core.errors.Problem
    return Problem


def __getattr__(name: str) -> Any:
    """`Problem` is built on first use (PEP 562): it is a pydantic model, and importing pydantic costs a
    good part of a second that `trajreview --help`, which only needs the error classes, must not pay."""
    if name == "Problem":
        problem = _problem_class()
        globals()["Problem"] = problem
        return problem
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
