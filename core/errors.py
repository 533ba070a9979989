"""Errors a user can act on. The CLI prints them as one line and exits non-zero."""

from __future__ import annotations

from pathlib import Path


class TrajreviewError(Exception):
    """Base class for every error trajreview reports to a user as one line."""


class InputError(TrajreviewError):
    """A file the user gave us cannot be used; names the file and the reason."""

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class StoreError(TrajreviewError):
    """The database file cannot be opened or migrated."""
